"""Multiword tokens from UDPipe's tokenizer in ``udpipe.v1``, written as
stanza.pipeline.v1 and conllu.import.v1 write them (components/formats/multiword_tokens.py):
words that spell the token are a Token each; otherwise one Token with its head word's
analysis. On a tiny UDPipe model trained here, with ufal.udpipe itself, on CoNLL-U that
has multiword tokens (casflow train cannot make one: a gold view has a Token per word)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.pipeline.component import INITIAL_VIEW
from casflow.pipeline.testing import cas_from_text, run_component
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, SENTENCE, TOKEN

pytest.importorskip("ufal.udpipe", reason="ufal.udpipe is in the tools extra")

pytestmark = pytest.mark.slow  # the model is trained once per session

# "dunno" = do + n't + know: the words do not spell it, and its first word hangs from
# another of its words, so the first word's relation made the Token govern itself (a
# second ROOT beside "said"). "cannot" = can + not: they spell it.
TRAINING = """\
# text = He said I dunno.
1\tHe\the\tPRON\tPRP\t_\t2\tnsubj\t_\t_
2\tsaid\tsay\tVERB\tVBD\t_\t0\troot\t_\t_
3\tI\tI\tPRON\tPRP\t_\t6\tnsubj\t_\t_
4-6\tdunno\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
4\tdo\tdo\tAUX\tVBP\t_\t6\taux\t_\t_
5\tn't\tnot\tPART\tRB\t_\t6\tadvmod\t_\t_
6\tknow\tknow\tVERB\tVB\t_\t2\tccomp\t_\t_
7\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

# text = She cannot go.
1\tShe\tshe\tPRON\tPRP\t_\t3\tnsubj\t_\t_
2-3\tcannot\t_\t_\t_\t_\t_\t_\t_\t_
2\tcan\tcan\tAUX\tMD\t_\t4\taux\t_\t_
3\tnot\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No
5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t_

"""
TEXT = "He said I dunno. She cannot go."
OPTIONS = (
    "epochs=3;dimension=16;batch_size=10;learning_rate=0.01;dropout=0;seed=1",
    "iterations=2;guesser_suffix_rules=2;use_feats=0;provide_feats=0;seed=1",
    "iterations=3;hidden_layer=32;embedding_form=16;embedding_upostag=8;embedding_xpostag=8;"
    "embedding_lemma=0;embedding_feats=0;embedding_deprel=8;seed=1",
)


def _sentences(udpipe: Any, conllu: str) -> Any:
    sentences = udpipe.Sentences()
    reader = udpipe.InputFormat.newConlluInputFormat()
    reader.setText(conllu)
    error = udpipe.ProcessingError()
    sentence = udpipe.Sentence()
    while reader.nextSentence(sentence, error):
        sentences.push_back(sentence)
        sentence = udpipe.Sentence()
    assert not error.occurred(), error.message
    return sentences


@pytest.fixture(scope="session")
def multiword_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model that has learned the two sentences by heart, multiword tokens included."""
    from ufal import udpipe

    error = udpipe.ProcessingError()
    trained = udpipe.Trainer.train(
        "morphodita_parsito",
        _sentences(udpipe, TRAINING * 6),
        _sentences(udpipe, TRAINING),
        *OPTIONS,
        error,
    )
    assert trained and not error.occurred(), error.message
    path = tmp_path_factory.mktemp("udpipe_multiword") / "model.udpipe"
    path.write_bytes(trained)
    return path


def tokens(view: cassis.Cas) -> list[Any]:
    return sorted(view.select(TOKEN), key=lambda t: (t.begin, t.end))


def relations(view: cassis.Cas) -> set[tuple[str, str, str]]:
    return {
        (d.Dependent.get_covered_text(), d.Governor.get_covered_text(), d.DependencyType)
        for d in view.select(DEPENDENCY)
    }


def test_the_tokenizer_gives_a_multiword_tokens_words_their_forms(multiword_model: Path) -> None:
    from casflow.components.udpipe.model import UdpipeModel, Word

    first, second = UdpipeModel(multiword_model).tokenize(TEXT)
    assert first[3:6] == [Word(10, 15, "do"), Word(10, 15, "n't"), Word(10, 15, "know")]
    assert second[1:3] == [Word(21, 27, "can"), Word(21, 27, "not")]


def test_words_that_do_not_spell_their_token_share_one_with_the_head_words_analysis(
    multiword_model: Path,
) -> None:
    view = run_component("udpipe.v1", TEXT, model=str(multiword_model)).get_view(INITIAL_VIEW)
    found = tokens(view)
    # One ROOT per sentence: "dunno" took the relation of its first word, "do", whose
    # head is "know", the same Token, and so was a ROOT of its own beside "said".
    for sentence in view.select(SENTENCE):
        roots = view.select_covered(DEPENDENCY_ROOT, sentence)
        assert [r.Dependent.get_covered_text() for r in roots] in (["said"], ["go"])
    dependents = sorted((d.Dependent.begin, d.Dependent.end) for d in view.select(DEPENDENCY))
    assert dependents == [(t.begin, t.end) for t in found]  # one relation per Token
    assert [t.get_covered_text() for t in found[:5]] == ["He", "said", "I", "dunno", "."]
    dunno = found[3]
    # "know" heads the token's words: its tags and lemma, not those of "do"
    assert (dunno.pos.PosValue, dunno.pos.coarseValue, dunno.lemma.value) == ("VB", "VERB", "know")
    assert {r for r in relations(view) if "said" in r[:2] or "dunno" in r[:2]} == {
        ("He", "said", "nsubj"),
        ("said", "said", "ROOT"),
        ("I", "dunno", "nsubj"),  # "know"'s dependent, governed by the Token
        ("dunno", "said", "ccomp"),  # "know"'s relation; none between its own words
        (".", "said", "punct"),
    }


def test_words_that_spell_their_token_are_a_token_each(multiword_model: Path) -> None:
    view = run_component("udpipe.v1", TEXT, model=str(multiword_model)).get_view(INITIAL_VIEW)
    found = tokens(view)
    assert [t.get_covered_text() for t in found[5:]] == ["She", "can", "not", "go", "."]
    assert [(t.begin, t.end) for t in found[6:8]] == [(21, 24), (24, 27)]
    assert (found[6].pos.PosValue, found[6].lemma.value) == ("MD", "can")
    assert (found[7].pos.PosValue, found[7].lemma.value) == ("RB", "not")
    assert {r for r in relations(view) if "go" in r[:2]} == {
        ("She", "go", "nsubj"),
        ("can", "go", "aux"),
        ("not", "go", "advmod"),
        ("go", "go", "ROOT"),
        (".", "go", "punct"),
    }


def test_without_a_parse_a_merged_token_takes_its_first_words_analysis(
    multiword_model: Path,
) -> None:
    """No tree says which word heads the others: the first, as stanza.pipeline.v1 does;
    the tagger still saw the words' own forms."""
    view = run_component(
        "udpipe.v1",
        TEXT,
        model=str(multiword_model),
        layers=["sentences", "tokens", "pos", "lemma"],
    ).get_view(INITIAL_VIEW)
    dunno = tokens(view)[3]
    assert dunno.get_covered_text() == "dunno"
    assert (dunno.pos.PosValue, dunno.lemma.value) == ("VBP", "do")
    assert not list(view.select(DEPENDENCY))


@pytest.mark.parametrize("existing_sentences", [True, False])
def test_existing_tokens_are_one_word_each_even_a_contraction(
    multiword_model: Path, existing_sentences: bool
) -> None:
    """With use_existing_tokens the view's Tokens are the words: a contraction another
    tool left whole is one word to the tagger and parser, and keeps its one Token (the
    sentences are the view's, or the ends UDPipe's tokenizer finds)."""
    spans = [(0, 2), (3, 7), (8, 9), (10, 15), (15, 16), (17, 20), (21, 27), (28, 30), (30, 31)]
    given = {"Token": spans, "Sentence": [(0, 16), (17, 31)] if existing_sentences else []}
    view = run_component(
        "udpipe.v1",
        cas_from_text(TEXT, spans=given),
        model=str(multiword_model),
        use_existing_tokens=True,
        use_existing_sentences=existing_sentences,
    ).get_view(INITIAL_VIEW)
    assert [(s.begin, s.end) for s in view.select(SENTENCE)] == [(0, 16), (17, 31)]
    found = tokens(view)
    assert [(t.begin, t.end) for t in found] == spans
    assert all(t.pos is not None for t in found)
    dependents = sorted((d.Dependent.begin, d.Dependent.end) for d in view.select(DEPENDENCY))
    assert dependents == spans
    for sentence in view.select(SENTENCE):
        assert len(view.select_covered(DEPENDENCY_ROOT, sentence)) == 1
