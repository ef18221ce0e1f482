"""Setting a view's text without cassis's per-character offset tables.

This replaces internals of cassis (``Sofa._sofaString`` and its offset
converter); :mod:`casflow.cas` checks the cassis version these were written
against and falls back to cassis's own setter for any other.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping

import cassis

from casflow.cas import cassis_version

# Characters beyond the Basic Multilingual Plane: two UTF-16 code units each.
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# In a Python str every surrogate is alone (a pair is one character beyond the BMP).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``text[offset]`` (lines end at LF), for messages that
    point a user at a character in the file."""
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def lone_surrogate(text: str) -> int | None:
    """Offset of the first lone UTF-16 surrogate in ``text`` (what ``errors=
    "surrogateescape"`` makes of a byte that did not decode), or None.

    Such a code point is no character: UTF-8, XML and the native tools refuse it."""
    found = _LONE_SURROGATE.search(text)
    return found.start() if found else None


def code_points_of_utf16(text: str) -> Mapping[int, int]:
    """UTF-16 offset -> code-point offset in ``text``; an offset outside the text, or
    between the two halves of a surrogate pair, is not a key."""
    astral = [m.start() for m in _ASTRAL.finditer(text)]
    return _Utf16Offsets(astral, len(text), to_utf16=False)


class _Utf16Offsets(Mapping[int, int]):
    """Code-point offset <-> UTF-16 offset of one text, from its astral characters only.

    cassis keeps this mapping as two dicts with an entry per character (about
    200 bytes of memory per character: 10 GB for a 50 MB article); the offsets
    differ only after characters beyond the BMP, so their positions suffice.
    """

    def __init__(self, astral: list[int], length: int, to_utf16: bool) -> None:
        self._astral = astral  # code-point positions of astral characters, ascending
        # UTF-16 positions where each astral character starts
        self._astral_utf16 = [p + k for k, p in enumerate(astral)]
        self._length = length
        self._to_utf16 = to_utf16

    def __getitem__(self, offset: int) -> int:
        if self._to_utf16:
            if not 0 <= offset <= self._length:
                raise KeyError(offset)
            return offset + bisect.bisect_left(self._astral, offset)
        if not 0 <= offset <= self._length + len(self._astral):
            raise KeyError(offset)
        before = bisect.bisect_right(self._astral_utf16, offset - 2)  # pairs ending at or before
        if before < len(self._astral_utf16) and self._astral_utf16[before] == offset - 1:
            raise KeyError(offset)  # inside a surrogate pair
        return offset - before

    def __iter__(self) -> Iterator[int]:
        if self._to_utf16:
            yield from range(self._length + 1)
            return
        inside = {u + 1 for u in self._astral_utf16}
        yield from (u for u in range(self._length + len(self._astral) + 1) if u not in inside)

    def __len__(self) -> int:
        return self._length + 1


def set_sofa_text(view: cassis.Cas, text: str) -> None:
    """Set the text of ``view`` as ``view.sofa_string = text`` does, in memory
    proportional to the text (not ~200 bytes per character as cassis needs).

    Falls back to cassis's own setter with a cassis release this was not checked
    against, or whose internals are not the expected ones.
    """
    sofa = view.get_sofa()
    converter = getattr(sofa, "_offset_converter", None)
    if converter is None or not (
        cassis_version.FAST_PATHS
        and hasattr(sofa, "_sofaString")
        and hasattr(converter, "_python_to_external")
        and hasattr(converter, "_external_to_python")
    ):
        view.sofa_string = text
        return
    astral = [m.start() for m in _ASTRAL.finditer(text)]
    sofa._sofaString = text
    converter._python_to_external = _Utf16Offsets(astral, len(text), to_utf16=True)
    converter._external_to_python = _Utf16Offsets(astral, len(text), to_utf16=False)
