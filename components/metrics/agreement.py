"""Accuracy by agreement band: does a combination's trust score predict accuracy?

Each sentence brings its agreement value (from a ``SentenceAgreement``; None
when it has none) and its additive counts: units correct, in gold and in the
system output (attachments, brackets or mentions). Sentences are put into bands
by their value, and the counts are added up per band, so they add across
documents and the scores are computed once: F1 = 2 correct / (gold + system),
which is the attachment accuracy when gold and system have the same tokens.

Bands are given by their lower bounds, ascending: ``[0, 0.5, 0.75, 0.9, 1]``
makes ``[0, 0.5)``, ``[0.5, 0.75)``, ``[0.75, 0.9)``, ``[0.9, 1)`` and ``[1, ...)``
(the last band is "all members agree" for shares). A value below the first
bound goes into a band of its own, ``<b`` (with ``[0.5, 0.9]``: ``<0.5``), present
only when a sentence falls there: a first band named ``0.5-0.9`` must not hold a
sentence at 0.2, nor may keeping the sentences at ``>= 0.5`` keep it. Sentences
without a value go into ``none``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from casflow.pipeline.counts import Counts, safe_div

PREFIX = "agreement"
NO_BAND = "none"
KINDS = ("sentences", "correct", "gold", "system")


@dataclass(frozen=True)
class SentenceCounts:
    agreement: float | None
    correct: int
    gold: int
    system: int


def _number(value: float) -> str:
    return f"{value:g}"


def band_names(bounds: Sequence[float]) -> list[str]:
    """``0-0.5``, ``0.5-0.75``, ..., and ``>=1`` for the last bound."""
    if not bounds:
        raise ValueError("give at least one band bound")
    if any(b >= c for b, c in zip(bounds, bounds[1:], strict=False)):
        raise ValueError(f"band bounds must increase, got {list(bounds)}")
    names = [f"{_number(a)}-{_number(b)}" for a, b in zip(bounds, bounds[1:], strict=False)]
    return [*names, f">={_number(bounds[-1])}"]


def below_band(bounds: Sequence[float]) -> str:
    """The band of the values below the first bound: ``<0.5``."""
    return f"<{_number(bounds[0])}"


def band_of(value: float | None, bounds: Sequence[float]) -> str:
    if value is None:
        return NO_BAND
    index = bisect.bisect_right(bounds, value) - 1
    return band_names(bounds)[index] if index >= 0 else below_band(bounds)


def band_counts(sentences: Iterable[SentenceCounts], bounds: Sequence[float]) -> Counts:
    """Counts per band (every band present, zero when empty), plus ``all``."""
    counts: Counts = {
        f"{PREFIX}/{band}/{kind}": 0 for band in [*band_names(bounds), "all"] for kind in KINDS
    }
    for sentence in sentences:
        band = band_of(sentence.agreement, bounds)
        for key in (band, "all"):
            counts[f"{PREFIX}/{key}/sentences"] = counts.get(f"{PREFIX}/{key}/sentences", 0) + 1
            for kind in ("correct", "gold", "system"):
                name = f"{PREFIX}/{key}/{kind}"
                counts[name] = counts.get(name, 0) + getattr(sentence, kind)
    return counts


def score_bands(counts: Mapping[str, float], bounds: Sequence[float]) -> dict[str, Any]:
    """Per band: sentences, counts, precision, recall and F1 from summed counts.

    ``at_least`` answers "what if I keep only the sentences with agreement >= b":
    for each bound, the share of the sentences kept and their scores.
    """
    scores: dict[str, Any] = {}
    # the below band and "none" only when a sentence fell there (band_counts adds them then)
    below = [b for b in (below_band(bounds),) if f"{PREFIX}/{b}/sentences" in counts]
    absent = [NO_BAND] if f"{PREFIX}/{NO_BAND}/sentences" in counts else []
    bands = [*below, *band_names(bounds), *absent]
    for band in [*bands, "all"]:
        correct, gold, system, sentences = (
            counts.get(f"{PREFIX}/{band}/{kind}", 0)
            for kind in ("correct", "gold", "system", "sentences")
        )
        scores[band] = {
            "sentences": int(sentences),
            "correct": correct,
            "gold": gold,
            "system": system,
            "precision": safe_div(correct, system),
            "recall": safe_div(correct, gold),
            "f1": safe_div(2 * correct, gold + system),
        }
    names = band_names(bounds)
    everything = scores["all"]["sentences"]
    scores["at_least"] = {}
    for index, bound in enumerate(bounds):
        kept = [scores[name] for name in names[index:]]
        correct, gold, system = (
            sum(band[k] for band in kept) for k in ("correct", "gold", "system")
        )
        sentences = sum(band["sentences"] for band in kept)
        scores["at_least"][_number(bound)] = {
            "sentences": sentences,
            "share_of_sentences": safe_div(sentences, everything),
            "f1": safe_div(2 * correct, gold + system),
        }
    return scores
