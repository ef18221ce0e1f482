"""The workflow file: what a run reads, runs, writes and scores.

A workflow YAML has five top-level keys::

    reader:      {component: NAME, view: VIEW, config: {...}}
    components:  [{component: NAME, view: VIEW, config: {...}}, ...]
    writers:     [{component: NAME, config: {...}}, ...]
    evaluators:  [{component: NAME, config: {gold_view: ..., system_views: [...], ...}}, ...]
    run:         {jobs: N, backend: loky|dask, output: DIR, ...}

The structure is a pydantic model that forbids unknown keys; each step's
``config`` is validated separately against its component's own config class,
and every error is mapped to its YAML line. :func:`load_workflow` reads a file
into a :class:`LoadedWorkflow` (its steps resolved to component classes and
typed configs) after the checks in :mod:`casflow.pipeline.validation`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from casflow.pipeline.component import (
    INITIAL_VIEW,
    Component,
    ComponentConfig,
    EvaluatorConfig,
    RunContext,
)
from casflow.pipeline.registry import ComponentLoadError, UnknownComponentError, registry
from casflow.pipeline.validation import (
    WorkflowIssue,
    WorkflowValidationError,
    YamlPath,
    blame_command_line,
    check_requirements,
    did_you_mean,
    issue_at,
    output_issues,
    pydantic_issues,
    run_component_checks,
    significance_issues,
)
from casflow.pipeline.yaml_lines import (
    LocatedYaml,
    YamlLoadError,
    load_located_yaml,
    load_located_yaml_file,
)

#: The section each role belongs in ("model" is a training workflow's trainer).
SECTIONS = {
    "reader": "reader",
    "components": "processor",
    "writers": "writer",
    "evaluators": "evaluator",
    "model": "trainer",
}
#: ``run:`` options the command line may override.
RUN_OVERRIDES = (
    "jobs",
    "backend",
    "scheduler",
    "output",
    "overwrite",
    "timeout",
    "batch_size",
    "progress",
)

C = TypeVar("C", bound=Component[Any])

#: The longest per-document time limit: far beyond any document, and well within
#: what the timers that enforce it accept (``signal.setitimer`` overflows near 1e10 s).
MAX_TIMEOUT_SECONDS = 1_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepSpec(_Strict):
    component: str = Field(description="Versioned component name, e.g. spacy.pipeline.v1.")
    id: str | None = Field(
        None, description="Label used in reports; defaults to the component name."
    )
    view: str = Field(INITIAL_VIEW, description="CAS view the component reads and writes.")
    config: dict[str, Any] = Field(default_factory=dict, description="The component's options.")

    def label(self) -> str:
        return self.id or self.component


class RunSpec(_Strict):
    jobs: int = Field(1, ge=1, description="Worker processes (joblib); 1 runs in-process.")
    backend: Literal["loky", "dask", "sequential"] = Field(
        "loky", description="loky: local processes; dask: a Dask cluster; sequential: no workers."
    )
    scheduler: str | None = Field(
        None, description="Dask scheduler address (tcp://host:8786); none starts a LocalCluster."
    )
    output: str = Field(
        "casflow-out", description="Output folder (relative to the working directory)."
    )
    batch_size: int = Field(
        4, ge=1, description="Documents sent to a worker at once and batched through components."
    )
    timeout: float | None = Field(
        None,
        gt=0,
        le=MAX_TIMEOUT_SECONDS,
        description=f"Per-document time limit in seconds, at most {MAX_TIMEOUT_SECONDS:,} "
        "(none: no limit).",
    )
    overwrite: bool = Field(False, description="Reprocess documents whose outputs already exist.")
    progress: bool = Field(
        True, description="Show progress (a bar on a terminal, log lines otherwise)."
    )
    max_failures: int | None = Field(
        None,
        ge=1,
        description="Stop the run once this many documents have failed (1: at the first "
        "failure; none: never).",
    )


class WorkflowMeta(_Strict):
    name: str | None = Field(None, description="A name for the workflow.")
    description: str | None = Field(None, description="What the workflow is for.")


class WorkflowSpec(WorkflowMeta):
    reader: StepSpec
    components: list[StepSpec] = Field(default_factory=list)
    writers: list[StepSpec] = Field(default_factory=list)
    evaluators: list[StepSpec] = Field(default_factory=list)
    optional_views: list[str] | dict[str, str | None] = Field(
        default_factory=list,
        description="Views run only where their steps' models and files are present (e.g. "
        "a model users download themselves): elsewhere the view's steps are left out, "
        "evaluators score the other views, and casflow says what was left out and why. A "
        "list of views, or a mapping view -> how to get what it needs (said with the why).",
    )
    run: RunSpec = Field(default_factory=RunSpec)


def workflow_hash(resolved: dict[str, Any]) -> str:
    """Hash of what determines the outputs (the run section's scheduling options excluded)."""
    relevant = {k: v for k, v in resolved.items() if k not in {"run", "name", "description"}}
    blob = json.dumps(relevant, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def dump_resolved(resolved: dict[str, Any], path: Path) -> None:
    from casflow.pipeline.files import atomic_write_text

    text = (
        "# Resolved workflow written by casflow: every default filled in.\n"
        "# Relative paths are taken from the folder the run started in: re-run from there\n"
        "# with: casflow run "
        + str(path)
        + "\n"
        + yaml.safe_dump(resolved, sort_keys=False, allow_unicode=True)
    )
    atomic_write_text(path, text)


# ----------------------------------------------------------------------------- resolved steps


@dataclass
class ResolvedStep:
    """A step whose component name resolved to a class and whose config validated."""

    section: str
    index: int | None
    spec: StepSpec
    component_class: type[Component[Any]]
    config: ComponentConfig

    @property
    def path(self) -> YamlPath:
        return (self.section,) if self.index is None else (self.section, self.index)

    def component_as(self, role: Callable[..., C]) -> type[C]:
        """The component class as the role its section guarantees (a reader step's is a
        Reader: ``resolve_step`` checked it). ``role`` is the role's base class."""
        cls = self.component_class
        if not (isinstance(role, type) and issubclass(cls, role)):
            raise TypeError(f"{self.spec.component} is a {cls.role}, not a {role}")
        return cast("type[C]", cls)

    def build(self, role: Callable[..., C], context: RunContext) -> C:
        """The component, built with this step's config for a run with ``context``."""
        return self.component_as(role)(self.config, context)

    def dump(self, *, with_id: bool = True) -> dict[str, Any]:
        """The step as the resolved workflow records it (every default filled in)."""
        return {
            "component": self.spec.component,
            **({"id": self.spec.id} if with_id and self.spec.id else {}),
            "view": self.spec.view,
            "config": self.config.model_dump(mode="json"),
        }


@dataclass
class LoadedWorkflow:
    source: str
    spec: WorkflowSpec
    reader: ResolvedStep
    processors: list[ResolvedStep]
    writers: list[ResolvedStep]
    evaluators: list[ResolvedStep]
    resolved: dict[str, Any] = field(default_factory=dict)
    #: optional views left out of this run, each with why (the first missing file)
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        return workflow_hash(self.resolved)

    def views(self) -> list[str]:
        seen = [self.reader.spec.view]
        for step in self.processors + self.writers:
            if step.spec.view not in seen:
                seen.append(step.spec.view)
        return seen


def workflow_dir(source: str) -> Path:
    """The folder relative paths in a workflow are read from (the file's folder)."""
    path = Path(source)
    return path.parent if path.suffix in {".yaml", ".yml"} else Path.cwd()


def resolve_step(
    raw: Any,
    section: str,
    index: int | None,
    located: LocatedYaml,
    issues: list[WorkflowIssue],
    at: YamlPath | None = None,
) -> ResolvedStep | None:
    """Validate one step (keys, component name, role, config); problems go to ``issues``.

    ``at`` is its YAML path when it is not ``section[index]``.
    """
    path: YamlPath = at or ((section,) if index is None else (section, index))
    if not isinstance(raw, Mapping):
        issues.append(issue_at(located, path, "expected a mapping with 'component:' and 'config:'"))
        return None
    try:
        spec = StepSpec.model_validate(raw)
    except ValidationError as exc:
        issues.extend(pydantic_issues(exc, path, located, StepSpec))
        return None
    try:
        cls = registry().get(spec.component)
    except (UnknownComponentError, ComponentLoadError) as exc:
        issues.append(issue_at(located, path + ("component",), str(exc)))
        return None
    expected_role = SECTIONS[section]
    if cls.role != expected_role:
        home = next(name for name, role in SECTIONS.items() if role == cls.role)
        issues.append(
            issue_at(
                located,
                path + ("component",),
                f"{spec.component!r} is a {cls.role}, not a {expected_role}; "
                f"move it to the '{home}' section",
            )
        )
        return None
    try:
        config = cls.Config.model_validate(spec.config)
    except ValidationError as exc:
        issues.extend(pydantic_issues(exc, path + ("config",), located, cls.Config))
        return None
    return ResolvedStep(section, index, spec, cls, config)


# ----------------------------------------------------------------------------- loading


def apply_overrides(data: Any, overrides: Mapping[str, Any] | None) -> Any:
    """The workflow data with command-line overrides (run options, the reader's input)."""
    if not overrides or not isinstance(data, dict):
        return data
    data = dict(data)
    run = dict(data.get("run") or {})
    for key in RUN_OVERRIDES:
        if overrides.get(key) is not None:
            run[key] = overrides[key]
    data["run"] = run
    if overrides.get("input") is not None and isinstance(data.get("reader"), dict):
        reader = dict(data["reader"])
        reader["config"] = {**(reader.get("config") or {}), "input": overrides["input"]}
        data["reader"] = reader
    return data


def _check_top_level(data: Any, located: LocatedYaml) -> list[WorkflowIssue]:
    """Refuse what is not a run workflow at all; list unknown top-level keys."""
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
    known = sorted(WorkflowSpec.model_fields)
    return [
        issue_at(
            located,
            (key,),
            f"unknown key {key!r}.{did_you_mean(str(key), known)} Known keys: {', '.join(known)}.",
        )
        for key in data
        if key not in known
    ]


def _resolve_sections(
    data: Mapping[str, Any], located: LocatedYaml, issues: list[WorkflowIssue]
) -> tuple[ResolvedStep | None, dict[str, list[ResolvedStep]]]:
    """The reader and the steps of each list section, those that resolved."""
    reader = None
    if "reader" not in data:
        issues.append(WorkflowIssue(("reader",), 1, "a workflow needs a 'reader:' section"))
    else:
        reader = resolve_step(data["reader"], "reader", None, located, issues)
    steps: dict[str, list[ResolvedStep]] = {}
    for section in ("components", "writers", "evaluators"):
        raw = data.get(section) or []
        if not isinstance(raw, list):
            issues.append(issue_at(located, (section,), "expected a list of steps"))
            raw = []
        resolved = [resolve_step(item, section, i, located, issues) for i, item in enumerate(raw)]
        steps[section] = [s for s in resolved if s is not None]
    return reader, steps


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


def load_located(
    located: LocatedYaml, overrides: Mapping[str, Any] | None = None, check_resources: bool = True
) -> LoadedWorkflow:
    """Resolve and check a parsed workflow; raise WorkflowValidationError listing every problem."""
    data = apply_overrides(located.data, overrides)
    issues = _check_top_level(data, located)
    meta = _meta(data, located, issues)
    reader, steps = _resolve_sections(data, located, issues)
    try:
        run = RunSpec.model_validate(data.get("run") or {})
    except ValidationError as exc:
        issues.extend(pydantic_issues(exc, ("run",), located, RunSpec))
        run = RunSpec()
    issues.extend(_scheduler_issues(run, located))
    issues = _blame_overrides(issues, data, overrides)
    processors, writers, evaluators = steps["components"], steps["writers"], steps["evaluators"]
    issues.extend(duplicate_labels([*processors, *writers, *evaluators], located))
    context = RunContext(output_dir=Path(run.output), workflow_dir=workflow_dir(located.source))
    optional = optional_view_names(data.get("optional_views"), located, issues)
    left_out = absent_views(optional, processors, context, located, issues)
    if left_out:
        processors = [s for s in processors if s.spec.view not in left_out]
        writers = [s for s in writers if s.spec.view not in left_out]
        evaluators = [e for s in evaluators if (e := without_views(s, set(left_out))) is not None]
    chain_reader = reader or _reader_for_chain_check(data.get("reader"))
    check_requirements(chain_reader, processors, writers, evaluators, located, issues)
    issues.extend(significance_issues(evaluators, context, located))
    if check_resources:
        # the components of optional views had their own checks above
        kept = [s for s in processors if s.spec.view not in optional]
        all_steps = [reader, *kept, *writers, *evaluators]
        run_component_checks(all_steps, context, located, issues, overrides)
        issues.extend(output_issues(run, writers, context, located, overrides))
    if issues:
        raise WorkflowValidationError(located.source, issues)
    assert reader is not None
    spec = WorkflowSpec(
        name=meta.name,
        description=meta.description,
        reader=reader.spec,
        components=[s.spec for s in processors],
        writers=[s.spec for s in writers],
        evaluators=[s.spec for s in evaluators],
        run=run,
    )
    resolved = {
        **({"name": spec.name} if spec.name else {}),
        **({"description": spec.description} if spec.description else {}),
        "reader": reader.dump(),
        "components": [s.dump() for s in processors],
        "writers": [s.dump() for s in writers],
        "evaluators": [s.dump() for s in evaluators],
        "run": run.model_dump(mode="json"),
    }
    return LoadedWorkflow(
        located.source,
        spec,
        reader,
        processors,
        writers,
        evaluators,
        resolved=resolved,
        left_out=left_out,
    )


def _meta(
    data: Mapping[str, Any], located: LocatedYaml, issues: list[WorkflowIssue]
) -> WorkflowMeta:
    """The workflow's name and description (each a string, if given)."""
    given = {key: data[key] for key in ("name", "description") if key in data}
    try:
        return WorkflowMeta.model_validate(given)
    except ValidationError as exc:
        issues.extend(pydantic_issues(exc, (), located, WorkflowMeta))
        return WorkflowMeta()


def _scheduler_issues(run: RunSpec, located: LocatedYaml) -> list[WorkflowIssue]:
    """A scheduler address is used by the dask backend only: elsewhere it would be ignored."""
    if run.scheduler is None or run.backend == "dask":
        return []
    return [
        issue_at(
            located,
            ("run", "scheduler"),
            f"a scheduler is used by backend 'dask' only, and the backend is {run.backend!r}; "
            "add --backend dask (or run.backend: dask), or leave the scheduler out",
        )
    ]


def _blame_overrides(
    issues: list[WorkflowIssue], data: Mapping[str, Any], overrides: Mapping[str, Any] | None
) -> list[WorkflowIssue]:
    """Problems with a value the command line gave, reported at its option (``--jobs``),
    not at a YAML line that does not hold it."""
    given = {key for key, value in (overrides or {}).items() if value is not None}
    options: dict[YamlPath, str] = {
        ("run", key): "--" + key.replace("_", "-") for key in RUN_OVERRIDES if key in given
    }
    if "input" not in given:
        return blame_command_line(issues, options)
    options[("reader", "config", "input")] = "--input"
    reader = data.get("reader")
    component = reader.get("component") if isinstance(reader, Mapping) else None
    moved = []
    for issue in blame_command_line(issues, options):
        if issue.path == ("--input",) and issue.message.startswith("unknown key 'input'"):
            issue = WorkflowIssue(
                issue.path,
                None,
                f"the reader {component} has no 'input' option (it finds its documents "
                "otherwise); leave out --input",
            )
        moved.append(issue)
    return moved


def stage_labels(steps: Sequence[ResolvedStep]) -> dict[YamlPath, str]:
    """The label each step's time, failures and warnings are reported under: its
    ``id`` or component name, with the view added where one component runs in several
    views without an id (and the step's place where even that is shared), so that
    their times do not merge."""
    by_label: dict[str, list[ResolvedStep]] = {}
    for step in steps:
        by_label.setdefault(step.spec.label(), []).append(step)
    labels = {}
    for label, shared in by_label.items():
        views = [s.spec.view for s in shared]
        for step in shared:
            if len(shared) == 1:
                labels[step.path] = label
            elif views.count(step.spec.view) == 1:
                labels[step.path] = f"{label} [{step.spec.view}]"
            else:
                where = ".".join(str(p) for p in step.path)
                labels[step.path] = f"{label} [{step.spec.view}, {where}]"
    return labels


def duplicate_labels(steps: list[ResolvedStep], located: LocatedYaml) -> list[WorkflowIssue]:
    """Steps that share a label where reports would merge them: the results of two
    evaluators (keyed by label), or the time and failures of steps given the same
    ``id``. Components used twice without an id (one per view) may share their name."""
    first: dict[str, ResolvedStep] = {}
    issues = []
    for step in steps:
        label = step.spec.label()
        other = first.setdefault(label, step)
        if other is step:
            continue
        evaluators = step.section == other.section == "evaluators"
        if not (evaluators or step.spec.id or other.spec.id):
            continue
        field = "id" if step.spec.id else "component"
        other_field = "id" if other.spec.id else "component"
        other_at = " -> ".join(str(p) for p in other.path)
        what = "evaluation results" if evaluators else "time per stage and failures"
        issues.append(
            issue_at(
                located,
                step.path + (field,),
                f"label {label!r} is also the label of {other_at} (line "
                f"{located.line_of(other.path + (other_field,))}): {what} are reported by "
                "label, so one would hide the other; give each step its own 'id:'",
            )
        )
    return issues


@dataclass(frozen=True)
class OptionalView:
    """An entry of ``optional_views``: where it stands in the YAML, and how to get what
    the view needs (None where the workflow does not say)."""

    at: tuple[str | int, ...]
    how: str | None = None


def optional_view_names(
    raw: Any, located: LocatedYaml, issues: list[WorkflowIssue]
) -> dict[str, OptionalView]:
    """The workflow's ``optional_views``: a list of names or a mapping name -> how to get
    what the view needs (else an issue)."""
    if raw is None:
        return {}
    if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        return {view: OptionalView(("optional_views", i)) for i, view in enumerate(raw)}
    if isinstance(raw, dict) and all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in raw.items()
    ):
        return {view: OptionalView(("optional_views", view), how) for view, how in raw.items()}
    issues.append(
        issue_at(
            located,
            ("optional_views",),
            "expected a list of view names, or a mapping view name -> how to get what it needs",
        )
    )
    return {}


def absent_views(
    optional: dict[str, OptionalView],
    processors: list[ResolvedStep],
    context: RunContext,
    located: LocatedYaml,
    issues: list[WorkflowIssue],
) -> dict[str, str]:
    """The ``optional`` views whose components' own checks (models, files) fail here, each
    with its first problem. Checked whether or not the run checks resources: a run's
    workers get the workflow without these views, and so must the workers started while
    it is checked."""
    absent: dict[str, str] = {}
    for view, entry in optional.items():
        steps = [s for s in processors if s.spec.view == view]
        if not steps:
            issues.append(
                issue_at(
                    located,
                    entry.at,
                    f"no step in components writes view {view!r}; name a view the components write",
                )
            )
            continue
        for step in steps:
            problems = step.component_class.check_config(step.config, context)
            if problems:
                absent[view] = problems[0] + (f"; to include it: {entry.how}" if entry.how else "")
                break
    # An optional view that reads a left-out one (a vote over it, a copy of it) goes
    # too: its own checks pass, but nothing would write what it reads.
    changed = True
    while changed:
        changed = False
        for view in optional:
            if view in absent:
                continue
            for step in (s for s in processors if s.spec.view == view):
                gone = sorted(set(step.component_class.views_read(step.config)) & set(absent))
                if gone:
                    absent[view] = f"{step.spec.component} reads view {gone[0]!r}, left out"
                    changed = True
                    break
    return absent


def without_views(step: ResolvedStep, views: set[str]) -> ResolvedStep | None:
    """An evaluator step with ``views`` taken out of its system views; None when it
    scored only those."""
    config = step.config
    if not isinstance(config, EvaluatorConfig) or not views & set(config.system_views):
        return step
    kept = [v for v in config.system_views if v not in views]
    if not kept:
        return None
    spec = step.spec.model_copy(update={"config": {**step.spec.config, "system_views": kept}})
    config = config.model_copy(update={"system_views": kept})
    return ResolvedStep(step.section, step.index, spec, step.component_class, config)


def read_located(path: str | Path) -> LocatedYaml:
    """A YAML file with the line of every value; YAML errors become a WorkflowValidationError."""
    try:
        return load_located_yaml_file(path)
    except YamlLoadError as exc:
        raise WorkflowValidationError(
            str(path), [WorkflowIssue((), exc.line, str(exc).split(": ", 1)[-1])]
        ) from exc


def load_workflow(
    path: str | Path, overrides: Mapping[str, Any] | None = None, check_resources: bool = True
) -> LoadedWorkflow:
    """Load and validate a workflow file; raise WorkflowValidationError listing every problem."""
    return load_located(read_located(path), overrides, check_resources)


def load_workflow_text(
    text: str,
    source: str = "<workflow>",
    overrides: Mapping[str, Any] | None = None,
    check_resources: bool = True,
) -> LoadedWorkflow:
    """:func:`load_workflow` for YAML text (``source`` names it in messages)."""
    try:
        located = load_located_yaml(text, source)
    except YamlLoadError as exc:
        raise WorkflowValidationError(
            source, [WorkflowIssue((), exc.line, str(exc).split(": ", 1)[-1])]
        ) from exc
    return load_located(located, overrides, check_resources)


def load_resolved(resolved: Mapping[str, Any]) -> LoadedWorkflow:
    """Rebuild a LoadedWorkflow from an already resolved dict (inside workers)."""
    located = LocatedYaml(data=dict(resolved), source="<resolved workflow>")
    return load_located(located, None, check_resources=False)
