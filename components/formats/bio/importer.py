"""``bio.import.v1``: a BIO / CoNLL column file per document into a view.

The file has one token a line and a blank line between sentences
(:mod:`casflow.components.formats.bio.parse`; the token and tag columns are
configurable, IOB1 is read as ``conlleval`` reads it). Tokens are aligned to the
view's text by their forms, in order, any whitespace allowed between them (a
space inside a form matches any whitespace character, as ``bio.writer.v1`` writes
a tab or line break inside a token as a space); a token not found where expected
is an error naming the file, line and the text there; text after the file's last
token (a truncated or empty file) is kept with a warning. ``-DOCSTART-`` lines are
skipped, as ``conlleval`` skips them. Mentions become annotations of ``type`` with
``value`` the tag's class.
With ``tokens: true`` (default) the file's sentences and tokens are added too.
"""

from __future__ import annotations

from collections.abc import Sequence

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.bio.parse import BioSentence, parse_bio
from casflow.components.formats.cas_builders import (
    MentionSpec,
    Span,
    TokenSpec,
    add_mentions,
    add_sentences,
    resolve_mention_type,
)
from casflow.components.formats.common import FormatError, form_at
from casflow.components.formats.document_files import (
    FileImport,
    FileImportConfig,
    ImportFileMalformed,
    ImportFormatError,
    warn_uncovered_text,
)
from casflow.typesystem import NAMED_ENTITY, SENTENCE, TOKEN


def align_tokens(sentences: Sequence[BioSentence], text: str, where: str) -> list[list[Span]]:
    """Character spans of the tokens in ``text``, found in order after optional whitespace
    (a space in a token matching any whitespace character: :func:`form_at`)."""
    position = 0
    length = len(text)
    aligned: list[list[Span]] = []
    for sentence in sentences:
        spans = []
        for token in sentence.tokens:
            while position < length and text[position].isspace():
                position += 1
            if not token.text or not form_at(text, token.text, position):
                found = text[position : position + max(len(token.text), 20)]
                raise ImportFormatError(
                    f"{where} line {token.line}: token {token.text!r} not found at offset "
                    f"{position} of the text, which has {found!r} there"
                )
            spans.append((position, position + len(token.text)))
            position += len(token.text)
        aligned.append(spans)
    return aligned


class BioImportConfig(FileImportConfig):
    type: str = Field(NAMED_ENTITY, description="Mention type, full or short name.")
    token_column: int = Field(0, description="Column of the token (0 = first).")
    tag_column: int = Field(-1, description="Column of the BIO tag (-1 = last).")
    separator: str | None = Field("\t", description="Column separator (none: any whitespace).")
    tokens: bool = Field(True, description="Also add the file's sentences and tokens.")

    @field_validator("type")
    @classmethod
    def _mention_type(cls, name: str) -> str:
        return resolve_mention_type(name)


class BioImport(FileImport[BioImportConfig]):
    """BIO-tagged tokens as mentions (and tokens) over the view's text."""

    name = "bio.import.v1"
    description = "Import a BIO/CoNLL token-tag file per document (e.g. NER output) into a view."

    @classmethod
    def requirements(cls, config: BioImportConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        produces = [getattr(config, "type", NAMED_ENTITY)]
        if getattr(config, "tokens", True):
            produces += [SENTENCE, TOKEN]
        return (), tuple(produces)

    def process(self, view: cassis.Cas) -> None:
        doc_id, path, content = self.read_document_file(view)
        if path is None or content is None:
            return
        where = f"document {doc_id}: {path}"
        try:
            document = parse_bio(
                content,
                str(path),
                token_column=self.config.token_column,
                tag_column=self.config.tag_column,
                separator=self.config.separator,
            )
        except FormatError as exc:
            raise ImportFileMalformed(f"document {doc_id}: {exc}") from exc
        text = view.sofa_string or ""
        spans = align_tokens(document.sentences, text, where)
        warn_uncovered_text(
            text, max((end for s in spans for _, end in s), default=0), path, "token"
        )
        if self.config.tokens:
            add_sentences(view, [[TokenSpec(b, e) for b, e in s] for s in spans])
        mentions = []
        for sentence, token_spans in zip(document.sentences, spans, strict=True):
            for mention in sentence.mentions:
                assert mention.tokens is not None  # parse_bio sets the token range
                first, last = mention.tokens
                mentions.append(
                    MentionSpec(token_spans[first][0], token_spans[last - 1][1], mention.label)
                )
        add_mentions(view, self.config.type, mentions)
