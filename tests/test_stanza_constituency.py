"""Constituency parsing as a layer: ``train.stanza.constituency.v1`` trains a tiny
Stanza parser through ``casflow train`` from hand-written gold trees (once per session;
the tests that use it are ``slow``), ``parse.constituency.v1`` runs it over a view's
sentences, tokens and tags."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cassis
import pytest

from casflow.components.evaluators.adapters import constituent_trees
from casflow.components.formats.penn.alignment import align_trees
from casflow.components.formats.penn.parse import format_tree, parse_tree
from casflow.components.stanza.constituency import parser_word, treebank_line
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import CONSTITUENT, CONSTITUENT_ROOT, PENN_TREE, POS, SENTENCE, TOKEN
from tests.helpers.training import (
    assert_same_weights,
    train,
    train_until,
    training_workflow,
    write_gold_splits,
    write_vectors,
)
from tests.test_opennlp import SENTENCE_TEXTS, TREES, gold_document

TINY = {
    "epochs": 4,
    "hidden_size": 32,
    "stanza_options": {
        "delta_embedding_dim": 8,
        "transition_hidden_size": 8,
        "transition_embedding_dim": 4,
        "tag_embedding_dim": 4,
    },
}


def test_training_lines_drop_empty_elements_and_function_tags() -> None:
    tree = parse_tree(
        "( (S (NP-SBJ-1 (NNS Mice)) (VP (VBD were) (VP (VBN used) (NP (-NONE- *-1)) "
        "(PP (IN in) (NP (-LRB- -LRB-) (NN vivo) (-RRB- -RRB-))))) (. .)) )"
    )
    for sub in tree.subtrees():
        if sub.word in ("-LRB-", "-RRB-"):
            sub.word = {"-LRB-": "(", "-RRB-": ")"}[sub.word]  # as the CAS text has them
    assert treebank_line(tree) == (
        "(ROOT (S (NP (NNS Mice)) (VP (VBD were) (VP (VBN used) "
        "(PP (IN in) (NP (-LRB- -LRB-) (NN vivo) (-RRB- -RRB-))))) (. .)))"
    )
    assert parser_word("a b") == "a\u00a0b"
    assert parser_word('"') == '"'
    assert parser_word("{") == "-LCB-"


def _workflow(root: Path, output: Path, epochs: int = 4) -> Path:
    return training_workflow(
        root,
        output,
        types=["Sentence", "Token", "POS", "Constituent"],
        layers=["constituents"],
        trainer="train.stanza.constituency.v1",
        config=dict(TINY, epochs=epochs, vectors=str(root / "vectors.txt")),
        seed=3,
    )


@pytest.fixture(scope="session")
def tiny_treebank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    root = tmp_path_factory.mktemp("tiny_treebank")
    splits = {"train": range(len(TREES)), "dev": [3]}
    write_gold_splits(root, splits, lambda k: gold_document(k, root))
    words = {w for t in TREES for w in re.findall(r"\(\S+ ([^()\s]+)\)", t)}
    write_vectors(root / "vectors.txt", sorted(words))
    return root


@pytest.fixture(scope="session")
def tiny_constituency_training(tiny_treebank: Path):
    workflow = _workflow(tiny_treebank, tiny_treebank / "out")
    return (workflow, *train(workflow))


@pytest.mark.slow
def test_training_report_model_folder_and_reuse(tiny_constituency_training) -> None:
    workflow, result, lines = tiny_constituency_training
    model = result.model_dir
    assert {p.name for p in model.iterdir()} >= {"model.pt", "pretrain.pt", "meta.json"}
    scores = result.report["final"]["dev_scores"]
    assert 0 <= scores["parseval_f"] <= 100 and "mean_sentence_f" in scores
    assert sum("finished in" in line and "Dev score" in line for line in lines) == 4
    # the epoch whose model is kept (the best on dev), beside the epochs trained
    torch = pytest.importorskip("torch")
    kept = torch.load(model / "model.pt", map_location="cpu", weights_only=False)
    meta = json.loads((model / "meta.json").read_text(encoding="utf-8"))
    assert meta["epochs"] == 4 and meta["kept_epoch"] == kept["epochs_trained"]
    assert 1 <= meta["kept_epoch"] <= 4
    _, again = train(workflow)
    assert any("reused" in line for line in again)


@pytest.mark.slow
def test_a_damaged_model_file_is_made_again(
    tiny_treebank: Path, tiny_constituency_training, tmp_path: Path
) -> None:
    """A truncated model.pt in a finished output was reused, and scoring crashed: the
    marker records the model files, and the finished checkpoints give the model again."""
    import shutil

    from casflow.pipeline.training import load_training_workflow, run_training

    workflow, result, _ = tiny_constituency_training
    output = tmp_path / "out"
    shutil.copytree(result.output_dir, output)
    moved = load_training_workflow(workflow, {"output": str(output)})
    run_training(moved, log=lambda line: None)  # its paths are part of its settings
    model = output / "final" / "model" / "model.pt"
    model.write_bytes(model.read_bytes()[:1000])
    lines: list[str] = []
    again = run_training(moved, log=lines.append)
    assert not any("reused" in line for line in lines)
    assert again.report["final"]["dev_scores"] == result.report["final"]["dev_scores"]
    assert_same_weights(result.model_dir / "model.pt", model, "params")


@pytest.mark.slow
def test_interrupted_and_resumed_training_ends_with_the_same_model(
    tiny_treebank: Path, tiny_constituency_training, tmp_path: Path
) -> None:
    """Stopped after its second epoch's scores (its checkpoint is the first epoch's) and
    started again, training ends with the uninterrupted run's weights, bit for bit."""
    workflow = _workflow(tiny_treebank, tmp_path / "interrupted")
    train_until(workflow, "Epoch 2 finished")
    assert (tmp_path / "interrupted" / "final" / "checkpoints" / "checkpoint.pt").exists()
    resumed, lines = train(workflow)
    assert any("continuing from the checkpoint" in line for line in lines)
    epochs = re.findall(r"Epoch (\d+) finished", "\n".join(lines))
    assert epochs == ["2", "3", "4"]
    assert_same_weights(
        tiny_constituency_training[1].model_dir / "model.pt",
        resumed.model_dir / "model.pt",
        "params",
    )
    assert (
        resumed.report["final"]["dev_scores"]
        == tiny_constituency_training[1].report["final"]["dev_scores"]
    )


@pytest.mark.slow
def test_fewer_epochs_over_a_longer_run_train_afresh(tiny_treebank: Path, tmp_path: Path) -> None:
    """A rerun over the same output asking for fewer epochs than its checkpoint has ends
    with a fresh run's model, not the longer run's best epoch."""
    fresh, _ = train(_workflow(tiny_treebank, tmp_path / "fresh", epochs=2))
    train(_workflow(tiny_treebank, tmp_path / "longer", epochs=3))
    shorter, lines = train(_workflow(tiny_treebank, tmp_path / "longer", epochs=2))
    assert any("more than 2 epochs: training from scratch" in line for line in lines)
    assert re.findall(r"Epoch (\d+) finished", "\n".join(lines)) == ["1", "2"]
    assert_same_weights(fresh.model_dir / "model.pt", shorter.model_dir / "model.pt", "params")


def _tagged_view(text_rows: list[str], trees: list[str]) -> cassis.Cas:
    """Sentences, tokens and POS (from the trees' preterminals) over the texts; no tree."""
    from casflow.typesystem import load_typesystem

    ts = load_typesystem()
    text = " ".join(text_rows)
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = text
    S, T, P = (ts.get_type(n) for n in (SENTENCE, TOKEN, POS))
    position = 0
    for tree_text in trees:
        tokens = []
        for leaf in parse_tree(tree_text).preterminals():
            word = {"-LRB-": "(", "-RRB-": ")"}.get(leaf.word or "", leaf.word or "")
            begin = text.index(word, position)
            position = begin + len(word)
            pos = P(begin=begin, end=position, PosValue=leaf.label)
            token = T(begin=begin, end=position, pos=pos)
            cas.add_all([pos, token])
            tokens.append(token)
        cas.add(S(begin=tokens[0].begin, end=tokens[-1].end))
    return cas


def _parser(model: Path):  # type: ignore[no-untyped-def]
    component = registry().get("parse.constituency.v1")
    return component(component.Config(model=str(model)), RunContext(output_dir=Path(".")))


@pytest.mark.slow
def test_trees_over_the_views_tokens_with_exact_offsets(tiny_constituency_training) -> None:
    cas = _tagged_view(SENTENCE_TEXTS[:4], TREES[:4])
    tokens_before = [(t.begin, t.end) for t in cas.select(TOKEN)]
    tags_before = [t.pos.PosValue for t in cas.select(TOKEN)]
    _parser(tiny_constituency_training[1].model_dir).process(cas)
    roots = list(cas.select(CONSTITUENT_ROOT))
    assert len(roots) == 4
    trees = constituent_trees(cas)
    for ((begin, end), tree), sentence in zip(trees, cas.select(SENTENCE), strict=True):
        assert (begin, end) == (sentence.begin, sentence.end)
        leaves = [leaf.word for leaf in tree.preterminals()]
        assert leaves == [t.get_covered_text() for t in cas.select_covered(TOKEN, sentence)]
        assert format_tree(tree).startswith("( (")
    # the PennTree line is written as penn.writer.v1 writes the tree (and EVALB reads it)
    assert [p.PennTree for p in cas.select(PENN_TREE)] == [format_tree(t) for _, t in trees]
    # leaves are the view's own tokens; tags are left as they were
    assert [(t.begin, t.end) for t in cas.select(TOKEN)] == tokens_before
    assert [t.pos.PosValue for t in cas.select(TOKEN)] == tags_before
    for constituent in cas.select(CONSTITUENT):
        for child in constituent.children.elements:
            assert constituent.begin <= child.begin and child.end <= constituent.end
    again = cassis.load_cas_from_xmi(cas.to_xmi(), typesystem=cas.typesystem)
    assert len(list(again.select(CONSTITUENT))) == len(list(cas.select(CONSTITUENT)))


@pytest.mark.slow
def test_penn_tree_of_a_word_with_a_bracket_reads_back(
    tiny_constituency_training, tmp_path: Path
) -> None:
    """A tokenizer may keep "Ca(2" one token: the PennTree line escapes its bracket, so it
    parses, and penn alignment finds its words in the text again."""
    from casflow.typesystem import load_typesystem

    text = "Influx of Ca(2+) was blocked."
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = text
    position = 0
    for piece, tag in [
        ("Influx", "NN"),
        ("of", "IN"),
        ("Ca(2", "NN"),
        ("+", "SYM"),
        (")", "-RRB-"),
        ("was", "VBD"),
        ("blocked", "VBN"),
        (".", "."),
    ]:
        begin = text.index(piece, position)
        position = begin + len(piece)
        pos = ts.get_type(POS)(begin=begin, end=position, PosValue=tag)
        cas.add_all([pos, ts.get_type(TOKEN)(begin=begin, end=position, pos=pos)])
    cas.add(ts.get_type(SENTENCE)(begin=0, end=len(text)))
    _parser(tiny_constituency_training[1].model_dir).process(cas)
    (line,) = [p.PennTree for p in cas.select(PENN_TREE)]
    assert " Ca-LRB-2)" in line
    tree_file = tmp_path / "back.tree"
    tree_file.write_text(line + "\n", encoding="utf-8")
    (aligned,) = align_trees(tree_file, text, "text")
    assert aligned.token_spans == [(t.begin, t.end) for t in cas.select(TOKEN)]


@pytest.mark.slow
def test_parser_runs_on_its_configured_torch_threads(tiny_constituency_training) -> None:
    import torch

    component = registry().get("parse.constituency.v1")
    model = tiny_constituency_training[1].model_dir
    parser = component(
        component.Config(model=str(model), threads=2), RunContext(output_dir=Path("."))
    )
    seen = []
    bulk_process = parser.pipeline.nlp.bulk_process

    def recording(documents):  # type: ignore[no-untyped-def]
        seen.append(torch.get_num_threads())
        return bulk_process(documents)

    parser.pipeline.nlp.bulk_process = recording
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        parser.process(_tagged_view(SENTENCE_TEXTS[:1], TREES[:1]))
        assert seen == [2] and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_a_token_without_a_tag_is_named(tiny_constituency_training) -> None:
    cas = _tagged_view(SENTENCE_TEXTS[:1], TREES[:1])
    token = list(cas.select(TOKEN))[1]
    cas.remove(token.pos)
    token.pos = None
    with pytest.raises(ValueError, match="'protein' at .* has no POS tag"):
        _parser(tiny_constituency_training[1].model_dir).process(cas)


def test_requirements_and_model_problems_before_any_document(tmp_path: Path) -> None:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    component = registry().get("parse.constituency.v1")
    config = component.Config(model=str(tmp_path / "nothing"))
    requires, produces = component.requirements(config)
    assert set(requires) == {SENTENCE, TOKEN, POS}
    assert CONSTITUENT in produces
    (problem,) = component.check_config(config, RunContext(output_dir=Path(".")))
    assert "no model at" in problem and "train.stanza.constituency.v1" in problem
    trainer = registry().get("train.stanza.constituency.v1")
    problems = trainer.check_config(
        trainer.Config(
            stanza_options={"epochs": 3, "no_such_option": 1, "charlm_forward_file": "f.pt"}
        ),
        RunContext(output_dir=Path(".")),
    )
    assert any("stanza_options.epochs: set by casflow" in p for p in problems)
    assert any("stanza_options.no_such_option: not an option" in p for p in problems)
    # the model folder would not carry the character language model: refused before a run
    assert any(
        "charlm_forward_file: Stanza's constituency parser cannot use character language" in p
        for p in problems
    )


def test_stanza_options_are_option_strings_and_replace_casflows_defaults(tmp_path: Path) -> None:
    """Argparse settings that are no option string (check_valid_states) passed validation
    and failed on Stanza's command line after the gold was read; multistage: true was
    overruled by casflow's --no_multistage, which came later on it."""
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    from stanza.models import constituency_parser

    from casflow.pipeline.component import TrainingContext

    trainer = registry().get("train.stanza.constituency.v1")
    context = RunContext(output_dir=tmp_path)
    problems = trainer.check_config(
        trainer.Config(
            stanza_options={
                "check_valid_states": True,
                "checkpoint": False,
                "no_seed": True,
                "multistage": True,
            }
        ),
        context,
    )
    assert len(problems) == 3, problems
    assert (
        "stanza_options.check_valid_states: not an option of Stanza's constituency parser; "
        "check_valid_states is the setting that no_check_valid_states set" in problems[0]
    )
    assert "stanza_options.checkpoint: not an option" in problems[1]
    assert "stanza_options.no_seed: set by casflow" in problems[2]  # the seed's setting

    def parsed(**options: object) -> object:
        built = trainer(
            trainer.Config(stanza_options=options), TrainingContext(output_dir=tmp_path)
        )
        args = built._arguments(tmp_path / "t", tmp_path / "d", tmp_path / "p", tmp_path / "c")
        return constituency_parser.build_argparse().parse_args(args)

    assert parsed().multistage is False  # casflow's default: one stage
    assert parsed(multistage=True).multistage is True
    assert parsed(multistage=False).multistage is False
    assert parsed(no_check_valid_states=False).check_valid_states is True
    assert parsed().check_valid_states is False


def test_a_model_trained_with_word_vectors_needs_its_pretrain_before_the_run(
    tmp_path: Path,
) -> None:
    torch = pytest.importorskip("torch", reason="Stanza is the stanza extra")
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    # What Stanza saves of a constituency model that matters here: the vectors' path.
    model = tmp_path / "parser.pt"
    saved = {"params": {"config": {"wordvec_pretrain_file": "gone/pretrain.pt", "lang": "en"}}}
    torch.save(saved, model)
    (tmp_path / "pretrain.pt").write_bytes(b"vectors")
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    parser = registry().get("parse.constituency.v1")
    (problem,) = parser.check_config(parser.Config(model="parser.pt"), context)
    assert problem.startswith(f"parse.constituency.v1: pretrain: {model} was trained with word ")
    assert "(gone/pretrain.pt when it was trained)" in problem
    assert (
        parser.check_config(parser.Config(model="parser.pt", pretrain="pretrain.pt"), context) == []
    )
    # The same through stanza.pipeline.v1's model_files, and not for a model without vectors.
    pipeline = registry().get("stanza.pipeline.v1")
    config = pipeline.Config(
        processors={"constituency": "default"},
        model_files={"constituency": {"model": "parser.pt"}},
        use_existing_sentences=True,
        use_existing_tokens=True,
        use_existing_pos=True,
        layers=["constituents"],
    )
    (problem,) = pipeline.check_config(config, context)
    assert "model_files.constituency.pretrain: parser.pt was trained with word vectors" in problem
    torch.save({"params": {"config": {"wordvec_pretrain_file": None}}}, model)
    assert pipeline.check_config(config, context) == []


@pytest.mark.slow
def test_trees_load_in_apache_uima_java_with_the_same_counts(
    tiny_constituency_training, tmp_path: Path
) -> None:
    from casflow.typesystem import PENN_TREE, TREEBANK_CONSTITUENT
    from tests.helpers.uima import uima_java_counts

    cas = _tagged_view(SENTENCE_TEXTS, TREES)
    _parser(tiny_constituency_training[1].model_dir).process(cas)
    expected = uima_java_counts(cas, tmp_path)
    counts = expected["_InitialView"]
    assert counts[CONSTITUENT_ROOT] == len(TREES)
    assert counts[TREEBANK_CONSTITUENT] > len(TREES) and counts[PENN_TREE] == len(TREES)


@pytest.mark.slow
def test_shipped_parser_on_a_craft_dev_article(craft_dir: Path, tmp_path: Path) -> None:
    """casflow:craft_constituency over the gold sentences, tokens and POS of a CRAFT
    development article (copied without their trees): one tree per sentence over its
    tokens, scored by eval.constituents.v1 as EVALB scores penn.writer.v1's files, and
    the XMI loads in Apache UIMA Java with the same counts as in cassis."""
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    from casflow.components.metrics.parseval import parseval_counts, score_parseval
    from casflow.components.stanza.constituency import resolve_model
    from casflow.pipeline.counts import add_counts
    from casflow.pipeline.testing import evaluate, run_component
    from tests.helpers.craft import craft_article, craft_ids
    from tests.helpers.uima import uima_java_counts

    if not (resolve_model("casflow:craft_constituency", None) / "model.pt").is_file():
        pytest.fail("the shipped model components/models/craft_constituency is missing")
    dev = craft_ids(craft_dir, "dev")[0]
    layers = ["sentences", "tokens", "pos", "constituents"]
    cas = craft_article(craft_dir, dev, layers, tmp_path)
    run_component(
        "view.copy.v1", cas, view="system", from_view="_InitialView", types=[SENTENCE, TOKEN, POS]
    )
    system = cas.get_view("system")
    run_component("parse.constituency.v1", cas, view="system")
    sentences = list(system.select(SENTENCE))
    assert len(list(system.select(CONSTITUENT_ROOT))) >= 0.99 * len(sentences)
    # eval.constituents.v1 on the views equals PARSEVAL over the files penn.writer.v1
    # writes, read line by line as the EVALB program reads them
    (result,) = evaluate("eval.constituents.v1", cas, gold_view="_InitialView").values()
    files: dict[str, list[str]] = {}
    for name, view in (("gold", "_InitialView"), ("system", "system")):
        writer = registry().get("penn.writer.v1")
        written = writer(
            writer.Config(view=view, folder=name), RunContext(output_dir=tmp_path)
        ).write(cas, dev)
        files[name] = written[0].read_text(encoding="utf-8").splitlines()
    assert len(files["system"]) == len(list(system.select(CONSTITUENT_ROOT)))
    by_first_words = {}
    for line in files["gold"]:
        by_first_words.setdefault(_words(line), line)
    counts: dict = {}
    for line in files["system"]:
        add_counts(
            counts, parseval_counts(parse_tree(by_first_words[_words(line)]), parse_tree(line))
        )
    written_scores = score_parseval(counts)
    assert written_scores["f1"] > 0.75
    assert result.counts["parseval/matched"] == written_scores["matched"]
    assert result.counts["parseval/gold"] == written_scores["gold"]
    assert result.counts["parseval/test"] == written_scores["test"]
    counts = uima_java_counts(cas, tmp_path)["system"]
    assert counts[CONSTITUENT_ROOT] == len(list(system.select(CONSTITUENT_ROOT)))


def _words(line: str) -> tuple[str, ...]:
    return tuple(
        leaf.word or "" for leaf in parse_tree(line).preterminals() if leaf.label != "-NONE-"
    )


@pytest.mark.slow
def test_cross_validation_folds_then_the_final_model(tiny_treebank: Path, tmp_path: Path) -> None:
    # The CRAFT protocol (--folds 5 on CRAFT): each fold trains on the other training
    # documents and is scored on its own; then the final model on all of them.
    import json

    out = tmp_path / "cv"
    workflow = _workflow(tiny_treebank, out, epochs=2)
    workflow.write_text(
        workflow.read_text("utf-8") + "cross_validation: {folds: 2}\n", encoding="utf-8"
    )
    result, _ = train(workflow)
    report = json.loads((out / "training-report.json").read_text("utf-8"))
    folds = report["cross_validation"]["folds"]
    assert len(folds) == 2
    held_out = [set(f["held_out"]) for f in folds]
    assert held_out[0] and held_out[1] and not held_out[0] & held_out[1]
    for fold in folds:
        assert 0 <= fold["scores"]["parseval_f"] <= 100 and "mean_sentence_f" in fold["scores"]
    assert (result.model_dir / "model.pt").is_file()
