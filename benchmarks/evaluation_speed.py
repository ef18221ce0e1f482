"""Evaluation speed: every evaluator over CRAFT with gold and one system, against
the time the chain takes to produce that system (target: under 10%).

    python benchmarks/evaluation_speed.py [--split all|dev] [--jobs 1]

One run of ``workflows/craft-eval.yaml`` (gold CRAFT in view ``gold``, the
shipped models from raw text in view ``system``). The run report's per-stage
times give both sides: the sum over the system's components and the sum over
the evaluators, measured on the same documents in the same run. Reading the
gold corpus and writing XMI are in neither.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO

SYSTEM_STAGES = (
    "view.copy.v1",
    "sentences.rules.v1",
    "spacy.pipeline.v1",
    "ner.gene.v1",
    "ner.anatomy.v1",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="all", choices=["all", "train", "dev"])
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    workflow = REPO / "workflows" / "craft-eval.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        text = workflow.read_text().replace("split: dev", f"split: {args.split}")
        wf = Path(tmp) / "craft-eval.yaml"
        wf.write_text(text)
        out = Path(tmp) / "out"
        cmd = [
            sys.executable,
            "-m",
            "casflow.pipeline.cli",
            "run",
            str(wf),
            "--quiet",
            "--output",
            str(out),
            "--jobs",
            str(args.jobs),
        ]
        subprocess.run(cmd, cwd=REPO, check=False)
        report = json.loads((out / "run-report.json").read_text())
    stages = report["stage_seconds"]
    system = sum(v for k, v in stages.items() if k in SYSTEM_STAGES)
    evaluation = sum(
        v for k, v in stages.items() if k.startswith("eval.") or k in ("genes", "anatomy")
    )
    print(f"documents: {report['counts']}")
    for name, seconds in sorted(stages.items()):
        print(f"  {name:<24} {seconds:9.2f} s")
    print(f"system chain: {system:.1f} s; evaluators: {evaluation:.1f} s")
    print(f"evaluation / system time: {evaluation / system:.3f} (target < 0.10)")


if __name__ == "__main__":
    main()
