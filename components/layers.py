"""The analysis layers a tool wrapper writes, as type-system names, and how they are added.

Shared by the wrappers of spaCy, Stanza, UDPipe and the others, so each one
declares the same ``produces`` for the same layers and maps tool entity labels
onto the same mention types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import cassis
from pydantic import BaseModel, ConfigDict, Field

from casflow.cas.metadata import find_document_id
from casflow.pipeline.component import DocumentWarning
from casflow.typesystem import (
    ANATOMY_MENTION,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    GENE_MENTION,
    LEMMA,
    NAMED_ENTITY,
    POS,
    SENTENCE,
    TOKEN,
)

Layer = Literal["sentences", "tokens", "pos", "lemma", "dependencies", "entities"]
ALL_LAYERS: tuple[Layer, ...] = ("sentences", "tokens", "pos", "lemma", "dependencies", "entities")
EntityKind = Literal["gene", "anatomy", "named_entity"]
UnmappedEntities = Literal["named_entity", "drop"]

ENTITY_TYPE_NAMES: dict[str, str] = {
    "gene": GENE_MENTION,
    "anatomy": ANATOMY_MENTION,
    "named_entity": NAMED_ENTITY,
}


class EntityTarget(BaseModel):
    """Where entities with one spaCy label go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: EntityKind = Field(
        "named_entity",
        description="gene: GeneMention, anatomy: AnatomyMention, named_entity: NamedEntity.",
    )
    value: str | None = Field(
        None, description="Class label written to NamedEntity.value (default: the spaCy label)."
    )


def produced_types(
    layers: Iterable[str], entity_mapping: Mapping[str, EntityTarget], unmapped: UnmappedEntities
) -> tuple[str, ...]:
    """Type names (and ``Type:feature``) written for ``layers``."""
    layers = set(layers)
    out: list[str] = []
    if "sentences" in layers:
        out.append(SENTENCE)
    if "tokens" in layers:
        out.append(TOKEN)
    if "pos" in layers:
        out += [POS, f"{TOKEN}:pos"]
    if "lemma" in layers:
        out += [LEMMA, f"{TOKEN}:lemma"]
    if "dependencies" in layers:
        out += [DEPENDENCY, DEPENDENCY_ROOT]
    if "entities" in layers:
        kinds = {target.type for target in entity_mapping.values()}
        if unmapped == "named_entity":
            kinds.add("named_entity")
        out += [ENTITY_TYPE_NAMES[k] for k in ENTITY_TYPE_NAMES if k in kinds]
    return tuple(out)


def add_annotations(view: cassis.Cas, annotations: Sequence[Any]) -> None:
    """``view.add_all(annotations)``, with one sorted bulk insert per type.

    cassis's ``add`` inserts into a sorted index one annotation at a time, about a
    third of the conversion time. This does what ``add`` does for new annotations
    of types from the view's own type system (a fresh xmiID, the view's sofa, the
    type's index) but fills each index with one ``SortedKeyList.update``. It uses
    cassis internals, so it falls back to ``add_all`` when they are not there;
    tests/test_spacy_mapping.py checks that both give the same XMI.
    """
    current = getattr(view, "_current_view", None)
    index = getattr(current, "type_index", None)
    next_id = getattr(view, "_get_next_xmi_id", None)
    if index is None or next_id is None:
        view.add_all(annotations)
        return
    typesystem = view.typesystem
    sofa = view.get_sofa()
    by_type: dict[str, list[Any]] = {}
    for annotation in annotations:
        annotation.xmiID = next_id()
        annotation.sofa = sofa
        by_type.setdefault(annotation.type.name, []).append(annotation)
    for type_name, items in by_type.items():
        if not typesystem.contains_type(type_name):
            raise RuntimeError(f"the view's type system has no type {type_name!r}")
        index[type_name].update(items)


class LongSentenceWarning(DocumentWarning):
    """A sentence longer than a tool's cap (``max_sentence_words``, ``max_parse_words``)
    was analysed in pieces of at most that many words, each a sentence of its own."""


def piece_bounds(sizes: Sequence[int], most: int) -> list[tuple[int, int]]:
    """``(start, end)`` of consecutive runs of units (tokens) whose sizes (their words)
    add up to at most ``most`` each, cut only between units: a unit larger than
    ``most`` (a multiword token) is a piece of its own, never split."""
    bounds: list[tuple[int, int]] = []
    start, words = 0, 0
    for index, size in enumerate(sizes):
        if index > start and words + size > most:
            bounds.append((start, index))
            start, words = index, 0
        words += size
    bounds.append((start, len(sizes)))
    return bounds


def long_sentence_warning(
    view: cassis.Cas, span: tuple[int, int], words: int, setting: str, most: int, each: str
) -> LongSentenceWarning:
    """The warning for one such sentence: its document and offsets, and what to change.
    ``each`` is what every piece gets of its own (a root, a tree)."""
    return LongSentenceWarning(
        f"document {find_document_id(view) or '<unknown document>'}: the sentence at "
        f"{span} has {words} words, more than {setting} ({most}); it was analysed in "
        f"pieces of at most {most} words, each with its own {each} (raise {setting} if "
        "time and memory allow, or split the text into sentences)"
    )
