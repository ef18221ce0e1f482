"""BioCreative II gene mention format (BC2GM).

- ``*.in``: one sentence a line, ``SENTENCE_ID text``: the id is the first field,
  the text is the rest of the line after the one separating blank (inner spacing,
  double spaces included, is kept).
- ``GENE.eval`` / ``ALTGENE.eval`` and system output: ``SENTENCE_ID|start end|mention``
  (the mention text is optional in system output and then not checked).
  start and end count only non-whitespace characters of the sentence text
  (0-based) and end is the offset of the mention's last character (inclusive).

Alternatives (``ALTGENE.eval``) are attached to every gold mention of the same
sentence that they overlap, the rule of the official ``alt_eval.perl``; see
:func:`link_alternatives`.
"""

from __future__ import annotations

import functools
import os
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from casflow.components.formats import mentions as _shared
from casflow.components.formats.common import (
    STRING_SOURCE,
    FormatError,
    FormatWarning,
    read_text_file,
    split_lines,
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
    "Bc2Corpus",
    "Bc2Mention",
    "Bc2Sentence",
    "LocatedMention",
    "char_to_nospace",
    "format_mentions",
    "format_sentences",
    "link_alternatives",
    "load_bc2",
    "locate_mention",
    "locate_mentions",
    "mention_from_span",
    "nospace_to_char",
    "parse_mentions",
    "parse_sentences",
    "read_mentions",
    "read_sentences",
    "write_mentions",
    "write_sentences",
]

#: A sentence id as mention lines hold it: no whitespace (it ends the id in ``*.in``
#: lines) and no ``|`` (it ends the id in ``*.eval`` lines).
SENTENCE_ID = re.compile(r"[^|\s]+")
_SENTENCE_LINE = re.compile(r"(\S+)(?:[ \t](.*))?")
# the text after the second "|" is optional in system output ("ignored for evaluation")
_MENTION_LINE = re.compile(rf"({SENTENCE_ID.pattern})\|(\d+) (\d+)(?:\|(.*))?")


@dataclass(frozen=True)
class Bc2Sentence:
    id: str
    text: str
    source: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class Bc2Mention:
    """One line of a ``*.eval`` file; offsets count non-whitespace characters, end inclusive."""

    sentence_id: str
    start: int
    end: int
    text: str
    source: str | None = None
    line: int | None = None


class Bc2Corpus(_shared.MentionCorpus[Bc2Sentence, Bc2Mention]):
    """Sentences with their located gold mentions, alternatives linked."""


# ---------------------------------------------------------------- sentences


def parse_sentences(text: str, source: str = STRING_SOURCE) -> list[Bc2Sentence]:
    sentences = []
    seen: set[str] = set()
    text = without_bom(text)
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        match = _SENTENCE_LINE.fullmatch(line)
        if match is None:
            raise FormatError(
                "expected 'SENTENCE_ID text' (the id must start the line)",
                source=source,
                line=number,
            )
        sentence_id = match.group(1)
        if sentence_id in seen:
            raise FormatError(f"sentence id {sentence_id} occurs twice", source=source, line=number)
        seen.add(sentence_id)
        sentences.append(Bc2Sentence(sentence_id, match.group(2) or "", source, number))
    return sentences


def read_sentences(path: str | os.PathLike[str]) -> list[Bc2Sentence]:
    return parse_sentences(*read_text_file(path))


def format_sentences(sentences: Iterable[Bc2Sentence]) -> str:
    return "".join(f"{s.id} {s.text}\n" for s in sentences)


def write_sentences(sentences: Iterable[Bc2Sentence], path: str | os.PathLike[str]) -> None:
    write_text_file(path, format_sentences(sentences))


# ---------------------------------------------------------------- mention lines


def parse_mentions(text: str, source: str = STRING_SOURCE) -> list[Bc2Mention]:
    mentions = []
    text = without_bom(text)
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        match = _MENTION_LINE.fullmatch(line)
        if match is None:
            raise FormatError(
                f"expected 'SENTENCE_ID|start end|mention', got {line!r}",
                source=source,
                line=number,
            )
        start, end = int(match.group(2)), int(match.group(3))
        if end < start:
            raise FormatError(f"end {end} is before start {start}", source=source, line=number)
        mentions.append(
            Bc2Mention(match.group(1), start, end, match.group(4) or "", source, number)
        )
    return mentions


def read_mentions(path: str | os.PathLike[str]) -> list[Bc2Mention]:
    return parse_mentions(*read_text_file(path))


def format_mentions(mentions: Iterable[Bc2Mention], *, sort: bool = True) -> str:
    """Mention lines; sorted by (sentence id, start, end) as the official GENE.eval files are."""
    items = list(mentions)
    if sort:
        items.sort(key=lambda m: (m.sentence_id, m.start, m.end))
    return "".join(f"{m.sentence_id}|{m.start} {m.end}|{m.text}\n" for m in items)


def write_mentions(
    mentions: Iterable[Bc2Mention], path: str | os.PathLike[str], *, sort: bool = True
) -> None:
    write_text_file(path, format_mentions(mentions, sort=sort))


# ---------------------------------------------------------------- offsets


@functools.lru_cache(maxsize=1)
def _nonspace_positions(text: str) -> array[int]:
    """Offsets of ``text``'s non-whitespace characters, kept for the last text: a
    document's mentions are converted one after another, and a pass over the text
    for each made a document of n characters and m mentions cost n x m (a full text
    of 200,000 characters with 2,000 genes took 4 s to write and 40 s to import)."""
    return array("q", (i for i, c in enumerate(text) if not c.isspace()))


def nospace_to_char(text: str, start: int, end: int) -> tuple[int, int]:
    """Space-free (start, inclusive end) -> character (begin, exclusive end) in ``text``."""
    positions = _nonspace_positions(text)
    if not 0 <= start <= end < len(positions):
        raise ValueError(
            f"offsets {start} {end} are outside the {len(positions)} non-space characters"
        )
    return positions[start], positions[end] + 1


def char_to_nospace(text: str, begin: int, end: int) -> tuple[int, int]:
    """Character (begin, exclusive end) -> space-free (start, inclusive end)."""
    if not 0 <= begin < end <= len(text):
        raise ValueError(f"span {begin}-{end} is not a non-empty span of the {len(text)}-char text")
    positions = _nonspace_positions(text)
    before = bisect_left(positions, begin)  # non-space characters before the span
    stop = bisect_left(positions, end)
    if stop == before:
        raise ValueError(f"span {begin}-{end} holds only whitespace")
    return before, stop - 1


def _squeeze(text: str) -> str:
    return "".join(text.split())


def locate_mention(
    sentence: Bc2Sentence, mention: Bc2Mention, *, on_mismatch: OnMismatch = "raise"
) -> LocatedMention[Bc2Mention]:
    """Character span of a mention, checking its text against the sentence (spaces ignored)."""
    try:
        begin, end = nospace_to_char(sentence.text, mention.start, mention.end)
    except ValueError as exc:
        raise FormatError(
            f"sentence {mention.sentence_id}: {exc}", source=mention.source, line=mention.line
        ) from None
    found = sentence.text[begin:end]
    # an empty text (optional in system output) has nothing to check
    matches = not mention.text or _squeeze(found) == _squeeze(mention.text)
    mismatch = None
    if not matches:
        mismatch = (
            f"sentence {mention.sentence_id}: mention text {mention.text!r} differs from "
            f"{found!r} at offsets {mention.start} {mention.end}"
        )
    return check_text(
        mention, begin, end, mismatch, kept="; kept the offsets", on_mismatch=on_mismatch
    )


def locate_mentions(
    sentences: Sequence[Bc2Sentence] | dict[str, Bc2Sentence],
    mentions: Iterable[Bc2Mention],
    *,
    on_mismatch: OnMismatch = "raise",
    failed: dict[str, str] | None = None,
) -> list[LocatedMention[Bc2Mention]]:
    """Locate many mentions. With ``on_mismatch="warn"`` a text mismatch keeps the
    offsets (the official scorer compares offsets only) and an unknown sentence id
    skips the line, each with a :class:`FormatWarning`."""
    return locate_all(
        sentences,
        mentions,
        locate_mention,
        on_mismatch=on_mismatch,
        failed=failed,
        sentence_file="sentence file",
    )


def mention_from_span(
    sentence: Bc2Sentence, begin: int, end: int, text: str | None = None
) -> Bc2Mention:
    """A mention line for a character span of a sentence (for system output)."""
    start, last = char_to_nospace(sentence.text, begin, end)
    return Bc2Mention(sentence.id, start, last, sentence.text[begin:end] if text is None else text)


# ---------------------------------------------------------------- alternatives


def link_alternatives(
    genes: Sequence[LocatedMention[Bc2Mention]], alternatives: Iterable[LocatedMention[Bc2Mention]]
) -> list[LocatedMention[Bc2Mention]]:
    """Append each alternative to ``.alternatives`` of every gene of its sentence it overlaps.

    Overlap is tested on the space-free inclusive offsets, as ``alt_eval.perl`` does;
    an alternative covering "X (Y)" thus belongs to both X and Y. Returns the
    alternatives that overlap no gene.
    """
    return _shared.link_alternatives(genes, alternatives, lambda m: (m.start, m.end))


def load_bc2(
    sentences_path: str | os.PathLike[str],
    genes_path: str | os.PathLike[str] | None = None,
    alternatives_path: str | os.PathLike[str] | None = None,
    *,
    on_mismatch: OnMismatch = "raise",
    keep_going: bool = False,
) -> Bc2Corpus:
    """Read a BC2GM portion: sentences, gold genes (located) and their alternatives.
    With ``keep_going`` a mention line that cannot be located fails only its sentence
    (:attr:`~casflow.components.formats.mentions.MentionCorpus.failed`)."""
    sentences = read_sentences(sentences_path)
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
    return Bc2Corpus(sentences, genes, orphans, failed or {})
