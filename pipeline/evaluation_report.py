"""Evaluation reports: counts summed once, scores computed once, tables for papers.

Written into the output folder:

- ``evaluation.json``: per evaluator and system view, the summed counts and the
  scores computed from them;
- ``evaluation.md``: one table per evaluator, systems as rows, the evaluator's
  summary metrics as columns (as the papers' tables read), followed by paired
  significance tests between system views for evaluators configured with
  ``significance:`` (results also in ``evaluation.json``); a run that stopped early
  (``max_failures``) or could not list its input to the end says so at the top,
  as ``evaluation.html`` does;
- ``evaluation-documents.json``: the same scores per document;
- ``evaluation-errors.jsonl``: every false positive / negative with context;
- ``evaluation-counts.jsonl``: per-document (and per-unit) counts, the input of
  ``casflow significance``;
- ``evaluation.html``: tables, plots and error lists in one self-contained page
  (see :mod:`casflow.pipeline.html_report`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from casflow.pipeline import significance_report
from casflow.pipeline.chain import DocumentResult
from casflow.pipeline.component import Evaluator, RunContext
from casflow.pipeline.counts import add_counts
from casflow.pipeline.files import atomic_write_text
from casflow.pipeline.html_report import UNDEFINED, evaluated_systems, write_html_report
from casflow.pipeline.significance_report import markdown_escape as _md
from casflow.pipeline.workflow import LoadedWorkflow


def flatten_scores(scores: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a nested score dict as ``"a/b/c": value``."""
    flat: dict[str, float] = {}
    if isinstance(scores, dict):
        for key, value in scores.items():
            flat.update(
                flatten_scores(
                    value,
                    f"{prefix}{key}/" if not isinstance(value, (int, float)) else f"{prefix}{key}",
                )
            )
    elif isinstance(scores, (int, float)) and not isinstance(scores, bool):
        flat[prefix.rstrip("/")] = float(scores)
    return flat


def _fmt(value: float, decimals: int | None = None) -> str:
    # An evaluator may fix its table's decimals (``Evaluator.summary_decimals``); ints stay ints.
    if decimals is not None:
        return str(value) if isinstance(value, int) else f"{value:.{decimals}f}"
    if float(value).is_integer() and abs(value) >= 1:
        return f"{int(value)}"
    return f"{value:.4f}"


MARKDOWN_FILE = "evaluation.md"
DOCUMENTS_FILE = "evaluation-documents.json"
ERRORS_FILE = "evaluation-errors.jsonl"


@dataclass
class _EvaluatorResults:
    """One evaluator's results over the run: per system view, summed and per document."""

    systems: dict[str, Any] = field(default_factory=dict)
    per_document: dict[str, dict[str, Any]] = field(default_factory=dict)
    count_lines: list[str] = field(default_factory=list)
    error_lines: list[str] = field(default_factory=list)


def _error_line(where: dict[str, Any], error: dict[str, Any]) -> dict[str, Any]:
    """``where`` (evaluator, system view, document) followed by the error's own keys.

    An error key equal to a location key is written as ``error_<key>`` rather than
    replacing the location: a POS error's ``system`` tag once overwrote the view's name,
    and a plug-in evaluator may still use such a name.
    """
    line = dict(where)
    for key, value in error.items():
        while key in line:
            key = f"error_{key}"
        line[key] = value
    return line


def _sorted_counts(counts: Mapping[str, float]) -> dict[str, float]:
    """``counts`` by key: the order an evaluator built them in carries no meaning, and one
    built from a set (eval.pos.v1's per-tag counts) changes with PYTHONHASHSEED, which
    made evaluation.json and evaluation-counts.jsonl differ between runs of one workflow."""
    return dict(sorted(counts.items()))


def _collect(
    label: str, evaluator: Evaluator[Any], evaluated: list[DocumentResult]
) -> _EvaluatorResults:
    """Counts summed per system view (scored once), per-document scores, count and error lines."""
    out = _EvaluatorResults()
    for system in evaluator.config.system_views:
        total: dict[str, float] = {}
        n_docs = 0
        out.per_document[system] = {}
        for res in evaluated:
            entry = res.evaluation.get(label, {}).get(system)
            if entry is None:
                continue
            n_docs += 1
            counts = _sorted_counts(entry["counts"])
            units = entry.get("units")
            if units is not None:
                units = [_sorted_counts(unit) for unit in units]
            add_counts(total, counts)
            out.per_document[system][res.doc_id] = evaluator.score(counts)
            where = {"evaluator": label, "system": system, "document": res.doc_id}
            out.count_lines.append(json.dumps({**where, "counts": counts, "units": units}))
            for error in entry.get("errors") or []:
                out.error_lines.append(json.dumps(_error_line(where, error), ensure_ascii=False))
        total = _sorted_counts(total)
        scores = evaluator.score(total)
        out.systems[system] = {"documents": n_docs, "counts": total, "scores": scores}
    return out


def failed_documents(results: list[DocumentResult]) -> list[str]:
    """Documents that failed or timed out, sorted (the order results arrive in depends on
    the workers; ``casflow report`` lists them from ``run-report.json`` the same way)."""
    return sorted(r.doc_id for r in results if r.status not in {"ok", "skipped"})


def _failed_note(failed: list[str]) -> list[str]:
    if not failed:
        return []
    return [
        f"**{len(failed)} document(s) failed and are not in these scores:** "
        + ", ".join(map(_md, failed[:20]))
        + (" ..." if len(failed) > 20 else ""),
        "",
    ]


PART_OF_THE_INPUT = "These scores cover only the documents processed:"


def part_of_the_input(run_report: Mapping[str, Any]) -> str | None:
    """Why the scores cover only part of the input, from the run report's fields
    (``run-report.json``): ``max_failures`` stopped the run, or the input could not be
    listed to its end. None when every document was looked at. (A run stopped by a
    signal or a full disk writes no evaluation.)"""
    from casflow.pipeline.runner import LISTING_FAILED_ID, LISTING_STAGE

    reasons = []
    if run_report.get("stopped_by"):
        left = (run_report.get("counts") or {}).get("not_processed") or 0
        reasons.append(
            "the run stopped early"
            + (f", {left} document(s) listed were not processed" if left else "")
            + f" ({run_report['stopped_by']})"
        )
    for failure in run_report.get("failures") or []:
        if not isinstance(failure, Mapping):  # casflow report reads damaged files too
            continue
        if failure.get("document") == LISTING_FAILED_ID and failure.get("stage") == LISTING_STAGE:
            reasons.append(str(failure.get("error")))
    return "; ".join(reasons) + "." if reasons else None


def _part_note(part: str | None) -> list[str]:
    return [f"**{PART_OF_THE_INPUT}** {_md(part)}", ""] if part else []


def _left_out_note(left_out: dict[str, str]) -> list[str]:
    if not left_out:
        return []
    lines = ["**Optional views left out of this run** (their steps and evaluator rows):", ""]
    lines += [f"- {_md(view)}: {_md(why)}" for view, why in left_out.items()]
    return [*lines, ""]


def _significance_tests(
    label: str, evaluator: Evaluator, evaluated: list[DocumentResult], systems: list[str]
) -> list[dict[str, Any]] | None:
    """Paired tests between the system views when the evaluator's config asks for them."""
    settings = evaluator.config.significance
    if settings is None or len(systems) < 2:
        return None
    return significance_report.pairwise(
        evaluator,
        significance_report.documents_from_results(evaluated, label),
        systems,
        settings.metric,
        iterations=settings.iterations,
        seed=settings.seed,
        units=settings.units,
    )


def write_evaluation_reports(
    workflow: LoadedWorkflow,
    results: list[DocumentResult],
    output_dir: Path,
    context: RunContext,
    run_report: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the evaluation files (see the module docstring); return the summary.
    ``run_report``: the run's report as ``run-report.json`` holds it, for the note on a
    run that looked at only part of its input (:func:`part_of_the_input`)."""
    summary: dict[str, Any] = {}
    per_document: dict[str, Any] = {}
    error_lines: list[str] = []
    count_lines: list[str] = []
    failed = failed_documents(results)
    part = part_of_the_input(run_report) if run_report else None
    markdown = [f"# Evaluation: {_md(workflow.spec.name or Path(workflow.source).name)}", ""]
    markdown += _part_note(part)
    markdown += _failed_note(failed)
    markdown += _left_out_note(workflow.left_out)
    evaluated = [r for r in results if r.status in {"ok", "skipped"}]
    evaluators: dict[str, Evaluator] = {}
    for step in workflow.evaluators:
        label = step.spec.label()
        evaluator = step.build(Evaluator, context)
        evaluators[label] = evaluator
        collected = _collect(label, evaluator, evaluated)
        count_lines += collected.count_lines
        error_lines += collected.error_lines
        per_document[label] = collected.per_document
        summary[label] = {
            "component": step.spec.component,
            "gold_view": evaluator.config.gold_view,
            "config": step.config.model_dump(mode="json"),
            "systems": collected.systems,
        }
        markdown += _markdown_table(label, step.spec.component, evaluator, collected.systems)
        tests = _significance_tests(label, evaluator, evaluated, list(collected.systems))
        if tests is not None:
            summary[label]["significance"] = tests
            markdown += significance_report.markdown_table(tests)
        markdown += _markdown_details(label, evaluator, collected.systems)
    files = {
        significance_report.SUMMARY_FILE: json.dumps(summary, indent=2, ensure_ascii=False),
        DOCUMENTS_FILE: json.dumps(per_document, indent=1, ensure_ascii=False),
        ERRORS_FILE: "".join(line + "\n" for line in error_lines),
        significance_report.COUNTS_FILE: "".join(line + "\n" for line in count_lines),
    }
    for name, text in files.items():
        atomic_write_text(output_dir / name, text)
    atomic_write_text(output_dir / MARKDOWN_FILE, "\n".join(markdown) + "\n")
    write_html_report(
        output_dir,
        workflow.spec.name or Path(workflow.source).name,
        summary,
        per_document,
        evaluators,
        output_dir / ERRORS_FILE,
        failed=failed,
        left_out=workflow.left_out,
        part=part,
    )
    return summary


def _markdown_details(label: str, evaluator: Evaluator, systems: dict[str, Any]) -> list[str]:
    """The evaluator's further tables (``Evaluator.detail_tables``), one per system."""
    lines: list[str] = []
    for name, data in evaluated_systems(systems).items():  # the others' tables: zeros
        for title, table in evaluator.detail_tables(data["scores"]).items():
            columns = list(dict.fromkeys(c for row in table.values() for c in row))
            lines += [f"{_md(label)}, {_md(name)}: {_md(title)}", ""]
            if not columns:  # nothing to list (no gold production missed): no empty table
                lines += ["(none)", ""]
                continue
            lines.append("| | " + " | ".join(map(_md, columns)) + " |")
            lines.append("|---|" + "---:|" * len(columns))
            for row_name, row in table.items():
                cells = [
                    _fmt(row[c], evaluator.summary_decimals) if c in row else "" for c in columns
                ]
                lines.append(f"| {_md(row_name)} | " + " | ".join(cells) + " |")
            lines.append("")
    return lines


def _markdown_table(
    label: str, component: str, evaluator: Evaluator, systems: dict[str, Any]
) -> list[str]:
    # A system no document was evaluated for has no scores (not scores of 0): empty cells.
    evaluated = evaluated_systems(systems)
    rows = {
        name: evaluator.summary(data["scores"]) if name in evaluated else {}
        for name, data in systems.items()
    }
    columns: list[str] = []
    for row in rows.values():
        for col in row:
            if col not in columns:
                columns.append(col)
    lines = [f"## {_md(label)} (`{component}`)", ""]
    if not evaluated:
        return lines + ["(no document was evaluated)", ""]
    if not columns:
        return lines + ["(no scores)", ""]
    lines.append("| system | documents | " + " | ".join(map(_md, columns)) + " |")
    lines.append("|---|---:|" + "---:|" * len(columns))
    for name, row in rows.items():
        # An evaluated system without a column has no score there (nothing to score): a
        # dash, as the page shows it; a system no document was evaluated for, blanks.
        missing = UNDEFINED if name in evaluated else ""
        cells = [_fmt(row[c], evaluator.summary_decimals) if c in row else missing for c in columns]
        lines.append(f"| {_md(name)} | {systems[name]['documents']} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines
