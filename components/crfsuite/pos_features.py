"""A small part-of-speech tagger for NER features, trained on AnatEM's own POS column.

The tagger learns from gold views whose Tokens carry POS (``anatem.reader.v1``
with ``pos: true``; the trainer's ``resources.pos_tagger``).

AnatEM's NERsuite files carry GENIA-tagger POS tags for every token (a training
resource of the corpus, not gold labels of the task). Each casflow token takes
the coarse tag of the corpus token it lies in (NN, NNS, NNP, JJ, VB, IN, DT, CD,
...; punctuation collapsed to PU), and a light CRF learns them; its predictions
become ``pos=`` features of the mention taggers (NERsuite used POS the same way).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import cassis

from casflow.components.crfsuite.features import FeatureSettings, sentence_features
from casflow.components.crfsuite.tokenize import Span, tokenize
from casflow.typesystem import SENTENCE, TOKEN

POS_FEATURES = FeatureSettings(window=2, affix_max=3, char_ngrams=(), word_context=True)


def coarse_pos(tag: str) -> str:
    if not tag or not tag[0].isalpha():
        return "PU"
    if tag in ("NNS", "NNP", "NNPS"):
        return tag[:3]
    if tag == "HYPH":
        return "PU"
    return tag[:2]


def pos_sequences(view: cassis.Cas) -> list[tuple[list[list[str]], list[str]]]:
    """(features, coarse POS labels) per sentence of a gold view whose Tokens carry POS
    (``anatem.reader.v1`` with ``pos: true``), on casflow tokens: each takes the tag of
    the gold token it starts in."""
    text = view.sofa_string or ""
    tokens = sorted(view.select(TOKEN), key=lambda t: (t.begin, t.end))
    sequences = []
    k = 0
    for sentence in sorted(view.select(SENTENCE), key=lambda s: (s.begin, s.end)):
        while k < len(tokens) and tokens[k].end <= sentence.begin:
            k += 1
        spans = tokenize(text, sentence.begin, sentence.end)
        labels = []
        for begin, _ in spans:
            while tokens[k].end <= begin:
                k += 1
            tag = tokens[k].pos.PosValue if tokens[k].pos is not None else None
            labels.append(coarse_pos(tag or ""))
        sequences.append((sentence_features(text, spans, POS_FEATURES), labels))
    return sequences


class PosTagger:
    def __init__(self, model_path: Path) -> None:
        import pycrfsuite

        self._tagger = pycrfsuite.Tagger()
        self._tagger.open(str(model_path))

    def tag(self, text: str, spans: Sequence[Span]) -> list[str]:
        if not spans:
            return []
        return self._tagger.tag(sentence_features(text, spans, POS_FEATURES))


def pos_features(tags: Sequence[str]) -> list[list[str]]:
    """Per token: its POS, the neighbours' POS, and the POS bigrams around it."""
    n = len(tags)
    out = []
    for i, tag in enumerate(tags):
        prev = tags[i - 1] if i else "<S>"
        nxt = tags[i + 1] if i < n - 1 else "</S>"
        out.append(
            [
                f"pos={tag}",
                f"pos[-1]={prev}",
                f"pos[1]={nxt}",
                f"pos-={prev}|{tag}",
                f"pos+={tag}|{nxt}",
            ]
        )
    return out


def train_pos_tagger(
    sequences: Iterable[tuple[list[list[str]], list[str]]], output: Path, iterations: int = 100
) -> None:
    """Train the POS tagger on (features, labels) sequences (deterministic for their order)."""
    import pycrfsuite

    trainer = pycrfsuite.Trainer(verbose=False)
    for features, labels in sequences:
        trainer.append(features, labels)
    trainer.set_params(
        {"c1": 0.1, "c2": 0.01, "max_iterations": iterations, "feature.possible_transitions": True}
    )
    trainer.train(str(output))
