"""``eval.pos.v1``: POS accuracy over aligned tokens and P/R/F of (span, tag)."""

from __future__ import annotations

from typing import Any, Literal

import cassis
from pydantic import Field

from casflow.components.evaluators.adapters import tagged_tokens
from casflow.components.evaluators.base import (
    CasEvaluator,
    CasEvaluatorConfig,
    percent,
    prf_metric,
)
from casflow.components.metrics.pos import POS_KEY, pos_counts, score_pos
from casflow.pipeline.counts import Counts, EvaluationResult
from casflow.pipeline.significance import Metric, RatioMetric
from casflow.typesystem import POS, TOKEN


class PosEvaluatorConfig(CasEvaluatorConfig):
    feature: Literal["PosValue", "coarseValue"] = Field(
        "PosValue", description="POS feature compared: the fine tag or the coarse (UPOS) tag."
    )
    tag_map: dict[str, str] | None = Field(
        None, description="Applied to gold and system tags alike (e.g. to merge tags)."
    )
    system_tag_map: dict[str, str] | None = Field(
        None, description="Applied to system tags first (translate a tag set into gold's)."
    )


class PosEvaluator(CasEvaluator):
    """Accuracy over tokens with the same span on both sides; P/R/F and per-tag scores."""

    name = "eval.pos.v1"
    description = "POS tagging: accuracy over aligned tokens, P/R/F of (span, tag), per tag."
    Config = PosEvaluatorConfig
    requires = (TOKEN, POS)

    config: PosEvaluatorConfig

    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        feature = self.config.feature
        return pos_counts(
            tagged_tokens(gold, feature),
            tagged_tokens(system, feature),
            tag_map=self.config.tag_map,
            system_tag_map=self.config.system_tag_map,
            text=text,
        )

    def score(self, counts: Counts) -> dict[str, Any]:
        return score_pos(counts)

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        return {
            "accuracy": percent(scores["accuracy"]),
            "P": percent(scores["precision"]),
            "R": percent(scores["recall"]),
            "F": percent(scores["f1"]),
        }

    def batch_metric(self, path: str) -> Metric | None:
        if path == "accuracy":
            return RatioMetric((f"{POS_KEY}/correct",), (f"{POS_KEY}/aligned",))
        return prf_metric(POS_KEY, path)
