"""The declared workflows in workflows/ stay valid, and the quick start runs."""

from __future__ import annotations

import os
from pathlib import Path

import cassis
import pytest
import yaml

from casflow.pipeline.cli import main
from casflow.pipeline.training import load_training_workflow
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow
from casflow.typesystem import ANATOMY_MENTION, GENE_MENTION, SENTENCE, load_typesystem

REPO = Path(__file__).resolve().parent.parent

WORKFLOWS = sorted((REPO / "workflows").glob("*.yaml"))
CORPUS_WORKFLOWS = {
    "craft-eval.yaml",
    "bc2gm-eval.yaml",
    "anatem-eval.yaml",
    "anatem-stanza-eval.yaml",
    "anatem-stanza-w2v-eval.yaml",
    "anatem-stanza-charlm-eval.yaml",
    "anatem-transformer-eval.yaml",
    "craft-study.yaml",
    "craft-combination.yaml",
    "craft-combination-seeds.yaml",
    "craft-stanza-parser-eval.yaml",
}
#: run workflows over models other workflows train (files relative to the repository),
#: validated here only where those models exist: tests/test_anatomy_stacking.py validates
#: and runs the stacking one with a fixture model, tests/test_craft_study.py checks the
#: rest of the study and runs it on the CRAFT fixture with tiny models
NEEDS_TRAINED_MODEL = {
    "anatomy-stacking-eval.yaml": ["runs/anatomy-stacking/final/model/meta.json"],
    "anatem-stanza-w2v-eval.yaml": [
        "runs/anatomy-stacking/final/model/meta.json",
        "runs/train-anatem-stanza-w2v/final/model/model.pt",
        "runs/train-anatem-stanza-w2v-seed1/final/model/model.pt",
    ],
    "anatem-stanza-charlm-eval.yaml": [
        "runs/anatomy-stacking/final/model/meta.json",
        "runs/train-anatem-stanza-w2v/final/model/model.pt",
        "runs/train-anatem-stanza-w2v-seed1/final/model/model.pt",
        "runs/train-anatem-stanza-charlm/final/model/model.pt",
    ],
    "craft-combination-seeds.yaml": [
        "runs/train-craft-syntax-seed1/final/model/meta.json",
        "runs/train-craft-syntax-seed2/final/model/meta.json",
        "runs/train-craft-syntax-seed3/final/model/meta.json",
        "runs/train-craft-stanza-syntax/final/model/parser.pt",
    ],
    "craft-stanza-parser-eval.yaml": ["runs/train-craft-stanza-parser/final/model/parser.pt"],
    # the encoder folder is made by hand from PyPI packages (see the workflow)
    "train-anatem-transformer.yaml": ["runs/encoders/all-mpnet-base-v2/model.safetensors"],
    "anatem-transformer-eval.yaml": [
        "runs/anatomy-stacking/final/model/meta.json",
        "runs/train-anatem-stanza-w2v/final/model/model.pt",
        "runs/train-anatem-stanza-w2v-seed1/final/model/model.pt",
        "runs/train-anatem-stanza-charlm/final/model/model.pt",
        "runs/train-anatem-transformer/final/model/meta.json",
    ],
    "craft-study.yaml": [
        "runs/train-craft-punkt/final/model/punkt.json",
        "runs/train-craft-opennlp/final/model/en-parser-chunking.bin",
        "runs/train-craft-udpipe-quick/final/model",
        "runs/train-craft-stanza-syntax/final/model/parser.pt",
    ],
}


def is_training_workflow(path: Path) -> bool:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return "gold" in data and "model" in data


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_workflow_is_valid(path: Path, monkeypatch: pytest.MonkeyPatch, corpora_dir: Path) -> None:
    # Workflows name ../shared/corpora relative to the repository root.
    monkeypatch.chdir(REPO)
    if path.name in CORPUS_WORKFLOWS and not (REPO.parent / "shared" / "corpora").is_dir():
        pytest.skip(
            "the corpus workflows name ../shared/corpora, which is not beside the repository"
        )
    missing = [m for m in NEEDS_TRAINED_MODEL.get(path.name, []) if not (REPO / m).exists()]
    if missing:
        pytest.skip(f"{path.name} scores models not trained here: {', '.join(missing)}")
    monkeypatch.setenv("CASFLOW_CORPORA", str(corpora_dir))
    try:
        if is_training_workflow(path):
            load_training_workflow(path)
        else:
            load_workflow(path)
    except WorkflowValidationError as exc:
        pytest.fail(str(exc))


def test_craft_combination_needs_only_shipped_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpora_dir: Path
) -> None:
    # Every member of both votes is shipped: from a folder with no runs/, the whole
    # workflow is valid and nothing is left out.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CASFLOW_CORPORA", str(corpora_dir))
    workflow = load_workflow(REPO / "workflows" / "craft-combination.yaml")
    assert workflow.left_out == {}
    views = {step.spec.view for step in workflow.processors}
    assert {"stanza", "opennlp", "vote", "dep_vote_folds", "dep_vote_directions"} <= views
    assert {
        "conv_stanza",
        "conv_stanza_vt",
        "conv_stanza_s1",
        "conv_stanza_s1_vt",
        "dep_vote_all",
    } <= views


@pytest.mark.slow
def test_quickstart_runs_and_finds_genes_and_anatomy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    out = tmp_path / "quickstart"
    assert main(["run", "workflows/quickstart.yaml", "--output", str(out), "--quiet"]) == 0
    cas = cassis.load_cas_from_xmi(
        (out / "xmi" / "PMC9999001.xmi").read_text("utf-8"), typesystem=load_typesystem()
    )
    genes = {g.get_covered_text() for g in cas.select(GENE_MENTION)}
    assert "Pax6" in genes and "Sox2" in genes
    anatomy = {(a.get_covered_text(), a.value) for a in cas.select(ANATOMY_MENTION)}
    assert ("lens placode", "Multi-tissue_structure") in anatomy
    tokens = cas.select("de.tudarmstadt.ukp.dkpro.core.api.segmentation.type.Token")
    assert len(tokens) > 100 and all(t.pos is not None for t in tokens)
    # Headings are sentences of their own.
    assert "Introduction" in {s.get_covered_text() for s in cas.select(SENTENCE)}
    assert os.path.exists(out / "run-report.json")
