"""Killing a run with SIGKILL at any moment and starting it again completes every
document exactly once, with outputs identical to an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RUNNER = textwrap.dedent(
    """\
    import sys
    from casflow.pipeline.registry import registry
    from tests.helpers.components import TEST_COMPONENTS
    for cls in TEST_COMPONENTS:
        registry().register(cls.name, cls, origin="tests")
    from casflow.pipeline.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


def _workflow(tmp_path: Path, out: Path, jobs: int) -> Path:
    wf = tmp_path / f"wf-{out.name}.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "in"}"}}}}
            components:
              - {{component: test.whitespace_tokenizer.v1, view: system, config: {{sleep: 0.05}}}}
              - {{component: test.constant_tagger.v1, view: system}}
            writers: [{{component: xmi.writer.v1}}, {{component: json.writer.v1}}]
            run: {{output: "{out}", jobs: {jobs}, batch_size: 2, progress: false}}
            """
        )
    )
    return wf


def _start(wf: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, "run", str(wf), "--quiet"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_sigkill_twice_then_resume_gives_each_output_once(tmp_path: Path, jobs: int) -> None:
    (tmp_path / "in").mkdir()
    n = 40
    for i in range(n):
        (tmp_path / "in" / f"d{i:02d}.txt").write_text(f"Text {i} with the gene Pax{i} in mice.\n")
    reference = tmp_path / "reference"
    subprocess.run(
        [sys.executable, "-c", RUNNER, "run", str(_workflow(tmp_path, reference, 1)), "--quiet"],
        cwd=REPO,
        check=True,
    )

    out = tmp_path / "out"
    wf = _workflow(tmp_path, out, jobs)
    journal = out / ".casflow" / "journal.jsonl"
    for finished_at_kill in (5, 15):
        proc = _start(wf)
        deadline = time.time() + 60
        # Kill once the journal shows progress, so the kill lands mid-run.
        while time.time() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_text().count("\n") >= finished_at_kill:
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and its workers, mid-run
        proc.wait()
    done_before = len(list((out / "xmi").glob("*.xmi"))) if (out / "xmi").exists() else 0
    assert done_before < n, "the run finished before it was killed; the test proves nothing"

    final = subprocess.run(
        [sys.executable, "-c", RUNNER, "run", str(wf), "--quiet"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert final.returncode == 0, final.stderr
    report = json.loads((out / "run-report.json").read_text())
    assert report["counts"]["ok"] + report["counts"]["skipped"] == n
    assert report["counts"]["skipped"] > 0  # earlier work was kept
    for sub, suffix in (("xmi", ".xmi"), ("json", ".json")):
        names = sorted(p.name for p in (out / sub).iterdir() if p.suffix == suffix)
        assert names == sorted(f"d{i:02d}{suffix}" for i in range(n))
        for name in names:
            assert (out / sub / name).read_bytes() == (reference / sub / name).read_bytes(), name
    assert not list(out.rglob("*.tmp"))
    journal = [
        json.loads(line) for line in (out / ".casflow" / "journal.jsonl").read_text().splitlines()
    ]
    ok_ids = [e["doc_id"] for e in journal if e["status"] == "ok"]
    assert sorted(set(ok_ids)) == sorted(f"d{i:02d}" for i in range(n))


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _start_and_wait_for_progress(wf: Path, journal: Path, lines: int) -> subprocess.Popen[bytes]:
    proc = _start(wf)
    deadline = time.time() + 90
    while time.time() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_text().count("\n") >= lines:
            return proc
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError(
        f"the run made no progress: {proc.stderr.read().decode() if proc.stderr else ''}"
    )


def _outputs(out: Path) -> dict[str, float]:
    return {
        str(p): p.stat().st_mtime
        for p in out.rglob("*")
        if p.is_file() and ".casflow" not in p.parts
    }


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["loky", "dask"])
def test_workers_end_within_seconds_when_the_parent_is_killed(tmp_path: Path, backend: str) -> None:
    (tmp_path / "in").mkdir()
    for i in range(60):
        (tmp_path / "in" / f"d{i:02d}.txt").write_text(f"Text {i} with the gene Pax{i}.\n")
    out = tmp_path / "out"
    wf = _workflow(tmp_path, out, 2)
    wf.write_text(wf.read_text().replace("jobs: 2,", f"jobs: 2, backend: {backend},"))
    proc = _start_and_wait_for_progress(wf, out / ".casflow" / "journal.jsonl", 4)
    os.kill(proc.pid, signal.SIGKILL)  # the parent only, as the OOM killer or `kill -9` would
    proc.wait()
    deadline = time.time() + 5
    while time.time() < deadline and _group_alive(proc.pid):
        time.sleep(0.1)
    alive = _group_alive(proc.pid)
    if alive:
        os.killpg(proc.pid, signal.SIGKILL)
    assert not alive, "worker processes outlived their parent by 5 s"
    before = _outputs(out)
    time.sleep(1.5)
    assert _outputs(out) == before, "outputs were written after the parent died"
    assert len([p for p in before if p.endswith(".xmi")]) < 60


@pytest.mark.slow
@pytest.mark.parametrize(("backend", "jobs"), [("loky", 1), ("loky", 2), ("dask", 2)])
def test_sigterm_stops_cleanly_and_the_next_run_resumes(
    tmp_path: Path, backend: str, jobs: int
) -> None:
    (tmp_path / "in").mkdir()
    n = 40
    for i in range(n):
        (tmp_path / "in" / f"d{i:02d}.txt").write_text(f"Text {i} with the gene Pax{i} in mice.\n")
    out = tmp_path / "out"
    wf = _workflow(tmp_path, out, jobs)
    wf.write_text(wf.read_text().replace(f"jobs: {jobs},", f"jobs: {jobs}, backend: {backend},"))
    proc = _start_and_wait_for_progress(wf, out / ".casflow" / "journal.jsonl", 6)
    os.kill(proc.pid, signal.SIGTERM)
    started = time.time()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err.decode()
    deadline = started + 5
    while time.time() < deadline and _group_alive(proc.pid):
        time.sleep(0.1)
    assert not _group_alive(proc.pid), "workers outlived a TERMed run by 5 s"
    report = json.loads((out / "run-report.json").read_text())
    interrupted = report["interrupted"]
    assert interrupted["signal"] == "SIGTERM" and interrupted["exit_status"] == 143
    assert report["counts"]["ok"] < n
    journal_ok = {
        json.loads(line)["doc_id"]
        for line in (out / ".casflow" / "journal.jsonl").read_text().splitlines()
    }
    assert not set(interrupted["documents_not_finished"]) & journal_ok
    assert "stopped by SIGTERM" in err.decode()

    final = subprocess.run(
        [sys.executable, "-c", RUNNER, "run", str(wf), "--quiet"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert final.returncode == 0, final.stderr
    report = json.loads((out / "run-report.json").read_text())
    assert report["counts"]["skipped"] == len(journal_ok)
    assert report["counts"]["ok"] + report["counts"]["skipped"] == n
    assert sorted(p.name for p in (out / "xmi").glob("*.xmi")) == [
        f"d{i:02d}.xmi" for i in range(n)
    ]


@pytest.mark.slow
def test_a_signal_during_the_evaluation_stops_it_and_the_next_run_writes_it(
    tmp_path: Path,
) -> None:
    """Ctrl-C or SIGTERM once every document was done (the evaluation, its significance
    tests: minutes on a large corpus) was ignored: the run went on to the end and exited
    0, as if no signal had come."""
    (tmp_path / "in").mkdir()
    n = 30
    for i in range(n):
        (tmp_path / "in" / f"d{i:02d}.txt").write_text(f"Text {i}: the gene Pax{i}, in mice.\n")
    out = tmp_path / "out"
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, view: gold, config: {{input: "{tmp_path / "in"}"}}}}
            components:
              - {{component: test.whitespace_tokenizer.v1, view: gold}}
              - {{component: test.whitespace_tokenizer.v1, view: system}}
              - {{component: tokens.fine.v1, view: system2}}
            writers: [{{component: xmi.writer.v1}}]
            evaluators:
              - component: eval.tokens.v1
                config:
                  system_views: [system, system2]
                  # minutes of shuffles: the signal comes while they run
                  significance: {{metric: f1, iterations: 100000000}}
            run: {{output: "{out}", jobs: 1, batch_size: 5}}
            """
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, "run", str(wf)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stderr is not None
    said = b""
    deadline = time.time() + 60
    # The progress display's last line: every document is done, the final files begin.
    while f"{n} of {n} processed".encode() not in said and time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        said += line
    assert f"{n} of {n} processed".encode() in said, said.decode()
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise AssertionError("the run went on with its evaluation for 10 s after Ctrl-C") from None
    err = said.decode() + proc.stderr.read().decode()
    assert proc.returncode == 130, err
    assert "stopped by SIGINT while writing the run's final files" in err, err
    report = json.loads((out / "run-report.json").read_text())
    assert report["interrupted"]["during"] == "final files"
    assert report["interrupted"]["documents_not_finished"] == []
    assert report["evaluation"] is None and report["counts"]["ok"] == n

    # The same command writes them: every document is skipped, nothing is run again.
    wf.write_text(wf.read_text().replace("iterations: 100000000", "iterations: 1000"))
    final = subprocess.run(
        [sys.executable, "-c", RUNNER, "run", str(wf), "--quiet", "--allow-changed-workflow"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert final.returncode == 0, final.stderr
    report = json.loads((out / "run-report.json").read_text())
    assert report["counts"]["skipped"] == n and report["counts"]["ok"] == 0
    assert report["interrupted"] is None and report["evaluation"] is not None
    assert (out / "evaluation.md").is_file()
