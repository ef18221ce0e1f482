"""``eval.dependencies.v1``: LAS, UAS and LS, micro and macro (CoNLL 2018 scoring).

Words come from DKPro Dependency annotations (see ``cas_adapters``); the counts
are split per gold sentence (``units``), so significance tests can shuffle
sentences.
"""

from __future__ import annotations

from typing import Any, Literal

import cassis
from pydantic import Field

from casflow.components.evaluators.adapters import dependency_sentences
from casflow.components.evaluators.base import (
    CasEvaluator,
    percent,
)
from casflow.components.metrics.dependency import (
    INCLUDE_PUNCTUATION,
    PTB_PUNCTUATION_TAGS,
    ExcludeUpos,
    ExcludeXpos,
    PunctuationPolicy,
    dependency_counts,
    full_deprel,
    score_dependencies,
    universal_deprel,
)
from casflow.components.metrics.length_bands import PREFIX as LENGTH_PREFIX
from casflow.components.metrics.length_bands import score_length_bands, sentence_length_counts
from casflow.pipeline.component import BandScores, EvaluatorConfig, RunContext
from casflow.pipeline.counts import Counts, EvaluationResult, add_counts
from casflow.pipeline.significance import Metric, RatioMetric
from casflow.typesystem import DEPENDENCY, TOKEN

SUMMARY_METRICS = (("uas", "UAS"), ("las", "LAS"), ("ls", "LS"))


class DependencyEvaluatorConfig(EvaluatorConfig):
    punctuation: Literal["include", "exclude_upos", "exclude_xpos"] = Field(
        "include",
        description="include: score every word (CoNLL 2018); exclude_upos / exclude_xpos: "
        "leave out gold words whose coarse / fine POS is punctuation.",
    )
    punctuation_tags: list[str] | None = Field(
        None,
        description="Tags that count as punctuation (default: PUNCT for exclude_upos, "
        "the PTB tags `` '' , . : for exclude_xpos).",
    )
    labels: Literal["full", "universal"] = Field(
        "universal",
        description="universal: compare the label before ':' (CoNLL 2018); full: whole labels.",
    )


def punctuation_policy(config: DependencyEvaluatorConfig) -> PunctuationPolicy:
    tags = frozenset(config.punctuation_tags) if config.punctuation_tags is not None else None
    if config.punctuation == "exclude_upos":
        return ExcludeUpos(tags if tags is not None else frozenset({"PUNCT"}))
    if config.punctuation == "exclude_xpos":
        return ExcludeXpos(tags if tags is not None else PTB_PUNCTUATION_TAGS)
    return INCLUDE_PUNCTUATION


class DependencyEvaluator(CasEvaluator[DependencyEvaluatorConfig]):
    """Attachment scores of basic dependencies, words aligned by character span."""

    name = "eval.dependencies.v1"
    description = "Dependency parsing: UAS, LAS, LS (micro and per-sentence macro)."
    requires = (TOKEN, DEPENDENCY)
    data_score_keys = (LENGTH_PREFIX,)

    def __init__(
        self, config: DependencyEvaluatorConfig, context: RunContext | None = None
    ) -> None:
        super().__init__(config, context)
        self.punctuation = punctuation_policy(self.config)
        self.label_key = full_deprel if self.config.labels == "full" else universal_deprel

    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        gold_sentences = dependency_sentences(gold)
        result = dependency_counts(
            gold_sentences,
            dependency_sentences(system, keep_unattached=True),
            punctuation=self.punctuation,
            label_key=self.label_key,
            text=text,
        )
        # LAS by sentence length (in words, punctuation included), in each sentence's unit
        # and in the document's counts, so that both still add up to the same totals.
        for words, unit in zip(gold_sentences, result.units or [], strict=True):
            by_length = sentence_length_counts(
                len(words), unit["las/correct"], unit["las/gold"], unit["las/system"]
            )
            add_counts(unit, by_length)
            add_counts(result.counts, by_length)
        return result

    def score(self, counts: Counts) -> dict[str, Any]:
        scores: dict[str, Any] = score_dependencies(counts)
        if by_length := score_length_bands(counts):
            scores[LENGTH_PREFIX] = by_length
        return scores

    def prf_points(self, scores: dict[str, Any]) -> dict[str, dict[str, float]]:
        return {
            label: {k: scores[metric][k] for k in ("precision", "recall", "f1")}
            for metric, label in (("las", "LAS"), ("uas", "UAS"))
        }

    def band_scores(self, scores: dict[str, Any]) -> dict[str, BandScores]:
        by_length = scores.get(LENGTH_PREFIX)
        return {"sentence length (words)": by_length} if by_length else {}

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        columns = {label: percent(scores[metric]["f1"]) for metric, label in SUMMARY_METRICS}
        for metric, label in SUMMARY_METRICS:
            columns[f"{label} macro"] = percent(scores[metric]["macro"]["f1"])
        return columns

    def batch_metric(self, path: str) -> Metric | None:
        parts = path.split("/")
        if len(parts) == 2:
            metric, name = parts
            correct, gold, system, aligned = (
                f"{metric}/{k}" for k in ("correct", "gold", "system", "aligned")
            )
            ratios = {
                "f1": ((correct, correct), (gold, system)),
                "precision": ((correct,), (system,)),
                "recall": ((correct,), (gold,)),
                "aligned_accuracy": ((correct,), (aligned,)),
            }
            if name in ratios:
                return RatioMetric(*ratios[name])
        if len(parts) == 3 and parts[1] == "macro" and parts[2] in ("precision", "recall", "f1"):
            return RatioMetric(
                (f"{parts[0]}/macro/{parts[2]}_sum",), (f"{parts[0]}/macro/sentences",)
            )
        return None
