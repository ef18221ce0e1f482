"""A gold CAS view -> :class:`MentionDocument` (what ``train.crf.mentions.v1`` trains on).

A document's sentences are the view's ``Sentence`` annotations (the rule-based
splitter's when it has none); each becomes an :class:`Example` on casflow's own
tokens (:func:`~.tokenize.tokenize` over the sentence), so training sees the
tokens the component produces from raw text. Mentions of one type become gold mentions
whose class is either one fixed label (genes) or the mention's ``value`` (the
AnatEM classes); BioCreative alternatives ride along for ``alt_eval`` scoring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import cassis

from casflow.components.crfsuite.tokenize import Span, tokenize
from casflow.typesystem import (
    ALTERNATIVE,
    ANATOMY_MENTION,
    GENE_MENTION,
    SENTENCE,
    short_name,
)

#: layer -> the mention type a mention trainer (train.crf.mentions.v1,
#: train.stanza.ner.v1) learns for it
MENTION_LAYERS = {"genes": GENE_MENTION, "anatomy": ANATOMY_MENTION}
#: the same as a trainer's ``layers`` (layer -> the types its gold view must hold)
MENTION_LAYER_TYPES: dict[str, tuple[str, ...]] = {
    layer: (mention_type,) for layer, mention_type in MENTION_LAYERS.items()
}


def mention_layer_problems(model: str, layers: Sequence[str]) -> list[str]:
    """A workflow's ``layers`` for a mention trainer, checked before training: one model
    learns one mention type (``model`` names the kind, e.g. "a CRF model")."""
    if len(set(layers)) > 1:
        return [f"{model} learns one mention layer: genes or anatomy, not both"]
    return []


def one_mention_layer(trainer: str, layers: Sequence[str]) -> str:
    """The one mention layer among ``layers``, else a ValueError naming ``trainer`` and
    what to write in the workflow."""
    chosen = [layer for layer in layers if layer in MENTION_LAYERS]
    if len(chosen) != 1:
        raise ValueError(f"{trainer} learns one mention layer: give layers: [genes] or [anatomy]")
    return chosen[0]


@dataclass
class GoldMention:
    """A gold mention: character span, class, accepted alternative spans (BioCreative)."""

    begin: int
    end: int
    label: str
    alternatives: tuple[Span, ...] = ()


@dataclass
class Example:
    """One training sentence: the text it lives in, its casflow token spans, its mentions."""

    id: str
    text: str
    tokens: list[Span]
    mentions: list[GoldMention] = field(default_factory=list)


@dataclass
class MentionDocument:
    """One gold document: its text, sentence spans, all its mentions, its training units."""

    id: str
    text: str
    sentences: list[Span]
    mentions: list[GoldMention]
    #: every accepted alternative span of the document (BioCreative ``Alternative``), those
    #: that belong to no gold mention included: alt_eval.perl accepts a system mention equal
    #: to any of them
    accepted: tuple[Span, ...] = ()
    #: one per sentence, on casflow tokens; mentions assigned to the sentence they start in
    examples: list[Example] = field(default_factory=list)


def _label(annotation: Any, label: str | None) -> str:
    return label or getattr(annotation, "value", None) or short_name(annotation.type.name)


def _alternatives(annotation: Any) -> tuple[Span, ...]:
    array = getattr(annotation, "alternatives", None)
    elements = array.elements if array is not None and array.elements else []
    return tuple(sorted((a.begin, a.end) for a in elements))


def _sentence_spans(view: cassis.Cas, text: str) -> list[Span]:
    spans = sorted({(s.begin, s.end) for s in view.select(SENTENCE)})
    if spans:
        return spans
    from casflow.components.rules.sentences import split_sentences

    return [(b, e) for b, e in split_sentences(text)]


def _home(mention: GoldMention, sentences: list[Span]) -> int | None:
    """The sentence a mention is learned in: the one it starts in (else the first it overlaps)."""
    for i, (begin, end) in enumerate(sentences):
        if begin <= mention.begin < end:
            return i
    for i, (begin, end) in enumerate(sentences):
        if mention.begin < end and begin < mention.end:
            return i
    return None


def mention_document(
    view: cassis.Cas, doc_id: str, mention_type: str, label: str | None = None
) -> MentionDocument:
    """The gold mentions of ``mention_type`` in ``view`` with the training units they make.

    ``label``: the class of every mention (e.g. ``GENE``); None: each mention's value.
    """
    text = view.sofa_string or ""
    mentions = sorted(
        (
            GoldMention(m.begin, m.end, _label(m, label), _alternatives(m))
            for m in view.select(mention_type)
        ),
        key=lambda m: (m.begin, m.end, m.label),
    )
    sentences = _sentence_spans(view, text)
    by_sentence: list[list[GoldMention]] = [[] for _ in sentences]
    for mention in mentions:
        home = _home(mention, sentences)
        if home is not None:
            by_sentence[home].append(mention)
    examples = [
        Example(f"{doc_id}#{number}", text, tokenize(text, begin, end), found)
        for number, ((begin, end), found) in enumerate(zip(sentences, by_sentence, strict=True))
    ]
    accepted = tuple(sorted({(a.begin, a.end) for a in view.select(ALTERNATIVE)}))
    return MentionDocument(doc_id, text, sentences, mentions, accepted, examples)
