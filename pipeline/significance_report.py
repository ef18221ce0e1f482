"""Significance tests between system views of a finished evaluation.

Used by ``casflow significance`` (reading ``evaluation-counts.jsonl``) and by the
evaluation report when an evaluator's config has ``significance:``. The units
shuffled are documents, or the evaluator's per-sentence ``units`` where it
gives them (documents without units count as one unit). The result records the
units actually shuffled: sentences asked of an evaluator that gives none are
documents, and say so (``units_note``). Units are paired by document id (sorted)
and position, so both systems must have been scored on the same documents; a
document scored for only one of them is an error. ``casflow significance`` writes
each test to ``significance-<evaluator>-<metric>-<A>-vs-<B>.json`` (:func:`output_name`),
so tests of other evaluators or metrics on the same pair are kept side by side;
p-values are printed by :func:`p_text` in the tables and on the command line alike.

:func:`settings_problems` checks a metric path and the units before a run, from the
evaluator's result for an empty document.

The metric is a path into the evaluator's ``score`` output (``strict/micro/f1``,
``las/f1``); evaluators that know a faster equivalent computed straight from
counts (``batch_metric``) use it, otherwise each shuffle is scored in full.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from casflow.pipeline.component import Evaluator, RunContext
from casflow.pipeline.counts import Counts, EvaluationResult, sum_counts
from casflow.pipeline.significance import (
    Metric,
    SignificanceResult,
    approximate_randomization,
)

Units = Literal["documents", "sentences"]
COUNTS_FILE = "evaluation-counts.jsonl"
SUMMARY_FILE = "evaluation.json"
# Per document id: per system view: {"counts": ..., "units": ...}
DocumentEntries = Mapping[str, Mapping[str, Mapping[str, Any]]]


class SignificanceError(ValueError):
    """The test cannot run on these inputs; the message says what to change."""


def lookup(scores: Mapping[str, Any], path: str) -> float:
    """The number at ``a/b/c`` in nested scores; KeyError lists what is there instead."""
    node: Any = scores
    walked: list[str] = []
    for part in path.split("/"):
        if not isinstance(node, Mapping) or part not in node:
            here = sorted(node) if isinstance(node, Mapping) else []
            where = "/".join(walked) or "the top level"
            raise KeyError(
                f"metric path {path!r}: no {part!r} under {where}"
                + (f"; available: {', '.join(map(str, here))}" if here else "")
            )
        node = node[part]
        walked.append(part)
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        under = f"; under it: {', '.join(map(str, node))}" if isinstance(node, Mapping) else ""
        raise KeyError(
            f"metric path {path!r} leads to a {type(node).__name__}, not a number{under}"
        )
    return float(node)


def empty_document_result(evaluator: Evaluator) -> EvaluationResult:
    """The evaluator's result for a document without text or annotations: its counts
    score to every path that documents do not add themselves, and ``units`` is None
    when the evaluator gives no per-sentence counts."""
    import cassis

    from casflow.typesystem import load_typesystem

    cas = cassis.Cas(typesystem=load_typesystem())
    gold, system = cas.create_view("gold"), cas.create_view("system")
    gold.sofa_string = system.sofa_string = ""
    return evaluator.evaluate(gold, system)


def settings_problems(evaluator: Evaluator, metric: str, units: Units) -> dict[str, str]:
    """Problems with significance settings that show before any document is read, by
    setting (``metric``, ``units``): a metric path the evaluator's scores cannot have,
    sentences from an evaluator that gives only documents."""
    try:
        empty = empty_document_result(evaluator)
        scores = evaluator.score(empty.counts)
    except Exception:  # noqa: BLE001 - a plug-in may not score an empty document; runs check again
        return {}
    problems: dict[str, str] = {}
    if not metric.split("/")[0].startswith(evaluator.data_score_keys):
        try:
            lookup(scores, metric)
        except KeyError as exc:
            if not _below_data_keys(scores, metric):
                problems["metric"] = str(exc.args[0])
    if units == "sentences" and empty.units is None:
        problems["units"] = (
            f"{evaluator.name} gives no per-sentence counts, so only whole documents can be "
            "shuffled; use units: documents"
        )
    return problems


def _below_data_keys(scores: Mapping[str, Any], path: str) -> bool:
    """Whether ``path`` leaves the scores of an empty document at a mapping that is empty
    there (per class, per tag): only documents say which keys it will have."""
    node: Any = scores
    for part in path.split("/"):
        if not isinstance(node, Mapping):
            return False
        if part not in node:
            return not node
        node = node[part]
    return False


def metric_for(evaluator: Evaluator, path: str, example: Counts) -> Metric:
    """Metric at ``path``; checked on ``example`` counts so a bad path fails early."""
    try:
        lookup(evaluator.score(example), path)
    except KeyError as exc:
        raise SignificanceError(str(exc.args[0])) from exc
    metric = evaluator.batch_metric(path)
    if metric is not None:
        return metric

    def scored(counts: Mapping[str, float]) -> float:
        return lookup(evaluator.score(dict(counts)), path)

    return scored


def paired_units(
    documents: DocumentEntries, system_a: str, system_b: str, units: Units
) -> tuple[list[Counts], list[Counts]]:
    """Units of the two systems in the same order (documents sorted by id)."""
    units_a, units_b, _ = _paired(documents, system_a, system_b, units)
    return units_a, units_b


def _paired(
    documents: DocumentEntries, system_a: str, system_b: str, units: Units
) -> tuple[list[Counts], list[Counts], int]:
    """:func:`paired_units` and how many documents were taken whole although sentences
    were asked for (they have no per-sentence units)."""
    units_a: list[Counts] = []
    units_b: list[Counts] = []
    whole = 0
    one_sided: list[tuple[str, str]] = []
    for doc_id in sorted(documents):
        entries = documents[doc_id]
        present = [name for name in (system_a, system_b) if name in entries]
        if len(present) < 2:
            one_sided.extend((doc_id, name) for name in present)
            continue
        a, b = entries[system_a], entries[system_b]
        if units == "sentences" and a.get("units") is not None and b.get("units") is not None:
            if len(a["units"]) != len(b["units"]):
                raise SignificanceError(
                    f"document {doc_id}: {system_a} has {len(a['units'])} units and {system_b} "
                    f"{len(b['units'])}; units must be the same gold sentences (use --units "
                    "documents)"
                )
            units_a.extend(a["units"])
            units_b.extend(b["units"])
        else:
            whole += units == "sentences"
            units_a.append(a["counts"])
            units_b.append(b["counts"])
    if one_sided:
        doc_id, name = one_sided[0]
        raise SignificanceError(
            f"{len(one_sided)} document(s) were scored for one system only (e.g. {doc_id} for "
            f"{name} only); the test pairs documents, so both systems need the same documents"
        )
    if not units_a:
        raise SignificanceError(f"no document was scored for both {system_a} and {system_b}")
    return units_a, units_b, whole


def _units_used(
    evaluator: Evaluator, asked: Units, whole: int, n_documents: int
) -> tuple[str, str | None]:
    """What was shuffled, and a note when it is not what was asked for."""
    if asked == "documents" or not whole:
        return asked, None
    if whole == n_documents:
        return "documents", f"{evaluator.name} gives no per-sentence counts"
    return "sentences", (
        f"{whole} of {n_documents} documents have no per-sentence counts and are shuffled whole"
    )


def units_text(test: Mapping[str, Any]) -> str:
    """The units of a test as the tables and the command line print them."""
    note = test.get("units_note")
    return f"{test.get('units', '?')}" + (f" ({note})" if note else "")


def check_systems(evaluator: Evaluator, evaluator_label: str, systems: Sequence[str]) -> None:
    """SignificanceError naming a system that is not one of the evaluator's system views
    (a view that does not exist would otherwise read as "scored for one system only")."""
    views = list(evaluator.config.system_views)
    for system in systems:
        if system not in views:
            raise SignificanceError(
                f"no system view {system!r} in evaluator {evaluator_label!r}; views there: "
                f"{', '.join(views) or 'none'}"
            )


def run_test(
    evaluator: Evaluator,
    documents: DocumentEntries,
    system_a: str,
    system_b: str,
    metric_path: str,
    *,
    iterations: int,
    seed: int | None,
    units: Units = "documents",
) -> dict[str, Any]:
    """The test as a JSON-ready dict (inputs, both metric values, p-values)."""
    units_a, units_b, whole = _paired(documents, system_a, system_b, units)
    metric = metric_for(evaluator, metric_path, sum_counts(units_a))
    result: SignificanceResult = approximate_randomization(
        units_a, units_b, metric, iterations=iterations, seed=seed
    )
    n_documents = sum(1 for entries in documents.values() if system_a in entries)
    used, note = _units_used(evaluator, units, whole, n_documents)
    return {
        "system_a": system_a,
        "system_b": system_b,
        "metric": metric_path,
        "units": used,
        **({"units_asked": units, "units_note": note} if note else {}),
        "n_units": len(units_a),
        **asdict(result),
    }


def read_counts(output_dir: Path, evaluator_label: str) -> dict[str, dict[str, dict[str, Any]]]:
    """``{document: {system: {"counts", "units"}}}`` for one evaluator from the counts file."""
    path = output_dir / COUNTS_FILE
    if not path.is_file():
        raise SignificanceError(
            f"{path} not found; run the workflow with evaluators first (casflow run)"
        )
    documents: dict[str, dict[str, dict[str, Any]]] = {}
    labels: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise damaged(path, exc, number) from exc
            check_line(path, number, entry, ("evaluator", "system", "document", "counts"))
            labels.add(entry["evaluator"])
            if entry["evaluator"] == evaluator_label:
                documents.setdefault(entry["document"], {})[entry["system"]] = entry
    if not documents:
        raise SignificanceError(
            f"{path} has no counts for evaluator {evaluator_label!r}; evaluators there: "
            f"{', '.join(sorted(labels)) or 'none'}"
        )
    return documents


def damaged(path: Path, exc: json.JSONDecodeError, line: int | None = None) -> SignificanceError:
    """The error for an evaluation file that is not JSON, at the line where it breaks."""
    return SignificanceError(
        f"{path}:{line or exc.lineno}: not JSON ({exc.msg}); the file is damaged: run the "
        "workflow again into a new output folder (or with --overwrite)"
    )


RUN_AGAIN = "run the workflow again into a new output folder (or with --overwrite)"


def check_line(path: Path, line: int, record: Any, keys: Sequence[str]) -> None:
    """SignificanceError when a line of an evaluation file is JSON but not what casflow
    writes there (an object with ``keys``)."""
    if not isinstance(record, dict):
        raise SignificanceError(
            f"{path}:{line}: a JSON {type(record).__name__}, not the object casflow writes "
            f"on each line; the file is damaged: {RUN_AGAIN}"
        )
    missing = [key for key in keys if key not in record]
    if missing:
        raise SignificanceError(
            f"{path}:{line}: no {', '.join(map(repr, missing))} on this line, which casflow "
            f"writes on every line; the file is damaged: {RUN_AGAIN}"
        )


def read_json(path: Path) -> Any:
    """An evaluation file's JSON; :func:`damaged` when it is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise damaged(path, exc) from exc
    except UnicodeDecodeError as exc:
        raise SignificanceError(
            f"{path}: not text (byte {exc.start} is not UTF-8); the file is damaged: {RUN_AGAIN}"
        ) from exc


def read_summary(output_dir: Path) -> dict[str, dict[str, Any]]:
    """``evaluation.json`` of a finished run, checked to be what casflow writes: per
    evaluator label its component, gold view, config and systems (each with documents
    and scores)."""
    path = output_dir / SUMMARY_FILE
    if not path.is_file():
        raise SignificanceError(
            f"{path} not found; give the output folder of a run with evaluators, or run "
            "the workflow with evaluators first (casflow run)"
        )
    summary = read_json(path)
    if not isinstance(summary, dict):
        raise SignificanceError(
            f"{path}: a JSON {type(summary).__name__}, not the object of evaluators casflow "
            f"writes; the file is damaged: {RUN_AGAIN}"
        )
    for label, entry in summary.items():
        problem = _summary_entry_problem(entry)
        if problem:
            raise SignificanceError(
                f"{path}: evaluator {label!r}: {problem}, as casflow writes it; the file is "
                f"damaged: {RUN_AGAIN}"
            )
    return summary


def _summary_entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"a JSON {type(entry).__name__}, not an object"
    missing = [k for k in ("component", "gold_view", "config", "systems") if k not in entry]
    if missing:
        return f"no {', '.join(map(repr, missing))}"
    if not isinstance(entry["config"], dict) or not isinstance(entry["systems"], dict):
        return "its config and systems are not objects"
    for system, data in entry["systems"].items():
        if not isinstance(data, dict) or not {"documents", "scores"} <= set(data):
            return f"system {system!r} has no documents and scores"
    return None


def load_evaluator(output_dir: Path, evaluator_label: str) -> Evaluator:
    """Rebuild the evaluator of a finished run from ``evaluation.json`` (config included)."""
    summary = read_summary(output_dir)
    if evaluator_label not in summary:
        raise SignificanceError(
            f"no evaluator {evaluator_label!r} in {output_dir / SUMMARY_FILE}; evaluators "
            f"there: {', '.join(sorted(summary)) or 'none'}"
        )
    return evaluator_from_summary(output_dir, evaluator_label, summary[evaluator_label])


def evaluator_from_summary(output_dir: Path, label: str, entry: Mapping[str, Any]) -> Evaluator:
    """The evaluator of ``entry`` (one evaluator of :func:`read_summary`); a component this
    casflow does not have, or a config it no longer takes, is a SignificanceError."""
    from pydantic import ValidationError

    from casflow.pipeline.registry import ComponentLoadError, UnknownComponentError, registry

    path = output_dir / SUMMARY_FILE
    component = entry["component"]
    try:
        cls = registry().get(component)
    except (UnknownComponentError, ComponentLoadError) as exc:
        raise SignificanceError(
            f"{path}: evaluator {label!r} is {component!r}, which cannot be used here "
            f"({one_line(str(exc))}); install the plug-in that provides it, or use the "
            "casflow version that wrote the run"
        ) from exc
    if cls.role != "evaluator":
        raise SignificanceError(
            f"{path}: evaluator {label!r} is {component!r}, which is a {cls.role} in this "
            "casflow, not an evaluator; use the casflow version that wrote the run"
        )
    try:
        config = cls.Config.model_validate(entry["config"])
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors()
        )
        raise SignificanceError(
            f"{path}: the config of evaluator {label!r} does not fit this casflow's "
            f"{component} ({problems}); use the casflow version that wrote the run, or run "
            "the workflow again with this one"
        ) from exc
    evaluator = cls(config, RunContext(output_dir=output_dir))
    assert isinstance(evaluator, Evaluator)
    return evaluator


def one_line(text: str) -> str:
    """``text`` (an exception's message) on one line, as the commands print errors."""
    return " ".join(text.split())


def check_last_run(output_dir: Path) -> None:
    """SignificanceError when ``run-report.json`` says the last run wrote no evaluation
    (stopped by a signal or a full disk, final files not written, no evaluators): the
    evaluation files in the folder are then an earlier run's. A folder without a run
    report, or with one from before the report had these fields, passes, and so does
    one whose runs never had evaluators (it has no evaluation file to refuse)."""
    from casflow.pipeline.run_report import RUN_REPORT_NAME

    path = output_dir / RUN_REPORT_NAME
    if not path.is_file():
        return
    report = read_json(path)
    if not isinstance(report, dict) or report.get("evaluation", {}) is not None:
        return
    finish = "run the same command (casflow run) again to finish the run; it writes them"
    interrupted = report.get("interrupted")
    if report.get("running"):
        why = "did not finish (it is running, or was killed)"
    elif interrupted:
        why = f"was stopped by {interrupted.get('signal') or 'a signal'}"
    elif report.get("stopped_by") or report.get("final_files_error"):
        why = f"stopped early ({report.get('stopped_by') or report['final_files_error']})"
    else:
        if not (output_dir / SUMMARY_FILE).is_file():
            # No earlier run's evaluation to refuse either: read_summary then says that
            # the folder has none (the quick start's folder, say).
            return
        why = "had no evaluators"
        finish = "run a workflow with evaluators into this folder"
    raise SignificanceError(
        f"{path}: the last run {why} and wrote no evaluation, so the evaluation files here "
        f"are an earlier run's; {finish}"
    )


def documents_from_results(results: Iterable[Any], evaluator_label: str) -> DocumentEntries:
    """The same structure as :func:`read_counts` from the runner's DocumentResults."""
    return {
        res.doc_id: res.evaluation[evaluator_label]
        for res in results
        if evaluator_label in (res.evaluation or {})
    }


def pairwise(
    evaluator: Evaluator,
    documents: DocumentEntries,
    systems: Sequence[str],
    metric_path: str,
    *,
    iterations: int,
    seed: int | None,
    units: Units = "documents",
) -> list[dict[str, Any]]:
    """One test per pair of systems (in config order); a failed test records its error."""
    tests = []
    for i, system_a in enumerate(systems):
        for system_b in systems[i + 1 :]:
            try:
                tests.append(
                    run_test(
                        evaluator,
                        documents,
                        system_a,
                        system_b,
                        metric_path,
                        iterations=iterations,
                        seed=seed,
                        units=units,
                    )
                )
            except Exception as exc:  # noqa: BLE001 - one test must not cost the run its reports
                message = (
                    str(exc)
                    if isinstance(exc, SignificanceError)
                    else f"the test failed: {type(exc).__name__}: {one_line(str(exc))}"
                )
                # The settings too, so that a table of failed tests still states them.
                tests.append(
                    {
                        "system_a": system_a,
                        "system_b": system_b,
                        "metric": metric_path,
                        "iterations": iterations,
                        "seed": seed,
                        "units": units,
                        "error": message,
                    }
                )
    return tests


def markdown_table(tests: Sequence[Mapping[str, Any]]) -> list[str]:
    """Rows ``A | B | metric A | metric B | difference | p`` (metric values in percent)."""
    if not tests:
        return []
    # A failed test records the settings asked for; one that ran, the units it shuffled.
    first = next((t for t in tests if "error" not in t), tests[0])
    lines = [
        f"Significance ({markdown_escape(first['metric'])}, paired approximate randomization, "
        f"{first.get('iterations', '?')} shuffles, seed {first.get('seed', '?')}, "
        f"units: {markdown_escape(units_text(first))}):",
        "",
        "| A | B | metric A (%) | metric B (%) | A - B (points) | p (two-sided) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for test in tests:
        pair = f"| {markdown_escape(test['system_a'])} | {markdown_escape(test['system_b'])} |"
        if "error" in test:
            lines.append(f"{pair} | | | {markdown_escape(test['error'])} |")
            continue
        lines.append(
            f"{pair} {100 * test['metric_a']:.2f} | "
            f"{100 * test['metric_b']:.2f} | {100 * test['observed_difference']:.2f} | "
            f"{p_text(test['p_two_sided'])} |"
        )
    lines.append("")
    return lines


# What a Markdown renderer would take for HTML: "<" opening a tag, comment or
# declaration, "&" opening an entity. A "<" or ">" in "len<=40" or ">=1" is left as
# it is, so the file stays readable as text.
_MARKUP_START = re.compile(r"<(?=[A-Za-z/!?])|&(?=[A-Za-z#])")


def markdown_escape(text: Any) -> str:
    """``text`` for a Markdown table cell or heading: ``|`` would end the cell, and
    ``<A>`` would be read as an HTML tag and vanish."""
    escaped = _MARKUP_START.sub(lambda m: "&lt;" if m.group() == "<" else "&amp;", str(text))
    return escaped.replace("|", "\\|").replace("\n", " ")


def p_text(p: float) -> str:
    """A p-value as every report prints it: four decimals, and below 0.0001 in
    scientific notation (with many shuffles p gets that small; it is never 0)."""
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def output_name(evaluator_label: str, metric: str, system_a: str, system_b: str) -> str:
    """``significance-<evaluator>-<metric>-<A>-vs-<B>.json``: a test of another
    evaluator or metric on the same pair gets its own file. A metric's ``/`` becomes
    ``_``; in the names, a character other than an ASCII letter or digit, ``-``, ``_``
    and ``.`` is written ``%XX`` (its UTF-8 bytes), so views ``a b`` and ``a_b`` get
    files of their own."""
    safe = [_file_part(name) for name in (evaluator_label, metric.replace("/", "_"))]
    safe += [_file_part(name) for name in (system_a, system_b)]
    return f"significance-{safe[0]}-{safe[1]}-{safe[2]}-vs-{safe[3]}.json"


def _file_part(name: str) -> str:
    return urllib.parse.quote(name, safe="-_.")
