"""``sentences.blingfire.v1`` and ``tokens.blingfire.v1``: BlingFire's built-in FSMs.

BlingFire returns its sentences and words with character offsets
(``text_to_sentences_and_offsets``, ``text_to_words_with_offsets``); they are
checked against the text by :func:`~casflow.components.segmenters.align_tokens`
(BlingFire works on UTF-8 bytes and maps back to characters itself) and every
structure block goes through it on its own.
"""

from __future__ import annotations

from collections.abc import Iterable

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

LIBRARY = ("blingfire", "blingfire")


class BlingfireSentences(SentenceSplitter[SegmenterConfig]):
    name = "sentences.blingfire.v1"
    description = "BlingFire sentence breaker (built-in FSM, no download), per structure block."
    library = LIBRARY

    def __init__(self, config: SegmenterConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.blingfire = import_library(*LIBRARY)

    def split(self, text: str) -> Iterable[Span]:
        _, offsets = self.blingfire.text_to_sentences_and_offsets(text)
        return [(int(b), int(e)) for b, e in offsets]


class BlingfireTokens(Tokenizer[TokenizerConfig]):
    name = "tokens.blingfire.v1"
    description = "BlingFire word tokenizer (built-in FSM, no download); exact offsets."
    library = LIBRARY

    def __init__(self, config: TokenizerConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.blingfire = import_library(*LIBRARY)

    def tokenize(self, text: str) -> Iterable[Piece]:
        words, offsets = self.blingfire.text_to_words_with_offsets(text)
        forms = words.split()
        if len(forms) != len(offsets):
            # the offsets cannot be paired with the words: place the words by their text
            return [(form, None) for form in forms]
        return [(form, int(b)) for form, (b, _) in zip(forms, offsets, strict=True)]
