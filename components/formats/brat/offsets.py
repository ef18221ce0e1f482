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
    #: where the file and the document text first differ past the offsets :func:`align`
    #: was asked to map (None: nowhere); offsets there have no place in the text
    later_difference: str | None = None

    def to_text(self, offset: int) -> int:
        # Both sides of a dropped CR map to where its LF is in the document text: a span
        # that begins inside a CRLF pair begins at the line break, one that ends inside
        # it ends before the line break (the CR it covered is not in the text).
        return offset - bisect_left(self.dropped, offset)

    def span(self, begin: int, end: int) -> tuple[int, int]:
        return self.to_text(begin), self.to_text(end)


def _crlf_positions(file_text: str, start: int, stop: int) -> tuple[int, ...]:
    positions = []
    found = file_text.find("\r\n", start, stop)
    while found != -1:
        positions.append(found)
        found = file_text.find("\r\n", found + 2, stop)
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


def align(file_text: str, text: str, up_to: int | None = None) -> FileOffsets:
    """Map ``file_text`` (a file's characters, as brat counts them) onto ``text``, the
    document text read from it: a leading byte-order mark and the CR of a CRLF may be
    missing from ``text``; a lone CR may be kept or read as LF. Any other difference
    raises :class:`ValueError` naming where the two first differ (a text that is not
    the file's, whose offsets would then be wrong).

    With ``up_to``, only the offsets up to it are mapped, so only the file's first
    ``up_to`` characters must be read from ``text``: a difference after them (an editor's
    final newline) is told in ``later_difference`` instead of raised."""
    bom: tuple[int, ...] = (0,) if file_text[:1] == _BOM and text[:1] != _BOM else ()
    start = len(bom)
    # The usual case, text.reader.v1's own reading, without a walk over every character.
    if file_text[start:].replace("\r\n", "\n") == text:
        return FileOffsets(bom + _crlf_positions(file_text, start, len(file_text)))
    stop = len(file_text) if up_to is None else max(start, min(up_to, len(file_text)))
    head = file_text[start:stop].replace("\r\n", "\n")
    # Where only the text after the last offset differs (an editor's final newline), as
    # quick: a CR ending the head, half a CRLF pair, is kept by a text starting with it.
    if text.startswith(head):
        dropped = list(bom + _crlf_positions(file_text, start, stop))
        i, j = stop, len(head)
    else:
        dropped = list(bom)
        i, j = _walk(file_text, start, text, 0, stop, dropped)
        if i < stop:
            raise ValueError(_difference(file_text, i, text, j))
    if up_to is None:
        if j < len(text):
            raise ValueError(_difference(file_text, i, text, j))
        return FileOffsets(tuple(dropped))
    # the rest is walked only to say where it differs: no offset there is mapped
    rest_i, rest_j = _walk(file_text, i, text, j, len(file_text), [])
    later = None
    if rest_i < len(file_text) or rest_j < len(text):
        later = _difference(file_text, rest_i, text, rest_j)
    return FileOffsets(tuple(dropped), later)


def _walk(
    file_text: str, i: int, text: str, j: int, stop: int, dropped: list[int]
) -> tuple[int, int]:
    """Read ``file_text`` from ``i`` against ``text`` from ``j`` until ``stop`` or the first
    difference, adding the CRs that ``text`` does not hold to ``dropped``; where it ended."""
    while i < stop:
        # a CRLF is looked at whole, also where stop falls between its CR and LF
        if _crlf_read_as_lf(file_text, i, text, j):
            dropped.append(i)
            i += 1
        elif j < len(text) and _same(file_text[i], text[j]):
            i += 1
            j += 1
        else:
            break
    return i, j


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
