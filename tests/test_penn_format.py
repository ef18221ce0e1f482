"""Tests for the Penn Treebank bracket format (casflow.components.formats.penn.parse)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from casflow.components.formats.penn.parse import (
    ROUND_BRACKETS,
    Tree,
    category,
    constituent_spans,
    escape_brackets,
    escape_token,
    escape_tokens,
    format_tree,
    iter_trees,
    leaves,
    parse_tree,
    prune,
    read_trees,
    split_label,
    tree_texts,
    unescape_brackets,
    unescape_token,
)

CRAFT_STYLE = (
    "( (S (NP-SBJ-1 (JJ Little)) (VP (VBZ is) (VP (VBN known) (NP-1 (-NONE- *)) "
    "(PP (IN about) (NP (NP (NN IOP)) (-LRB- -LRB-) (NN x) (-RRB- -RRB-))))) (. .)) )"
)


def test_parse_reads_labels_words_and_the_unlabeled_outer_bracket():
    tree = parse_tree(CRAFT_STYLE)
    assert tree.label == ""
    [sentence] = tree.children
    assert sentence.label == "S"
    subject = sentence.children[0]
    assert subject.label == "NP-SBJ-1"
    assert subject.children == [Tree("JJ", word="Little")]
    assert leaves(tree) == [
        ("Little", "JJ"),
        ("is", "VBZ"),
        ("known", "VBN"),
        ("*", "-NONE-"),
        ("about", "IN"),
        ("IOP", "NN"),
        ("-LRB-", "-LRB-"),
        ("x", "NN"),
        ("-RRB-", "-RRB-"),
        (".", "."),
    ]


def test_format_writes_the_craft_style_exactly():
    assert format_tree(parse_tree(CRAFT_STYLE)) == CRAFT_STYLE
    assert format_tree(parse_tree("(TOP (S (NN a)))")) == "(TOP (S (NN a)))"
    assert str(Tree("NP", [Tree("DT", word="a"), Tree("NN", word="b")])) == "(NP (DT a) (NN b))"


def test_any_ascii_whitespace_separates_tokens():
    spread = "(\n(S\t(NP-SBJ   (NN  cells))\r\n (VP (VBD grew)))\n)"
    assert parse_tree(spread) == parse_tree("( (S (NP-SBJ (NN cells)) (VP (VBD grew))) )")


def test_unicode_spaces_stay_inside_words():
    # CRAFT has words such as "Xpd<hair space>TTD"; only ASCII whitespace splits.
    tree = parse_tree("(NML (NN Xpd\u200aTTD) (NN a\u00a0b))")
    assert [word for word, _ in leaves(tree)] == ["Xpd\u200aTTD", "a\u00a0b"]


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("(S (NP (NN a))", "still open", 14),
        ("(S (NN a)))", "unbalanced ')'", 10),
        ("(S (NN a b))", "more than one word", 9),
        ("(S (NN a) b)", "mixed with subtrees", 10),
        ("(S (NN a)) (S (NN b))", "after the end of the tree", 11),
        ("(S ())", "empty bracket", 4),
        ("(S (NP))", "empty bracket", 6),
        ("word", "outside any bracket", 0),
    ],
)
def test_malformed_input_names_the_character_position(text, message, position):
    with pytest.raises(ValueError) as error:
        parse_tree(text)
    assert message in str(error.value)
    assert f"character {position}" in str(error.value)


def test_blank_input_is_an_error():
    with pytest.raises(ValueError, match="no tree found"):
        parse_tree("  \n")


def test_iter_trees_skips_blank_lines_and_names_source_and_line():
    assert [format_tree(t) for t in iter_trees("(A (B c))\n\n(D (E f))\n")] == [
        "(A (B c))",
        "(D (E f))",
    ]
    with pytest.raises(ValueError, match=r"doc\.tree, line 3: .*character 8"):
        list(iter_trees("(A (B c))\n\n(D (E f)", source="doc.tree"))


def test_iter_trees_reads_trees_over_several_lines():
    text = "(ROOT\n  (S (NP (NN Xpd\u00a0TTD))\n     (VP (VBZ grows))))\n\n(ROOT (NP (NN b)))\n"
    assert [format_tree(t) for t in iter_trees(text)] == [
        "(ROOT (S (NP (NN Xpd\u00a0TTD)) (VP (VBZ grows))))",
        "(ROOT (NP (NN b)))",
    ]
    assert [(first, last) for first, last, _ in tree_texts(text.split("\n"))] == [(1, 3), (5, 5)]
    with pytest.raises(ValueError, match=r"x\.mrg, line 2: unbalanced '\)'"):
        list(iter_trees("(A (B c))\n(D (E f)))\n(G (H i))", source="x.mrg"))


def test_read_trees_reads_a_file_and_names_it_in_errors(tmp_path: Path):
    good = tmp_path / "good.tree"
    good.write_text("( (S (NN a)) )\n( (S (NN b)) )\n", encoding="utf-8")
    assert [leaves(t) for t in read_trees(good)] == [[("a", "NN")], [("b", "NN")]]
    bad = tmp_path / "bad.tree"
    bad.write_text("( (S (NN a)) )\n( (S (NN b) )\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.tree, line 2"):
        read_trees(bad)


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("NP", ("NP", (), None, None)),
        ("NP-SBJ", ("NP", ("SBJ",), None, None)),
        ("NP-SBJ-1", ("NP", ("SBJ",), 1, None)),
        ("NP=2", ("NP", (), None, 2)),
        ("NP-SBJ-1=2", ("NP", ("SBJ",), 1, 2)),
        ("PP-LOC-PRD=1", ("PP", ("LOC", "PRD"), None, 1)),
        ("S-TTL-3-FRM", ("S", ("TTL", "FRM"), 3, None)),
        ("-NONE-", ("-NONE-", (), None, None)),
        ("-LRB-", ("-LRB-", (), None, None)),
        ("-RRB-", ("-RRB-", (), None, None)),
        ("PRT|ADVP", ("PRT|ADVP", (), None, None)),
        ("``", ("``", (), None, None)),
        ("", ("", (), None, None)),
    ],
)
def test_split_label(label, expected):
    assert split_label(label) == expected
    assert category(label) == expected[0]


def test_brackets_inside_words_are_escaped_and_unescaped():
    assert escape_brackets("Ca(2+)") == "Ca-LRB-2+-RRB-"
    assert escape_brackets("a[1]{2}") == "a-LSB-1-RSB--LCB-2-RCB-"
    assert escape_brackets("a[1](2)", ROUND_BRACKETS) == "a[1]-LRB-2-RRB-"
    assert escape_brackets("cells") == "cells"
    assert unescape_brackets("a-LSB-1-RSB--LCB-2-RCB-") == "a[1]{2}"
    assert parse_tree(f"(NN {escape_brackets('Ca(2+)', ROUND_BRACKETS)})").word == "Ca-LRB-2+-RRB-"


def test_escape_and_unescape_tokens():
    for raw, escaped in [("(", "-LRB-"), (")", "-RRB-"), ("{", "-LCB-"), ("}", "-RCB-"),
                         ("[", "-LSB-"), ("]", "-RSB-")]:  # fmt: skip
        assert escape_token(raw) == escaped
        assert unescape_token(escaped) == raw
    assert escape_token('"', opening_quote=True) == "``"
    assert escape_token('"') == "''"
    assert unescape_token("``") == unescape_token("''") == '"'
    assert escape_tokens(['"', "a", '"', "(", '"']) == ["``", "a", "''", "-LRB-", "``"]
    assert unescape_token("cells") == escape_token("cells") == "cells"


def test_prune_removes_deleted_preterminals_and_emptied_nodes():
    tree = parse_tree("( (S (NP-SBJ (-NONE- *PRO*)) (VP (VB go) (NP (-NONE- *T*))) (. .)) )")
    assert format_tree(prune(tree, {"-NONE-"})) == "( (S (VP (VB go)) (. .)) )"
    assert format_tree(prune(tree, {"-NONE-", "."})) == "( (S (VP (VB go))) )"
    assert prune(parse_tree("(NP (-NONE- *))"), {"-NONE-"}) is None


def test_constituent_spans_are_word_positions_in_pre_order():
    tree = parse_tree("(S (NP (DT the) (NN cat)) (VP (VBD sat)))")
    assert [(node.label, start, end) for node, start, end in constituent_spans(tree)] == [
        ("S", 0, 3),
        ("NP", 0, 2),
        ("DT", 0, 1),
        ("NN", 1, 2),
        ("VP", 2, 3),
        ("VBD", 2, 3),
    ]


_ATOM = st.text(
    alphabet=string.ascii_letters + string.digits + "-=$.,:`'*|/&%", min_size=1, max_size=6
)
_PRETERMINAL = st.builds(lambda tag, word: Tree(tag, word=word), _ATOM, _ATOM)
_TREES = st.recursive(
    _PRETERMINAL,
    lambda children: st.builds(
        lambda label, kids: Tree(label, kids),
        st.one_of(st.just(""), _ATOM),
        st.lists(children, min_size=1, max_size=4),
    ),
    max_leaves=30,
)


@given(_TREES)
def test_format_then_parse_gives_the_same_tree(tree: Tree):
    assert parse_tree(format_tree(tree)) == tree
    assert parse_tree(format_tree(Tree("", [tree]))) == Tree("", [tree])


@pytest.mark.slow
@pytest.mark.corpus
def test_every_craft_treebank_line_round_trips(corpora_dir: Path):
    folder = corpora_dir / "craft" / "structural-annotation" / "treebank" / "penn"
    files = sorted(folder.glob("*.tree"))
    assert files, f"no .tree files in {folder}"
    lines = 0
    longest = 0
    for path in files:
        with path.open(encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                # One CRAFT line ends in a stray space; everything else is exact.
                line = line.rstrip("\r\n").rstrip(" ")
                assert format_tree(parse_tree(line)) == line, f"{path.name}, line {line_number}"
                lines += 1
                longest = max(longest, len(line))
    assert lines > 20_000
    assert longest > 5000  # the longest tree is about 6,000 characters
