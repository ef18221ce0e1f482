"""Weighted votes and the agreement of a combination's members (no CAS here).

Every combiner reduces its members' output to *units* (an arc, a bracket, a
mention) and keeps the units that enough member weight proposes. How much the
members agree on one sentence is summed up by :class:`Agreement`, which the CAS
components store as a ``SentenceAgreement`` annotation (a trust score: sentences
the members agree on are more often right).

Weights are summed by :func:`weight_sum`, so that no result depends on the order
of the members: float addition is not associative, and 0.1 + 0.2 would otherwise
beat 0.3 in one order and tie with it in another.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

V = TypeVar("V", bound=Hashable)

#: significant digits a sum of weights keeps (float noise is at the 16th)
WEIGHT_DIGITS = 12


def weight_sum(weights: Iterable[float]) -> float:
    """The sum of ``weights``, the same in any order.

    ``math.fsum`` rounds the exact sum once, so it does not depend on the order;
    rounding that to 12 significant digits makes sums that are equal as written
    equal as floats (0.1 + 0.2 and 0.3), so that ties are ties: users write
    weights in decimals.
    """
    return _rounded(math.fsum(weights))


@functools.lru_cache(maxsize=4096)
def _rounded(value: float) -> float:
    # cached: the same few sums (every member, each member alone) recur on every token
    return float(f"{value:.{WEIGHT_DIGITS}g}")


def exceeds(weight: float, share: float, total: float) -> bool:
    """``weight`` is more than ``share`` of ``total`` (both :func:`weight_sum`
    results); a weight equal to the share as written is not more."""
    return weight > _rounded(share * total)


def weighted_choice(votes: Iterable[tuple[V, float]]) -> V | None:
    """The value with the largest summed weight; ties go to the value voted first.

    Members are listed in the order the workflow gives them, so on a tie the
    first member's choice wins: a reproducible rule the user controls.
    """
    weights: dict[V, list[float]] = {}
    for value, weight in votes:
        weights.setdefault(value, []).append(weight)
    totals = {value: weight_sum(each) for value, each in weights.items()}
    best: V | None = None
    for value, total in totals.items():  # insertion order = first vote first
        if best is None or total > totals[best]:
            best = value
    return best


def is_majority(weight: float, total: float) -> bool:
    """More than half of the member weight (strictly, so two halves never both win);
    both are :func:`weight_sum` results."""
    return weight * 2 > total


@dataclass(frozen=True)
class Agreement:
    """How much the members of a combination agree on one sentence.

    - ``members``: the members that voted on the sentence (a member that produced
      nothing there abstains and is left out of every figure);
    - ``majority_share``: of the distinct units any member proposes, the share
      that more than half of the member weight proposes (when the members propose
      none: 1 if the result has none either, as they agree there is nothing, and 0
      if it has some, which no member vouches for: a fallback tree);
    - ``support``: the mean share of member weight behind each unit of the result
      (1 when the result is empty);
    - ``members_agreeing``: members whose own output equals the result exactly.

    With no member voting, every figure is 0: there is nothing to trust.
    """

    members: int
    majority_share: float
    support: float
    members_agreeing: int


#: the agreement of a sentence no member voted on
NO_VOTE = Agreement(0, 0.0, 0.0, 0)

Weight = float | Callable[[Any], float]


def agreement(
    proposals: Sequence[Collection[Hashable]],
    weights: Sequence[Weight],
    result: Collection[Hashable],
    exact_outputs: Sequence[Collection[Hashable]] | None = None,
    exact_result: Collection[Hashable] | None = None,
) -> Agreement:
    """Agreement of the voting members that proposed ``proposals`` (one set of units
    each; leave abstaining members out).

    A member's weight is a number, or a function of the unit where the vote weighs
    units differently (a member's weight for a mention's class): a unit's total is
    then every member's weight for that unit, as in the vote.
    ``exact_outputs`` / ``exact_result`` (default: the proposals and the result)
    are what "agreeing with the result" compares, e.g. labelled arcs where the
    votes were on unlabelled ones.
    """
    if len(proposals) != len(weights):
        raise ValueError(f"{len(proposals)} members' proposals but {len(weights)} weights")
    if not proposals:
        return NO_VOTE

    # each member's weight for one unit: the number, or the function's value
    weight_for = [w if callable(w) else _constant(w) for w in weights]
    fixed = not any(callable(w) for w in weights)
    fixed_total = weight_sum(weights) if fixed else 0.0  # type: ignore[arg-type]
    voters: dict[Hashable, list[int]] = {}
    for member, units in enumerate(proposals):
        for unit in set(units):
            voters.setdefault(unit, []).append(member)
    result_units = set(result)
    # share of the weight behind every proposed unit and every unit of the result
    share: dict[Hashable, float] = {}
    majority = 0
    for unit in voters.keys() | result_units:
        behind = weight_sum(weight_for[m](unit) for m in voters.get(unit, ()))
        total = fixed_total if fixed else weight_sum(w(unit) for w in weight_for)
        share[unit] = behind / total if total else 0.0
        if unit in voters and is_majority(behind, total):
            majority += 1
    majority_share = majority / len(voters) if voters else float(not result_units)
    support = (
        math.fsum(share[unit] for unit in result_units) / len(result_units) if result_units else 1.0
    )
    outputs = proposals if exact_outputs is None else exact_outputs
    wanted = result_units if exact_result is None else set(exact_result)
    agreeing = sum(1 for output in outputs if set(output) == wanted)
    return Agreement(len(proposals), majority_share, support, agreeing)


def _constant(weight: float) -> Callable[[Any], float]:
    """A member weight that is the same for every unit."""
    return lambda _unit: weight
