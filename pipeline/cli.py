"""The ``casflow`` command.

Exit status: see ``RUN_EXIT_STATUS`` (printed by ``casflow run --help``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

# Only light modules here: a bad workflow file is reported before the engine
# (joblib, cassis, pydantic models) is imported.
from casflow.pipeline.exit_status import EXIT_NOT_STARTED, EXIT_OK, RUN_EXIT_STATUS

if TYPE_CHECKING:
    from casflow.pipeline.validation import LoadedWorkflow, WorkflowValidationError


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


def _print_invalid(exc: WorkflowValidationError) -> int:
    # One problem is one line (file:line: path: message); several get a heading.
    if len(exc.issues) == 1:
        print(exc.issues[0].format(exc.source), file=sys.stderr)
    else:
        print(str(exc), file=sys.stderr)
    return EXIT_NOT_STARTED


def _load(args: argparse.Namespace) -> LoadedWorkflow | int:
    """The validated workflow, or the exit status after printing why it is not valid."""
    from casflow.pipeline.yaml_lines import YamlLoadError, load_located_yaml_file

    try:
        located = load_located_yaml_file(args.workflow)
    except YamlLoadError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_NOT_STARTED
    from casflow.pipeline.validation import WorkflowValidationError, validate_located

    try:
        return validate_located(located, _overrides(args))
    except WorkflowValidationError as exc:
        return _print_invalid(exc)


def cmd_validate(args: argparse.Namespace) -> int:
    workflow = _load(args)
    if isinstance(workflow, int):
        return workflow
    steps = 1 + len(workflow.processors) + len(workflow.writers) + len(workflow.evaluators)
    print(f"{args.workflow}: valid ({steps} steps, views: {', '.join(workflow.views())})")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    workflow = _load(args)
    if isinstance(workflow, int):
        return workflow
    from casflow.pipeline.journal import ManifestMismatch
    from casflow.pipeline.runner import RunInterrupted, RunOptions, RunSetupError, run_workflow

    options = RunOptions(
        allow_changed_workflow=args.allow_changed_workflow, show_progress=not args.quiet
    )
    try:
        report = run_workflow(workflow, options)
    except (ManifestMismatch, RunSetupError) as exc:
        print(f"casflow: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    except RunInterrupted as exc:  # before the run could write anything
        print(f"casflow: stopped by {exc.signal_name} before any document ran", file=sys.stderr)
        return 128 + exc.signum
    print(report.summary(), file=sys.stderr)
    if report.evaluation:
        print(
            f"casflow: evaluation written to {workflow.spec.run.output}/evaluation.md",
            file=sys.stderr,
        )
    return report.exit_code


def cmd_train(args: argparse.Namespace) -> int:
    from casflow.pipeline.training import (
        TrainingDataError,
        load_training_workflow,
        run_training,
    )
    from casflow.pipeline.validation import WorkflowValidationError

    try:
        loaded = load_training_workflow(
            args.workflow, {"output": args.output, "folds": args.folds, "seed": args.seed}
        )
    except WorkflowValidationError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_NOT_STARTED
    if args.validate_only:
        print(f"{args.workflow}: valid training workflow ({loaded.trainer.spec.component})")
        return 0
    try:
        result = run_training(loaded)
    except TrainingDataError as exc:
        print(f"casflow: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    print(f"casflow: model in {result.model_dir}; card {result.model_dir / 'MODEL_CARD.md'}")
    return 0


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


def cmd_check_xmi(args: argparse.Namespace) -> int:
    """Load XMI in Apache UIMA Java (strict) and compare every view with cassis."""
    from pathlib import Path

    from casflow.pipeline.uima_java import (
        UimaJavaError,
        cassis_cas_report,
        compare_reports,
        find_uima_jar,
        java_available,
        java_cas_reports,
    )

    folder = Path(args.folder)
    files = sorted(folder.glob("*.xmi")) if folder.is_dir() else [folder]
    typesystem = (
        Path(args.typesystem)
        if args.typesystem
        else (files[0].parent / "TypeSystem.xml" if files else None)
    )
    if not files or typesystem is None or not typesystem.exists():
        print(
            f"casflow: no XMI files with a TypeSystem.xml beside them in {folder}", file=sys.stderr
        )
        return EXIT_NOT_STARTED
    if not java_available() or find_uima_jar() is None:
        print(
            "casflow: needs java, javac and Apache UIMA's uimaj-core.jar "
            "(apt-get install libuima-core-java, or set CASFLOW_UIMA_JAR)",
            file=sys.stderr,
        )
        return EXIT_NOT_STARTED
    try:
        reports = java_cas_reports(typesystem, files, spans=args.spans)
        failures: dict[Path, str] = {}
    except UimaJavaError as exc:
        reports, failures = exc.reports, exc.failures
    bad = 0
    for path in files:
        if path in failures:
            bad += 1
            print(f"FAIL {path.name}: UIMA Java cannot load it: {failures[path]}")
            continue
        differences = compare_reports(
            reports[path], cassis_cas_report(path, typesystem, spans=args.spans)
        )
        if differences:
            bad += 1
            print(f"DIFF {path.name}: " + "; ".join(differences[:5]))
        elif args.verbose:
            print(f"ok   {path.name}")
    print(
        f"casflow: {len(files) - bad} of {len(files)} XMI files load in UIMA Java with the same content as in cassis"
    )
    return 1 if bad else 0


def cmd_significance(args: argparse.Namespace) -> int:
    from pathlib import Path

    from casflow.pipeline.files import atomic_write_text
    from casflow.pipeline.significance_report import (
        SignificanceError,
        load_evaluator,
        output_name,
        read_counts,
        run_test,
    )

    output_dir = Path(args.output_dir)
    system_a, system_b = args.systems
    try:
        evaluator = load_evaluator(output_dir, args.evaluator)
        result = run_test(
            evaluator,
            read_counts(output_dir, args.evaluator),
            system_a,
            system_b,
            args.metric,
            iterations=args.iterations,
            seed=args.seed,
            units=args.units,
        )
    except SignificanceError as exc:
        print(f"casflow significance: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    result = {"evaluator": args.evaluator, **result}
    path = output_dir / output_name(system_a, system_b)
    atomic_write_text(path, json.dumps(result, indent=2))
    print(
        f"{args.evaluator} {args.metric}: {system_a} {result['metric_a']:.4f} vs {system_b} "
        f"{result['metric_b']:.4f} (difference {result['observed_difference']:+.4f}) over "
        f"{result['n_units']} {args.units}; p = {result['p_two_sided']:.4g} two-sided "
        f"({result['iterations']} shuffles, seed {result['seed']}); written to {path}"
    )
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

    p_run = sub.add_parser(
        "run",
        help="validate, then run a workflow",
        description="Validate a workflow, then run it over its input.",
        epilog=RUN_EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    workflow_args(p_run)
    p_run.add_argument("--overwrite", action="store_true", help="reprocess documents already done")
    p_run.add_argument(
        "--allow-changed-workflow",
        action="store_true",
        help="resume into an output folder written by a different workflow (keeps its "
        "finished outputs; --overwrite reprocesses everything instead)",
    )
    p_run.add_argument("--quiet", action="store_true", help="no progress display")
    p_run.set_defaults(func=cmd_run)

    p_train = sub.add_parser("train", help="train a model from gold views (training workflow)")
    p_train.add_argument("workflow", help="training workflow YAML file")
    p_train.add_argument("--output", help="override output")
    p_train.add_argument(
        "--folds", type=int, help="override cross_validation.folds (0: none; 5: CRAFT protocol)"
    )
    p_train.add_argument("--seed", type=int, help="override seed")
    p_train.add_argument("--validate-only", action="store_true", help="check the workflow and stop")
    p_train.set_defaults(func=cmd_train)

    p_comp = sub.add_parser("components", help="list components with requires, produces and config")
    p_comp.add_argument("name", nargs="?", help="show one component")
    p_comp.add_argument("--json", action="store_true", help="machine-readable listing")
    p_comp.set_defaults(func=cmd_components)
    p_check = sub.add_parser(
        "check-xmi", help="load XMI in Apache UIMA Java and compare with cassis"
    )
    p_check.add_argument(
        "folder", help="a folder of .xmi files (or one file) with TypeSystem.xml beside them"
    )
    p_check.add_argument(
        "--typesystem", help="type system XML (default: TypeSystem.xml beside the XMI)"
    )
    p_check.add_argument(
        "--spans", action="store_true", help="also compare every annotation's offsets"
    )
    p_check.add_argument("--verbose", action="store_true", help="list every file")
    p_check.set_defaults(func=cmd_check_xmi)

    p_sig = sub.add_parser(
        "significance", help="paired approximate randomization test between two system views"
    )
    p_sig.add_argument("output_dir", help="output folder of a finished run with evaluators")
    p_sig.add_argument("--evaluator", required=True, help="evaluator label (id or component name)")
    p_sig.add_argument(
        "--metric", required=True, help="path into the evaluator's scores, e.g. strict/micro/f1"
    )
    p_sig.add_argument(
        "--systems", nargs=2, required=True, metavar=("A", "B"), help="two system views"
    )
    p_sig.add_argument("--iterations", type=int, default=10_000, help="shuffles (default 10000)")
    p_sig.add_argument(
        "--seed", type=int, default=None, help="random seed (default: drawn, printed)"
    )
    p_sig.add_argument(
        "--units",
        choices=["documents", "sentences"],
        default="documents",
        help="what is shuffled (sentences where the evaluator gives per-sentence counts)",
    )
    p_sig.set_defaults(func=cmd_significance)
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
