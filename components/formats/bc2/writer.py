"""``bc2.writer.v1``: BioCreative II mention lines (GENE.eval format) for a run.

Each document is a sentence whose id is the document id (as ``bc2gm.reader.v1``
reads them). A writer writes per document, so every document's lines go to
``<folder>/documents/<doc>.eval`` (written even when empty, so a resumed run
knows the document is done), and ``finish()``, run once at the end, combines all
of them into ``<folder>/<file>`` sorted by (sentence id, start, end), the order
of the official ``GENE.eval``. The combined file holds every ``documents/*.eval``
in the folder, so a resumed run's earlier documents are included.

Lines: ``SENTENCE_ID|start end|text`` with start and end counting non-whitespace
characters (end inclusive) and the text the mention's covered text, line breaks
in it as spaces (``bc2.import.v1`` compares texts without their whitespace). A
discontinuous mention is written as its covering span. A document whose id holds
whitespace or ``|`` fails, since its lines could not be read back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.bc2 import parse as bc2
from casflow.components.formats.cas_builders import resolve_mention_type
from casflow.components.formats.common import one_line
from casflow.components.formats.view_writer import (
    DocumentIdError,
    ViewContentError,
    ViewWriter,
    ViewWriterConfig,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.files import (
    atomic_write_text,
    atomic_writer,
    doc_id_of_file_stem,
    safe_file_stem,
)
from casflow.typesystem import GENE_MENTION

DOCUMENT_FOLDER = "documents"
DOCUMENT_SUFFIX = ".eval"


class Bc2WriterConfig(ViewWriterConfig):
    folder: str = Field("bc2", description="Sub-folder of the run's output folder.")
    type: str = Field(GENE_MENTION, description="Mentions to write (type and its subtypes).")
    file: str = Field("GENE.eval", description="Name of the combined file in the folder.")

    @field_validator("type")
    @classmethod
    def _mention_type(cls, name: str) -> str:
        return resolve_mention_type(name)


class Bc2Writer(ViewWriter[Bc2WriterConfig]):
    """GENE.eval-style lines, per document and combined (see the module docstring)."""

    name = "bc2.writer.v1"
    description = "BioCreative II GENE.eval mention lines (one combined, sorted file per run)."
    extension = DOCUMENT_SUFFIX

    def __init__(self, config: Bc2WriterConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self.documents = self.folder / DOCUMENT_FOLDER

    def output_paths(self, doc_id: str) -> list[Path]:
        return [self.documents / f"{safe_file_stem(doc_id)}{DOCUMENT_SUFFIX}"]

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        if not bc2.SENTENCE_ID.fullmatch(doc_id):
            # Checked here: a line written with it could not be read back by finish().
            raise DocumentIdError(
                f"document {doc_id!r}: BioCreative II sentence ids cannot contain whitespace "
                "or '|', so the id cannot be written in GENE.eval lines"
            )
        view = self.source_view(cas, doc_id)
        sentence = bc2.Bc2Sentence(doc_id, view.sofa_string or "")
        lines = []
        for mention in view.select(self.config.type):
            try:
                # A line break would end the line: finish() could not read the file back.
                covered = one_line(sentence.text[mention.begin : mention.end])
                lines.append(bc2.mention_from_span(sentence, mention.begin, mention.end, covered))
            except ValueError as exc:
                raise ViewContentError(f"document {doc_id}: {exc}") from exc
        (path,) = self.output_paths(doc_id)
        atomic_write_text(path, bc2.format_mentions(lines))
        return [path]

    def finish(self) -> list[Path]:
        # Document by document in id order, which is GENE.eval's (each document is its
        # sentence): the run's mentions are never all in memory (they were, 40 MB at the
        # end of a run over 2,000 documents of 3-8 KB).
        target = self.folder / self.config.file
        with atomic_writer(target) as combined:
            for _, name in sorted(self._documents_by_id()):
                mentions = bc2.read_mentions(self.documents / name)
                combined.write(bc2.format_mentions(mentions, sort=True).encode("utf-8"))
        return [target]

    def _documents_by_id(self) -> Iterator[tuple[str, str]]:
        """``(sentence id, file name)`` of each document's file."""
        for path in self.documents.glob(f"*{DOCUMENT_SUFFIX}"):
            doc_id = doc_id_of_file_stem(path.name[: -len(DOCUMENT_SUFFIX)])
            if doc_id is None:  # an id shortened in its file name: its lines hold it
                first = next(iter(bc2.read_mentions(path)), None)
                if first is None:
                    continue  # no mention: nothing to combine
                doc_id = first.sentence_id
            yield doc_id, path.name
