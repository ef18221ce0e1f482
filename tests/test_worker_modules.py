"""Worker start-up without modules nobody in the chain uses (``Component.modules_not_used``).

spaCy imports thinc, which imports torch wherever it is installed (a second or
more of each worker's start); a run's loky workers build a spaCy step whose
pipeline has no torch layer with torch hidden, unless a step uses torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from casflow.components.spacy.loading import config_needs_torch, pipeline_config_path
from casflow.pipeline.chain import Chain, modules_hidden
from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.pipeline.runner import run_workflow
from casflow.pipeline.workflow import load_workflow_text


@pytest.fixture()
def module_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module nobody has imported, importable here and in worker processes."""
    folder = tmp_path / "modules"
    folder.mkdir()
    name = f"casflow_probe_{uuid.uuid4().hex}"
    (folder / f"{name}.py").write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), *sys.path]))
    return name


def _workflow(tmp_path: Path, steps: str, jobs: int, out: str = "out") -> str:
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    for i in range(2):
        (inputs / f"doc{i}.txt").write_text(f"Document {i} about BRCA2.\n", encoding="utf-8")
    return (
        f'reader: {{component: text.reader.v1, config: {{input: "{inputs}"}}}}\n'
        "components:\n" + textwrap.indent(steps, "  ") + "writers: [{component: xmi.writer.v1}]\n"
        f'run: {{jobs: {jobs}, batch_size: 1, output: "{tmp_path / out}", progress: false}}\n'
    )


def _probe(record: Path, **lists: list[str]) -> str:
    config = {"record": str(record), **lists}
    return f"- {{component: test.module_probe.v1, config: {json.dumps(config)}}}\n"


def _records(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def _chain(text: str, tmp_path: Path, hide: bool) -> Chain:
    workflow = load_workflow_text(text, source=str(tmp_path / "wf.yaml"))
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    return Chain(workflow, context, hide_unused_modules=hide)


def test_modules_hidden_fail_to_import_inside_only(module_name: str) -> None:
    with modules_hidden([module_name, "json"]) as hidden:
        assert hidden == [module_name]  # json is imported already: it stays
        with pytest.raises(ImportError):
            importlib.import_module(module_name)
        assert importlib.util.find_spec(module_name) is None  # "not installed"
        importlib.import_module("json")
    assert importlib.import_module(module_name).VALUE == 1


def test_a_step_is_built_without_the_modules_it_does_not_use_and_only_that_step(
    tmp_path: Path, module_name: str, test_components: None
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    steps = _probe(a, not_used=[module_name], probe=[module_name]) + _probe(b, probe=[module_name])
    _chain(_workflow(tmp_path, steps, jobs=1), tmp_path, hide=True)
    assert _records(a)[0]["importable"] == {module_name: False}
    assert _records(b)[0]["importable"] == {module_name: True}


def test_a_module_another_step_uses_is_not_hidden(
    tmp_path: Path, module_name: str, test_components: None
) -> None:
    a = tmp_path / "a.jsonl"
    steps = _probe(a, not_used=[module_name], probe=[module_name]) + _probe(
        tmp_path / "b.jsonl", used=[module_name]
    )
    _chain(_workflow(tmp_path, steps, jobs=1), tmp_path, hide=True)
    assert _records(a)[0]["importable"] == {module_name: True}


def test_loky_workers_hide_unused_modules_and_the_run_process_does_not(
    tmp_path: Path, module_name: str, test_components: None
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    steps = _probe(a, not_used=[module_name], probe=[module_name]) + _probe(b, probe=[module_name])
    # jobs: 1 runs in this process, which may go on to build other workflows: nothing hidden.
    run_workflow(load_workflow_text(_workflow(tmp_path, steps, jobs=1), source="wf.yaml"))
    assert [r["importable"] for r in _records(a)] == [{module_name: True}]
    a.unlink()
    b.unlink()
    report = run_workflow(
        load_workflow_text(_workflow(tmp_path, steps, jobs=2, out="out2"), source="wf.yaml")
    )
    assert report.counts["ok"] == 2
    workers = [r for r in _records(a) if r["pid"] != os.getpid()]
    assert workers and all(r["importable"] == {module_name: False} for r in workers)
    # The next step of the same worker imports it (so the worker could).
    assert all(r["importable"] == {module_name: True} for r in _records(b))


# -- spaCy: torch only where a pipeline has a torch layer ------------------------------

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed (the stanza extra installs it)",
)
SPACY_STEP = (
    '- {component: spacy.pipeline.v1, config: {model: "casflow:craft_syntax", '
    "layers: [sentences, tokens]}}\n"
)


@needs_torch
def test_workers_of_a_spacy_chain_do_not_import_torch(
    tmp_path: Path, test_components: None
) -> None:
    record = tmp_path / "loaded.jsonl"
    steps = SPACY_STEP + _probe(record, loaded=["thinc", "torch"])
    report = run_workflow(load_workflow_text(_workflow(tmp_path, steps, jobs=2), source="wf.yaml"))
    assert report.counts["ok"] == 2
    workers = [r for r in _records(record) if r["pid"] != os.getpid()]
    assert workers and all(r["loaded"] == {"thinc": True, "torch": False} for r in workers)


@needs_torch
def test_a_step_that_uses_torch_keeps_it_for_spacy(tmp_path: Path, test_components: None) -> None:
    # What a Stanza step does (modules_used: torch): spaCy's thinc then finds torch.
    record = tmp_path / "loaded.jsonl"
    steps = SPACY_STEP + _probe(record, used=["torch"], loaded=["torch"])
    report = run_workflow(load_workflow_text(_workflow(tmp_path, steps, jobs=2), source="wf.yaml"))
    assert report.counts["ok"] == 2
    assert all(r["loaded"] == {"torch": True} for r in _records(record))


def test_stanza_declares_that_it_uses_torch(tmp_path: Path) -> None:
    stanza = registry().get("stanza.pipeline.v1")
    context = RunContext(output_dir=tmp_path)
    assert stanza.modules_used(stanza.Config(), context) == {"torch"}
    assert not stanza.modules_not_used(stanza.Config(), context)


def _config(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name / "config.cfg"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    return path


def test_a_spacy_pipeline_needs_torch_unless_its_config_shows_only_spacy_and_thinc_parts(
    tmp_path: Path,
) -> None:
    shipped = pipeline_config_path("casflow:craft_syntax")
    assert shipped is not None
    text = shipped.read_text(encoding="utf-8")
    assert not config_needs_torch(shipped)
    encoder = '@architectures = "spacy.MaxoutWindowEncoder.v2"'
    assert encoder in text
    variants = {
        "bilstm": text.replace(encoder, '@architectures = "spacy.TorchBiLSTMEncoder.v1"'),
        "wrapper": text.replace(encoder, '@architectures = "PyTorchWrapper.v3"'),
        "plugin_layer": text.replace(encoder, '@architectures = "scispacy.Encoder.v1"'),
        "transformer": text + '\n[components.transformer]\nfactory = "transformer"\n',
        "plugin_pipe": text + '\n[components.negex]\nfactory = "negex"\n',
        "sourced": text + '\n[components.ner]\nsource = "en_core_web_sm"\n',
        "unreadable": "[nlp\nnot a config",
    }
    for name, variant in variants.items():
        assert config_needs_torch(_config(tmp_path, name, variant)), name
    same = _config(tmp_path, "same", text)
    assert not config_needs_torch(same)


def test_spacy_steps_declare_torch_by_their_pipeline(tmp_path: Path) -> None:
    spacy_step = registry().get("spacy.pipeline.v1")
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    shipped = spacy_step.Config(model="casflow:craft_syntax")
    assert spacy_step.modules_not_used(shipped, context) == {"torch"}
    assert not spacy_step.modules_used(shipped, context)
    folder = _config(
        tmp_path,
        "bilstm",
        '[nlp]\npipeline = ["tagger"]\n[components.tagger]\nfactory = "tagger"\n'
        '[components.tagger.model]\n@architectures = "spacy.TorchBiLSTMEncoder.v1"\n',
    ).parent
    torch_step = spacy_step.Config(model=str(folder))
    assert spacy_step.modules_used(torch_step, context) == {"torch"}
    assert not spacy_step.modules_not_used(torch_step, context)
    for blank in (
        "sentences.spacy.sentencizer.v1",
        "tokens.spacy.english.v1",
        "scispacy.abbreviations.v1",
    ):
        component = registry().get(blank)
        assert component.modules_not_used(component.Config(), context) == {"torch"}
