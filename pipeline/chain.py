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

import hashlib
import json
import signal
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import cassis

from casflow.pipeline.cas_utils import set_document_metadata
from casflow.pipeline.component import (
    INITIAL_VIEW,
    DocumentRef,
    Evaluator,
    Processor,
    Reader,
    RunContext,
    Writer,
)
from casflow.pipeline.registry import registry
from casflow.pipeline.validation import LoadedWorkflow, ResolvedStep, load_resolved
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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class DocumentTimeout(Exception):
    pass


class InputUnreadable(Exception):
    hint = "replace or re-download the input named in the error"


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    # SIGALRM interrupts Python code in the worker's main thread; a hang inside
    # native code that never returns to the interpreter needs the worker to be
    # replaced, which the runner does when a batch exceeds its deadline.
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise DocumentTimeout(f"document exceeded the time limit of {seconds:g} s")

    try:
        previous = signal.signal(signal.SIGALRM, _raise)
    except ValueError:  # not in the main thread (e.g. a threaded backend)
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Chain:
    """Instantiated components of one workflow, in order."""

    def __init__(self, workflow: LoadedWorkflow, context: RunContext) -> None:
        self.workflow = workflow
        self.context = context
        self.typesystem = load_typesystem()
        self.reader: Reader = self._build(workflow.reader)  # type: ignore[assignment]
        self.processors: list[tuple[ResolvedStep, Processor]] = [
            (s, self._build(s))
            for s in workflow.processors  # type: ignore[misc]
        ]
        self.writers: list[tuple[ResolvedStep, Writer]] = [
            (s, self._build(s))
            for s in workflow.writers  # type: ignore[misc]
        ]
        self.evaluators: list[tuple[ResolvedStep, Evaluator]] = [
            (s, self._build(s))
            for s in workflow.evaluators  # type: ignore[misc]
        ]

    def _build(self, step: ResolvedStep) -> Any:
        return step.component_class(step.config, self.context)

    def close(self) -> None:
        for component in [self.reader] + [
            c for _, c in self.processors + self.writers + self.evaluators
        ]:
            try:
                component.close()
            except Exception:  # closing must not hide the run's own result
                traceback.print_exc()

    # -- per-document stages ------------------------------------------------

    def load(self, ref: DocumentRef) -> cassis.Cas:
        if ref.error:
            raise InputUnreadable(ref.error)
        cas = cassis.Cas(typesystem=self.typesystem)
        view_name = self.workflow.reader.spec.view
        view = cas if view_name == INITIAL_VIEW else cas.create_view(view_name)
        replacement = self.reader.load(ref, view)
        if replacement is not None:
            cas = replacement
        elif view_name != INITIAL_VIEW:
            cas.sofa_string = view.sofa_string or ""
        _ensure_metadata(cas, ref)
        return cas

    def view(self, cas: cassis.Cas, name: str) -> cassis.Cas:
        """A view by name; views not yet created share the initial view's text."""
        if name == INITIAL_VIEW:
            return cas
        try:
            return cas.get_view(name)
        except KeyError:
            view = cas.create_view(name)
            view.sofa_string = cas.get_view(INITIAL_VIEW).sofa_string
            return view


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


def _error_fields(exc: BaseException) -> dict[str, str | None]:
    message = f"{type(exc).__name__}: {exc}"
    hint = getattr(exc, "hint", None)
    return {
        "error": message,
        "hint": hint,
        "detail": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4)),
    }


def run_batch(
    chain: Chain, refs: Sequence[DocumentRef], timeout: float | None
) -> list[DocumentResult]:
    results: dict[str, DocumentResult] = {}
    live: list[tuple[DocumentRef, cassis.Cas]] = []
    started = {ref.doc_id: time.perf_counter() for ref in refs}

    def fail(ref: DocumentRef, stage: str, exc: BaseException) -> None:
        status = "timeout" if isinstance(exc, DocumentTimeout) else "failed"
        results[ref.doc_id] = DocumentResult(
            ref.doc_id, ref.uri, status, stage=stage, **_error_fields(exc)
        )

    def stage_time(ref: DocumentRef, stage: str, seconds: float) -> None:
        res = results.setdefault(ref.doc_id, DocumentResult(ref.doc_id, ref.uri, "ok"))
        res.stage_seconds[stage] = res.stage_seconds.get(stage, 0.0) + seconds

    for ref in refs:
        t0 = time.perf_counter()
        try:
            with _time_limit(timeout):
                cas = chain.load(ref)
        except Exception as exc:
            fail(ref, f"reader {chain.workflow.reader.spec.label()}", exc)
            continue
        stage_time(ref, "read", time.perf_counter() - t0)
        live.append((ref, cas))

    for step, processor in chain.processors:
        if not live:
            break
        label = step.spec.label()
        views = [chain.view(cas, step.spec.view) for _, cas in live]
        t0 = time.perf_counter()
        try:
            # A batch shares the limit of its documents; a failure falls back to
            # one document at a time so only the culprit is dropped.
            with _time_limit(timeout * len(live) if timeout else None):
                processor.process_batch(views)
            per_doc = (time.perf_counter() - t0) / len(live)
            for ref, _ in live:
                stage_time(ref, label, per_doc)
        except Exception:
            survivors = []
            for (ref, cas), view in zip(live, views, strict=True):
                t1 = time.perf_counter()
                try:
                    with _time_limit(timeout):
                        processor.process(view)
                except Exception as exc:
                    fail(ref, f"component {label}", exc)
                    continue
                stage_time(ref, label, time.perf_counter() - t1)
                survivors.append((ref, cas))
            live = survivors

    for ref, cas in live:
        result = results[ref.doc_id]
        stage = "writing"
        try:
            for step, writer in chain.writers:
                t0 = time.perf_counter()
                stage = f"writer {step.spec.label()}"
                result.outputs.extend(str(p) for p in writer.write(cas, ref.doc_id))
                stage_time(ref, step.spec.label(), time.perf_counter() - t0)
            for step, evaluator in chain.evaluators:
                stage = f"evaluator {step.spec.label()}"
                t0 = time.perf_counter()
                config = step.config
                gold = cas.get_view(config.gold_view)  # type: ignore[attr-defined]
                per_system = {}
                for system_name in config.system_views:  # type: ignore[attr-defined]
                    ev = evaluator.evaluate(gold, cas.get_view(system_name))
                    per_system[system_name] = {
                        "counts": ev.counts,
                        "units": ev.units,
                        "errors": ev.errors,
                    }
                result.evaluation[step.spec.label()] = per_system
                stage_time(ref, step.spec.label(), time.perf_counter() - t0)
            result.chars = len(cas.sofa_string or "")
            result.tokens = count_tokens(cas)
        except Exception as exc:
            fail(ref, stage, exc)

    out = []
    for ref in refs:
        res = results.get(ref.doc_id) or DocumentResult(ref.doc_id, ref.uri, "failed", error="lost")
        res.seconds = time.perf_counter() - started[ref.doc_id]
        out.append(res)
    return out


# -- worker entry point ------------------------------------------------------

_CHAINS: dict[str, Chain] = {}


def _chain_key(resolved: Mapping[str, Any], context: Mapping[str, Any]) -> str:
    blob = json.dumps([resolved, context], sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def get_chain(resolved: Mapping[str, Any], context: Mapping[str, Any]) -> Chain:
    key = _chain_key(resolved, context)
    chain = _CHAINS.get(key)
    if chain is None:
        for old in _CHAINS.values():
            old.close()
        _CHAINS.clear()
        reg = registry()
        for name, target in (context.get("components") or {}).items():
            reg.ensure(name, target)
        workflow = load_resolved(resolved)
        ctx = RunContext(
            output_dir=Path(context["output_dir"]),
            workflow_dir=Path(context["workflow_dir"]),
            overwrite=bool(context.get("overwrite")),
        )
        chain = Chain(workflow, ctx)
        _CHAINS[key] = chain
    return chain


def process_documents(
    resolved: Mapping[str, Any], context: Mapping[str, Any], refs: Sequence[DocumentRef]
) -> list[DocumentResult]:
    """Worker entry point: references in, small results out."""
    timeout = (resolved.get("run") or {}).get("timeout")
    try:
        chain = get_chain(resolved, context)
    except Exception as exc:
        fields = _error_fields(exc)
        return [
            DocumentResult(r.doc_id, r.uri, "failed", stage="building the chain", **fields)
            for r in refs
        ]
    return run_batch(chain, refs, timeout)
