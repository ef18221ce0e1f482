"""casflow components that tag gene and anatomy mentions with a shipped CRF model.

``ner.crf.v1`` runs any model folder written by ``train.crf.mentions.v1`` (``casflow train``);
``ner.gene.v1`` and ``ner.anatomy.v1`` are the same component with the shipped
BC2GM and AnatEM models as defaults. Sentences come from the view's Sentence
annotations when there are any (else the rule-based splitter), tokens from the
component's own tokenizer, optionally refining the view's Token annotations.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from pathlib import Path
from typing import Any, ClassVar

import cassis
from pydantic import Field, ValidationError, field_validator

from casflow.components.crfsuite.crf import MENTION_TYPE_KEY, META_FILE, MODEL_FILE
from casflow.components.crfsuite.ensemble import document_steps, load_tagger
from casflow.components.crfsuite.tokenize import Span, refine, tokenize
from casflow.components.dictionary.entries import ontology_problem
from casflow.components.dictionary.features import META_KEY as DICTIONARY_KEY
from casflow.components.dictionary.tagger import DictionaryTaggerConfig, resolve_ontology
from casflow.components.models import ALIASES, SHIPPED_PREFIX, model_path
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import (
    ANATOMY_MENTION,
    GENE_MENTION,
    SENTENCE,
    TOKEN,
    resolve_type_name,
    short_name,
)

MENTION_TYPES = (GENE_MENTION, ANATOMY_MENTION)


def resolve_model(model: str, workflow_dir: Path | None = None) -> Path:
    """``casflow:gene`` -> the shipped folder; anything else is a path (relative to the workflow)."""
    return model_path(model, workflow_dir)


def read_meta(path: Path) -> dict[str, Any]:
    """The ``meta.json`` of model folder ``path`` as a JSON object, else ValueError
    naming the file and what is wrong (OSError when it cannot be read)."""
    file = path / META_FILE
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise ValueError(f"{file} is not valid JSON ({exc}); retrain the model") from exc
    if not isinstance(meta, dict):
        raise ValueError(
            f"{file} holds a {type(meta).__name__}, not a JSON object; retrain the model"
        )
    members = meta.get("members", [])
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise ValueError(f"{file}: 'members' must be a list of member folder names")
    return meta


def model_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable model folder, or None."""
    try:
        check_model(path)
    except (OSError, ValueError) as exc:
        return str(exc)
    return None


def check_model(path: Path) -> None:
    """FileNotFoundError when ``path`` (or a member, or an ontology its dictionary
    features need) is missing, ValueError when its meta.json cannot be used."""
    if (path / META_FILE).is_file():
        meta = read_meta(path)
        members = meta.get("members", [])
        for member in members:
            check_model(path / member)
        if members:
            document_steps(path, meta)
            return
    missing = [name for name in (MODEL_FILE, META_FILE) if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"model folder {path} lacks {', '.join(missing)}; train one with "
            "'casflow train' (train.crf.mentions.v1) or name a shipped model "
            f"({', '.join(SHIPPED_PREFIX + n for n in ALIASES)})"
        )
    document_steps(path, read_meta(path))
    check_dictionary(path)


def mention_type_problem(path: Path, mention_type: str, model: str) -> str | None:
    """Why a tagger writing ``mention_type`` must not run the model at ``path``: it learned
    another type (its meta.json says which; a model that does not say is not judged)."""
    try:
        learned = read_meta(path).get(MENTION_TYPE_KEY)
    except (OSError, ValueError):
        return None  # check_model reports an unreadable model
    if not isinstance(learned, str) or learned == mention_type:
        return None
    return (
        f"model {model} learned {short_name(learned)} mentions (its {META_FILE}), but this "
        f"component writes {short_name(mention_type)}: set mention_type: "
        f"{short_name(learned)}, or give a model trained on {short_name(mention_type)}"
    )


def check_dictionary(path: Path) -> None:
    """FileNotFoundError when the ontologies of a stacking model's dictionary features
    are missing, ValueError when its settings or those files cannot be used."""
    file = path / META_FILE
    stored = read_meta(path).get(DICTIONARY_KEY)
    if not stored:
        return
    try:
        config = DictionaryTaggerConfig.model_validate(stored)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'settings'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ValueError(
            f"{file}: invalid dictionary settings ({details}); retrain the model"
        ) from None
    paths = [resolve_ontology(p, Path.cwd()) for p in config.ontologies]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"model {path} computes dictionary features from {', '.join(missing)}, not found; "
            "set CASFLOW_CORPORA to the corpora folder (holding craft/)"
        )
    for ontology in paths:
        problem = ontology_problem(ontology)
        if problem:
            raise ValueError(
                f"model {path} computes dictionary features from an unusable file: {problem}"
            )


class CrfNerConfig(ComponentConfig):
    model: str = Field(
        "casflow:gene",
        description="Shipped model (casflow:gene, casflow:anatomy) or a model folder path.",
    )
    mention_type: str = Field(
        GENE_MENTION,
        description="Annotation type written (GeneMention or AnatomyMention, full or short name).",
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

    @field_validator("mention_type")
    @classmethod
    def _full_type_name(cls, value: str) -> str:
        return resolve_type_name(value)


class CrfNer(Processor[CrfNerConfig]):
    name = "ner.crf.v1"
    description = (
        "CRF named-entity tagger (gene or anatomy mentions) with a shipped or given model."
    )
    produces: ClassVar[tuple[str, ...]] = (GENE_MENTION, ANATOMY_MENTION)

    def __init__(self, config: CrfNerConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        path = resolve_model(config.model, self.context.workflow_dir)
        check_model(path)
        problem = mention_type_problem(path, config.mention_type, config.model)
        if problem:
            raise ValueError(problem)
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
            known = ", ".join(f"{short_name(t)} ({t})" for t in MENTION_TYPES)
            problems.append(f"mention_type {config.mention_type!r} is not one of {known}")
        try:
            path = resolve_model(config.model, context.workflow_dir)
            problem = model_problem(path)
            if problem is None and config.mention_type in MENTION_TYPES:
                problem = mention_type_problem(path, config.mention_type, config.model)
        except ImportError as exc:
            problem = f"cannot find shipped models: {exc}"
        if problem:
            problems.append(problem)
        return problems

    def _sentences(self, view: cassis.Cas, text: str) -> list[Span]:
        if self.config.use_existing_sentences:
            existing = [(s.begin, s.end) for s in view.select(SENTENCE)]
            if existing:
                return disjoint(existing)
        from casflow.components.rules.sentences import split_sentences

        return [(b, e) for b, e in split_sentences(text)]

    def _tokens(self, tokens: list[Span], text: str, sentence: Span) -> list[Span]:
        if self.config.use_existing_tokens:
            begin, end = sentence
            # ``tokens`` are sorted once per document: a document of thousands of
            # sentences would otherwise scan every token for each sentence.
            low = bisect_left(tokens, (begin, begin))
            high = bisect_left(tokens, (end, end + 1))
            return refine(text, [(b, e) for b, e in tokens[low:high] if e <= end])
        return tokenize(text, *sentence)

    def process(self, view: cassis.Cas) -> None:
        text = view.sofa_string or ""
        mention_type = view.typesystem.get_type(self.config.mention_type)
        # a span annotated twice is one token (else each mention came out twice)
        tokens = (
            sorted({(t.begin, t.end) for t in view.select(TOKEN)})
            if self.config.use_existing_tokens
            else []
        )
        mentions = []
        for sentence in self._sentences(view, text):
            mentions.extend(self.tagger.tag(text, self._tokens(tokens, text, sentence)))
        for step in self.document_steps:
            mentions = step(text, mentions)
        view.add_all(
            [
                mention_type(begin=begin, end=end, value=label, confidence=confidence)
                for begin, end, label, confidence in mentions
            ]
        )


def disjoint(spans: list[Span]) -> list[Span]:
    """Sentence spans sorted, with overlapping ones merged: a view whose sentences come
    from two splitters (or hold a span twice) would otherwise have each mention in the
    overlap tagged, and written, twice."""
    merged: list[Span] = []
    for begin, end in sorted(spans):
        if merged and begin < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > begin:
            merged.append((begin, end))
    return merged


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
