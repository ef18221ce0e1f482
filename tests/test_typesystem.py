from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import casflow.typesystem as typesystem_module
from casflow.pipeline.cli import main

EXTRA_TYPES = """<?xml version="1.0" encoding="UTF-8"?>
<typeSystemDescription xmlns="http://uima.apache.org/resourceSpecifier">
  <types>
    <typeDescription>
      <name>org.example.ChemicalMention</name>
      <supertypeName>de.tudarmstadt.ukp.dkpro.core.api.ner.type.NamedEntity</supertypeName>
    </typeDescription>
  </types>
</typeSystemDescription>
"""


def test_dkpro_names_and_casflow_types() -> None:
    ts = typesystem_module.load_typesystem()
    token = ts.get_type(typesystem_module.TOKEN)
    assert {f.name for f in token.all_features} >= {"pos", "lemma", "begin", "end"}
    pos = ts.get_type(typesystem_module.POS)
    assert {"PosValue", "coarseValue"} <= {f.name for f in pos.all_features}
    dep = ts.get_type(typesystem_module.DEPENDENCY)
    assert {"Governor", "Dependent", "DependencyType", "flavor"} <= {
        f.name for f in dep.all_features
    }
    assert ts.subsumes(
        ts.get_type(typesystem_module.NAMED_ENTITY), ts.get_type(typesystem_module.GENE_MENTION)
    )
    assert ts.subsumes(
        ts.get_type(typesystem_module.NAMED_ENTITY), ts.get_type(typesystem_module.ANATOMY_MENTION)
    )


def test_plugin_typesystem_is_merged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    dist = site / "casflow_chem-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: casflow-chem\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[casflow.typesystems]\nchem = casflow_chem_types:typesystem\n"
    )
    (site / "casflow_chem_types.py").write_text(f"def typesystem():\n    return {EXTRA_TYPES!r}\n")
    monkeypatch.syspath_prepend(str(site))
    typesystem_module.load_typesystem.cache_clear()
    try:
        ts = typesystem_module.load_typesystem()
        assert ts.contains_type("org.example.ChemicalMention", match_exactly=True)
        assert ts.contains_type(typesystem_module.GENE_MENTION, match_exactly=True)
        assert "org.example.ChemicalMention" in typesystem_module.typesystem_xml()
    finally:
        monkeypatch.undo()
        typesystem_module.load_typesystem.cache_clear()


@pytest.mark.parametrize(
    ("module", "problem"),
    [
        ("import casflow_no_such_module_anywhere\n", "cannot be loaded: ModuleNotFoundError"),
        ("def typesystem():\n    return '<not xml'\n", "cannot be merged: "),
    ],
)
def test_a_plugin_typesystem_that_fails_is_one_line_naming_it_and_exit_2(
    module: str,
    problem: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    site = tmp_path / "site"
    dist = site / "casflow_broken_types-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: casflow-broken-types\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[casflow.typesystems]\nbroken = casflow_broken_types:typesystem\n"
    )
    (site / "casflow_broken_types.py").write_text(module)
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    workflow = tmp_path / "wf.yaml"
    workflow.write_text(
        f'reader: {{component: text.reader.v1, config: {{input: "{tmp_path / "a.txt"}"}}}}\n'
        "components: [{component: sentences.rules.v1}]\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(site))
    typesystem_module.load_typesystem.cache_clear()
    try:
        assert main(["validate", str(workflow)]) == 2
    finally:
        monkeypatch.undo()
        typesystem_module.load_typesystem.cache_clear()
        sys.modules.pop("casflow_broken_types", None)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(
        "casflow: type system contributed by entry point 'broken' = "
        "'casflow_broken_types:typesystem' of casflow-broken-types (group casflow.typesystems) "
    ), err
    assert problem in err, err


def test_components_command_lists_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["components", "--json"]) == 0
    listing = {item["name"]: item for item in json.loads(capsys.readouterr().out)}
    spacy = listing["spacy.pipeline.v1"]
    assert spacy["role"] == "processor" and spacy["origin"] == "built-in"
    assert any(f["name"] == "model" for f in spacy["config"])
    assert listing["eval.mentions.v1"]["role"] == "evaluator"
    assert main(["components", "xmi.writer.v1"]) == 0
    out = capsys.readouterr().out
    assert "xmi.writer.v1  [writer, built-in]" in out and "config folder" in out
