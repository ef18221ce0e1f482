"""The per-process chain: components built once, documents processed in batches.

Workers call :func:`process_documents` with the resolved workflow (plain data)
and a list of :class:`DocumentRef`. The chain is built on first use and cached
for the life of the process, so models load once per worker. A document that
fails at any stage is recorded with its stage and error and dropped from the
rest of the batch; the others go on. Workers return :class:`DocumentResult`
objects: ids, status, timings, token counts and evaluation counts, never CAS
objects.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import faulthandler
import gc
import hashlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import Any, TypedDict

import cassis

from casflow.cas.metadata import set_document_metadata
from casflow.cas.sofa import line_column, lone_surrogate, set_sofa_text
from casflow.pipeline.component import (
    INITIAL_VIEW,
    Component,
    DocumentError,
    DocumentRef,
    Evaluator,
    Processor,
    Reader,
    RunContext,
    Writer,
    evaluating_one_document,
)
from casflow.pipeline.document_warnings import collected_warnings, distinct_warnings
from casflow.pipeline.journal import STATE_DIR
from casflow.pipeline.registry import registry
from casflow.pipeline.workflow import LoadedWorkflow, ResolvedStep, load_resolved, stage_labels
from casflow.typesystem import DOCUMENT_METADATA, TOKEN, load_typesystem


@dataclass
class DocumentResult:
    doc_id: str
    uri: str
    status: str  # ok | failed | timeout | skipped
    stage: str | None = None
    error: str | None = None
    hint: str | None = None
    detail: str | None = None
    chars: int = 0
    tokens: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    outputs: list[str] = field(default_factory=list)
    # evaluator label -> system view -> {"counts": ..., "units": ..., "errors": ...}
    evaluation: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # warnings raised while this document was read, processed, written or evaluated:
    # {"stage", "category", "message"}, and "documents" for a step run on a batch
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        # The fields hold only JSON values, and the dict is serialised at once: asdict's
        # deep copy of the evaluators' units and errors took seconds per CRAFT article.
        return {f.name: getattr(self, f.name) for f in fields(self)}


class DocumentTimeout(Exception):
    pass


class InputUnreadable(DocumentError):
    hint = "replace or re-download the input named in the error"


class TextNotUnicode(DocumentError):
    hint = (
        "the reader gave text with bytes it could not decode kept as lone surrogates (as "
        "Python's errors='surrogateescape' keeps them): read the file in its real encoding "
        "(text.reader.v1: encoding), or fix or replace those bytes in the file"
    )


class StepStartError(DocumentError):
    """A step of the chain could not be built (its model or files did not load): each
    document the chain was given fails with it, under every backend alike."""

    hint = (
        "the step failed while starting (loading its model or files), before it saw any "
        "document: fix what the error names (the traceback shows where) and run the same "
        "command again"
    )


# Exceptions that end one document, not the run: a component calling sys.exit()
# must not stop the worker (or, with jobs: 1, the whole run).
_DOCUMENT_ERRORS = (Exception, SystemExit)

_HINTS = {
    MemoryError: "the document needs more memory than the worker could get: give the workers "
    "more memory, run fewer jobs or a smaller batch_size, or split the document",
    SystemExit: "a component called sys.exit(); it should raise an exception instead",
    RecursionError: "the document holds a structure nested too deeply for this step to "
    "walk (e.g. a constituency tree of hundreds of levels from a parser gone astray): check "
    "the output of the step that made it for this document",
}

#: Where a worker stopped by the watchdog leaves the stacks of its threads.
WATCHDOG_LOG = "stuck-workers.log"


def watchdog_seconds(limit: float) -> float:
    """How long a time-limited step may run before the watchdog stops its worker."""
    return limit + max(2.0, limit / 2)


class Watchdog:
    """Stops this worker process when a time-limited step overruns by far.

    SIGALRM interrupts Python code in the main thread only: native code that
    never returns, a blocked SIGALRM or a Dask worker thread escape it. The
    faulthandler thread needs neither the interpreter lock nor signals; at the
    deadline it writes every thread's stack to ``<output>/.casflow/stuck-workers.log``
    and ends the process, which the runner records as a timeout. Never used in
    the parent process (jobs: 1), where it would end the whole run.
    """

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self._log: Any = None
        self._deadlines: dict[int, float] = {}  # one per running guard (Dask runs threads)
        self._lock = threading.Lock()
        self._next_key = 0

    @contextmanager
    def guard(self, seconds: float) -> Iterator[None]:
        with self._lock:
            key = self._next_key
            self._next_key += 1
            self._deadlines[key] = time.monotonic() + watchdog_seconds(seconds)
            self._arm()
        try:
            yield
        finally:
            with self._lock:
                del self._deadlines[key]
                self._arm()

    def _arm(self) -> None:
        # faulthandler has one timer per process: it always holds the earliest deadline.
        if not self._deadlines:
            faulthandler.cancel_dump_traceback_later()
            return
        if self._log is None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - faulthandler writes to it later
        delay = max(min(self._deadlines.values()) - time.monotonic(), 0.001)
        faulthandler.dump_traceback_later(delay, exit=True, file=self._log)


#: The longest limit a timer is set to (about three years): SIGALRM's and the
#: watchdog's timers overflow near 1e10 s.
MAX_TIMER_SECONDS = 1e8


@contextmanager
def _time_limit(seconds: float | None, watchdog: Watchdog | None = None) -> Iterator[None]:
    # SIGALRM interrupts Python code in the worker's main thread; for a hang it
    # cannot interrupt, the watchdog (in workers) stops the process, and the
    # runner's task timeout replaces a worker stuck anywhere else.
    if not seconds:
        yield
        return
    # A batch's limit is its documents' sum; the timers refuse much over 1e9 s.
    seconds = min(seconds, MAX_TIMER_SECONDS)
    with watchdog.guard(seconds) if watchdog else contextlib.nullcontext():
        if not hasattr(signal, "SIGALRM"):
            yield
            return
        with _alarm(seconds):
            yield


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def _raise(signum: int, frame: Any) -> None:
        raise DocumentTimeout(f"document exceeded the time limit of {seconds:g} s")

    try:
        previous = signal.signal(signal.SIGALRM, _raise)
    except ValueError:  # not in the main thread (Dask runs tasks in threads): watchdog only
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def modules_hidden(names: Iterable[str]) -> Iterator[list[str]]:
    """Inside, ``import NAME`` (and of its submodules) raises ImportError as if NAME
    were not installed; outside, it imports as before. A module imported already
    stays. Yields the names hidden.

    A ``None`` entry in ``sys.modules`` is the import system's own "not found"
    marker (the language reference, "The module cache"); a library that imports
    the module optionally (``try: import torch`` / ``except ImportError``) takes
    its path for a missing module, as it does where the module is not installed.
    """
    hidden = sorted(name for name in set(names) if name not in sys.modules)
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield hidden
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


@contextmanager
def modules_standing_in(stand_ins: Mapping[str, ModuleType]) -> Iterator[list[str]]:
    """Inside, each module of ``stand_ins`` whose top-level package is not imported
    yet has its stand-in in ``sys.modules`` (``Component.stand_in_modules``), so
    that the package's own import takes it for the module; outside, those still
    there are taken out, and the next import gets the real module. A package
    imported already has done its import: nothing stands in for its modules.
    Yields the names put in place."""
    placed = sorted(name for name in stand_ins if name.partition(".")[0] not in sys.modules)
    for name in placed:
        sys.modules[name] = stand_ins[name]
    try:
        yield placed
    finally:
        for name in placed:
            if sys.modules.get(name) is stand_ins[name]:
                del sys.modules[name]


def _named_in(module: str, names: Iterable[str]) -> bool:
    """``module`` is one of ``names`` or inside a package among them."""
    return any(module == name or module.startswith(name + ".") for name in names)


class Chain:
    """Instantiated components of one workflow, in order.

    With ``hide_unused_modules`` (a worker process that serves one run), each
    component is built with the modules it declares it does not use hidden
    (``Component.modules_not_used``) and with its stand-ins for those its
    libraries import though it does not use them (``Component.stand_in_modules``),
    less those any step of the chain uses (``Component.modules_used``): heavy
    imports of its libraries (torch through spaCy's thinc, spaCy's command line)
    then cost the worker's start nothing. Only in such a process: a library that
    looked for a hidden module while loading keeps having done without it for the
    life of the process.
    """

    def __init__(
        self, workflow: LoadedWorkflow, context: RunContext, hide_unused_modules: bool = False
    ) -> None:
        self.workflow = workflow
        self.context = context
        self.typesystem = load_typesystem()
        steps = [workflow.reader, *workflow.processors, *workflow.writers, *workflow.evaluators]
        used: set[str] = set()
        if hide_unused_modules:
            for step in steps:
                used |= step.component_class.modules_used(step.config, context)

        built: list[Component[Any]] = []

        def build(step: ResolvedStep, role: Any) -> Any:
            try:
                component = build_hiding_unused(step, role)
            except _DOCUMENT_ERRORS as exc:
                for earlier in built:  # a JVM or a model server must not outlive the attempt
                    with contextlib.suppress(Exception):
                        earlier.close()
                where = " -> ".join(map(str, step.path))
                raise StepStartError(
                    f"{step.spec.label()} ({where}) could not be started: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            built.append(component)
            return component

        def build_hiding_unused(step: ResolvedStep, role: Any) -> Any:
            if not hide_unused_modules:
                return step.build(role, context)
            component = step.component_class
            unused = component.modules_not_used(step.config, context) - used
            stand_ins = {
                name: module
                for name, module in component.stand_in_modules(step.config, context).items()
                if not _named_in(name, used)
            }
            with modules_hidden(unused), modules_standing_in(stand_ins):
                return step.build(role, context)

        self.labels = stage_labels([*workflow.processors, *workflow.writers])
        self.reader = build(workflow.reader, Reader)
        self.processors = [(s, build(s, Processor)) for s in workflow.processors]
        self.writers = [(s, build(s, Writer)) for s in workflow.writers]
        self.evaluators = [(s, build(s, Evaluator)) for s in workflow.evaluators]

    def close(self) -> None:
        for component in [self.reader] + [
            c for _, c in self.processors + self.writers + self.evaluators
        ]:
            try:
                component.close()
            except Exception:  # closing must not hide the run's own result
                traceback.print_exc()

    def label(self, step: ResolvedStep) -> str:
        """What the step's time, failures and warnings are reported under."""
        return self.labels[step.path]

    # -- per-document stages ------------------------------------------------

    def load(self, ref: DocumentRef) -> cassis.Cas:
        return read_document(self.reader, ref, self.workflow.reader.spec.view, self.typesystem)

    def view(self, cas: cassis.Cas, name: str) -> cassis.Cas:
        """A view by name; views not yet created share the initial view's text."""
        if name == INITIAL_VIEW:
            return cas
        try:
            return cas.get_view(name)
        except KeyError:
            view = cas.create_view(name)
            set_sofa_text(view, cas.get_view(INITIAL_VIEW).sofa_string or "")
            return view


def read_document(
    reader: Reader, ref: DocumentRef, view_name: str, typesystem: cassis.TypeSystem
) -> cassis.Cas:
    """A new CAS with ``ref`` loaded by ``reader`` into ``view_name`` (the initial view
    gets the same text, so views created later share it) and the document metadata set."""
    if ref.error:
        raise InputUnreadable(ref.error)
    cas = cassis.Cas(typesystem=typesystem)
    view = cas if view_name == INITIAL_VIEW else cas.create_view(view_name)
    replacement = reader.load(ref, view)
    if replacement is not None:
        cas = replacement
    elif view_name != INITIAL_VIEW:
        set_sofa_text(cas, view.sofa_string or "")
    _check_text(cas, ref)
    _ensure_metadata(cas, ref)
    return cas


def _check_text(cas: cassis.Cas, ref: DocumentRef) -> None:
    """Fail the document at the reader when a view's text holds a lone surrogate: every
    tool, writer and XMI would fail on it later, each with an error that names neither
    the document nor the character (UnicodeEncodeError, SWIG's TypeError, SystemError)."""
    for sofa in cas.sofas:
        text = cas.get_view(sofa.sofaID).sofa_string or ""
        offset = lone_surrogate(text)
        if offset is None:
            continue
        code = ord(text[offset])
        escaped = (
            f" (the byte 0x{code - 0xDC00:02X} that did not decode, as errors='surrogateescape' "
            "keeps it)"
            if 0xDC80 <= code <= 0xDCFF
            else ""
        )
        line, column = line_column(text, offset)
        raise TextNotUnicode(
            f"{ref.uri}: view {sofa.sofaID}, line {line}, column {column} (character "
            f"{offset}): U+{code:04X} is a lone surrogate{escaped}, not a character; no "
            "tool, writer or XMI can take the text"
        )


def _ensure_metadata(cas: cassis.Cas, ref: DocumentRef) -> None:
    # Every CAS leaves the reader with its id and source, whatever the reader set.
    meta = next(iter(cas.select(DOCUMENT_METADATA)), None)
    if meta is None or not meta.get("documentId") or not meta.get("documentUri"):
        set_document_metadata(
            cas,
            (meta.get("documentId") if meta is not None else None) or ref.doc_id,
            (meta.get("documentUri") if meta is not None else None) or ref.uri,
        )


def count_tokens(cas: cassis.Cas) -> int:
    """Tokens in the view with the most of them (each view counts the same text)."""
    best = 0
    for sofa in cas.sofas:
        best = max(best, len(cas.get_view(sofa.sofaID).select(TOKEN)))
    return best


class _ErrorFields(TypedDict):
    error: str
    hint: str | None
    detail: str


def _error_fields(exc: BaseException) -> _ErrorFields:
    message = f"{type(exc).__name__}: {exc}"
    hint = (exc.hint if isinstance(exc, DocumentError) else None) or next(
        (h for t, h in _HINTS.items() if isinstance(exc, t)), None
    )
    return {
        "error": message,
        "hint": hint,
        "detail": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)),
    }


def run_batch(
    chain: Chain,
    refs: Sequence[DocumentRef],
    timeout: float | None,
    watchdog: Watchdog | None = None,
) -> list[DocumentResult]:
    results: dict[str, DocumentResult] = {}
    live: list[tuple[DocumentRef, cassis.Cas]] = []
    said: dict[str, list[dict[str, Any]]] = {ref.doc_id: [] for ref in refs}

    def batch_said(
        stage: str, docs: Sequence[DocumentRef], collected: list[dict[str, Any]]
    ) -> None:
        """A step run on several documents at once cannot tell whose input a warning
        was about: it is kept once, with the first, naming the whole batch."""
        if len(docs) > 1:
            ids = [ref.doc_id for ref in docs]
            collected = [{**item, "documents": ids} for item in collected]
        if docs:
            said[docs[0].doc_id].extend(collected)

    def fail(ref: DocumentRef, stage: str, exc: BaseException) -> None:
        status = "timeout" if isinstance(exc, DocumentTimeout) else "failed"
        before = results.get(ref.doc_id)
        results[ref.doc_id] = DocumentResult(
            ref.doc_id,
            ref.uri,
            status,
            stage=stage,
            # the steps it got through still count in its time
            stage_seconds=before.stage_seconds if before is not None else {},
            **_error_fields(exc),
        )

    def stage_time(ref: DocumentRef, stage: str, seconds: float) -> None:
        res = results.setdefault(ref.doc_id, DocumentResult(ref.doc_id, ref.uri, "ok"))
        res.stage_seconds[stage] = res.stage_seconds.get(stage, 0.0) + seconds

    for ref in refs:
        t0 = time.perf_counter()
        try:
            with (
                collected_warnings(
                    f"reader {chain.workflow.reader.spec.label()}", said[ref.doc_id]
                ),
                _time_limit(timeout, watchdog),
            ):
                cas = chain.load(ref)
        except _DOCUMENT_ERRORS as exc:
            stage_time(ref, "read", time.perf_counter() - t0)
            fail(ref, f"reader {chain.workflow.reader.spec.label()}", exc)
            continue
        stage_time(ref, "read", time.perf_counter() - t0)
        live.append((ref, cas))

    retry_alone = False
    for step, processor in chain.processors:
        if not live:
            break
        label = chain.label(step)
        views = [chain.view(cas, step.spec.view) for _, cas in live]
        t0 = time.perf_counter()
        step_said: list[dict[str, Any]] = []
        # A processor that keeps the base class's loop over its views is run view by
        # view here, so that what it warns about is said of its own document.
        one_by_one = type(processor).process_batch is Processor.process_batch
        each_said: dict[str, list[dict[str, Any]]] = {ref.doc_id: [] for ref, _ in live}
        try:
            # A batch shares the limit of its documents; a failure falls back to
            # one document at a time so only the culprit is dropped.
            with (
                collected_warnings(f"component {label}", step_said),
                _time_limit(timeout * len(live) if timeout else None, watchdog),
            ):
                each_took: list[float] = []
                if one_by_one:
                    for (ref, _), view in zip(live, views, strict=True):
                        t1 = time.perf_counter()
                        with collected_warnings(f"component {label}", each_said[ref.doc_id]):
                            processor.process(view)
                        each_took.append(time.perf_counter() - t1)
                else:
                    processor.process_batch(views)
            for doc_id, items in each_said.items():
                said[doc_id].extend(items)
            batch_said(f"component {label}", [ref for ref, _ in live], step_said)
            if not each_took:  # one call for the batch: each document its share
                each_took = [(time.perf_counter() - t0) / len(live)] * len(live)
            for (ref, _), took in zip(live, each_took, strict=True):
                stage_time(ref, label, took)
        except _DOCUMENT_ERRORS as exc:
            if len(live) == 1:
                said[live[0][0].doc_id].extend(each_said[live[0][0].doc_id] + step_said)
                stage_time(live[0][0], label, time.perf_counter() - t0)
                fail(live[0][0], f"component {label}", exc)
                live = []
                break
            retry_alone = True
            break
    if retry_alone:
        # The batch call may have annotated some views before it failed, so the
        # step cannot simply be run again over them (their annotations would be
        # doubled): each document starts again alone, from its reader, so that
        # only the culprit fails and the others come out as from a clean run.
        # Outside the except block: a document's own failure would otherwise carry
        # the batch's as its context, and its traceback would tell both.
        for ref, _ in live:
            (results[ref.doc_id],) = run_batch(chain, [ref], timeout, watchdog)
            said[ref.doc_id] = results[ref.doc_id].warnings  # its run alone said them again
        return _in_order(refs, results, said)

    for _, writer in chain.writers:
        writer.start_batch([ref.doc_id for ref, _ in live])
    for ref, cas in live:
        result = results[ref.doc_id]
        stage = "writing"
        # the step under way and when it began: a failure counts its time too
        timing: tuple[str, float] | None = None
        wrote: list[Writer] = []
        try:
            for step, writer in chain.writers:
                timing = (chain.label(step), time.perf_counter())
                stage = f"writer {chain.label(step)}"
                wrote.append(writer)
                with collected_warnings(stage, said[ref.doc_id]):
                    result.outputs.extend(str(p) for p in writer.write(cas, ref.doc_id))
                stage_time(ref, timing[0], time.perf_counter() - timing[1])
                timing = None
            with evaluating_one_document():  # views no longer change: evaluators share
                for step, evaluator in chain.evaluators:
                    stage = f"evaluator {step.spec.label()}"
                    timing = (step.spec.label(), time.perf_counter())
                    gold = cas.get_view(evaluator.config.gold_view)
                    per_system = {}
                    for system_name in evaluator.config.system_views:
                        with (
                            collected_warnings(stage, said[ref.doc_id]),
                            _no_collections_of_the_cas(),
                        ):
                            ev = evaluator.evaluate(gold, cas.get_view(system_name))
                        per_system[system_name] = {
                            "counts": ev.counts,
                            "units": ev.units,
                            "errors": ev.errors,
                        }
                    result.evaluation[step.spec.label()] = per_system
                    stage_time(ref, timing[0], time.perf_counter() - timing[1])
                    timing = None
            result.chars = len(cas.sofa_string or "")
            result.tokens = count_tokens(cas)
        except _DOCUMENT_ERRORS as exc:
            if timing is not None:
                stage_time(ref, timing[0], time.perf_counter() - timing[1])
            fail(ref, stage, exc)
            # A failed document leaves no output behind: one kept in the batch's
            # archive would be there twice once a later run has processed it.
            for writer in wrote:
                with contextlib.suppress(*_DOCUMENT_ERRORS):
                    writer.discard(ref.doc_id)

    _end_batch(chain, [ref for ref, _ in live], results, fail, stage_time, batch_said)
    return _in_order(refs, results, said)


@contextmanager
def _no_collections_of_the_cas() -> Iterator[None]:
    """The garbage collector off while an evaluator reads a document: its full
    collections, set off by the evaluator's many small objects, walked the document's
    CAS (half a million objects for a CRAFT article) again and again, 45% of the
    evaluators' time, and found nothing to free (what the evaluator makes is freed
    as it goes; the few cycles wait until the collector is on again)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _in_order(
    refs: Sequence[DocumentRef],
    results: dict[str, DocumentResult],
    said: dict[str, list[dict[str, Any]]],
) -> list[DocumentResult]:
    """The batch's results in the order of ``refs``, with each document's time and
    the warnings raised about it.

    A document's time is its own: its reading, writing and evaluating, each step it
    went through alone, and its share of a step run on the whole batch (for a failed
    or timed-out document, the steps before the failure and its time in the step it
    failed in). It was once the time from the batch's start to its end, the same for
    every document of the batch."""
    out = []
    for ref in refs:
        res = results.get(ref.doc_id) or DocumentResult(ref.doc_id, ref.uri, "failed", error="lost")
        res.seconds = sum(res.stage_seconds.values())
        res.warnings = distinct_warnings(said[ref.doc_id])
        out.append(res)
    return out


def _end_batch(
    chain: Chain,
    written: Sequence[DocumentRef],
    results: dict[str, DocumentResult],
    fail: Any,
    stage_time: Any,
    batch_said: Any,
) -> None:
    """Let each writer finish the batch (an archive of its documents, for one); its
    time is shared by the documents, and its failure fails them all: none of them
    is recorded as done with an output that was never written."""

    def share_time(step: ResolvedStep, t0: float) -> None:
        if written:
            share = (time.perf_counter() - t0) / len(written)
            for ref in written:
                stage_time(ref, chain.label(step), share)

    for step, writer in chain.writers:
        t0 = time.perf_counter()
        stage = f"writer {chain.label(step)}"
        step_said: list[dict[str, Any]] = []
        try:
            with collected_warnings(stage, step_said):
                writer.end_batch()
        except _DOCUMENT_ERRORS as exc:
            batch_said(stage, written, step_said)
            share_time(step, t0)
            for ref in written:
                if results[ref.doc_id].status == "ok":
                    fail(ref, stage, exc)
            continue
        batch_said(stage, written, step_said)
        share_time(step, t0)


# -- worker entry point ------------------------------------------------------

_CHAINS: dict[str, Chain] = {}
_WATCHDOGS: dict[Path, Watchdog] = {}


def close_chains() -> None:
    """Close the chains this process keeps between batches. Run at exit: a worker's
    chain is otherwise closed only when another workflow's replaces it, so components
    never released what they hold outside the process (a UIMA engine's scratch folder
    in the temporary directory, left behind by every worker of every run)."""
    for chain in list(_CHAINS.values()):
        chain.close()
    _CHAINS.clear()


atexit.register(close_chains)


#: The context key naming the run a batch belongs to (see chain_or_failures); not part
#: of the chain's key, so that a chain stays cached from one run to the next.
RUN_TOKEN = "run_token"

#: chain key -> (run token, the error building that chain gave, how many builds in a row
#: gave it): only the latest.
_CHAIN_FAILURES: dict[str, tuple[Any, _ErrorFields, int]] = {}
#: Builds in a row that fail alike before a process stops trying for the run: one
#: failure may pass (memory taken by a model loading beside it, a network file system),
#: the same error twice is taken to be the step's.
FAILED_BUILDS_REMEMBERED = 2


def _chain_key(resolved: Mapping[str, Any], context: Mapping[str, Any]) -> str:
    kept = {name: value for name, value in context.items() if name != RUN_TOKEN}
    blob = json.dumps([resolved, kept], sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def get_chain(resolved: Mapping[str, Any], context: Mapping[str, Any]) -> Chain:
    key = _chain_key(resolved, context)
    chain = _CHAINS.get(key)
    if chain is None:
        close_chains()
        reg = registry()
        for name, target in (context.get("components") or {}).items():
            reg.ensure(name, target)
        workflow = load_resolved(resolved)
        ctx = RunContext(
            output_dir=Path(context["output_dir"]),
            workflow_dir=Path(context["workflow_dir"]),
            overwrite=bool(context.get("overwrite")),
        )
        chain = Chain(workflow, ctx, hide_unused_modules=bool(context.get("hide_unused_modules")))
        _CHAINS[key] = chain
    return chain


_PARENT_WATCHED: set[int] = set()
_PR_SET_PDEATHSIG = 1
# How often a worker checks that the run's parent process is still there.
PARENT_CHECK_SECONDS = 0.5


def _parent_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A killed parent stays a zombie until its own parent reaps it.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return True


def _watch_parent(parent_pid: int) -> None:
    """End this worker when the run's parent process dies (kill -9 included).

    Without this, loky and Dask workers outlive a killed run for minutes and go
    on writing outputs. On Linux the kernel sends SIGKILL at the parent's death
    (PR_SET_PDEATHSIG); everywhere a thread checks every half second that the
    parent is still there (and still our parent) and ends the process if not.
    """
    if parent_pid in _PARENT_WATCHED or parent_pid == os.getpid():
        return
    _PARENT_WATCHED.add(parent_pid)
    first_parent = os.getppid()
    if sys.platform.startswith("linux") and first_parent == parent_pid:
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)

    def check() -> None:
        if os.getppid() != first_parent or not _parent_alive(parent_pid):
            os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_CHECK_SECONDS)
            check()

    check()  # the parent may have died before the signal was asked for
    threading.Thread(target=watch, name="casflow-parent-watch", daemon=True).start()
    # Ctrl-C reaches the whole process group; the parent decides how the run stops.
    with contextlib.suppress(ValueError):  # not the main thread (Dask): nothing to do
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def chain_or_failures(
    resolved: Mapping[str, Any], context: Mapping[str, Any], refs: Sequence[DocumentRef]
) -> Chain | list[DocumentResult]:
    """The chain for ``refs``, or where it cannot be built (a step's model does not
    load) their results as failed: in a worker and in-process alike, so that the run
    report says which step and what to do.

    The same failure in ``FAILED_BUILDS_REMEMBERED`` builds in a row is remembered for
    the rest of the run (the context's ``run_token``): the process's later batches fail
    at once with that error. Building again for each batch cost every batch the failing
    load (a 30 s model on 5,000 documents in batches of 8: over five hours); a failure
    once (memory, a network file system) is tried again, and remembering it at once
    failed the whole run. A later run in the same process (a Dask cluster serving
    several runs) tries again, after the user's fix."""
    key = _chain_key(resolved, context)
    run = context.get(RUN_TOKEN)
    remembered = _CHAIN_FAILURES.get(key)
    if (
        remembered is not None
        and remembered[0] == run
        and (remembered[2] >= FAILED_BUILDS_REMEMBERED)
    ):
        error = remembered[1]
    else:
        try:
            chain = get_chain(resolved, context)
        except _DOCUMENT_ERRORS as exc:
            error = _error_fields(exc)
            in_a_row = 1
            if remembered is not None and (remembered[0], remembered[1]["error"]) == (
                run,
                error["error"],
            ):
                in_a_row = remembered[2] + 1
            _CHAIN_FAILURES.clear()
            _CHAIN_FAILURES[key] = (run, error, in_a_row)
        else:
            _CHAIN_FAILURES.pop(key, None)
            return chain
    return [
        DocumentResult(r.doc_id, r.uri, "failed", stage="building the chain", **error) for r in refs
    ]


def prepare_worker(resolved: Mapping[str, Any], context: Mapping[str, Any]) -> list[DocumentResult]:
    """Build this worker's chain (load the models) before its first document arrives,
    while the parent is still listing the input. A chain that cannot be built is
    reported with the first documents, as before."""
    return process_documents(resolved, context, [])


def process_documents(
    resolved: Mapping[str, Any], context: Mapping[str, Any], refs: Sequence[DocumentRef]
) -> list[DocumentResult]:
    """Worker entry point (in a worker process only): references in, small results out."""
    if context.get("parent_pid"):
        _watch_parent(int(context["parent_pid"]))
    timeout = (resolved.get("run") or {}).get("timeout")
    chain = chain_or_failures(resolved, context, refs)
    if isinstance(chain, list):
        return chain
    log_path = Path(context["output_dir"]) / STATE_DIR / WATCHDOG_LOG
    if log_path not in _WATCHDOGS:
        _WATCHDOGS[log_path] = Watchdog(log_path)
    return run_batch(chain, refs, timeout, _WATCHDOGS[log_path])
