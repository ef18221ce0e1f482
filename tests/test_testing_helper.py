"""casflow.pipeline.testing: a CAS from text and spans; one component or a chain in Python."""

from __future__ import annotations

import pytest

from casflow.pipeline.testing import cas_from_text, evaluate, run_chain, run_component
from casflow.typesystem import GENE_MENTION, POS, SENTENCE, TOKEN
from tests.helpers.components import ConstantTagger, WhitespaceTokenizer

TEXT = "Pax6 is expressed. Shh is not."


def test_cas_from_text_annotates_short_and_full_type_names_in_a_view() -> None:
    cas = cas_from_text(
        TEXT,
        view="gold",
        spans={"Token": [(0, 4), (5, 7)], GENE_MENTION: [(0, 4, {"value": "GENE"})]},
        doc_id="d1",
    )
    gold = cas.get_view("gold")
    assert gold.sofa_string == cas.sofa_string == TEXT
    assert [t.get_covered_text() for t in gold.select(TOKEN)] == ["Pax6", "is"]
    assert [(g.get_covered_text(), g.value) for g in gold.select(GENE_MENTION)] == [
        ("Pax6", "GENE")
    ]
    assert cas.select(TOKEN) == []


def test_an_unknown_type_name_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown type 'Tokn'"):
        cas_from_text(TEXT, spans={"Tokn": [(0, 4)]})


def test_run_chain_runs_classes_with_their_config_in_order() -> None:
    cas = run_chain([WhitespaceTokenizer, (ConstantTagger, {"tag": "XY"})], TEXT)
    assert len(cas.select(TOKEN)) == 6
    assert {p.PosValue for p in cas.select(POS)} == {"XY"}


def test_run_component_by_registry_name_into_another_view() -> None:
    cas = run_component("sentences.rules.v1", TEXT, view="system")
    assert [s.get_covered_text() for s in cas.get_view("system").select(SENTENCE)] == [
        "Pax6 is expressed.",
        "Shh is not.",
    ]
    assert cas.select(SENTENCE) == []


def test_a_bad_config_key_is_a_validation_error() -> None:
    with pytest.raises(ValueError, match="tagg"):
        run_component(ConstantTagger, TEXT, tagg="NN")


def test_evaluate_gives_counts_per_system_view() -> None:
    cas = cas_from_text(TEXT, view="gold", spans={"GeneMention": [(0, 4), (19, 22)]})
    run_component("ner.gene.v1", cas, view="system")
    results = evaluate("eval.mentions.v1", cas)
    counts = results["system"].counts
    assert counts["strict/micro/tp"] + counts["strict/micro/fn"] == 2
