"""``genetag.writer.v1``: GENETAG mention lines (token-index format) for a run.

The twin of ``genetag.import.v1``, and what GENETAG's ``alt_eval.perl`` reads as
its test file (``Test.format``). Each document is a sentence whose id is the
document id and whose text is GENETAG's tokens joined by single spaces (as
``genetag.reader.v1`` reads them). Every document's lines go to
``<folder>/documents/<doc>.format`` (written even when empty, so a resumed run
knows the document is done), and ``finish()`` combines them into
``<folder>/<file>`` sorted by (sentence id, first, last).

Lines: ``@@ID|first last|text`` with the 0-based indices of the mention's first
and last token and the text its tokens joined by single spaces. A document whose
id does not start with ``@@`` or holds whitespace or ``|`` fails, since its lines
could not be read back. A mention must
start and end on token boundaries (whitespace at its edges is trimmed); one that
cuts a token fails the document unless ``partial_tokens: expand``, which widens
it to the tokens it touches. A discontinuous mention is written as its covering
span. A mention whose tokens hold a line break fails the document (GENETAG lines
cannot hold one; the text is then not GENETAG's tokens).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.cas_builders import resolve_mention_type
from casflow.components.formats.genetag import parse as genetag
from casflow.components.formats.view_writer import (
    DocumentIdError,
    ViewContentError,
    ViewWriter,
    ViewWriterConfig,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.files import atomic_write_text, safe_file_stem
from casflow.typesystem import GENE_MENTION

DOCUMENT_FOLDER = "documents"
DOCUMENT_SUFFIX = ".format"


class GenetagWriterConfig(ViewWriterConfig):
    folder: str = Field("genetag", description="Sub-folder of the run's output folder.")
    type: str = Field(GENE_MENTION, description="Mentions to write (type and its subtypes).")
    file: str = Field("Test.format", description="Name of the combined file in the folder.")
    partial_tokens: Literal["raise", "expand"] = Field(
        "raise",
        description="A mention that starts or ends inside a token: fail the document, or "
        "widen it to the whole tokens it touches.",
    )

    @field_validator("type")
    @classmethod
    def _mention_type(cls, name: str) -> str:
        return resolve_mention_type(name)


def token_range(
    sentence: genetag.GenetagSentence, begin: int, end: int, expand: bool
) -> tuple[int, int]:
    """Character span -> (first, last) token index; ValueError when it cuts a token."""
    text = sentence.text
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    touched = [i for i, t in enumerate(sentence.tokens) if t.begin < end and begin < t.end]
    if not touched:
        raise ValueError(f"sentence {sentence.id}: span {begin}-{end} covers no token")
    first, last = touched[0], touched[-1]
    exact = sentence.tokens[first].begin == begin and sentence.tokens[last].end == end
    if not exact and not expand:
        raise ValueError(
            f"sentence {sentence.id}: mention {text[begin:end]!r} ({begin}-{end}) cuts the "
            f"token(s) {text[sentence.tokens[first].begin : sentence.tokens[last].end]!r}; "
            "GENETAG mentions are whole tokens (partial_tokens: expand widens such mentions)"
        )
    return first, last


class GenetagWriter(ViewWriter[GenetagWriterConfig]):
    """GENETAG token-index lines, per document and combined (see the module docstring)."""

    name = "genetag.writer.v1"
    description = "GENETAG token-index mention lines (Test.format; one combined file per run)."
    extension = DOCUMENT_SUFFIX

    def __init__(self, config: GenetagWriterConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self.documents = self.folder / DOCUMENT_FOLDER

    def output_paths(self, doc_id: str) -> list[Path]:
        return [self.documents / f"{safe_file_stem(doc_id)}{DOCUMENT_SUFFIX}"]

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        if not genetag.SENTENCE_ID.fullmatch(doc_id):
            # Checked here: a line written with it could not be read back by finish().
            raise DocumentIdError(
                f"document {doc_id!r}: GENETAG sentence ids start with '@@' and cannot "
                "contain whitespace or '|', so the id cannot be written in Test.format lines"
            )
        view = self.source_view(cas, doc_id)
        lines = []
        try:
            sentence = genetag.sentence_from_text(doc_id, view.sofa_string or "")
            for mention in view.select(self.config.type):
                first, last = token_range(
                    sentence, mention.begin, mention.end, self.config.partial_tokens == "expand"
                )
                text = " ".join(t.text for t in sentence.tokens[first : last + 1])
                if "\n" in text or "\r" in text:
                    # It would end the line (\r too, read with universal newlines):
                    # finish() could not read the file back.
                    raise ValueError(
                        f"mention {text!r} ({mention.begin}-{mention.end}) holds a line "
                        "break, which a GENETAG line cannot; the text is not GENETAG tokens "
                        "joined by single spaces (read the sentences with genetag.reader.v1)"
                    )
                lines.append(genetag.GenetagMention(doc_id, first, last, text))
        except ValueError as exc:
            raise ViewContentError(f"document {doc_id}: {exc}") from exc
        (path,) = self.output_paths(doc_id)
        atomic_write_text(path, genetag.format_mentions(lines, sort=True))
        return [path]

    def finish(self) -> list[Path]:
        mentions: list[genetag.GenetagMention] = []
        for path in sorted(self.documents.glob(f"*{DOCUMENT_SUFFIX}")):
            mentions.extend(genetag.read_mentions(path, strict=True))
        target = self.folder / self.config.file
        atomic_write_text(target, genetag.format_mentions(mentions, sort=True))
        return [target]
