"""Trees thousands of levels deep go through every step that walks a tree.

A right-branching parse of a long sentence without punctuation (a PDF extraction
joins a table into one "sentence" of 1,000 words) is as deep as the sentence is
long, and a parser gone astray makes long unary chains. Each walk keeps a stack
of its own, so such a document is no RecursionError; the results are those of the
recursive walks they replace (the property tests here and in the formats' and
metrics' tests).
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import cassis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.evaluators.adapters import constituent_trees
from casflow.components.formats.conllu.importer import _check_heads
from casflow.components.formats.penn.alignment import TreeTypes, align_trees, build_tree_layers
from casflow.components.formats.penn.parse import Tree, format_tree, parse_tree
from casflow.components.formats.xmi.dkpro_writer import dkpro_cas
from casflow.components.headrules.component import _load, model_file
from casflow.components.headrules.rules import ROOT, prepared
from casflow.components.metrics.parseval import parseval_counts
from casflow.components.uima.engine import _copy, _same_type
from casflow.typesystem import CONSTITUENT, TOKEN, load_typesystem

#: Far beyond the interpreter's recursion limit (1,000 frames).
DEPTH = 5_000


def unary_chain(levels: int) -> tuple[str, str]:
    """One word under ``levels`` unary brackets."""
    return "w", "( " + "(X " * levels + "(NN w)" + ")" * levels + " )"


def right_branching(words: int, word: str = "w{}") -> tuple[str, str]:
    """``(S (NN w0) (S (NN w1) ...))``: each word one level deeper."""
    opened = "".join(f"(S (NN {word.format(i)}) " for i in range(words - 1))
    line = "( " + opened + f"(NN {word.format(words - 1)})" + ")" * (words - 1) + " )"
    return " ".join(word.format(i) for i in range(words)), line


def treebank_view(tmp_path: Path, text: str, line: str) -> cassis.Cas:
    path = tmp_path / "doc.tree"
    path.write_text(line + "\n", encoding="utf-8")
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    out: list = []
    build_tree_layers(
        align_trees(path, text, "text"),
        {"sentences", "tokens", "pos", "constituents"},
        TreeTypes.of(cas.typesystem),
        out,
    )
    cas.add_all(out)
    return cas


@pytest.mark.parametrize("make", [unary_chain, right_branching], ids=["unary", "right"])
def test_a_deep_tree_goes_from_a_file_through_the_cas_and_back(make, tmp_path: Path) -> None:
    text, line = make(DEPTH)
    cas = treebank_view(tmp_path, text, line)  # penn.import.v1 and the CRAFT reader
    constituents = len(cas.select(CONSTITUENT))
    assert constituents == line.count("(") - len(text.split())  # the outer one as the ROOT
    # the evaluators, the Penn writer and combine.constituents read trees back so
    ((_, tree),) = constituent_trees(cas)
    assert format_tree(tree) == line
    counts = parseval_counts(tree, parse_tree(line))
    assert counts["parseval/matched"] == counts["parseval/gold"] == constituents
    # xmi.dkpro.writer.v1: every constituent kept, each under its parent
    dkpro = dkpro_cas(cas, "_InitialView", "doc")
    written = dkpro.select("de.tudarmstadt.ukp.dkpro.core.api.syntax.type.constituent.Constituent")
    assert len(written) == constituents
    # convert.dependencies.v1: one tree, every word attached
    heads, _, leaves = _load(model_file("casflow:craft_headrules", None).resolve()).convert(
        prepared(tree)
    )
    assert len(heads) == len(leaves) == len(text.split())
    assert heads.count(ROOT) == 1


def test_a_uima_engine_gets_a_copy_of_a_deep_tree(tmp_path: Path) -> None:
    # uima.engine.v1 copies the view for the engine, following children and parents
    text, line = right_branching(DEPTH)
    cas = treebank_view(tmp_path, text, line)
    memo: dict = {}
    first = cas.select(TOKEN)[0]
    copied = _copy(first, memo, _same_type(cas.typesystem), {})
    originals = {id(original): copy for original, copy in memo.values()}
    assert len(cas.select(CONSTITUENT)) + 1 <= len(originals)  # every node, reached from a leaf
    node, twin = first, copied
    while node is not None:  # the copies link as the originals do, all the way up
        assert twin is originals[id(node)] and twin.begin == node.begin
        node, twin = node.parent, twin.parent
    assert twin is None


def test_a_stanza_parse_of_a_long_sentence_becomes_a_penn_tree() -> None:
    pytest.importorskip("stanza")
    from stanza.models.constituency.parse_tree import Tree as StanzaTree

    from casflow.components.stanza.pipeline import penn_tree

    def tagged(i: int) -> StanzaTree:
        return StanzaTree("NN", [StanzaTree(f"w{i}(")])

    node = tagged(DEPTH - 1)
    for i in range(DEPTH - 2, -1, -1):
        node = StanzaTree("S", [tagged(i), node])
    # the round bracket inside each word is escaped, as the PennTree line needs
    _, line = right_branching(DEPTH, "w{}-LRB-")
    assert format_tree(Tree("", [penn_tree(node)])) == line


def test_a_dependency_chain_of_a_long_sentence_is_checked_in_linear_time() -> None:
    # conllu.import.v1 checks that the heads form a tree; walking each word's chain
    # again from the start took n^3 steps: minutes for a chain of 5,000 words
    n = 3_000
    words = [SimpleNamespace(head=str(i + 1), line=i, id=str(i)) for i in range(1, n)]
    words.append(SimpleNamespace(head="0", line=n, id=str(n)))
    started = time.perf_counter()
    assert _check_heads(words, "chain.conllu") == [*range(2, n + 1), 0]
    assert time.perf_counter() - started < 5  # about 40 s before


def _recursive_post_order(tree: Tree) -> list[Tree]:
    return [node for child in tree.children for node in _recursive_post_order(child)] + [tree]


@st.composite
def deep_trees(draw: st.DrawFn) -> Tree:
    """A random small tree hung under a random spine of unary and binary levels."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    words = iter(range(10**6))

    def leaf() -> Tree:
        return Tree(rng.choice(["NN", "-NONE-", "DT", ","]), word=f"w{next(words)}")

    def small(depth: int) -> Tree:
        if depth == 0 or rng.random() < 0.3:
            return leaf()
        return Tree(rng.choice(["NP", "VP", "S-1"]), [small(depth - 1) for _ in range(3)])

    node = small(3)
    for _ in range(draw(st.integers(1_100, 2_500))):
        sibling = small(2)
        shape = rng.random()
        kids = [node] if shape < 0.3 else [sibling, node] if shape < 0.8 else [node, sibling]
        node = Tree(rng.choice(["S", "VP", "NP-SBJ", "X"]), kids)
    return node


@settings(max_examples=15, deadline=None)
@given(deep_trees())
def test_walks_of_deep_trees_meet_nodes_as_a_recursive_walk(tree: Tree) -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # the reference walk is recursive
    try:
        reference = _recursive_post_order(tree)
    finally:
        sys.setrecursionlimit(limit)
    assert [id(node) for node in tree.post_order()] == [id(node) for node in reference]
    line = format_tree(Tree("", [tree]))  # dataclass == would recurse: compare the lines
    assert format_tree(parse_tree(line)) == line
