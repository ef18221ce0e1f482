"""``optional_views``: a view whose steps' models are missing is left out of the run (its
steps, its writers, its evaluator rows) with a note, instead of making the workflow
invalid; with the models present it runs like any view; a name no step writes is an
error at its YAML line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from casflow.pipeline.cli import main
from casflow.pipeline.html_report import rebuild_html_report
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text

TEXT = "The cells divide. They grow fast. Then they stop."


def _workflow(tmp_path: Path, punkt_model: Path, optional: str = "[punkt]") -> str:
    (tmp_path / "in").mkdir(exist_ok=True)
    (tmp_path / "in" / "doc1.txt").write_text(TEXT, encoding="utf-8")
    return textwrap.dedent(
        f"""\
        reader: {{component: text.reader.v1, config: {{input: {json.dumps(str(tmp_path / "in"))}}}}}
        components:
          - {{component: sentences.rules.v1, view: gold}}
          - {{component: sentences.rules.v1, view: rules}}
          - {{component: sentences.nltk.punkt.v1, view: punkt,
              config: {{model: {json.dumps(str(punkt_model))}}}}}
        optional_views: {optional}
        evaluators:
          - {{component: eval.sentences.v1, id: both, config: {{system_views: [rules, punkt]}}}}
          - {{component: eval.sentences.v1, id: alone, config: {{system_views: [punkt]}}}}
        run: {{jobs: 1, output: {json.dumps(str(tmp_path / "out"))}, progress: false}}
        """
    )


def test_a_view_whose_model_is_missing_is_left_out_with_its_evaluator_rows(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-such-punkt"
    loaded = load_workflow_text(_workflow(tmp_path, missing), source=str(tmp_path / "wf.yaml"))
    assert list(loaded.left_out) == ["punkt"]
    assert "no Punkt parameters" in loaded.left_out["punkt"]
    assert [s.spec.view for s in loaded.processors] == ["gold", "rules"]
    # the evaluator of both views scores the one left; the one of punkt alone is gone
    assert [(s.spec.id, s.config.system_views) for s in loaded.evaluators] == [  # type: ignore[attr-defined]
        ("both", ["rules"])
    ]
    assert "punkt" not in json.dumps(loaded.resolved["evaluators"])
    report = run_workflow(loaded, RunOptions(show_progress=False))
    assert report.counts["ok"] == 1
    assert list(report.evaluation["both"]["systems"]) == ["rules"]
    # the reports say what was left out and why, not only the console
    out = tmp_path / "out"
    saved = json.loads((out / "run-report.json").read_text(encoding="utf-8"))
    assert saved["left_out_views"] == loaded.left_out
    markdown = (out / "evaluation.md").read_text(encoding="utf-8")
    assert "Optional views left out" in markdown
    assert f"- punkt: {loaded.left_out['punkt']}" in markdown
    html = (out / "evaluation.html").read_text(encoding="utf-8")
    assert "Optional views left out" in html and "<li>punkt: model " in html
    assert "no Punkt parameters" in html
    (out / "evaluation.html").unlink()
    rebuild_html_report(out)
    assert "<li>punkt: model " in (out / "evaluation.html").read_text("utf-8")


def test_the_same_view_runs_where_its_model_is_present(tmp_path: Path) -> None:
    from casflow.components.nltk.punkt import PunktSentenceTrainer, PunktTrainerConfig
    from casflow.pipeline.component import TrainingContext
    from casflow.pipeline.testing import cas_from_text

    pytest.importorskip("nltk", reason="Punkt is in the tools extra")
    trainer = PunktSentenceTrainer(PunktTrainerConfig(), TrainingContext(output_dir=tmp_path))
    model = trainer.train([trainer.example(cas_from_text(TEXT), "d")], [], tmp_path / "m", print)
    loaded = load_workflow_text(_workflow(tmp_path, model), source=str(tmp_path / "wf.yaml"))
    assert loaded.left_out == {}
    report = run_workflow(loaded, RunOptions(show_progress=False))
    assert list(report.evaluation["both"]["systems"]) == ["rules", "punkt"]
    assert list(report.evaluation["alone"]["systems"]) == ["punkt"]


def test_the_command_line_says_what_was_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "wf.yaml"
    path.write_text(_workflow(tmp_path, tmp_path / "no-such-punkt"), encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert "optional view 'punkt' left out" in err and "no Punkt parameters" in err


def test_the_workflow_can_say_how_to_get_what_a_view_needs(tmp_path: Path) -> None:
    how = "casflow train workflows/train-punkt.yaml (2 min)"
    text = _workflow(tmp_path, tmp_path / "no-such-punkt", "{punkt: " + json.dumps(how) + "}")
    loaded = load_workflow_text(text, source=str(tmp_path / "wf.yaml"))
    assert "no Punkt parameters" in loaded.left_out["punkt"]
    assert loaded.left_out["punkt"].endswith(f"; to include it: {how}")
    # null: nothing more to say
    text = _workflow(tmp_path, tmp_path / "no-such-punkt", "{punkt: null}")
    assert "to include it" not in load_workflow_text(text, source="wf.yaml").left_out["punkt"]


@pytest.mark.parametrize(
    ("optional", "message"),
    [
        ("[nowhere]", "no step in components writes view 'nowhere'"),
        ("{nowhere: train it}", "no step in components writes view 'nowhere'"),
        ("punkt", "expected a list of view names"),
        ("{punkt: [a, b]}", "or a mapping view name -> how to get what it needs"),
    ],
)
def test_an_optional_view_no_step_writes_is_an_error_at_its_line(
    tmp_path: Path, optional: str, message: str
) -> None:
    text = _workflow(tmp_path, tmp_path / "no-such-punkt", optional)
    with pytest.raises(WorkflowValidationError) as caught:
        load_workflow_text(text, source=str(tmp_path / "wf.yaml"))
    lines = [issue.format("wf.yaml") for issue in caught.value.issues]
    line = text.splitlines().index(f"optional_views: {optional}") + 1
    assert any(message in m and f"wf.yaml:{line}" in m for m in lines), lines
    # punkt is not an optional view in either case, so its missing model is an error too
    assert any("no Punkt parameters" in m for m in lines), lines


def test_an_optional_view_that_reads_a_left_out_one_goes_too(tmp_path: Path) -> None:
    text = _workflow(tmp_path, tmp_path / "no-such-punkt", "[punkt, copy]").replace(
        "\noptional_views:",
        "\n  - {component: view.copy.v1, view: copy, config: {from_view: punkt, types: [Sentence]}}"
        "\noptional_views:",
    )
    loaded = load_workflow_text(text, source=str(tmp_path / "wf.yaml"))
    assert loaded.left_out["copy"] == "view.copy.v1 reads view 'punkt', left out"
    assert [s.spec.view for s in loaded.processors] == ["gold", "rules"]
    # not optional, a copy of a left-out view is an error naming what it lacks
    with pytest.raises(WorkflowValidationError, match="punkt"):
        load_workflow_text(
            text.replace("[punkt, copy]", "[punkt]"), source=str(tmp_path / "wf.yaml")
        )
