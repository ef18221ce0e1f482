"""Run a validated workflow over its documents, in parallel.

The parent checks and locks the output folder, lists document references
(:class:`_Listing`: skips those a previous run finished, turns a repeated id
into a failure of that document), and hands them to a :class:`Dispatcher`:
in-process, local processes through joblib's loky backend, or a Dask cluster
through the distributed client (one future per batch). Workers build the chain
once, process, write outputs atomically and return small results; the parent
appends them to the journal, updates the progress display, and at the end
writes ``run-report.json`` and the evaluation reports.

A loky worker that dies (out of memory, segfault, stopped by its watchdog)
breaks the whole process pool, so its batch cannot be known: the unfinished
documents are retried one per task. A dead Dask worker names its batches; their
documents are retried one per task once the running batches are done. Both
backends retry alike (:meth:`Dispatcher._retry`): many such documents on every
worker at once, few alone one after another. A
document that brings down a worker on its own is recorded as failed (or timed
out, when the watchdog or the task timeout stopped it). Each replacement of
workers is recorded in the run report.

SIGTERM and SIGINT stop a run cleanly: no more work is handed out, the workers
are stopped, the report marks the documents not finished, and the exit status
is 128 + the signal number (143, 130); the next run resumes them. ``max_failures``
stops handing out work once that many documents have failed, and the report's
``stopped_by`` says so. Workers end
themselves when the parent process dies (see ``chain._watch_parent``).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import re
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from joblib import Parallel, delayed

from casflow.pipeline.chain import (
    RUN_TOKEN,
    WATCHDOG_LOG,
    DocumentResult,
    chain_or_failures,
    prepare_worker,
    process_documents,
    run_batch,
    watchdog_seconds,
)
from casflow.pipeline.component import DocumentRef, Reader, RunContext, Writer
from casflow.pipeline.document_warnings import collected_warnings
from casflow.pipeline.exit_status import EXIT_NOT_STARTED, EXIT_OK, EXIT_PARTIAL
from casflow.pipeline.files import (
    atomic_write_text,
    ignores_case,
    output_folder_problem,
    remove_stale_temporary_files,
    safe_file_stem,
)
from casflow.pipeline.journal import (
    STATE_DIR,
    Journal,
    is_complete,
    resume_identity,
)
from casflow.pipeline.locks import OutputFolderBusy, OutputLock
from casflow.pipeline.progress import Progress
from casflow.pipeline.registry import registry
from casflow.pipeline.run_report import (
    RUN_REPORT_NAME,
    RunReport,
    RunTally,
    finish_run_report,
    write_run_outputs,
    write_running_report,
)
from casflow.pipeline.workflow import LoadedWorkflow, RunSpec, dump_resolved

__all__ = [
    "EXIT_NOT_STARTED",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "RunInterrupted",
    "RunOptions",
    "RunSetupError",
    "Runner",
    "run_workflow",
]

RESOLVED_WORKFLOW_NAME = "workflow.resolved.yaml"
LISTING_STAGE = "listing the input"
#: Distinct warnings printed while the run goes on (all are in the run report).
WARNINGS_SHOWN = 5


@dataclass
class RunOptions:
    allow_changed_workflow: bool = False
    show_progress: bool = True
    # Added to the task timeout for what no per-document limit covers: a fresh
    # worker building the chain (loading models), writers, evaluators.
    task_grace_seconds: float = 30.0


class RunSetupError(Exception):
    """The run cannot start (inputs unusable, output folder unusable or in use)."""


class RunInterrupted(BaseException):
    """SIGTERM or SIGINT arrived: stop handing out work and shut down cleanly.

    A BaseException, like KeyboardInterrupt, so that no per-document handler
    (which catches Exception) mistakes it for one document's failure.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        super().__init__(self.signal_name)


@contextlib.contextmanager
def _signals_interrupt_the_run() -> Iterator[list[int]]:
    """SIGTERM and SIGINT raise RunInterrupted once in the main thread; later ones
    are ignored while the run shuts down (a second Ctrl-C must not cut the report).
    Appending to the yielded list ignores them from then on (a signal ignored is
    appended too); clearing it lets the next one raise again."""
    fired: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield fired
        return

    def handler(signum: int, frame: Any) -> None:
        if fired:
            fired.append(signum)
            return
        fired.append(signum)
        raise RunInterrupted(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield fired
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _batches(refs: Iterator[DocumentRef], size: int) -> Iterator[list[DocumentRef]]:
    batch: list[DocumentRef] = []
    for ref in refs:
        batch.append(ref)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class _LargestFirst:
    """Batches formed in listing order, handed out largest first within a look-ahead
    window, so that the run does not end on one large article while the other
    workers idle (batches keep their documents, so outputs do not change).

    An object, not a generator: after a pool failure the next pool goes on with
    what is buffered here.
    """

    def __init__(self, todo: Iterator[DocumentRef], batch_size: int, window: int) -> None:
        self.source = _batches(todo, batch_size)
        self.window = window
        self.buffer: list[list[DocumentRef]] = []
        self.exhausted = False

    def __iter__(self) -> _LargestFirst:
        return self

    def __next__(self) -> list[DocumentRef]:
        while not self.exhausted and len(self.buffer) < self.window:
            batch = next(self.source, None)
            if batch is None:
                self.exhausted = True
            else:
                self.buffer.append(batch)
        if not self.buffer:
            raise StopIteration
        sizes = [sum(ref.size for ref in batch) for batch in self.buffer]
        return self.buffer.pop(sizes.index(max(sizes)))


def _window(run: RunSpec) -> int:
    # Batches held back to choose from: enough to balance the tail of a short run,
    # few enough that archive members' bytes stay small in memory.
    return max(16, 8 * run.jobs)


# -- listing the input ------------------------------------------------------------------


class _Listing:
    """The reader's documents that still need work, listed once and lazily.

    References (which may carry bytes, e.g. archive members) are produced as
    workers take them, so the corpus is never held in memory. joblib may pull
    them from another thread, so what the parent must count (documents skipped,
    ids used twice) is queued in ``events`` and taken by the main thread.
    """

    def __init__(
        self,
        reader: Any,
        previous: dict[str, dict[str, Any]],
        absolute: Any,
        keep_order: bool,
        progress: Progress,
        ignore_case: bool = False,
    ) -> None:
        self.reader = reader
        # On a file system that ignores case, ids differing only in case share files.
        self.ignore_case = ignore_case
        self.previous = previous
        self.absolute = absolute
        self.keep_order = keep_order
        self.progress = progress
        self.uris: dict[str, str] = {}  # id (or output name) -> the input that has it
        self.case_ids: dict[str, str] = {}  # output name -> id, where case is ignored
        self.order: list[str] = []
        self.count = 0
        self.digest = hashlib.sha256()
        self.finished = False
        self.events: collections.deque[DocumentResult] = collections.deque()
        # Handed out for processing, result not back yet (what an interruption leaves).
        self.pending: dict[str, str] = {}
        # Warnings the reader raised while listing (a damaged line of a corpus file).
        self.said: list[dict[str, Any]] = []

    def __iter__(self) -> Iterator[DocumentRef]:
        for ref in self._listed():
            self.count += 1
            self.digest.update(ref.doc_id.encode("utf-8") + b"\n")
            key = safe_file_stem(ref.doc_id).lower() if self.ignore_case else ref.doc_id
            first = self.uris.get(key)
            if first is not None:
                # counted like any document processed, so progress never passes its total
                self.progress.add_total()
                self.events.append(_same_id(ref, self.case_ids.get(key, ref.doc_id), first))
                continue
            self.uris[key] = ref.uri
            if self.ignore_case:
                self.case_ids[key] = ref.doc_id
            if self.keep_order:
                self.order.append(ref.doc_id)
            entry = self.previous.pop(ref.doc_id, None)
            if entry is not None:
                entry = {**entry, "outputs": [self.absolute(p) for p in entry.get("outputs", [])]}
            if is_complete(entry):
                assert entry is not None
                fields = DocumentResult.__dataclass_fields__
                done = DocumentResult(**{k: v for k, v in entry.items() if k in fields})
                done.status = "skipped"
                self.events.append(done)
                continue
            self.progress.add_total()
            self.pending[ref.doc_id] = ref.uri
            yield ref
        self.progress.listing_done()

    def _listed(self) -> Iterator[DocumentRef]:
        """The reader's references, until its listing fails (an input gone since the
        run was validated, a folder that cannot be read): then the failure is recorded
        as one failed document and the run finishes the documents listed before it.
        ``finished`` stays False, so the run is not taken for complete."""
        documents = self.reader.iter_documents()
        while True:
            try:
                with collected_warnings(LISTING_STAGE, self.said):
                    ref = next(documents)
            except StopIteration:
                self.finished = True
                return
            except Exception as exc:
                self.count += 1
                self.progress.add_total()
                self.events.append(
                    DocumentResult(
                        LISTING_FAILED_ID,
                        "",
                        "failed",
                        stage=LISTING_STAGE,
                        error=f"the input could not be listed after {self.count - 1} documents "
                        f"({type(exc).__name__}: {exc}); the documents after that point were "
                        "not looked at",
                        hint="fix the input named in the error, then run the same command "
                        "again: the documents finished are skipped",
                    )
                )
                return
            yield ref


#: The document id under which a listing that failed part way is reported.
LISTING_FAILED_ID = "(input listing)"


def _count_in_background(reader: Reader[Any], progress: Progress) -> None:
    """The reader counts its input in a thread of its own (``Reader.count_documents``),
    for the progress display's total and time left: the listing is lazy, so it reaches
    the end of a large input only near the end of the run."""

    def count() -> None:
        try:
            documents = reader.count_documents()
        except Exception:  # shown without a total, as for a reader that cannot count
            return
        if documents is not None:
            progress.expect(documents)

    threading.Thread(target=count, name="casflow-count-input", daemon=True).start()


def _same_id(ref: DocumentRef, first_id: str, first_uri: str) -> DocumentResult:
    if first_id == ref.doc_id:
        same = f"{ref.uri} has the same document id as {first_uri}"
    else:
        same = (
            f"{ref.uri} (id {ref.doc_id!r}) and {first_uri} (id {first_id!r}) would share "
            "output files: the output folder's file system ignores letter case"
        )
    return DocumentResult(
        ref.doc_id,
        ref.uri,
        "failed",
        stage=LISTING_STAGE,
        error=f"{same}; outputs are named by id, so only the first was processed",
        hint=(
            "rename one of the two files, or set the reader's id option (e.g. id_style: "
            "relative_path) so that ids differ"
        ),
    )


# -- what happened to workers -----------------------------------------------------------

_EXIT_CODE = re.compile(r"\b([A-Z][A-Z0-9]*)\((-?\d+)\)")
_CRASH_SIGNALS = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"}


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


def _exit_signal(exc: BaseException) -> tuple[str, int] | None:
    codes = [(n, int(c)) for n, c in _EXIT_CODE.findall(str(exc)) if int(c) != 0]
    return codes[0] if codes else None


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
    found = _exit_signal(exc)
    if found is None:
        return (
            f"the worker process died while processing this document ({name})",
            "the document may exhaust memory or crash a native library; run it alone "
            "(--input FILE --jobs 1) to see the error",
        )
    signal_name, code = found
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


def replacement_cause(exc: BaseException, task_timeout: float | None) -> str:
    """Why workers were replaced, in a few words (for the report and the summary)."""
    name = type(exc).__name__
    if name == "TimeoutError":
        limit = f" of {task_timeout:g} s" if task_timeout else ""
        return f"a task did not return within the task timeout{limit}; its workers were stopped"
    if name == "KilledWorker":
        return "a Dask worker died (KilledWorker)"
    if name in {"CancelledError", "CommClosedError"}:
        return f"a Dask worker was lost ({name})"
    found = _exit_signal(exc)
    if found is None:
        return f"a worker process died ({name})"
    signal_name, code = found
    if signal_name == "SIGKILL":
        return "a worker process was killed (SIGKILL; often the out-of-memory killer)"
    if signal_name in _CRASH_SIGNALS:
        return f"a worker process crashed ({signal_name})"
    return f"a worker process exited with status {code}"


# -- dispatchers --------------------------------------------------------------------------


class Dispatcher:
    """Runs batches of references somewhere and yields their results as they finish.

    ``results`` is a generator over the references still to do; ``stop`` ends
    every worker at once (an interrupted run); ``replacements`` records each time
    workers were lost and replaced, and which documents were retried because of it.
    """

    name = "in-process"

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.run_spec: RunSpec = runner.workflow.spec.run
        self.replacements: list[dict[str, Any]] = []

    def results(self, todo: Iterator[DocumentRef]) -> Generator[list[DocumentResult]]:
        chain = None
        for batch in _batches(todo, self.run_spec.batch_size):
            if chain is None:  # build models only when there is work
                built = chain_or_failures(
                    self.runner.workflow.resolved, self.runner.context_dict, batch
                )
                # As a worker reports it; later batches fail at once with the same error
                # (chain_or_failures remembers it for the run).
                if isinstance(built, list):
                    yield built
                    continue
                chain = built
            yield run_batch(chain, batch, self.run_spec.timeout)

    def stop(self) -> None:
        """Nothing to stop: the interruption itself ended the in-process batch."""

    def close(self) -> None:
        """Release the workers (a cluster); called once, after the last result."""

    @property
    def _few(self) -> int:
        # Suspects run alone, one after another, at most this many: a round on every
        # worker costs a document that crashes a further worker start (seconds), and
        # pays where it spares many documents a run alone while the other workers idle.
        return 4 * self._workers()

    def _workers(self) -> int:
        return self.run_spec.jobs

    def _retry(self, suspects: list[DocumentRef]) -> Iterator[list[DocumentResult]]:
        """Run the documents that were in flight when workers died again, each in a
        task of its own, so that a document that takes its worker down alone is named.

        Many go to every worker at once (run alone, one after another, 64 documents in
        flight of two workers with batches of 16 kept one worker idle for their whole
        retry); those running when a worker dies again are run alone and the round goes
        on with those not yet handed out. Few are run alone at once.
        """
        queue = collections.deque(suspects)
        while len(queue) > self._few:
            crashed_with = yield from self._retry_round(queue)
            for ref in crashed_with:
                yield self._run_alone(ref)
        while queue:
            yield self._run_alone(queue.popleft())

    def _retry_round(
        self, queue: collections.deque[DocumentRef]
    ) -> Generator[list[DocumentResult], None, list[DocumentRef]]:
        """Hand the documents of ``queue`` out one per task on every worker, yielding
        results; return those a worker's death took down (each recorded as a
        replacement), leaving in ``queue`` those not yet handed out."""
        raise NotImplementedError

    def _run_alone(self, ref: DocumentRef) -> list[DocumentResult]:
        """One document with no other task running: a worker lost now is its doing."""
        raise NotImplementedError

    def _replaced(
        self,
        cause: str,
        documents: list[DocumentRef],
        retried: bool,
        as_: str = "failed",
        alone: bool = True,
    ) -> None:
        recorded = "as timed out" if as_ == "timeout" else "as failed"
        if not retried:
            what = f"this document, run alone, took its worker down and was recorded {recorded}"
        elif alone:
            what = "each of these documents was run again alone"
        else:
            what = "each of these documents was run again in a task of its own, on every worker"
        self.replacements.append(
            {"cause": cause, "documents": [ref.doc_id for ref in documents], "what_happened": what}
        )


class EarlyWorkers:
    """Loky workers that load a workflow's models while the parent still checks it.

    A worker's first document otherwise waits for its start-up (imports, models:
    seconds) after all of the parent's own start-up; on a short run that is what
    keeps two jobs from being twice as fast. The workers are joblib's reusable
    loky executor, which the run's dispatcher then takes over with their chains
    built (the chain is cached per resolved workflow and context). They are
    started from the main thread: a worker's parent-death signal fires when the
    thread that started it ends.
    """

    _current: EarlyWorkers | None = None

    def __init__(self, results: Generator[Any]) -> None:
        self.results = results

    @classmethod
    def start(cls, workflow: LoadedWorkflow) -> EarlyWorkers | None:
        run = workflow.spec.run
        if not (run.backend == "loky" and run.jobs > 1):
            return None
        if output_folder_problem(Path(run.output)):
            return None  # the run will not start
        runner = Runner(workflow)
        reader = workflow.reader
        if reader.component_class.check_config(reader.config, runner.context):
            return None  # no input (the commonest mistake): the run will not start
        context = runner.context_dict
        try:
            # A generator: joblib hands the tasks out now and returns at once.
            results = Parallel(n_jobs=run.jobs, backend="loky", return_as="generator")(
                delayed(prepare_worker)(workflow.resolved, context) for _ in range(run.jobs)
            )
        except Exception:  # the run itself reports what is wrong with the backend
            return None
        cls._current = cls(results)
        return cls._current

    @classmethod
    def discard(cls) -> None:
        """End early workers that no dispatcher took over (the run did not get that far)."""
        if cls._current is not None:
            cls._current.stop()

    @classmethod
    def wait(cls) -> None:
        """Let the early start finish before the run submits work to the same workers."""
        current, cls._current = cls._current, None
        if current is not None:
            with contextlib.suppress(Exception):  # the run's own tasks report any failure
                for _ in current.results:
                    pass

    def stop(self) -> None:
        """The run will not start after all: end the workers."""
        if EarlyWorkers._current is self:
            EarlyWorkers._current = None
        _kill_loky_workers()
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # joblib warns about the tasks cancelled here
            self.results.close()


def _kill_loky_workers() -> None:
    # joblib keeps one reusable loky executor per process; ending it kills its workers.
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor
    if executor is not None:
        with contextlib.suppress(Exception):
            executor.shutdown(wait=False, kill_workers=True)


class LokyDispatcher(Dispatcher):
    name = "loky"

    def results(self, todo: Iterator[DocumentRef]) -> Generator[list[DocumentResult]]:
        EarlyWorkers.wait()
        run = self.run_spec
        resolved, context = self.runner.workflow.resolved, self.runner.context_dict
        in_flight: dict[str, DocumentRef] = {}
        listing_errors: list[BaseException] = []
        ordered = _LargestFirst(todo, run.batch_size, _window(run))

        def batches() -> Iterator[list[DocumentRef]]:
            try:
                for batch in ordered:
                    for ref in batch:
                        in_flight[ref.doc_id] = ref
                    yield batch
            except Exception as exc:  # the reader failed: not the pool's doing
                listing_errors.append(exc)
                raise

        def tasks(warm_up: bool) -> Iterator[Any]:
            pending = batches()
            first_batch = next(pending, None)
            if first_batch is None:  # nothing to do (all done before): load no models
                return
            if warm_up:  # each worker loads the models while the parent lists the rest
                for _ in range(run.jobs):
                    yield delayed(prepare_worker)(resolved, context)
            yield delayed(process_documents)(resolved, context, first_batch)
            for batch in pending:
                yield delayed(process_documents)(resolved, context, batch)

        warm_up = True
        while True:
            parallel = Parallel(
                return_as="generator_unordered",
                timeout=self.runner.task_timeout(run.batch_size),
                # One task per casflow batch, as the task timeout assumes.
                batch_size=1,
                n_jobs=run.jobs,
                backend="loky",
            )
            warming = warm_up
            try:
                for batch_results in parallel(tasks(warm_up)):
                    warm_up = warming = False
                    if not batch_results:  # a worker made ready
                        continue
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
            if not suspects:
                if warming:  # it died loading models: let the documents' tasks say why
                    warm_up = False
                    continue
                raise failure  # the backend failed before taking any work: retrying cannot help
            cause = replacement_cause(failure, self.runner.task_timeout(run.batch_size))
            self._replaced(cause, suspects, retried=True, alone=len(suspects) <= self._few)
            yield from self._retry(suspects)

    def _retry_round(
        self, queue: collections.deque[DocumentRef]
    ) -> Generator[list[DocumentResult], None, list[DocumentRef]]:
        # A dead worker breaks the whole pool: every document then running is a suspect.
        resolved, context = self.runner.workflow.resolved, self.runner.context_dict
        timeout = self.runner.task_timeout(1)
        running: dict[str, DocumentRef] = {}

        def tasks() -> Iterator[Any]:
            while queue:
                ref = queue.popleft()
                running[ref.doc_id] = ref
                yield delayed(process_documents)(resolved, context, [ref])

        parallel = Parallel(
            return_as="generator_unordered",
            timeout=timeout,
            batch_size=1,
            n_jobs=self.run_spec.jobs,
            backend="loky",
        )
        try:
            for results in parallel(tasks()):
                for res in results:
                    running.pop(res.doc_id, None)
                yield results
            return []
        except Exception as exc:
            if not _is_pool_failure(exc):
                raise
            failure = exc
        crashed_with = list(running.values())
        self._replaced(replacement_cause(failure, timeout), crashed_with, retried=True)
        return crashed_with

    def _run_alone(self, ref: DocumentRef) -> list[DocumentResult]:
        timeout = self.runner.task_timeout(1)
        parallel = Parallel(
            return_as="list", timeout=timeout, n_jobs=self.run_spec.jobs, backend="loky"
        )
        log_size = _size(self.runner.watchdog_log)
        try:
            (results,) = parallel(
                [
                    delayed(process_documents)(
                        self.runner.workflow.resolved, self.runner.context_dict, [ref]
                    )
                ]
            )
            return results
        except Exception as exc:
            if not _is_pool_failure(exc):
                raise
            lost = self.runner.lost(ref, exc, log_size)
            self._replaced(replacement_cause(exc, timeout), [ref], retried=False, as_=lost.status)
            return [lost]

    def stop(self) -> None:
        _kill_loky_workers()

    def close(self) -> None:
        # Every result is in; idle workers that exit by themselves take seconds to
        # tear down their models, which a short run would wait for at exit.
        _kill_loky_workers()


class DaskDispatcher(Dispatcher):
    name = "dask"

    def __init__(self, runner: Runner) -> None:
        super().__init__(runner)
        self._client_context = _dask_client(self.run_spec)
        self.client = self._client_context.__enter__()
        self.pending: dict[Any, list[DocumentRef]] = {}

    def close(self) -> None:
        self._client_context.__exit__(None, None, None)

    def stop(self) -> None:
        # A remote cluster's busy workers can only be stopped by restarting them, and
        # which workers run our tasks is known only until the tasks are cancelled
        # (then client.processing() no longer lists them): restart first.
        if self.run_spec.scheduler:
            _restart_workers_running(self.client, list(self.pending))
        with contextlib.suppress(Exception):
            self.client.cancel(list(self.pending), force=True)

    def results(self, todo: Iterator[DocumentRef]) -> Generator[list[DocumentResult]]:
        # One future per batch, through the distributed client: joblib's Dask
        # backend never reports a task whose worker died (KilledWorker), and
        # Parallel would wait for it forever. A future names the batch it ran.
        run = self.run_spec
        timeout = self.runner.task_timeout(run.batch_size)
        batches = _LargestFirst(todo, run.batch_size, _window(run))
        in_flight = self._in_flight()
        pending = self.pending
        lost: list[tuple[str, list[DocumentRef]]] = []  # (cause, batch)
        more = True
        while True:
            # After a worker death, drain what is running, then retry the documents
            # of the batches lost as the loky pool's are retried.
            while more and not lost and len(pending) < in_flight:
                batch = next(batches, None)
                if batch is None:
                    more = False
                else:
                    pending[self._submit(batch)] = batch
            if not pending:
                if not lost:
                    return
                suspects = [ref for _, batch in lost for ref in batch]
                for cause, batch in lost:
                    self._replaced(cause, batch, retried=True, alone=len(suspects) <= self._few)
                lost = []
                yield from self._retry(suspects)
                continue
            lost += yield from self._wait_for_some(timeout)

    def _workers(self) -> int:
        # a remote cluster has as many as it has, whatever jobs says
        return max(sum(self.client.nthreads().values()), 1)

    def _in_flight(self) -> int:
        return max(2 * self._workers(), 2)

    def _wait_for_some(
        self, timeout: float | None
    ) -> Generator[list[DocumentResult], None, list[tuple[str, list[DocumentRef]]]]:
        """Wait for the first of the pending futures to end; yield the results of those
        finished and return the batches lost with their workers, with the cause."""
        from dask.distributed import wait

        pending = self.pending
        lost: list[tuple[str, list[DocumentRef]]] = []
        try:
            done, _ = wait(list(pending), timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError as exc:  # no batch finished in time: their workers are stuck
            _restart_workers_running(self.client, list(pending))
            for future in pending:
                future.cancel()
            stuck = [ref for batch in pending.values() for ref in batch]
            pending.clear()
            return [(replacement_cause(exc, timeout), stuck)]
        for future in done:
            batch = pending.pop(future)
            outcome = _batch_outcome(future)
            if outcome == "finished":
                yield future.result()
            elif outcome == "recomputing":
                pending[future] = batch
            elif outcome == "cancelled":
                lost.append(("a Dask worker was lost (its task was cancelled)", batch))
            else:
                error = future.exception()
                if not _is_pool_failure(error):
                    raise error
                lost.append((replacement_cause(error, timeout), batch))
        return lost

    def _retry_round(
        self, queue: collections.deque[DocumentRef]
    ) -> Generator[list[DocumentResult], None, list[DocumentRef]]:
        # Unlike loky's pool, a dead worker takes down only its own futures (the one
        # running and any queued on it): the others' documents carry on.
        crashed_with: list[DocumentRef] = []
        timeout = self.runner.task_timeout(1)
        in_flight = self._in_flight()
        while queue or self.pending:
            while queue and len(self.pending) < in_flight:
                ref = queue.popleft()
                self.pending[self._submit([ref])] = [ref]
            for cause, refs in (yield from self._wait_for_some(timeout)):
                self._replaced(cause, refs, retried=True)
                crashed_with.extend(refs)
        return crashed_with

    def _submit(self, refs: list[DocumentRef]) -> Any:
        # pure=False: a batch submitted again must run again, not reuse the failed key.
        return self.client.submit(
            process_documents,
            self.runner.workflow.resolved,
            self.runner.context_dict,
            refs,
            pure=False,
        )

    def _run_alone(self, ref: DocumentRef) -> list[DocumentResult]:
        log_size = _size(self.runner.watchdog_log)
        timeout = self.runner.task_timeout(1)
        future = self._submit([ref])
        self.pending[future] = [ref]
        try:
            results: list[DocumentResult] = future.result(timeout=timeout)
            return results
        except Exception as exc:
            if type(exc).__name__ == "TimeoutError":
                _restart_workers_running(self.client, [future])
                future.cancel()
            elif not _is_pool_failure(exc):
                raise
            lost = self.runner.lost(ref, exc, log_size)
            self._replaced(replacement_cause(exc, timeout), [ref], retried=False, as_=lost.status)
            return [lost]
        finally:
            self.pending.pop(future, None)


def _batch_outcome(future: Any) -> str:
    """What a future that ``wait`` returned as done holds now, read once.

    Its status can change after ``wait``: when the worker holding a finished
    batch's result dies, the scheduler marks the result lost and runs the batch
    again elsewhere ("lost", then "pending"). Such a future is waited for again
    rather than read as failed; its ``exception()`` would be None.
    """
    status = future.status
    if status in ("finished", "cancelled", "error"):
        return status
    return "recomputing"


@contextlib.contextmanager
def _dask_client(run: RunSpec) -> Iterator[Any]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RunSetupError(
            "backend 'dask' needs dask.distributed: pip install 'casflow[dask]'"
        ) from exc
    if run.scheduler:
        try:
            client = Client(run.scheduler)
        except (OSError, TimeoutError, ValueError) as exc:
            # OSError: nothing answers at the address (after distributed.comm.timeouts.
            # connect); ValueError: not an address (an unknown protocol).
            raise RunSetupError(
                f"cannot reach the Dask scheduler at {run.scheduler} ({exc}); check the "
                "address, or start it with `dask scheduler` (and workers with `dask worker "
                "ADDRESS`)"
            ) from None
        with client:
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


def _restart_workers_running(client: Any, futures: list[Any]) -> None:
    """Restart the Dask workers running ``futures``: a stuck thread cannot be cancelled."""
    keys = {future.key for future in futures}
    with contextlib.suppress(Exception):
        stuck = [worker for worker, running in client.processing().items() if keys & set(running)]
        if stuck:
            # Workers without a nanny cannot be restarted; they stay busy until the task returns.
            client.restart_workers(stuck, raise_for_error=False)


# -- the run ----------------------------------------------------------------------------


@dataclass
class _Outcome:
    """How the dispatch loop ended."""

    interrupted: RunInterrupted | None = None
    stopped_early: bool = False
    storage_error: str | None = None
    evaluated: dict[str, DocumentResult] = field(default_factory=dict)
    first_result_at: float | None = None  # time.time() of the first document processed


class Runner:
    # A run's token (context["run_token"]): a chain that failed to build is not built
    # again in the same run, but is in the next run in the same process (a Dask cluster
    # kept between runs, a notebook), once the user has fixed what failed. This process
    # and how many runs it has ended: a runner made before the run starts (EarlyWorkers)
    # has the run's token.
    _process = uuid.uuid4().hex
    _runs_ended = 0

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
        self.context_dict: dict[str, Any] = {
            "output_dir": str(self.context.output_dir),
            "workflow_dir": str(self.context.workflow_dir),
            "overwrite": self.context.overwrite,
            # Workers resolve names as the parent did, even for components the
            # parent registered at run time or found through its own entry points.
            "components": {s.spec.component: registry().target(s.spec.component) for s in steps},
            RUN_TOKEN: f"{Runner._process}-{Runner._runs_ended}",
        }
        if _local_workers(run):
            # Local workers end themselves when this process dies (chain._watch_parent).
            self.context_dict["parent_pid"] = os.getpid()
            # They serve this run alone (ended with it): they may build its components
            # without the modules those declare they do not use (chain.Chain).
            self.context_dict["hide_unused_modules"] = True
        self.journal = Journal(self.output_dir)
        self.lock = OutputLock(self.output_dir)
        self.identity = resume_identity(
            workflow.resolved, workflow.hash, Path.cwd(), self.context.workflow_dir
        )

    def _relative(self, path: str) -> str:
        try:
            return str(Path(path).resolve().relative_to(self.output_dir))
        except ValueError:
            return path

    def _absolute(self, path: str) -> str:
        p = Path(path)
        return str(p if p.is_absolute() else self.output_dir / p)

    @property
    def watchdog_log(self) -> Path:
        return self.output_dir / STATE_DIR / WATCHDOG_LOG

    def task_timeout(self, documents: int) -> float | None:
        # In the worker, SIGALRM and the watchdog limit the reader and each
        # processor (a processor may use its limit twice: batch, then one by
        # one). This outer limit replaces a worker stuck anywhere else (writers,
        # evaluators, building the chain); joblib then kills it.
        timeout = self.workflow.spec.run.timeout
        if timeout is None:
            return None
        stages = 1 + 2 * len(self.workflow.processors)
        return timeout * documents * stages + self.options.task_grace_seconds

    def run(self) -> RunReport:
        started = time.time()
        # The token of this run, not of the runner: run() again on the same runner (a
        # notebook, after fixing a model) builds a step that failed in the last run.
        self.context_dict[RUN_TOKEN] = f"{Runner._process}-{Runner._runs_ended}"
        dispatcher = None
        try:
            if self.workflow.spec.run.backend == "dask":
                # The cluster first: a scheduler that cannot be reached (RunSetupError)
                # leaves the output folder as it was, unclaimed by a run that never began.
                dispatcher = self._dispatcher()
            self._prepare_output()
        except BaseException:
            EarlyWorkers.discard()
            if dispatcher is not None:
                with contextlib.suppress(Exception):
                    dispatcher.close()
            Runner._runs_ended += 1
            raise
        try:
            with _signals_interrupt_the_run() as signals_fired:
                return self._run_locked(started, signals_fired, dispatcher)
        finally:
            self.lock.release()
            EarlyWorkers.discard()
            Runner._runs_ended += 1

    def _prepare_output(self) -> None:
        """Check, lock and ready the output folder; RunSetupError says what is wrong."""
        run = self.workflow.spec.run
        problem = output_folder_problem(self.output_dir)
        if problem:
            raise RunSetupError(problem)
        try:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            self.lock.acquire()
        except OutputFolderBusy as exc:
            raise RunSetupError(str(exc)) from None
        except OSError as exc:
            raise RunSetupError(
                f"cannot use the output folder {self.output_dir}: {exc.strerror or exc}; "
                "choose another output folder (--output) or fix its permissions"
            ) from None
        try:
            if run.overwrite:
                self.journal.reset()
            else:
                self.journal.check_manifest(self.identity, self.options.allow_changed_workflow)
            remove_stale_temporary_files(self.output_dir)
            dump_resolved(self.workflow.resolved, self.output_dir / RESOLVED_WORKFLOW_NAME)
            self.journal.write_manifest(self.identity, self.workflow.source, None)
            write_running_report(self.output_dir, self.workflow)
        except OSError as exc:
            self.lock.release()
            raise RunSetupError(
                f"cannot write in the output folder {self.output_dir}: {exc.strerror or exc} "
                f"({getattr(exc, 'filename', None) or ''}); free space or fix permissions, "
                "then run again"
            ) from None
        except BaseException:
            self.lock.release()
            raise

    def _dispatcher(self) -> Dispatcher:
        run = self.workflow.spec.run
        if run.backend == "dask":
            return DaskDispatcher(self)
        if run.backend == "sequential" or run.jobs == 1:
            return Dispatcher(self)
        return LokyDispatcher(self)

    def _run_locked(
        self, started: float, signals_fired: list[int], dispatcher: Dispatcher | None = None
    ) -> RunReport:
        run = self.workflow.spec.run
        reader_step = self.workflow.reader
        reader = reader_step.build(Reader, self.context)
        # Of a document done before, only whether it is complete and what the report and
        # the evaluation take from it: a resumed run over many documents held every
        # entry whole (about 3 KB each, timings and all).
        fields = {"doc_id", "uri", "status", "outputs", "warnings"}
        if self.workflow.evaluators:
            fields.add("evaluation")
        previous = {} if run.overwrite else self.journal.load(fields)
        progress = Progress(
            total=None,
            skipped=0,
            enabled=run.progress and self.options.show_progress,
            done_before=sum(1 for entry in previous.values() if entry.get("status") == "ok"),
        )
        if progress.enabled:
            _count_in_background(reader, progress)
        # Only evaluation needs per-document results at the end; without
        # evaluators nothing per document is kept, so memory stays flat.
        keep_evaluation = bool(self.workflow.evaluators)
        listing = _Listing(
            reader,
            previous,
            self._absolute,
            keep_evaluation,
            progress,
            ignore_case=ignores_case(self.output_dir),
        )
        tally = RunTally()
        try:
            dispatcher = dispatcher or self._dispatcher()
            outcome = self._dispatch(dispatcher, listing, tally, progress, keep_evaluation)
        except RunInterrupted as exc:  # before any work was handed out
            outcome = _Outcome(interrupted=exc)
        finally:
            # From here on the run ends by itself: a late signal must not cut the report.
            signals_fired.append(0)
            progress.close()
            self.journal.close()
            if dispatcher is not None:
                with contextlib.suppress(Exception):
                    dispatcher.close()

        complete = listing.finished and not (outcome.stopped_early or outcome.interrupted)
        if complete and outcome.storage_error is None:
            with contextlib.suppress(OSError):  # the manifest of the start stays valid
                self.journal.write_manifest(
                    self.identity,
                    self.workflow.source,
                    listing.count,
                    listing.digest.hexdigest(),
                )
        tally.add_warnings(listing.said, None)
        report = RunReport.build(
            workflow=self.workflow,
            results=tally,
            total_documents=listing.count,
            seconds=time.time() - started,
            started_at=started,
        )
        report.worker_replacements = dispatcher.replacements if dispatcher else []
        if outcome.first_result_at is not None:
            report.first_document_seconds = round(outcome.first_result_at - started, 3)
        report.stopped_by = outcome.storage_error
        if outcome.stopped_early and outcome.storage_error is None:
            failed = tally.counts["failed"] + tally.counts["timeout"]
            report.stopped_by = (
                f"max_failures: {failed} document{'s' if failed != 1 else ''} failed "
                f"(run.max_failures: {run.max_failures}), so no more were handed out; "
                + (
                    "the input was not listed to its end, so documents after the "
                    f"{listing.count} listed were never looked at"
                    if not listing.finished
                    else "every document was listed"
                )
                + "; fix the failures, then run the same command again to process the rest"
            )
        if outcome.interrupted is not None:
            report.interrupted = {
                "signal": outcome.interrupted.signal_name,
                "exit_status": 128 + outcome.interrupted.signum,
                "documents_not_finished": sorted(listing.pending),
                "listing_finished": listing.finished,
            }
        self._write_final_files(report, listing, outcome, signals_fired)
        return report

    def _dispatch(
        self,
        dispatcher: Dispatcher,
        listing: _Listing,
        tally: RunTally,
        progress: Progress,
        keep_evaluation: bool,
    ) -> _Outcome:
        run = self.workflow.spec.run
        outcome = _Outcome()

        def record(res: DocumentResult) -> None:
            tally.add(res)
            if res.status == "skipped":
                progress.skip()
            else:
                progress.update(res)
                say_warnings(res)
            if keep_evaluation and res.stage != LISTING_STAGE:
                outcome.evaluated[res.doc_id] = res

        shown: set[str] = set()

        def say_warnings(res: DocumentResult) -> None:
            """The first few distinct warnings as they come; all are in the report."""
            for said in res.warnings:
                message = str(said.get("message"))
                if message in shown or len(shown) > WARNINGS_SHOWN:
                    continue
                shown.add(message)
                if len(shown) > WARNINGS_SHOWN:
                    progress.note(f"further warnings go to {RUN_REPORT_NAME} only")
                else:
                    progress.note(f"warning: {res.doc_id} ({said.get('stage')}): {message}")

        def drain() -> None:
            while listing.events:
                record(listing.events.popleft())

        said_replaced = 0

        def say_replacements() -> None:
            """Workers lost are said as the dispatcher replaces them (the run then retries
            their documents one per task: slower for a while), not only at the end."""
            nonlocal said_replaced
            for item in dispatcher.replacements[said_replaced:]:
                count = len(item["documents"])
                progress.note(
                    f"workers replaced: {item['cause']}; {item['what_happened']} "
                    f"({count} document{'s' if count != 1 else ''}, listed in {RUN_REPORT_NAME})"
                )
            said_replaced = len(dispatcher.replacements)

        results = dispatcher.results(iter(listing))
        try:
            for batch_results in results:
                drain()
                say_replacements()
                if outcome.first_result_at is None and batch_results:
                    outcome.first_result_at = time.time()
                entries = []
                for res in batch_results:
                    listing.pending.pop(res.doc_id, None)
                    res.outputs = [self._relative(p) for p in res.outputs]
                    record(res)
                    entries.append(res.to_json())
                try:
                    self.journal.append(entries)
                except OSError as exc:
                    outcome.storage_error = (
                        f"cannot append to the journal {self.journal.path}: "
                        f"{exc.strerror or exc}; the documents recorded before are kept: free "
                        "space and run the same command again to resume"
                    )
                    progress.note(outcome.storage_error)
                    dispatcher.stop()
                    break
                if run.max_failures is not None and progress.failed >= run.max_failures:
                    outcome.stopped_early = True
                    # Batches still running are stopped too (as for a signal): their
                    # documents are not recorded, so the next run processes them.
                    dispatcher.stop()
                    break
            drain()
        except RunInterrupted as exc:
            outcome.interrupted = exc
            progress.note(
                f"{exc.signal_name}: stopping; finished documents are kept, the others are "
                "processed by the next run of the same command"
            )
            dispatcher.stop()
            drain()
        finally:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # joblib warns about the tasks it cancels
                results.close()
        return outcome

    def _write_final_files(
        self, report: RunReport, listing: _Listing, outcome: _Outcome, signals_fired: list[int]
    ) -> None:
        """Writers' run-level files, evaluation and the run report. The journal is
        already closed, so a failure here (disk full) costs no finished document.

        After a run that was not interrupted, SIGTERM and SIGINT stop these files too
        (the evaluation's significance tests can take minutes): every document is in
        the journal, so the same command skips them all and writes the files."""
        started = time.time()  # the report's final_files_seconds
        ordered = [outcome.evaluated[i] for i in listing.order if i in outcome.evaluated]
        try:
            try:
                if outcome.interrupted is None:
                    # Taken one at a time, not read then cleared: a signal arriving in
                    # between was appended (ignored) and then cleared, lost. One arriving
                    # now is taken too, or finds the list empty and raises.
                    late: list[int] = []
                    while signals_fired:
                        late.append(signals_fired.pop(0))
                    late = [signum for signum in late if signum]
                    if late:  # it came while the run was closing its workers
                        raise RunInterrupted(late[0])
                # Writers' run-level files (the type system XML beside XMI, ...).
                for step in self.workflow.writers:
                    writer = step.build(Writer, self.context)
                    report.run_files.extend(str(p) for p in writer.finish())
                write_run_outputs(
                    report,
                    self.workflow,
                    ordered,
                    self.output_dir,
                    self.context,
                    evaluate=outcome.interrupted is None and outcome.storage_error is None,
                    final_files_started=started,
                )
            finally:
                signals_fired.append(0)  # what follows writes the report whole
        except RunInterrupted as exc:
            report.interrupted = {
                "signal": exc.signal_name,
                "exit_status": 128 + exc.signum,
                "documents_not_finished": [],
                "listing_finished": listing.finished,
                "during": "final files",
            }
            # Files of the evaluation may be this run's or an earlier one's: none is named.
            report.evaluation = None
            with contextlib.suppress(OSError):  # else the report says the run is running
                finish_run_report(report, self.output_dir, started)
        except OSError as exc:
            report.final_files_error = (
                f"could not write the run's final files in {self.output_dir}: "
                f"{exc.strerror or exc} ({getattr(exc, 'filename', None) or ''}); the journal "
                "is intact: free space or fix permissions, then run the same command again "
                "(finished documents are skipped)"
            )
            # Say so in the folder too, if anything can still be written there (else the
            # report written as the run started says it did not finish).
            report.evaluation = None
            with contextlib.suppress(OSError):
                atomic_write_text(
                    self.output_dir / RUN_REPORT_NAME,
                    json.dumps(report.to_json(), indent=2, ensure_ascii=False),
                )

    # -- a document that took its worker down ----------------------------------

    def lost(self, ref: DocumentRef, failure: BaseException, log_size: int) -> DocumentResult:
        """The result of a document that, run alone, took down or stalled its worker."""
        limit = self.workflow.spec.run.timeout
        watchdog_log = self.watchdog_log
        # joblib raises the builtin TimeoutError or multiprocessing's, by code path.
        if type(failure).__name__ == "TimeoutError":
            status = "timeout"
            error = (
                f"the worker did not return this document within the task timeout of "
                f"{self.task_timeout(1):g} s and was replaced"
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


def _local_workers(run: RunSpec) -> bool:
    """Whether the workers are this machine's child processes (not a remote cluster)."""
    if run.backend == "dask":
        return not run.scheduler
    return run.backend == "loky" and run.jobs > 1


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def run_workflow(workflow: LoadedWorkflow, options: RunOptions | None = None) -> RunReport:
    return Runner(workflow, options).run()
