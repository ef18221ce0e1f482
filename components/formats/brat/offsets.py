"""brat offsets counted on the ``.txt`` file, mapped onto the document text casflow holds.

brat reads its ``.txt`` without newline translation, so every character of the file
counts in the offsets of the ``.ann``: the CR of each CRLF line end, a lone CR and a
leading byte-order mark included (one per code point, as Python counts ``str``).
casflow's readers hold the text without some of them (``text.reader.v1`` drops the
mark and reads CRLF as LF), so an offset past a CRLF would land one character late
per line break before it. :func:`align` finds which characters of the file the
document text does not hold; :class:`FileOffsets` moves offsets past them.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from casflow.cas.xmi import XML_INCOMPATIBLE

_BOM = "\ufeff"
_LINE_BREAK = re.compile(r"\r\n?|\n")


@dataclass(frozen=True)
class FileOffsets:
    """Offsets in a file's text -> offsets in the document text read from it."""

    #: file offsets of the characters the document text does not hold, ascending
    dropped: tuple[int, ...] = ()

    def to_text(self, offset: int) -> int:
        # Both sides of a dropped CR map to where its LF is in the document text: a span
        # that begins inside a CRLF pair begins at the line break, one that ends inside
        # it ends before the line break (the CR it covered is not in the text).
        return offset - bisect_left(self.dropped, offset)

    def span(self, begin: int, end: int) -> tuple[int, int]:
        return self.to_text(begin), self.to_text(end)


def _crlf_positions(file_text: str, start: int) -> tuple[int, ...]:
    positions = []
    found = file_text.find("\r\n", start)
    while found != -1:
        positions.append(found)
        found = file_text.find("\r\n", found + 2)
    return tuple(positions)


def _same(file_char: str, text_char: str) -> bool:
    """Whether the reader may have read ``file_char`` as ``text_char`` in place."""
    if file_char == text_char:
        return True
    # A lone CR read as LF (universal newlines), a character XML forbids read as a
    # space (text.reader.v1's control_characters: space): the length stays.
    return (file_char == "\r" and text_char == "\n") or (
        text_char == " " and XML_INCOMPATIBLE.fullmatch(file_char) is not None
    )


def align(file_text: str, text: str) -> FileOffsets:
    """Map ``file_text`` (a file's characters, as brat counts them) onto ``text``, the
    document text read from it: a leading byte-order mark and the CR of a CRLF may be
    missing from ``text``; a lone CR may be kept or read as LF. Any other difference
    raises :class:`ValueError` naming where the two first differ (a text that is not
    the file's, whose offsets would then be wrong)."""
    bom: tuple[int, ...] = (0,) if file_text[:1] == _BOM and text[:1] != _BOM else ()
    start = len(bom)
    # The usual case, text.reader.v1's own reading, without a walk over every character.
    if file_text[start:].replace("\r\n", "\n") == text:
        return FileOffsets(bom + _crlf_positions(file_text, start))
    dropped = list(bom)
    i, j = start, 0
    while i < len(file_text):
        if _crlf_read_as_lf(file_text, i, text, j):
            dropped.append(i)
            i += 1
        elif j < len(text) and _same(file_text[i], text[j]):
            i += 1
            j += 1
        else:
            raise ValueError(_difference(file_text, i, text, j))
    if j < len(text):
        raise ValueError(_difference(file_text, i, text, j))
    return FileOffsets(tuple(dropped))


def _crlf_read_as_lf(file_text: str, i: int, text: str, j: int) -> bool:
    return file_text[i : i + 2] == "\r\n" and text[j : j + 1] == "\n"


def _difference(file_text: str, i: int, text: str, j: int) -> str:
    # lines as an editor shows them: a lone CR ends one too
    breaks = list(_LINE_BREAK.finditer(file_text, 0, i))
    line = len(breaks) + 1
    column = i - (breaks[-1].end() if breaks else 0) + 1
    return (
        f"at line {line}, column {column} (character {i}) the file has "
        f"{file_text[i : i + 20]!r} where the document text has {text[j : j + 20]!r}"
    )
