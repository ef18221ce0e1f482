"""Abbreviation definitions "long form (SF)" (Schwartz & Hearst 2003) as token features.

A short form used anywhere in a document then carries features of its long form
(its last word, the long form's dictionary classes), so "CRC" is tagged like
"colorectal cancer" once "colorectal cancer (CRC)" has been seen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from casflow.components.crfsuite.tokenize import Span

_PAREN = re.compile(r"\(([^()]{1,12})\)")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Abbreviation:
    short: str
    long: str


def _valid_short(short: str) -> bool:
    return (
        2 <= len(short) <= 10
        and len(short.split()) <= 2
        and short[0].isalnum()
        and any(c.isalpha() for c in short)
    )


def _match_long(short: str, candidate: str) -> str | None:
    """Schwartz-Hearst backward match: the shortest suffix of ``candidate`` that spells ``short``."""
    s, l_ = len(short) - 1, len(candidate) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while l_ >= 0 and (
            candidate[l_].lower() != c or (s == 0 and l_ > 0 and candidate[l_ - 1].isalnum())
        ):
            l_ -= 1
        if l_ < 0:
            return None
        l_ -= 1
        s -= 1
    start = candidate.rfind(" ", 0, l_ + 1) + 1
    long = candidate[start:].strip()
    if len(long) <= len(short) or short.lower() in long.lower().split():
        return None
    return long


#: where a sentence or a paragraph ends: a long form never reaches back over it
_SENTENCE_END = re.compile(r"\n|[.!?][\"')\]]*\s")


def abbreviation_definitions(text: str, within_sentence: bool = False) -> list[Abbreviation]:
    """Every "long form (SF)" definition in ``text``, in text order (a short form may be
    defined more than once, with different long forms).

    ``within_sentence``: a long form starts after the last line break or sentence end
    before the brackets ("region.\n\nCancer (CRC)" defines nothing). The features
    (:func:`find_abbreviations`) do not cut, as the shipped models were trained so."""
    found: list[Abbreviation] = []
    for match in _PAREN.finditer(text):
        short = match.group(1).strip()
        if not _valid_short(short):
            continue
        before = text[max(0, match.start() - 200) : match.start()]
        if within_sentence:
            ends = list(_SENTENCE_END.finditer(before))
            if ends:
                before = before[ends[-1].end() :]
        words = [m for m in _WORD.finditer(before)]
        limit = min(len(short) + 5, 2 * len(short))
        words = words[-limit:]
        if not words:
            continue
        candidate = before[words[0].start() :].rstrip()
        long = _match_long(short, candidate)
        if long is not None:
            found.append(Abbreviation(short, long))
    return found


def find_abbreviations(text: str) -> dict[str, str]:
    """Short form -> long form for every "long form (SF)" definition in ``text``; a short
    form defined twice keeps its first long form (the features the shipped models were
    trained with)."""
    found: dict[str, str] = {}
    for definition in abbreviation_definitions(text):
        found.setdefault(definition.short, definition.long)
    return found


def abbreviation_features(
    text: str,
    spans: Sequence[Span],
    abbreviations: dict[str, str],
    long_form_classes: dict[str, list[str]] | None = None,
) -> list[list[str]]:
    """Per token: features of the long form when the token (run) spells a defined short form."""
    out: list[list[str]] = [[] for _ in spans]
    if not abbreviations:
        return out
    longest = max(len(s) for s in abbreviations)
    for i in range(len(spans)):
        for j in range(min(len(spans), i + 6), i, -1):
            piece = text[spans[i][0] : spans[j - 1][1]]
            if len(piece) > longest or piece not in abbreviations:
                continue
            long = abbreviations[piece]
            words = long.lower().split()
            feats = ["abbr", "abbr_last=" + words[-1], "abbr_s3=" + words[-1][-3:]]
            for cls in (long_form_classes or {}).get(piece, []):
                feats.append("abbr_dict=" + cls)
            for k in range(i, j):
                out[k].extend(feats)
            break
    return out
