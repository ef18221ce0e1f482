"""pipeline/gold_sources.py: reader steps whose views a trainer reads besides its documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from casflow.pipeline.component import RunContext
from casflow.pipeline.gold_sources import GoldSource, GoldSourceError, check_source, read_source


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    texts = tmp_path / "texts"
    texts.mkdir()
    # "a-b" sorts before "a.txt" as file names but after "a" as ids
    for name, text in (("b", "second"), ("a", "first"), ("a-b", "third")):
        (texts / f"{name}.txt").write_text(text, encoding="utf-8")
    (texts / "list.txt").write_text("", encoding="utf-8")
    return texts


def _source(folder: Path, **extra: object) -> GoldSource:
    listing = folder.parent / "order.lst"
    listing.write_text("".join(f"{folder / n}.txt\n" for n in ("b", "a-b", "a")), encoding="utf-8")
    return GoldSource(component="text.reader.v1", config={"input": f"@{listing}"}, **extra)


def test_views_in_reader_order_or_id_order(tmp_path: Path, folder: Path) -> None:
    context = RunContext(output_dir=tmp_path)
    text_of = lambda view, doc_id: (doc_id, view.sofa_string)  # noqa: E731
    assert read_source(_source(folder), context, text_of) == [
        ("b", "second"),
        ("a-b", "third"),
        ("a", "first"),
    ]
    assert [d for d, _ in read_source(_source(folder, order="id"), context, text_of)] == [
        "a",
        "a-b",
        "b",
    ]


def test_a_failing_document_is_named(tmp_path: Path, folder: Path) -> None:
    def fail_on_a(view, doc_id):
        if doc_id == "a":
            raise ValueError("no tokens")
        return doc_id

    with pytest.raises(
        GoldSourceError, match=r"text\.reader\.v1: document a \(.*a\.txt\): ValueError: no tokens"
    ):
        read_source(_source(folder), RunContext(output_dir=tmp_path), fail_on_a)


def test_check_names_unknown_readers_bad_settings_and_non_readers(
    tmp_path: Path, folder: Path
) -> None:
    context = RunContext(output_dir=tmp_path)
    assert (
        check_source(GoldSource(component="text.reader.v1", config={"input": str(folder)}), context)
        == []
    )
    # the reader's own checks, prefixed with its name
    [missing] = check_source(GoldSource(component="text.reader.v1", config={"input": "x"}), context)
    assert missing.startswith("text.reader.v1: input 'x' is not a file, folder")
    [unknown] = check_source(GoldSource(component="text.raeder.v1"), context)
    assert unknown.startswith("text.raeder.v1:")
    [bad] = check_source(GoldSource(component="text.reader.v1", config={"inptu": "x"}), context)
    assert bad.startswith("text.reader.v1 config: inptu:")
    [writer] = check_source(GoldSource(component="xmi.writer.v1"), context)
    assert "xmi.writer.v1 is not a reader" in writer
