"""Sentence splitters and tokenizers that need no model download (pySBD, syntok,
BlingFire, NLTK Punkt and Treebank, spaCy's sentencizer and tokenizers, scispaCy's
tokenizer), on the real libraries: exact offsets, document structure, training Punkt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import cassis
import pytest

from casflow.components.segmenters import (
    align_sentences,
    align_tokens,
    missing_library,
    with_combining_marks,
    with_dropped_characters,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import HEADING, PARAGRAPH, SENTENCE, TOKEN, load_typesystem

SENTENCE_SPLITTERS = [
    "sentences.pysbd.v1",
    "sentences.syntok.v1",
    "sentences.blingfire.v1",
    "sentences.nltk.punkt.v1",
    "sentences.spacy.sentencizer.v1",
]
TOKENIZERS = [
    "tokens.syntok.v1",
    "tokens.blingfire.v1",
    "tokens.nltk.treebank.v1",
    "tokens.spacy.english.v1",
    "tokens.scispacy.v1",
]

HEADING_TEXT = "Results and discussion"
BODY = (
    'We used E. coli (strain K-12) "as is" at 3.5 mg/kg \u2014 fine! '
    "Mice don't grow; BRCA2-/- cells died.\n\nSee Fig. 2 for \U0001d6c2-actin levels."
)
TEXT = f"{HEADING_TEXT}\n{BODY}"


def make_view(text: str = TEXT, *, structure: bool = True) -> cassis.Cas:
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = text
    if structure:
        cas.add(ts.get_type(HEADING)(begin=0, end=len(HEADING_TEXT)))
        cas.add(ts.get_type(PARAGRAPH)(begin=len(HEADING_TEXT) + 1, end=len(text)))
    return cas


def run(name: str, view: cassis.Cas, **config: object) -> cassis.Cas:
    cls = registry().get(name)
    component = cls(cls.Config(**config), RunContext(output_dir=Path(".")))
    component.process(view)
    return view


def covered(view: cassis.Cas, type_name: str) -> list[str]:
    return [a.get_covered_text() for a in view.select(type_name)]


def assert_exact_tokens(view: cassis.Cas, *, regions: list[tuple[int, int]] | None = None) -> None:
    """No whitespace token, no overlap, and every non-space character of ``regions``
    (default the whole text) in exactly one token."""
    text = view.sofa_string
    tokens = sorted((t.begin, t.end) for t in view.select(TOKEN))
    assert tokens, "no tokens"
    previous = 0
    seen = [False] * len(text)
    for begin, end in tokens:
        piece = text[begin:end]
        assert piece and not piece[0].isspace() and not piece[-1].isspace(), (begin, piece)
        assert begin >= previous, f"tokens overlap at {begin}"
        previous = end
        for i in range(begin, end):
            seen[i] = True
    for begin, end in regions or [(0, len(text))]:
        missing = [i for i in range(begin, end) if not text[i].isspace() and not seen[i]]
        assert not missing, f"characters in no token: {[text[i] for i in missing[:10]]}"


# -- alignment -----------------------------------------------------------------------------


def test_align_tokens_uses_offsets_normalised_forms_and_gaps() -> None:
    text = 'He said "no" -- it\'s (x).'
    forms = ["He", "said", "``", "no", "''", "--", "it", "'s", "-LRB-", "x", "-RRB-", "."]
    spans = align_tokens(text, [(f, None) for f in forms])
    assert [text[b:e] for b, e in spans] == [
        "He", "said", '"', "no", '"', "--", "it", "'s", "(", "x", ")", ".",
    ]  # fmt: skip
    # A rewritten token (syntok's "not" for "n't") takes the text up to the next token.
    text = "Mice don't grow."
    spans = align_tokens(text, [("Mice", 0), ("do", 5), ("not", 7), ("grow", 11), (".", 15)])
    assert [text[b:e] for b, e in spans] == ["Mice", "do", "n't", "grow", "."]
    # Two unreadable tokens in a row: the gap is split at whitespace, never one token.
    text = "a \u00e9t\u00e9 vu ."
    spans = align_tokens(text, [("a", None), ("ete", None), ("vo", None), (".", None)])
    assert [text[b:e] for b, e in spans] == ["a", "\u00e9t\u00e9", "vu", "."]
    # A wrong offset is not trusted: the token is read at the next non-space character.
    assert align_tokens("a b", [("a", 0), ("b", 0)]) == [(0, 1), (2, 3)]


def test_dropped_characters_become_tokens_and_whitespace_never_does() -> None:
    text = "K-12  x\t-/-"
    spans = with_dropped_characters(text, [(0, 1), (2, 4), (6, 7)], 0, len(text))
    assert [text[b:e] for b, e in spans] == ["K", "-", "12", "x", "-/-"]


def test_align_sentences_by_their_characters() -> None:
    text = "One two.   Three\nfour.  One two."
    spans = align_sentences(text, ["One two. ", "Three four.", "One two."])
    assert [text[b:e] for b, e in spans] == ["One two.", "Three\nfour.", "One two."]
    assert spans[2] == (24, 32)  # a repeated sentence lands after the first one


def test_missing_library_names_the_extra() -> None:
    message = missing_library("casflow_no_such_module", "no-such-package")
    assert message is not None
    assert "pip install 'casflow[tools]'" in message and "no-such-package" in message
    assert missing_library("json", "json") is None


def test_a_missing_library_is_reported_by_validation_and_construction(monkeypatch) -> None:
    from casflow.components import segmenters
    from casflow.components.pysbd.sentences import PysbdSentences

    real = segmenters.importlib.util.find_spec

    def hide_pysbd(name: str, *args: object):
        return None if name == "pysbd" else real(name, *args)

    monkeypatch.setattr(segmenters.importlib.util, "find_spec", hide_pysbd)
    config = PysbdSentences.Config()
    problems = PysbdSentences.check_config(config, RunContext(output_dir=Path(".")))
    assert any("casflow[tools]" in p and "pysbd" in p for p in problems), problems
    with pytest.raises(ImportError, match=r"pip install 'casflow\[tools\]'"):
        PysbdSentences(config, RunContext(output_dir=Path(".")))


# -- every tool on hand-written text ---------------------------------------------------------


@pytest.mark.parametrize("name", SENTENCE_SPLITTERS)
def test_sentence_splitters_respect_structure_and_blank_lines(name: str) -> None:
    view = run(name, make_view())
    sentences = covered(view, SENTENCE)
    assert sentences[0] == HEADING_TEXT  # never run into the paragraph after the heading
    # A blank line ends a sentence ("Fig." may or may not end one, by tool).
    assert any(s.startswith("See Fig.") for s in sentences)
    assert sentences[-1].endswith("\U0001d6c2-actin levels.")
    for sentence in view.select(SENTENCE):
        assert sentence.get_covered_text() == sentence.get_covered_text().strip()
        assert "\n\n" not in sentence.get_covered_text()
    assert sentences[1].startswith("We used E. coli")


def test_sentence_splitters_differ_where_the_tools_differ() -> None:
    text = "Mice don't grow; BRCA2-/- cells died. See Fig. 2 now."
    found = {name: covered(run(name, make_view(text, structure=False)), SENTENCE) for name in
             ("sentences.pysbd.v1", "sentences.syntok.v1", "sentences.spacy.sentencizer.v1")}  # fmt: skip
    # pySBD knows "Fig."; spaCy's punctuation rule does not; syntok ends one at ";".
    assert found["sentences.pysbd.v1"] == [
        "Mice don't grow; BRCA2-/- cells died.",
        "See Fig. 2 now.",
    ]
    assert found["sentences.spacy.sentencizer.v1"][-2:] == ["See Fig.", "2 now."]
    assert found["sentences.syntok.v1"][0] == "Mice don't grow;"


@pytest.mark.parametrize("name", TOKENIZERS)
def test_tokenizers_give_exact_offsets(name: str) -> None:
    view = make_view()
    if name == "tokens.nltk.treebank.v1":
        run("sentences.rules.v1", view)
    run(name, view)
    assert_exact_tokens(view)
    tokens = covered(view, TOKEN)
    assert tokens[:3] == ["Results", "and", "discussion"]
    assert '"' in tokens and "\U0001d6c2-actin" in "".join(tokens)
    assert tokens[-1] == "."


@pytest.mark.parametrize("name", [*TOKENIZERS, "tokens.fine.v1"])
@pytest.mark.parametrize("keep_dropped", [True, False])
def test_combining_marks_stay_with_their_letter(name: str, keep_dropped: bool) -> None:
    # decomposed accents: syntok leaves U+0301 after "Cafe" out of its token
    text = "Cafe\u0301 and e\u0301tude nai\u0308ve."
    view = make_view(text, structure=False)
    if name == "tokens.nltk.treebank.v1":
        run("sentences.rules.v1", view)
    run(name, view, keep_dropped_characters=keep_dropped)
    tokens = covered(view, TOKEN)
    assert "Cafe\u0301" in tokens and "e\u0301tude" in tokens and "nai\u0308ve" in tokens


def test_with_combining_marks_joins_and_extends_spans() -> None:
    text = "e\u0301tude Cafe\u0301\u0301 x"
    # a tool that split "e" | U+0301 "tude" and left both marks after "Cafe" out
    spans = with_combining_marks(text, [(0, 1), (1, 6), (7, 11), (14, 15)], len(text))
    assert [text[b:e] for b, e in spans] == ["e\u0301tude", "Cafe\u0301\u0301", "x"]


def test_tokenizers_differ_where_the_tools_differ() -> None:
    text = 'strain K-12 "as is" 3.5 mg/kg.'
    found = {
        name: covered(run(name, make_view(text, structure=False), use_existing_sentences=False),
                      TOKEN)
        for name in TOKENIZERS
    }  # fmt: skip
    # syntok drops the hyphen of K-12; it comes back as a token of its own.
    assert found["tokens.syntok.v1"][:4] == ["strain", "K", "-", "12"]
    # Treebank writes `` and '' for the quotes; the tokens are the text's quotes.
    assert found["tokens.nltk.treebank.v1"][2:6] == ['"', "as", "is", '"']
    assert found["tokens.scispacy.v1"][1] == "K-12"
    assert found["tokens.blingfire.v1"][-4:] == ["mg", "/", "kg", "."]


def test_treebank_tokenizes_within_existing_sentences() -> None:
    cls = registry().get("tokens.nltk.treebank.v1")
    assert cls.requirements(cls.Config())[0] == (SENTENCE,)
    assert cls.requirements(cls.Config(use_existing_sentences=False))[0] == ()
    text = "Cells died. Mice grew."
    view = make_view(text, structure=False)
    run("sentences.rules.v1", view)
    assert covered(run("tokens.nltk.treebank.v1", view), TOKEN) == [
        "Cells", "died", ".", "Mice", "grew", ".",
    ]  # fmt: skip
    # On a whole block the Treebank rules split only the last period.
    alone = run("tokens.nltk.treebank.v1", make_view(text, structure=False),
                use_existing_sentences=False)  # fmt: skip
    assert covered(alone, TOKEN)[:2] == ["Cells", "died."]


def test_text_outside_every_sentence_is_tokenized_too() -> None:
    from casflow.components.segmenters import with_gaps

    text = "Cells died. Table 1 Mice grew."
    assert with_gaps([(0, 11), (20, 30)], text) == [(0, 11), (11, 20), (20, 30)]
    view = make_view(text, structure=False)
    view.add(view.typesystem.get_type(SENTENCE)(begin=0, end=11))
    view.add(view.typesystem.get_type(SENTENCE)(begin=20, end=30))
    run("tokens.nltk.treebank.v1", view)
    assert covered(view, TOKEN) == ["Cells", "died", ".", "Table", "1", "Mice", "grew", "."]


def test_dropped_characters_can_be_left_out() -> None:
    view = run(
        "tokens.syntok.v1", make_view("K-12 cells", structure=False), keep_dropped_characters=False
    )
    assert covered(view, TOKEN) == ["K", "12", "cells"]


# -- Punkt, trained here ---------------------------------------------------------------------


def punkt_view(text: str, sentences: list[tuple[int, int]]) -> cassis.Cas:
    view = make_view(text, structure=False)
    make = view.typesystem.get_type(SENTENCE)
    for b, e in sentences:
        view.add(make(begin=b, end=e))
    return view


def punkt_document(n: int) -> tuple[str, list[tuple[int, int]]]:
    """Text where "Fig." is always followed by a number and sentences start with capitals."""
    sentences = []
    for k in range(n):
        sentences += [
            f"The cells in Fig. {k} grew in culture.",
            f"Mice in Fig. {k + 1}a died early in life.",
            f"Cells in culture and mice in Fig. {k + 2} died.",
        ]
    spans, start = [], 0
    for sentence in sentences:
        spans.append((start, start + len(sentence)))
        start += len(sentence) + 1
    return " ".join(sentences), spans


def with_hard_sentences(
    text: str, spans: list[tuple[int, int]]
) -> tuple[str, list[tuple[int, int]]]:
    """Sentences with abbreviations Punkt has not learned, added at the end."""
    extra = ["We used approx. 5 mL of it.", "Mice, e.g. Mus musculus, died.", "Cells grew."]
    spans = list(spans)
    for sentence in extra:
        text += " "
        spans.append((len(text), len(text) + len(sentence)))
        text += sentence
    return text, spans


def test_punkt_trainer_learns_abbreviations_from_raw_text(tmp_path: Path) -> None:
    from casflow.components.nltk.punkt import PunktSentenceTrainer, PunktTrainerConfig
    from casflow.pipeline.component import TrainingContext

    # "Fig." is followed by a number everywhere, and many sentences start with capitals.
    block, _ = punkt_document(40)
    trainer = PunktSentenceTrainer(PunktTrainerConfig(), TrainingContext(output_dir=tmp_path))
    example = trainer.example(punkt_view(block, []), "d1")
    model = trainer.train([example], [], tmp_path / "final", lambda _: None)
    params = json.loads((model / "punkt.json").read_text(encoding="utf-8"))
    assert "fig" in params["abbrev_types"]

    text = "The cells in Fig. 3 grew in culture. Mice died early in life."
    gold = [(0, 36), (37, len(text))]
    view = run("sentences.nltk.punkt.v1", punkt_view(text, []), model=str(model))
    assert covered(view, SENTENCE) == [text[b:e] for b, e in gold]
    untrained = run("sentences.nltk.punkt.v1", punkt_view(text, []))
    assert covered(untrained, SENTENCE)[0] == "The cells in Fig."
    scores = trainer.evaluate(model, [trainer.example(punkt_view(text, gold), "dev")])
    assert scores["sentences_f1"] == 100.0


def test_punkt_model_problems_are_found_before_any_document(tmp_path: Path) -> None:
    cls = registry().get("sentences.nltk.punkt.v1")
    problems = cls.check_config(cls.Config(model="nowhere"), RunContext(output_dir=tmp_path))
    assert any("no Punkt parameters" in p and "train.nltk.punkt.v1" in p for p in problems)


def test_punkt_training_workflow(tmp_path: Path) -> None:
    from casflow.pipeline.training import load_training_workflow, run_training

    ts = load_typesystem()
    for split, n in (("train", 3), ("dev", 1)):
        folder = tmp_path / split
        folder.mkdir()
        for k in range(n):
            text, spans = punkt_document(15 + k)
            if split == "dev":
                text, spans = with_hard_sentences(text, spans)
            cas = cassis.Cas(typesystem=ts)
            cas.sofa_string = text
            view = cas.create_view("gold")
            view.sofa_string = text
            for begin, end in spans:
                view.add(ts.get_type(SENTENCE)(begin=begin, end=end))
            (folder / f"{split}{k}.xmi").write_text(cas.to_xmi(), encoding="utf-8")
    workflow = tmp_path / "train.yaml"
    workflow.write_text(
        f"""\
gold:
  reader: {{component: xmi.reader.v1, view: gold, config: {{views: {{gold: [Sentence]}}}}}}
  train: {{input: {tmp_path / "train"}}}
  dev: {{input: {tmp_path / "dev"}}}
layers: [sentences]
model: {{component: train.nltk.punkt.v1}}
output: {tmp_path / "out"}
""",
        encoding="utf-8",
    )
    result = run_training(load_training_workflow(workflow), log=lambda _: None)
    assert (result.model_dir / "punkt.json").is_file()
    scores = result.report["final"]["dev_scores"]
    assert 80.0 < scores["sentences_f1"] < 100.0  # "e.g." and "approx." were never seen
    # What the trainer reports is what eval.sentences.v1 says of the component's output.
    text, spans = with_hard_sentences(*punkt_document(15))
    gold = punkt_view(text, spans)
    system = run("sentences.nltk.punkt.v1", punkt_view(text, []), model=str(result.model_dir))
    evaluator_cls = registry().get("eval.sentences.v1")
    evaluator = evaluator_cls(evaluator_cls.Config(), RunContext(output_dir=tmp_path))
    found = evaluator.score(evaluator.evaluate(gold, system).counts)
    assert round(100 * found["f1"], 2) == scores["sentences_f1"]
    assert round(100 * found["precision"], 2) == scores["sentences_precision"]


# -- one tool's segmentation, another tool's tagger --------------------------------------------


def test_syntok_tokens_in_pysbd_sentences_tagged_by_spacy(tiny_spacy_model: Path) -> None:
    from casflow.typesystem import DEPENDENCY, POS

    text = "BRCA2 binds RAD51 in the nucleus. The p53 protein is expressed in liver cells."
    view = make_view(text, structure=False)
    run("sentences.pysbd.v1", view)
    run("tokens.syntok.v1", view, use_existing_sentences=True)
    tokens_before = [(t.begin, t.end) for t in view.select(TOKEN)]
    sentences_before = [(s.begin, s.end) for s in view.select(SENTENCE)]
    run(
        "spacy.pipeline.v1",
        view,
        model=str(tiny_spacy_model),
        layers=["pos", "dependencies"],
        use_existing_tokens=True,
        use_existing_sentences=True,
    )
    # The spaCy tagger wrote onto syntok's tokens and kept pySBD's sentences.
    assert [(t.begin, t.end) for t in view.select(TOKEN)] == tokens_before
    assert [(s.begin, s.end) for s in view.select(SENTENCE)] == sentences_before
    assert len(sentences_before) == 2
    assert all(t.pos is not None and t.pos.PosValue for t in view.select(TOKEN))
    assert len(list(view.select(POS))) == len(tokens_before)
    dependents = sorted((d.Dependent.begin, d.Dependent.end) for d in view.select(DEPENDENCY))
    assert dependents == sorted(tokens_before)  # one relation per token, ROOTs included


def tag_with_shipped_model(view: cassis.Cas) -> None:
    run(
        "spacy.pipeline.v1",
        view,
        model="casflow:craft_syntax",
        layers=["pos", "dependencies"],
        use_existing_tokens=True,
        use_existing_sentences=True,
    )


def assert_tagged_and_parsed(view: cassis.Cas, tokens: list[tuple[int, int]]) -> None:
    from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT

    assert [(t.begin, t.end) for t in view.select(TOKEN)] == tokens
    assert all(t.pos is not None and t.pos.PosValue for t in view.select(TOKEN))
    dependents = sorted((d.Dependent.begin, d.Dependent.end) for d in view.select(DEPENDENCY))
    assert dependents == sorted(tokens)
    for sentence in view.select(SENTENCE):
        assert len(view.select_covered(DEPENDENCY_ROOT, sentence)) == 1


def test_blingfire_sentences_and_syntok_tokens_tagged_by_the_shipped_model() -> None:
    text = "BRCA2 binds RAD51 in the nucleus. Mutant mice (K-12) died early."
    view = make_view(text, structure=False)
    run("sentences.blingfire.v1", view)
    run("tokens.syntok.v1", view, use_existing_sentences=True)
    tokens = [(t.begin, t.end) for t in view.select(TOKEN)]
    tag_with_shipped_model(view)
    assert_tagged_and_parsed(view, tokens)
    tags = {t.get_covered_text(): t.pos.PosValue for t in view.select(TOKEN)}
    assert tags["binds"] == "VBZ" and tags["died"] == "VBD" and tags["nucleus"] == "NN"


# -- the real CRAFT articles -------------------------------------------------------------------


def craft_views(craft_dir: Path) -> list[tuple[str, str, list[tuple[str, int, int]]]]:
    """(id, text, structure annotations) of a train and a dev article and the one with hair
    spaces inside tokens, as the CRAFT reader gives them (all 67 articles with
    CASFLOW_FULL_CORPUS_TESTS=1)."""

    from casflow.components.corpora.craft import CraftReader, CraftReaderConfig
    from casflow.pipeline.component import DocumentRef

    reader = CraftReader(
        CraftReaderConfig(corpus=str(craft_dir), layers=["structure"], ontologies=[]),
        RunContext(output_dir=Path(".")),
    )
    ids_dir = craft_dir / "articles" / "ids"
    train = (ids_dir / "craft-ids-train.txt").read_text().split()
    dev = (ids_dir / "craft-ids-dev.txt").read_text().split()
    found = []
    chosen = train + dev if os.environ.get("CASFLOW_FULL_CORPUS_TESTS") == "1" else []
    for pmid in chosen or [train[0], dev[-1], "17020410"]:
        cas = cassis.Cas(typesystem=load_typesystem())
        reader.load(DocumentRef(pmid, str(reader.paths.text(pmid))), cas)
        structure = [
            (a.type.name, a.begin, a.end)
            for type_name in (HEADING, PARAGRAPH)
            for a in cas.select(type_name)
        ]
        found.append((pmid, cas.sofa_string, structure))
    return found


@pytest.fixture(scope="module")
def craft_articles(craft_dir: Path) -> list[tuple[str, str, list[tuple[str, int, int]]]]:
    return craft_views(craft_dir)


def craft_view(text: str, structure: list[tuple[str, int, int]]) -> cassis.Cas:
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = text
    for type_name, begin, end in structure:
        cas.add(ts.get_type(type_name)(begin=begin, end=end))
    return cas


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("name", TOKENIZERS)
def test_tokens_on_craft_articles_are_exact(name: str, craft_articles) -> None:
    for pmid, text, structure in craft_articles:
        assert structure, f"{pmid}: the CRAFT reader gave no structure"
        view = craft_view(text, structure)
        if name == "tokens.nltk.treebank.v1":
            run("sentences.rules.v1", view)
        run(name, view)
        assert_exact_tokens(view)
        boundaries = {offset for _, b, e in structure for offset in (b, e)}
        for token in view.select(TOKEN):
            inner = [o for o in boundaries if token.begin < o < token.end]
            assert not inner, f"{pmid}: {name} token {token.get_covered_text()!r} crosses {inner}"


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("name", SENTENCE_SPLITTERS)
def test_sentences_on_craft_articles_respect_structure(name: str, craft_articles) -> None:
    for pmid, text, structure in craft_articles:
        view = run(name, craft_view(text, structure))
        sentences = sorted((s.begin, s.end) for s in view.select(SENTENCE))
        assert len(sentences) > 50, f"{pmid}: only {len(sentences)} sentences"
        boundaries = {offset for _, b, e in structure for offset in (b, e)}
        previous = 0
        for begin, end in sentences:
            piece = text[begin:end]
            assert piece == piece.strip() and piece, (pmid, begin, piece)
            assert begin >= previous, f"{pmid}: sentences overlap at {begin}"
            previous = end
            inner = [o for o in boundaries if begin < o < end]
            assert not inner, f"{pmid}: {name} sentence at {begin} crosses a structure boundary"


@pytest.mark.corpus
@pytest.mark.slow
def test_craft_article_segmented_by_two_tools_tagged_by_the_shipped_model(craft_articles) -> None:
    pmid, text, structure = craft_articles[1]
    view = craft_view(text, structure)
    run("sentences.pysbd.v1", view)
    run("tokens.blingfire.v1", view, use_existing_sentences=True)
    tokens = [(t.begin, t.end) for t in view.select(TOKEN)]
    assert len(tokens) > 1000, pmid
    tag_with_shipped_model(view)
    assert_tagged_and_parsed(view, tokens)
