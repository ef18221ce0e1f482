"""Multi-word tokens (one surface token, several syntactic words) onto CAS Tokens.

A CAS Token is a span of text, so a surface token whose words are not substrings
of it (``won't`` read as ``will`` + ``n't``, French ``du`` as ``de`` + ``le``) cannot
give each word a Token of its own. Every source of such tokens (``stanza.pipeline.v1``,
``udpipe.v1``, ``conllu.import.v1``) writes them the same way:

- words that spell the surface exactly (``cannot`` = ``can`` + ``not``) become one
  Token each at its own offsets inside it (:func:`spelled_word_spans`);
- otherwise the surface token is one Token carrying the analysis of its head word
  (:func:`head_words`): relations between its own words are not written, and a
  relation of another word to any of them has that Token as its governor.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

Span = tuple[int, int]
Unit = TypeVar("Unit", bound=Hashable)


def spelled_word_spans(surface: str, begin: int, forms: Sequence[str]) -> list[Span] | None:
    """Offsets of each word of the surface token ``surface`` starting at ``begin``, when
    the word forms concatenated are exactly ``surface``; else None (one Token for all)."""
    if len(forms) == 1:
        return [(begin, begin + len(surface))]
    if not all(forms) or "".join(forms) != surface:
        return None
    spans = []
    position = begin
    for form in forms:
        spans.append((position, position + len(form)))
        position += len(form)
    return spans


def surface_tokens(
    text: str, begin: int, end: int, forms: Sequence[str], make_token: Callable[..., Any]
) -> list[Any]:
    """Per word of the surface token ``text[begin:end]`` (its word ``forms``), its Token,
    made by ``make_token(begin=, end=)``: one each where the forms spell the token, else
    one shared by all of them (in a row, so :func:`distinct` finds it once)."""
    pieces = spelled_word_spans(text[begin:end], begin, forms)
    if pieces is None:
        return [make_token(begin=begin, end=end)] * len(forms)
    return [make_token(begin=b, end=e) for b, e in pieces]


def distinct(tokens: Sequence[Any]) -> list[Any]:
    """Each Token once: the words of a merged multiword token share one, in a row."""
    return [t for i, t in enumerate(tokens) if i == 0 or t is not tokens[i - 1]]


def head_words(units: Sequence[Unit], heads: Sequence[int | None]) -> dict[Unit, int]:
    """For each unit (a CAS Token), the index of the word whose analysis it carries.

    ``units[i]`` is the unit of word ``i``, ``heads[i]`` the 1-based index of its head
    (0 or None: none). The word chosen is the unit's word nearest the root, the first
    of them on a tie: its head lies outside the unit, and each unit's governor is then
    nearer the root than the unit itself, so the relations between units still form a
    tree. (The first word whose head lies outside would not: when a word of the unit
    hangs from an outside word that hangs from another of its words, the two units
    would govern each other.)
    """
    depths = _depths(heads)
    chosen: dict[Unit, int] = {}
    for i, unit in enumerate(units):
        if unit not in chosen or depths[i] < depths[chosen[unit]]:
            chosen[unit] = i
    return chosen


def _depths(heads: Sequence[int | None]) -> list[int]:
    """Steps from each word up to a word without a head; words on or under a cycle of
    heads (a tool's malformed output) count as deeper than any word of a tree."""
    count = len(heads)
    depths: list[int | None] = [None] * count
    for start in range(count):
        path: list[int] = []
        on_path: set[int] = set()
        node = start
        while True:
            known = depths[node]
            if known is not None:
                base = known
                break
            if node in on_path:
                base = count
                break
            path.append(node)
            on_path.add(node)
            head = heads[node]
            if not head or head > count:
                base = -1
                break
            node = head - 1
        for steps, word in enumerate(reversed(path), start=1):
            depths[word] = min(base + steps, count)
    return [depth if depth is not None else count for depth in depths]
