"""spaCy's rule-based segmenters as components, no model needed.

- ``sentences.spacy.sentencizer.v1``: spaCy's ``sentencizer`` (sentence-final
  punctuation) over a blank pipeline's tokenizer;
- ``tokens.spacy.english.v1``: the tokenizer of ``spacy.blank(language)``
  (English rules by default);
- ``tokens.scispacy.v1``: scispaCy's ``combined_rule_tokenizer``.

Each gets one structure block at a time (:mod:`casflow.components.segmenters`);
spaCy's whitespace tokens are never tokens, and every token is placed at the
offset spaCy gives it (``token.idx``, in characters), checked against the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

from pydantic import Field

from casflow.components.segmenters import (
    Piece,
    SegmenterConfig,
    SentenceSplitter,
    Span,
    Tokenizer,
    TokenizerConfig,
)
from casflow.components.spacy.cli_stand_in import cli_stand_in
from casflow.components.spacy.loading import TORCH
from casflow.pipeline.component import RunContext

#: A blank pipeline has no torch layer: a worker need not import torch through thinc.
_NO_TORCH = frozenset({TORCH})


class _ModelFree:
    """For components that run a blank pipeline: a worker imports neither torch (through
    thinc) nor spaCy's command line for them."""

    @classmethod
    def modules_not_used(cls, config: Any, context: RunContext) -> frozenset[str]:
        return _NO_TORCH

    @classmethod
    def stand_in_modules(cls, config: Any, context: RunContext) -> Mapping[str, ModuleType]:
        return cli_stand_in()


def _blank(language: str) -> Any:
    import spacy

    nlp = spacy.blank(language)
    nlp.max_length = 10**9  # blocks are tokenized whole; the rule tokenizer needs no memory cap
    return nlp


class SentencizerConfig(SegmenterConfig):
    language: str = Field("en", description="Language of the blank pipeline's tokenizer.")
    punct_chars: list[str] | None = Field(
        None, description="Characters that end a sentence (default: spaCy's list)."
    )


class SpacySentencizer(_ModelFree, SentenceSplitter[SentencizerConfig]):
    name = "sentences.spacy.sentencizer.v1"
    description = "spaCy's rule-based sentencizer (punctuation), per structure block; no model."

    def __init__(self, config: SentencizerConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.nlp = _blank(config.language)
        settings = {"punct_chars": config.punct_chars} if config.punct_chars else {}
        self.nlp.add_pipe("sentencizer", config=settings)

    def split(self, text: str) -> Iterable[Span]:
        return [(s.start_char, s.end_char) for s in self.nlp(text).sents]


class SpacyTokensConfig(TokenizerConfig):
    language: str = Field("en", description="Language whose tokenizer rules spacy.blank loads.")


def _pieces(doc: Any) -> list[Piece]:
    return [(t.text, t.idx) for t in doc if not t.is_space]


class SpacyTokens(_ModelFree, Tokenizer[SpacyTokensConfig]):
    name = "tokens.spacy.english.v1"
    description = "spaCy's rule-based tokenizer of a blank pipeline (English by default)."

    def __init__(self, config: SpacyTokensConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.tokenizer = _blank(config.language).tokenizer

    def tokenize(self, text: str) -> Iterable[Piece]:
        return _pieces(self.tokenizer(text))


class ScispacyTokens(_ModelFree, Tokenizer[TokenizerConfig]):
    name = "tokens.scispacy.v1"
    description = "scispaCy's combined_rule_tokenizer (biomedical rules; no model)."

    def __init__(self, config: TokenizerConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        from scispacy.custom_tokenizer import combined_rule_tokenizer

        self.tokenizer = combined_rule_tokenizer(_blank("en"))

    def tokenize(self, text: str) -> Iterable[Piece]:
        return _pieces(self.tokenizer(text))
