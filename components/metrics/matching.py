"""One-to-one matching of gold and system mentions under a span criterion.

A criterion is a small strategy object (``Strict``, ``LeftBoundary``,
``RightBoundary``, ``Overlap``, ``AcceptedAlternatives``): it says whether a gold and
a system mention are compatible and how much a pair is preferred. ``match_mentions``
turns that into a one-to-one matching.

Matching algorithm (deterministic, independent of input order): mentions are sorted
canonically, candidate pairs (compatible spans and compatible labels) are split into
connected components, and each component is solved as an assignment problem that
first maximises the number of matched pairs and, among maximum matchings, the total
preference (for ``Overlap``: the number of shared characters, then closeness of the
boundaries). Maximising the pair count first means a system mention never "steals"
a gold mention that another system mention could have matched; it is a maximum
matching, not greedy.

Discontinuous mentions: ``fragments`` holds the pieces; ``begin``/``end`` cover them.
``Strict`` compares the full fragment lists when both mentions have fragments, and
otherwise the covering spans (so a contiguous system mention that spans exactly from
the first to the last piece of a discontinuous gold mention is a strict match).
``LeftBoundary``/``RightBoundary`` compare the covering begin/end. ``Overlap``
counts only characters inside fragments, so two discontinuous mentions whose
covering spans overlap but whose pieces do not are not an overlap match.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from scipy.optimize import linear_sum_assignment

Span = tuple[int, int]
LabelsCompatible = Callable[[str, str], bool]  # (gold label, system label) -> compatible?


@dataclass(frozen=True)
class Mention:
    """A mention: covering span, label, accepted alternatives (gold only), pieces."""

    begin: int
    end: int
    label: str
    alternatives: tuple[Span, ...] = ()
    fragments: tuple[Span, ...] = ()
    text: str | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.begin <= self.end:
            raise ValueError(
                f"mention {self.label!r} has invalid span ({self.begin}, {self.end}); "
                "begin must be >= 0 and <= end"
            )
        for begin, end in self.fragments:
            if not self.begin <= begin <= end <= self.end:
                raise ValueError(
                    f"fragment ({begin}, {end}) of mention {self.label!r} "
                    f"({self.begin}, {self.end}) lies outside the mention; begin/end must "
                    "cover all fragments"
                )
        # Normalise to sorted tuples so that equal mentions compare (and hash) equal.
        object.__setattr__(self, "fragments", tuple(sorted((b, e) for b, e in self.fragments)))
        object.__setattr__(self, "alternatives", tuple((b, e) for b, e in self.alternatives))

    @property
    def span(self) -> Span:
        return (self.begin, self.end)

    @property
    def pieces(self) -> tuple[Span, ...]:
        """The character ranges the mention covers: its fragments, or its span."""
        return self.fragments if self.fragments else (self.span,)

    def sort_key(self) -> tuple:
        return (
            self.begin,
            self.end,
            self.label,
            self.fragments,
            self.alternatives,
            self.text or "",
        )


def shared_characters(gold: Mention, system: Mention) -> int:
    """Number of characters inside the pieces of both mentions."""
    total = 0
    for gb, ge in gold.pieces:
        for sb, se in system.pieces:
            total += max(0, min(ge, se) - max(gb, sb))
    return total


def _closeness(gold: Mention, system: Mention) -> float:
    """In (0, 1]: 1 when both boundaries agree, smaller as they move apart."""
    distance = abs(gold.begin - system.begin) + abs(gold.end - system.end)
    scale = (gold.end - gold.begin) + (system.end - system.begin) + 1
    return 1.0 - distance / (scale + distance)


class MatchCriterion(ABC):
    """When a gold and a system span match, and which of several pairs to prefer."""

    name: ClassVar[str]

    @abstractmethod
    def spans_match(self, gold: Mention, system: Mention) -> bool: ...

    def preference(self, gold: Mention, system: Mention) -> float:
        """Larger is better; only compared between compatible pairs."""
        return shared_characters(gold, system) + 0.5 * _closeness(gold, system)

    def reach(self, gold: Mention) -> Span:
        """A closed character range every compatible system mention's span touches."""
        return gold.span

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Strict(MatchCriterion):
    """Same begin and end (same fragment lists when both are discontinuous)."""

    name = "strict"

    def spans_match(self, gold: Mention, system: Mention) -> bool:
        if gold.fragments and system.fragments:
            return gold.fragments == system.fragments
        return gold.span == system.span


class LeftBoundary(MatchCriterion):
    """Same begin."""

    name = "left"

    def spans_match(self, gold: Mention, system: Mention) -> bool:
        return gold.begin == system.begin


class RightBoundary(MatchCriterion):
    """Same end."""

    name = "right"

    def spans_match(self, gold: Mention, system: Mention) -> bool:
        return gold.end == system.end


class Overlap(MatchCriterion):
    """At least one shared character (inside fragments when there are fragments).

    Identical pieces match too, so that two equal zero-length mentions, which share no
    character, match here as they do under ``Strict``: overlap is never stricter.
    """

    name = "overlap"

    def spans_match(self, gold: Mention, system: Mention) -> bool:
        return shared_characters(gold, system) > 0 or gold.pieces == system.pieces


class AcceptedAlternatives(MatchCriterion):
    """BioCreative rule: the system span equals the gold span or one of its alternatives.

    A system mention with fragments is compared by its covering span. The exact gold
    span is preferred over an alternative when a choice has to be made.
    """

    name = "alternatives"

    def spans_match(self, gold: Mention, system: Mention) -> bool:
        return system.span == gold.span or system.span in gold.alternatives

    def preference(self, gold: Mention, system: Mention) -> float:
        return 1.0 if system.span == gold.span else 0.5

    def reach(self, gold: Mention) -> Span:
        spans = (gold.span, *gold.alternatives)
        return (min(b for b, _ in spans), max(e for _, e in spans))


STRICT = Strict()
LEFT_BOUNDARY = LeftBoundary()
RIGHT_BOUNDARY = RightBoundary()
OVERLAP = Overlap()
ACCEPTED_ALTERNATIVES = AcceptedAlternatives()


def same_label(gold_label: str, system_label: str) -> bool:
    return gold_label == system_label


@dataclass
class MatchResult:
    """Indices into the gold and system lists given to ``match_mentions``."""

    pairs: list[tuple[int, int]] = field(default_factory=list)
    unmatched_gold: list[int] = field(default_factory=list)
    unmatched_system: list[int] = field(default_factory=list)


def _candidate_pairs(
    gold: Sequence[Mention],
    system: Sequence[Mention],
    criterion: MatchCriterion,
    labels_compatible: LabelsCompatible,
) -> list[tuple[int, int]]:
    """All compatible (gold, system) index pairs, found with a sorted sweep."""
    system_begins = [m.begin for m in system]
    longest = max((m.end - m.begin for m in system), default=0)
    pairs = []
    for gi, g in enumerate(gold):
        low, high = criterion.reach(g)
        # A system span (b, e) touches [low, high] iff b <= high and e >= low; e <= b +
        # longest bounds how far left b can be.
        start = bisect.bisect_left(system_begins, low - longest)
        stop = bisect.bisect_right(system_begins, high)
        for si in range(start, stop):
            s = system[si]
            if s.end >= low and criterion.spans_match(g, s) and labels_compatible(g.label, s.label):
                pairs.append((gi, si))
    return pairs


def _components(pairs: list[tuple[int, int]], n_gold: int) -> list[list[tuple[int, int]]]:
    """Split candidate pairs into connected components (gold i is node i, system j n_gold+j)."""
    parent: dict[int, int] = {}

    def find(node: int) -> int:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for gi, si in pairs:
        a, b = find(gi), find(n_gold + si)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[tuple[int, int]]] = {}
    for pair in pairs:
        groups.setdefault(find(pair[0]), []).append(pair)
    return [groups[root] for root in sorted(groups)]


def _solve_component(
    component: list[tuple[int, int]],
    gold: Sequence[Mention],
    system: Sequence[Mention],
    criterion: MatchCriterion,
) -> list[tuple[int, int]]:
    if len(component) == 1:
        return component
    gold_ids = sorted({g for g, _ in component})
    system_ids = sorted({s for _, s in component})
    preferences = {(g, s): criterion.preference(gold[g], system[s]) for g, s in component}
    top = max(preferences.values())
    floor = min(preferences.values())
    spread = (top - floor) or 1.0
    # Each matched pair is worth 1 plus less than 1/(size) for its preference, so any
    # matching with more pairs beats any with fewer: cardinality first, then preference.
    epsilon = 1.0 / (min(len(gold_ids), len(system_ids)) + 1)
    row = {g: i for i, g in enumerate(gold_ids)}
    col = {s: j for j, s in enumerate(system_ids)}
    weights = np.zeros((len(gold_ids), len(system_ids)))
    for (g, s), pref in preferences.items():
        weights[row[g], col[s]] = 1.0 + epsilon * 0.999 * ((pref - floor) / spread)
    rows, cols = linear_sum_assignment(weights, maximize=True)
    return [
        (gold_ids[r], system_ids[c]) for r, c in zip(rows, cols, strict=True) if weights[r, c] > 0
    ]


def match_mentions(
    gold: Sequence[Mention],
    system: Sequence[Mention],
    criterion: MatchCriterion,
    labels_compatible: LabelsCompatible = same_label,
) -> MatchResult:
    """One-to-one maximum matching of ``gold`` and ``system`` under ``criterion``.

    ``labels_compatible(gold_label, system_label)`` must also hold for a pair. Returned
    indices refer to the input sequences; the result does not depend on their order
    (up to which of two identical mentions is reported).
    """
    gold_order = sorted(range(len(gold)), key=lambda i: gold[i].sort_key())
    system_order = sorted(range(len(system)), key=lambda i: system[i].sort_key())
    sorted_gold = [gold[i] for i in gold_order]
    sorted_system = [system[i] for i in system_order]

    candidates = _candidate_pairs(sorted_gold, sorted_system, criterion, labels_compatible)
    matched: list[tuple[int, int]] = []
    for component in _components(candidates, len(sorted_gold)):
        matched.extend(_solve_component(component, sorted_gold, sorted_system, criterion))

    pairs = sorted((gold_order[g], system_order[s]) for g, s in matched)
    matched_gold = {g for g, _ in pairs}
    matched_system = {s for _, s in pairs}
    return MatchResult(
        pairs=pairs,
        unmatched_gold=[i for i in range(len(gold)) if i not in matched_gold],
        unmatched_system=[i for i in range(len(system)) if i not in matched_system],
    )
