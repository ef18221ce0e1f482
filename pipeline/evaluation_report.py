"""Evaluation reports: counts summed once, scores computed once, tables for papers.

Written into the output folder:

- ``evaluation.json``: per evaluator and system view, the summed counts and the
  scores computed from them;
- ``evaluation.md``: one table per evaluator, systems as rows, the evaluator's
  summary metrics as columns (as the papers' tables read), followed by paired
  significance tests between system views for evaluators configured with
  ``significance:`` (results also in ``evaluation.json``);
- ``evaluation-documents.json``: the same scores per document;
- ``evaluation-errors.jsonl``: every false positive / negative with context;
- ``evaluation-counts.jsonl``: per-document (and per-unit) counts, the input of
  ``casflow significance``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from casflow.pipeline.chain import DocumentResult
from casflow.pipeline.component import Evaluator, RunContext
from casflow.pipeline.counts import add_counts
from casflow.pipeline.files import atomic_write_text
from casflow.pipeline.validation import LoadedWorkflow


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
    # An evaluator may fix its table's decimals (``summary_decimals``); ints stay ints.
    if decimals is not None:
        return str(value) if isinstance(value, int) else f"{value:.{decimals}f}"
    if float(value).is_integer() and abs(value) >= 1:
        return f"{int(value)}"
    return f"{value:.4f}"


def write_evaluation_reports(
    workflow: LoadedWorkflow, results: list[DocumentResult], output_dir: Path, context: RunContext
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    per_document: dict[str, Any] = {}
    error_lines: list[str] = []
    count_lines: list[str] = []
    markdown = [f"# Evaluation: {workflow.spec.name or Path(workflow.source).name}", ""]
    evaluated = [r for r in results if r.status in {"ok", "skipped"}]
    missing = [r.doc_id for r in results if r.status not in {"ok", "skipped"}]
    if missing:
        markdown += [
            f"**{len(missing)} document(s) failed and are not in these scores:** "
            + ", ".join(missing[:20])
            + (" ..." if len(missing) > 20 else ""),
            "",
        ]
    for step in workflow.evaluators:
        label = step.spec.label()
        evaluator: Evaluator = step.component_class(step.config, context)  # type: ignore[assignment]
        systems: dict[str, Any] = {}
        docs_for_label: dict[str, Any] = {}
        for system in step.config.system_views:  # type: ignore[attr-defined]
            total: dict[str, float] = {}
            n_docs = 0
            docs_for_label[system] = {}
            for res in evaluated:
                entry = res.evaluation.get(label, {}).get(system)
                if entry is None:
                    continue
                n_docs += 1
                add_counts(total, entry["counts"])
                docs_for_label[system][res.doc_id] = evaluator.score(entry["counts"])
                count_lines.append(
                    json.dumps(
                        {
                            "evaluator": label,
                            "system": system,
                            "document": res.doc_id,
                            "counts": entry["counts"],
                            "units": entry.get("units"),
                        }
                    )
                )
                for error in entry.get("errors") or []:
                    error_lines.append(
                        json.dumps(
                            {"evaluator": label, "system": system, "document": res.doc_id, **error},
                            ensure_ascii=False,
                        )
                    )
            scores = evaluator.score(total)
            systems[system] = {"documents": n_docs, "counts": total, "scores": scores}
        summary[label] = {
            "component": step.spec.component,
            "gold_view": step.config.gold_view,  # type: ignore[attr-defined]
            "config": step.config.model_dump(mode="json"),
            "systems": systems,
        }
        per_document[label] = docs_for_label
        markdown += _markdown_table(label, step.spec.component, evaluator, systems)
        settings = getattr(step.config, "significance", None)
        if settings is not None and len(systems) > 1:
            from casflow.pipeline import significance_report as sig

            tests = sig.pairwise(
                evaluator,
                sig.documents_from_results(evaluated, label),
                list(systems),
                settings.metric,
                iterations=settings.iterations,
                seed=settings.seed,
                units=settings.units,
            )
            summary[label]["significance"] = tests
            markdown += sig.markdown_table(tests)
    atomic_write_text(
        output_dir / "evaluation.json", json.dumps(summary, indent=2, ensure_ascii=False)
    )
    atomic_write_text(
        output_dir / "evaluation-documents.json",
        json.dumps(per_document, indent=1, ensure_ascii=False),
    )
    atomic_write_text(
        output_dir / "evaluation-errors.jsonl", "".join(line + "\n" for line in error_lines)
    )
    atomic_write_text(
        output_dir / "evaluation-counts.jsonl", "".join(line + "\n" for line in count_lines)
    )
    atomic_write_text(output_dir / "evaluation.md", "\n".join(markdown) + "\n")
    return summary


def _markdown_table(
    label: str, component: str, evaluator: Evaluator, systems: dict[str, Any]
) -> list[str]:
    rows = {name: evaluator.summary(data["scores"]) for name, data in systems.items()}
    columns: list[str] = []
    for row in rows.values():
        for col in row:
            if col not in columns:
                columns.append(col)
    lines = [f"## {label} (`{component}`)", ""]
    if not columns:
        return lines + ["(no scores)", ""]
    lines.append("| system | documents | " + " | ".join(columns) + " |")
    lines.append("|---|---:|" + "---:|" * len(columns))
    for name, row in rows.items():
        decimals = getattr(evaluator, "summary_decimals", None)
        cells = [_fmt(row[c], decimals) if c in row else "" for c in columns]
        lines.append(f"| {name} | {systems[name]['documents']} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines
