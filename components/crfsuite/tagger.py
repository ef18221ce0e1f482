"""casflow components that tag gene and anatomy mentions with a shipped CRF model.

``ner.crf.v1`` runs any model folder written by ``train.crf.mentions.v1`` (``casflow train``);
``ner.gene.v1`` and ``ner.anatomy.v1`` are the same component with the shipped
BC2GM and AnatEM models as defaults. Sentences come from the view's Sentence
annotations when there are any (else the rule-based splitter), tokens from the
component's own tokenizer, optionally refining the view's Token annotations.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import cassis
from pydantic import Field

from casflow.components.crfsuite.crf import META_FILE, MODEL_FILE
from casflow.components.crfsuite.ensemble import document_steps, load_tagger
from casflow.components.crfsuite.tokenize import Span, refine, tokenize
from casflow.components.dictionary.features import META_KEY as DICTIONARY_KEY
from casflow.components.dictionary.tagger import DictionaryTaggerConfig, resolve_ontology
from casflow.components.models import ALIASES, SHIPPED_PREFIX, model_path
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import ANATOMY_MENTION, GENE_MENTION, SENTENCE, TOKEN

MENTION_TYPES = (GENE_MENTION, ANATOMY_MENTION)


def resolve_model(model: str, workflow_dir: Path | None = None) -> Path:
    """``casflow:gene`` -> the shipped folder; anything else is a path (relative to the workflow)."""
    return model_path(model, workflow_dir)


def model_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable model folder, or None."""
    if (path / META_FILE).is_file():
        members = json.loads((path / META_FILE).read_text(encoding="utf-8")).get("members", [])
        for member in members:
            problem = model_problem(path / member)
            if problem:
                return problem
        if members:
            return None
    missing = [name for name in (MODEL_FILE, META_FILE) if not (path / name).is_file()]
    if missing:
        return (
            f"model folder {path} lacks {', '.join(missing)}; train one with "
            "'casflow train' (train.crf.mentions.v1) or name a shipped model "
            f"({', '.join(SHIPPED_PREFIX + n for n in ALIASES)})"
        )
    return dictionary_problem(path)


def dictionary_problem(path: Path) -> str | None:
    """Why a stacking model (dictionary features) cannot compute its features here."""
    stored = json.loads((path / META_FILE).read_text(encoding="utf-8")).get(DICTIONARY_KEY)
    if not stored:
        return None
    config = DictionaryTaggerConfig.model_validate(stored)
    missing = [p for p in config.ontologies if not resolve_ontology(p, Path.cwd()).is_file()]
    if not missing:
        return None
    return (
        f"model {path} computes dictionary features from {', '.join(missing)}, not found; "
        "set CASFLOW_CORPORA to the corpora folder (holding craft/)"
    )


class CrfNerConfig(ComponentConfig):
    model: str = Field(
        "casflow:gene",
        description="Shipped model (casflow:gene, casflow:anatomy) or a model folder path.",
    )
    mention_type: str = Field(
        GENE_MENTION, description="Annotation type written (GeneMention or AnatomyMention)."
    )
    use_existing_tokens: bool = Field(
        False,
        description="Start from the view's Token annotations (split further at punctuation "
        "and letter/digit changes) instead of tokenizing the text.",
    )
    use_existing_sentences: bool = Field(
        True,
        description="Tag within the view's Sentence annotations when it has any; otherwise "
        "sentences come from the rule-based splitter.",
    )


class CrfNer(Processor[CrfNerConfig]):
    name = "ner.crf.v1"
    description = (
        "CRF named-entity tagger (gene or anatomy mentions) with a shipped or given model."
    )
    produces: ClassVar[tuple[str, ...]] = (GENE_MENTION, ANATOMY_MENTION)

    def __init__(self, config: CrfNerConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        path = resolve_model(config.model, self.context.workflow_dir)
        problem = model_problem(path)
        if problem:
            raise FileNotFoundError(problem)
        self.tagger = load_tagger(path)
        self.document_steps = document_steps(path)

    @classmethod
    def requirements(cls, config: CrfNerConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        requires = (TOKEN,) if config.use_existing_tokens else ()
        return requires, (config.mention_type,)

    @classmethod
    def check_config(cls, config: CrfNerConfig, context: RunContext) -> list[str]:
        problems = []
        if config.mention_type not in MENTION_TYPES:
            problems.append(
                f"mention_type {config.mention_type!r} is not one of {', '.join(MENTION_TYPES)}"
            )
        try:
            problem = model_problem(resolve_model(config.model, context.workflow_dir))
        except ImportError as exc:
            problem = f"cannot find shipped models: {exc}"
        if problem:
            problems.append(problem)
        return problems

    def _sentences(self, view: cassis.Cas, text: str) -> list[Span]:
        if self.config.use_existing_sentences:
            existing = [(s.begin, s.end) for s in view.select(SENTENCE)]
            if existing:
                return existing
        from casflow.components.rules.sentences import split_sentences

        return [(b, e) for b, e in split_sentences(text)]

    def _tokens(self, view: cassis.Cas, text: str, sentence: Span) -> list[Span]:
        if self.config.use_existing_tokens:
            begin, end = sentence
            covered = [
                (t.begin, t.end) for t in view.select(TOKEN) if begin <= t.begin and t.end <= end
            ]
            return refine(text, covered)
        return tokenize(text, *sentence)

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        mention_type = view.typesystem.get_type(self.config.mention_type)
        mentions = []
        for sentence in self._sentences(view, text):
            mentions.extend(self.tagger.tag(text, self._tokens(view, text, sentence)))
        for step in self.document_steps:
            mentions = step(text, mentions)
        view.add_all(
            [
                mention_type(begin=begin, end=end, value=label, confidence=confidence)
                for begin, end, label, confidence in mentions
            ]
        )


class GeneNerConfig(CrfNerConfig):
    model: str = Field("casflow:gene", description=CrfNerConfig.model_fields["model"].description)
    mention_type: str = Field(GENE_MENTION, description="Annotation type written.")


class AnatomyNerConfig(CrfNerConfig):
    model: str = Field(
        "casflow:anatomy", description=CrfNerConfig.model_fields["model"].description
    )
    mention_type: str = Field(ANATOMY_MENTION, description="Annotation type written.")


class GeneNer(CrfNer):
    name = "ner.gene.v1"
    description = "Gene / gene-product mentions (CRF trained on BC2GM), as GeneMention."
    Config: ClassVar[type[ComponentConfig]] = GeneNerConfig
    produces = (GENE_MENTION,)


class AnatomyNer(CrfNer):
    name = "ner.anatomy.v1"
    description = "Anatomical entity mentions, 12 AnatEM classes (CRF trained on AnatEM)."
    Config: ClassVar[type[ComponentConfig]] = AnatomyNerConfig
    produces = (ANATOMY_MENTION,)
