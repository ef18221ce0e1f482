"""``combine.dependencies.v1``: several views' dependency trees -> one tree per sentence.

Over :mod:`casflow.components.combine.reparse` (Sagae and Lavie's reparsing).
The combination goes into the view the step runs in, as the spaCy wrapper writes
parses (DKPro ``Dependency`` with flavor ``basic``; the root a ``ROOT`` whose
Governor and Dependent are the root token, DependencyType ``ROOT``):

- tokens: the view's own, else copied from the first member; every member must
  have the same tokens (same offsets) or the document fails naming the token;
- sentences: the view's own, else copied from the first member that has some;
  arcs that leave a sentence are not votes (a member that splits sentences
  differently still votes inside them);
- POS (when the tokens have none): ``(PosValue, coarseValue)`` by weighted vote;
- one ``SentenceAgreement`` (layer ``dependencies``) per sentence: the units are
  unlabelled arcs, and a member agrees when its labelled tree equals the result.
"""

from __future__ import annotations

from typing import Any

import cassis
from pydantic import Field

from casflow.components.combine.base import (
    CombineConfig,
    CombineInputError,
    Combiner,
    Member,
    group_by_sentence,
)
from casflow.components.combine.reparse import MemberParse, combine_parses
from casflow.components.combine.voting import weighted_choice
from casflow.components.evaluators.adapters import CasInputError, dependency_sentences
from casflow.typesystem import (
    DEPENDENCY,
    DEPENDENCY_ROOT,
    POS,
    SENTENCE,
    SENTENCE_AGREEMENT,
    TOKEN,
)

Span = tuple[int, int]
ROOT_LABEL = "ROOT"
BASIC_FLAVOR = "basic"


class CombineDependenciesConfig(CombineConfig):
    pos: bool = Field(True, description="Vote POS tags too when the view's tokens have none.")


class CombineDependencies(Combiner):
    name = "combine.dependencies.v1"
    description = (
        "Combines the dependency trees of several views into one tree per sentence "
        "(Sagae & Lavie reparsing: weighted arc votes, maximum spanning tree, label vote)."
    )
    Config = CombineDependenciesConfig
    layer = "dependencies"

    config: CombineDependenciesConfig

    @classmethod
    def requirements(
        cls, config: CombineDependenciesConfig
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:  # type: ignore[override]
        produces = [TOKEN, SENTENCE, DEPENDENCY, DEPENDENCY_ROOT]
        if config.pos:
            produces += [POS, f"{TOKEN}:pos"]
        if config.agreement:
            produces.append(SENTENCE_AGREEMENT)
        return (), tuple(produces)

    def process(self, view: cassis.Cas) -> None:
        doc = self.document(view)
        if view.select(DEPENDENCY):
            raise CombineInputError(
                f"document {doc}: the view already holds dependencies; write the "
                "combination into a view of its own"
            )
        members = self.members(view)
        tokens = self.shared_tokens(view, members)
        sentences = self.sentence_spans(view, members, copy=True)
        # A member's arcs, keyed by dependent span: (governor span or None for the root, label).
        arcs = [self._arcs(member, doc) for member in members]
        out: list[Any] = []
        dep_type = view.typesystem.get_type(DEPENDENCY)
        root_type = view.typesystem.get_type(DEPENDENCY_ROOT)
        for sentence, indices in zip(
            sentences, group_by_sentence([t.begin for t in tokens], sentences), strict=True
        ):
            if not indices:
                continue
            words = [tokens[i] for i in indices]
            number = {(t.begin, t.end): k for k, t in enumerate(words, start=1)}
            parses = []
            for member, member_arcs in zip(members, arcs, strict=True):
                heads: list[int | None] = []
                labels: list[str] = []
                for word in words:
                    arc = member_arcs.get((word.begin, word.end))
                    if arc is None:
                        heads.append(None)
                        labels.append("")
                        continue
                    governor, label = arc
                    # A head outside the sentence is no vote here.
                    heads.append(0 if governor is None else number.get(governor))
                    labels.append(label)
                parses.append(
                    MemberParse(heads, labels, member.config.weight, member.config.label_weights)
                )
            combined = combine_parses(len(words), parses, root_label=ROOT_LABEL)
            for word, head, label in zip(words, combined.heads, combined.labels, strict=True):
                if head == 0:
                    out.append(
                        root_type(
                            begin=word.begin,
                            end=word.end,
                            Governor=word,
                            Dependent=word,
                            DependencyType=ROOT_LABEL,
                            flavor=BASIC_FLAVOR,
                        )
                    )
                else:
                    out.append(
                        dep_type(
                            begin=word.begin,
                            end=word.end,
                            Governor=words[head - 1],
                            Dependent=word,
                            DependencyType=label,
                            flavor=BASIC_FLAVOR,
                        )
                    )
            if self.config.agreement:
                out.append(self.agreement_annotation(view, sentence, combined.agreement))
        if self.config.pos and all(t.get("pos") is None for t in tokens):
            out.extend(self._vote_pos(view, tokens, members))
        view.add_all(out)

    @staticmethod
    def _arcs(member: Member, doc: str) -> dict[Span, tuple[Span | None, str]]:
        try:
            sentences = dependency_sentences(member.view)
        except CasInputError as exc:
            raise CombineInputError(f"member view {member.config.view!r}: {exc}") from exc
        return {
            word.span: (word.governor, word.deprel) for sentence in sentences for word in sentence
        }

    @staticmethod
    def _vote_pos(view: cassis.Cas, tokens: list[Any], members: list[Member]) -> list[Any]:
        pos_type = view.typesystem.get_type(POS)
        member_tokens = [list(m.view.select(TOKEN)) for m in members]  # same spans, checked
        out = []
        for index, token in enumerate(tokens):
            votes = []
            for member, theirs in zip(members, member_tokens, strict=True):
                pos = theirs[index].get("pos")
                if pos is not None and (pos.get("PosValue") or pos.get("coarseValue")):
                    votes.append(
                        ((pos.get("PosValue"), pos.get("coarseValue")), member.config.weight)
                    )
            choice = weighted_choice(votes)
            if choice is None:
                continue
            token.pos = pos_type(
                begin=token.begin, end=token.end, PosValue=choice[0], coarseValue=choice[1]
            )
            out.append(token.pos)
        return out
