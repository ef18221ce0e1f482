"""``tokens.fine.v1``: the fine tokenization of casflow's mention taggers, as Tokens.

A run of letters, a run of digits, or one other non-space character is a token
(:func:`casflow.components.crfsuite.tokenize.tokenize`, BANNER's rule): gene and anatomy
mention boundaries fall inside whitespace-delimited words (``IL-2-induced``,
``CD4+``), and every such boundary is a token boundary here. The CRF taggers tokenize
so internally; a tagger that reads the view's tokens (a Stanza NER model trained by
``train.stanza.ner.v1``) needs them in the view.
"""

from __future__ import annotations

from collections.abc import Iterable

from casflow.components.crfsuite.tokenize import tokenize
from casflow.components.segmenters import Piece, Tokenizer, TokenizerConfig


class FineTokensConfig(TokenizerConfig):
    pass


class FineTokens(Tokenizer[FineTokensConfig]):
    name = "tokens.fine.v1"
    description = (
        "Fine rule tokenization of casflow's mention taggers (runs of letters, runs of "
        "digits, each other character alone); exact offsets, no model."
    )

    def tokenize(self, text: str) -> Iterable[Piece]:
        return ((text[b:e], b) for b, e in tokenize(text))
