"""workflows/craft-study.yaml: valid but for the models it trains, every system's
layers scored, and its structure run end to end on the hand-written CRAFT fixture.

The fixture run is the study as written, with three changes only: the reader reads
the one fixture article (tests/fixtures/craft), the trained models (Punkt, OpenNLP,
UDPipe, Stanza's tagger and parser) are tiny ones trained here on hand-written sentences, and the anatomy
dictionary reads a two-term OBO file. So every step, view, evaluator and
significance setting of the study runs; the scores mean nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from lxml import html as lxml_html

from casflow.pipeline.cli import main
from casflow.pipeline.registry import registry
from casflow.pipeline.significance_report import load_evaluator
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow
from casflow.typesystem import (
    ANATOMY_MENTION,
    CONSTITUENT,
    DEPENDENCY,
    GENE_MENTION,
    POS,
    SENTENCE,
    TOKEN,
)
from tests.test_html_report import CHROMIUM_FLAGS

# Session fixtures: tiny OpenNLP (skips without Java and opennlp) and UDPipe models.
from tests.test_opennlp import tiny_opennlp_model, tiny_opennlp_training  # noqa: F401
from tests.test_stanza_syntax import tiny_syntax_gold, tiny_syntax_training  # noqa: F401
from tests.test_udpipe import tiny_udpipe_model, tiny_udpipe_training  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
STUDY = REPO / "workflows" / "craft-study.yaml"
FIXTURE = Path(__file__).parent / "fixtures" / "craft"
# The models the study names that `casflow train` makes, and the command for each.
TRAINED = {
    "runs/train-craft-punkt/final/model": "casflow train workflows/train-craft-punkt.yaml",
    "runs/train-craft-opennlp/final/model": "casflow train workflows/train-craft-opennlp.yaml",
    "runs/train-craft-udpipe-quick/final/model": (
        "casflow train workflows/train-craft-udpipe-quick.yaml"
    ),
    "runs/train-craft-stanza-syntax/final/model": (
        "casflow train workflows/train-craft-stanza-syntax.yaml"
    ),
}
# The evaluator that scores each layer, and the one type that makes a view have it.
LAYER_EVALUATORS = {
    SENTENCE: "eval.sentences.v1",
    TOKEN: "eval.tokens.v1",
    POS: "eval.pos.v1",
    DEPENDENCY: "eval.dependencies.v1",
    CONSTITUENT: "eval.constituents.v1",
    GENE_MENTION: "genes",
    ANATOMY_MENTION: "anatomy",
}
# Steps that prepare a view for the tool it is about (their layers are not its output).
HELPERS = {"view.copy.v1"}


def study() -> dict[str, Any]:
    return yaml.safe_load(STUDY.read_text(encoding="utf-8"))


def evaluator_label(entry: dict[str, Any]) -> str:
    return entry.get("id") or entry["component"]


def fixture_systems(entry: dict[str, Any]) -> list[str]:
    """An evaluator's systems in the fixture run, where the optional views (models users
    download, e.g. Stanza's CRAFT package) are left out: their files are never there."""
    optional = set(study().get("optional_views", []))
    return [v for v in entry["config"]["system_views"] if v not in optional]


def test_study_names_each_trained_model_and_its_command() -> None:
    text = STUDY.read_text(encoding="utf-8")
    for model, command in TRAINED.items():
        assert model in text and command in text


def test_every_system_layer_is_scored_and_tested_for_significance() -> None:
    """Each layer a tool writes into its view is scored there; pairs are tested with the
    paper's shuffles (10,000 for segmentation, POS and mentions; 1,000 for parsers)."""
    workflow = study()
    produced: dict[str, set[str]] = {}
    for step in workflow["components"]:
        if step["component"] in HELPERS:
            continue
        cls = registry().get(step["component"])
        config = cls.Config(**(step.get("config") or {}))
        view = step["view"]
        types = set(cls.requirements(config)[1])
        if step["component"] == "sentences.rules.v1" and view != "sentences_rules":
            types.discard(SENTENCE)  # the sentences a tokenizer or tagger works within
        produced.setdefault(view, set()).update(t for t in types if t in LAYER_EVALUATORS)
    scored: dict[str, set[str]] = {}
    for entry in workflow["evaluators"]:
        config = entry["config"]
        label = evaluator_label(entry)
        for view in config["system_views"]:
            scored.setdefault(view, set()).add(label)
        significance = config["significance"]
        parser = entry["component"] in ("eval.dependencies.v1", "eval.constituents.v1")
        assert significance["iterations"] == (1_000 if parser else 10_000), label
        assert significance.get("units", "documents") == ("sentences" if parser else "documents")
    assert set(scored) == set(produced), "every system view is scored, and only those"
    for view, types in produced.items():
        assert {LAYER_EVALUATORS[t] for t in types} <= scored[view], view


def test_study_is_valid_but_for_the_models_it_trains(
    monkeypatch: pytest.MonkeyPatch, craft_dir: Path
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CASFLOW_CORPORA", str(craft_dir.parent))
    try:
        load_workflow(STUDY)
    except WorkflowValidationError as exc:
        for issue in exc.issues:
            message = issue.format(str(STUDY))
            assert any(model in message for model in TRAINED), message


DICTIONARY_OBO = """\
format-version: 1.2

[Term]
id: UBERON:0002107
name: liver

[Term]
id: UBERON:0002113
name: kidney
"""


def fixture_study(root: Path, models: dict[str, Path]) -> Path:
    """The study over the fixture article, with tiny models in place of the trained ones."""
    workflow = study()
    workflow["reader"]["config"].update(corpus=str(FIXTURE), ids=["90000001"])
    for step in workflow["components"]:
        config = step.get("config") or {}
        if config.get("model") in TRAINED:
            step["config"]["model"] = str(models[config["model"]])
        # Stanza's steps name the files of a model folder (tagger.pt, parser.pt, ...).
        for files in (config.get("model_files") or {}).values():
            for key, value in files.items():
                folder, _, name = value.rpartition("/")
                if folder in TRAINED:
                    files[key] = str(models[folder] / name)
        if step["view"] in workflow.get("optional_views", []) and "resources_dir" in config:
            step["config"]["resources_dir"] = str(root / "no-stanza-resources")
        if step["component"] == "ner.dictionary.v1":
            (root / "anatomy.obo").write_text(DICTIONARY_OBO, encoding="utf-8")
            step["config"] = {"ontologies": [str(root / "anatomy.obo")], "cache_dir": str(root)}
    workflow["run"].update(jobs=1, progress=False, output=str(root / "out"))
    path = root / "craft-study.yaml"
    path.write_text(yaml.safe_dump(workflow, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def study_run(
    tmp_path_factory: pytest.TempPathFactory,
    tiny_opennlp_model: Path,  # noqa: F811
    tiny_udpipe_model: Path,  # noqa: F811
    tiny_syntax_training: Any,  # noqa: F811
) -> Path:
    from casflow.components.nltk.punkt import PunktSentenceTrainer, PunktTrainerConfig
    from casflow.pipeline.component import TrainingContext
    from casflow.pipeline.testing import cas_from_text

    root = tmp_path_factory.mktemp("craft_study")
    trainer = PunktSentenceTrainer(PunktTrainerConfig(), TrainingContext(output_dir=root))
    text = (FIXTURE / "articles" / "txt" / "90000001.txt").read_text(encoding="utf-8")
    punkt = trainer.train([trainer.example(cas_from_text(text), "d")], [], root / "punkt", print)
    models = {
        "runs/train-craft-punkt/final/model": punkt,
        "runs/train-craft-opennlp/final/model": tiny_opennlp_model,
        "runs/train-craft-udpipe-quick/final/model": tiny_udpipe_model,
        "runs/train-craft-stanza-syntax/final/model": tiny_syntax_training[1].model_dir,
    }
    workflow = fixture_study(root, models)
    assert main(["run", str(workflow), "--quiet"]) == 0
    return root / "out"


def check_report(document: Any, out: Path) -> None:
    """One score table per evaluator with the study's systems as rows and the figures of
    evaluation.json in its cells, and one significance row per pair of systems."""
    summary = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    pairs = 0
    for entry in study()["evaluators"]:
        label = evaluator_label(entry)
        systems = fixture_systems(entry)
        table = document.xpath(
            "//table[contains(@class, 'scores') and @data-evaluator=$e]", e=label
        )
        assert len(table) == 1, label
        assert [r.get("data-system") for r in table[0].xpath("./tbody/tr")] == systems
        pairs += len(systems) * (len(systems) - 1) // 2
        evaluator = load_evaluator(out, label)
        columns = [th.text_content() for th in table[0].xpath("./thead/tr/th")][2:]
        for system in systems:
            expected = evaluator.summary(summary[label]["systems"][system]["scores"])
            assert columns == list(expected), label
            cells = table[0].xpath("./tbody/tr[@data-system=$s]/td", s=system)[1:]
            for column, cell in zip(columns, cells, strict=True):
                value = float(cell.get("data-value"))
                assert value == pytest.approx(expected[column], abs=1e-12), (label, system)
    rows = document.xpath("//table[contains(@class, 'significance')]/tbody/tr")
    assert len(rows) == pairs
    # The headline table: a row per system (many more than layers), a column per layer.
    overview = document.xpath("//table[contains(@class, 'overview')]")[0]
    systems = [s for entry in study()["evaluators"] for s in fixture_systems(entry)]
    assert [r.get("data-system") for r in overview.xpath("./tbody/tr")] == list(
        dict.fromkeys(systems)
    )
    assert [th.get("data-evaluator") for th in overview.xpath("./thead/tr/th")[1:]] == [
        evaluator_label(e) for e in study()["evaluators"]
    ]
    assert len(document.xpath("//figure/svg")) >= len(summary)


@pytest.mark.slow
def test_study_runs_on_the_fixture_with_every_pair_tested(study_run: Path) -> None:
    summary = json.loads((study_run / "evaluation.json").read_text(encoding="utf-8"))
    for entry in study()["evaluators"]:
        label = evaluator_label(entry)
        config = entry["config"]
        systems = fixture_systems(entry)
        assert list(summary[label]["systems"]) == systems
        tests = summary[label].get("significance", [])
        expected = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]
        assert [(t["system_a"], t["system_b"]) for t in tests] == expected
        for test in tests:
            assert "error" not in test, test
            assert test["metric"] == config["significance"]["metric"]
            assert test["iterations"] == config["significance"]["iterations"]
            assert 0.0 < test["p_two_sided"] <= 1.0
    page = (study_run / "evaluation.html").read_text(encoding="utf-8")
    check_report(lxml_html.fromstring(page), study_run)
    assert (study_run / "evaluation.md").is_file()


@pytest.mark.slow
def test_study_report_in_headless_chromium(study_run: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("headless Chromium not installed (Debian: apt-get install chromium)")
    page = (study_run / "evaluation.html").resolve().as_uri()
    common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*common, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    check_report(lxml_html.fromstring(dom), study_run)
    screenshot = tmp_path / "craft-study.png"
    subprocess.run(
        [*common, "--window-size=1200,3000", f"--screenshot={screenshot}", page],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
