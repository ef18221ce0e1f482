"""Run a validated workflow over its documents, in parallel.

The parent lists document references, skips those a previous run finished,
and sends batches of references to workers through joblib (local processes
with loky, or a Dask cluster through joblib's Dask backend). Workers build the
chain once, process, write outputs atomically and return small results; the
parent appends them to the journal, updates the progress display, and at the
end writes ``run-report.json`` and the evaluation reports.

A worker that dies (out of memory, segfault) breaks the whole process pool, so
its batch cannot be known: the unfinished documents are retried one per task,
and a document that brings down a worker on its own is recorded as failed.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from joblib import Parallel, delayed, parallel_config

from casflow.pipeline.chain import DocumentResult, get_chain, process_documents, run_batch
from casflow.pipeline.component import DocumentRef, RunContext
from casflow.pipeline.files import remove_stale_temporary_files
from casflow.pipeline.journal import Journal, is_complete
from casflow.pipeline.progress import Progress
from casflow.pipeline.registry import registry
from casflow.pipeline.run_report import RunReport, write_run_outputs
from casflow.pipeline.validation import LoadedWorkflow
from casflow.pipeline.workflow import dump_resolved

EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_NOT_STARTED = 2

RESOLVED_WORKFLOW_NAME = "workflow.resolved.yaml"


@dataclass
class RunOptions:
    allow_changed_workflow: bool = False
    show_progress: bool = True
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
    names = {type(exc).__name__}
    names.update(type(e).__name__ for e in (exc.__cause__, exc.__context__) if e is not None)
    return bool(
        names & {"TerminatedWorkerError", "BrokenProcessPool", "KilledWorker", "CommClosedError"}
    )


@contextlib.contextmanager
def _backend(workflow: LoadedWorkflow) -> Iterator[dict[str, Any]]:
    run = workflow.spec.run
    if run.backend == "dask":
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "backend 'dask' needs dask.distributed: pip install 'casflow[dask]'"
            ) from exc
        if run.scheduler:
            client = Client(run.scheduler)
            cluster = None
        else:
            cluster = LocalCluster(
                n_workers=run.jobs, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = Client(cluster)
        try:
            with parallel_config(backend="dask"):
                yield {"n_jobs": -1}
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return
    if run.backend == "sequential" or run.jobs == 1:
        yield {"n_jobs": 1}
        return
    yield {"n_jobs": run.jobs, "backend": "loky"}


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
        results: dict[str, DocumentResult] = {}
        order: list[str] = []
        seen: dict[str, str] = {}
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
                        f"two input documents have the same id {ref.doc_id!r}: {seen[ref.doc_id]} "
                        f"and {ref.uri}; outputs are named by document id, so ids must be unique "
                        "(rename one file or choose the reader's id option)"
                    )
                seen[ref.doc_id] = ref.uri
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
                    results[ref.doc_id] = res
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
                    results[res.doc_id] = res
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
                self.workflow.hash, self.workflow.source, len(order), input_digest.hexdigest()
            )
        ordered = [results[doc_id] for doc_id in order if doc_id in results]
        for res in ordered:
            res.outputs = [self._absolute(p) for p in res.outputs]
        report = RunReport.build(
            workflow=self.workflow,
            results=ordered,
            total_documents=len(order),
            seconds=time.time() - started,
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
        with _backend(self.workflow) as parallel_kwargs:
            if parallel_kwargs.get("n_jobs") == 1 and run.backend != "dask":
                chain = None
                for batch in _batches(todo, run.batch_size):
                    if chain is None:  # build models only when there is work
                        chain = get_chain(self.workflow.resolved, self.context_dict)
                    yield run_batch(chain, batch, run.timeout)
                return
            yield from self._dispatch_parallel(todo, parallel_kwargs)

    def _task_timeout(self, documents: int) -> float | None:
        # The in-worker alarm handles Python-level hangs; this outer limit
        # catches a worker stuck in native code, which joblib then kills.
        timeout = self.workflow.spec.run.timeout
        return None if timeout is None else timeout * documents * 2 + 30

    def _dispatch_parallel(
        self, todo: Iterator[DocumentRef], parallel_kwargs: dict[str, Any]
    ) -> Iterator[list[DocumentResult]]:
        run = self.workflow.spec.run
        source = iter(todo)
        in_flight: dict[str, DocumentRef] = {}

        def batches() -> Iterator[list[DocumentRef]]:
            for batch in _batches(source, run.batch_size):
                for ref in batch:
                    in_flight[ref.doc_id] = ref
                yield batch

        while True:
            parallel = Parallel(
                return_as="generator_unordered",
                timeout=self._task_timeout(run.batch_size),
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
                if not _is_pool_failure(exc):
                    raise
                failure = exc
            # The pool died (or a task hung) with work in flight; which document
            # did it is unknown. Each unfinished document is run again alone, so
            # a crash there names its culprit; then the rest of the input goes on.
            suspects = list(in_flight.values())
            in_flight.clear()
            for ref in suspects:
                yield self._run_alone(ref, parallel_kwargs, failure)

    def _run_alone(
        self, ref: DocumentRef, parallel_kwargs: dict[str, Any], first_failure: BaseException
    ) -> list[DocumentResult]:
        parallel = Parallel(return_as="list", timeout=self._task_timeout(1), **parallel_kwargs)
        try:
            (results,) = parallel(
                [delayed(process_documents)(self.workflow.resolved, self.context_dict, [ref])]
            )
            return results
        except Exception as exc:
            if not _is_pool_failure(exc):
                raise
            timed_out = isinstance(exc, TimeoutError)
            return [
                DocumentResult(
                    ref.doc_id,
                    ref.uri,
                    "timeout" if timed_out else "failed",
                    stage="worker",
                    error=(
                        "the worker did not finish this document in time and was replaced"
                        if timed_out
                        else f"the worker process died while processing this document ({type(exc).__name__})"
                    ),
                    hint="the document may exhaust memory, hang or crash a native library; "
                    "run it alone with --jobs 1 to see the error",
                )
            ]


class RunSetupError(Exception):
    """The run cannot start (inputs unusable, output folder of another workflow)."""


def run_workflow(workflow: LoadedWorkflow, options: RunOptions | None = None) -> RunReport:
    return Runner(workflow, options).run()
