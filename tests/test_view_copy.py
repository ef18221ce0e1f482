from __future__ import annotations

import pytest

from casflow.components.views.copy import CopyAnnotations
from casflow.pipeline.testing import cas_from_text, run_component
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import HEADING, PARAGRAPH, SENTENCE, TOKEN


def test_structure_is_copied_and_nothing_else() -> None:
    cas = cas_from_text(
        "Results\n\nPax6 is expressed.",
        view="gold",
        spans={"Heading": [(0, 7, {"depth": 1})], "Paragraph": [(9, 27)], "Token": [(9, 13)]},
    )
    run_component("view.copy.v1", cas, view="system", from_view="gold")
    system = cas.get_view("system")
    assert [(h.begin, h.end, h.depth) for h in system.select(HEADING)] == [(0, 7, 1)]
    assert [p.get_covered_text() for p in system.select(PARAGRAPH)] == ["Pax6 is expressed."]
    assert system.select(TOKEN) == []


def test_different_texts_are_refused() -> None:
    cas = cas_from_text("a")
    other = cas.create_view("gold")
    other.sofa_string = "b"
    with pytest.raises(ValueError, match="different texts"):
        run_component(CopyAnnotations, cas, from_view="gold")


def test_a_source_view_nothing_writes_is_a_validation_error(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("Pax6 is expressed.", encoding="utf-8")
    workflow = f"""\
reader:
  component: text.reader.v1
  config: {{input: {tmp_path}}}
components:
  - component: view.copy.v1
    view: system
    config:
      from_view: gold
run: {{output: {tmp_path / "out"}}}
"""
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(workflow, source="wf.yaml")
    assert (
        "wf.yaml:7: components -> 0 -> config: 'view.copy.v1' reads view 'gold', which nothing "
        "before it writes (views written: _InitialView)" in str(info.value)
    )


def test_references_follow_the_copies() -> None:
    # Token.pos is copied when the POS is copied too (a parser on gold tags, a combiner
    # voting tags need it); a reference to something not copied stays empty.
    from casflow.typesystem import LEMMA, POS

    cas = cas_from_text("Pax6 binds", view="gold", spans={"Token": [(0, 4), (5, 10)]})
    gold = cas.get_view("gold")
    pos_type = gold.typesystem.get_type(POS)
    lemma_type = gold.typesystem.get_type(LEMMA)
    for token, tag in zip(gold.select(TOKEN), ["NN", "VBZ"], strict=True):
        pos = pos_type(begin=token.begin, end=token.end, PosValue=tag)
        lemma = lemma_type(begin=token.begin, end=token.end, value=token.get_covered_text())
        gold.add_all([pos, lemma])
        token.pos = pos
        token.lemma = lemma
    run_component("view.copy.v1", cas, view="system", from_view="gold", types=[TOKEN, POS])
    system = cas.get_view("system")
    copied_pos = list(system.select(POS))
    tokens = list(system.select(TOKEN))
    assert [t.pos.PosValue for t in tokens] == ["NN", "VBZ"]
    assert all(any(t.pos is p for p in copied_pos) for t in tokens)  # the copies, not gold's
    assert all(t.lemma is None for t in tokens)
    assert system.select(LEMMA) == []


def test_trees_are_copied_with_their_children(tmp_path) -> None:
    # Constituent.children is an array: re-pointed at the copies, so the copied view
    # holds the same trees.
    import cassis

    from casflow.components.evaluators.adapters import constituent_trees
    from casflow.components.formats.penn.alignment import (
        TreeTypes,
        align_trees,
        build_tree_layers,
    )
    from casflow.components.formats.penn.parse import format_tree
    from casflow.typesystem import (
        CONSTITUENT,
        CONSTITUENT_ROOT,
        POS,
        SENTENCE,
        TREEBANK_CONSTITUENT,
        load_typesystem,
    )

    text = "Pax6 binds DNA ."
    path = tmp_path / "t.tree"
    path.write_text("( (S (NP (NN Pax6)) (VP (VBZ binds) (NP (NN DNA))) (. .)) )\n")
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    out: list = []
    layers = {"sentences", "tokens", "pos", "constituents"}
    build_tree_layers(align_trees(path, text, "text"), layers, TreeTypes.of(cas.typesystem), out)
    cas.add_all(out)
    words = [SENTENCE, TOKEN, POS]
    every_node = [*words, CONSTITUENT_ROOT, CONSTITUENT, TREEBANK_CONSTITUENT]
    run_component("view.copy.v1", cas, view="copy", from_view="_InitialView", types=every_node)
    copy = cas.get_view("copy")
    [(_, tree)] = constituent_trees(cas)
    [(_, copied)] = constituent_trees(copy)
    assert format_tree(copied) == format_tree(tree)
    original = {id(fs) for fs in cas.select(CONSTITUENT)}
    assert all(
        id(child) not in original for c in copy.select(CONSTITUENT) for child in c.children.elements
    )


def test_short_type_names_are_taken_as_other_components_take_them(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("Pax6 is expressed.", encoding="utf-8")
    workflow = f"""\
reader: {{component: text.reader.v1, view: gold, config: {{input: {tmp_path / "a.txt"}}}}}
components:
  - {{component: sentences.rules.v1, view: gold}}
  - {{component: view.copy.v1, view: system, config: {{from_view: gold, types: [Sentence]}}}}
  - {{component: spacy.pipeline.v1, view: system, config: {{model: "casflow:craft_syntax",
      use_existing_sentences: true, layers: [tokens, pos]}}}}
run: {{output: {tmp_path / "out"}}}
"""
    loaded = load_workflow_text(workflow, source="wf.yaml")  # system has its Sentence
    assert loaded.processors[1].config.types == [SENTENCE]
    cas = cas_from_text("Pax6 is expressed.", view="gold", spans={"Token": [(0, 4)]})
    run_component("view.copy.v1", cas, view="system", from_view="gold", types=["Token"])
    assert [t.get_covered_text() for t in cas.get_view("system").select(TOKEN)] == ["Pax6"]


def test_subtypes_are_copied_as_themselves_when_asked() -> None:
    # XMI read with DKPro Core's type system holds POS_NOUN, a subtype of POS that no
    # workflow can list by name before the run.
    import io

    import cassis

    from casflow.components.formats.xmi.reader import merge_with_casflow
    from casflow.typesystem import POS

    noun = "de.tudarmstadt.ukp.dkpro.core.api.lexmorph.type.pos.POS_NOUN"
    extra = cassis.load_typesystem(
        io.BytesIO(
            (
                '<?xml version="1.0" encoding="UTF-8"?><typeSystemDescription '
                'xmlns="http://uima.apache.org/resourceSpecifier"><types><typeDescription>'
                f"<name>{POS}</name><supertypeName>uima.tcas.Annotation</supertypeName>"
                "</typeDescription><typeDescription>"
                f"<name>{noun}</name><supertypeName>{POS}</supertypeName></typeDescription>"
                "</types></typeSystemDescription>"
            ).encode()
        )
    )
    ts = merge_with_casflow(extra, "test")
    cas = cassis.Cas(typesystem=ts)
    gold = cas.create_view("gold")
    for view in (cas, gold):
        view.sofa_string = "Cells grow"
    cells_pos = ts.get_type(noun)(begin=0, end=5, PosValue="NNS", coarseValue="NOUN")
    grow_pos = ts.get_type(POS)(begin=6, end=10, PosValue="VBP")
    token = ts.get_type(TOKEN)
    gold.add_all([cells_pos, grow_pos, token(begin=0, end=5, pos=cells_pos)])
    gold.add(token(begin=6, end=10, pos=grow_pos))

    run_component("view.copy.v1", cas, view="exact", from_view="gold", types=["Token", "POS"])
    exact = cas.get_view("exact")
    assert [t.pos.PosValue if t.pos else None for t in exact.select(TOKEN)] == [None, "VBP"]

    run_component(
        "view.copy.v1", cas, view="all", from_view="gold", types=["Token", "POS"], subtypes=True
    )
    copied = cas.get_view("all")
    assert [(t.pos.type.name, t.pos.PosValue) for t in copied.select(TOKEN)] == [
        (noun, "NNS"),
        (POS, "VBP"),
    ]
    assert len(copied.select(POS)) == 2  # each copied once
