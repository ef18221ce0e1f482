"""eval.agreement.v1: accuracy by agreement band, and the band arithmetic under it."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest

from casflow.components.combine.dependencies import (
    CombineDependencies,
    CombineDependenciesConfig,
)
from casflow.components.evaluators.agreement import AgreementEvaluator, AgreementEvaluatorConfig
from casflow.components.metrics.agreement import (
    SentenceCounts,
    band_counts,
    band_names,
    band_of,
    score_bands,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.counts import add_counts
from casflow.typesystem import GENE_MENTION, SENTENCE, SENTENCE_AGREEMENT, load_typesystem
from tests.test_combine_dependencies import GOLD_HEADS, LABELS, TEXT, add_parse

BOUNDS = [0.0, 0.5, 1.0]


def test_bands_and_additive_counts() -> None:
    assert band_names(BOUNDS) == ["0-0.5", "0.5-1", ">=1"]
    assert [band_of(v, BOUNDS) for v in (0.2, 0.5, 0.99, 1.0, None, -1)] == [
        "0-0.5",
        "0.5-1",
        "0.5-1",
        ">=1",
        "none",
        "<0",
    ]
    first = band_counts([SentenceCounts(1.0, 4, 4, 4), SentenceCounts(0.3, 1, 4, 4)], BOUNDS)
    second = band_counts([SentenceCounts(1.0, 2, 3, 3), SentenceCounts(None, 0, 2, 2)], BOUNDS)
    scores = score_bands(add_counts(dict(first), second), BOUNDS)
    assert scores[">=1"]["sentences"] == 2 and scores[">=1"]["f1"] == pytest.approx(6 / 7)
    assert scores["0-0.5"]["f1"] == pytest.approx(0.25)
    assert scores["0.5-1"]["sentences"] == 0
    assert scores["none"]["sentences"] == 1
    assert scores["all"]["sentences"] == 4 and scores["all"]["gold"] == 13
    # keeping only sentences with agreement >= 0.5: the two at 1.0, of four
    assert scores["at_least"]["0.5"]["sentences"] == 2
    assert scores["at_least"]["0.5"]["share_of_sentences"] == 0.5
    assert scores["at_least"]["0.5"]["f1"] == pytest.approx(6 / 7)
    assert scores["at_least"]["0"]["sentences"] == 3  # "none" is never kept
    with pytest.raises(ValueError, match="must increase"):
        band_names([0.5, 0.5])


def combined_cas(tmp_path: Path) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = TEXT
    add_parse(cas, "gold", GOLD_HEADS, LABELS)
    # sentence 1: all members agree with gold; sentence 2: they disagree, and err
    add_parse(cas, "p1", [2, 0, 2, 2, 0, 5, 6], LABELS)
    add_parse(cas, "p2", [2, 0, 2, 2, 0, 5, 5], LABELS)
    add_parse(cas, "p3", [2, 0, 2, 2, 6, 0, 5], LABELS)
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    CombineDependencies(
        CombineDependenciesConfig(members=["p1", "p2", "p3"]), RunContext(output_dir=tmp_path)
    ).process(target)
    return cas


def test_dependency_accuracy_by_band(tmp_path: Path) -> None:
    cas = combined_cas(tmp_path)
    evaluator = AgreementEvaluator(
        AgreementEvaluatorConfig(
            layer="dependencies", bands=BOUNDS, system_views=["combined"], metric="uas"
        ),
        RunContext(output_dir=tmp_path),
    )
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("combined"))
    scores = evaluator.score(result.counts)
    assert scores[">=1"]["sentences"] == 1 and scores[">=1"]["f1"] == 1.0
    assert scores["0.5-1"]["sentences"] == 1
    assert scores["0.5-1"]["f1"] < 1.0
    columns = evaluator.summary(scores)
    assert columns["majority_share >=1: sentences"] == 1
    assert columns["majority_share >=1: UAS"] == 100.0
    assert columns["all: sentences"] == 2


def test_sentences_below_the_first_bound_have_a_band_of_their_own(tmp_path: Path) -> None:
    bounds = [0.5, 0.9]
    counts = band_counts([SentenceCounts(0.2, 0, 10, 10), SentenceCounts(0.8, 10, 10, 10)], bounds)
    scores = score_bands(counts, bounds)
    # the sentence at 0.2 is neither in "0.5-0.9" nor kept by "at least 0.5"
    assert scores["<0.5"]["sentences"] == 1 and scores["<0.5"]["f1"] == 0.0
    assert scores["0.5-0.9"]["sentences"] == 1 and scores["0.5-0.9"]["f1"] == 1.0
    assert scores["at_least"]["0.5"]["sentences"] == 1
    assert scores["at_least"]["0.5"]["share_of_sentences"] == 0.5
    assert scores["at_least"]["0.5"]["f1"] == 1.0
    assert scores["all"]["sentences"] == 2
    # on the combination: sentence 2 (majority share 0.6) is below a first bound of 0.75
    cas = combined_cas(tmp_path)
    evaluator = AgreementEvaluator(
        AgreementEvaluatorConfig(layer="dependencies", bands=[0.75, 1], system_views=["combined"]),
        RunContext(output_dir=tmp_path),
    )
    scores = evaluator.score(
        evaluator.evaluate(cas.get_view("gold"), cas.get_view("combined")).counts
    )
    assert [scores[b]["sentences"] for b in ("<0.75", "0.75-1", ">=1")] == [1, 0, 1]
    assert evaluator.summary(scores)["majority_share <0.75: sentences"] == 1
    bands = evaluator.band_scores(scores)["agreement (majority_share)"]
    assert list(bands)[:2] == ["<0.75", "0.75-1"] and bands["<0.75"]["sentences"] == 1


def test_member_counts_need_whole_number_bands() -> None:
    with pytest.raises(ValueError, match=r"members_agreeing counts members.*bands: \[0, 1, 2, 3\]"):
        AgreementEvaluatorConfig(measure="members_agreeing", system_views=["combined"])
    for bound in (float("inf"), float("nan")):  # int() raised OverflowError / another message
        with pytest.raises(ValueError, match="members_agreeing counts members"):
            AgreementEvaluatorConfig(
                measure="members_agreeing", bands=[0, 1, bound], system_views=["combined"]
            )
    config = AgreementEvaluatorConfig(
        measure="members_agreeing", bands=[0, 1, 2], system_views=["combined"]
    )
    assert AgreementEvaluatorConfig.model_validate(config.model_dump(mode="json")) == config


def test_members_agreeing_as_the_measure(tmp_path: Path) -> None:
    cas = combined_cas(tmp_path)
    evaluator = AgreementEvaluator(
        AgreementEvaluatorConfig(
            layer="dependencies",
            measure="members_agreeing",
            bands=[0, 1, 2, 3],
            system_views=["combined"],
        ),
        RunContext(output_dir=tmp_path),
    )
    scores = evaluator.score(
        evaluator.evaluate(cas.get_view("gold"), cas.get_view("combined")).counts
    )
    assert scores[">=3"]["sentences"] == 1  # sentence 1: all three members equal the result


def test_mentions_by_band_and_outside_any_sentence(tmp_path: Path) -> None:
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = "Pax6 and Sox2. Shh too."
    gold = cas.create_view("gold")
    gold.sofa_string = cas.sofa_string
    system = cas.create_view("combined")
    system.sofa_string = cas.sofa_string
    gene = ts.get_type(GENE_MENTION)
    gold.add_all([gene(begin=0, end=4), gene(begin=9, end=13), gene(begin=15, end=18)])
    system.add_all([gene(begin=0, end=4), gene(begin=15, end=19)])
    agreement = ts.get_type(SENTENCE_AGREEMENT)
    system.add_all(
        [
            agreement(begin=0, end=14, layer="mentions:GeneMention", majorityShare=1.0),
            agreement(begin=0, end=14, layer="mentions:AnatomyMention", majorityShare=0.2),
            agreement(begin=0, end=14, layer="dependencies", majorityShare=0.1),
        ]
    )
    system.add(ts.get_type(SENTENCE)(begin=15, end=23))
    evaluator = AgreementEvaluator(
        AgreementEvaluatorConfig(
            layer="mentions", type="GeneMention", bands=BOUNDS, system_views=["combined"]
        ),
        RunContext(output_dir=tmp_path),
    )
    scores = evaluator.score(evaluator.evaluate(gold, system).counts)
    assert (scores[">=1"]["correct"], scores[">=1"]["gold"], scores[">=1"]["system"]) == (1, 2, 1)
    # neither the dependencies' nor the anatomy mentions' agreement is read
    assert scores["0-0.5"]["sentences"] == 0
    assert (scores["none"]["gold"], scores["none"]["system"], scores["none"]["correct"]) == (
        1,
        1,
        0,
    )


def test_constituent_brackets_by_band(tmp_path: Path) -> None:
    from tests.test_combine_constituents import MEMBERS, add_member, combine, make_cas

    cas = make_cas(tmp_path)
    add_member(cas, "gold", MEMBERS["c1"], tmp_path)
    target = combine(cas, tmp_path)
    evaluator = AgreementEvaluator(
        AgreementEvaluatorConfig(layer="constituents", bands=BOUNDS, system_views=["combined"]),
        RunContext(output_dir=tmp_path),
    )
    scores = evaluator.score(evaluator.evaluate(cas.get_view("gold"), target).counts)
    # sentence 1 (every span with a majority) matches c1 but for NP-SBJ's function
    # tag, which EVALB ignores; sentence 2 (two of five spans) loses c1's VP
    assert scores[">=1"]["sentences"] == 1 and scores[">=1"]["f1"] == 1.0
    assert scores["0-0.5"]["sentences"] == 1 and scores["0-0.5"]["f1"] < 1.0
