"""Tests for production-based evaluation (casflow.components.metrics.productions)."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.formats.penn.parse import Tree, parse_tree
from casflow.components.metrics.productions import (
    ERROR_CLASSES,
    Production,
    classify,
    evaluate_productions,
    production_counts,
    productions,
    score_productions,
)
from casflow.pipeline.counts import sum_counts

GOLD = "( (S (NP-SBJ (DT a) (NML (NN b))) (VP (VBD c) (NP-1 (NN d)) (NP (-NONE- *T*)))) )"


def classes(result, side: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for _, name, _ in getattr(result, side):
        found[name] = found.get(name, 0) + 1
    return found


def test_productions_of_a_tree():
    words, found = productions(parse_tree(GOLD))
    assert words == ["a", "b", "c", "d"]
    # The trace and its emptied NP are gone; the unlabeled root gives nothing.
    assert sorted(map(str, found.elements())) == [
        "NML[1:2] -> NN",
        "NP[0:2] -> DT NML",
        "NP[3:4] -> NN",
        "S[0:4] -> NP VP",
        "VP[2:4] -> VBD NP",
    ]
    assert productions(parse_tree(GOLD.replace("( (S", "(TOP (S")))[1] == found
    # A labelled root other than TOP/ROOT counts.
    assert Production("S", ("NN",), 0, 1) in productions(parse_tree("(S (NN a))"))[1]


def test_wrong_daughters_and_no_match():
    # VP is flattened into S: S keeps its span and label, VP has no counterpart.
    result = evaluate_productions(
        parse_tree(GOLD), parse_tree("(S (NP (DT a) (NML (NN b))) (VBD c) (NP (NN d)))")
    )
    assert (result.matched, result.gold, result.test) == (3, 5, 4)
    assert classes(result, "missing") == {"wrong_daughters": 1, "no_match": 1}
    assert classes(result, "extra") == {"wrong_daughters": 1}
    [(missing_s, _, closest)] = [e for e in result.missing if e[0].parent == "S"]
    assert str(closest) == "S[0:4] -> NP VBD NP"


def test_wrong_label():
    result = evaluate_productions(
        parse_tree(GOLD), parse_tree("(S (ADJP (DT a) (NML (NN b))) (VP (VBD c) (NP (NN d))))")
    )
    # S -> ADJP VP has the wrong daughters; ADJP -> DT NML has the wrong label.
    assert classes(result, "missing") == {"wrong_daughters": 1, "wrong_label": 1}
    assert classes(result, "extra") == {"wrong_daughters": 1, "wrong_label": 1}


def test_wrong_label_and_daughters():
    result = evaluate_productions(
        parse_tree(GOLD), parse_tree("(S (ADJP (DT a) (NN b)) (VP (VBD c) (NP (NN d))))")
    )
    assert classes(result, "missing") == {
        "wrong_daughters": 1,  # S -> NP VP
        "wrong_label_and_daughters": 1,  # NP -> DT NML vs ADJP -> DT NN
        "no_match": 1,  # NML -> NN
    }


def test_extensions_and_truncations():
    short = parse_tree("(S (NP (DT a) (NML (NN b))) (NN c))")
    long = parse_tree("(S (NP (DT a) (NML (NN b) (NN c))))")
    extended = evaluate_productions(short, long)
    assert classes(extended, "missing") == {
        "wrong_daughters": 1,  # S -> NP NN vs S -> NP
        "extension_all_match": 1,  # NP[0:2] -> DT NML vs NP[0:3] -> DT NML
        "extension_parent_match": 1,  # NML[1:2] -> NN vs NML[1:3] -> NN NN
    }
    # "Extension" means a larger test span on the extra side too.
    assert classes(extended, "extra") == classes(extended, "missing")
    truncated = evaluate_productions(long, short)
    assert classes(truncated, "missing") == {
        "wrong_daughters": 1,
        "truncation_all_match": 1,
        "truncation_parent_match": 1,
    }


def test_closest_match_preferences():
    gold = Production("NP", ("DT", "NN"), 2, 4)
    same_span_vp = Production("VP", ("DT", "NN"), 2, 4)
    wider_parent_only = Production("NP", ("DT", "NN", "NN"), 2, 5)
    much_wider_all = Production("NP", ("DT", "NN"), 0, 6)
    narrower_all = Production("NP", ("DT", "NN"), 2, 3)
    crossing = Production("NP", ("DT", "NN"), 3, 6)
    # A same-span candidate wins over any nested one.
    assert classify(gold, [wider_parent_only, same_span_vp], missing=True) == (
        "wrong_label",
        same_span_vp,
    )
    # All daughters matching beats a closer span with only the parent matching.
    assert classify(gold, [wider_parent_only, much_wider_all], missing=True) == (
        "extension_all_match",
        much_wider_all,
    )
    # Then the smaller difference in length.
    assert classify(gold, [much_wider_all, narrower_all], missing=True) == (
        "truncation_all_match",
        narrower_all,
    )
    # One differing aspect (the span) beats two (label and daughters).
    both_wrong = Production("ADJP", ("JJ",), 2, 4)
    assert classify(gold, [both_wrong, much_wider_all], missing=True)[0] == "extension_all_match"
    assert classify(gold, [both_wrong, wider_parent_only], missing=True) == (
        "wrong_label_and_daughters",
        both_wrong,
    )
    # Seen from the test side, a test span inside the gold one is a truncation.
    assert classify(narrower_all, [gold], missing=False)[0] == "truncation_all_match"
    assert classify(gold, [crossing], missing=True) == ("no_match", None)


def test_scores_and_shares_from_counts():
    first = production_counts(
        parse_tree(GOLD), parse_tree("(S (NP (DT a) (NML (NN b))) (VBD c) (NP (NN d)))")
    )
    second = production_counts(parse_tree(GOLD), parse_tree(GOLD))
    scores = score_productions(sum_counts([first, second]))
    assert (scores["matched"], scores["gold"], scores["test"]) == (8, 10, 9)
    assert scores["precision"] == pytest.approx(8 / 9)
    assert scores["recall"] == pytest.approx(8 / 10)
    assert scores["missing"]["wrong_daughters"] == 1
    assert scores["missing_share"]["no_match"] == pytest.approx(1 / 2)
    assert scores["extra_share"]["wrong_daughters"] == 1.0


def test_missed_productions_and_what_was_built_instead_add_up_over_documents():
    flat = parse_tree("(S (NP (DT a) (NML (NN b))) (VBD c) (NP (NN d)))")
    first = production_counts(parse_tree(GOLD), flat)
    second = production_counts(parse_tree(GOLD), copy.deepcopy(flat))
    third = production_counts(parse_tree(GOLD), parse_tree(GOLD))
    scores = score_productions(sum_counts([first, second, third]))
    assert scores["instead"] == [
        {"gold": "S -> NP VP", "instead": "S -> NP VBD NP", "count": 2},
        {"gold": "VP -> VBD NP", "instead": "(nothing near it)", "count": 2},
    ]
    assert sum(p["count"] for p in scores["instead"]) == scores["gold"] - scores["matched"]


def test_sentences_that_cannot_be_scored_are_counted():
    gold = parse_tree(GOLD)
    assert evaluate_productions(gold, None).status == "skipped_empty"
    assert evaluate_productions(gold, parse_tree("(S (NN a) (NN b))")).status == "skipped_length"
    assert (
        evaluate_productions(gold, parse_tree("(S (DT a) (NN b) (VBD c) (NN e))")).status
        == "skipped_words"
    )
    counts = production_counts(gold, None)
    assert counts["productions/skipped_empty"] == counts["productions/sentences"] == 1
    assert counts["productions/gold"] == 0


LABELS = ["S", "NP", "VP", "PP", "ADVP", "NP-SBJ-1", "SBAR", "NML"]
TAGS = ["NN", "DT", "VB", "JJ", "IN", ",", "-NONE-"]


def random_tree(rng: random.Random, depth: int = 0) -> Tree:
    if depth > 0 and (depth > 4 or rng.random() < 0.35):
        tag = rng.choice(TAGS)
        return Tree(tag, word="*" if tag == "-NONE-" else rng.choice("abcdefgh"))
    return Tree(rng.choice(LABELS), [random_tree(rng, depth + 1) for _ in range(rng.randint(1, 3))])


def perturb(tree: Tree, rng: random.Random) -> Tree:
    """Relabel, splice out or group nodes; the words stay the same."""
    tree = copy.deepcopy(tree)
    for node in [n for n in tree.subtrees() if n.word is None]:
        action = rng.random()
        if action < 0.2:
            node.label = rng.choice(LABELS)
        elif action < 0.4 and node.children and node.children[0].word is None:
            node.children[0:1] = node.children[0].children
        elif action < 0.6 and len(node.children) >= 2:
            node.children[0:2] = [Tree(rng.choice(LABELS), node.children[0:2])]
    return tree


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32))
def test_error_classes_partition_the_unmatched_productions(seed: int):
    rng = random.Random(seed)
    gold = Tree("", [random_tree(rng)])
    same = evaluate_productions(gold, copy.deepcopy(gold))
    if same.status == "skipped_empty":
        return
    assert same.matched == same.gold == same.test
    assert not same.missing and not same.extra
    result = evaluate_productions(gold, perturb(gold, rng))
    assert result.status == "ok"
    counts = result.counts()
    missing = sum(counts[f"productions/missing/{name}"] for name in ERROR_CLASSES)
    extra = sum(counts[f"productions/extra/{name}"] for name in ERROR_CLASSES)
    assert missing == result.gold - result.matched
    assert extra == result.test - result.matched


@pytest.mark.slow
@pytest.mark.corpus
def test_craft_trees_against_themselves_match_every_production(corpora_dir: Path):
    folder = corpora_dir / "craft" / "structural-annotation" / "treebank" / "penn"
    counts = []
    for path in sorted(folder.glob("*.tree"))[::9]:
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                counts.append(production_counts(parse_tree(line), parse_tree(line)))
    scores = score_productions(sum_counts(counts))
    assert scores["valid_sentences"] == scores["sentences"] > 1000
    assert scores["precision"] == scores["recall"] == 1.0
