from __future__ import annotations

import cassis
import pytest

from casflow.components.views.copy import CopyAnnotations, CopyAnnotationsConfig
from casflow.pipeline.component import RunContext
from casflow.typesystem import HEADING, PARAGRAPH, TOKEN, load_typesystem


def test_structure_is_copied_and_nothing_else(tmp_path) -> None:
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = "Results\n\nPax6 is expressed."
    gold = cas.create_view("gold")
    gold.sofa_string = cas.sofa_string
    gold.add(ts.get_type(HEADING)(begin=0, end=7, depth=1))
    gold.add(ts.get_type(PARAGRAPH)(begin=9, end=27))
    gold.add(ts.get_type(TOKEN)(begin=9, end=13))
    system = cas.create_view("system")
    system.sofa_string = cas.sofa_string
    component = CopyAnnotations(
        CopyAnnotationsConfig(from_view="gold"), RunContext(output_dir=tmp_path)
    )
    component.process(system)
    assert [(h.begin, h.end, h.depth) for h in system.select(HEADING)] == [(0, 7, 1)]
    assert [p.get_covered_text() for p in system.select(PARAGRAPH)] == ["Pax6 is expressed."]
    assert system.select(TOKEN) == []


def test_different_texts_are_refused(tmp_path) -> None:
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = "a"
    other = cas.create_view("gold")
    other.sofa_string = "b"
    component = CopyAnnotations(
        CopyAnnotationsConfig(from_view="gold"), RunContext(output_dir=tmp_path)
    )
    with pytest.raises(ValueError, match="different texts"):
        component.process(cas)
