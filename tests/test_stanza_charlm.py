"""``train.stanza.ner.v1`` with character language models: a tiny forward and backward
pair trained first on unlabelled text (the training documents' tokens) through
``casflow train``, resumed after an interruption to the same files, carried in the
model folder so the folder runs from anywhere, and a pair given as files."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import cassis
import pytest

from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.pipeline.training import TrainingFailed
from casflow.typesystem import ANATOMY_MENTION
from tests.helpers.ner_corpus import SENTENCES, gold_cas, ner_workflow
from tests.helpers.processes import finish, start_casflow, wait_until_all_logged
from tests.helpers.training import assert_same_weights, train, train_until

#: a pair small enough to train in seconds on the tiny corpus' text
TINY_CHARLM = {
    "epochs": 3,
    "hidden_dim": 16,
    "emb_dim": 8,
    "batch_size": 4,
    "bptt_size": 20,
    "cutoff": 0,
    "dev_share": 0.2,
}


def _charlm_text(root: Path) -> list[dict[str, object]]:
    """The training documents' Token texts (one line a document) as unlabelled text."""
    return [
        {
            "component": "xmi.reader.v1",
            "view": "gold",
            "config": {"views": {"gold": ["Sentence", "Token"]}, "input": str(root / "train")},
            "units": "tokens",
        }
    ]


def _charlm_workflow(root: Path, output: Path, **charlm: object) -> Path:
    settings = {**TINY_CHARLM, "text": _charlm_text(root), **charlm}
    return ner_workflow(root, output, epochs=4, charlm={"train": settings})


@pytest.fixture(scope="session")
def charlm_training(tiny_ner_corpus: Path):
    workflow = _charlm_workflow(tiny_ner_corpus, tiny_ner_corpus / "charlm-out")
    return (workflow, *train(workflow))


def _tag(model: Path) -> list[tuple[int, int, str]]:
    """The model folder through stanza.pipeline.v1 on the first four sentences."""
    from casflow.components.stanza.ner_trainer import run_config
    from casflow.components.stanza.pipeline import StanzaConfig, StanzaPipeline

    gold = gold_cas(SENTENCES[:4]).get_view("gold")
    cas = cassis.Cas(typesystem=gold.typesystem)
    cas.sofa_string = gold.sofa_string
    context = RunContext(output_dir=model)
    for name in ("sentences.rules.v1", "tokens.fine.v1"):
        component = registry().get(name)
        config = {"use_existing_sentences": True} if name == "tokens.fine.v1" else {}
        component(component.Config(**config), context).process(cas)
    StanzaPipeline(run_config(model, StanzaConfig), context).process(cas)
    return [(m.begin, m.end, m.value) for m in cas.select(ANATOMY_MENTION)]


@pytest.mark.slow
def test_the_pair_is_trained_first_and_carried_in_the_model_folder(
    charlm_training, tmp_path: Path
) -> None:
    import torch

    workflow, result, lines = charlm_training
    model = result.model_dir
    # trained once beside the folds and the final model, which all read the pair
    charlm = result.output_dir / "charlm"
    meta = json.loads((model / "meta.json").read_text())
    assert meta["charlm"] == {"forward": "forward_charlm.pt", "backward": "backward_charlm.pt"}
    for direction in ("forward", "backward"):
        # the folder's copy is the trained model: the epoch with the lowest dev perplexity
        assert (model / f"{direction}_charlm.pt").read_bytes() == (
            charlm / f"{direction}_charlm.pt"
        ).read_bytes()
        history = json.loads((charlm / f"{direction}_history.json").read_text())
        assert [h["epoch"] for h in history] == [1, 2, 3]
        saved = torch.load(model / f"{direction}_charlm.pt", weights_only=False)["model"]
        assert saved["is_forward_lm"] is (direction == "forward")
        assert saved["args"]["char_hidden_dim"] == TINY_CHARLM["hidden_dim"]
    assert sum(re.search(r"charlm: forward epoch \d in", line) is not None for line in lines) == 3
    # progress within an epoch
    assert any(re.search(r"charlm: forward epoch 1: (25|50|75)% \(", line) for line in lines)
    # the development lines are held out of the training text
    train_lines = set((charlm / "train.txt").read_text().splitlines())
    dev_lines = (charlm / "dev.txt").read_text().splitlines()
    assert dev_lines and not train_lines & set(dev_lines)
    # the tagger was trained with the pair (Stanza keeps its paths in the model's args)
    args = torch.load(model / "model.pt", weights_only=False)["config"]
    assert args["charlm"] is True
    assert args["charlm_forward_file"] == str(charlm / "forward_charlm.pt")
    card = (result.output_dir / "MODEL_CARD.md").read_text()
    assert "character language models (hidden size 16, 3 epochs)" in card
    assert "The backward character language model" in card
    # the folder runs from anywhere: moved, with the training's files gone, it tags as
    # before (its meta.json names the pair it carries)
    found = _tag(model)
    assert found  # four epochs tag some of the names it learned
    moved = tmp_path / "moved"
    shutil.copytree(model, moved)
    shutil.rmtree(charlm)
    assert _tag(moved) == found
    # and the dev scores of the folder are those the training loop measured
    history = json.loads((result.output_dir / "final" / "checkpoints" / "history.json").read_text())
    kept = max(history, key=lambda h: h["f"])
    scores = result.report["final"]["dev_scores"]
    assert {k: scores[k] for k in ("p", "r", "f")} == {k: kept[k] for k in ("p", "r", "f")}


@pytest.mark.slow
def test_running_the_folder_without_its_pair_is_refused_before_any_document(
    charlm_training,
) -> None:
    from casflow.components.stanza.pipeline import StanzaConfig, StanzaPipeline

    model = charlm_training[1].model_dir
    config = StanzaConfig.model_validate(
        {
            "processors": {"ner": "default"},
            "model_files": {
                "ner": {"model": str(model / "model.pt"), "pretrain": str(model / "pretrain.pt")}
            },
            "use_existing_sentences": True,
            "use_existing_tokens": True,
            "ner_preset": "casflow_anatem",
        }
    )
    problems = StanzaPipeline.check_config(config, RunContext(output_dir=model))
    assert any(
        "model_files.ner.forward_charlm:" in p and f"give {model / 'forward_charlm.pt'}" in p
        for p in problems
    )
    assert any("model_files.ner.backward_charlm:" in p for p in problems)
    # given swapped, they would load and tag without an error, only worse
    files = config.model_files["ner"].model_copy(
        update={
            "forward_charlm": str(model / "backward_charlm.pt"),
            "backward_charlm": str(model / "forward_charlm.pt"),
        }
    )
    swapped = config.model_copy(update={"model_files": {"ner": files}})
    problems = StanzaPipeline.check_config(swapped, RunContext(output_dir=model))
    assert any(
        "model_files.ner.forward_charlm:" in p
        and "is a backward character language model: swap forward and backward" in p
        for p in problems
    ), problems
    assert any("model_files.ner.backward_charlm: " in p and "swap" in p for p in problems)


@pytest.mark.slow
def test_an_interrupted_pair_resumes_to_the_same_files(
    tiny_ner_corpus: Path, tmp_path: Path
) -> None:
    workflow = _charlm_workflow(tiny_ner_corpus, tmp_path / "whole")
    whole, _ = train(workflow)
    interrupted = _charlm_workflow(tiny_ner_corpus, tmp_path / "interrupted")
    train_until(interrupted, "charlm: backward epoch 1 in")
    charlm = tmp_path / "interrupted" / "charlm"
    assert (charlm / "backward_checkpoint.pt").exists()
    resumed, lines = train(interrupted)
    assert any("charlm: the forward model is already trained" in line for line in lines)
    assert any("charlm: backward continues after epoch 1" in line for line in lines)
    for name in ("forward_charlm.pt", "backward_charlm.pt"):
        assert_same_weights(whole.model_dir / name, resumed.model_dir / name, "model")
    assert_same_weights(whole.model_dir / "model.pt", resumed.model_dir / "model.pt", "model")
    # more epochs continue the finished pair instead of starting again
    more = _charlm_workflow(tiny_ner_corpus, tmp_path / "interrupted", epochs=4)
    _, lines = train(more)
    assert any("charlm: forward continues after epoch 3" in line for line in lines)
    assert sum(re.search(r"charlm: forward epoch \d in", line) is not None for line in lines) == 1


@pytest.mark.slow
def test_two_processes_train_the_same_pair(
    charlm_training, tiny_ner_corpus: Path, tmp_path: Path
) -> None:
    workflow = _charlm_workflow(tiny_ner_corpus, tmp_path / "jobs2", jobs=2)
    result, lines = train(workflow)
    # the second process's lines reach the log
    assert sum(re.search(r"charlm: backward epoch \d in", line) is not None for line in lines) == 3
    for name in ("forward_charlm.pt", "backward_charlm.pt"):
        assert_same_weights(charlm_training[1].model_dir / name, result.model_dir / name, "model")
    # jobs is not part of what the model is: the tagger is the same, and the finished
    # pair is reused under jobs 1
    assert_same_weights(
        charlm_training[1].model_dir / "model.pt", result.model_dir / "model.pt", "model"
    )
    _, again = train(_charlm_workflow(tiny_ner_corpus, tmp_path / "jobs2"))
    assert any("reused" in line for line in again)


@pytest.mark.slow
def test_a_failing_second_process_is_an_error_naming_it(
    tiny_ner_corpus: Path, tmp_path: Path
) -> None:
    output = tmp_path / "broken"
    train(_charlm_workflow(tiny_ner_corpus, output, epochs=1))
    # the backward checkpoint damaged; more epochs make the second process load it
    (output / "charlm" / "backward_checkpoint.pt").write_bytes(b"not a checkpoint")
    # an unexpected error of the trainer: casflow train names the step it stopped at
    with pytest.raises(TrainingFailed, match="the backward model's process failed: .+") as info:
        train(_charlm_workflow(tiny_ner_corpus, output, epochs=2, jobs=2))
    assert isinstance(info.value.error, RuntimeError) and info.value.step == "final model"
    # the forward model went on meanwhile, and its epoch is kept
    history = json.loads((output / "charlm" / "forward_history.json").read_text())
    assert [h["epoch"] for h in history] == [1, 2]


@pytest.mark.slow
def test_a_pair_given_as_files(charlm_training, tiny_ner_corpus: Path, tmp_path: Path) -> None:
    trained = charlm_training[1].model_dir
    pair = {
        "forward": str(trained / "forward_charlm.pt"),
        "backward": str(trained / "backward_charlm.pt"),
    }
    workflow = ner_workflow(tiny_ner_corpus, tmp_path / "given", epochs=4, charlm=pair)
    result, lines = train(workflow)
    assert not any("charlm:" in line for line in lines)
    for direction in ("forward", "backward"):
        name = f"{direction}_charlm.pt"
        assert (result.model_dir / name).read_bytes() == (trained / name).read_bytes()
    # the same pair, seed and data: the same tagger as the pair trained first
    assert_same_weights(trained / "model.pt", result.model_dir / "model.pt", "model")
    assert (
        "character language models " + pair["forward"]
        in (result.output_dir / "MODEL_CARD.md").read_text()
    )
    # a swapped pair, or a file that is not a character language model, is refused
    # before any document
    trainer = registry().get("train.stanza.ner.v1")
    context = RunContext(output_dir=tmp_path)
    swapped = trainer.Config.model_validate(
        {"charlm": {"forward": pair["backward"], "backward": pair["forward"]}}
    )
    problems = trainer.check_config(swapped, context)
    assert any(
        "charlm.forward:" in p and "is a backward character language model: swap" in p
        for p in problems
    ), problems
    assert any("charlm.backward:" in p and "is a forward" in p for p in problems)
    (tmp_path / "notes.pt").write_text("not a model", encoding="utf-8")
    other = trainer.Config.model_validate(
        {"charlm": {"forward": str(trained / "model.pt"), "backward": str(tmp_path / "notes.pt")}}
    )
    problems = trainer.check_config(other, context)
    assert any(
        "charlm.forward:" in p and "is not a Stanza character language model" in p for p in problems
    ), problems
    assert any(
        "charlm.backward:" in p and "is not a Stanza character language model" in p
        for p in problems
    ), problems


def test_charlm_settings_are_checked_before_any_document(tmp_path: Path) -> None:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    trainer = registry().get("train.stanza.ner.v1")
    context = RunContext(output_dir=tmp_path)
    missing = trainer.Config.model_validate(
        {"charlm": {"forward": str(tmp_path / "f.pt"), "backward": "b.pt"}}
    )
    problems = trainer.check_config(missing, context)
    assert any(f"charlm.forward: no file at {tmp_path / 'f.pt'}" in p for p in problems)
    assert any("charlm.backward: no file at b.pt" in p for p in problems)
    unreadable = trainer.Config.model_validate(
        {"charlm": {"train": {"text": [{"component": "no.such.reader.v1"}]}}}
    )
    problems = trainer.check_config(unreadable, context)
    assert any("charlm.train.text: no.such.reader.v1" in p for p in problems)
    with pytest.raises(ValueError, match="hiden_dim"):
        trainer.Config.model_validate({"charlm": {"train": {"hiden_dim": 64}}})
    # one path is not a pair: the pair's member says what it wants
    with pytest.raises(ValueError, match="valid dictionary or instance of CharlmFiles"):
        trainer.Config.model_validate({"charlm": "forward.pt"})
    with pytest.raises(ValueError, match="dev_share"):
        trainer.Config.model_validate({"charlm": {"train": {"dev_share": 0.9}}})


def test_too_little_text_is_an_error_saying_so(tmp_path: Path) -> None:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    from casflow.components.stanza.charlm import TrainedCharlm, charlm_pair

    (tmp_path / "ontologies" / "UBERON" / "UBERON").mkdir(parents=True)
    (tmp_path / "ontologies" / "UBERON" / "UBERON" / "UBERON.obo").write_text(
        'format-version: 1.2\n\n[Term]\nid: UBERON:1\nname: heart\ndef: "An organ." []\n',
        encoding="utf-8",
    )
    charlm = TrainedCharlm.model_validate(
        {
            "train": {
                "text": [{"definitions": ["UBERON"]}],
                "ontologies": str(tmp_path / "ontologies"),
            }
        }
    )
    with pytest.raises(ValueError, match="1 non-empty line"):
        charlm_pair(charlm, RunContext(output_dir=tmp_path), 1, print)


def test_the_character_vocabulary_follows_the_cutoff(tmp_path: Path) -> None:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    import torch

    from casflow.components.stanza.charlm import CharlmSettings, _vocab_file

    text = tmp_path / "train.txt"
    text.write_text("aaaa bbb cc d\n", encoding="utf-8")

    def characters(cutoff: int) -> int:
        vocab = _vocab_file(CharlmSettings(cutoff=cutoff), text, tmp_path)
        return len(torch.load(vocab, weights_only=False)["_id2unit"])

    every = characters(0)
    # a character seen fewer times than the cutoff is unknown: "c", "d", the line break
    assert characters(3) == every - 3
    # and back: the file written for cutoff 3 is not kept for another cutoff
    assert characters(0) == every


@pytest.mark.slow
def test_fold_runs_started_together_train_the_pair_once(
    tiny_ner_corpus: Path, tmp_path: Path
) -> None:
    """``--fold 1`` and ``--fold 2`` at the same time over one output folder (as the
    README suggests, one process per core): one trains the pair, the other waits for
    it, then both folds read it."""
    import os

    import torch

    from casflow.pipeline.locks import building

    output = tmp_path / "folds"
    workflow = _charlm_workflow(tiny_ner_corpus, output)
    logs = [tmp_path / f"fold{k}.log" for k in (1, 2)]
    # the test holds the pair's lock until both runs wait for it, so they start together
    with building(output / "charlm", print):
        runs = [
            start_casflow(["train", str(workflow), "--folds", "2", "--fold", str(k)], log)
            for k, log in zip((1, 2), logs, strict=True)
        ]
        wait_until_all_logged(runs, logs, "charlm: waiting for", timeout=240)
    texts = finish(runs, logs)
    assert all(f"charlm: waiting for pid {os.getpid()}" in text for text in texts)
    # trained once: three forward epochs in all, and the other run found them done
    assert sum(len(re.findall(r"charlm: forward epoch \d in", text)) for text in texts) == 3
    assert sum("the forward model is already trained" in text for text in texts) == 1
    for k in (1, 2):
        model = output / "folds" / f"fold-{k}" / "model" / "model.pt"
        args = torch.load(model, weights_only=False)["config"]
        assert args["charlm_forward_file"] == str(output / "charlm" / "forward_charlm.pt")
