"""Shared pieces of the sentence + mention-line formats (BC2GM, GENETAG).

Both formats give gold mentions as lines pointing into a sentence file, plus
accepted alternatives linked to the gold mentions they overlap. This module
holds what does not depend on how a line points into its sentence: the located
mention, the corpus, locating many lines, linking alternatives, loading a portion.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

from casflow.components.formats.common import FormatError, link_by_overlap, warn

__all__ = [
    "LocatedMention",
    "MentionCorpus",
    "OnMismatch",
    "check_text",
    "link_alternatives",
    "load_located",
    "locate_all",
]

OnMismatch = Literal["raise", "warn"]


class MentionLine(Protocol):
    """What every mention line has: its sentence and where it was read."""

    @property
    def sentence_id(self) -> str: ...

    @property
    def source(self) -> str | None: ...

    @property
    def line(self) -> int | None: ...


class HasId(Protocol):
    @property
    def id(self) -> str: ...


M = TypeVar("M", bound=MentionLine)
S = TypeVar("S", bound=HasId)


@dataclass
class LocatedMention(Generic[M]):
    """A mention with character offsets into its sentence text (end exclusive)."""

    mention: M
    begin: int
    end: int
    #: False when the line's text differs from the text it points at (kept with on_mismatch="warn").
    text_matches: bool = True
    alternatives: list[LocatedMention[M]] = field(default_factory=list)

    @property
    def sentence_id(self) -> str:
        return self.mention.sentence_id


@dataclass
class MentionCorpus(Generic[S, M]):
    """Sentences with their located gold mentions, alternatives linked."""

    sentences: list[S]
    genes: dict[str, list[LocatedMention[M]]]
    #: alternatives overlapping no gold mention of their sentence
    orphan_alternatives: list[LocatedMention[M]]
    #: sentence id -> why a mention line of it could not be located (the sentence is
    #: then unusable; its other lines are still read), when the loader was asked to
    #: keep going (``failed`` of :func:`locate_all`)
    failed: dict[str, str] = field(default_factory=dict)


def check_text(
    mention: M,
    begin: int,
    end: int,
    mismatch: str | None,
    *,
    kept: str,
    on_mismatch: OnMismatch,
) -> LocatedMention[M]:
    """The located mention; ``mismatch`` (the message, None if the texts agree) raises or
    warns per ``on_mismatch``, the warning ending with ``kept`` (what was kept)."""
    if mismatch is not None:
        if on_mismatch == "raise":
            raise FormatError(mismatch, source=mention.source, line=mention.line)
        warn(mismatch + kept, source=mention.source, line=mention.line)
    return LocatedMention(mention, begin, end, mismatch is None)


def locate_all(
    sentences: Sequence[S] | dict[str, S],
    mentions: Iterable[M],
    locate: Callable[..., LocatedMention[M]],
    *,
    on_mismatch: OnMismatch,
    sentence_file: str,
    failed: dict[str, str] | None = None,
) -> list[LocatedMention[M]]:
    """``locate(sentence, mention, on_mismatch=...)`` each mention; an unknown sentence id
    (said to be missing from ``sentence_file``) raises, or with ``on_mismatch="warn"`` skips
    the line. A line that cannot be located (offsets outside its sentence; a text mismatch
    with ``on_mismatch="raise"``) raises, or with ``failed`` given is skipped and its error
    recorded there under its sentence id (the first error per sentence), so that one bad
    line costs its sentence only."""
    by_id = sentences if isinstance(sentences, dict) else {s.id: s for s in sentences}
    located = []
    for mention in mentions:
        sentence = by_id.get(mention.sentence_id)
        if sentence is None:
            message = f"sentence id {mention.sentence_id} is not in the {sentence_file}"
            if on_mismatch == "raise":
                raise FormatError(message, source=mention.source, line=mention.line)
            warn(message + "; line skipped", source=mention.source, line=mention.line)
            continue
        try:
            located.append(locate(sentence, mention, on_mismatch=on_mismatch))
        except FormatError as exc:
            if failed is None:
                raise
            failed.setdefault(mention.sentence_id, str(exc))
    return located


def link_alternatives(
    genes: Sequence[LocatedMention[M]],
    alternatives: Iterable[LocatedMention[M]],
    span: Callable[[M], tuple[int, int]],
) -> list[LocatedMention[M]]:
    """Append each alternative to ``.alternatives`` of every gene of its sentence whose
    ``span`` (first, last inclusive) it overlaps; returns those overlapping none."""
    linked, orphans = link_by_overlap(
        list(genes),
        list(alternatives),
        key=lambda m: (m.mention.sentence_id, *span(m.mention)),
    )
    for gene, alts in zip(genes, linked, strict=True):
        gene.alternatives.extend(alts)
    return orphans


def _unique(
    genes: list[LocatedMention[M]], path: str | os.PathLike[str] | None
) -> list[LocatedMention[M]]:
    first: dict[tuple[str, int, int], LocatedMention[M]] = {}
    repeats: list[tuple[LocatedMention[M], LocatedMention[M]]] = []
    for gene in genes:
        key = (gene.sentence_id, gene.begin, gene.end)
        if key in first:
            repeats.append((gene, first[key]))
        else:
            first[key] = gene
    if not repeats:
        return genes
    again, earlier = repeats[0]
    warn(
        f"{len(repeats)} gold mention line(s) repeat an earlier line of the same sentence and "
        f"span (e.g. line {again.mention.line} repeats line {earlier.mention.line}, sentence "
        f"{again.sentence_id}); each mention read once",
        source=str(path) if path is not None else None,
        line=None,
    )
    return list(first.values())


def load_located(
    sentences: Sequence[S],
    genes_path: str | os.PathLike[str] | None,
    alternatives_path: str | os.PathLike[str] | None,
    locate_file: Callable[[dict[str, S], str | os.PathLike[str]], list[LocatedMention[M]]],
    link: Callable[[Sequence[LocatedMention[M]], list[LocatedMention[M]]], list[LocatedMention[M]]],
) -> tuple[dict[str, list[LocatedMention[M]]], list[LocatedMention[M]]]:
    """Gold mentions per sentence id (every sentence listed) and the orphan alternatives,
    each file read with ``locate_file`` and the alternatives attached with ``link``. A gold
    mention repeating an earlier one (same sentence and span) is dropped with one warning
    for the file: counted twice, it would inflate the recall denominator."""
    by_id = {s.id: s for s in sentences}
    genes = locate_file(by_id, genes_path) if genes_path is not None else []
    genes = _unique(genes, genes_path)
    orphans: list[LocatedMention[M]] = []
    if alternatives_path is not None:
        orphans = link(genes, locate_file(by_id, alternatives_path))
    genes_by_sentence: dict[str, list[LocatedMention[M]]] = {s.id: [] for s in sentences}
    for gene in genes:
        genes_by_sentence[gene.sentence_id].append(gene)
    return genes_by_sentence, orphans
