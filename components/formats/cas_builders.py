"""Plain spans -> CAS annotations, shared by the gold-corpus readers and the importers.

Readers and importers parse their format into :class:`MentionSpec` and
:class:`TokenSpec` values (offsets into the view's text) and hand them here, so
every format produces the same CAS shape:

- mentions: an annotation of a ``NamedEntity`` (sub)type, ``value`` the class;
  a discontinuous mention covers its first to last piece and lists the pieces in
  ``fragments`` (``Fragment``, also indexed), as the CRAFT reader does;
  accepted alternatives are ``Alternative`` annotations (indexed, one per distinct
  span) listed in ``alternatives`` of every mention they belong to;
- sentences and tokens: ``Sentence`` from the first to the last token, ``Token``
  with ``id`` numbering from 1 (as CoNLL does), ``POS`` (``PosValue`` fine tag,
  ``coarseValue``) and ``Lemma`` linked through ``Token.pos`` / ``Token.lemma``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import cassis

from casflow.cas.metadata import set_document_metadata
from casflow.cas.sofa import set_sofa_text
from casflow.typesystem import (
    ALTERNATIVE,
    FRAGMENT,
    LEMMA,
    NAMED_ENTITY,
    POS,
    SENTENCE,
    TOKEN,
    load_typesystem,
    short_name,
)

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class MentionSpec:
    begin: int
    end: int
    value: str | None
    #: pieces of a discontinuous mention in text order; empty for a contiguous one
    fragments: tuple[Span, ...] = ()
    #: accepted alternative spans (gold only)
    alternatives: tuple[Span, ...] = ()
    identifier: str | None = None


@dataclass(frozen=True, slots=True)
class TokenSpec:
    begin: int
    end: int
    pos: str | None = None  # fine-grained tag (PosValue)
    coarse_pos: str | None = None  # coarse tag (coarseValue, UPOS)
    lemma: str | None = None


def resolve_mention_type(name: str) -> str:
    """Full name of ``NamedEntity`` or one of its subtypes, given a full or short name."""
    typesystem = load_typesystem()
    base = typesystem.get_type(NAMED_ENTITY)
    candidates = [t.name for t in typesystem.get_types() if typesystem.subsumes(base, t)] + [
        NAMED_ENTITY
    ]
    if name in candidates:
        return name
    matches = sorted({c for c in candidates if short_name(c) == name})
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(sorted({short_name(c) for c in candidates}))
    raise ValueError(f"{name!r} is not a mention type (NamedEntity or a subtype); known: {known}")


def set_text(view: cassis.Cas, text: str, doc_id: str, uri: str, language: str = "en") -> None:
    set_sofa_text(view, text)
    view.sofa_mime = "text/plain"
    set_document_metadata(view, doc_id, uri, language=language)


def _check_span(text_length: int, begin: int, end: int, what: str) -> None:
    if not 0 <= begin <= end <= text_length:
        raise ValueError(f"{what} ({begin}, {end}) lies outside the {text_length}-character text")


def add_mentions(
    view: cassis.Cas,
    type_name: str,
    mentions: Iterable[MentionSpec],
    *,
    unattached_alternatives: Iterable[Span] = (),
) -> list[Any]:
    """Add mentions (with fragments and alternatives) to ``view``; returns the mentions.

    ``unattached_alternatives`` are alternative spans that belong to no mention
    (e.g. BioCreative alternatives overlapping no gold gene); they are indexed so a
    writer can still find them, but no mention lists them.
    """
    typesystem = view.typesystem
    mention_type = typesystem.get_type(type_name)
    alternative_type = typesystem.get_type(ALTERNATIVE)
    fragment_type = typesystem.get_type(FRAGMENT)
    fs_array = typesystem.get_type("uima.cas.FSArray")
    length = len(view.sofa_string or "")
    alternatives: dict[Span, Any] = {}

    def alternative(span: Span) -> Any:
        found = alternatives.get(span)
        if found is None:
            _check_span(length, *span, "alternative")
            found = alternatives[span] = alternative_type(begin=span[0], end=span[1])
        return found

    out: list[Any] = []
    created: list[Any] = []
    for spec in mentions:
        _check_span(length, spec.begin, spec.end, f"mention {spec.value or ''}".rstrip())
        fields: dict[str, Any] = {"begin": spec.begin, "end": spec.end}
        if spec.value is not None:
            fields["value"] = spec.value
        if spec.identifier is not None:
            fields["identifier"] = spec.identifier
        if spec.fragments:
            pieces = []
            for begin, end in spec.fragments:
                _check_span(length, begin, end, "fragment")
                pieces.append(fragment_type(begin=begin, end=end))
            created.extend(pieces)
            fields["fragments"] = fs_array(elements=pieces)
        if spec.alternatives:
            fields["alternatives"] = fs_array(
                elements=[alternative(span) for span in spec.alternatives]
            )
        out.append(mention_type(**fields))
    for span in unattached_alternatives:
        alternative(span)
    view.add_all(out + created + list(alternatives.values()))
    return out


def add_sentences(
    view: cassis.Cas,
    sentences: Sequence[Sequence[TokenSpec]],
    *,
    ids: Sequence[str | None] | None = None,
    with_sentences: bool = True,
) -> list[list[Any]]:
    """Add Sentence, Token, POS and Lemma annotations; returns the tokens per sentence."""
    typesystem = view.typesystem
    sentence_type = typesystem.get_type(SENTENCE)
    token_type = typesystem.get_type(TOKEN)
    pos_type = typesystem.get_type(POS)
    lemma_type = typesystem.get_type(LEMMA)
    length = len(view.sofa_string or "")
    out: list[Any] = []
    tokens_per_sentence: list[list[Any]] = []
    for index, specs in enumerate(sentences):
        tokens = []
        for number, spec in enumerate(specs, start=1):
            _check_span(length, spec.begin, spec.end, "token")
            token = token_type(begin=spec.begin, end=spec.end, id=str(number))
            if spec.pos is not None or spec.coarse_pos is not None:
                token.pos = pos_type(
                    begin=spec.begin, end=spec.end, PosValue=spec.pos, coarseValue=spec.coarse_pos
                )
                out.append(token.pos)
            if spec.lemma is not None:
                token.lemma = lemma_type(begin=spec.begin, end=spec.end, value=spec.lemma)
                out.append(token.lemma)
            tokens.append(token)
        out.extend(tokens)
        tokens_per_sentence.append(tokens)
        if with_sentences and specs:
            sentence_id = ids[index] if ids is not None else None
            out.append(sentence_type(begin=specs[0].begin, end=specs[-1].end, id=sentence_id))
    view.add_all(out)
    return tokens_per_sentence


class LinkedMention(Protocol):
    """A located mention with its linked alternatives (bc2 and genetag both have these)."""

    begin: int
    end: int
    alternatives: list[Any]


def linked_specs(
    genes: Sequence[LinkedMention], unattached: Sequence[LinkedMention], value: str
) -> tuple[list[MentionSpec], list[Span]]:
    """Mention specs with their alternatives, and the alternative spans no gene lists."""
    specs = [
        MentionSpec(
            gene.begin,
            gene.end,
            value,
            alternatives=tuple((a.begin, a.end) for a in gene.alternatives),
        )
        for gene in genes
    ]
    return specs, [(a.begin, a.end) for a in unattached]


#: DKPro Core's label of the relation a sentence's root has to itself, and the
#: flavor of basic (tree) dependencies.
ROOT_LABEL = "ROOT"
BASIC_FLAVOR = "basic"


def is_root_relation(label: str | None) -> bool:
    """Whether a tool's label of a word at the root (HEAD 0) names the root relation:
    ``root``, ``ROOT``, a subtype ``root:x``, or no label."""
    return not label or label.split(":", 1)[0].lower() == "root"


def root_label(label: str | None) -> str | None:
    """DependencyType of a word a tool hung from the root: ``ROOT`` (DKPro's) for the
    root relation, the tool's own label otherwise. Turning ``0 punct`` into ROOT would
    count a wrong label on the right root word as correct for LAS, where
    conll18_ud_eval.py counts it wrong; ``conllu.import.v1``, ``stanza.pipeline.v1`` and
    ``udpipe.v1`` keep it alike, so a parse scores the same in the chain and imported."""
    return ROOT_LABEL if is_root_relation(label) else label


def dependency_annotation(
    dependency_type: Any,
    root_type: Any,
    dependent: Any,
    governor: Any | None,
    label: str,
    *,
    keep_root_label: bool = False,
) -> Any:
    """One DKPro basic dependency over ``dependent``'s span, not yet added to a view.

    A root (``governor`` None or the dependent itself) is DKPro's ROOT annotation
    with the token as its own governor and the label ``ROOT``, as DKPro Core's
    readers write it; with ``keep_root_label`` (a tool that labels the root relation,
    as UD parsers do) a label other than root is kept (:func:`root_label`).
    """
    if governor is None or governor is dependent:
        return root_type(
            begin=dependent.begin,
            end=dependent.end,
            Governor=dependent,
            Dependent=dependent,
            DependencyType=root_label(label) if keep_root_label else ROOT_LABEL,
            flavor=BASIC_FLAVOR,
        )
    return dependency_type(
        begin=dependent.begin,
        end=dependent.end,
        Governor=governor,
        Dependent=dependent,
        DependencyType=label,
        flavor=BASIC_FLAVOR,
    )
