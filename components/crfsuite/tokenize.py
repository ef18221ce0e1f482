"""Fine-grained tokenization with exact character offsets.

Gene and anatomy mention boundaries fall inside whitespace-delimited words
("IL-2-induced", "p53/p21", "(CD4+)"), so tokens split at every punctuation
character and at letter/digit transitions, as BANNER does. The tagger works on
these tokens; a mention is a run of them, mapped back to exact character spans.
"""

from __future__ import annotations

import re

# a run of letters, a run of digits, or one other non-space character
_TOKEN = re.compile(r"[^\W\d_]+|\d+|\S", re.UNICODE)

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
