"""CoNLL-U multiword tokens (``2-3\twon't``) in conllu.import.v1, written as
stanza.pipeline.v1 writes them (components/formats/multiword_tokens.py): words that
spell the token are a Token each; otherwise one Token with its head word's analysis.

Set ``CONLL18_UD_EVAL`` to the path of conll18_ud_eval.py to also check that
eval.dependencies.v1 scores such files as the CoNLL 2018 scorer does.
"""

from __future__ import annotations

import importlib.util
import io
import os
import warnings
from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.components.formats.common import FormatWarning
from casflow.components.formats.conllu.parse import format_conllu, parse_conllu
from casflow.components.formats.multiword_tokens import head_words, spelled_word_spans
from casflow.components.metrics.dependency import score_dependencies
from casflow.pipeline.component import RunContext
from casflow.pipeline.testing import cas_from_text, evaluate, run_component
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, SENTENCE, TOKEN

TEXT = "I won't go. We cannot."


def word(number: int, form: str, lemma: str, xpos: str, head: str, deprel: str) -> str:
    upos = {"PRP": "PRON", "MD": "AUX", "RB": "PART", "VB": "VERB", ".": "PUNCT"}[xpos]
    return f"{number}\t{form}\t{lemma}\t{upos}\t{xpos}\t_\t{head}\t{deprel}\t_\t_\n"


def multiword(first: int, last: int, form: str) -> str:
    return f"{first}-{last}\t{form}\t_\t_\t_\t_\t_\t_\t_\t_\n"


def conllu(wont: tuple[str, str], cannot: tuple[str, str] = ("can", "not")) -> str:
    """UD English EWT writes won't as wo + n't; a tool may write will + n't."""
    return (
        "# sent_id = s1\n"
        + word(1, "I", "I", "PRP", "4", "nsubj")
        + multiword(2, 3, "won't")
        + word(2, wont[0], "will", "MD", "4", "aux")
        + word(3, wont[1], "not", "RB", "4", "advmod")
        + word(4, "go", "go", "VB", "0", "root")
        + "4.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t4:conj\t_\n"
        + word(5, ".", ".", ".", "4", "punct")
        + "\n# sent_id = s2\n"
        + word(1, "We", "we", "PRP", "2", "nsubj")
        + multiword(2, 3, "cannot")
        + word(2, cannot[0], "can", "MD", "0", "root")
        + word(3, cannot[1], "not", "RB", "2", "advmod")
        + word(4, ".", ".", ".", "2", "punct")
        + "\n"
    )


SPELLED = conllu(("wo", "n't"))
MERGED = conllu(("will", "n't"), ("can", "no"))


def import_conllu(
    tmp_path: Path, content: str, text: str = TEXT, view: str = "_InitialView", **config: Any
) -> tuple[cassis.Cas, list[str]]:
    """The CAS after conllu.import.v1 read ``content`` into ``view``, and its warnings."""
    path = tmp_path / f"{view}.conllu"
    path.write_text(content, encoding="utf-8")
    cas = cas_from_text(text)
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_component("conllu.import.v1", cas, view=view, context=context, path=str(path), **config)
    return cas, [str(w.message) for w in caught if isinstance(w.message, FormatWarning)]


def tokens(view: cassis.Cas) -> list[tuple[str, str, str | None, str | None]]:
    return [
        (
            t.get_covered_text(),
            t.id,
            t.pos.PosValue if t.pos else None,
            t.lemma.value if t.lemma else None,
        )
        for t in view.select(TOKEN)
    ]


def relations(view: cassis.Cas) -> set[tuple[str, str, str]]:
    return {
        (d.Dependent.get_covered_text(), d.DependencyType, d.Governor.get_covered_text())
        for d in view.select(DEPENDENCY)
    }


def test_words_that_spell_their_token_are_a_token_each(tmp_path: Path) -> None:
    cas, warned = import_conllu(tmp_path, SPELLED)
    assert tokens(cas) == [
        ("I", "1", "PRP", "I"),
        ("wo", "2", "MD", "will"),
        ("n't", "3", "RB", "not"),
        ("go", "4", "VB", "go"),
        (".", "5", ".", "."),  # the empty node 4.1 made no Token
        ("We", "1", "PRP", "we"),
        ("can", "2", "MD", "can"),
        ("not", "3", "RB", "not"),
        (".", "4", ".", "."),
    ]
    assert relations(cas) == {
        ("I", "nsubj", "go"),
        ("wo", "aux", "go"),
        ("n't", "advmod", "go"),
        ("go", "ROOT", "go"),
        (".", "punct", "go"),
        ("We", "nsubj", "can"),
        ("can", "ROOT", "can"),
        ("not", "advmod", "can"),
        (".", "punct", "can"),
    }
    assert [s.get_covered_text() for s in cas.select(SENTENCE)] == ["I won't go.", "We cannot."]
    assert warned == []


def test_words_that_do_not_spell_their_token_share_one_with_the_head_words_analysis(
    tmp_path: Path,
) -> None:
    cas, warned = import_conllu(tmp_path, MERGED)
    assert tokens(cas) == [
        ("I", "1", "PRP", "I"),
        ("won't", "2-3", "MD", "will"),  # will + n't: the analysis of will, n't's head
        ("go", "4", "VB", "go"),
        (".", "5", ".", "."),
        ("We", "1", "PRP", "we"),
        ("cannot", "2-3", "MD", "can"),  # can + no: can is the root
        (".", "4", ".", "."),
    ]
    assert relations(cas) == {
        ("I", "nsubj", "go"),
        ("won't", "aux", "go"),
        ("go", "ROOT", "go"),
        (".", "punct", "go"),
        # words outside pointing at a word inside point at the merged Token
        ("We", "nsubj", "cannot"),
        ("cannot", "ROOT", "cannot"),
        (".", "punct", "cannot"),
    }  # n't -> go and no -> can are inside merged Tokens: not written
    (message,) = warned  # one warning for the document, counting both
    assert message.startswith(f"{tmp_path / '_InitialView.conllu'}:3: 2 multiword tokens ")
    assert "line 3: 2-3 \"won't\" = will + n't; line 12: 2-3 'cannot' = can + no" in message


def test_an_outside_word_may_hang_from_any_word_of_a_merged_token(tmp_path: Path) -> None:
    content = MERGED.replace(
        word(5, ".", ".", ".", "4", "punct"), word(5, ".", ".", ".", "3", "punct")
    )
    cas, _ = import_conllu(tmp_path, content)
    assert (".", "punct", "won't") in relations(cas)  # its head, n't, is in won't


def test_the_head_word_is_the_word_nearest_the_root(tmp_path: Path) -> None:
    # Both words of "Xy" hang from outside the token: x from z, which hangs from y,
    # the root. x's analysis would make Xy and z govern each other.
    content = (
        multiword(1, 2, "Xy")
        + "1\tx\tx\tX\tXX\t_\t3\tnsubj\t_\t_\n"
        + "2\tq\tq\tY\tYY\t_\t0\troot\t_\t_\n"
        + "3\tz\tz\tZ\tZZ\t_\t2\txcomp\t_\t_\n\n"
    )
    cas, _ = import_conllu(tmp_path, content, text="Xy z")
    assert tokens(cas) == [("Xy", "1-2", "YY", "q"), ("z", "3", "ZZ", "z")]
    assert relations(cas) == {("Xy", "ROOT", "Xy"), ("z", "xcomp", "Xy")}
    assert len(cas.select(DEPENDENCY_ROOT)) == 1


def test_without_dependencies_a_merged_token_still_takes_its_head_words_tags(
    tmp_path: Path,
) -> None:
    # HEADs are not checked when no tree is imported: "x" counts as no head
    content = MERGED.replace("\t4\taux\t", "\tx\taux\t")
    cas, _ = import_conllu(tmp_path, content, layers=["tokens", "pos"])
    assert tokens(cas)[1] == ("won't", "2-3", "MD", None)
    assert cas.select(DEPENDENCY) == []


def test_a_broken_tree_inside_a_multiword_token_still_fails_the_document(
    tmp_path: Path,
) -> None:
    content = MERGED.replace("\t4\taux\t", "\t3\taux\t").replace("\t4\tadvmod\t", "\t2\tadvmod\t")
    with pytest.raises(ValueError, match=r"_InitialView\.conllu:4: the HEADs of words 2, 3 form"):
        import_conllu(tmp_path, content)


def test_the_file_still_reads_and_writes_back_exactly() -> None:
    assert format_conllu(parse_conllu(MERGED)) == MERGED


@pytest.mark.parametrize(
    ("surface", "forms", "expected"),
    [
        ("cannot", ["can", "not"], [(10, 13), (13, 16)]),
        ("won't", ["will", "n't"], None),
        ("won't", ["won", "'t", ""], None),  # an empty word has no span of its own
        ("du", ["du"], [(10, 12)]),
    ],
)
def test_spelled_word_spans(surface: str, forms: list[str], expected: Any) -> None:
    assert spelled_word_spans(surface, 10, forms) == expected


def test_head_words() -> None:
    # won't = will + n't (unit 1), both under go (unit 2): the first of equals
    assert head_words([0, 1, 1, 2], [4, 4, 4, 0]) == {0: 0, 1: 1, 2: 3}
    # no heads at all (a tool without a parser): the first word of each unit
    assert head_words(["a", "b", "b"], [None, None, None]) == {"a": 0, "b": 1}
    # a cycle of heads (a tool's malformed output) does not hang
    assert head_words([0, 0, 1], [2, 3, 1]) == {0: 0, 1: 2}


# --- scoring ------------------------------------------------------------------------


def dependency_scores(tmp_path: Path, gold: str, system: str) -> dict[str, Any]:
    """eval.dependencies.v1 on the two files imported into views gold and system."""
    cas, _ = import_conllu(tmp_path, gold, view="gold")
    path = tmp_path / "system.conllu"
    path.write_text(system, encoding="utf-8")
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FormatWarning)
        run_component("conllu.import.v1", cas, view="system", context=context, path=str(path))
    (result,) = evaluate(
        "eval.dependencies.v1", cas, gold_view="gold", system_views=["system"]
    ).values()
    return score_dependencies(result.counts)


def misparsed(content: str) -> str:
    """n't attached to wo, I to the final full stop."""
    return content.replace("3\tn't\tnot\tPART\tRB\t_\t4", "3\tn't\tnot\tPART\tRB\t_\t2").replace(
        "1\tI\tI\tPRON\tPRP\t_\t4", "1\tI\tI\tPRON\tPRP\t_\t5"
    )


@pytest.mark.parametrize("gold", [SPELLED, MERGED], ids=["spelled", "merged"])
def test_a_file_with_multiword_tokens_scored_against_itself_is_100(
    tmp_path: Path, gold: str
) -> None:
    scores = dependency_scores(tmp_path, gold, gold)
    for metric in ("words", "uas", "las"):
        assert scores[metric]["f1"] == 1.0
    # a merged token is scored as one word: 9 words, or 7 with won't and cannot merged
    assert scores["las"]["gold"] == (9 if gold is SPELLED else 7)


REFERENCE = os.environ.get("CONLL18_UD_EVAL")
# SPELLED as a tool without multiword-token expansion writes it: won't is one word
UNSPLIT = (
    "# sent_id = s1\n"
    + word(1, "I", "I", "PRP", "3", "nsubj")
    + word(2, "won't", "will", "MD", "3", "aux")
    + word(3, "go", "go", "VB", "0", "root")
    + word(4, ".", ".", ".", "3", "punct")
    + "\n"
    + SPELLED[SPELLED.index("# sent_id = s2") :]
)


@pytest.mark.skipif(not REFERENCE, reason="set CONLL18_UD_EVAL to the path of conll18_ud_eval.py")
@pytest.mark.parametrize(
    "system",
    [
        SPELLED,
        misparsed(SPELLED),
        # the same words without the range lines
        "".join(line for line in SPELLED.splitlines(keepends=True) if "-" not in line[:4]),
        UNSPLIT,
    ],
    ids=["itself", "misparsed", "no-ranges", "unsplit"],
)
def test_words_that_spell_their_tokens_score_as_conll18_ud_eval(
    tmp_path: Path, system: str
) -> None:
    spec = importlib.util.spec_from_file_location("conll18_ud_eval", REFERENCE)
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    expected = reference.evaluate(
        reference.load_conllu(io.StringIO(SPELLED)), reference.load_conllu(io.StringIO(system))
    )
    ours = dependency_scores(tmp_path, SPELLED, system)
    for metric, name in (("words", "Words"), ("uas", "UAS"), ("las", "LAS")):
        found = ours[metric]
        assert (found["correct"], found["gold"], found["system"]) == (
            expected[name].correct,
            expected[name].gold_total,
            expected[name].system_total,
        ), metric
        assert found["f1"] == pytest.approx(expected[name].f1, abs=1e-9), metric
