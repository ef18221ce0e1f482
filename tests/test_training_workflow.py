"""``casflow train``: training workflows validated with YAML lines, gold views -> training
data, cross-validation folds in document-id order, the report and the model card."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import cassis
import pytest
import spacy

from casflow.components.spacy.gold_cas import GoldViewError, gold_syntax_from_view
from casflow.pipeline.cli import main as cli_main
from casflow.pipeline.training import (
    TrainingFailed,
    contiguous_folds,
    document_id_key,
    load_training_workflow,
    run_training,
)
from casflow.pipeline.validation import WorkflowValidationError
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, POS, SENTENCE, TOKEN, load_typesystem
from tests.helpers.processes import finish, start_casflow, wait_until_all_logged

# (form, XPOS, head within the sentence (1-based, 0 = root), label)
SENTENCES = [
    [("Mice", "NNS", 2, "nsubj"), ("died", "VBD", 0, "root"), (".", ".", 2, "punct")],
    [
        ("The", "DT", 2, "det"),
        ("gene", "NN", 4, "nsubjpass"),
        ("is", "VBZ", 4, "auxpass"),
        ("expressed", "VBN", 0, "root"),
        ("in", "IN", 4, "prep"),
        ("lenses", "NNS", 5, "pobj"),
        (".", ".", 4, "punct"),
    ],
    [("Cells", "NNS", 2, "nsubj"), ("grew", "VBD", 0, "root"), ("fast", "RB", 2, "advmod")],
]


#: the UPOS (POS.coarseValue) of each XPOS in the fixtures
UPOS = {"NNS": "NOUN", "NN": "NOUN", "VBD": "VERB", "VBZ": "AUX", "VBN": "VERB", ".": "PUNCT"}
UPOS.update({"DT": "DET", "IN": "ADP", "RB": "ADV"})


def gold_cas(
    doc_sentences: list[list[tuple[str, str, int, str]]], *, pos: bool = True
) -> cassis.Cas:
    """A CAS whose view ``gold`` holds sentences, tokens, POS and dependencies."""
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    text = "\n".join(" ".join(w[0] for w in s) for s in doc_sentences)
    cas.sofa_string = text
    view = cas.create_view("gold")
    view.sofa_string = text
    T, P, S = ts.get_type(TOKEN), ts.get_type(POS), ts.get_type(SENTENCE)
    D, R = ts.get_type(DEPENDENCY), ts.get_type(DEPENDENCY_ROOT)
    position = 0
    for words in doc_sentences:
        tokens = []
        for form, tag, _, _ in words:
            begin = text.index(form, position)
            position = begin + len(form)
            token = T(begin=begin, end=position)
            if pos:
                token.pos = P(begin=begin, end=position, PosValue=tag, coarseValue=UPOS[tag])
                view.add(token.pos)
            view.add(token)
            tokens.append(token)
        view.add(S(begin=tokens[0].begin, end=tokens[-1].end))
        for token, (_, _, head, label) in zip(tokens, words, strict=True):
            if head:
                dep = D(
                    begin=token.begin,
                    end=token.end,
                    Governor=tokens[head - 1],
                    Dependent=token,
                    DependencyType=label,
                    flavor="basic",
                )
            else:
                dep = R(
                    begin=token.begin,
                    end=token.end,
                    Governor=token,
                    Dependent=token,
                    DependencyType="ROOT",
                    flavor="basic",
                )
            view.add(dep)
    return cas


def write_corpus(folder: Path, names: list[str]) -> Path:
    folder.mkdir(parents=True)
    for i, name in enumerate(names):
        chosen = [SENTENCES[(i + k) % 3] for k in range(3)]
        (folder / f"{name}.xmi").write_text(gold_cas(chosen).to_xmi(), encoding="utf-8")
    return folder


WORKFLOW = """\
name: tiny_syntax
gold:
  reader:
    component: xmi.reader.v1
    view: gold
    config:
      views: {gold: [Sentence, Token, POS, Dependency]}
  train: {input: TRAIN}
  dev: {input: DEV}
layers: [tokens, sentences, pos, dependencies]
model:
  component: train.spacy.syntax.v1
  config:
    vectors: null
    craft_tokenizer: false
    stages:
      - {max_steps: 4, learn_rate: 0.001, eval_frequency: 2}
      - {max_steps: 2, learn_rate: 0.0003, eval_frequency: 2}
    overrides:
      components.tok2vec.model.encode.width: 16
      components.tok2vec.model.encode.depth: 1
      components.tok2vec.model.embed.rows: [200, 50, 50, 50]
      components.parser.model.hidden_width: 16
cross_validation: {folds: 2}
seed: 3
output: OUT
"""


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Path]:
    return {
        "train": write_corpus(tmp_path / "train", ["doc10", "doc2", "doc1", "doc3"]),
        "dev": write_corpus(tmp_path / "dev", ["dev1"]),
        "out": tmp_path / "out",
    }


def workflow_file(tmp_path: Path, corpus: dict[str, Path], text: str = WORKFLOW) -> Path:
    path = tmp_path / "train.yaml"
    path.write_text(
        text.replace("TRAIN", str(corpus["train"]))
        .replace("DEV", str(corpus["dev"]))
        .replace("OUT", str(corpus["out"])),
        encoding="utf-8",
    )
    return path


def test_a_steps_time_is_kept_across_reruns_and_resumptions(tmp_path: Path) -> None:
    """A step's training time: recorded when it finishes and reported by a rerun that
    reuses it; a resumed step adds the part of the run that stopped; a part lost with
    a killed run is said to be missing."""
    from casflow.pipeline.training import TIMING_FILE, _step_time, _time_said

    with pytest.raises(KeyboardInterrupt), _step_time(tmp_path, "key"):
        time.sleep(0.2)
        raise KeyboardInterrupt
    stopped = json.loads((tmp_path / TIMING_FILE).read_text())
    assert stopped["seconds"] >= 0.2 and stopped["finished"] is None
    with _step_time(tmp_path, "key") as took:
        pass
    assert took["runs"] == 2 and took["complete"] and took["seconds"] >= 0.2
    assert took["started"] == stopped["started"] and took["finished"]
    assert _time_said(took) == f"{took['seconds'] / 60:.1f} min over 2 runs"
    with _step_time(tmp_path, "key") as again:
        pass
    assert again == {**took, "reused": True}
    with _step_time(tmp_path, "other settings") as fresh:
        pass
    assert fresh["runs"] == 1 and fresh["seconds"] < 0.2
    # a run killed outright leaves "running" behind without its time
    marker = json.loads((tmp_path / TIMING_FILE).read_text())
    marker.update(finished=None, running="2026-01-01T00:00:00+00:00")
    (tmp_path / TIMING_FILE).write_text(json.dumps(marker))
    with _step_time(tmp_path, "other settings") as resumed:
        pass
    assert not resumed["complete"]
    assert _time_said(resumed).startswith("resumed; this run's part: ")


def test_document_id_order_and_contiguous_folds() -> None:
    ids = ["doc10", "doc2", "doc1", "doc3", "doc11"]
    assert sorted(ids, key=document_id_key) == ["doc1", "doc2", "doc3", "doc10", "doc11"]
    assert contiguous_folds(ids, 2) == [["doc1", "doc2", "doc3"], ["doc10", "doc11"]]
    folds = contiguous_folds([str(n) for n in range(11, 0, -1)], 5)
    assert [len(f) for f in folds] == [3, 2, 2, 2, 2]
    assert sum(folds, []) == [str(n) for n in range(1, 12)]
    with pytest.raises(ValueError, match="cannot make 5 folds"):
        contiguous_folds(["a", "b"], 5)


def test_gold_view_to_training_document() -> None:
    view = gold_cas(SENTENCES[:2]).get_view("gold")
    gold = gold_syntax_from_view(view, "d1")
    assert len(gold.sentences) == 2 and len(gold.tokens) == 10
    assert gold.tags[:3] == ["NNS", "VBD", "."]
    assert gold.heads[:3] == [1, 1, 1] and gold.deprels[1] == "root"
    assert gold.heads[3:10] == [4, 6, 6, 6, 6, 7, 6]
    with pytest.raises(GoldViewError, match=r"document d2: token 'Mice' at 0 has no POS"):
        gold_syntax_from_view(gold_cas(SENTENCES[:1], pos=False).get_view("gold"), "d2")
    no_pos_needed = gold_syntax_from_view(
        gold_cas(SENTENCES[:1], pos=False).get_view("gold"), "d3", pos=False
    )
    assert no_pos_needed.tags == ["", "", ""]


def test_training_workflow_problems_are_reported_together_with_lines(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    bad = (
        WORKFLOW.replace(
            "views: {gold: [Sentence, Token, POS, Dependency]}",
            "views: {gold: [Sentence, Token, POS]}",
        )
        .replace(
            "layers: [tokens, sentences, pos, dependencies]",
            "layers: [tokens, pos, dependencies, lemmas]",
        )
        .replace("    vectors: null", "    vectors: null\n    stagez: []")
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(workflow_file(tmp_path, corpus, bad))
    errors = [issue.format("train.yaml") for issue in info.value.issues]
    assert any(
        e.startswith("train.yaml:3: gold -> reader: layer 'dependencies' needs Dependency")
        for e in errors
    ), errors
    assert any(
        e.startswith(
            "train.yaml:10: layers -> 3: train.spacy.syntax.v1 cannot learn layer 'lemmas'"
        )
        for e in errors
    ), errors
    assert any(
        e.startswith(
            "train.yaml:15: model -> config -> stagez: unknown key 'stagez'. Did you mean 'stages'?"
        )
        for e in errors
    ), errors


def test_spacy_training_without_dev_or_with_a_wrong_override_is_refused_before_reading(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    """train.spacy.syntax.v1 keeps checkpoints by their dev scores, and builds its
    pipeline from the overrides: both failed only after the gold data was read."""
    bad = (
        WORKFLOW.replace("  dev: {input: DEV}\n", "")
        .replace("encode.width: 16", "encode.widht: 16")
        .replace("parser.model.hidden_width: 16", "parser.model.hidden_width: wide")
        .replace("    overrides:\n", "    overrides:\n      training.max_stepz: 3\n")
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(workflow_file(tmp_path, corpus, bad))
    errors = [issue.format("train.yaml") for issue in info.value.issues]
    assert (
        "train.yaml:2: gold: train.spacy.syntax.v1 selects checkpoints on development "
        "documents: give gold.dev" in "\n".join(errors)
    ), errors
    said = "\n".join(errors)
    assert "model -> config: overrides: tok2vec.model.encode -> widht: unexpected argument" in said
    fixed = bad.replace("encode.widht", "encode.width")
    with pytest.raises(WorkflowValidationError, match="hidden_width: at root: 'wide'"):
        load_training_workflow(workflow_file(tmp_path, corpus, fixed))
    fixed = fixed.replace("hidden_width: wide", "hidden_width: 16")
    with pytest.raises(WorkflowValidationError, match="training.max_stepz: no such setting"):
        load_training_workflow(workflow_file(tmp_path, corpus, fixed))
    good = fixed.replace("      training.max_stepz: 3\n", "")
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(workflow_file(tmp_path, corpus, good))
    assert [issue.message for issue in info.value.issues] == [
        "train.spacy.syntax.v1 selects checkpoints on development documents: give gold.dev "
        "(the reader settings of the development documents, e.g. dev: {split: dev})"
    ]


def test_training_workflow_top_level_mistakes(tmp_path: Path, corpus: dict[str, Path]) -> None:
    bad = WORKFLOW.replace("seed: 3", "sead: 3").replace(
        "component: train.spacy.syntax.v1", "component: train.spacy.syntax.v9"
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(workflow_file(tmp_path, corpus, bad))
    errors = [issue.format("train.yaml") for issue in info.value.issues]
    assert any("sead: unknown key 'sead'. Did you mean 'seed'?" in e for e in errors), errors
    bad = WORKFLOW.replace("component: train.spacy.syntax.v1", "component: xmi.writer.v1")
    with pytest.raises(WorkflowValidationError, match="'xmi.writer.v1' is a writer, not a trainer"):
        load_training_workflow(workflow_file(tmp_path, corpus, bad))
    missing_dev = WORKFLOW.replace("  dev: {input: DEV}\n", "  dev: {input: /nonexistent/dev}\n")
    with pytest.raises(WorkflowValidationError, match="nonexistent"):
        load_training_workflow(workflow_file(tmp_path, corpus, missing_dev))


def test_a_mistake_in_the_vectors_mapping_is_reported_once_at_its_line(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    # vectors takes a mapping ({word2vec: ...}) or a string: a typo inside the mapping
    # is reported there, not also as "not a valid string"
    bad = WORKFLOW.replace("    vectors: null", "    vectors:\n      word2vec: {dimz: 8}")
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(workflow_file(tmp_path, corpus, bad))
    errors = [issue.format("train.yaml") for issue in info.value.issues]
    assert sorted(e.split(": ", 2)[1] for e in errors) == [
        "model -> config -> vectors -> word2vec -> dimz",
        "model -> config -> vectors -> word2vec -> text",  # required by this trainer
    ], errors
    assert any(
        e.startswith(
            "train.yaml:15: model -> config -> vectors -> word2vec -> dimz: unknown key 'dimz'. "
            "Did you mean 'dims'?"
        )
        for e in errors
    ), errors


@pytest.mark.slow
def test_cross_validation_then_final_model_report_card_and_resume(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    loaded = load_training_workflow(workflow_file(tmp_path, corpus))
    lines: list[str] = []
    result = run_training(loaded, log=lines.append)
    report = json.loads((corpus["out"] / "training-report.json").read_text("utf-8"))
    folds = report["cross_validation"]["folds"]
    # contiguous folds in document-id order, every training document held out once
    assert [f["held_out"] for f in folds] == [["doc1", "doc2"], ["doc3", "doc10"]]
    for fold in folds:
        assert set(fold["scores"]) == {"tokens_f", "sentences_f", "xpos", "uas", "las"}
        assert all(0.0 <= v <= 100.0 for v in fold["scores"].values())
    mean = report["cross_validation"]["mean"]["uas"]["mean"]
    assert mean == pytest.approx((folds[0]["scores"]["uas"] + folds[1]["scores"]["uas"]) / 2)
    assert report["data"]["train_documents"] == 4 and report["data"]["dev_ids"] == ["dev1"]
    dev = report["final"]["dev_scores"]
    assert dev["tokens_f"] == 100.0  # spaCy's English rules split this text as gold does
    card = (result.model_dir / "MODEL_CARD.md").read_text("utf-8")
    assert "2-fold cross-validation" in card and "| fold 1 (held out) |" in card
    assert f"| dev | {dev['tokens_f']:.2f} |" in card and "seed 3" in card
    assert "| fold 2 |" in card and "reused" not in card.split("## Training time")[1]
    assert report["status"] == "finished"
    nlp = spacy.load(result.model_dir)
    doc = nlp("Mice grew fast.")
    assert nlp.pipe_names[-2:] == ["tagger", "parser"] and all(t.tag_ for t in doc)
    # the XPOS -> UPOS map of the gold views goes with the model (spacy.pipeline.v1 reads it)
    upos = (result.model_dir / "upos.tsv").read_text("utf-8").splitlines()
    assert upos[1] == "# from the gold views of the 4 training documents (PosValue, coarseValue)"
    assert dict(line.split("\t") for line in upos[2:]) == UPOS
    assert any("stage 2/2" in line for line in lines)
    # a rerun takes the finished folds and stages from disk
    lines.clear()
    again = run_training(loaded, log=lines.append)
    assert any("fold 1/2: already done" in line for line in lines)
    assert any("stage 1: already done" in line for line in lines)
    reused = again.report["cross_validation"]["folds"]
    assert [{**f, "reused": False} for f in reused] == folds
    assert all(f["reused"] for f in reused) and not any(f["reused"] for f in folds)
    # ... and reports the time the model took, not its own clock
    final = {k: report["final"][k] for k in ("seconds", "started", "finished", "runs")}
    assert {k: again.report["final"][k] for k in final} == final and again.report["final"]["reused"]
    took = sum(f["seconds"] for f in folds) + final["seconds"]
    card = (again.model_dir / "MODEL_CARD.md").read_text("utf-8")
    assert f"{folds[0]['started']} to {final['finished']}, {took / 60:.1f} min for 2 folds" in card
    assert "found it trained and reused it" in card
    # ... and which part it took from disk, with each part's own time
    assert f"| fold 1 | {folds[0]['seconds'] / 60:.1f} min | reused (trained earlier) |" in card
    assert f"| final model | {final['seconds'] / 60:.1f} min | reused (trained earlier) |" in card
    # a changed workflow does not reuse what the old one trained
    changed = load_training_workflow(workflow_file(tmp_path, corpus), {"seed": 4})
    lines.clear()
    run_training(changed, log=lines.append)
    assert any("fold 1/2: the workflow changed since it ran" in line for line in lines)
    assert any("stage 1: settings or data changed" in line for line in lines)
    assert not any("already done" in line for line in lines)
    # the card names the command with its override, not the workflow's own seed alone
    card = (result.model_dir / "MODEL_CARD.md").read_text("utf-8")
    assert "Trained by `casflow train " in card and " --seed 4` (" in card and "seed 4." in card


def test_folds_trained_alone_are_reused_by_the_full_run(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # --fold K trains one fold (one process or machine each, sharing the output
    # folder); the run without --fold then trains only the final model.
    path = str(workflow_file(tmp_path, corpus))
    assert cli_main(["train", path, "--fold", "3"]) == 2
    assert "has folds 1 to 2" in capsys.readouterr().err
    assert cli_main(["train", path, "--folds", "0", "--fold", "1"]) == 2
    assert "has no cross-validation" in capsys.readouterr().err
    for k in (2, 1):
        assert cli_main(["train", path, "--fold", str(k)]) == 0
        assert f"fold {k}'s model in " in capsys.readouterr().out
    assert not (corpus["out"] / "final").exists()
    assert not (corpus["out"] / "training-report.json").exists()
    fold1 = json.loads((corpus["out"] / "folds" / "fold-1" / "scores.json").read_text("utf-8"))
    assert fold1["held_out"] == ["doc1", "doc2"]
    assert spacy.load(fold1["model"]).pipe_names[-2:] == ["tagger", "parser"]  # a usable member
    lines: list[str] = []
    result = run_training(load_training_workflow(path), log=lines.append)
    assert all(any(f"fold {k}/2: already done" in line for line in lines) for k in (1, 2))
    assert not any("fold 1/2: training" in line or "fold 2/2: training" in line for line in lines)
    folds = result.report["cross_validation"]["folds"]
    assert [f["held_out"] for f in folds] == [["doc1", "doc2"], ["doc3", "doc10"]]
    assert folds[0]["scores"] == fold1["scores"]
    assert (result.model_dir / "MODEL_CARD.md").exists()


def test_a_fold_another_run_is_training_is_waited_for_and_reused(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    """The same ``--fold 1`` command twice at the same time (or a full run reaching a
    fold a ``--fold`` run is training): one trains it, the other waits, then reuses it."""
    import os

    from casflow.pipeline.locks import building

    path = str(workflow_file(tmp_path, corpus))
    logs = [tmp_path / f"run{n}.log" for n in (1, 2)]
    # the test holds the fold's lock until both runs wait for it, so they start together
    with building(corpus["out"] / "folds" / "fold-1", print):
        runs = [start_casflow(["train", path, "--fold", "1"], log) for log in logs]
        wait_until_all_logged(runs, logs, "fold 1/2: waiting for", timeout=120)
    texts = finish(runs, logs)
    assert all(f"fold 1/2: waiting for pid {os.getpid()}" in text for text in texts)
    assert sum("fold 1/2: training on" in text for text in texts) == 1
    assert sum("fold 1/2: already done" in text for text in texts) == 1


@pytest.mark.slow
def test_training_is_deterministic_for_a_seed(tmp_path: Path, corpus: dict[str, Path]) -> None:
    text = WORKFLOW.replace("cross_validation: {folds: 2}", "cross_validation: {folds: 0}")
    scores = []
    for run in ("a", "b"):
        loaded = load_training_workflow(
            workflow_file(tmp_path, corpus, text.replace("output: OUT", f"output: OUT/{run}"))
        )
        result = run_training(loaded, log=lambda line: None)
        nlp = spacy.load(result.model_dir)
        doc = nlp("The gene is expressed in lenses.\nMice died.")
        scores.append(
            (result.report["final"]["dev_scores"], [(t.tag_, t.head.i, t.dep_) for t in doc])
        )
    assert scores[0] == scores[1]


def test_cli_train_validate_only_and_bad_workflow(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    good = workflow_file(tmp_path, corpus)
    assert cli_main(["train", str(good), "--validate-only"]) == 0
    assert "valid training workflow" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text(good.read_text("utf-8").replace("layers: [", "layerz: ["), encoding="utf-8")
    assert cli_main(["train", str(bad)]) == 2
    assert "unknown key 'layerz'" in capsys.readouterr().err


@pytest.mark.corpus
def test_shipped_training_workflows_validate(craft_dir: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    loaded = load_training_workflow(root / "workflows" / "train-craft-syntax.yaml")
    assert loaded.resolved["model"]["component"] == "train.spacy.syntax.v1"


def test_run_and_training_workflows_point_at_each_other(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    from casflow.pipeline.workflow import load_workflow

    training = workflow_file(tmp_path, corpus)
    with pytest.raises(WorkflowValidationError, match="train with: casflow train"):
        load_workflow(training)
    root = Path(__file__).resolve().parents[1]
    with pytest.raises(WorkflowValidationError, match="run it with: casflow run"):
        load_training_workflow(root / "workflows" / "quickstart.yaml")


def test_atomic_writes_are_readable_like_ordinary_files(tmp_path: Path) -> None:
    import os
    import stat

    from casflow.pipeline.files import atomic_write_text

    target = tmp_path / "card.md"
    atomic_write_text(target, "x")
    (tmp_path / "plain.md").write_text("x")
    mode = stat.S_IMODE(os.stat(target).st_mode)
    assert mode == stat.S_IMODE(os.stat(tmp_path / "plain.md").st_mode)


def _train_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """``casflow train ARGV --validate-only``: must exit 2; its stderr lines."""
    capsys.readouterr()
    assert cli_main(["train", *argv, "--validate-only"]) == 2
    return capsys.readouterr().err.splitlines()


def test_one_fold_and_command_line_values_are_refused_at_their_option(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(workflow_file(tmp_path, corpus))
    (error,) = _train_errors([path, "--folds", "1"], capsys)
    assert error.startswith(f"{path}: --folds: Value error, 1 fold leaves no documents"), error
    (error,) = _train_errors([path, "--folds", "-1"], capsys)
    assert error.startswith(f"{path}: --folds: Input should be greater than or equal to 0")
    one_fold = workflow_file(
        tmp_path,
        corpus,
        WORKFLOW.replace("cross_validation: {folds: 2}", "cross_validation: {folds: 1}"),
    )
    (error,) = _train_errors([str(one_fold)], capsys)
    assert error.startswith(f"{one_fold}:24: cross_validation -> folds: Value error, 1 fold")


def test_a_seed_numpy_cannot_take_is_refused_at_its_option_or_line(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Seeds are NumPy's 32-bit ones: beyond, training failed after reading the data."""
    path = str(workflow_file(tmp_path, corpus))
    (error,) = _train_errors([path, "--seed", "-3"], capsys)
    assert error.startswith(f"{path}: --seed: Input should be greater than or equal to 0")
    (error,) = _train_errors([path, "--seed", "5000000000"], capsys)
    assert error.startswith(f"{path}: --seed: Input should be less than or equal to 4294967295")
    assert cli_main(["train", path, "--seed", str(2**32 - 1), "--validate-only"]) == 0
    negative = workflow_file(tmp_path, corpus, WORKFLOW.replace("seed: 3", "seed: -1"))
    (error,) = _train_errors([str(negative)], capsys)
    assert error.startswith(f"{negative}:25: seed: Input should be greater than or equal to 0")


def test_an_output_that_is_a_file_is_refused_before_training(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(workflow_file(tmp_path, corpus))
    (tmp_path / "a-file").write_text("x")
    (error,) = _train_errors([path, "--output", str(tmp_path / "a-file")], capsys)
    assert error.startswith(f"{path}: --output: output folder {tmp_path / 'a-file'} is a file")
    # a training workflow's key is output, not run.output
    assert "(or output)" in error and "run.output" not in error


def test_a_fold_the_workflow_lacks_is_refused_by_validate_only(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(workflow_file(tmp_path, corpus))
    (error,) = _train_errors([path, "--fold", "9"], capsys)
    assert error == f"casflow: --fold 9: {path} has folds 1 to 2"
    (error,) = _train_errors([path, "--folds", "0", "--fold", "1"], capsys)
    assert "has no cross-validation" in error


def test_more_folds_than_training_documents_is_a_training_data_error(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(workflow_file(tmp_path, corpus))
    # an earlier finished training there is left as it was: nothing ran
    corpus["out"].mkdir()
    (corpus["out"] / "training-report.json").write_text('{"status": "finished"}')
    (corpus["out"] / "MODEL_CARD.md").write_text("the earlier model")
    assert cli_main(["train", path, "--folds", "5"]) == 2
    err = capsys.readouterr().err
    assert "casflow: 4 training documents cannot make 5 folds" in err
    assert "Traceback" not in err
    assert (corpus["out"] / "training-report.json").read_text() == '{"status": "finished"}'
    assert (corpus["out"] / "MODEL_CARD.md").read_text() == "the earlier model"


def test_a_key_of_the_train_or_dev_settings_is_reported_at_its_own_line(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    bad = WORKFLOW.replace("  dev: {input: DEV}", "  dev: {input: DEV, idz: [dev1]}").replace(
        "  train: {input: TRAIN}", "  train: {input: TRAIN, patern: '*.xmi'}"
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(workflow_file(tmp_path, corpus, bad))
    errors = [issue.format("train.yaml") for issue in info.value.issues]
    assert [e.split(". ")[0] for e in errors] == [
        "train.yaml:8: gold -> train -> patern: unknown key 'patern'",
        "train.yaml:9: gold -> dev -> idz: unknown key 'idz'",
    ], errors


def test_training_problems_of_every_kind_are_reported_together(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    # A top-level mistake does not hide the steps' own.
    bad = (
        WORKFLOW.replace("seed: 3", "seed: many")
        .replace("      views: {gold:", "      viewz: {gold:")
        .replace("    vectors: null", "    vectors: null\n    stagez: []")
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(workflow_file(tmp_path, corpus, bad))
    paths = [" -> ".join(map(str, issue.path)) for issue in info.value.issues]
    assert "seed" in paths, paths
    assert "gold -> reader -> config -> viewz" in paths, paths
    assert "model -> config -> stagez" in paths, paths


def test_a_problem_the_train_and_dev_readers_share_is_reported_once(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    text = """\
gold:
  reader:
    component: craft.reader.v1
    view: gold
    config: {corpus: NOWHERE, layers: [structure, sentences], ontologies: []}
  train: {split: train}
  dev: {split: dev}
layers: [sentences]
model: {component: train.nltk.punkt.v1}
output: OUT
""".replace("NOWHERE", str(tmp_path / "nowhere"))
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(workflow_file(tmp_path, corpus, text))
    messages = [issue.message for issue in info.value.issues]
    assert len(messages) == len(set(messages)) == 1, messages
    assert "does not exist" in messages[0]


def test_a_trainer_that_fails_leaves_a_failed_report_and_no_stale_card(
    tmp_path: Path, corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that fails after an earlier one finished: the report says it failed and
    why, and the earlier run's card (other seed, other scores) is not left standing."""
    from casflow.components.spacy.trainer import SpacySyntaxTrainer

    text = WORKFLOW.replace("cross_validation: {folds: 2}", "cross_validation: {folds: 0}")
    path = workflow_file(tmp_path, corpus, text)
    first = run_training(load_training_workflow(path), log=lambda line: None)
    assert first.report["status"] == "finished"
    assert (first.model_dir / "MODEL_CARD.md").exists()

    def broken(*args: object, **kwargs: object) -> Path:
        raise RuntimeError("the tool fell over")

    monkeypatch.setattr(SpacySyntaxTrainer, "train", broken)
    with pytest.raises(TrainingFailed) as failed:
        run_training(load_training_workflow(path, {"seed": 5}), log=lambda line: None)
    assert isinstance(failed.value.error, RuntimeError) and failed.value.step == "final model"
    report = json.loads((corpus["out"] / "training-report.json").read_text("utf-8"))
    assert report["status"] == "failed" and report["workflow"]["seed"] == 5
    assert report["error"] == "RuntimeError: the tool fell over"
    assert "final" not in report
    assert not (corpus["out"] / "MODEL_CARD.md").exists()
    assert not (first.model_dir / "MODEL_CARD.md").exists()


def test_the_cards_command_quotes_what_the_shell_would_split(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    import shlex

    path = workflow_file(tmp_path, corpus)
    output = tmp_path / "my models" / "tiny"
    loaded = load_training_workflow(path, {"output": str(output), "seed": 4})
    argv = shlex.split(loaded.command)
    assert argv == ["casflow", "train", str(path), "--output", str(output), "--seed", "4"]


def test_sigterm_stops_training_like_ctrl_c_and_the_run_resumes(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    """SIGTERM (Slurm, docker stop) ended the process on the spot: the final model lost
    the time it had trained and the report was left as if the run were still going."""
    import signal

    text = WORKFLOW.replace("cross_validation: {folds: 2}", "cross_validation: {folds: 0}")
    text = text.replace("max_steps: 4,", "max_steps: 400,")  # long enough to be stopped
    path = str(workflow_file(tmp_path, corpus, text))
    log = tmp_path / "run.log"
    run = start_casflow(["train", path], log)
    wait_until_all_logged([run], [log], "stage 1/2", timeout=120)
    run.send_signal(signal.SIGTERM)
    assert run.wait(timeout=120) == 128 + signal.SIGTERM, log.read_text()
    assert "stopped by SIGTERM; run the same command again to resume" in log.read_text()
    report = json.loads((corpus["out"] / "training-report.json").read_text("utf-8"))
    assert report["status"] == "interrupted" and "SIGTERM" in report["error"]
    took = json.loads((corpus["out"] / "final" / "training-time.json").read_text("utf-8"))
    assert took["finished"] is None and "running" not in took and took["seconds"] > 0
    assert not (corpus["out"] / "MODEL_CARD.md").exists()


# -- one output folder, one training workflow; a trainer's unexpected error --------------

PUNKT_WORKFLOW = """\
gold:
  reader: {{component: xmi.reader.v1, view: gold, config: {{views: {{gold: [Sentence]}}}}}}
  train: {{input: {train}}}
  dev: {{input: {dev}}}
layers: [sentences]
model: {{component: train.nltk.punkt.v1, config: {{extra_abbreviations: {abbreviations}}}}}
cross_validation: {{folds: 2}}
output: {out}
"""


def punkt_workflow(
    tmp_path: Path,
    corpus: dict[str, Path],
    name: str,
    abbreviations: str = "[]",
    *,
    workflow_name: str | None = None,
    output: str | None = None,
) -> Path:
    """A tiny training workflow (NLTK Punkt, 2 folds: seconds) in file ``name`` (under
    ``tmp_path``) into ``output``, by default the ``corpus`` fixture's output folder;
    ``workflow_name``: its ``name`` key (last, so the lines above keep their numbers)."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = PUNKT_WORKFLOW.format(
        train=corpus["train"],
        dev=corpus["dev"],
        out=output or corpus["out"],
        abbreviations=abbreviations,
    )
    path.write_text(text + (f"name: {workflow_name}\n" if workflow_name else ""), "utf-8")
    return path


def folder_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_another_workflow_is_refused_before_it_changes_the_models_output_folder(
    tmp_path: Path,
    corpus: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second training workflow with the same trainer pointed at the same output
    folder replaced the first one's model (its folds too) without a word."""
    first = punkt_workflow(tmp_path, corpus, "first.yaml")
    second = punkt_workflow(tmp_path, corpus, "second.yaml", "[etc]")
    assert cli_main(["train", str(first)]) == 0
    trained = folder_files(corpus["out"])
    capsys.readouterr()
    for extra in ([], ["--fold", "1"], ["--validate-only"]):
        assert cli_main(["train", str(second), *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith(
            f"{second}:8: output: output folder {corpus['out']} holds the model of another "
            f"training workflow, {first.resolve()} (training-workflow.json); training "
            f"{second.resolve()} there "
            "would replace it: choose another --output (or output), or add --overwrite"
        ), err
    assert folder_files(corpus["out"]) == trained
    # the same workflow trains there again, with changed settings, and from elsewhere
    lines: list[str] = []
    run_training(load_training_workflow(first, {"seed": 4}), log=lines.append)
    assert any("fold 1/2: the workflow changed since it ran" in line for line in lines)
    monkeypatch.chdir(corpus["train"])
    assert cli_main(["train", "../first.yaml", "--folds", "0"]) == 0
    # --overwrite replaces the model; the folder is then the second workflow's
    assert cli_main(["train", str(second), "--overwrite"]) == 0
    report = json.loads((corpus["out"] / "training-report.json").read_text("utf-8"))
    assert report["source"] == str(second) and report["status"] == "finished"
    capsys.readouterr()
    assert cli_main(["train", str(first)]) == 2
    assert f"another training workflow, {second.resolve()} (" in capsys.readouterr().err


def test_folds_trained_alone_belong_to_their_workflow_too(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--fold`` runs write no report, so a folder of folds told nothing of whose
    they were: another workflow trained them again over hours of training."""
    first = punkt_workflow(tmp_path, corpus, "first.yaml")
    second = punkt_workflow(tmp_path, corpus, "second.yaml", "[etc]")
    assert cli_main(["train", str(first), "--fold", "1"]) == 0
    assert not (corpus["out"] / "training-report.json").exists()
    trained = folder_files(corpus["out"])
    capsys.readouterr()
    assert cli_main(["train", str(second)]) == 2
    assert f"another training workflow, {first.resolve()} (" in capsys.readouterr().err
    assert folder_files(corpus["out"]) == trained
    # the first workflow's full run reuses its fold
    lines: list[str] = []
    run_training(load_training_workflow(first), log=lines.append)
    assert any("fold 1/2: already done" in line for line in lines)


def test_a_workflow_that_took_the_folder_while_this_one_read_its_gold_is_not_replaced(
    tmp_path: Path, corpus: dict[str, Path]
) -> None:
    from casflow.pipeline.training import TrainingOutputError

    first = load_training_workflow(punkt_workflow(tmp_path, corpus, "first.yaml"))
    # validated into an empty folder; another workflow trains there before it starts
    second = punkt_workflow(tmp_path, corpus, "second.yaml", "[etc]")
    run_training(load_training_workflow(second), log=lambda line: None)
    trained = folder_files(corpus["out"])
    said = f"another training workflow, {second.resolve()} "
    with pytest.raises(TrainingOutputError, match=re.escape(said)):
        run_training(first, log=lambda line: None)
    assert folder_files(corpus["out"]) == trained


def test_an_output_holding_another_trainers_model_is_refused_before_training(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Training into the output folder of another trainer's model mixed the two models'
    files in one model folder (an OpenNLP model folder with a head-rules model.json);
    the same trainer's model of another workflow was replaced. A folder trained before
    training-workflow.json was written says whose it is in its report."""
    path = str(workflow_file(tmp_path, corpus))
    other = tmp_path / "other"
    other.mkdir()

    def earlier_report(trainer: str, source: str, output: str = str(other)) -> None:
        workflow = {"model": {"component": trainer, "config": {}}, "output": output}
        report = {"source": source, "workflow": workflow}
        (other / "training-report.json").write_text(json.dumps(report), encoding="utf-8")

    # the workflows these reports name still exist: they are other workflows
    (tmp_path / "opennlp.yaml").touch()
    (tmp_path / "elsewhere.yaml").touch()
    earlier_report("train.opennlp.v1", str(tmp_path / "opennlp.yaml"))
    for overwrite in ([], ["--overwrite"]):  # no flag mixes two trainers' files
        (error,) = _train_errors([path, "--output", str(other), *overwrite], capsys)
        assert error.startswith(
            f"{path}: --output: output folder {other} holds a model of train.opennlp.v1 "
            "(training-report.json); train.spacy.syntax.v1 would mix its files"
        )
    # the same trainer's model of another workflow: replaced only with --overwrite
    earlier_report("train.spacy.syntax.v1", str(tmp_path / "opennlp.yaml"))
    (error,) = _train_errors([path, "--output", str(other)], capsys)
    assert f"of another training workflow, {(tmp_path / 'opennlp.yaml').resolve()} " in error
    assert "add --overwrite to replace that model" in error
    load_training_workflow(path, {"output": str(other)}, overwrite=True)
    # ... and of this workflow: its own model, trained again or reused
    earlier_report("train.spacy.syntax.v1", path)
    load_training_workflow(path, {"output": str(other)})
    # a relative source is from the working directory the relative output was given
    # from (here tmp_path), whichever directory trains again
    earlier_report("train.spacy.syntax.v1", "train.yaml", "other")
    load_training_workflow(path, {"output": str(other)})
    earlier_report("train.spacy.syntax.v1", "elsewhere.yaml", "other")
    with pytest.raises(WorkflowValidationError, match="elsewhere.yaml"):
        load_training_workflow(path, {"output": str(other)})


def owner_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "training-workflow.json").read_text("utf-8"))


def test_a_renamed_or_moved_workflow_still_owns_its_output_folder(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Renaming the workflow file (``git mv``) made its own output folder another
    workflow's: the rerun was refused."""
    first = punkt_workflow(tmp_path, corpus, "punkt.yaml")
    assert cli_main(["train", str(first)]) == 0
    (tmp_path / "moved").mkdir()
    renamed = first.rename(tmp_path / "moved" / "punkt-sentences.yaml")
    assert cli_main(["train", str(renamed), "--validate-only"]) == 0
    lines: list[str] = []
    run_training(load_training_workflow(renamed), log=lines.append)
    assert any("fold 1/2: already done" in line for line in lines)
    # the folder is now the renamed file's: a new workflow at the old path is another
    assert owner_of(corpus["out"])["workflow_file"] == str(renamed.resolve())
    newcomer = punkt_workflow(tmp_path, corpus, "punkt.yaml", "[etc]")
    capsys.readouterr()
    assert cli_main(["train", str(newcomer), "--validate-only"]) == 2
    assert f"another training workflow, {renamed.resolve()} (" in capsys.readouterr().err


def test_a_clone_with_the_same_workflow_name_trains_into_a_shared_output_folder(
    tmp_path: Path, corpus: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A clone of the repository at another path, training into a shared model folder,
    was refused as another workflow while the first checkout still stood: the same
    workflow ``name`` now says it is the same workflow."""
    repo = punkt_workflow(tmp_path, corpus, "repo/punkt.yaml", workflow_name="punkt-sentences")
    clone = punkt_workflow(tmp_path, corpus, "clone/punkt.yaml", workflow_name="punkt-sentences")
    assert cli_main(["train", str(repo), "--fold", "1"]) == 0
    assert cli_main(["train", str(clone), "--validate-only"]) == 0
    assert owner_of(corpus["out"])["name"] == "punkt-sentences"
    assert cli_main(["train", str(clone)]) == 0
    assert owner_of(corpus["out"])["workflow_file"] == str(clone.resolve())
    assert cli_main(["train", str(repo), "--validate-only"]) == 0
    # a copy without the name, or with another name, is another workflow
    unnamed = punkt_workflow(tmp_path, corpus, "copy/punkt.yaml")
    other = punkt_workflow(tmp_path, corpus, "other/punkt.yaml", workflow_name="punkt-abbrev")
    capsys.readouterr()
    assert cli_main(["train", str(unnamed), "--validate-only"]) == 2
    err = capsys.readouterr().err
    assert f"another training workflow, {clone.resolve()} (training-workflow.json)" in err
    assert err.rstrip().endswith(
        "add --overwrite to replace that model; or, if it is a copy of that workflow (a "
        "clone of its repository, say), give it that workflow's name (punkt-sentences)"
    ), err
    assert cli_main(["train", str(other), "--validate-only"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("add --overwrite to replace that model")


def test_a_project_folder_renamed_with_a_relative_output_still_owns_it(
    tmp_path: Path, corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``output: runs/x`` moves with its project folder, but the workflow file it
    recorded is gone with the old folder name: the rerun was refused."""
    punkt_workflow(tmp_path, corpus, "proj/workflows/punkt.yaml", output="runs/punkt")
    monkeypatch.chdir(tmp_path / "proj")
    assert cli_main(["train", "workflows/punkt.yaml", "--fold", "2"]) == 0
    monkeypatch.chdir(tmp_path)
    renamed = (tmp_path / "proj").rename(tmp_path / "proj-2026")
    monkeypatch.chdir(renamed)
    assert cli_main(["train", "workflows/punkt.yaml", "--validate-only"]) == 0
    lines: list[str] = []
    run_training(load_training_workflow("workflows/punkt.yaml"), log=lines.append)
    assert any("fold 2/2: already done" in line for line in lines)
    owner = owner_of(renamed / "runs" / "punkt")
    assert owner["workflow_file"] == str((renamed / "workflows" / "punkt.yaml").resolve())


def test_an_older_folder_behind_a_symlinked_output_is_judged_from_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder trained before training-workflow.json existed is judged by its report,
    whose relative ``source`` is from the directory its relative output leads from;
    with ``runs`` a symlink to a big disk, that directory was taken from the resolved
    output (the big disk), so the project's own workflow was refused."""
    project, runs = tmp_path / "proj", tmp_path / "bigdisk" / "runs"
    corpus = {"train": tmp_path / "train", "dev": tmp_path / "dev"}
    write_corpus(corpus["train"], ["doc10", "doc2", "doc1", "doc3"])
    write_corpus(corpus["dev"], ["dev1"])
    punkt_workflow(project, corpus, "workflows/punkt.yaml", output="runs/punkt")
    (project / "workflows" / "other.yaml").touch()
    (runs / "punkt").mkdir(parents=True)
    (project / "runs").symlink_to(runs)

    def earlier_report(source: str) -> None:
        workflow = {"model": {"component": "train.nltk.punkt.v1", "config": {}}}
        report = {"source": source, "workflow": {**workflow, "output": "runs/punkt"}}
        (runs / "punkt" / "training-report.json").write_text(json.dumps(report), "utf-8")

    earlier_report("workflows/punkt.yaml")
    monkeypatch.chdir(project)
    load_training_workflow("workflows/punkt.yaml")
    # from another directory, the output given as it leads from there
    monkeypatch.chdir(project / "workflows")
    load_training_workflow("punkt.yaml", {"output": "../runs/punkt"})
    # another workflow of the project is still another one
    monkeypatch.chdir(project)
    earlier_report("workflows/other.yaml")
    said = f"another training workflow, {(project / 'workflows' / 'other.yaml').resolve()} ("
    with pytest.raises(WorkflowValidationError, match=re.escape(said)):
        load_training_workflow("workflows/punkt.yaml")


def test_of_two_workflows_claiming_a_free_folder_together_only_one_trains_there(
    tmp_path: Path, corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workflows finishing their gold reading together both found the folder free
    and both wrote training-workflow.json, the second replacing the first's: both
    trained into one folder. The same workflow's parallel --fold runs still do."""
    from casflow.pipeline import training

    first = load_training_workflow(punkt_workflow(tmp_path, corpus, "first.yaml"))
    second = load_training_workflow(punkt_workflow(tmp_path, corpus, "second.yaml", "[etc]"))
    twin = load_training_workflow(tmp_path / "second.yaml")
    read_marker = training.read_marker
    # the other run, and after which of this run's reads finding the folder free it
    # claims the folder: any check-then-write has a last such read before its write
    race: dict[str, Any] = {}

    def another_run_claims_after_a_free_read(path: Path) -> Any:
        marker = read_marker(path)
        if marker is None and path.name == "training-workflow.json" and race["rival"]:
            race["free_reads"] += 1
            if race["free_reads"] == race["claims_after"]:
                rival, race["rival"] = race["rival"], None
                training._claim_output(rival, None)
        return marker

    monkeypatch.setattr(training, "read_marker", another_run_claims_after_a_free_read)
    for claims_after in (1, 2, 3):
        shutil.rmtree(corpus["out"], ignore_errors=True)
        race.update(rival=second, claims_after=claims_after, free_reads=0)
        try:
            run_training(first, log=lambda line: None, only_fold=1)
        except training.TrainingOutputError as refused:
            assert f"another training workflow, {second.workflow_file} (" in str(refused)
            assert owner_of(corpus["out"])["workflow_file"] == str(second.workflow_file)
            assert not (corpus["out"] / "folds").exists()
        else:  # trained: then the other run never claimed the folder
            assert race["rival"] is second, f"{first.source} replaced {second.source}'s claim"
            assert owner_of(corpus["out"])["workflow_file"] == str(first.workflow_file)
    # the same workflow's other --fold run claims it: both train
    for claims_after in (1, 2, 3):
        shutil.rmtree(corpus["out"], ignore_errors=True)
        race.update(rival=twin, claims_after=claims_after, free_reads=0)
        run_training(second, log=lambda line: None, only_fold=1)
        assert (corpus["out"] / "folds" / "fold-1" / "scores.json").exists()


def test_a_file_created_exclusively_never_replaces_one_already_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    from casflow.pipeline.files import create_text_exclusively

    target = tmp_path / "owner.json"
    assert create_text_exclusively(target, "first")
    assert not create_text_exclusively(target, "second")
    assert target.read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["owner.json"]  # no temporary left

    def no_hard_links(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_hard_links)
    assert not create_text_exclusively(target, "second")
    assert create_text_exclusively(tmp_path / "other.json", "other")
    assert target.read_text() == "first" and (tmp_path / "other.json").read_text() == "other"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json", "owner.json"]


def _fail_on_training_call(
    monkeypatch: pytest.MonkeyPatch, call: int, error: BaseException
) -> None:
    """Punkt's ``train`` raises ``error`` at its ``call``-th call (1: the first fold)."""
    from casflow.components.nltk.punkt import PunktSentenceTrainer

    original = PunktSentenceTrainer.train
    calls = []

    def train(self: PunktSentenceTrainer, *args: Any, **kwargs: Any) -> Path:
        calls.append(1)
        if len(calls) == call:
            raise error
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PunktSentenceTrainer, "train", train)


def test_a_trainers_unexpected_error_is_a_message_naming_the_step_and_the_traceback(
    tmp_path: Path,
    corpus: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It ended ``casflow train`` in a bare Python traceback (exit 1 by Python's
    default, while the report said failed), not as a run's failure is reported."""
    path = punkt_workflow(tmp_path, corpus, "punkt.yaml")
    _fail_on_training_call(monkeypatch, 2, RuntimeError("the tool fell over"))
    assert cli_main(["train", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    report_file = corpus["out"] / "training-report.json"
    assert (
        f"casflow: training {path} failed at fold 2/2 (trainer train.nltk.punkt.v1): "
        "RuntimeError: the tool fell over\n"
        f'casflow: the full traceback is in {report_file} (under "traceback"); finished '
        "folds and training stages are kept"
    ) in err, err
    report = json.loads(report_file.read_text("utf-8"))
    assert report["status"] == "failed" and report["step"] == "fold 2/2"
    assert report["error"] == "RuntimeError: the tool fell over"
    assert report["traceback"].startswith("Traceback (most recent call last)")
    assert "in train\n" in report["traceback"] and "the tool fell over" in report["traceback"]
    # fixed, the same command resumes
    monkeypatch.undo()
    lines: list[str] = []
    result = run_training(load_training_workflow(path), log=lines.append)
    assert any("fold 1/2: already done" in line for line in lines)
    assert result.report["status"] == "finished" and "traceback" not in result.report


def test_an_unexpected_error_without_a_report_goes_to_the_error_log(
    tmp_path: Path,
    corpus: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``--fold`` run writes no report, and a trainer that fails as it is set up has
    not replaced the earlier run's: the traceback goes to a log in the output folder."""
    from casflow.components.nltk.punkt import PunktSentenceTrainer

    path = punkt_workflow(tmp_path, corpus, "punkt.yaml")
    _fail_on_training_call(monkeypatch, 1, ValueError("no such parameter"))
    assert cli_main(["train", str(path), "--fold", "2"]) == 1
    err = capsys.readouterr().err
    log = corpus["out"] / "training-error-fold-2.log"
    assert "failed at fold 2/2 (trainer train.nltk.punkt.v1): ValueError: no such" in err
    assert f"casflow: the full traceback is in {log};" in err and "Traceback" not in err
    assert f"casflow train {path} --fold 2\n" in log.read_text("utf-8")
    assert "Traceback (most recent call last)" in log.read_text("utf-8")
    assert not (corpus["out"] / "training-report.json").exists()
    monkeypatch.undo()
    assert cli_main(["train", str(path)]) == 0
    assert not log.exists()  # the full run trained that fold: the log said no more
    finished = folder_files(corpus["out"])

    def broken(self: object, *args: object, **kwargs: object) -> None:
        raise OSError("cannot load the tool")

    monkeypatch.setattr(PunktSentenceTrainer, "__init__", broken)
    capsys.readouterr()
    assert cli_main(["train", str(path), "--seed", "2"]) == 1
    err = capsys.readouterr().err
    log = corpus["out"] / "training-error.log"
    assert "failed at setting up the trainer (trainer train.nltk.punkt.v1): OSError" in err
    assert f"the full traceback is in {log};" in err and "cannot load" in log.read_text()
    assert folder_files(corpus["out"]) == {**finished, log.name: log.read_bytes()}


def test_ctrl_c_in_a_trainer_is_still_an_interruption(
    tmp_path: Path,
    corpus: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = punkt_workflow(tmp_path, corpus, "punkt.yaml")
    _fail_on_training_call(monkeypatch, 2, KeyboardInterrupt())
    assert cli_main(["train", str(path)]) == 130
    assert "interrupted; run again with the same command to resume" in capsys.readouterr().err
    report = json.loads((corpus["out"] / "training-report.json").read_text("utf-8"))
    assert report["status"] == "interrupted" and "traceback" not in report


def test_train_help_lists_its_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["train", "--help"])
    out = capsys.readouterr().out
    assert "--overwrite" in out and "  1    training failed:" in out and "  143  " in out


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (RuntimeError("the tool fell over"), "a bug in casflow or the tool: report it"),
        (OSError(28, "No space left on device"), "the file or folder it names (disk space"),
    ],
)
def test_the_failure_message_says_what_kind_of_cause_to_fix(
    tmp_path: Path,
    corpus: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    error: BaseException,
    cause: str,
) -> None:
    # A full disk is the machine's to fix, not a bug to report with the traceback.
    path = punkt_workflow(tmp_path, corpus, "punkt.yaml")
    _fail_on_training_call(monkeypatch, 1, error)
    assert cli_main(["train", str(path)]) == 1
    assert f"fix the cause ({cause}" in capsys.readouterr().err
