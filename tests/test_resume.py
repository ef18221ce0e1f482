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
