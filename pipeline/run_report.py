"""The run report: counts, speed, per-stage time and every failure.

``run-report.json`` is written into the output folder at the end of each run;
the same facts are printed as a short summary. Evaluation results, if the
workflow has evaluators, go to ``evaluation.json`` / ``evaluation.md`` through
:mod:`casflow.pipeline.evaluation_report`.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from casflow.pipeline import files
from casflow.pipeline.chain import DocumentResult
from casflow.pipeline.component import RunContext
from casflow.pipeline.exit_status import EXIT_OK, EXIT_PARTIAL
from casflow.pipeline.files import atomic_write_text
from casflow.pipeline.workflow import LoadedWorkflow

RUN_REPORT_NAME = "run-report.json"
#: Distinct warnings listed in the report; more are counted, not listed, so the
#: parent's memory does not grow with the number of damaged documents.
MAX_WARNINGS_LISTED = 500
#: Documents named under each distinct warning.
MAX_DOCUMENTS_PER_WARNING = 20


@dataclass
class RunTally:
    """What the report needs, added up as results arrive.

    The runner keeps this instead of every DocumentResult, so the parent's memory
    does not grow with the number of documents (only failures are kept whole).
    """

    counts: dict[str, int] = field(
        default_factory=lambda: {"ok": 0, "failed": 0, "timeout": 0, "skipped": 0}
    )
    processed: int = 0
    tokens: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    # (stage, category, message) -> {"stage", "category", "message", "count", "documents"}
    warnings: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    warnings_not_listed: int = 0
    documents_with_warnings: int = 0
    _warned: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def of(cls, results: list[DocumentResult]) -> RunTally:
        tally = cls()
        for res in results:
            tally.add(res)
        return tally

    def add(self, res: DocumentResult) -> None:
        self.counts[res.status] = self.counts.get(res.status, 0) + 1
        # A document done before keeps its warnings (from the journal): they are about
        # the outputs in the folder, whichever run wrote them.
        if res.warnings:
            # a warning of a step run on a batch names the batch: each document counts,
            # once (ids only, so this set stays small beside the documents themselves)
            self._warned.update(
                d for item in res.warnings for d in item.get("documents") or [res.doc_id]
            )
            self.documents_with_warnings = len(self._warned)
            self.add_warnings(res.warnings, res.doc_id)
        if res.status == "skipped":
            return
        self.processed += 1
        self.tokens += res.tokens
        for stage, secs in res.stage_seconds.items():
            self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + secs
        if res.status in {"failed", "timeout"}:
            self.failures.append(
                {
                    "document": res.doc_id,
                    "uri": res.uri,
                    "status": res.status,
                    "stage": res.stage,
                    "error": res.error,
                    "what_to_do": res.hint or _default_hint(res),
                    "traceback": res.detail,
                }
            )

    def add_warnings(self, warnings: list[dict[str, Any]], doc_id: str | None) -> None:
        """Warnings about one document (``doc_id``), or about none (the listing)."""
        for said in warnings:
            key = (str(said.get("stage")), str(said.get("category")), str(said.get("message")))
            entry = self.warnings.get(key)
            if entry is None:
                if len(self.warnings) >= MAX_WARNINGS_LISTED:
                    self.warnings_not_listed += int(said.get("count", 1))
                    continue
                entry = {
                    "stage": key[0],
                    "category": key[1],
                    "message": key[2],
                    "count": 0,
                    "documents": [],
                }
                self.warnings[key] = entry
            entry["count"] += int(said.get("count", 1))
            for doc in said.get("documents") or ([doc_id] if doc_id else []):
                if (
                    len(entry["documents"]) < MAX_DOCUMENTS_PER_WARNING
                    and doc not in entry["documents"]
                ):
                    entry["documents"].append(doc)


@dataclass
class RunReport:
    workflow: str
    workflow_hash: str
    total_documents: int
    counts: dict[str, int]
    seconds: float
    documents_per_second: float
    tokens: int
    tokens_per_second: float
    stage_seconds: dict[str, float]
    failures: list[dict[str, Any]]
    run_files: list[str] = field(default_factory=list)
    evaluation: dict[str, Any] | None = None
    output: str = ""
    backend: str = ""
    jobs: int = 1
    started_at: str | None = None  # ISO 8601, UTC
    finished_at: str | None = None  # after the final files: the real end of the run
    # Writers' run-level files and the evaluation (significance tests, the HTML page),
    # after ``seconds`` (the time documents_per_second is measured over).
    final_files_seconds: float | None = None
    # From the start of the run to the first document processed (start-up cost).
    first_document_seconds: float | None = None
    # Each time workers were lost and replaced: cause, documents, what was done.
    worker_replacements: list[dict[str, Any]] = field(default_factory=list)
    # SIGTERM/SIGINT: the signal, the exit status, the documents handed out but not finished
    # ("during": "final files" when every document was done: the evaluation was cut).
    interrupted: dict[str, Any] | None = None
    stopped_by: str | None = None  # the run could not go on (the journal could not be written)
    final_files_error: str | None = None  # this report (or others) could not be written
    # optional views left out of this run (their models are missing here): view -> why
    left_out_views: dict[str, str] = field(default_factory=dict)
    # what components said about damaged input they repaired or skipped, per distinct
    # message: stage, category, message, count, documents (the first 20)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    warnings_not_listed: int = 0  # occurrences of further distinct messages
    documents_with_warnings: int = 0

    @classmethod
    def build(
        cls,
        workflow: LoadedWorkflow,
        results: list[DocumentResult] | RunTally,
        total_documents: int,
        seconds: float,
        started_at: float | None = None,
    ) -> RunReport:
        tally = results if isinstance(results, RunTally) else RunTally.of(results)
        counts = dict(tally.counts)
        counts["not_processed"] = total_documents - sum(counts.values())
        run = workflow.spec.run
        return cls(
            workflow=workflow.source,
            workflow_hash=workflow.hash,
            total_documents=total_documents,
            counts=counts,
            seconds=round(seconds, 3),
            documents_per_second=round(tally.processed / seconds, 3) if seconds else 0.0,
            tokens=tally.tokens,
            tokens_per_second=round(tally.tokens / seconds, 1) if seconds else 0.0,
            stage_seconds={k: round(v, 3) for k, v in sorted(tally.stage_seconds.items())},
            failures=tally.failures,
            output=run.output,
            backend=_backend_name(run.backend, run.jobs),
            jobs=run.jobs,
            started_at=_iso(started_at),
            finished_at=_iso(started_at + seconds) if started_at is not None else None,
            left_out_views=dict(workflow.left_out),
            warnings=list(tally.warnings.values()),
            warnings_not_listed=tally.warnings_not_listed,
            documents_with_warnings=tally.documents_with_warnings,
        )

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return int(self.interrupted["exit_status"])
        bad = (
            self.counts.get("failed", 0)
            + self.counts.get("timeout", 0)
            + self.counts.get("not_processed", 0)
        )
        if bad or self.stopped_by or self.final_files_error:
            return EXIT_PARTIAL
        return EXIT_OK

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["python"] = platform.python_version()
        return data

    def summary(self) -> str:
        c = self.counts
        lines = [
            f"casflow: {self.total_documents} documents: {c['ok']} ok, {c['failed']} failed, "
            f"{c['timeout']} timed out, {c['skipped']} skipped (done before)"
            + (f", {c['not_processed']} not processed" if c.get("not_processed") else ""),
            f"casflow: {self.seconds:.1f} s, {self.documents_per_second:.2f} documents/s, "
            f"{self.tokens_per_second:,.0f} tokens/s"
            + (
                f", first document after {self.first_document_seconds:.1f} s"
                if self.first_document_seconds is not None
                else ""
            ),
        ]
        if self.stage_seconds:
            # Summed over documents (and so over workers): where the time goes.
            slowest = sorted(self.stage_seconds.items(), key=lambda kv: -kv[1])
            lines.append(
                "casflow: time per stage: " + ", ".join(f"{s} {t:.1f} s" for s, t in slowest)
            )
        for failure in self.failures[:20]:
            lines.append(
                f"casflow:   {failure['status']}: {failure['document']} ({failure['uri']}) at "
                f"{failure['stage']}: {failure['error']}"
            )
        if len(self.failures) > 20:
            lines.append(f"casflow:   ... and {len(self.failures) - 20} more")
        if self.warnings or self.warnings_not_listed:
            said = sum(w["count"] for w in self.warnings) + self.warnings_not_listed
            report = Path(self.output) / RUN_REPORT_NAME if self.output else RUN_REPORT_NAME
            warned = self.documents_with_warnings
            # Only the reader's listing warns about no document (a filter leaving
            # articles out): "about 0 document" would read as a miscount.
            counted = f"{said} warning{'s' if said > 1 else ''}"
            lines.append(
                f"casflow: {counted} about {warned} document{'s' if warned > 1 else ''}; "
                f'each with its documents under "warnings" in {report}'
                if warned
                else f"casflow: {counted} while listing the input, about no document; "
                f'under "warnings" in {report}'
            )
            for item in self.warnings[:5]:
                lines.append(f"casflow:   {item['stage']}: {item['message']}")
            if len(self.warnings) > 5:
                lines.append(f"casflow:   ... and {len(self.warnings) - 5} more distinct")
        if self.worker_replacements:
            n = len(self.worker_replacements)
            lines.append(f"casflow: workers replaced {n} time{'s' if n > 1 else ''}:")
            for item in self.worker_replacements[:10]:
                docs = item["documents"]
                shown = ", ".join(docs[:5]) + (
                    f" and {len(docs) - 5} more" if len(docs) > 5 else ""
                )
                lines.append(f"casflow:   {item['cause']}; {item['what_happened']}: {shown}")
            if n > 10:
                lines.append(f"casflow:   ... and {n - 10} more (see {RUN_REPORT_NAME})")
        if self.interrupted and self.interrupted.get("during") == "final files":
            lines.append(
                f"casflow: stopped by {self.interrupted['signal']} while writing the run's "
                "final files (writers' run-level files, the evaluation); every document is "
                "done: run the same command again to write them"
            )
        elif self.interrupted:
            pending = self.interrupted["documents_not_finished"]
            lines.append(
                f"casflow: stopped by {self.interrupted['signal']}: {len(pending)} documents "
                "handed out were not finished"
                + (
                    ""
                    if self.interrupted["listing_finished"]
                    else ", and the input was not fully listed"
                )
                + "; run the same command again to resume"
            )
        if self.stopped_by:
            lines.append(f"casflow: stopped: {self.stopped_by}")
        if self.final_files_error:
            lines.append(f"casflow: {self.final_files_error}")
        if self.failures:
            report = Path(self.output) / RUN_REPORT_NAME if self.output else RUN_REPORT_NAME
            lines.append(
                f"casflow: what to do about each failure: {report}; run the same command again "
                "to retry only the documents that did not succeed"
            )
        return "\n".join(lines)


def _backend_name(backend: str, jobs: int) -> str:
    if backend == "sequential" or (backend == "loky" and jobs == 1):
        return "in-process"
    return backend


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def _default_hint(res: DocumentResult) -> str:
    if res.status == "timeout":
        return "raise run.timeout in the workflow, or check the document for pathological size"
    if res.stage and res.stage.startswith("reader"):
        return "check that the input file is complete and in the format the reader expects"
    return "see the traceback; run this document alone with --jobs 1 to reproduce"


def write_running_report(output_dir: Path, workflow: LoadedWorkflow) -> None:
    """A ``run-report.json`` saying a run is under way, written as the run starts and
    replaced by its report at the end: a run killed before then leaves it, so that
    ``casflow report`` and ``casflow significance`` do not take the evaluation files of
    an earlier run in the folder for this run's."""
    running = {
        "workflow": workflow.source,
        "workflow_hash": workflow.hash,
        "running": True,
        "started_at": _iso(time.time()),
        "evaluation": None,
    }
    files.atomic_write_text(output_dir / RUN_REPORT_NAME, json.dumps(running, indent=2))


def write_run_outputs(
    report: RunReport,
    workflow: LoadedWorkflow,
    results: list[DocumentResult],
    output_dir: Path,
    context: RunContext,
    evaluate: bool = True,
    final_files_started: float | None = None,
) -> None:
    """Evaluation reports (when ``evaluate`` and there are evaluators), then the run report,
    whose ``finished_at`` and ``final_files_seconds`` count the final files from
    ``final_files_started`` (``time.time()``; by default now)."""
    if final_files_started is None:
        final_files_started = time.time()
    if workflow.evaluators and evaluate:
        from casflow.pipeline.evaluation_report import write_evaluation_reports

        report.evaluation = write_evaluation_reports(
            workflow, results, output_dir, context, run_report=report.to_json()
        )
    finish_run_report(report, output_dir, final_files_started)


def finish_run_report(report: RunReport, output_dir: Path, final_files_started: float) -> None:
    """Write ``run-report.json``, its end time and final files' time taken now."""
    finished = time.time()
    report.final_files_seconds = round(finished - final_files_started, 3)
    report.finished_at = _iso(finished)
    atomic_write_text(
        output_dir / RUN_REPORT_NAME, json.dumps(report.to_json(), indent=2, ensure_ascii=False)
    )
