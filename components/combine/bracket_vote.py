"""Constituent voting (Henderson and Brill 1999); no CAS here.

Each member's tree is a set of brackets over token positions (``start`` to
``end``, end exclusive). A bracket is kept when more than half of the member
weight proposes its span; its label is chosen by weighted vote among those
members. The kept brackets always nest: two crossing spans each backed by more
than half of the weight would share a member, and one member's tree never
holds crossing brackets. :func:`vote_brackets` still checks it, and the tests
check it on random members.

Unary chains (``(S (VP ...))``: two brackets over one span) are voted level by
level: a span keeps ``k`` brackets when more than half of the weight proposes
at least ``k`` there, and the label of each level is voted among the members'
lowest ``k`` labels on the span (the lowest is the phrase nearest the words, on
which members agree most). POS tags are voted token by token.

``members`` are the members that vote on the sentence: leave out those that
abstain (that produced nothing there), so that their weight is no vote against
every bracket; with none, nothing is kept and every agreement figure is 0. A
member without brackets votes (for a flat tree). Weights are summed by
:func:`~casflow.components.combine.voting.weight_sum`, so that a bracket with
exactly half of the weight is never kept, in any order of the members.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from casflow.components.combine.voting import (
    NO_VOTE,
    Agreement,
    agreement,
    is_majority,
    weight_sum,
    weighted_choice,
)

Span = tuple[int, int]


@dataclass(frozen=True)
class Label:
    """A bracket's category and function tags (``NP`` and ``SBJ`` of ``NP-SBJ``)."""

    category: str
    function: str | None = None

    def __str__(self) -> str:
        return f"{self.category}-{self.function}" if self.function else self.category


@dataclass(frozen=True)
class Bracket:
    start: int
    end: int
    label: Label

    @property
    def span(self) -> Span:
        return (self.start, self.end)


@dataclass(frozen=True)
class MemberTree:
    """One member's tree of a sentence: brackets (an outer one before an inner one
    over the same span, as a pre-order walk gives them) and one tag per token
    (None where the member has none)."""

    brackets: Sequence[Bracket]
    tags: Sequence[Hashable | None]
    weight: float = 1.0
    label_weights: Mapping[str, float] = field(default_factory=dict)  # per category

    def label_weight(self, category: str) -> float:
        return self.label_weights.get(category, self.weight)


@dataclass(frozen=True)
class CombinedBracket:
    start: int
    end: int
    label: Label
    parent: int | None  # index of the enclosing bracket in the result, None at the top


@dataclass(frozen=True)
class CombinedTree:
    brackets: list[CombinedBracket]  # pre-order: every parent before its children
    tags: list[Hashable | None]
    agreement: Agreement


def crossing(first: Span, second: Span) -> bool:
    (a, b), (c, d) = first, second
    return a < c < b < d or c < a < d < b


def first_crossing(spans: Sequence[Span]) -> tuple[Span, Span] | None:
    """The first two crossing spans (in text order), or None when all nest or are disjoint."""
    stack: list[Span] = []
    for span in sorted(set(spans), key=lambda s: (s[0], -s[1])):
        while stack and stack[-1][1] <= span[0]:
            stack.pop()
        if stack and span[1] > stack[-1][1]:
            return stack[-1], span
        stack.append(span)
    return None


def check_nested(spans: Sequence[Span], what: str) -> None:
    """Raise ValueError naming the first two crossing spans (they must nest or be disjoint)."""
    found = first_crossing(spans)
    if found is not None:
        raise ValueError(f"{what}: brackets {found[0]} and {found[1]} cross")


def _chains(member: MemberTree) -> dict[Span, list[Label]]:
    chains: dict[Span, list[Label]] = {}
    for bracket in member.brackets:
        chains.setdefault(bracket.span, []).append(bracket.label)
    return chains


def vote_brackets(n: int, members: Sequence[MemberTree]) -> CombinedTree:
    """The brackets and tags most of the voting members' weight agrees on, over ``n``
    tokens."""
    if not members:
        return CombinedTree([], [None] * n, NO_VOTE)
    chains = []
    for number, member in enumerate(members, start=1):
        if len(member.tags) != n:
            raise ValueError(
                f"member {number} has {len(member.tags)} tags for a sentence of {n} tokens"
            )
        for bracket in member.brackets:
            if not 0 <= bracket.start < bracket.end <= n:
                raise ValueError(
                    f"member {number}: bracket {bracket.label} ({bracket.start}, {bracket.end}) "
                    f"is outside the sentence's {n} tokens or empty"
                )
        check_nested([b.span for b in member.brackets], f"member {number}")
        chains.append(_chains(member))
    total = weight_sum(m.weight for m in members)

    kept: list[tuple[Span, int, Label]] = []  # (span, level from the top, label)
    spans = sorted({span for chain in chains for span in chain}, key=lambda s: (s[0], -s[1]))
    for span in spans:
        lengths = [(len(chain.get(span, ())), m) for chain, m in zip(chains, members, strict=True)]
        depth = 0
        while is_majority(weight_sum(m.weight for length, m in lengths if length > depth), total):
            depth += 1
        for level in range(depth):
            # Level 0 is the top of the kept chain; member labels are aligned at the bottom.
            votes = [
                (chain[span][len(chain[span]) - depth + level], m)
                for chain, m in zip(chains, members, strict=True)
                if len(chain.get(span, ())) >= depth
            ]
            category = weighted_choice(
                (label.category, m.label_weight(label.category)) for label, m in votes
            )
            function = weighted_choice(
                (label.function or "", m.label_weight(label.category))
                for label, m in votes
                if label.category == category
            )
            kept.append((span, level, Label(category or "", function or None)))

    check_nested([span for span, _, _ in kept], "combined tree")
    result: list[CombinedBracket] = []
    stack: list[int] = []
    for span, _, label in kept:  # sorted by start, then longest first, then top level first
        while stack and result[stack[-1]].end <= span[0]:
            stack.pop()
        parent = stack[-1] if stack else None
        result.append(CombinedBracket(span[0], span[1], label, parent))
        stack.append(len(result) - 1)

    tags = [
        weighted_choice((m.tags[i], m.weight) for m in members if m.tags[i] is not None)
        for i in range(n)
    ]
    # Votes were on spans and their unary depth: unit (span, j) is "at least j + 1
    # brackets over span". Agreeing with the result means the same labelled tree.
    proposals = [
        {(span, j) for span, chain in c.items() for j in range(len(chain))} for c in chains
    ]
    result_chains: dict[Span, list[Label]] = {}
    for span, _, label in kept:
        result_chains.setdefault(span, []).append(label)
    result_units = {(span, j) for span, chain in result_chains.items() for j in range(len(chain))}
    exact_outputs = [{(span, tuple(chain)) for span, chain in c.items()} for c in chains]
    exact_result = {(span, tuple(chain)) for span, chain in result_chains.items()}
    return CombinedTree(
        result,
        tags,
        agreement(
            proposals, [m.weight for m in members], result_units, exact_outputs, exact_result
        ),
    )
