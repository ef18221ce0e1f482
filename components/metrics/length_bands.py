"""Parse scores by sentence length: additive counts per length band.

Parsers get worse as sentences grow, and readers of a comparison want to see
how fast. Each gold sentence brings its length in words and its counts of
units correct, in gold and in the system output (brackets or attachments);
the counts are added up per band, across documents, and scored once:
F1 = 2 correct / (gold + system), as EVALB and the CoNLL scorer compute F.

Bands are fixed (``1-10``, ``11-20``, ..., ``>50`` words) so that runs, systems
and evaluators can be compared band by band.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from casflow.pipeline.counts import Counts, safe_div

PREFIX = "by_length"
KINDS = ("sentences", "correct", "gold", "system")
#: Upper bounds (inclusive) of the bands; longer sentences go into the last band.
UPPER_BOUNDS = (10, 20, 30, 40, 50)


def band_names() -> list[str]:
    lower = [1, *(bound + 1 for bound in UPPER_BOUNDS[:-1])]
    names = [f"{low}-{high}" for low, high in zip(lower, UPPER_BOUNDS, strict=True)]
    return [*names, f">{UPPER_BOUNDS[-1]}"]


def band_of(length: int) -> str:
    for name, bound in zip(band_names(), UPPER_BOUNDS, strict=False):
        if length <= bound:
            return name
    return band_names()[-1]


def sentence_length_counts(length: int, correct: float, gold: float, system: float) -> Counts:
    """One sentence's counts under its band (only that band: the keys of the bands a
    document's sentences fall in are what its counts hold, so they stay small)."""
    band = f"{PREFIX}/{band_of(length)}"
    return {
        f"{band}/sentences": 1,
        f"{band}/correct": correct,
        f"{band}/gold": gold,
        f"{band}/system": system,
    }


def score_length_bands(counts: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """Per band: sentences, precision, recall and F1 from summed counts; {} without counts."""
    if not any(key.startswith(f"{PREFIX}/") for key in counts):
        return {}
    scores: dict[str, dict[str, Any]] = {}
    for band in band_names():
        sentences, correct, gold, system = (
            counts.get(f"{PREFIX}/{band}/{kind}", 0) for kind in KINDS
        )
        scores[band] = {
            "sentences": int(sentences),
            "precision": safe_div(correct, system),
            "recall": safe_div(correct, gold),
            "f1": safe_div(2 * correct, gold + system),
        }
    return scores
