"""Settings of ``train.crf.mentions.v1``: one CRF, or a vote of several.

Besides the training documents, a CRF may use resources learned from other gold
views (:class:`CrfResources`): a lexicon of CRAFT concept-mention texts, word
clusters from unlabelled text, a POS tagger; and the UBERON and CL ontologies
as a lexicon. The defaults are what the shipped anatomy tagger was made from, and
``workflows/train-anatomy.yaml`` spells them out.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from casflow.components.crfsuite.postprocess import (
    DOCUMENT_POSTPROCESSORS,
    POSTPROCESSORS,
    known_document_steps,
)
from casflow.components.dictionary.tagger import DictionaryTaggerConfig
from casflow.components.unlabelled_text import DefinitionText, TextSource, text_field
from casflow.pipeline.component import ComponentConfig
from casflow.pipeline.gold_sources import GoldSource


class FeatureOptions(ComponentConfig):
    window: int = Field(2, ge=0, description="Words and shapes this many tokens either side.")
    affix_max: int = Field(4, ge=0, description="Prefixes and suffixes of 1..N characters.")
    char_ngrams: list[int] = Field(
        default_factory=lambda: [2, 3], description="Character n-gram sizes (empty: none)."
    )
    word_context: bool = Field(
        True, description="The whitespace-delimited word a token sits in, and its shape."
    )
    bigrams: bool = Field(True, description="Word bigrams with the previous and next token.")
    abbreviations: bool = Field(
        False,
        description="A short form defined as 'long form (SF)' in the text carries features "
        "of its long form.",
    )


class CrfOptions(ComponentConfig):
    """One CRF: labels, regularisation, features and the resources behind them."""

    scheme: Literal["BIO", "BIOES"] = Field("BIO", description="Token label scheme.")
    c1: float = Field(0.1, ge=0, description="L1 regularisation (L-BFGS).")
    c2: float = Field(0.01, ge=0, description="L2 regularisation (L-BFGS).")
    iterations: int = Field(200, gt=0, description="Maximum L-BFGS iterations.")
    min_freq: int = Field(0, ge=0, description="Drop features seen fewer times than this.")
    features: FeatureOptions = Field(
        default_factory=FeatureOptions, description="Token feature groups."
    )
    train_lexicon_folds: int = Field(
        0,
        ge=0,
        description="Lexicon of the training mentions as features, jackknifed over K folds of "
        "the training sentences (each fold's matches come from the other folds); 0: off.",
    )
    ontology_lexicon: bool = Field(
        False,
        description="UBERON and CL names and exact synonyms (and UBERON terms by their CARO "
        "class) as lexicon features; the OBO files of resources.ontologies.",
    )
    craft_lexicon: list[str] = Field(
        default_factory=list,
        description="Concept-mention texts of these ontologies (GO_CC, CL, UBERON, PR) in the "
        "gold views of resources.mention_lexicon, as lexicon features.",
    )
    clusters: str | None = Field(
        None,
        description="Word-cluster features from this file (word<TAB>ids); built from "
        "resources.cluster_text when the file does not exist, and kept there. None: no "
        "cluster features.",
    )
    embedding_clusters: str | None = Field(
        None,
        description="Word-embedding cluster features from this file (word<TAB>ids): k-means "
        "(100, 300, 1000 clusters) of the word2vec vectors inside the shipped craft_syntax "
        "spaCy pipeline, built when the file does not exist and kept there. None: none.",
    )
    pos_model: str | None = Field(
        None,
        description="POS features from this POS tagger (a crfsuite file); trained from the "
        "gold views of resources.pos_tagger when the file does not exist, and kept there. "
        "None: no POS features.",
    )
    dictionary: DictionaryTaggerConfig | None = Field(
        None,
        description="Stacking: the matches of ner.dictionary.v1 with these settings (its "
        "config: ontologies, synonym_scopes, stop_list, ...) as features, B/I and class of "
        "the match per token; stored with the model, which recomputes them when tagging. "
        "None: none.",
    )
    postprocess: list[str] = Field(
        default_factory=list,
        description=f"Post-processing after tagging, in order ({', '.join(POSTPROCESSORS)}).",
    )

    @field_validator("train_lexicon_folds")
    @classmethod
    def _folds(cls, value: int) -> int:
        if value == 1:
            raise ValueError("jackknifing needs at least 2 folds (0 turns the lexicon off)")
        return value

    @field_validator("postprocess")
    @classmethod
    def _known_steps(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in POSTPROCESSORS]
        if unknown:
            raise ValueError(
                f"unknown post-processing {', '.join(unknown)}; known: {', '.join(POSTPROCESSORS)}"
            )
        return value


_CRF_KEYS = ", ".join(CrfOptions.model_fields)


def _craft_mentions() -> GoldSource:
    return GoldSource(
        component="craft.reader.v1",
        config={"split": "all", "layers": ["concepts"], "ontologies": ["GO_CC", "CL", "UBERON"]},
    )


def _pos_views() -> GoldSource:
    return GoldSource(
        component="anatem.reader.v1", config={"split": "train", "pos": True}, order="id"
    )


class CrfResources(ComponentConfig):
    """Where the lexicons, word clusters and POS tagger of the members are learned from."""

    mention_lexicon: GoldSource = Field(
        default_factory=_craft_mentions,
        description="Gold views holding the concept mentions of craft_lexicon (mentions with "
        "an ontology feature, e.g. CRAFT's read by craft.reader.v1).",
    )
    cluster_text: list[TextSource | DefinitionText] = text_field(
        "Unlabelled text of the word clusters"
    )
    pos_tagger: GoldSource = Field(
        default_factory=_pos_views,
        description="Gold views with POS on their Tokens that the POS tagger of pos_model "
        "learns from (default AnatEM train with its NERsuite POS column).",
    )
    ontologies: str | None = Field(
        None,
        description="Folder holding <ONT>/<ONT>/<ONT>.obo.zip for ontology_lexicon and "
        "definitions (CRAFT's concept-annotation layout); default CRAFT's "
        "($CASFLOW_CORPORA/craft/concept-annotation, else ../shared/corpora/craft/...).",
    )


class CrfMentionTrainerConfig(ComponentConfig):
    label: str | None = Field(
        None,
        description="Class of every mention (one class, e.g. GENE); none: each gold mention's "
        "value (e.g. the 12 AnatEM classes).",
    )
    # members before crf: crf's check sees them
    members: list[CrfOptions] | None = Field(
        None,
        min_length=2,
        description="Several CRFs that vote on every mention (give this or crf); each with "
        f"the keys of crf ({_CRF_KEYS}).",
    )
    crf: CrfOptions | None = Field(
        None,
        validate_default=True,
        description=f"One CRF (give this or members); keys {_CRF_KEYS} "
        "(casflow.components.crfsuite.trainer_config.CrfOptions).",
    )
    needed: int | None = Field(
        None, ge=1, description="Votes a mention needs (members only); none: a majority."
    )
    document_postprocess: list[str] = Field(
        default_factory=list,
        description="Post-processing of each document's mentions after tagging (and after the "
        f"vote), in order ({', '.join(DOCUMENT_POSTPROCESSORS)}); stored in the model's meta.",
    )
    resources: CrfResources = Field(
        default_factory=CrfResources,
        description="Gold views and ontologies the lexicons, clusters and POS tagger come from.",
    )
    scoring: Literal["strict", "alt_eval"] = Field(
        "strict",
        description="Headline criterion of the scores: strict (exact span and class) or "
        "alt_eval (BioCreative II: a gold mention's accepted alternatives count too).",
    )
    eval_sentences: Literal["rules", "gold"] = Field(
        "rules",
        description="Sentences when scoring from raw text: the rule-based splitter's, or the "
        "gold view's (e.g. BC2GM, whose documents are single sentences).",
    )
    document_order: Literal["reader", "id"] = Field(
        "reader",
        description="Order of the training documents given to the CRF: as the reader lists "
        "them, or sorted by document id (the shipped anatomy tagger read AnatEM files in name "
        "order). The CRF's sums, hence its weights, depend on the order.",
    )

    @field_validator("document_postprocess")
    @classmethod
    def _known_document_steps(cls, value: list[str]) -> list[str]:
        return known_document_steps(value)

    @field_validator("crf")
    @classmethod
    def _crf_or_members(cls, value: CrfOptions | None, info: ValidationInfo) -> CrfOptions | None:
        if "members" not in info.data:
            return value  # members were wrong; that is reported already
        if (value is None) == (info.data["members"] is None):
            raise ValueError("give exactly one of crf (one CRF) and members (CRFs that vote)")
        return value

    @field_validator("needed")
    @classmethod
    def _votes(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None or "members" not in info.data:
            return value
        members = info.data["members"]
        if members is None:
            raise ValueError("needed is for members (a vote); a single crf takes no votes")
        if value > len(members):
            raise ValueError(f"needed {value} is more than the {len(members)} members")
        return value

    def models(self) -> list[CrfOptions]:
        """The CRFs to train: the one crf, or the members in order."""
        return [self.crf] if self.crf is not None else list(self.members or [])
