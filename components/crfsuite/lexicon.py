"""A dictionary tagger over casflow tokens: longest match of normalised token sequences.

Entries are phrases with a class (an AnatEM class, ``GENE``, or ``UBERON``/``CL``
for ontology names). Matching ignores case, whitespace and a final plural "s",
so "Purkinje cells" matches "Purkinje cell". The tagger's output becomes CRF
features (the AnEM paper's best system stacked a dictionary tagger under a CRF).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from casflow.components.crfsuite.tokenize import Span, tokenize

MAX_TOKENS = 12
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "of",
        "in",
        "on",
        "to",
        "for",
        "with",
        "by",
        "or",
        "at",
        "as",
        "is",
        "are",
        "was",
        "be",
        "this",
        "that",
    ]
)


def normalise(word: str) -> str:
    w = word.lower()
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def phrase_key(phrase: str) -> tuple[str, ...]:
    return tuple(normalise(phrase[b:e]) for b, e in tokenize(phrase))


class Lexicon:
    """Phrase -> classes, matched over token spans."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, ...], set[str]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, phrase: str, cls: str) -> None:
        key = phrase_key(phrase)
        if not key or len(key) > MAX_TOKENS:
            return
        if len(key) == 1 and (len(key[0]) < 2 or key[0] in _STOP):
            return
        self.entries.setdefault(key, set()).add(cls)

    def add_all(self, items: Iterable[tuple[str, str]]) -> Lexicon:
        for phrase, cls in items:
            self.add(phrase, cls)
        return self

    def matches(self, words: Sequence[str]) -> list[tuple[int, int, frozenset[str]]]:
        """Longest match starting at each token: ``(first, last_exclusive, classes)``."""
        keys = [normalise(w) for w in words]
        found = []
        for i in range(len(keys)):
            for j in range(min(len(keys), i + MAX_TOKENS), i, -1):
                classes = self.entries.get(tuple(keys[i:j]))
                if classes:
                    found.append((i, j, frozenset(classes)))
                    break
        return found

    def token_tags(self, text: str, spans: Sequence[Span]) -> list[list[str]]:
        """Per token, ``B-cls`` / ``I-cls`` for every match covering it."""
        tags: list[set[str]] = [set() for _ in spans]
        for first, last, classes in self.matches([text[b:e] for b, e in spans]):
            for cls in classes:
                tags[first].add("B-" + cls)
                for k in range(first + 1, last):
                    tags[k].add("I-" + cls)
        return [sorted(t) for t in tags]

    def save(self, path: Path) -> None:
        lines = sorted(
            f"{cls}\t{' '.join(key)}" for key, classes in self.entries.items() for cls in classes
        )
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Lexicon:
        lexicon = cls()
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line:
                label, _, key = line.partition("\t")
                lexicon.entries.setdefault(tuple(key.split(" ")), set()).add(label)
        return lexicon
