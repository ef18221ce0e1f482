"""Shared base of the CAS evaluators: text check, error context, table format.

Every evaluator compares a gold view and a system view by character offsets, so
both views must hold the same text; :meth:`CasEvaluator.evaluate` checks that
first and fails the document with the first differing offset otherwise (a
mismatch would otherwise show up as a silent zero). Problems reading the
annotations become errors naming the document.

Markdown summaries are percentages (the papers' convention) shown with two
decimals; ``evaluation.json`` keeps the raw fractions that ``score`` returns.
Count columns (e.g. skipped sentences) are ints and shown as such.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import cassis

from casflow.components.evaluators.adapters import CasInputError, document_id, view_text
from casflow.pipeline.component import DocumentError, ErrorExample, Evaluator, EvaluatorConfigT
from casflow.pipeline.counts import EvaluationResult
from casflow.pipeline.significance import Metric

TEXT_CONTEXT = 20


class ViewTextMismatch(DocumentError, ValueError):
    hint = (
        "gold and system views must hold the same text, since annotations are compared "
        "by character offsets; check that the system ran on the gold text"
    )


def view_name(view: cassis.Cas) -> str:
    try:
        return str(view.get_sofa().sofaID)
    except Exception:  # a view object without a sofa: name unknown, not fatal
        return "?"


def check_same_text(gold: cassis.Cas, system: cassis.Cas) -> str:
    """The shared text; raises ViewTextMismatch naming the document and first differing offset."""
    gold_text, system_text = view_text(gold), view_text(system)
    if gold_text == system_text:
        return gold_text
    offset = next(
        (i for i, (a, b) in enumerate(zip(gold_text, system_text, strict=False)) if a != b),
        min(len(gold_text), len(system_text)),
    )
    window = slice(max(0, offset - TEXT_CONTEXT), offset + TEXT_CONTEXT)
    raise ViewTextMismatch(
        f"document {document_id(gold)}: the texts of view {view_name(gold)!r} "
        f"({len(gold_text)} characters) and view {view_name(system)!r} "
        f"({len(system_text)} characters) differ from character {offset}: "
        f"{gold_text[window]!r} vs {system_text[window]!r}"
    )


def percent(value: float) -> float:
    return 100.0 * value


class CasEvaluator(Evaluator[EvaluatorConfigT]):
    """Base: checks the views' texts, then ``compare`` gives the document's counts."""

    summary_decimals: ClassVar[int | None] = 2

    def evaluate(self, gold: cassis.Cas, system: cassis.Cas) -> EvaluationResult:
        text = check_same_text(gold, system)
        try:
            return self.compare(gold, system, text)
        except CasInputError:
            raise
        except ValueError as exc:
            raise CasInputError(
                f"document {document_id(gold)}, views {view_name(gold)!r} / "
                f"{view_name(system)!r}: {exc}"
            ) from exc

    @abstractmethod
    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        """Counts for one document whose views share ``text``."""


def prf_metric(prefix: str, name: str) -> Metric | None:
    """Batch metric for ``precision``/``recall``/``f1`` over ``prefix/tp|fp|fn`` counts."""
    from casflow.pipeline.significance import F1Metric, RatioMetric

    tp, fp, fn = (f"{prefix}/{k}" for k in ("tp", "fp", "fn"))
    if name == "f1":
        return F1Metric(prefix)
    if name == "precision":
        return RatioMetric((tp,), (tp, fp))
    if name == "recall":
        return RatioMetric((tp,), (tp, fn))
    return None


def _known_text(error: Mapping[str, Any]) -> tuple[int, str]:
    """Where the text an error record carries starts in the document, and that text:
    its ``context`` (``left[[mention]]right``) when present, else its own ``text``."""
    begin, end = int(error["begin"]), int(error["end"])
    text = error.get("text") or ""
    if len(text) != end - begin:
        return begin, ""  # a discontinuous mention's text is not the span's text
    context = error.get("context")
    marker = f"[[{text}]]"
    if not context or marker not in context:
        return begin, text
    left, _, right = context.partition(marker)
    return begin - len(left), left + text + right


def span_error_examples(errors: Iterable[Mapping[str, Any]]) -> list[ErrorExample]:
    """False negatives and positives (``type`` FN / FP with ``begin``, ``end``) grouped
    where their spans overlap, each group with the text its records give around it.

    A group with both kinds is a boundary error (or a label error when a gold and a
    system span are equal); FN alone were missed, FP alone are spurious.
    """
    spans = sorted(
        (e for e in errors if e.get("type") in ("FN", "FP") and "begin" in e and "end" in e),
        key=lambda e: (e["begin"], e["end"]),
    )
    groups: list[list[Mapping[str, Any]]] = []
    reach = -1
    for error in spans:
        if groups and error["begin"] < reach:
            groups[-1].append(error)
        else:
            groups.append([error])
        reach = max(reach, error["end"]) if len(groups[-1]) > 1 else error["end"]
    examples = []
    for group in groups:
        known: dict[int, str] = {}
        for error in group:
            start, text = _known_text(error)
            for offset, char in enumerate(text):
                known.setdefault(start + offset, char)
        low = min([*known, *(e["begin"] for e in group)])
        high = max([*(k + 1 for k in known), *(e["end"] for e in group)])
        text = "".join(known.get(i, " ") for i in range(low, high))
        gold = [
            (e["begin"] - low, e["end"] - low, e.get("label")) for e in group if e["type"] == "FN"
        ]
        system = [
            (e["begin"] - low, e["end"] - low, e.get("label")) for e in group if e["type"] == "FP"
        ]
        examples.append(
            ErrorExample(
                text=text,
                start=low,
                gold=tuple((b, e) for b, e, _ in gold),
                system=tuple((b, e) for b, e, _ in system),
                note=_note(gold, system),
            )
        )
    return examples


def _note(gold: list[tuple[int, int, Any]], system: list[tuple[int, int, Any]]) -> str:
    if not system:
        return "missed"
    if not gold:
        return "spurious"
    same_span = [(g, s) for g in gold for s in system if g[:2] == s[:2]]
    if same_span:
        g, s = same_span[0]
        return f"label: gold {g[2]}, system {s[2]}"
    return "boundary"
