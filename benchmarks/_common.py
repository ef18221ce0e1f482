"""Shared helpers for the benchmark scripts (not part of the installed package).

Every benchmark measures the things it compares side by side in one run, so
figures taken on a loaded or a different machine stay comparable; most print
their ratio. Two print one model's absolute speed instead, which depends on the
machine and its load: ``syntax_speed.py`` (tokens/s, against the README's target
of 5,000) and ``constituency_speed.py`` (tokens per wall and per CPU second, no
target).

Inputs are checked before anything is measured: a missing corpus or model, or a
workflow casflow refuses, is one line naming it and exit status 2
(:func:`checked_inputs`, :func:`fail`). A run in which a document failed, timed
out or was not processed is refused with exit status 1 (:func:`finished_run`): a
figure over the documents left would be compared with one over all of them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from casflow.components.corpora.locations import corpora_root
from casflow.pipeline.component import DocumentError
from casflow.pipeline.gold_sources import GoldSourceError
from casflow.pipeline.registry import ComponentLoadError, UnknownComponentError
from casflow.pipeline.run_report import RUN_REPORT_NAME
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_resolved, stage_labels

REPO = Path(__file__).resolve().parent.parent
CORPORA = corpora_root(relative_to=REPO)
CRAFT_NXML = CORPORA / "craft" / "articles" / "nxml"
CORPORA_HINT = (
    f"set CASFLOW_CORPORA to the folder holding craft/, bc2gm/ and anatem/ (now {CORPORA})"
)
#: for the scripts that take the CRAFT folder as --craft
CRAFT_HINT = "give --craft the CRAFT folder, or set CASFLOW_CORPORA"

#: What the corpus readers, the model loaders, the registry and casflow's workflow
#: loader raise for a missing or unusable corpus, model, library or setting: the
#: readers' errors are ValueErrors, a missing model an OSError (spaCy's, CRFsuite's,
#: Stanza's) or a DocumentError (casflow:NAME). No KeyError or TypeError: those are bugs.
INPUT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    DocumentError,
    GoldSourceError,
    WorkflowValidationError,
    UnknownComponentError,
    ComponentLoadError,
)


def fail(message: str, status: int = 2) -> NoReturn:
    """Stop the benchmark: ``message`` as one line on stderr, named after the script."""
    line = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    print(f"{Path(sys.argv[0]).name}: {line}", file=sys.stderr)
    raise SystemExit(status)


@contextmanager
def checked_inputs(*paths: Path, hint: str = CORPORA_HINT) -> Iterator[None]:
    """Inputs checked before anything is measured: each of ``paths`` must exist (else
    one line naming it, with ``hint``), and what the readers and model loaders raise
    inside the block becomes one line and exit status 2 instead of a traceback.

    Keep the block to reading and loading: an error while measuring is a bug, to be
    seen with its traceback.
    """
    for path in paths:
        if not path.exists():
            fail(f"{path} does not exist; {hint}")
    try:
        yield
    except WorkflowValidationError as exc:
        fail("; ".join(issue.format(exc.source) for issue in exc.issues))
    except INPUT_ERRORS as exc:
        fail(str(exc))


def craft_nxml_files() -> list[Path]:
    files = sorted(CRAFT_NXML.glob("*.nxml"))
    if not files:
        fail(f"no CRAFT NXML files in {CRAFT_NXML}; {CORPORA_HINT}")
    return files


def replicate(files: list[Path], count: int, folder: Path) -> Path:
    """``count`` inputs named uniquely, made by symlinking ``files`` round-robin."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        source = files[i % len(files)]
        link = folder / f"copy{i:06d}-{source.stem.replace(' ', '_')}{source.suffix}"
        if not link.exists():
            link.symlink_to(source.resolve())
    return folder


def finished_run(output: Path) -> dict[str, Any]:
    """The run report in ``output``, once every document of the run is ok.

    Otherwise the benchmark stops (exit status 1) with the count of documents not ok,
    the first failure and a copy of the report that outlives the benchmark's
    temporary folder: times and tokens summed over fewer documents than asked for
    give a figure that looks valid and is not.
    """
    path = output / RUN_REPORT_NAME
    if not path.is_file():
        fail(f"no {RUN_REPORT_NAME} in {output}: the run did not finish; nothing measured")
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    counts: dict[str, int] = report["counts"]
    total = int(report["total_documents"])
    ok = counts.get("ok", 0)
    if total and ok == total:
        return report
    kept = Path(tempfile.mkdtemp(prefix=f"{Path(sys.argv[0]).stem}-")) / RUN_REPORT_NAME
    shutil.copyfile(path, kept)
    not_ok = ", ".join(f"{n} {status}" for status, n in counts.items() if n and status != "ok")
    first = ""
    if report.get("failures"):
        failure = report["failures"][0]
        error = " ".join(str(failure.get("error")).split())
        error = error if len(error) <= 300 else error[:297] + "..."
        first = f"; first: {failure['document']} at {failure['stage']}: {error}"
    fail(
        f"{total - ok} of {total} documents not ok ({not_ok or 'none read'}){first}; "
        f"no figure printed over the rest; the run report: {kept}",
        status=1,
    )


def stage_groups(output: Path) -> tuple[list[str], list[str]]:
    """(component steps, evaluators) of the run that wrote ``output``, each step by the
    label its time has in the run report's ``stage_seconds``.

    Taken from the workflow the run resolved and wrote beside the report, labelled by
    casflow's own :func:`stage_labels`: a step's ``id`` or component name, and
    ``NAME [VIEW]`` for a component used in several views without an id.
    """
    resolved = yaml.safe_load((output / "workflow.resolved.yaml").read_text(encoding="utf-8"))
    workflow = load_resolved(resolved)
    labels = stage_labels([*workflow.processors, *workflow.writers])
    system = [labels[s.path] for s in workflow.processors]
    evaluators = [s.spec.label() for s in workflow.evaluators]
    return system, evaluators


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float
    report: dict[str, Any]


_WRAPPER = textwrap.dedent(
    """\
    import json, resource, subprocess, sys, time
    t = time.perf_counter()
    code = subprocess.run(sys.argv[1:]).returncode
    elapsed = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"code": code, "seconds": elapsed, "peak_rss_mb": peak}))
    """
)


def run_casflow(workflow: Path, *args: str) -> Measured:
    """Run ``casflow run`` in a fresh process: its wall time, its peak resident memory
    and its run report (every document ok, see :func:`finished_run`).

    The peak is ``ru_maxrss`` of ``RUSAGE_CHILDREN`` in a wrapper process: the largest
    resident set of any one process among casflow's and the workers it waited for,
    not their sum (a run with two workers uses more than it shows).
    """
    cmd = [
        sys.executable,
        "-m",
        "casflow.pipeline.cli",
        "run",
        str(workflow),
        "--quiet",
        "--overwrite",
        *args,
    ]
    out = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # 1 is a run that ended with documents not ok: finished_run says which
    if result["code"] not in (0, 1):
        fail(f"casflow run {workflow} ended with exit status {result['code']}: {out.stderr}")
    report = finished_run(_output_of(workflow, args))
    return Measured(result["seconds"], result["peak_rss_mb"], report)


def _output_of(workflow: Path, args: tuple[str, ...]) -> Path:
    if "--output" in args:
        return Path(args[args.index("--output") + 1])
    return Path(yaml.safe_load(workflow.read_text())["run"]["output"])


def write_workflow(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def now() -> float:
    return time.perf_counter()
