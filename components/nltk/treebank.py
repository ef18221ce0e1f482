"""``tokens.nltk.treebank.v1``: NLTK's Penn Treebank word tokenizer (rules only).

The Treebank tokenizer expects one sentence at a time (it splits a period only
at the end of its input), so by default it tokenizes each Sentence of the view
(``use_existing_sentences``); without sentences it gets whole structure blocks.
It rewrites quotes (``"`` -> ``````/``''``) and, optionally, brackets
(``-LRB-``); its tokens are placed on the original text by
:func:`~casflow.components.segmenters.align_tokens`, which knows those forms,
rather than by NLTK's ``span_tokenize`` (which fails on some mixes of quotes).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from casflow.components.segmenters import Piece, Tokenizer, TokenizerConfig, import_library
from casflow.pipeline.component import RunContext


class TreebankTokensConfig(TokenizerConfig):
    use_existing_sentences: bool = Field(
        True,
        description="Tokenize each Sentence of the view (the Treebank rules expect one "
        "sentence at a time); false: each structure block.",
    )


class TreebankTokens(Tokenizer[TreebankTokensConfig]):
    name = "tokens.nltk.treebank.v1"
    description = "NLTK TreebankWordTokenizer (Penn Treebank rules, no data); exact offsets."
    library = ("nltk", "nltk")

    def __init__(self, config: TreebankTokensConfig, context: RunContext | None = None) -> None:
        super().__init__(config, context)
        self.tokenizer = import_library("nltk.tokenize", "nltk").TreebankWordTokenizer()

    def tokenize(self, text: str) -> Iterable[Piece]:
        return [(form, None) for form in self.tokenizer.tokenize(text)]
