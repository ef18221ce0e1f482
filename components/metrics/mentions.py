"""Mention (named-entity / concept) evaluation: additive counts and P/R/F.

``mention_counts`` matches one document's gold and system mentions one-to-one under
each criterion (see ``matching``) and returns flat additive counts::

    "strict/micro/tp", "strict/micro/fp", "strict/micro/fn",
    "strict/class/GENE/tp", ...

plus false positives / negatives with context for error analysis. ``score_mentions``
turns counts summed over any number of documents into P/R/F per criterion: per
class, micro (over all mentions) and macro (mean of the per-class scores, computed
from the summed per-class counts, never averaged per document).

Labels: by default a pair must have equal labels. ``class_mapping`` maps a system
label to the set of gold classes it may match (a label the mapping does not name
matches only the same gold label). ``one_class=True`` ignores labels
(detection only) and counts everything under the class ``ONE_CLASS``.

Per-class attribution: true positives and false negatives go to the gold class; a
false positive goes to the gold class its system label maps to when the mapping
names exactly one, otherwise to the system label itself. Macro averages over the
gold classes (classes with at least one gold mention in the summed counts), so
system-only labels count in micro scores but are not averaged as empty classes.

BioCreative accepted alternatives: the ``ACCEPTED_ALTERNATIVES`` criterion
(``"alternatives"``) matches one-to-one: a system mention equal to a gold mention
or one of its alternatives claims that gold mention (TP), each gold mention can be
claimed once, other system mentions are FP and unclaimed gold mentions FN.
BioCreative II's ``alt_eval.perl`` differs in three corner cases: it counts TPs per
gold mention without consuming system mentions, so a second system mention
equal to another alternative of an already found gold mention is neither TP nor
FP there; one system mention equal to alternatives of two gold mentions finds
both; and a system mention equal to any accepted alternative of its sentence is
no FP even when that alternative overlaps no gold mention (BC2GM's ALTGENE.eval
has such entries; readers index them as Alternatives that no mention lists).
``alt_eval_counts`` reproduces the script exactly (under the key ``"alt_eval"``)
for comparison with published BC2GM and GENETAG numbers.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from casflow.components.metrics.matching import (
    LEFT_BOUNDARY,
    OVERLAP,
    RIGHT_BOUNDARY,
    STRICT,
    MatchCriterion,
    Mention,
    match_mentions,
)
from casflow.pipeline.counts import Counts, EvaluationResult, prf, safe_div

DEFAULT_CRITERIA: tuple[MatchCriterion, ...] = (STRICT, LEFT_BOUNDARY, RIGHT_BOUNDARY, OVERLAP)
ONE_CLASS = "MENTION"
ALT_EVAL_KEY = "alt_eval"
CONTEXT_CHARS = 40


class LabelPolicy:
    """Which labels may match, and which class a count is booked under."""

    def __init__(
        self, class_mapping: Mapping[str, Iterable[str]] | None = None, one_class: bool = False
    ) -> None:
        self.one_class = one_class
        self.class_mapping = (
            None
            if class_mapping is None
            else {label: frozenset(classes) for label, classes in class_mapping.items()}
        )

    def compatible(self, gold_label: str, system_label: str) -> bool:
        if self.one_class:
            return True
        if self.class_mapping is None:
            return gold_label == system_label
        return gold_label in self.class_mapping.get(system_label, (system_label,))

    def gold_class(self, label: str) -> str:
        return ONE_CLASS if self.one_class else label

    def system_class(self, label: str) -> str:
        if self.one_class:
            return ONE_CLASS
        if self.class_mapping is not None:
            classes = self.class_mapping.get(label, ())
            if len(classes) == 1:
                return next(iter(classes))
        return label


def _context(text: str | None, begin: int, end: int, width: int) -> str | None:
    if text is None:
        return None
    left = text[max(0, begin - width) : begin]
    right = text[end : end + width]
    return f"{left}[[{text[begin:end]}]]{right}".replace("\n", " ")


def _error(
    kind: str,
    criterion: str,
    mention: Mention,
    booked_class: str,
    text: str | None,
    context_chars: int,
) -> dict[str, Any]:
    error: dict[str, Any] = {
        "type": kind,
        "criterion": criterion,
        "begin": mention.begin,
        "end": mention.end,
        "label": mention.label,
        "class": booked_class,
        "text": mention.text
        if mention.text is not None
        else (text[mention.begin : mention.end] if text is not None else None),
    }
    if mention.fragments:
        error["fragments"] = [list(piece) for piece in mention.fragments]
    if text is not None:
        error["context"] = _context(text, mention.begin, mention.end, context_chars)
    return error


def _book(counts: Counts, criterion: str, cls: str, kind: str, amount: int = 1) -> None:
    for key in (f"{criterion}/micro/{kind}", f"{criterion}/class/{cls}/{kind}"):
        counts[key] = counts.get(key, 0) + amount


def _zero_gold_classes(
    counts: Counts, criterion: str, gold: Sequence[Mention], policy: LabelPolicy
) -> None:
    # Every gold class gets explicit keys so that it shows up in per-class scores even
    # when all its counts are zero in a document.
    for kind in ("tp", "fp", "fn"):
        counts.setdefault(f"{criterion}/micro/{kind}", 0)
    for mention in gold:
        counts.setdefault(f"{criterion}/class/{policy.gold_class(mention.label)}/fn", 0)


def mention_counts(
    gold: Sequence[Mention],
    system: Sequence[Mention],
    *,
    criteria: Sequence[MatchCriterion] = DEFAULT_CRITERIA,
    class_mapping: Mapping[str, Iterable[str]] | None = None,
    one_class: bool = False,
    text: str | None = None,
    errors_for: Collection[str] | None = None,
    context_chars: int = CONTEXT_CHARS,
) -> EvaluationResult:
    """Counts (and FP/FN errors) for one document under each criterion.

    ``text`` (the document text) fills mention texts and context snippets in errors;
    ``errors_for`` limits errors to the named criteria (None: all).
    """
    names = [criterion.name for criterion in criteria]
    if len(set(names)) != len(names):
        raise ValueError(f"criteria names must be unique, got {names}")
    policy = LabelPolicy(class_mapping, one_class)
    result = EvaluationResult()
    for criterion in criteria:
        name = criterion.name
        _zero_gold_classes(result.counts, name, gold, policy)
        matching = match_mentions(gold, system, criterion, policy.compatible)
        want_errors = errors_for is None or name in errors_for
        for g, _ in matching.pairs:
            _book(result.counts, name, policy.gold_class(gold[g].label), "tp")
        for s in matching.unmatched_system:
            cls = policy.system_class(system[s].label)
            _book(result.counts, name, cls, "fp")
            if want_errors:
                result.errors.append(_error("FP", name, system[s], cls, text, context_chars))
        for g in matching.unmatched_gold:
            cls = policy.gold_class(gold[g].label)
            _book(result.counts, name, cls, "fn")
            if want_errors:
                result.errors.append(_error("FN", name, gold[g], cls, text, context_chars))
    return result


def alt_eval_counts(
    gold: Sequence[Mention],
    system: Sequence[Mention],
    *,
    class_mapping: Mapping[str, Iterable[str]] | None = None,
    one_class: bool = True,
    text: str | None = None,
    context_chars: int = CONTEXT_CHARS,
    key: str = ALT_EVAL_KEY,
    accepted: Iterable[tuple[int, int]] = (),
) -> EvaluationResult:
    """Counts exactly as BioCreative II ``alt_eval.perl`` (see the module docstring).

    A gold mention is a TP when some system mention equals its span or one of its
    alternatives, else FN; a system mention is FP when it equals no gold span, no
    alternative of any gold mention and none of the ``accepted`` spans (the
    document's alternatives, those that belong to no gold mention included; they
    carry no label, so they accept a system mention of any label). Labels are
    ignored by default, as in the script.
    """
    policy = LabelPolicy(class_mapping, one_class)
    result = EvaluationResult()
    _zero_gold_classes(result.counts, key, gold, policy)
    by_span: dict[tuple[int, int], list[Mention]] = {}
    for mention in system:
        by_span.setdefault(mention.span, []).append(mention)
    accepted_spans: dict[tuple[int, int], list[Mention]] = {}
    for g in gold:
        cls = policy.gold_class(g.label)
        for span in dict.fromkeys((g.span, *g.alternatives)):
            accepted_spans.setdefault(span, []).append(g)
        found = any(
            policy.compatible(g.label, s.label)
            for span in (g.span, *g.alternatives)
            for s in by_span.get(span, ())
        )
        _book(result.counts, key, cls, "tp" if found else "fn")
        if not found:
            result.errors.append(_error("FN", key, g, cls, text, context_chars))
    free_spans = set(accepted)
    for s in system:
        if s.span in free_spans:
            continue
        if not any(policy.compatible(g.label, s.label) for g in accepted_spans.get(s.span, ())):
            cls = policy.system_class(s.label)
            _book(result.counts, key, cls, "fp")
            result.errors.append(_error("FP", key, s, cls, text, context_chars))
    return result


def _parse_key(key: str) -> tuple[str, str, str | None, str] | None:
    """``"strict/class/GENE/tp"`` -> ("strict", "class", "GENE", "tp")."""
    criterion, sep, rest = key.partition("/")
    if not sep:
        return None
    if rest.startswith("micro/"):
        return criterion, "micro", None, rest[len("micro/") :]
    if rest.startswith("class/"):
        label, _, kind = rest[len("class/") :].rpartition("/")
        return criterion, "class", label, kind
    return None


def score_mentions(counts: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """P/R/F from counts summed over documents.

    Returns ``{criterion: {"micro": prf, "macro": {"precision", "recall", "f1",
    "classes"}, "class": {label: prf}}}`` where ``prf`` holds precision, recall, f1,
    tp, fp and fn. Keys that are not mention counts are ignored.
    """
    micro: dict[str, dict[str, float]] = {}
    per_class: dict[str, dict[str, dict[str, float]]] = {}
    for key, value in counts.items():
        parsed = _parse_key(key)
        if parsed is None or parsed[3] not in ("tp", "fp", "fn"):
            continue
        criterion, _level, label, kind = parsed
        if label is None:  # micro
            bucket = micro.setdefault(criterion, {})
        else:
            bucket = per_class.setdefault(criterion, {}).setdefault(label, {})
        bucket[kind] = bucket.get(kind, 0) + value

    scores: dict[str, dict[str, Any]] = {}
    for criterion in sorted(set(micro) | set(per_class)):
        m = micro.get(criterion, {})
        classes = {
            label: prf(c.get("tp", 0), c.get("fp", 0), c.get("fn", 0))
            for label, c in sorted(per_class.get(criterion, {}).items())
        }
        gold_classes = [s for s in classes.values() if s["tp"] + s["fn"] > 0]
        n = len(gold_classes)
        scores[criterion] = {
            "micro": prf(m.get("tp", 0), m.get("fp", 0), m.get("fn", 0)),
            "macro": {
                "precision": safe_div(sum(s["precision"] for s in gold_classes), n),
                "recall": safe_div(sum(s["recall"] for s in gold_classes), n),
                "f1": safe_div(sum(s["f1"] for s in gold_classes), n),
                "classes": n,
            },
            "class": classes,
        }
    return scores
