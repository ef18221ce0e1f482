"""pipeline/fingerprints.py: skip a finished step only when nothing it depends on changed."""

from __future__ import annotations

import json
from pathlib import Path

from casflow.pipeline.fingerprints import (
    Fingerprint,
    file_digest,
    fingerprint,
    forget,
    mark_done,
    read_marker,
    step_status,
)


def test_fingerprint_depends_on_values_and_file_bytes_not_key_order(tmp_path: Path) -> None:
    data = tmp_path / "data.bin"
    data.write_bytes(b"abc")
    base = fingerprint({"a": 1, "b": [1, 2]}, 0, files=[data])
    assert base == fingerprint({"b": [1, 2], "a": 1}, 0, files=[data])
    assert base != fingerprint({"a": 2, "b": [1, 2]}, 0, files=[data])
    assert base != fingerprint({"a": 1, "b": [1, 2]}, 1, files=[data])
    # parts are delimited: ("ab", "c") is not ("a", "bc")
    assert fingerprint("ab", "c") != fingerprint("a", "bc")
    copy = tmp_path / "elsewhere.bin"
    copy.write_bytes(b"abc")
    assert base == fingerprint({"a": 1, "b": [1, 2]}, 0, files=[copy])  # the name does not count
    data.write_bytes(b"abd")
    assert base != fingerprint({"a": 1, "b": [1, 2]}, 0, files=[data])


def test_incremental_equals_one_shot(tmp_path: Path) -> None:
    digest = Fingerprint({"x": 1})
    digest.add([1, "two"])
    assert digest.hexdigest() == fingerprint({"x": 1}, [1, "two"])


def test_status_new_done_changed(tmp_path: Path) -> None:
    marker = tmp_path / "step" / "done.json"
    output = tmp_path / "step" / "model"
    assert step_status(marker, "f1", output) == "new"
    output.mkdir(parents=True)
    mark_done(marker, "f1", scores={"f": 80.0})
    assert step_status(marker, "f1", output) == "done"
    assert read_marker(marker) == {"fingerprint": "f1", "scores": {"f": 80.0}}
    assert step_status(marker, "f2", output) == "changed"
    output.rmdir()  # an output gone is not a finished step
    assert step_status(marker, "f1", output) == "changed"
    forget(marker)
    assert step_status(marker, "f1") == "new"
    forget(marker)  # forgetting twice is fine


def test_unreadable_or_old_markers_are_not_done(tmp_path: Path) -> None:
    marker = tmp_path / "done.json"
    marker.write_text("0123abcd\n", encoding="utf-8")  # the older plain-text marker
    assert step_status(marker, "0123abcd") == "changed"
    marker.write_text(json.dumps(["not", "a", "mapping"]), encoding="utf-8")
    assert step_status(marker, "x") == "changed"


def test_an_output_damaged_or_replaced_after_the_step_is_not_done(tmp_path: Path) -> None:
    """A truncated model file in a finished step's folder was reused, and the step that
    read it crashed: the marker records each output file's size and digest."""
    marker = tmp_path / "step" / "done.json"
    model = tmp_path / "step" / "model" / "model.bin"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"weights" * 100)
    mark_done(marker, "f1", outputs=[model], scores={"f": 1.0})
    content = read_marker(marker)
    assert content is not None and content["scores"] == {"f": 1.0}
    assert content["output_files"] == {"model/model.bin": [700, file_digest(model)]}
    assert step_status(marker, "f1", model) == "done"
    model.write_bytes(b"weights" * 10)  # truncated
    assert step_status(marker, "f1", model) == "changed"
    model.write_bytes(b"WEIGHTS" * 100)  # same size, other bytes
    assert step_status(marker, "f1", model) == "changed"
    model.write_bytes(b"weights" * 100)
    assert step_status(marker, "f1", model) == "done"
    # the recorded paths are from the marker's folder: a moved output folder still matches
    moved = tmp_path / "moved"
    (tmp_path / "step").rename(moved)
    assert step_status(moved / "done.json", "f1", moved / "model" / "model.bin") == "done"


def test_a_marker_without_output_files_is_taken_at_its_word(tmp_path: Path) -> None:
    """Markers written before outputs were recorded (the shipped runs) stay done."""
    marker = tmp_path / "done.json"
    output = tmp_path / "model.bin"
    output.write_bytes(b"weights")
    marker.write_text(json.dumps({"fingerprint": "f1"}), encoding="utf-8")
    assert step_status(marker, "f1", output) == "done"
    # a folder given as an output stands for every file under it
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.bin").write_bytes(b"a")
    mark_done(marker, "f1", outputs=[folder])
    assert list(read_marker(marker)["output_files"]) == ["folder/sub/a.bin"]  # type: ignore[index]
    (folder / "sub" / "b.bin").write_bytes(b"b")
    assert step_status(marker, "f1", folder) == "changed"
