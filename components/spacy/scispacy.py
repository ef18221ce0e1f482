"""scispaCy presets over ``spacy.pipeline.v1``, and scispaCy's abbreviation detector.

- ``scispacy.core.v1``: an ``en_core_sci_*`` pipeline (sentences, tokens, POS,
  lemmas, dependencies, and its one entity label ``ENTITY`` as NamedEntity).
- ``scispacy.ner.v1``: an ``en_ner_*`` pipeline whose labels go to
  GeneMention / AnatomyMention through a preset mapping chosen by the model
  name (see ``NER_PRESETS``); ``entity_mapping`` overrides single labels.
- ``scispacy.abbreviations.v1``: Schwartz & Hearst abbreviations
  (``scispacy.abbreviation.AbbreviationDetector``) as ``casflow.ner.Abbreviation``
  on every short form, ``longForm`` pointing to a ``uima.tcas.Annotation`` over
  the long form. It needs only a tokenizer, so no model is downloaded.

The first two are ``SpacyPipeline`` with a narrower configuration: loading,
chunking and mapping are the spaCy wrapper's. Label names are those of the
scispaCy 0.5 model packages (their ``meta.json`` label schemes).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field, field_validator, model_validator

from casflow.components.layers import ALL_LAYERS, EntityTarget, Layer
from casflow.components.models import is_shipped
from casflow.components.spacy.cli_stand_in import cli_stand_in
from casflow.components.spacy.loading import TORCH, looks_like_path
from casflow.components.spacy.pipeline import (
    SpacyPipeline,
    SpacyPipelineConfig,
    _doc_from_tokens,
)
from casflow.pipeline.component import ComponentConfig, Processor, RunContext
from casflow.typesystem import ABBREVIATION, TOKEN

# -- label presets --------------------------------------------------------------

#: en_ner_bionlp13cg_md anatomy labels -> AnatEM class names (the AnatEM corpus
#: extends the BioNLP'13 CG anatomy classes, so each has an exact twin).
BIONLP13CG_ANATOMY: dict[str, str] = {
    "ANATOMICAL_SYSTEM": "Anatomical_system",
    "CANCER": "Cancer",
    "CELL": "Cell",
    "CELLULAR_COMPONENT": "Cellular_component",
    "DEVELOPING_ANATOMICAL_STRUCTURE": "Developing_anatomical_structure",
    "IMMATERIAL_ANATOMICAL_ENTITY": "Immaterial_anatomical_entity",
    "MULTI_TISSUE_STRUCTURE": "Multi-tissue_structure",
    "ORGAN": "Organ",
    "ORGANISM_SUBDIVISION": "Organism_subdivision",
    "ORGANISM_SUBSTANCE": "Organism_substance",
    "PATHOLOGICAL_FORMATION": "Pathological_formation",
    "TISSUE": "Tissue",
}


def _gene(value: str) -> EntityTarget:
    return EntityTarget(type="gene", value=value)


def _anatomy(value: str) -> EntityTarget:
    return EntityTarget(type="anatomy", value=value)


#: Built-in label mappings of the en_ner_* models. Labels not listed (AMINO_ACID,
#: ORGANISM, SIMPLE_CHEMICAL; CELL_LINE; CHEBI, GO, SO, TAXON) follow
#: ``unmapped_entities``.
NER_PRESETS: dict[str, dict[str, EntityTarget]] = {
    "en_ner_bionlp13cg_md": {
        "GENE_OR_GENE_PRODUCT": _gene("GENE_OR_GENE_PRODUCT"),
        **{label: _anatomy(value) for label, value in BIONLP13CG_ANATOMY.items()},
    },
    # JNLPBA's DNA, RNA and protein names are what gene mention corpora (GENETAG,
    # BC2GM) call genes; cell types are AnatEM's Cell; cell lines are neither.
    "en_ner_jnlpba_md": {
        "DNA": _gene("DNA"),
        "RNA": _gene("RNA"),
        "PROTEIN": _gene("PROTEIN"),
        "CELL_TYPE": _anatomy("Cell"),
    },
    # CRAFT: GGP = genes and gene products (PR); CL = Cell Ontology cell types,
    # which casflow's CRAFT reader also writes as AnatomyMention. GO is not
    # mapped: it mixes cellular components with processes and functions.
    "en_ner_craft_md": {
        "GGP": _gene("GGP"),
        "CL": _anatomy("Cell"),
    },
}
NerPreset = Literal["en_ner_bionlp13cg_md", "en_ner_jnlpba_md", "en_ner_craft_md"]

_CORE_MODEL = re.compile(r"en_core_sci_(sm|md|lg|scibert)")


def _is_path_like(model: str) -> bool:
    return looks_like_path(model) or is_shipped(model)


# -- scispacy.core.v1 -------------------------------------------------------------


class ScispacyCoreConfig(SpacyPipelineConfig):
    model: str = Field(
        "en_core_sci_sm",
        description="en_core_sci_sm, en_core_sci_md, en_core_sci_lg or en_core_sci_scibert "
        "(installed from the scispaCy project), or the folder of such a pipeline.",
    )
    layers: list[Layer] = Field(
        default_factory=lambda: list(ALL_LAYERS),
        description=f"Layers to write, from: {', '.join(ALL_LAYERS)} (entities: the models' "
        "one label, ENTITY, as NamedEntity unless unmapped_entities is drop).",
    )

    @field_validator("model")
    @classmethod
    def _core_model(cls, model: str) -> str:
        if _CORE_MODEL.fullmatch(model) or _is_path_like(model):
            return model
        raise ValueError(
            f"model {model!r} is not an en_core_sci model: use en_core_sci_sm, "
            "en_core_sci_md, en_core_sci_lg, en_core_sci_scibert or a folder path "
            "(./models/x); for any other pipeline use spacy.pipeline.v1"
        )


class ScispacyCore(SpacyPipeline):
    name = "scispacy.core.v1"
    description = (
        "scispaCy en_core_sci_* pipeline: sentences, tokens, POS, lemmas, dependencies, "
        "generic ENTITY mentions as NamedEntity (a preset of spacy.pipeline.v1)."
    )
    Config = ScispacyCoreConfig


# -- scispacy.ner.v1 ------------------------------------------------------------------


class ScispacyNerConfig(SpacyPipelineConfig):
    model: str = Field(
        description="en_ner_bionlp13cg_md, en_ner_jnlpba_md or en_ner_craft_md (installed "
        "from the scispaCy project; the name picks the label preset), or a folder with "
        "preset or entity_mapping."
    )
    preset: NerPreset | None = Field(
        None,
        description="Label preset for a model given as a folder: "
        f"{', '.join(NER_PRESETS)} (a model given by name picks its own).",
    )
    layers: list[Layer] = Field(
        default_factory=lambda: list[Layer](("entities",)),
        description=f"Layers to write, from: {', '.join(ALL_LAYERS)}.",
    )
    entity_mapping: dict[str, EntityTarget] = Field(
        default_factory=dict,
        description="spaCy label -> {type: gene|anatomy|named_entity, value: class}; "
        "entries override the preset's (after validation it holds the merged mapping).",
    )

    @model_validator(mode="before")
    @classmethod
    def _merge_preset(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        model, preset = data.get("model"), data.get("preset")
        if not isinstance(model, str):
            return data  # the field validation reports it
        if model in NER_PRESETS:
            if preset is not None and preset != model:
                raise ValueError(
                    f"model {model} picks its own label preset; remove preset: {preset}"
                )
            preset = model
        elif not _is_path_like(model):
            raise ValueError(
                f"model {model!r} is not a scispaCy NER model: use one of "
                f"{', '.join(NER_PRESETS)} or a folder path (./models/x) with preset or "
                "entity_mapping; for any other pipeline use spacy.pipeline.v1"
            )
        overrides = data.get("entity_mapping") or {}
        if preset is None and not overrides:
            raise ValueError(
                f"model {model!r} is a folder, so its labels are unknown: set preset "
                f"({', '.join(NER_PRESETS)}) or entity_mapping"
            )
        if preset not in NER_PRESETS:
            return data  # only overrides, or an unknown preset (the field validation reports it)
        merged: dict[str, Any] = dict(NER_PRESETS[preset])
        if isinstance(overrides, Mapping):
            merged.update(overrides)
        else:
            return data  # not a mapping: the field validation reports it
        return {**data, "entity_mapping": merged}


class ScispacyNer(SpacyPipeline):
    name = "scispacy.ner.v1"
    description = (
        "scispaCy en_ner_* models (BioNLP'13 CG, JNLPBA, CRAFT) with built-in label "
        "mappings to GeneMention and AnatomyMention (AnatEM classes); a preset of "
        "spacy.pipeline.v1."
    )
    Config = ScispacyNerConfig


# -- scispacy.abbreviations.v1 --------------------------------------------------------

AbbreviationTokenizer = Literal["spacy_en", "scispacy_combined"]
ANNOTATION = "uima.tcas.Annotation"


class ScispacyAbbreviationsConfig(ComponentConfig):
    use_existing_tokens: bool = Field(
        False,
        description="Take the view's Token annotations as the tokenization instead of "
        "tokenizing the text.",
    )
    tokenizer: AbbreviationTokenizer = Field(
        "spacy_en",
        description="spacy_en: spaCy's blank English tokenizer; scispacy_combined: "
        "scispaCy's combined_rule_tokenizer. Unused with use_existing_tokens.",
    )
    batch_size: int = Field(64, ge=1, description="Texts per batch in nlp.pipe.")

    @model_validator(mode="after")
    def _consistent(self) -> ScispacyAbbreviationsConfig:
        if self.use_existing_tokens and self.tokenizer != "spacy_en":
            raise ValueError(
                "tokenizer is not used when use_existing_tokens is true; remove one of them"
            )
        return self


def abbreviation_pipeline(tokenizer: AbbreviationTokenizer = "spacy_en") -> Any:
    """A blank English pipeline running scispaCy's AbbreviationDetector.

    The detector matches parentheses on tokens and needs no tagger, parser or
    sentences, so no model is loaded.
    """
    import scispacy.abbreviation  # noqa: F401 - registers the abbreviation_detector factory
    import spacy

    nlp = spacy.blank("en")
    if tokenizer == "scispacy_combined":
        from scispacy.custom_tokenizer import combined_rule_tokenizer

        nlp.tokenizer = combined_rule_tokenizer(nlp)
    nlp.add_pipe("abbreviation_detector")
    return nlp


class ScispacyAbbreviations(Processor[ScispacyAbbreviationsConfig]):
    name = "scispacy.abbreviations.v1"
    description = (
        "Abbreviation definitions (Schwartz & Hearst, scispaCy's AbbreviationDetector): "
        "an Abbreviation on every short form, with longForm and longFormText."
    )
    produces: ClassVar[tuple[str, ...]] = (
        ABBREVIATION,
        f"{ABBREVIATION}:longForm",
        f"{ABBREVIATION}:longFormText",
    )

    def __init__(
        self, config: ScispacyAbbreviationsConfig, context: RunContext | None = None
    ) -> None:
        super().__init__(config, context)
        self.nlp = abbreviation_pipeline(config.tokenizer)

    @classmethod
    def requirements(
        cls, config: ScispacyAbbreviationsConfig
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return ((TOKEN,) if config.use_existing_tokens else ()), cls.produces

    @classmethod
    def modules_not_used(
        cls, config: ScispacyAbbreviationsConfig, context: RunContext
    ) -> frozenset[str]:
        return frozenset({TORCH})  # a blank pipeline: no torch layer

    @classmethod
    def stand_in_modules(
        cls, config: ScispacyAbbreviationsConfig, context: RunContext
    ) -> Mapping[str, ModuleType]:
        return cli_stand_in()

    @classmethod
    def check_config(cls, config: ScispacyAbbreviationsConfig, context: RunContext) -> list[str]:
        import importlib.util

        if importlib.util.find_spec("scispacy") is None:
            return ["scispacy.abbreviations.v1 needs scispaCy: pip install scispacy"]
        return []

    def process(self, view: cassis.Cas) -> None:
        self.process_batch([view])

    def process_batch(self, views: Sequence[cassis.Cas]) -> None:
        texts = [view.sofa_string or "" for view in views]
        self.nlp.max_length = max([self.nlp.max_length, *(len(t) + 1 for t in texts)])
        sources: list[Any] = []
        for view, text in zip(views, texts, strict=True):
            if self.config.use_existing_tokens:
                tokens = list(view.select(TOKEN))
                doc, _ = _doc_from_tokens(self.nlp, text, 0, tokens, None)
                sources.append(doc)
            else:
                sources.append(text)
        # Every Doc is made before any view is written (a failed batch is retried per document).
        with warnings.catch_warnings():
            # The detector's matcher of long forms is empty in a text without any (W036).
            warnings.filterwarnings("ignore", message=r"\[W036\]")
            docs = list(self.nlp.pipe(sources, batch_size=self.config.batch_size))
        for view, text, doc in zip(views, texts, docs, strict=True):
            self._write(view, text, doc)

    def _write(self, view: cassis.Cas, text: str, doc: Any) -> None:
        abbreviation_type = view.typesystem.get_type(ABBREVIATION)
        annotation_type = view.typesystem.get_type(ANNOTATION)
        long_forms: dict[tuple[int, int], Any] = {}
        new: list[Any] = []
        for short in sorted(doc._.abbreviations, key=lambda s: (s.start_char, s.end_char)):
            long = short._.long_form
            short_span = _trimmed(text, short.start_char, short.end_char)
            long_span = _trimmed(text, long.start_char, long.end_char)
            if short_span is None or long_span is None:
                continue
            long_fs = long_forms.get(long_span)
            if long_fs is None:
                long_fs = long_forms[long_span] = annotation_type(
                    begin=long_span[0], end=long_span[1]
                )
                new.append(long_fs)
            new.append(
                abbreviation_type(
                    begin=short_span[0],
                    end=short_span[1],
                    longForm=long_fs,
                    longFormText=text[long_span[0] : long_span[1]],
                )
            )
        view.add_all(new)


def _trimmed(text: str, begin: int, end: int) -> tuple[int, int] | None:
    """``(begin, end)`` without surrounding whitespace; None when nothing is left."""
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    return (begin, end) if begin < end else None


__all__ = [
    "BIONLP13CG_ANATOMY",
    "NER_PRESETS",
    "ScispacyAbbreviations",
    "ScispacyAbbreviationsConfig",
    "ScispacyCore",
    "ScispacyCoreConfig",
    "ScispacyNer",
    "ScispacyNerConfig",
    "abbreviation_pipeline",
]
