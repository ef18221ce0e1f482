"""Additive evaluation counts.

Workers return counts, the parent adds them up, and scores are computed once at
the end (as conll18_ud_eval.py and seqeval do): a score is never averaged from
per-worker scores. Counts are flat ``{key: number}`` mappings whose keys are
"/"-joined paths, e.g. ``"strict/GENE/tp"``; missing keys count as zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Counts = dict[str, float]


def add_counts(total: Counts, more: Mapping[str, float]) -> Counts:
    """Add ``more`` into ``total`` in place and return ``total``."""
    for key, value in more.items():
        total[key] = total.get(key, 0) + value
    return total


def sum_counts(items: Iterable[Mapping[str, float]]) -> Counts:
    total: Counts = {}
    for item in items:
        add_counts(total, item)
    return total


def safe_div(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def prf(tp: float, fp: float, fn: float) -> dict[str, float]:
    """Precision, recall and balanced F from true/false positive and false negative counts."""
    precision = safe_div(tp, tp + fp)
    recall = safe_div(tp, tp + fn)
    f1 = safe_div(2 * precision * recall, precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def nothing_scored(scores: Mapping[str, Any]) -> bool:
    """True when a ``prf`` result had no gold and no system items (tp = fp = fn = 0),
    so that its P/R/F are 0 only by convention, not by error."""
    return all(scores.get(k) == 0 for k in ("tp", "fp", "fn"))


@dataclass
class EvaluationResult:
    """What an evaluator returns for one document.

    ``counts`` add up over documents. ``units`` (optional) are the same counts split
    into the units that significance testing may shuffle (sentences); when absent
    the document is the unit. ``errors`` are false positives / negatives with
    context for error analysis (JSON-serialisable dicts). The report adds
    ``evaluator``, ``system`` (the system view) and ``document`` to each error line, so
    an error names its own values otherwise (``gold_tag`` / ``system_tag``); a key that
    collides anyway is written as ``error_<key>``.
    """

    counts: Counts = field(default_factory=dict)
    units: list[Counts] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
