"""`casflow components`: one line for a mistyped or broken component, a listing that survives a
broken plug-in, allowed values, required options, what an option changes; `casflow --version`."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import pytest

import casflow.pipeline.registry as registry_module
from casflow.components.builtin import BUILTIN_COMPONENTS
from casflow.pipeline.cli import main


@pytest.fixture()
def broken_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A registry whose one plug-in raises when imported (not an ImportError)."""
    (tmp_path / "broken_plugin.py").write_text('raise RuntimeError("its model file is missing")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = registry_module.Registry()
    for name, target in BUILTIN_COMPONENTS.items():
        reg.register(name, target)
    reg.register("broken.tagger.v1", "broken_plugin:Tagger", origin="entry point from broken-pkg")
    monkeypatch.setattr(registry_module, "_REGISTRY", reg)
    return "broken.tagger.v1"


def test_a_mistyped_name_is_one_line_with_the_closest_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["components", "spacy.pipline.v1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(
        "casflow: unknown component 'spacy.pipline.v1'. Did you mean 'spacy.pipeline.v1'"
    )


def test_a_broken_plugin_is_one_line_and_marked_in_the_listing(
    broken_plugin: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["components", broken_plugin]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "'broken.tagger.v1' (entry point from broken-pkg) cannot be loaded" in line
    assert "RuntimeError: its model file is missing" in line
    assert main(["components"]) == 0
    out = capsys.readouterr().out
    assert "broken.tagger.v1  [entry point from broken-pkg]  BROKEN, cannot be used:" in out
    assert "xmi.writer.v1  [writer, built-in]" in out and "spacy.pipeline.v1  [processor" in out
    assert main(["components", "--json"]) == 0
    listing = {item["name"]: item for item in json.loads(capsys.readouterr().out)}
    assert "RuntimeError" in listing[broken_plugin]["broken"]
    assert listing["xmi.writer.v1"]["role"] == "writer"


def test_allowed_values_required_options_and_what_options_change(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["components", "spacy.pipeline.v1"]) == 0
    out = capsys.readouterr().out
    assert "config model (str, required):" in out
    assert "config tokenizer ('pipeline' | 'scispacy_combined', default \"pipeline\"):" in out
    assert (
        "config layers (list['sentences' | 'tokens' | 'pos' | 'lemma' | 'dependencies' | 'entities']"
        in out
    )
    assert "with use_existing_tokens: true: also requires Token; no longer produces Token" in out
    assert main(["components", "spacy.pipeline.v1", "--json"]) == 0
    (item,) = json.loads(capsys.readouterr().out)
    fields = {f["name"]: f for f in item["config"]}
    assert fields["model"]["required"] is True and fields["model"]["default"] is None
    assert fields["tokenizer"]["allowed"] == ["pipeline", "scispacy_combined"]
    changes = {(c["option"], json.dumps(c["value"])): c for c in item["requirements_by_option"]}
    existing = changes[("use_existing_sentences", "true")]
    assert existing["requires_added"] == [
        "de.tudarmstadt.ukp.dkpro.core.api.segmentation.type.Sentence"
    ]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"casflow {version('casflow')}"


def test_a_reader_that_stops_early_ends_the_listing_quietly() -> None:
    # casflow components | head: the listing ended in a BrokenPipeError traceback
    import subprocess
    import sys

    code = "from casflow.pipeline.cli import main; raise SystemExit(main(['components']))"
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # as head does after its lines
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, stderr
    assert "Traceback" not in stderr
