"""Post-processing of tagged mentions.

- ``balance_brackets`` (BANNER's rule): a gene name never has unbalanced
  brackets; when a tagged mention does, the tagger stopped one token early or
  late, so the mention is extended over the bracket right after it (or before
  it), or the stray bracket at its edge is dropped (with the whitespace it
  leaves at the edge); mentions that cannot be repaired that way are removed.
- ``drop_long_chunks``: a whitespace-free run of 50 or more characters is an
  encoded formula or image (PMC text holds "MathType@MTEF@..." strings), never
  an entity; the tokenizer splits it into many tokens that the tagger sometimes
  labels, so mentions inside such runs are removed.

Document-level steps see every mention of a document after tagging (and after
the members' vote):

- ``propagate_abbreviations``: a short form defined as "long form (SF)" in the
  document is tagged wherever it stands, with the class of a tagged mention that
  spells the long form or its last words ("human colorectal cancer (CRC)" with
  "colorectal cancer" tagged as Cancer makes every "CRC" a Cancer); the
  abbreviation features alone leave many short forms untagged. A definition's
  long form lies within its sentence ("region.\n\nCancer (CRC)" defines nothing
  here). A short form defined with two different long forms ("colorectal
  carcinoma (CC)", "corpus callosum (CC)") is ambiguous: it is not propagated,
  and each definition keeps the tagger's own tags.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from casflow.components.crfsuite.abbreviations import abbreviation_definitions
from casflow.components.metrics.segmentation import trim_span

Mention = tuple[int, int, str, float]
_PAIRS = (("(", ")"), ("[", "]"))


def _balanced(piece: str) -> bool:
    return all(piece.count(o) == piece.count(c) for o, c in _PAIRS)


def _trimmed(text: str, begin: int, end: int) -> tuple[int, int] | None:
    """``(begin, end)`` without the whitespace at its edges ("( IL-2" less its
    bracket is "IL-2", not " IL-2"); None when nothing is left."""
    begin, end = trim_span(text, begin, end)
    return (begin, end) if begin < end else None


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
            repaired = _trimmed(text, begin, end - 1)
        elif repaired is None and len(piece) > 1 and piece[0] in "()[]":
            repaired = _trimmed(text, begin + 1, end)
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


def _long_form_mention(long: str, tagged: dict[str, Mention]) -> Mention | None:
    """The tagged mention spelling ``long``, else its longest run of last words."""
    words = long.lower().split()
    for first in range(len(words)):
        found = tagged.get(" ".join(words[first:]))
        if found is not None:
            return found
    return None


def propagate_abbreviations(text: str, mentions: Sequence[Mention]) -> list[Mention]:
    # the first mention of each (lower-cased, whitespace-normalised) string gives the class
    tagged: dict[str, Mention] = {}
    for mention in mentions:
        tagged.setdefault(" ".join(text[mention[0] : mention[1]].lower().split()), mention)
    taken = [(m[0], m[1]) for m in mentions]
    added: list[Mention] = []
    long_forms: dict[str, dict[str, str]] = {}  # short -> normalised long -> long
    for definition in abbreviation_definitions(text, within_sentence=True):
        normalised = " ".join(definition.long.lower().split())
        long_forms.setdefault(definition.short, {}).setdefault(normalised, definition.long)
    for short, longs in long_forms.items():
        if len(longs) > 1:
            continue  # ambiguous: which long form an occurrence means is not known
        long = next(iter(longs.values()))
        source = _long_form_mention(long, tagged)
        if source is None:
            continue
        for match in re.finditer(re.escape(short), text):
            begin, end = match.span()
            # whole words only: "CRC" is not in "CRCs" or "pCRC1"
            if (begin > 0 and text[begin - 1].isalnum()) or (
                end < len(text) and text[end].isalnum()
            ):
                continue
            if any(b < end and begin < e for b, e in taken):
                continue
            taken.append((begin, end))
            added.append((begin, end, source[2], source[3]))
    return sorted([*mentions, *added])


DocumentStep = Callable[[str, Sequence[Mention]], list[Mention]]
#: steps over a whole document's mentions (a model's meta names them)
DOCUMENT_POSTPROCESSORS: dict[str, DocumentStep] = {
    "propagate_abbreviations": propagate_abbreviations
}


def known_document_steps(names: list[str]) -> list[str]:
    """``names`` if every one is a document step (a config validator's check), else
    ValueError naming the unknown ones and the known."""
    unknown = [name for name in names if name not in DOCUMENT_POSTPROCESSORS]
    if unknown:
        raise ValueError(
            f"unknown document post-processing {', '.join(unknown)}; known: "
            f"{', '.join(DOCUMENT_POSTPROCESSORS)}"
        )
    return names
