"""Distributional word clusters from unlabelled biomedical text, as CRF features.

Words (lower-cased casflow tokens) are represented by their positive PMI with
context words in a ±2 window, reduced by truncated SVD and clustered with
k-means at several granularities; a token's features are its cluster ids (the
"Brown cluster prefix" idea at coarse and fine levels). The text comes from gold
views and ontology definitions (:mod:`casflow.components.unlabelled_text`), as
the trainer's ``resources.cluster_text`` lists them: for the shipped anatomy
tagger the CRAFT articles, the UBERON, CL and SO definitions, and the training
portions of BC2GM and AnatEM.

A second kind of clusters groups words by their word2vec vectors (k-means of the
static vectors inside a spaCy pipeline, e.g. the shipped ``craft_syntax`` one,
trained on CRAFT and BC2GM text): the same feature shape under another prefix.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from casflow.components.crfsuite.tokenize import Span, tokenize

_DIGITS = re.compile(r"\d")


def cluster_key(word: str) -> str:
    return _DIGITS.sub("0", word.lower())


def build_clusters(
    texts: Iterable[str],
    sizes: Sequence[int] = (50, 200, 800),
    min_count: int = 3,
    contexts: int = 5000,
    dims: int = 100,
    seed: int = 0,
) -> dict[str, tuple[int, ...]]:
    """Word -> one cluster id per size."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from sklearn.cluster import KMeans
    from sklearn.decomposition import TruncatedSVD

    sentences = []
    counts: Counter[str] = Counter()
    for text in texts:
        words = [cluster_key(text[b:e]) for b, e in tokenize(text)]
        sentences.append(words)
        counts.update(words)
    vocab = sorted(w for w, c in counts.items() if c >= min_count)
    index = {w: i for i, w in enumerate(vocab)}
    context_words = [w for w, _ in counts.most_common(contexts)]
    context_index = {w: i for i, w in enumerate(context_words)}
    pairs: Counter[tuple[int, int]] = Counter()
    for words in sentences:
        for i, w in enumerate(words):
            row = index.get(w)
            if row is None:
                continue
            for d in (-2, -1, 1, 2):
                j = i + d
                if 0 <= j < len(words):
                    col = context_index.get(words[j])
                    if col is not None:
                        pairs[(row, col * 4 + (d + 2 if d < 0 else d + 1))] += 1
    rows, cols, values = zip(*((r, c, v) for (r, c), v in pairs.items()), strict=True)
    matrix = coo_matrix(
        (np.array(values, dtype=float), (rows, cols)), shape=(len(vocab), len(context_words) * 4)
    ).tocsr()
    total = matrix.sum()
    row_sums = np.asarray(matrix.sum(axis=1)).ravel()
    col_sums = np.asarray(matrix.sum(axis=0)).ravel() ** 0.75
    col_sums = col_sums / col_sums.sum() * total
    matrix = matrix.tocoo()
    pmi = np.log(matrix.data * total / (row_sums[matrix.row] * col_sums[matrix.col]))
    keep = pmi > 0
    ppmi = coo_matrix((pmi[keep], (matrix.row[keep], matrix.col[keep])), shape=matrix.shape).tocsr()
    vectors = TruncatedSVD(n_components=dims, random_state=seed).fit_transform(ppmi)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
    ids = []
    for size in sizes:
        ids.append(KMeans(n_clusters=size, n_init=1, random_state=seed).fit_predict(vectors))
    return {w: tuple(int(c[i]) for c in ids) for i, w in enumerate(vocab)}


def vector_clusters(
    words: Sequence[str],
    vectors: Any,
    sizes: Sequence[int] = (100, 300, 1000),
    seed: int = 0,
) -> dict[str, tuple[int, ...]]:
    """Word -> one k-means cluster id per size, over the unit-length ``vectors`` (one row
    per word). Words with the same :func:`cluster_key` share the mean of their vectors."""
    import numpy as np
    from sklearn.cluster import KMeans

    rows: dict[str, list[int]] = {}
    for row, word in enumerate(words):
        rows.setdefault(cluster_key(word), []).append(row)
    keys = sorted(rows)
    data = np.asarray(vectors, dtype=float)
    merged = np.stack([data[rows[key]].mean(axis=0) for key in keys])
    merged /= np.linalg.norm(merged, axis=1, keepdims=True) + 1e-9
    # fewer words than clusters (tiny vector tables) would make k-means fail
    ids = [
        KMeans(n_clusters=min(size, len(keys)), n_init=1, random_state=seed).fit_predict(merged)
        for size in sizes
    ]
    return {key: tuple(int(c[i]) for c in ids) for i, key in enumerate(keys)}


def spacy_vector_clusters(
    model: Path, sizes: Sequence[int] = (100, 300, 1000), seed: int = 0
) -> dict[str, tuple[int, ...]]:
    """:func:`vector_clusters` of the static word vectors of the spaCy pipeline at ``model``."""
    import spacy

    vocab = spacy.load(model).vocab
    table = vocab.vectors
    if table.shape[0] == 0:
        raise ValueError(
            f"the spaCy pipeline {model} has no static word vectors; name a pipeline with "
            "vectors (e.g. the shipped craft_syntax) or give an existing clusters file"
        )
    keys = sorted(table.key2row.items(), key=lambda item: item[1])
    words = [vocab.strings[key] for key, _ in keys]
    return vector_clusters(words, table.data[[row for _, row in keys]], sizes, seed)


def save_clusters(clusters: dict[str, tuple[int, ...]], path: Path) -> None:
    lines = [f"{w}\t{' '.join(map(str, ids))}" for w, ids in sorted(clusters.items())]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def load_clusters(path: Path) -> dict[str, tuple[int, ...]]:
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line:
            word, _, ids = line.partition("\t")
            out[word] = tuple(int(x) for x in ids.split())
    return out


def cluster_features(
    text: str, spans: Sequence[Span], clusters: dict[str, tuple[int, ...]], prefix: str = "k"
) -> list[list[str]]:
    """Per token: its cluster ids at each size, and the middle size's ids of its neighbours
    (feature names start with ``prefix``, so two cluster sets can be used together)."""
    ids = [clusters.get(cluster_key(text[b:e])) for b, e in spans]
    out = []
    for i, own in enumerate(ids):
        f = [f"{prefix}{n}={c}" for n, c in enumerate(own)] if own else [f"{prefix}=UNK"]
        for d in (-1, 1):
            j = i + d
            neighbour = ids[j] if 0 <= j < len(ids) else None
            if neighbour:
                f.append(f"{prefix}1[{d}]={neighbour[1]}")
        out.append(f)
    return out
