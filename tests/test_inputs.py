from __future__ import annotations

import gc
import io
import json
import os
import sys
import tarfile
import textwrap
import tracemalloc
import uuid
from pathlib import Path

import pytest

from casflow.components.inputs import count_input_items, iter_input_items
from casflow.pipeline.cli import main


def _tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_folder_glob_list_and_archive_inputs(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.txt").write_text("a")
    (tmp_path / "d" / "sub" / "b.txt").write_text("b")
    (tmp_path / "d" / "skip.md").write_text("c")
    _tar(tmp_path / "d" / "pack.tar.gz", {"x/c.txt": b"c", "x/readme.md": b"no"})
    items = list(iter_input_items(str(tmp_path / "d"), "**/*.txt"))
    assert [i.uri.replace(str(tmp_path), "") for i in items] == [
        "/d/a.txt",
        "/d/sub/b.txt",
        "/d/pack.tar.gz!x/c.txt",
    ]
    assert items[2].data == b"c" and items[0].data is None
    listing = tmp_path / "files.txt"
    listing.write_text("# two files\nd/a.txt\n\nd/sub/b.txt\n")
    assert [i.path.name for i in iter_input_items(f"@{listing}", "*.txt")] == ["a.txt", "b.txt"]
    assert [
        i.path.name for i in iter_input_items(str(tmp_path / "d" / "**" / "b.txt"), "*.txt")
    ] == ["b.txt"]


def test_inputs_are_counted_from_their_names_unless_an_archive_is_among_them(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "d"
    (folder / "sub").mkdir(parents=True)
    for name in ("a.txt", "sub/b.txt", "sub/c.txt", "skip.md"):
        (folder / name).write_text("x")
    (tmp_path / "list.txt").write_text("d/a.txt\n# a comment\nd/gone.txt\n")
    for spec in (str(folder), str(folder / "**" / "*.txt"), f"@{tmp_path / 'list.txt'}"):
        listed = list(iter_input_items(spec, "**/*.txt"))
        assert count_input_items(spec, "**/*.txt") == len(listed)
    assert count_input_items(str(folder), "**/*.txt") == 3
    assert count_input_items(str(tmp_path / "missing"), "**/*.txt") is None
    # An archive's members are known only by reading it, as the run does.
    _tar(folder / "pack.tar.gz", {"x/d.txt": b"d"})
    assert count_input_items(str(folder), "**/*.txt") is None
    assert count_input_items(str(folder / "pack.tar.gz"), "**/*.txt") is None


@pytest.mark.parametrize(
    ("reader", "name"),
    [("text.reader.v1", "a.txt"), ("nxml.reader.v1", "a.nxml"), ("xmi.reader.v1", "a.xmi")],
)
def test_file_readers_count_the_documents_they_list(tmp_path: Path, reader: str, name: str) -> None:
    from casflow.pipeline.component import RunContext
    from casflow.pipeline.registry import registry

    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    for stem in ("one", "two", "sub/three"):
        (folder / f"{stem}{Path(name).suffix}").write_text("x")
    cls = registry().get(reader)
    component = cls(cls.Config(input=str(folder)), RunContext(output_dir=tmp_path / "out"))
    assert component.count_documents() == len(list(component.iter_documents())) == 3


def test_damaged_archive_is_one_failure_and_the_rest_is_read(tmp_path: Path) -> None:
    members = {f"doc{i}.txt": (f"Document number {i}. " * 2000).encode() for i in range(4)}
    _tar(tmp_path / "good.tar.gz", members)
    data = (tmp_path / "good.tar.gz").read_bytes()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "cut.tar.gz").write_bytes(data[: len(data) // 2])
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "in"}"}}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{output: "{tmp_path / "out"}", progress: false}}
            """
        )
    )
    assert main(["run", str(wf), "--quiet"]) == 1
    report = json.loads((tmp_path / "out" / "run-report.json").read_text())
    assert report["counts"]["failed"] == 1
    assert report["failures"][0]["document"] == "cut.tar.gz"
    assert "cannot read the archive" in report["failures"][0]["error"]
    assert 0 < report["counts"]["ok"] < 4  # the members before the damage


def test_lazy_folder_walk_has_the_order_of_sorted_glob(tmp_path: Path) -> None:
    from casflow.components.inputs import _walk_sorted

    for rel in [
        "a.txt",
        "a/b.txt",
        "a/b/e.txt",
        "a-b.txt",
        "A.txt",
        "a0/x.txt",
        "b.md",
        "ab/c.txt",
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    walked = [p for p, _ in _walk_sorted(tmp_path, "**/*.txt")]
    assert walked == sorted(p for p in tmp_path.glob("**/*.txt") if p.is_file())
    assert len(walked) == 7


def test_glob_inputs_have_the_order_of_sorted_paths(tmp_path: Path) -> None:
    from casflow.components.inputs import _walk_sorted, iter_input_files

    # "a-b" < "a/" as strings but "a" < "a-b" as path parts: the order is the parts'.
    for rel in ["a-b/x.txt", "a/b.txt", "a/b/e.txt", "a0/x.txt", "ab/c.txt", "b.md"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    expected = sorted(p for p in tmp_path.glob("**/*.txt") if p.is_file())
    assert [p for p, _ in iter_input_files(str(tmp_path / "**" / "*.txt"), "*.txt")] == expected
    in_a_folders = sorted(p for p in tmp_path.glob("a*/*.txt") if p.is_file())
    assert [p for p, _ in _walk_sorted(tmp_path, "a*/*.txt")] == in_a_folders
    assert len(in_a_folders) == 4


def _symlinked_inputs(tmp_path: Path, count: int) -> tuple[Path, list[str]]:
    # The names only as strings made here: no Path of them outlives this function.
    target = tmp_path / "article.txt"
    target.write_text("x")
    folder = tmp_path / "in"
    folder.mkdir()
    tag = uuid.uuid4().hex
    for i in range(count):
        os.symlink(target, os.path.join(folder, f"held-{tag}-{i:04d}.txt"))
    return folder, [f"held-{tag}-{i:04d}.txt" for i in range(count)]


@pytest.mark.slow
def test_folder_walk_keeps_nothing_per_document_it_has_passed(tmp_path: Path) -> None:
    # A run holds the walk of its input folder until the last document: what the
    # walk keeps per entry (a DirEntry with the stat result of the symlink it
    # followed was 0.9 KB) is memory that grows with the number of documents.
    from casflow.components.inputs import _walk_sorted

    count = 400
    folder, _ = _symlinked_inputs(tmp_path, count)
    walk = _walk_sorted(folder, "**/*.txt")
    tracemalloc.start()
    try:
        next(walk)  # lists the folder
        gc.collect()
        after_first = tracemalloc.get_traced_memory()[0]
        for _ in range(count - 2):
            next(walk)
        gc.collect()
        before_last = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert (before_last - after_first) / count < 64


def test_folder_walk_does_not_intern_the_names_it_holds(tmp_path: Path) -> None:
    # pathlib (3.11) interns each name it is given; an interned name held by the
    # listing would grow the interpreter's interned-string table with the documents.
    from casflow.components.inputs import _walk_sorted

    count = 50
    folder, names = _symlinked_inputs(tmp_path, count)
    walk = _walk_sorted(folder, "**/*.txt")
    for _ in range(count - 1):
        next(walk)
    gc.collect()

    def interned_elsewhere(name: str) -> bool:
        fresh = "".join(list(name))
        return sys.intern(fresh) is not fresh

    # The last name yielded is still in the walk's current Path.
    assert [n for n in names[: count - 2] if interned_elsewhere(n)] == []
    walk.close()


def test_patterns_take_alternatives_in_folders_and_archives(tmp_path: Path) -> None:
    from casflow.components.inputs import expand_braces

    assert expand_braces("**/*.{nxml,xml}") == ["**/*.nxml", "**/*.xml"]
    assert expand_braces("{a,b}/*.{x,y}") == ["a/*.x", "a/*.y", "b/*.x", "b/*.y"]
    assert expand_braces("*.nxml") == ["*.nxml"]
    (tmp_path / "sub").mkdir()
    for name in ("PMC1.xml", "sub/PMC2.nxml", "PMC3.json"):
        (tmp_path / name).write_text("<article/>")
    _tar(tmp_path / "pack.tar.gz", {"x/PMC4.xml": b"<a/>", "x/PMC5.txt": b"no"})
    found = [item.uri for item in iter_input_items(str(tmp_path), "**/*.{nxml,xml}")]
    assert found == [
        str(tmp_path / "PMC1.xml"),
        str(tmp_path / "sub" / "PMC2.nxml"),
        f"{tmp_path / 'pack.tar.gz'}!x/PMC4.xml",
    ]
    # A pattern with a folder part goes through glob, one alternative at a time.
    found = [
        item.uri for item in iter_input_items(str(tmp_path), "sub/*.{nxml,xml}", archives=False)
    ]
    assert found == [str(tmp_path / "sub" / "PMC2.nxml")]


def test_validation_names_every_missing_listed_input_capped(tmp_path: Path) -> None:
    from casflow.components.inputs import MISSING_SHOWN, input_problems

    (tmp_path / "a.txt").write_text("a")
    listing = tmp_path / "files.txt"
    lines = ["a.txt", *(f"gone{n}.txt" for n in range(MISSING_SHOWN + 3))]
    listing.write_text("\n".join(lines) + "\n")
    problems = input_problems(f"@{listing}", "*.txt")
    assert problems[0] == f"{listing}:2: listed input 'gone0.txt' does not exist"
    assert problems[MISSING_SHOWN - 1].startswith(f"{listing}:{MISSING_SHOWN + 1}: ")
    assert problems[MISSING_SHOWN:] == [
        f"{listing}: 3 more listed inputs do not exist ({MISSING_SHOWN + 3} in all); "
        "fix or remove those lines"
    ]


def test_a_listed_input_gone_after_validation_fails_that_document_only(tmp_path: Path) -> None:
    from casflow.pipeline.runner import run_workflow
    from casflow.pipeline.workflow import load_workflow

    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(f"Text {name}.")
    listing = tmp_path / "files.txt"
    listing.write_text("a.txt\nb.txt\nc.txt\n")
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, config: {{input: "@{listing}"}}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{output: "{tmp_path / "out"}", progress: false}}
            """
        )
    )
    workflow = load_workflow(wf)
    (tmp_path / "b.txt").unlink()  # after validation, before the run lists it
    report = run_workflow(workflow)
    assert report.counts["ok"] == 2 and report.counts["failed"] == 1
    (failure,) = report.failures
    assert failure["document"] == "b" and "cannot read" in failure["error"]
    assert (tmp_path / "out" / "run-report.json").exists()
    assert (tmp_path / "out" / "xmi" / "c.xmi").exists()


@pytest.mark.parametrize("pattern", ["**/*.txt", "*.txt"])
def test_a_broken_link_in_an_input_folder_is_a_failed_document_not_skipped(
    tmp_path: Path, pattern: str
) -> None:
    # "**/NAME" is walked by casflow, "*.txt" listed by glob: both must list the link
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Text a.")
    os.symlink(tmp_path / "gone.txt", folder / "b.txt")
    items = list(iter_input_items(str(folder), pattern))
    assert [item.path.name for item in items] == ["a.txt", "b.txt"]
    assert items[0].error is None
    assert items[1].error is not None
    assert "a symbolic link to" in items[1].error and "gone.txt" in items[1].error


def test_an_output_folder_inside_the_input_folder_is_refused(tmp_path: Path) -> None:
    from casflow.components.inputs import input_problems

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("a")
    folder = str(tmp_path / "in")
    (problem,) = input_problems(folder, "**/*.txt", tmp_path / "in" / "out")
    assert "is inside the input folder" in problem and "--output" in problem
    assert input_problems(folder, "**/*.txt", tmp_path / "in") != []
    assert input_problems(folder, "**/*.txt", tmp_path / "out") == []
    assert input_problems(folder, "**/*.txt", tmp_path / "in-out") == []


def test_archive_members_that_lead_out_of_the_archive_fail_by_name(tmp_path: Path) -> None:
    from casflow.components.inputs import document_id

    _tar(
        tmp_path / "pack.tar.gz",
        {"../../up.txt": b"u", "a/../../b.txt": b"b", "a/../c.txt": b"c", "d/e.txt": b"e"},
    )
    items = list(iter_input_items(str(tmp_path / "pack.tar.gz"), "*.txt"))
    assert [item.error is not None for item in items] == [True, True, False, False]
    assert "'../../up.txt'" in (items[0].error or "") and "Repack" in (items[0].error or "")
    # Failed under an id of its own, not that of a member read (here 'b' or 'up').
    assert {document_id(item.path, item.root, "stem") for item in items[:2]}.isdisjoint(
        {"b", "up", "c", "e"}
    )
    # A name with '..' inside the archive gets the id of the file tar extracts it as.
    ids = [document_id(item.path, item.root, "relative_path") for item in items[2:]]
    assert ids == ["c", "d/e"]


def test_a_symlink_to_a_folder_above_is_not_walked_in_a_loop(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("a")
    (folder / "sub" / "b.txt").write_text("b")
    # One loop only: under the old walk two such links multiplied and never ended.
    os.symlink("..", folder / "sub" / "up")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "c.txt").write_text("c")
    os.symlink(tmp_path / "other", folder / "linked")  # a folder linked in is read
    items = list(iter_input_items(str(folder), "**/*.txt"))
    assert [str(item.path.relative_to(folder)) for item in items] == [
        "a.txt",
        "linked/c.txt",
        "sub/b.txt",
    ]
    assert count_input_items(str(folder), "**/*.txt") == 3


@pytest.mark.parametrize(
    ("glob_below", "output_below", "refused"),
    [
        ("**/*.txt", "out", True),
        ("*/*.txt", "out", True),
        ("o*/**/*.txt", "out/run", True),
        ("*.txt", "out", False),
        ("in*/*.txt", "out", False),
        ("a*/**/*.txt", "out", False),
        ("**/*.txt", "../out", False),
    ],
)
def test_an_output_folder_an_input_glob_reaches_is_refused(
    tmp_path: Path, glob_below: str, output_below: str, refused: bool
) -> None:
    from casflow.components.inputs import input_problems

    data = tmp_path / "data"
    for name in ("a.txt", "in/b.txt", "other/x/c.txt", "aa/d.txt"):  # each glob matches
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(name)
    problems = input_problems(f"{data}/{glob_below}", "**/*.txt", data / output_below)
    assert bool(problems) == refused, problems
    if refused:
        assert "this run's outputs as input" in problems[0] and "--output" in problems[0]
