"""The checks a workflow passes before any document is read.

Every problem is collected (not just the first) as a :class:`WorkflowIssue`
carrying its YAML path and line, so the user can go straight to it. This module
holds the checks over resolved steps: type names the type system does not know,
requirements not met by earlier steps in the same view, views read (or written
out by a writer) before anything writes them, and each component's own pre-run
checks (missing model, missing input). Reading the workflow file and resolving its steps (unknown keys,
unknown component names, a component in the wrong section, invalid config
values) is :mod:`casflow.pipeline.workflow`'s job; it calls these checks.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, ValidationError

from casflow.pipeline.component import INITIAL_VIEW, Reader, RunContext, Writer
from casflow.pipeline.files import output_folder_problem
from casflow.pipeline.yaml_lines import LocatedYaml
from casflow.typesystem import (
    SENTENCE,
    TOKEN,
    TypeSystemPluginError,
    load_typesystem,
    resolve_type_name,
    short_name,
)

if TYPE_CHECKING:
    from casflow.pipeline.workflow import ResolvedStep, RunSpec

YamlPath = tuple[str | int, ...]


@dataclass(frozen=True)
class WorkflowIssue:
    path: YamlPath
    line: int | None
    message: str

    def format(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line else source
        loc = " -> ".join(str(p) for p in self.path)
        return f"{where}: {loc}: {self.message}" if loc else f"{where}: {self.message}"


class WorkflowValidationError(Exception):
    def __init__(self, source: str, issues: list[WorkflowIssue]) -> None:
        self.source = source
        self.issues = sorted(issues, key=lambda i: (i.line or 0, i.path.__repr__()))
        lines = [issue.format(source) for issue in self.issues]
        noun = "problem" if len(lines) == 1 else "problems"
        super().__init__(f"{len(lines)} {noun} in {source}:\n" + "\n".join(lines))


def issue_at(located: LocatedYaml, path: YamlPath, message: str) -> WorkflowIssue:
    """An issue at ``path`` with the line it has in the user's YAML."""
    return WorkflowIssue(path, located.line_of(path), message)


def pydantic_issues(
    exc: ValidationError,
    prefix: YamlPath,
    located: LocatedYaml,
    model: type[BaseModel],
) -> list[WorkflowIssue]:
    """One issue per pydantic error, at its YAML line, naming the closest known key.
    Where a value may be one of several models, pydantic names the model in the error's
    location; that name is not a key of the YAML and is left out of the path."""
    issues = []
    for err in exc.errors():
        models, loc = _walk(model, tuple(err["loc"]))
        if err["type"] == "extra_forbidden":
            key = loc[-1]
            known = sorted(models[0].model_fields) if models else []
            msg = f"unknown key {key!r}.{did_you_mean(str(key), known)} Known keys: {', '.join(known)}."
        elif err["type"] == "missing":
            msg = "required key is missing"
        else:
            msg = f"{err['msg']} (got {err.get('input')!r})"
        issues.append(issue_at(located, prefix + loc, msg))
    return issues


def blame_command_line(
    issues: Sequence[WorkflowIssue], options: Mapping[YamlPath, str]
) -> list[WorkflowIssue]:
    """``issues`` with those at a value a command-line option set (``options``: YAML path
    -> option, e.g. ``("run", "jobs") -> "--jobs"``) moved to that option: the YAML line
    would point at a value the user did not write, or at a file without it."""
    moved = []
    for issue in issues:
        for prefix, option in options.items():
            if issue.path[: len(prefix)] == prefix:
                issue = WorkflowIssue((option, *issue.path[len(prefix) :]), None, issue.message)
                break
        moved.append(issue)
    return moved


def did_you_mean(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def _walk(
    model: type[BaseModel], loc: tuple[Any, ...]
) -> tuple[list[type[BaseModel]], tuple[Any, ...]]:
    """The models that may hold the last key of ``loc`` (its parent's), and ``loc``
    without the parts that name one member of a union of models."""
    options: list[type[BaseModel]] = [model]
    path: list[Any] = []
    for number, part in enumerate(loc):
        if isinstance(part, int):
            path.append(part)
            continue
        named = [m for m in options if m.__name__ == part]
        if named:
            options = named
            continue
        path.append(part)
        if number == len(loc) - 1:
            break
        fields = [m.model_fields[str(part)] for m in options if str(part) in m.model_fields]
        options = [m for f in fields for m in _models_in(f.annotation)]
    return options, tuple(path)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation may hold (through unions, lists, dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


# ----------------------------------------------------------------------------- type names


def requirement_met(requirement: str, available: set[str]) -> bool:
    """Whether ``Type`` or ``Type:feature`` is among ``available`` (or a subtype of one)."""
    if requirement in available:
        return True
    typesystem = load_typesystem()
    req_type, _, req_feature = requirement.partition(":")
    for have in available:
        have_type, _, have_feature = have.partition(":")
        if req_feature and have_feature != req_feature:
            continue
        if have_type == req_type or _subsumes(typesystem, req_type, have_type):
            return True
    return False


def _subsumes(typesystem: Any, parent: str, child: str) -> bool:
    try:
        return bool(typesystem.subsumes(typesystem.get_type(parent), typesystem.get_type(child)))
    except Exception:
        return False


def _unknown_type_names(names: tuple[str, ...]) -> list[str]:
    typesystem = load_typesystem()
    bad = []
    for name in names:
        type_name, _, feature = name.partition(":")
        if (
            not typesystem.contains_type(type_name, match_exactly=True)
            or feature
            and typesystem.get_type(type_name).get_feature(feature) is None
        ):
            bad.append(name)
    return bad


# ----------------------------------------------------------------------------- the chain


def registry_origin(name: str) -> str:
    """Where a component comes from (built-in, or the plug-in's distribution)."""
    from casflow.pipeline.registry import registry

    try:
        return registry().origin(name)
    except KeyError:
        return "registered at run time"


class _Anything(set[str]):
    """The contents of a view written by a step with its own error: any type."""

    def __contains__(self, item: object) -> bool:
        return True

    def __bool__(self) -> bool:  # not empty, though it lists nothing
        return True


class _UnknownViews(dict[str, set[str]]):
    """The views of an invalid reader: any view, each holding any type."""

    def __contains__(self, key: object) -> bool:
        return True

    def get(self, key: str, default: Any = None) -> set[str]:
        return self.setdefault(key)

    def setdefault(self, key: str, default: Any = None) -> set[str]:
        return super().setdefault(key, _Anything())


class _ChainCheck:
    """Walks the steps in run order, keeping the types each view holds so far."""

    def __init__(self, located: LocatedYaml, issues: list[WorkflowIssue]) -> None:
        self.located = located
        self.issues = issues
        self.available: dict[str, set[str]] = {}
        #: view -> the processors that write it, in run order: a step that reads the
        #: view before it is told which later step to move after
        self.writers_of: dict[str, list[ResolvedStep]] = {}
        #: a processor's path -> its place in the run
        self.position: dict[YamlPath, int] = {}

    def declare(self, step: ResolvedStep) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The step's ``(requires, produces)``; type names the type system lacks are issues."""
        requires, produces = step.component_class.requirements(step.config)
        bad = _unknown_type_names(tuple(requires) + tuple(produces))
        if bad:
            full = {name: resolve_type_name(name) for name in bad}
            unknown = [name for name in bad if full[name] == name]
            fixes = [f"write {full[name]} for {name}" for name in bad if full[name] != name]
            if unknown:
                what = ", ".join(unknown) if fixes else "them"
                fixes.append(
                    f"install the plug-in that adds {what}, or add them with a type-system "
                    "plug-in (entry point group casflow.typesystems)"
                )
            self.issues.append(
                issue_at(
                    self.located,
                    step.path + ("component",),
                    f"{step.spec.component!r} ({registry_origin(step.spec.component)}) declares "
                    f"type names the type system does not know: {', '.join(bad)}; "
                    + "; ".join(fixes),
                )
            )
        return tuple(requires), tuple(produces)

    def check(self, step: ResolvedStep, requires: tuple[str, ...], view: str, what: str) -> None:
        """Issues for ``requires`` missing from ``view`` at this point of the chain."""
        have = self.available.get(view)
        missing = [r for r in requires if not requirement_met(r, have or set())]
        if not missing:
            return
        needed = ", ".join(short_name(m) for m in missing)
        if have is None:
            msg = (
                f"{step.spec.component!r} {what} view {view!r}, which nothing before it writes "
                f"(it needs {needed}); "
                "add a reader or component that writes that view, or fix the view name"
            )
        else:
            produced = ", ".join(sorted(short_name(a) for a in have)) or "nothing"
            msg = (
                f"{step.spec.component!r} requires {needed} in view {view!r}, but no earlier "
                f"step produces it there (available: {produced}); "
                "add a component that produces it before this one"
            )
        self.issues.append(issue_at(self.located, step.path + ("component",), msg))

    def check_view_written(self, step: ResolvedStep) -> bool:
        """A writer's view is one the reader or an earlier step writes. A processor's
        view need not be: the first processor in a view creates it (views share the
        text), and what it needs there is its ``requires``, checked by :meth:`check`."""
        view = step.spec.view
        if view in self.available or view == INITIAL_VIEW:  # every CAS has the initial view
            return True
        written = sorted(self.available)
        self.issues.append(
            issue_at(
                self.located,
                step.path + ("view",),
                f"{step.spec.component!r} writes out view {view!r}, which nothing before it "
                f"writes (views written: {', '.join(written) or 'none'}).{did_you_mean(view, written)}"
                " Fix the view name, or write the view in an earlier step",
            )
        )
        return False

    def check_step_view_used(self, step: ResolvedStep) -> bool:
        """A writer or evaluator that reads the views its config names (a format writer's
        view, an evaluator's gold and system views) does not use the step's ``view:``:
        one set there alone would be ignored, and the output or the scores would be
        another view's, without a word."""
        view = step.spec.view
        named = step.component_class.views_read(step.config)
        if view == INITIAL_VIEW or not named or view in named:
            return True
        name = step.spec.component
        self.issues.append(
            issue_at(
                self.located,
                step.path + ("view",),
                f"{name!r} does not use the step's view {view!r}: it reads the views its "
                f"config names ({', '.join(named)}); name {view!r} in its config instead "
                f"('casflow components {name}' lists its options) and leave out 'view:'",
            )
        )
        return False

    def check_views_read(self, step: ResolvedStep) -> None:
        """The views the step's config names (``views_read``) exist and hold what it needs."""
        before = "" if step.section == "evaluators" else "before it "
        for view, needs in step.component_class.views_read(step.config).items():
            if view in self.available:
                self.check(step, needs, view, "reads")
                continue
            written = ", ".join(sorted(self.available)) or "none"
            # Only a step after this one: a step that reads and writes the same view
            # (a copy from it into it) must not be told to move after itself.
            later = next(
                (
                    writer
                    for writer in self.writers_of.get(view, [])
                    if self.position[writer.path] > self.position.get(step.path, -1)
                ),
                None,
            )
            fix = (
                f"; {' -> '.join(map(str, later.path))} (line "
                f"{self.located.line_of(later.path + ('component',))}) writes it later: "
                "move this step after that one"
                if later is not None and step.section == "components"
                else f".{did_you_mean(view, sorted(self.available))} Fix the view name, or "
                "add a step that writes it"
            )
            self.issues.append(
                issue_at(
                    self.located,
                    step.path + ("config",),
                    f"{step.spec.component!r} reads view {view!r}, which nothing {before}"
                    f"writes (views written: {written}){fix}",
                )
            )

    def check_segmentation_again(self, step: ResolvedStep, produces: tuple[str, ...]) -> None:
        """A processor that makes sentences or tokens in a view that already holds them
        (from the reader or an earlier step) adds a second set beside them: every
        sentence and token twice, or overlapping copies, which evaluators and taggers
        downstream read as one layer."""
        have = self.available.get(step.spec.view)
        if have is None or isinstance(have, _Anything):
            return
        kept = step.component_class.keeps_existing(step.config)
        again = [
            name
            for name in (SENTENCE, TOKEN)
            if name in produces and name in have and name not in kept
        ]
        if not again:
            return
        names = " and ".join(short_name(name) for name in again)
        self.issues.append(
            issue_at(
                self.located,
                step.path + ("component",),
                f"{step.spec.component!r} writes {names} into view {step.spec.view!r}, which "
                f"already holds {names} from an earlier step or the reader: the view would "
                "hold two sets, overlapping; run it in a view of its own, or have it take "
                "those already there (use_existing_sentences / use_existing_tokens, where it "
                "has them)",
            )
        )

    def write(self, view: str, produces: tuple[str, ...]) -> None:
        self.available.setdefault(view, set()).update(produces)


def check_requirements(
    reader: ResolvedStep | None,
    processors: list[ResolvedStep],
    writers: list[ResolvedStep],
    evaluators: list[ResolvedStep],
    located: LocatedYaml,
    issues: list[WorkflowIssue],
) -> None:
    """Every step finds what it requires, in its own view and in the views it reads."""
    chain = _ChainCheck(located, issues)
    for place, step in enumerate(processors):
        chain.writers_of.setdefault(step.spec.view, []).append(step)
        chain.position[step.path] = place
    if reader is not None:
        chain.declare(reader)
        reader_class = reader.component_as(Reader)
        for view, produces in reader_class.views_written(reader.config, reader.spec.view).items():
            chain.write(view, produces)
    else:
        # The reader has its own error, reported where it is: what it writes is unknown,
        # so no later step is reported for reading a view or a type it may have written.
        chain.available = _UnknownViews()
    for step in processors:
        for problem in step.component_class.view_problems(step.config, step.spec.view):
            issues.append(issue_at(located, step.path + ("view",), problem))
        requires, produces = chain.declare(step)
        chain.check(step, requires, step.spec.view, "reads")
        chain.check_views_read(step)
        chain.check_segmentation_again(step, produces)
        chain.write(step.spec.view, produces)
    for step in writers:
        requires, _ = chain.declare(step)
        if chain.check_step_view_used(step) and chain.check_view_written(step):
            chain.check(step, requires, step.spec.view, "writes out")
        chain.check_views_read(step)
    for step in evaluators:
        chain.declare(step)
        chain.check_step_view_used(step)
        chain.check_views_read(step)


def significance_issues(
    evaluators: Sequence[ResolvedStep], context: RunContext, located: LocatedYaml
) -> list[WorkflowIssue]:
    """An evaluator's ``significance:`` metric path and units, checked against what it
    gives for an empty document; a wrong path would otherwise show only in the finished
    report, and sentences the evaluator does not give would be documents."""
    from casflow.pipeline.component import Evaluator, EvaluatorConfig
    from casflow.pipeline.significance_report import settings_problems

    issues = []
    for step in evaluators:
        settings = getattr(step.config, "significance", None)
        if settings is None or not isinstance(step.config, EvaluatorConfig):
            continue
        try:
            evaluator = step.build(Evaluator, context)
        except Exception:  # noqa: S112 - a component that cannot be built reports it when run
            continue
        for key, problem in settings_problems(evaluator, settings.metric, settings.units).items():
            path = step.path + ("config", "significance", key)
            issues.append(issue_at(located, path, problem))
    return issues


def run_component_checks(
    steps: Sequence[ResolvedStep | None],
    context: RunContext,
    located: LocatedYaml,
    issues: list[WorkflowIssue],
    overrides: Mapping[str, Any] | None = None,
) -> None:
    """Each component's own pre-run checks (``check_config``: inputs, models).

    A check that raises instead of returning its problems (a file it could not read)
    is a problem of that step, with the exception's text, never a traceback that
    hides the other steps' problems."""
    input_overridden = (overrides or {}).get("input") is not None
    for step in steps:
        if step is None:
            continue
        try:
            problems = step.component_class.check_config(step.config, context)
        except TypeSystemPluginError:
            raise  # stops every command before work, as it does elsewhere
        except (ValueError, OSError) as exc:
            problems = [f"{step.spec.component!r}: {exc}"]
        except Exception as exc:
            problems = [
                f"{step.spec.component!r}: its configuration check failed with "
                f"{type(exc).__name__}: {exc} (a bug in the component's check: please "
                f"report it to its authors, {registry_origin(step.spec.component)})"
            ]
        for problem in problems:
            if step.section == "reader" and input_overridden:
                # typed on the command line, not in the YAML
                issues.append(WorkflowIssue(("--input",), None, problem))
            else:
                issues.append(issue_at(located, step.path + ("config",), problem))


def output_issues(
    run: RunSpec,
    writers: list[ResolvedStep],
    context: RunContext,
    located: LocatedYaml,
    overrides: Mapping[str, Any] | None,
) -> list[WorkflowIssue]:
    """The output folder and each writer's sub-folder must be writable folders, and no
    two writers may write the same file for a document."""
    folders = [Path(run.output)]
    issues: list[WorkflowIssue] = []
    written_by: dict[str, ResolvedStep] = {}
    for step in writers:
        try:
            writer = step.build(Writer, context)
            paths = writer.output_paths("document")
        except Exception:  # noqa: S112 - the writer's own errors are reported when it runs
            continue
        folders.extend(p.parent for p in paths)
        for written in paths:
            other = written_by.setdefault(os.path.abspath(written), step)
            if other is not step and (other.spec.component, other.config) != (
                step.spec.component,
                step.config,
            ):
                # the later writer would overwrite the earlier one's file, run after run
                # (the same writer twice writes the same content: only time is lost)
                issues.append(
                    WorkflowIssue(
                        step.path,
                        located.line_of(step.path),
                        f"{step.spec.label()} writes {written} for each document, as "
                        f"{other.spec.label()} ({' -> '.join(map(str, other.path))}) does: one "
                        "would overwrite the other; give one of them another 'folder'",
                    )
                )
                break
    if issues:
        return issues
    if (overrides or {}).get("output") is not None:
        path: YamlPath = ("--output",)
        line = None
    else:
        path, line = ("run", "output"), located.line_of(("run", "output"))
    for folder in dict.fromkeys(folders):
        problem = output_folder_problem(folder)
        if problem:
            return [WorkflowIssue(path, line, problem)]
    return []
