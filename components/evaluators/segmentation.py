"""``eval.sentences.v1`` and ``eval.tokens.v1``: span P/R/F of segmentation.

Sentences follow the CRAFT protocol (whitespace trimmed, empty sentences
dropped; see ``segmentation``); tokens are compared by exact span.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import cassis

from casflow.components.evaluators.adapters import sentence_spans, token_spans
from casflow.components.evaluators.base import (
    CasEvaluator,
    percent,
    prf_metric,
    span_error_examples,
)
from casflow.components.metrics.segmentation import (
    SENTENCE_KEY,
    TOKEN_KEY,
    score_segmentation,
    sentence_counts,
    token_counts,
)
from casflow.pipeline.component import ErrorExample, EvaluatorConfig
from casflow.pipeline.counts import Counts, EvaluationResult, nothing_scored, prf
from casflow.pipeline.significance import Metric
from casflow.typesystem import SENTENCE, TOKEN


class _SpanEvaluator(CasEvaluator[EvaluatorConfig]):
    key: ClassVar[str]

    def score(self, counts: Counts) -> dict[str, Any]:
        """P/R/F with tp, fp, fn (flat: metric paths are ``f1``, ``precision``, ...)."""
        return score_segmentation(counts, keys=(self.key,)).get(self.key) or prf(0, 0, 0)

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        if nothing_scored(scores):  # no span on either side: no P, R or F to show
            return {}
        return {
            "P": percent(scores["precision"]),
            "R": percent(scores["recall"]),
            "F": percent(scores["f1"]),
        }

    def batch_metric(self, path: str) -> Metric | None:
        return prf_metric(self.key, path)

    def error_examples(self, errors: Sequence[dict[str, Any]]) -> list[ErrorExample]:
        return span_error_examples(e for e in errors if e.get("unit") == self.key)


class SentenceEvaluator(_SpanEvaluator):
    """Sentence boundaries: P/R/F of whitespace-trimmed sentence spans (CRAFT protocol)."""

    name = "eval.sentences.v1"
    description = "Sentence segmentation P/R/F of trimmed sentence spans (CRAFT protocol)."
    requires = (SENTENCE,)
    key = SENTENCE_KEY

    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        return sentence_counts(text, sentence_spans(gold), sentence_spans(system))


class TokenEvaluator(_SpanEvaluator):
    """Tokens: P/R/F of exact token spans."""

    name = "eval.tokens.v1"
    description = "Tokenisation P/R/F of exact token spans."
    requires = (TOKEN,)
    key = TOKEN_KEY

    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        return token_counts(text, token_spans(gold), token_spans(system))
