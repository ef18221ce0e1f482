from __future__ import annotations

import pytest

from casflow.components.views.copy import CopyAnnotations
from casflow.pipeline.testing import cas_from_text, run_component
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import HEADING, PARAGRAPH, TOKEN


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
