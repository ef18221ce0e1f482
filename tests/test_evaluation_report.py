"""The evaluation reports of runs that did not score every document, as the run writes
them and as ``casflow report`` writes the page again; the run report's end time.

The workflow tokenizes a gold and a system view with the engine-test tokenizer (the
system's fails on documents containing FAIL) and scores tokens.
"""

from __future__ import annotations

import json
import textwrap
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from lxml import html as lxml_html

from casflow.pipeline.cli import main
from casflow.pipeline.evaluation_report import part_of_the_input
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.workflow import load_workflow_text

pytestmark = pytest.mark.usefixtures("test_components")


def _workflow(folder: Path, documents: dict[str, str], name: str = "", run: str = "") -> Path:
    """``wf.yaml`` in ``folder`` over ``documents`` (relative path -> text), output ``out``."""
    for relative, text in documents.items():
        path = folder / "in" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    pattern = "*/*.txt" if any("/" in r for r in documents) else "*.txt"
    workflow = folder / "wf.yaml"
    workflow.write_text(
        textwrap.dedent(
            f"""\
            {f"name: {name}" if name else ""}
            reader: {{component: text.reader.v1, config: {{input: "{folder / "in" / pattern}"}}}}
            components:
              - {{component: test.whitespace_tokenizer.v1, view: gold}}
              - {{component: test.whitespace_tokenizer.v1, view: system, config: {{fail_on: FAIL}}}}
            evaluators:
              - {{component: eval.tokens.v1}}
            run: {{jobs: 1, batch_size: 1, progress: false, output: "{folder / "out"}"{run}}}
            """
        ),
        encoding="utf-8",
    )
    return workflow


def _rebuilt(out: Path) -> str:
    """The page ``casflow report`` writes from the run's files."""
    page = out / "evaluation.html"
    page.unlink()
    assert main(["report", str(out)]) == 0
    return page.read_text(encoding="utf-8")


def _notes(page: str) -> list[str]:
    return [p.text_content() for p in lxml_html.fromstring(page).xpath("//p[@class='failed']")]


def test_a_repeated_id_is_left_out_of_the_rebuilt_page_as_of_the_runs(tmp_path: Path) -> None:
    # doc1 twice: the second is a failure of the listing, not a document the scores lack
    # (the first doc1 is scored), and the run's page does not list it among the failed.
    documents = {"x/doc1.txt": "a b c", "y/doc1.txt": "d e", "x/doc2.txt": "f g"}
    workflow = _workflow(tmp_path, documents)
    assert main(["run", str(workflow)]) == 1
    out = tmp_path / "out"
    (failure,) = json.loads((out / "run-report.json").read_text())["failures"]
    assert (failure["document"], failure["stage"]) == ("doc1", "listing the input")
    page = (out / "evaluation.html").read_text(encoding="utf-8")
    assert _notes(page) == []
    # Without name: the workflow file's name, as the run titled it (not the folder's).
    assert "<title>Evaluation: wf.yaml</title>" in page
    assert _rebuilt(out) == page


def test_a_run_stopped_by_max_failures_says_its_scores_cover_part_of_the_input(
    tmp_path: Path,
) -> None:
    documents = {f"d{i}.txt": "FAIL here" if i == 1 else f"text {i}" for i in range(5)}
    workflow = _workflow(tmp_path, documents, name="stopped", run=", max_failures: 1")
    assert main(["run", str(workflow)]) == 1
    out = tmp_path / "out"
    report = json.loads((out / "run-report.json").read_text())
    assert report["stopped_by"].startswith("max_failures: 1 document failed")
    assert "documents after the 2 listed were never looked at" in report["stopped_by"]
    markdown = (out / "evaluation.md").read_text(encoding="utf-8")
    part = (
        "**These scores cover only the documents processed:** the run stopped early "
        f"({report['stopped_by']})."
    )
    assert part in markdown.splitlines()
    assert "**1 document(s) failed and are not in these scores:** d1" in markdown
    page = (out / "evaluation.html").read_text(encoding="utf-8")
    assert _notes(page) == [
        part.replace("**", ""),
        "1 document(s) failed and are not in these scores: d1",
    ]
    assert _rebuilt(out) == page


def test_documents_listed_and_not_processed_are_counted_in_the_note() -> None:
    # Workers take documents ahead of the failure that stops the run (jobs > 1).
    report = {"stopped_by": "max_failures: ...", "counts": {"not_processed": 3}, "failures": []}
    assert part_of_the_input(report) == (
        "the run stopped early, 3 document(s) listed were not processed (max_failures: ...)."
    )
    assert part_of_the_input({"stopped_by": None, "counts": {"not_processed": 0}}) is None


def test_a_listing_that_broke_part_way_is_said_on_the_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from casflow.components.formats.text.reader import TextReader

    listed = TextReader.iter_documents

    def fails_after_two(self: TextReader) -> Any:
        for n, ref in enumerate(listed(self)):
            if n == 2:
                raise OSError("the disk went away")
            yield ref

    monkeypatch.setattr(TextReader, "iter_documents", fails_after_two)
    workflow = _workflow(tmp_path, {f"d{i}.txt": f"text {i}" for i in range(4)})
    loaded = load_workflow_text(workflow.read_text(), source=str(workflow))
    report = run_workflow(loaded, RunOptions(show_progress=False))
    assert report.counts["ok"] == 2 and report.failures[0]["document"] == "(input listing)"
    out = tmp_path / "out"
    markdown = (out / "evaluation.md").read_text(encoding="utf-8")
    assert (
        "**These scores cover only the documents processed:** the input could not be listed "
        "after 2 documents (OSError: the disk went away); the documents after that point were "
        "not looked at." in markdown
    )
    assert "failed and are not in these scores" not in markdown
    page = (out / "evaluation.html").read_text(encoding="utf-8")
    (note,) = _notes(page)
    assert note.startswith("These scores cover only the documents processed: the input could")
    assert _rebuilt(out) == page


def test_the_run_report_ends_after_the_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The evaluation (significance tests, the page) can take many seconds after the last
    # document: finished_at is the end of the run, final_files_seconds that time.
    import casflow.pipeline.evaluation_report as evaluation_report

    write = evaluation_report.write_evaluation_reports
    written_at: list[float] = []

    def slow(*args: Any, **kwargs: Any) -> dict[str, Any]:
        summary = write(*args, **kwargs)
        time.sleep(1.1)
        written_at.append(time.time())
        return summary

    monkeypatch.setattr(evaluation_report, "write_evaluation_reports", slow)
    workflow = _workflow(tmp_path, {"d1.txt": "a b"})
    assert main(["run", str(workflow)]) == 0
    report = json.loads((tmp_path / "out" / "run-report.json").read_text())
    assert report["final_files_seconds"] >= 1.1
    started = datetime.fromisoformat(report["started_at"]).timestamp()
    finished = datetime.fromisoformat(report["finished_at"]).timestamp()
    assert finished >= int(written_at[0])  # finished_at is given in whole seconds
    assert finished - started <= report["seconds"] + report["final_files_seconds"] + 1


def test_a_run_whose_evaluation_could_not_be_written_leaves_no_page_to_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A first run writes its evaluation; a second (overwrite) cannot (a full disk): the
    # folder must not pass the first run's files off as the second's.
    workflow = _workflow(tmp_path, {"a.txt": "a b c", "b.txt": "d e"})
    assert main(["run", str(workflow)]) == 0
    out = tmp_path / "out"
    assert main(["report", str(out)]) == 0

    import casflow.pipeline.evaluation_report as evaluation_report

    def full_disk(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device", str(out / "evaluation.json"))

    monkeypatch.setattr(evaluation_report, "write_evaluation_reports", full_disk)
    assert main(["run", str(workflow), "--overwrite"]) == 1
    on_disk = json.loads((out / "run-report.json").read_text(encoding="utf-8"))
    assert on_disk["evaluation"] is None and "No space left" in on_disk["final_files_error"]
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    assert "the last run stopped early (could not write" in capsys.readouterr().err


def test_a_run_killed_before_its_report_leaves_the_report_of_a_run_under_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from casflow.pipeline.run_report import write_running_report
    from casflow.pipeline.workflow import load_workflow

    workflow = _workflow(tmp_path, {"a.txt": "a b c"})
    assert main(["run", str(workflow)]) == 0
    out = tmp_path / "out"
    # What kill -9 after the start of a second run leaves: the report written as it began.
    write_running_report(out, load_workflow(workflow))
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    assert "the last run did not finish (it is running, or was killed)" in (capsys.readouterr().err)


def test_a_resumed_run_scores_the_documents_an_earlier_run_finished(tmp_path: Path) -> None:
    documents = {f"doc{i}.txt": "a b c " * (i + 1) for i in range(5)}
    workflow = _workflow(tmp_path, documents)
    assert main(["run", str(workflow)]) == 0
    out = tmp_path / "out"
    whole = json.loads((out / "evaluation.json").read_text("utf-8"))
    journal = out / ".casflow" / "journal.jsonl"
    journal.write_text("".join(journal.read_text("utf-8").splitlines(True)[:2]), "utf-8")
    assert main(["run", str(workflow)]) == 0
    report = json.loads((out / "run-report.json").read_text("utf-8"))
    assert (report["counts"]["skipped"], report["counts"]["ok"]) == (2, 3)
    # The two done before are scored from what the journal kept of them.
    assert json.loads((out / "evaluation.json").read_text("utf-8")) == whole


def test_a_detail_table_with_nothing_to_list_is_said_not_drawn_empty() -> None:
    # eval.productions.v1's "missed gold productions" table of a parse that missed
    # none came out as "| |  |" over "|---|": a broken Markdown table.
    from types import SimpleNamespace

    from casflow.pipeline.evaluation_report import _markdown_details

    evaluator = SimpleNamespace(
        summary_decimals=2,
        detail_tables=lambda scores: {"missed": {}, "errors": {"x": {"count": 1}}},
    )
    lines = _markdown_details("productions", evaluator, {"sys": {"documents": 1, "scores": {}}})
    text = "\n".join(lines)
    assert "productions, sys: missed\n\n(none)\n" in text
    assert "| |  |\n" not in text and "| | count |\n|---|---:|\n| x | 1 |" in text
