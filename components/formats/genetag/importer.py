"""``genetag.import.v1``: GENETAG mention lines (system output) into a view.

Adds the lines of one file in GENETAG's token-index format (``Gold.format``,
``Test.format``: ``@@ID|first last|text``, first and last 0-based token indices,
inclusive) to a view of documents whose id is the sentence id, as
``genetag.reader.v1`` reads them. The tokens are those of GENETAG's fixed
tokenization, which is how that reader builds the text: tokens joined by single
spaces; the importer cuts the view's text at single spaces to find them. Lines
of sentences that are not documents of the run are ignored.

A line whose text differs from its tokens (case aside: GENETAG's scorer
lowercases) fails the document by default (the file is then of another format
or of other sentences, e.g. BioCreative II character offsets); ``on_mismatch:
warn`` keeps the token indices instead. The
twin of ``genetag.writer.v1``: what it writes, this reads back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from casflow.components.formats.cas_builders import LinkedMention
from casflow.components.formats.genetag import parse as genetag
from casflow.components.formats.mention_lines import MentionLinesConfig, MentionLinesImport

__all__ = ["GenetagImport", "GenetagImportConfig"]


class GenetagImportConfig(MentionLinesConfig):
    path: str = Field(
        description="Mention lines '@@ID|first last|text' for all documents (GENETAG "
        "Gold.format / Test.format). Relative: working directory, then the workflow's folder."
    )
    alternatives: str | None = Field(
        None, description="Correct.Data-style lines attached to the overlapping mentions."
    )


class GenetagImport(MentionLinesImport[GenetagImportConfig]):
    """GENETAG token-index mention lines of the document's sentence id into the step's view."""

    name = "genetag.import.v1"
    description = "Import GENETAG token-index mention lines (e.g. Test.format output) into a view."
    mismatch_hint = (
        "; the file does not fit these sentences: check that it is in GENETAG's token-index "
        "format (BioCreative II character offsets need bc2.import.v1) and belongs to this "
        "corpus, or set on_mismatch: warn to keep the token indices"
    )
    read_hint = "; genetag.import.v1 reads '@@ID|first last|text' lines"

    def read_lines(self, path: Path) -> list[Any]:
        return list(genetag.read_mentions(path, strict=True))

    def locate(self, doc_id: str, text: str, lines: Sequence[Any]) -> list[Any]:
        # GENETAG's scorer lowercases, so a line's text is compared case-blind.
        return genetag.locate_mentions(
            [genetag.sentence_from_text(doc_id, text)],
            lines,
            on_mismatch=self.config.on_mismatch,
            ignore_case=True,
        )

    def link_alternatives(
        self, mentions: list[Any], alternatives: list[Any]
    ) -> Sequence[LinkedMention]:
        return genetag.link_alternatives(mentions, alternatives)
