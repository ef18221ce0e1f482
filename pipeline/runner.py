"""Run a validated workflow over its documents, in parallel.

The parent lists document references, skips those a previous run finished,
and sends batches of references to workers: local processes through joblib's
loky backend, or a Dask cluster through the distributed client (one future per
batch). Workers build the chain once, process, write outputs atomically and
return small results; the parent appends them to the journal, updates the
progress display, and at the end writes ``run-report.json`` and the
evaluation reports.

A loky worker that dies (out of memory, segfault, stopped by its watchdog)
breaks the whole process pool, so its batch cannot be known: the unfinished
documents are retried one per task. A dead Dask worker names its batches; their
documents are retried one per task once the running batches are done. A
document that brings down a worker on its own is recorded as failed (or timed
out, when the watchdog or the task timeout stopped it).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from joblib import Parallel, delayed

from casflow.pipeline.chain import (
    WATCHDOG_LOG,
    DocumentResult,
    get_chain,
    process_documents,
    run_batch,
    watchdog_seconds,
)
from casflow.pipeline.component import DocumentRef, RunContext
from casflow.pipeline.files import remove_stale_temporary_files
from casflow.pipeline.journal import STATE_DIR, Journal, is_complete
from casflow.pipeline.progress import Progress
from casflow.pipeline.registry import registry
from casflow.pipeline.run_report import RunReport, RunTally, write_run_outputs
from casflow.pipeline.validation import LoadedWorkflow
from casflow.pipeline.workflow import RunSpec, dump_resolved

EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_NOT_STARTED = 2

RESOLVED_WORKFLOW_NAME = "workflow.resolved.yaml"


@dataclass
class RunOptions:
    allow_changed_workflow: bool = False
    show_progress: bool = True
    # Added to the task timeout for what no per-document limit covers: a fresh
    # worker building the chain (loading models), writers, evaluators.
    task_grace_seconds: float = 30.0
    extra: dict[str, Any] = field(default_factory=dict)


def _batches(refs: Iterable[DocumentRef], size: int) -> Iterator[list[DocumentRef]]:
    batch: list[DocumentRef] = []
    for ref in refs:
        batch.append(ref)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _is_pool_failure(exc: BaseException) -> bool:
    # TimeoutError: joblib's task timeout, after which it kills the loky workers;
    # CancelledError: a Dask future cancelled under it (a restarted worker).
    names = {type(exc).__name__}
    names.update(type(e).__name__ for e in (exc.__cause__, exc.__context__) if e is not None)
    return bool(
        names
        & {
            "TerminatedWorkerError",
            "BrokenProcessPool",
            "KilledWorker",
            "CommClosedError",
            "TimeoutError",
            "CancelledError",
        }
    )


_EXIT_CODE = re.compile(r"\b([A-Z][A-Z0-9]*)\((-?\d+)\)")
_CRASH_SIGNALS = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"}


def describe_worker_death(exc: BaseException) -> tuple[str, str]:
    """``(error, what to do)`` for a worker that died running one document alone."""
    name = type(exc).__name__
    if name == "KilledWorker":
        return (
            f"the Dask worker running this document died ({name}: {exc})",
            "the worker logs say why: often memory (the nanny restarts a worker over its memory "
            "limit) or a crash in native code; give workers more memory, or run the document "
            "alone with --jobs 2 on one machine to see the exit status",
        )
    codes = [(n, int(c)) for n, c in _EXIT_CODE.findall(str(exc)) if int(c) != 0]
    if not codes:
        return (
            f"the worker process died while processing this document ({name})",
            "the document may exhaust memory or crash a native library; run it alone "
            "(--input FILE --jobs 1) to see the error",
        )
    signal_name, code = codes[0]
    if signal_name == "SIGKILL":
        return (
            "the worker process was killed (SIGKILL) while processing this document",
            "most often the kernel's out-of-memory killer (see dmesg): give the workers more "
            "memory, run fewer jobs or a smaller batch_size, or split the document",
        )
    if signal_name in _CRASH_SIGNALS:
        return (
            f"the worker process crashed ({signal_name}) while processing this document",
            "a native library (parser, model) crashed on this document: run it alone "
            "(--input FILE --jobs 1, python -X faulthandler) for the native stack, report it "
            "with the document, or leave the document out",
        )
    return (
        f"the worker process exited with status {code} while processing this document",
        "a component ended the process (os._exit or a native exit()); run the document alone "
        "(--input FILE --jobs 1) to see where",
    )


@contextlib.contextmanager
def _joblib_backend(run: RunSpec) -> Iterator[dict[str, Any]]:
    if run.backend == "sequential" or run.jobs == 1:
        yield {"n_jobs": 1}
        return
    yield {"n_jobs": run.jobs, "backend": "loky"}


@contextlib.contextmanager
def _dask_client(run: RunSpec) -> Iterator[Any]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "backend 'dask' needs dask.distributed: pip install 'casflow[dask]'"
        ) from exc
    if run.scheduler:
        with Client(run.scheduler) as client:
            yield client
        return
    # The runner retries a dead worker's documents one by one itself; the
    # scheduler's own retries (allowed-failures, default 3) would only let a
    # crashing document kill more workers first.
    with (
        LocalCluster(
            n_workers=run.jobs,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            scheduler_kwargs={"allowed_failures": 0},
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


class Runner:
    def __init__(self, workflow: LoadedWorkflow, options: RunOptions | None = None) -> None:
        self.workflow = workflow
        self.options = options or RunOptions()
        run = workflow.spec.run
        self.output_dir = Path(run.output).resolve()
        self.context = RunContext(
            output_dir=self.output_dir,
            workflow_dir=Path(workflow.source).resolve().parent
            if workflow.source.endswith((".yaml", ".yml"))
            else Path.cwd(),
            overwrite=run.overwrite,
        )
        steps = [workflow.reader, *workflow.processors, *workflow.writers, *workflow.evaluators]
        self.context_dict = {
            "output_dir": str(self.context.output_dir),
            "workflow_dir": str(self.context.workflow_dir),
            "overwrite": self.context.overwrite,
            # Workers resolve names as the parent did, even for components the
            # parent registered at run time or found through its own entry points.
            "components": {s.spec.component: registry().target(s.spec.component) for s in steps},
        }
        self.journal = Journal(self.output_dir)

    def _relative(self, path: str) -> str:
        try:
            return str(Path(path).resolve().relative_to(self.output_dir))
        except ValueError:
            return path

    def _absolute(self, path: str) -> str:
        p = Path(path)
        return str(p if p.is_absolute() else self.output_dir / p)

    def run(self) -> RunReport:
        run = self.workflow.spec.run
        started = time.time()
        self.output_dir.mkdir(parents=True, exist_ok=True)
        if run.overwrite:
            self.journal.reset()
        else:
            self.journal.check_manifest(self.workflow.hash, self.options.allow_changed_workflow)
        remove_stale_temporary_files(self.output_dir)
        dump_resolved(self.workflow.resolved, self.output_dir / RESOLVED_WORKFLOW_NAME)
        self.journal.write_manifest(self.workflow.hash, self.workflow.source, None)

        reader_step = self.workflow.reader
        reader = reader_step.component_class(reader_step.config, self.context)
        previous = {} if run.overwrite else self.journal.load()
        tally = RunTally()
        # Only evaluation needs per-document results at the end; without
        # evaluators nothing per document is kept, so memory stays flat.
        keep_evaluation = bool(self.workflow.evaluators)
        evaluated: dict[str, DocumentResult] = {}
        order: list[str] = []
        seen: set[str] = set()
        input_digest = hashlib.sha256()
        progress = Progress(
            total=None, skipped=0, enabled=run.progress and self.options.show_progress
        )

        def todo() -> Iterator[DocumentRef]:
            # Lazy: references (which may carry bytes, e.g. archive members) are
            # produced as workers take them, so the corpus is never held in memory.
            for ref in reader.iter_documents():
                if ref.doc_id in seen:
                    raise RunSetupError(
                        f"two input documents have the same id {ref.doc_id!r}: {ref.uri} and an "
                        "earlier input; outputs are named by document id, so ids must be unique "
                        "(rename one file or choose the reader's id option)"
                    )
                seen.add(ref.doc_id)
                if keep_evaluation:
                    order.append(ref.doc_id)
                input_digest.update(ref.doc_id.encode("utf-8") + b"\n")
                entry = previous.pop(ref.doc_id, None)
                if entry is not None:
                    entry = {
                        **entry,
                        "outputs": [self._absolute(p) for p in entry.get("outputs", [])],
                    }
                if is_complete(entry):
                    assert entry is not None
                    fields = DocumentResult.__dataclass_fields__
                    res = DocumentResult(**{k: v for k, v in entry.items() if k in fields})
                    res.status = "skipped"
                    tally.add(res)
                    if keep_evaluation:
                        evaluated[ref.doc_id] = res
                    progress.skip()
                else:
                    progress.add_total()
                    yield ref

        stopped_early = False
        try:
            for batch_results in self._dispatch(todo()):
                entries = []
                for res in batch_results:
                    res.outputs = [self._relative(p) for p in res.outputs]
                    tally.add(res)
                    if keep_evaluation:
                        evaluated[res.doc_id] = res
                    entries.append(res.to_json())
                    progress.update(res)
                self.journal.append(entries)
                if run.max_failures is not None and progress.failed > run.max_failures:
                    progress.note(f"stopping: more than {run.max_failures} documents failed")
                    stopped_early = True
                    break
        finally:
            progress.close()
            self.journal.close()

        if not stopped_early:
            self.journal.write_manifest(
                self.workflow.hash, self.workflow.source, len(seen), input_digest.hexdigest()
            )
        ordered = [evaluated[doc_id] for doc_id in order if doc_id in evaluated]
        report = RunReport.build(
            workflow=self.workflow,
            results=tally,
            total_documents=len(seen),
            seconds=time.time() - started,
            started_at=started,
        )
        # Writers' run-level files (the type system XML beside XMI, ...).
        for step in self.workflow.writers:
            writer = step.component_class(step.config, self.context)
            report.run_files.extend(str(p) for p in writer.finish())
        write_run_outputs(report, self.workflow, ordered, self.output_dir, self.context)
        return report

    # -- dispatch -------------------------------------------------------------

    def _dispatch(self, todo: Iterator[DocumentRef]) -> Iterator[list[DocumentResult]]:
        run = self.workflow.spec.run
        if run.backend == "dask":
            with _dask_client(run) as client:
                yield from self._dispatch_dask(todo, client)
            return
        with _joblib_backend(run) as parallel_kwargs:
            if parallel_kwargs.get("n_jobs") == 1:
                chain = None
                for batch in _batches(todo, run.batch_size):
                    if chain is None:  # build models only when there is work
                        chain = get_chain(self.workflow.resolved, self.context_dict)
                    yield run_batch(chain, batch, run.timeout)
                return
            yield from self._dispatch_parallel(todo, parallel_kwargs)

    def _task_timeout(self, documents: int) -> float | None:
        # In the worker, SIGALRM and the watchdog limit the reader and each
        # processor (a processor may use its limit twice: batch, then one by
        # one). This outer limit replaces a worker stuck anywhere else (writers,
        # evaluators, building the chain); joblib then kills it.
        timeout = self.workflow.spec.run.timeout
        if timeout is None:
            return None
        stages = 1 + 2 * len(self.workflow.processors)
        return timeout * documents * stages + self.options.task_grace_seconds

    def _dispatch_parallel(
        self, todo: Iterator[DocumentRef], parallel_kwargs: dict[str, Any]
    ) -> Iterator[list[DocumentResult]]:
        run = self.workflow.spec.run
        source = iter(todo)
        in_flight: dict[str, DocumentRef] = {}
        listing_errors: list[BaseException] = []

        def batches() -> Iterator[list[DocumentRef]]:
            try:
                for batch in _batches(source, run.batch_size):
                    for ref in batch:
                        in_flight[ref.doc_id] = ref
                    yield batch
            except Exception as exc:  # the reader failed: not the pool's doing
                listing_errors.append(exc)
                raise

        while True:
            parallel = Parallel(
                return_as="generator_unordered",
                timeout=self._task_timeout(run.batch_size),
                # One task per casflow batch, as the task timeout assumes.
                batch_size=1,
                **parallel_kwargs,
            )
            try:
                for batch_results in parallel(
                    delayed(process_documents)(self.workflow.resolved, self.context_dict, batch)
                    for batch in batches()
                ):
                    for res in batch_results:
                        in_flight.pop(res.doc_id, None)
                    yield batch_results
                return
            except Exception as exc:
                if listing_errors or not _is_pool_failure(exc):
                    raise
                failure = exc
            # The pool died (or a task hung) with work in flight; which document
            # did it is unknown. Each unfinished document is run again alone, so
            # a crash there names its culprit; then the rest of the input goes on.
            suspects = list(in_flight.values())
            in_flight.clear()
            if not suspects:  # the backend failed before taking any work: retrying cannot help
                raise failure
            for ref in suspects:
                yield self._run_alone(ref, parallel_kwargs)

    def _run_alone(self, ref: DocumentRef, parallel_kwargs: dict[str, Any]) -> list[DocumentResult]:
        parallel = Parallel(return_as="list", timeout=self._task_timeout(1), **parallel_kwargs)
        log_size = _size(self._watchdog_log)
        try:
            (results,) = parallel(
                [delayed(process_documents)(self.workflow.resolved, self.context_dict, [ref])]
            )
            return results
        except Exception as exc:
            if not _is_pool_failure(exc):
                raise
            return [self._lost(ref, exc, log_size)]

    # -- Dask -----------------------------------------------------------------

    def _dispatch_dask(
        self, todo: Iterator[DocumentRef], client: Any
    ) -> Iterator[list[DocumentResult]]:
        # One future per batch, through the distributed client: joblib's Dask
        # backend never reports a task whose worker died (KilledWorker), and
        # Parallel would wait for it forever. A future names the batch it ran.
        from dask.distributed import wait

        run = self.workflow.spec.run
        batches = _batches(todo, run.batch_size)
        in_flight = max(2 * sum(client.nthreads().values()), 2)
        pending: dict[Any, list[DocumentRef]] = {}
        suspects: list[DocumentRef] = []
        more = True
        while True:
            # After a worker death, drain what is running, then run each
            # document of the dead workers' batches alone to find the culprit.
            while more and not suspects and len(pending) < in_flight:
                batch = next(batches, None)
                if batch is None:
                    more = False
                else:
                    pending[self._submit(client, batch)] = batch
            if not pending:
                if not suspects:
                    return
                for ref in suspects:
                    yield [self._run_alone_dask(client, ref)]
                suspects = []
                continue
            try:
                done, _ = wait(
                    list(pending),
                    timeout=self._task_timeout(run.batch_size),
                    return_when="FIRST_COMPLETED",
                )
            except TimeoutError:  # no batch finished in time: their workers are stuck
                _restart_workers_running(client, list(pending))
                for future in pending:
                    future.cancel()
                suspects.extend(ref for batch in pending.values() for ref in batch)
                pending.clear()
                continue
            for future in done:
                batch = pending.pop(future)
                if future.status == "finished":
                    yield future.result()
                elif future.status == "cancelled" or _is_pool_failure(future.exception()):
                    suspects.extend(batch)
                else:
                    raise future.exception()

    def _submit(self, client: Any, refs: list[DocumentRef]) -> Any:
        # pure=False: a batch submitted again must run again, not reuse the failed key.
        return client.submit(
            process_documents, self.workflow.resolved, self.context_dict, refs, pure=False
        )

    def _run_alone_dask(self, client: Any, ref: DocumentRef) -> DocumentResult:
        log_size = _size(self._watchdog_log)
        future = self._submit(client, [ref])
        try:
            (result,) = future.result(timeout=self._task_timeout(1))
            return result
        except Exception as exc:
            if type(exc).__name__ == "TimeoutError":
                _restart_workers_running(client, [future])
                future.cancel()
            elif not _is_pool_failure(exc):
                raise
            return self._lost(ref, exc, log_size)

    # -- a document that took its worker down ----------------------------------

    @property
    def _watchdog_log(self) -> Path:
        return self.output_dir / STATE_DIR / WATCHDOG_LOG

    def _lost(self, ref: DocumentRef, failure: BaseException, log_size: int) -> DocumentResult:
        """The result of a document that, run alone, took down or stalled its worker."""
        limit = self.workflow.spec.run.timeout
        watchdog_log = self._watchdog_log
        # joblib raises the builtin TimeoutError or multiprocessing's, by code path.
        if type(failure).__name__ == "TimeoutError":
            status = "timeout"
            error = (
                f"the worker did not return this document within the task timeout of "
                f"{self._task_timeout(1):g} s and was replaced"
            )
            hint = (
                "it hung outside the stages the per-document timeout covers (a writer, an "
                "evaluator, loading models); run it alone (--input FILE --jobs 1) to see where"
            )
        elif limit and _size(watchdog_log) > log_size:
            # Only this document was running, so the stacks just written are its own.
            status = "timeout"
            error = (
                f"the document was still running {watchdog_seconds(limit):g} s into a step "
                f"limited to {limit:g} s, stuck where the limit cannot interrupt it (native "
                "code, or a Dask worker thread); the worker was stopped"
            )
            hint = (
                f"the stack where it was stuck is in {watchdog_log}; raise run.timeout if the "
                "document is only slow, or leave it out"
            )
            with contextlib.suppress(OSError), open(watchdog_log, "a", encoding="utf-8") as log:
                log.write(f"^ the stacks above: document {ref.doc_id} ({ref.uri})\n\n")
        else:
            status = "failed"
            error, hint = describe_worker_death(failure)
        return DocumentResult(ref.doc_id, ref.uri, status, stage="worker", error=error, hint=hint)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _restart_workers_running(client: Any, futures: list[Any]) -> None:
    """Restart the Dask workers running ``futures``: a stuck thread cannot be cancelled."""
    keys = {future.key for future in futures}
    stuck = [worker for worker, running in client.processing().items() if keys & set(running)]
    if stuck:
        # Workers without a nanny cannot be restarted; they stay busy until the task returns.
        with contextlib.suppress(Exception):
            client.restart_workers(stuck, raise_for_error=False)


class RunSetupError(Exception):
    """The run cannot start (inputs unusable, output folder of another workflow)."""


def run_workflow(workflow: LoadedWorkflow, options: RunOptions | None = None) -> RunReport:
    return Runner(workflow, options).run()
