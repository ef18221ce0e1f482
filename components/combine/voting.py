"""Weighted votes and the agreement of a combination's members (no CAS here).

Every combiner reduces its members' output to *units* (an arc, a bracket, a
mention) and keeps the units that enough member weight proposes. How much the
members agree on one sentence is summed up by :class:`Agreement`, which the CAS
components store as a ``SentenceAgreement`` annotation (a trust score: sentences
the members agree on are more often right).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

V = TypeVar("V", bound=Hashable)


def weighted_choice(votes: Iterable[tuple[V, float]]) -> V | None:
    """The value with the largest summed weight; ties go to the value voted first.

    Members are listed in the order the workflow gives them, so on a tie the
    first member's choice wins: a reproducible rule the user controls.
    """
    totals: dict[V, float] = {}
    for value, weight in votes:
        totals[value] = totals.get(value, 0.0) + weight
    best: V | None = None
    for value, total in totals.items():  # insertion order = first vote first
        if best is None or total > totals[best]:
            best = value
    return best


def is_majority(weight: float, total: float) -> bool:
    """More than half of the member weight (strictly, so two halves never both win)."""
    return weight * 2 > total


@dataclass(frozen=True)
class Agreement:
    """How much the members of a combination agree on one sentence.

    - ``majority_share``: of the distinct units any member proposes, the share
      that more than half of the member weight proposes (1 when none is proposed);
    - ``support``: the mean share of member weight behind each unit of the result
      (1 when the result is empty);
    - ``members_agreeing``: members whose own output equals the result exactly.
    """

    members: int
    majority_share: float
    support: float
    members_agreeing: int


def agreement(
    proposals: Sequence[Collection[Hashable]],
    weights: Sequence[float],
    result: Collection[Hashable],
    exact_outputs: Sequence[Collection[Hashable]] | None = None,
    exact_result: Collection[Hashable] | None = None,
) -> Agreement:
    """Agreement of members that proposed ``proposals`` (one set of units each).

    ``exact_outputs`` / ``exact_result`` (default: the proposals and the result)
    are what "agreeing with the result" compares, e.g. labelled arcs where the
    votes were on unlabelled ones.
    """
    if len(proposals) != len(weights):
        raise ValueError(f"{len(proposals)} members' proposals but {len(weights)} weights")
    total = float(sum(weights))
    behind: dict[Hashable, float] = {}
    for units, weight in zip(proposals, weights, strict=True):
        for unit in set(units):
            behind[unit] = behind.get(unit, 0.0) + weight
    majority = sum(1 for weight in behind.values() if is_majority(weight, total))
    majority_share = majority / len(behind) if behind else 1.0
    result_units = set(result)
    support = (
        sum(behind.get(unit, 0.0) for unit in result_units) / (total * len(result_units))
        if result_units and total
        else 1.0
    )
    outputs = proposals if exact_outputs is None else exact_outputs
    wanted = result_units if exact_result is None else set(exact_result)
    agreeing = sum(1 for output in outputs if set(output) == wanted)
    return Agreement(len(proposals), majority_share, support, agreeing)
