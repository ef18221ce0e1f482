"""GENETAG / BioCreative I task 1A gene mention format.

- ``TOKENIZED_CORPUS`` / ``TAGGED_GENE_CORPUS``: one sentence a line,
  ``@@ID token/TAG token/TAG ...``; a token may itself be ``/`` (``//TAG``), so the
  tag is what follows the *last* slash. In the tagged file gene tokens carry
  ``NEWGENE`` (``NEWGENE1`` marks a name adjacent to another) and the others Penn POS tags.
- ``Gold.format`` / ``Correct.Data`` (accepted alternatives) and system output:
  ``@@ID|first last|text``: 0-based indices of the first and last token
  (inclusive) over that tokenization; the text is the tokens joined by single spaces.

Sentence text: the data has no character offsets, so a sentence's text is rebuilt
as its tokens joined by single spaces (the form the mention texts use too), and
each token gets its character span in that text.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from casflow.components.formats import mentions as _shared
from casflow.components.formats.common import (
    STRING_SOURCE,
    FormatError,
    FormatWarning,
    read_text_file,
    split_lines,
    warn,
    without_bom,
    write_text_file,
)
from casflow.components.formats.mentions import (
    LocatedMention,
    OnMismatch,
    check_text,
    load_located,
    locate_all,
)

__all__ = [
    "SENTENCE_ID",
    "FormatError",
    "FormatWarning",
    "GENE_TAGS",
    "GenetagCorpus",
    "GenetagMention",
    "GenetagSentence",
    "GenetagToken",
    "LocatedMention",
    "format_mentions",
    "format_sentences",
    "link_alternatives",
    "load_genetag",
    "locate_mention",
    "locate_mentions",
    "mention_from_span",
    "mentions_from_tags",
    "parse_mentions",
    "parse_sentences",
    "read_mentions",
    "read_sentences",
    "sentence_from_text",
    "write_mentions",
    "write_sentences",
]

#: Tags of gene tokens in TAGGED_GENE_CORPUS; NEWGENE1 starts a name that abuts a NEWGENE one.
GENE_TAGS = ("NEWGENE", "NEWGENE1")

#: A sentence id as mention lines hold it: ``@@``, then no whitespace and no ``|``.
SENTENCE_ID = re.compile(r"@@[^|\s]+")
_MENTION_LINE = re.compile(rf"({SENTENCE_ID.pattern})\|(\d+) (\d+)\|(.*)")
# A line whose '|' after the offsets is missing, e.g. "@@18719714263|11 11OCT-1" (train).
_MENTION_LINE_NO_BAR = re.compile(r"(@@[^|\s]+)\|(\d+) (\d+)([^\d|\s].*)")
# A second record glued to the end of a line (train Correct.Data line 5684).
_GLUED_RECORD = re.compile(r"@@[^|\s]+\|\d+ \d+\|")


@dataclass(slots=True)
class GenetagToken:
    text: str
    tag: str
    begin: int
    end: int


@dataclass(frozen=True)
class GenetagSentence:
    id: str
    tokens: tuple[GenetagToken, ...]
    source: str | None = None
    line: int | None = None

    @property
    def text(self) -> str:
        return " ".join(t.text for t in self.tokens)


@dataclass(frozen=True)
class GenetagMention:
    """One mention line: token indices ``first``..``last`` (inclusive)."""

    sentence_id: str
    first: int
    last: int
    text: str
    source: str | None = None
    line: int | None = None


class GenetagCorpus(_shared.MentionCorpus[GenetagSentence, GenetagMention]):
    """Sentences with their located gold mentions (offsets into the rebuilt text)."""


# ---------------------------------------------------------------- sentences


def _sentence_from_line(line: str, source: str, number: int) -> GenetagSentence:
    sentence_id, _, rest = line.partition(" ")
    if not sentence_id.startswith("@@"):
        raise FormatError(
            f"expected '@@ID token/TAG ...', line starts with {sentence_id[:20]!r}",
            source=source,
            line=number,
        )
    tokens = []
    offset = 0
    for item in rest.split(" ") if rest else ():
        if any(c.isspace() for c in item):
            # a tab would glue two tokens into one and shift every later token index
            raise FormatError(
                f"sentence {sentence_id}: item {item!r} holds whitespace other than the "
                "single spaces that separate items; a token cannot contain whitespace",
                source=source,
                line=number,
            )
        text, slash, tag = item.rpartition("/")
        if not slash or not text or not tag:
            raise FormatError(
                f"sentence {sentence_id}: item {item!r} is not token/TAG "
                "(single spaces separate items)",
                source=source,
                line=number,
            )
        tokens.append(GenetagToken(text, tag, offset, offset + len(text)))
        offset += len(text) + 1
    return GenetagSentence(sentence_id, tuple(tokens), source, number)


def parse_sentences(text: str, source: str = STRING_SOURCE) -> list[GenetagSentence]:
    sentences = []
    seen: set[str] = set()
    text = without_bom(text)
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        sentence = _sentence_from_line(line, source, number)
        if sentence.id in seen:
            raise FormatError(f"sentence id {sentence.id} occurs twice", source=source, line=number)
        seen.add(sentence.id)
        sentences.append(sentence)
    return sentences


def sentence_from_text(sentence_id: str, text: str) -> GenetagSentence:
    """The sentence whose rebuilt text is ``text``: its tokens are the pieces between
    single spaces (the inverse of :attr:`GenetagSentence.text`; tags unknown)."""
    tokens = []
    offset = 0
    for piece in text.split(" ") if text else ():
        if not piece:
            raise ValueError(
                f"sentence {sentence_id}: the text is not GENETAG tokens joined by single "
                f"spaces (an empty token at character {offset}), so token indices cannot "
                "be mapped onto it; read the sentences with genetag.reader.v1"
            )
        tokens.append(GenetagToken(piece, "", offset, offset + len(piece)))
        offset += len(piece) + 1
    return GenetagSentence(sentence_id, tuple(tokens))


def read_sentences(path: str | os.PathLike[str]) -> list[GenetagSentence]:
    return parse_sentences(*read_text_file(path))


def format_sentences(sentences: Iterable[GenetagSentence]) -> str:
    lines = []
    for sentence in sentences:
        items = " ".join(f"{t.text}/{t.tag}" for t in sentence.tokens)
        lines.append(f"{sentence.id} {items}\n" if items else f"{sentence.id}\n")
    return "".join(lines)


def write_sentences(sentences: Iterable[GenetagSentence], path: str | os.PathLike[str]) -> None:
    write_text_file(path, format_sentences(sentences))


# ---------------------------------------------------------------- mention lines


def parse_mentions(
    text: str, source: str = STRING_SOURCE, *, strict: bool = False
) -> list[GenetagMention]:
    """Mention lines. Two kinds of damage in the distributed files are repaired with a
    :class:`FormatWarning` unless ``strict``: a missing ``|`` before the text, and a
    second record glued to the end of a line."""
    mentions = []
    text = without_bom(text)
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        match = _MENTION_LINE.fullmatch(line)
        if match is None:
            match = _MENTION_LINE_NO_BAR.fullmatch(line)
            if match is None or strict:
                raise FormatError(
                    f"expected '@@ID|first last|text', got {line!r}", source=source, line=number
                )
            warn(
                "'|' missing between offsets and text; read as if present",
                source=source,
                line=number,
            )
        records = [match.groups()]
        glued = _GLUED_RECORD.search(records[0][3])
        if glued is not None:
            if strict:
                raise FormatError(
                    f"a second record starts inside the text: {records[0][3]!r}",
                    source=source,
                    line=number,
                )
            warn("two records on one line; read as two lines", source=source, line=number)
            head, tail = records[0][3][: glued.start()], records[0][3][glued.start() :]
            second = _MENTION_LINE.fullmatch(tail)
            assert second is not None  # the tail starts with a record's head (_GLUED_RECORD)
            records = [(*records[0][:3], head), second.groups()]
        for sentence_id, first, last, mention_text in records:
            if int(last) < int(first):
                raise FormatError(
                    f"last token {last} is before first token {first}", source=source, line=number
                )
            mentions.append(
                GenetagMention(sentence_id, int(first), int(last), mention_text, source, number)
            )
    return mentions


def read_mentions(path: str | os.PathLike[str], *, strict: bool = False) -> list[GenetagMention]:
    return parse_mentions(*read_text_file(path), strict=strict)


def format_mentions(mentions: Iterable[GenetagMention], *, sort: bool = False) -> str:
    """Mention lines in the order given, or by (sentence id, first, last) with ``sort``
    (the scorer reads them into a hash, so order does not matter to it)."""
    items = list(mentions)
    if sort:
        items.sort(key=lambda m: (m.sentence_id, m.first, m.last))
    return "".join(f"{m.sentence_id}|{m.first} {m.last}|{m.text}\n" for m in items)


def write_mentions(
    mentions: Iterable[GenetagMention], path: str | os.PathLike[str], *, sort: bool = False
) -> None:
    write_text_file(path, format_mentions(mentions, sort=sort))


# ---------------------------------------------------------------- offsets


def locate_mention(
    sentence: GenetagSentence,
    mention: GenetagMention,
    *,
    on_mismatch: OnMismatch = "raise",
    ignore_case: bool = False,
) -> LocatedMention[GenetagMention]:
    """Character span of a mention in the rebuilt sentence text, checking its text
    (``ignore_case``: as GENETAG's scorer, which lowercases the texts it prints)."""
    if not 0 <= mention.first <= mention.last < len(sentence.tokens):
        raise FormatError(
            f"sentence {mention.sentence_id}: tokens {mention.first}..{mention.last} outside "
            f"its {len(sentence.tokens)} tokens",
            source=mention.source,
            line=mention.line,
        )
    begin = sentence.tokens[mention.first].begin
    end = sentence.tokens[mention.last].end
    found = sentence.text[begin:end]
    mismatch = None
    if found != mention.text and not (ignore_case and found.lower() == mention.text.lower()):
        mismatch = (
            f"sentence {mention.sentence_id}: mention text {mention.text!r} differs from "
            f"tokens {mention.first}..{mention.last} {found!r}"
        )
    return check_text(
        mention, begin, end, mismatch, kept="; kept the token indices", on_mismatch=on_mismatch
    )


def locate_mentions(
    sentences: Sequence[GenetagSentence] | dict[str, GenetagSentence],
    mentions: Iterable[GenetagMention],
    *,
    on_mismatch: OnMismatch = "raise",
    ignore_case: bool = False,
    failed: dict[str, str] | None = None,
) -> list[LocatedMention[GenetagMention]]:
    """Locate many mentions; with ``on_mismatch="warn"`` a text mismatch keeps the
    indices and an unknown sentence id skips the line, each with a warning."""
    return locate_all(
        sentences,
        mentions,
        functools.partial(locate_mention, ignore_case=ignore_case),
        on_mismatch=on_mismatch,
        failed=failed,
        sentence_file="corpus file",
    )


def mention_from_span(sentence: GenetagSentence, begin: int, end: int) -> GenetagMention:
    """The mention line for a character span that starts and ends on token boundaries."""
    first = next((i for i, t in enumerate(sentence.tokens) if t.begin == begin), None)
    last = next((i for i, t in enumerate(sentence.tokens) if t.end == end), None)
    if first is None or last is None or last < first:
        raise ValueError(
            f"sentence {sentence.id}: span {begin}-{end} does not start and end on token "
            "boundaries; GENETAG mentions are whole tokens"
        )
    return GenetagMention(sentence.id, first, last, sentence.text[begin:end])


def mentions_from_tags(sentence: GenetagSentence) -> list[GenetagMention]:
    """Gene names of a TAGGED_GENE_CORPUS sentence: runs of NEWGENE / NEWGENE1 tokens,
    a change between the two tags starting a new name."""
    mentions: list[GenetagMention] = []
    start: int | None = None
    for index, token in enumerate((*sentence.tokens, None)):
        tag = token.tag if token is not None else None
        previous = sentence.tokens[index - 1].tag if index else None
        if start is not None and tag != previous:
            mentions.append(
                GenetagMention(
                    sentence.id,
                    start,
                    index - 1,
                    " ".join(t.text for t in sentence.tokens[start:index]),
                    sentence.source,
                    sentence.line,
                )
            )
            start = None
        if start is None and tag in GENE_TAGS:
            start = index
    return mentions


# ---------------------------------------------------------------- alternatives


def link_alternatives(
    genes: Sequence[LocatedMention[GenetagMention]],
    alternatives: Iterable[LocatedMention[GenetagMention]],
) -> list[LocatedMention[GenetagMention]]:
    """Append each alternative to every gene of its sentence whose token range it
    overlaps (the alt_eval.perl rule); returns those overlapping none."""
    return _shared.link_alternatives(genes, alternatives, lambda m: (m.first, m.last))


def load_genetag(
    corpus_path: str | os.PathLike[str],
    genes_path: str | os.PathLike[str] | None = None,
    alternatives_path: str | os.PathLike[str] | None = None,
    *,
    on_mismatch: OnMismatch = "raise",
    keep_going: bool = False,
) -> GenetagCorpus:
    """Read a GENETAG portion: sentences (TOKENIZED_CORPUS or TAGGED_GENE_CORPUS),
    located gold genes (Gold.format) and their alternatives (Correct.Data). With
    ``keep_going`` a mention line that cannot be located fails only its sentence
    (:attr:`~casflow.components.formats.mentions.MentionCorpus.failed`)."""
    sentences = read_sentences(corpus_path)
    failed: dict[str, str] | None = {} if keep_going else None
    genes, orphans = load_located(
        sentences,
        genes_path,
        alternatives_path,
        lambda by_id, path: locate_mentions(
            by_id, read_mentions(path), on_mismatch=on_mismatch, failed=failed
        ),
        link_alternatives,
    )
    return GenetagCorpus(sentences, genes, orphans, failed or {})
