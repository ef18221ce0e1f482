"""Sentence (whitespace-trimmed) and token span P/R/F."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.metrics.segmentation import (
    score_segmentation,
    segmentation_counts,
    sentence_counts,
    token_counts,
    trim_span,
    trimmed_sentences,
)

TEXT = "Hello world.  Next one.\n\nLast"
#       0    5    1012 14  18  2223 25


def test_trim_span():
    assert trim_span(TEXT, 12, 18) == (14, 18)
    assert trim_span(TEXT, 14, 25) == (14, 23)
    assert trim_span(TEXT, 12, 14) == (14, 14)


def test_trailing_and_leading_whitespace_do_not_matter():
    gold = [(0, 12), (14, 23), (25, 29)]
    system = [(0, 14), (14, 25), (25, 29)]
    counts = sentence_counts(TEXT, gold, system).counts
    assert counts == {"sentence/tp": 3, "sentence/fp": 0, "sentence/fn": 0}


def test_whitespace_only_sentences_are_dropped():
    assert trimmed_sentences(TEXT, [(0, 12), (12, 14), (23, 25)]) == [(0, 12)]
    counts = sentence_counts(TEXT, [(0, 12)], [(0, 12), (12, 14)]).counts
    assert counts == {"sentence/tp": 1, "sentence/fp": 0, "sentence/fn": 0}


def test_missed_boundary():
    result = sentence_counts(TEXT, [(0, 12), (14, 23), (25, 29)], [(0, 23), (25, 29)])
    assert result.counts == {"sentence/tp": 1, "sentence/fp": 1, "sentence/fn": 2}
    scores = score_segmentation(result.counts)["sentence"]
    assert scores["precision"] == pytest.approx(1 / 2)
    assert scores["recall"] == pytest.approx(1 / 3)
    assert {(e["type"], e["text"]) for e in result.errors} == {
        ("FP", "Hello world.  Next one."),
        ("FN", "Hello world."),
        ("FN", "Next one."),
    }


def test_tokens_are_exact_spans():
    gold = [(0, 5), (6, 11), (11, 12)]
    system = [(0, 5), (6, 12)]
    counts = token_counts(TEXT, gold, system).counts
    assert counts == {"token/tp": 1, "token/fp": 1, "token/fn": 2}
    scores = score_segmentation(counts)
    assert set(scores) == {"token"}
    assert scores["token"]["f1"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))


def test_tokens_are_not_trimmed():
    assert token_counts(TEXT, [(0, 5)], [(0, 6)]).counts["token/tp"] == 0


def test_segmentation_counts_combines_both():
    counts = segmentation_counts(TEXT, [(0, 12)], [(0, 13)], [(0, 5)], [(0, 5)]).counts
    assert counts["sentence/tp"] == 1 and counts["token/tp"] == 1


def test_span_outside_text_is_an_error():
    with pytest.raises(ValueError, match="outside the document text"):
        sentence_counts("short", [(0, 50)], [])


@st.composite
def text_and_spans(draw):
    text = draw(st.text(alphabet="ab .\n", min_size=1, max_size=40))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=8))) | {0, len(text)})
    return text, list(zip(cuts, cuts[1:], strict=False))


@settings(max_examples=100, deadline=None)
@given(text_and_spans(), st.randoms())
def test_gold_against_itself_and_order(case, rnd):
    text, spans = case
    shuffled = list(spans)
    rnd.shuffle(shuffled)
    counts = segmentation_counts(text, spans, shuffled, spans, shuffled).counts
    assert counts["sentence/fp"] == counts["sentence/fn"] == 0
    assert counts["token/fp"] == counts["token/fn"] == 0
    assert counts["token/tp"] == len(spans)
    assert counts["sentence/tp"] == len(trimmed_sentences(text, spans))
