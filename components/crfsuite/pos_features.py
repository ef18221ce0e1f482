"""A small part-of-speech tagger for NER features, trained on AnatEM's own POS column.

AnatEM's NERsuite files carry GENIA-tagger POS tags for every token (a training
resource of the corpus, not gold labels of the task). Each casflow token takes
the coarse tag of the corpus token it lies in (NN, NNS, NNP, JJ, VB, IN, DT, CD,
...; punctuation collapsed to PU), and a light CRF learns them; its predictions
become ``pos=`` features of the mention taggers (NERsuite used POS the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from casflow.components.crfsuite.features import FeatureSettings, sentence_features
from casflow.components.crfsuite.tokenize import Span, tokenize
from casflow.components.formats.anatem import parse as anatem

POS_FEATURES = FeatureSettings(window=2, affix_max=3, char_ngrams=(), word_context=True)


def coarse_pos(tag: str) -> str:
    if not tag or not tag[0].isalpha():
        return "PU"
    if tag in ("NNS", "NNP", "NNPS"):
        return tag[:3]
    if tag == "HYPH":
        return "PU"
    return tag[:2]


def pos_training_sequences(corpus_dir: Path, split: str = "train"):
    """(features, coarse POS labels) per AnatEM sentence, on casflow tokens."""
    for path in sorted((Path(corpus_dir) / "nersuite" / split).glob("*.nersuite")):
        document = anatem.read_nersuite(path)
        for sentence in document.sentences:
            spans = tokenize(document.text, sentence.begin, sentence.end)
            labels = []
            k = 0
            for begin, _ in spans:
                while sentence.tokens[k].end <= begin:
                    k += 1
                labels.append(coarse_pos(sentence.tokens[k].pos))
            yield sentence_features(document.text, spans, POS_FEATURES), labels


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


def train_pos_tagger(corpus_dir: Path, output: Path, iterations: int = 100) -> None:
    """Train the POS tagger on AnatEM train's POS column (deterministic)."""
    import pycrfsuite

    trainer = pycrfsuite.Trainer(verbose=False)
    for features, labels in pos_training_sequences(corpus_dir):
        trainer.append(features, labels)
    trainer.set_params(
        {"c1": 0.1, "c2": 0.01, "max_iterations": iterations, "feature.possible_transitions": True}
    )
    trainer.train(str(output))
