"""``sentences.syntok.v1`` and ``tokens.syntok.v1``: syntok's rules, no model.

syntok's tokenizer reports each token's offset; it leaves a hyphen or
underscore inside a word out of every token (``K-12`` -> ``K`` ``12``, the
hyphen kept as "spacing"), which ``keep_dropped_characters`` turns back into a
token, and it can rewrite ``n't`` as ``not``, which is switched off here so
every token reads as the text. Sentences are syntok's ``segment`` over those
tokens, from the first token's begin to the last one's end; syntok's own
paragraph split (blank lines) is casflow's block split.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field

from casflow.components.segmenters import (
    Piece,
    SegmenterConfig,
    SentenceSplitter,
    Span,
    Tokenizer,
    TokenizerConfig,
    import_library,
)
from casflow.pipeline.component import RunContext

LIBRARY = ("syntok", "syntok")


def _tokenizer(emit_hyphen_or_underscore_sep: bool) -> Any:
    tokenizer = import_library("syntok.tokenizer", "syntok")
    return tokenizer.Tokenizer(
        emit_hyphen_or_underscore_sep=emit_hyphen_or_underscore_sep,
        replace_not_contraction=False,
    )


class SyntokSentencesConfig(SegmenterConfig):
    bracket_skip_len: int | None = Field(
        None,
        description="syntok's bracket_skip_len: longest bracketed text in which no sentence "
        "ends (default: syntok's).",
    )


class SyntokSentences(SentenceSplitter[SyntokSentencesConfig]):
    name = "sentences.syntok.v1"
    description = "syntok rule-based sentence segmenter (no model), per structure block."
    library = LIBRARY

    def __init__(self, config: SyntokSentencesConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.tokenizer = _tokenizer(False)
        self.segmenter = import_library("syntok.segmenter", "syntok")

    def split(self, text: str) -> Iterable[Span]:
        tokens = [t for t in self.tokenizer.tokenize(text) if t.value]
        kwargs = {}
        if self.config.bracket_skip_len is not None:
            kwargs["bracket_skip_len"] = self.config.bracket_skip_len
        for sentence in self.segmenter.segment(iter(tokens), **kwargs):
            words = [t for t in sentence if t.value]
            if words:
                yield words[0].offset, words[-1].offset + len(words[-1].value)


class SyntokTokensConfig(TokenizerConfig):
    emit_hyphen_or_underscore_sep: bool = Field(
        False,
        description="syntok's option: a hyphen or underscore inside a word is a token (else "
        "syntok drops it and keep_dropped_characters makes it one; the same tokens).",
    )


class SyntokTokens(Tokenizer[SyntokTokensConfig]):
    name = "tokens.syntok.v1"
    description = "syntok rule-based tokenizer (no model); exact offsets."
    library = LIBRARY

    def __init__(self, config: SyntokTokensConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.tokenizer = _tokenizer(config.emit_hyphen_or_underscore_sep)

    def tokenize(self, text: str) -> Iterable[Piece]:
        return ((t.value, t.offset) for t in self.tokenizer.tokenize(text) if t.value)
