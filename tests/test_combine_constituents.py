"""combine.constituents.v1 on small CASes built from bracketed trees."""

from __future__ import annotations

import json
from pathlib import Path

import cassis
import pytest

from casflow.cas.metadata import set_document_metadata
from casflow.components.combine.base import CombineInputError
from casflow.components.combine.bracket_vote import crossing
from casflow.components.combine.constituents import (
    CombineConstituents,
    CombineConstituentsConfig,
)
from casflow.components.evaluators.adapters import constituent_trees
from casflow.components.formats.penn.alignment import TreeTypes, align_trees, build_tree_layers
from casflow.components.formats.penn.parse import format_tree
from casflow.pipeline.cli import main
from casflow.pipeline.component import RunContext
from casflow.typesystem import (
    CONSTITUENT,
    CONSTITUENT_ROOT,
    SENTENCE,
    SENTENCE_AGREEMENT,
    TOKEN,
    load_typesystem,
)

TEXT = "Pax6 binds DNA. Cells grow."
MEMBERS = {
    "c1": [
        "( (S (NP-SBJ (NN Pax6)) (VP (VBZ binds) (NP (NN DNA))) (. .)) )",
        "( (S (NP (NNS Cells)) (VP (VBP grow)) (. .)) )",
    ],
    "c2": [
        "( (S (NP (NN Pax6)) (VP (VBZ binds) (NP (NN DNA))) (. .)) )",
        "( (S (NP (NNS Cells)) (VP (VBP grow) (. .))) )",
    ],
    "c3": [
        "( (S (NP (NNP Pax6)) (VP (VBZ binds) (NML (NN DNA))) (. .)) )",
        "( (FRAG (NP (NNS Cells) (NN grow)) (. .)) )",
    ],
}


def add_member(cas: cassis.Cas, name: str, lines: list[str], tmp_path: Path) -> None:
    path = tmp_path / f"{name}.tree"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    view = cas.create_view(name)
    view.sofa_string = cas.sofa_string
    out: list = []
    build_tree_layers(
        align_trees(path, TEXT, "text"),
        {"sentences", "tokens", "pos", "constituents"},
        TreeTypes.of(view.typesystem),
        out,
    )
    view.add_all(out)


def make_cas(tmp_path: Path, members: dict[str, list[str]] = MEMBERS) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = TEXT
    for name, lines in members.items():
        add_member(cas, name, lines, tmp_path)
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    return cas


def combine(cas: cassis.Cas, tmp_path: Path, **config) -> cassis.Cas:
    config.setdefault("members", list(MEMBERS))
    target = cas.get_view("combined")
    CombineConstituents(
        CombineConstituentsConfig(**config), RunContext(output_dir=tmp_path)
    ).process(target)
    return target


def test_three_members_are_voted_into_one_tree_per_sentence(tmp_path: Path) -> None:
    target = combine(make_cas(tmp_path), tmp_path)
    trees = [format_tree(tree) for _, tree in constituent_trees(target)]
    assert trees == [
        # two members say NP without a function tag, one NP-SBJ
        "( (S (NP (NN Pax6)) (VP (VBZ binds) (NP (NN DNA))) (. .)) )",
        # (0, 3) by all three (S twice, FRAG once), NP by two; each VP by one only
        "( (S (NP (NNS Cells)) (VBP grow) (. .)) )",
    ]
    assert [(s.begin, s.end) for s in target.select(SENTENCE)] == [(0, 15), (16, 27)]
    roots = target.select(CONSTITUENT_ROOT)
    assert [(r.begin, r.end) for r in roots] == [(0, 15), (16, 27)]
    for token in target.select(TOKEN):
        assert token.parent is not None
        assert token in list(token.parent.children.elements)
    for constituent in target.select(CONSTITUENT):
        for child in constituent.children.elements:
            assert child.parent is constituent
    agreement = target.select(SENTENCE_AGREEMENT)
    assert [a.layer for a in agreement] == ["constituents", "constituents"]
    # sentence 1: S, NP, VP, NP/NML over DNA all have a majority
    assert agreement[0].majorityShare == 1.0
    assert agreement[0].membersAgreeing == 1  # c2 (c1 says NP-SBJ, c3 NML)
    # sentence 2: (0,3) (0,1) (1,2) (1,3) (0,2): two of five have a majority
    assert agreement[1].majorityShare == pytest.approx(2 / 5)
    assert agreement[1].membersAgreeing == 0


def test_weights_can_overrule_the_majority(tmp_path: Path) -> None:
    target = combine(
        make_cas(tmp_path),
        tmp_path,
        members=["c1", "c2", {"view": "c3", "weight": 3}],
    )
    trees = [format_tree(tree) for _, tree in constituent_trees(target)]
    assert trees[1] == "( (FRAG (NP (NNS Cells) (NN grow)) (. .)) )"


def test_kept_brackets_nest_in_the_cas(tmp_path: Path) -> None:
    target = combine(make_cas(tmp_path), tmp_path)
    spans = [(c.begin, c.end) for c in target.select(CONSTITUENT)]
    assert not any(crossing(a, b) for a in spans for b in spans)


def test_members_with_other_tokens_are_refused(tmp_path: Path) -> None:
    members = dict(MEMBERS)
    members["c3"] = [
        "( (S (NP (NN Pax6)) (VP (VBZ binds) (NP (NN DNA.)))) )",
        "( (S (NP (NNS Cells)) (VP (VBP grow)) (. .)) )",
    ]
    cas = make_cas(tmp_path, members)
    with pytest.raises(CombineInputError, match="member view 'c3' has other tokens"):
        combine(cas, tmp_path)


def test_a_view_that_already_holds_constituents_is_refused(tmp_path: Path) -> None:
    cas = make_cas(tmp_path)
    combine(cas, tmp_path)
    with pytest.raises(CombineInputError, match="the view already holds constituents; write"):
        combine(cas, tmp_path)


def test_a_member_with_no_output_abstains(tmp_path: Path) -> None:
    cas = make_cas(tmp_path, {"c1": MEMBERS["c1"], "c2": MEMBERS["c2"]})
    empty = cas.create_view("c3")
    empty.sofa_string = TEXT
    target = combine(cas, tmp_path, members=["c3", "c1", "c2"])
    trees = [format_tree(tree) for _, tree in constituent_trees(target)]
    # c1 and c2 are two of three: what both say is kept; on SBJ they tie, c1 first
    assert trees[0] == "( (S (NP-SBJ (NN Pax6)) (VP (VBZ binds) (NP (NN DNA))) (. .)) )"


@pytest.mark.corpus
@pytest.mark.slow
def test_three_copies_of_a_craft_treebank_article_vote_back_to_it(
    craft_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real trees (empty elements, unary chains, function tags) survive the vote."""
    trees = craft_dir / "structural-annotation" / "treebank" / "penn" / "{doc_id}.tree"
    members = "".join(
        f"  - {{component: penn.import.v1, view: {name}, config: {{path: '{trees}'}}}}\n"
        for name in ("c1", "c2", "c3")
    )
    (tmp_path / "wf.yaml").write_text(
        "reader:\n"
        "  component: craft.reader.v1\n"
        "  view: gold\n"
        f"  config: {{corpus: '{craft_dir}', ids: ['17194222'], gene_so_classes: [],\n"
        "            layers: [structure, sentences, tokens, pos, constituents]}\n"
        "components:\n"
        f"{members}"
        "  - {component: combine.constituents.v1, view: combined, config: {members: [c1, c2, c3]}}\n"
        "evaluators:\n"
        "  - {id: parseval, component: eval.constituents.v1, config: {system_views: [combined]}}\n"
        "run: {jobs: 1, progress: false}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "wf.yaml", "--output", "out"]) == 0
    scores = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    combined = scores["parseval"]["systems"]["combined"]["scores"]
    assert combined["f1"] == 1.0 and combined["complete_match"] == 1.0
    assert combined["error_sentences"] + combined["skip_sentences"] == 0


def test_one_member_of_two_empty_leaves_the_other_to_vote(tmp_path: Path) -> None:
    cas = make_cas(tmp_path, {"c1": MEMBERS["c1"]})
    empty = cas.create_view("c2")  # the second parser failed on this document
    empty.sofa_string = TEXT
    target = combine(cas, tmp_path, members=["c1", "c2"])
    trees = [format_tree(tree) for _, tree in constituent_trees(target)]
    assert trees == [f"( {line[2:-2]} )" for line in MEMBERS["c1"]]
    agreement = target.select(SENTENCE_AGREEMENT)[0]
    assert (agreement.members, agreement.majorityShare, agreement.membersAgreeing) == (1, 1.0, 1)


def test_two_agreeing_members_of_four_are_kept_when_two_abstain(tmp_path: Path) -> None:
    cas = make_cas(tmp_path, {"c1": MEMBERS["c1"], "c2": MEMBERS["c1"]})
    for name in ("c3", "c4"):
        cas.create_view(name).sofa_string = TEXT
    target = combine(cas, tmp_path, members=["c1", "c2", "c3", "c4"])
    assert [format_tree(t) for _, t in constituent_trees(target)][0] == (
        "( (S (NP-SBJ (NN Pax6)) (VP (VBZ binds) (NP (NN DNA))) (. .)) )"
    )


def test_tokens_outside_every_sentence_get_a_tree_of_their_own(tmp_path: Path) -> None:
    cas = make_cas(tmp_path, {"c1": MEMBERS["c1"], "c2": MEMBERS["c1"]})
    target = cas.get_view("combined")
    ts = target.typesystem
    tokens = cas.get_view("c1").select(TOKEN)
    target.add_all(ts.get_type(TOKEN)(begin=t.begin, end=t.end) for t in tokens)
    # the view's own sentences leave "Pax6 binds DNA." out
    target.add(ts.get_type(SENTENCE)(begin=16, end=27))
    combine(cas, tmp_path, members=["c1", "c2"])
    trees = [format_tree(tree) for _, tree in constituent_trees(target)]
    assert trees == [f"( {line[2:-2]} )" for line in MEMBERS["c1"]]
    assert [(s.begin, s.end) for s in target.select(SENTENCE)] == [(0, 15), (16, 27)]


def test_a_sentence_no_member_parses_gets_no_tree(tmp_path: Path) -> None:
    cas = make_cas(tmp_path, {"c1": MEMBERS["c1"]})
    tokens = [(t.begin, t.end) for t in cas.get_view("c1").select(TOKEN)]
    for name in ("t1", "t2"):  # tokens, but no tree: both parsers failed
        view = cas.create_view(name)
        view.sofa_string = TEXT
        view.add_all(view.typesystem.get_type(TOKEN)(begin=b, end=e) for b, e in tokens)
    target = combine(cas, tmp_path, members=["t1", "t2"])
    assert target.select(CONSTITUENT) == [] and target.select(SENTENCE_AGREEMENT) == []


def test_trees_are_read_once_per_view_while_the_engine_evaluates_a_document(
    tmp_path: Path,
) -> None:
    from casflow.pipeline.component import evaluating_one_document, evaluation_memo

    cas = make_cas(tmp_path)
    # Outside an evaluation nothing is kept: a view changed in between is read afresh.
    first = constituent_trees(cas.get_view("c1"))
    assert constituent_trees(cas.get_view("c1"))[0][1] is not first[0][1]
    with evaluating_one_document():
        shared = constituent_trees(cas.get_view("c1"))
        again = constituent_trees(cas.get_view("c1"))  # another view object, same view
        assert [t for _, t in again] == [t for _, t in shared]
        assert all(a is b for (_, a), (_, b) in zip(again, shared, strict=True))
        assert constituent_trees(cas.get_view("c2"))[0][1] is not shared[0][1]
        assert format_tree(shared[0][1]) == format_tree(first[0][1])
    assert evaluation_memo() is None


def test_crossing_constituents_of_a_member_name_the_document_and_view(tmp_path: Path) -> None:
    cas = make_cas(tmp_path)
    set_document_metadata(cas, "doc-7", "file:doc-7.tree")
    member = cas.get_view("c3")
    tokens = list(member.select(TOKEN))
    (sentence_1, _) = member.select(CONSTITUENT_ROOT)
    top = sentence_1.children.elements[0]
    # a damaged import: "Pax6 binds" under S beside VP "binds DNA"
    bad = member.typesystem.get_type(CONSTITUENT)(
        begin=tokens[0].begin, end=tokens[1].end, constituentType="X"
    )
    member.add(bad)
    top.children.elements = [*top.children.elements, bad]
    with pytest.raises(
        CombineInputError,
        match=r"document doc-7: member view 'c3' has crossing constituents at character "
        r"offsets \(0, 10\) and \(5, 14\)",
    ) as caught:
        combine(cas, tmp_path)
    assert "children must lie inside it" in (caught.value.hint or "")
