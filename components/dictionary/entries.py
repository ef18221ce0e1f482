"""Compiling OBO ontologies into a token trie, and longest-match lookup over it.

Pure: no CAS. An entry is a term's name or one of its synonyms (of the chosen
scopes), keyed by :func:`~casflow.components.dictionary.normalise.phrase_key`.
Where several terms share a key, the best-ranked one wins: a name before an
EXACT synonym before NARROW, RELATED and BROAD ones, then the ontology listed
first, then the smallest id, so the result never depends on file order.

A term's class: ``one_class`` for every term when set; otherwise the class of
its first ancestor (through is_a and intersection genera, the term included) in
``class_rules`` order, else the ontology's ``default_classes`` entry, else the
ontology's prefix (``UBERON``).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from casflow.components.crfsuite.tokenize import Span
from casflow.components.dictionary.normalise import keyed_tokens, phrase_key
from casflow.components.formats.common import FormatError
from casflow.components.formats.obo import OboStanza, obo_lines, read_obo, terms

SCOPES = ("EXACT", "NARROW", "RELATED", "BROAD")


class Entry(NamedTuple):
    """What a match reports: the class, the term's id, ontology and primary name."""

    label: str
    identifier: str
    ontology: str
    name: str


@dataclass(frozen=True)
class Match:
    begin: int
    end: int
    entry: Entry


@dataclass(frozen=True)
class CompileSettings:
    """Everything that changes the compiled dictionary (part of its cache key)."""

    scopes: tuple[str, ...] = ("EXACT",)
    stop_list: frozenset[str] = frozenset()
    min_length: int = 3
    case_sensitive_max_length: int = 3
    class_rules: tuple[tuple[str, str], ...] = ()
    default_classes: tuple[tuple[str, str], ...] = ()
    one_class: str | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "scopes": list(self.scopes),
            "stop_list": sorted(self.stop_list),
            "min_length": self.min_length,
            "case_sensitive_max_length": self.case_sensitive_max_length,
            "class_rules": [list(rule) for rule in self.class_rules],
            "default_classes": [list(rule) for rule in self.default_classes],
            "one_class": self.one_class,
        }


#: trie node keys that are not token keys (token keys are never empty nor hold
#: control characters)
_ENTRY = ""
_SURFACES = "\0"
_FREE_ABOVE = "\1"

_Trie = dict[str, Any]


class Dictionary:
    """A trie of token keys; :meth:`match` finds leftmost-longest matches.

    Nodes are plain dicts (token key -> child) so that the compiled form pickles
    and unpickles fast: a node's entry index is under ``""``; a node with
    phrases short enough to be case-sensitive holds the surfaces they may take
    under ``"\\0"``. Case is decided per phrase, not per key: where a longer phrase
    has the same key ("gums" and "gum"), the node also holds under ``"\\1"`` the
    length of its longest short phrase, and a text longer than that matches in
    any case (it is the longer phrase), while one as short must be a short
    phrase's surface (so "GUM" is not "gum" because "gums" exists).
    """

    def __init__(self) -> None:
        self.root: _Trie = {}
        self.entries: list[Entry] = []
        self._ranks: list[tuple[int, int, str]] = []
        self._case_free: set[int] = set()
        self._short: dict[int, int] = {}  # longest case-sensitive phrase per entry

    @property
    def size(self) -> int:
        """Distinct keys."""
        return len(self._ranks)

    def add(self, phrase: str, entry: Entry, rank: tuple[int, int, str], exact_case: bool) -> None:
        key = phrase_key(phrase)
        if not key:
            return
        node = self.root
        for part in key:
            node = node.setdefault(part, {})
        if _ENTRY not in node:
            node[_ENTRY] = len(self.entries)
            self.entries.append(entry)
            self._ranks.append(rank)
        index = node[_ENTRY]
        if rank < self._ranks[index]:
            self.entries[index], self._ranks[index] = entry, rank
        if exact_case:
            node[_SURFACES] = node.get(_SURFACES, frozenset()) | _case_variants(phrase)
            length = len("".join(phrase.split()))
            self._short[index] = max(self._short.get(index, 0), length)
        else:
            self._case_free.add(index)
        if index in self._case_free and index in self._short:
            node[_FREE_ABOVE] = self._short[index]

    def __getstate__(self) -> dict[str, Any]:
        # ranks and case flags only matter while compiling
        return {"root": self.root, "entries": self.entries}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root, self.entries = state["root"], state["entries"]
        self._ranks, self._case_free, self._short = [], set(), {}

    def match(self, text: str, spans: Sequence[Span]) -> list[Match]:
        """Leftmost-longest, non-overlapping matches over the tokens at ``spans``."""
        keys, kept = keyed_tokens(text, spans)
        found: list[Match] = []
        i, n = 0, len(keys)
        root = self.root
        while i < n:
            node: _Trie | None = root
            best = -1
            best_end = 0
            j = i
            while j < n and node is not None:
                node = node.get(keys[j])
                if node is None:
                    break
                j += 1
                index = node.get(_ENTRY)
                if index is not None:
                    surfaces = node.get(_SURFACES)
                    if surfaces is None:
                        best, best_end = index, j
                    else:
                        written = "".join(text[kept[i][0] : kept[j - 1][1]].split())
                        if written in surfaces or len(written) > node.get(
                            _FREE_ABOVE, len(written)
                        ):
                            best, best_end = index, j
            if best < 0:
                i += 1
                continue
            found.append(Match(kept[i][0], kept[best_end - 1][1], self.entries[best]))
            i = best_end
        return found


def _case_variants(phrase: str) -> set[str]:
    """A short lower-case entry may start a sentence ("Ear"); one with capitals
    (an acronym) must be written as it is."""
    compact = "".join(phrase.split())
    variants = {compact}
    if compact == compact.lower():
        variants.add(compact[:1].upper() + compact[1:])
    return variants


def term_class(
    term_id: str,
    parents: Mapping[str, Sequence[str]],
    settings: CompileSettings,
    memo: dict[str, set[str]],
) -> str:
    """The class of ``term_id`` under ``settings`` (see the module docstring)."""
    if settings.one_class:
        return settings.one_class
    ancestors = _ancestors(term_id, parents, memo)
    for root, label in settings.class_rules:
        if root in ancestors:
            return label
    prefix = term_id.split(":", 1)[0]
    return dict(settings.default_classes).get(prefix, prefix)


def _ancestors(
    term_id: str, parents: Mapping[str, Sequence[str]], memo: dict[str, set[str]]
) -> set[str]:
    if term_id in memo:
        return memo[term_id]
    # iterative, so deep hierarchies never hit the recursion limit; a cycle ends
    # where it meets a term already being visited
    found: set[str] = {term_id}
    stack = [term_id]
    while stack:
        current = stack.pop()
        for parent in parents.get(current, ()):
            if parent not in found:
                found.add(parent)
                if parent in memo:
                    found |= memo[parent]
                else:
                    stack.append(parent)
    memo[term_id] = found
    return found


def entry_phrases(stanza: OboStanza, scopes: Iterable[str]) -> list[tuple[int, str]]:
    """``(rank, phrase)``: the name (rank 0), then synonyms of ``scopes`` ranked by scope."""
    found = [(0, stanza.name)] if stanza.name else []
    for scope in scopes:
        rank = 1 + SCOPES.index(scope)
        found.extend((rank, phrase) for phrase in stanza.synonyms(scope))
    return found


def ontology_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be an ontology the dictionary is compiled from, or None.

    Cheap, for checks before a run: reads only up to the first ``[Term]`` line, so
    an unreadable file, a ``.zip`` that is not an archive (or holds no ``.obo``),
    bytes that are not UTF-8 and a text without any term are found, not a damaged
    stanza further on (compiling reports that, naming the file)."""
    try:
        for line in obo_lines(path):
            if line.strip() == "[Term]":
                return None
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError, FormatError) as exc:
        return f"cannot read the OBO file {path}: {exc}"
    return f"{path} holds no [Term] stanza: not an OBO ontology"


def compile_dictionary(paths: Sequence[str | Path], settings: CompileSettings) -> Dictionary:
    """The dictionary of the terms of every OBO file in ``paths`` (in priority order)."""
    dictionary = Dictionary()
    stop = {phrase_key(phrase) for phrase in settings.stop_list}
    for order, path in enumerate(paths):
        stanzas = read_obo(path)
        if not any(True for _ in terms(stanzas)):
            # a text file that is not OBO would otherwise tag nothing, silently
            raise FormatError("no [Term] stanza with an id: not an OBO ontology", source=str(path))
        parents = {t.id: t.parents for t in terms(stanzas) if t.id}
        memo: dict[str, set[str]] = {}
        for stanza in terms(stanzas):
            term_id = stanza.id or ""
            prefix = term_id.split(":", 1)[0]
            entry = Entry(
                term_class(term_id, parents, settings, memo), term_id, prefix, stanza.name or ""
            )
            for rank, phrase in entry_phrases(stanza, settings.scopes):
                compact = "".join(phrase.split())
                if len(compact) < settings.min_length or not any(c.isalpha() for c in compact):
                    continue
                if phrase_key(phrase) in stop:
                    continue
                exact_case = len(compact) <= settings.case_sensitive_max_length
                dictionary.add(phrase, entry, (rank, order, term_id), exact_case)
    return dictionary
