"""The Dask backend: same outputs as loky, failures isolated, dead workers handled.

``backend: dask`` without a scheduler makes the runner start a LocalCluster of
``jobs`` worker processes; ``--scheduler ADDRESS`` connects to a running
cluster (here one the test starts). Outputs must be byte-identical to a loky
run of the same workflow.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from casflow.pipeline.cli import main
from tests.helpers.fault_components import register_fault_components

distributed = pytest.importorskip("distributed")

FIXTURES = Path(__file__).parent / "fixtures" / "faults"


@pytest.fixture(scope="module")
def fault_components() -> None:
    register_fault_components()


def _article(pmcid: str, body: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<article><front><article-meta><article-id pub-id-type="pmc">{pmcid}</article-id>'
        f"<title-group><article-title>Dask case {pmcid}</article-title></title-group>"
        f"</article-meta></front><body><p>{body}</p></body></article>\n"
    )


def _inputs(folder: Path, faults: dict[str, str]) -> Path:
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("*.md"))
    for pmcid, marker in faults.items():
        (folder / f"{pmcid}.nxml").write_text(_article(pmcid, f"Shh was found. {marker}"), "utf-8")
    return folder


def _workflow(path: Path, input_dir: Path, out: Path, run: str) -> Path:
    path.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: nxml.reader.v1, config: {{input: "{input_dir}"}}}}
            components:
              - component: test.fault_injector.v1
                view: system
                config: {{protect_pid: {os.getpid()}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{batch_size: 2, output: "{out}", progress: false, {run}}}
            """
        ),
        "utf-8",
    )
    return path


def _run(*args: str) -> tuple[int, str]:
    """``casflow run ARGS --quiet``: exit status and what it printed."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["run", *args, "--quiet"])
    return code, err.getvalue()


def _report(out: Path) -> dict:
    return json.loads((out / "run-report.json").read_text("utf-8"))


def _assert_same_xmi(reference: Path, other: Path) -> None:
    names = sorted(p.name for p in (reference / "xmi").glob("*.xmi"))
    assert names == sorted(p.name for p in (other / "xmi").glob("*.xmi"))
    assert names
    for name in names:
        assert (reference / "xmi" / name).read_bytes() == (other / "xmi" / name).read_bytes(), name


def _failures(report: dict) -> set[tuple[str, str, str]]:
    return {(f["document"], f["status"], f["stage"]) for f in report["failures"]}


@pytest.mark.slow
def test_local_cluster_matches_loky_and_isolates_a_failing_document(
    tmp_path: Path, fault_components: None
) -> None:
    inputs = _inputs(tmp_path / "in", {"PMC7400001": "FAULT-RAISE", "PMC7400002": "DATA-WARN"})
    loky, dask = tmp_path / "loky", tmp_path / "dask"
    code, err = _run(str(_workflow(tmp_path / "loky.yaml", inputs, loky, "jobs: 2")))
    assert code == 1, err
    # No scheduler: the runner starts (and stops) a LocalCluster of `jobs` workers.
    wf = _workflow(tmp_path / "dask.yaml", inputs, dask, "jobs: 2, backend: dask")
    code, err = _run(str(wf))
    assert code == 1, err
    _assert_same_xmi(loky, dask)
    report = _report(dask)
    assert report["counts"]["ok"] == 5 and report["backend"] == "dask"
    assert (
        _failures(report)
        == _failures(_report(loky))
        == {("PMC7400001", "failed", "component test.fault_injector.v1")}
    )
    # A warning raised in a Dask worker reaches the report as one raised by loky's.
    (said,) = report["warnings"]
    assert said["message"] == "DATA-WARN in the text" and said["count"] == 1
    assert "PMC7400002" in said["documents"]
    assert report["warnings"] == _report(loky)["warnings"]


@pytest.mark.slow
def test_scheduler_address_from_the_command_line(tmp_path: Path, fault_components: None) -> None:
    inputs = _inputs(tmp_path / "in", {"PMC7400001": "FAULT-RAISE"})
    wf = _workflow(tmp_path / "wf.yaml", inputs, tmp_path / "unused", "jobs: 2")
    reference, out = tmp_path / "loky", tmp_path / "dask"
    assert _run(str(wf), "--output", str(reference))[0] == 1
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        code, err = _run(
            str(wf),
            "--output",
            str(out),
            "--backend",
            "dask",
            "--scheduler",
            cluster.scheduler_address,
        )
        assert code == 1, err
        # The cluster is the test's: the run leaves it running.
        with distributed.Client(cluster.scheduler_address) as client:
            assert len(client.scheduler_info()["workers"]) == 1
    _assert_same_xmi(reference, out)
    assert _failures(_report(out)) == {("PMC7400001", "failed", "component test.fault_injector.v1")}


@pytest.mark.slow
def test_dead_and_stuck_dask_workers_cost_one_document_each(
    tmp_path: Path, fault_components: None
) -> None:
    # A worker that exits fails its batch with KilledWorker; a Python hang in a
    # Dask worker thread (where SIGALRM cannot reach) is stopped by the watchdog,
    # which ends the worker process; the nanny starts new ones.
    faults = {"PMC7400002": "FAULT-EXIT", "PMC7400003": "FAULT-HANG"}
    inputs = _inputs(tmp_path / "in", faults)
    out = tmp_path / "out"
    wf = _workflow(tmp_path / "wf.yaml", inputs, out, "jobs: 2, backend: dask, timeout: 1")
    code, err = _run(str(wf))
    assert code == 1, err
    report = _report(out)
    assert report["counts"]["ok"] == 4
    assert _failures(report) == {
        ("PMC7400002", "failed", "worker"),
        ("PMC7400003", "timeout", "worker"),
    }
    by_doc = {f["document"]: f for f in report["failures"]}
    died, stuck = by_doc["PMC7400002"], by_doc["PMC7400003"]
    assert "Dask worker" in died["error"] and "KilledWorker" in died["error"]
    assert "worker logs" in died["what_to_do"]
    assert "Dask worker thread" in stuck["error"]
    log = (out / ".casflow" / "stuck-workers.log").read_text("utf-8")
    assert "in _fault" in log and "^ the stacks above: document PMC7400003" in log
    # Each lost worker is in the report: its batch retried, then the culprit alone.
    replacements = report["worker_replacements"]
    alone = {d for r in replacements if "alone" in r["what_happened"] for d in r["documents"]}
    # Documents that shared the dying worker with a culprit (timing decides which) are
    # retried alone too and then succeed: the culprits are among them, and only they fail.
    assert {"PMC7400002", "PMC7400003"} <= alone
    assert any("KilledWorker" in r["cause"] for r in replacements)
    assert "workers replaced" in err


@pytest.mark.slow
def test_documents_of_a_dead_workers_batches_are_retried_on_every_worker(
    tmp_path: Path, test_components: None
) -> None:
    # They were run alone one after another, the other worker idle, for the whole retry.
    # Batches of 10: any lost batch makes more suspects than the 4 per worker that are
    # run alone (a batch of 8 held alone by the dead worker was run alone, and the test
    # failed). The crashing document ends its batch, so that the retry round hands it
    # out last and the round runs the others on both workers first.
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(40):
        crash = " CRASH" if i == 19 else ""
        (folder / f"doc{i:02d}.txt").write_text(f"doc{i:02d} text{crash}\n", encoding="utf-8")
    runs, out = tmp_path / "runs.txt", tmp_path / "out"
    wf = tmp_path / "wf.yaml"
    wf.write_text(
        textwrap.dedent(
            f"""\
            reader: {{component: text.reader.v1, config: {{input: "{folder}"}}}}
            components:
              - component: test.whitespace_tokenizer.v1
                view: system
                config: {{crash_on: CRASH, sleep: 0.2, record_runs: "{runs}"}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{jobs: 2, batch_size: 10, output: "{out}", progress: false, backend: dask}}
            """
        ),
        "utf-8",
    )
    code, err = _run(str(wf))
    assert code == 1, err
    report = _report(out)
    assert (report["counts"]["ok"], report["counts"]["failed"]) == (39, 1)
    assert _failures(report) == {("doc19", "failed", "worker")}
    first = report["worker_replacements"][0]
    assert "KilledWorker" in first["cause"]
    assert "in a task of its own, on every worker" in first["what_happened"]
    retried = {d for r in report["worker_replacements"] for d in r["documents"]} - {"doc19"}
    assert len(retried) >= 9
    # Nothing lost or written twice: one journal line and one XMI per document.
    journal = (out / ".casflow" / "journal.jsonl").read_text("utf-8").splitlines()
    ids = [json.loads(line)["doc_id"] for line in journal if line.strip()]
    assert sorted(ids) == sorted(f"doc{i:02d}" for i in range(40))
    assert len(list((out / "xmi").glob("doc*.xmi"))) == 39
    # Each retried document's last run, the one recorded: not all on one worker. (Not
    # that two ran at the same moment: a worker still restarting may join late.)
    last = {}
    for line in runs.read_text("utf-8").splitlines():
        doc, pid, _, _ = line.split()
        if doc in retried:
            last[doc] = pid
    assert set(last) == retried
    assert len(set(last.values())) >= 2, last


class _FakeFuture:
    """A Dask future whose status is scripted: one status per read of ``status``."""

    def __init__(self, statuses: list[str], result: object) -> None:
        self._statuses = statuses
        self._result = result

    @property
    def status(self) -> str:
        return self._statuses.pop(0) if len(self._statuses) > 1 else self._statuses[0]

    def result(self) -> object:
        return self._result

    def exception(self) -> None:
        return None


def test_a_batch_whose_result_was_lost_with_its_worker_is_waited_for_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # wait() returned the batch as done; then the worker holding its result died
    # and the scheduler runs it again ("lost", then "pending"). CI once read such
    # a future's exception() (None) as a failure and crashed the run.
    import types

    import dask.distributed

    from casflow.pipeline.component import DocumentRef
    from casflow.pipeline.runner import DaskDispatcher

    ref = DocumentRef("PMC1", "in/PMC1.txt")
    future = _FakeFuture(["lost", "finished"], ["result of PMC1"])
    waits: list[list[object]] = []

    def fake_wait(futures: list[object], timeout: float, return_when: str) -> tuple[set, set]:
        waits.append(list(futures))
        return {futures[0]}, set()

    monkeypatch.setattr(dask.distributed, "wait", fake_wait)
    dispatcher = DaskDispatcher.__new__(DaskDispatcher)
    dispatcher.runner = types.SimpleNamespace(task_timeout=lambda size: 5.0)
    dispatcher.run_spec = types.SimpleNamespace(batch_size=1, jobs=1)
    dispatcher.replacements = []
    dispatcher.client = types.SimpleNamespace(nthreads=lambda: {"w": 1})
    dispatcher.pending = {}
    dispatcher._submit = lambda batch: future  # type: ignore[method-assign]

    assert list(dispatcher.results(iter([ref]))) == [["result of PMC1"]]
    assert len(waits) == 2  # waited again for the recomputed batch
    assert dispatcher.replacements == []  # not read as a lost worker


def test_an_unreachable_scheduler_is_one_line_and_leaves_the_output_alone(
    tmp_path: Path, fault_components: None
) -> None:
    import dask

    inputs = _inputs(tmp_path / "in", {})
    out = tmp_path / "out"
    wf = _workflow(tmp_path / "wf.yaml", inputs, out, "jobs: 1")
    # Nothing listens on port 1; give up after 1 s rather than the default 30 s.
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, err = _run(str(wf), "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2, err
    assert err.startswith("casflow: cannot reach the Dask scheduler at tcp://127.0.0.1:1 ("), err
    assert "dask scheduler" in err and "Traceback" not in err
    assert not out.exists()  # no manifest claims the folder for a run that never began


def test_stopping_a_run_restarts_the_remote_workers_before_cancelling_their_tasks() -> None:
    # Which workers run a task is known only until it is cancelled: cancelling first
    # left a remote cluster's workers running the run's tasks after casflow had exited.
    from casflow.pipeline.runner import DaskDispatcher

    class Future:
        key = "batch-1"

    class Client:
        def __init__(self) -> None:
            self.calls: list[str] = []
            self.cancelled = False

        def processing(self) -> dict[str, list[str]]:
            self.calls.append("processing")
            return {} if self.cancelled else {"tcp://worker:1": ["batch-1"]}

        def restart_workers(self, workers: list[str], raise_for_error: bool) -> None:
            self.calls.append(f"restart {workers}")

        def cancel(self, futures: list[object], force: bool) -> None:
            self.calls.append("cancel")
            self.cancelled = True

    class RunSpec:
        scheduler = "tcp://scheduler:8786"

    dispatcher = DaskDispatcher.__new__(DaskDispatcher)
    dispatcher.client, dispatcher.run_spec = Client(), RunSpec()
    dispatcher.pending = {Future(): []}
    dispatcher.stop()
    assert dispatcher.client.calls == ["processing", "restart ['tcp://worker:1']", "cancel"]
