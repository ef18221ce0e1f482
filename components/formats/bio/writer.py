"""``bio.writer.v1``: token-per-line BIO files (CoNLL style), one per document.

For each ``Sentence`` (the whole view when there is none) its ``Token``
annotations, one a line, with the ``columns`` asked for (default ``token`` and
``tag``, tab-separated, as AnatEM's ``conll`` files), and a blank line after the
sentence. Tags are ``B-``/``I-`` + the mention's class (``value``, else the short
type name) or ``O``, from the mentions of ``type`` (and its subtypes). A mention
must start and end on token boundaries inside one sentence, else the document
fails naming the mention; overlapping mentions fail too unless ``overlap:
longest`` (the longer one is kept). A discontinuous mention is written as its
covering span (BIO cannot say otherwise); ``pos`` and ``lemma`` columns hold
``_`` where a token has none. A tab or line break inside a token is written as a
space and whitespace at its edges is left out (``bio.import.v1`` matches such a
space to the whitespace in the text); a token of whitespace only fails the
document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import cassis
from pydantic import Field, field_validator

from casflow.components.formats.bio.parse import Mention, format_bio_rows, spans_to_bio
from casflow.components.formats.cas_builders import resolve_mention_type
from casflow.components.formats.common import column_field, one_line, token_field
from casflow.components.formats.view_writer import (
    TokenFeatures,
    ViewContentError,
    ViewWriter,
    ViewWriterConfig,
    mention_label,
    sentences_with_tokens,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.files import atomic_write_text
from casflow.typesystem import NAMED_ENTITY

Column = Literal["token", "pos", "lemma", "tag"]


class BioWriterConfig(ViewWriterConfig):
    folder: str = Field("bio", description="Sub-folder of the run's output folder.")
    type: str = Field(NAMED_ENTITY, description="Mentions to write (type and its subtypes).")
    columns: list[Column] = Field(
        default_factory=lambda: list[Column](("token", "tag")),
        description="Columns of each line: token, pos (PosValue), lemma, tag.",
    )
    extension: str = Field(".conll", description="File name extension.")
    overlap: Literal["error", "longest"] = Field(
        "error", description="Overlapping mentions: fail, or keep the longest."
    )

    @field_validator("type")
    @classmethod
    def _mention_type(cls, name: str) -> str:
        return resolve_mention_type(name)

    @field_validator("columns")
    @classmethod
    def _has_tag(cls, columns: list[str]) -> list[str]:
        if "tag" not in columns or "token" not in columns:
            raise ValueError(f"columns must include token and tag, got {columns}")
        return columns


class BioWriter(ViewWriter[BioWriterConfig]):
    """BIO columns per token (see the module docstring)."""

    name = "bio.writer.v1"
    description = "Token-per-line BIO/CoNLL files (token and tag columns, AnatEM style)."

    def __init__(self, config: BioWriterConfig, context: RunContext) -> None:
        super().__init__(config, context)
        self.extension = config.extension

    def write(self, cas: cassis.Cas, doc_id: str) -> list[Path]:
        view = self.source_view(cas, doc_id)
        features = TokenFeatures(view)
        mentions = sorted(
            (Mention(m.begin, m.end, mention_label(m)) for m in view.select(self.config.type)),
            key=lambda m: (m.begin, m.end),
        )
        rendered = []
        remaining = mentions
        any_token = False
        for sentence, tokens in sentences_with_tokens(view, doc_id):
            if not tokens:
                continue
            any_token = True
            end = tokens[-1].end
            inside = [m for m in remaining if m.begin < end]
            remaining = [m for m in remaining if m.begin >= end]
            try:
                tags = spans_to_bio(tokens, inside, overlap=self.config.overlap)
            except ValueError as exc:
                where = f"sentence at {sentence.begin}" if sentence is not None else "the text"
                raise ViewContentError(
                    f"document {doc_id}, {where}: {exc}; the mention may cross a sentence or "
                    "token boundary"
                ) from exc
            rendered.append(
                [
                    self._row(token, tag, features, doc_id)
                    for token, tag in zip(tokens, tags, strict=True)
                ]
            )
        if remaining:
            first = remaining[0]
            if not any_token:  # "after the last token" of a view with none misled
                raise ViewContentError(
                    f"document {doc_id}: the view has {len(remaining)} mention(s) (the first "
                    f"{first.begin}-{first.end} {first.label}) but no tokens in a sentence to "
                    "write them on; tokenize the view before this writer"
                )
            raise ViewContentError(
                f"document {doc_id}: mention {first.begin}-{first.end} {first.label} lies after "
                "the last token"
            )
        (path,) = self.output_paths(doc_id)
        atomic_write_text(path, format_bio_rows(rendered))
        return [path]

    def _row(self, token, tag: str, features: TokenFeatures, doc_id: str) -> list[str]:
        row = []
        for column in self.config.columns:
            if column == "token":
                form = token_field(token.get_covered_text())
                if not form:
                    # An empty field would be read as the blank line that ends a sentence.
                    raise ViewContentError(
                        f"document {doc_id}: token {token.get_covered_text()!r} at "
                        f"({token.begin}, {token.end}) is only whitespace, which a BIO line "
                        "cannot hold; fix the tokenizer that made it"
                    )
                row.append(form)
            elif column == "tag":
                row.append(one_line(tag))
            elif column == "pos":
                pos = features.pos(token)
                value = pos.get("PosValue") if pos is not None else None
                row.append(column_field(value))
            else:
                row.append(column_field(features.lemma(token)))
        return row
