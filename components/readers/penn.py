"""``penn.import.v1``: a file of bracketed trees (one per line) per document into a view.

The leaves are aligned to the view's text and the trees turned into annotations
exactly as the CRAFT reader does with its treebank (the alignment and the CAS
building are :mod:`casflow.components.readers.craft`'s): PTB escapes are undone
(``-LRB-`` matches ``(``, ``[`` or ``{``; ````` and ``''`` match straight or curly
quotes), ``-NONE-`` leaves become zero-width ``EmptyCategory`` annotations, the
outer bracket a DKPro ``ROOT`` and each labeled bracket a ``TreebankConstituent``
(category, function tags, indices, ``children``/``parent`` links), every token a
``Token`` whose ``POS.PosValue`` is its preterminal label. Per ``layers``:
``sentences`` (one per tree, ``id`` 0, 1, ... as CRAFT's CoNLL-U numbers them),
``tokens``, ``pos``, ``constituents`` (with a ``PennTree`` holding the line).

The trees must cover the text: a leaf not found in order, or text left after the
last tree, is an error naming the file, tree and leaf.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import cassis
from pydantic import Field

from casflow.components.readers.craft import (
    CraftDataError,
    _build_constituents,
    _build_pos,
    _build_tokens,
    _Types,
    read_aligned_trees,
)
from casflow.components.readers.document_files import (
    FileImport,
    FileImportConfig,
    ImportFormatError,
)
from casflow.typesystem import (
    CONSTITUENT,
    CONSTITUENT_ROOT,
    EMPTY_CATEGORY,
    PENN_TREE,
    POS,
    SENTENCE,
    TOKEN,
    TREEBANK_CONSTITUENT,
)

PennLayer = Literal["sentences", "tokens", "pos", "constituents"]
ALL_PENN_LAYERS: tuple[PennLayer, ...] = ("sentences", "tokens", "pos", "constituents")


class PennImportConfig(FileImportConfig):
    layers: list[PennLayer] = Field(
        default_factory=lambda: list(ALL_PENN_LAYERS),
        description="What to import; pos and constituents bring the tokens with them.",
    )


class PennImport(FileImport):
    """Sentences, tokens, POS and constituents of one-tree-per-line Penn files."""

    name = "penn.import.v1"
    description = "Import Penn Treebank bracketed trees per document (e.g. parser output)."
    Config = PennImportConfig

    config: PennImportConfig

    _PRODUCES: ClassVar[dict[str, tuple[str, ...]]] = {
        "sentences": (SENTENCE,),
        "tokens": (TOKEN,),
        "pos": (POS, f"{POS}:PosValue", f"{TOKEN}:pos"),
        "constituents": (
            CONSTITUENT,
            CONSTITUENT_ROOT,
            TREEBANK_CONSTITUENT,
            EMPTY_CATEGORY,
            PENN_TREE,
            f"{TOKEN}:parent",
        ),
    }

    @classmethod
    def layers_of(cls, config: PennImportConfig) -> set[str]:
        layers = set(getattr(config, "layers", ALL_PENN_LAYERS))
        if layers & {"pos", "constituents"}:
            layers.add("tokens")
        return layers

    @classmethod
    def requirements(cls, config: PennImportConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:  # type: ignore[override]
        layers = cls.layers_of(config)
        return (), tuple(
            name for layer in ALL_PENN_LAYERS if layer in layers for name in cls._PRODUCES[layer]
        )

    def process(self, view: cassis.Cas) -> None:
        doc_id, path = self.document_path(view)
        if path is None:
            return
        text = view.sofa_string or ""
        try:
            trees = read_aligned_trees(path, text, doc_id)
        except CraftDataError as exc:
            raise ImportFormatError(f"document {doc_id}: {exc}") from exc
        layers = self.layers_of(self.config)
        types = _Types.of(view.typesystem)
        out: list[Any] = []
        if "sentences" in layers:
            for aligned in trees:
                begin, end = aligned.span
                out.append(types.sentence(begin=begin, end=end, id=str(aligned.number - 1)))
        if "tokens" in layers:
            tokens = _build_tokens(trees, types, out)
            if "pos" in layers:
                _build_pos(trees, tokens, types, out)
            if "constituents" in layers:
                for aligned, sentence_tokens in zip(trees, tokens, strict=True):
                    _build_constituents(aligned, sentence_tokens, types, out)
        view.add_all(out)
