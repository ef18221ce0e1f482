"""CoNLL-U: sentences of 10-column word lines with ``#`` comments, blank line after each.

Everything is kept as read so :func:`format_conllu` reproduces a well-formed
file exactly: comment lines verbatim, columns as strings, multiword token
ranges (``1-2``) and empty nodes (``1.1``) in their places. Accessors parse the
common comments (``sent_id``, ``text``, ``newdoc``, ``newpar``), FEATS and MISC
(``SpaceAfter=No``).

:func:`align_to_text` gives each word its character offsets in a document
text (e.g. a CRAFT ``articles/txt/<PMID>.txt`` for ``conllu/<PMID>.conllu``):
forms are matched in order, any whitespace (newlines included) allowed between
surface tokens.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from casflow.components.formats.common import (
    STRING_SOURCE,
    FormatError,
    FormatWarning,
    form_at,
    read_text_file,
    split_lines,
    write_text_file,
)

__all__ = [
    "FormatError",
    "FormatWarning",
    "ConlluDocument",
    "ConlluSentence",
    "ConlluWord",
    "align_to_text",
    "format_conllu",
    "parse_conllu",
    "parse_pairs",
    "read_conllu",
    "write_conllu",
]

COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")

_WORD_ID = re.compile(r"[1-9]\d*")
_RANGE_ID = re.compile(r"([1-9]\d*)-([1-9]\d*)")
_EMPTY_ID = re.compile(r"(0|[1-9]\d*)\.([1-9]\d*)")


def parse_pairs(column: str) -> list[tuple[str, str | None]]:
    """FEATS or MISC ``A=1|B=2|C`` -> [("A", "1"), ("B", "2"), ("C", None)]; ``_`` -> []."""
    if column in ("_", ""):
        return []
    pairs: list[tuple[str, str | None]] = []
    for item in column.split("|"):
        key, eq, value = item.partition("=")
        pairs.append((key, value if eq else None))
    return pairs


@dataclass(slots=True)
class ConlluWord:
    """One line: a word (``3``), a multiword token range (``3-4``) or an empty node (``3.1``)."""

    id: str
    form: str
    lemma: str
    upos: str
    xpos: str
    feats: str
    head: str
    deprel: str
    deps: str
    misc: str
    line: int | None = None

    @property
    def is_range(self) -> bool:
        return "-" in self.id

    @property
    def is_empty_node(self) -> bool:
        return "." in self.id

    @property
    def range(self) -> tuple[int, int] | None:
        """First and last word id of a multiword token, else None."""
        match = _RANGE_ID.fullmatch(self.id)
        return (int(match.group(1)), int(match.group(2))) if match else None

    @property
    def space_after(self) -> bool:
        return ("SpaceAfter", "No") not in parse_pairs(self.misc)

    @property
    def misc_items(self) -> list[tuple[str, str | None]]:
        return parse_pairs(self.misc)

    @property
    def feats_dict(self) -> dict[str, str | None]:
        return dict(parse_pairs(self.feats))

    def columns(self) -> tuple[str, ...]:
        return (
            self.id,
            self.form,
            self.lemma,
            self.upos,
            self.xpos,
            self.feats,
            self.head,
            self.deprel,
            self.deps,
            self.misc,
        )


@dataclass
class ConlluSentence:
    #: the comment lines as read, "#" included
    comments: list[str]
    #: every word line in file order: words, multiword ranges and empty nodes
    words: list[ConlluWord]
    line: int | None = None

    def comment(self, key: str) -> str | None:
        """Value of ``# key = value`` (first occurrence), else None."""
        for comment in self.comments:
            name, eq, value = comment[1:].partition("=")
            if eq and name.strip() == key:
                return value.strip() if value.strip() else ""
        return None

    def _has_marker(self, key: str) -> bool:
        return any(
            c[1:].strip() == key or c[1:].partition("=")[0].strip() == f"{key} id"
            for c in self.comments
        )

    @property
    def sent_id(self) -> str | None:
        return self.comment("sent_id")

    @property
    def text(self) -> str | None:
        # not stripped: the text is everything after "# text = "
        for comment in self.comments:
            if comment.startswith("# text = "):
                return comment[len("# text = ") :]
        return self.comment("text")

    @property
    def is_newdoc(self) -> bool:
        return self._has_marker("newdoc")

    @property
    def is_newpar(self) -> bool:
        return self._has_marker("newpar")

    @property
    def newdoc_id(self) -> str | None:
        return self.comment("newdoc id")

    @property
    def newpar_id(self) -> str | None:
        return self.comment("newpar id")

    @property
    def syntactic_words(self) -> list[ConlluWord]:
        """Words with integer ids (no ranges, no empty nodes): the dependency tree's nodes."""
        return [w for w in self.words if not w.is_range and not w.is_empty_node]

    @property
    def surface_tokens(self) -> list[ConlluWord]:
        """What the text is made of: multiword ranges and the words outside any range."""
        tokens = []
        inside_until = 0
        for word in self.words:
            if word.is_empty_node:
                continue
            span = word.range
            if span is not None:
                tokens.append(word)
                inside_until = span[1]
            elif int(word.id) > inside_until:
                tokens.append(word)
        return tokens


@dataclass
class ConlluDocument:
    sentences: list[ConlluSentence] = field(default_factory=list)
    source: str = STRING_SOURCE


def _check_ids(sentence: ConlluSentence, source: str) -> None:
    expected = 1
    for word in sentence.words:
        if _WORD_ID.fullmatch(word.id):
            if int(word.id) != expected:
                raise FormatError(
                    f"word id {word.id} where {expected} was expected (ids run 1, 2, 3, ...)",
                    source=source,
                    line=word.line,
                )
            expected += 1
        elif (match := _RANGE_ID.fullmatch(word.id)) is not None:
            first, last = int(match.group(1)), int(match.group(2))
            if first != expected or last < first:
                raise FormatError(
                    f"multiword range {word.id} must start at the next word id {expected}",
                    source=source,
                    line=word.line,
                )
        elif (match := _EMPTY_ID.fullmatch(word.id)) is not None:
            if int(match.group(1)) != expected - 1:
                raise FormatError(
                    f"empty node {word.id} must follow word {match.group(1)}",
                    source=source,
                    line=word.line,
                )
        else:
            raise FormatError(
                f"id {word.id!r} is not a word id (3), range (3-4) or empty node (3.1)",
                source=source,
                line=word.line,
            )


def parse_conllu(text: str, source: str = STRING_SOURCE) -> ConlluDocument:
    document = ConlluDocument(source=source)
    comments: list[str] = []
    words: list[ConlluWord] = []
    start: int | None = None

    def close(number: int) -> None:
        nonlocal comments, words, start
        if not words:
            if comments:
                raise FormatError(
                    "comment lines with no word lines before the blank line",
                    source=source,
                    line=start,
                )
            return
        sentence = ConlluSentence(comments, words, start)
        _check_ids(sentence, source)
        document.sentences.append(sentence)
        comments, words, start = [], [], None

    lines = split_lines(text)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            close(number)
            continue
        if start is None:
            start = number
        if line.startswith("#"):
            if words:
                raise FormatError(
                    "comment line inside a sentence (comments go before the word lines)",
                    source=source,
                    line=number,
                )
            comments.append(line)
            continue
        fields = line.split("\t")
        if len(fields) != len(COLUMNS):
            raise FormatError(
                f"{len(fields)} tab-separated columns, CoNLL-U has {len(COLUMNS)}",
                source=source,
                line=number,
            )
        id_, form, lemma, upos, xpos, feats, head, deprel, deps, misc = fields
        words.append(
            ConlluWord(id_, form, lemma, upos, xpos, feats, head, deprel, deps, misc, line=number)
        )
    close(len(lines) + 1)
    return document


def read_conllu(path: str | os.PathLike[str]) -> ConlluDocument:
    return parse_conllu(*read_text_file(path))


def format_conllu(sentences: ConlluDocument | Iterable[ConlluSentence]) -> str:
    """CoNLL-U text: comments, word lines, a blank line after each sentence."""
    if isinstance(sentences, ConlluDocument):
        sentences = sentences.sentences
    out: list[str] = []
    for sentence in sentences:
        out.extend(comment + "\n" for comment in sentence.comments)
        out.extend("\t".join(word.columns()) + "\n" for word in sentence.words)
        out.append("\n")
    return "".join(out)


def write_conllu(
    sentences: ConlluDocument | Iterable[ConlluSentence], path: str | os.PathLike[str]
) -> None:
    write_text_file(path, format_conllu(sentences))


def align_to_text(
    document: ConlluDocument, text: str, *, text_source: str | None = None
) -> list[list[tuple[int, int] | None]]:
    """Character offsets (begin, end exclusive) of every word line, per sentence and
    parallel to ``sentence.words``.

    Surface tokens are found in order, each after optional whitespace, a space in a
    form matching any whitespace character (``conllu.writer.v1`` writes a tab or line
    break inside a token as a space: :func:`form_at`); the words
    of a multiword token get the span of its range line; empty nodes get None.
    Raises FormatError naming the CoNLL-U file, line, sentence id and token, and
    the text there, when a form is not where expected.
    """
    text_name = text_source or "the document text"
    position = 0
    result: list[list[tuple[int, int] | None]] = []
    for sentence in document.sentences:
        spans: list[tuple[int, int] | None] = []
        range_span: tuple[int, int] | None = None
        range_last = 0
        for word in sentence.words:
            if word.is_empty_node:
                spans.append(None)
                continue
            word_range = word.range
            if word_range is None and int(word.id) <= range_last:
                spans.append(range_span)
                continue
            while position < len(text) and text[position].isspace():
                position += 1
            if not word.form or not form_at(text, word.form, position):
                found = text[position : position + max(len(word.form), 20)]
                there = f"which has {found!r} there" if found else "where the text ends"
                in_sentence = f"sentence {sentence.sent_id}: " if sentence.sent_id else ""
                raise FormatError(
                    f"{in_sentence}token {word.id} {word.form!r} not found at offset "
                    f"{position} of {text_name}, {there}",
                    source=document.source,
                    line=word.line,
                )
            span = (position, position + len(word.form))
            position = span[1]
            spans.append(span)
            if word_range is not None:
                range_span, range_last = span, word_range[1]
        result.append(spans)
    return result
