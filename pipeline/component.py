"""The component contract.

Every part of a workflow is a component with a stable, versioned name
(``spacy.pipeline.v1``), a typed configuration that forbids unknown keys, and
declared ``requires`` / ``produces`` written as type-system names (``Type`` or
``Type:feature``). Four roles share that contract:

- a :class:`Reader` lists document references in the parent process and loads
  one reference into a CAS inside a worker;
- a :class:`Processor` adds annotations to one CAS view (or a batch of them);
- a :class:`Writer` persists a finished CAS;
- an :class:`Evaluator` compares views of a CAS and returns additive counts.

Components are built once per worker process (models load in ``__init__``) and
never cross a process boundary: workers receive :class:`DocumentRef` objects.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import cassis
from pydantic import BaseModel, ConfigDict, Field

from casflow.pipeline.counts import Counts, EvaluationResult

INITIAL_VIEW = "_InitialView"

Role = Literal["reader", "processor", "writer", "evaluator", "trainer"]


class ComponentConfig(BaseModel):
    """Base of every component configuration: typed, documented, strict.

    Subclasses declare fields with ``Field(default, description=...)``; unknown
    keys are errors so that a misspelled option is never silently ignored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class EvaluatorConfig(ComponentConfig):
    """Views an evaluator compares; every evaluator config extends this."""

    gold_view: str = Field("gold", description="View holding the gold annotations.")
    system_views: list[str] = Field(
        default_factory=lambda: ["system"],
        description="Views holding system output, each scored against gold_view.",
    )


@dataclass(frozen=True)
class DocumentRef:
    """What a worker receives: enough to load one document, never the CAS itself.

    ``doc_id`` is stable across runs (PMCID, PMID or a path-derived id);
    ``uri`` is where the document lives (a path, or ``archive.tar.gz!member``);
    ``data`` optionally carries the raw bytes for sources a worker cannot open
    by itself (e.g. a member streamed from an archive).
    """

    doc_id: str
    uri: str
    data: bytes | None = None
    size: int = 0
    error: str | None = None  # the reader could not even list it; recorded as a failure


@dataclass
class RunContext:
    """Per-run settings a component may need (output folder, workflow path)."""

    output_dir: Path
    workflow_dir: Path = field(default_factory=Path.cwd)
    overwrite: bool = False


class Component(ABC):
    """Base of all components.

    Class attributes declare the contract; ``requirements`` may refine it from
    the configuration (e.g. a spaCy wrapper produces only the layers it writes).
    """

    name: ClassVar[str]
    role: ClassVar[Role]
    Config: ClassVar[type[ComponentConfig]] = ComponentConfig
    requires: ClassVar[tuple[str, ...]] = ()
    produces: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    def __init__(self, config: ComponentConfig, context: RunContext) -> None:
        self.config = config
        self.context = context

    @classmethod
    def requirements(cls, config: ComponentConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(requires, produces)`` for this configuration."""
        return cls.requires, cls.produces

    @classmethod
    def check_config(cls, config: ComponentConfig, context: RunContext) -> list[str]:
        """Problems found before any document is read (missing files, models).

        Each string is one error message; the workflow validator attaches the
        YAML location. The default finds none.
        """
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; called once per process when the chain is done."""


class Reader(Component):
    """Lists documents (in the parent) and loads one into a CAS (in a worker)."""

    role: ClassVar[Role] = "reader"

    @classmethod
    def views_written(cls, config: ComponentConfig, view: str) -> dict[str, tuple[str, ...]]:
        """Types the reader writes per view; by default its ``produces`` into its one view.

        Readers of whole CAS files (XMI) override this to declare the views the
        files hold, so the validator can check the steps that read them.
        """
        return {view: tuple(cls.requirements(config)[1])}

    @abstractmethod
    def iter_documents(self) -> Iterator[DocumentRef]:
        """Yield one reference per document, in a stable order."""

    @abstractmethod
    def load(self, ref: DocumentRef, cas: cassis.Cas) -> cassis.Cas | None:
        """Fill ``cas`` (its subject of analysis and annotations) from ``ref``.

        ``cas`` is the view the reader was configured to write into. A reader of
        whole CAS files (XMI) may instead return a new CAS, which replaces it.
        """


class Processor(Component):
    """Adds annotations to one view of a CAS."""

    role: ClassVar[Role] = "processor"

    @abstractmethod
    def process(self, view: cassis.Cas) -> None:
        """Annotate one view in place."""

    def process_batch(self, views: Sequence[cassis.Cas]) -> None:
        """Annotate several views; override where the tool batches (``nlp.pipe``)."""
        for view in views:
            self.process(view)


class Writer(Component):
    """Persists a CAS. Writes must be atomic (see ``casflow.pipeline.files``)."""

    role: ClassVar[Role] = "writer"

    @abstractmethod
    def output_paths(self, doc_id: str) -> list[Path]:
        """Files this writer produces for a document (used to skip finished ones)."""

    @abstractmethod
    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        """Write the document; return the files written."""

    def finish(self) -> list[Path]:
        """Write run-level files once (e.g. the type system XML); parent process."""
        return []


class Evaluator(Component):
    """Compares a gold view with one or more system views; returns counts."""

    role: ClassVar[Role] = "evaluator"

    @abstractmethod
    def evaluate(self, gold: cassis.Cas, system: cassis.Cas) -> EvaluationResult:
        """Counts for one document (they add up over documents)."""

    @abstractmethod
    def score(self, counts: Counts) -> dict[str, Any]:
        """Scores from counts summed over all documents (computed once)."""

    Config: ClassVar[type[ComponentConfig]] = EvaluatorConfig

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        """Columns of the Markdown table for one system (default: every numeric score)."""
        from casflow.pipeline.evaluation_report import flatten_scores

        return flatten_scores(scores)


@dataclass
class TrainingContext(RunContext):
    """What ``casflow train`` tells a trainer besides its config: seed and layers."""

    seed: int = 0
    layers: tuple[str, ...] = ()


class Trainer(Component):
    """Learns a model from gold views (``casflow train``).

    The driver reads the gold documents with an ordinary reader; the trainer turns
    each gold view into a picklable training example (never a CAS), trains on lists
    of examples and scores a trained model from raw text with casflow's evaluators.
    ``layers`` maps each layer a trainer can learn to the type-system names it needs
    in the gold view; the workflow chooses among them.
    """

    role: ClassVar[Role] = "trainer"
    layers: ClassVar[dict[str, tuple[str, ...]]] = {}

    @classmethod
    def check_layers(cls, config: ComponentConfig, layers: Sequence[str]) -> list[str]:
        """Problems with this choice of layers (beyond unknown names); default none."""
        return []

    @abstractmethod
    def example(self, view: cassis.Cas, doc_id: str) -> Any:
        """One document's training example from its gold view."""

    @abstractmethod
    def train(
        self,
        train: Sequence[Any],
        dev: Sequence[Any],
        output_dir: Path,
        log: Callable[[str], None],
    ) -> Path:
        """Train on ``train`` (``dev`` may select among checkpoints; it may be empty);
        return the folder of the trained model, loadable by the matching component."""

    @abstractmethod
    def evaluate(self, model_dir: Path, examples: Sequence[Any]) -> dict[str, float]:
        """Scores of a trained model on ``examples``, run from raw text (percentages)."""

    def describe(self) -> str:
        """Markdown for the model card: model kind and what the settings mean."""
        return ""


class ComponentError(Exception):
    """A component failed on a document; carries the stage for the run report."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage
