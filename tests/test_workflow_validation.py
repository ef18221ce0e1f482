from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from casflow.pipeline.cli import main
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow, load_workflow_text


@pytest.fixture()
def inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("A short text.\n", encoding="utf-8")
    return folder


def _errors(text: str, inputs: Path) -> list[str]:
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(textwrap.dedent(text).replace("INPUT", str(inputs)), source="wf.yaml")
    return [issue.format("wf.yaml") for issue in info.value.issues]


def test_three_mistakes_are_reported_together_with_lines(
    inputs: Path, test_components: None
) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config:
            input: INPUT
            patern: "*.txt"
        components:
          - component: test.constant_tagger.v1
        writers:
          - component: xmi.writter.v1
        """,
        inputs,
    )
    assert len(errors) == 3, errors
    assert errors[0].startswith(
        "wf.yaml:5: reader -> config -> patern: unknown key 'patern'. Did you mean 'pattern'?"
    )
    assert errors[1].startswith("wf.yaml:7: components -> 0 -> component:")
    assert "requires Token" in errors[1]
    assert errors[2].startswith(
        "wf.yaml:9: writers -> 0 -> component: unknown component 'xmi.writter.v1'"
    )
    assert "Did you mean 'xmi.writer.v1'" in errors[2]


def test_wrong_value_type_and_unknown_top_level_key(inputs: Path) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        run:
          jobs: many
        evaluatorz: []
        """,
        inputs,
    )
    assert any(e.startswith("wf.yaml:5: run -> jobs:") for e in errors), errors
    assert any(
        e.startswith("wf.yaml:6: evaluatorz: unknown key 'evaluatorz'. Did you mean 'evaluators'?")
        for e in errors
    )


def test_view_read_before_written(inputs: Path, test_components: None) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        components:
          - component: test.whitespace_tokenizer.v1
            view: system
          - component: test.constant_tagger.v1
            view: sytem
        """,
        inputs,
    )
    assert len(errors) == 1
    assert errors[0].startswith("wf.yaml:7: components -> 1 -> component:")
    assert "view 'sytem', which nothing before it writes" in errors[0]


def test_requirement_met_in_same_view(inputs: Path, test_components: None) -> None:
    workflow = load_workflow_text(
        textwrap.dedent(
            f"""\
            reader:
              component: text.reader.v1
              config: {{input: {inputs}}}
            components:
              - component: test.whitespace_tokenizer.v1
                view: system
              - component: test.constant_tagger.v1
                view: system
            """
        ),
        source="wf.yaml",
    )
    assert workflow.views() == ["_InitialView", "system"]
    # Defaults are filled in the resolved workflow.
    assert workflow.resolved["components"][1]["config"] == {"tag": "NN"}
    assert workflow.resolved["run"]["jobs"] == 1


def test_missing_input_is_reported_before_the_run(tmp_path: Path) -> None:
    errors = _errors(
        """\
        reader:
          component: text.reader.v1
          config: {input: INPUT}
        """,
        tmp_path / "nowhere",
    )
    assert len(errors) == 1 and "is not a file, folder, glob or @list file" in errors[0]


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("reader:\n  component: text.reader.v1\n  config: [unclosed\n", encoding="utf-8")
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow(path)
    assert info.value.issues[0].line is not None


def test_cli_validate_exit_status(
    tmp_path: Path, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(
        f"reader:\n  component: text.reader.v1\n  config: {{input: {inputs}}}\n", encoding="utf-8"
    )
    assert main(["validate", str(good)]) == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"reader:\n  component: text.reader.v1\n  config: {{input: {inputs}, encodin: x}}\nwriters:\n  - component: nope.v1\n",
        encoding="utf-8",
    )
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "2 problems" in err and f"{bad}:3:" in err and f"{bad}:5:" in err


def test_an_invalid_reader_setting_is_reported_once(inputs: Path, test_components: None) -> None:
    # The reader's error is the root cause: the views it would have written are not
    # reported again for every later step.
    errors = _errors(
        """\
        reader:
          component: craft.reader.v1
          view: gold
          config: {split: tset, layers: [tokens]}
        components:
          - component: test.constant_tagger.v1
            view: gold
        evaluators:
          - component: eval.tokens.v1
            config: {gold_view: gold, system_views: [gold]}
        """,
        inputs,
    )
    assert len(errors) == 1, errors
    assert errors[0].startswith("wf.yaml:4: reader -> config -> split:"), errors
