"""POS accuracy over span-aligned tokens and P/R/F of (span, tag)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.metrics.pos import TaggedToken, pos_counts, score_pos

TEXT = "Mice lacking Pax6 die."
GOLD = [
    TaggedToken(0, 4, "NNS"),
    TaggedToken(5, 12, "VBG"),
    TaggedToken(13, 17, "NN"),
    TaggedToken(18, 21, "VBP"),
    TaggedToken(21, 22, "."),
]
# "Pax6" split in two, "lacking" mistagged.
SYSTEM = [
    TaggedToken(0, 4, "NNS"),
    TaggedToken(5, 12, "NN"),
    TaggedToken(13, 16, "NN"),
    TaggedToken(16, 17, "CD"),
    TaggedToken(18, 21, "VBP"),
    TaggedToken(21, 22, "."),
]


def test_hand_worked_accuracy_and_prf():
    result = pos_counts(GOLD, SYSTEM, text=TEXT)
    scores = score_pos(result.counts)
    assert scores["aligned"] == 4
    assert scores["accuracy"] == pytest.approx(3 / 4)
    assert (scores["tp"], scores["fp"], scores["fn"]) == (3, 3, 2)
    assert scores["precision"] == pytest.approx(3 / 6)
    assert scores["recall"] == pytest.approx(3 / 5)
    assert scores["tag"]["NN"] == pytest.approx(
        {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 2, "fn": 1}
    )
    assert scores["tag"]["VBG"]["fn"] == 1
    assert result.errors == [
        {
            "type": "TAG",
            "begin": 5,
            "end": 12,
            "gold_tag": "VBG",
            "system_tag": "NN",
            "text": "lacking",
        }
    ]


def test_a_token_the_system_left_untagged_counts_as_wrong():
    # CoNLL 2018 scores a "_" tag as wrong; dropping the token would raise the accuracy.
    system = [TaggedToken(t.begin, t.end, t.tag if t.begin == 0 else None) for t in GOLD]
    result = pos_counts(GOLD, system, text=TEXT)
    scores = score_pos(result.counts)
    assert scores["aligned"] == 5
    assert scores["accuracy"] == scores["precision"] == scores["recall"] == pytest.approx(1 / 5)
    assert set(scores["tag"]) == {"NNS", "VBG", "NN", "VBP", "."}
    assert scores["tag"]["VBG"]["fn"] == 1 and scores["tag"]["NNS"]["tp"] == 1
    assert result.errors[0] == {
        "type": "TAG",
        "begin": 5,
        "end": 12,
        "gold_tag": "VBG",
        "system_tag": None,
        "text": "lacking",
    }


def test_tag_map_applies_to_both_sides():
    coarse = {"NN": "N", "NNS": "N", "VBG": "V", "VBP": "V"}
    system = [TaggedToken(t.begin, t.end, "NNS" if t.tag == "NN" else t.tag) for t in GOLD]
    assert score_pos(pos_counts(GOLD, system).counts)["accuracy"] == pytest.approx(4 / 5)
    assert score_pos(pos_counts(GOLD, system, tag_map=coarse).counts)["accuracy"] == 1.0


def test_system_tag_map_translates_only_system_tags():
    universal = [
        TaggedToken(t.begin, t.end, u)
        for t, u in zip(GOLD, ["NOUN", "VERB", "PROPN", "VERB", "PUNCT"], strict=True)
    ]
    to_ptb = {"NOUN": "NNS", "VERB": "VBP", "PROPN": "NN", "PUNCT": "."}
    scores = score_pos(pos_counts(GOLD, universal, system_tag_map=to_ptb).counts)
    assert scores["accuracy"] == pytest.approx(4 / 5)  # "lacking" VBG vs VBP
    # A gold tag that happens to be named like a system tag is not translated.
    gold_like = [TaggedToken(0, 4, "NOUN")]
    assert (
        score_pos(pos_counts(gold_like, [TaggedToken(0, 4, "NOUN")], system_tag_map=to_ptb).counts)[
            "accuracy"
        ]
        == 0.0
    )


def test_repeated_span_is_rejected():
    with pytest.raises(ValueError, match="share the span"):
        pos_counts(GOLD, [TaggedToken(0, 4, "NN"), TaggedToken(0, 4, "NNS")])


def test_no_aligned_tokens_gives_zero_accuracy():
    assert score_pos(pos_counts(GOLD, [TaggedToken(1, 3, "NN")]).counts)["accuracy"] == 0.0


@st.composite
def tagged(draw):
    starts = sorted(set(draw(st.lists(st.integers(0, 60), max_size=12))))
    return [
        TaggedToken(b, b + draw(st.integers(1, 3)), draw(st.sampled_from(["A", "B", "C"])))
        for b in starts
    ]


@settings(max_examples=100, deadline=None)
@given(tagged(), st.randoms())
def test_gold_against_itself_in_any_order(gold, rnd):
    system = list(gold)
    rnd.shuffle(system)
    scores = score_pos(pos_counts(gold, system).counts)
    assert scores["aligned"] == len(gold)
    if gold:
        assert scores["accuracy"] == scores["f1"] == 1.0
