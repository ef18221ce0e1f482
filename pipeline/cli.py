"""The ``casflow`` command.

Exit status: see ``RUN_EXIT_STATUS`` (printed by ``casflow run --help``) and
``TRAIN_EXIT_STATUS`` (``casflow train --help``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only light modules here: a bad workflow file is reported before the engine
# (joblib, cassis, pydantic models) is imported.
from casflow.pipeline.exit_status import (
    EXIT_NOT_STARTED,
    EXIT_OK,
    EXIT_TRAINING_FAILED,
    REPORT_EXIT_STATUS,
    RUN_EXIT_STATUS,
    SIGNIFICANCE_EXIT_STATUS,
    TRAIN_EXIT_STATUS,
    VALIDATE_EXIT_STATUS,
)

if TYPE_CHECKING:
    from casflow.pipeline.training import TrainingFailed
    from casflow.pipeline.validation import WorkflowValidationError
    from casflow.pipeline.workflow import LoadedWorkflow


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


def _load(args: argparse.Namespace, start_workers: bool = False) -> LoadedWorkflow | int:
    """The validated workflow, or the exit status after printing why it is not valid.

    ``start_workers``: once the workflow's structure is valid, local worker processes
    start loading its models while the slower checks (models, inputs) run here.
    """
    from casflow.pipeline.yaml_lines import YamlLoadError, load_located_yaml_file

    try:
        located = load_located_yaml_file(args.workflow)
    except YamlLoadError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_NOT_STARTED
    from casflow.pipeline.validation import WorkflowValidationError
    from casflow.pipeline.workflow import load_located

    early = None
    if start_workers:
        from casflow.pipeline.runner import EarlyWorkers

        with contextlib.suppress(WorkflowValidationError):  # reported in full below
            early = EarlyWorkers.start(
                load_located(located, _overrides(args), check_resources=False)
            )
    try:
        workflow = load_located(located, _overrides(args))
    except WorkflowValidationError as exc:
        if early is not None:
            early.stop()
        return _print_invalid(exc)
    for view, why in workflow.left_out.items():
        print(
            f"casflow: optional view {view!r} left out (its steps and its evaluator rows): {why}",
            file=sys.stderr,
        )
    return workflow


def cmd_validate(args: argparse.Namespace) -> int:
    workflow = _load(args)
    if isinstance(workflow, int):
        return workflow
    steps = 1 + len(workflow.processors) + len(workflow.writers) + len(workflow.evaluators)
    print(f"{args.workflow}: valid ({steps} steps, views: {', '.join(workflow.views())})")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    workflow = _load(args, start_workers=True)
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
        TrainingFailed,
        TrainingOutputError,
        TrainingStopped,
        check_only_fold,
        load_training_workflow,
        run_training,
    )
    from casflow.pipeline.validation import WorkflowValidationError

    try:
        loaded = load_training_workflow(
            args.workflow,
            {"output": args.output, "folds": args.folds, "seed": args.seed},
            overwrite=args.overwrite,
        )
    except WorkflowValidationError as exc:
        return _print_invalid(exc)
    try:
        if args.fold is not None:  # a fold the workflow does not have: before any reading
            check_only_fold(args.fold, loaded.spec.cross_validation.folds, loaded.source)
    except TrainingDataError as exc:
        print(f"casflow: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    if args.validate_only:
        print(f"{args.workflow}: valid training workflow ({loaded.trainer.spec.component})")
        return 0
    import signal

    def stop(signum: int, frame: object) -> None:
        raise TrainingStopped(signum, signal.Signals(signum).name)

    # Python's default for SIGTERM ends the process on the spot: the step being trained
    # would lose its time and the report would still say the run is running.
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        result = run_training(loaded, only_fold=args.fold)
    except (TrainingDataError, TrainingOutputError) as exc:
        print(f"casflow: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    except TrainingFailed as exc:
        _print_training_failed(exc)
        return EXIT_TRAINING_FAILED
    except TrainingStopped as exc:
        print(f"casflow: {exc}; run the same command again to resume", file=sys.stderr)
        return 128 + exc.signum
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.fold is not None:
        print(f"casflow: fold {args.fold}'s model in {result.model_dir}")
        return 0
    print(f"casflow: model in {result.model_dir}; card {result.model_dir / 'MODEL_CARD.md'}")
    return 0


def _print_training_failed(exc: TrainingFailed) -> None:
    """A trainer's unexpected error (a ``TrainingFailed``) as ``casflow run`` reports a
    document's: one line naming what failed, where the traceback is, what to do."""
    where = exc.traceback_in
    if where is None:  # it could not be written to the output folder: shown here
        print(exc.traceback_text, file=sys.stderr, end="")
    print(f"casflow: {exc}", file=sys.stderr)
    said = (
        "above (it could not be written to the output folder)"
        if where is None
        else f'in {where} (under "traceback")'
        if where.suffix == ".json"
        else f"in {where}"
    )
    # A full disk or a folder one may not write is the machine's, not a bug to report.
    cause = (
        "the file or folder it names (disk space, permissions)"
        if isinstance(exc.error, OSError)
        else "a bug in casflow or the tool: report it with that traceback"
    )
    print(
        f"casflow: the full traceback is {said}; finished folds and training stages are "
        f"kept: fix the cause ({cause}) and run the same command again to resume",
        file=sys.stderr,
    )


def cmd_components(args: argparse.Namespace) -> int:
    from casflow.pipeline.registry import ComponentLoadError, UnknownComponentError, registry

    reg = registry()
    if args.name:
        try:
            listing = [_describe_component(args.name, reg.get(args.name), reg.origin(args.name))]
        except (UnknownComponentError, ComponentLoadError) as exc:
            print(f"casflow: {exc}", file=sys.stderr)
            return EXIT_NOT_STARTED
    else:
        listing = []
        for name in reg.names():
            try:
                listing.append(_describe_component(name, reg.get(name), reg.origin(name)))
            except ComponentLoadError as exc:
                # One broken plug-in must not hide the others: it is listed, marked.
                listing.append({"name": name, "origin": reg.origin(name), "broken": str(exc)})
    if args.json:
        print(json.dumps(listing, indent=2, default=str))
        return EXIT_OK
    for item in listing:
        _print_component(item)
    return EXIT_OK


def _describe_component(name: str, cls: Any, origin: str) -> dict[str, Any]:
    """The contract of one component: role, requirements and options, as ``--json`` gives it."""
    fields = []
    for field_name, info in cls.Config.model_fields.items():
        required = info.is_required()
        fields.append(
            {
                "name": field_name,
                "type": _type_name(info.annotation),
                "required": required,
                "default": None if required else info.get_default(call_default_factory=True),
                "allowed": _allowed_values(info.annotation),
                "description": info.description or "",
            }
        )
    requires, produces = cls.requirements(cls.Config.model_construct())
    return {
        "name": name,
        "role": cls.role,
        "origin": origin,
        "description": cls.description,
        "requires": list(requires),
        "produces": list(produces),
        "config": fields,
        "requirements_by_option": _requirements_by_option(cls, set(requires), set(produces)),
    }


def _requirements_by_option(
    cls: Any, requires: set[str], produces: set[str]
) -> list[dict[str, Any]]:
    """What setting one option (a flag turned on, another allowed value) changes in what the
    component requires and produces, e.g. spacy.pipeline.v1's use_existing_tokens."""
    changes = []
    for field_name, info in cls.Config.model_fields.items():
        if info.is_required():
            continue
        default = info.get_default(call_default_factory=True)
        if info.annotation is bool:
            values: list[Any] = [not default]
        elif _allowed_values(info.annotation, scalar=True):
            values = [v for v in _allowed_values(info.annotation) or [] if v != default]
        else:
            continue
        for value in values:
            try:
                other = cls.requirements(cls.Config.model_construct(**{field_name: value}))
            except Exception:  # a combination the component cannot describe alone
                continue
            change = {
                "option": field_name,
                "value": value,
                "requires_added": sorted(set(other[0]) - requires),
                "requires_dropped": sorted(requires - set(other[0])),
                "produces_added": sorted(set(other[1]) - produces),
                "produces_dropped": sorted(produces - set(other[1])),
            }
            if any(change[key] for key in change if key.endswith(("_added", "_dropped"))):
                changes.append(change)
    return changes


def _print_component(item: dict[str, Any]) -> None:
    from casflow.typesystem import short_name

    def names(types: list[str]) -> str:
        return ", ".join(short_name(t) for t in types)

    if "broken" in item:
        print(f"{item['name']}  [{item['origin']}]  BROKEN, cannot be used: {item['broken']}")
        print()
        return
    print(f"{item['name']}  [{item['role']}, {item['origin']}]")
    if item["description"]:
        print(f"    {item['description']}")
    print(f"    requires: {names(item['requires']) or '-'}")
    print(f"    produces: {names(item['produces']) or '-'}")
    for change in item["requirements_by_option"]:
        parts = [
            f"{label} {names(change[key])}"
            for key, label in (
                ("requires_added", "also requires"),
                ("requires_dropped", "no longer requires"),
                ("produces_added", "also produces"),
                ("produces_dropped", "no longer produces"),
            )
            if change[key]
        ]
        value = json.dumps(change["value"])
        print(f"    with {change['option']}: {value}: {'; '.join(parts)}")
    for f in item["config"]:
        setting = (
            "required" if f["required"] else f"default {json.dumps(f['default'], default=str)}"
        )
        print(f"    config {f['name']} ({f['type']}, {setting}): {f['description']}")
    print()


CHECK_XMI_EXIT_STATUS = """\
exit status:
  0    every XMI file loads in UIMA Java with the same content as in cassis
  1    some file does not load (FAIL), loads with other content (DIFF), or UIMA
       Java refuses the type system; each is named on standard output
  2    nothing was checked: no such folder, no XMI files, no TypeSystem.xml, or
       java, javac or Apache UIMA's jar missing (standard error says what to do)
"""


def cmd_check_xmi(args: argparse.Namespace) -> int:
    """Load XMI in Apache UIMA Java (strict) and compare every view with cassis.

    Takes what xmi.writer.v1 writes: ``.xmi``, gzipped ``.xmi.gz`` and ``.tar``
    archives of either (unpacked into a temporary folder for the check). Exit
    status: 0 every file loads with the same content, 1 some file does not (or
    UIMA refuses the type system), 2 nothing was checked (``CHECK_XMI_EXIT_STATUS``).
    """
    import tempfile

    from casflow.pipeline.packed import PackedFileError
    from casflow.pipeline.uima_java import checker_problem

    def not_checked(message: str) -> int:
        print(f"casflow check-xmi: {message}", file=sys.stderr)
        return EXIT_NOT_STARTED

    folder = Path(args.folder)
    if not folder.exists():
        return not_checked(
            f"{folder} does not exist: give a folder of XMI files (an xmi.writer.v1 folder, "
            "e.g. casflow-out/quickstart/xmi) or one XMI file"
        )
    given = args.typesystem is not None
    typesystem = (
        Path(args.typesystem)
        if given
        else (folder if folder.is_dir() else folder.parent) / "TypeSystem.xml"
    )
    if given and not typesystem.is_file():
        return not_checked(f"--typesystem {typesystem}: no such file")
    # Before anything is unpacked: without Java there is nothing to compare with.
    problem = checker_problem()
    if problem is not None:
        return not_checked(problem)
    with tempfile.TemporaryDirectory(prefix="casflow-check-xmi-") as tmp:
        try:
            files = xmi_files_to_check(folder, Path(tmp))
        except PackedFileError as exc:
            return not_checked(str(exc))
        if not files:
            return not_checked(
                f"no XMI files in {folder} (looked for .xmi, .xmi.gz and .tar archives of them)"
            )
        if not typesystem.is_file():
            return not_checked(
                f"no type system at {typesystem}: the XMI files load strictly with the one "
                "they were written with, which xmi.writer.v1 writes there when its run ends "
                "(a run still going or killed has not written it yet: finish the run); or "
                "pass --typesystem FILE"
            )
        return _check_xmi_files(args, files, typesystem)


def xmi_files_to_check(folder: Path, unpack_to: Path) -> dict[Path, str]:
    """XMI files to hand to UIMA Java -> the name to report them by. Plain ``.xmi``
    files are used where they are; gzipped files and archive members are unpacked
    into ``unpack_to`` (``archive.tar!PMC1.xmi`` is reported by that name)."""
    from pathlib import Path

    from casflow.pipeline.packed import is_archive, iter_packed

    if folder.is_dir():
        candidates = sorted(
            p
            for p in folder.iterdir()
            if p.is_file() and (p.name.endswith((".xmi", ".xmi.gz")) or is_archive(p))
        )
    else:
        candidates = [folder] if folder.exists() else []
    files: dict[Path, str] = {}
    for n, path in enumerate(candidates):
        if path.name.endswith(".xmi"):
            files[path] = path.name
            continue
        for name, data in iter_packed(path):
            if not name.endswith(".xmi"):
                continue
            target = Path(unpack_to) / str(n) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            files[target] = f"{path.name}!{name}" if is_archive(path) else path.name
    return files


def _check_xmi_files(args: argparse.Namespace, shown: dict[Path, str], typesystem: Path) -> int:
    from casflow.pipeline.uima_java import (
        UimaJavaError,
        cassis_cas_report,
        compare_reports,
        compile_checker,
        find_uima_jar,
        java_cas_reports,
    )

    try:
        compile_checker()
    except (UimaJavaError, OSError) as exc:
        print(
            f"casflow check-xmi: cannot build the UIMA Java checker (is {find_uima_jar()} "
            f"Apache UIMA's uimaj-core 2.x jar?): {exc}",
            file=sys.stderr,
        )
        return EXIT_NOT_STARTED
    files = list(shown)
    try:
        reports = java_cas_reports(typesystem, files, spans=args.spans)
        failures: dict[Path, str] = {}
    except UimaJavaError as exc:
        if exc.typesystem_reason is not None:
            print(
                f"FAIL {typesystem}: UIMA Java cannot use the type system: {exc.typesystem_reason}"
            )
            print(f"casflow: 0 of {len(files)} XMI files checked: UIMA Java refused {typesystem}")
            return 1
        reports, failures = exc.reports, exc.failures
    except (OSError, ValueError) as exc:  # java vanished, or a path Java cannot take
        print(f"casflow check-xmi: cannot run UIMA Java: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    bad = 0
    for path in files:
        if path in failures:
            bad += 1
            print(f"FAIL {shown[path]}: UIMA Java cannot load it: {failures[path]}")
            continue
        try:
            ours = cassis_cas_report(path, typesystem, spans=args.spans)
        except Exception as exc:  # noqa: BLE001 - any cassis error is this file's finding
            bad += 1
            print(f"FAIL {shown[path]}: cassis cannot load it: {type(exc).__name__}: {exc}")
            continue
        differences = compare_reports(reports[path], ours)
        if differences:
            bad += 1
            print(f"DIFF {shown[path]}: " + "; ".join(differences[:5]))
        elif args.verbose:
            print(f"ok   {shown[path]}")
    print(
        f"casflow: {len(files) - bad} of {len(files)} XMI files load in UIMA Java with the same content as in cassis"
    )
    return 1 if bad else 0


def cmd_significance(args: argparse.Namespace) -> int:
    from pathlib import Path

    from casflow.pipeline.component import MAX_SIGNIFICANCE_SEED
    from casflow.pipeline.files import atomic_write_text
    from casflow.pipeline.significance_report import (
        SignificanceError,
        check_last_run,
        check_systems,
        load_evaluator,
        output_name,
        p_text,
        read_counts,
        run_test,
        units_text,
    )

    # As SignificanceSettings checks the same settings in a workflow.
    if args.iterations < 1:
        print(
            f"casflow significance: --iterations: at least 1 shuffle, got {args.iterations}",
            file=sys.stderr,
        )
        return EXIT_NOT_STARTED
    if args.seed is not None and not 0 <= args.seed <= MAX_SIGNIFICANCE_SEED:
        print(
            f"casflow significance: --seed: 0 to {MAX_SIGNIFICANCE_SEED}, got {args.seed}",
            file=sys.stderr,
        )
        return EXIT_NOT_STARTED
    output_dir = Path(args.output_dir)
    system_a, system_b = args.systems
    try:
        check_last_run(output_dir)  # the evaluation files must be the last run's
        evaluator = load_evaluator(output_dir, args.evaluator)
        check_systems(evaluator, args.evaluator, args.systems)
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
    path = output_dir / output_name(args.evaluator, args.metric, system_a, system_b)
    atomic_write_text(path, json.dumps(result, indent=2))
    print(
        f"{args.evaluator} {args.metric}: {system_a} {result['metric_a']:.4f} vs {system_b} "
        f"{result['metric_b']:.4f} (difference {result['observed_difference']:+.4f}) over "
        f"{result['n_units']} {units_text(result)}; p = {p_text(result['p_two_sided'])} two-sided "
        f"({result['iterations']} shuffles, seed {result['seed']}); written to {path}"
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from casflow.pipeline.html_report import rebuild_html_report
    from casflow.pipeline.significance_report import SignificanceError

    output_dir = Path(args.output_dir)
    try:
        path = rebuild_html_report(output_dir)
    except SignificanceError as exc:
        print(f"casflow report: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    except OSError as exc:
        print(
            f"casflow report: cannot use {exc.filename or output_dir}: {exc.strerror or exc}; "
            "fix its permissions or free space, then run casflow report again",
            file=sys.stderr,
        )
        return EXIT_NOT_STARTED
    print(f"casflow: report written to {path}")
    return 0


def _type_name(annotation: Any) -> str:
    """A config field's type as a user writes it: ``list[str]``, ``int | None``, and a
    ``Literal`` as its allowed values (``'train' | 'dev'``)."""
    import types
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "None"
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) if not isinstance(a, str) else repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type_name(a) for a in args)}]" if args else name
    return getattr(annotation, "__name__", str(annotation)).replace("typing.", "")


def _allowed_values(annotation: Any, scalar: bool = False) -> list[Any] | None:
    """The values a ``Literal`` field (or an optional of one, or unless ``scalar`` a list
    of one) allows, else None."""
    import types
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return list(args)
    if scalar and origin not in (typing.Union, types.UnionType):
        return None
    for arg in args:
        allowed = _allowed_values(arg, scalar)
        if allowed is not None:
            return allowed
    return None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("casflow")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="casflow", description="UIMA-style annotation pipelines for biomedical text."
    )
    parser.add_argument("--version", action="version", version=f"casflow {_version()}")
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

    p_validate = sub.add_parser(
        "validate",
        help="check a workflow without reading any document",
        description="Check a whole workflow (structure, components, chain, inputs, models, "
        "output folder) without reading any document.",
        epilog=VALIDATE_EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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

    p_train = sub.add_parser(
        "train",
        help="train a model from gold views (training workflow)",
        description="Validate a training workflow, then train its model.",
        epilog=TRAIN_EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_train.add_argument("workflow", help="training workflow YAML file")
    p_train.add_argument("--output", help="override output")
    p_train.add_argument(
        "--overwrite",
        action="store_true",
        help="train into an output folder holding another training workflow's model, "
        "replacing that model (what it trained with the same settings and data is reused)",
    )
    p_train.add_argument(
        "--folds", type=int, help="override cross_validation.folds (0: none; 5: CRAFT protocol)"
    )
    p_train.add_argument("--seed", type=int, help="override seed")
    p_train.add_argument(
        "--fold",
        type=int,
        help="train only this cross-validation fold (1..folds), e.g. one per process or "
        "machine sharing the output folder; the run without --fold reuses finished folds",
    )
    p_train.add_argument("--validate-only", action="store_true", help="check the workflow and stop")
    p_train.set_defaults(func=cmd_train)

    p_comp = sub.add_parser("components", help="list components with requires, produces and config")
    p_comp.add_argument("name", nargs="?", help="show one component")
    p_comp.add_argument("--json", action="store_true", help="machine-readable listing")
    p_comp.set_defaults(func=cmd_components)
    p_check = sub.add_parser(
        "check-xmi",
        help="load XMI in Apache UIMA Java and compare with cassis",
        epilog=CHECK_XMI_EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        "significance",
        help="paired approximate randomization test between two system views",
        epilog=SIGNIFICANCE_EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    p_report = sub.add_parser(
        "report",
        help="write evaluation.html again from a finished run's evaluation files",
        epilog=REPORT_EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_report.add_argument("output_dir", help="output folder of a finished run with evaluators")
    p_report.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("casflow: interrupted; run again with the same command to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (casflow components | head): not an error of
        # casflow's to show; stdout goes to devnull so the interpreter's last flush is
        # quiet too (as Python's documentation advises). 128 + SIGPIPE, as a shell says.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:
        # A plug-in type system that cannot be used stops any command before work
        # starts. Its class is looked up, not imported: raising it imported the module,
        # and this module stays light.
        plugin_error = getattr(sys.modules.get("casflow.typesystem"), "TypeSystemPluginError", None)
        if plugin_error is None or not isinstance(exc, plugin_error):
            raise
        print(f"casflow: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED


if __name__ == "__main__":
    sys.exit(main())
