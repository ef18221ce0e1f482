"""``eval.agreement.v1``: accuracy of a combination by how much its members agreed.

Reads the ``SentenceAgreement`` annotations a ``combine.*`` component wrote into
the system view (those of ``layer``), scores every gold sentence as the layer's
evaluator does, and adds the counts up per agreement band (see
:mod:`casflow.components.metrics.agreement`):

- ``dependencies``: attachments (LAS or UAS) per gold sentence, words aligned by
  character spans as ``eval.dependencies.v1`` aligns them;
- ``constituents``: PARSEVAL brackets (EVALB with COLLINS.prm) per gold tree,
  paired with the system tree over the same span; a tree EVALB skips counts its
  sentence with no brackets;
- ``mentions``: strict matches of ``type`` per sentence (a mention belongs to the
  agreement span it starts in).

A gold sentence takes the agreement of the annotation covering its start; one
without (the system split sentences elsewhere, or wrote no agreement) goes into
the ``none`` band. The table in ``evaluation.md`` has one row per system view
and, per band, the number of sentences and the score.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any, Literal

import cassis
from pydantic import Field, field_validator, model_validator

from casflow.components.combine.mentions import mention_layer
from casflow.components.evaluators.adapters import (
    constituent_trees,
    dependency_sentences,
    mentions,
    pair_by_span,
)
from casflow.components.evaluators.base import CasEvaluator, percent
from casflow.components.evaluators.mentions import resolve_type_name
from casflow.components.metrics.agreement import (
    NO_BAND,
    SentenceCounts,
    band_counts,
    band_names,
    below_band,
    score_bands,
)
from casflow.components.metrics.dependency import (
    dependency_counts,
    full_deprel,
    universal_deprel,
)
from casflow.components.metrics.matching import STRICT, match_mentions, same_label
from casflow.components.metrics.parseval import COLLINS_PARAMS, evaluate_parseval
from casflow.pipeline.component import BandScores, EvaluatorConfig, RunContext
from casflow.pipeline.counts import Counts, EvaluationResult
from casflow.typesystem import CONSTITUENT, DEPENDENCY, NAMED_ENTITY, SENTENCE_AGREEMENT, TOKEN

Span = tuple[int, int]
Measure = Literal["majority_share", "support", "members_agreeing"]
FEATURES: dict[str, str] = {
    "majority_share": "majorityShare",
    "support": "support",
    "members_agreeing": "membersAgreeing",
}


class AgreementEvaluatorConfig(EvaluatorConfig):
    layer: Literal["dependencies", "constituents", "mentions"] = Field(
        "dependencies",
        description="Which combination's agreement to read (the SentenceAgreement layer) "
        "and what to score.",
    )
    measure: Measure = Field(
        "majority_share",
        description="The agreement value banded: majority_share (share of the members' "
        "units with a majority), support (mean vote share behind the result's units) or "
        "members_agreeing (members whose output equals the result).",
    )
    bands: list[float] = Field(
        default_factory=lambda: [0.0, 0.5, 0.75, 0.9, 1.0],
        description="Lower bounds of the bands, ascending (for members_agreeing: member "
        "counts, e.g. [0, 1, 2, 3]).",
    )
    metric: Literal["las", "uas"] = Field(
        "las", description="dependencies: attachment score per band."
    )
    labels: Literal["full", "universal"] = Field(
        "universal",
        description="dependencies: compare labels before ':' (universal) or whole (full).",
    )
    type: str = Field(NAMED_ENTITY, description="mentions: mention type, full or short name.")

    @field_validator("bands")
    @classmethod
    def _valid_bands(cls, value: list[float]) -> list[float]:
        band_names(value)  # raises on an empty or unordered list
        return value

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        return resolve_type_name(value)

    @model_validator(mode="after")
    def _member_counts(self) -> AgreementEvaluatorConfig:
        # members_agreeing is a count: the share bounds (the default) would put 1 and 2
        # agreeing members into ">=1" and 0 into "0-0.5", bands no one means
        if self.measure == "members_agreeing" and not all(
            float(b).is_integer() for b in self.bands
        ):
            raise ValueError(
                f"measure members_agreeing counts members, but bands {self.bands} are not "
                "whole numbers; give member counts as bands, e.g. bands: [0, 1, 2, 3]"
            )
        return self


class AgreementEvaluator(CasEvaluator[AgreementEvaluatorConfig]):
    """Accuracy per agreement band of a combine.* output (is the trust score useful?)."""

    name = "eval.agreement.v1"
    description = (
        "Accuracy of a system combination by agreement band (SentenceAgreement): "
        "sentences and score per band."
    )

    @classmethod
    def requirements(
        cls, config: AgreementEvaluatorConfig
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        # What gold and system views both need (SentenceAgreement: see views_read).
        layer = getattr(config, "layer", "dependencies")
        layer_types = {
            "dependencies": (TOKEN, DEPENDENCY),
            "constituents": (TOKEN, CONSTITUENT),
            "mentions": (getattr(config, "type", NAMED_ENTITY),),
        }
        return layer_types[layer], ()

    @classmethod
    def views_read(cls, config: AgreementEvaluatorConfig) -> dict[str, tuple[str, ...]]:
        # The combination's SentenceAgreements are in the system views only.
        views = super().views_read(config)
        for name in config.system_views:
            views[name] = (*views[name], SENTENCE_AGREEMENT)
        return views

    def __init__(self, config: AgreementEvaluatorConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.feature = FEATURES[self.config.measure]
        # Mention combiners of several types may share a view; each has its own layer.
        self.layer_name = (
            mention_layer(self.config.type)
            if self.config.layer == "mentions"
            else self.config.layer
        )

    def _agreements(self, system: cassis.Cas) -> tuple[list[int], list[Any]]:
        found = sorted(
            (a for a in system.select(SENTENCE_AGREEMENT) if a.get("layer") == self.layer_name),
            key=lambda a: (a.begin, a.end),
        )
        return [a.begin for a in found], found

    def _value_at(self, position: int, begins: Sequence[int], found: Sequence[Any]) -> float | None:
        index = bisect.bisect_right(begins, position) - 1
        if index < 0 or position >= found[index].end:
            return None
        value = found[index].get(self.feature)
        return None if value is None else float(value)

    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        begins, found = self._agreements(system)
        if self.config.layer == "dependencies":
            sentences = self._dependencies(gold, system, text, begins, found)
        elif self.config.layer == "constituents":
            sentences = self._constituents(gold, system, text, begins, found)
        else:
            sentences = self._mentions(gold, system, begins, found)
        return EvaluationResult(counts=band_counts(sentences, self.config.bands))

    def _dependencies(
        self, gold: cassis.Cas, system: cassis.Cas, text: str, begins: list[int], found: list[Any]
    ) -> list[SentenceCounts]:
        gold_sentences = dependency_sentences(gold)
        result = dependency_counts(
            gold_sentences,
            dependency_sentences(system, keep_unattached=True),
            label_key=full_deprel if self.config.labels == "full" else universal_deprel,
        )
        metric = self.config.metric
        return [
            SentenceCounts(
                self._value_at(words[0].begin, begins, found),
                int(unit[f"{metric}/correct"]),
                int(unit[f"{metric}/gold"]),
                int(unit[f"{metric}/system"]),
            )
            for words, unit in zip(gold_sentences, result.units or [], strict=True)
        ]

    def _constituents(
        self, gold: cassis.Cas, system: cassis.Cas, text: str, begins: list[int], found: list[Any]
    ) -> list[SentenceCounts]:
        pairs, _ = pair_by_span(constituent_trees(gold), constituent_trees(system), text)
        out = []
        for span, gold_tree, test_tree in pairs:
            result = evaluate_parseval(gold_tree, test_tree, COLLINS_PARAMS)
            out.append(
                SentenceCounts(
                    self._value_at(span[0], begins, found), result.matched, result.gold, result.test
                )
            )
        return out

    def _mentions(
        self, gold: cassis.Cas, system: cassis.Cas, begins: list[int], found: list[Any]
    ) -> list[SentenceCounts]:
        groups: dict[int, tuple[list[Any], list[Any]]] = {}
        for side, items in enumerate(
            (mentions(gold, self.config.type), mentions(system, self.config.type))
        ):
            for mention in items:
                index = bisect.bisect_right(begins, mention.begin) - 1
                if index < 0 or mention.begin >= found[index].end:
                    index = -1  # outside every agreement span
                groups.setdefault(index, ([], []))[side].append(mention)
        out = []
        for index in range(-1, len(found)):
            gold_mentions, system_mentions = groups.get(index, ([], []))
            if index >= 0:
                value = found[index].get(self.feature)
                agreement = None if value is None else float(value)
            elif not gold_mentions and not system_mentions:
                continue
            else:
                agreement = None
            matched = len(match_mentions(gold_mentions, system_mentions, STRICT, same_label).pairs)
            out.append(SentenceCounts(agreement, matched, len(gold_mentions), len(system_mentions)))
        return out

    def score(self, counts: Counts) -> dict[str, Any]:
        return score_bands(counts, self.config.bands)

    def prf_points(self, scores: dict[str, Any]) -> dict[str, dict[str, float]]:
        everything = scores["all"]
        if not (everything["gold"] or everything["system"]):
            return {}  # nothing to score: no F (see Evaluator.prf_points)
        return {"all": {k: everything[k] for k in ("precision", "recall", "f1")}}

    def band_scores(self, scores: dict[str, Any]) -> dict[str, BandScores]:
        # the band below a first bound above 0 always, first, so that it keeps its place
        # beside systems that have sentences there (the report orders bands as met);
        # shares and member counts are never below 0, so with 0 it is only shown if met
        below = below_band(self.config.bands)
        bands: dict[str, dict[str, float]] = {}
        if self.config.bands[0] > 0 or scores.get(below, {}).get("sentences"):
            bands[below] = {"sentences": 0, "f1": 0.0}
        bands.update(
            (band, {"sentences": values["sentences"], "f1": values["f1"]})
            for band, values in scores.items()
            if band not in ("at_least", "all") and (band != NO_BAND or values["sentences"])
        )
        return {f"agreement ({self.config.measure})": bands}

    def column_direction(self, column: str) -> int:
        return 0 if column.endswith(": sentences") else 1

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        metric = {"dependencies": self.config.metric.upper(), "constituents": "F"}.get(
            self.config.layer, "strict F"
        )
        columns: dict[str, float] = {}
        for band, values in scores.items():
            if band == "at_least" or (
                band in (NO_BAND, below_band(self.config.bands)) and not values["sentences"]
            ):
                continue
            name = "all" if band == "all" else f"{self.config.measure} {band}"
            columns[f"{name}: sentences"] = int(values["sentences"])
            # A band with nothing on either side has no F: its 0 was shown as a score.
            if values["gold"] or values["system"]:
                columns[f"{name}: {metric}"] = percent(values["f1"])
        return columns
