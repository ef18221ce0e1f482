"""Tests for the leaf-ancestor metric (casflow.components.metrics.leaf_ancestor)."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.formats.penn.parse import (
    Tree,
    category,
    constituent_spans,
    parse_tree,
    prune,
)
from casflow.components.metrics.leaf_ancestor import (
    COLLINS_DELETE_TAGS,
    edit_distance,
    evaluate_leaf_ancestor,
    leaf_ancestor_counts,
    lineage_similarity,
    lineages,
    score_leaf_ancestor,
)
from casflow.pipeline.counts import sum_counts

GOLD = "( (S (NP-SBJ (DT the) (NN cat)) (VP (VBD sat) (NP-1 (-NONE- *))) (. .)) )"
TEST = "(TOP (S (NP (DT the)) (VP (NN cat) (VBD sat)) (. .)))"


def spelled(tree: Tree, **options) -> list[str]:
    return [f"{word}: {' '.join(lineage)}" for word, lineage in lineages(tree, **options)]


def test_lineages_of_sampsons_example():
    tree = parse_tree(
        "(S (N1 (CD two) (N1 (NN tax) (NN revision)) (NNS bills)) (V (VBD were) (VBN passed)))"
    )
    assert spelled(tree) == [
        "two: N1 [ S",
        "tax: [ N1 N1 S",
        "revision: N1 ] N1 S",
        "bills: N1 ] S",
        "were: [ V S",
        "passed: V S ]",
    ]


def test_single_word_constituents_get_both_markers_and_the_root_bracket_is_dropped():
    tree = parse_tree("( (S (NP-SBJ (PRP it)) (VP (VBD rained))) )")
    assert spelled(tree) == ["it: NP ] [ S", "rained: [ VP S ]"]
    assert spelled(tree, include_tags=True) == ["it: PRP NP ] [ S", "rained: VBD [ VP S ]"]
    assert lineages(parse_tree("(TOP (S (NP-SBJ (PRP it)) (VP (VBD rained))))")) == lineages(tree)


def test_empty_elements_are_removed_before_lineages_are_built():
    assert spelled(parse_tree(GOLD)) == [
        "the: NP [ S",
        "cat: NP ] S",
        "sat: [ VP ] S",  # VP keeps only "sat" once the trace is gone
        ".: S ]",
    ]
    assert [word for word, _ in lineages(parse_tree(GOLD), COLLINS_DELETE_TAGS)] == [
        "the",
        "cat",
        "sat",
    ]


def test_edit_distance_and_similarity():
    assert edit_distance(list("kitten"), list("sitting")) == 3
    assert edit_distance([], ["S"]) == 1
    assert lineage_similarity(["NP", "[", "S"], ["NP", "]", "[", "S"]) == pytest.approx(1 - 1 / 7)
    assert lineage_similarity([], []) == 1.0
    assert lineage_similarity([], ["S"]) == 0.0


def test_hand_worked_sentence_score():
    # Test lineages: the "NP ] [ S", cat "[ VP S", sat "VP ] S", . "S ]".
    # the: one insertion -> 1 - 1/7; cat: two substitutions -> 1 - 2/6;
    # sat: one deletion -> 1 - 1/7; ".": identical -> 1.
    result = evaluate_leaf_ancestor(parse_tree(GOLD), parse_tree(TEST))
    assert result.status == "ok"
    assert result.words == ["the", "cat", "sat", "."]
    expected = [6 / 7, 2 / 3, 6 / 7, 1.0]
    assert result.word_scores == pytest.approx(expected)
    assert result.sentence_score == pytest.approx(sum(expected) / 4)


def test_corpus_score_and_mean_sentence_score_from_counts():
    first = leaf_ancestor_counts(parse_tree(GOLD), parse_tree(TEST))
    second = leaf_ancestor_counts(parse_tree("(NP (NN a))"), parse_tree("(NP (NN a))"))
    scores = score_leaf_ancestor(sum_counts([first, second]))
    word_scores = [6 / 7, 2 / 3, 6 / 7, 1.0]
    assert scores["words"] == 5
    assert scores["corpus_score"] == pytest.approx((sum(word_scores) + 1.0) / 5)
    assert scores["mean_sentence_score"] == pytest.approx((sum(word_scores) / 4 + 1.0) / 2)
    assert scores["exact_words"] == pytest.approx(2 / 5)
    assert scores["exact_sentences"] == pytest.approx(1 / 2)


def test_sentences_that_cannot_be_scored_are_counted():
    gold = parse_tree(GOLD)
    cases = {
        "skipped_length": parse_tree("(S (NP (DT the) (NN cat)) (VP (VBD sat)))"),
        "skipped_words": parse_tree("(S (NP (DT the) (NN dog)) (VP (VBD sat)) (. .))"),
        "skipped_empty": None,
    }
    for status, test in cases.items():
        counts = leaf_ancestor_counts(gold, test)
        assert counts[f"leaf_ancestor/{status}"] == 1
        assert counts["leaf_ancestor/valid"] == counts["leaf_ancestor/words"] == 0
    scores = score_leaf_ancestor(sum_counts(leaf_ancestor_counts(gold, t) for t in cases.values()))
    assert scores["sentences"] == scores["skipped_sentences"] == 3
    assert scores["corpus_score"] == 0.0


LABELS = ["S", "NP", "VP", "PP", "ADVP", "NP-SBJ-1", "SBAR", "NML"]
TAGS = ["NN", "DT", "VB", "JJ", "IN", ",", "-NONE-"]


def random_tree(rng: random.Random, depth: int = 0) -> Tree:
    if depth > 0 and (depth > 4 or rng.random() < 0.35):
        tag = rng.choice(TAGS)
        return Tree(tag, word="*" if tag == "-NONE-" else rng.choice("abcdefgh"))
    return Tree(rng.choice(LABELS), [random_tree(rng, depth + 1) for _ in range(rng.randint(1, 3))])


def relabel_or_splice(tree: Tree, rng: random.Random) -> Tree:
    """Relabel or splice out some phrasal nodes; the words stay the same."""
    tree = copy.deepcopy(tree)
    pairs = [(parent, child) for parent in tree.subtrees() for child in parent.children]
    for parent, child in pairs:
        if child.word is not None:
            continue
        if rng.random() < 0.3:
            child.label = rng.choice(LABELS)
        elif rng.random() < 0.3:
            index = next((i for i, c in enumerate(parent.children) if c is child), None)
            if index is not None:
                parent.children[index : index + 1] = child.children
    return tree


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32))
def test_identical_trees_score_one_and_changed_trees_score_in_range(seed: int):
    rng = random.Random(seed)
    gold = Tree("", [random_tree(rng)])
    same = evaluate_leaf_ancestor(gold, copy.deepcopy(gold))
    if same.status == "skipped_empty":
        assert not lineages(gold)
        return
    assert same.word_scores == [1.0] * len(same.words)
    changed = evaluate_leaf_ancestor(gold, relabel_or_splice(gold, rng))
    assert changed.status == "ok"  # relabelling and splicing keep the words
    assert all(0.0 <= score <= 1.0 for score in changed.word_scores)
    counts = changed.counts()
    assert counts["leaf_ancestor/word_score_sum"] == pytest.approx(
        changed.sentence_score * len(changed.words)
    )


@pytest.mark.slow
@pytest.mark.corpus
def test_craft_trees_against_themselves_score_one(corpora_dir: Path):
    folder = corpora_dir / "craft" / "structural-annotation" / "treebank" / "penn"
    counts = []
    for path in sorted(folder.glob("*.tree"))[::9]:
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                counts.append(leaf_ancestor_counts(parse_tree(line), parse_tree(line)))
    scores = score_leaf_ancestor(sum_counts(counts))
    assert scores["valid_sentences"] == scores["sentences"] > 1000
    assert scores["corpus_score"] == scores["mean_sentence_score"] == 1.0


def reference_lineages(tree: Tree, include_tags: bool = False) -> list[tuple[str, list[str]]]:
    """Sampson's definition read off word spans directly: for each word, its phrasal
    ancestors leaf first, "[" below the highest one it starts, "]" above the highest
    one it ends (the walk in the metric carries these down the tree instead)."""
    pruned = prune(tree, {"-NONE-"})
    if pruned is None:
        return []
    spans = {id(node): (start, end) for node, start, end in constituent_spans(pruned)}
    result = []

    def walk(node: Tree, ancestors: list[Tree]) -> None:
        if node.word is not None:
            position = spans[id(node)][0]
            starts = [d for d, a in enumerate(ancestors) if spans[id(a)][0] == position]
            ends = [d for d, a in enumerate(ancestors) if spans[id(a)][1] == position + 1]
            lineage = [category(node.label)] if include_tags else []
            for depth in reversed(range(len(ancestors))):
                if starts and depth == starts[0]:
                    lineage.append("[")
                lineage.append(category(ancestors[depth].label))
                if ends and depth == ends[0]:
                    lineage.append("]")
            result.append((node.word, lineage))
            return
        counted = node is not pruned or category(node.label) not in {"", "TOP", "ROOT"}
        for child in node.children:
            walk(child, [*ancestors, node] if counted else ancestors)

    walk(pruned, [])
    return result


def reference_edit_distance(first: list[str], second: list[str]) -> int:
    table = [
        [i + j if i * j == 0 else 0 for j in range(len(second) + 1)] for i in range(len(first) + 1)
    ]
    for i in range(1, len(first) + 1):
        for j in range(1, len(second) + 1):
            table[i][j] = min(
                table[i - 1][j] + 1,
                table[i][j - 1] + 1,
                table[i - 1][j - 1] + (first[i - 1] != second[j - 1]),
            )
    return table[-1][-1]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.booleans())
def test_lineages_follow_the_definition_on_random_trees(seed: int, include_tags: bool):
    rng = random.Random(seed)
    tree = Tree(rng.choice(["", "TOP", "S"]), [random_tree(rng)])
    assert lineages(tree, include_tags=include_tags) == reference_lineages(tree, include_tags)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["NP", "S", "[", "]", "VP"]), max_size=8),
    st.lists(st.sampled_from(["NP", "S", "[", "]", "VP"]), max_size=8),
)
def test_edit_distance_is_levenshtein_with_shared_ends(first: list[str], second: list[str]):
    # shared ends (the lineages' common root side) are cut before the table is built
    suffix = ["S", "]"]
    assert edit_distance(first, second) == reference_edit_distance(first, second)
    assert edit_distance([*first, *suffix], [*second, *suffix]) == reference_edit_distance(
        first, second
    )
