"""Evaluation speed: every evaluator over CRAFT with gold and one system, against
the time the chain takes to produce that system (target: under 10%).

    python benchmarks/evaluation_speed.py [--split all|dev] [--jobs 1]

One run of ``workflows/craft-eval.yaml`` (gold CRAFT in view ``gold``, the
shipped models from raw text in view ``system``, and the views the workflow makes
beside it). The run report's per-stage times give both sides, measured on the
same documents in the same run: the sum over the workflow's ``components`` steps
(the system chain) and the sum over its ``evaluators``. The steps are taken from
the workflow the run resolved, under the labels the run report gives them, so a
step added to the workflow is counted; reading the gold corpus and the writers are
in neither. A run in which a document is not ok is refused.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import CORPORA, REPO, checked_inputs, fail, finished_run, stage_groups

WORKFLOW = REPO / "workflows" / "craft-eval.yaml"
SPLIT_LINE = "split: dev"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="all", choices=["all", "train", "dev"])
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    with checked_inputs(CORPORA / "craft"):
        text = WORKFLOW.read_text(encoding="utf-8")
    if text.count(SPLIT_LINE) != 1:
        fail(f"{WORKFLOW} has no single '{SPLIT_LINE}' line to set --split {args.split} in")
    with tempfile.TemporaryDirectory() as tmp:
        wf = Path(tmp) / WORKFLOW.name
        wf.write_text(text.replace(SPLIT_LINE, f"split: {args.split}"), encoding="utf-8")
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
        code = subprocess.run(cmd, cwd=REPO, check=False).returncode
        # 1 is a run that ended with documents not ok: finished_run says which
        if code not in (0, 1):
            fail(f"casflow run of {WORKFLOW.name} ended with exit status {code} (see above)")
        report = finished_run(out)
        system_steps, evaluator_steps = stage_groups(out)
    stages: dict[str, float] = report["stage_seconds"]
    missing = [s for s in system_steps + evaluator_steps if s not in stages]
    if missing:
        fail(
            f"the run report has no time for {', '.join(missing)} "
            f"(it has {', '.join(sorted(stages))}); nothing measured"
        )
    system = sum(stages[s] for s in system_steps)
    evaluation = sum(stages[s] for s in evaluator_steps)
    print(f"documents: {report['counts']['ok']} ({args.split}), --jobs {args.jobs}")
    for title, steps in (("system chain", system_steps), ("evaluators", evaluator_steps)):
        print(f"{title}:")
        for name in steps:
            print(f"  {name:<40} {stages[name]:9.2f} s")
    others = sorted(set(stages) - set(system_steps) - set(evaluator_steps))
    print(f"in neither: {', '.join(f'{s} {stages[s]:.1f} s' for s in others)}")
    print(f"system chain: {system:.1f} s; evaluators: {evaluation:.1f} s")
    print(f"evaluation / system time: {evaluation / system:.3f} (target < 0.10)")


if __name__ == "__main__":
    main()
