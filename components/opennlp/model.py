"""What the OpenNLP component and trainer share, without the CAS: layer names, model
files, how words are written for OpenNLP, and reading its chunk tags and trees.

Words: OpenNLP's formats split at whitespace, so whitespace inside a token (CRAFT has
a few words with hair spaces) is written ``_``; the parser's Penn training trees
cannot hold raw brackets, so they have every bracket in its PTB escape (``-LRB-``,
...), which OpenNLP's tree reader (``Parse.parseParse``) decodes back to the bracket:
the parser learns raw brackets, and gets them raw at run time. A round bracket inside
a word is escaped too (``Ca-LRB-2``), as ``PennTree`` lines write it: OpenNLP decodes
whole-word escapes only, so it learns such a word as written, but a raw one would
break the tree it reads (CRAFT's treebank has none).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from casflow.components.formats.penn.parse import (
    ROUND_BRACKETS,
    Tree,
    escape_brackets,
    escape_token,
    parse_tree,
)
from casflow.components.models import model_path, where_looked

OpenNlpLayer = Literal["sentences", "tokens", "pos", "chunks", "constituents"]
ALL_LAYERS: tuple[OpenNlpLayer, ...] = ("sentences", "tokens", "pos", "chunks", "constituents")
#: The file each layer's model has in a model folder written by ``train.opennlp.v1``.
MODEL_FILES: dict[str, str] = {
    "sentences": "en-sent.bin",
    "tokens": "en-token.bin",
    "pos": "en-pos.bin",
    "chunks": "en-chunker.bin",
    "constituents": "en-parser-chunking.bin",
}
#: What OpenNLP's tools are called, for messages.
TOOL_NAMES = {
    "sentences": "sentence detector",
    "tokens": "tokenizer",
    "pos": "POS tagger",
    "chunks": "chunker",
    "constituents": "parser",
}

_WHITESPACE = re.compile(r"\s")


def word(text: str) -> str:
    """A token as OpenNLP's whitespace-separated formats can hold it."""
    return _WHITESPACE.sub("_", text) or "_"


def parser_words(texts: Sequence[str]) -> list[str]:
    """A sentence's tokens as the parser gets them, at run time (``opennlp.pipeline.v1``)
    and when ``train.opennlp.v1`` scores it: brackets raw. OpenNLP decodes the escapes
    of its training trees (:func:`parser_word`), so its parser has learnt "("; an
    escaped word would be one it never saw."""
    return [word(text) for text in texts]


def parser_word(text: str) -> str:
    """A token as the parser's training trees and the ``PennTree`` lines write it
    (brackets escaped; see the module docstring). A round bracket inside a word is
    escaped too (``Ca(2`` -> ``Ca-LRB-2``): written raw, the tree could not be read back."""
    if text == '"':
        return '"'
    return escape_brackets(escape_token(word(text)), ROUND_BRACKETS)


def resolve_model(
    layer: str, explicit: str | None, folder: str | None, base_dir: Path | None
) -> Path | None:
    """The model file of ``layer``: ``explicit``, else its file in ``folder``; relative
    paths also from the workflow's folder. None when neither is given."""
    given = explicit if explicit is not None else folder
    if given is None:
        return None
    # casflow:craft_opennlp: the models casflow ships, trained on CRAFT train.
    path = model_path(given, base_dir)
    if explicit is None:
        path = path / MODEL_FILES[layer]
    return path


def where_model_looked(
    layer: str, explicit: str | None, folder: str | None, base_dir: Path | None
) -> str:
    """Every place :func:`resolve_model` looked for a layer's missing model (both, for a
    relative path), for messages."""
    given = explicit if explicit is not None else folder
    if given is None:
        return "none (neither model nor the layer's *_model is given)"
    return where_looked(given, base_dir, MODEL_FILES[layer] if explicit is None else None)


def chunk_spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """``(first, last + 1, label)`` token ranges of BIO chunk tags, as OpenNLP reads them:
    an I- tag that does not continue a chunk of its label starts one."""
    chunks: list[tuple[int, int, str]] = []
    start: int | None = None
    label = ""
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, kind = tag.partition("-")
        continues = prefix == "I" and start is not None and kind == label
        if start is not None and not continues:
            chunks.append((start, i, label))
            start = None
        if prefix in ("B", "I") and not continues:
            start, label = i, kind
    return chunks


def chunk_tags(length: int, chunks: Sequence[tuple[int, int, str]]) -> list[str]:
    """BIO tags of ``length`` tokens from ``(first, last + 1, label)`` chunks."""
    tags = ["O"] * length
    for first, end, label in chunks:
        for i in range(first, end):
            tags[i] = ("B-" if i == first else "I-") + label
    return tags


def indexed_tree(bracketed: str, length: int) -> Tree:
    """A parser answer whose leaves are token indices, checked to cover 0..length-1 in order."""
    tree = parse_tree(bracketed)
    leaves = [leaf.word for leaf in tree.preterminals()]
    if leaves != [str(i) for i in range(length)]:
        raise ValueError(
            f"the OpenNLP parser returned a tree over tokens {leaves}, not the {length} given"
        )
    return tree
