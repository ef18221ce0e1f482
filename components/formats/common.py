"""Shared pieces of the format parsers: errors that name file and line, file input, overlap linking."""

from __future__ import annotations

import os
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from casflow.pipeline.component import DocumentWarning

STRING_SOURCE = "<string>"

T = TypeVar("T")


def _where(source: str | None, line: int | None) -> str:
    if source is None and line is None:
        return ""
    if line is None:
        return f"{source}: "
    return f"{source or STRING_SOURCE}:{line}: "


class FormatError(ValueError):
    """Malformed or inconsistent input; the message starts with ``file:line:``."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        self.detail = message
        super().__init__(_where(source, line) + message)


class FormatWarning(DocumentWarning):
    """Input damage that a reader repaired or skipped (message starts with ``file:line:``)."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        self.detail = message
        super().__init__(_where(source, line) + message)


def warn(message: str, *, source: str | None, line: int | None) -> None:
    warnings.warn(FormatWarning(message, source=source, line=line), stacklevel=3)


def read_text_file(path: str | os.PathLike[str]) -> tuple[str, str]:
    """Text of a UTF-8 file and its name for messages."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"not UTF-8 at byte {exc.start}; convert the file to UTF-8", source=str(path)
        ) from exc


def write_text_file(path: str | os.PathLike[str], text: str) -> None:
    # newline="" so "\n" is written as is on every platform (round-trips stay byte-exact)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def split_lines(text: str) -> list[str]:
    """Lines without their terminators; a final newline does not add an empty line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


#: Every character str.splitlines breaks on (readers with universal newlines break on
#: a lone \r too); brat reads its .ann lines so, U+2028 and a form feed included.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# What ends a field or a line of the column formats: a tab, and every line break.
_FIELD_BREAKS = "\t" + LINE_BREAKS
_BREAKS_AS_SPACES = str.maketrans(dict.fromkeys(_FIELD_BREAKS, " "))


def without_bom(text: str) -> str:
    """``text`` less a leading byte-order mark (some editors write one): it would
    otherwise become part of the first line's first field (an id)."""
    return text.removeprefix("\ufeff")


def column_field(value: str | None) -> str:
    """An optional value (lemma, tag) as a field of a column format: one line, no
    whitespace at its edges, ``_`` when there is none."""
    return token_field(value or "") or "_"


def one_line(value: str) -> str:
    """``value`` with each tab and line break as a space (same length), so it stays one
    field of one line."""
    return value.translate(_BREAKS_AS_SPACES)


def token_field(text: str) -> str:
    """A token's text as a field of a column format: tabs and line breaks inside it as
    spaces, whitespace at its edges dropped (a CoNLL-U FORM neither starts nor ends
    with a space). Empty for a token of whitespace only, which no such field can hold.
    Read back, :func:`form_at` finds it in the text."""
    return one_line(text).strip()


def form_at(text: str, form: str, position: int) -> bool:
    """Whether token ``form`` stands in ``text`` at ``position``, a space in the form
    matching any one whitespace character (:func:`token_field` writes a tab or line
    break inside a token as a space)."""
    if text.startswith(form, position):
        return True
    if " " not in form or position + len(form) > len(text):
        return False
    return all(
        f == t or (f == " " and t.isspace())
        for f, t in zip(form, text[position : position + len(form)], strict=True)
    )


def link_by_overlap(
    golds: Sequence[T],
    alternatives: Sequence[T],
    key: Callable[[T], tuple[str, int, int]],
) -> tuple[list[list[T]], list[T]]:
    """Attach each alternative to every gold mention of its sentence that it overlaps.

    ``key`` gives (sentence id, first, last) with ``last`` inclusive. This is the
    rule of the BioCreative ``alt_eval.perl`` scorers, whose four cases (inside,
    covering, overlapping either end) together mean "overlaps", so one alternative
    may count for several gold mentions. An alternative whose span is already
    attached to a gold mention is not attached to it again. Returns the
    alternatives per gold mention (parallel to ``golds``) and the alternatives
    that overlap no gold mention.
    """
    golds_by_sentence: dict[str, list[int]] = defaultdict(list)
    for index, gold in enumerate(golds):
        golds_by_sentence[key(gold)[0]].append(index)
    linked: list[list[T]] = [[] for _ in golds]
    orphans: list[T] = []
    for alternative in alternatives:
        sentence_id, first, last = key(alternative)
        hits = [
            index
            for index in golds_by_sentence.get(sentence_id, ())
            if first <= key(golds[index])[2] and key(golds[index])[1] <= last
        ]
        for index in hits:
            # the distributed files repeat a few alternative lines; attach each span once
            if all(key(other)[1:] != (first, last) for other in linked[index]):
                linked[index].append(alternative)
        if not hits:
            orphans.append(alternative)
    return linked, orphans
