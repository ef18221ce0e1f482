"""Shared helpers for the benchmark scripts (not part of the installed package).

Every benchmark measures the things it compares side by side in one run and
prints the ratio, so figures taken on a loaded or a different machine stay
comparable.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from casflow.components.corpora.locations import corpora_root

REPO = Path(__file__).resolve().parent.parent
CORPORA = corpora_root(relative_to=REPO)
CRAFT_NXML = CORPORA / "craft" / "articles" / "nxml"


def craft_nxml_files() -> list[Path]:
    files = sorted(CRAFT_NXML.glob("*.nxml"))
    if not files:
        sys.exit(f"no CRAFT NXML files in {CRAFT_NXML}; set CASFLOW_CORPORA")
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


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float
    report: dict


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
    """Run ``casflow run`` in a fresh process; wall time and peak RSS of it and its workers."""
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
    if result["code"] not in (0, 1):
        sys.exit(f"casflow run failed ({result['code']}):\n{out.stderr}")
    output = _output_of(workflow, args)
    report = json.loads((output / "run-report.json").read_text())
    return Measured(result["seconds"], result["peak_rss_mb"], report)


def _output_of(workflow: Path, args: tuple[str, ...]) -> Path:
    if "--output" in args:
        return Path(args[args.index("--output") + 1])
    import yaml

    return Path(yaml.safe_load(workflow.read_text())["run"]["output"])


def write_workflow(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def now() -> float:
    return time.perf_counter()
