"""``combine.dependencies.v1``: several views' dependency trees -> one tree per sentence.

Over :mod:`casflow.components.combine.reparse` (Sagae and Lavie's reparsing).
The combination goes into the view the step runs in, as the spaCy wrapper writes
parses (DKPro ``Dependency`` with flavor ``basic``; the root a ``ROOT`` whose
Governor and Dependent are the root token, DependencyType ``ROOT``):

- tokens: the view's own, else copied from the first member; every member must
  have the same tokens (same offsets) or the document fails naming the token;
- sentences: the view's own, else copied from the first member that has some;
  tokens outside every sentence make sentences of their own; arcs that leave a
  sentence are not votes (a member that splits sentences differently still votes
  inside them), and a member with no arc inside a sentence abstains there; a
  sentence no member parses gets no tree and no agreement (its tokens stay
  unattached, and are scored so);
- POS (when the tokens have none): ``(PosValue, coarseValue)`` by weighted vote;
- one ``SentenceAgreement`` (layer ``dependencies``) per sentence: the units are
  unlabelled arcs, and a member agrees when its labelled tree equals the result.
"""

from __future__ import annotations

from typing import Any

import cassis
from pydantic import Field

from casflow.components.combine.base import (
    CombineInputError,
    Member,
    MemberConfig,
    SyntaxCombineConfig,
    SyntaxCombiner,
    group_by_sentence,
)
from casflow.components.combine.reparse import MemberParse, combine_parses
from casflow.components.combine.voting import weighted_choice
from casflow.components.evaluators.adapters import is_root_relation, subsumed_by
from casflow.components.formats.cas_builders import ROOT_LABEL, dependency_annotation
from casflow.typesystem import (
    DEPENDENCY,
    DEPENDENCY_ROOT,
    POS,
    TOKEN,
)

Span = tuple[int, int]
BASIC_FLAVORS = frozenset({"", "basic"})


class DependencyMemberConfig(MemberConfig):
    vote_labels: bool = Field(
        True,
        description="false: the member's arcs vote but its relation labels count only "
        "where no member that votes labels proposes the chosen arc (for members that "
        "attach well and label worse, e.g. constituency trees by convert.dependencies.v1).",
    )


class CombineDependenciesConfig(SyntaxCombineConfig):
    # narrows the base's list[MemberConfig]; pydantic builds these members
    members: list[DependencyMemberConfig] = Field(  # type: ignore[assignment]
        description="The views to combine, in order (a tie between labels or POS tags goes "
        "to the earlier member; one between heads does not depend on the order): a view "
        "name, or {view, weight, label_weights, label_mapping, vote_labels}."
    )


class CombineDependencies(SyntaxCombiner[CombineDependenciesConfig]):
    name = "combine.dependencies.v1"
    description = (
        "Combines the dependency trees of several views into one tree per sentence "
        "(Sagae & Lavie reparsing: weighted arc votes, maximum spanning tree, label vote)."
    )
    layer = "dependencies"
    layer_type = DEPENDENCY
    also_produces = (DEPENDENCY_ROOT,)

    def process(self, view: cassis.Cas) -> None:
        doc, members, tokens, sentences = self.voting_inputs(view)
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
                if not any((word.begin, word.end) in member_arcs for word in words):
                    continue  # the member produced nothing here: it abstains
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
                    labels.append(member.config.label(label))
                config = member.config
                parses.append(
                    MemberParse(
                        heads,
                        labels,
                        config.weight,
                        config.label_weights,
                        vote_labels=not isinstance(config, DependencyMemberConfig)
                        or config.vote_labels,
                    )
                )
            if not parses:
                continue  # no member parsed it: an invented tree would be trusted
            combined = combine_parses(len(words), parses, root_label=ROOT_LABEL)
            for word, head, label in zip(words, combined.heads, combined.labels, strict=True):
                governor = None if head == 0 else words[head - 1]
                out.append(dependency_annotation(dep_type, root_type, word, governor, label))
            if self.config.agreement:
                out.append(self.agreement_annotation(view, sentence, combined.agreement))
        if self.config.pos and all(t.pos is None for t in tokens):
            out.extend(self._vote_pos(view, tokens, members))
        view.add_all(out)

    @staticmethod
    def _arcs(member: Member, doc: str) -> dict[Span, tuple[Span | None, str]]:
        return member_arcs(member.view, f"document {doc}, member view {member.config.view!r}")

    @staticmethod
    def _vote_pos(view: cassis.Cas, tokens: list[Any], members: list[Member]) -> list[Any]:
        pos_type = view.typesystem.get_type(POS)
        member_tokens = [list(m.view.select(TOKEN)) for m in members]  # same spans, checked
        out = []
        for index, token in enumerate(tokens):
            votes = []
            for member, theirs in zip(members, member_tokens, strict=True):
                if not theirs:  # an abstaining member
                    continue
                pos = theirs[index].pos
                if pos is not None and (pos.PosValue or pos.coarseValue):
                    votes.append(((pos.PosValue, pos.coarseValue), member.config.weight))
            choice = weighted_choice(votes)
            if choice is None:
                continue
            token.pos = pos_type(
                begin=token.begin, end=token.end, PosValue=choice[0], coarseValue=choice[1]
            )
            out.append(token.pos)
        return out


def member_arcs(view: cassis.Cas, where: str) -> dict[Span, tuple[Span | None, str]]:
    """Each token's basic arc: dependent span -> (governor span, None for the root; label).

    Reads what ``eval.dependencies.v1`` reads (flavor empty or ``basic``; a root is
    a DKPro ROOT or a relation whose Governor is its Dependent), with attribute
    access rather than ``get``: this runs over every member of every document.
    """
    is_root_type = subsumed_by(view.typesystem, DEPENDENCY_ROOT)
    arcs: dict[Span, tuple[Span | None, str]] = {}
    for dependency in view.select(DEPENDENCY):
        if (dependency.flavor or "") not in BASIC_FLAVORS:
            continue
        dependent = dependency.Dependent
        if dependent is None:
            raise CombineInputError(
                f"{where}: Dependency at ({dependency.begin}, {dependency.end}) has no "
                "Dependent token"
            )
        span = (dependent.begin, dependent.end)
        if span in arcs:
            raise CombineInputError(
                f"{where}: token {span} is the Dependent of two basic Dependency relations; "
                "a token has one head (mark extra relations with flavor 'enhanced')"
            )
        if is_root_relation(dependency, is_root_type):
            arcs[span] = (None, dependency.DependencyType or "")
        else:
            governor = dependency.Governor
            arcs[span] = ((governor.begin, governor.end), dependency.DependencyType or "")
    return arcs
