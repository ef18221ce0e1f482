"""Apache OpenNLP: ``opennlp.pipeline.v1`` with tiny models that ``casflow train``
(``train.opennlp.v1``) trains once per session from hand-written Penn trees, on the real
OpenNLP of the Debian package (one JVM per process). Tests that start the JVM are
``slow`` and ``java``; they skip when java/javac or opennlp-tools.jar is missing."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest

from casflow.components.evaluators.adapters import written_outer_bracket
from casflow.components.formats.penn.alignment import TreeTypes, align_trees, build_tree_layers
from casflow.components.layers import LongSentenceWarning
from casflow.components.opennlp.head_rules import head_rules_text
from casflow.components.opennlp.model import chunk_spans, chunk_tags, parser_word
from casflow.components.opennlp.server import opennlp_missing, to_code_points
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import (
    CHUNK,
    CONSTITUENT,
    CONSTITUENT_ROOT,
    PENN_TREE,
    POS,
    SENTENCE,
    TOKEN,
    load_typesystem,
)
from tests.helpers.training import train, training_workflow, write_gold_splits

TREES = [
    "( (S (NP (DT The) (NN protein)) (VP (VBZ binds) (NP (NN DNA))) (. .)) )",
    "( (S (NP (NNS Cells)) (VP (VBD were) (VP (VBN grown) (PP (IN in) (NP (NN culture))))) (. .)) )",
    "( (S (NP (DT The) (NN mouse) (NN gene)) (VP (VBZ is) (ADJP (JJ active))) (. .)) )",
    "( (S (NP (PRP We)) (VP (VBD measured) (NP (DT the) (NN expression)) "
    "(PP (IN in) (NP (NNS embryos)))) (. .)) )",
    "( (S (NP (NN Expression)) (VP (VBD was) (ADJP (JJ high)) (PP (IN in) "
    "(NP (DT the) (NN liver)))) (. .)) )",
    "( (S (NP (DT This) (NN result)) (VP (VBZ suggests) (NP (DT a) (NN role))) (. .)) )",
    "( (S (NP (NP (NNS Mice)) (PRN (-LRB- -LRB-) (NP (CD 12)) (-RRB- -RRB-))) "
    "(VP (VBD were) (VP (VBN used))) (. .)) )",
    "( (S (NP (DT The) (NNS results)) (VP (VBD were) (ADJP (JJ clear))) (. .)) )",
    "( (S (NP (NP (DT The) (NN gene)) (PRN (-LRB- -LRB-) (NP (NN Fig.) (CD 2)) (-RRB- -RRB-))) "
    "(VP (VBD was) (VP (VBN cloned))) (. .)) )",
    "( (S (NP (NN Staining)) (VP (VBD was) (ADJP (JJ weak)) (PP (IN in) (NP (NN Fig.) (CD 3)))) "
    "(. .)) )",
]
SENTENCE_TEXTS = [
    "The protein binds DNA.",
    "Cells were grown in culture.",
    "The mouse gene is active.",
    "We measured the expression in embryos.",
    "Expression was high in the liver.",
    "This result suggests a role.",
    "Mice (12) were used.",
    "The results were clear.",
    "The gene (Fig. 2) was cloned.",
    "Staining was weak in Fig. 3.",
]
TINY = {"iterations": 60, "cutoff": 0, "chunks_from": "trees"}


def _skip_reason() -> str | None:
    return opennlp_missing()


needs_opennlp = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def gold_document(rotation: int, tmp: Path) -> cassis.Cas:
    """The hand-written trees (rotated) as one paragraph, gold layers in view ``gold``."""
    order = list(range(rotation, len(TREES))) + list(range(rotation))
    text = " ".join(SENTENCE_TEXTS[i] for i in order)
    tree_file = tmp / f"doc{rotation}.tree"
    tree_file.write_text("".join(TREES[i] + "\n" for i in order), encoding="utf-8")
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = text
    view = cas.create_view("gold")
    view.sofa_string = text
    out: list = []
    build_tree_layers(
        align_trees(tree_file, text, tree_file.name),
        ["sentences", "tokens", "pos", "constituents"],
        TreeTypes.of(ts),
        out,
    )
    for annotation in out:
        view.add(annotation)
    return cas


@pytest.fixture(scope="session")
def tiny_opennlp_training(tmp_path_factory: pytest.TempPathFactory):
    """OpenNLP models of every layer trained by casflow train on the hand-written trees."""
    if _skip_reason():
        pytest.skip(str(_skip_reason()))
    root = tmp_path_factory.mktemp("tiny_opennlp")
    splits = {"train": range(len(TREES)), "dev": [3]}
    write_gold_splits(root, splits, lambda k: gold_document(k, root))
    workflow = training_workflow(
        root,
        root / "out",
        types=["Sentence", "Token", "POS", "Constituent"],
        layers=["sentences", "tokens", "pos", "chunks", "constituents"],
        trainer="train.opennlp.v1",
        config=TINY,
        seed=0,
    )
    result, _ = train(workflow)
    return workflow, result


@pytest.fixture(scope="session")
def tiny_opennlp_model(tiny_opennlp_training) -> Path:
    return tiny_opennlp_training[1].model_dir


def build(name: str, **config: object):
    cls = registry().get(name)
    return cls(cls.Config(**config), RunContext(output_dir=Path(".")))


def run(view: cassis.Cas, **config: object) -> cassis.Cas:
    component = build("opennlp.pipeline.v1", **config)
    try:
        component.process(view)
    finally:
        component.close()
    return view


def plain_view(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def spans(view: cassis.Cas, type_name: str) -> list[tuple[int, int]]:
    return sorted((a.begin, a.end) for a in view.select(type_name))


def assert_exact_tokens(view: cassis.Cas) -> None:
    text = view.sofa_string
    for token in view.select(TOKEN):
        covered = text[token.begin : token.end]
        assert covered == token.get_covered_text() and covered.strip() == covered and covered


def assert_trees_over_tokens(view: cassis.Cas) -> None:
    """One ROOT per sentence whose leaves are exactly the sentence's tokens, in order,
    with parent and children links agreeing."""
    ts = view.typesystem
    roots = list(view.select(CONSTITUENT_ROOT))
    assert len(roots) == len(list(view.select(SENTENCE)))
    for root in roots:
        leaves: list = []

        def walk(node, parent, found: list) -> None:
            assert node.parent is parent
            if ts.subsumes(ts.get_type(TOKEN), node.type):
                found.append(node)
                return
            assert node.constituentType
            for child in node.children.elements:
                walk(child, node, found)

        for child in root.children.elements:
            walk(child, root, leaves)
        sentence_tokens = [t for t in view.select_covered(TOKEN, root)]
        assert [(t.begin, t.end) for t in leaves] == [(t.begin, t.end) for t in sentence_tokens]
        assert all(t.pos is not None and t.pos.PosValue for t in leaves)


# -- without the JVM -----------------------------------------------------------------------------


def test_chunk_tags_round_trip_and_lenient_reading() -> None:
    chunks = [(0, 2, "NP"), (2, 3, "VP"), (4, 5, "NP")]
    tags = chunk_tags(5, chunks)
    assert tags == ["B-NP", "I-NP", "B-VP", "O", "B-NP"]
    assert chunk_spans(tags) == chunks
    # As OpenNLP reads them: an I- tag not continuing its label starts a chunk.
    assert chunk_spans(["I-NP", "I-VP", "O", "I-NP"]) == [(0, 1, "NP"), (1, 2, "VP"), (3, 4, "NP")]


def test_words_for_opennlp_formats() -> None:
    assert parser_word("(") == "-LRB-" and parser_word("]") == "-RSB-"
    assert parser_word("Xpd\u200aTTD") == "Xpd_TTD"
    # a round bracket inside a word, raw, would end the tree's bracket
    assert parser_word("Ca(2") == "Ca-LRB-2" and parser_word("a)b[1]") == "a-RRB-b[1]"


@needs_opennlp
def test_a_missing_opennlp_model_is_reported_with_every_place_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative model folder or file is tried from the working directory, then from
    the workflow's folder: each layer's message names both places of its file."""
    cls = registry().get("opennlp.pipeline.v1")
    workflow_dir = tmp_path / "workflows"
    workflow_dir.mkdir()
    monkeypatch.chdir(tmp_path)
    context = RunContext(output_dir=tmp_path, workflow_dir=workflow_dir)
    config = cls.Config(model="runs/m", token_model="runs/tok.bin", layers=["sentences", "tokens"])
    sentences, tokens = cls.check_config(config, context)
    assert sentences.startswith("layer sentences: no OpenNLP sentence detector model at ")
    place = "runs/m/en-sent.bin"
    assert f"{place} (from the working directory) nor at {workflow_dir / place};" in sentences
    place = "runs/tok.bin"
    assert f"{place} (from the working directory) nor at {workflow_dir / place};" in tokens


def test_utf16_offsets_from_java_become_code_points() -> None:
    text = "a \U0001d6fc b"
    # Java: "a"=0..1, the character outside the BMP = 2..4 (two units), "b" = 5..6
    assert to_code_points(text, [[0, 1], [2, 4], [5, 6]]) == [(0, 1), (2, 3), (4, 5)]


def test_head_rules_in_opennlp_format() -> None:
    for line in head_rules_text().splitlines():
        count, _label, direction, *tags = line.split()
        assert int(count) == len(tags) + 2 and direction in ("0", "1")


def test_config_problems_are_named(tmp_path: Path) -> None:
    cls = registry().get("opennlp.pipeline.v1")
    with pytest.raises(ValueError, match="choose pos or constituents"):
        cls.Config(model="m", layers=["sentences", "tokens", "pos", "constituents"])
    with pytest.raises(ValueError, match="add 'tokens'"):
        cls.Config(model="m", layers=["sentences", "pos"])
    config = cls.Config(model=str(tmp_path), layers=["sentences", "tokens"])
    problems = cls.check_config(config, RunContext(output_dir=tmp_path))
    if not opennlp_missing():
        assert len(problems) == 2 and all("no OpenNLP" in p for p in problems)
    requires, produces = cls.requirements(
        cls.Config(
            model="m",
            layers=["constituents"],
            use_existing_sentences=True,
            use_existing_tokens=True,
        )
    )
    assert set(requires) == {SENTENCE, TOKEN}
    assert POS in produces and CONSTITUENT in produces and TOKEN not in produces


# -- with the JVM --------------------------------------------------------------------------------


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_training_report_and_reuse(tiny_opennlp_training) -> None:
    workflow, result = tiny_opennlp_training
    scores = result.report["final"]["dev_scores"]
    assert set(scores) == {
        "sentences_f",
        "tokens_f",
        "pos",
        "chunks_f",
        "parseval_f",
        "parser_pos",
    }
    # The dev document holds the training sentences: tiny models learn them.
    assert scores["sentences_f"] == 100.0 and scores["tokens_f"] == 100.0
    assert scores["pos"] >= 90.0 and scores["parseval_f"] >= 80.0
    for name in ("en-sent.bin", "en-token.bin", "en-pos.bin", "en-chunker.bin"):
        assert (result.model_dir / name).is_file()
    assert (result.model_dir / "en-parser-chunking.bin").is_file()
    _, logs = train(workflow)
    assert sum("reused" in line for line in logs) == 5
    assert not any("OpenNLP: training" in line for line in logs)


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_all_layers_from_raw_text_with_exact_offsets(tiny_opennlp_model: Path, tmp_path) -> None:
    gold = gold_document(5, tmp_path).get_view("gold")
    text = gold.sofa_string
    view = run(
        plain_view(text),
        model=str(tiny_opennlp_model),
        layers=["sentences", "tokens", "pos", "chunks"],
    )
    assert spans(view, SENTENCE) == spans(gold, SENTENCE)
    assert spans(view, TOKEN) == spans(gold, TOKEN)
    assert_exact_tokens(view)
    tagged = {(t.begin, t.end): t.pos.PosValue for t in view.select(TOKEN)}
    gold_tags = {(t.begin, t.end): t.pos.PosValue for t in gold.select(TOKEN)}
    assert sum(tagged[k] == v for k, v in gold_tags.items()) >= 0.9 * len(gold_tags)
    chunks = {(c.get_covered_text(), c.chunkValue) for c in view.select(CHUNK)}
    assert ("The protein", "NP") in chunks
    for chunk in view.select(CHUNK):
        inside = view.select_covered(TOKEN, chunk)
        assert inside and inside[0].begin == chunk.begin and inside[-1].end == chunk.end
    # The parser over those sentences and tokens (its own tags replace nothing here:
    # a second view keeps the tagger's tags apart).
    parsed = run(
        plain_view(text),
        model=str(tiny_opennlp_model),
        layers=["sentences", "tokens", "constituents"],
    )
    assert_trees_over_tokens(parsed)
    brackets = {(c.get_covered_text(), c.constituentType) for c in parsed.select(CONSTITUENT)}
    assert ("The protein", "NP") in brackets and ("Mice (12) were used.", "S") in brackets
    tags = {t.get_covered_text(): t.pos.PosValue for t in parsed.select(TOKEN)}
    assert tags["("] == "-LRB-" and tags[")"] == "-RRB-"


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_next_line_characters_are_whitespace(tiny_opennlp_model: Path) -> None:
    """Java does not take U+0085 (NEL) for whitespace: OpenNLP's sentences and tokens may
    end with it, hold it or be one; none is written with it."""
    text = "The protein binds DNA.\x85Cells were grown in culture.\x85 \x85"
    view = run(plain_view(text), model=str(tiny_opennlp_model), layers=["sentences", "tokens"])
    assert [t.get_covered_text() for t in view.select(TOKEN)] == (
        ["The", "protein", "binds", "DNA", ".", "Cells", "were", "grown", "in", "culture", "."]
    )
    for sentence in view.select(SENTENCE):
        covered = sentence.get_covered_text()
        assert covered and covered == covered.strip()


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_parser_gets_brackets_raw(tiny_opennlp_model: Path) -> None:
    """OpenNLP decodes -LRB- etc. when it reads training trees, so its parser learns raw
    brackets: given "-LRB-", the CRAFT parser tagged brackets as punctuation (. or HYPH)
    and EVALB could not score a tenth of CRAFT dev's sentences."""
    component = build(
        "opennlp.pipeline.v1",
        model=str(tiny_opennlp_model),
        layers=["sentences", "tokens", "constituents"],
    )
    sent: list[list[str]] = []
    ask = component._ask

    def recording(layer: str, op: str, key: str, **fields: object) -> object:
        if op == "parse":
            sent.extend(fields["sentences"])  # type: ignore[arg-type]
        return ask(layer, op, key, **fields)

    component._ask = recording  # type: ignore[method-assign]
    try:
        component.process(plain_view("Mice (12) were used [3]."))
    finally:
        component.close()
    words = [w for sentence in sent for w in sentence]
    assert "(" in words and ")" in words
    assert not {"-LRB-", "-RRB-"} & set(words)


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_a_sentence_longer_than_the_cap_is_parsed_in_pieces(tiny_opennlp_model: Path) -> None:
    # a table flattened to text: the chunking parser took over 8 minutes on 5,000 words
    text = " ".join(f"cells{i}" for i in range(7))
    view = plain_view(text)
    view.add(view.typesystem.get_type(SENTENCE)(begin=0, end=len(text)))
    with pytest.warns(LongSentenceWarning, match=r"has 7 words, more than max_parse_words \(3\)"):
        run(
            view,
            model=str(tiny_opennlp_model),
            layers=["tokens", "constituents"],
            use_existing_sentences=True,
            max_parse_words=3,
        )
    roots = sorted((r.begin, r.end) for r in view.select(CONSTITUENT_ROOT))
    tokens = spans(view, TOKEN)
    assert len(tokens) == 7
    assert roots == [(tokens[0][0], tokens[2][1]), (tokens[3][0], tokens[5][1]), tokens[6]]
    assert all(t.pos is not None and t.pos.PosValue for t in view.select(TOKEN))


@pytest.mark.java
@pytest.mark.slow
def test_trainer_scores_the_parser_as_the_component_runs_and_the_evaluator_scores_it(
    tiny_opennlp_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """train.opennlp.v1 gave its parser -LRB- where opennlp.pipeline.v1 gives "(" (the
    shipped CRAFT parser: 74.07 against the component's 78.29): now it gives the words
    as the component does, and its figure is eval.constituents.v1's with the outer
    bracket dropped."""
    from casflow.components.opennlp.server import OpenNlpServer
    from casflow.pipeline.component import TrainingContext

    cas = gold_document(6, tmp_path)  # "Mice (12) were used." first
    gold = cas.get_view("gold")
    trainer = build_trainer(TrainingContext(output_dir=tmp_path, layers=("constituents",)))
    sent: list[list[str]] = []
    request = OpenNlpServer.request

    def recording(self: OpenNlpServer, op: str, **fields: object) -> dict[str, object]:
        if op == "parse":
            sent.extend(fields["sentences"])  # type: ignore[arg-type]
        return request(self, op, **fields)

    monkeypatch.setattr(OpenNlpServer, "request", recording)
    scores = trainer.evaluate(tiny_opennlp_model, [trainer.example(gold, "doc6")])
    words = {w for sentence in sent for w in sentence}
    assert {"(", ")"} <= words and not {"-LRB-", "-RRB-"} & words
    system = cas.create_view("system")
    system.sofa_string = cas.sofa_string
    for name in (SENTENCE, TOKEN):
        for annotation in gold.select(name):
            system.add(system.typesystem.get_type(name)(begin=annotation.begin, end=annotation.end))
    run(
        system,
        model=str(tiny_opennlp_model),
        layers=["constituents"],
        use_existing_sentences=True,
        use_existing_tokens=True,
    )
    cls = registry().get("eval.constituents.v1")
    evaluator = cls(cls.Config(outer_bracket="drop"), RunContext(output_dir=tmp_path))
    found = evaluator.score(evaluator.evaluate(gold, system).counts)
    assert scores == {
        "parseval_f": round(100 * found["f1"], 2),
        "parser_pos": round(100 * found["tagging_accuracy"], 2),
    }


def build_trainer(context: object, **config: object):
    cls = registry().get("train.opennlp.v1")
    return cls(cls.Config(**{**TINY, **config}), context)


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_settings_opennlp_refuses_are_a_message_not_a_traceback(tmp_path: Path) -> None:
    from casflow.pipeline.training import TrainingDataError

    write_gold_splits(
        tmp_path, {"train": range(2), "dev": [0]}, lambda k: gold_document(k, tmp_path)
    )
    workflow = training_workflow(
        tmp_path,
        tmp_path / "out",
        types=["Sentence", "Token", "POS", "Constituent"],
        layers=["sentences"],
        trainer="train.opennlp.v1",
        config={**TINY, "cutoff": 100000},
        seed=0,
    )
    with pytest.raises(TrainingDataError) as caught:
        train(workflow)
    message = str(caught.value)
    assert "OpenNLP could not train the sentence detector model (sentences)" in message
    assert "InsufficientTrainingDataException" in message
    assert "lower cutoff (or parser_cutoff), or give more training documents" in message
    assert "Cutoff 100000" in message


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_a_damaged_model_file_in_the_output_is_trained_again(
    tiny_opennlp_training, tmp_path: Path
) -> None:
    """A truncated en-pos.bin in a finished output folder was reused, and scoring it
    crashed: the layer's marker records its size and digest."""
    import shutil

    from casflow.pipeline.training import load_training_workflow, run_training

    workflow, result = tiny_opennlp_training
    output = tmp_path / "out"
    shutil.copytree(result.output_dir, output)
    pos = output / "final" / "model" / "en-pos.bin"
    trained = pos.read_bytes()
    pos.write_bytes(trained[:1000])
    stale = pos.with_name("en-pos.bin.partial")  # left by a killed run
    stale.write_bytes(b"half a model")
    lines: list[str] = []
    again = run_training(
        load_training_workflow(workflow, {"output": str(output)}), log=lines.append
    )
    (trained_now,) = [line for line in lines if "OpenNLP: training" in line]
    assert "training the pos model" in trained_now
    assert any("en-pos.bin is not the file trained" in line for line in lines)
    assert sum("reused" in line for line in lines) == 4
    assert not stale.exists()
    # OpenNLP's training is deterministic (but for the zip's timestamps)
    assert abs(pos.stat().st_size - len(trained)) < 100
    assert again.report["final"]["dev_scores"] == result.report["final"]["dev_scores"]
    lines.clear()
    run_training(load_training_workflow(workflow, {"output": str(output)}), log=lines.append)
    assert sum("reused" in line for line in lines) == 5  # the new file is recorded


def test_an_unusable_opennlp_jar_is_a_problem_before_any_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A jar that is no OpenNLP jar passed --validate-only and failed after the gold was
    read (javac: zip file is empty)."""
    import shutil
    import zipfile

    from casflow.components.opennlp.server import JAR_ENV

    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("java and javac are needed to get past the first check")
    empty = tmp_path / "empty.jar"
    empty.write_bytes(b"")
    other = tmp_path / "other.jar"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("org/example/Other.class", b"")
    context = RunContext(output_dir=tmp_path)
    for jar, expected in (
        (empty, f"{empty} ($CASFLOW_OPENNLP_JAR) cannot be read as a jar"),
        (other, f"{other} ($CASFLOW_OPENNLP_JAR) is not an Apache OpenNLP 2 jar"),
    ):
        monkeypatch.setenv(JAR_ENV, str(jar))
        for name, config in (
            ("train.opennlp.v1", {}),
            ("opennlp.pipeline.v1", {"model": str(tmp_path)}),
        ):
            cls = registry().get(name)
            (problem,) = cls.check_config(cls.Config(**config), context)
            assert problem.startswith(f"{name}: {expected}"), problem
            assert "set CASFLOW_OPENNLP_JAR to an opennlp-tools 2.x jar" in problem


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_existing_sentences_and_tokens_are_consumed(tiny_opennlp_model: Path) -> None:
    """Another tool's sentences and tokens (here: one sentence, whitespace tokens with the
    final period split off) are tagged, chunked and parsed as they are; none is written."""
    text = "Cells were grown in culture.  The protein binds DNA."
    view = plain_view(text)
    ts = view.typesystem
    S, T = ts.get_type(SENTENCE), ts.get_type(TOKEN)
    view.add(S(begin=0, end=28))
    view.add(S(begin=30, end=len(text)))
    position = 0
    for piece in [
        "Cells",
        "were",
        "grown",
        "in",
        "culture",
        ".",
        "The",
        "protein",
        "binds",
        "DNA",
        ".",
    ]:
        begin = text.index(piece, position)
        position = begin + len(piece)
        view.add(T(begin=begin, end=position))
    tokens_before = spans(view, TOKEN)
    tokens = list(view.select(TOKEN))
    run(
        view,
        model=str(tiny_opennlp_model),
        layers=["constituents"],
        use_existing_sentences=True,
        use_existing_tokens=True,
    )
    assert spans(view, TOKEN) == tokens_before
    assert len(list(view.select(SENTENCE))) == 2
    assert_trees_over_tokens(view)
    # the parse hangs on the very Token annotations that were there
    leaves = {id(t) for r in view.select(CONSTITUENT) for t in r.children.elements}
    assert any(id(t) in leaves for t in tokens)
    run(
        view,
        model=str(tiny_opennlp_model),
        layers=["chunks"],
        use_existing_sentences=True,
        use_existing_tokens=True,
    )
    assert ("The protein", "NP") in {
        (c.get_covered_text(), c.chunkValue) for c in view.select(CHUNK)
    }


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_penn_tree_of_a_word_with_a_bracket_reads_back(
    tiny_opennlp_model: Path, tmp_path: Path
) -> None:
    """A tokenizer may keep "Ca(2" one token: the PennTree line escapes its bracket, so it
    parses, and penn alignment finds its words in the text again."""
    text = "Influx of Ca(2+) was blocked."
    view = plain_view(text)
    ts = view.typesystem
    view.add(ts.get_type(SENTENCE)(begin=0, end=len(text)))
    position = 0
    for piece in ["Influx", "of", "Ca(2", "+", ")", "was", "blocked", "."]:
        begin = text.index(piece, position)
        position = begin + len(piece)
        view.add(ts.get_type(TOKEN)(begin=begin, end=position))
    run(
        view,
        model=str(tiny_opennlp_model),
        layers=["constituents"],
        use_existing_sentences=True,
        use_existing_tokens=True,
    )
    (line,) = [p.PennTree for p in view.select(PENN_TREE)]
    assert " Ca-LRB-2)" in line
    # Written as every parser's tree in the chain, "( (S ...) )", not OpenNLP's "(TOP":
    # eval.constituents.v1 then counts its outer bracket as it counts gold's.
    assert line.startswith("( (") and written_outer_bracket(line) == ""
    tree_file = tmp_path / "back.tree"
    tree_file.write_text(line + "\n", encoding="utf-8")
    (aligned,) = align_trees(tree_file, text, "text")
    assert aligned.token_spans == spans(view, TOKEN)


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_one_jvm_per_process_shared_and_closed(tiny_opennlp_model: Path) -> None:
    from casflow.components.opennlp import server as server_module

    first = build("opennlp.pipeline.v1", model=str(tiny_opennlp_model), layers=["sentences"])
    second = build("opennlp.pipeline.v1", model=str(tiny_opennlp_model), layers=["sentences"])
    first.process(plain_view("The protein binds DNA. Cells were grown."))
    second.process(plain_view("The protein binds DNA."))
    assert first._server is second._server
    process = first._server._process
    assert process is not None and process.poll() is None
    first.close()
    assert process.poll() is None  # the other component still uses it
    second.close()
    assert process.wait(timeout=10) is not None
    assert server_module._SHARED.current is None


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_xmi_with_opennlp_layers_loads_in_uima_java(tiny_opennlp_model: Path, tmp_path) -> None:
    from casflow.pipeline.uima_java import (
        cassis_cas_report,
        compare_reports,
        find_uima_jar,
        java_cas_reports,
    )
    from casflow.typesystem import typesystem_xml_path

    if find_uima_jar() is None:
        pytest.skip("Apache UIMA jar not found (install libuima-core-java)")
    text = " ".join(SENTENCE_TEXTS)
    cas = plain_view(text)
    run(cas, model=str(tiny_opennlp_model), layers=["sentences", "tokens", "pos", "chunks"])
    other = cas.create_view("parsed")
    other.sofa_string = text
    run(other, model=str(tiny_opennlp_model), layers=["sentences", "tokens", "constituents"])
    path = tmp_path / "doc.xmi"
    path.write_text(cas.to_xmi(), encoding="utf-8")
    java = java_cas_reports(typesystem_xml_path(), [path], spans=True)[path]
    assert compare_reports(java, cassis_cas_report(path, spans=True)) == []
    assert java.indexed_counts["parsed"][CONSTITUENT_ROOT] == len(SENTENCE_TEXTS)
    assert java.indexed_counts["_InitialView"][CHUNK] > 0


@needs_opennlp
@pytest.mark.java
@pytest.mark.corpus
@pytest.mark.slow
def test_craft_article_with_models_trained_on_craft(craft_dir: Path, tmp_path: Path) -> None:
    """Models trained by casflow train on three CRAFT training articles, run on a
    development article: from raw text (exact offsets, no token across a heading or
    paragraph), and the parser over the gold sentences and tokens (existing tokens)."""
    from casflow.typesystem import HEADING, PARAGRAPH
    from tests.helpers.craft import craft_article, craft_ids
    from tests.test_segmenters import assert_exact_tokens as assert_covering_tokens

    train_ids = craft_ids(craft_dir, "train")[:3]
    dev = craft_ids(craft_dir, "dev")[-1]
    workflow = tmp_path / "train.yaml"
    workflow.write_text(
        f"""\
gold:
  reader:
    component: craft.reader.v1
    view: gold
    config:
      corpus: {craft_dir}
      layers: [structure, sentences, tokens, pos, constituents]
      ontologies: []
  train: {{ids: {train_ids!r}}}
  dev: {{ids: ['{dev}']}}
layers: [sentences, tokens, pos, constituents]
model:
  component: train.opennlp.v1
  config: {{iterations: 20, cutoff: 3}}
seed: 0
output: {tmp_path / "out"}
""",
        encoding="utf-8",
    )
    result, _ = train(workflow)
    scores = result.report["final"]["dev_scores"]
    assert scores["tokens_f"] > 90 and scores["pos"] > 80 and scores["parseval_f"] > 50, scores

    cas = craft_article(craft_dir, dev, ["structure", "sentences", "tokens", "pos"], tmp_path)
    text = cas.sofa_string
    structure = [(a.begin, a.end) for name in (HEADING, PARAGRAPH) for a in cas.select(name)]
    assert structure

    raw = cas.create_view("opennlp")
    raw.sofa_string = text
    ts = cas.typesystem
    for name in (HEADING, PARAGRAPH):
        for a in cas.select(name):
            raw.add(ts.get_type(name)(begin=a.begin, end=a.end))
    run(raw, model=str(result.model_dir), layers=["sentences", "tokens", "pos"])
    assert_covering_tokens(raw, regions=[(s.begin, s.end) for s in raw.select(SENTENCE)])
    assert_exact_tokens(raw)
    boundaries = {offset for span in structure for offset in span}
    for sentence in raw.select(SENTENCE):
        assert not any(sentence.begin < o < sentence.end for o in boundaries), sentence

    gold_tokens = list(cas.select(TOKEN))
    gold_tags = [t.pos.PosValue for t in gold_tokens]
    for token in gold_tokens:
        token.pos = None  # the parser's tags replace nothing given
    run(
        cas,
        model=str(result.model_dir),
        layers=["constituents"],
        use_existing_sentences=True,
        use_existing_tokens=True,
    )
    assert list(cas.select(TOKEN)) == gold_tokens
    parsed = [t for t in gold_tokens if t.parent is not None]
    assert len(parsed) >= 0.95 * len(gold_tokens)  # a sentence without a parse has no tree
    correct = sum(
        t.pos is not None and t.pos.PosValue == g
        for t, g in zip(gold_tokens, gold_tags, strict=True)
    )
    assert correct >= 0.8 * len(gold_tokens)


@needs_opennlp
@pytest.mark.java
@pytest.mark.slow
def test_jvm_ends_with_the_process_that_started_it(tmp_path: Path) -> None:
    """A worker killed with -9 leaves no JVM behind (even one busy training)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = (
        "from casflow.components.opennlp.server import shared_server\n"
        "server = shared_server()\n"
        "server._start()\n"
        "print(server._process.pid, flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    jvm = int(child.stdout.readline())
    os.kill(jvm, 0)  # running
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(jvm, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{jvm}/stat", "rb") as f:
            if f.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                return  # ended; only waiting to be reaped
        time.sleep(0.5)
    os.kill(jvm, signal.SIGKILL)
    pytest.fail("the OpenNLP JVM outlived the process that started it")


@pytest.mark.parametrize(
    ("chunks_from", "types", "missing"),
    [
        ("chunks", ["Sentence", "Token", "POS", "Constituent"], "Chunk"),
        ("trees", ["Sentence", "Token", "POS", "Chunk"], "Constituent"),
        ("chunks", ["Sentence", "Token", "POS", "Chunk"], None),
        ("trees", ["Sentence", "Token", "POS", "Constituent"], None),
    ],
)
def test_validation_names_the_gold_the_chunks_come_from(
    tmp_path: Path, chunks_from: str, types: list[str], missing: str | None
) -> None:
    """--validate-only passed chunks_from: chunks with a reader writing no Chunk (the
    run failed at its first document): the chunk layer's needs follow chunks_from."""
    from casflow.pipeline.training import load_training_workflow
    from casflow.pipeline.validation import WorkflowValidationError

    for split in ("train", "dev"):
        (tmp_path / split).mkdir()
    workflow = training_workflow(
        tmp_path,
        tmp_path / "out",
        types=types,
        layers=["chunks"],
        trainer="train.opennlp.v1",
        config={"chunks_from": chunks_from},
        seed=0,
    )
    try:
        load_training_workflow(workflow)
        problems = ""
    except WorkflowValidationError as error:
        problems = str(error)
    if missing:
        assert f"layer 'chunks' needs {missing} in view 'gold'" in problems
    else:
        assert "layer 'chunks' needs" not in problems
