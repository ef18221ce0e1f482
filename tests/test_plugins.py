"""The example plug-in (examples/plugin) is found through its entry point."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import cassis
import pytest

from casflow.pipeline import registry as registry_module
from casflow.pipeline.runner import run_workflow
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import GENE_MENTION, load_typesystem

PLUGIN_DIR = Path(__file__).resolve().parent.parent / "examples" / "plugin"


@pytest.fixture()
def installed_example_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # A .dist-info with the plug-in's entry_points.txt is exactly what pip
    # installs; importlib.metadata finds it on sys.path like any distribution.
    site = tmp_path / "site"
    dist_info = site / "casflow_example_plugin-0.1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: casflow-example-plugin\nVersion: 0.1.0\n"
    )
    (dist_info / "entry_points.txt").write_text(
        "[casflow.components]\nexample.dictionary_genes.v1 = casflow_example_plugin:DictionaryGeneTagger\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setattr(registry_module, "_REGISTRY", None)
    yield
    monkeypatch.setattr(registry_module, "_REGISTRY", None)
    sys.modules.pop("casflow_example_plugin", None)


def test_plugin_is_listed_and_loaded_lazily(
    installed_example_plugin: None, test_components: None
) -> None:
    reg = registry_module.registry()
    assert "example.dictionary_genes.v1" in reg.names()
    assert reg.origin("example.dictionary_genes.v1") == "entry point from casflow-example-plugin"
    assert "casflow_example_plugin" not in sys.modules  # nothing imported until asked for
    cls = reg.get("example.dictionary_genes.v1")
    assert cls.produces == (GENE_MENTION,)


def test_plugin_runs_in_a_workflow(installed_example_plugin: None, tmp_path: Path) -> None:
    from tests.helpers.components import TEST_COMPONENTS

    reg = registry_module.registry()
    for cls in TEST_COMPONENTS:
        reg.register(cls.name, cls, origin="tests")
    (tmp_path / "a.txt").write_text("BRCA1 binds BARD1 in cells .", encoding="utf-8")
    text = textwrap.dedent(
        f"""\
        reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "a.txt"}"}}}}
        components:
          - {{component: test.whitespace_tokenizer.v1}}
          - {{component: example.dictionary_genes.v1, config: {{names: [BRCA1, BARD1]}}}}
        writers: [{{component: xmi.writer.v1}}]
        run: {{output: "{tmp_path / "out"}", progress: false}}
        """
    )
    report = run_workflow(load_workflow_text(text, source="wf.yaml"))
    assert report.counts["ok"] == 1
    cas = cassis.load_cas_from_xmi(
        (tmp_path / "out" / "xmi" / "a.xmi").read_text("utf-8"), typesystem=load_typesystem()
    )
    assert [m.get_covered_text() for m in cas.select(GENE_MENTION)] == ["BRCA1", "BARD1"]


def test_misspelled_plugin_option_is_a_validation_error(
    installed_example_plugin: None, tmp_path: Path
) -> None:
    from casflow.pipeline.validation import WorkflowValidationError

    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    text = f"""reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "a.txt"}"}}}}
components:
  - component: example.dictionary_genes.v1
    config: {{name: [BRCA1]}}
"""
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(text, source="wf.yaml")
    messages = [i.format("wf.yaml") for i in info.value.issues]
    assert any("unknown key 'name'. Did you mean 'names'?" in m for m in messages), messages
    assert any(
        "names: Field required" in m or "names: required key is missing" in m for m in messages
    ), messages


def _distribution(site: Path, name: str, components: str) -> None:
    """A .dist-info as pip installs it, whose casflow.components are ``components``."""
    dist_info = site / f"{name.replace('-', '_')}-0.1.0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (dist_info / "entry_points.txt").write_text(f"[casflow.components]\n{components}\n")


def test_a_component_name_registered_twice_is_broken_and_names_both_origins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from casflow.pipeline.cli import main

    site = tmp_path / "site"
    tagger = "casflow_example_plugin:DictionaryGeneTagger"
    _distribution(site, "casflow-clash-one", f"example.dictionary_genes.v1 = {tagger}")
    _distribution(site, "casflow-clash-two", f"example.dictionary_genes.v1 = {tagger}")
    _distribution(site, "casflow-clash-builtin", f"sentences.rules.v1 = {tagger}")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setattr(registry_module, "_REGISTRY", None)

    assert main(["components"]) == 0
    listing = capsys.readouterr().out
    for name, origins in [
        ("example.dictionary_genes.v1", ["casflow-clash-one", "casflow-clash-two"]),
        ("sentences.rules.v1", ["built-in", "casflow-clash-builtin"]),
    ]:
        line = next(x for x in listing.splitlines() if x.startswith(f"{name}  "))
        assert "BROKEN, cannot be used: " in line and "registered twice (" in line, line
        assert all(origin in line for origin in origins), line
    assert (
        "a plug-in cannot replace a built-in component: uninstall the plug-in, or give its "
        "component a name of its own" in listing
    )

    (tmp_path / "a.txt").write_text("BRCA1 binds BARD1.", encoding="utf-8")
    reader = f'reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "a.txt"}"}}}}\n'
    clashing = tmp_path / "clash.yaml"
    clashing.write_text(
        reader + "components:\n  - component: example.dictionary_genes.v1\n"
        "    config: {names: [BRCA1]}\n",
        encoding="utf-8",
    )
    assert main(["validate", str(clashing)]) == 2
    err = capsys.readouterr().err
    assert f"{clashing}:3:" in err and "'example.dictionary_genes.v1' is registered twice" in err
    unrelated = tmp_path / "unrelated.yaml"
    unrelated.write_text(reader + "components:\n  - component: sentences.syntok.v1\n")
    assert main(["validate", str(unrelated)]) == 0
    sys.modules.pop("casflow_example_plugin", None)
