"""Validate a workflow before any document is read.

Every problem is collected (not just the first): YAML structure, unknown
top-level or step keys, unknown component names (with the closest names),
components used in the wrong role, invalid config values, type names the type
system does not know, requirements not met by earlier steps in the same view,
views read before anything writes them, and each component's own pre-run
checks (missing model, missing input). Each problem carries its YAML path and
line so the user can go straight to it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from casflow.pipeline.component import (
    Component,
    ComponentConfig,
    EvaluatorConfig,
    RunContext,
)
from casflow.pipeline.files import output_folder_problem
from casflow.pipeline.registry import ComponentLoadError, UnknownComponentError, registry
from casflow.pipeline.workflow import RunSpec, StepSpec, WorkflowSpec, workflow_hash
from casflow.pipeline.yaml_lines import (
    LocatedYaml,
    YamlLoadError,
    load_located_yaml,
    load_located_yaml_file,
)
from casflow.typesystem import load_typesystem, short_name

SECTIONS = {
    "reader": "reader",
    "components": "processor",
    "writers": "writer",
    "evaluators": "evaluator",
    "model": "trainer",  # training workflows (casflow.pipeline.training)
}


@dataclass(frozen=True)
class WorkflowIssue:
    path: tuple[str | int, ...]
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


@dataclass
class ResolvedStep:
    section: str
    index: int | None
    spec: StepSpec
    component_class: type[Component]
    config: ComponentConfig

    @property
    def path(self) -> tuple[str | int, ...]:
        return (self.section,) if self.index is None else (self.section, self.index)


@dataclass
class LoadedWorkflow:
    source: str
    spec: WorkflowSpec
    reader: ResolvedStep
    processors: list[ResolvedStep]
    writers: list[ResolvedStep]
    evaluators: list[ResolvedStep]
    resolved: dict[str, Any] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        return workflow_hash(self.resolved)

    def views(self) -> list[str]:
        seen = [self.reader.spec.view]
        for step in self.processors + self.writers:
            if step.spec.view not in seen:
                seen.append(step.spec.view)
        return seen


def _pydantic_issues(
    exc: ValidationError,
    prefix: tuple[str | int, ...],
    located: LocatedYaml,
    model: type[BaseModel],
) -> list[WorkflowIssue]:
    issues = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        path = prefix + loc
        if err["type"] == "extra_forbidden":
            key = loc[-1]
            parent_model = _model_at(model, loc[:-1])
            known = sorted(parent_model.model_fields) if parent_model else []
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            msg = f"unknown key {key!r}.{hint} Known keys: {', '.join(known)}."
        elif err["type"] == "missing":
            msg = "required key is missing"
        else:
            msg = f"{err['msg']} (got {err.get('input')!r})"
        issues.append(WorkflowIssue(path, located.line_of(path), msg))
    return issues


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        fld = current.model_fields.get(str(part))
        if fld is None:
            return None
        ann = fld.annotation
        args = getattr(ann, "__args__", ())
        current = next(
            (a for a in (ann, *args) if isinstance(a, type) and issubclass(a, BaseModel)), None
        )
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _resolve_step(
    raw: Any,
    section: str,
    index: int | None,
    located: LocatedYaml,
    issues: list[WorkflowIssue],
    at: tuple[str | int, ...] | None = None,
) -> ResolvedStep | None:
    """Validate one step; ``at`` is its YAML path when it is not ``section[index]``."""
    path: tuple[str | int, ...] = at or ((section,) if index is None else (section, index))
    if not isinstance(raw, Mapping):
        issues.append(
            WorkflowIssue(
                path, located.line_of(path), "expected a mapping with 'component:' and 'config:'"
            )
        )
        return None
    try:
        spec = StepSpec.model_validate(raw)
    except ValidationError as exc:
        issues.extend(_pydantic_issues(exc, path, located, StepSpec))
        return None
    try:
        cls = registry().get(spec.component)
    except UnknownComponentError as exc:
        issues.append(
            WorkflowIssue(path + ("component",), located.line_of(path + ("component",)), str(exc))
        )
        return None
    except ComponentLoadError as exc:
        issues.append(
            WorkflowIssue(path + ("component",), located.line_of(path + ("component",)), str(exc))
        )
        return None
    expected_role = SECTIONS[section]
    if cls.role != expected_role:
        issues.append(
            WorkflowIssue(
                path + ("component",),
                located.line_of(path + ("component",)),
                f"{spec.component!r} is a {cls.role}, not a {expected_role}; "
                f"move it to the '{_section_for_role(cls.role)}' section",
            )
        )
        return None
    try:
        config = cls.Config.model_validate(spec.config)
    except ValidationError as exc:
        issues.extend(_pydantic_issues(exc, path + ("config",), located, cls.Config))
        return None
    return ResolvedStep(section, index, spec, cls, config)


def _section_for_role(role: str) -> str:
    return next(section for section, r in SECTIONS.items() if r == role)


def _satisfied(requirement: str, available: set[str]) -> bool:
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
        return typesystem.subsumes(typesystem.get_type(parent), typesystem.get_type(child))
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

    def get(self, key: str, default: Any = None) -> set[str]:  # type: ignore[override]
        return self.setdefault(key)

    def setdefault(self, key: str, default: Any = None) -> set[str]:  # type: ignore[override]
        return super().setdefault(key, _Anything())


def _check_requirements(
    reader: ResolvedStep | None,
    processors: list[ResolvedStep],
    writers: list[ResolvedStep],
    evaluators: list[ResolvedStep],
    located: LocatedYaml,
    issues: list[WorkflowIssue],
) -> None:
    available: dict[str, set[str]] = {}

    def declare(step: ResolvedStep) -> tuple[tuple[str, ...], tuple[str, ...]]:
        requires, produces = step.component_class.requirements(step.config)
        bad = _unknown_type_names(tuple(requires) + tuple(produces))
        if bad:
            issues.append(
                WorkflowIssue(
                    step.path + ("component",),
                    located.line_of(step.path + ("component",)),
                    f"{step.spec.component!r} declares type names the type system does not know: "
                    f"{', '.join(bad)}; install the plug-in that contributes them",
                )
            )
        return tuple(requires), tuple(produces)

    def check(step: ResolvedStep, requires: tuple[str, ...], view: str, what: str) -> None:
        have = available.get(view)
        missing = [r for r in requires if not _satisfied(r, have or set())]
        if not missing:
            return
        path = step.path + ("component",)
        if have is None:
            msg = (
                f"{step.spec.component!r} {what} view {view!r}, which nothing before it writes "
                f"(it needs {', '.join(short_name(m) for m in missing)}); "
                "add a reader or component that writes that view, or fix the view name"
            )
        else:
            produced = ", ".join(sorted(short_name(a) for a in have)) or "nothing"
            msg = (
                f"{step.spec.component!r} requires {', '.join(short_name(m) for m in missing)} in view "
                f"{view!r}, but no earlier step produces it there (available: {produced}); "
                "add a component that produces it before this one"
            )
        issues.append(WorkflowIssue(path, located.line_of(path), msg))

    if reader is not None:
        declare(reader)
        for view, produces in reader.component_class.views_written(
            reader.config, reader.spec.view
        ).items():  # type: ignore[attr-defined]
            available.setdefault(view, set()).update(produces)
    else:
        # The reader has its own error, reported where it is: what it writes is unknown,
        # so no later step is reported for reading a view or a type it may have written.
        available = _UnknownViews()
    for step in processors:
        requires, produces = declare(step)
        check(step, requires, step.spec.view, "reads")
        available.setdefault(step.spec.view, set()).update(produces)
    for step in writers:
        requires, _ = declare(step)
        check(step, requires, step.spec.view, "writes out")
    for step in evaluators:
        requires, _ = declare(step)
        config = step.config
        assert isinstance(config, EvaluatorConfig)
        for view in [config.gold_view, *config.system_views]:
            if view not in available:
                path = step.path + ("config",)
                issues.append(
                    WorkflowIssue(
                        path,
                        located.line_of(path),
                        f"{step.spec.component!r} reads view {view!r}, which nothing writes "
                        f"(views written: {', '.join(sorted(available)) or 'none'})",
                    )
                )
            else:
                check(step, requires, view, "reads")


def _reader_for_chain_check(raw: Any) -> ResolvedStep | None:
    """An invalid reader whose only errors are unknown config keys, with them left out:
    what it writes is then known and the rest of the chain is checked against it. With
    any other error what it writes is unknown, and None makes the chain check skip it."""
    try:
        spec = StepSpec.model_validate(raw)
        cls = registry().get(spec.component)
    except Exception:  # the reader's own error is reported already
        return None
    if cls.role != "reader":
        return None
    try:
        cls.Config.model_validate(spec.config)
        return None  # valid: not a case for this function
    except ValidationError as exc:
        errors = exc.errors()
    unknown = {e["loc"][0] for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1}
    if len(unknown) != len(errors):
        return None
    config = {key: value for key, value in spec.config.items() if key not in unknown}
    try:
        return ResolvedStep("reader", None, spec, cls, cls.Config.model_validate(config))
    except ValidationError:
        return None


def _apply_overrides(data: Any, overrides: Mapping[str, Any] | None) -> Any:
    if not overrides or not isinstance(data, dict):
        return data
    data = dict(data)
    run = dict(data.get("run") or {})
    for key in (
        "jobs",
        "backend",
        "scheduler",
        "output",
        "overwrite",
        "timeout",
        "batch_size",
        "progress",
    ):
        if overrides.get(key) is not None:
            run[key] = overrides[key]
    data["run"] = run
    if overrides.get("input") is not None and isinstance(data.get("reader"), dict):
        reader = dict(data["reader"])
        reader["config"] = {**(reader.get("config") or {}), "input": overrides["input"]}
        data["reader"] = reader
    return data


def validate_located(
    located: LocatedYaml, overrides: Mapping[str, Any] | None = None, check_resources: bool = True
) -> LoadedWorkflow:
    issues: list[WorkflowIssue] = []
    data = _apply_overrides(located.data, overrides)
    if not isinstance(data, Mapping):
        raise WorkflowValidationError(
            located.source, [WorkflowIssue((), 1, "a workflow is a YAML mapping")]
        )
    if "gold" in data and "model" in data and "reader" not in data:
        raise WorkflowValidationError(
            located.source,
            [
                WorkflowIssue(
                    (),
                    1,
                    "this is a training workflow (it has gold: and model:); "
                    f"train with: casflow train {located.source}",
                )
            ],
        )
    known = set(WorkflowSpec.model_fields)
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            issues.append(
                WorkflowIssue(
                    (key,),
                    located.line_of((key,)),
                    f"unknown key {key!r}.{hint} Known keys: {', '.join(sorted(known))}.",
                )
            )

    reader = None
    if "reader" not in data:
        issues.append(WorkflowIssue(("reader",), 1, "a workflow needs a 'reader:' section"))
    else:
        reader = _resolve_step(data["reader"], "reader", None, located, issues)
    steps: dict[str, list[ResolvedStep]] = {}
    for section in ("components", "writers", "evaluators"):
        raw = data.get(section) or []
        if not isinstance(raw, list):
            issues.append(
                WorkflowIssue((section,), located.line_of((section,)), "expected a list of steps")
            )
            raw = []
        resolved = [_resolve_step(item, section, i, located, issues) for i, item in enumerate(raw)]
        steps[section] = [s for s in resolved if s is not None]
    try:
        run = RunSpec.model_validate(data.get("run") or {})
    except ValidationError as exc:
        issues.extend(_pydantic_issues(exc, ("run",), located, RunSpec))
        run = RunSpec()

    _check_requirements(
        reader or _reader_for_chain_check(data.get("reader")),
        steps["components"],
        steps["writers"],
        steps["evaluators"],
        located,
        issues,
    )

    if check_resources:
        context = RunContext(
            output_dir=Path(run.output), workflow_dir=_workflow_dir(located.source)
        )
        for step in [reader] + steps["components"] + steps["writers"] + steps["evaluators"]:
            if step is None:
                continue
            for problem in step.component_class.check_config(step.config, context):
                path = step.path + ("config",)
                line = located.line_of(path)
                if step is reader and (overrides or {}).get("input") is not None:
                    path, line = ("--input",), None  # typed on the command line, not in the YAML
                issues.append(WorkflowIssue(path, line, problem))
        issues.extend(_output_issues(run, steps["writers"], context, located, overrides))

    if issues:
        raise WorkflowValidationError(located.source, issues)
    assert reader is not None

    def dump(step: ResolvedStep) -> dict[str, Any]:
        return {
            "component": step.spec.component,
            **({"id": step.spec.id} if step.spec.id else {}),
            "view": step.spec.view,
            "config": step.config.model_dump(mode="json"),
        }

    spec = WorkflowSpec(
        name=data.get("name"),
        description=data.get("description"),
        reader=reader.spec,
        components=[s.spec for s in steps["components"]],
        writers=[s.spec for s in steps["writers"]],
        evaluators=[s.spec for s in steps["evaluators"]],
        run=run,
    )
    resolved = {
        **({"name": spec.name} if spec.name else {}),
        **({"description": spec.description} if spec.description else {}),
        "reader": dump(reader),
        "components": [dump(s) for s in steps["components"]],
        "writers": [dump(s) for s in steps["writers"]],
        "evaluators": [dump(s) for s in steps["evaluators"]],
        "run": run.model_dump(mode="json"),
    }
    return LoadedWorkflow(
        source=located.source,
        spec=spec,
        reader=reader,
        processors=steps["components"],
        writers=steps["writers"],
        evaluators=steps["evaluators"],
        resolved=resolved,
    )


def _output_issues(
    run: RunSpec,
    writers: list[ResolvedStep],
    context: RunContext,
    located: LocatedYaml,
    overrides: Mapping[str, Any] | None,
) -> list[WorkflowIssue]:
    """The output folder and each writer's sub-folder must be writable folders."""
    folders = [Path(run.output)]
    for step in writers:
        try:
            writer = step.component_class(step.config, context)
            folders.extend(p.parent for p in writer.output_paths("document"))
        except Exception:  # noqa: S112 - the writer's own errors are reported when it runs
            continue
    if (overrides or {}).get("output") is not None:
        path: tuple[str | int, ...] = ("--output",)
        line = None
    else:
        path, line = ("run", "output"), located.line_of(("run", "output"))
    for folder in dict.fromkeys(folders):
        problem = output_folder_problem(folder)
        if problem:
            return [WorkflowIssue(path, line, problem)]
    return []


def _workflow_dir(source: str) -> Path:
    path = Path(source)
    return path.parent if path.suffix in {".yaml", ".yml"} else Path.cwd()


def load_workflow(
    path: str | Path, overrides: Mapping[str, Any] | None = None, check_resources: bool = True
) -> LoadedWorkflow:
    """Load and validate a workflow file; raise WorkflowValidationError listing every problem."""
    try:
        located = load_located_yaml_file(path)
    except YamlLoadError as exc:
        raise WorkflowValidationError(
            str(path), [WorkflowIssue((), exc.line, str(exc).split(": ", 1)[-1])]
        ) from exc
    return validate_located(located, overrides, check_resources)


def load_workflow_text(
    text: str,
    source: str = "<workflow>",
    overrides: Mapping[str, Any] | None = None,
    check_resources: bool = True,
) -> LoadedWorkflow:
    try:
        located = load_located_yaml(text, source)
    except YamlLoadError as exc:
        raise WorkflowValidationError(
            source, [WorkflowIssue((), exc.line, str(exc).split(": ", 1)[-1])]
        ) from exc
    return validate_located(located, overrides, check_resources)


def load_resolved(resolved: Mapping[str, Any]) -> LoadedWorkflow:
    """Rebuild a LoadedWorkflow from an already resolved dict (inside workers)."""
    located = LocatedYaml(data=dict(resolved), source="<resolved workflow>")
    return validate_located(located, None, check_resources=False)
