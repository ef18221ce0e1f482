"""combine.dependencies.v1 and the reparsing under it (Sagae & Lavie 2006)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import cassis
import pytest

from casflow.components.combine.base import CombineInputError
from casflow.components.combine.dependencies import (
    CombineDependencies,
    CombineDependenciesConfig,
)
from casflow.components.combine.reparse import (
    MemberParse,
    check_tree,
    combine_parses,
    tree_problem,
)
from casflow.components.evaluators.adapters import dependency_sentences
from casflow.pipeline.component import RunContext
from casflow.typesystem import (
    DEPENDENCY,
    DEPENDENCY_ROOT,
    POS,
    SENTENCE,
    SENTENCE_AGREEMENT,
    TOKEN,
    load_typesystem,
)

# ----------------------------------------------------------------------------- pure


def random_tree(n: int, rng: random.Random) -> list[int]:
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = [0] * n
    for k, token in enumerate(order):
        heads[token - 1] = 0 if k == 0 else order[rng.randrange(k)]
    return heads


def all_trees(n: int):
    for heads in itertools.product(range(n + 1), repeat=n):
        if tree_problem(list(heads)) is None:
            yield list(heads)


def tree_score(heads: list[int], members: list[MemberParse]) -> float:
    return sum(
        m.arc_weight(m.labels[d]) for m in members for d, h in enumerate(heads) if m.heads[d] == h
    )


def test_identical_members_give_their_tree_and_full_agreement() -> None:
    heads = [2, 0, 2, 3]
    labels = ["nsubj", "ROOT", "dobj", "amod"]
    result = combine_parses(4, [MemberParse(heads, labels)] * 3)
    assert result.heads == heads
    assert result.labels == ["nsubj", "ROOT", "dobj", "amod"]
    assert (result.agreement.majority_share, result.agreement.support) == (1.0, 1.0)
    assert result.agreement.members_agreeing == 3
    assert result.fallback_arcs == 0


def test_majority_arcs_win_and_labels_are_voted() -> None:
    a = MemberParse([2, 0, 2], ["nsubj", "ROOT", "dobj"])
    b = MemberParse([2, 0, 2], ["nsubj", "ROOT", "iobj"])
    c = MemberParse([0, 1, 2], ["ROOT", "dep", "iobj"])
    result = combine_parses(3, [a, b, c])
    assert result.heads == [2, 0, 2]
    assert result.labels == ["nsubj", "ROOT", "iobj"]  # two iobj against one dobj
    # union of unlabelled arcs: (2,1) (0,2) (2,3) (0,1) (1,2); three have a majority
    assert result.agreement.majority_share == pytest.approx(3 / 5)
    assert result.agreement.members_agreeing == 1  # b only (a differs in a label)


def test_member_and_relation_weights_change_the_vote() -> None:
    a = MemberParse([2, 0, 2], ["x", "ROOT", "y"], weight=1.0)
    b = MemberParse([2, 0, 1], ["x", "ROOT", "z"], weight=1.0)
    c = MemberParse([2, 0, 1], ["x", "ROOT", "z"], weight=1.0)
    assert combine_parses(3, [a, b, c]).heads == [2, 0, 1]
    heavy = MemberParse([2, 0, 2], ["x", "ROOT", "y"], weight=3.0)
    assert combine_parses(3, [heavy, b, c]).heads == [2, 0, 2]
    by_relation = MemberParse([2, 0, 2], ["x", "ROOT", "y"], label_weights={"y": 2.5})
    assert combine_parses(3, [by_relation, b, c]).heads == [2, 0, 2]


def test_a_member_may_vote_arcs_but_not_labels() -> None:
    # the arcs-only members carry the arc for token 3 with a label the labelling a does not
    arcs_only = [
        MemberParse([2, 0, 2], ["x", "ROOT", "conj"], vote_labels=False),
        MemberParse([2, 0, 2], ["x", "ROOT", "conj"], vote_labels=False),
    ]
    a = MemberParse([2, 0, 2], ["x", "ROOT", "dobj"])
    b = MemberParse([2, 0, 1], ["x", "ROOT", "amod"])
    result = combine_parses(3, [a, b, *arcs_only])
    assert result.heads == [2, 0, 2]  # their arcs count: three against one
    assert result.labels[2] == "dobj"  # their labels do not, where a labels the arc
    # where only arcs-only members propose the chosen arc, their labels are all there is
    lone = MemberParse([2, 0, 1], ["x", "ROOT", "amod"])
    result = combine_parses(3, [lone, *arcs_only])
    assert (result.heads, result.labels[2]) == ([2, 0, 2], "conj")


def test_a_cycle_of_majority_arcs_still_gives_a_tree() -> None:
    # Each member is a tree, but the most voted arcs 1->2, 2->3, 3->1 form a cycle.
    members = [
        MemberParse([0, 1, 2], ["ROOT", "a", "a"]),
        MemberParse([3, 0, 2], ["a", "ROOT", "a"]),
        MemberParse([3, 1, 0], ["a", "a", "ROOT"]),
    ]
    result = combine_parses(3, members)
    check_tree(result.heads)
    best = max(tree_score(t, members) for t in all_trees(3))
    assert tree_score(result.heads, members) == best


def test_one_root_even_when_every_member_has_another_root() -> None:
    members = [
        MemberParse([0, 1, 1], ["ROOT", "a", "a"]),
        MemberParse([2, 0, 2], ["a", "ROOT", "a"]),
        MemberParse([3, 3, 0], ["a", "a", "ROOT"]),
    ]
    result = combine_parses(3, members)
    check_tree(result.heads)
    assert result.heads.count(0) == 1


def test_tokens_no_member_attaches_are_attached_anyway() -> None:
    members = [
        MemberParse([2, 0, None, None], ["a", "ROOT", "", ""]),
        MemberParse([2, 0, None, 3], ["a", "ROOT", "", "b"]),
    ]
    result = combine_parses(4, members)
    check_tree(result.heads)
    assert result.heads[:2] == [2, 0]
    assert result.fallback_arcs >= 1
    assert result.labels[3] == "b"


def test_random_members_always_give_the_best_single_rooted_tree() -> None:
    # The best tree among those made of proposed arcs (Sagae & Lavie's graph), found
    # by trying every tree; members that miss tokens must still give a valid tree.
    rng = random.Random(14)
    for _ in range(200):
        n = rng.randint(1, 5)
        members = [
            MemberParse(
                random_tree(n, rng),
                [rng.choice("ab") for _ in range(n)],
                weight=rng.choice([1.0, 0.5, 2.0]),
                label_weights={"a": rng.choice([0.3, 1.0])},
            )
            for _ in range(rng.randint(2, 4))
        ]
        proposed = {(h, d) for m in members for d, h in enumerate(m.heads)}
        candidates = [t for t in all_trees(n) if all((h, d) in proposed for d, h in enumerate(t))]
        result = combine_parses(n, members)
        check_tree(result.heads)
        assert tree_score(result.heads, members) == pytest.approx(
            max(tree_score(t, members) for t in candidates)
        )
        partial = [
            MemberParse([None if rng.random() < 0.3 else h for h in m.heads], m.labels)
            for m in members
        ]
        check_tree(combine_parses(n, partial).heads)


def test_a_first_token_no_member_attaches_hangs_on_a_neighbour_not_the_root() -> None:
    # the members agree on 3 <- 2 and the root at 3; token 1 has no head
    members = [MemberParse([None, 3, 0], ["", "amod", "ROOT"])] * 2
    result = combine_parses(3, members)
    assert result.heads[1:] == [3, 0]
    assert result.labels[1:] == ["amod", "ROOT"]
    assert result.fallback_arcs == 1


def test_fallback_arcs_never_displace_the_members_root() -> None:
    # no member tree is complete and the majority arcs cycle (2 <-> 3): the spanning
    # tree must keep b's root at 2 and attach token 1 by a fallback arc from 2
    a = MemberParse([None, 3, 2], ["", "x", "y"], weight=2.0)
    b = MemberParse([None, 0, 2], ["", "ROOT", "y"])
    assert combine_parses(3, [a, b]).heads == [2, 0, 2]


def test_without_a_complete_member_the_best_tree_over_any_arcs_is_found() -> None:
    # fallback arcs (weight 0) may join any two tokens: the result scores as well as
    # the best of all trees, so a missing fallback arc never costs a member arc
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 5)
        members = [
            MemberParse(
                [rng.choice([None, *(h for h in range(n + 1) if h != d)]) for d in range(1, n + 1)],
                ["a"] * n,
                weight=rng.choice([1.0, 2.0]),
            )
            for _ in range(rng.randint(2, 4))
        ]
        result = combine_parses(n, members)
        check_tree(result.heads)
        assert tree_score(result.heads, members) == pytest.approx(
            max(tree_score(t, members) for t in all_trees(n))
        )


def test_tied_arc_scores_do_not_depend_on_the_members_order() -> None:
    # 0.1 + 0.2 + 0.3 for head 3 ties with 0.6 for head 2 (the lower head wins)
    a, b, c = (MemberParse([3, 0, 2], ["x", "ROOT", "y"], weight=w) for w in (0.1, 0.2, 0.3))
    d = MemberParse([2, 0, 2], ["z", "ROOT", "y"], weight=0.6)
    assert combine_parses(3, [a, b, c, d]).heads == [2, 0, 2]
    assert combine_parses(3, [c, b, a, d]).heads == [2, 0, 2]


def test_a_sentence_no_member_parses_is_not_trusted() -> None:
    silent = combine_parses(3, [MemberParse([None] * 3, [""] * 3)] * 2)
    check_tree(silent.heads)
    assert silent.fallback_arcs == 3
    assert (silent.agreement.majority_share, silent.agreement.support) == (0.0, 0.0)
    assert silent.agreement.members_agreeing == 0
    nobody = combine_parses(3, [])
    assert (nobody.agreement.members, nobody.agreement.majority_share) == (0, 0.0)


def test_long_random_sentences_give_valid_trees() -> None:
    rng = random.Random(7)
    for _ in range(10):
        n = rng.randint(20, 60)
        members = [MemberParse(random_tree(n, rng), ["x"] * n) for _ in range(3)]
        check_tree(combine_parses(n, members).heads)


def test_check_tree_names_the_problem() -> None:
    with pytest.raises(ValueError, match="exactly one root"):
        check_tree([0, 0])
    with pytest.raises(ValueError, match="cycle"):
        check_tree([0, 3, 2])


# ----------------------------------------------------------------------------- CAS

TEXT = "Pax6 binds DNA. It works."
TOKENS = [(0, 4), (5, 10), (11, 14), (14, 15), (16, 18), (19, 24), (24, 25)]
SENTENCES = [(0, 15), (16, 25)]


def add_parse(
    cas: cassis.Cas,
    name: str,
    heads: list[int],
    labels: list[str],
    tags: list[str] | None = None,
    tokens: list[tuple[int, int]] = TOKENS,
    sentences: list[tuple[int, int]] = SENTENCES,
) -> cassis.Cas:
    """A view with tokens, sentences and a parse; heads index ``tokens`` from 1, 0 = root."""
    ts = cas.typesystem
    view = cas.create_view(name)
    view.sofa_string = cas.sofa_string
    made = [ts.get_type(TOKEN)(begin=b, end=e) for b, e in tokens]
    view.add_all(made)
    view.add_all(ts.get_type(SENTENCE)(begin=b, end=e) for b, e in sentences)
    for i, token in enumerate(made):
        if tags is not None:
            token.pos = ts.get_type(POS)(begin=token.begin, end=token.end, PosValue=tags[i])
            view.add(token.pos)
        head = heads[i]
        if head == 0:
            dep = ts.get_type(DEPENDENCY_ROOT)(
                begin=token.begin,
                end=token.end,
                Governor=token,
                Dependent=token,
                DependencyType="ROOT",
                flavor="basic",
            )
        else:
            dep = ts.get_type(DEPENDENCY)(
                begin=token.begin,
                end=token.end,
                Governor=made[head - 1],
                Dependent=token,
                DependencyType=labels[i],
                flavor="basic",
            )
        view.add(dep)
    return view


def new_cas() -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = TEXT
    return cas


def combiner(tmp_path: Path, **config) -> CombineDependencies:
    config.setdefault("members", ["p1", "p2", "p3"])
    return CombineDependencies(CombineDependenciesConfig(**config), RunContext(output_dir=tmp_path))


GOLD_HEADS = [2, 0, 2, 2, 6, 0, 6]
LABELS = ["nsubj", "ROOT", "dobj", "punct", "nsubj", "ROOT", "punct"]


def test_three_views_are_combined_into_one_valid_tree_per_sentence(tmp_path: Path) -> None:
    cas = new_cas()
    add_parse(cas, "p1", GOLD_HEADS, LABELS, tags=["NN", "VBZ", "NN", ".", "PRP", "VBZ", "."])
    add_parse(
        cas, "p2", [2, 0, 2, 3, 6, 0, 6], LABELS, tags=["NN", "VBZ", "NN", ".", "PRP", "VBZ", "."]
    )
    add_parse(
        cas,
        "p3",
        [0, 1, 2, 2, 6, 0, 5],
        ["ROOT", "dep", "dobj", "punct", "nsubj", "ROOT", "x"],
        tags=["NNP", "VBZ", "NN", ".", "PRP", "NN", "."],
    )
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    combiner(tmp_path).process(target)

    sentences = dependency_sentences(target)
    assert [len(s) for s in sentences] == [4, 3]
    words = [w for s in sentences for w in s]
    spans = [w.span for w in words]
    heads = [0 if w.governor is None else spans.index(w.governor) + 1 for w in words]
    assert heads == GOLD_HEADS
    assert [w.deprel for w in words] == ["nsubj", "ROOT", "dobj", "punct", "nsubj", "ROOT", "punct"]
    assert len(target.select(DEPENDENCY_ROOT)) == 2
    assert [t.pos.PosValue for t in target.select(TOKEN)] == [
        "NN",
        "VBZ",
        "NN",
        ".",
        "PRP",
        "VBZ",
        ".",
    ]
    assert [(s.begin, s.end) for s in target.select(SENTENCE)] == SENTENCES
    agreement = target.select(SENTENCE_AGREEMENT)
    assert [(a.begin, a.end, a.layer, a.members) for a in agreement] == [
        (0, 15, "dependencies", 3),
        (16, 25, "dependencies", 3),
    ]
    # sentence 1: arcs (2,1) (0,2) (2,3) (2,4) (3,4) (0,1) (1,2) -> 4 of 7 with a majority
    assert agreement[0].majorityShare == pytest.approx(4 / 7)
    assert agreement[0].membersAgreeing == 1
    assert agreement[1].membersAgreeing == 2


def test_members_with_other_tokens_fail_the_document_naming_the_token(tmp_path: Path) -> None:
    cas = new_cas()
    add_parse(cas, "p1", GOLD_HEADS, LABELS)
    add_parse(cas, "p2", GOLD_HEADS, LABELS)
    other = [(0, 4), (5, 10), (11, 15), (16, 18), (19, 24), (24, 25)]
    add_parse(cas, "p3", [2, 0, 2, 5, 0, 5], LABELS[:3] + LABELS[4:], tokens=other)
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    with pytest.raises(
        CombineInputError, match=r"member view 'p3' has other tokens.*token 3 is 'DNA\.'"
    ):
        combiner(tmp_path).process(target)


def test_a_view_that_already_holds_dependencies_is_refused(tmp_path: Path) -> None:
    cas = new_cas()
    for name in ("p1", "p2", "p3"):
        add_parse(cas, name, GOLD_HEADS, LABELS)
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    combiner(tmp_path).process(target)
    with pytest.raises(CombineInputError, match="the view already holds dependencies; write"):
        combiner(tmp_path).process(target)


def test_missing_member_view_is_named(tmp_path: Path) -> None:
    cas = new_cas()
    add_parse(cas, "p1", GOLD_HEADS, LABELS)
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    with pytest.raises(CombineInputError, match="member view 'p2' does not exist"):
        combiner(tmp_path).process(target)


def test_config_needs_two_distinct_members() -> None:
    with pytest.raises(ValueError, match="at least two"):
        CombineDependenciesConfig(members=["p1"])
    with pytest.raises(ValueError, match="repeated: p1"):
        CombineDependenciesConfig(members=["p1", {"view": "p1", "weight": 2}])
    config = CombineDependenciesConfig(
        members=["p1", {"view": "p2", "weight": 2, "label_weights": {"nsubj": 0.9}}]
    )
    assert config.members[1].label_weights == {"nsubj": 0.9}


def test_a_member_with_other_sentences_votes_inside_the_views_sentences(tmp_path: Path) -> None:
    cas = new_cas()
    add_parse(cas, "p1", GOLD_HEADS, LABELS)
    add_parse(cas, "p2", GOLD_HEADS, LABELS)
    # p3 reads both sentences as one: "It" hangs on "binds", across the boundary
    add_parse(cas, "p3", [2, 0, 2, 2, 2, 2, 6], LABELS, sentences=[(0, 25)])
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    target.add_all(target.typesystem.get_type(SENTENCE)(begin=b, end=e) for b, e in SENTENCES)
    combiner(tmp_path, members=["p3", "p1", "p2"]).process(target)
    words = [w for s in dependency_sentences(target) for w in s]
    spans = [w.span for w in words]
    heads = [0 if w.governor is None else spans.index(w.governor) + 1 for w in words]
    assert heads == GOLD_HEADS
    second = target.select(SENTENCE_AGREEMENT)[1]
    # p3's arcs leaving the sentence are no votes: it proposes only 7 <- 6 there
    assert second.majorityShare == 1.0 and second.membersAgreeing == 2


def test_a_member_with_no_output_abstains(tmp_path: Path) -> None:
    cas = new_cas()
    add_parse(cas, "p1", GOLD_HEADS, LABELS, tags=["NN"] * 7)
    add_parse(cas, "p2", GOLD_HEADS, LABELS, tags=["NN"] * 7)
    empty = cas.create_view("p3")  # the third parser failed on this document
    empty.sofa_string = TEXT
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    combiner(tmp_path, members=["p3", "p1", "p2"]).process(target)
    words = [w for s in dependency_sentences(target) for w in s]
    spans = [w.span for w in words]
    assert [0 if w.governor is None else spans.index(w.governor) + 1 for w in words] == GOLD_HEADS
    agreement = target.select(SENTENCE_AGREEMENT)[0]
    # p3 abstains: left out of the count, as of the vote
    assert (agreement.members, agreement.membersAgreeing, agreement.majorityShare) == (2, 2, 1.0)


def first_label(cas: cassis.Cas, tmp_path: Path, view: str, members: list) -> str:
    """The first token's relation in ``view`` after combining ``members`` into it."""
    target = cas.create_view(view)
    target.sofa_string = TEXT
    combiner(tmp_path, members=members).process(target)
    return [w.deprel for s in dependency_sentences(target) for w in s][0]


def relabelled_members(subject: str) -> cassis.Cas:
    """p1 with LABELS; p2 and p3 with the same tree but ``subject`` for nsubj."""
    cas = new_cas()
    add_parse(cas, "p1", GOLD_HEADS, LABELS)
    other = [subject if label == "nsubj" else label for label in LABELS]
    add_parse(cas, "p2", GOLD_HEADS, other)
    add_parse(cas, "p3", GOLD_HEADS, other)
    return cas


def test_label_mapping_renames_a_members_relations_before_the_vote(tmp_path: Path) -> None:
    cas = relabelled_members("nsubj:pass")
    mapped = {"view": "p2", "label_mapping": {"nsubj:pass": "nsubj"}}
    # p1 and the mapped p2 outvote p3
    assert first_label(cas, tmp_path, "combined", ["p1", mapped, "p3"]) == "nsubj"


def test_vote_labels_false_in_the_config(tmp_path: Path) -> None:
    cas = relabelled_members("dep")
    arcs_only = [{"view": v, "vote_labels": False} for v in ("p2", "p3")]
    # p1 alone labels; p2 and p3 outvote it when they vote labels too
    assert first_label(cas, tmp_path, "combined", ["p1", *arcs_only]) == "nsubj"
    assert first_label(cas, tmp_path, "combined_all", ["p1", "p2", "p3"]) == "dep"


def test_with_one_of_two_members_empty_the_other_is_trusted(tmp_path: Path) -> None:
    cas = new_cas()
    add_parse(cas, "p1", GOLD_HEADS, LABELS)
    empty = cas.create_view("p2")  # the second parser failed on this document
    empty.sofa_string = TEXT
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    combiner(tmp_path, members=["p1", "p2"]).process(target)
    agreement = target.select(SENTENCE_AGREEMENT)[0]
    # p2 is no vote against p1's arcs
    assert (agreement.members, agreement.majorityShare, agreement.support) == (1, 1.0, 1.0)
    assert agreement.membersAgreeing == 1


def tokens_only(cas: cassis.Cas, name: str) -> None:
    """A member view with the tokens and sentences but no parse."""
    view = cas.create_view(name)
    view.sofa_string = TEXT
    ts = view.typesystem
    view.add_all(ts.get_type(TOKEN)(begin=b, end=e) for b, e in TOKENS)
    view.add_all(ts.get_type(SENTENCE)(begin=b, end=e) for b, e in SENTENCES)


def test_a_sentence_every_member_abstains_on_gets_no_tree(tmp_path: Path) -> None:
    cas = new_cas()
    tokens_only(cas, "p1")
    tokens_only(cas, "p2")
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    combiner(tmp_path, members=["p1", "p2"]).process(target)
    # no invented chain, and no agreement that would rate it
    assert target.select(DEPENDENCY) == [] and target.select(SENTENCE_AGREEMENT) == []
    assert len(target.select(TOKEN)) == len(TOKENS)


def test_tokens_outside_every_sentence_are_combined_as_a_sentence(tmp_path: Path) -> None:
    cas = new_cas()
    add_parse(cas, "p1", GOLD_HEADS, LABELS)
    add_parse(cas, "p2", GOLD_HEADS, LABELS)
    target = cas.create_view("combined")
    target.sofa_string = TEXT
    # the view's own sentences leave "Pax6 binds DNA." out
    target.add(target.typesystem.get_type(SENTENCE)(begin=16, end=25))
    combiner(tmp_path, members=["p1", "p2"]).process(target)
    words = [w for s in dependency_sentences(target) for w in s]
    assert [w.span for w in words] == TOKENS
    spans = [w.span for w in words]
    assert [0 if w.governor is None else spans.index(w.governor) + 1 for w in words] == GOLD_HEADS
    assert [(s.begin, s.end) for s in target.select(SENTENCE)] == SENTENCES
    assert [(a.begin, a.end) for a in target.select(SENTENCE_AGREEMENT)] == SENTENCES
