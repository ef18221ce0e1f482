"""Static word vectors trained by casflow on unlabelled biomedical text (word2vec).

Sentences are tokenised with the CRAFT tokenizer so vector keys match the tokens
the pipeline sees. Needs ``gensim`` (optional: ``pip install gensim``). The vectors
are written as a spaCy ``Vectors`` table inside a blank pipeline folder, which a
training config picks up through ``[initialize] vectors``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy
import spacy

from casflow.components.spacy.craft_tokenizer import blank_craft_english

_LINE_ID = re.compile(r"^\S+\s+")


def craft_texts(craft_dir: str | Path, pmids: Iterable[str]) -> Iterator[str]:
    for pmid in pmids:
        yield (Path(craft_dir) / "articles" / "txt" / f"{pmid}.txt").read_text(encoding="utf-8")


def bc2_texts(bc2gm_dir: str | Path) -> Iterator[str]:
    """BioCreative II ``*.in`` sentences without their ids (train and devel)."""
    for path in sorted(Path(bc2gm_dir).glob("bc2-format/*/*.in")):
        for line in path.read_text(encoding="utf-8").splitlines():
            yield _LINE_ID.sub("", line)


def tokenized_lines(texts: Iterable[str]) -> Iterator[list[str]]:
    """One list of token strings per non-empty line, CRAFT-tokenised."""
    nlp = blank_craft_english()
    for text in texts:
        for line in text.splitlines():
            if line.strip():
                yield [t.text for t in nlp.make_doc(line) if not t.is_space]


def train_word2vec(
    sentences: list[list[str]],
    output_dir: str | Path,
    *,
    dims: int = 100,
    min_count: int = 3,
    max_words: int = 20000,
    epochs: int = 10,
    seed: int = 0,
) -> Path:
    """Train skip-gram word2vec and save the ``max_words`` most frequent as a spaCy pipeline."""
    from gensim.models import Word2Vec  # optional dependency

    model = Word2Vec(
        sentences,
        vector_size=dims,
        window=5,
        min_count=min_count,
        sg=1,
        workers=1,
        epochs=epochs,
        seed=seed,
    )
    words = model.wv.index_to_key[:max_words]
    nlp = spacy.blank("en")
    table = numpy.asarray([model.wv[word] for word in words], dtype="float32")
    nlp.vocab.reset_vectors(width=dims)
    for word, row in zip(words, table, strict=True):
        nlp.vocab.set_vector(word, row)
    output = Path(output_dir)
    nlp.to_disk(output)
    return output
