"""``eval.pos.v1``: POS accuracy over aligned tokens and P/R/F of (span, tag).

Both tag sets in one run by default, as the CoNLL 2018 scorer reports them:
``xpos`` compares ``POS.PosValue`` (the fine, treebank tag) and ``upos``
``POS.coarseValue`` (UD's universal tag). Counts are kept apart under
``xpos/...`` and ``upos/...`` and so are the scores (``xpos/accuracy``,
``upos/f1``, ...). A tag set that no gold token carries in the whole run is
left out of the Markdown table (its scores stay in evaluation.json, all zero).
"""

from __future__ import annotations

from typing import Any, Literal

import cassis
from pydantic import Field, field_validator

from casflow.components.evaluators.adapters import tagged_tokens
from casflow.components.evaluators.base import (
    CasEvaluator,
    percent,
    prf_metric,
)
from casflow.components.metrics.pos import pos_counts, score_pos
from casflow.pipeline.component import EvaluatorConfig
from casflow.pipeline.counts import Counts, EvaluationResult
from casflow.pipeline.significance import Metric, RatioMetric
from casflow.typesystem import POS, TOKEN

TagSet = Literal["xpos", "upos"]
#: The POS feature each tag set compares.
FEATURES: dict[str, str] = {"xpos": "PosValue", "upos": "coarseValue"}


class PosEvaluatorConfig(EvaluatorConfig):
    tagsets: list[TagSet] = Field(
        default_factory=lambda: list[TagSet](("xpos", "upos")),
        description="Tag sets compared: xpos (POS.PosValue, the treebank tag) and upos "
        "(POS.coarseValue, the universal tag); each is scored on its own.",
    )
    tag_map: dict[str, str] | None = Field(
        None,
        description="Applied to gold and system XPOS alike (e.g. to merge tags); UPOS is "
        "compared as written.",
    )
    system_tag_map: dict[str, str] | None = Field(
        None,
        description="Applied to system XPOS first (translate a tag set into gold's).",
    )

    @field_validator("tagsets")
    @classmethod
    def _some_tagsets(cls, value: list[str]) -> list[str]:
        if not value or len(set(value)) != len(value):
            raise ValueError(f"give xpos, upos or both, each once; got {value}")
        return value


class PosEvaluator(CasEvaluator[PosEvaluatorConfig]):
    """Accuracy over tokens with the same span on both sides; P/R/F and per-tag scores."""

    name = "eval.pos.v1"
    description = (
        "POS tagging, XPOS and UPOS: accuracy over aligned tokens, P/R/F of (span, tag), per tag."
    )
    requires = (TOKEN, POS)

    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        result = EvaluationResult()
        for tagset in self.config.tagsets:
            feature = FEATURES[tagset]
            fine = tagset == "xpos"
            found = pos_counts(
                tagged_tokens(gold, feature),
                tagged_tokens(system, feature, keep_untagged=True),
                tag_map=self.config.tag_map if fine else None,
                system_tag_map=self.config.system_tag_map if fine else None,
                text=text,
                key=tagset,
            )
            result.counts.update(found.counts)
            result.errors.extend({"tagset": tagset, **error} for error in found.errors)
        return result

    def score(self, counts: Counts) -> dict[str, Any]:
        return {tagset: score_pos(counts, tagset) for tagset in self.config.tagsets}

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        columns: dict[str, float] = {}
        for tagset in self.config.tagsets:
            tags = scores[tagset]
            if not tags["gold"]:
                continue
            name = tagset.upper()
            columns[f"{name} accuracy"] = percent(tags["accuracy"])
            columns[f"{name} P"] = percent(tags["precision"])
            columns[f"{name} R"] = percent(tags["recall"])
            columns[f"{name} F"] = percent(tags["f1"])
        return columns

    def prf_points(self, scores: dict[str, Any]) -> dict[str, dict[str, float]]:
        return {
            tagset.upper(): {k: scores[tagset][k] for k in ("precision", "recall", "f1")}
            for tagset in self.config.tagsets
            if scores[tagset]["gold"]
        }

    def batch_metric(self, path: str) -> Metric | None:
        tagset, _, name = path.partition("/")
        if tagset not in FEATURES:
            return None
        if name == "accuracy":
            return RatioMetric((f"{tagset}/correct",), (f"{tagset}/aligned",))
        return prf_metric(tagset, name)
