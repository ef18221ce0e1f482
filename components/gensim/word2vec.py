"""Static word vectors trained on unlabelled text with gensim's word2vec (skip-gram).

The sentences come tokenised by the caller (the spaCy syntax trainer gives its
tokenizer's tokens, so vector keys match the tokens its pipeline sees). The
vectors are written as a spaCy ``Vectors`` table inside a blank pipeline folder,
which a spaCy training config picks up through ``[initialize] vectors``. Needs
``gensim`` (the ``vectors`` extra: ``pip install casflow[vectors]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy
import spacy


def train_word2vec(
    sentences: Sequence[Sequence[str]],
    output_dir: str | Path,
    *,
    dims: int = 100,
    window: int = 5,
    min_count: int = 3,
    max_words: int = 20000,
    epochs: int = 10,
    seed: int = 0,
) -> Path:
    """Train skip-gram word2vec (one worker thread: the same vectors for the same sentences
    and seed) and save the ``max_words`` most frequent words as a blank spaCy pipeline."""
    try:
        from gensim.models import Word2Vec
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "word vectors need gensim: pip install 'casflow[vectors]' (or pip install gensim)"
        ) from exc

    model = Word2Vec(
        [list(s) for s in sentences],
        vector_size=dims,
        window=window,
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
    output.parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output)
    return output
