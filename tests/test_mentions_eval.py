"""Mention P/R/F: criteria, classes, class mapping, one-class mode, alternatives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.metrics.matching import (
    ACCEPTED_ALTERNATIVES,
    LEFT_BOUNDARY,
    OVERLAP,
    RIGHT_BOUNDARY,
    STRICT,
    Mention,
)
from casflow.components.metrics.mentions import (
    ONE_CLASS,
    alt_eval_counts,
    mention_counts,
    score_mentions,
)
from casflow.pipeline.counts import sum_counts

GOLD = [Mention(0, 5, "GENE"), Mention(10, 15, "GENE"), Mention(20, 25, "CHEM")]
SYSTEM = [
    Mention(0, 5, "GENE"),  # exact
    Mention(10, 14, "GENE"),  # same begin, shorter
    Mention(20, 25, "GENE"),  # right span, wrong class
    Mention(30, 33, "CHEM"),  # spurious
]


def counts_of(counts, criterion, scope="micro"):
    return tuple(counts.get(f"{criterion}/{scope}/{k}", 0) for k in ("tp", "fp", "fn"))


def test_hand_worked_strict_counts_and_scores():
    counts = mention_counts(GOLD, SYSTEM).counts
    assert counts_of(counts, "strict") == (1, 3, 2)
    assert counts_of(counts, "strict", "class/GENE") == (1, 2, 1)
    assert counts_of(counts, "strict", "class/CHEM") == (0, 1, 1)
    scores = score_mentions(counts)["strict"]
    assert scores["micro"]["precision"] == pytest.approx(1 / 4)
    assert scores["micro"]["recall"] == pytest.approx(1 / 3)
    assert scores["micro"]["f1"] == pytest.approx(2 / 7)
    assert scores["class"]["GENE"]["f1"] == pytest.approx(0.4)  # P 1/3, R 1/2
    assert scores["macro"]["f1"] == pytest.approx((0.4 + 0.0) / 2)
    assert scores["macro"]["classes"] == 2


def test_hand_worked_boundary_criteria():
    counts = mention_counts(GOLD, SYSTEM).counts
    assert counts_of(counts, "left") == (2, 2, 1)  # (10, 14) now matches (10, 15)
    assert counts_of(counts, "right") == (1, 3, 2)
    assert counts_of(counts, "overlap") == (2, 2, 1)


def test_one_class_mode_ignores_labels():
    counts = mention_counts(GOLD, SYSTEM, one_class=True).counts
    assert counts_of(counts, "strict") == (2, 2, 1)
    assert counts_of(counts, "strict", f"class/{ONE_CLASS}") == (2, 2, 1)
    assert set(score_mentions(counts)["strict"]["class"]) == {ONE_CLASS}


def test_class_mapping_lets_a_system_label_match_several_gold_classes():
    gold = [Mention(0, 5, "GENE"), Mention(10, 15, "PROTEIN")]
    system = [Mention(0, 5, "GGP"), Mention(10, 15, "GGP"), Mention(20, 25, "GGP")]
    counts = mention_counts(gold, system, class_mapping={"GGP": {"GENE", "PROTEIN"}}).counts
    assert counts_of(counts, "strict") == (2, 1, 0)
    assert counts_of(counts, "strict", "class/GENE") == (1, 0, 0)
    assert counts_of(counts, "strict", "class/PROTEIN") == (1, 0, 0)
    # An FP whose label maps to two classes is booked under the system label ...
    assert counts_of(counts, "strict", "class/GGP") == (0, 1, 0)
    # ... which is not a gold class, so macro averages GENE and PROTEIN only.
    assert score_mentions(counts)["strict"]["macro"]["classes"] == 2

    single = mention_counts(gold, system, class_mapping={"GGP": {"GENE"}}).counts
    assert counts_of(single, "strict") == (1, 2, 1)
    assert counts_of(single, "strict", "class/GENE") == (1, 2, 0)


def test_unmapped_system_labels_match_their_own_name():
    counts = mention_counts(GOLD, SYSTEM, class_mapping={"GGP": {"GENE"}}).counts
    assert counts == mention_counts(GOLD, SYSTEM).counts


def test_macro_is_computed_from_summed_class_counts_not_per_document():
    doc1 = mention_counts([Mention(0, 3, "A")], [Mention(0, 3, "A")]).counts
    doc2 = mention_counts(
        [Mention(0, 3, "B"), Mention(5, 8, "A"), Mention(10, 12, "A"), Mention(14, 16, "A")],
        [Mention(0, 3, "B")],
    ).counts
    total = sum_counts([doc1, doc2])
    # Summed: A tp 1 fn 3 -> P 1, R 1/4, F 0.4; B tp 1 -> F 1.0. Macro = 0.7.
    assert score_mentions(total)["strict"]["macro"]["f1"] == pytest.approx(0.7)
    # Averaging per-document macro scores would give (1.0 + 0.5) / 2 instead.
    per_document = [score_mentions(c)["strict"]["macro"]["f1"] for c in (doc1, doc2)]
    assert per_document == pytest.approx([1.0, 0.5])


def test_accepted_alternatives_are_one_to_one():
    gold = [Mention(0, 10, "GENE", alternatives=((0, 6), (4, 10)))]
    both = [Mention(0, 6, "GENE"), Mention(4, 10, "GENE")]
    counts = mention_counts(gold, both, criteria=[STRICT, ACCEPTED_ALTERNATIVES]).counts
    assert counts_of(counts, "alternatives") == (1, 1, 0)
    assert counts_of(counts, "strict") == (0, 2, 1)


def test_alt_eval_counts_follow_the_biocreative_script():
    # alt_eval.perl counts a gold mention found once and never makes a system mention
    # that equals an alternative a false positive, even when the gold mention is taken.
    gold = [Mention(0, 10, "GENE", alternatives=((0, 6), (4, 10)))]
    both = [Mention(0, 6, "GENE"), Mention(4, 10, "GENE"), Mention(12, 15, "GENE")]
    counts = alt_eval_counts(gold, both).counts
    assert counts_of(counts, "alt_eval") == (1, 1, 0)
    # One system span that is an alternative of two gold mentions finds both.
    gold2 = [
        Mention(0, 4, "GENE", alternatives=((0, 9),)),
        Mention(5, 9, "GENE", alternatives=((0, 9),)),
    ]
    assert counts_of(alt_eval_counts(gold2, [Mention(0, 9, "GENE")]).counts, "alt_eval") == (
        2,
        0,
        0,
    )
    assert counts_of(
        mention_counts(gold2, [Mention(0, 9, "GENE")], criteria=[ACCEPTED_ALTERNATIVES]).counts,
        "alternatives",
    ) == (1, 0, 1)
    assert score_mentions(counts)["alt_eval"]["micro"]["precision"] == pytest.approx(0.5)


def test_alt_eval_corner_cases_of_the_script():
    # alt_eval.perl, per sentence: a gold gene is a TP when a system mention equals it
    # or one of the ALTGENE entries that overlap it, else an FN; a system mention is an
    # FP only when it equals no GENE and no ALTGENE entry of the sentence.
    gold = [Mention(10, 14, "GENE", alternatives=((6, 14),))]
    orphan = (20, 30)  # an ALTGENE entry that overlaps no gold gene
    cases = {
        "exact": ([Mention(10, 14, "GENE")], (1, 0, 0)),
        "via alternative": ([Mention(6, 14, "GENE")], (1, 0, 0)),
        "equal to the orphan alternative": ([Mention(20, 30, "GENE")], (0, 0, 1)),
        "overlapping, equal to nothing": ([Mention(10, 13, "GENE")], (0, 1, 1)),
        "inside the orphan, not equal": ([Mention(21, 30, "GENE")], (0, 1, 1)),
        "exact and orphan": ([Mention(10, 14, "GENE"), Mention(20, 30, "GENE")], (1, 0, 0)),
        "gold span and its alternative": (
            [Mention(10, 14, "GENE"), Mention(6, 14, "GENE")],
            (1, 0, 0),
        ),
        "no system mention": ([], (0, 0, 1)),
    }
    for name, (system, expected) in cases.items():
        counts = alt_eval_counts(gold, system, accepted=[orphan, (6, 14)]).counts
        assert counts_of(counts, "alt_eval") == expected, name
    # Without the orphan among the accepted spans it is a false positive.
    assert counts_of(alt_eval_counts(gold, [Mention(20, 30, "GENE")]).counts, "alt_eval") == (
        0,
        1,
        1,
    )
    # Orphan alternatives carry no class: they accept any label even with labels compared.
    labelled = alt_eval_counts(
        gold, [Mention(20, 30, "PROTEIN")], one_class=False, accepted=[orphan]
    ).counts
    assert counts_of(labelled, "alt_eval") == (0, 0, 1)
    # A sentence without gold genes: only ALTGENE entries can save a system mention.
    assert counts_of(
        alt_eval_counts(
            [], [Mention(0, 3, "GENE"), Mention(5, 8, "GENE")], accepted=[(0, 3)]
        ).counts,
        "alt_eval",
    ) == (0, 1, 0)


def test_errors_carry_text_and_context():
    text = "The BRCA1 gene and p53 protein."
    gold = [Mention(4, 9, "GENE"), Mention(19, 22, "GENE")]
    system = [Mention(4, 14, "GENE")]
    errors = mention_counts(gold, system, criteria=[STRICT], text=text).errors
    fp = [e for e in errors if e["type"] == "FP"]
    fn = sorted((e for e in errors if e["type"] == "FN"), key=lambda e: e["begin"])
    assert fp == [
        {
            "type": "FP",
            "criterion": "strict",
            "begin": 4,
            "end": 14,
            "label": "GENE",
            "class": "GENE",
            "text": "BRCA1 gene",
            "context": "The [[BRCA1 gene]] and p53 protein.",
        }
    ]
    assert [e["text"] for e in fn] == ["BRCA1", "p53"]
    assert mention_counts(gold, system, errors_for={"overlap"}).errors == [
        e for e in mention_counts(gold, system).errors if e["criterion"] == "overlap"
    ]


def test_duplicate_criterion_names_are_rejected():
    with pytest.raises(ValueError, match="unique"):
        mention_counts(GOLD, SYSTEM, criteria=[STRICT, STRICT])


# --- properties -----------------------------------------------------------------


@st.composite
def mention_lists(draw, min_size: int = 0) -> list[Mention]:
    result = []
    for _ in range(draw(st.integers(min_size, 10))):
        begin = draw(st.integers(0, 40))
        end = begin + draw(st.integers(1, 8))
        fragments: tuple = ()
        if end - begin >= 3 and draw(st.booleans()):
            fragments = ((begin, begin + 1), (end - 1, end))
        alternatives = tuple(
            (max(0, begin + d), end) for d in draw(st.lists(st.integers(-2, 2), max_size=2))
        )
        result.append(
            Mention(begin, end, draw(st.sampled_from(["A", "B", "C"])), alternatives, fragments)
        )
    return result


DEFAULT_NAMES = ("strict", "left", "right", "overlap")


@settings(max_examples=100, deadline=None)
@given(mention_lists(min_size=1), st.booleans())
def test_gold_against_itself_scores_one_everywhere(gold, one_class):
    criteria = [STRICT, LEFT_BOUNDARY, RIGHT_BOUNDARY, OVERLAP, ACCEPTED_ALTERNATIVES]
    system = [Mention(g.begin, g.end, g.label, fragments=g.fragments) for g in gold]
    scores = score_mentions(
        mention_counts(gold, system, criteria=criteria, one_class=one_class).counts
    )
    assert set(scores) == {c.name for c in criteria}
    for criterion in scores.values():
        assert criterion["micro"]["f1"] == 1.0
        assert criterion["macro"]["f1"] == 1.0
        assert all(c["precision"] == c["recall"] == 1.0 for c in criterion["class"].values())
    assert score_mentions(alt_eval_counts(gold, system).counts)["alt_eval"]["micro"]["f1"] == 1.0


@settings(max_examples=150, deadline=None)
@given(mention_lists(), mention_lists(min_size=1), st.data())
def test_removing_one_system_mention_changes_one_outcome(gold, system, data):
    index = data.draw(st.integers(0, len(system) - 1))
    before = mention_counts(gold, system).counts
    after = mention_counts(gold, system[:index] + system[index + 1 :]).counts
    for criterion in DEFAULT_NAMES:
        tp0, fp0, fn0 = counts_of(before, criterion)
        tp1, fp1, fn1 = counts_of(after, criterion)
        # Either a false positive disappears, or a true positive becomes a false negative.
        assert (tp1 - tp0, fp1 - fp0, fn1 - fn0) in {(0, -1, 0), (-1, 0, 1)}


@settings(max_examples=100, deadline=None)
@given(mention_lists(), mention_lists(min_size=1))
def test_removing_an_unmatched_mention_lowers_only_fp(gold, system):
    result = mention_counts(gold, system, criteria=[STRICT])
    spurious = [e for e in result.errors if e["type"] == "FP"]
    if not spurious:
        return
    first = spurious[0]
    victim = next(
        s
        for s in system
        if (s.begin, s.end, s.label) == (first["begin"], first["end"], first["label"])
    )
    rest = list(system)
    rest.remove(victim)
    tp0, fp0, fn0 = counts_of(result.counts, "strict")
    assert counts_of(mention_counts(gold, rest, criteria=[STRICT]).counts, "strict") == (
        tp0,
        fp0 - 1,
        fn0,
    )


@settings(max_examples=100, deadline=None)
@given(mention_lists(), mention_lists(), st.randoms())
def test_input_order_changes_nothing(gold, system, rnd):
    counts = mention_counts(gold, system, criteria=[STRICT, ACCEPTED_ALTERNATIVES]).counts
    gold2, system2 = list(gold), list(system)
    rnd.shuffle(gold2)
    rnd.shuffle(system2)
    assert mention_counts(gold2, system2, criteria=[STRICT, ACCEPTED_ALTERNATIVES]).counts == counts
    assert mention_counts(gold2, system2).counts == mention_counts(gold, system).counts
    assert alt_eval_counts(gold2, system2).counts == alt_eval_counts(gold, system).counts
