"""Models that learn from given sentences: right-to-left spaCy models (gold sentences
reversed for training, reversed parses read back in reading order by spacy.pipeline.v1)
and given-segmentation ones, run one sentence at a time as they learned; trained ones
run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import cassis
import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin

from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.components.spacy.pipeline import SpacyPipeline, SpacyPipelineConfig
from casflow.components.spacy.right_to_left import (
    DIRECTION_KEY,
    GIVEN_SEGMENTATION_KEY,
    LEFT_TO_RIGHT,
    RIGHT_TO_LEFT,
    model_direction,
    read_parse,
    reads_given_sentences,
    reverse_gold,
    reversed_doc,
    saved_model_meta,
)
from casflow.components.spacy.training_docs import gold_to_docs
from casflow.pipeline.component import RunContext
from casflow.pipeline.training import load_training_workflow, run_training
from casflow.pipeline.validation import WorkflowValidationError
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, SENTENCE, TOKEN, load_typesystem
from tests.test_training_workflow import WORKFLOW, corpus, workflow_file  # noqa: F401


def two_sentences() -> GoldSyntaxDocument:
    text = " Mice  died.\n\nThe (p53) gene grew.\n"
    words = ["Mice", "died", ".", "The", "(", "p53", ")", "gene", "grew", "."]
    tokens = []
    position = 0
    for word in words:
        begin = text.index(word, position)
        position = begin + len(word)
        tokens.append((begin, position))
    return GoldSyntaxDocument(
        "d1",
        text,
        sentences=[(1, 12), (14, 34)],
        tokens=tokens,
        tags=["NNS", "VBD", ".", "DT", "-LRB-", "NN", "-RRB-", "NN", "VBD", "."],
        heads=[1, 1, 1, 7, 5, 7, 5, 8, 8, 8],
        deprels=["nsubj", "root", "punct", "det", "punct", "nn", "punct", "nsubj", "root", "punct"],
    )


def words(gold: GoldSyntaxDocument) -> list[str]:
    return [gold.text[b:e] for b, e in gold.tokens]


def test_reversing_a_gold_document_turns_every_sentence_around() -> None:
    gold = two_sentences()
    back = reverse_gold(gold)
    back.validate()
    assert words(back) == [".", "died", "Mice", ".", "grew", "gene", ")", "p53", "(", "The"]
    # the whitespace between neighbours goes with them; between sentences it stays
    assert back.text == " .died  Mice\n\n.grew gene )p53( The\n"
    assert [back.text[b:e] for b, e in back.sentences] == [".died  Mice", ".grew gene )p53( The"]
    # "died" (now token 1) stays the root of the first sentence, "Mice" its subject
    assert back.heads[:3] == [1, 1, 1] and back.deprels[:3] == ["punct", "root", "nsubj"]
    # "p53" (now 7) heads both brackets and hangs on "gene" (now 5)
    assert back.heads[6] == back.heads[8] == 7 and back.heads[7] == 5
    assert back.tags[3:6] == [".", "VBD", "NN"]
    twice = reverse_gold(back)
    assert (twice.text, twice.tokens, twice.heads, twice.tags, twice.deprels) == (
        gold.text,
        gold.tokens,
        gold.heads,
        gold.tags,
        gold.deprels,
    )


def test_reversed_training_docs_keep_one_tree_per_sentence() -> None:
    docs = list(gold_to_docs(spacy.blank("en").vocab, [reverse_gold(two_sentences())]))
    assert len(docs) == 1
    sentences = list(docs[0].sents)
    assert [[t.text for t in s if not t.is_space] for s in sentences] == [
        [".", "died", "Mice"],
        [".", "grew", "gene", ")", "p53", "(", "The"],
    ]
    assert [s.root.text for s in sentences] == ["died", "grew"]


def test_a_reversed_parse_comes_back_in_reading_order() -> None:
    vocab = spacy.blank("en").vocab
    doc = reversed_doc(vocab, ["Mice", "died", "."], [True, False, False])
    assert doc.text == ".died Mice" and [t.is_sent_start for t in doc] == [True, False, False]
    # what a parser of the reversed sentence would say, as spaCy stores it
    parsed = Doc(
        vocab,
        words=[t.text for t in doc],
        spaces=[bool(t.whitespace_) for t in doc],
        tags=[".", "VBD", "NNS"],
        heads=[1, 1, 1],
        deps=["punct", "ROOT", "nsubj"],
    )
    parse = read_parse(parsed, right_to_left=True)
    assert parse.tags == ["NNS", "VBD", "."]
    assert parse.heads == [1, 1, 1] and parse.deps == ["nsubj", "ROOT", "punct"]


#: the texts of the Docs the stand-in parser was given, in order
PARSED: list[str] = []


@Language.component("casflow_test_head_is_next")
def head_is_next(doc: Doc) -> Doc:
    """A stand-in parser: every token hangs on the one after it, tagged X<its text>."""
    PARSED.append(doc.text)
    n = len(doc)
    return Doc(
        doc.vocab,
        words=[t.text for t in doc],
        spaces=[bool(t.whitespace_) for t in doc],
        tags=[f"X{t.text}" for t in doc],
        heads=[min(i + 1, n - 1) for i in range(n)],
        deps=["next"] * (n - 1) + ["ROOT"],
    )


@pytest.fixture
def head_is_next_model(tmp_path: Path) -> Path:
    nlp = spacy.blank("en")
    nlp.add_pipe("casflow_test_head_is_next")
    nlp.meta[DIRECTION_KEY] = RIGHT_TO_LEFT
    nlp.to_disk(tmp_path / "rtl")
    return tmp_path / "rtl"


def view_with_sentences(text: str, sentences: list[list[str]]) -> cassis.Cas:
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = text
    position = 0
    for sentence in sentences:
        tokens = []
        for word in sentence:
            begin = text.index(word, position)
            position = begin + len(word)
            tokens.append(ts.get_type(TOKEN)(begin=begin, end=position))
        cas.add_all(tokens)
        cas.add(ts.get_type(SENTENCE)(begin=tokens[0].begin, end=tokens[-1].end))
    return cas


def parse_two_sentences(model: Path, tmp_path: Path) -> cassis.Cas:
    """A view of two sentences (whitespace and line breaks between tokens) that
    spacy.pipeline.v1 with ``model`` tags and parses over its tokens and sentences."""
    sentences = [["Mice", "died", "."], ["The", "(", "p53", ")", "gene"]]
    view = view_with_sentences("Mice  died.\n\nThe (p53)\ngene\n", sentences)
    config = SpacyPipelineConfig(
        model=str(model),
        layers=["pos", "dependencies"],
        use_existing_tokens=True,
        use_existing_sentences=True,
    )
    SpacyPipeline(config, RunContext(output_dir=tmp_path)).process(view)
    assert len(view.select(TOKEN)) == 8 and len(view.select(SENTENCE)) == 2
    return view


def sentence_parses(view: cassis.Cas) -> list[tuple[list[str], list[str], dict[str, str]]]:
    """Each sentence's token texts, the texts of its roots, and its arcs (dependent
    text -> governor text); every token tagged X<its text> by the stand-in parser."""
    out = []
    for sentence in view.select(SENTENCE):
        tokens = view.select_covered(TOKEN, sentence)
        texts = [t.get_covered_text() for t in tokens]
        assert [t.pos.PosValue for t in tokens] == [f"X{t}" for t in texts]
        roots = [
            r.Dependent.get_covered_text() for r in view.select_covered(DEPENDENCY_ROOT, sentence)
        ]
        arcs = {
            d.Dependent.get_covered_text(): d.Governor.get_covered_text()
            for d in view.select_covered(DEPENDENCY, sentence)
            if d.type.name == DEPENDENCY
        }
        out.append((texts, roots, arcs))
    return out


def test_spacy_pipeline_reads_a_right_to_left_model_back_in_reading_order(
    head_is_next_model: Path, tmp_path: Path
) -> None:
    assert model_direction(saved_model_meta(head_is_next_model)) == RIGHT_TO_LEFT
    view = parse_two_sentences(head_is_next_model, tmp_path)
    for texts, roots, arcs in sentence_parses(view):
        # read right to left, "head is the next token" is "head is the previous token"
        assert roots == texts[:1]
        assert arcs == dict(zip(texts[1:], texts[:-1], strict=True))


def test_a_right_to_left_model_needs_the_views_tokens_and_sentences(
    head_is_next_model: Path, tmp_path: Path
) -> None:
    config = SpacyPipelineConfig(
        model=str(head_is_next_model), layers=["pos", "dependencies"], use_existing_tokens=True
    )
    context = RunContext(output_dir=tmp_path)
    [problem] = SpacyPipeline.check_config(config, context)
    assert "reads sentences right to left" in problem and "use_existing_sentences" in problem
    with pytest.raises(ValueError, match="cannot segment raw text"):
        SpacyPipeline(config, context)


@pytest.fixture
def given_segmentation_model(tmp_path: Path) -> Path:
    nlp = spacy.blank("en")
    nlp.add_pipe("casflow_test_head_is_next")
    nlp.meta[DIRECTION_KEY] = LEFT_TO_RIGHT
    nlp.meta[GIVEN_SEGMENTATION_KEY] = True
    nlp.to_disk(tmp_path / "given")
    return tmp_path / "given"


def test_a_given_segmentation_model_runs_one_sentence_at_a_time(
    given_segmentation_model: Path, tmp_path: Path
) -> None:
    assert reads_given_sentences(saved_model_meta(given_segmentation_model))
    PARSED.clear()
    view = parse_two_sentences(given_segmentation_model, tmp_path)
    # as it learned: each sentence alone, its words in reading order, no other text
    assert PARSED == ["Mice died.", "The (p53) gene"]
    for texts, roots, arcs in sentence_parses(view):
        # over the whole document, the last token of the first sentence would hang on
        # the text after it; one sentence at a time, each last token is a root
        assert roots == texts[-1:]
        assert arcs == dict(zip(texts[:-1], texts[1:], strict=True))


def test_a_given_segmentation_model_needs_the_views_tokens_and_sentences(
    given_segmentation_model: Path, tmp_path: Path
) -> None:
    config = SpacyPipelineConfig(
        model=str(given_segmentation_model),
        layers=["pos", "dependencies"],
        use_existing_tokens=True,
    )
    context = RunContext(output_dir=tmp_path)
    [problem] = SpacyPipeline.check_config(config, context)
    assert "casflow_given_segmentation: true" in problem and "use_existing_sentences" in problem
    with pytest.raises(ValueError, match="cannot segment raw text"):
        SpacyPipeline(config, context)


def test_a_model_trained_on_raw_text_runs_over_whole_documents(
    given_segmentation_model: Path, tmp_path: Path
) -> None:
    meta_path = given_segmentation_model / "meta.json"
    meta = json.loads(meta_path.read_text("utf-8"))
    meta[GIVEN_SEGMENTATION_KEY] = False
    meta_path.write_text(json.dumps(meta), "utf-8")
    view = view_with_sentences(
        "Mice died. They grew.", [["Mice", "died", "."], ["They", "grew", "."]]
    )
    config = SpacyPipelineConfig(
        model=str(given_segmentation_model),
        layers=["pos", "dependencies"],
        use_existing_tokens=True,
        use_existing_sentences=True,
    )
    PARSED.clear()
    SpacyPipeline(config, RunContext(output_dir=tmp_path)).process(view)
    assert PARSED == ["Mice died. They grew."]


GIVEN_SEGMENTATION_WORKFLOW = WORKFLOW.replace(
    "layers: [tokens, sentences, pos, dependencies]", "layers: [pos, dependencies]"
)
RIGHT_TO_LEFT_WORKFLOW = GIVEN_SEGMENTATION_WORKFLOW.replace(
    "    vectors: null\n", "    vectors: null\n    direction: right_to_left\n"
)
LEFT_TO_RIGHT_WORKFLOW = GIVEN_SEGMENTATION_WORKFLOW.replace(
    "    vectors: null\n", "    vectors: null\n    given_segmentation: true\n"
)


@pytest.mark.parametrize(
    ("text", "direction", "first_sentence"),
    [
        (RIGHT_TO_LEFT_WORKFLOW, RIGHT_TO_LEFT, [".", "died", "Mice"]),
        (LEFT_TO_RIGHT_WORKFLOW, LEFT_TO_RIGHT, ["Mice", "died", "."]),
    ],
)
def test_training_on_given_sentences_in_either_direction(
    tmp_path: Path,
    corpus: dict[str, Path],  # noqa: F811
    text: str,
    direction: str,
    first_sentence: list[str],
) -> None:
    path = workflow_file(tmp_path, corpus, text)
    loaded = load_training_workflow(path, {"cross_validation": {"folds": 0}})
    result = run_training(loaded, log=lambda line: None)
    meta = json.loads((result.model_dir / "meta.json").read_text("utf-8"))
    assert meta[DIRECTION_KEY] == direction
    assert meta[GIVEN_SEGMENTATION_KEY] is True
    # it learns from the gold tokens, one sentence at a time, as it runs
    config = spacy.util.load_config(result.model_dir / "config.cfg")
    assert config["corpora"]["train"]["gold_preproc"] is True
    # scored over the gold tokens and sentences: no segmentation figures
    scores = result.report["final"]["dev_scores"]
    assert set(scores) == {"xpos", "uas", "las"}
    assert all(0.0 <= v <= 100.0 for v in scores.values())
    card = (result.model_dir / "MODEL_CARD.md").read_text("utf-8")
    assert "over the gold sentences and tokens" in card and "from raw text" not in card
    assert ("It reads right to left" in card) == (direction == RIGHT_TO_LEFT)
    # the training Docs hold the sentences in the model's reading order
    docbin = DocBin().from_disk(result.model_dir.parent / "corpus" / "train.spacy")
    trained = [
        [t.text for t in sentence if not t.is_space]
        for doc in docbin.get_docs(spacy.blank("en").vocab)
        for sentence in doc.sents
    ]
    assert first_sentence in trained and first_sentence[::-1] not in trained
    # and the model runs over given tokens and sentences
    view = view_with_sentences("Mice grew fast .", [["Mice", "grew", "fast", "."]])
    config = SpacyPipelineConfig(
        model=str(result.model_dir),
        layers=["pos", "dependencies"],
        use_existing_tokens=True,
        use_existing_sentences=True,
    )
    SpacyPipeline(config, RunContext(output_dir=tmp_path)).process(view)
    assert len(view.select(DEPENDENCY_ROOT)) == 1
    assert len(view.select(DEPENDENCY)) == 4


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("direction: right_to_left", "direction right_to_left"),
        ("given_segmentation: true", "given_segmentation"),
    ],
)
def test_training_on_given_sentences_refuses_token_and_sentence_layers(
    tmp_path: Path,
    corpus: dict[str, Path],  # noqa: F811
    setting: str,
    named: str,
) -> None:
    text = WORKFLOW.replace("    vectors: null\n", f"    vectors: null\n    {setting}\n")
    with pytest.raises(WorkflowValidationError, match=f"{named} learns pos and dependencies"):
        load_training_workflow(workflow_file(tmp_path, corpus, text))
