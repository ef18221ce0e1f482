"""``bc2.import.v1``: BioCreative II mention lines (system output) into a view.

Adds the mention lines of one file (GENE.eval format, the text after the
offsets optional) to a view of documents whose id is the sentence id, e.g.
after ``bc2gm.reader.v1`` in view ``gold``. Lines of sentences that are not
documents of the run are ignored.

A line whose text differs from the text at its offsets fails the document by
default: the file is then of another format (e.g. GENETAG's token indices,
which ``genetag.import.v1`` reads) or of other sentences, and scoring it would
give a silent near-zero. ``on_mismatch: warn`` keeps such offsets with a
warning instead (the official scorer compares offsets only; the BC2GM training
GENE.eval has four such lines). Lines without text cannot be checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from casflow.components.formats.bc2 import parse as bc2
from casflow.components.formats.cas_builders import LinkedMention
from casflow.components.formats.mention_lines import (
    GENE_VALUE,
    MentionLinesConfig,
    MentionLinesImport,
    OnMismatch,
)

__all__ = ["GENE_VALUE", "Bc2Import", "Bc2ImportConfig", "OnMismatch"]


class Bc2ImportConfig(MentionLinesConfig):
    path: str = Field(
        description="Mention lines 'SENTENCE_ID|start end|text' for all documents (GENE.eval "
        "format; the text is optional). Relative: working directory, then the workflow's folder."
    )
    alternatives: str | None = Field(
        None, description="ALTGENE.eval-style lines attached to the overlapping mentions."
    )


class Bc2Import(MentionLinesImport[Bc2ImportConfig]):
    """BC2 mention lines of the document's sentence id into the step's view."""

    name = "bc2.import.v1"
    description = "Import BioCreative II mention lines (e.g. system output) into a view."
    mismatch_hint = (
        "; the file does not fit these sentences: check that it is in BioCreative II format "
        "(offsets count non-space characters; GENETAG's token indices need genetag.import.v1) "
        "and belongs to this corpus, or set on_mismatch: warn to keep the offsets"
    )

    def read_lines(self, path: Path) -> list[Any]:
        return list(bc2.read_mentions(path))

    def locate(self, doc_id: str, text: str, lines: Sequence[Any]) -> list[Any]:
        return bc2.locate_mentions(
            [bc2.Bc2Sentence(doc_id, text)], lines, on_mismatch=self.config.on_mismatch
        )

    def link_alternatives(
        self, mentions: list[Any], alternatives: list[Any]
    ) -> Sequence[LinkedMention]:
        return bc2.link_alternatives(mentions, alternatives)
