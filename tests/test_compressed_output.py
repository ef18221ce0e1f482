"""Compressed output: gzipped XMI and JSON, one .tar per batch, read back by
xmi.reader.v1 and casflow check-xmi, resumed after kill -9 like plain output."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.components.formats.xmi.writer import XmiWriter
from casflow.pipeline.chain import Chain, run_batch
from casflow.pipeline.cli import main, xmi_files_to_check
from casflow.pipeline.component import DocumentRef, RunContext
from casflow.pipeline.packed import PackedFileError, iter_packed, tar_bytes
from casflow.pipeline.workflow import load_workflow
from tests.test_resume import RUNNER

REPO = Path(__file__).resolve().parent.parent
N_DOCS = 5


def _inputs(tmp_path: Path, n: int = N_DOCS) -> Path:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    for i in range(n):
        (folder / f"d{i:02d}.txt").write_text(f"Text {i} with the gene Pax{i} in mice.\n")
    return folder


def _workflow(
    tmp_path: Path,
    out: Path,
    xmi: dict[str, Any],
    json_config: dict[str, Any],
    jobs: int = 1,
    batch_size: int = 2,
    sleep: float = 0.0,
    inputs: Path | None = None,
) -> Path:
    wf = tmp_path / f"wf-{out.name}.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, config: {{input: "{inputs or tmp_path / "in"}"}}}}
            components:
              - {{component: test.whitespace_tokenizer.v1, view: system, config: {{sleep: {sleep}}}}}
              - {{component: test.constant_tagger.v1, view: system}}
            writers:
              - {{component: xmi.writer.v1, config: {json.dumps(xmi)}}}
              - {{component: json.writer.v1, config: {json.dumps(json_config)}}}
            run: {{output: "{out}", jobs: {jobs}, batch_size: {batch_size}, progress: false}}
            """
        )
    )
    return wf


def _run(wf: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUNNER, "run", str(wf), "--quiet", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
    )


def _contents(folder: Path) -> dict[str, bytes]:
    """Document file name (``.gz`` dropped) -> its bytes, from files and archives alike."""
    found: dict[str, bytes] = {}
    for path in sorted(folder.iterdir()):
        if path.name == "TypeSystem.xml":
            continue
        for name, data in iter_packed(path):
            assert name not in found or found[name] == data, f"{name} differs between archives"
            found[name] = data
    return found


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the inputs, their uncompressed run): what every compressed run of the same
    inputs must hold, byte for byte (the XMI names the input file)."""
    tmp_path = tmp_path_factory.mktemp("reference")
    inputs = _inputs(tmp_path)
    out = tmp_path / "plain"
    done = _run(_workflow(tmp_path, out, {}, {}))
    assert done.returncode == 0, done.stderr
    return inputs, out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "files"),
    [
        ({"compress": "gzip"}, [f"d{i:02d}{{ext}}.gz" for i in range(N_DOCS)]),
        ({"archive": "tar"}, 3),
        ({"compress": "gzip", "archive": "tar", "compress_level": 9}, 3),
    ],
)
def test_compressed_output_holds_the_plain_bytes(
    tmp_path: Path, shared: tuple[Path, Path], options: dict[str, Any], files: Any
) -> None:
    inputs, reference = shared
    out = tmp_path / "out"
    done = _run(_workflow(tmp_path, out, options, options, inputs=inputs))
    assert done.returncode == 0, done.stderr
    for sub, ext in (("xmi", ".xmi"), ("json", ".json")):
        written = sorted(p.name for p in (out / sub).iterdir() if p.name != "TypeSystem.xml")
        if isinstance(files, int):  # archives: one per batch of 2 (2 + 2 + 1 documents)
            assert len(written) == files and all(n.endswith(".tar") for n in written), written
        else:
            assert written == [f.format(ext=ext) for f in files]
        assert _contents(out / sub) == _contents(reference / sub)
    assert (out / "xmi" / "TypeSystem.xml").exists()
    # A second run with --overwrite writes the same bytes (nothing time-stamped).
    before = {p.name: p.read_bytes() for p in (out / "xmi").iterdir()}
    done = _run(_workflow(tmp_path, out, options, options, inputs=inputs), "--overwrite")
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_bytes() for p in (out / "xmi").iterdir()} == before


@pytest.mark.slow
@pytest.mark.parametrize("options", [{"compress": "gzip"}, {"compress": "gzip", "archive": "tar"}])
def test_the_xmi_reader_reads_what_the_writer_wrote(
    tmp_path: Path, shared: tuple[Path, Path], options: dict[str, Any]
) -> None:
    inputs, reference = shared
    out = tmp_path / "out"
    assert _run(_workflow(tmp_path, out, options, {}, inputs=inputs)).returncode == 0
    again = tmp_path / "again"
    wf = tmp_path / "read.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: xmi.reader.v1, config: {{input: "{out / "xmi"}"}}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{output: "{again}", jobs: 1, progress: false}}
            """
        )
    )
    assert main(["run", str(wf), "--quiet"]) == 0
    # Read back and written plain, each document is what the plain run wrote.
    assert _contents(again / "xmi") == _contents(reference / "xmi")


@pytest.mark.slow
def test_a_batch_recorded_in_part_before_a_kill_leaves_each_document_in_one_archive(
    tmp_path: Path,
) -> None:
    _inputs(tmp_path, 4)
    out = tmp_path / "out"
    options = {"compress": "gzip", "archive": "tar"}
    wf = _workflow(tmp_path, out, options, {"archive": "tar"}, batch_size=4)
    assert _run(wf).returncode == 0
    plain = {sub: _contents(out / sub) for sub in ("xmi", "json")}
    # The parent was killed while appending the batch's entries: two whole, one torn.
    journal = out / ".casflow" / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 4
    journal.write_text("".join(lines[:2]) + lines[2][:40], encoding="utf-8")
    done = _run(wf)
    assert done.returncode == 0, done.stderr
    for sub in ("xmi", "json"):
        names = [name for path in (out / sub).glob("*.tar") for name, _ in iter_packed(path)]
        assert sorted(names) == sorted(plain[sub]), f"{sub}: {names}"
        assert _contents(out / sub) == plain[sub]


@pytest.mark.slow
@pytest.mark.parametrize("options", [{"compress": "gzip"}, {"compress": "gzip", "archive": "tar"}])
def test_sigkill_twice_then_resume_with_compressed_output(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    n = 30
    _inputs(tmp_path, n)
    reference = tmp_path / "reference"
    assert _run(_workflow(tmp_path, reference, {}, {})).returncode == 0
    out = tmp_path / "out"
    wf = _workflow(tmp_path, out, options, options, jobs=2, sleep=0.05)
    journal = out / ".casflow" / "journal.jsonl"
    for finished_at_kill in (4, 12):
        proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER, "run", str(wf), "--quiet"],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_text().count("\n") >= finished_at_kill:
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    entries = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    assert len({e["doc_id"] for e in entries if e["status"] == "ok"}) < n, "finished before kill"

    final = _run(wf)
    assert final.returncode == 0, final.stderr
    report = json.loads((out / "run-report.json").read_text())
    assert report["counts"]["ok"] + report["counts"]["skipped"] == n
    assert report["counts"]["skipped"] > 0
    for sub in ("xmi", "json"):
        assert _contents(out / sub) == _contents(reference / sub)
    if options.get("archive") == "tar":
        # Every document in exactly one archive: those left by the killed runs are gone.
        names = []
        for archive in (out / "xmi").glob("*.tar"):
            with tarfile.open(archive) as tar:
                names.extend(tar.getnames())
        assert sorted(names) == sorted(f"d{i:02d}.xmi.gz" for i in range(n))
    assert not list(out.rglob("*.tmp"))


class _BrokenArchive:
    """A writer whose batch archive cannot be written."""

    def start_batch(self, doc_ids: Any) -> None:
        pass

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        return [Path(f"/nowhere/{doc_id}.tar")]

    def end_batch(self) -> list[Path]:
        raise OSError("disk full")


def test_a_batch_whose_archive_cannot_be_written_fails_every_document(tmp_path: Path) -> None:
    _inputs(tmp_path, 3)
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "in"}"}}}}
            writers: [{{component: xmi.writer.v1, config: {{archive: tar}}}}]
            run: {{output: "{tmp_path / "out"}", jobs: 1, progress: false}}
            """
        )
    )
    workflow = load_workflow(wf)
    chain = Chain(workflow, RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path))
    step = chain.writers[0][0]
    chain.writers = [(step, _BrokenArchive())]  # type: ignore[list-item]
    refs = [DocumentRef(f"d{i:02d}", str(tmp_path / "in" / f"d{i:02d}.txt")) for i in range(3)]
    results = run_batch(chain, refs, timeout=None)
    assert [r.status for r in results] == ["failed"] * 3
    assert all("disk full" in (r.error or "") and r.stage.startswith("writer") for r in results)
    assert all(r.outputs == [] for r in results)


class _RefusesOne:
    """A writer after the XMI writer that fails one document."""

    def start_batch(self, doc_ids: Any) -> None:
        pass

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        if doc_id == "d01":
            raise RuntimeError("refused")
        return []

    def end_batch(self) -> list[Path]:
        return []

    def discard(self, doc_id: str) -> None:
        pass


@pytest.mark.parametrize("packed", ["archive: tar, compress: gzip", "archive: none"])
def test_a_document_failing_after_the_xmi_writer_leaves_no_output(
    tmp_path: Path, packed: str
) -> None:
    # Kept in its batch's archive, the failed document would be there twice once a
    # later run had processed it (in an archive of its own).
    _inputs(tmp_path, 3)
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "in"}"}}}}
            writers:
              - {{component: xmi.writer.v1, config: {{{packed}}}}}
              - {{component: xmi.writer.v1, id: second, config: {{folder: second}}}}
            run: {{output: "{tmp_path / "out"}", jobs: 1, progress: false}}
            """
        )
    )
    workflow = load_workflow(wf)
    chain = Chain(workflow, RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path))
    chain.writers = [chain.writers[0], (chain.writers[1][0], _RefusesOne())]  # type: ignore[list-item]
    refs = [DocumentRef(f"d{i:02d}", str(tmp_path / "in" / f"d{i:02d}.txt")) for i in range(3)]
    results = run_batch(chain, refs, timeout=None)
    assert [r.status for r in results] == ["ok", "failed", "ok"]
    xmi = tmp_path / "out" / "xmi"
    if "tar" in packed:
        (archive,) = xmi.glob("*.tar")
        with tarfile.open(archive) as tar:
            assert tar.getnames() == ["d00.xmi.gz", "d02.xmi.gz"]
    else:
        assert sorted(p.name for p in xmi.glob("*.xmi")) == ["d00.xmi", "d02.xmi"]


def test_finished_outputs_are_those_of_each_documents_last_entry(tmp_path: Path) -> None:
    from casflow.pipeline.journal import Journal

    journal = Journal(tmp_path)
    journal.append(
        [
            {"doc_id": "a", "status": "ok", "outputs": ["x.tar"]},
            {"doc_id": "b", "status": "ok", "outputs": ["x.tar"]},
        ]
    )
    journal.append(
        [
            {"doc_id": "a", "status": "failed", "outputs": []},
            {"doc_id": "c", "status": "timeout", "outputs": []},
            {"doc_id": "b", "status": "ok", "outputs": ["y.tar", "b.ann"]},
        ]
    )
    journal.close()
    with open(journal.path, "a", encoding="utf-8") as torn:  # a run killed mid-line
        torn.write('{"doc_id": "d", "status": "ok", "outputs": ["z.tar"]')
    assert journal.finished_outputs() == {"b": ("y.tar", "b.ann")}
    assert set(journal.load()) == {"a", "b", "c"}


def test_finishing_archives_reads_only_what_each_document_wrote_from_the_journal(
    tmp_path: Path,
) -> None:
    from casflow.pipeline.files import safe_file_stem
    from casflow.pipeline.packed import archive_name
    from casflow.pipeline.testing import build

    writer = build("xmi.writer.v1", RunContext(output_dir=tmp_path), archive="tar")
    assert isinstance(writer, XmiWriter)
    folder = tmp_path / "xmi"
    folder.mkdir()
    ids = [f"d{i:04d}" for i in range(2000)]
    lines = []
    for start in range(0, len(ids), 16):
        batch = ids[start : start + 16]
        name = archive_name(batch, safe_file_stem(batch[0]))
        (folder / name).write_bytes(tar_bytes([(writer.file_name(d), b"<xmi/>") for d in batch]))
        for doc_id in batch:
            entry = {
                "doc_id": doc_id,
                "status": "ok",
                "outputs": [f"xmi/{name}", f"brat/{doc_id}.ann"],
                # what evaluators and timings add to an entry: the bulk of the journal
                "evaluation": {"eval.mentions.v1": {"system": {"units": ["GENE 10 20"] * 80}}},
                "stage_seconds": {f"step{k}": 0.1 for k in range(8)},
            }
            lines.append(json.dumps(entry) + "\n")
    # A killed run's archive that no finished document points to.
    orphan = archive_name(["zz"], "zz")
    (folder / orphan).write_bytes(tar_bytes([("zz.xmi", b"<xmi/>")]))
    (tmp_path / ".casflow").mkdir()
    (tmp_path / ".casflow" / "journal.jsonl").write_text("".join(lines), "utf-8")
    tracemalloc.start()
    try:
        writer.finish()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert not (folder / orphan).exists()
    assert len(list(folder.glob("*.tar"))) == len(ids) // 16
    # The whole entries of 2,000 documents took about 13 MB.
    assert peak < 3_000_000


def test_archives_and_gzip_are_reproducible_and_damage_is_reported(tmp_path: Path) -> None:
    members = [("a.xmi.gz", gzip.compress(b"<a/>", mtime=0)), ("b.xmi", b"<b/>")]
    assert tar_bytes(members) == tar_bytes(members)
    archive = tmp_path / "x-0123456789ab.tar"
    archive.write_bytes(tar_bytes(members))
    assert list(iter_packed(archive)) == [("a.xmi", b"<a/>"), ("b.xmi", b"<b/>")]
    broken = tmp_path / "broken.xmi.gz"
    broken.write_bytes(gzip.compress(b"<a/>" * 100)[:20])
    with pytest.raises(PackedFileError, match="cannot decompress"):
        list(iter_packed(broken))


def test_check_xmi_unpacks_gzipped_files_and_archives(tmp_path: Path) -> None:
    folder = tmp_path / "xmi"
    folder.mkdir()
    (folder / "plain.xmi").write_bytes(b"<p/>")
    (folder / "one.xmi.gz").write_bytes(gzip.compress(b"<o/>", mtime=0))
    (folder / "batch-0123456789ab.tar").write_bytes(
        tar_bytes([("a.xmi.gz", gzip.compress(b"<a/>")), ("b.xmi", b"<b/>")])
    )
    (folder / "TypeSystem.xml").write_text("<typeSystemDescription/>")
    (folder / "notes.txt").write_text("not XMI")
    files = xmi_files_to_check(folder, tmp_path / "unpacked")
    assert sorted(files.values()) == [
        "batch-0123456789ab.tar!a.xmi",
        "batch-0123456789ab.tar!b.xmi",
        "one.xmi.gz",
        "plain.xmi",
    ]
    assert {name: path.read_bytes() for path, name in files.items()}[
        "batch-0123456789ab.tar!a.xmi"
    ] == b"<a/>"


@pytest.mark.java
@pytest.mark.slow
def test_check_xmi_command_on_compressed_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from casflow.pipeline.uima_java import find_uima_jar, java_available

    if not java_available() or find_uima_jar() is None:
        pytest.skip("java/javac or the Apache UIMA jar (libuima-core-java) is missing")
    _inputs(tmp_path, 3)
    out = tmp_path / "out"
    options = {"compress": "gzip", "archive": "tar"}
    assert _run(_workflow(tmp_path, out, options, {})).returncode == 0
    assert main(["check-xmi", str(out / "xmi"), "--spans"]) == 0
    assert "3 of 3 XMI files load in UIMA Java" in capsys.readouterr().out
    # A document the type system does not allow fails the check, named in its archive.
    archive = next((out / "xmi").glob("*.tar"))
    members = [(name + ".gz", gzip.compress(data)) for name, data in iter_packed(archive)]
    bad = (
        members[0][0],
        gzip.compress(gzip.decompress(members[0][1]).replace(b":Token ", b":NoSuchType ")),
    )
    archive.write_bytes(tar_bytes([bad, *members[1:]]))
    assert main(["check-xmi", str(out / "xmi")]) == 1
    assert f"{archive.name}!{bad[0][:-3]}" in capsys.readouterr().out


@pytest.mark.slow
def test_a_dask_run_writes_the_same_compressed_output(
    tmp_path: Path, shared: tuple[Path, Path]
) -> None:
    pytest.importorskip("distributed")
    inputs, reference = shared
    options = {"compress": "gzip", "archive": "tar"}
    loky, dask = tmp_path / "loky", tmp_path / "dask"
    assert _run(_workflow(tmp_path, loky, options, options, jobs=2, inputs=inputs)).returncode == 0
    wf = _workflow(tmp_path, dask, options, options, jobs=2, inputs=inputs)
    wf.write_text(wf.read_text().replace("jobs: 2,", "jobs: 2, backend: dask,"))
    done = _run(wf)
    assert done.returncode == 0, done.stderr
    for sub in ("xmi", "json"):
        assert _contents(dask / sub) == _contents(loky / sub) == _contents(reference / sub)
        # The same batches, so the same archives, byte for byte.
        assert {p.name: p.read_bytes() for p in (dask / sub).iterdir()} == {
            p.name: p.read_bytes() for p in (loky / sub).iterdir()
        }
