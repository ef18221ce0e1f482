from __future__ import annotations

import collections
import functools
import json
import textwrap
from pathlib import Path

import cassis
import pytest

from casflow.pipeline.chain import FAILED_BUILDS_REMEMBERED
from casflow.pipeline.cli import main
from casflow.pipeline.journal import ManifestMismatch
from casflow.pipeline.runner import run_workflow
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import DOCUMENT_METADATA, POS, TOKEN, load_typesystem


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(7):
        (folder / f"doc{i}.txt").write_text(
            f"Document {i} mentions BRCA{i} and p53 in mice.\n", encoding="utf-8"
        )
    return folder


def _workflow(corpus: Path, out: Path, jobs: int = 1, extra: str = "", tokenizer: str = "") -> str:
    return textwrap.dedent(
        f"""\
        reader:
          component: text.reader.v1
          config: {{input: "{corpus}"}}
        components:
          - component: test.whitespace_tokenizer.v1
            view: system
            config: {{{tokenizer}}}
          - component: test.constant_tagger.v1
            view: system
        writers:
          - component: xmi.writer.v1
        run:
          jobs: {jobs}
          batch_size: 2
          output: "{out}"
          progress: false
        {extra}
        """
    )


def _run(text: str, **overrides: object):
    return run_workflow(load_workflow_text(text, source="wf.yaml", overrides=overrides))


def test_run_writes_one_xmi_per_document_with_views(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    out = tmp_path / "out"
    report = _run(_workflow(corpus, out))
    assert report.counts["ok"] == 7 and report.exit_code == 0
    assert report.tokens == 7 * 8
    files = sorted(p.name for p in (out / "xmi").glob("*.xmi"))
    assert files == [f"doc{i}.xmi" for i in range(7)]
    assert (out / "xmi" / "TypeSystem.xml").exists()
    assert (out / "workflow.resolved.yaml").exists()
    cas = cassis.load_cas_from_xmi(
        (out / "xmi" / "doc3.xmi").read_text("utf-8"), typesystem=load_typesystem()
    )
    meta = cas.select(DOCUMENT_METADATA)[0]
    assert meta.documentId == "doc3"
    system = cas.get_view("system")
    assert system.sofa_string == cas.sofa_string
    assert [t.get_covered_text() for t in system.select(TOKEN)][:2] == ["Document", "3"]
    assert all(p.PosValue == "NN" for p in system.select(POS))
    assert cas.select(TOKEN) == []  # the initial view holds only the text
    run_report = json.loads((out / "run-report.json").read_text())
    assert run_report["counts"]["ok"] == 7


@pytest.mark.slow
def test_outputs_identical_for_any_number_of_jobs(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    _run(_workflow(corpus, one, jobs=1))
    _run(_workflow(corpus, two, jobs=2))
    for path in sorted((one / "xmi").iterdir()):
        assert path.read_bytes() == (two / "xmi" / path.name).read_bytes(), path.name


@pytest.mark.slow
def test_failing_document_is_isolated_and_rerun_skips_finished(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    out = tmp_path / "out"
    text = _workflow(corpus, out, jobs=2, tokenizer="fail_on: BRCA4")
    report = _run(text)
    assert report.counts == {"ok": 6, "failed": 1, "timeout": 0, "skipped": 0, "not_processed": 0}
    assert report.exit_code == 1
    (failure,) = report.failures
    assert failure["document"] == "doc4"
    assert "component test.whitespace_tokenizer.v1" in failure["stage"]
    assert "refusing text" in failure["error"]
    # retried alone after its batch failed: its traceback tells its own failure only
    assert failure["traceback"].count("RuntimeError: refusing text") == 1
    assert "During handling" not in failure["traceback"]
    assert not (out / "xmi" / "doc4.xmi").exists()
    before = {p.name: p.stat().st_mtime_ns for p in (out / "xmi").glob("*.xmi")}

    # Fixing the input and running again processes only the failed document.
    (corpus / "doc4.txt").write_text("Document 4 is fine now.\n", encoding="utf-8")
    report2 = _run(text)
    assert report2.counts["skipped"] == 6 and report2.counts["ok"] == 1
    after = {p.name: p.stat().st_mtime_ns for p in (out / "xmi").glob("*.xmi")}
    assert all(after[name] == mtime for name, mtime in before.items())
    assert "doc4.xmi" in after


def test_a_failure_in_a_batch_leaves_the_other_documents_annotated_once(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    # doc1 fails after the batch call annotated doc0 and doc1 (the default
    # process_batch is a loop): doc0 must come out as from a run without doc1.
    out = tmp_path / "out"
    report = _run(_workflow(corpus, out, tokenizer="fail_after_on: BRCA1"))
    assert report.counts["ok"] == 6 and report.counts["failed"] == 1
    assert report.failures[0]["document"] == "doc1"
    typesystem = load_typesystem()
    for name in ("doc0", "doc2"):
        with open(out / "xmi" / f"{name}.xmi", "rb") as xmi:
            view = cassis.load_cas_from_xmi(xmi, typesystem=typesystem).get_view("system")
        assert len(view.select(TOKEN)) == 8, name
        assert len(view.select(POS)) == 8, name


def test_text_reader_names_a_character_xml_forbids_or_reads_it_as_a_space(
    tmp_path: Path, test_components: None
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    # A form feed, as text extracted from PDF has between pages.
    (folder / "pdf.txt").write_text("Page one.\n\x0cPage two.\n", encoding="utf-8")
    report = _run(_workflow(folder, tmp_path / "out"))
    (failure,) = report.failures
    assert failure["stage"] == "reader text.reader.v1"
    assert (
        "pdf.txt: line 2, column 1 (character 10): U+000C is a character XML 1.0"
        in (failure["error"])
    )
    assert "control_characters: space" in failure["what_to_do"]
    text = _workflow(folder, tmp_path / "spaced").replace(
        f'input: "{folder}"}}', f'input: "{folder}", control_characters: space}}'
    )
    assert _run(text).counts["ok"] == 1
    cas = cassis.load_cas_from_xmi(
        (tmp_path / "spaced" / "xmi" / "pdf.xmi").read_text("utf-8"), typesystem=load_typesystem()
    )
    assert cas.sofa_string == "Page one.\n Page two.\n"


def test_overwrite_reprocesses_everything(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    out = tmp_path / "out"
    _run(_workflow(corpus, out))
    report = _run(_workflow(corpus, out), overwrite=True)
    assert report.counts["ok"] == 7 and report.counts["skipped"] == 0


def test_changed_workflow_is_refused_in_same_output(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    out = tmp_path / "out"
    _run(_workflow(corpus, out))
    changed = _workflow(corpus, out).replace(
        "test.constant_tagger.v1\n    view: system",
        "test.constant_tagger.v1\n    view: system\n    config: {tag: JJ}",
    )
    with pytest.raises(ManifestMismatch):
        _run(changed)


@pytest.mark.slow
def test_worker_crash_loses_only_the_culprit(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    out = tmp_path / "out"
    report = _run(_workflow(corpus, out, jobs=2, tokenizer="crash_on: BRCA2"))
    assert report.counts["ok"] == 6
    (failure,) = report.failures
    assert failure["document"] == "doc2" and failure["stage"] == "worker"
    assert len(list((out / "xmi").glob("doc*.xmi"))) == 6


@pytest.mark.slow
def test_documents_in_flight_when_a_worker_dies_are_retried_on_every_worker(
    tmp_path: Path, test_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(32):
        crash = " CRASH" if i == 9 else ""
        (folder / f"doc{i:02d}.txt").write_text(f"doc{i:02d} text{crash}\n", encoding="utf-8")
    runs = tmp_path / "runs.txt"
    tokenizer = f'crash_on: CRASH, sleep: 0.2, record_runs: "{runs}"'
    text = _workflow(folder, tmp_path / "out", jobs=2, tokenizer=tokenizer)
    text = text.replace("batch_size: 2", "batch_size: 8").replace("progress: false", "")
    report = _run(text)
    assert (report.counts["ok"], report.counts["failed"]) == (31, 1)
    (failure,) = report.failures
    assert (failure["document"], failure["stage"]) == ("doc09", "worker")
    first = report.worker_replacements[0]
    assert "in a task of its own" in first["what_happened"]
    # Said as it happens, not only in the summary at the end.
    said = f"casflow: workers replaced: {first['cause']}; {first['what_happened']} "
    assert said + f"({len(first['documents'])} documents, listed in run-report.json)" in (
        capsys.readouterr().err
    )
    retried = set(first["documents"]) - {"doc09"}
    assert len(retried) >= 8
    # Each retried document's last run, the one recorded: on both workers at once (run
    # alone, one after another, they kept one worker idle for the whole retry).
    last = {}
    for line in runs.read_text("utf-8").splitlines():
        doc, pid, start, end = line.split()
        if doc in retried:
            last[doc] = (pid, float(start), float(end))
    assert set(last) == retried
    spans = list(last.values())
    assert any(
        a[0] != b[0] and a[1] < b[2] and b[1] < a[2] for a in spans for b in spans if a is not b
    )


@pytest.mark.slow
def test_timeout_marks_document_and_run_continues(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    out = tmp_path / "out"
    report = _run(_workflow(corpus, out, jobs=1, tokenizer="hang_on: BRCA5"), timeout=1.0)
    assert report.counts["timeout"] == 1 and report.counts["ok"] == 6
    assert report.failures[0]["document"] == "doc5"


@pytest.mark.slow
def test_cli_run_exit_codes_and_input_override(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    wf = tmp_path / "wf.yaml"
    wf.write_text(_workflow(tmp_path / "elsewhere", tmp_path / "out"), encoding="utf-8")
    # The workflow's own input does not exist: nothing runs.
    assert main(["run", str(wf), "--quiet"]) == 2
    assert main(["run", str(wf), "--input", str(corpus), "--jobs", "2", "--quiet"]) == 0
    assert len(list((tmp_path / "out" / "xmi").glob("*.xmi"))) == 7


def test_duplicate_document_id_fails_that_document_and_the_run_goes_on(
    tmp_path: Path, test_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    for sub in ("a", "b", "c"):
        (tmp_path / "in" / sub).mkdir(parents=True)
    for sub in ("a", "b"):
        (tmp_path / "in" / sub / "same.txt").write_text(f"x y {sub}", encoding="utf-8")
    (tmp_path / "in" / "c" / "other.txt").write_text("z", encoding="utf-8")
    wf = tmp_path / "wf.yaml"
    out = tmp_path / "out"
    wf.write_text(
        _workflow(tmp_path / "in", out).replace("progress: false", "progress: true"),
        encoding="utf-8",
    )
    assert main(["run", str(wf)]) == 1
    err = capsys.readouterr().err
    first, second = tmp_path / "in" / "a" / "same.txt", tmp_path / "in" / "b" / "same.txt"
    assert f"{second} has the same document id as {first}" in err
    # the duplicate counts in the total as in the processed documents ("3 of 2" before)
    assert "3 of 3 processed (1 failed)" in err, err
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert report["counts"] == {
        "ok": 2,
        "failed": 1,
        "timeout": 0,
        "skipped": 0,
        "not_processed": 0,
    }
    (failure,) = report["failures"]
    assert failure["uri"] == str(second) and "id_style" in failure["what_to_do"]
    assert sorted(p.name for p in (out / "xmi").glob("*.xmi")) == ["other.xmi", "same.xmi"]
    assert "x y a" in (out / "xmi" / "same.xmi").read_text("utf-8")
    # The duplicate is not journaled, so it never makes the first one run again.
    assert main(["run", str(wf), "--quiet"]) == 1
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert report["counts"]["skipped"] == 2 and report["counts"]["failed"] == 1


def test_ids_that_differ_only_in_unsafe_characters_get_different_files(
    tmp_path: Path, test_components: None
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    names = ["a b", "a_b", "a%20b", ".a"]
    for name in names:
        (folder / f"{name}.txt").write_text(f"text of {name}", encoding="utf-8")
    out = tmp_path / "out"
    report = _run(_workflow(folder, out))
    assert report.counts["ok"] == 4 and report.exit_code == 0
    files = sorted(p.name for p in (out / "xmi").glob("*.xmi"))
    assert files == sorted(["a%20b.xmi", "a_b.xmi", "a%2520b.xmi", "%2Ea.xmi"])
    assert "text of a b" in (out / "xmi" / "a%20b.xmi").read_text("utf-8")
    assert "text of a_b" in (out / "xmi" / "a_b.xmi").read_text("utf-8")


@pytest.mark.parametrize("packed", [{}, {"compress": "gzip", "archive": "tar"}])
def test_xmi_read_back_keeps_the_ids_its_file_names_encode(
    tmp_path: Path, test_components: None, packed: dict[str, str]
) -> None:
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a b.txt").write_text("text of a b", encoding="utf-8")
    (folder / "50%.txt").write_text("half", encoding="utf-8")
    first = tmp_path / "first"
    text = _workflow(folder, first).replace(
        f'input: "{folder}"}}', f'input: "{folder}", id_style: relative_path}}'
    )
    text = text.replace(
        "- component: xmi.writer.v1",
        f"- {{component: xmi.writer.v1, config: {json.dumps(packed)}}}",
    )
    assert _run(text).counts["ok"] == 2
    second = tmp_path / "second"
    report = _run(
        textwrap.dedent(
            f"""\
            reader: {{component: xmi.reader.v1, config: {{input: "{first / "xmi"}"}}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{output: "{second}", progress: false}}
            """
        )
    )
    assert report.counts["ok"] == 2
    # Written again under the names they were read from, not encoded a second time.
    files = sorted(p.name for p in (second / "xmi").glob("*.xmi"))
    assert files == ["50%25.xmi", "sub%2Fa%20b.xmi"]
    cas = cassis.load_cas_from_xmi(
        (second / "xmi" / "sub%2Fa%20b.xmi").read_text("utf-8"), typesystem=load_typesystem()
    )
    assert cas.select(DOCUMENT_METADATA)[0].documentId == "sub/a b"


def test_xmi_file_names_casflow_did_not_encode_are_ids_as_they_are(tmp_path: Path) -> None:
    from casflow.components.formats.xmi.reader import xmi_document_id

    assert xmi_document_id("sub%2Fa%20b") == "sub/a b"
    assert xmi_document_id("dir/a%20b") == "dir/a b"
    # Not an encoding casflow writes (a bare %, bytes that are not UTF-8, a shortened id).
    assert xmi_document_id("50%") == "50%"
    assert xmi_document_id("a%FFb") == "a%FFb"
    assert xmi_document_id("long%~0123456789abcdef") == "long%~0123456789abcdef"


def test_xmi_reader_brings_back_every_view(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    first = tmp_path / "first"
    _run(_workflow(corpus, first))
    second = tmp_path / "second"
    text = textwrap.dedent(
        f"""\
        reader:
          component: xmi.reader.v1
          config: {{input: "{first / "xmi"}", views: {{system: [Token, POS]}}}}
        components:
          - {{component: test.constant_tagger.v1, view: system, config: {{tag: JJ}}}}
        writers: [{{component: xmi.writer.v1}}]
        run: {{output: "{second}", progress: false}}
        """
    )
    report = _run(text)
    assert report.counts["ok"] == 7
    cas = cassis.load_cas_from_xmi(
        (second / "xmi" / "doc1.xmi").read_text("utf-8"), typesystem=load_typesystem()
    )
    system = cas.get_view("system")
    assert len(system.select(TOKEN)) == 8
    assert sorted({p.PosValue for p in system.select(POS)}) == ["JJ", "NN"]
    assert cas.select(DOCUMENT_METADATA)[0].documentId == "doc1"


def test_xmi_reader_fails_a_file_whose_offsets_split_a_character(tmp_path: Path) -> None:
    from casflow.components.formats.xmi.reader import XmiDocumentError, XmiReader
    from casflow.pipeline.component import RunContext
    from tests.test_xmi_writer import split_offsets_xmi

    # The second token starts between the two UTF-16 halves of the DNA helix.
    path = tmp_path / "split.xmi"
    path.write_bytes(split_offsets_xmi([(0, 1), (2, 3)]))
    reader = XmiReader(XmiReader.Config(input=str(path)), RunContext(output_dir=tmp_path))
    (ref,) = reader.iter_documents()
    with pytest.raises(XmiDocumentError) as info:
        reader.load(ref, cassis.Cas(typesystem=load_typesystem()))
    assert str(info.value).startswith(f"{path}: {TOKEN} at UTF-16 offsets [2,3) in view ")
    assert "inside a surrogate pair" in str(info.value) and info.value.hint


def test_progress_lines_when_not_a_terminal(
    corpus: Path, tmp_path: Path, test_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _workflow(corpus, tmp_path / "out").replace("progress: false", "progress: true")
    _run(text)
    err = capsys.readouterr().err
    # Listing has ended by the last line, so it shows the total; "failed" appears once.
    line = next(x for x in err.splitlines() if "processed" in x)
    assert line.startswith("casflow: 7 of 7 processed (0 failed), 0 skipped (done before); ")
    assert line.count("failed") == 1 and "tokens/s" in line


def test_progress_gives_the_total_and_time_left_before_the_input_is_listed(
    corpus: Path,
    tmp_path: Path,
    test_components: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from casflow.pipeline import progress, runner

    # A line per document. The run lists its input as it goes, a batch ahead, so the
    # listing reaches the end with the last batch; the reader counted the folder before.
    monkeypatch.setattr(runner, "Progress", functools.partial(progress.Progress, log_every=0.0))
    out = tmp_path / "out"
    text = _workflow(corpus, out).replace("progress: false", "progress: true")
    _run(text)
    lines = [x for x in capsys.readouterr().err.splitlines() if "processed" in x]
    counted = [x for x in lines if " of about 7 processed (0 failed)" in x]
    assert len(counted) >= 3 and all(x.endswith(" left") for x in counted)
    assert lines[-1].startswith("casflow: 7 of 7 processed (0 failed), 0 skipped (done before); ")
    assert not any("queued" in x for x in lines[1:])

    # Resumed after three documents: the total left is the four not done before.
    journal = out / ".casflow" / "journal.jsonl"
    journal.write_text("".join(journal.read_text("utf-8").splitlines(True)[:3]), "utf-8")
    _run(text)
    lines = [x for x in capsys.readouterr().err.splitlines() if "processed" in x]
    assert any(" of about 4 processed (0 failed), 3 skipped" in x for x in lines)
    assert lines[-1].startswith("casflow: 4 of 4 processed (0 failed), 3 skipped (done before)")


def test_progress_estimates_documents_not_listed_yet_less_those_done_before() -> None:
    from types import SimpleNamespace

    from casflow.pipeline.progress import Progress

    progress = Progress(total=None, enabled=False, done_before=30)
    assert progress.to_process() is None and progress.seconds_left() is None
    progress.expect(100)
    progress.add_total(10)  # listed to process so far
    progress.skip(5)  # listed as done before so far: 25 more to come
    assert progress.to_process() == (10 + 100 - 15 - 25, False)
    for _ in range(7):
        progress.update(SimpleNamespace(tokens=1, status="ok"))
    progress.started -= 7.0  # a document a second
    left = progress.seconds_left()
    assert left is not None and 62.5 < left < 63.5
    progress.add_total(60)
    progress.skip(25)
    progress.listing_done()
    assert progress.to_process() == (70, True)


def test_a_log_names_the_first_failures_then_counts_the_rest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every failed document was a line of its own as it came: 10,000 lines in a CI log
    when a run's documents all fail the same way."""
    from types import SimpleNamespace

    from casflow.pipeline.progress import FAILURES_SHOWN, Progress

    progress = Progress(total=None, log_every=3600.0)
    n = 1000
    for i in range(n):
        progress.add_total()
        progress.update(
            SimpleNamespace(
                tokens=1, status="failed", doc_id=f"d{i}", stage="component x", error="boom"
            )
        )
    progress.listing_done()
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    named = [line for line in lines if line.startswith("casflow: failed: ")]
    assert named == [f"casflow: failed: d{i} (component x): boom" for i in range(FAILURES_SHOWN)]
    assert len(lines) == FAILURES_SHOWN + 2, lines
    assert lines[FAILURES_SHOWN] == (
        f"casflow: more than {FAILURES_SHOWN} documents failed: the others are counted in "
        "the progress lines, and each is in run-report.json when the run ends"
    )
    assert lines[-1].startswith(f"casflow: {n} of {n} processed ({n} failed)")


def test_ids_differing_in_case_fail_on_a_file_system_that_ignores_case(
    tmp_path: Path, test_components: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from casflow.pipeline import runner

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("PMC1a", "PMC1A", "PMC2"):
        (folder / f"{name}.txt").write_text(f"text of {name}", encoding="utf-8")
    assert not runner.ignores_case(tmp_path)  # this test machine's file system keeps case
    monkeypatch.setattr(runner, "ignores_case", lambda folder: True)
    report = _run(_workflow(folder, tmp_path / "out"))
    assert report.counts["ok"] == 2 and report.counts["failed"] == 1
    (failure,) = report.failures
    assert failure["document"] == "PMC1a"  # listed in sorted order: PMC1A first
    assert "ignores letter case" in failure["error"] and "PMC1A" in failure["error"]


def test_max_failures_stops_when_that_many_failed_and_says_so(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    # Every document fails; batches of 2: the first batch's two failures reach the limit.
    out = tmp_path / "out"
    text = _workflow(corpus, out, tokenizer="fail_on: mentions", extra="  max_failures: 2")
    report = _run(text)
    assert report.counts["failed"] == 2 and report.counts["ok"] == 0
    assert report.stopped_by is not None and report.stopped_by.startswith(
        "max_failures: 2 documents failed (run.max_failures: 2)"
    )
    assert "never looked at" in report.stopped_by
    assert "casflow: stopped: max_failures: 2 documents failed" in report.summary()
    saved = json.loads((out / "run-report.json").read_text("utf-8"))
    assert saved["stopped_by"] == report.stopped_by
    assert report.exit_code == 1


def test_a_listing_that_fails_part_way_is_one_failure_and_the_listed_documents_run(
    corpus: Path, tmp_path: Path, test_components: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from casflow.components.formats.text.reader import TextReader

    listed = TextReader.iter_documents

    def fails_after_two(self: TextReader):  # type: ignore[no-untyped-def]
        for n, ref in enumerate(listed(self)):
            if n == 2:
                raise OSError("the disk went away")
            yield ref

    monkeypatch.setattr(TextReader, "iter_documents", fails_after_two)
    out = tmp_path / "out"
    report = _run(_workflow(corpus, out))
    assert report.counts["ok"] == 2 and report.counts["failed"] == 1
    assert report.total_documents == 3 and report.counts["not_processed"] == 0
    (failure,) = report.failures
    assert failure["document"] == "(input listing)" and failure["stage"] == "listing the input"
    assert (
        "could not be listed after 2 documents (OSError: the disk went away)" in (failure["error"])
    )
    assert (out / "run-report.json").exists()


def test_the_resolved_workflow_says_where_to_run_it_from(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    out = tmp_path / "out"
    _run(_workflow(corpus, out))
    head = (out / "workflow.resolved.yaml").read_text("utf-8").splitlines()[:3]
    assert any("re-run from there" in line for line in head), head
    assert head[2].endswith(f"casflow run {out / 'workflow.resolved.yaml'}"), head


def test_warnings_about_documents_are_in_the_run_report_and_survive_a_resumed_run(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    # Every document warns with the same text: each occurrence is recorded (Python's
    # default filter would show the first in the process only), once per document.
    out = tmp_path / "out"
    text = _workflow(corpus, out, tokenizer="warn_on: mice")
    report = _run(text)
    assert report.exit_code == 0
    (said,) = report.warnings
    assert said["stage"] == "component test.whitespace_tokenizer.v1"
    assert said["category"] == "DocumentWarning"
    assert said["message"] == "'mice' in the text, kept as it is"
    assert said["count"] == 7
    assert sorted(said["documents"]) == [f"doc{i}" for i in range(7)]
    assert report.documents_with_warnings == 7
    on_disk = json.loads((out / "run-report.json").read_text())
    assert on_disk["warnings"] == report.warnings
    assert "7 warnings about 7 documents" in report.summary()
    # A resumed run skips every document and still reports what was said about them.
    again = _run(text)
    assert again.counts["skipped"] == 7
    assert again.warnings == report.warnings


def test_a_warning_names_its_document_or_the_batch_of_a_processor_that_batches(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    # A processor with the base class's process_batch is run view by view.
    report = _run(_workflow(corpus, tmp_path / "one", tokenizer="warn_on: BRCA3"))
    (said,) = report.warnings
    assert said["documents"] == ["doc3"] and said["count"] == 1
    assert report.documents_with_warnings == 1
    # One with its own cannot tell which of its batch (doc2, doc3) a warning was about.
    text = _workflow(corpus, tmp_path / "two", tokenizer="warn_on: BRCA3")
    text = text.replace("test.whitespace_tokenizer.v1", "test.batch_tokenizer.v1")
    batched = _run(text)
    (said,) = batched.warnings
    assert said["documents"] == ["doc2", "doc3"] and said["count"] == 1
    assert batched.documents_with_warnings == 2


def test_a_failed_batch_keeps_the_warnings_of_its_documents_run_alone(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    # doc1 fails its batch with doc0; both run again alone: each warning once.
    text = _workflow(corpus, tmp_path / "out", tokenizer="warn_on: mice, fail_after_on: BRCA1")
    report = _run(text)
    assert report.counts["failed"] == 1
    (said,) = report.warnings
    assert said["count"] == 7 and len(said["documents"]) == 7


@pytest.mark.slow
def test_warnings_come_back_from_worker_processes(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    report = _run(_workflow(corpus, tmp_path / "out", jobs=2, tokenizer="warn_on: mice"))
    (said,) = report.warnings
    assert said["count"] == 7 and len(said["documents"]) == 7


def test_one_component_in_two_views_has_its_time_and_failures_per_view(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    text = _workflow(corpus, tmp_path / "out", tokenizer="fail_on: BRCA4")
    text = text.replace(
        "  - component: test.constant_tagger.v1\n",
        "  - component: test.whitespace_tokenizer.v1\n"
        "    view: other\n"
        "  - component: test.constant_tagger.v1\n",
    )
    report = _run(text)
    stages = set(report.stage_seconds)
    assert {"test.whitespace_tokenizer.v1 [system]", "test.whitespace_tokenizer.v1 [other]"} <= (
        stages
    )
    assert "test.whitespace_tokenizer.v1" not in stages
    (failure,) = report.failures
    assert failure["stage"] == "component test.whitespace_tokenizer.v1 [system]"


def test_a_process_closes_its_cached_chain_at_exit(tmp_path: Path) -> None:
    # A chain is kept between batches and was closed only when another workflow's
    # replaced it: components of the last one never released what they hold outside
    # the process (a UIMA engine's scratch folder, its share of the JVM).
    import subprocess
    import sys

    marker = tmp_path / "closed"
    code = (
        "from casflow.pipeline import chain\n"
        "class Kept:\n"
        f"    def close(self): open({str(marker)!r}, 'w').write('closed')\n"
        "chain._CHAINS['key'] = Kept()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert marker.read_text() == "closed"


def test_a_step_that_cannot_start_fails_each_document_in_process_naming_it(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With jobs: 1 (the default) a component whose __init__ raised (a model file
    # missing) ended the command with a traceback, exit 1 and a report still saying
    # "running": workers reported it as failed documents; now both do.
    from casflow.pipeline import registry as registry_module
    from casflow.pipeline.component import Processor

    class ModelMissing(Processor):
        name = "test.model_missing.v1"

        def __init__(self, config: object, context: object = None) -> None:
            raise FileNotFoundError("no model at model.bin")

        def process(self, view: cassis.Cas) -> None:
            pass

    monkeypatch.setattr(registry_module, "_REGISTRY", None)
    registry_module.registry().register(ModelMissing.name, ModelMissing, origin="tests")
    out = tmp_path / "out"
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        f'reader: {{component: text.reader.v1, config: {{input: "{corpus}"}}}}\n'
        "components: [{component: test.model_missing.v1}]\n"
        f'run: {{output: "{out}", batch_size: 3, progress: false}}\n',
        encoding="utf-8",
    )
    assert main(["run", str(wf), "--quiet"]) == 1
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert report["counts"]["failed"] == 7 and "running" not in report
    failure = report["failures"][0]
    assert failure["stage"] == "building the chain"
    assert failure["error"] == (
        "StepStartError: test.model_missing.v1 (components -> 0) could not be started: "
        "FileNotFoundError: no model at model.bin"
    )
    assert failure["what_to_do"].startswith("the step failed while starting")


def _refusing_to_start(
    corpus: Path, out: Path, builds: Path, jobs: int, backend: str = "loky"
) -> Path:
    wf = out.parent / "wf.yaml"
    config = f'{{refuse_to_start: true, record_builds: "{builds}"}}'
    wf.write_text(
        f'reader: {{component: text.reader.v1, config: {{input: "{corpus}"}}}}\n'
        f"components: [{{component: test.whitespace_tokenizer.v1, config: {config}}}]\n"
        f'run: {{output: "{out}", jobs: {jobs}, batch_size: 1, progress: false, '
        f"overwrite: true, backend: {backend}}}\n",
        encoding="utf-8",
    )
    return wf


def _all_failed_building_the_chain(out: Path) -> None:
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert report["counts"]["failed"] == 7, report["counts"]
    assert {(f["stage"], f["error"]) for f in report["failures"]} == {
        (
            "building the chain",
            "StepStartError: test.whitespace_tokenizer.v1 (components -> 0) could not be "
            "started: FileNotFoundError: no model at model.bin",
        )
    }


def test_a_step_that_cannot_start_is_built_once_in_process(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    # Each batch built the chain again: a 30 s model load failing on 5,000 documents
    # cost hours before the run said what it had said at the first batch.
    builds, out = tmp_path / "builds.txt", tmp_path / "out"
    wf = _refusing_to_start(corpus, out, builds, jobs=1)
    assert main(["run", str(wf), "--quiet"]) == 1
    _all_failed_building_the_chain(out)
    # 7 batches, two attempts: the same error twice is the step's
    assert len(builds.read_text("utf-8").split()) == FAILED_BUILDS_REMEMBERED
    # The next run in the same process tries again (the user may have fixed the model).
    assert main(["run", str(wf), "--quiet"]) == 1
    _all_failed_building_the_chain(out)
    assert len(builds.read_text("utf-8").split()) == 2 * FAILED_BUILDS_REMEMBERED


def test_a_step_that_failed_to_start_once_is_built_again(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    # Remembering the first failure for the run failed every later batch of a run whose
    # model could not load once (memory taken by another model loading beside it).
    builds, out = tmp_path / "builds.txt", tmp_path / "out"
    wf = _refusing_to_start(corpus, out, builds, jobs=1)
    wf.write_text(
        wf.read_text("utf-8").replace("refuse_to_start: true", "refuse_first_builds: 1"),
        encoding="utf-8",
    )
    assert main(["run", str(wf), "--quiet"]) == 1
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert (report["counts"]["ok"], report["counts"]["failed"]) == (6, 1), report["counts"]
    assert len(builds.read_text("utf-8").split()) == 2


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["loky", "dask"])
def test_a_step_that_cannot_start_is_built_once_per_worker(
    corpus: Path, tmp_path: Path, test_components: None, backend: str
) -> None:
    # Workers (loky's started early, before the run, as the command line does) built it
    # for their first batch, then again for each batch they were given.
    if backend == "dask":
        pytest.importorskip("distributed")
    builds, out = tmp_path / "builds.txt", tmp_path / "out"
    wf = _refusing_to_start(corpus, out, builds, jobs=2, backend=backend)
    assert main(["run", str(wf), "--quiet"]) == 1
    _all_failed_building_the_chain(out)
    attempts = collections.Counter(builds.read_text("utf-8").split())
    assert attempts and set(attempts.values()) <= {1, FAILED_BUILDS_REMEMBERED}, attempts


def test_a_signal_at_any_line_of_the_final_files_stops_them_and_a_second_is_ignored(
    tmp_path: Path, test_components: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A signal arriving between reading the signals that came while the workers closed
    # and clearing them was ignored, then cleared: lost (the files were written, exit
    # 0). Wherever the first comes, the run stops as interrupted during the final
    # files, and a second one while the report is written is ignored, not a traceback.
    import os
    import signal
    import sys
    from types import FrameType

    from casflow.pipeline import runner as runner_module
    from casflow.pipeline.runner import Runner

    code = Runner._write_final_files.__code__
    real_finish = runner_module.finish_run_report

    def finish(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        real_finish(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner_module, "finish_run_report", finish)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "doc0.txt").write_text("doc0 text\n", encoding="utf-8")

    def run_signalling_at(line: int | None, seen: list[int]) -> object:
        def tracer(frame: FrameType, event: str, arg: object) -> object:
            if frame.f_code is not code:
                return None

            def local(frame: FrameType, event: str, arg: object) -> object:
                if event == "line":
                    seen.append(frame.f_lineno)
                    if frame.f_lineno == line and seen.count(line) == 1:
                        os.kill(os.getpid(), signal.SIGINT)
                return local

            return local

        previous = sys.gettrace()
        sys.settrace(tracer)
        try:
            return _run(_workflow(folder, tmp_path / f"out{line}")).interrupted
        finally:
            sys.settrace(previous)

    lines: list[int] = []
    assert run_signalling_at(None, lines) is None
    assert len(set(lines)) > 10, lines
    for line in sorted(set(lines)):
        interrupted = run_signalling_at(line, [])
        assert isinstance(interrupted, dict), f"a signal at line {line} was lost"
        assert interrupted["during"] == "final files", (line, interrupted)


def test_each_document_is_journaled_with_its_own_time(tmp_path: Path, test_components) -> None:
    # It was the batch's time from its start to its end, the same for all four.
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(4):
        (folder / f"doc{i}.txt").write_text(f"doc{i} text\n", encoding="utf-8")
    out = tmp_path / "out"
    text = _workflow(folder, out, tokenizer="sleep: 0.25").replace("batch_size: 2", "batch_size: 4")
    assert _run(text).counts["ok"] == 4
    lines = (out / ".casflow" / "journal.jsonl").read_text("utf-8").splitlines()
    entries = [json.loads(line) for line in lines if line.strip()]
    assert len(entries) == 4
    for entry in entries:
        assert 0.25 <= entry["seconds"] < 0.75, entry["seconds"]
        assert entry["seconds"] == pytest.approx(sum(entry["stage_seconds"].values()))


@pytest.mark.parametrize(
    ("tokenizer", "extra", "status"),
    [
        ('sleep: 0.3, fail_after_on: "BAD"', "", "failed"),
        ('hang_on: "BAD"', "  timeout: 0.3", "timeout"),
    ],
)
def test_a_failed_documents_journal_time_counts_the_step_it_failed_in(
    tmp_path: Path, test_components: None, tokenizer: str, extra: str, status: str
) -> None:
    # Its seconds were those of the steps before the failure: a document that spent
    # its time in the step that failed or timed out was journaled as taking none.
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(2):
        bad = " BAD" if i == 1 else ""
        (folder / f"doc{i}.txt").write_text(f"doc{i} text{bad}\n", encoding="utf-8")
    out = tmp_path / "out"
    report = _run(_workflow(folder, out, tokenizer=tokenizer, extra=extra))
    assert report.counts[status] == 1, report.failures
    lines = (out / ".casflow" / "journal.jsonl").read_text("utf-8").splitlines()
    (bad_entry,) = [e for e in map(json.loads, filter(None, lines)) if e["doc_id"] == "doc1"]
    assert bad_entry["status"] == status
    assert bad_entry["seconds"] >= 0.3, bad_entry
    assert bad_entry["stage_seconds"]["test.whitespace_tokenizer.v1"] >= 0.3, bad_entry
    assert bad_entry["seconds"] == pytest.approx(sum(bad_entry["stage_seconds"].values()))


def test_a_runner_run_again_builds_a_step_that_failed_in_its_last_run(
    corpus: Path, tmp_path: Path, test_components: None
) -> None:
    # The run token was the runner's: run() again on it (a notebook, after fixing the
    # model) failed at once from the last run's memory, never trying to build.
    from casflow.pipeline.runner import Runner
    from casflow.pipeline.workflow import load_workflow

    builds, out = tmp_path / "builds.txt", tmp_path / "out"
    runner = Runner(load_workflow(_refusing_to_start(corpus, out, builds, jobs=1)))
    runner.run()
    runner.run()
    assert len(builds.read_text("utf-8").split()) == 2 * FAILED_BUILDS_REMEMBERED
