"""Dependency parse combination by reparsing (Sagae and Lavie 2006); no CAS here.

Each member proposes one head and label per token. Every proposed arc gets the
summed weight of the members proposing it (a member's weight, or its weight for
that relation, e.g. its development accuracy on the label), and the combined tree
is the maximum spanning arborescence of that graph (Chu-Liu/Edmonds, networkx),
so the result is always a tree even where the majority's arcs form a cycle.
Labels are chosen by weighted vote among the members proposing the chosen arc
(among those of them that vote labels, when any does: a member may vote arcs only).

Two guarantees the plain algorithm lacks:

- **One root.** Arcs from the artificial root are penalised by more than the
  total weight of all arcs, so the best tree has exactly one root arc whenever a
  single-rooted tree exists, and one always does (next point).
- **Every token attached.** When no member's parse is a complete tree (members
  that miss tokens, or whose arcs left the sentence), a zero-weight arc from every
  token to every other one and a penalised root arc to every token are added
  where no member proposes them, so a spanning tree still exists; such arcs win
  only where no member arc can attach the token, so the members' own arcs are
  kept wherever they make a tree (a token no member gives a head hangs on another
  token and never displaces the members' root).

``members`` are the members that vote on the sentence: leave out those that
abstain (that produced nothing there), so that their weight is no vote against
every arc. A member given with no head for any token votes, and proposes nothing.
Where no member proposes any arc (or none votes), the result is the fallback chain
(the first token the root, every other on the one before), ``fallback_arcs == n``,
and every agreement figure is 0: no member vouches for it
(``combine.dependencies.v1`` writes nothing for a sentence no member votes on).

Arc scores are sums of weights by :func:`~casflow.components.combine.voting.weight_sum`,
so ties (broken by the lowest head) do not depend on the members' order.

Most sentences need no spanning-tree search: when every token's best-voted arc
already makes a tree with one root, that tree is the best one.

Tokens are numbered 1..n; head 0 is the root.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx

from casflow.components.combine.voting import (
    NO_VOTE,
    Agreement,
    agreement,
    weight_sum,
    weighted_choice,
)

ROOT = 0
FALLBACK_LABEL = "dep"


@dataclass(frozen=True)
class MemberParse:
    """One member's parse of a sentence: ``heads[i]`` / ``labels[i]`` for token i+1.

    A head of None means the member gives that token no head (it may then still
    be attached through other members or the fallback arcs).
    """

    heads: Sequence[int | None]
    labels: Sequence[str]
    weight: float = 1.0
    label_weights: Mapping[str, float] = field(default_factory=dict)
    # False: the member's arcs vote, its labels only where no labelling member
    # proposes the chosen arc (e.g. trees converted from a constituency parse)
    vote_labels: bool = True

    def arc_weight(self, label: str) -> float:
        """Weight of one arc: per relation when given, the member's weight otherwise."""
        return self.label_weights.get(label, self.weight)


@dataclass(frozen=True)
class CombinedParse:
    heads: list[int]
    labels: list[str]
    agreement: Agreement
    fallback_arcs: int  # arcs no member proposed (0 when the members cover the sentence)


def _complete_tree(heads: Sequence[int | None]) -> bool:
    """Every token has a head and the heads form one tree."""
    known = [h for h in heads if h is not None]
    return len(known) == len(heads) and tree_problem(known) is None


def tree_problem(heads: Sequence[int]) -> str | None:
    """Why ``heads`` is not one tree (one root, no cycle, all attached), or None."""
    n = len(heads)
    roots = [i + 1 for i, head in enumerate(heads) if head == ROOT]
    if n and len(roots) != 1:
        return f"a tree needs exactly one root, found {len(roots)}: tokens {roots}"
    for i, head in enumerate(heads, start=1):
        if not 0 <= head <= n or head == i:
            return f"token {i} has head {head}, outside 0..{n} or itself"
    done: set[int] = set()
    for start in range(1, n + 1):
        path: set[int] = set()
        node = start
        while node != ROOT and node not in done:
            if node in path:
                return f"tokens {sorted(path)} form a cycle"
            path.add(node)
            node = heads[node - 1]
        done |= path
    return None


def check_tree(heads: Sequence[int]) -> None:
    """Raise ValueError unless ``heads`` is one tree."""
    problem = tree_problem(heads)
    if problem is not None:
        raise ValueError(problem)


def _fallback_head(dependent: int, n: int) -> int:
    """A fallback arc's head: the previous token, else the next, else the root."""
    if dependent > 1:
        return dependent - 1
    return 2 if n > 1 else ROOT


def _greedy_heads(scores: Mapping[tuple[int, int], float], n: int) -> list[int]:
    """Each token's best-voted head (lowest head number on ties; a neighbour, see
    :func:`_fallback_head`, when no member gives it one).

    When these arcs form a tree with one root, it is the best tree (no tree can
    weigh more than every token's best arc), which saves Chu-Liu/Edmonds for the
    sentences the members disagree on.
    """
    best: dict[int, tuple[float, int]] = {}
    for (head, dependent), score in scores.items():
        current = best.get(dependent)
        if current is None or (score, -head) > (current[0], -current[1]):
            best[dependent] = (score, head)
    return [best[d][1] if d in best else _fallback_head(d, n) for d in range(1, n + 1)]


def _maximum_spanning_tree(
    scores: Mapping[tuple[int, int], float], n: int, members: Sequence[MemberParse]
) -> list[int]:
    """The best single-rooted tree over the voted arcs (plus the fallback arcs when
    no member's parse is a complete tree)."""
    # Larger than any tree's total vote, so one root arc fewer always wins.
    penalty = sum(abs(s) for s in scores.values()) + 1.0
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n + 1))
    for (head, dependent), score in sorted(scores.items()):
        graph.add_edge(head, dependent, weight=score - penalty if head == ROOT else score)
    # A member whose parse is a complete tree guarantees a single-rooted spanning
    # tree among the member arcs; only without one are the fallback arcs needed.
    hub = n + 1
    if not any(_complete_tree(m.heads) for m in members):
        # A zero-weight arc from every token to every other one, so that the member
        # arcs are never given up for want of a fallback head (with arcs from the
        # previous token only, a first token no member attaches could only be the
        # root, and pushed the members' root arc off). Through a hub: token -> hub
        # -> token stands for the n * n arcs with 2n; the hub's children then hang
        # on the hub's head. The hub has no root arc, so it adds no root.
        for dependent in range(1, n + 1):
            if not graph.has_edge(ROOT, dependent):
                graph.add_edge(ROOT, dependent, weight=-penalty)
            if dependent > 1 and not graph.has_edge(dependent - 1, dependent):
                graph.add_edge(dependent - 1, dependent, weight=0.0)
            graph.add_edge(dependent, hub, weight=0.0)
            graph.add_edge(hub, dependent, weight=0.0)
    tree = nx.maximum_spanning_arborescence(graph, attr="weight")
    parent = {dependent: head for head, dependent in tree.edges()}
    return [parent[parent[d]] if parent[d] == hub else parent[d] for d in range(1, n + 1)]


def combine_parses(
    n: int, members: Sequence[MemberParse], root_label: str = "ROOT"
) -> CombinedParse:
    """The reparsed tree over ``n`` tokens from the voting members' parses."""
    for number, member in enumerate(members, start=1):
        if len(member.heads) != n or len(member.labels) != n:
            raise ValueError(
                f"member {number} has {len(member.heads)} heads and {len(member.labels)} "
                f"labels for a sentence of {n} tokens"
            )
        for i, head in enumerate(member.heads, start=1):
            if head is not None and not 0 <= head <= n:
                raise ValueError(f"member {number}: token {i} has head {head}, outside 0..{n}")
    if n == 0:
        return CombinedParse([], [], Agreement(len(members), 1.0, 1.0, len(members)), 0)
    if not members:
        chain = [d - 1 for d in range(1, n + 1)]
        return CombinedParse(chain, [root_label] + [FALLBACK_LABEL] * (n - 1), NO_VOTE, n)

    votes: dict[tuple[int, int], list[float]] = {}
    for member in members:
        for dependent, (head, label) in enumerate(
            zip(member.heads, member.labels, strict=True), start=1
        ):
            if head is None or head == dependent:
                continue
            votes.setdefault((head, dependent), []).append(member.arc_weight(label))
    scores = {arc: weight_sum(weights) for arc, weights in votes.items()}
    heads = _greedy_heads(scores, n)
    if tree_problem(heads) is not None:
        # The best head of each token does not make a tree: Chu-Liu/Edmonds.
        heads = _maximum_spanning_tree(scores, n, members)
    check_tree(heads)

    labels = []
    for dependent, head in enumerate(heads, start=1):
        if head == ROOT:
            labels.append(root_label)
            continue
        proposing = [m for m in members if m.heads[dependent - 1] == head]
        labelling = [m for m in proposing if m.vote_labels] or proposing
        chosen = weighted_choice(
            (m.labels[dependent - 1], m.arc_weight(m.labels[dependent - 1])) for m in labelling
        )
        if chosen is None:  # a fallback arc: the token's most voted label, whatever its head
            chosen = weighted_choice(
                (m.labels[dependent - 1], m.arc_weight(m.labels[dependent - 1]))
                for m in members
                if m.heads[dependent - 1] is not None and m.heads[dependent - 1] != ROOT
            )
        labels.append(chosen or FALLBACK_LABEL)

    proposals = [
        {(h, d) for d, h in enumerate(m.heads, start=1) if h is not None and h != d}
        for m in members
    ]
    result = {(h, d) for d, h in enumerate(heads, start=1)}
    # Members agree with the result when their labelled trees are the same; a
    # member's root label does not matter (the result always says root_label).
    exact_outputs = [
        {
            (h, d, root_label if h == ROOT else label)
            for d, (h, label) in enumerate(zip(m.heads, m.labels, strict=True), start=1)
            if h is not None and h != d
        }
        for m in members
    ]
    exact_result = {
        (h, d, label) for d, (h, label) in enumerate(zip(heads, labels, strict=True), start=1)
    }
    used_fallback = sum(1 for d, h in enumerate(heads, start=1) if (h, d) not in scores)
    return CombinedParse(
        heads,
        labels,
        agreement(proposals, [m.weight for m in members], result, exact_outputs, exact_result),
        used_fallback,
    )
