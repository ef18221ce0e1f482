"""Names and exact synonyms from OBO ontologies (UBERON, CL) as lexicon entries."""

from __future__ import annotations

import html
import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

_SYNONYM = re.compile(r'^synonym: "((?:[^"\\]|\\.)*)" EXACT')


def _lines(path: Path) -> Iterator[str]:
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            member = next(n for n in archive.namelist() if n.endswith(".obo"))
            with archive.open(member) as raw:
                yield from io.TextIOWrapper(raw, encoding="utf-8")
    else:
        with path.open(encoding="utf-8") as handle:
            yield from handle


def obo_terms(path: str | Path, id_prefix: str) -> Iterator[str]:
    """Name and EXACT synonyms of every non-obsolete [Term] whose id starts with ``id_prefix``."""
    names: list[str] = []
    in_term = keep = obsolete = False

    def flush() -> list[str]:
        return names if in_term and keep and not obsolete else []

    for line in _lines(Path(path)):
        line = line.rstrip("\n")
        if line.startswith("["):
            yield from flush()
            names, in_term, keep, obsolete = [], line == "[Term]", False, False
        elif line.startswith("id: "):
            keep = line[4:].startswith(id_prefix)
        elif line.startswith("name: "):
            names.append(line[6:])
        elif line.startswith("is_obsolete: true"):
            obsolete = True
        else:
            match = _SYNONYM.match(line)
            if match:
                names.append(match.group(1).replace('\\"', '"'))
    yield from flush()


def obo_terms_by_id(path: str | Path, id_prefix: str) -> dict[str, tuple[list[str], list[str]]]:
    """Term id -> (name and EXACT synonyms, is_a parent ids) for non-obsolete terms."""
    terms: dict[str, tuple[list[str], list[str]]] = {}
    term_id: str | None = None
    names: list[str] = []
    parents: list[str] = []
    in_term = obsolete = False

    def flush() -> None:
        if in_term and term_id and term_id.startswith(id_prefix) and not obsolete:
            terms[term_id] = (names, parents)

    for line in _lines(Path(path)):
        line = line.rstrip("\n")
        if line.startswith("["):
            flush()
            term_id, names, parents = None, [], []
            in_term, obsolete = line == "[Term]", False
        elif line.startswith("id: "):
            term_id = line[4:]
        elif line.startswith("name: "):
            names.append(line[6:])
        elif line.startswith("is_a: "):
            parents.append(line[6:].split(" ", 1)[0])
        elif line.startswith("intersection_of: ") and " " not in line[17:].split(" !")[0]:
            # the genus of an equivalence definition is a parent too
            parents.append(line[17:].split(" ", 1)[0])
        elif line.startswith("is_obsolete: true"):
            obsolete = True
        else:
            match = _SYNONYM.match(line)
            if match:
                names.append(match.group(1).replace('\\"', '"'))
    flush()
    return terms


def classify_terms(
    terms: dict[str, tuple[list[str], list[str]]], roots: dict[str, str]
) -> Iterator[tuple[str, str]]:
    """(phrase, class) for every name of every term under one of ``roots`` (id -> class)."""
    memo: dict[str, frozenset[str]] = {}

    def classes(term_id: str, seen: frozenset[str] = frozenset()) -> frozenset[str]:
        if term_id in memo:
            return memo[term_id]
        found = {roots[term_id]} if term_id in roots else set()
        for parent in terms.get(term_id, ((), ()))[1]:
            if parent not in seen and parent in terms:
                found |= classes(parent, seen | {term_id})
        memo[term_id] = frozenset(found)
        return memo[term_id]

    for term_id, (names, _) in terms.items():
        for cls in sorted(classes(term_id)):
            for name in names:
                yield name, cls


_SPANNED = re.compile(r"<annotation>.*?</annotation>", re.S)


def craft_mention_texts(craft_dir: str | Path, ontology: str) -> Iterator[str]:
    """Texts of CRAFT's contiguous concept mentions of ``ontology`` (e.g. GO_CC, CL, PR).

    CRAFT annotates full-text articles, a different corpus from BC2GM and AnatEM,
    so its mention texts are an independent lexicon of names as written in papers.
    """
    folder = Path(craft_dir) / "concept-annotation" / ontology / ontology / "knowtator"
    for path in sorted(folder.glob("*.knowtator.xml")):
        xml = path.read_text(encoding="utf-8")
        for block in _SPANNED.findall(xml):
            if block.count("<span ") != 1:
                continue
            match = re.search(r"<spannedText>(.*?)</spannedText>", block, re.S)
            if match:
                yield html.unescape(match.group(1))
