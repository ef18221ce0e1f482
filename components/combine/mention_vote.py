"""Mention voting: majority, union, intersection and weighted votes, per class; no CAS.

A unit is a mention's span with its class (``(begin, end, label)``); each class
is voted on its own, so one member's ``GENE`` never counts for another's
``PROTEIN`` over the same span. A member proposes a unit once however often it
lists it. Methods:

- ``majority``: more than half of the members (weights ignored);
- ``weighted``: more than ``threshold`` of the member weight for that class (a
  member's weight, or its weight for the class, e.g. its development F there);
- ``union``: any member; ``intersection``: every member.

Weights are summed by :func:`~casflow.components.combine.voting.weight_sum`, so
that a share equal to ``threshold`` as written is never kept, in any order of the
members.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from casflow.components.combine.voting import exceeds, weight_sum

Method = Literal["majority", "weighted", "union", "intersection"]
METHODS: tuple[Method, ...] = ("majority", "weighted", "union", "intersection")
Unit = tuple[int, int, str]


@dataclass(frozen=True)
class MemberMentions:
    mentions: Collection[Unit]
    weight: float = 1.0
    label_weights: Mapping[str, float] = field(default_factory=dict)  # per class

    def class_weight(self, label: str) -> float:
        return self.label_weights.get(label, self.weight)

    def unit_weight(self, unit: Unit) -> float:
        """The weight of this member's vote for one mention: its class's weight."""
        return self.class_weight(unit[2])


@dataclass(frozen=True)
class VotedMention:
    begin: int
    end: int
    label: str
    share: float  # share of the class's member weight (of the members, for majority)
    first_member: int  # the first member (in the given order) that proposed it


def _member_weight(member: MemberMentions, label: str, method: Method) -> float:
    return member.class_weight(label) if method == "weighted" else 1.0


def vote_mentions(
    members: Sequence[MemberMentions], method: Method = "majority", threshold: float = 0.5
) -> list[VotedMention]:
    """The mentions kept by ``method``, in text order (then by class)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    weights: dict[Unit, list[float]] = {}
    first: dict[Unit, int] = {}
    for number, member in enumerate(members):
        for unit in set(member.mentions):
            weights.setdefault(unit, []).append(_member_weight(member, unit[2], method))
            first.setdefault(unit, number)
    behind = {unit: weight_sum(each) for unit, each in weights.items()}
    voters = {unit: len(each) for unit, each in weights.items()}
    totals: dict[str, float] = {}
    for label in {unit[2] for unit in behind}:
        totals[label] = weight_sum(_member_weight(m, label, method) for m in members)
    kept = []
    for unit in sorted(behind):
        total = totals[unit[2]]
        share = behind[unit] / total if total else 0.0
        if method == "union":
            keep = True
        elif method == "intersection":
            keep = voters[unit] == len(members)
        elif method == "majority":
            keep = voters[unit] * 2 > len(members)
        else:
            keep = exceeds(behind[unit], threshold, total)
        if keep:
            kept.append(VotedMention(unit[0], unit[1], unit[2], share, first[unit]))
    return kept
