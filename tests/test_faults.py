"""Fault injection: each bad input or misbehaving component costs one document.

One run (jobs: 2, loky) goes over a folder that mixes hand-written NXML
articles with every fault the engine must survive: broken files (truncated,
binary, wrong encoding, empty, deleted after listing), hostile XML (external
entities, entity expansion), and components that raise, call sys.exit, hang in
Python, hang where SIGALRM cannot reach, run out of memory, exit, segfault or
get SIGKILLed. Every good document must complete; every fault must become one
entry in run-report.json saying where, what and what to do; the exit status is
1; a second run retries only what failed. A subset runs in-process (jobs: 1),
which survives every fault that leaves the process alive (see README, Faults).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import cassis
import pytest

from casflow.cas.sofa import set_sofa_text
from casflow.pipeline.cli import main
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.workflow import load_workflow
from casflow.typesystem import PARAGRAPH, load_typesystem
from tests.helpers.fault_components import register_fault_components

FIXTURES = Path(__file__).parent / "fixtures" / "faults"
GOOD_IDS = ["PMC7000001", "PMC7000002", "PMC7000003", "PMC7000004"]
READER_STAGE = "reader test.vanishing_nxml_reader.v1"
COMPONENT_STAGE = "component test.fault_injector.v1"
SECRET = "casflow-test-secret-0c4f9d"


@pytest.fixture(scope="module")
def fault_components() -> None:
    register_fault_components()


# -- inputs -------------------------------------------------------------------


def article(pmcid: str | None, body: str, doctype: str = "") -> str:
    article_id = f'<article-id pub-id-type="pmc">{pmcid}</article-id>' if pmcid else ""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n{doctype}'
        f"<article><front><article-meta>{article_id}\n"
        f"<title-group><article-title>Fault case {pmcid}</article-title></title-group>\n"
        "</article-meta></front>\n"
        f"<body><sec><title>Results</title><p>{body}</p></sec></body></article>\n"
    )


@dataclass(frozen=True)
class Expected:
    """What run-report.json must say about one input file."""

    doc_id: str
    status: str  # ok | failed | timeout
    stage: str | None = None
    error: str = ""  # a part of the error message
    what_to_do: str = ""  # a part of the advice


def marker_file(pmcid: str, marker: str) -> str:
    return article(pmcid, f"The gene Sox9 was expressed. {marker}")


def external_entities(port: int, secret_path: Path) -> str:
    """Entities naming a local file, a secret, an HTTP URL, a parameter entity and a DTD."""
    doctype = (
        f'<!DOCTYPE article SYSTEM "http://127.0.0.1:{port}/article.dtd" [\n'
        '<!ENTITY passwd SYSTEM "file:///etc/passwd">\n'
        f'<!ENTITY secret SYSTEM "file://{secret_path}">\n'
        f'<!ENTITY web SYSTEM "http://127.0.0.1:{port}/entity">\n'
        f'<!ENTITY % remote SYSTEM "http://127.0.0.1:{port}/parameter-entity"> %remote;\n'
        "]>\n"
    )
    body = (
        "Before [&passwd;] [&secret;] [&web;] after."
        f'<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="http://127.0.0.1:{port}/xinclude" parse="text"/>'
    )
    return article("PMC7100013", body, doctype)


def billion_laughs() -> str:
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    )
    return article("PMC7100012", "&lol9;", f"<!DOCTYPE article [{entities}]>\n")


def write_fault_inputs(folder: Path, port: int, secret_path: Path) -> dict[str, Expected]:
    """The fault folder; returns file name -> what the report must say about it.

    Names sort the faults that kill a worker first, so that they are all in
    flight when the pool first breaks and the rest of the run is undisturbed.
    """
    folder.mkdir()
    for path in sorted(FIXTURES.glob("good-*.nxml")):
        shutil.copy(path, folder / path.name)
    good = article("PMC7100007", "This article is deleted after the run lists it.")
    texts: dict[str, str | bytes] = {
        "a-exit.nxml": marker_file("PMC7100001", "FAULT-EXIT"),
        "a-native-hang.nxml": marker_file("PMC7100002", "FAULT-NATIVE-HANG"),
        "a-segfault.nxml": marker_file("PMC7100003", "FAULT-SEGFAULT"),
        "a-sigkill.nxml": marker_file("PMC7100004", "FAULT-SIGKILL"),
        "b-empty.nxml": b"",
        "b-garbage.nxml": b"\x1f\x8b\x08\x00" + random.Random(7).randbytes(4096),
        "b-latin1.nxml": marker_file("PMC7100005", "caf\xe9 na\xefve").encode("latin-1"),
        "b-truncated.nxml": marker_file("PMC7100006", "cut")[:250],
        "b-vanished.nxml": good,
        "c-hang.nxml": marker_file("PMC7100008", "FAULT-HANG"),
        "c-oom.nxml": marker_file("PMC7100009", "FAULT-OOM"),
        "c-raise.nxml": marker_file("PMC7100010", "FAULT-RAISE"),
        "c-sysexit.nxml": marker_file("PMC7100011", "FAULT-SYSEXIT"),
        "d-billion-laughs.nxml": billion_laughs(),
        "d-external-entities.nxml": external_entities(port, secret_path),
    }
    for name, text in texts.items():
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        (folder / name).write_bytes(data)
    expected = {
        "a-exit.nxml": Expected(
            "PMC7100001", "failed", "worker", "exited with status 3", "os._exit"
        ),
        "a-native-hang.nxml": Expected(
            "PMC7100002", "timeout", "worker", "cannot interrupt it", "stuck-workers.log"
        ),
        "a-segfault.nxml": Expected(
            "PMC7100003", "failed", "worker", "crashed (SIGSEGV)", "native library"
        ),
        "a-sigkill.nxml": Expected(
            "PMC7100004", "failed", "worker", "killed (SIGKILL)", "out-of-memory killer"
        ),
        # Each broken file says what to do about its own cause, not one generic advice.
        "b-empty.nxml": Expected(
            "b-empty", "failed", READER_STAGE, "the file is empty", "stopped before writing"
        ),
        "b-garbage.nxml": Expected(
            "b-garbage", "failed", READER_STAGE, "is not XML", "decompress or extract"
        ),
        "b-latin1.nxml": Expected(
            "PMC7100005",
            "failed",
            READER_STAGE,
            "do not match the declared encoding",
            "convert the file to UTF-8",
        ),
        "b-truncated.nxml": Expected(
            "PMC7100006", "failed", READER_STAGE, "looks truncated", "ends inside an element"
        ),
        "b-vanished.nxml": Expected(
            "PMC7100007", "failed", READER_STAGE, "No such file", "moved, deleted"
        ),
        "c-hang.nxml": Expected(
            "PMC7100008", "timeout", COMPONENT_STAGE, "time limit of 1 s", "raise run.timeout"
        ),
        "c-oom.nxml": Expected("PMC7100009", "failed", COMPONENT_STAGE, "MemoryError", "memory"),
        "c-raise.nxml": Expected(
            "PMC7100010", "failed", COMPONENT_STAGE, "injected failure", "traceback"
        ),
        "c-sysexit.nxml": Expected(
            "PMC7100011", "failed", COMPONENT_STAGE, "SystemExit", "sys.exit()"
        ),
        "d-billion-laughs.nxml": Expected(
            "PMC7100012", "failed", READER_STAGE, "entity-expansion attack", "clean copy"
        ),
        "d-external-entities.nxml": Expected("PMC7100013", "ok"),
    }
    for path in FIXTURES.glob("good-*.nxml"):
        expected[path.name] = Expected(GOOD_IDS[int(path.stem[-1]) - 1], "ok")
    return expected


# Faults that leave the process alive: what jobs: 1 (in-process) survives.
IN_PROCESS_FAULTS = {
    "b-empty.nxml",
    "b-garbage.nxml",
    "b-latin1.nxml",
    "b-truncated.nxml",
    "b-vanished.nxml",
    "c-hang.nxml",
    "c-oom.nxml",
    "c-raise.nxml",
    "c-sysexit.nxml",
    "d-billion-laughs.nxml",
    "d-external-entities.nxml",
}


def write_workflow(
    path: Path, input_dir: Path, out: Path, jobs: int, vanish: list[str], extra_run: str = ""
) -> Path:
    path.write_text(
        textwrap.dedent(
            f"""\
            reader:
              component: test.vanishing_nxml_reader.v1
              config: {{input: "{input_dir}", vanish: {json.dumps(vanish)}}}
            components:
              - component: test.fault_injector.v1
                config: {{protect_pid: {os.getpid()}}}
            writers:
              - component: xmi.writer.v1
            run: {{jobs: {jobs}, batch_size: 2, timeout: 1, output: "{out}", progress: false{extra_run}}}
            """
        ),
        encoding="utf-8",
    )
    return path


# -- a local server that records every request --------------------------------


@pytest.fixture(scope="module")
def http_requests() -> Iterator[tuple[int, list[str]]]:
    seen: list[str] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.path)
            body = f'<!ENTITY leaked "{SECRET}">'.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


# -- the fault run (jobs: 2) -----------------------------------------------------


@dataclass
class FaultRun:
    input_dir: Path
    out: Path
    workflow: Path
    expected: dict[str, Expected]
    exit_code: int
    summary: str
    report: dict
    seconds: float


def run_cli(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["run", *args])
    return code, err.getvalue()


@pytest.fixture(scope="module")
def fault_run(
    tmp_path_factory: pytest.TempPathFactory,
    fault_components: None,
    http_requests: tuple[int, list[str]],
) -> FaultRun:
    tmp = tmp_path_factory.mktemp("faults")
    secret_path = tmp / "secret.txt"
    secret_path.write_text(SECRET, encoding="utf-8")
    port, _ = http_requests
    expected = write_fault_inputs(tmp / "in", port, secret_path)
    wf = write_workflow(tmp / "wf.yaml", tmp / "in", tmp / "out", 2, ["b-vanished.nxml"])
    started = time.monotonic()
    code, err = run_cli(str(wf), "--quiet")
    seconds = time.monotonic() - started
    report = json.loads((tmp / "out" / "run-report.json").read_text("utf-8"))
    return FaultRun(tmp / "in", tmp / "out", wf, expected, code, err, report, seconds)


def check_report(report: dict, expected: dict[str, Expected]) -> None:
    by_doc = {f["document"]: f for f in report["failures"]}
    for name, exp in expected.items():
        if exp.status == "ok":
            assert exp.doc_id not in by_doc, (name, by_doc.get(exp.doc_id))
            continue
        entry = by_doc.get(exp.doc_id)
        assert entry is not None, f"{name}: no entry in run-report.json"
        assert entry["uri"].endswith(name), entry
        assert (entry["status"], entry["stage"]) == (exp.status, exp.stage), (name, entry)
        assert exp.error in entry["error"], (name, entry["error"])
        assert exp.what_to_do in entry["what_to_do"], (name, entry["what_to_do"])
    failing = [e for e in expected.values() if e.status != "ok"]
    assert len(report["failures"]) == len(failing)
    counts = report["counts"]
    for status in ("ok", "failed", "timeout"):
        assert counts[status] == sum(e.status == status for e in expected.values()), status
    assert counts["skipped"] == 0 and counts["not_processed"] == 0


@pytest.mark.slow
def test_every_fault_is_one_report_entry_and_good_documents_complete(fault_run: FaultRun) -> None:
    check_report(fault_run.report, fault_run.expected)
    ok_ids = sorted(e.doc_id for e in fault_run.expected.values() if e.status == "ok")
    written = sorted(p.stem for p in (fault_run.out / "xmi").glob("*.xmi"))
    assert written == ok_ids
    typesystem = load_typesystem()
    for doc_id in GOOD_IDS:
        cas = cassis.load_cas_from_xmi(
            (fault_run.out / "xmi" / f"{doc_id}.xmi").read_text("utf-8"), typesystem=typesystem
        )
        assert cas.select(PARAGRAPH), doc_id
    assert fault_run.exit_code == 1
    # Two timeouts of 1 s, a watchdog at 3 s twice and a dozen worker restarts.
    assert fault_run.seconds < 60


@pytest.mark.slow
def test_summary_lists_every_failure(fault_run: FaultRun) -> None:
    summary = fault_run.summary
    counts = fault_run.report["counts"]
    assert f"{counts['ok']} ok, {counts['failed']} failed, {counts['timeout']} timed out" in summary
    for failure in fault_run.report["failures"]:
        assert failure["document"] in summary
    assert "documents/s" in summary and "tokens/s" in summary
    assert "time per stage: " in summary and "xmi.writer.v1" in summary
    assert f"what to do about each failure: {fault_run.out / 'run-report.json'}" in summary


@pytest.mark.slow
def test_each_worker_replacement_is_in_the_report_and_the_summary(fault_run: FaultRun) -> None:
    replacements = fault_run.report["worker_replacements"]
    # The segfault, SIGKILL, os._exit and native-hang documents each take a worker
    # down twice: in their batch (the pool breaks, the batch is retried) and alone.
    alone = {doc for r in replacements if "alone" in r["what_happened"] for doc in r["documents"]}
    assert alone >= {"PMC7100001", "PMC7100002", "PMC7100003", "PMC7100004"}
    retried = [r for r in replacements if r["what_happened"].startswith("each of")]
    assert retried and all(r["documents"] for r in retried)
    # What happened to a document run alone says the status it was recorded with.
    status = {e["document"]: e["status"] for e in fault_run.report["failures"]}
    for r in replacements:
        if r["what_happened"].startswith("this document"):
            (doc,) = r["documents"]
            said = "timed out" if status[doc] == "timeout" else "failed"
            assert r["what_happened"].endswith(f"recorded as {said}"), (doc, r)
    assert "timeout" in {status[d] for r in replacements for d in r["documents"] if d in status}
    causes = " ".join(r["cause"] for r in replacements)
    assert "crashed (SIGSEGV)" in causes and "killed (SIGKILL" in causes
    assert f"workers replaced {len(replacements)} times:" in fault_run.summary
    assert "crashed (SIGSEGV)" in fault_run.summary


@pytest.mark.slow
def test_run_report_has_counts_speed_and_stage_times(fault_run: FaultRun) -> None:
    report = fault_run.report
    assert set(report["counts"]) >= {"ok", "failed", "timeout", "skipped", "not_processed"}
    assert 0 < report["seconds"] <= fault_run.seconds
    processed = sum(report["counts"][s] for s in ("ok", "failed", "timeout"))
    assert report["documents_per_second"] == pytest.approx(processed / report["seconds"], rel=0.01)
    assert report["tokens"] > 0
    assert report["tokens_per_second"] == pytest.approx(
        report["tokens"] / report["seconds"], rel=0.01
    )
    assert set(report["stage_seconds"]) == {"read", "test.fault_injector.v1", "xmi.writer.v1"}
    assert all(seconds >= 0 for seconds in report["stage_seconds"].values())
    for failure in report["failures"]:
        assert failure["document"] and failure["stage"] and failure["error"]
        assert failure["what_to_do"]
    assert (report["backend"], report["jobs"]) == ("loky", 2)
    started = datetime.fromisoformat(report["started_at"])
    finished = datetime.fromisoformat(report["finished_at"])
    # seconds: processing; then the final files (evaluation), before the report's end.
    elapsed = report["seconds"] + report["final_files_seconds"]
    assert abs((finished - started).total_seconds() - elapsed) <= 1


@pytest.mark.slow
def test_no_entity_is_resolved_and_nothing_is_fetched(
    fault_run: FaultRun, http_requests: tuple[int, list[str]]
) -> None:
    _, seen = http_requests
    assert seen == []
    assert SECRET not in fault_run.summary
    passwd = Path("/etc/passwd").read_bytes().splitlines()[:1]
    for path in fault_run.out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert SECRET.encode() not in data, path
            assert not any(line and line in data for line in passwd), path
    cas = cassis.load_cas_from_xmi(
        (fault_run.out / "xmi" / "PMC7100013.xmi").read_text("utf-8"),
        typesystem=load_typesystem(),
    )
    assert "Before [] [] [] after." in cas.sofa_string


@pytest.mark.slow
def test_watchdog_log_holds_the_stuck_stack(fault_run: FaultRun) -> None:
    log = (fault_run.out / ".casflow" / "stuck-workers.log").read_text("utf-8")
    assert "native_hang" in log
    assert "^ the stacks above: document PMC7100002" in log


@pytest.mark.slow
def test_rerun_retries_only_failed_documents(fault_run: FaultRun) -> None:
    # Repair every input except two, then run again into the same output folder
    # (the reader deletes b-vanished.nxml again once it has listed it).
    failed = {n: e for n, e in fault_run.expected.items() if e.status != "ok"}
    for name, exp in failed.items():
        if name not in {"b-truncated.nxml", "c-raise.nxml"}:
            pmcid = exp.doc_id if exp.doc_id.startswith("PMC") else None
            (fault_run.input_dir / name).write_text(article(pmcid, "Repaired."), encoding="utf-8")
    still_broken = {"b-truncated.nxml", "c-raise.nxml", "b-vanished.nxml"}
    xmi = fault_run.out / "xmi"
    before = {p.name: p.stat().st_mtime_ns for p in xmi.glob("*.xmi")}

    code, _ = run_cli(str(fault_run.workflow), "--quiet")
    report = json.loads((fault_run.out / "run-report.json").read_text("utf-8"))
    ok_before = sum(e.status == "ok" for e in fault_run.expected.values())
    assert report["counts"] == {
        "ok": len(failed) - len(still_broken),
        "failed": len(still_broken),
        "timeout": 0,
        "skipped": ok_before,
        "not_processed": 0,
    }
    assert code == 1
    assert {f["uri"].rsplit("/", 1)[-1] for f in report["failures"]} == still_broken
    after = {p.name: p.stat().st_mtime_ns for p in xmi.glob("*.xmi")}
    assert all(after[name] == mtime for name, mtime in before.items())  # not rewritten
    assert len(after) == len(before) + len(failed) - len(still_broken)


# -- in-process (jobs: 1) ---------------------------------------------------------


@pytest.mark.slow
def test_jobs_1_survives_every_fault_that_leaves_the_process_alive(
    tmp_path: Path, fault_components: None, http_requests: tuple[int, list[str]]
) -> None:
    port, seen = http_requests
    secret_path = tmp_path / "secret.txt"
    secret_path.write_text(SECRET, encoding="utf-8")
    expected = write_fault_inputs(tmp_path / "in", port, secret_path)
    for name in list(expected):
        if not name.startswith("good-") and name not in IN_PROCESS_FAULTS:
            (tmp_path / "in" / name).unlink()
            del expected[name]
    wf = write_workflow(
        tmp_path / "wf.yaml", tmp_path / "in", tmp_path / "out", 1, ["b-vanished.nxml"]
    )
    code, _ = run_cli(str(wf), "--quiet")
    assert code == 1
    check_report(json.loads((tmp_path / "out" / "run-report.json").read_text("utf-8")), expected)
    assert seen == []


# -- exit status ---------------------------------------------------------------------


def test_exit_status_0_when_every_document_succeeds(tmp_path: Path, fault_components: None) -> None:
    shutil.copytree(FIXTURES, tmp_path / "in", ignore=shutil.ignore_patterns("*.md"))
    wf = write_workflow(tmp_path / "wf.yaml", tmp_path / "in", tmp_path / "out", 1, [])
    code, err = run_cli(str(wf), "--quiet")
    assert code == 0, err
    assert "4 ok, 0 failed, 0 timed out, 0 skipped" in err


def test_exit_status_2_when_the_run_cannot_start(
    tmp_path: Path, fault_components: None, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(FIXTURES, tmp_path / "in", ignore=shutil.ignore_patterns("*.md"))
    out = tmp_path / "out"
    wf = write_workflow(tmp_path / "wf.yaml", tmp_path / "in", out, 1, [])

    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(wf.read_text("utf-8").replace("batch_size", "batch_sise"), "utf-8")
    assert run_cli(str(invalid), "--quiet")[0] == 2

    code, err = run_cli(str(wf), "--input", str(tmp_path / "missing"), "--quiet")
    assert code == 2 and "missing" in err

    assert run_cli(str(wf), "--quiet")[0] == 0
    other = tmp_path / "other.yaml"
    other.write_text(
        wf.read_text("utf-8").replace("protect_pid:", "tokenize_up_to: 10, protect_pid:"), "utf-8"
    )
    code, err = run_cli(str(other), "--quiet")
    assert code == 2 and "different workflow" in err
    assert not list((out / "xmi").glob(".*.tmp"))


# -- a task timeout replaces a worker stuck outside the per-document limits -------------


@pytest.mark.slow
def test_task_timeout_replaces_worker_stuck_in_a_writer(
    tmp_path: Path, fault_components: None
) -> None:
    shutil.copytree(FIXTURES, tmp_path / "in", ignore=shutil.ignore_patterns("*.md"))
    (tmp_path / "in" / "stuck.nxml").write_text(article("PMC7200001", "WRITER-HANG"), "utf-8")
    text = textwrap.dedent(
        f"""\
        reader: {{component: nxml.reader.v1, config: {{input: "{tmp_path / "in"}"}}}}
        writers:
          - {{component: test.hanging_writer.v1, config: {{protect_pid: {os.getpid()}}}}}
          - {{component: xmi.writer.v1}}
        run: {{jobs: 2, batch_size: 1, timeout: 1, output: "{tmp_path / "out"}", progress: false}}
        """
    )
    wf = tmp_path / "wf.yaml"
    wf.write_text(text, "utf-8")
    # Writers have no per-document limit: only the task timeout (1 s per document
    # plus the grace) can end this one.
    options = RunOptions(show_progress=False, task_grace_seconds=4.0)
    started = time.monotonic()
    report = run_workflow(load_workflow(wf), options)
    assert time.monotonic() - started < 40
    assert report.counts["ok"] == 4 and report.counts["timeout"] == 1
    (failure,) = report.failures
    assert failure["document"] == "PMC7200001" and failure["stage"] == "worker"
    assert "task timeout of 5 s" in failure["error"]
    assert "writer" in failure["what_to_do"]
    assert report.exit_code == 1


# -- a 50 MB article --------------------------------------------------------------------


def write_big_article(path: Path, megabytes: int = 50) -> int:
    """A valid NXML article of ``megabytes`` MB: many paragraphs of plain text."""
    sentence = "The BRCA1 gene was expressed in mouse tissue at high levels (p &lt; 0.05). "
    paragraph = "<p>" + sentence * 130 + "</p>\n"
    count = megabytes * 1_000_000 // len(paragraph)
    head = article("PMC7300001", "Start.").split("<body>")[0]
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + "<body><sec><title>Padding</title>")
        for _ in range(count):
            f.write(paragraph)
        f.write("</sec></body></article>\n")
    return count


@pytest.mark.slow
def test_50_mb_article_completes_in_bounded_memory_and_time(
    tmp_path: Path, fault_components: None
) -> None:
    (tmp_path / "in").mkdir()
    paragraphs = write_big_article(tmp_path / "in" / "big.nxml")
    assert (tmp_path / "in" / "big.nxml").stat().st_size > 49_000_000
    shutil.copy(FIXTURES / "good-1.nxml", tmp_path / "in")
    out = tmp_path / "out"
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: nxml.reader.v1, config: {{input: "{tmp_path / "in"}"}}}}
            components:
              - {{component: test.fault_injector.v1, config: {{protect_pid: {os.getpid()}}}}}
            writers: [{{component: xmi.writer.v1}}, {{component: test.memory_probe.v1}}]
            run: {{jobs: 2, batch_size: 1, output: "{out}", progress: false}}
            """
        ),
        "utf-8",
    )
    started = time.monotonic()
    code, err = run_cli(str(wf), "--quiet")
    seconds = time.monotonic() - started
    assert code == 0, err
    # Not loaded back: cassis's XMI reader builds the offset tables this run avoided.
    xmi = (out / "xmi" / "PMC7300001.xmi").read_bytes()
    written_paragraphs = xmi.count(b"<structure:Paragraph ")
    text_length = int(re.findall(rb'<type:DocumentMetaData [^>]*end="(\d+)"', xmi)[0])
    del xmi  # kept out of assertion messages
    assert written_paragraphs == paragraphs
    assert text_length > 45_000_000
    peak_mb = json.loads((out / "memory" / "PMC7300001.json").read_text())["peak_mb"]
    # cassis alone would need about 200 bytes per character (10 GB) for its offset tables.
    assert peak_mb < 1000, peak_mb
    assert seconds < 60
    for big in (tmp_path / "in" / "big.nxml", out / "xmi" / "PMC7300001.xmi"):
        big.unlink()  # 110 MB that pytest would keep with its last temporary folders


def test_sofa_text_without_offset_tables_serializes_like_cassis() -> None:
    typesystem = load_typesystem()
    paragraph = typesystem.get_type(PARAGRAPH)
    text = "Ca\u00b2\u207a \U0001d6fc-helix \U0001f600 and BRCA1\u2009ok \U00010000"
    spans = [(0, 4), (5, 12), (13, 14), (19, 24), (20, len(text))]
    xmi = []
    for setter in (lambda cas, t: setattr(cas, "sofa_string", t), set_sofa_text):
        cas = cassis.Cas(typesystem=typesystem)
        setter(cas, text)
        cas.add_all(paragraph(begin=b, end=e) for b, e in spans)
        xmi.append(cas.to_xmi())
    assert xmi[0] == xmi[1]
    loaded = cassis.load_cas_from_xmi(xmi[1], typesystem=typesystem)
    assert [p.get_covered_text() for p in loaded.select(PARAGRAPH)] == [
        text[b:e] for b, e in sorted(spans)
    ]


def test_a_batch_limit_beyond_what_timers_hold_is_clamped() -> None:
    # A batch's limit is its documents' summed limits: 1,000,000 s (the most a workflow
    # may give) times a large batch would overflow signal.setitimer.
    from casflow.pipeline.chain import _time_limit

    with _time_limit(1_000_000 * 50_000):
        pass


def test_a_structure_too_deep_to_walk_is_said_so() -> None:
    # a RecursionError ("maximum recursion depth exceeded") says nothing of the cause
    from casflow.pipeline.chain import _error_fields

    def walk(depth: int) -> int:
        return walk(depth + 1)

    try:
        walk(0)
    except RecursionError as error:
        said = _error_fields(error)
    assert said["error"].startswith("RecursionError")
    assert said["hint"] is not None and "nested too deeply" in said["hint"]
