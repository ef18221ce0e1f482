"""Worker start-up: a fresh loky worker, from its spawn to its chain built (models loaded).

    python benchmarks/worker_startup.py [--model casflow:craft_syntax] [--repeat 5] [--workers 1]

What a run's worker does before its first document (``chain.prepare_worker``)
for the scaling benchmark's chain (NXML -> spaCy -> XMI), timed from asking a new
loky pool for it to the answer (wall seconds) and by the worker's own CPU seconds
at that moment, which a loaded machine inflates far less than wall time. Three
ways a worker builds it, side by side: as runs do now (the modules the chain's
components declare they do not use hidden, ``Component.modules_not_used``: torch
for a spaCy pipeline without torch layers; and stand-ins for those their
libraries import unconditionally, ``Component.stand_in_modules``: spaCy's command
line), without the stand-ins (as before them), and with nothing of either.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import checked_inputs, craft_nxml_files, replicate, write_workflow
from joblib.externals.loky import ProcessPoolExecutor

from casflow.pipeline import chain
from casflow.pipeline.chain import prepare_worker
from casflow.pipeline.runner import Runner
from casflow.pipeline.workflow import load_workflow

HEAVY = ("torch", "thinc", "spacy", "spacy.cli", "typer")


def _ready(
    resolved: dict[str, Any], context: dict[str, Any], stand_ins: bool
) -> tuple[float, list[str]]:
    if not stand_ins:  # this worker builds as runs did before stand-ins
        chain.modules_standing_in = lambda modules: contextlib.nullcontext([])
    prepare_worker(resolved, context)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    loaded = [m for m in HEAVY if sys.modules.get(m) is not None]
    return usage.ru_utime + usage.ru_stime, [*loaded, f"{len(sys.modules)} modules"]


def _measure(
    resolved: dict[str, Any], context: dict[str, Any], stand_ins: bool, workers: int
) -> tuple[float, float, list[str]]:
    started = time.perf_counter()
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(_ready, resolved, context, stand_ins) for _ in range(workers)]
        results = [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, kill_workers=True)
    wall = time.perf_counter() - started
    return wall, max(cpu for cpu, _ in results), results[0][1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default="casflow:craft_syntax",
        help="spaCy pipeline (name, path or casflow:NAME)",
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="fresh pools per variant (median reported)"
    )
    parser.add_argument("--workers", type=int, default=1, help="workers started together per pool")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        inputs = replicate(craft_nxml_files(), 2, tmp_path / "in")
        wf = write_workflow(
            tmp_path / "wf.yaml",
            f"""\
            reader: {{component: nxml.reader.v1, config: {{input: "{inputs}", id_style: stem}}}}
            components:
              - {{component: spacy.pipeline.v1, config: {{model: "{args.model}", layers: [sentences, tokens, pos, dependencies]}}}}
            writers: [{{component: xmi.writer.v1}}]
            run: {{output: "{tmp_path / "out"}", batch_size: 1, jobs: 2}}
            """,
        )
        with checked_inputs():
            workflow = load_workflow(wf)
        context = Runner(workflow).context_dict
        variants = {
            "runs now (hidden, stand-ins)": ({**context, "hide_unused_modules": True}, True),
            "unused modules hidden only": ({**context, "hide_unused_modules": True}, False),
            "nothing hidden": ({**context, "hide_unused_modules": False}, False),
        }
        measured: dict[str, list[tuple[float, float, list[str]]]] = {name: [] for name in variants}
        for _ in range(args.repeat):  # interleaved, so that load changes hit both alike
            for name, (ctx, stand_ins) in variants.items():
                measured[name].append(_measure(workflow.resolved, ctx, stand_ins, args.workers))
    print(
        f"model: {args.model}, workers per pool: {args.workers}, pools per variant: {args.repeat}, load average: {os.getloadavg()[0]:.2f}"
    )
    medians = {}
    for name, rows in measured.items():
        wall = statistics.median(r[0] for r in rows)
        cpu = statistics.median(r[1] for r in rows)
        medians[name] = (wall, cpu)
        print(
            f"{name:30s} spawn -> ready {wall:5.2f} s wall, worker CPU {cpu:5.2f} s; loaded: {', '.join(rows[0][2])}"
        )
    now_wall, now_cpu = medians["runs now (hidden, stand-ins)"]
    for name in ("unused modules hidden only", "nothing hidden"):
        wall, cpu = medians[name]
        print(
            f"runs now against {name}: {wall - now_wall:.2f} s wall saved ({wall / now_wall:.2f}x), {cpu - now_cpu:.2f} s CPU ({cpu / now_cpu:.2f}x)"
        )


if __name__ == "__main__":
    main()
