"""Worker start-up without modules nobody in the chain uses (``Component.modules_not_used``,
``Component.stand_in_modules``).

spaCy imports thinc, which imports torch wherever it is installed (a second or
more of each worker's start); a run's loky workers build a spaCy step whose
pipeline has no torch layer with torch hidden, unless a step uses torch. spaCy
also imports its whole command line (typer, weasel, httpx: a quarter of a
worker's start); workers build a spaCy step with a stand-in for it, and spaCy's
command line still imports whole when something asks for it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from types import ModuleType

import pytest

from casflow.components.spacy.loading import config_needs_torch, pipeline_config_path
from casflow.pipeline.chain import Chain, modules_hidden, modules_standing_in
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


# -- stand-ins for modules a library imports though the step never uses them ----------


def test_stand_ins_are_in_place_inside_only_and_only_for_a_package_not_imported() -> None:
    name = f"casflow_absent_{uuid.uuid4().hex}.cli"
    stand_in = ModuleType(name)
    with modules_standing_in({name: stand_in, "json.cli": ModuleType("json.cli")}) as placed:
        assert placed == [name]  # json is imported: its own import is over
        assert sys.modules[name] is stand_in
        assert "json.cli" not in sys.modules
    assert name not in sys.modules
    real = ModuleType(name)  # the real module took the stand-in's place: it stays
    with modules_standing_in({name: stand_in}):
        sys.modules[name] = real
    assert sys.modules.pop(name) is real


def test_a_step_is_built_with_its_stand_ins_only_in_a_worker_and_only_that_step(
    tmp_path: Path, module_name: str, test_components: None
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    steps = _probe(a, stand_in=[module_name], probe=[module_name]) + _probe(b, probe=[module_name])
    _chain(_workflow(tmp_path, steps, jobs=1), tmp_path, hide=True)
    assert _records(a)[0]["importable"] == {module_name: "stand-in"}
    assert _records(b)[0]["importable"] == {module_name: True}
    sys.modules.pop(module_name)
    _chain(_workflow(tmp_path, steps, jobs=1), tmp_path, hide=False)
    assert _records(a)[1]["importable"] == {module_name: True}


def test_no_stand_in_for_a_module_another_step_uses_or_a_package_of_it(
    tmp_path: Path, module_name: str, test_components: None
) -> None:
    sub = f"{module_name}.sub"  # no such module: only a stand-in makes it importable
    found = []
    for used in (sub, module_name, f"{module_name}_other"):
        record = tmp_path / f"{used}.jsonl"
        steps = _probe(record, stand_in=[sub], probe=[sub]) + _probe(
            tmp_path / "b.jsonl", used=[used]
        )
        _chain(_workflow(tmp_path, steps, jobs=1), tmp_path, hide=True)
        found.append(_records(record)[0]["importable"][sub])
        sys.modules.pop(module_name, None)
    assert found == [False, False, "stand-in"]


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


# -- spaCy: its command line is not imported to build a step ------------------------

CRAFT_TEXT = Path(__file__).parent / "fixtures" / "craft" / "articles" / "txt" / "90000001.txt"


def test_workers_of_a_spacy_chain_do_not_import_spacys_command_line_and_write_the_same_bytes(
    tmp_path: Path, test_components: None
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / CRAFT_TEXT.name).write_bytes(CRAFT_TEXT.read_bytes())
    record = tmp_path / "loaded.jsonl"
    # The probe looks before, then imports spaCy's command line after the spaCy step.
    steps = SPACY_STEP + _probe(
        record, loaded=["spacy", "spacy.cli", "typer", "weasel"], probe=["spacy.cli"]
    )
    report = run_workflow(load_workflow_text(_workflow(tmp_path, steps, jobs=2), source="wf.yaml"))
    assert report.counts["ok"] == 3
    workers = [r for r in _records(record) if r["pid"] != os.getpid()]
    assert workers
    for line in workers:
        assert line["loaded"] == {
            "spacy": True,
            "spacy.cli": False,
            "typer": False,
            "weasel": False,
        }
        assert line["importable"] == {"spacy.cli": True}
    # The same documents in this process, spaCy imported with its command line: same bytes.
    one = run_workflow(
        load_workflow_text(_workflow(tmp_path, steps, jobs=1, out="one"), source="wf.yaml")
    )
    assert one.counts["ok"] == 3
    written = sorted(p.name for p in (tmp_path / "out" / "xmi").iterdir())
    assert written == sorted(p.name for p in (tmp_path / "one" / "xmi").iterdir())
    assert len([n for n in written if n.endswith(".xmi")]) == 3
    for name in written:
        assert (tmp_path / "out" / "xmi" / name).read_bytes() == (
            tmp_path / "one" / "xmi" / name
        ).read_bytes(), name


_AFTER_STAND_IN = """\
import json, sys
from casflow.components.spacy.cli_stand_in import cli_stand_in
from casflow.pipeline.chain import modules_standing_in

with modules_standing_in(cli_stand_in()):
    exec(sys.argv[1])
    import spacy
    during = [m for m in ("spacy.cli", "typer") if m in sys.modules]
real = sys.modules["spacy.cli.info"] if "spacy.cli.info" in sys.modules else None
cli = spacy.cli  # spaCy's package attribute, as before
print(json.dumps({
    "during": during,
    "file": sys.modules["spacy.cli.info"].__file__.replace(chr(92), "/").rsplit("/", 3)[-3:],
    "info": spacy.info(silent=True) == sys.modules["spacy.cli.info"].info(silent=True),
    "commands": sorted(c.name for c in cli.app.registered_commands if c.name in ("info", "train")),
    "train": sys.modules["spacy.cli.train"].train_cli.__module__,
}))
"""


@pytest.mark.parametrize(
    ("first", "during"),
    [
        ("import spacy", []),
        ("import spacy.cli.info", []),
        ("import spacy.cli", ["spacy.cli", "typer"]),
        ("from spacy.cli import train_cli", ["spacy.cli", "typer"]),
        ("from spacy.cli.info import info_cli", ["spacy.cli", "typer"]),
    ],
)
def test_spacys_command_line_is_whole_after_its_stand_in(first: str, during: list[str]) -> None:
    # A fresh interpreter: how spaCy is first imported decides what the stand-in does.
    out = subprocess.run(
        [sys.executable, "-c", _AFTER_STAND_IN, first], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    assert result["during"] == during
    assert result["file"] == ["spacy", "cli", "info.py"]  # spaCy's own module, not the stand-in
    assert result["info"]  # spacy.info gives what spaCy's gives
    assert result["commands"] == ["info", "train"]  # `python -m spacy info` / `train` exist
    assert result["train"] == "spacy.cli.train"


def test_spacy_steps_offer_the_command_line_stand_in(tmp_path: Path) -> None:
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    for name in (
        "spacy.pipeline.v1",
        "sentences.spacy.sentencizer.v1",
        "tokens.spacy.english.v1",
        "tokens.scispacy.v1",
        "scispacy.abbreviations.v1",
    ):
        component = registry().get(name)
        config = (
            component.Config(model="casflow:craft_syntax")
            if name == "spacy.pipeline.v1"
            else component.Config()
        )
        assert list(component.stand_in_modules(config, context)) == ["spacy.cli.info"], name
