"""``casflow train WORKFLOW.yaml``: learn a model from gold CAS views.

A training workflow names the gold source (a reader, the view it fills, and the
reader settings that select the training and development documents), the layers
to learn, the model kind (a trainer component) with its settings, the protocol
and the output folder::

    gold:
      reader: {component: craft.reader.v1, view: gold, config: {...}}
      train: {split: train}        # reader settings for the training documents
      dev: {split: dev}            # ... and for the development documents
    layers: [tokens, sentences, pos, dependencies]
    model: {component: train.spacy.syntax.v1, config: {...}}
    cross_validation: {folds: 5}   # 0: no cross-validation
    seed: 0
    output: runs/craft-syntax

The protocol is the CRAFT study's: with ``folds: k`` the training documents, in
document-id order, are cut into k contiguous folds; k models are trained on k-1
folds each and scored on the fold left out; then the final model is trained on
all training documents and scored on the development documents. Scores per fold,
their mean and the final scores go to ``training-report.json`` and a model card
(``MODEL_CARD.md``) beside the final model. A fold whose scores are already on
disk is not trained again, so an interrupted run resumes.

An output folder belongs to one training workflow (``training-workflow.json`` says
which file, and its ``name``): the same workflow trains there again, with changed
settings too, renamed, moved, or a clone with the same ``name``, reusing what still
fits; another workflow still standing at the recorded path is refused before anything
there changes, unless ``--overwrite`` says to replace its model. An unexpected error
of a trainer or reader stops the run as :class:`TrainingFailed`, naming the step; its
traceback goes to the report, or to ``training-error.log`` where there is no report of
the run.

The engine knows no tool: trainers are components of role ``trainer``
(:class:`casflow.pipeline.component.Trainer`), registered like any other.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import random
import re
import shlex
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from casflow.pipeline.chain import read_document
from casflow.pipeline.component import Reader, Trainer, TrainingContext
from casflow.pipeline.document_warnings import collected_warnings
from casflow.pipeline.files import (
    atomic_write_text,
    create_text_exclusively,
    output_folder_problem,
)
from casflow.pipeline.fingerprints import fingerprint, mark_done, read_marker, step_status
from casflow.pipeline.locks import building
from casflow.pipeline.registry import registry
from casflow.pipeline.validation import (
    WorkflowIssue,
    WorkflowValidationError,
    YamlPath,
    blame_command_line,
    issue_at,
    pydantic_issues,
    requirement_met,
)
from casflow.pipeline.workflow import ResolvedStep, read_located, resolve_step, workflow_dir
from casflow.pipeline.yaml_lines import LocatedYaml
from casflow.typesystem import load_typesystem, short_name

REPORT_FILE = "training-report.json"
CARD_FILE = "MODEL_CARD.md"
#: The training workflow an output folder's model belongs to (its file and ``name``),
#: written before a run (a ``--fold`` one too, which writes no report) changes anything
#: there.
OWNER_FILE = "training-workflow.json"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GoldSpec(_Strict):
    reader: dict[str, Any] = Field(
        description="The reader step (component, view, config) that loads the gold documents."
    )
    train: dict[str, Any] = Field(
        default_factory=dict,
        description="Reader config keys selecting the training documents (e.g. split: train).",
    )
    dev: dict[str, Any] | None = Field(
        None,
        description="Reader config keys selecting the development documents; none: no dev set.",
    )


class CrossValidationSpec(_Strict):
    folds: int = Field(
        0,
        ge=0,
        description="0: none; k >= 2: k folds over the training documents in document-id order.",
    )

    @field_validator("folds")
    @classmethod
    def _not_one(cls, folds: int) -> int:
        if folds == 1:
            raise ValueError(
                "1 fold leaves no documents to train on; use 0 (no cross-validation) or 2 "
                "or more folds"
            )
        return folds


class TrainingSpec(_Strict):
    name: str | None = None
    description: str | None = None
    gold: GoldSpec
    layers: list[str] = Field(min_length=1, description="Layers the model learns.")
    model: dict[str, Any] = Field(description="The trainer step (component, config).")
    cross_validation: CrossValidationSpec = Field(default_factory=CrossValidationSpec)
    # NumPy's seeds (seed_everything) are 32-bit: a seed beyond would fail after reading
    seed: int = Field(
        0,
        ge=0,
        le=2**32 - 1,
        description="Random seed of everything that draws numbers (0 to 4294967295).",
    )
    output: str = Field(description="Output folder (relative to the working directory).")


@dataclass
class LoadedTraining:
    source: str
    spec: TrainingSpec
    train_reader: ResolvedStep
    dev_reader: ResolvedStep | None
    trainer: ResolvedStep
    resolved: dict[str, Any] = field(default_factory=dict)
    # Command-line overrides that were given (--seed 2 ...): the model card's command
    # must name them, or a model trained with another seed reads as the workflow's own.
    overrides: dict[str, Any] = field(default_factory=dict)
    # --overwrite: the output folder may hold another training workflow's model, which
    # this run replaces (not in the card's command: once trained, the folder is ours)
    overwrite: bool = False

    @property
    def gold_view(self) -> str:
        return self.train_reader.spec.view

    @property
    def workflow_file(self) -> Path:
        """The workflow file, absolute: with the workflow's ``name``, what says whose
        model an output folder holds."""
        return _absolute(self.source)

    @property
    def command(self) -> str:
        """The ``casflow train`` command that trains this, overrides included."""
        # quoted, so a path with a space or a shell character still pastes as one argument
        flags = "".join(f" --{key} {shlex.quote(str(v))}" for key, v in self.overrides.items())
        return f"casflow train {shlex.quote(self.source)}{flags}"


def _merged_reader(raw: Any, extra: Mapping[str, Any]) -> Any:
    if not isinstance(raw, Mapping):
        return raw
    merged = dict(raw)
    merged["config"] = {**(raw.get("config") or {}), **extra}
    return merged


#: Command-line options of ``casflow train`` and the YAML value each sets.
TRAIN_OVERRIDES: dict[YamlPath, str] = {
    ("output",): "--output",
    ("cross_validation", "folds"): "--folds",
    ("seed",): "--seed",
}


def validate_training(
    located: LocatedYaml, overrides: Mapping[str, Any] | None = None, *, overwrite: bool = False
) -> LoadedTraining:
    """Check a training workflow, reporting every problem with its YAML line (or the
    command-line option that gave the value). ``overwrite``: an output folder holding
    another training workflow's model is not a problem (its model is replaced)."""
    data = _training_data(located, overrides)
    issues: list[WorkflowIssue] = []
    spec: TrainingSpec | None = None
    try:
        spec = TrainingSpec.model_validate(data)
    except ValidationError as exc:
        # reported with the steps' own problems below, not alone before them
        issues.extend(pydantic_issues(exc, (), located, TrainingSpec))
    raw_gold = data.get("gold")
    gold: Mapping[str, Any] = raw_gold if isinstance(raw_gold, Mapping) else {}
    train_reader, dev_reader = _resolve_readers(gold, located, issues)
    trainer = (
        resolve_step(data["model"], "model", None, located, issues) if "model" in data else None
    )
    trainer_cls = _trainer_class(data.get("model"))
    if trainer_cls is not None and spec is not None:
        _check_layers(trainer_cls, trainer, train_reader, spec.layers, located, issues)
    if trainer_cls is not None and trainer_cls.needs_dev and raw_gold and gold.get("dev") is None:
        issues.append(
            issue_at(
                located,
                ("gold",),
                f"{trainer_cls.name} {trainer_cls.needs_dev}: give gold.dev (the reader "
                "settings of the development documents, e.g. dev: {split: dev})",
            )
        )
    if spec is not None:
        _check_training_resources(
            _context(spec, located.source), train_reader, dev_reader, trainer, located, issues
        )
        problem = output_folder_problem(spec.output, "output") or _other_model_problem(
            Path(spec.output),
            trainer.spec.component if trainer is not None else None,
            _absolute(located.source),
            spec.name,
            overwrite,
        )
        if problem:
            issues.append(issue_at(located, ("output",), problem))
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    issues = blame_command_line(
        issues,
        {path: option for path, option in TRAIN_OVERRIDES.items() if option[2:] in given},
    )
    if issues:
        raise WorkflowValidationError(located.source, issues)
    assert spec is not None and train_reader is not None and trainer is not None
    resolved = {
        **({"name": spec.name} if spec.name else {}),
        "gold": {
            "train": train_reader.dump(with_id=False),
            **({"dev": dev_reader.dump(with_id=False)} if dev_reader is not None else {}),
        },
        "layers": list(spec.layers),
        "model": {
            "component": trainer.spec.component,
            "config": trainer.config.model_dump(mode="json"),
        },
        "cross_validation": spec.cross_validation.model_dump(),
        "seed": spec.seed,
        "output": spec.output,
    }
    return LoadedTraining(
        located.source, spec, train_reader, dev_reader, trainer, resolved, given, overwrite
    )


def _absolute(source: str | Path) -> Path:
    return Path(source).expanduser().resolve()


@dataclass(frozen=True)
class _Owner:
    """Whose model an output folder holds, as the file ``said_by`` records it."""

    workflow_file: Path | None  # None: not recorded (a report from outside casflow)
    trainer: str | None
    name: str | None  # the workflow's ``name``, when it has one
    said_by: str


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _output_owner(output: Path) -> _Owner | None:
    """The training workflow and trainer of the model in ``output``, or None when no
    training wrote there (a folder trained before ``OWNER_FILE`` existed: its report)."""
    owner = read_marker(output / OWNER_FILE)
    if owner is not None:
        path = _text_or_none(owner.get("workflow_file"))
        return _Owner(
            Path(path) if path else None,
            _text_or_none(owner.get("trainer")),
            _text_or_none(owner.get("name")),
            OWNER_FILE,
        )
    report = read_marker(output / REPORT_FILE)
    if report is None:
        return None
    workflow = report.get("workflow")
    workflow = workflow if isinstance(workflow, Mapping) else {}
    model = workflow.get("model")
    return _Owner(
        _reported_workflow_file(report, output),
        _text_or_none(model.get("component")) if isinstance(model, Mapping) else None,
        _text_or_none(workflow.get("name")),
        REPORT_FILE,
    )


def _reported_workflow_file(report: Mapping[str, Any], output: Path) -> Path | None:
    """The workflow file of a report written before ``OWNER_FILE`` existed. Its
    ``source`` is the path as typed, from that run's working directory."""
    source = report.get("source")
    if not isinstance(source, str) or not source:
        return None
    path = Path(source).expanduser()
    if path.is_absolute():
        return path.resolve()
    return (_reporting_run_directory(report, output) / path).resolve()


def _reporting_run_directory(report: Mapping[str, Any], output: Path) -> Path:
    """The working directory of the run that wrote ``output``'s report: this run's when
    the output it was given, when relative, leads from here to ``output`` (the same
    command from the same place); else the folder that output leads from to
    ``output`` as this run reaches it. Not through symlinks: with ``runs`` a link to
    ``/bigdisk/runs``, ``runs/x`` still leads from the project, not from ``/bigdisk``."""
    cwd = Path.cwd()
    workflow = report.get("workflow")
    given = workflow.get("output") if isinstance(workflow, Mapping) else None
    if not isinstance(given, str) or not given or Path(given).expanduser().is_absolute():
        return cwd
    with contextlib.suppress(OSError):
        if os.path.samefile(cwd / given, output):
            return cwd
    tail = Path(os.path.normpath(given)).parts
    here = Path(os.path.normpath(output.expanduser().absolute())).parts
    if tail and ".." not in tail and here[-len(tail) :] == tail:
        return Path(*here[: -len(tail)])
    return cwd


def _gone(path: Path) -> bool:
    """Whether ``path`` no longer exists (one that cannot be looked at is not gone)."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _same_workflow(owner: _Owner, workflow_file: Path, name: str | None) -> bool:
    """Whether this training workflow is the one whose model ``owner`` describes: an
    identity, not a path. Its file, renamed or moved (the project folder too, or a
    clone trains into a shared folder), is still that workflow; only another workflow
    still standing at the recorded path, under another name or none, is not."""
    if owner.workflow_file is None or owner.workflow_file == workflow_file:
        return True
    if owner.name is not None and owner.name == name:
        return True
    return _gone(owner.workflow_file)


def _other_model_problem(
    output: Path,
    component: str | None,
    workflow_file: Path,
    name: str | None,
    overwrite: bool,
) -> str | None:
    """Why this training may not write into ``output``: it holds another trainer's
    model (the two models' files would mix in one model folder), or another training
    workflow's (it would be replaced: hours of training, lost by a mistyped output).
    The same workflow (:func:`_same_workflow`) trains there again, whatever it changed
    in its settings."""
    owner = _output_owner(output)
    if owner is None or component is None:
        return None
    if owner.trainer and owner.trainer != component:
        return (
            f"output folder {output} holds a model of {owner.trainer} ({owner.said_by}); "
            f"{component} would mix its files with that model's: choose another --output "
            "(or output), or delete that folder"
        )
    if overwrite or _same_workflow(owner, workflow_file, name):
        return None
    # a copy of the workflow (a clone of its repository) has no other way to say it is
    # the same workflow; two different names are two workflows
    copy = "; or, if it is a copy of that workflow (a clone of its repository, say), "
    if owner.name and not name:
        copy += f"give it that workflow's name ({owner.name})"
    elif not owner.name:
        copy += "give both the same name (the name: key)"
    else:
        copy = ""
    return (
        f"output folder {output} holds the model of another training workflow, "
        f"{owner.workflow_file} ({owner.said_by}); training {workflow_file} there would "
        "replace it: choose another --output (or output), or add --overwrite to replace "
        f"that model{copy}"
    )


def _training_data(located: LocatedYaml, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The workflow's data with command-line overrides; refuses what is not one."""
    data = located.data
    if not isinstance(data, Mapping):
        raise WorkflowValidationError(
            located.source, [WorkflowIssue((), 1, "a training workflow is a YAML mapping")]
        )
    data = dict(data)
    if "reader" in data and "gold" not in data:
        raise WorkflowValidationError(
            located.source,
            [
                WorkflowIssue(
                    (),
                    1,
                    "this is a run workflow (it has reader:); run it with: casflow run "
                    f"{located.source}. A training workflow names gold:, layers:, model:",
                )
            ],
        )
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key == "folds":
            data["cross_validation"] = {**(data.get("cross_validation") or {}), "folds": value}
        else:
            data[key] = value
    return data


def _resolve_readers(
    gold: Mapping[str, Any], located: LocatedYaml, issues: list[WorkflowIssue]
) -> tuple[ResolvedStep | None, ResolvedStep | None]:
    """The gold reader with the training documents' settings, and with the dev ones
    (None where the reader is missing or wrong; TrainingSpec reports a missing one)."""
    if "reader" not in gold:
        return None, None
    train = gold.get("train")
    train_reader = _resolve_reader(
        gold["reader"], train if isinstance(train, Mapping) else {}, "train", located, issues
    )
    dev = gold.get("dev")
    if not isinstance(dev, Mapping):
        return train_reader, None
    dev_issues: list[WorkflowIssue] = []
    dev_reader = _resolve_reader(gold["reader"], dev, "dev", located, dev_issues)
    # the shared part of the reader is checked once; only dev's own keys add problems
    issues.extend(i for i in dev_issues if i not in issues)
    return train_reader, dev_reader


def _resolve_reader(
    raw_reader: Any,
    extra: Mapping[str, Any],
    split: str,
    located: LocatedYaml,
    issues: list[WorkflowIssue],
) -> ResolvedStep | None:
    """The gold reader with ``gold.<split>``'s config keys; a problem with one of
    those keys is reported at its own line under ``gold -> <split>``."""
    at: YamlPath = ("gold", "reader")
    found: list[WorkflowIssue] = []
    step = resolve_step(_merged_reader(raw_reader, extra), "reader", None, located, found, at)
    config = ("gold", "reader", "config")
    for issue in found:
        key = issue.path[len(config)] if issue.path[: len(config)] == config else None
        if key in extra:
            path = ("gold", split, *issue.path[len(config) :])
            issue = issue_at(located, path, issue.message)
        issues.append(issue)
    return step


def _check_layers(
    trainer_cls: type[Trainer[Any]],
    trainer: ResolvedStep | None,
    train_reader: ResolvedStep | None,
    layers: Sequence[str],
    located: LocatedYaml,
    issues: list[WorkflowIssue],
) -> None:
    """The trainer learns each layer, and the gold reader writes what each layer needs."""
    known = trainer_cls.layers
    for i, layer in enumerate(layers):
        if layer not in known:
            issues.append(
                issue_at(
                    located,
                    ("layers", i),
                    f"{trainer_cls.name} cannot learn layer {layer!r}; "
                    f"it learns: {', '.join(known) or 'nothing'}",
                )
            )
    if trainer is not None:
        for problem in trainer_cls.check_layers(trainer.config, layers):
            issues.append(issue_at(located, ("layers",), problem))
    if train_reader is None:
        return
    view = train_reader.spec.view
    written = set(
        train_reader.component_as(Reader).views_written(train_reader.config, view).get(view, ())
    )
    for layer in layers:
        needed = (
            trainer_cls.layer_requirements(trainer.config, layer)
            if trainer is not None
            else known.get(layer, ())
        )
        for requirement in needed:
            if not requirement_met(requirement, written):
                issues.append(
                    issue_at(
                        located,
                        ("gold", "reader"),
                        f"layer {layer!r} needs {short_name(requirement)} in view {view!r}, "
                        f"which {train_reader.spec.component} does not write with this "
                        "config; enable that layer in the reader's config",
                    )
                )


def _check_training_resources(
    context: TrainingContext,
    train_reader: ResolvedStep | None,
    dev_reader: ResolvedStep | None,
    trainer: ResolvedStep | None,
    located: LocatedYaml,
    issues: list[WorkflowIssue],
) -> None:
    """Each step's own pre-run checks; a problem the train and dev readers share counts
    once (at the train settings' line)."""
    checked = (
        (train_reader, ("gold", "train")),
        (dev_reader, ("gold", "dev")),
        (trainer, ("model",)),
    )
    reader_problems: set[str] = set()
    for step, path in checked:
        if step is None:
            continue
        for problem in step.component_class.check_config(step.config, context):
            if path[0] == "gold":
                if problem in reader_problems:
                    continue
                reader_problems.add(problem)
            where = path if path[0] == "model" else ("gold", "reader")
            issue = WorkflowIssue(where + ("config",), located.line_of(path), problem)
            if issue not in issues:
                issues.append(issue)


def _trainer_class(raw: Any) -> type[Trainer[Any]] | None:
    """The trainer class a model step names, if it names one (its errors are reported
    by ``resolve_step``); layers are checked even when the step's config is wrong."""
    try:
        cls = registry().get(str(raw.get("component"))) if isinstance(raw, Mapping) else None
    except Exception:
        return None
    return cls if isinstance(cls, type) and issubclass(cls, Trainer) else None


def load_training_workflow(
    path: str | Path, overrides: Mapping[str, Any] | None = None, *, overwrite: bool = False
) -> LoadedTraining:
    return validate_training(read_located(path), overrides, overwrite=overwrite)


def _context(spec: TrainingSpec, source: str) -> TrainingContext:
    return TrainingContext(
        output_dir=Path(spec.output),
        workflow_dir=workflow_dir(source),
        seed=spec.seed,
        layers=tuple(spec.layers),
    )


# ----------------------------------------------------------------------------- protocol


def document_id_key(doc_id: str) -> tuple[Any, ...]:
    """Natural order: digit runs compare as numbers (PMIDs, BC2GM sentence ids)."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in re.split(r"(\d+)", doc_id)
        if part
    )


def contiguous_folds(doc_ids: Sequence[str], folds: int) -> list[list[str]]:
    """``folds`` contiguous runs of the ids in document-id order, sizes differing by one."""
    if folds < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    ordered = sorted(doc_ids, key=document_id_key)
    if len(ordered) < folds:
        raise ValueError(f"{len(ordered)} training documents cannot make {folds} folds")
    size, extra = divmod(len(ordered), folds)
    result, start = [], 0
    for k in range(folds):
        end = start + size + (1 if k < extra else 0)
        result.append(ordered[start:end])
        start = end
    return result


def seed_everything(seed: int) -> None:
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass


class LogLines(io.TextIOBase):
    """A file-like object feeding whole lines to ``log``: trainers hand it to tools that
    print progress (spaCy's table, crfsuite) so it reaches the training log."""

    def __init__(self, log: Callable[[str], None]) -> None:
        super().__init__()
        self.log = log
        self._pending = ""

    def __enter__(self) -> LogLines:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pending.strip():
            self.log(self._pending.rstrip())
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            if line.strip():
                self.log(line.rstrip())
        return len(text)

    def flush(self) -> None:
        pass


class TrainingDataError(Exception):
    """Training cannot go on: a gold document could not be read, or a trainer's tool
    refused the data or settings (the message says what to do; no traceback)."""


class TrainingOutputError(Exception):
    """The output folder came to hold another training workflow's model while this run
    read its gold documents (validation refuses one there before): nothing was changed."""


class TrainingFailed(Exception):
    """An unexpected error (not a data or settings problem a tool explained, which is a
    :class:`TrainingDataError`) stopped ``casflow train`` at ``step`` (``fold 2/5``,
    ``final model``, ...) in ``component`` (``trainer NAME``, ``reader NAME``).
    ``traceback_in``: the file holding the full traceback (None: it could not be
    written)."""

    def __init__(self, source: str, step: str, component: str, error: Exception) -> None:
        super().__init__(f"training {source} failed at {step} ({component}): {_said(error)}")
        self.source = source
        self.step = step
        self.component = component
        self.error = error
        self.traceback_in: Path | None = None

    @property
    def traceback_text(self) -> str:
        return "".join(traceback.format_exception(self.error))


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class TrainingStopped(KeyboardInterrupt):
    """SIGTERM stopped ``casflow train`` (Slurm, systemd, docker stop). Raised like
    Ctrl-C's KeyboardInterrupt, so the step being trained records its part and the
    report says the run was interrupted, as it does for Ctrl-C."""

    def __init__(self, signum: int, name: str) -> None:
        super().__init__(f"stopped by {name}")
        self.signum = signum


#: The key of ``read_gold_examples``' counts that counts documents with text.
_TEXT = "text"

#: Seconds between two progress lines while the gold documents are read.
READ_LOG_SECONDS = 10.0

#: Warnings about the gold data kept in the training report (and logged).
MAX_GOLD_WARNINGS = 500


def read_gold_examples(
    step: ResolvedStep,
    trainer: Trainer,
    context: TrainingContext,
    log: Callable[[str], None],
    what: str,
    said: list[dict[str, Any]] | None = None,
    found: dict[str, int] | None = None,
) -> list[tuple[str, Any]]:
    """(doc id, training example) of every document the reader lists, in its order.

    What the reader and the trainer warn about (gold it repaired or skipped) is
    logged and, with ``said``, appended there with its ``document`` (none for the
    listing) for the training report. ``found``: type name -> how many annotations of
    that type the documents' gold views hold, for each type name given as a key."""
    reader = step.build(Reader, context)
    typesystem = load_typesystem()
    view_name = step.spec.view
    examples: list[tuple[str, Any]] = []
    started = time.monotonic()
    said = [] if said is None else said

    def tell(collected: list[dict[str, Any]], document: str | None) -> None:
        for item in collected:
            if len(said) < MAX_GOLD_WARNINGS:
                log(f"warning: {what} {document or 'listing'}: {item['message']}")
                said.append({**item, "gold": what, "document": document})
            elif len(said) == MAX_GOLD_WARNINGS:
                log(f"warning: more than {MAX_GOLD_WARNINGS} warnings; the rest are not kept")
                said.append({"gold": what, "message": "more warnings, not kept"})

    try:
        listing: list[dict[str, Any]] = []
        with collected_warnings(f"reader {step.spec.component}", listing):
            refs = list(reader.iter_documents())
        tell(listing, None)
        _refuse_repeated_ids(refs, what)
        last_said = time.monotonic()
        for n, ref in enumerate(refs, start=1):
            if ref.error:
                raise TrainingDataError(f"{what} document {ref.doc_id} ({ref.uri}): {ref.error}")
            try:
                collected: list[dict[str, Any]] = []
                with collected_warnings(f"reader {step.spec.component}", collected):
                    cas = read_document(reader, ref, view_name, typesystem)
                with collected_warnings(f"trainer {trainer.name}", collected):
                    view = cas.get_view(view_name)
                    examples.append((ref.doc_id, trainer.example(view, ref.doc_id)))
                if found is not None:
                    found[_TEXT] = found.get(_TEXT, 0) + bool((view.sofa_string or "").strip())
                    for type_name in found.keys() - {_TEXT}:
                        found[type_name] += len(view.select(type_name))
                tell(collected, ref.doc_id)
            except TrainingDataError:
                raise
            except Exception as exc:
                raise TrainingDataError(
                    f"{what} document {ref.doc_id} ({ref.uri}): {type(exc).__name__}: {exc}. "
                    "Fix or leave out that document (reader config) and train again."
                ) from exc
            # A line every READ_LOG_SECONDS, not every ten documents: BC2GM's 15,000
            # sentences as documents made 1,500 lines of a CI log.
            now = time.monotonic()
            if n == len(refs) or now - last_said >= READ_LOG_SECONDS:
                last_said = now
                log(f"read {n}/{len(refs)} {what} documents ({now - started:.0f} s)")
    finally:
        reader.close()
    if not examples:
        raise TrainingDataError(f"the reader lists no {what} documents; check gold.{what}")
    return examples


def _refuse_repeated_ids(refs: Sequence[Any], what: str) -> None:
    """Folds, the held-out check against the dev set and the report go by document id:
    two documents under one id (two folders with the same file names) would land in two
    folds at once, or be scored in place of each other."""
    first: dict[str, str] = {}
    repeated: list[tuple[str, str, str]] = []
    for ref in refs:
        if ref.doc_id in first:
            repeated.append((ref.doc_id, first[ref.doc_id], ref.uri))
        else:
            first[ref.doc_id] = ref.uri
    if repeated:
        doc_id, one, other = repeated[0]
        raise TrainingDataError(
            f"{len(repeated)} {what} document(s) repeat the id of another (e.g. {doc_id}: "
            f"{one} and {other}); folds and the held-out check go by document id: leave out "
            f"the copies or give them other names (gold.{what} settings of the reader)"
        )


def _mean_scores(per_fold: Sequence[Mapping[str, float]]) -> dict[str, dict[str, float]]:
    keys = [k for k in per_fold[0] if all(k in s for s in per_fold)]
    result = {}
    for key in keys:
        values = [float(s[key]) for s in per_fold]
        result[key] = {
            "mean": statistics.fmean(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
        }
    return result


@dataclass
class TrainingResult:
    output_dir: Path
    model_dir: Path
    report: dict[str, Any]


def _versions(trainer: Trainer) -> dict[str, str]:
    """Versions of Python, casflow and cassis, and of the libraries the trainer declares."""
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("casflow", *trainer.libraries, "dkpro-cassis"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found


@dataclass
class _GoldData:
    """The examples read for training: (document id, example), in the reader's order."""

    train: list[tuple[str, Any]]
    dev: list[tuple[str, Any]]
    # what the readers warned about: stage, category, message, gold, document
    warnings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def train_ids(self) -> list[str]:
        return [d for d, _ in self.train]

    @property
    def dev_examples(self) -> list[Any]:
        return [e for _, e in self.dev]


class _Clock:
    """Log lines prefixed with the seconds since training started."""

    def __init__(self, log: Callable[[str], None] | None) -> None:
        self.started = time.monotonic()
        self.log = log or (lambda m: print(m, file=sys.stderr, flush=True))

    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 1)

    def __call__(self, message: str) -> None:
        self.log(f"[{time.monotonic() - self.started:7.0f} s] {message}")


def _read_data(
    loaded: LoadedTraining, trainer: Trainer[Any], context: TrainingContext, say: _Clock
) -> _GoldData:
    """Training and development examples; a document in both is an error."""
    say(f"reading training documents with {loaded.train_reader.spec.component}")
    said: list[dict[str, Any]] = []
    needed = {
        layer: type(trainer).layer_requirements(trainer.config, layer)
        for layer in loaded.spec.layers
    }
    types = {type_name for names in needed.values() for type_name in names}
    found = dict.fromkeys(types, 0)
    train = read_gold_examples(loaded.train_reader, trainer, context, say, "train", said, found)
    learned = {k: v for k, v in needed.items() if k not in type(trainer).unsupervised_layers}
    _refuse_missing_gold(loaded.train_reader, "train", len(train), learned, found)
    dev: list[tuple[str, Any]] = []
    if loaded.dev_reader is not None:
        say("reading development documents")
        found = dict.fromkeys(types, 0)
        dev = read_gold_examples(loaded.dev_reader, trainer, context, say, "dev", said, found)
        _refuse_missing_gold(loaded.dev_reader, "dev", len(dev), needed, found)
    overlap = {d for d, _ in train} & {d for d, _ in dev}
    if overlap:
        raise TrainingDataError(
            f"{len(overlap)} documents are both training and development documents "
            f"(e.g. {sorted(overlap)[0]}); the dev set must be held out"
        )
    return _GoldData(train, dev, said)


def _refuse_missing_gold(
    reader: ResolvedStep,
    what: str,
    documents: int,
    needed: Mapping[str, Sequence[str]],
    found: Mapping[str, int],
) -> None:
    """Each layer's gold is somewhere in the ``what`` documents: a layer without any
    (the reader's config leaves it out, the gold is in another view) trains a model
    that never outputs it, or scores it as 0, after the whole training."""
    where = (
        f"in view {reader.spec.view!r} (read by {reader.spec.component} with the "
        f"gold.{what} settings)"
    )
    kind = "training" if what == "train" else "development"
    if not found.get(_TEXT):
        raise TrainingDataError(
            f"the {documents} {kind} documents hold no text {where}: check that the reader "
            f"reads the gold view, with its text, and that gold.{what} selects the documents"
        )
    layers_of: dict[str, list[str]] = {}
    for layer, names in needed.items():
        for type_name in names:
            if not found.get(type_name):
                layers_of.setdefault(type_name, []).append(layer)
    scored = "" if what == "train" else ", scored on them"
    missing = [
        f"no {short_name(type_name)} (the {', '.join(layers)} layer"
        + ("s" if len(layers) > 1 else "")
        + scored
        + ")"
        for type_name, layers in layers_of.items()
    ]
    if missing:
        raise TrainingDataError(
            f"the {documents} {kind} documents hold {', '.join(missing)} {where}: check "
            "that the reader's config loads those annotations into that view and that "
            f"gold.{what} selects annotated documents"
        )


#: Per step (a fold, the final model): the training time across the runs that trained it.
TIMING_FILE = "training-time.json"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@contextlib.contextmanager
def _step_time(folder: Path, key: str) -> Iterator[dict[str, Any]]:
    """The time a step's model took, kept in ``folder/training-time.json``.

    A rerun of the same step (``key``: its settings and data) that finds it finished
    reuses the model, so it reports the recorded time and dates, not its own clock. A
    step resumed after an interruption adds this run's part to the parts recorded
    before (a run that ends by an exception or Ctrl-C records its part); when an
    earlier run was killed outright its part is unknown, and ``complete`` is false.
    The yielded record is filled in when the block ends."""
    path = folder / TIMING_FILE
    earlier = read_marker(path)
    if earlier is None or earlier.get("fingerprint") != key:
        earlier = None
    if earlier is not None and earlier.get("finished"):
        record = {k: v for k, v in earlier.items() if k != "fingerprint"}
        record["reused"] = True
        yield record
        return
    record = {
        "started": earlier["started"] if earlier else _now(),
        "finished": None,
        "seconds": float(earlier["seconds"]) if earlier else 0.0,
        "runs": int(earlier["runs"]) + 1 if earlier else 1,
        # a run killed outright (kill -9, power cut) left "running" behind, not its time
        "complete": bool(earlier["complete"]) and "running" not in earlier if earlier else True,
    }
    folder.mkdir(parents=True, exist_ok=True)
    mark_done(path, key, **record, running=_now())
    start = time.monotonic()
    try:
        yield record
    except BaseException:
        # stopped (Ctrl-C, an error): the part trained counts when the step resumes
        record["seconds"] = round(record["seconds"] + time.monotonic() - start, 1)
        mark_done(path, key, **record)
        raise
    record["seconds"] = round(record["seconds"] + time.monotonic() - start, 1)
    record["finished"] = _now()
    mark_done(path, key, **record)


def _time_said(record: Mapping[str, Any]) -> str:
    """How long a step's model took, for the log and the model card."""
    minutes = f"{record['seconds'] / 60:.1f} min"
    if not record.get("complete", True):
        return (
            f"resumed; this run's part: {minutes} (an earlier run was stopped before it "
            "recorded its time)"
        )
    runs = record.get("runs", 1)
    return minutes + (f" over {runs} runs" if runs > 1 else "")


def _run_fold(
    k: int,
    held_out: list[str],
    trainer: Trainer[Any],
    data: _GoldData,
    workflow: Mapping[str, Any],
    loaded: LoadedTraining,
    say: _Clock,
) -> dict[str, Any]:
    """Train without the held-out documents and score on them, or reuse the fold's
    scores on disk when nothing it depends on has changed."""
    folds = loaded.spec.cross_validation.folds
    fold_dir = fold_folder(loaded, k)
    done = fold_dir / "scores.json"
    fold_fingerprint = fingerprint(workflow, data.train_ids, held_out)
    status = step_status(done, fold_fingerprint)
    previous = read_marker(done) if status == "done" else None
    if previous is not None:
        say(f"fold {k}/{folds}: already done ({done}); skipped")
        # this run's report and card say which parts it took from disk
        return {**previous, "reused": True}
    if status == "changed":
        say(f"fold {k}/{folds}: the workflow changed since it ran; training it again")
    held = set(held_out)
    say(
        f"fold {k}/{folds}: training on {len(data.train) - len(held)} documents, "
        f"holding out {len(held)} ({held_out[0]} .. {held_out[-1]})"
    )
    seed_everything(loaded.spec.seed)
    with _step_time(fold_dir, fold_fingerprint) as took:
        model = trainer.train(
            [e for d, e in data.train if d not in held], data.dev_examples, fold_dir, say
        )
    by_id = dict(data.train)
    scores = trainer.evaluate(model, [by_id[d] for d in held_out])
    fold_report = {
        "fold": k,
        "held_out": held_out,
        # the fold's model, e.g. a voting member (combine.dependencies.v1)
        "model": str(model),
        "scores": scores,
        # the training's, across the runs that trained it (not this run's clock)
        "seconds": took["seconds"],
        "started": took["started"],
        **({} if took["complete"] else {"time_complete": False}),
        "reused": False,
    }
    mark_done(done, fold_fingerprint, **fold_report)
    return fold_report


def fold_folder(loaded: LoadedTraining, k: int) -> Path:
    """Where fold ``k`` of a training keeps its model and scores."""
    return Path(loaded.spec.output) / "folds" / f"fold-{k}"


def _prefixed(say: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda line: say(prefix + line)


def _train_folds(
    loaded: LoadedTraining,
    trainer: Trainer[Any],
    data: _GoldData,
    say: _Clock,
    only: int | None = None,
) -> list[dict[str, Any]]:
    """The k folds in document-id order, or fold ``only`` alone (folds training in
    parallel processes over one output folder; the full run reuses them)."""
    folds = loaded.spec.cross_validation.folds
    # what a finished fold's scores depend on (not where the output goes)
    workflow = {k: v for k, v in loaded.resolved.items() if k not in {"output", "name"}}
    _check_fold_count(folds, data)
    fold_reports = []
    for k, held_out in enumerate(contiguous_folds(data.train_ids, folds), start=1):
        if only is not None and k != only:
            continue
        # a --fold K run (or a second full run) training this fold: wait, then reuse it
        fold_dir = fold_folder(loaded, k)
        with (
            building(fold_dir, _prefixed(say, f"fold {k}/{folds}: ")),
            _failing_as(loaded, f"fold {k}/{folds}"),
        ):
            fold_report = _run_fold(k, held_out, trainer, data, workflow, loaded, say)
        say(f"fold {k}/{folds}: {_format_scores(fold_report['scores'])}")
        fold_reports.append(fold_report)
    return fold_reports


def _check_fold_count(folds: int, data: _GoldData) -> None:
    """Each fold holds out at least one training document."""
    if len(data.train_ids) < folds:
        raise TrainingDataError(
            f"{len(data.train_ids)} training documents cannot make {folds} folds (each fold "
            f"holds out at least one document): use --folds {len(data.train_ids)} or fewer "
            "(or cross_validation.folds), or add training documents"
            if len(data.train_ids) >= 2
            else f"{len(data.train_ids)} training document cannot make {folds} folds: add "
            "training documents, or train without cross-validation (--folds 0)"
        )


def _cross_validate(
    loaded: LoadedTraining, trainer: Trainer[Any], data: _GoldData, say: _Clock
) -> dict[str, Any]:
    """The k folds' scores and the mean over them."""
    fold_reports = _train_folds(loaded, trainer, data, say)
    return {
        "folds": [{k: v for k, v in f.items() if k != "fingerprint"} for f in fold_reports],
        "mean": _mean_scores([f["scores"] for f in fold_reports]),
    }


def _train_final(
    loaded: LoadedTraining, trainer: Trainer[Any], data: _GoldData, say: _Clock
) -> tuple[Path, dict[str, Any]]:
    """The model trained on all training documents, scored on the development ones."""
    say(f"final model: training on all {len(data.train)} training documents")
    seed_everything(loaded.spec.seed)
    output = Path(loaded.spec.output)
    # what the final model depends on (not where it goes, nor the folds)
    key = fingerprint(
        {
            k: v
            for k, v in loaded.resolved.items()
            if k not in {"output", "name", "cross_validation"}
        },
        data.train_ids,
        [d for d, _ in data.dev],
    )
    # another run of the same workflow training it: wait, then the trainer finds it done
    with (
        building(output / "final", _prefixed(say, "final model: ")),
        _failing_as(loaded, "final model"),
        _step_time(output / "final", key) as took,
    ):
        model_dir = trainer.train(
            [e for _, e in data.train], data.dev_examples, output / "final", say
        )
    say(
        "final model: "
        + ("trained earlier in " if took.get("reused") else "trained in ")
        + _time_said(took)
    )
    final: dict[str, Any] = {
        "model": str(model_dir),
        "seconds": took["seconds"],
        "started": took["started"],
        "finished": took["finished"],
        "runs": took["runs"],
        "time_complete": took["complete"],
        # a rerun that found it trained: the times above are the training's
        "reused": bool(took.get("reused")),
    }
    if data.dev_examples:
        say("scoring the final model on the development documents")
        with _failing_as(loaded, "final model, scored on the development documents"):
            final["dev_scores"] = trainer.evaluate(model_dir, data.dev_examples)
        say(f"dev: {_format_scores(final['dev_scores'])}")
    return model_dir, final


def run_training(
    loaded: LoadedTraining,
    *,
    log: Callable[[str], None] | None = None,
    only_fold: int | None = None,
) -> TrainingResult:
    """Read the gold documents, run the protocol, write the report and model card.

    ``only_fold`` (1..folds) trains that cross-validation fold alone and writes
    neither the final model nor the report: see :func:`_train_folds`.

    An unexpected error of a trainer or reader raises :class:`TrainingFailed`, its
    traceback in the report (a run that wrote one) or in :func:`error_log`.
    """
    try:
        return _run_training(loaded, log, only_fold)
    except TrainingFailed as failed:
        if failed.traceback_in is None:
            failed.traceback_in = _write_error_log(loaded, only_fold, failed)
        raise


def error_log(output: Path, only_fold: int | None) -> Path:
    """Where a run that records no report of its failure (it failed before it wrote
    one, or a ``--fold`` run, which writes none) leaves the traceback; one per fold, as
    ``--fold`` runs go at the same time."""
    return output / (
        "training-error.log" if only_fold is None else f"training-error-fold-{only_fold}.log"
    )


def _write_error_log(
    loaded: LoadedTraining, only_fold: int | None, failed: TrainingFailed
) -> Path | None:
    path = error_log(Path(loaded.spec.output), only_fold)
    command = loaded.command + (f" --fold {only_fold}" if only_fold is not None else "")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, f"{_now()} {command}\n{failed}\n\n{failed.traceback_text}")
    except OSError:  # the folder is not writable: the command line shows the traceback
        return None
    return path


@contextlib.contextmanager
def _failing_as(loaded: LoadedTraining, step: str, component: str | None = None) -> Iterator[None]:
    """An unexpected error inside becomes :class:`TrainingFailed` naming ``step`` and
    ``component`` (the trainer unless given); a data or settings problem a tool
    explained, Ctrl-C and SIGTERM pass as they are."""
    try:
        yield
    except (TrainingDataError, TrainingOutputError, TrainingFailed):
        raise
    except Exception as exc:
        component = component or f"trainer {loaded.trainer.spec.component}"
        raise TrainingFailed(loaded.source, step, component, exc) from exc


def _run_training(
    loaded: LoadedTraining, log: Callable[[str], None] | None, only_fold: int | None
) -> TrainingResult:
    spec = loaded.spec
    if only_fold is not None:
        check_only_fold(only_fold, spec.cross_validation.folds, loaded.source)
    output = Path(spec.output)
    output.mkdir(parents=True, exist_ok=True)
    started_at = datetime.now(UTC)
    say = _Clock(log)
    context = _context(spec, loaded.source)
    with _failing_as(loaded, "setting up the trainer"):
        trainer = loaded.trainer.build(Trainer, context)
    seed_everything(spec.seed)
    with _failing_as(
        loaded, "reading the gold documents", f"reader {loaded.train_reader.spec.component}"
    ):
        data = _read_data(loaded, trainer, context, say)
    report: dict[str, Any] = {
        "workflow": loaded.resolved,
        "source": loaded.source,
        "command": loaded.command,
        "started": started_at.isoformat(timespec="seconds"),
        "versions": _versions(trainer),
        "data": {
            "gold_view": loaded.gold_view,
            "train_documents": len(data.train),
            "dev_documents": len(data.dev),
            "train_ids": data.train_ids,
            "dev_ids": [d for d, _ in data.dev],
            "warnings": data.warnings,
        },
    }
    if spec.cross_validation.folds:  # a wrong count stops the run before it changes anything
        _check_fold_count(spec.cross_validation.folds, data)
    _claim_output(loaded, only_fold)
    if only_fold is not None:
        (fold_report,) = _train_folds(loaded, trainer, data, say, only=only_fold)
        model = Path(fold_report.get("model") or fold_folder(loaded, only_fold))
        say(
            f"fold {only_fold} done; the run without --fold reuses it and trains the other "
            "folds and the final model"
        )
        return TrainingResult(output, model, {**report, "fold": fold_report})
    # From here the earlier run's report and card no longer describe what is on disk:
    # a run that stops or fails must not leave them standing for its own.
    _retire_earlier_card(output)
    report["status"] = "running"
    atomic_write_text(output / REPORT_FILE, json.dumps(report, indent=2))
    try:
        with _failing_as(loaded, "cross-validation" if spec.cross_validation.folds else "training"):
            if spec.cross_validation.folds:
                report["cross_validation"] = _cross_validate(loaded, trainer, data, say)
            model_dir, report["final"] = _train_final(loaded, trainer, data, say)
    except BaseException as exc:
        stopped = isinstance(exc, KeyboardInterrupt | SystemExit)
        report["status"] = "interrupted" if stopped else "failed"
        report["error"] = _said(exc.error if isinstance(exc, TrainingFailed) else exc)
        if isinstance(exc, TrainingFailed):
            report["step"] = exc.step
            report["traceback"] = exc.traceback_text
        report["seconds"] = say.seconds()
        report["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
        atomic_write_text(output / REPORT_FILE, json.dumps(report, indent=2))
        if isinstance(exc, TrainingFailed):
            exc.traceback_in = output / REPORT_FILE
        raise
    report["status"] = "finished"
    report["seconds"] = say.seconds()
    report["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    atomic_write_text(output / REPORT_FILE, json.dumps(report, indent=2))
    with _failing_as(loaded, "writing the model card"):
        card = model_card(report, trainer)
    atomic_write_text(model_dir / CARD_FILE, card)
    atomic_write_text(output / CARD_FILE, card)
    say(f"model: {model_dir}; report: {output / REPORT_FILE}")
    return TrainingResult(output, model_dir, report)


def _claim_output(loaded: LoadedTraining, only_fold: int | None) -> None:
    """Record that the output folder's model is this workflow's, as the first change
    there. Validation refused another workflow's folder; one that another workflow
    began training in while this run read its gold documents is refused here."""
    output = Path(loaded.spec.output)
    component, name = loaded.trainer.spec.component, loaded.spec.name
    owner = {
        "workflow_file": str(loaded.workflow_file),
        "trainer": component,
        **({"name": name} if name else {}),
    }
    text = json.dumps(owner, indent=2) + "\n"

    def refuse_another() -> None:
        problem = _other_model_problem(
            output, component, loaded.workflow_file, name, loaded.overwrite
        )
        if problem:
            raise TrainingOutputError(problem)

    refuse_another()
    path = output / OWNER_FILE
    # Two workflows that finish reading their gold together both found the folder free:
    # only one creates the file, and the other judges what that one wrote (the same
    # workflow's --fold runs write the same), as it judges a file already there.
    if not create_text_exclusively(path, text):
        refuse_another()
        if read_marker(path) != owner:  # the workflow renamed or moved, or --overwrite
            atomic_write_text(path, text)
    # An earlier failure is no longer the folder's last word: a fold's, once that fold
    # trains again; any, once the full run (which trains every fold) starts.
    stale = [error_log(output, only_fold)]
    if only_fold is None:
        stale += output.glob("training-error-fold-*.log")
    for path in stale:
        path.unlink(missing_ok=True)


def _retire_earlier_card(output: Path) -> None:
    """Remove the model cards an earlier run wrote (beside the output and in the model
    folder its report names); the run that ends writes them again from its own figures."""
    earlier = read_marker(output / REPORT_FILE) or {}
    final = earlier.get("final")
    model = final.get("model") if isinstance(final, Mapping) else None
    for card in {output / CARD_FILE, *([Path(model) / CARD_FILE] if model else [])}:
        card.unlink(missing_ok=True)


def check_only_fold(fold: int, folds: int, source: str) -> None:
    """A fold to train alone must be one of the workflow's folds."""
    if folds < 2:
        raise TrainingDataError(
            f"--fold {fold}: {source} has no cross-validation (cross_validation.folds is "
            f"{folds}); add --folds 5 (or set cross_validation.folds) to choose a fold"
        )
    if not 1 <= fold <= folds:
        raise TrainingDataError(f"--fold {fold}: {source} has folds 1 to {folds}")


def _format_scores(scores: Mapping[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in scores.items())


def _score_table(rows: list[tuple[str, Mapping[str, Any]]], keys: Sequence[str]) -> list[str]:
    lines = ["| | " + " | ".join(keys) + " |", "| --- |" + " --- |" * len(keys)]
    for label, scores in rows:
        cells = [
            f"{scores[k]:.2f}" if isinstance(scores.get(k), int | float) else "-" for k in keys
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _training_time_said(report: Mapping[str, Any]) -> str:
    """When and how long the model took: the recorded times of its steps (folds and the
    final model, each across the runs that trained it), not a rerun's own clock."""
    final = report["final"]
    if "runs" not in final:  # a report written before steps recorded their time
        return f"{report['started']} to {report['finished']}, {report['seconds'] / 60:.1f} min"
    folds = (report.get("cross_validation") or {}).get("folds", [])
    seconds = final["seconds"] + sum(f.get("seconds", 0) for f in folds)
    started = min([final["started"], *(f["started"] for f in folds if "started" in f)])
    said = f"{started} to {final['finished']}, " + _time_said(
        {**final, "seconds": seconds, "complete": final["time_complete"]}
    )
    if folds:
        said += f" for {len(folds)} folds and the final model"
    if any(f.get("time_complete") is False for f in folds):
        said += "; a fold's time lacks the part of a run stopped before it recorded it"
    if final.get("reused"):
        said += f"; the run of {report['started']} found it trained and reused it"
    return said


def _time_table(report: Mapping[str, Any]) -> list[str]:
    """Each part (fold, final model): its training time, and whether this run trained it
    or took it from an earlier run."""
    final = report["final"]
    if "runs" not in final:  # a report written before steps recorded their time
        return []
    folds = (report.get("cross_validation") or {}).get("folds", [])
    parts = [(f"fold {f['fold']}", f) for f in folds] + [("final model", final)]
    lines = ["## Training time", "", "| part | training time | this run |", "| --- | --- | --- |"]
    for label, part in parts:
        minutes = f"{part['seconds'] / 60:.1f} min" if "seconds" in part else "-"
        if part.get("time_complete") is False:
            minutes += " (part of a stopped run missing)"
        done = "reused (trained earlier)" if part.get("reused") else "trained"
        lines.append(f"| {label} | {minutes} | {done} |")
    return [*lines, ""]


def _reader_settings(reader: Mapping[str, Any] | None) -> str:
    """The reader config that selected a gold set, for the card: which corpus, split,
    ids or files the model learned from (the ids alone do not say)."""
    config = (reader or {}).get("config") or {}
    given = {key: value for key, value in config.items() if value is not None}
    if not given:
        return ""
    return f", read with `{json.dumps(given, sort_keys=True, ensure_ascii=False)}`"


def model_card(report: Mapping[str, Any], trainer: Trainer) -> str:
    """The model card: data, settings, seed, time and scores, from the report."""
    workflow = report["workflow"]
    data = report["data"]
    lines = [
        f"# {workflow.get('name') or Path(workflow['output']).name}",
        "",
        f"Trained by `{report.get('command') or 'casflow train ' + report['source']}` "
        f"({_training_time_said(report)}).",
        "",
        "## Data",
        "",
        f"- gold view `{data['gold_view']}` read by `{workflow['gold']['train']['component']}`",
        f"- training documents: {data['train_documents']}"
        f" ({', '.join(data['train_ids'][:3])}{' ...' if data['train_documents'] > 3 else ''})"
        + _reader_settings(workflow["gold"]["train"]),
        f"- development documents: {data['dev_documents']}"
        + (
            f" ({', '.join(data['dev_ids'][:3])}{' ...' if data['dev_documents'] > 3 else ''})"
            if data.get("dev_ids")
            else ""
        )
        + _reader_settings(workflow["gold"].get("dev")),
        f"- layers: {', '.join(workflow['layers'])}",
        *(
            [
                f"- {len(data['warnings'])} warning(s) about the gold data (repaired or "
                f"skipped as the reader says), e.g. {data['warnings'][0]['message']}; all in "
                f"`{REPORT_FILE}`"
            ]
            if data.get("warnings")
            else []
        ),
        "",
        "## Settings",
        "",
        f"Model kind `{workflow['model']['component']}`, seed {workflow['seed']}.",
        "",
        "```json",
        json.dumps(workflow["model"]["config"], indent=2),
        "```",
        "",
    ]
    description = trainer.describe()
    if description:
        lines += [description, ""]
    lines += ["## Scores", ""]
    cv = report.get("cross_validation")
    final_scores = report["final"].get("dev_scores") or {}
    keys = list(final_scores) or (list(cv["folds"][0]["scores"]) if cv else [])
    if cv:
        rows = [(f"fold {f['fold']} (held out)", f["scores"]) for f in cv["folds"]]
        rows.append(("mean", {k: v["mean"] for k, v in cv["mean"].items()}))
        rows.append(("stdev", {k: v["stdev"] for k, v in cv["mean"].items()}))
        lines += [
            f"{len(cv['folds'])}-fold cross-validation over the training documents "
            "(contiguous folds in document-id order):",
            "",
            *_score_table(rows, keys),
            "",
        ]
    if final_scores:
        lines += [
            # How each score is taken (raw text, gold words) is the trainer's description.
            "Final model (all training documents) on the development documents:",
            "",
            *_score_table([("dev", final_scores)], keys),
            "",
        ]
    lines += _time_table(report)
    lines += [
        "## Environment",
        "",
        ", ".join(f"{k} {v}" for k, v in report["versions"].items()),
        "",
    ]
    return "\n".join(lines)
