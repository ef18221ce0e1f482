"""Post-processing of tagged mentions.

- ``balance_brackets`` (BANNER's rule): a gene name never has unbalanced
  brackets; when a tagged mention does, the tagger stopped one token early or
  late, so the mention is extended over the bracket right after it (or before
  it), or the stray bracket at its edge is dropped; mentions that cannot be
  repaired that way are removed.
- ``drop_long_chunks``: a whitespace-free run of 50 or more characters is an
  encoded formula or image (PMC text holds "MathType@MTEF@..." strings), never
  an entity; the tokenizer splits it into many tokens that the tagger sometimes
  labels, so mentions inside such runs are removed.
"""

from __future__ import annotations

from collections.abc import Sequence

Mention = tuple[int, int, str, float]
_PAIRS = (("(", ")"), ("[", "]"))


def _balanced(piece: str) -> bool:
    return all(piece.count(o) == piece.count(c) for o, c in _PAIRS)


def balance_brackets(text: str, mentions: Sequence[Mention]) -> list[Mention]:
    out: list[Mention] = []
    for begin, end, label, confidence in mentions:
        piece = text[begin:end]
        if _balanced(piece):
            out.append((begin, end, label, confidence))
            continue
        repaired = None
        for opening, closing in _PAIRS:
            if piece.count(opening) > piece.count(closing) and text[end : end + 1] == closing:
                repaired = (begin, end + 1)
            elif piece.count(closing) > piece.count(opening) and text[begin - 1 : begin] == opening:
                repaired = (begin - 1, end)
            if repaired:
                break
        if repaired is None and len(piece) > 1 and piece[-1] in "()[]":
            repaired = (begin, end - 1)
        elif repaired is None and len(piece) > 1 and piece[0] in "()[]":
            repaired = (begin + 1, end)
        if repaired is not None and _balanced(text[repaired[0] : repaired[1]]):
            out.append((*repaired, label, confidence))
    return out


LONG_CHUNK = 50


def drop_long_chunks(text: str, mentions: Sequence[Mention]) -> list[Mention]:
    out: list[Mention] = []
    for mention in mentions:
        begin, end = mention[0], mention[1]
        while begin > 0 and not text[begin - 1].isspace():
            begin -= 1
        while end < len(text) and not text[end].isspace():
            end += 1
        if end - begin < LONG_CHUNK:
            out.append(mention)
    return out


POSTPROCESSORS = {"balance_brackets": balance_brackets, "drop_long_chunks": drop_long_chunks}
