"""Build a CAS from text and run components on it in plain Python: for tests and notebooks.

What uimaFIT's ``JCasFactory`` and ``SimplePipeline`` are to a UIMA user::

    from casflow.pipeline.testing import cas_from_text, evaluate, run_chain, run_component

    cas = cas_from_text("Pax6 is expressed.", spans={"Token": [(0, 4), (5, 7), (8, 17)]})
    run_component("ner.gene.v1", cas, use_existing_tokens=True)
    cas.select("casflow.ner.GeneMention")

    cas = run_chain(["sentences.rules.v1", ("spacy.pipeline.v1", {"model": "..."})], text)

Components are built as a run builds them (the registry name or the class, its
config validated from keyword arguments) and closed afterwards; views other than
the initial one get the initial view's text, as in a run. Nothing here checks a
workflow: use :func:`casflow.pipeline.workflow.load_workflow_text` for that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import cassis

from casflow.cas.metadata import set_document_metadata
from casflow.cas.sofa import set_sofa_text
from casflow.pipeline.component import (
    INITIAL_VIEW,
    Component,
    Evaluator,
    Processor,
    RunContext,
)
from casflow.pipeline.counts import EvaluationResult
from casflow.pipeline.registry import registry
from casflow.typesystem import load_typesystem, resolve_type_name

#: ``(begin, end)`` or ``(begin, end, {feature: value})``.
Span = tuple[int, int] | tuple[int, int, Mapping[str, Any]]
#: A component by registry name or class, alone or with its config.
ComponentSpec = str | type[Component[Any]] | tuple[str | type[Component[Any]], Mapping[str, Any]]


def cas_from_text(
    text: str,
    *,
    view: str = INITIAL_VIEW,
    spans: Mapping[str, Iterable[Span]] | None = None,
    doc_id: str = "doc",
    typesystem: cassis.TypeSystem | None = None,
) -> cassis.Cas:
    """A CAS over ``text`` with ``spans`` annotated in ``view`` (created if needed).

    ``spans`` maps type names, full or short (``"Token"``, ``"GeneMention"``), to
    spans; a third element sets features (``(0, 4, {"value": "GENE"})``). The
    document id is set as a reader sets it, so evaluators can name the document.
    """
    cas = cassis.Cas(typesystem=typesystem or load_typesystem())
    set_sofa_text(cas, text)
    set_document_metadata(cas, doc_id, f"{doc_id}.txt")
    target = view_of(cas, view)
    for type_name, items in (spans or {}).items():
        add_spans(target, type_name, items)
    return cas


def add_spans(view: cassis.Cas, type_name: str, spans: Iterable[Span]) -> list[Any]:
    """Annotations of ``type_name`` (full or short name) at ``spans``, added to ``view``."""
    full = resolve_type_name(type_name)
    if not view.typesystem.contains_type(full):
        raise ValueError(
            f"unknown type {type_name!r}; give a full name or an unambiguous short one"
        )
    type_ = view.typesystem.get_type(full)
    annotations = []
    for span in spans:
        features = dict(span[2]) if len(span) == 3 else {}
        annotations.append(type_(begin=span[0], end=span[1], **features))
    view.add_all(annotations)
    return annotations


def view_of(cas: cassis.Cas, name: str) -> cassis.Cas:
    """The view ``name``, created with the initial view's text when it does not exist."""
    if name == INITIAL_VIEW:
        return cas.get_view(INITIAL_VIEW)
    try:
        return cas.get_view(name)
    except KeyError:
        view = cas.create_view(name)
        set_sofa_text(view, cas.get_view(INITIAL_VIEW).sofa_string or "")
        return view


def build(
    component: str | type[Component[Any]],
    context: RunContext | None = None,
    **config: Any,
) -> Component[Any]:
    """A component built as a run builds it: registry name or class, config from keywords."""
    cls = registry().get(component) if isinstance(component, str) else component
    return cls(cls.Config.model_validate(config), context)


def run_component(
    component: str | type[Component[Any]],
    cas: cassis.Cas | str,
    *,
    view: str = INITIAL_VIEW,
    context: RunContext | None = None,
    **config: Any,
) -> cassis.Cas:
    """Run one processor over ``view`` of ``cas`` (or of a CAS made from a text); return the CAS."""
    return run_chain([(component, config)], cas, view=view, context=context)


def run_chain(
    components: Sequence[ComponentSpec],
    cas: cassis.Cas | str,
    *,
    view: str = INITIAL_VIEW,
    context: RunContext | None = None,
) -> cassis.Cas:
    """Run processors in order over ``view`` of ``cas`` (or of a CAS made from a text)."""
    if isinstance(cas, str):
        cas = cas_from_text(cas)
    target = view_of(cas, view)
    built: list[Component[Any]] = []
    try:
        for spec in components:
            name, config = spec if isinstance(spec, tuple) else (spec, {})
            processor = build(name, context, **config)
            built.append(processor)
            if not isinstance(processor, Processor):
                raise TypeError(
                    f"{processor.name} is a {processor.role}; run_chain runs processors "
                    "(use evaluate for evaluators)"
                )
            processor.process(target)
    finally:
        for component in built:
            component.close()
    return cas


def evaluate(
    evaluator: str | type[Component[Any]],
    cas: cassis.Cas,
    *,
    context: RunContext | None = None,
    **config: Any,
) -> dict[str, EvaluationResult]:
    """An evaluator's counts for each system view of ``cas`` against its gold view."""
    built = build(evaluator, context, **config)
    try:
        if not isinstance(built, Evaluator):
            raise TypeError(f"{built.name} is a {built.role}, not an evaluator")
        gold = cas.get_view(built.config.gold_view)
        return {
            name: built.evaluate(gold, cas.get_view(name)) for name in built.config.system_views
        }
    finally:
        built.close()
