"""Training and evaluation examples from the gold corpora, on casflow's own tokens.

An :class:`Example` is one sentence: the text it lives in, its token spans
(from :func:`tokenize`, so training sees the tokens the component produces from
raw text) and its gold mentions as character spans with labels (plus accepted
alternatives for BC2GM).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

from casflow.components.crfsuite.tokenize import Span, tokenize
from casflow.components.formats.anatem import parse as anatem
from casflow.components.formats.bc2 import parse as bc2

GENE = "GENE"


@dataclass
class GoldMention:
    begin: int
    end: int
    label: str
    alternatives: tuple[Span, ...] = ()


@dataclass
class Example:
    id: str
    text: str
    tokens: list[Span]
    mentions: list[GoldMention] = field(default_factory=list)


def load_bc2gm(corpus_dir: Path, split: str) -> list[Example]:
    """BC2GM ``train`` or ``devel`` from ``bc2-format/`` (one example per sentence)."""
    folder = Path(corpus_dir) / "bc2-format" / split
    with warnings.catch_warnings():
        # two gold lines in train have text that differs from their offsets; the
        # official scorer uses offsets only, so do we
        warnings.simplefilter("ignore")
        corpus = bc2.load_bc2(
            folder / f"{split}.in",
            folder / "GENE.eval",
            folder / "ALTGENE.eval",
            on_mismatch="warn",
        )
    examples = []
    for sentence in corpus.sentences:
        mentions = [
            GoldMention(g.begin, g.end, GENE, tuple((a.begin, a.end) for a in g.alternatives))
            for g in corpus.genes[sentence.id]
        ]
        examples.append(Example(sentence.id, sentence.text, tokenize(sentence.text), mentions))
    return examples


def load_anatem(corpus_dir: Path, split: str) -> list[Example]:
    """AnatEM ``train`` or ``devel`` from ``nersuite/`` (one example per gold sentence)."""
    examples = []
    for path in sorted((Path(corpus_dir) / "nersuite" / split).glob("*.nersuite")):
        document = anatem.read_nersuite(path)
        for number, sentence in enumerate(document.sentences):
            mentions = [GoldMention(m.begin, m.end, m.label) for m in sentence.mentions]
            examples.append(
                Example(
                    f"{document.id}#{number}",
                    document.text,
                    tokenize(document.text, sentence.begin, sentence.end),
                    mentions,
                )
            )
    return examples


def load_anatem_documents(corpus_dir: Path, split: str) -> list[anatem.AnatemDocument]:
    return [
        anatem.read_nersuite(path)
        for path in sorted((Path(corpus_dir) / "nersuite" / split).glob("*.nersuite"))
    ]


LOADERS = {"bc2gm": load_bc2gm, "anatem": load_anatem}
