"""Fine-grained tokenization with exact character offsets.

Gene and anatomy mention boundaries fall inside whitespace-delimited words
("IL-2-induced", "p53/p21", "(CD4+)"), so tokens split at every punctuation
character and at letter/digit transitions, as BANNER does. The tagger works on
these tokens; a mention is a run of them, mapped back to exact character spans.
"""

from __future__ import annotations

import re
import unicodedata


def is_combining_mark(char: str) -> bool:
    """Whether ``char`` is a combining mark (Unicode category M), which belongs with the
    character before it; the one test of it for casflow's tokens and the wrapped tools'."""
    return unicodedata.category(char).startswith("M")


def _combining_marks() -> str:
    """A regex character class of every combining mark (Unicode category M).

    Python's ``\\w`` leaves them out, so ``e`` + U+0301 ("é" written decomposed) would be
    two tokens and a mention boundary could fall between a letter and its accent.
    """
    ranges: list[str] = []
    start: int | None = None
    # Marks lie in planes 0 and 1 and among the variation selectors of plane 14.
    for cp in [*range(0x20000), *range(0xE0000, 0xE1000), 0xE1000]:
        mark = cp < 0xE1000 and is_combining_mark(chr(cp))
        if mark and start is None:
            start = cp
        elif not mark and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(cp - 1))}")
            start = None
    return "[" + "".join(ranges) + "]"


_MARK = _combining_marks()
# a run of letters, a run of digits, or one other non-space character, each with the
# combining marks that follow it
_TOKEN = re.compile(rf"[^\W\d_](?:[^\W\d_]|{_MARK})*|\d(?:\d|{_MARK})*|\S{_MARK}*")

Span = tuple[int, int]


def tokenize(text: str, begin: int = 0, end: int | None = None) -> list[Span]:
    """Token spans (begin, exclusive end) of ``text[begin:end]``, as offsets into ``text``."""
    end = len(text) if end is None else end
    return [m.span() for m in _TOKEN.finditer(text, begin, end)]


def refine(text: str, spans: list[Span]) -> list[Span]:
    """Split existing token spans (e.g. a pipeline's Token annotations) the same way."""
    out: list[Span] = []
    for b, e in spans:
        out.extend(tokenize(text, b, e))
    return out
