"""Static word vectors trained on unlabelled text with gensim's word2vec (skip-gram).

The sentences come tokenised by the caller (the spaCy syntax trainer gives its
tokenizer's tokens, the Stanza NER trainer casflow's fine tokens, so vector keys
match the tokens the model sees). The vectors are written as a spaCy ``Vectors``
table inside a blank pipeline folder, which a spaCy training config picks up
through ``[initialize] vectors``, or as a word2vec text file (Stanza's pretrain
reads it). Needs
``gensim`` (the ``vectors`` extra: ``pip install casflow[vectors]``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy
from pydantic import Field

from casflow.pipeline.component import ComponentConfig


class Word2VecParameters(ComponentConfig):
    """The settings of :func:`fit_word2vec` a trainer's config exposes."""

    dims: int = Field(100, gt=0, description="Vector width.")
    window: int = Field(5, gt=0, description="Context words either side.")
    min_count: int = Field(3, ge=1, description="Words seen fewer times get no vector.")
    max_words: int = Field(
        30000, gt=0, description="Keep the vectors of this many most frequent words."
    )
    epochs: int = Field(10, gt=0, description="Passes over the text.")

    def fit_arguments(self) -> dict[str, int]:
        """These settings as :func:`fit_word2vec`'s keyword arguments."""
        return self.model_dump(include=set(Word2VecParameters.model_fields))


def gensim_missing() -> str | None:
    """What to install when gensim is not there (checked before a run), else None."""
    import importlib.util

    if importlib.util.find_spec("gensim") is None:
        return "word2vec needs gensim: pip install 'casflow[vectors]'"
    return None


def fit_word2vec(
    sentences: Sequence[Sequence[str]],
    *,
    dims: int = 100,
    window: int = 5,
    min_count: int = 3,
    max_words: int = 20000,
    epochs: int = 10,
    seed: int = 0,
) -> tuple[list[str], numpy.ndarray]:
    """Skip-gram word2vec on one worker thread (the same vectors for the same sentences
    and seed): the ``max_words`` most frequent words and their vectors, in that order."""
    if missing := gensim_missing():  # pragma: no cover - depends on the environment
        raise ImportError(missing)
    from gensim.models import Word2Vec

    lists = [list(s) for s in sentences]
    counts = Counter(word for s in lists for word in s)
    if not any(n >= min_count for n in counts.values()):
        # gensim would stop with "you must first build vocabulary before training"
        raise ValueError(
            f"word2vec: no word occurs {min_count} times or more in the text "
            f"({len(lists)} sentences, {sum(counts.values())} tokens); give more text "
            "or a lower min_count"
        )
    model = Word2Vec(
        lists,
        vector_size=dims,
        window=window,
        min_count=min_count,
        sg=1,
        workers=1,
        epochs=epochs,
        seed=seed,
    )
    words = model.wv.index_to_key[:max_words]
    return words, numpy.asarray([model.wv[word] for word in words], dtype="float32")


def write_spacy_vectors(words: Sequence[str], table: numpy.ndarray, output_dir: str | Path) -> Path:
    """``words`` and their vectors as a blank spaCy pipeline's ``Vectors`` table."""
    import spacy

    nlp = spacy.blank("en")
    nlp.vocab.reset_vectors(width=table.shape[1])
    for word, row in zip(words, table, strict=True):
        nlp.vocab.set_vector(word, row)
    output = Path(output_dir)
    output.parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output)
    return output


def write_word2vec_text(
    words: Sequence[str], table: numpy.ndarray, path: str | Path, decimals: int = 5
) -> Path:
    """``words`` and their vectors as a word2vec text file (a ``count dims`` header, then a
    word and its values per line); empty words and words holding whitespace are left
    out, since the format splits at spaces."""
    rows = [
        word + " " + " ".join(f"{x:.{decimals}f}" for x in row)
        for word, row in zip(words, table, strict=True)
        if word and not any(c.isspace() for c in word)
    ]
    output = Path(path)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(
        f"{len(rows)} {table.shape[1]}\n" + "".join(r + "\n" for r in rows), encoding="utf-8"
    )
    return output
