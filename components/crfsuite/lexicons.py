"""The lexicons of the CRF mention taggers: training mentions, ontology names, CRAFT mentions.

- :func:`mention_lexicon`: the gold mention texts of training examples (jackknifed
  by the trainer so the CRF learns how far to trust a match on unseen text);
- :func:`ontology_lexicon`: UBERON and CL names and EXACT synonyms, and every
  UBERON name also under the upper-level (CARO) class it falls under by is_a,
  read with the one OBO parser (:mod:`casflow.components.formats.obo`);
- :func:`view_mention_texts`: the texts of contiguous concept mentions of named
  ontologies in a gold view (CRAFT's, read by ``craft.reader.v1``): an independent
  lexicon of names as written in full-text papers.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import cassis

from casflow.components.crfsuite.gold_view import Example
from casflow.components.crfsuite.lexicon import Lexicon
from casflow.components.formats.obo import read_obo, terms

#: the ontologies of the ontology lexicon, by the id prefix of their own terms
ONTOLOGY_PREFIXES = {"UBERON": "UBERON:", "CL": "CL:"}

#: UBERON's upper-level (CARO) classes that the AnatEM classes are named after
UBERON_ROOTS = {
    "UBERON:0000062": "U-Organ",
    "UBERON:0000479": "U-Tissue",
    "UBERON:0000481": "U-Multi-tissue_structure",
    "UBERON:0000467": "U-Anatomical_system",
    "UBERON:0000475": "U-Organism_subdivision",
    "UBERON:0000463": "U-Organism_substance",
    "UBERON:0000466": "U-Immaterial_anatomical_entity",
    "UBERON:0005423": "U-Developing_anatomical_structure",
    "UBERON:0000477": "U-Anatomical_cluster",
    "UBERON:0000476": "U-Acellular_anatomical_structure",
}


def mention_lexicon(examples: Sequence[Example], label: str | None = None) -> Lexicon:
    """Gold mention texts of ``examples`` as a lexicon (class: ``label`` or ``T`` + the
    mention's class)."""
    lexicon = Lexicon()
    for example in examples:
        for m in example.mentions:
            lexicon.add(example.text[m.begin : m.end], label or "T" + m.label)
    return lexicon


def merged(*lexicons: Lexicon | None) -> Lexicon | None:
    """A new lexicon holding every entry of the given ones (None when none is given)."""
    present = [lex for lex in lexicons if lex is not None]
    if not present:
        return None
    out = Lexicon()
    for lex in present:
        for key, classes in lex.entries.items():
            out.entries.setdefault(key, set()).update(classes)
    return out


def classify_terms(
    terms_by_id: Mapping[str, tuple[list[str], list[str]]], roots: Mapping[str, str]
) -> Iterator[tuple[str, str]]:
    """(phrase, class) for every name of every term under one of ``roots`` (id -> class);
    ``terms_by_id``: id -> (names, parent ids)."""
    memo: dict[str, frozenset[str]] = {}

    def classes(term_id: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        if term_id in memo:
            return memo[term_id]
        found = {roots[term_id]} if term_id in roots else set()
        for parent in terms_by_id.get(term_id, ((), ()))[1]:
            if parent not in seen and parent in terms_by_id:
                found |= classes(parent, seen | {term_id})
        memo[term_id] = frozenset(found)
        return memo[term_id]

    for term_id, (names, _) in terms_by_id.items():
        for cls in sorted(classes(term_id)):
            for name in names:
                yield name, cls


def ontology_lexicon(obo_files: Mapping[str, Path]) -> Lexicon:
    """UBERON and CL names and EXACT synonyms (class: the ontology), and UBERON's also by
    their CARO class; ``obo_files``: ontology name -> its OBO file."""
    lexicon = Lexicon()
    for name, prefix in ONTOLOGY_PREFIXES.items():
        by_id = {
            t.id: (t.exact_names, t.parents)
            for t in terms(read_obo(obo_files[name]), prefix)
            if t.id is not None
        }
        for names, _ in by_id.values():
            for phrase in names:
                lexicon.add(phrase, name)
        if name == "UBERON":
            lexicon.add_all(classify_terms(by_id, UBERON_ROOTS))
    return lexicon


def view_mention_texts(view: cassis.Cas, ontologies: Collection[str]) -> list[tuple[str, str]]:
    """(text, ontology) of the contiguous mentions in ``view`` whose ``ontology`` feature is
    one of ``ontologies`` (mentions in several pieces are left out: their text is not a
    name), in text order."""
    text = view.sofa_string or ""
    found: list[tuple[int, int, str]] = []
    for annotation in view.select_all_annotations():
        ontology: Any = getattr(annotation, "ontology", None)
        if ontology not in ontologies or getattr(annotation, "fragments", None) is not None:
            continue
        found.append((annotation.begin, annotation.end, ontology))
    return [(text[b:e], o) for b, e, o in sorted(found)]
