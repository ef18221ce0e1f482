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

A component is generic in its configuration class and declares it once, in its
base: ``class SpacyPipeline(Processor[SpacyPipelineConfig])`` sets
``SpacyPipeline.Config`` and types ``self.config``. Everything the engine reads
from a component is declared here; the engine never looks for other attributes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, get_args, get_origin

import cassis
from pydantic import BaseModel, ConfigDict, Discriminator, Field, field_validator

from casflow.pipeline.counts import Counts, EvaluationResult, nothing_scored

if TYPE_CHECKING:
    from casflow.pipeline.significance import Metric

INITIAL_VIEW = "_InitialView"

Role = Literal["reader", "processor", "writer", "evaluator", "trainer"]


class ComponentConfig(BaseModel):
    """Base of every component configuration: typed, documented, strict.

    Subclasses declare fields with ``Field(default, description=...)``; unknown
    keys are errors so that a misspelled option is never silently ignored.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


def mapping_is(model: str, other: str = "str") -> Discriminator:
    """The discriminator of a field that takes a config model (tagged ``model``, its
    class name) or a plain value (tagged ``other``): a mapping is the model. Without it
    pydantic reports a mistake inside the mapping twice, once as "not a string"."""

    def kind(value: Any) -> str:
        return model if isinstance(value, Mapping) or type(value).__name__ == model else other

    return Discriminator(kind)


DEFAULT_SIGNIFICANCE_ITERATIONS = 10_000
DEFAULT_SIGNIFICANCE_SEED = 0
#: numpy takes any seed of 0 or more; 63 bits is what ``casflow significance`` draws.
MAX_SIGNIFICANCE_SEED = 2**63 - 1


class SignificanceSettings(ComponentConfig):
    """Paired approximate randomization between every two system views, in the report."""

    metric: str = Field(
        description="Path into this evaluator's scores, e.g. 'strict/micro/f1' or 'las/f1'."
    )
    iterations: int = Field(DEFAULT_SIGNIFICANCE_ITERATIONS, ge=1, description="Shuffles.")
    seed: int = Field(
        DEFAULT_SIGNIFICANCE_SEED,
        ge=0,
        le=MAX_SIGNIFICANCE_SEED,
        description="Random seed (fixed so that reruns agree), 0 to 2**63 - 1.",
    )
    units: Literal["documents", "sentences"] = Field(
        "documents",
        description="What is shuffled: documents, or sentences where the evaluator splits "
        "its counts by sentence (documents otherwise).",
    )


class EvaluatorConfig(ComponentConfig):
    """Views an evaluator compares; every evaluator config extends this."""

    gold_view: str = Field("gold", description="View holding the gold annotations.")
    system_views: list[str] = Field(
        default_factory=lambda: ["system"],
        description="Views holding system output, each scored against gold_view.",
    )
    significance: SignificanceSettings | None = Field(
        None,
        description="Test every pair of system views for a significant difference "
        "(table in evaluation.md); none: no test.",
    )

    @field_validator("system_views")
    @classmethod
    def _each_view_once(cls, value: list[str]) -> list[str]:
        # A view named twice was scored twice: its counts and errors written twice.
        twice = sorted({view for view in value if value.count(view) > 1})
        if twice:
            raise ValueError(f"system view(s) named more than once: {', '.join(twice)}")
        return value


ConfigT = TypeVar("ConfigT", bound=ComponentConfig)
EvaluatorConfigT = TypeVar("EvaluatorConfigT", bound=EvaluatorConfig)


class DocumentError(Exception):
    """A document cannot be processed, for a reason the component knows.

    ``hint`` (on the class, or set per instance) says what to do; the run report
    shows it beside the error. Components subclass it together with the built-in
    exception that fits (``class BadFile(DocumentError, ValueError)``).
    """

    hint: str | None = None


_evaluation_memo: ContextVar[dict[Any, Any] | None] = ContextVar(
    "casflow_evaluation_memo", default=None
)


def evaluation_memo() -> dict[Any, Any] | None:
    """While the evaluators of one document run, a dict they share (None elsewhere).

    The views no longer change then, so what an evaluator computes from a view (the
    trees read from it, say) can serve the other evaluators and system views of the
    same document: key it by the view's name and whatever else it depends on. It is
    emptied after the document; outside the engine's evaluation (a component, a
    notebook) there is none, and nothing may be kept.
    """
    return _evaluation_memo.get()


@contextmanager
def evaluating_one_document() -> Iterator[None]:
    """The engine's side of :func:`evaluation_memo`: a fresh memo for one document."""
    token = _evaluation_memo.set({})
    try:
        yield
    finally:
        _evaluation_memo.reset(token)


class DocumentWarning(UserWarning):
    """Damage in a document's input that a component repaired or skipped, and kept going.

    Raise it with :func:`warnings.warn` (or subclass it). A run records the warnings
    raised while a document was read, processed, written or evaluated in
    ``run-report.json``, with the stage and document: every occurrence of this class,
    not only the first of its kind in a worker process; other warnings as Python's
    filters let them through (by default once per place in the code and process).
    """


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


def _declared_config(cls: type) -> type[ComponentConfig] | None:
    """The config class a component names in its base (``Processor[FooConfig]``)."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = get_origin(base)
        if not (isinstance(origin, type) and issubclass(origin, Component)):
            continue
        for arg in get_args(base):
            if isinstance(arg, type) and issubclass(arg, ComponentConfig):
                return arg
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                # Passed over, it would leave the component with no options at all.
                raise TypeError(
                    f"{cls.__qualname__} names {arg.__name__} in its base, which is not a "
                    "ComponentConfig: derive it from casflow.pipeline.component."
                    "ComponentConfig (a typed config that refuses unknown keys)"
                )
    return None


class Component(ABC, Generic[ConfigT]):
    """Base of all components.

    Class attributes declare the contract; ``requirements`` may refine it from
    the configuration (e.g. a spaCy wrapper produces only the layers it writes).
    ``Config`` comes from the base's type argument (``Processor[FooConfig]``).
    """

    name: ClassVar[str]
    role: ClassVar[Role]
    Config: ClassVar[type[ComponentConfig]] = ComponentConfig
    requires: ClassVar[tuple[str, ...]] = ()
    produces: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    config: ConfigT
    context: RunContext

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        inherited = next(
            (base.__dict__["Config"] for base in cls.__mro__[1:] if "Config" in base.__dict__),
            ComponentConfig,
        )
        declared = _declared_config(cls)
        written = cls.__dict__.get("Config")
        if declared is not None and written is not None and written is not declared:
            raise TypeError(
                f"{cls.__qualname__} names {declared.__name__} in its base and sets Config = "
                f"{written.__name__}; declare the config class once, in the base"
            )
        config = declared or written
        if config is None:
            return
        if not issubclass(config, inherited):
            # A preset (class ScispacyCore(SpacyPipeline)) may narrow its parent's config
            # (new defaults), never replace it: the parent's code reads its fields.
            raise TypeError(
                f"{cls.__qualname__}.Config ({config.__name__}) must extend its parent's "
                f"config class {inherited.__name__}"
            )
        cls.Config = config

    def __init__(self, config: ConfigT, context: RunContext | None = None) -> None:
        # Components that use no run setting can be built in plain Python:
        # ``Foo(Foo.Config())``; the engine always passes the run's context.
        self.config = config
        self.context = context if context is not None else RunContext(output_dir=Path.cwd())

    @classmethod
    def requirements(cls, config: ConfigT) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(requires, produces)`` for this configuration."""
        return cls.requires, cls.produces

    @classmethod
    def views_read(cls, config: ConfigT) -> dict[str, tuple[str, ...]]:
        """Views other than its own step's view that the component reads, each with the
        type names it needs there (e.g. a copy's source view; an evaluator's gold and
        system views). The validator checks that an earlier step writes each of them."""
        return {}

    @classmethod
    def keeps_existing(cls, config: ConfigT) -> tuple[str, ...]:
        """Types among those it produces that it takes from its view when the view
        already holds them, instead of adding more (a combiner uses the target view's
        tokens and sentences where it has them). The validator refuses a step that
        would make sentences or tokens again in a view that has them, except these.
        The default: none."""
        return ()

    @classmethod
    def view_problems(cls, config: ConfigT, view: str) -> list[str]:
        """Problems of the config in the step's ``view`` (e.g. a combiner whose member is
        the view it writes), found before any document is read. The default finds none."""
        return []

    @classmethod
    def check_config(cls, config: ConfigT, context: RunContext) -> list[str]:
        """Problems found before any document is read (missing files, models).

        Each string is one error message; the workflow validator attaches the
        YAML location. The default finds none.
        """
        return []

    @classmethod
    def modules_used(cls, config: ConfigT, context: RunContext) -> frozenset[str]:
        """Top-level modules this component uses that another step may offer to leave
        unimported (see ``modules_not_used``), e.g. ``torch`` for a neural tool. While
        any step of a chain names a module here, no step of it is built without it.
        The default names none."""
        return frozenset()

    @classmethod
    def modules_not_used(cls, config: ConfigT, context: RunContext) -> frozenset[str]:
        """Top-level modules that this component's libraries import whenever they are
        installed, though this configuration never uses them (spaCy imports thinc, which
        imports torch, a second or more of a worker's start, for pipelines with no torch
        layer). A run's worker process builds the component with them hidden, as if
        they were not installed (``import`` raises ImportError; afterwards they can be
        imported again), unless a step of the chain names them in ``modules_used`` or
        they are imported already. Name only modules the libraries import optionally,
        under ``try``/``except ImportError``. Called in the worker, before building:
        it must not import the libraries itself. The default names none."""
        return frozenset()

    @classmethod
    def stand_in_modules(cls, config: ConfigT, context: RunContext) -> Mapping[str, ModuleType]:
        """Light modules to stand in for modules that this component's libraries import
        unconditionally when they are imported, though this configuration never uses
        them (spaCy's ``__init__`` imports its whole command line, typer and weasel
        with it, for ``spacy.info``). A run's worker process puts each in
        ``sys.modules`` while it builds the component, only when the library's
        top-level package is not imported yet and no step of the chain names the
        module (or a package of it) in ``modules_used``; it takes out those still
        there afterwards. A stand-in must give whoever uses it what the module
        would (e.g. import the real module on first use), and should take itself
        out of ``sys.modules`` once the library's import has used it. Called in the
        worker, before building: it must not import the libraries itself. The
        default names none."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; called once per process when the chain is done."""


class Reader(Component[ConfigT]):
    """Lists documents (in the parent) and loads one into a CAS (in a worker)."""

    role: ClassVar[Role] = "reader"

    @classmethod
    def views_written(cls, config: ConfigT, view: str) -> dict[str, tuple[str, ...]]:
        """Types the reader writes per view; by default its ``produces`` into its one view.

        Readers of whole CAS files (XMI) override this to declare the views the
        files hold, so the validator can check the steps that read them.
        """
        return {view: tuple(cls.requirements(config)[1])}

    @abstractmethod
    def iter_documents(self) -> Iterator[DocumentRef]:
        """Yield one reference per document, in a stable order."""

    def count_documents(self) -> int | None:
        """How many references ``iter_documents`` yields, where that can be told without
        reading the documents (the files of a folder), else None (archive members, a
        remote listing). Only the progress display uses it: the run lists its documents
        lazily, as workers take them, so without it the total is known only near the end.
        The parent calls it in a thread of its own while it lists: it must not change
        the reader's state."""
        return None

    @abstractmethod
    def load(self, ref: DocumentRef, cas: cassis.Cas) -> cassis.Cas | None:
        """Fill ``cas`` (its subject of analysis and annotations) from ``ref``.

        ``cas`` is the view the reader was configured to write into. A reader of
        whole CAS files (XMI) may instead return a new CAS, which replaces it.
        """


class Processor(Component[ConfigT]):
    """Adds annotations to one view of a CAS."""

    role: ClassVar[Role] = "processor"

    @abstractmethod
    def process(self, view: cassis.Cas) -> None:
        """Annotate one view in place."""

    def process_batch(self, views: Sequence[cassis.Cas]) -> None:
        """Annotate several views; override where the tool batches (``nlp.pipe``)."""
        for view in views:
            self.process(view)


class Writer(Component[ConfigT]):
    """Persists a CAS. Writes must be atomic (see ``casflow.pipeline.files``)."""

    role: ClassVar[Role] = "writer"

    def __init__(self, config: ConfigT, context: RunContext) -> None:
        if context is None:
            raise TypeError(
                f"{type(self).__name__} writes into the run's output folder: pass a RunContext"
            )
        super().__init__(config, context)

    @abstractmethod
    def output_paths(self, doc_id: str) -> list[Path]:
        """Files this writer produces for a document (used to skip finished ones)."""

    @abstractmethod
    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        """Write the document; return the files written."""

    def start_batch(self, doc_ids: Sequence[str]) -> None:
        """Called in the worker before the documents of a batch are written
        (those that reached the writers, in order)."""

    def end_batch(self) -> list[Path]:
        """Called in the worker after the batch's documents were written, before the
        parent records any of them: write what they share (e.g. one archive),
        atomically. If it raises, every document of the batch fails."""
        return []

    def discard(self, doc_id: str) -> None:
        """Called in the worker when a document this writer wrote in the current batch
        failed afterwards (in a later writer or an evaluator): take back its output,
        which the failed document must not leave behind. Default: nothing to take back."""

    def finish(self) -> list[Path]:
        """Write run-level files once (e.g. the type system XML); parent process."""
        return []


@dataclass(frozen=True)
class ErrorExample:
    """One error shown in the HTML report: a stretch of text with spans marked.

    ``gold`` and ``system`` are ``(begin, end)`` offsets into ``text`` (not into the
    document); ``start`` is where ``text`` begins in the document; ``note`` says what
    went wrong in a few words (``boundary``, ``missed``, ``spurious``, labels).
    """

    text: str
    start: int
    gold: tuple[tuple[int, int], ...] = ()
    system: tuple[tuple[int, int], ...] = ()
    note: str = ""


#: Scores by band for the report's band plots: band name -> {"sentences": n, "f1": x, ...}.
BandScores = dict[str, dict[str, float]]
#: A table for the report: row -> column -> value.
DetailTable = dict[str, dict[str, float]]


class Evaluator(Component[EvaluatorConfigT]):
    """Compares a gold view with one or more system views; returns counts.

    The engine reads, besides ``evaluate`` and ``score``: ``summary`` (the Markdown
    table's columns), ``summary_decimals`` and ``batch_metric`` (significance tests),
    and for the HTML report ``prf_points``, ``band_scores``, ``detail_tables``,
    ``column_direction`` and ``error_examples`` (each with a default).
    """

    role: ClassVar[Role] = "evaluator"
    Config: ClassVar[type[ComponentConfig]] = EvaluatorConfig
    #: Decimals of the Markdown table; None: whole numbers as ints, others 4 decimals.
    summary_decimals: ClassVar[int | None] = None
    #: Beginnings of top-level score keys that only documents bring (length bands): a
    #: significance metric under them is not checked before the run, as other paths are
    #: (against the scores of an empty document).
    data_score_keys: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def views_read(cls, config: EvaluatorConfigT) -> dict[str, tuple[str, ...]]:
        requires = cls.requirements(config)[0]
        return {view: requires for view in [config.gold_view, *config.system_views]}

    @abstractmethod
    def evaluate(self, gold: cassis.Cas, system: cassis.Cas) -> EvaluationResult:
        """Counts for one document (they add up over documents)."""

    @abstractmethod
    def score(self, counts: Counts) -> dict[str, Any]:
        """Scores from counts summed over all documents (computed once)."""

    def summary(self, scores: dict[str, Any]) -> dict[str, float]:
        """Columns of the Markdown table for one system (default: every numeric score)."""
        from casflow.pipeline.evaluation_report import flatten_scores

        return flatten_scores(scores)

    def batch_metric(self, path: str) -> Metric | None:
        """A fast metric for ``path`` computed directly from counts (significance tests).

        None means: score the counts and look the path up (always correct, slower).
        """
        return None

    def prf_points(self, scores: dict[str, Any]) -> dict[str, dict[str, float]]:
        """Named precision / recall / F1 (fractions) for the report's bars and scatter,
        the headline first (e.g. ``{"strict": {...}, "overlap": {...}}``).

        Default: the scores' own top-level ``precision``, ``recall`` and ``f1``, if any.
        Leave out a point with nothing to score on either side (no gold and no system
        items): its F is undefined, and a 0 would pull down the per-document spread of
        a corpus with many empty documents (BC2GM sentences without genes).
        """
        if all(isinstance(scores.get(k), (int, float)) for k in ("precision", "recall", "f1")):
            if nothing_scored(scores):
                return {}
            return {"": {k: float(scores[k]) for k in ("precision", "recall", "f1")}}
        return {}

    def band_scores(self, scores: dict[str, Any]) -> dict[str, BandScores]:
        """Scores by band for the report's plots, per kind of band (``"sentence length
        (words)"``, ``"agreement"``), each band with ``sentences`` and ``f1``; default none."""
        return {}

    def detail_tables(self, scores: dict[str, Any]) -> dict[str, DetailTable]:
        """Further tables of one system's scores, by title (e.g. error classes), shown in
        evaluation.md and the HTML report; default none."""
        return {}

    def column_direction(self, column: str) -> int:
        """For marking the best system per ``summary`` column: 1 when higher is better,
        -1 when lower is better, 0 when the column is not a quality (a count)."""
        return 1

    def error_examples(self, errors: Sequence[dict[str, Any]]) -> list[ErrorExample]:
        """The report's error list for one document and system, from the error records
        ``evaluate`` returned for it (in the order returned); default none."""
        return []


@dataclass
class TrainingContext(RunContext):
    """What ``casflow train`` tells a trainer besides its config: seed and layers."""

    seed: int = 0
    layers: tuple[str, ...] = ()


class Trainer(Component[ConfigT]):
    """Learns a model from gold views (``casflow train``).

    The driver reads the gold documents with an ordinary reader; the trainer turns
    each gold view into a picklable training example (never a CAS), trains on lists
    of examples and scores a trained model from raw text with casflow's evaluators.
    ``layers`` maps each layer a trainer can learn to the type-system names it needs
    in the gold view; the workflow chooses among them. ``libraries`` names the
    distributions whose versions the training report and model card record.
    """

    role: ClassVar[Role] = "trainer"
    layers: ClassVar[dict[str, tuple[str, ...]]] = {}
    libraries: ClassVar[tuple[str, ...]] = ()
    #: Why the trainer cannot train without development documents (it selects its
    #: checkpoints on them); empty: it can. Validation then requires ``gold.dev``.
    needs_dev: ClassVar[str] = ""
    #: Layers learned from the text alone (Punkt learns sentence boundaries from raw
    #: text): only the development documents, which score them, must hold their gold.
    #: Every other layer's gold must be in the training documents.
    unsupervised_layers: ClassVar[tuple[str, ...]] = ()

    context: TrainingContext

    def __init__(self, config: ConfigT, context: TrainingContext) -> None:
        super().__init__(config, context)

    @classmethod
    def check_layers(cls, config: ConfigT, layers: Sequence[str]) -> list[str]:
        """Problems with this choice of layers (beyond unknown names); default none."""
        return []

    @classmethod
    def layer_requirements(cls, config: ConfigT, layer: str) -> tuple[str, ...]:
        """The type-system names ``layer`` needs in the gold view with this config
        (validation checks the gold reader writes them); default ``layers[layer]``. A
        trainer whose config chooses where a layer's gold comes from says so here."""
        return cls.layers.get(layer, ())

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
