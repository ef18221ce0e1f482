"""``penn.writer.v1``: bracketed trees, one line per tree, a file per document.

The trees are rebuilt from the view's constituents as the evaluators read them
(:func:`casflow.components.evaluators.adapters.constituent_trees`: one tree per
DKPro ``ROOT``, labels from ``originalLabel`` when a ``TreebankConstituent`` has
one, preterminals from the tokens' ``POS.PosValue``, ``-NONE-`` leaves from
``EmptyCategory``) and written in the CRAFT one-line style by
:func:`casflow.components.formats.penn.parse.format_tree`: ``( (S (NP-SBJ (NN x)) ...) )``.

Words are the tokens' text with ``escape``:

- ``craft`` (default, the CRAFT treebank's style): ``(`` and ``)`` become ``-LRB-`` /
  ``-RRB-``, other brackets and curly quotes stay as in the text;
- ``ptb``: every bracket becomes its escape (``-LSB-``, ``-LCB-``, ...).

In both, brackets inside a word are escaped as well (``Ca(2+)`` is ``Ca-LRB-2+-RRB-``
in both modes, ``a[1]`` is ``a-LSB-1-RSB-`` in ``ptb``): a raw round bracket would
make the tree unreadable. ``penn.import.v1`` undoes such escapes when it aligns the
words to the text.

In both, a straight double quote ``"`` is written ````` or ``''`` as its POS tag
says (alternating when the tag is neither), and ``(`` or ``)`` in a tag as ``-LRB-`` /
``-RRB-``.

ASCII whitespace inside a word would split it, so it is written as ``_``. Read
with ``penn.import.v1`` (or the CRAFT reader) and written with ``craft``, the 67
CRAFT treebank files come back identical except for trailing whitespace and the
outer Unicode spaces of 9 words (``XpdTTD\\u200a``), which the alignment leaves
out of the tokens.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import cassis
from pydantic import Field

from casflow.components.evaluators.adapters import CasInputError, constituent_trees
from casflow.components.formats.penn.parse import (
    ALL_BRACKETS,
    CLOSE_QUOTE,
    OPEN_QUOTE,
    ROUND_BRACKETS,
    Tree,
    escape_brackets,
    escape_tokens,
    format_tree,
)
from casflow.components.formats.view_writer import (
    ViewContentError,
    ViewWriter,
    ViewWriterConfig,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.files import atomic_write_text

EMPTY_TAG = "-NONE-"
_ASCII_SPACE = re.compile(r"[ \t\n\r\f\v]+")


class PennWriterConfig(ViewWriterConfig):
    folder: str = Field("penn", description="Sub-folder of the run's output folder.")
    escape: Literal["craft", "ptb"] = Field(
        "craft",
        description="craft: only ( ) as -LRB- -RRB- (CRAFT style); ptb: every bracket escaped.",
    )
    extension: str = Field(".tree", description="File name extension.")


def escape_words(tree: Tree, mode: str) -> None:
    """Escape the words (and bracket tags) of ``tree`` in place."""
    leaves = [leaf for leaf in tree.preterminals() if leaf.label != EMPTY_TAG]
    words = [_ASCII_SPACE.sub("_", leaf.word or "") or "_" for leaf in leaves]
    # A straight double quote's tag (`` or '') says which quote it is; alternate otherwise.
    alternated = escape_tokens(words)
    for leaf, word, quote in zip(leaves, words, alternated, strict=True):
        if word == '"':
            leaf.word = leaf.label if leaf.label in (OPEN_QUOTE, CLOSE_QUOTE) else quote
        else:
            # Inside a word too: a raw round bracket would end the tree's own bracket.
            leaf.word = escape_brackets(word, ALL_BRACKETS if mode == "ptb" else ROUND_BRACKETS)
        leaf.label = escape_brackets(leaf.label, ROUND_BRACKETS)


class PennWriter(ViewWriter[PennWriterConfig]):
    """Bracketed trees per document (see the module docstring)."""

    name = "penn.writer.v1"
    description = "Penn Treebank bracketed trees, one per line (CRAFT style), from constituents."

    def __init__(self, config: PennWriterConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self.extension = config.extension

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        view = self.source_view(cas, doc_id)
        try:
            trees = constituent_trees(view)
        except CasInputError as exc:
            raise ViewContentError(str(exc)) from exc
        if not trees and (view.sofa_string or "").strip():
            raise ViewContentError(
                f"document {doc_id}: view {self.config.view!r} has no constituents to write"
            )
        lines = []
        for _, tree in trees:
            escape_words(tree, self.config.escape)
            lines.append(format_tree(tree) + "\n")
        (path,) = self.output_paths(doc_id)
        atomic_write_text(path, "".join(lines))
        return [path]
