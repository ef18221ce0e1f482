"""Settings of ``train.crf.mentions.v1``: one CRF, or a vote of several.

Every option of ``python -m casflow.components.crfsuite.train`` has a field here, so a
training workflow can state exactly how a shipped model was made (its
``meta.json`` records the command line; the fields carry the same names).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from casflow.components.crfsuite.postprocess import DOCUMENT_POSTPROCESSORS, POSTPROCESSORS
from casflow.pipeline.component import ComponentConfig


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
        "class) as lexicon features; read from the corpora folder's CRAFT ontologies.",
    )
    craft_lexicon: list[str] = Field(
        default_factory=list,
        description="CRAFT concept-mention texts of these ontologies (GO_CC, CL, UBERON, PR) "
        "as lexicon features.",
    )
    clusters: str | None = Field(
        None,
        description="Word-cluster features from this file (word<TAB>ids); built from the "
        "corpora folder's unlabelled training-side text when the file does not exist, and "
        "kept there. None: no cluster features.",
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
        "POS column of AnatEM train in the corpora folder when the file does not exist, and "
        "kept there. None: no POS features.",
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
    corpora: str | None = Field(
        None,
        description="Corpora folder for lexicons, clusters and the POS tagger (CRAFT "
        "ontologies, unlabelled text); default $CASFLOW_CORPORA, else ../shared/corpora.",
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
        "them, or sorted by document id (python -m casflow.components.crfsuite.train reads AnatEM "
        "files in name order). The CRF's sums, hence its weights, depend on the order.",
    )

    @field_validator("document_postprocess")
    @classmethod
    def _known_document_steps(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in DOCUMENT_POSTPROCESSORS]
        if unknown:
            raise ValueError(
                f"unknown document post-processing {', '.join(unknown)}; known: "
                f"{', '.join(DOCUMENT_POSTPROCESSORS)}"
            )
        return value

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
