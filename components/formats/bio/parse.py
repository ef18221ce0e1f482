"""Generic BIO / CoNLL column format: one token a line, blank line between sentences.

Columns are separated by a tab (or by any whitespace with ``separator=None``);
which column holds the token and which the tag is configurable (default: first
and last). Tags are ``O`` or ``B-``/``I-`` plus a class. Reading is tolerant of
IOB1 the way ``conlleval`` is: an ``I-X`` after ``O`` or after a tag of another
class starts a mention; and as ``conlleval`` does, a ``-DOCSTART-`` line (CoNLL-2003
and the NER tools trained on it write one before each document) ends the sentence
and is not a token.

The format has no character offsets, so a text is rebuilt: tokens joined by
``token_separator`` (one space) and sentences by ``sentence_separator`` (newline).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from casflow.components.formats.common import (
    STRING_SOURCE,
    FormatError,
    FormatWarning,
    read_text_file,
    split_lines,
    write_text_file,
)

__all__ = [
    "FormatError",
    "FormatWarning",
    "BioDocument",
    "BioSentence",
    "BioToken",
    "Mention",
    "bio_to_spans",
    "format_bio",
    "format_bio_rows",
    "parse_bio",
    "read_bio",
    "spans_to_bio",
    "split_tag",
    "write_bio",
]

OUTSIDE = "O"
#: The first field of a CoNLL-2003 document-boundary line.
DOCSTART = "-DOCSTART-"


class Span(Protocol):
    @property
    def begin(self) -> int: ...
    @property
    def end(self) -> int: ...


class LabelledSpan(Span, Protocol):
    @property
    def label(self) -> str: ...


@dataclass(frozen=True)
class Mention:
    """A labelled character span (end exclusive); ``tokens`` is the token range
    [first, last) within its sentence when read from a token format."""

    begin: int
    end: int
    label: str
    tokens: tuple[int, int] | None = None


@dataclass(slots=True)
class BioToken:
    text: str
    begin: int
    end: int
    #: every column of the line as read (the tag column included)
    fields: tuple[str, ...] = ()
    line: int | None = None


@dataclass
class BioSentence:
    tokens: list[BioToken]
    tags: list[str]
    mentions: list[Mention] = field(default_factory=list)
    line: int | None = None

    @property
    def begin(self) -> int:
        return self.tokens[0].begin if self.tokens else 0

    @property
    def end(self) -> int:
        return self.tokens[-1].end if self.tokens else 0


@dataclass
class BioDocument:
    text: str
    sentences: list[BioSentence]
    source: str = STRING_SOURCE

    @property
    def mentions(self) -> list[Mention]:
        return [m for s in self.sentences for m in s.mentions]


def split_tag(tag: str) -> tuple[str, str | None]:
    """``B-Cell`` -> ("B", "Cell"); ``O`` -> ("O", None). Raises ValueError otherwise."""
    if tag == OUTSIDE:
        return OUTSIDE, None
    prefix, dash, label = tag.partition("-")
    if prefix not in ("B", "I") or not dash or not label:
        raise ValueError(f"tag {tag!r} is not O, B-<class> or I-<class>")
    return prefix, label


def bio_to_spans(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """Token ranges [first, last) with their class, by the conlleval chunk rules
    (so IOB1 input, where I- may start a mention, reads as conlleval reads it)."""
    spans: list[tuple[int, int, str]] = []
    open_span: tuple[int, str] | None = None  # (first token, class) of the mention read
    for index, tag in enumerate(tags):
        prefix, label = split_tag(tag)
        current = open_span[1] if open_span is not None else None
        starts = prefix == "B" or (prefix == "I" and label != current)
        if open_span is not None and (prefix == OUTSIDE or starts):
            spans.append((open_span[0], index, open_span[1]))
            open_span = None
        if starts and label is not None:  # B- and I- tags always carry a class
            open_span = (index, label)
    if open_span is not None:
        spans.append((open_span[0], len(tags), open_span[1]))
    return spans


def spans_to_bio(
    tokens: Sequence[Span],
    mentions: Iterable[LabelledSpan],
    *,
    overlap: Literal["error", "longest"] = "error",
) -> list[str]:
    """BIO tags for tokens (character spans) from labelled character spans.

    A token belongs to a mention when it overlaps it. A mention must start at a
    token's begin and end at a token's end, and cover at least one token, else
    ValueError (BIO cannot say "part of a token"). Overlapping mentions cannot be
    written in BIO: ``overlap="error"`` raises, ``"longest"`` keeps the longer one
    (earlier on ties) and drops the other.
    """
    tags = [OUTSIDE] * len(tokens)
    owner: list[LabelledSpan | None] = [None] * len(tokens)
    ordered = sorted(mentions, key=lambda m: (-(m.end - m.begin), m.begin))
    for mention in ordered:
        covered = [
            i for i, t in enumerate(tokens) if t.begin < mention.end and mention.begin < t.end
        ]
        if not covered:
            raise ValueError(
                f"mention {mention.begin}-{mention.end} {mention.label} covers no token"
            )
        first, last = covered[0], covered[-1]
        if tokens[first].begin != mention.begin or tokens[last].end != mention.end:
            raise ValueError(
                f"mention {mention.begin}-{mention.end} {mention.label} does not start and end "
                f"on token boundaries (tokens {tokens[first].begin}-{tokens[last].end})"
            )
        clash = next((owner[i] for i in covered if owner[i] is not None), None)
        if clash is not None:
            if overlap == "error":
                raise ValueError(
                    f"mentions {clash.begin}-{clash.end} and {mention.begin}-{mention.end} "
                    "overlap; BIO cannot hold both (use overlap='longest' to keep one)"
                )
            continue
        for i in covered:
            owner[i] = mention
            tags[i] = ("B-" if i == first else "I-") + mention.label
    return tags


def parse_bio(
    text: str,
    source: str = STRING_SOURCE,
    *,
    token_column: int = 0,
    tag_column: int = -1,
    separator: str | None = "\t",
    token_separator: str = " ",
    sentence_separator: str = "\n",
) -> BioDocument:
    """Read BIO text into tokens with character spans over a rebuilt text and mentions."""
    sentences: list[BioSentence] = []
    pieces: list[str] = []
    offset = 0
    current: BioSentence | None = None
    width: int | None = None

    def close() -> None:
        nonlocal current
        if current is None:
            return
        try:
            spans = bio_to_spans(current.tags)
        except ValueError as exc:  # pragma: no cover - tags are checked line by line
            raise FormatError(str(exc), source=source, line=current.line) from None
        current.mentions = [
            Mention(current.tokens[a].begin, current.tokens[b - 1].end, label, (a, b))
            for a, b, label in spans
        ]
        sentences.append(current)
        current = None

    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            close()
            continue
        fields = tuple(line.split(separator))
        if line.split()[0] == DOCSTART:  # a document marker, not a token of the text
            close()
            continue
        if width is None:
            width = len(fields)
        if len(fields) != width:
            raise FormatError(
                f"{len(fields)} columns where earlier lines have {width}",
                source=source,
                line=number,
            )
        try:
            token, tag = fields[token_column], fields[tag_column]
        except IndexError:
            raise FormatError(
                f"no column {token_column} or {tag_column} in {len(fields)} columns",
                source=source,
                line=number,
            ) from None
        try:
            split_tag(tag)
        except ValueError as exc:
            message = str(exc)
            if len(fields) == 1 and separator is not None and len(line.split()) > 1:
                message += (
                    f"; the line has no {separator!r} between its columns: if they are "
                    "separated by spaces, read with separator None (any whitespace)"
                )
            raise FormatError(message, source=source, line=number) from None
        if current is None:
            if sentences:
                pieces.append(sentence_separator)
                offset += len(sentence_separator)
            current = BioSentence([], [], line=number)
        elif current.tokens:
            pieces.append(token_separator)
            offset += len(token_separator)
        current.tokens.append(BioToken(token, offset, offset + len(token), fields, number))
        current.tags.append(tag)
        pieces.append(token)
        offset += len(token)
    close()
    return BioDocument("".join(pieces), sentences, source)


def read_bio(path: str | os.PathLike[str], **options) -> BioDocument:
    """:func:`parse_bio` on a UTF-8 file (same keyword options)."""
    return parse_bio(*read_text_file(path), **options)


def format_bio_rows(sentences: Iterable[Iterable[Sequence[str]]], separator: str = "\t") -> str:
    """Column lines, a blank line after each sentence (as the CoNLL files have)."""
    out = []
    for rows in sentences:
        for row in rows:
            out.append(separator.join(row) + "\n")
        out.append("\n")
    return "".join(out)


def format_bio(
    document: BioDocument,
    *,
    tag_column: int = -1,
    separator: str = "\t",
    overlap: Literal["error", "longest"] = "error",
) -> str:
    """Write a document back, the tag column rebuilt from each sentence's mentions
    (so edited or system mentions are written); other columns as read."""
    rendered = []
    for sentence in document.sentences:
        tags = spans_to_bio(sentence.tokens, sentence.mentions, overlap=overlap)
        rows = []
        for token, tag in zip(sentence.tokens, tags, strict=True):
            row = list(token.fields) if token.fields else [token.text, tag]
            row[tag_column] = tag
            rows.append(row)
        rendered.append(rows)
    return format_bio_rows(rendered, separator)


def write_bio(document: BioDocument, path: str | os.PathLike[str], **options) -> None:
    write_text_file(path, format_bio(document, **options))
