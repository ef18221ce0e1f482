"""``train.stanza.ner.v1``: a tiny Stanza NER tagger trained through ``casflow train``
from hand-written gold anatomy mentions (once per session; the tests that use it are
``slow``), resumed after an interruption, and loaded into ``stanza.pipeline.v1``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cassis
import pytest

from casflow.components.crfsuite.tokenize import tokenize
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import ANATOMY_MENTION, SENTENCE, TOKEN, load_typesystem
from tests.helpers.ner_corpus import (
    SENTENCES,
    TINY,
    gold_cas,
    ner_vectors,
    ner_workflow,
    unmarked_gold_cas,
)
from tests.helpers.training import (
    assert_same_weights,
    train,
    train_until,
    training_workflow,
    write_gold_splits,
)


@pytest.fixture(scope="session")
def tiny_ner_training(tiny_ner_corpus: Path):
    workflow = ner_workflow(tiny_ner_corpus, tiny_ner_corpus / "out")
    return (workflow, *train(workflow))


@pytest.mark.slow
def test_training_writes_data_model_folder_card_and_is_reused(tiny_ner_training) -> None:
    workflow, result, lines = tiny_ner_training
    model = result.model_dir
    assert {p.name for p in model.iterdir()} >= {"model.pt", "pretrain.pt", "meta.json"}
    meta = json.loads((model / "meta.json").read_text())
    assert meta["ner_preset"] == "casflow_anatem" and meta["tokens"] == "tokens.fine.v1"
    assert "Cell" in meta["labels"]
    # Stanza's data: BIOES tags on casflow's fine tokens ("CD4+ T cells": CD 4 + T cells)
    data = json.loads((result.output_dir / "final" / "data" / "train.json").read_text())
    first = data[1]
    assert [(t["text"], t["ner"]) for t in first[:6]] == [
        ("CD", "B-Cell"),
        ("4", "I-Cell"),
        ("+", "I-Cell"),
        ("T", "I-Cell"),
        ("cells", "E-Cell"),
        ("were", "O"),
    ]
    assert (
        sum(re.search(r"epoch \d+ finished", line) is not None for line in lines) == TINY["epochs"]
    )
    scores = result.report["final"]["dev_scores"]
    # the dev scores of the model folder through stanza.pipeline.v1 are those the loop
    # measured for the epoch it kept (the same sentences, tokens and decoding)
    history = json.loads((result.output_dir / "final" / "checkpoints" / "history.json").read_text())
    kept = max(history, key=lambda h: h["f"])
    assert meta["best_epoch"] == kept["epoch"]
    assert {k: scores[k] for k in ("p", "r", "f")} == {k: kept[k] for k in ("p", "r", "f")}
    assert scores["f"] > 50  # the tiny model learns its few names
    card = (result.output_dir / "MODEL_CARD.md").read_text()
    assert "Development curve" in card and "| 12 |" in card
    _, again = train(workflow)
    assert any("reused" in line for line in again)


@pytest.mark.slow
def test_interrupted_and_resumed_training_ends_with_the_same_model(
    tiny_ner_corpus: Path, tiny_ner_training, tmp_path: Path
) -> None:
    workflow = ner_workflow(tiny_ner_corpus, tmp_path / "interrupted")
    train_until(workflow, "epoch 2 finished")
    assert (tmp_path / "interrupted" / "final" / "checkpoints" / "checkpoint.pt").exists()
    resumed, lines = train(workflow)
    assert any("continuing from the checkpoint" in line for line in lines)
    assert re.findall(r"epoch (\d+) finished", "\n".join(lines)) == [str(k) for k in range(3, 13)]
    assert_same_weights(
        tiny_ner_training[1].model_dir / "model.pt", resumed.model_dir / "model.pt", "model"
    )
    assert (
        resumed.report["final"]["dev_scores"] == tiny_ner_training[1].report["final"]["dev_scores"]
    )


@pytest.mark.slow
def test_fewer_epochs_over_a_longer_run_train_afresh_more_continue(
    tiny_ner_corpus: Path, tmp_path: Path
) -> None:
    """A rerun asking for fewer epochs than the checkpoint has ends with a fresh run's
    model (not the longer run's best); asking for more again continues the checkpoint."""
    fresh, _ = train(ner_workflow(tiny_ner_corpus, tmp_path / "fresh", epochs=2))
    train(ner_workflow(tiny_ner_corpus, tmp_path / "longer", epochs=3))
    shorter, lines = train(ner_workflow(tiny_ner_corpus, tmp_path / "longer", epochs=2))
    assert any("more than epochs (2): training from scratch" in line for line in lines)
    assert re.findall(r"epoch (\d+) finished", "\n".join(lines)) == ["1", "2"]
    assert_same_weights(fresh.model_dir / "model.pt", shorter.model_dir / "model.pt", "model")
    assert shorter.report["final"]["dev_scores"] == fresh.report["final"]["dev_scores"]
    _, lines = train(ner_workflow(tiny_ner_corpus, tmp_path / "longer", epochs=3))
    assert any("continuing from the checkpoint" in line for line in lines)
    assert re.findall(r"epoch (\d+) finished", "\n".join(lines)) == ["3"]


@pytest.mark.slow
def test_stanza_pipeline_tags_the_views_tokens_with_exact_offsets(tiny_ner_training) -> None:
    from casflow.components.stanza.ner_trainer import run_config
    from casflow.components.stanza.pipeline import StanzaConfig, StanzaPipeline

    model = tiny_ner_training[1].model_dir
    gold = gold_cas(SENTENCES[:4]).get_view("gold")
    text = gold.sofa_string
    cas = cassis.Cas(typesystem=gold.typesystem)
    cas.sofa_string = text
    for name in ("sentences.rules.v1", "tokens.fine.v1"):
        component = registry().get(name)
        config = {"use_existing_sentences": True} if name == "tokens.fine.v1" else {}
        component(component.Config(**config), RunContext(output_dir=model)).process(cas)
    tokens_before = [(t.begin, t.end) for t in cas.select(TOKEN)]
    StanzaPipeline(run_config(model, StanzaConfig), RunContext(output_dir=model)).process(cas)
    found = [(m.begin, m.end, m.value) for m in cas.select(ANATOMY_MENTION)]
    expected = [(m.begin, m.end, m.value) for m in gold.select(ANATOMY_MENTION)]
    # a model that saw these sentences in training tags them as annotated
    assert found == expected
    assert [(t.begin, t.end) for t in cas.select(TOKEN)] == tokens_before
    starts = {b for b, _ in tokens_before}
    ends = {e for _, e in tokens_before}
    for m in cas.select(ANATOMY_MENTION):
        assert m.begin in starts and m.end in ends
        assert m.get_covered_text() == text[m.begin : m.end]


def _word2vec_text(root: Path) -> dict[str, object]:
    """vectors: {word2vec: ...} over the training documents' Token texts and the one
    definition of a hand-written UBERON file."""
    ontologies = root / "ontologies"
    (ontologies / "UBERON" / "UBERON").mkdir(parents=True, exist_ok=True)
    (ontologies / "UBERON" / "UBERON" / "UBERON.obo").write_text(
        "format-version: 1.2\n\n[Term]\nid: UBERON:0000948\nname: heart\n"
        'def: "A hollow, muscular organ." []\n',
        encoding="utf-8",
    )
    gold = {
        "component": "xmi.reader.v1",
        "view": "gold",
        "config": {"views": {"gold": ["Sentence", "Token"]}, "input": str(root / "train")},
        "units": "tokens",
    }
    return {
        "word2vec": {
            "text": [gold, {"definitions": ["UBERON"]}],
            "ontologies": str(ontologies),
            "dims": 8,
            "min_count": 1,
            "epochs": 2,
        }
    }


@pytest.mark.slow
def test_word2vec_vectors_trained_first_on_unlabelled_fine_tokens(
    tiny_ner_corpus: Path, tmp_path: Path
) -> None:
    vectors = _word2vec_text(tiny_ner_corpus)
    workflow = ner_workflow(tiny_ner_corpus, tmp_path / "w2v", vectors=vectors, epochs=2)
    result, lines = train(workflow)
    data = result.output_dir / "final" / "data"
    header, *rows = (data / "word2vec.txt").read_text(encoding="utf-8").splitlines()
    words = {row.split(" ")[0] for row in rows}
    assert header == f"{len(rows)} 8"
    # casflow's fine tokens, as the tagger reads them ("CD4+" is CD, 4, +), and the
    # definition's words
    assert {"CD", "4", "+", "hepatocytes", "muscular"} <= words and "CD4+" not in words
    assert any("word2vec on" in line for line in lines)
    # Stanza's pretrain is made from them and shipped with the model
    assert (data / "vectors.txt").read_bytes() == (data / "word2vec.txt").read_bytes()
    assert (result.model_dir / "pretrain.pt").exists()
    assert "word2vec vectors trained first" in (result.output_dir / "MODEL_CARD.md").read_text()
    assert result.report["final"]["dev_scores"]["f"] >= 0


def test_word2vec_file_killed_while_rewritten_is_not_trusted(
    tiny_ner_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors of other settings replace word2vec.txt: a run killed half-way through
    must not leave the old settings' marker beside a half-written file."""
    pytest.importorskip("gensim", reason="gensim is the vectors extra")
    from casflow.components.stanza import shared_training
    from casflow.components.stanza.ner_trainer import fine_words
    from casflow.components.stanza.shared_training import TrainedVectors, word2vec_file

    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    first = TrainedVectors.model_validate(_word2vec_text(tiny_ner_corpus))
    other = first.model_copy(update={"word2vec": first.word2vec.model_copy(update={"dims": 6})})
    target = word2vec_file(first, context, fine_words, tmp_path, lambda line: None)
    written = target.read_bytes()
    write = shared_training.write_word2vec_text

    def killed(words: object, table: object, path: object) -> None:
        Path(str(path)).write_text("3 6\nCD 0.1", encoding="utf-8")  # half a file
        raise KeyboardInterrupt

    monkeypatch.setattr(shared_training, "write_word2vec_text", killed)
    with pytest.raises(KeyboardInterrupt):
        word2vec_file(other, context, fine_words, tmp_path, lambda line: None)
    monkeypatch.setattr(shared_training, "write_word2vec_text", write)
    again = word2vec_file(first, context, fine_words, tmp_path, lambda line: None)
    assert again.read_bytes() == written


def test_word2vec_settings_are_checked_before_any_document(tmp_path: Path) -> None:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    trainer = registry().get("train.stanza.ner.v1")
    config = trainer.Config.model_validate(
        {
            "vectors": {
                "word2vec": {
                    "text": [
                        {"component": "no.such.reader.v1"},
                        {"definitions": ["UBERON"]},
                    ],
                    "ontologies": str(tmp_path),
                }
            }
        }
    )
    problems = trainer.check_config(config, RunContext(output_dir=tmp_path))
    assert any("word2vec text: no.such.reader.v1" in p for p in problems)
    assert any(f"UBERON ontology needs {tmp_path}" in p for p in problems)
    with pytest.raises(ValueError, match="dimz"):
        trainer.Config.model_validate({"vectors": {"word2vec": {"dimz": 8}}})


def test_config_errors_before_any_document(tmp_path: Path) -> None:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    trainer = registry().get("train.stanza.ner.v1")
    problems = trainer.check_config(
        trainer.Config(
            vectors=str(tmp_path / "none.txt"),
            stanza_options={"lr": 0.5, "no_such_option": 1, "char_emb_dim": 8, "charlm": True},
        ),
        RunContext(output_dir=Path(".")),
    )
    assert any("stanza_options.lr: set by casflow" in p for p in problems)
    # the trainer's own charlm key sets them (and the folder carries the files)
    assert any("stanza_options.charlm: set by casflow" in p for p in problems)
    assert any("stanza_options.no_such_option: not an option" in p for p in problems)
    assert any("vectors: nothing at" in p for p in problems)
    assert not any("char_emb_dim" in p for p in problems)
    with pytest.raises(ValueError, match="epoch"):
        trainer.Config(epochs=0)
    with pytest.raises(ValueError, match="patinece"):
        trainer.Config.model_validate({"patinece": 3})
    assert set(trainer.layers) == {"genes", "anatomy"}
    (problem,) = trainer.check_layers(trainer.Config(), ["genes", "anatomy"])
    assert "one mention layer" in problem


def test_training_documents_without_sentences_or_mentions_are_refused(tmp_path: Path) -> None:
    """Nothing to learn is an error naming what is missing, before Stanza is started: not
    a model that tags every word O saved as if it had learnt, nor Stanza's own error on
    an empty training file."""
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    from casflow.pipeline.training import TrainingDataError

    for name, document, said in [
        # casflow train refuses both while reading the gold (before the trainer sees it)
        ("empty", lambda _: gold_cas([]), "hold no text"),
        ("unmarked", unmarked_gold_cas, r"no AnatomyMention \(the anatomy layer\)"),
    ]:
        root = tmp_path / name
        root.mkdir()
        write_gold_splits(root, {"train": range(2)}, document)
        write_gold_splits(root, {"dev": [0]}, lambda _: gold_cas(SENTENCES[2:6]))
        ner_vectors(root / "vectors.txt")
        with pytest.raises(TrainingDataError, match=said) as raised:
            train(ner_workflow(root, root / "out", epochs=1))
        assert "2 training documents" in str(raised.value)
        assert not (root / "out" / "final" / "model").exists()


@pytest.mark.parametrize(
    ("config", "line", "expected"),
    [
        ("epoch: 3", 8, "model -> config -> epoch: unknown key 'epoch'. Did you mean 'epochs'?"),
        # a union of a model and a string: pydantic names the model in the error's place
        (
            "vectors:\n      word2vec: {dimz: 8}",
            9,
            "model -> config -> vectors -> word2vec -> dimz: unknown key 'dimz'. Did you mean "
            "'dims'? Known keys: ",
        ),
        # a union of two models told apart by a key: only the chosen one is reported
        (
            "charlm:\n      train:\n        hiden_dim: 64",
            10,
            "model -> config -> charlm -> train -> hiden_dim: unknown key 'hiden_dim'. Did you "
            "mean 'hidden_dim'? Known keys: anneal, batch_size, bptt_size, cutoff, dev_share, "
            "emb_dim, epochs, hidden_dim, jobs, lr, ontologies, seed, text.",
        ),
    ],
)
def test_unknown_keys_are_named_at_their_line_inside_unions_too(
    tiny_ner_corpus_dirs: Path, config: str, line: int, expected: str
) -> None:
    from casflow.pipeline.training import load_training_workflow

    workflow = tiny_ner_corpus_dirs / "bad.yaml"
    workflow.write_text(
        f"""\
gold:
  reader: {{component: xmi.reader.v1, view: gold, config: {{views: {{gold: [Sentence, Token, AnatomyMention]}}}}}}
  train: {{input: {tiny_ner_corpus_dirs}}}
layers: [anatomy]
model:
  component: train.stanza.ner.v1
  config:
    {config}
output: {tiny_ner_corpus_dirs.parent / (tiny_ner_corpus_dirs.name + "-out")}
""",
        encoding="utf-8",
    )
    with pytest.raises(Exception) as error:
        load_training_workflow(workflow)
    message = str(error.value)
    # (the output outside the input folder: inside it would be a second problem)
    assert message.startswith(f"1 problem in {workflow}:"), message
    assert f"bad.yaml:{line}: {expected}" in message


@pytest.fixture
def tiny_ner_corpus_dirs(tmp_path: Path) -> Path:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    (tmp_path / "a.xmi").write_text(gold_cas(SENTENCES[:2]).to_xmi(), encoding="utf-8")
    return tmp_path


def test_fine_tokens_split_where_mention_boundaries_fall() -> None:
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = "IL-2-induced CD4+ T cells.\n\n\U0001d6c2-actin"
    component = registry().get("tokens.fine.v1")
    component(component.Config(), RunContext(output_dir=Path("."))).process(cas)
    tokens = [t.get_covered_text() for t in cas.select(TOKEN)]
    assert tokens == ["IL", "-", "2", "-", "induced", "CD", "4", "+", "T", "cells", "."] + [
        "\U0001d6c2",
        "-",
        "actin",
    ]
    assert [(t.begin, t.end) for t in cas.select(TOKEN)] == [
        (b, e) for b, e in tokenize(cas.sofa_string)
    ]


@pytest.mark.slow
def test_the_anatem_eval_workflow_runs_a_trained_model(
    tiny_ner_training, corpora_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """workflows/anatem-stanza-eval.yaml as written, on two AnatEM devel documents with
    the tiny model in place of the AnatEM one: the Stanza view's mentions are scored."""
    import yaml

    from casflow.pipeline.cli import main

    repo = Path(__file__).resolve().parent.parent
    data = yaml.safe_load((repo / "workflows" / "anatem-stanza-eval.yaml").read_text())
    data["reader"]["config"]["limit"] = 2
    model = tiny_ner_training[1].model_dir
    (stanza,) = [c for c in data["components"] if c["component"] == "stanza.pipeline.v1"]
    stanza["config"]["model_files"]["ner"] = {
        "model": str(model / "model.pt"),
        "pretrain": str(model / "pretrain.pt"),
    }
    data["evaluators"][0]["config"]["significance"]["iterations"] = 10
    workflow = tmp_path / "anatem-stanza-eval.yaml"
    workflow.write_text(yaml.safe_dump(data), encoding="utf-8")
    monkeypatch.setenv("CASFLOW_CORPORA", str(corpora_dir))
    out = tmp_path / "out"
    assert main(["run", str(workflow), "--output", str(out), "--quiet"]) == 0
    systems = json.loads((out / "evaluation.json").read_text())["anatomy"]["systems"]
    assert set(systems) == {"shipped", "stanza"}
    stanza_counts = systems["stanza"]["counts"]
    # the tiny model tags words of these documents (wrongly: it knows eight sentences)
    assert systems["stanza"]["documents"] == 2
    assert stanza_counts["strict/micro/tp"] + stanza_counts["strict/micro/fp"] > 0
    assert stanza_counts["strict/micro/fn"] == systems["shipped"]["counts"]["strict/micro/fn"] + (
        systems["shipped"]["counts"]["strict/micro/tp"] - stanza_counts["strict/micro/tp"]
    )


GENE_SENTENCES = [
    ("Expression of BRCA2 rose.", [("BRCA2", "x")]),
    ("p53 binds the IL-2 promoter.", [("p53", "x"), ("IL-2 promoter", "x")]),
    ("Cells lacking Sox2 died.", [("Sox2", "x")]),
    ("No change was seen.", []),
]


@pytest.mark.slow
def test_genes_under_one_label_scored_on_gold_sentences(tmp_path: Path) -> None:
    """Layer genes (BC2GM-like: each mention GENE, gold sentences when scoring): the
    model folder maps its label to GeneMention through stanza.pipeline.v1."""
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    from casflow.components.stanza.ner_trainer import run_config
    from casflow.components.stanza.pipeline import StanzaConfig, StanzaPipeline
    from casflow.typesystem import GENE_MENTION

    def rotated(k: int) -> cassis.Cas:
        return gold_cas(GENE_SENTENCES[k:] + GENE_SENTENCES[:k], GENE_MENTION)

    write_gold_splits(tmp_path, {"train": range(4)}, rotated)
    dev = gold_cas(GENE_SENTENCES, GENE_MENTION)
    write_gold_splits(tmp_path, {"dev": [0]}, lambda _: dev)
    config = dict(TINY, epochs=10, vectors=str(ner_vectors(tmp_path / "v.txt")))
    config.update(label="GENE", eval_sentences="gold")
    workflow = training_workflow(
        tmp_path,
        tmp_path / "out",
        types=["Sentence", "Token", "GeneMention"],
        layers=["genes"],
        trainer="train.stanza.ner.v1",
        config=config,
        seed=1,
    )
    result, _ = train(workflow)
    meta = json.loads((result.model_dir / "meta.json").read_text())
    assert meta["labels"] == ["GENE"] and meta["ner_preset"] == "casflow_gene"
    assert set(result.report["final"]["dev_scores"]) == {"p", "r", "f"}  # one class
    view = dev.get_view("gold")
    cas = cassis.Cas(typesystem=view.typesystem)
    cas.sofa_string = view.sofa_string
    S = cas.typesystem.get_type(SENTENCE)
    cas.add_all([S(begin=s.begin, end=s.end) for s in view.select(SENTENCE)])
    component = registry().get("tokens.fine.v1")
    context = RunContext(output_dir=tmp_path)
    component(component.Config(use_existing_sentences=True), context).process(cas)
    StanzaPipeline(run_config(result.model_dir, StanzaConfig), context).process(cas)
    found = list(cas.select(GENE_MENTION))
    assert found and {m.value for m in found} == {"GENE"}
    tokens = [(t.begin, t.end) for t in cas.select(TOKEN)]
    for mention in found:
        assert mention.begin in {b for b, _ in tokens} and mention.end in {e for _, e in tokens}
