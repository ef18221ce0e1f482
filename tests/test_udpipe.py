"""UDPipe 1: ``udpipe.v1`` on a tiny model that ``casflow train`` (``train.udpipe.v1``)
trains once per session from hand-written gold views, on the real ufal.udpipe (the
tests that use it are ``slow``: they train)."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest

from casflow.components.layers import LongSentenceWarning
from casflow.components.udpipe.model import UdpipeModel, Word, model_file
from casflow.components.udpipe.pipeline import sentence_pieces
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import (
    DEPENDENCY,
    DEPENDENCY_ROOT,
    HEADING,
    PARAGRAPH,
    POS,
    SENTENCE,
    TOKEN,
    load_typesystem,
)
from tests.helpers.training import train, training_workflow, write_gold_splits
from tests.spacy_fixtures import SENTENCES, TAG_MAP, gold_document, sentence_text

pytest.importorskip("ufal.udpipe", reason="ufal.udpipe is in the tools extra")

TINY_OPTIONS = {
    "tokenizer": "epochs=6;dimension=16;batch_size=10;learning_rate=0.01;dropout=0",
    "tagger": "iterations=4;guesser_suffix_rules=2",
    "parser": "iterations=15;hidden_layer=32;embedding_form=16;embedding_upostag=8;"
    "embedding_xpostag=8;embedding_lemma=0;embedding_feats=0;embedding_deprel=8",
}


@pytest.fixture(scope="session")
def tiny_udpipe_training(tmp_path_factory: pytest.TempPathFactory):
    """A UDPipe model trained by casflow train on the hand-written sentences."""
    root = tmp_path_factory.mktemp("tiny_udpipe")
    splits = {"train": range(12), "dev": [3]}
    write_gold_splits(root, splits, lambda k: gold_document(k % len(SENTENCES)))
    workflow = training_workflow(
        root,
        root / "out",
        types=["Sentence", "Token", "POS", "Lemma", "Dependency"],
        layers=["tokens", "sentences", "pos", "lemma", "dependencies"],
        trainer="train.udpipe.v1",
        config=TINY_OPTIONS,
        seed=1,
    )
    result, _ = train(workflow)
    return workflow, result


@pytest.fixture(scope="session")
def tiny_udpipe_model(tiny_udpipe_training) -> Path:
    return tiny_udpipe_training[1].model_dir


def run(name: str, view: cassis.Cas, **config: object) -> cassis.Cas:
    cls = registry().get(name)
    cls(cls.Config(**config), RunContext(output_dir=Path("."))).process(view)
    return view


def plain_view(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def assert_trees(view: cassis.Cas) -> None:
    """One relation per token, one ROOT per sentence, heads inside the sentence."""
    tokens = sorted((t.begin, t.end) for t in view.select(TOKEN))
    dependents = sorted((d.Dependent.begin, d.Dependent.end) for d in view.select(DEPENDENCY))
    assert dependents == tokens
    for sentence in view.select(SENTENCE):
        roots = [r for r in view.select_covered(DEPENDENCY_ROOT, sentence)]
        assert len(roots) == 1 and roots[0].Governor is roots[0].Dependent
        for dep in view.select_covered(DEPENDENCY, sentence):
            assert sentence.begin <= dep.Governor.begin < sentence.end


@pytest.mark.slow
def test_training_report_and_model_card(tiny_udpipe_training) -> None:
    _, result = tiny_udpipe_training
    assert (result.model_dir / "model.udpipe").is_file()
    scores = result.report["final"]["dev_scores"]
    assert set(scores) == {"tokens_f", "sentences_f", "xpos", "uas", "las"}
    # The dev document holds the training sentences: the tiny model has learned them.
    assert scores["tokens_f"] > 90 and scores["xpos"] > 80, scores
    card = (result.model_dir / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert "train.udpipe.v1" in card and "UDPipe 1" in card


@pytest.mark.slow
def test_finished_model_is_reused_when_nothing_changed(tiny_udpipe_training) -> None:
    workflow, first = tiny_udpipe_training
    again, lines = train(workflow)
    assert any("reused" in line for line in lines), lines
    assert (again.model_dir / "model.udpipe").read_bytes() == (
        first.model_dir / "model.udpipe"
    ).read_bytes()


@pytest.mark.slow
def test_a_damaged_model_file_is_trained_again(tiny_udpipe_training, tmp_path: Path) -> None:
    """A truncated model.udpipe in a finished output was reused, and scoring it crashed:
    the marker records the model file's size and digest."""
    import shutil

    from casflow.pipeline.training import load_training_workflow, run_training

    workflow, first = tiny_udpipe_training
    output = tmp_path / "out"
    shutil.copytree(first.output_dir, output)
    model = output / "final" / "model" / "model.udpipe"
    model.write_bytes(model.read_bytes()[:1000])
    lines: list[str] = []
    again = run_training(
        load_training_workflow(workflow, {"output": str(output)}), log=lines.append
    )
    assert any("model.udpipe is not the file trained" in line for line in lines), lines
    assert not any("reused" in line for line in lines)
    assert model.read_bytes() == (first.model_dir / "model.udpipe").read_bytes()
    assert again.report["final"]["dev_scores"] == first.report["final"]["dev_scores"]


@pytest.mark.slow
def test_all_layers_from_raw_text_with_exact_offsets(tiny_udpipe_model: Path) -> None:
    rows = SENTENCES[0][0]
    text = "  " + sentence_text(rows) + "\n\n" + sentence_text(SENTENCES[1][0]) + " "
    view = run("udpipe.v1", plain_view(text), model=str(tiny_udpipe_model))
    tokens = list(view.select(TOKEN))
    assert [t.get_covered_text() for t in tokens][: len(rows)] == [r[0] for r in rows]
    for token in tokens:
        covered = token.get_covered_text()
        assert covered and covered == covered.strip()
    sentences = [s.get_covered_text() for s in view.select(SENTENCE)]
    assert sentences == [sentence_text(rows), sentence_text(SENTENCES[1][0])]
    first = tokens[0]
    assert first.pos.PosValue == rows[0][1] and first.pos.coarseValue == TAG_MAP[rows[0][1]]
    assert first.lemma.value == rows[0][4]
    assert_trees(view)


@pytest.mark.slow
@pytest.mark.parametrize("existing_sentences", [False, True])
def test_separators_udpipe_takes_for_letters_are_trimmed(
    tiny_udpipe_model: Path, existing_sentences: bool
) -> None:
    """UDPipe does not take U+2028, U+2029 or U+0085 for space: its tokens may begin or
    end with them, or be one; no Token or Sentence holds them at an edge, none is only
    whitespace."""
    first, second = (sentence_text(rows) for rows, _ in SENTENCES[:2])
    text = f"{first}\u2028{second}\u2029{first}\x85{second}\x85 \x85"
    view = plain_view(text)
    if existing_sentences:  # one given sentence, separators inside
        view.add(view.typesystem.get_type(SENTENCE)(begin=0, end=len(text)))
    run(
        "udpipe.v1",
        view,
        model=str(tiny_udpipe_model),
        layers=["tokens", "pos", "dependencies"]
        if existing_sentences
        else ["sentences", "tokens", "pos", "dependencies"],
        use_existing_sentences=existing_sentences,
    )
    words = [r[0] for rows, _ in SENTENCES[:2] for r in rows]
    assert [t.get_covered_text() for t in view.select(TOKEN)] == words * 2
    if not existing_sentences:
        covered = [s.get_covered_text() for s in view.select(SENTENCE)]
        assert covered and all(c and c == c.strip() for c in covered)
    assert_trees(view)


@pytest.mark.slow
def test_text_after_a_nul_character_is_analysed(tiny_udpipe_model: Path) -> None:
    """UDPipe's binding takes C strings, which end at a NUL: the rest of the document got
    no token, and an existing token with a NUL inside was tagged as cut there."""
    first, second = (sentence_text(rows) for rows, _ in SENTENCES[:2])
    words = [r[0] for rows, _ in SENTENCES[:2] for r in rows]
    text = f"{first}\x00{second}"
    view = run("udpipe.v1", plain_view(text), model=str(tiny_udpipe_model))
    assert [t.get_covered_text() for t in view.select(TOKEN)] == words
    assert_trees(view)

    # a given token with a NUL inside: UDPipe tags the whole word, not what comes before
    model = UdpipeModel(model_file(str(tiny_udpipe_model)))
    (word,) = model.analyse([Word(0, 9, "RAD\x0051-x")], tag=True, parse=False)
    assert (word.begin, word.end, word.form) == (0, 9, "RAD 51-x")


@pytest.mark.slow
def test_sentences_never_cross_a_heading(tiny_udpipe_model: Path) -> None:
    heading = "Mutations in Sox9"
    body = sentence_text(SENTENCES[2][0])
    view = plain_view(f"{heading}\n{body}")
    ts = view.typesystem
    view.add(ts.get_type(HEADING)(begin=0, end=len(heading)))
    view.add(ts.get_type(PARAGRAPH)(begin=len(heading) + 1, end=len(view.sofa_string)))
    run("udpipe.v1", view, model=str(tiny_udpipe_model), layers=["sentences", "tokens"])
    assert [s.get_covered_text() for s in view.select(SENTENCE)][0] == heading


@pytest.mark.slow
def test_other_tools_tokens_and_sentences_tagged_and_parsed(tiny_udpipe_model: Path) -> None:
    text = " ".join(sentence_text(rows) for rows, _ in SENTENCES[:3])
    view = plain_view(text)
    run("sentences.pysbd.v1", view)
    run("tokens.syntok.v1", view, use_existing_sentences=True)
    tokens = [(t.begin, t.end) for t in view.select(TOKEN)]
    sentences = [(s.begin, s.end) for s in view.select(SENTENCE)]
    run(
        "udpipe.v1",
        view,
        model=str(tiny_udpipe_model),
        use_existing_tokens=True,
        use_existing_sentences=True,
    )
    assert [(t.begin, t.end) for t in view.select(TOKEN)] == tokens
    assert [(s.begin, s.end) for s in view.select(SENTENCE)] == sentences
    assert all(t.pos is not None and t.lemma is not None for t in view.select(TOKEN))
    assert_trees(view)


@pytest.mark.slow
@pytest.mark.parametrize("given", ["sentences", "sentences and tokens", "none"])
def test_a_long_sentence_is_tagged_and_parsed_in_pieces(
    tiny_udpipe_model: Path, given: str
) -> None:
    # One given Sentence of 20,000 words (a splitter that found no sentence end in a
    # 100 KB line) took UDPipe's parser 558 s: its time grows with the square.
    words = " ".join(r[0] for r in SENTENCES[0][0][:-1])
    text = "Cells grow.\n\n" + " and ".join([words] * 3)
    long_begin = text.index(words)
    view = plain_view(text)
    if given != "none":
        for begin, end in ((0, long_begin - 2), (long_begin, len(text))):
            view.add(view.typesystem.get_type(SENTENCE)(begin=begin, end=end))
    if given == "sentences and tokens":
        run("tokens.syntok.v1", view, use_existing_sentences=True)
    tokens_before = sorted((t.begin, t.end) for t in view.select(TOKEN))
    cls = registry().get("udpipe.v1")
    config = cls.Config(
        model=str(tiny_udpipe_model),
        max_sentence_words=4,
        use_existing_sentences=given != "none",
        use_existing_tokens=given == "sentences and tokens",
    )
    component = cls(config, RunContext(output_dir=Path(".")))
    seen: list[int] = []
    analyse = component.model.analyse

    def recording(words, **options):  # type: ignore[no-untyped-def]
        seen.append(len(words))
        return analyse(words, **options)

    component.model.analyse = recording  # type: ignore[method-assign]
    with pytest.warns(LongSentenceWarning, match=r"max_sentence_words \(4\)") as caught:
        component.process(view)
    assert seen and max(seen) <= 4
    long = [w for w in caught if issubclass(w.category, LongSentenceWarning)]
    assert len(long) == 1 and f"at ({long_begin}, {len(text)})" in str(long[0].message)
    tokens = sorted(view.select(TOKEN), key=lambda t: t.begin)
    assert sum(seen) == len(tokens)
    if given == "sentences and tokens":
        assert [(t.begin, t.end) for t in tokens] == tokens_before
    for token in tokens:
        covered = token.get_covered_text()
        assert covered and covered == covered.strip() and token.pos is not None
    assert len(list(view.select(DEPENDENCY_ROOT))) == len(seen)  # one root per piece
    if given == "none":
        sentences = list(view.select(SENTENCE))
        assert len(sentences) == len(seen)  # each piece a Sentence
        assert_trees(view)
    else:
        assert len(list(view.select(SENTENCE))) == 2  # the view's, none written


def test_a_multiword_token_is_never_cut() -> None:
    view = plain_view("I dunno what it is")
    # "dunno" = do + n't + know: three words sharing the token's span
    words = [Word(0, 1, "I")] + [Word(2, 7, w) for w in ("do", "n't", "know")]
    words += [Word(8, 12, "what"), Word(13, 15, "it"), Word(16, 18, "is")]
    tokens = list(range(len(words)))  # stands for the view's tokens, cut alike
    with pytest.warns(LongSentenceWarning, match=r"\(0, 18\) has 7 words"):
        pieces = sentence_pieces(view, words, tokens, 2, "root")
    assert [[w.form for w in piece] for piece, _ in pieces] == [
        ["I"],
        ["do", "n't", "know"],  # longer than the cap, but one token
        ["what", "it"],
        ["is"],
    ]
    assert [given for _, given in pieces] == [[0], [1, 2, 3], [4, 5], [6]]
    assert sentence_pieces(view, words, None, 7, "root") == [(words, None)]


@pytest.mark.slow
def test_existing_tokens_split_into_sentences_by_udpipe(tiny_udpipe_model: Path) -> None:
    text = " ".join(sentence_text(rows) for rows, _ in SENTENCES[:2])
    view = plain_view(text)
    run("tokens.blingfire.v1", view)
    count = len(list(view.select(TOKEN)))
    run("udpipe.v1", view, model=str(tiny_udpipe_model), use_existing_tokens=True)
    assert len(list(view.select(TOKEN))) == count
    assert len(list(view.select(SENTENCE))) == 2
    assert_trees(view)


def test_requirements_and_problems_before_any_document(tmp_path: Path) -> None:
    cls = registry().get("udpipe.v1")
    requires, produces = cls.requirements(
        cls.Config(model="m", use_existing_tokens=True, use_existing_sentences=True)
    )
    assert requires == (TOKEN, SENTENCE) and TOKEN not in produces and SENTENCE not in produces
    assert POS in produces and DEPENDENCY_ROOT in produces
    assert cls.views_read(cls.Config(model="m", structure_view="gold")) == {"gold": ()}
    problems = cls.check_config(cls.Config(model="nowhere"), RunContext(output_dir=tmp_path))
    assert problems and "no UDPipe model" in problems[0] and "train.udpipe.v1" in problems[0]
    with pytest.raises(ValueError, match="use_existing_tokens"):
        cls.Config(model="m", layers=["pos"])


def test_trainer_layer_choices_are_checked() -> None:
    cls = registry().get("train.udpipe.v1")
    problems = cls.check_layers(cls.Config(), ["tokens", "dependencies"])
    assert any("learn pos too" in p for p in problems)
    assert any("learn both" in p for p in problems)


def _udpipe_workflow(root: Path, **options: str) -> Path:
    return training_workflow(
        root,
        root / "out",
        types=["Sentence", "Token", "POS", "Lemma", "Dependency"],
        layers=["pos"],
        trainer="train.udpipe.v1",
        config={**TINY_OPTIONS, **options},
        seed=1,
    )


def test_udpipe_options_are_checked_before_any_document(tmp_path: Path) -> None:
    """UDPipe ignores an option it does not know and fails (or dies: batch_size=0) on
    some values after the gold data is read: both are refused at validation."""
    from casflow.pipeline.training import load_training_workflow
    from casflow.pipeline.validation import WorkflowValidationError

    (tmp_path / "train").mkdir()
    (tmp_path / "dev").mkdir()
    workflow = _udpipe_workflow(
        tmp_path,
        tokenizer="epohcs=1;dimension=8;batch_size=0",
        tagger="iterations=2;models=5;use_feats=1;iterations_2=x",
        parser="iterations=1;transition_system=arc;learning_rate=-1",
    )
    with pytest.raises(WorkflowValidationError) as caught:
        load_training_workflow(workflow)
    text = str(caught.value)
    for expected in (
        "tokenizer: 'epohcs' is not an option of UDPipe's tokenizer (did you mean epochs?)",
        "tokenizer: dimension=8: UDPipe takes 16 or 24 or 64",
        "tokenizer: batch_size=0: at least 1",
        "tagger: models=5: UDPipe takes 1 or 2 or 3 or 4",
        "tagger: use_feats: casflow never uses FEATS",
        "tagger: iterations_2=x: not a whole number",
        "parser: transition_system=arc: UDPipe takes projective or swap or link2",
        "parser: learning_rate=-1: not negative",
    ):
        assert expected in text, text
    assert "out.yaml:" in text and "model -> config" in text
    assert "iterations=2" not in text  # good options pass
    assert (
        not registry()
        .get("train.udpipe.v1")
        .check_config(registry().get("train.udpipe.v1").Config(), RunContext(output_dir=tmp_path))
    )


def test_a_udpipe_training_failure_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    from casflow.pipeline.training import TrainingDataError

    write_gold_splits(tmp_path, {"train": range(2), "dev": [0]}, lambda k: gold_document(k))
    workflow = _udpipe_workflow(tmp_path, tagger="iterations=1;dictionary_flat_lemmas=a~b")
    with pytest.raises(TrainingDataError, match="UDPipe training failed: Dictionary_flat_lemmas"):
        train(workflow)


@pytest.mark.corpus
@pytest.mark.slow
def test_udpipe_tokens_on_craft_articles_are_exact(tiny_udpipe_model: Path, craft_dir) -> None:
    from tests.test_segmenters import assert_exact_tokens, craft_view, craft_views

    for pmid, text, structure in craft_views(craft_dir)[:2]:
        view = run(
            "udpipe.v1",
            craft_view(text, structure),
            model=str(tiny_udpipe_model),
            layers=["sentences", "tokens"],
        )
        assert_exact_tokens(view)
        for token in view.select(TOKEN):
            assert not any(token.begin < b < token.end for _, b, _ in structure), pmid


@pytest.mark.slow
def test_trainer_scores_equal_the_evaluators_on_the_component(tiny_udpipe_training) -> None:
    """What casflow train reports is what casflow's evaluators say of udpipe.v1's output."""
    _, result = tiny_udpipe_training
    cas = gold_document(3)  # the dev document
    system = cas.create_view("system")
    system.sofa_string = cas.sofa_string
    run("udpipe.v1", system, model=str(result.model_dir))
    gold = cas.get_view("gold")
    found = {}
    for name, config, pick in (
        ("eval.tokens.v1", {}, lambda s: {"tokens_f": s["f1"]}),
        ("eval.sentences.v1", {}, lambda s: {"sentences_f": s["f1"]}),
        ("eval.pos.v1", {}, lambda s: {"xpos": s["xpos"]["accuracy"]}),
        (
            "eval.dependencies.v1",
            {"labels": "full"},
            lambda s: {"uas": s["uas"]["f1"], "las": s["las"]["f1"]},
        ),
    ):
        cls = registry().get(name)
        evaluator = cls(cls.Config(**config), RunContext(output_dir=Path(".")))
        scores = evaluator.score(evaluator.evaluate(gold, system).counts)
        found.update({k: round(100 * v, 2) for k, v in pick(scores).items()})
    assert found == result.report["final"]["dev_scores"]


@pytest.fixture(scope="session")
def partial_udpipe_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Models of some parts only, trained by casflow train: ``tokenizer`` (layers tokens
    and sentences) and ``no_tokenizer`` (pos and dependencies, scored on the gold
    tokens)."""
    root = tmp_path_factory.mktemp("partial_udpipe")
    write_gold_splits(root, {"train": range(6), "dev": [3]}, lambda k: gold_document(k))
    models = {}
    for name, layers in (
        ("tokenizer", ["tokens", "sentences"]),
        ("no_tokenizer", ["pos", "dependencies"]),
    ):
        workflow = training_workflow(
            root,
            root / name,
            types=["Sentence", "Token", "POS", "Lemma", "Dependency"],
            layers=layers,
            trainer="train.udpipe.v1",
            config=TINY_OPTIONS,
            seed=1,
        )
        result, _ = train(workflow)
        models[name] = result.model_dir
        models[f"{name}_scores"] = result.report["final"]["dev_scores"]
    return models


@pytest.mark.slow
def test_a_model_without_a_tokenizer_is_scored_on_the_gold_tokens(partial_udpipe_models) -> None:
    """Layers pos and dependencies: no tokenizer is trained, so the model tags and parses
    the gold sentences and tokens (it crashed when scoring tokenized the raw text)."""
    scores = partial_udpipe_models["no_tokenizer_scores"]
    assert set(scores) == {"xpos", "uas", "las"}
    assert scores["xpos"] > 80, scores
    # what casflow's evaluators say of udpipe.v1 over the gold sentences and tokens
    cas = gold_document(3)  # the dev document
    gold = cas.get_view("gold")
    system = cas.create_view("system")
    system.sofa_string = cas.sofa_string
    for name in (SENTENCE, TOKEN):
        for annotation in gold.select(name):
            system.add(system.typesystem.get_type(name)(begin=annotation.begin, end=annotation.end))
    run(
        "udpipe.v1",
        system,
        model=str(partial_udpipe_models["no_tokenizer"]),
        layers=["pos", "dependencies"],
        use_existing_tokens=True,
        use_existing_sentences=True,
    )
    found = {}
    for name, config, pick in (
        ("eval.pos.v1", {}, lambda s: {"xpos": s["xpos"]["accuracy"]}),
        (
            "eval.dependencies.v1",
            {"labels": "full"},
            lambda s: {"uas": s["uas"]["f1"], "las": s["las"]["f1"]},
        ),
    ):
        cls = registry().get(name)
        evaluator = cls(cls.Config(**config), RunContext(output_dir=Path(".")))
        found.update(
            {
                k: round(100 * v, 2)
                for k, v in pick(evaluator.score(evaluator.evaluate(gold, system).counts)).items()
            }
        )
    assert found == scores


@pytest.mark.slow
def test_parts_a_model_lacks_are_problems_before_any_document(
    partial_udpipe_models, tmp_path: Path
) -> None:
    """A model trained for some layers lacks the other parts: udpipe.v1 wrote every word
    untagged with head 0 (UDPipe's error was ignored), or died without a tokenizer."""
    cls = registry().get("udpipe.v1")
    context = RunContext(output_dir=tmp_path)
    tokenizer = str(partial_udpipe_models["tokenizer"])
    problems = cls.check_config(cls.Config(model=tokenizer), context)
    assert len(problems) == 2, problems
    assert "has no tagger, needed for layers pos, lemma, dependencies" in problems[0]
    assert "has no parser, needed for layer dependencies" in problems[1]
    assert all(tokenizer in p for p in problems)
    assert not cls.check_config(
        cls.Config(model=tokenizer, layers=["sentences", "tokens"]), context
    )
    no_tokenizer = str(partial_udpipe_models["no_tokenizer"])
    (problem,) = cls.check_config(cls.Config(model=no_tokenizer), context)
    assert "has no tokenizer, needed to make sentences and tokens" in problem
    assert "use_existing_tokens" in problem
    assert not cls.check_config(
        cls.Config(
            model=no_tokenizer,
            layers=["pos", "dependencies"],
            use_existing_tokens=True,
            use_existing_sentences=True,
        ),
        context,
    )
    damaged = tmp_path / "damaged.udpipe"
    damaged.write_bytes(b"not a model")
    (problem,) = cls.check_config(cls.Config(model=str(damaged)), context)
    assert "not a UDPipe 1 model file" in problem


@pytest.mark.slow
def test_udpipe_refusing_to_tag_is_a_document_error(partial_udpipe_models) -> None:
    from casflow.components.udpipe.model import UdpipeModel
    from casflow.pipeline.component import DocumentError

    model = UdpipeModel(partial_udpipe_models["tokenizer"] / "model.udpipe")
    text = sentence_text(SENTENCES[0][0])
    (words,) = model.tokenize(text)
    assert model.analyse(words, tag=False, parse=False)  # tokens alone are fine
    with pytest.raises(DocumentError, match="could not tag .* No tagger defined"):
        model.analyse(words, tag=True, parse=False)
    with pytest.raises(DocumentError, match="could not tag"):
        model.analyse(words, tag=False, parse=True)


def test_lemmas_udpipe_cannot_store_become_forms() -> None:
    from casflow.components.udpipe.trainer import MAX_FORMS_PER_LEMMA, storable_lemmas

    rows = [f"{i}\t{n}\t0\tNUM\tCD\t_\t0\troot\t_\t_" for i, n in enumerate(range(1, 300), 1)]
    rows.append("300\tcells\tcell\tNOUN\tNNS\t_\t1\tnsubj\t_\t_")
    text = "# text = numbers\n" + "\n".join(rows) + "\n\n"
    fixed, replaced = storable_lemmas(text, keep=True)
    assert replaced == ["0"] and MAX_FORMS_PER_LEMMA < 299
    lines = fixed.splitlines()
    assert lines[0] == "# text = numbers"
    assert lines[1].split("\t")[2] == "1" and lines[-2].split("\t")[2] == "cell"
    assert storable_lemmas(text.replace("\t0\tNUM", "\tnum\tNUM"), keep=True)[1] == ["num"]
    small = "1\tcells\tcell\tNOUN\tNNS\t_\t0\troot\t_\t_\n\n"
    assert storable_lemmas(small, keep=True) == (small, [])
    assert storable_lemmas(small, keep=False)[0].split("\t")[2] == "cells"
