"""benchmarks/_common.py: inputs checked before anything is measured, runs with a
document not ok refused, and a run's steps named as its report names their times."""

from __future__ import annotations

import importlib
import json
import tempfile
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from casflow.components.spacy.loading import load_pipeline
from casflow.pipeline.runner import run_workflow
from casflow.pipeline.workflow import load_workflow_text

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def common() -> ModuleType:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(REPO / "benchmarks"))  # as the scripts import it
        return importlib.import_module("_common")


@pytest.fixture(autouse=True)
def kept_reports_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused run's report is kept in a folder made by tempfile: here, tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "kept"))
    (tmp_path / "kept").mkdir()


def _stopped(
    capsys: pytest.CaptureFixture[str], stopped: pytest.ExceptionInfo[SystemExit]
) -> tuple[object, str]:
    message = capsys.readouterr().err
    assert message.count("\n") == 1, message  # one line
    return stopped.value.code, message


def test_a_missing_input_is_one_line_and_exit_status_2_before_anything_runs(
    common: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = []
    with pytest.raises(SystemExit) as stopped, common.checked_inputs(tmp_path / "craft"):
        ran.append(True)
    code, message = _stopped(capsys, stopped)
    assert code == 2 and not ran
    assert f"{tmp_path / 'craft'} does not exist; set CASFLOW_CORPORA" in message


def test_what_a_model_loader_raises_is_one_line_and_exit_status_2(
    common: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped, common.checked_inputs():
        load_pipeline("casflow:no_such_model")
    code, message = _stopped(capsys, stopped)
    assert code == 2 and "no shipped model 'no_such_model'" in message


def test_a_workflow_casflow_refuses_is_one_line_with_its_line_number(
    common: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "reader: {component: text.reader.v1}\ncomponents:\n  - component: no.such.v1\n"
    with pytest.raises(SystemExit) as stopped, common.checked_inputs():
        load_workflow_text(text, source="wf.yaml")
    code, message = _stopped(capsys, stopped)
    assert code == 2 and "wf.yaml:3" in message and "no.such.v1" in message


def test_a_bug_inside_the_block_keeps_its_traceback(common: ModuleType) -> None:
    with pytest.raises(KeyError), common.checked_inputs():
        {}["missing"]


def _report(folder: Path, **counts: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    failures = [
        {"document": "d2", "stage": "component x", "error": "boom\nsecond line"}
        for _ in range(counts.get("failed", 0))
    ]
    report = {
        "total_documents": sum(counts.values()),
        "counts": {"ok": 0, "failed": 0, "timeout": 0, "skipped": 0, "not_processed": 0} | counts,
        "failures": failures,
        "stage_seconds": {"x": 1.0},
    }
    path = folder / "run-report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_a_run_with_every_document_ok_gives_its_report(common: ModuleType, tmp_path: Path) -> None:
    _report(tmp_path, ok=3)
    assert common.finished_run(tmp_path)["stage_seconds"] == {"x": 1.0}


def test_a_run_with_a_document_not_ok_is_refused_and_its_report_kept(
    common: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _report(tmp_path, ok=2, failed=1, timeout=1)
    with pytest.raises(SystemExit) as stopped:
        common.finished_run(tmp_path)
    code, message = _stopped(capsys, stopped)
    assert code == 1
    assert "2 of 4 documents not ok (1 failed, 1 timeout)" in message
    assert "first: d2 at component x: boom second line" in message
    kept = Path(message.rsplit("the run report: ", 1)[1].strip())
    assert kept.parent.parent == tmp_path / "kept"
    assert kept.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


def test_a_run_without_a_report_is_refused(
    common: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        common.finished_run(tmp_path)
    code, message = _stopped(capsys, stopped)
    assert code == 2 and "no run-report.json in" in message


def test_stage_groups_name_every_step_as_the_run_report_times_it(
    common: ModuleType, tmp_path: Path, test_components: None
) -> None:
    corpus = tmp_path / "in"
    corpus.mkdir()
    for i in range(2):
        (corpus / f"doc{i}.txt").write_text(f"Document {i} about p53.\n", encoding="utf-8")
    out = tmp_path / "out"
    text = textwrap.dedent(
        f"""\
        reader: {{component: text.reader.v1, config: {{input: "{corpus}"}}}}
        components:
          - {{component: test.whitespace_tokenizer.v1, view: gold}}
          - {{component: test.whitespace_tokenizer.v1, view: system}}
          - {{component: test.constant_tagger.v1, view: system, id: tagger}}
        evaluators:
          - {{component: eval.tokens.v1}}
          - {{component: eval.tokens.v1, id: tokens-again}}
        run: {{output: "{out}", jobs: 1, progress: false}}
        """
    )
    report = run_workflow(load_workflow_text(text, source="wf.yaml"))
    system, evaluators = common.stage_groups(out)
    assert system == [
        "test.whitespace_tokenizer.v1 [gold]",
        "test.whitespace_tokenizer.v1 [system]",
        "tagger",
    ]
    assert evaluators == ["eval.tokens.v1", "tokens-again"]
    assert set(system + evaluators) <= set(report.stage_seconds)


def test_run_casflow_refuses_a_run_with_a_failed_document(
    common: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "in"
    corpus.mkdir()
    (corpus / "good.nxml").symlink_to(REPO / "examples" / "quickstart" / "example-article.nxml")
    (corpus / "broken.nxml").write_text("<article><body><p>cut off", encoding="utf-8")
    workflow = common.write_workflow(
        tmp_path / "wf.yaml",
        f"""\
        reader: {{component: nxml.reader.v1, config: {{input: "{corpus}"}}}}
        components: [{{component: sentences.rules.v1}}]
        run: {{output: "{tmp_path / "out"}", jobs: 1}}
        """,
    )
    with pytest.raises(SystemExit) as stopped:
        common.run_casflow(workflow)
    code, message = _stopped(capsys, stopped)
    assert code == 1 and "1 of 2 documents not ok (1 failed); first: broken" in message


def test_run_casflow_stops_on_a_workflow_casflow_refuses(
    common: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow = common.write_workflow(
        tmp_path / "wf.yaml",
        f"""\
        reader: {{component: text.reader.v1, config: {{input: "{tmp_path}"}}}}
        components: [{{component: no.such.v1}}]
        run: {{output: "{tmp_path / "out"}"}}
        """,
    )
    with pytest.raises(SystemExit) as stopped:
        common.run_casflow(workflow)
    code, message = _stopped(capsys, stopped)
    assert code == 2 and "exit status 2" in message and "no.such.v1" in message
