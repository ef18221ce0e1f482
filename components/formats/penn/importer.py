"""``penn.import.v1``: a file of bracketed trees per document into a view.

A tree takes one line (CRAFT's treebank, EVALB's input) or several (the Penn
Treebank's ``.mrg`` files, most parsers' pretty-printed output).

The leaves are aligned to the view's text and the trees turned into annotations
exactly as the CRAFT reader does with its treebank (both use
:mod:`casflow.components.formats.penn.alignment`): PTB escapes are undone
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

from casflow.components.formats.document_files import (
    FileImport,
    FileImportConfig,
    ImportFileMalformed,
    ImportFormatError,
)
from casflow.components.formats.penn.alignment import (
    CONSTITUENT_LAYER,
    TreeAlignmentError,
    TreebankError,
    TreeTypes,
    align_trees,
    build_tree_layers,
)
from casflow.typesystem import POS, SENTENCE, TOKEN

PennLayer = Literal["sentences", "tokens", "pos", "constituents"]
ALL_PENN_LAYERS: tuple[PennLayer, ...] = ("sentences", "tokens", "pos", "constituents")


class PennImportConfig(FileImportConfig):
    layers: list[PennLayer] = Field(
        default_factory=lambda: list(ALL_PENN_LAYERS),
        description="What to import; pos and constituents bring the tokens with them.",
    )


class PennImport(FileImport[PennImportConfig]):
    """Sentences, tokens, POS and constituents of Penn bracketed-tree files."""

    name = "penn.import.v1"
    description = "Import Penn Treebank bracketed trees per document (e.g. parser output)."

    _PRODUCES: ClassVar[dict[str, tuple[str, ...]]] = {
        "sentences": (SENTENCE,),
        "tokens": (TOKEN,),
        "pos": (POS, f"{POS}:PosValue", f"{TOKEN}:pos"),
        "constituents": CONSTITUENT_LAYER,
    }

    @classmethod
    def layers_of(cls, config: PennImportConfig) -> set[str]:
        layers = set(getattr(config, "layers", ALL_PENN_LAYERS))
        if layers & {"pos", "constituents"}:
            layers.add("tokens")
        return layers

    @classmethod
    def requirements(cls, config: PennImportConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        layers = cls.layers_of(config)
        return (), tuple(
            name for layer in ALL_PENN_LAYERS if layer in layers for name in cls._PRODUCES[layer]
        )

    def process(self, view: cassis.Cas) -> None:
        # read as every importer reads its file: the configured encoding, no BOM
        doc_id, path, content = self.read_document_file(view)
        if path is None:
            return
        text = view.sofa_string or ""
        try:
            trees = align_trees(path, text, "the document's text", content=content)
        except TreeAlignmentError as exc:
            raise ImportFormatError(f"document {doc_id}: {exc}") from exc
        except TreebankError as exc:  # a tree's bracketing, whatever the text
            raise ImportFileMalformed(f"document {doc_id}: {exc}") from exc
        out: list[Any] = []
        build_tree_layers(trees, self.layers_of(self.config), TreeTypes.of(view.typesystem), out)
        view.add_all(out)
