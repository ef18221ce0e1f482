"""The workflow file: what a run reads, runs, writes and scores.

A workflow YAML has five top-level keys::

    reader:      {component: NAME, view: VIEW, config: {...}}
    components:  [{component: NAME, view: VIEW, config: {...}}, ...]
    writers:     [{component: NAME, config: {...}}, ...]
    evaluators:  [{component: NAME, config: {gold_view: ..., system_views: [...], ...}}, ...]
    run:         {jobs: N, backend: loky|dask, output: DIR, ...}

The structure is a pydantic model that forbids unknown keys; each step's
``config`` is validated separately against its component's own config class by
``casflow.pipeline.validation``, which maps every error to its YAML line.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from casflow.pipeline.component import INITIAL_VIEW


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
        None, gt=0, description="Per-document time limit in seconds (none: no limit)."
    )
    overwrite: bool = Field(False, description="Reprocess documents whose outputs already exist.")
    progress: bool = Field(
        True, description="Show progress (a bar on a terminal, log lines otherwise)."
    )
    max_failures: int | None = Field(
        None, ge=0, description="Stop the run after this many failed documents (none: never)."
    )


class WorkflowSpec(_Strict):
    name: str | None = Field(None, description="A name for the workflow.")
    description: str | None = Field(None, description="What the workflow is for.")
    reader: StepSpec
    components: list[StepSpec] = Field(default_factory=list)
    writers: list[StepSpec] = Field(default_factory=list)
    evaluators: list[StepSpec] = Field(default_factory=list)
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
        "# Re-run with: casflow run "
        + path.name
        + "\n"
        + yaml.safe_dump(resolved, sort_keys=False, allow_unicode=True)
    )
    atomic_write_text(path, text)
