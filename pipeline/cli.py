"""The ``casflow`` command.

Exit status: 0 success; 1 the run finished but some documents failed or timed
out; 2 nothing ran (invalid workflow, bad arguments, output folder of another
workflow).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from casflow.pipeline.runner import EXIT_NOT_STARTED, RunOptions, RunSetupError, run_workflow
from casflow.pipeline.validation import WorkflowValidationError, load_workflow


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "input": getattr(args, "input", None),
        "output": getattr(args, "output", None),
        "jobs": getattr(args, "jobs", None),
        "backend": getattr(args, "backend", None),
        "scheduler": getattr(args, "scheduler", None),
        "timeout": getattr(args, "timeout", None),
        "overwrite": True if getattr(args, "overwrite", False) else None,
    }


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        workflow = load_workflow(args.workflow, _overrides(args))
    except WorkflowValidationError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_NOT_STARTED
    steps = 1 + len(workflow.processors) + len(workflow.writers) + len(workflow.evaluators)
    print(f"{args.workflow}: valid ({steps} steps, views: {', '.join(workflow.views())})")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    try:
        workflow = load_workflow(args.workflow, _overrides(args))
    except WorkflowValidationError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_NOT_STARTED
    from casflow.pipeline.journal import ManifestMismatch

    options = RunOptions(
        allow_changed_workflow=args.allow_changed_workflow, show_progress=not args.quiet
    )
    try:
        report = run_workflow(workflow, options)
    except (ManifestMismatch, RunSetupError) as exc:
        print(f"casflow: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    print(report.summary(), file=sys.stderr)
    if report.evaluation:
        print(
            f"casflow: evaluation written to {workflow.spec.run.output}/evaluation.md",
            file=sys.stderr,
        )
    return report.exit_code


def cmd_components(args: argparse.Namespace) -> int:
    from casflow.pipeline.registry import registry
    from casflow.typesystem import short_name

    reg = registry()
    names = [args.name] if args.name else reg.names()
    listing = []
    for name in names:
        cls = reg.get(name)
        fields = []
        for field_name, info in cls.Config.model_fields.items():
            default = (
                info.get_default(call_default_factory=True) if not info.is_required() else None
            )
            fields.append(
                {
                    "name": field_name,
                    "type": _type_name(info.annotation),
                    "default": default if info.is_required() is False else "(required)",
                    "description": info.description or "",
                }
            )
        requires, produces = cls.requirements(cls.Config.model_construct())
        listing.append(
            {
                "name": name,
                "role": cls.role,
                "origin": reg.origin(name),
                "description": cls.description,
                "requires": list(requires),
                "produces": list(produces),
                "config": fields,
            }
        )
    if args.json:
        print(json.dumps(listing, indent=2, default=str))
        return 0
    for item in listing:
        print(f"{item['name']}  [{item['role']}, {item['origin']}]")
        if item["description"]:
            print(f"    {item['description']}")
        print(f"    requires: {', '.join(short_name(r) for r in item['requires']) or '-'}")
        print(f"    produces: {', '.join(short_name(p) for p in item['produces']) or '-'}")
        for f in item["config"]:
            print(
                f"    config {f['name']} ({f['type']}, default {f['default']!r}): {f['description']}"
            )
        print()
    return 0


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="casflow", description="UIMA-style annotation pipelines for biomedical text."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def workflow_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("workflow", help="workflow YAML file")
        p.add_argument("--input", help="override the reader's input (file, folder, glob, @list)")
        p.add_argument("--output", help="override run.output")
        p.add_argument("--jobs", type=int, help="override run.jobs (worker processes)")
        p.add_argument(
            "--backend", choices=["loky", "dask", "sequential"], help="override run.backend"
        )
        p.add_argument("--scheduler", help="Dask scheduler address (with --backend dask)")
        p.add_argument("--timeout", type=float, help="per-document time limit in seconds")

    p_validate = sub.add_parser("validate", help="check a workflow without reading any document")
    workflow_args(p_validate)
    p_validate.set_defaults(func=cmd_validate)

    p_run = sub.add_parser("run", help="validate, then run a workflow")
    workflow_args(p_run)
    p_run.add_argument("--overwrite", action="store_true", help="reprocess documents already done")
    p_run.add_argument(
        "--allow-changed-workflow",
        action="store_true",
        help="resume into an output folder written by a different workflow",
    )
    p_run.add_argument("--quiet", action="store_true", help="no progress display")
    p_run.set_defaults(func=cmd_run)

    p_comp = sub.add_parser("components", help="list components with requires, produces and config")
    p_comp.add_argument("name", nargs="?", help="show one component")
    p_comp.add_argument("--json", action="store_true", help="machine-readable listing")
    p_comp.set_defaults(func=cmd_components)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("casflow: interrupted; run again with the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
