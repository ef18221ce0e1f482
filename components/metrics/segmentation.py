"""Sentence and token segmentation: P/R/F of exact character spans.

Sentences follow the protocol of the CRAFT evaluation: leading and trailing
whitespace is trimmed from every span using the document text and sentences that
become empty are dropped, so a splitter is not penalised for where it puts the
spaces between sentences. A sentence is correct when its trimmed span equals a gold
one. Tokens are compared as given (exact begin and end). Spans are multisets: a span
listed twice counts twice.

Counts (additive): ``sentence/tp``, ``sentence/fp``, ``sentence/fn`` and the same for
``token``; ``score_segmentation`` turns summed counts into P/R/F.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from casflow.pipeline.counts import EvaluationResult, prf

Span = tuple[int, int]
SENTENCE_KEY = "sentence"
TOKEN_KEY = "token"


def trim_span(text: str, begin: int, end: int) -> Span:
    """Move ``begin`` right and ``end`` left past whitespace (all-whitespace spans become empty)."""
    if not 0 <= begin <= end <= len(text):
        raise ValueError(
            f"span ({begin}, {end}) is outside the document text of length {len(text)}; "
            "check that the annotations belong to this text"
        )
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    return begin, end


def trimmed_sentences(text: str, spans: Iterable[Span]) -> list[Span]:
    """Trimmed, non-empty sentence spans."""
    trimmed = (trim_span(text, begin, end) for begin, end in spans)
    return [span for span in trimmed if span[1] > span[0]]


#: Characters of text kept on each side of a segmentation error.
CONTEXT_CHARS = 30


def _span_counts(
    key: str, gold: Iterable[Span], system: Iterable[Span], text: str | None
) -> EvaluationResult:
    gold_bag = Counter(tuple(span) for span in gold)
    system_bag = Counter(tuple(span) for span in system)
    common = gold_bag & system_bag
    tp = sum(common.values())
    result = EvaluationResult(
        counts={
            f"{key}/tp": tp,
            f"{key}/fp": sum(system_bag.values()) - tp,
            f"{key}/fn": sum(gold_bag.values()) - tp,
        }
    )
    for kind, bag in (("FP", system_bag - gold_bag), ("FN", gold_bag - system_bag)):
        for (begin, end), times in sorted(bag.items()):
            error: dict[str, Any] = {"type": kind, "unit": key, "begin": begin, "end": end}
            if text is not None:
                error["text"] = text[begin:end]
                # The same form as mention errors: what surrounds a token decides whether
                # splitting it was right, and the HTML report shows it.
                left = text[max(0, begin - CONTEXT_CHARS) : begin]
                right = text[end : end + CONTEXT_CHARS]
                error["context"] = f"{left}[[{text[begin:end]}]]{right}".replace("\n", " ")
            result.errors.extend(dict(error) for _ in range(times))
    return result


def sentence_counts(
    text: str, gold: Sequence[Span], system: Sequence[Span], key: str = SENTENCE_KEY
) -> EvaluationResult:
    """Sentence P/R/F counts after trimming whitespace and dropping empty sentences."""
    return _span_counts(key, trimmed_sentences(text, gold), trimmed_sentences(text, system), text)


def token_counts(
    text: str | None, gold: Sequence[Span], system: Sequence[Span], key: str = TOKEN_KEY
) -> EvaluationResult:
    """Token P/R/F counts of exact spans (``text`` only fills error texts)."""
    return _span_counts(key, gold, system, text)


def segmentation_counts(
    text: str,
    gold_sentences: Sequence[Span],
    system_sentences: Sequence[Span],
    gold_tokens: Sequence[Span],
    system_tokens: Sequence[Span],
) -> EvaluationResult:
    """Sentence and token counts of one document together."""
    sentences = sentence_counts(text, gold_sentences, system_sentences)
    tokens = token_counts(text, gold_tokens, system_tokens)
    return EvaluationResult(
        counts={**sentences.counts, **tokens.counts}, errors=sentences.errors + tokens.errors
    )


def score_segmentation(
    counts: Mapping[str, float], keys: Sequence[str] = (SENTENCE_KEY, TOKEN_KEY)
) -> dict[str, dict[str, float]]:
    """``{key: prf}`` for every key with counts (``prf``: precision, recall, f1, tp, fp, fn)."""
    return {
        key: prf(counts.get(f"{key}/tp", 0), counts.get(f"{key}/fp", 0), counts.get(f"{key}/fn", 0))
        for key in keys
        if any(f"{key}/{kind}" in counts for kind in ("tp", "fp", "fn"))
    }
