"""``sentences.nltk.punkt.v1`` and its trainer ``train.nltk.punkt.v1``.

Punkt (Kiss & Strunk 2006) learns abbreviations, collocations and frequent
sentence starters from raw text, without sentence annotations. NLTK's
pretrained English model lives in ``nltk_data``, which casflow never uses:
``casflow train`` runs NLTK's ``PunktTrainer`` over the text of the training
documents and writes the learned parameters as ``punkt.json`` (plain JSON,
not NLTK's pickle); the component loads that file. Without a model Punkt runs
with empty parameters (its orthographic heuristics only).

The gold sentences of the training documents are not used for training; they
score the model on the development documents, from raw text, split the way
the component splits (one structure block at a time).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import cassis
from pydantic import Field

from casflow.components.metrics.segmentation import score_segmentation, sentence_counts
from casflow.components.models import model_path, where_looked
from casflow.components.rules.sentences import structure_breaks, text_blocks
from casflow.components.segmenters import (
    SegmenterConfig,
    SentenceSplitter,
    Span,
    import_library,
    missing_library,
)
from casflow.pipeline.component import ComponentConfig, RunContext, Trainer
from casflow.pipeline.counts import Counts, add_counts
from casflow.typesystem import BLOCK_STRUCTURE_TYPES, SENTENCE

LIBRARY = ("nltk", "nltk")
PARAMETERS_FILE = "punkt.json"


# -- Punkt parameters as JSON ------------------------------------------------------------


def parameters_to_json(params: Any) -> dict[str, Any]:
    return {
        "format": "casflow punkt parameters 1",
        "abbrev_types": sorted(params.abbrev_types),
        "collocations": sorted([a, b] for a, b in params.collocations),
        "sent_starters": sorted(params.sent_starters),
        "ortho_context": dict(sorted(params.ortho_context.items())),
    }


def parameters_from_json(data: dict[str, Any]) -> Any:
    punkt = import_library("nltk.tokenize.punkt", "nltk")
    params = punkt.PunktParameters()
    params.abbrev_types = set(data.get("abbrev_types", ()))
    params.collocations = {(a, b) for a, b in data.get("collocations", ())}
    params.sent_starters = set(data.get("sent_starters", ()))
    for word, flags in data.get("ortho_context", {}).items():
        params.ortho_context[word] = int(flags)
    return params


def parameters_path(model: str, base_dir: Path | None = None) -> Path:
    """The ``punkt.json`` a model names (the file, or the folder holding it); a relative
    path from the working directory, else from the workflow's folder."""
    path = model_path(model, base_dir)
    if path.is_dir():
        path = path / PARAMETERS_FILE
    return path


def missing_parameters(model: str, base_dir: Path | None = None) -> str:
    """What to say when ``model`` names no Punkt parameters: every place looked."""
    member = PARAMETERS_FILE if model_path(model, base_dir).is_dir() else None
    return (
        f"no Punkt parameters at {where_looked(model, base_dir, member)}; train them with "
        "casflow train (train.nltk.punkt.v1) and give its final/model folder"
    )


def load_parameters(model: str, base_dir: Path | None = None) -> Any:
    path = parameters_path(model, base_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(missing_parameters(model, base_dir)) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a Punkt parameter file written by casflow ({exc})") from None
    return parameters_from_json(data)


def _normalised_abbreviation(abbreviation: str) -> str:
    # Punkt keeps abbreviations lower-case and without their final period.
    return abbreviation.strip().rstrip(".").lower()


def make_splitter(params: Any, extra_abbreviations: Iterable[str] = ()) -> Any:
    punkt = import_library("nltk.tokenize.punkt", "nltk")
    params.abbrev_types.update(_normalised_abbreviation(a) for a in extra_abbreviations)
    return punkt.PunktSentenceTokenizer(params)


# -- the component ---------------------------------------------------------------------


class PunktSentencesConfig(SegmenterConfig):
    model: str | None = Field(
        None,
        description="Punkt parameters trained by casflow train (train.nltk.punkt.v1): the "
        "model folder or its punkt.json; none: untrained Punkt (heuristics only).",
    )
    extra_abbreviations: list[str] = Field(
        default_factory=list,
        description='Abbreviations that never end a sentence, added to the model\'s ("Fig.").',
    )


class PunktSentences(SentenceSplitter[PunktSentencesConfig]):
    name = "sentences.nltk.punkt.v1"
    description = (
        "NLTK Punkt sentence splitter with parameters learned by casflow train from raw "
        "text (never nltk_data), per structure block."
    )
    library = LIBRARY

    def __init__(self, config: PunktSentencesConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        if config.model is None:
            params = import_library("nltk.tokenize.punkt", "nltk").PunktParameters()
        else:
            params = load_parameters(config.model, self.context.workflow_dir)
        self.splitter = make_splitter(params, config.extra_abbreviations)

    @classmethod
    def check_config(cls, config: PunktSentencesConfig, context: RunContext) -> list[str]:
        problems = super().check_config(config, context)
        model = config.model
        if model is not None and not parameters_path(model, context.workflow_dir).is_file():
            problems.append(f"model {model!r}: {missing_parameters(model, context.workflow_dir)}")
        return problems

    def split(self, text: str) -> Iterable[Span]:
        return self.splitter.span_tokenize(text)


# -- the trainer ---------------------------------------------------------------------------


@dataclass
class PunktExample:
    """One document: its text, gold sentences and structure boundaries (picklable)."""

    doc_id: str
    text: str
    sentences: list[Span]
    breaks: list[int]


class PunktTrainerConfig(ComponentConfig):
    include_all_collocations: bool = Field(
        False, description="PunktTrainer.INCLUDE_ALL_COLLOCS: consider every word pair."
    )
    include_abbreviation_collocations: bool = Field(
        False, description="PunktTrainer.INCLUDE_ABBREV_COLLOCS: also pairs after abbreviations."
    )
    extra_abbreviations: list[str] = Field(
        default_factory=list,
        description="Abbreviations added to the learned ones (saved in the model).",
    )


class PunktSentenceTrainer(Trainer[PunktTrainerConfig]):
    name = "train.nltk.punkt.v1"
    description = (
        "NLTK Punkt parameters learned unsupervised from the training documents' text; "
        "scored on gold sentences."
    )
    libraries = ("nltk",)
    layers: ClassVar[dict[str, tuple[str, ...]]] = {"sentences": (SENTENCE,)}
    # the training documents' sentences are not used (their text is): dev scores them
    unsupervised_layers: ClassVar[tuple[str, ...]] = ("sentences",)

    @classmethod
    def check_config(cls, config: PunktTrainerConfig, context: RunContext) -> list[str]:
        problem = missing_library(*LIBRARY)
        return [f"{cls.name}: {problem}"] if problem else []

    def example(self, view: cassis.Cas, doc_id: str) -> PunktExample:
        text = view.sofa_string or ""
        return PunktExample(
            doc_id,
            text,
            sorted((s.begin, s.end) for s in view.select(SENTENCE)),
            structure_breaks(view, BLOCK_STRUCTURE_TYPES),
        )

    def train(
        self,
        train: Sequence[PunktExample],
        dev: Sequence[PunktExample],
        output_dir: Path,
        log: Callable[[str], None],
    ) -> Path:
        punkt = import_library("nltk.tokenize.punkt", "nltk")
        trainer = punkt.PunktTrainer()
        trainer.INCLUDE_ALL_COLLOCS = self.config.include_all_collocations
        trainer.INCLUDE_ABBREV_COLLOCS = self.config.include_abbreviation_collocations
        for example in train:
            trainer.train(example.text, finalize=False)
        trainer.finalize_training()
        params = trainer.get_params()
        params.abbrev_types.update(
            _normalised_abbreviation(a) for a in self.config.extra_abbreviations
        )
        log(
            f"Punkt: {len(params.abbrev_types)} abbreviations, {len(params.collocations)} "
            f"collocations, {len(params.sent_starters)} sentence starters from "
            f"{len(train)} documents"
        )
        model = Path(output_dir) / "model"
        model.mkdir(parents=True, exist_ok=True)
        (model / PARAMETERS_FILE).write_text(
            json.dumps(parameters_to_json(params), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        return model

    def evaluate(self, model_dir: Path, examples: Sequence[PunktExample]) -> dict[str, float]:
        splitter = make_splitter(load_parameters(str(model_dir)))
        counts: Counts = {}
        for example in examples:
            system: list[Span] = []
            for start, end in text_blocks(example.text, example.breaks):
                block = example.text[start:end]
                system.extend((start + b, start + e) for b, e in splitter.span_tokenize(block))
            add_counts(counts, sentence_counts(example.text, example.sentences, system).counts)
        scores = score_segmentation(counts).get("sentence", {})
        return {
            f"sentences_{k}": round(100 * float(scores[k]), 2)
            for k in ("precision", "recall", "f1")
            if k in scores
        }

    def describe(self) -> str:
        return (
            "NLTK PunktTrainer over the raw text of the training documents (unsupervised: "
            "their sentence annotations are not used), parameters saved as punkt.json. "
            "Scores: sentence P/R/F (exact spans, whitespace trimmed) on the development "
            "documents, split one structure block at a time as sentences.nltk.punkt.v1 does."
        )
