"""LAS/UAS/LS as conll18_ud_eval.py computes them, with span-aligned words.

Set ``CONLL18_UD_EVAL`` to the path of conll18_ud_eval.py to also compare against
the reference scorer on random gold/system pairs with different tokenisations.
"""

from __future__ import annotations

import importlib.util
import io
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.metrics.dependency import (
    INCLUDE_PUNCTUATION,
    DepWord,
    ExcludeUpos,
    ExcludeXpos,
    dependency_counts,
    full_deprel,
    score_dependencies,
    sentence_from_heads,
)
from casflow.pipeline.counts import sum_counts

# "The dog barks ."
SPANS = [(0, 3), (4, 7), (8, 13), (14, 15)]
UPOS = ["DET", "NOUN", "VERB", "PUNCT"]
XPOS = ["DT", "NN", "VBZ", "."]
GOLD = [sentence_from_heads(SPANS, [2, 3, 0, 3], ["det", "nsubj", "root", "punct"], UPOS, XPOS)]
# dog mislabelled, "." attached to the wrong head.
SYSTEM = [sentence_from_heads(SPANS, [2, 3, 0, 2], ["det", "obj", "root", "punct"], UPOS, XPOS)]


def scores(gold, system, **kwargs):
    return score_dependencies(dependency_counts(gold, system, **kwargs).counts)


def test_hand_worked_same_tokenisation():
    s = scores(GOLD, SYSTEM)
    assert s["uas"]["f1"] == pytest.approx(3 / 4)
    assert s["las"]["f1"] == pytest.approx(2 / 4)
    assert s["ls"]["f1"] == pytest.approx(3 / 4)
    for metric in ("uas", "las", "ls"):
        m = s[metric]
        assert m["precision"] == m["recall"] == m["f1"] == m["aligned_accuracy"]
    assert s["words"]["f1"] == 1.0


def test_an_unattached_system_word_is_scored_and_wrong():
    # conll18_ud_eval scores every system word; a "_" head is wrong, not absent.
    system = [list(GOLD[0][:3]) + [DepWord(14, 15, None, "", "PUNCT", ".", attached=False)]]
    result = dependency_counts(GOLD, system)
    s = score_dependencies(result.counts)
    for metric in ("uas", "las", "ls"):
        m = s[metric]
        assert m["precision"] == m["recall"] == m["aligned_accuracy"] == pytest.approx(3 / 4)
    assert [e["type"] for e in result.errors] == ["unattached"]
    assert "system_head" not in result.errors[0]
    # Excluded as punctuation like the gold word it is aligned to.
    assert scores(GOLD, system, punctuation=ExcludeUpos())["las"]["f1"] == 1.0
    with pytest.raises(ValueError, match="gold words must all be attached"):
        dependency_counts(system, GOLD)


def test_excluding_punctuation_by_upos_or_xpos():
    for policy in (ExcludeUpos(), ExcludeXpos()):
        s = scores(GOLD, SYSTEM, punctuation=policy)
        assert s["uas"]["gold"] == s["uas"]["system"] == 3
        assert s["uas"]["f1"] == pytest.approx(3 / 3)
        assert s["las"]["f1"] == pytest.approx(2 / 3)
        assert s["ls"]["f1"] == pytest.approx(2 / 3)


# "I like dogs" against "I like dog s".
TEXT2 = "I like dogs"
GOLD2 = [sentence_from_heads([(0, 1), (2, 6), (7, 11)], [2, 0, 2], ["nsubj", "root", "obj"])]
SYSTEM2 = [
    sentence_from_heads(
        [(0, 1), (2, 6), (7, 10), (10, 11)], [2, 0, 2, 3], ["nsubj", "root", "obj", "dep"]
    )
]


def test_hand_worked_different_tokenisation():
    s = scores(GOLD2, SYSTEM2)
    uas = s["uas"]
    assert (uas["correct"], uas["gold"], uas["system"], uas["aligned"]) == (2, 3, 4, 2)
    assert uas["precision"] == pytest.approx(2 / 4)
    assert uas["recall"] == pytest.approx(2 / 3)
    assert uas["f1"] == pytest.approx(4 / 7)
    assert uas["aligned_accuracy"] == 1.0
    assert s["words"]["f1"] == pytest.approx(4 / 7)


def test_head_on_an_unaligned_word_is_wrong():
    system = [
        sentence_from_heads(
            [(0, 1), (2, 6), (7, 10), (10, 11)], [3, 0, 2, 3], ["nsubj", "root", "obj", "dep"]
        )
    ]
    result = dependency_counts(GOLD2, system, text=TEXT2)
    assert result.counts["uas/correct"] == 1
    assert result.counts["ls/correct"] == 2
    kinds = {(e["type"], e["text"]) for e in result.errors}
    assert kinds == {("head", "I"), ("unaligned", "dogs"), ("spurious", "dog"), ("spurious", "s")}


def test_unaligned_system_word_keeps_its_own_punctuation_status():
    text = "I like dogs."
    gold = [
        sentence_from_heads(
            [(0, 1), (2, 6), (7, 11), (11, 12)],
            [2, 0, 2, 2],
            ["nsubj", "root", "obj", "punct"],
            ["PRON", "VERB", "NOUN", "PUNCT"],
        )
    ]
    merged = [
        sentence_from_heads(
            [(0, 1), (2, 6), (7, 12)], [2, 0, 2], ["nsubj", "root", "obj"], ["PRON", "VERB", "NOUN"]
        )
    ]
    s = scores(gold, merged, punctuation=ExcludeUpos(), text=text)["uas"]
    assert (s["correct"], s["gold"], s["system"]) == (2, 3, 3)
    split = [
        sentence_from_heads(
            [(0, 1), (2, 6), (7, 11), (11, 12)],
            [2, 0, 2, 3],
            ["nsubj", "root", "obj", "punct"],
            ["PRON", "VERB", "NOUN", "NOUN"],  # the system calls "." a noun: aligned, still dropped
        )
    ]
    s = scores(gold, split, punctuation=ExcludeUpos())["uas"]
    assert (s["correct"], s["gold"], s["system"]) == (3, 3, 3)


def test_label_subtypes():
    gold = [sentence_from_heads([(0, 2), (3, 5)], [2, 0], ["nmod:poss", "root"])]
    system = [sentence_from_heads([(0, 2), (3, 5)], [2, 0], ["nmod", "root"])]
    assert scores(gold, system)["las"]["f1"] == 1.0
    assert scores(gold, system, label_key=full_deprel)["las"]["f1"] == pytest.approx(0.5)


def test_dkpro_root_convention_equals_none():
    own_span = [[DepWord(0, 3, (4, 7), "det"), DepWord(4, 7, (4, 7), "root")]]
    none_head = [[DepWord(0, 3, (4, 7), "det"), DepWord(4, 7, None, "root")]]
    assert scores(own_span, none_head)["las"]["f1"] == 1.0


def test_macro_averages_sentences_and_units_add_up():
    gold = [
        sentence_from_heads([(0, 1), (2, 3)], [0, 1], ["root", "dep"]),
        sentence_from_heads(
            [(4, 5), (6, 7), (8, 9), (10, 11)], [0, 1, 2, 3], ["root", "a", "b", "c"]
        ),
    ]
    system = [
        sentence_from_heads([(0, 1), (2, 3)], [0, 1], ["root", "dep"]),
        sentence_from_heads(
            [(4, 5), (6, 7), (8, 9), (10, 11)], [0, 3, 4, 1], ["root", "a", "b", "c"]
        ),
    ]
    result = dependency_counts(gold, system)
    s = score_dependencies(result.counts)["uas"]
    assert s["f1"] == pytest.approx(3 / 6)
    assert s["macro"]["f1"] == pytest.approx((1 + 1 / 4) / 2)
    assert s["macro"]["sentences"] == 2
    assert len(result.units) == 2
    assert sum_counts(result.units) == result.counts


def test_system_sentence_boundaries_do_not_change_micro_scores():
    words = [w for sentence in SYSTEM for w in sentence]
    split_system = [words[:2], words[2:]]  # heads across the split are not allowed ...
    with pytest.raises(ValueError, match="same sentence"):
        dependency_counts(GOLD, split_system)
    one = [
        sentence_from_heads([(0, 3)], [0], ["root"]),
        sentence_from_heads([(4, 7)], [0], ["root"]),
    ]
    both = [sentence_from_heads([(0, 3), (4, 7)], [0, 1], ["root", "dep"])]
    result = dependency_counts(one, both)
    assert result.counts["uas/correct"] == 1  # (0,3) is root on both sides


def test_bad_input_is_reported():
    with pytest.raises(ValueError, match="share the span"):
        dependency_counts([[DepWord(0, 1, None, "root"), DepWord(0, 1, None, "root")]], [])
    with pytest.raises(ValueError, match="head"):
        dependency_counts([[DepWord(0, 1, (5, 6), "dep")]], [])
    with pytest.raises(ValueError, match="head 4"):
        sentence_from_heads([(0, 1)], [4], ["dep"])


# --- properties -----------------------------------------------------------------


@st.composite
def treebank(draw):
    sentences, position = [], 0
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 7))
        spans = []
        for _ in range(n):
            length = draw(st.integers(1, 3))
            spans.append((position, position + length))
            position += length + 1
        order = draw(st.permutations(range(n)))
        heads = [0] * n
        for k, w in enumerate(order[1:], start=1):
            heads[w] = order[draw(st.integers(0, k - 1))] + 1
        deprels = [draw(st.sampled_from(["a", "b:x", "b:y", "punct"])) for _ in range(n)]
        upos = ["PUNCT" if d == "punct" else "X" for d in deprels]
        sentences.append(sentence_from_heads(spans, heads, deprels, upos))
    return sentences


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(treebank(), st.randoms(), st.sampled_from([INCLUDE_PUNCTUATION, ExcludeUpos()]))
def test_gold_against_itself_scores_one_in_any_order(gold, rnd, policy):
    system = []
    for sentence in gold:
        words = list(sentence)
        rnd.shuffle(words)
        system.append(words)
    s = scores(gold, system, punctuation=policy)
    for metric in ("words", "uas", "las", "ls"):
        if s[metric]["gold"]:
            assert s[metric]["f1"] == s[metric]["macro"]["f1"] == 1.0
    assert scores(gold, gold, punctuation=policy) == s


# --- reference scorer -----------------------------------------------------------

REFERENCE = os.environ.get("CONLL18_UD_EVAL")


def _random_case(rng: random.Random):
    chunks = [
        "".join(rng.choice("abcXY,.") for _ in range(rng.randint(1, 6)))
        for _ in range(rng.randint(1, 25))
    ]
    text = " ".join(chunks)
    gold_tokens, position = [], 0
    for chunk in chunks:
        cut = rng.randint(1, len(chunk)) if len(chunk) > 1 and rng.random() < 0.3 else len(chunk)
        gold_tokens += [(position, position + cut)] + (
            [(position + cut, position + len(chunk))] if cut < len(chunk) else []
        )
        position += len(chunk) + 1
    system_tokens, i = [], 0
    while i < len(gold_tokens):
        b, e = gold_tokens[i]
        r = rng.random()
        if r < 0.15 and i + 1 < len(gold_tokens):  # merge, possibly across a space
            system_tokens.append((b, gold_tokens[i + 1][1]))
            i += 2
            continue
        if r < 0.3 and e - b > 1:
            c = rng.randint(b + 1, e - 1)
            system_tokens += [(b, c), (c, e)]
        else:
            system_tokens.append((b, e))
        i += 1

    def parse(tokens):
        sentences, i = [], 0
        while i < len(tokens):
            spans = tokens[i : i + rng.randint(1, 6)]
            i += len(spans)
            order = list(range(len(spans)))
            rng.shuffle(order)
            heads = [0] * len(spans)
            for k, w in enumerate(order[1:], start=1):
                heads[w] = order[rng.randrange(k)] + 1
            deprels = [
                "root" if h == 0 else rng.choice(["nsubj", "obj", "nmod:poss", "nmod"])
                for h in heads
            ]
            sentences.append(
                sentence_from_heads(
                    spans, heads, deprels, [rng.choice(["NOUN", "PUNCT"]) for _ in spans]
                )
            )
        return sentences

    return text, parse(gold_tokens), parse(system_tokens)


def _conllu(text, sentences) -> str:
    lines = []
    for sentence in sentences:
        index = {w.span: i + 1 for i, w in enumerate(sentence)}
        for i, w in enumerate(sentence):
            head = 0 if w.is_root else index[w.head]
            lines.append(
                f"{i + 1}\t{text[w.begin : w.end]}\t_\t{w.upos}\t_\t_\t{head}\t{w.deprel}\t_\t_"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(not REFERENCE, reason="set CONLL18_UD_EVAL to the path of conll18_ud_eval.py")
def test_agrees_with_conll18_ud_eval_on_random_treebanks():
    spec = importlib.util.spec_from_file_location("conll18_ud_eval", REFERENCE)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    rng = random.Random(2018)
    for _ in range(300):
        text, gold, system = _random_case(rng)
        expected = reference.evaluate(
            reference.load_conllu(io.StringIO(_conllu(text, gold))),
            reference.load_conllu(io.StringIO(_conllu(text, system))),
        )
        ours = scores(gold, system)
        for metric, name in (("words", "Words"), ("uas", "UAS"), ("las", "LAS")):
            for field in ("precision", "recall", "f1"):
                assert ours[metric][field] == pytest.approx(
                    getattr(expected[name], field), abs=1e-9
                )


# --- through conllu.import.v1, as a user scores a parser's file --------------------

ROOT_GOLD = """\
1\tIt\t_\tPRON\t_\t_\t2\tnsubj\t_\t_
2\tdies\t_\tVERB\t_\t_\t0\troot\t_\t_

"""


def _imported_las(tmp_path, gold: str, system: str) -> float:
    from casflow.pipeline.testing import cas_from_text, evaluate, run_component, view_of

    cas = cas_from_text("It dies", doc_id="d")
    for view, content in (("gold", gold), ("system", system)):
        (tmp_path / view).mkdir()
        (tmp_path / view / "d.conllu").write_text(content, encoding="utf-8")
        view_of(cas, view)
        run_component(
            "conllu.import.v1", cas, view=view, path=str(tmp_path / view / "{doc_id}.conllu")
        )
    counts = evaluate("eval.dependencies.v1", cas)["system"].counts
    return score_dependencies(counts)["las"]["f1"]


@pytest.mark.parametrize(
    ("deprel", "las"),
    [("root", 1.0), ("ROOT", 1.0), ("punct", 0.5), ("dep", 0.5), ("_", 0.5)],
)
def test_a_wrong_label_on_the_right_root_word_costs_las(tmp_path, deprel: str, las: float):
    # conll18_ud_eval.py compares the root word's DEPREL like any other: "0 punct" has
    # the right head and the wrong label. The importer used to relabel every HEAD 0
    # word ROOT, which gave it LAS credit.
    system = ROOT_GOLD.replace("0\troot", f"0\t{deprel}")
    assert _imported_las(tmp_path, ROOT_GOLD, system) == las
    if REFERENCE and deprel not in ("ROOT", "_"):  # conll18 compares "ROOT" to "root" literally
        spec = importlib.util.spec_from_file_location("conll18_ud_eval", REFERENCE)
        reference = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reference)
        expected = reference.evaluate(
            reference.load_conllu(io.StringIO(ROOT_GOLD)),
            reference.load_conllu(io.StringIO(system)),
        )
        assert expected["LAS"].f1 == las


def test_tool_wrappers_keep_a_root_words_other_label_as_the_importer_does() -> None:
    # udpipe.v1 builds its relations with dependency_annotation(keep_root_label=True):
    # a word at HEAD 0 labelled "punct" keeps it (wrong label, as conll18_ud_eval.py
    # counts it), a root relation in any case or subtype becomes DKPro's ROOT; tools
    # without that flag (spaCy, the converter, the combiner) write ROOT as before.
    from casflow.components.formats.cas_builders import dependency_annotation, root_label
    from casflow.pipeline.testing import cas_from_text
    from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, TOKEN

    assert [root_label(x) for x in ("root", "ROOT", "root:x", "", None, "punct")] == [
        "ROOT", "ROOT", "ROOT", "ROOT", "ROOT", "punct",
    ]  # fmt: skip
    cas = cas_from_text("Cells.")
    token = cas.typesystem.get_type(TOKEN)(begin=0, end=5)
    dep, root = cas.typesystem.get_type(DEPENDENCY), cas.typesystem.get_type(DEPENDENCY_ROOT)
    kept = dependency_annotation(dep, root, token, None, "punct", keep_root_label=True)
    assert (kept.type.name, kept.DependencyType) == (DEPENDENCY_ROOT, "punct")
    assert dependency_annotation(dep, root, token, None, "punct").DependencyType == "ROOT"
    rooted = dependency_annotation(dep, root, token, token, "root", keep_root_label=True)
    assert rooted.DependencyType == "ROOT"
