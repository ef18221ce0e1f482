"""One-to-one mention matching under each span criterion."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from casflow.components.metrics.matching import (
    ACCEPTED_ALTERNATIVES,
    LEFT_BOUNDARY,
    OVERLAP,
    RIGHT_BOUNDARY,
    STRICT,
    Mention,
    match_mentions,
    shared_characters,
)

ALL_CRITERIA = (STRICT, LEFT_BOUNDARY, RIGHT_BOUNDARY, OVERLAP, ACCEPTED_ALTERNATIVES)


def m(begin: int, end: int, label: str = "G", **kwargs) -> Mention:
    return Mention(begin, end, label, **kwargs)


def matched(gold, system, criterion, **kwargs) -> list[tuple[Mention, Mention]]:
    result = match_mentions(gold, system, criterion, **kwargs)
    return [(gold[g], system[s]) for g, s in result.pairs]


@pytest.mark.parametrize(
    ("system_span", "expected"),
    [
        ((0, 5), {"strict", "left", "right", "overlap"}),
        ((0, 4), {"left", "overlap"}),
        ((1, 5), {"right", "overlap"}),
        ((3, 8), {"overlap"}),
        ((5, 9), set()),  # touching is not overlapping
    ],
)
def test_each_criterion_on_one_pair(system_span, expected):
    gold = [m(0, 5)]
    system = [m(*system_span)]
    got = {
        c.name for c in (STRICT, LEFT_BOUNDARY, RIGHT_BOUNDARY, OVERLAP) if matched(gold, system, c)
    }
    assert got == expected


def test_overlap_is_never_stricter_than_strict_even_for_zero_length_mentions():
    gold, system = [m(3, 3), m(5, 5)], [m(3, 3), m(6, 6)]
    for criterion in (STRICT, LEFT_BOUNDARY, RIGHT_BOUNDARY, OVERLAP):
        assert matched(gold, system, criterion) == [(m(3, 3), m(3, 3))], criterion.name


def test_a_gold_mention_is_matched_once():
    result = match_mentions([m(0, 5)], [m(0, 5), m(0, 5)], STRICT)
    assert len(result.pairs) == 1
    assert len(result.unmatched_system) == 1


def test_maximum_matching_beats_greedy_largest_overlap_first():
    # Greedy by overlap would take (g1, s1) (8 chars) and leave g2 and s2 unmatched.
    g1, g2 = m(0, 10), m(9, 12)
    s1, s2 = m(2, 10), m(0, 3)
    assert set(matched([g1, g2], [s1, s2], OVERLAP)) == {(g1, s2), (g2, s1)}


def test_overlap_prefers_the_larger_overlap():
    gold = [m(0, 10)]
    small, large = m(0, 3), m(2, 10)
    assert matched(gold, [small, large], OVERLAP) == [(gold[0], large)]
    assert matched(gold, [large, small], OVERLAP) == [(gold[0], large)]


def test_overlap_system_mention_goes_to_the_gold_it_shares_most_with():
    g1, g2 = m(0, 4), m(3, 10)
    assert matched([g1, g2], [m(3, 9)], OVERLAP) == [(g2, m(3, 9))]


def test_left_boundary_prefers_the_closer_end():
    gold = [m(0, 6)]
    assert matched(gold, [m(0, 12), m(0, 7)], LEFT_BOUNDARY) == [(gold[0], m(0, 7))]


def test_labels_must_be_compatible():
    assert matched([m(0, 5, "A")], [m(0, 5, "B")], STRICT) == []
    assert matched([m(0, 5, "A")], [m(0, 5, "B")], STRICT, labels_compatible=lambda g, s: True)


def test_strict_discontinuous_against_contiguous_uses_the_covering_span():
    gold = [m(0, 12, fragments=((0, 3), (8, 12)))]
    assert matched(gold, [m(0, 12)], STRICT)


def test_strict_discontinuous_pair_compares_fragment_lists():
    gold = [m(0, 12, fragments=((0, 3), (8, 12)))]
    assert not matched(gold, [m(0, 12, fragments=((0, 4), (8, 12)))], STRICT)
    assert matched(gold, [m(0, 12, fragments=((8, 12), (0, 3)))], STRICT)


def test_overlap_counts_only_characters_inside_fragments():
    gold = [m(0, 12, fragments=((0, 3), (8, 12)))]
    assert not matched(gold, [m(4, 7)], OVERLAP)
    assert matched(gold, [m(2, 5)], OVERLAP)
    assert shared_characters(gold[0], m(2, 9)) == 2


def test_accepted_alternatives():
    gold = [m(0, 10, alternatives=((2, 10), (0, 6)))]
    assert matched(gold, [m(2, 10)], ACCEPTED_ALTERNATIVES)
    assert matched(gold, [m(0, 10)], ACCEPTED_ALTERNATIVES)
    assert not matched(gold, [m(3, 10)], ACCEPTED_ALTERNATIVES)
    # Two system mentions on alternatives of one gold mention: one claims it.
    assert len(matched(gold, [m(2, 10), m(0, 6)], ACCEPTED_ALTERNATIVES)) == 1


def test_alternative_far_from_the_gold_span_is_found():
    gold = [m(50, 60, alternatives=((0, 4),))]
    assert matched(gold, [m(0, 4)], ACCEPTED_ALTERNATIVES)


def test_invalid_mentions_are_rejected_with_the_span():
    with pytest.raises(ValueError, match=r"\(5, 3\)"):
        Mention(5, 3, "G")
    with pytest.raises(ValueError, match="outside"):
        Mention(0, 5, "G", fragments=((0, 2), (4, 7)))


# --- properties -----------------------------------------------------------------


@st.composite
def mentions(draw, with_alternatives: bool = False, max_size: int = 8) -> list[Mention]:
    result = []
    for _ in range(draw(st.integers(0, max_size))):
        begin = draw(st.integers(0, 30))
        end = begin + draw(st.integers(1, 8))
        fragments: tuple = ()
        if end - begin >= 3 and draw(st.booleans()):
            cut1 = draw(st.integers(begin + 1, end - 2))
            cut2 = draw(st.integers(cut1 + 1, end - 1))
            fragments = ((begin, cut1), (cut2, end))
        alternatives: tuple = ()
        if with_alternatives:
            alternatives = tuple(
                (b, b + draw(st.integers(1, 6)))
                for b in draw(st.lists(st.integers(max(0, begin - 3), end), max_size=2))
            )
        label = draw(st.sampled_from("AB"))
        result.append(Mention(begin, end, label, alternatives, fragments))
    return result


def brute_force_maximum(gold, system, criterion) -> int:
    if not gold or not system:
        return 0
    ok = np.array(
        [[float(criterion.spans_match(g, s) and g.label == s.label) for s in system] for g in gold]
    )
    rows, cols = linear_sum_assignment(ok, maximize=True)
    return int(ok[rows, cols].sum())


@settings(max_examples=150, deadline=None)
@given(mentions(with_alternatives=True), mentions(), st.sampled_from(ALL_CRITERIA), st.randoms())
def test_matching_is_one_to_one_maximum_and_order_free(gold, system, criterion, rnd):
    result = match_mentions(gold, system, criterion)
    golds = [g for g, _ in result.pairs]
    systems = [s for _, s in result.pairs]
    assert len(set(golds)) == len(golds) and len(set(systems)) == len(systems)
    for g, s in result.pairs:
        assert criterion.spans_match(gold[g], system[s]) and gold[g].label == system[s].label
    assert sorted(result.unmatched_gold + golds) == list(range(len(gold)))
    assert sorted(result.unmatched_system + systems) == list(range(len(system)))
    assert len(result.pairs) == brute_force_maximum(gold, system, criterion)

    shuffled_gold, shuffled_system = list(gold), list(system)
    rnd.shuffle(shuffled_gold)
    rnd.shuffle(shuffled_system)
    again = match_mentions(shuffled_gold, shuffled_system, criterion)

    def pair_key(pair):
        return (pair[0].sort_key(), pair[1].sort_key())

    assert sorted(
        ((shuffled_gold[g], shuffled_system[s]) for g, s in again.pairs), key=pair_key
    ) == sorted(((gold[g], system[s]) for g, s in result.pairs), key=pair_key)


@settings(max_examples=100, deadline=None)
@given(mentions(), st.sampled_from(ALL_CRITERIA))
def test_every_mention_matches_itself(gold, criterion):
    result = match_mentions(gold, list(gold), criterion)
    assert len(result.pairs) == len(gold)
