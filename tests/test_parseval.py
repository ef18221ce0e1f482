"""Tests for EVALB-style PARSEVAL scoring (casflow.components.metrics.parseval)."""

from __future__ import annotations

import copy
import os
import random
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.formats.penn.parse import Tree, format_tree, parse_tree
from casflow.components.metrics.parseval import (
    COLLINS_PARAMS,
    EvalbParams,
    evalb_label,
    evaluate_parseval,
    parse_evalb_params,
    parseval_counts,
    score_parseval,
)
from casflow.pipeline.counts import sum_counts

FIXTURES = Path(__file__).parent / "fixtures" / "evalb"

GOLD = "( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PP-LOC (IN on) (NP (DT the) (NN mat)))) (. .)) )"


def test_hand_worked_attachment_error():
    # Words after deleting "." : The cat sat on the mat (0..6).
    # Gold brackets: ""(0,6) S(0,6) NP(0,2) VP(2,6) PP(3,6) NP(4,6)         -> 6
    # Test brackets: ""(0,6) S(0,6) NP(0,2) VP(2,3) PP(3,6) NP(4,6)         -> 6
    # ""(0,6) is the outer "( ... )" bracket, counted with an empty label as EVALB
    # does. VP(2,3) is unmatched but nested inside gold VP(2,6): no crossing.
    test = "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (PP (IN on) (NP (DT the) (NN mat))) (. .)) )"
    result = evaluate_parseval(parse_tree(GOLD), parse_tree(test))
    assert (result.matched, result.gold, result.test, result.crossing) == (5, 6, 6, 0)
    assert result.missing == [(2, 6, "VP")]
    assert result.extra == [(2, 3, "VP")]
    assert (result.words, result.correct_tags) == (6, 6)
    assert result.f1 == pytest.approx(10 / 12)
    assert not result.complete_match
    dropped = evaluate_parseval(parse_tree(GOLD), parse_tree(test), outer_bracket=False)
    assert (dropped.matched, dropped.gold, dropped.test) == (4, 5, 5)
    assert dropped.f1 == pytest.approx(0.8)


def test_crossing_counts_test_brackets_that_cross_a_gold_bracket():
    gold = parse_tree("(S (NP (DT a) (NN b)) (VP (VB c) (NN d)))")
    # Y(1,3) crosses NP(0,2) and VP(2,4); it is still one crossing bracket.
    test = parse_tree("(S (X (DT a)) (Y (NN b) (VB c)) (Z (NN d)))")
    result = evaluate_parseval(gold, test)
    assert (result.matched, result.gold, result.test, result.crossing) == (1, 3, 4, 1)


def test_empty_elements_and_punctuation_are_deleted_with_emptied_brackets():
    gold = parse_tree(
        "( (S (NP-SBJ-1 (-NONE- *PRO*)) (PRN (, ,) (: --)) (VP (VB go) (NP (-NONE- *T*-1))) (. .)) )"
    )
    test = parse_tree("(TOP (S (VP (VB go))))")
    result = evaluate_parseval(gold, test)
    # Only S(0,1) and VP(0,1) remain on either side, plus the gold's outer
    # bracket ""(0,1) (the test's TOP is deleted).
    assert (result.matched, result.gold, result.test, result.words) == (2, 3, 2, 1)
    assert result.length == 4  # cutoff length counts punctuation, not -NONE-


def test_function_tags_indices_and_eq_label_advp_prt():
    gold = parse_tree("(S (NP-SBJ-1 (PRP it)) (VP (VBD gave) (PRT (RP up))))")
    test = parse_tree("(S (NP=2 (PRP it)) (VP (VBD gave) (ADVP (RB up))))")
    result = evaluate_parseval(gold, test)
    assert (result.matched, result.gold, result.test) == (4, 4, 4)
    assert (result.words, result.correct_tags) == (3, 2)  # RP vs RB
    assert evalb_label("NP-SBJ-1=2") == "NP"


def test_outer_bracket_counts_unlabeled_but_not_top():
    inner = "(S (NP (NN a)) (VP (VB b)))"
    bare = evaluate_parseval(parse_tree(inner), parse_tree(inner))
    # EVALB: "( (S ...) )" has an empty-label bracket no DELETE_LABEL removes;
    # "(TOP (S ...))" has a TOP bracket that COLLINS.prm deletes.
    wrapped = evaluate_parseval(parse_tree(f"( {inner} )"), parse_tree(f"( {inner} )"))
    top = evaluate_parseval(parse_tree(f"( {inner} )"), parse_tree(f"(TOP {inner})"))
    dropped = evaluate_parseval(
        parse_tree(f"( {inner} )"), parse_tree(f"(TOP {inner})"), outer_bracket=False
    )
    bare_dropped = evaluate_parseval(parse_tree(inner), parse_tree(inner), outer_bracket=False)
    assert (bare.gold, bare.test, bare.matched) == (3, 3, 3)
    assert (wrapped.gold, wrapped.test, wrapped.matched) == (4, 4, 4)
    assert (top.gold, top.test, top.matched) == (4, 3, 3)
    assert (dropped.gold, dropped.test, dropped.matched) == (3, 3, 3)
    assert (bare_dropped.gold, bare_dropped.test, bare_dropped.matched) == (3, 3, 3)


def test_unary_duplicates_match_as_a_multiset():
    gold = parse_tree("(S (NP (NP (DT a) (NN b))) (VP (VB c)))")
    one = evaluate_parseval(gold, parse_tree("(S (NP (DT a) (NN b)) (VP (VB c)))"))
    three = evaluate_parseval(gold, parse_tree("(S (NP (NP (NP (DT a) (NN b)))) (VP (VB c)))"))
    assert (one.matched, one.gold, one.test) == (3, 4, 3)
    assert (three.matched, three.gold, three.test) == (4, 4, 5)


def test_sentences_that_cannot_be_scored_are_counted():
    gold = parse_tree(GOLD)
    comma = parse_tree(GOLD.replace("(NN cat)", "(, cat)"))  # a word is deleted in test only
    other_word = parse_tree(GOLD.replace("(NN cat)", "(NN dog)"))
    only_trace = parse_tree("(S (NP (-NONE- *)))")
    assert evaluate_parseval(gold, comma).status == "skipped_length"
    assert evaluate_parseval(gold, other_word).status == "skipped_words"
    assert evaluate_parseval(gold, None).status == "skipped_empty"
    assert evaluate_parseval(gold, only_trace).status == "skipped_empty"
    counts = parseval_counts(gold, comma)
    assert counts["parseval/sentences"] == 1
    assert counts["parseval/skipped_length"] == 1
    assert counts["parseval/valid"] == 0
    assert counts["parseval/gold"] == counts["parseval/test"] == counts["parseval/matched"] == 0


def test_cutoff_length_counts_punctuation_but_not_empty_elements():
    words = " ".join(f"(NN w{i})" for i in range(40))
    with_period = parse_tree(f"(S {words} (. .))")  # length 41
    with_trace = parse_tree(f"(S {words} (NP (-NONE- *)))")  # length 40
    long_counts = parseval_counts(with_period, with_period)
    short_counts = parseval_counts(with_trace, with_trace)
    assert long_counts["parseval/sentences"] == 1
    assert long_counts["parseval/len<=40/sentences"] == 0
    assert short_counts["parseval/len<=40/sentences"] == 1
    scores = score_parseval(sum_counts([long_counts, short_counts]))
    assert scores["sentences"] == 2
    assert scores["len<=40"]["sentences"] == 1


def test_micro_scores_and_mean_of_sentence_f_differ_as_worked_by_hand():
    # Sentence 1 (outer bracket counted): 5 of 6 gold, 6 test -> F 10/12.
    # Sentence 2 (no wrapper): 1 of 1 -> F 1.0.
    first = parseval_counts(
        parse_tree(GOLD),
        parse_tree(
            "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (PP (IN on) (NP (DT the) (NN mat))) (. .)) )"
        ),
    )
    second = parseval_counts(parse_tree("(NP (NN a))"), parse_tree("(NP (NN a))"))
    scores = score_parseval(sum_counts([first, second]))
    assert scores["recall"] == pytest.approx(6 / 7)
    assert scores["precision"] == pytest.approx(6 / 7)
    assert scores["f1"] == pytest.approx(6 / 7)
    assert scores["mean_sentence_f1"] == pytest.approx((10 / 12 + 1.0) / 2)
    assert scores["complete_match"] == pytest.approx(0.5)
    assert scores["tagging_accuracy"] == 1.0


# EVALB's new.prm (the 2006 distribution's other parameter file): COLLINS.prm plus
# these deletions and the quote labels that evalb.c's fix_quote puts back.
NEW_PRM = "\n".join(
    [
        "LABELED 1                 ",  # trailing blanks, as new.prm has them
        *(f"DELETE_LABEL {label}" for label in ["TOP", "S1", "-NONE-", ",", ":", "``", "''"]),
        *(f"DELETE_LABEL {label}" for label in [".", "?", "!"]),
        "DELETE_LABEL_FOR_LENGTH -NONE-",
        *(f"QUOTE_LABEL {label}" for label in ["``", "''", "POS", "NN", "CD", "VBZ", ":"]),
        "EQ_LABEL ADVP PRT",
    ]
)


def test_quote_label_puts_a_quote_deleted_on_one_side_back():
    # Gold tags the possessive "'" as '' (deleted), the test as POS (kept): 2 words
    # against 3. With new.prm's QUOTE_LABELs EVALB puts the gold "'" back inside NP,
    # which widens to (0, 2), and scores the sentence; COLLINS.prm has no QUOTE_LABEL.
    gold = parse_tree("( (S (NP (NNP Jones) ('' ')) (VP (VBZ runs))) )")
    test = parse_tree("( (S (NP (NNP Jones) (POS ')) (VP (VBZ runs))) )")
    params = parse_evalb_params(NEW_PRM)
    assert params.quote_labels == frozenset({"``", "''", "POS", "NN", "CD", "VBZ", ":"})
    assert evaluate_parseval(gold, test).status == "skipped_length"
    result = evaluate_parseval(gold, test, params)
    assert result.status == "ok"
    assert (result.matched, result.gold, result.test) == (4, 4, 4)  # "", S, NP(0,2), VP(2,3)
    assert (result.words, result.correct_tags, result.length) == (3, 2, 3)
    # Put back on the side that deleted it, whichever that is; other words never.
    swapped = evaluate_parseval(test, gold, params)
    assert (swapped.status, swapped.matched, swapped.words) == ("ok", 4, 3)
    other = parse_tree("( (S (NP (NNP Jones) ('' x)) (VP (VBZ runs))) )")
    assert evaluate_parseval(other, test, params).status == "skipped_length"


def test_parse_evalb_params_reads_collins_settings():
    text = "\n".join(
        [
            "DEBUG 0",
            "MAX_ERROR 10",
            "CUTOFF_LEN 40",
            "LABELED 1",
            *(f"DELETE_LABEL {label}" for label in ["TOP", "-NONE-", ",", ":", "``", "''", "."]),
            "DELETE_LABEL_FOR_LENGTH -NONE-",
            "EQ_LABEL ADVP PRT",
            "# EQ_WORD  Example example",
        ]
    )
    assert parse_evalb_params(text) == COLLINS_PARAMS
    assert parse_evalb_params(text + "\nQUOTE_LABEL POS").quote_labels == {"POS"}
    with pytest.raises(ValueError, match="unknown keyword"):
        parse_evalb_params("DELETE_LABLE TOP")


def _read_rsl(path: Path) -> tuple[list[list[str]], dict[tuple[str, str], float]]:
    rows: list[list[str]] = []
    summary: dict[tuple[str, str], float] = {}
    section = None
    for line in path.read_text().split("\n"):
        fields = line.split()
        if len(fields) == 12 and fields[0].isdigit():
            rows.append(fields)
        elif line.startswith("-- "):
            section = line.strip("- ")
        elif section and "=" in line:
            name, value = line.split("=")
            summary[(section, name.strip())] = float(value)
    return rows, summary


def _summary(scores: dict) -> dict[str, float]:
    return {
        "Number of sentence": scores["sentences"],
        "Number of Error sentence": scores["error_sentences"],
        "Number of Skip  sentence": scores["skip_sentences"],
        "Number of Valid sentence": scores["valid_sentences"],
        "Bracketing Recall": round(100 * scores["recall"], 2),
        "Bracketing Precision": round(100 * scores["precision"], 2),
        "Complete match": round(100 * scores["complete_match"], 2),
        "Average crossing": round(scores["average_crossing"], 2),
        "No crossing": round(100 * scores["no_crossing"], 2),
        "2 or less crossing": round(100 * scores["two_or_less_crossing"], 2),
        "Tagging accuracy": round(100 * scores["tagging_accuracy"], 2),
    }


def _test_tree(line: str) -> Tree | None:
    # EVALB reads a blank line as "no parse"; a line with several top-level
    # brackets is read under an unlabeled root that is not in the file, so the
    # sample is scored with outer_bracket=False (a labelled root is still counted).
    return parse_tree(f"({line})") if line.strip() else None


def test_evalb_sample_results_are_reproduced():
    """EVALB's own sample: sample.gld/tst scored with sample.prm give sample.rsl."""
    params = parse_evalb_params((FIXTURES / "sample.prm").read_text())
    gold_lines = (FIXTURES / "sample.gld").read_text().split("\n")[:-1]
    test_lines = (FIXTURES / "sample.tst").read_text().split("\n")[:-1]
    rows, summary = _read_rsl(FIXTURES / "sample.rsl")
    assert len(gold_lines) == len(test_lines) == len(rows) == 24
    status_codes = {"ok": "0", "skipped_length": "1", "skipped_words": "1", "skipped_empty": "2"}
    counts = []
    for gold_line, test_line, row in zip(gold_lines, test_lines, rows, strict=True):
        result = evaluate_parseval(
            parse_tree(gold_line), _test_tree(test_line), params, outer_bracket=False
        )
        counts.append(result.counts(cutoff_len=params.cutoff_len))
        mine = [str(result.length), status_codes[result.status]]
        mine += [str(n) for n in (result.matched, result.gold, result.test, result.crossing)]
        expected = row[1:3] + row[5:9]
        if result.valid:  # the 1997 sample output prints gold words for error lines
            mine += [str(result.words), str(result.correct_tags)]
            expected += row[9:11]
        assert mine == expected, f"sentence {row[0]}"
    scores = score_parseval(sum_counts(counts))
    for section, group in (("All", scores), ("len<=40", scores["len<=40"])):
        for name, value in _summary(group).items():
            assert value == pytest.approx(summary[(section, name)], abs=0.005), (section, name)


# --- property tests ------------------------------------------------------------

LABELS = ["S", "NP", "VP", "PP", "ADVP", "PRT", "NP-SBJ-1", "SBAR", "NML", "PP=2"]
TAGS = ["NN", "DT", "VB", "JJ", "IN", "RP", ",", ".", "-NONE-"]


def random_tree(rng: random.Random, depth: int = 0) -> Tree:
    if depth > 0 and (depth > 4 or rng.random() < 0.35):
        tag = rng.choice(TAGS)
        return Tree(tag, word="*" if tag == "-NONE-" else rng.choice("abcdefgh"))
    return Tree(rng.choice(LABELS), [random_tree(rng, depth + 1) for _ in range(rng.randint(1, 3))])


def counted_nodes(tree: Tree, params: EvalbParams = COLLINS_PARAMS) -> list[tuple[Tree, Tree]]:
    """(parent, node) for non-root nodes whose bracket EVALB counts."""
    result = []
    for parent in tree.subtrees():
        for node in parent.children:
            label = evalb_label(node.label)
            has_word = any(pre.label not in params.delete_labels for pre in node.preterminals())
            if (
                node.word is None
                and has_word
                and label not in ("TOP",) + tuple(params.delete_labels)
            ):
                result.append((parent, node))
    return result


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32))
def test_a_tree_scored_against_itself_is_perfect(seed: int):
    tree = Tree("", [random_tree(random.Random(seed))])
    scores = score_parseval(parseval_counts(tree, copy.deepcopy(tree)))
    if not any(pre.label not in COLLINS_PARAMS.delete_labels for pre in tree.preterminals()):
        assert scores["skip_sentences"] == 1  # nothing left to score
        return
    assert scores["valid_sentences"] == 1
    assert scores["recall"] == scores["precision"] == scores["tagging_accuracy"] == 1.0
    assert scores["complete_match"] == scores["mean_sentence_f1"] == 1.0
    assert scores["average_crossing"] == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32))
def test_removing_one_bracket_changes_only_test_and_matched_by_one(seed: int):
    rng = random.Random(seed)
    gold = Tree("", [random_tree(rng)])
    if not counted_nodes(gold):
        return
    test = copy.deepcopy(gold)
    parent, node = rng.choice(counted_nodes(test))
    index = next(i for i, child in enumerate(parent.children) if child is node)
    parent.children[index : index + 1] = node.children
    full = evaluate_parseval(gold, gold)
    less = evaluate_parseval(gold, test)
    assert less.status == full.status == "ok"
    assert (less.gold, less.test, less.matched) == (full.gold, full.test - 1, full.matched - 1)
    assert (less.crossing, less.words, less.correct_tags) == (0, full.words, full.correct_tags)


@pytest.mark.slow
@pytest.mark.corpus
def test_craft_trees_scored_against_themselves_are_perfect(corpora_dir: Path):
    folder = corpora_dir / "craft" / "structural-annotation" / "treebank" / "penn"
    counts = []
    for path in sorted(folder.glob("*.tree"))[::7]:
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                tree = parse_tree(line)
                counts.append(parseval_counts(tree, parse_tree(line)))
    scores = score_parseval(sum_counts(counts))
    assert scores["valid_sentences"] == scores["sentences"] > 1000
    assert scores["f1"] == scores["tagging_accuracy"] == scores["complete_match"] == 1.0


# --- cross-check against a compiled EVALB, when one is given -------------------


def _perturb(tree: Tree, rng: random.Random) -> Tree:
    tree = copy.deepcopy(tree)
    for _ in range(rng.randint(0, 6)):
        nodes = [n for n in tree.subtrees() if n.word is None]
        node = rng.choice(nodes)
        action = rng.randrange(5)
        if action == 0 and node.children and node.children[0].word is None:
            child = node.children[0]  # splice a child's children into its place
            node.children[0:1] = child.children
        elif action == 1 and len(node.children) >= 2:
            start = rng.randrange(len(node.children) - 1)
            node.children[start : start + 2] = [
                Tree(rng.choice(LABELS), node.children[start : start + 2])
            ]
        elif action == 2 and node is not tree:
            node.label = rng.choice(LABELS)
        elif action == 3:
            rng.choice(list(tree.preterminals())).label = rng.choice(TAGS)
        elif action == 4:
            flat = [g for c in node.children for g in (c.children if c.word is None else [c])]
            if len(flat) >= 3:
                start = rng.randrange(len(flat) - 2)
                flat[start : start + 2] = [Tree(rng.choice(LABELS), flat[start : start + 2])]
                node.children = flat
    return tree


def _evalb_line(tree: Tree | None) -> str:
    # The very trees casflow scores, written "( (S ...) )" as treebanks are: no
    # rewriting of the outer bracket, which EVALB counts with an empty label.
    return "" if tree is None else format_tree(tree)


@pytest.mark.skipif(not os.environ.get("EVALB"), reason="set EVALB to a compiled evalb binary")
def test_agrees_with_the_evalb_binary(tmp_path: Path):
    rng = random.Random(20240601)
    golds = [Tree("", [random_tree(rng)]) for _ in range(400)]
    tests = [None if rng.random() < 0.02 else _perturb(gold, rng) for gold in golds]
    (tmp_path / "gold.txt").write_text("".join(_evalb_line(g) + "\n" for g in golds))
    (tmp_path / "test.txt").write_text("".join(_evalb_line(t) + "\n" for t in tests))
    prm = tmp_path / "collins.prm"
    prm.write_text(
        "".join(f"DELETE_LABEL {label}\n" for label in sorted(COLLINS_PARAMS.delete_labels))
        + "DELETE_LABEL_FOR_LENGTH -NONE-\nEQ_LABEL ADVP PRT\nMAX_ERROR 100000\n"
    )
    output = subprocess.run(
        [
            os.environ["EVALB"],
            "-p",
            str(prm),
            str(tmp_path / "gold.txt"),
            str(tmp_path / "test.txt"),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (tmp_path / "out.rsl").write_text(output)
    rows, summary = _read_rsl(tmp_path / "out.rsl")
    assert len(rows) == len(golds)
    status_codes = {"ok": "0", "skipped_length": "1", "skipped_words": "1", "skipped_empty": "2"}
    counts = []
    for gold, test, row in zip(golds, tests, rows, strict=True):
        result = evaluate_parseval(gold, test)
        counts.append(result.counts())
        mine = [str(result.length), status_codes[result.status]]
        mine += [str(n) for n in (result.matched, result.gold, result.test, result.crossing)]
        expected = row[1:3] + row[5:9]
        if result.valid:
            mine += [str(result.words), str(result.correct_tags)]
            expected += row[9:11]
        assert mine == expected, f"sentence {row[0]}: {_evalb_line(gold)} / {_evalb_line(test)}"
    scores = score_parseval(sum_counts(counts))
    for section, group in (("All", scores), ("len<=40", scores["len<=40"])):
        for name, value in _summary(group).items():
            assert value == pytest.approx(summary[(section, name)], abs=0.005), (section, name)


QUOTE_TAGS = ["POS", "''", "``", ":", "NN", "CD", "VBZ", "DT", ",", "-NONE-"]


def _quote_tree(rng: random.Random, depth: int = 0) -> Tree:
    if depth > 0 and (depth > 4 or rng.random() < 0.35):
        tag = rng.choice(QUOTE_TAGS)
        word = "*" if tag == "-NONE-" else rng.choice(["'", "'", "/", '"', "a", "b"])
        return Tree(tag, word=word)
    return Tree(rng.choice(LABELS), [_quote_tree(rng, depth + 1) for _ in range(rng.randint(1, 3))])


@pytest.mark.skipif(not os.environ.get("EVALB"), reason="set EVALB to a compiled evalb binary")
def test_agrees_with_the_evalb_binary_under_new_prm_quote_labels(tmp_path: Path):
    # Quote words whose tags differ between gold and test, one side deleting them:
    # the sentences evalb.c's fix_quote rescues from "Length unmatch".
    rng = random.Random(2006)
    golds = [Tree("", [_quote_tree(rng)]) for _ in range(600)]
    tests = []
    for gold in golds:
        test = _perturb(gold, rng)
        quotes = [pre for pre in test.preterminals() if pre.word in ("'", "/", '"')]
        for pre in rng.sample(quotes, min(len(quotes), rng.randint(0, 2))):
            pre.label = rng.choice(QUOTE_TAGS[:-1])
        tests.append(test)
    (tmp_path / "gold.txt").write_text("".join(_evalb_line(g) + "\n" for g in golds))
    (tmp_path / "test.txt").write_text("".join(_evalb_line(t) + "\n" for t in tests))
    (tmp_path / "new.prm").write_text(NEW_PRM + "\nMAX_ERROR 100000\n")
    output = subprocess.run(
        [os.environ["EVALB"], "-p", str(tmp_path / "new.prm"), "gold.txt", "test.txt"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    (tmp_path / "out.rsl").write_text(output)
    rows, summary = _read_rsl(tmp_path / "out.rsl")
    assert len(rows) == len(golds)
    params = parse_evalb_params(NEW_PRM)
    status_codes = {"ok": "0", "skipped_length": "1", "skipped_words": "1", "skipped_empty": "2"}
    counts, rescued = [], 0
    for gold, test, row in zip(golds, tests, rows, strict=True):
        result = evaluate_parseval(gold, test, params)
        counts.append(result.counts(cutoff_len=params.cutoff_len))
        rescued += result.valid and evaluate_parseval(gold, test).status == "skipped_length"
        mine = [str(result.length), status_codes[result.status]]
        mine += [str(n) for n in (result.matched, result.gold, result.test, result.crossing)]
        expected = row[1:3] + row[5:9]
        if result.valid:
            mine += [str(result.words), str(result.correct_tags)]
            expected += row[9:11]
        assert mine == expected, f"sentence {row[0]}: {_evalb_line(gold)} / {_evalb_line(test)}"
    assert rescued >= 10  # the inputs do exercise fix_quote
    scores = score_parseval(sum_counts(counts))
    for section, group in (("All", scores), ("len<=40", scores["len<=40"])):
        for name, value in _summary(group).items():
            assert value == pytest.approx(summary[(section, name)], abs=0.005), (section, name)
