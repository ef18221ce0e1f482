"""Pure voting: constituent brackets (Henderson & Brill 1999), mentions, agreement."""

from __future__ import annotations

import random

import pytest

from casflow.components.combine.bracket_vote import (
    Bracket,
    Label,
    MemberTree,
    check_nested,
    crossing,
    vote_brackets,
)
from casflow.components.combine.mention_vote import MemberMentions, vote_mentions
from casflow.components.combine.voting import agreement, weighted_choice

# ----------------------------------------------------------------------------- brackets


def tree(spec: list[tuple[int, int, str]], tags: list[str], weight: float = 1.0) -> MemberTree:
    return MemberTree(
        [Bracket(b, e, Label(*label.split("-", 1))) for b, e, label in spec], tags, weight
    )


TAGS = ["DT", "NN", "VBZ", "NN"]


def test_majority_brackets_are_kept_with_voted_labels_and_tags() -> None:
    a = tree([(0, 4, "S"), (0, 2, "NP-SBJ"), (2, 4, "VP"), (3, 4, "NP")], TAGS)
    b = tree([(0, 4, "S"), (0, 2, "NP-SBJ"), (2, 4, "VP")], ["DT", "NN", "VBZ", "NNS"])
    c = tree([(0, 4, "S"), (1, 4, "VP"), (3, 4, "NML")], TAGS)
    result = vote_brackets(4, [a, b, c])
    assert [(x.start, x.end, str(x.label), x.parent) for x in result.brackets] == [
        (0, 4, "S", None),
        (0, 2, "NP-SBJ", 0),
        (2, 4, "VP", 0),
        (3, 4, "NP", 2),  # NP and NML tie: the first member wins
    ]
    assert result.tags == TAGS
    # spans: (0,4) (0,2) (2,4) (3,4) (1,4): four of five have a majority
    assert result.agreement.majority_share == pytest.approx(4 / 5)
    assert result.agreement.members_agreeing == 1  # a


def test_unary_chains_are_voted_level_by_level() -> None:
    a = tree([(0, 4, "S"), (0, 4, "VP"), (0, 2, "NP")], TAGS)
    b = tree([(0, 4, "S"), (0, 4, "VP"), (0, 2, "NP")], TAGS)
    c = tree([(0, 4, "VP"), (0, 2, "NP")], TAGS)
    result = vote_brackets(4, [a, b, c])
    assert [(x.start, x.end, x.label.category, x.parent) for x in result.brackets] == [
        (0, 4, "S", None),
        (0, 4, "VP", 0),
        (0, 2, "NP", 1),
    ]
    # with only one member proposing the unary, the span keeps one bracket: the
    # lowest labels vote, so VP (c's only and a's lower) wins over S
    a2 = tree([(0, 4, "S"), (0, 4, "VP"), (0, 2, "NP")], TAGS)
    result = vote_brackets(4, [a2, c, tree([(0, 4, "VP"), (0, 2, "NP")], TAGS)])
    assert [str(x.label) for x in result.brackets] == ["VP", "NP"]


def test_weights_decide_which_brackets_have_a_majority() -> None:
    b = tree([(1, 3, "X")], TAGS)
    c = tree([(1, 3, "X")], TAGS)

    def spans(members: list[MemberTree]) -> list[tuple[int, int]]:
        return [(r.start, r.end) for r in vote_brackets(4, members).brackets]

    assert spans([tree([(0, 2, "NP")], TAGS, weight=3.0), b, c]) == [(0, 2)]
    assert spans([tree([(0, 2, "NP")], TAGS), b, c]) == [(1, 3)]


def random_member(n: int, rng: random.Random) -> MemberTree:
    """A random tree over n tokens: random binary-ish splits, random unary chains."""
    spec: list[tuple[int, int, str]] = []

    def split(start: int, end: int) -> None:
        for _ in range(rng.choice([1, 1, 1, 2])):
            spec.append((start, end, rng.choice(["NP", "VP", "S", "PP"])))
        if end - start < 2:
            return
        cuts = sorted(rng.sample(range(start + 1, end), rng.randint(1, min(2, end - start - 1))))
        for b, e in zip([start, *cuts], [*cuts, end], strict=True):
            if rng.random() < 0.8:
                split(b, e)

    split(0, n)
    return tree(spec, [rng.choice(["NN", "VB"]) for _ in range(n)], rng.choice([1.0, 0.5, 2.0]))


def test_kept_brackets_always_nest_for_random_members() -> None:
    rng = random.Random(1999)
    for _ in range(400):
        n = rng.randint(1, 12)
        members = [random_member(n, rng) for _ in range(rng.randint(2, 6))]
        result = vote_brackets(n, members)
        spans = [(b.start, b.end) for b in result.brackets]
        for first in spans:
            for second in spans:
                assert not crossing(first, second)
        for index, bracket in enumerate(result.brackets):
            if bracket.parent is not None:
                parent = result.brackets[bracket.parent]
                assert parent.start <= bracket.start < bracket.end <= parent.end
                assert bracket.parent < index
        total = sum(m.weight for m in members)
        for span in set(spans):
            behind = sum(m.weight for m in members if any(b.span == span for b in m.brackets))
            assert behind * 2 > total


def test_crossing_member_brackets_are_refused() -> None:
    with pytest.raises(ValueError, match=r"member 2: brackets \(0, 2\) and \(1, 3\) cross"):
        vote_brackets(3, [tree([], ["a"] * 3), tree([(0, 2, "A"), (1, 3, "B")], ["a"] * 3)])
    check_nested([(0, 3), (0, 1), (1, 3), (2, 3)], "fine")


# ----------------------------------------------------------------------------- mentions

A = MemberMentions({(0, 4, "GENE"), (10, 15, "GENE"), (20, 25, "CELL")})
B = MemberMentions({(0, 4, "GENE"), (10, 14, "GENE"), (20, 25, "TISSUE")})
C = MemberMentions({(0, 4, "GENE"), (10, 15, "GENE")})


def units(kept) -> list[tuple[int, int, str]]:
    return [(m.begin, m.end, m.label) for m in kept]


def test_majority_union_intersection() -> None:
    assert units(vote_mentions([A, B, C], "majority")) == [(0, 4, "GENE"), (10, 15, "GENE")]
    assert units(vote_mentions([A, B, C], "intersection")) == [(0, 4, "GENE")]
    assert units(vote_mentions([A, B, C], "union")) == [
        (0, 4, "GENE"),
        (10, 14, "GENE"),
        (10, 15, "GENE"),
        (20, 25, "CELL"),
        (20, 25, "TISSUE"),
    ]


def test_weighted_vote_uses_member_and_class_weights() -> None:
    heavy_b = MemberMentions(B.mentions, weight=3.0)
    assert units(vote_mentions([A, heavy_b, C], "weighted")) == [
        (0, 4, "GENE"),
        (10, 14, "GENE"),
        (20, 25, "TISSUE"),
    ]
    # B is trusted for tissues only: its genes count for little
    tissue_b = MemberMentions(B.mentions, weight=0.1, label_weights={"TISSUE": 3.0})
    kept = vote_mentions([A, tissue_b, C], "weighted")
    assert units(kept) == [(0, 4, "GENE"), (10, 15, "GENE"), (20, 25, "TISSUE")]
    assert kept[2].share == pytest.approx(3.0 / 5.0)
    assert units(vote_mentions([A, B, C], "weighted", threshold=0.9)) == [(0, 4, "GENE")]


def test_a_member_listing_a_mention_twice_votes_once() -> None:
    twice = MemberMentions([(0, 4, "GENE"), (0, 4, "GENE")])
    assert vote_mentions([twice, MemberMentions(()), MemberMentions(())], "majority") == []


# ----------------------------------------------------------------------------- agreement


def test_weighted_choice_breaks_ties_by_first_vote() -> None:
    assert weighted_choice([("b", 1.0), ("a", 1.0)]) == "b"
    assert weighted_choice([("b", 1.0), ("a", 1.0), ("a", 0.5)]) == "a"
    assert weighted_choice([]) is None


def test_agreement_of_members() -> None:
    result = agreement([{1, 2}, {1, 2}, {1, 3}], [1.0, 1.0, 1.0], {1, 2})
    assert result.majority_share == pytest.approx(2 / 3)
    assert result.support == pytest.approx((3 / 3 + 2 / 3) / 2)
    assert result.members_agreeing == 2
    empty = agreement([set(), set()], [1.0, 1.0], set())
    assert (empty.majority_share, empty.support, empty.members_agreeing) == (1.0, 1.0, 2)


def test_ties_at_half_do_not_depend_on_the_members_order() -> None:
    # 0.1 + 0.2 is exactly half of 0.6 as written: no majority, in either order
    a = tree([(0, 3, "S"), (0, 2, "NP")], ["x"] * 3, weight=0.1)
    b = tree([(0, 3, "S"), (0, 2, "NP")], ["x"] * 3, weight=0.2)
    c = tree([(0, 3, "S")], ["x"] * 3, weight=0.3)
    for members in ([a, b, c], [c, b, a]):
        assert [(x.start, x.end) for x in vote_brackets(3, members).brackets] == [(0, 3)]
    unit = (0, 4, "CELL")
    voters = [MemberMentions({unit}, 0.1), MemberMentions({unit}, 0.2), MemberMentions((), 0.3)]
    assert vote_mentions(voters, "weighted") == vote_mentions(voters[::-1], "weighted") == []
    # a label tie goes to the first vote, however the other's weights add up
    assert weighted_choice([("b", 0.3), ("a", 0.1), ("a", 0.2)]) == "b"
    result = agreement([{1}, {1}, set()], [0.1, 0.2, 0.3], {1})
    assert result.majority_share == 0.0 and result.support == pytest.approx(0.5)


def test_agreement_without_votes_and_with_weights_per_unit() -> None:
    nobody = agreement([], [], set())
    assert (nobody.members, nobody.majority_share, nobody.support) == (0, 0.0, 0.0)
    # members proposing nothing while the result holds units (a fallback tree)
    invented = agreement([set(), set()], [1.0, 1.0], {1})
    assert (invented.majority_share, invented.support, invented.members_agreeing) == (0, 0, 0)
    # weights per unit, as the weighted mention vote weighs classes
    by_class = agreement(
        [{"cell"}, set(), set()],
        [lambda unit: 3.0 if unit == "cell" else 1.0, 1.0, 1.0],
        {"cell"},
    )
    assert by_class.majority_share == 1.0 and by_class.support == pytest.approx(3 / 5)
