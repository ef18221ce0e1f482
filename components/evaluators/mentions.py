"""``eval.mentions.v1``: mention (NER / concept) P/R/F under several span criteria.

The mentions are the annotations of ``type`` and its subtypes; a mention's
class is its ``value`` (the short type name when empty). See ``mentions`` for
the counting rules and ``matching`` for the criteria.

``alt_eval: true`` adds the counts of BioCreative II's ``alt_eval.perl`` under
the criterion ``alt_eval``; like the script, they ignore labels, and every
``Alternative`` of the gold view accepts an equal system mention, including
alternatives that belong to no gold mention.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import cassis
from pydantic import Field, field_validator

from casflow.components.evaluators.adapters import mentions, spans
from casflow.components.evaluators.base import (
    CasEvaluator,
    percent,
    prf_metric,
    span_error_examples,
)
from casflow.components.metrics.matching import (
    ACCEPTED_ALTERNATIVES,
    LEFT_BOUNDARY,
    OVERLAP,
    RIGHT_BOUNDARY,
    STRICT,
    MatchCriterion,
    Mention,
)
from casflow.components.metrics.mentions import (
    ALT_EVAL_KEY,
    CONTEXT_CHARS,
    alt_eval_counts,
    mention_counts,
    score_mentions,
)
from casflow.pipeline.component import ComponentConfig, ErrorExample, EvaluatorConfig, RunContext
from casflow.pipeline.counts import Counts, EvaluationResult, nothing_scored
from casflow.pipeline.significance import Metric
from casflow.typesystem import ALTERNATIVE, NAMED_ENTITY, load_typesystem, short_name

CRITERIA: dict[str, MatchCriterion] = {
    c.name: c for c in (STRICT, LEFT_BOUNDARY, RIGHT_BOUNDARY, OVERLAP, ACCEPTED_ALTERNATIVES)
}
CriterionName = Literal["strict", "left", "right", "overlap", "alternatives"]
# Criteria whose precision and recall make the table (the others show F only).
FULL_COLUMNS = ("strict", "alternatives", ALT_EVAL_KEY)


def resolve_type_name(name: str) -> str:
    """Full type name for a full or short (``GeneMention``) name; ValueError if unknown."""
    typesystem = load_typesystem()
    if typesystem.contains_type(name, match_exactly=True):
        return name
    matches = sorted(t.name for t in typesystem.get_types() if short_name(t.name) == name)
    if len(matches) == 1:
        return matches[0]
    annotation_types = sorted(short_name(t.name) for t in typesystem.get_types())
    if matches:
        raise ValueError(f"type {name!r} is ambiguous ({', '.join(matches)}); give the full name")
    raise ValueError(
        f"unknown annotation type {name!r}; known types: {', '.join(annotation_types)}"
    )


class MentionEvaluatorConfig(EvaluatorConfig):
    type: str = Field(
        NAMED_ENTITY,
        description="Mention type, full or short name (NamedEntity, GeneMention, "
        "AnatomyMention, ConceptMention); subtypes are included.",
    )
    criteria: list[CriterionName] = Field(
        default_factory=lambda: list[CriterionName](("strict", "left", "right", "overlap")),
        description="Span criteria; 'alternatives' is BioCreative's accepted-alternatives rule.",
    )
    class_mapping: dict[str, list[str]] | None = Field(
        None, description="System label -> the gold classes it may match."
    )
    one_class: bool = Field(False, description="Ignore labels (mention detection only).")
    classes: list[str] | None = Field(
        None,
        description="Evaluate only these gold classes (system mentions whose label or "
        "mapped class is one of them); none: all.",
    )
    alt_eval: bool = Field(
        False, description="Also count as BioCreative II alt_eval.perl (criterion 'alt_eval')."
    )
    context_chars: int = Field(
        CONTEXT_CHARS, ge=0, description="Characters of context around each FP/FN in errors."
    )

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        return resolve_type_name(value)

    @field_validator("criteria")
    @classmethod
    def _unique_criteria(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("give at least one criterion")
        if len(set(value)) != len(value):
            raise ValueError(f"criteria must not repeat, got {value}")
        return value


class MentionEvaluator(CasEvaluator[MentionEvaluatorConfig]):
    """Mentions of one type: P/R/F per criterion, micro, macro and per class."""

    name = "eval.mentions.v1"
    description = "Mention P/R/F (strict, left, right, overlap, BioCreative alternatives)."
    requires = (NAMED_ENTITY,)

    def __init__(self, config: MentionEvaluatorConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.criteria = [CRITERIA[name] for name in self.config.criteria]

    @classmethod
    def requirements(cls, config: ComponentConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        type_name = getattr(config, "type", NAMED_ENTITY)
        return (type_name,), ()

    def _restrict(
        self, gold: list[Mention], system: list[Mention]
    ) -> tuple[list[Mention], list[Mention]]:
        if self.config.classes is None:
            return gold, system
        wanted = set(self.config.classes)
        mapping = self.config.class_mapping or {}
        return (
            [m for m in gold if m.label in wanted],
            [m for m in system if m.label in wanted or wanted & set(mapping.get(m.label, ()))],
        )

    def compare(self, gold: cassis.Cas, system: cassis.Cas, text: str) -> EvaluationResult:
        gold_mentions, system_mentions = self._restrict(
            mentions(gold, self.config.type), mentions(system, self.config.type)
        )
        result = mention_counts(
            gold_mentions,
            system_mentions,
            criteria=self.criteria,
            class_mapping=self.config.class_mapping,
            one_class=self.config.one_class,
            text=text,
            context_chars=self.config.context_chars,
        )
        if self.config.alt_eval:
            extra = alt_eval_counts(
                gold_mentions,
                system_mentions,
                text=text,
                context_chars=self.config.context_chars,
                accepted=spans(gold, ALTERNATIVE),
            )
            result.counts.update(extra.counts)
            result.errors.extend(extra.errors)
        return result

    def score(self, counts: Counts) -> dict[str, Any]:
        return score_mentions(counts)

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        columns: dict[str, float] = {}
        names = [*self.config.criteria, *([ALT_EVAL_KEY] if self.config.alt_eval else [])]
        for name in names:
            micro = scores.get(name, {}).get("micro")
            # No mention on either side: P, R and F are undefined, not 0 (nor the best).
            if micro is None or nothing_scored(micro):
                continue
            if name in FULL_COLUMNS:
                columns[f"{name} P"] = percent(micro["precision"])
                columns[f"{name} R"] = percent(micro["recall"])
            columns[f"{name} F"] = percent(micro["f1"])
        first = scores.get(names[0], {}).get("macro", {})
        if first.get("classes", 0) > 1:
            columns[f"{names[0]} macro F"] = percent(first["f1"])
        return columns

    def prf_points(self, scores: dict[str, Any]) -> dict[str, dict[str, float]]:
        names = [*self.config.criteria, *([ALT_EVAL_KEY] if self.config.alt_eval else [])]
        # A document with no mention on either side has no F (see Evaluator.prf_points).
        return {
            name: {k: scores[name]["micro"][k] for k in ("precision", "recall", "f1")}
            for name in names
            if name in scores and not nothing_scored(scores[name]["micro"])
        }

    def error_examples(self, errors: Sequence[dict[str, Any]]) -> list[ErrorExample]:
        # The headline criterion's errors: under the looser ones the same mentions recur.
        first = self.config.criteria[0]
        return span_error_examples(e for e in errors if e.get("criterion") == first)

    def batch_metric(self, path: str) -> Metric | None:
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "micro":
            return prf_metric(f"{parts[0]}/micro", parts[2])
        if len(parts) == 4 and parts[1] == "class":
            return prf_metric(f"{parts[0]}/class/{parts[2]}", parts[3])
        return None
