"""``combine.mentions.v1``: vote the mentions of several views, per class.

Over :mod:`casflow.components.combine.mention_vote`. The mentions are the
annotations of ``type`` and its subtypes in each member view (GeneMention,
AnatomyMention, NamedEntity, ...); a mention's class is its ``value`` (the short
type name when empty), as ``eval.mentions.v1`` reads them. A kept mention is
written with the type and ``identifier`` of the first member (in the given
order) that proposed it, its class in ``value`` and, where the type has
``confidence``, the share of the vote behind it. Discontinuous fragments and
accepted alternatives are not combined.

``document_postprocess`` runs document-level steps of the CRF tagger over the
voted mentions (``propagate_abbreviations``: a short form defined in the text as
"long form (SF)" is tagged wherever it stands, with the class of its voted long
form), so a vote of several taggers ends as casflow's own anatomy tagger does.
A mention such a step adds takes the type of a voted mention of its class (else
``type``), no identifier, and the share of the mention it came from; the
agreement per sentence is the members' agreement with the vote before the steps.

A member without mentions votes against every mention (it is not left out as the
syntax combiners leave out a member that produced nothing): a tagger that found
nothing in a document cannot be told from one that was not run on it, as both
leave an empty view.

Sentences (for ``SentenceAgreement``, layer ``mentions:<type>``, e.g.
``mentions:GeneMention``, so combiners of several types can share a view) are the view's own,
else the first member's that has some, else the whole text; a mention belongs to
the sentence it starts in. The agreement weighs members as the vote does (under
``weighted``, each by its weight for the mention's class).
"""

from __future__ import annotations

from typing import Any

import cassis
from pydantic import Field, field_validator, model_validator

from casflow.components.combine.base import (
    CombineConfig,
    CombineInputError,
    Combiner,
    group_by_sentence,
)
from casflow.components.combine.mention_vote import (
    MemberMentions,
    Method,
    Unit,
    VotedMention,
    vote_mentions,
)
from casflow.components.combine.voting import Weight, agreement
from casflow.components.crfsuite.postprocess import DOCUMENT_POSTPROCESSORS, known_document_steps
from casflow.components.evaluators.mentions import resolve_type_name
from casflow.typesystem import NAMED_ENTITY, SENTENCE_AGREEMENT, load_typesystem, short_name

DEFAULT_THRESHOLD = 0.5


class CombineMentionsConfig(CombineConfig):
    type: str = Field(
        NAMED_ENTITY,
        description="Mention type, full or short name (GeneMention, AnatomyMention, "
        "NamedEntity, ConceptMention); subtypes are included.",
    )
    method: Method = Field(
        "majority",
        description="majority: more than half of the members; weighted: more than "
        "'threshold' of the member weight for the class; union: any member; "
        "intersection: every member.",
    )
    threshold: float = Field(
        DEFAULT_THRESHOLD,
        ge=0,
        lt=1,
        description="Share of the class's member weight 'weighted' needs.",
    )
    document_postprocess: list[str] = Field(
        default_factory=list,
        description="Document-level steps over the voted mentions, in order: "
        + ", ".join(sorted(DOCUMENT_POSTPROCESSORS))
        + " (as ner.crf.v1 models run them after their members' vote).",
    )

    @field_validator("document_postprocess")
    @classmethod
    def _known_steps(cls, value: list[str]) -> list[str]:
        return known_document_steps(value)

    @model_validator(mode="after")
    def _weights_need_weighted(self) -> CombineMentionsConfig:
        # majority, union and intersection count members: weights and a threshold
        # given with them would be ignored without a word. Compared with the defaults,
        # not with what was set: the resolved workflow (defaults written out) is
        # validated again in every worker.
        if self.method == "weighted":
            return self
        given = [f"threshold: {self.threshold:g}"] if self.threshold != DEFAULT_THRESHOLD else []
        for member in self.members:
            if member.weight != 1.0:
                given.append(f"{member.view}: weight {member.weight:g}")
            if member.label_weights:
                given.append(f"{member.view}: label_weights")
        if given:
            raise ValueError(
                f"method {self.method} counts members and ignores weights and threshold, "
                f"but these are set ({', '.join(given)}); use method: weighted, or remove them"
            )
        return self

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        name = resolve_type_name(value)
        typesystem = load_typesystem()
        # an unknown name is left for the workflow validator to report
        if (
            typesystem.contains_type(name)
            and typesystem.get_type(name).get_feature("value") is None
        ):
            # the class is read from 'value'; without it every document would fail
            raise ValueError(
                f"type {value!r} has no 'value' feature to hold a mention's class; use "
                "NamedEntity or one of its subtypes (GeneMention, AnatomyMention, ...)"
            )
        return name


class CombineMentions(Combiner[CombineMentionsConfig]):
    name = "combine.mentions.v1"
    description = (
        "Votes the mentions of several views per class: majority, weighted, union or intersection."
    )
    layer = "mentions"

    def layer_name(self) -> str:
        return mention_layer(self.config.type)

    @classmethod
    def member_requires(cls, config: CombineMentionsConfig) -> tuple[str, ...]:
        return (config.type,)

    @classmethod
    def requirements(cls, config: CombineMentionsConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        produces = [config.type]
        if config.agreement:
            produces.append(SENTENCE_AGREEMENT)
        return (), tuple(produces)

    def process(self, view: cassis.Cas) -> None:
        doc = self.document(view)
        members = self.members(view)
        # unit -> (type, identifier) of its first member
        origin: dict[Unit, tuple[Any, str | None]] = {}
        proposals: list[set[Unit]] = []
        for member in members:
            units: set[Unit] = set()
            for annotation in member.view.select(self.config.type):
                label = member.config.label(
                    getattr(annotation, "value", None) or short_name(annotation.type.name)
                )
                unit = (annotation.begin, annotation.end, label)
                units.add(unit)
                origin.setdefault(unit, (annotation.type, getattr(annotation, "identifier", None)))
            proposals.append(units)
        if view.select(self.config.type):
            raise CombineInputError(
                f"document {doc}: the view already holds {short_name(self.config.type)} "
                "annotations; write the combination into a view of its own"
            )
        voters = [
            MemberMentions(units, m.config.weight, m.config.label_weights)
            for units, m in zip(proposals, members, strict=True)
        ]
        kept = vote_mentions(voters, self.config.method, self.config.threshold)
        out = [self._annotation(mention, origin) for mention in kept]
        if self.config.document_postprocess:
            out.extend(self._document_steps(view, kept, origin))
        if self.config.agreement:
            out.extend(self._agreement(view, members, voters, kept))
        view.add_all(out)

    @staticmethod
    def _annotation(mention: VotedMention, origin: dict[Unit, tuple[Any, str | None]]) -> Any:
        type_, identifier = origin[(mention.begin, mention.end, mention.label)]
        values: dict[str, Any] = {"value": mention.label}
        if identifier is not None:
            values["identifier"] = identifier
        if type_.get_feature("confidence") is not None:
            values["confidence"] = mention.share
        return type_(begin=mention.begin, end=mention.end, **values)

    def _document_steps(
        self, view: cassis.Cas, kept: list[VotedMention], origin: dict[Unit, tuple[Any, str | None]]
    ) -> list[Any]:
        """The annotations the document steps add to the voted mentions."""
        text = view.sofa_string or ""
        mentions = [(m.begin, m.end, m.label, m.share) for m in kept]
        for name in self.config.document_postprocess:
            mentions = DOCUMENT_POSTPROCESSORS[name](text, mentions)
        voted = {(m.begin, m.end, m.label) for m in kept}
        type_of_class = {m.label: origin[(m.begin, m.end, m.label)][0] for m in kept}
        fallback = view.typesystem.get_type(self.config.type)
        out = []
        for begin, end, label, share in mentions:
            if (begin, end, label) in voted:
                continue
            type_ = type_of_class.get(label, fallback)
            values: dict[str, Any] = {"value": label}
            if type_.get_feature("confidence") is not None:
                values["confidence"] = share
            out.append(type_(begin=begin, end=end, **values))
        return out

    def _agreement(
        self,
        view: cassis.Cas,
        members: list[Any],
        voters: list[MemberMentions],
        kept: list[VotedMention],
    ) -> list[Any]:
        sentences = self.sentence_spans(view, members, copy=False)
        # the vote's own weights: per class under 'weighted', one per member otherwise
        weights: list[Weight] = [
            v.unit_weight if self.config.method == "weighted" else 1.0 for v in voters
        ]
        proposals = [v.mentions for v in voters]
        result = sorted((m.begin, m.end, m.label) for m in kept)
        result_groups = group_by_sentence([u[0] for u in result], sentences)
        member_groups = []
        for units in proposals:
            ordered = sorted(units)
            member_groups.append((ordered, group_by_sentence([u[0] for u in ordered], sentences)))
        out = []
        for number, span in enumerate(sentences):
            mine = [{ordered[i] for i in groups[number]} for ordered, groups in member_groups]
            combined = {result[i] for i in result_groups[number]}
            out.append(self.agreement_annotation(view, span, agreement(mine, weights, combined)))
        return out


def mention_layer(type_name: str) -> str:
    """SentenceAgreement layer of a mention combination: ``mentions:GeneMention``."""
    return f"mentions:{short_name(type_name)}"
