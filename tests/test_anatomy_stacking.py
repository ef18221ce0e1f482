"""Dictionary + CRF stacking on AnatEM (issue 14): workflows/anatomy-stacking.yaml trains
the shipped anatomy ensemble with ner.dictionary.v1's matches as features of every
member, and workflows/anatomy-stacking-eval.yaml scores that model beside the shipped
tagger.

The fixtures are written by hand: a corpora folder holding CRAFT's ontology files
(UBERON: six organs; CL) and a few AnatEM documents in which the context never
tells an organ from a common noun, so an organ the training documents never name
("kidney", "spleen") is found only through the dictionary.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml

from casflow.components.crfsuite.crf import META_FILE
from casflow.components.crfsuite.tagger import AnatomyNer, AnatomyNerConfig, model_problem
from casflow.components.stanza.model import stanza_missing
from casflow.pipeline.cli import main
from casflow.pipeline.component import RunContext
from casflow.pipeline.training import load_training_workflow, run_training
from casflow.pipeline.workflow import load_workflow
from tests.test_crf_trainer import write_anatem

REPO = Path(__file__).resolve().parent.parent
TRAIN_WORKFLOW = REPO / "workflows" / "anatomy-stacking.yaml"
EVAL_WORKFLOW = REPO / "workflows" / "anatomy-stacking-eval.yaml"
#: where the eval workflow finds the trained model, relative to its folder
EVAL_MODEL = "../runs/anatomy-stacking/final/model"

SEEN = [
    "heart", "liver", "pancreas", "stomach", "lung", "bladder", "brain", "thymus",
    "tongue", "ovary", "testis", "uterus",
]  # fmt: skip
UNSEEN = ["kidney", "spleen"]
OTHERS = [
    "table", "river", "paper", "window", "garden", "ladder", "bottle", "pencil", "mirror",
    "carpet", "basket", "hammer", "candle", "bucket",
]  # fmt: skip


def uberon() -> str:
    terms = ["format-version: 1.2\n", "[Term]\nid: UBERON:0000062\nname: organ\n"]
    for number, name in enumerate(SEEN + UNSEEN, 100):
        terms.append(f"[Term]\nid: UBERON:0000{number}\nname: {name}\nis_a: UBERON:0000062\n")
    return "\n".join(terms)


CL = "format-version: 1.2\n\n[Term]\nid: CL:0000000\nname: cell\n"


def sentence(word: str) -> str:
    marked = f"{{{word}|Organ}}" if word in SEEN + UNSEEN else word
    return f"The {marked} was examined again ."


@pytest.fixture
def corpora(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "corpora"
    concepts = folder / "craft" / "concept-annotation"
    for name, obo in (("UBERON", uberon()), ("CL", CL)):
        (concepts / name / name).mkdir(parents=True)
        with zipfile.ZipFile(concepts / name / name / f"{name}.obo.zip", "w") as archive:
            archive.writestr(f"{name}.obo", obo)
    pairs = zip(SEEN, OTHERS[: len(SEEN)], strict=True)
    train = {f"PMID-{n}": [sentence(w), sentence(o)] for n, (w, o) in enumerate(pairs)}
    train["PMID-99"] = [sentence(o) for o in OTHERS[len(SEEN) :]]
    write_anatem(folder, "train", train)
    write_anatem(folder, "devel", {"PMID-90": [sentence(w) for w in UNSEEN + OTHERS[:2]]})
    # the dictionary's default ontologies are CRAFT's under this folder
    monkeypatch.setenv("CASFLOW_CORPORA", str(folder))
    # the compiled dictionary is cached here, not in the user's cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return folder


def tiny_stacking_workflow(tmp_path: Path, corpora: Path) -> Path:
    """workflows/anatomy-stacking.yaml's member settings on the fixture corpus, without
    the resources (clusters, POS tagger, CRAFT lexicon) it cannot build."""
    spec = yaml.safe_load(TRAIN_WORKFLOW.read_text(encoding="utf-8"))
    config = spec["model"]["config"]
    members = []
    for member in config["members"]:
        assert member["dictionary"] == {}  # ner.dictionary.v1's defaults
        members.append(
            {key: member[key] for key in ("scheme", "c1", "c2", "features", "dictionary")}
            | {"iterations": 50}
        )
    spec["gold"]["reader"]["config"] = {"corpus": str(corpora / "anatem")}
    spec["model"]["config"] = {
        "label": None,
        "scoring": "strict",
        "document_order": "id",
        "members": members,
        "needed": config["needed"],
        "document_postprocess": config["document_postprocess"],
    }
    spec["output"] = str(tmp_path / "train")
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def without_dictionary(model: Path, copy: Path) -> Path:
    """The same model whose members do not compute the dictionary features."""
    shutil.copytree(model, copy)
    for meta_path in copy.glob(f"member*/{META_FILE}"):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        del meta["dictionary"]
        meta_path.write_text(json.dumps(meta), encoding="utf-8")
    return copy


def stacking_scores(out: Path) -> dict[str, float]:
    evaluation = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    systems = evaluation["anatomy"]["systems"]
    return {name: s["scores"]["strict"]["micro"]["f1"] for name, s in systems.items()}


def test_stacking_workflow_is_the_shipped_ensemble_with_dictionary_features() -> None:
    shipped = yaml.safe_load((REPO / "workflows" / "train-anatomy.yaml").read_text("utf-8"))
    stacking = yaml.safe_load(TRAIN_WORKFLOW.read_text(encoding="utf-8"))
    members = stacking["model"]["config"]["members"]
    assert [m.pop("dictionary") for m in members] == [{}, {}, {}]
    assert stacking["model"] == shipped["model"]
    assert stacking["gold"] == shipped["gold"]


@pytest.mark.corpus
def test_stacking_workflow_validates_on_the_corpora(
    corpora_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CASFLOW_CORPORA", str(corpora_dir))
    loaded = load_training_workflow(TRAIN_WORKFLOW)
    members = loaded.resolved["model"]["config"]["members"]
    assert len(members) == 3
    for member in members:
        ontologies = [Path(p).name for p in member["dictionary"]["ontologies"]]
        assert ontologies == ["UBERON.obo.zip", "CL.obo.zip"]


def test_a_stacking_model_runs_in_the_eval_chain_and_uses_the_dictionary(
    tmp_path: Path, corpora: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Relative model paths are tried from the working directory first: run from a
    # folder where ../runs/ holds no real model
    monkeypatch.chdir(tmp_path)
    result = run_training(
        load_training_workflow(tiny_stacking_workflow(tmp_path, corpora)), log=lambda _: None
    )
    model = result.model_dir
    metas = [json.loads(p.read_text("utf-8")) for p in sorted(model.glob(f"member*/{META_FILE}"))]
    assert len(metas) == 3
    # the default ontologies are not stored as this machine's paths: the model finds
    # them under $CASFLOW_CORPORA where it runs
    assert all("ontologies" not in m["dictionary"] for m in metas)

    # the eval workflow as shipped, beside a runs/ folder holding the fixture model
    workflows = tmp_path / "repo" / "workflows"
    workflows.mkdir(parents=True)
    workflow = workflows / EVAL_WORKFLOW.name
    shutil.copyfile(EVAL_WORKFLOW, workflow)
    shutil.copytree(model, workflows / EVAL_MODEL)
    load_workflow(workflow)  # validates
    out = tmp_path / "out"
    assert main(["run", str(workflow), "--output", str(out), "--quiet"]) == 0
    scores = stacking_scores(out)
    # both unseen organs, nothing else, by the vote and by each member; the shipped
    # tagger and its members run beside them
    members = [f"stacking{n}" for n in (1, 2, 3)]
    assert [scores[name] for name in ["stacking", *members]] == [1.0] * 4
    # the shipped Stanza model and the votes with it run where the stanza extra is
    # installed; elsewhere they are left out
    stanza_views = {"stanza", "stacking_stanza", "shipped_stanza"}
    expected = {"shipped", "dictionary", "stacking", *members} | {f"shipped{n}" for n in (1, 2, 3)}
    assert set(scores) == (expected | stanza_views if stanza_missing() is None else expected)
    evaluation = json.loads((out / "evaluation.json").read_text("utf-8"))
    pairs = {(t["system_a"], t["system_b"]) for t in evaluation["anatomy"]["significance"]}
    assert ("shipped", "stacking") in pairs

    # the same members without the dictionary features: the vote finds neither organ,
    # no member finds both
    shutil.rmtree(workflows / EVAL_MODEL)
    without_dictionary(model, workflows / EVAL_MODEL)
    plain_out = tmp_path / "plain"
    assert main(["run", str(workflow), "--output", str(plain_out), "--quiet"]) == 0
    plain = stacking_scores(plain_out)
    assert plain["stacking"] == 0.0 and all(plain[name] < 1.0 for name in members)


def test_a_stacking_model_names_the_ontologies_it_lacks(
    tmp_path: Path, corpora: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = run_training(
        load_training_workflow(tiny_stacking_workflow(tmp_path, corpora)), log=lambda _: None
    ).model_dir
    assert model_problem(model) is None
    AnatomyNer(AnatomyNerConfig(model=str(model)), RunContext(output_dir=tmp_path))
    monkeypatch.setenv("CASFLOW_CORPORA", str(tmp_path / "elsewhere"))
    problem = model_problem(model)
    assert problem is not None
    assert "UBERON.obo.zip" in problem and "CASFLOW_CORPORA" in problem
