"""combine.mentions.v1 on small CASes."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest

from casflow.components.combine.base import CombineInputError
from casflow.components.combine.mentions import CombineMentions, CombineMentionsConfig
from casflow.pipeline.component import RunContext
from casflow.typesystem import (
    ANATOMY_MENTION,
    GENE_MENTION,
    SENTENCE,
    SENTENCE_AGREEMENT,
    load_typesystem,
)

TEXT = "Pax6 and Sox2 act. The lens forms."
SENTENCES = [(0, 18), (19, 34)]


def view_with(cas: cassis.Cas, name: str, mentions: list[tuple[int, int, str, str]]) -> None:
    ts = cas.typesystem
    view = cas.create_view(name)
    view.sofa_string = cas.sofa_string
    for begin, end, type_name, value in mentions:
        view.add(ts.get_type(type_name)(begin=begin, end=end, value=value, identifier=name))


def make_cas() -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = TEXT
    sentence = cas.typesystem.get_type(SENTENCE)
    cas.add_all(sentence(begin=b, end=e) for b, e in SENTENCES)
    view_with(
        cas,
        "m1",
        [
            (0, 4, GENE_MENTION, "GENE"),
            (9, 13, GENE_MENTION, "GENE"),
            (23, 27, ANATOMY_MENTION, "Organ"),
        ],
    )
    view_with(cas, "m2", [(0, 4, GENE_MENTION, "GENE"), (23, 27, ANATOMY_MENTION, "Tissue")])
    view_with(
        cas,
        "m3",
        [
            (0, 4, GENE_MENTION, "GENE"),
            (9, 13, GENE_MENTION, "GENE"),
            (23, 27, ANATOMY_MENTION, "Tissue"),
        ],
    )
    return cas


def run(tmp_path: Path, **config) -> cassis.Cas:
    cas = make_cas()
    config.setdefault("members", ["m1", "m2", "m3"])
    config.setdefault("type", "ConceptMention")
    CombineMentions(CombineMentionsConfig(**config), RunContext(output_dir=tmp_path)).process(cas)
    return cas


def mentions(cas: cassis.Cas) -> list:
    # select() over a supertype groups by subtype: put them back in text order
    return sorted(cas.select("casflow.ner.ConceptMention"), key=lambda m: (m.begin, m.end, m.value))


def found(cas: cassis.Cas) -> list[tuple[str, str, str]]:
    return [(m.get_covered_text(), m.value, m.type.name.rsplit(".", 1)[-1]) for m in mentions(cas)]


def test_majority_votes_per_class_and_keeps_the_member_type(tmp_path: Path) -> None:
    cas = run(tmp_path)
    assert found(cas) == [
        ("Pax6", "GENE", "GeneMention"),
        ("Sox2", "GENE", "GeneMention"),
        ("lens", "Tissue", "AnatomyMention"),
    ]
    pax6, sox2, lens = mentions(cas)
    assert (pax6.confidence, sox2.confidence) == (1.0, pytest.approx(2 / 3))
    assert pax6.identifier == "m1" and lens.identifier == "m2"
    agreement = cas.select(SENTENCE_AGREEMENT)
    assert [(a.begin, a.end, a.layer) for a in agreement] == [
        (0, 18, "mentions:ConceptMention"),
        (19, 34, "mentions:ConceptMention"),
    ]
    assert agreement[0].majorityShare == 1.0 and agreement[0].membersAgreeing == 2
    # lens: Organ (1 member) and Tissue (2): one of the two units has a majority
    assert agreement[1].majorityShare == 0.5 and agreement[1].membersAgreeing == 2


def test_union_intersection_and_weighted(tmp_path: Path) -> None:
    assert [t for t, _, _ in found(run(tmp_path, method="intersection"))] == ["Pax6"]
    assert [(t, v) for t, v, _ in found(run(tmp_path, method="union"))] == [
        ("Pax6", "GENE"),
        ("Sox2", "GENE"),
        ("lens", "Organ"),
        ("lens", "Tissue"),
    ]
    weighted = run(
        tmp_path,
        method="weighted",
        members=[{"view": "m1", "weight": 3}, "m2", "m3"],
    )
    assert [(t, v) for t, v, _ in found(weighted)] == [
        ("Pax6", "GENE"),
        ("Sox2", "GENE"),
        ("lens", "Organ"),
    ]


def test_only_the_chosen_type_is_voted(tmp_path: Path) -> None:
    cas = run(tmp_path, type="GeneMention")
    assert [t for t, _, _ in found(cas)] == ["Pax6", "Sox2"]


def test_the_target_must_not_hold_the_type_already(tmp_path: Path) -> None:
    cas = make_cas()
    cas.add(cas.typesystem.get_type(GENE_MENTION)(begin=0, end=4))
    component = CombineMentions(
        CombineMentionsConfig(members=["m1", "m2"], type="GeneMention"),
        RunContext(output_dir=tmp_path),
    )
    with pytest.raises(CombineInputError, match="already holds GeneMention"):
        component.process(cas)


def test_unknown_type_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="unknown annotation type 'GeneMentoin'"):
        CombineMentionsConfig(members=["m1", "m2"], type="GeneMentoin")


def test_label_mapping_puts_members_on_one_label_set(tmp_path: Path) -> None:
    # m1 says Organ where the others say Tissue; mapped, all three agree on lens
    cas = run(
        tmp_path,
        members=[{"view": "m1", "label_mapping": {"Organ": "Tissue"}}, "m2", "m3"],
        method="intersection",
    )
    assert [(t, v) for t, v, _ in found(cas)] == [("Pax6", "GENE"), ("lens", "Tissue")]


ABBREVIATION_TEXT = "Human colorectal cancer (CRC) grows. CRC cells and CRCs differ."


def test_document_steps_run_over_the_voted_mentions(tmp_path: Path) -> None:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = ABBREVIATION_TEXT
    long_form = (6, 23, ANATOMY_MENTION, "Cancer")  # "colorectal cancer"
    view_with(cas, "m1", [long_form])
    view_with(cas, "m2", [long_form, (0, 5, ANATOMY_MENTION, "Organism_subdivision")])
    view_with(cas, "m3", [(6, 16, ANATOMY_MENTION, "Organ")])
    config = CombineMentionsConfig(
        members=["m1", "m2", "m3"],
        type="AnatomyMention",
        document_postprocess=["propagate_abbreviations"],
    )
    CombineMentions(config, RunContext(output_dir=tmp_path)).process(cas)
    result = sorted(cas.select(ANATOMY_MENTION), key=lambda m: m.begin)
    # the vote keeps the long form (2 of 3); the step tags both whole-word "CRC"s as
    # Cancer, with the long form's share and no identifier; "CRCs" is another word
    assert [(m.get_covered_text(), m.value) for m in result] == [
        ("colorectal cancer", "Cancer"),
        ("CRC", "Cancer"),
        ("CRC", "Cancer"),
    ]
    assert [m.identifier for m in result] == ["m1", None, None]
    assert [round(m.confidence, 3) for m in result] == [0.667] * 3
    # the members' agreement is with the vote before the step added the short forms:
    # m1's own output (the long form alone) equals it
    (sentence,) = cas.select(SENTENCE_AGREEMENT)
    assert sentence.membersAgreeing == 1


def test_unknown_document_step_is_a_config_error() -> None:
    with pytest.raises(
        ValueError,
        match="unknown document post-processing propagate_names; known: propagate_abbreviations",
    ):
        CombineMentionsConfig(members=["m1", "m2"], document_postprocess=["propagate_names"])


def test_weighted_agreement_uses_the_class_weights_of_the_vote(tmp_path: Path) -> None:
    # m1 alone proposes "lens" as Organ, but counts 3 for Organ: kept with 3 of 5
    cas = run(
        tmp_path,
        type="AnatomyMention",
        method="weighted",
        members=[{"view": "m1", "label_weights": {"Organ": 3}}, "m2", "m3"],
    )
    assert [(t, v) for t, v, _ in found(cas)] == [("lens", "Organ"), ("lens", "Tissue")]
    lens = cas.select(SENTENCE_AGREEMENT)[1]
    # both proposed units have a majority of their class's weight, as the vote says
    assert lens.majorityShare == 1.0
    assert lens.support == pytest.approx((3 / 5 + 2 / 3) / 2)


def test_a_type_without_value_is_a_config_error() -> None:
    # the class is read from 'value': Token would fail every document
    with pytest.raises(ValueError, match="type 'Token' has no 'value' feature"):
        CombineMentionsConfig(members=["m1", "m2"], type="Token")


def test_a_member_that_is_the_written_view_is_refused_before_the_run() -> None:
    config = CombineMentionsConfig(members=["m1", "m2"], type="GeneMention")
    (problem,) = CombineMentions.view_problems(config, "m2")
    assert "writes view 'm2', which is also one of its members" in problem
    assert CombineMentions.view_problems(config, "combined") == []


def test_weights_and_threshold_need_the_weighted_method() -> None:
    weighted = {"view": "m1", "weight": 2.0, "label_weights": {"GENE": 0.5}}
    for method in ("majority", "union", "intersection"):
        with pytest.raises(ValueError, match=f"method {method} counts members.*m1: weight 2"):
            CombineMentionsConfig(members=[weighted, "m2"], method=method)
        with pytest.raises(ValueError, match="threshold: 0.3"):
            CombineMentionsConfig(members=["m1", "m2"], method=method, threshold=0.3)
    config = CombineMentionsConfig(members=[weighted, "m2"], method="weighted", threshold=0.3)
    assert config.members[0].label_weights == {"GENE": 0.5}
    # the resolved workflow writes every default out, and workers validate it again
    plain = CombineMentionsConfig(members=["m1", "m2"])
    assert CombineMentionsConfig.model_validate(plain.model_dump(mode="json")) == plain


def test_member_weights_are_finite_and_named_after_the_mapping() -> None:
    for member in (
        {"view": "m1", "weight": float("inf")},
        {"view": "m1", "weight": float("nan")},
    ):
        with pytest.raises(ValueError, match="finite number"):
            CombineMentionsConfig(members=[member, "m2"], method="weighted")
    with pytest.raises(ValueError, match="finite numbers > 0"):
        CombineMentionsConfig(
            members=[{"view": "m1", "label_weights": {"GENE": float("nan")}}, "m2"],
            method="weighted",
        )
    # the vote sees Organ: a weight for ORGAN would never count
    renamed = {"view": "m1", "label_mapping": {"ORGAN": "Organ"}, "label_weights": {"ORGAN": 2}}
    with pytest.raises(
        ValueError, match=r"member 'm1'.*\('ORGAN' -> 'Organ'\).*after label_mapping"
    ):
        CombineMentionsConfig(members=[renamed, "m2"], method="weighted")
    renamed["label_weights"] = {"Organ": 2}
    CombineMentionsConfig(members=[renamed, "m2"], method="weighted")
    # a label another one is renamed to stays a label of the vote
    swapped = {"view": "m1", "label_mapping": {"A": "B", "B": "A"}, "label_weights": {"A": 2}}
    CombineMentionsConfig(members=[swapped, "m2"], method="weighted")
