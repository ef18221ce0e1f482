"""Word-embedding cluster features of the CRF taggers (k-means of word vectors).

Hand-made vectors and tiny training sequences; the real spaCy vectors are not
needed (``spacy_vector_clusters`` is checked on a blank pipeline with a few vectors).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from casflow.components.crfsuite.clusters import (
    cluster_features,
    load_clusters,
    spacy_vector_clusters,
    vector_clusters,
)
from casflow.components.crfsuite.crf import (
    EMBEDDING_CLUSTERS_FILE,
    META_FILE,
    CrfTagger,
    DocumentContext,
    TrainingParams,
    labels_for,
    train_crf,
)
from casflow.components.crfsuite.features import FeatureSettings
from casflow.components.crfsuite.tokenize import tokenize

# two tight groups of directions: organs near (1, 0, 0), cells near (0, 1, 0)
WORDS = ["liver", "Liver", "kidney", "heart", "neurons", "fibroblasts", "cells"]
VECTORS = [
    [1.0, 0.1, 0.0],
    [0.9, 0.0, 0.1],
    [1.0, 0.0, 0.1],
    [0.95, 0.05, 0.0],
    [0.0, 1.0, 0.1],
    [0.1, 1.0, 0.0],
    [0.0, 0.9, 0.05],
]


@pytest.mark.slow
def test_vector_clusters_group_near_vectors_and_merge_case_variants() -> None:
    clusters = vector_clusters(WORDS, np.array(VECTORS), sizes=(2, 3))
    # "Liver" and "liver" are one key (lower case), so 6 words remain
    assert sorted(clusters) == ["cells", "fibroblasts", "heart", "kidney", "liver", "neurons"]
    assert all(len(ids) == 2 for ids in clusters.values())
    organs = {clusters[w][0] for w in ("liver", "kidney", "heart")}
    cells = {clusters[w][0] for w in ("neurons", "fibroblasts", "cells")}
    assert len(organs) == 1 and len(cells) == 1 and organs != cells
    # deterministic for a seed
    assert vector_clusters(WORDS, np.array(VECTORS), sizes=(2, 3)) == clusters


def test_vector_clusters_cap_the_number_of_clusters_at_the_number_of_words() -> None:
    clusters = vector_clusters(WORDS[:3], np.array(VECTORS[:3]), sizes=(100,))
    assert sorted(clusters) == ["kidney", "liver"]
    assert {ids[0] for ids in clusters.values()} <= {0, 1}


@pytest.mark.slow
def test_spacy_vector_clusters_read_the_pipeline_vectors(tmp_path: Path) -> None:
    spacy = pytest.importorskip("spacy")
    nlp = spacy.blank("en")
    for word, vector in zip(WORDS, VECTORS, strict=True):
        nlp.vocab.set_vector(word, np.array(vector, dtype="float32"))
    nlp.to_disk(tmp_path / "pipeline")
    clusters = spacy_vector_clusters(tmp_path / "pipeline", sizes=(2,))
    assert clusters == vector_clusters(WORDS, np.array(VECTORS), sizes=(2,))

    spacy.blank("en").to_disk(tmp_path / "no-vectors")
    with pytest.raises(ValueError, match="no static word vectors"):
        spacy_vector_clusters(tmp_path / "no-vectors")


def test_cluster_features_take_a_prefix() -> None:
    text = "Liver cells"
    spans = tokenize(text)
    feats = cluster_features(text, spans, {"liver": (1, 2, 3)}, prefix="e")
    assert feats[0] == ["e0=1", "e1=2", "e2=3"]
    assert feats[1] == ["e=UNK", "e1[-1]=2"]


def _sequences(settings: FeatureSettings, clusters: dict[str, tuple[int, ...]]):
    context = DocumentContext(settings, None, embedding_clusters=clusters)
    texts = [
        ("the liver was enlarged", [(4, 9, "Organ")]),
        ("cells of the kidney", [(0, 5, "Cell"), (13, 19, "Organ")]),
        ("heart and neurons", [(0, 5, "Organ"), (10, 17, "Cell")]),
    ] * 3
    for text, mentions in texts:
        spans = tokenize(text)
        yield context.features(text, spans), labels_for(spans, mentions, "BIO")


def test_embedding_cluster_features_only_when_the_settings_ask_for_them() -> None:
    clusters = {"liver": (0, 0, 0), "kidney": (0, 0, 1)}
    text = "the liver"
    spans = tokenize(text)
    on = DocumentContext(
        FeatureSettings(embedding_clusters=True), None, embedding_clusters=clusters
    )
    off = DocumentContext(FeatureSettings(), None, embedding_clusters=clusters)
    assert "e0=0" in on.features(text, spans)[1] and "e=UNK" in on.features(text, spans)[0]
    assert not any(f.startswith("e") for tok in off.features(text, spans) for f in tok)


def test_model_folder_keeps_and_reloads_the_embedding_clusters(tmp_path: Path) -> None:
    clusters = vector_clusters(WORDS, np.array(VECTORS), sizes=(2, 3, 4))
    settings = FeatureSettings(embedding_clusters=True)
    meta = train_crf(
        list(_sequences(settings, clusters)),
        tmp_path / "model",
        TrainingParams(max_iterations=20),
        settings,
        embedding_clusters=clusters,
    )
    assert meta["embedding_clusters"] == EMBEDDING_CLUSTERS_FILE
    assert load_clusters(tmp_path / "model" / EMBEDDING_CLUSTERS_FILE) == clusters
    stored = json.loads((tmp_path / "model" / META_FILE).read_text("utf-8"))
    assert stored["features"]["embedding_clusters"] is True

    tagger = CrfTagger.load(tmp_path / "model")
    text = "the kidney was enlarged"
    features = tagger.features(text, tokenize(text))
    assert f"e0={clusters['kidney'][0]}" in features[1]
    assert ("kidney", "Organ") in {
        (text[b:e], label) for b, e, label, _ in tagger.tag(text, tokenize(text))
    }


def test_models_without_embedding_clusters_load_as_before(tmp_path: Path) -> None:
    settings = FeatureSettings()
    meta = train_crf(
        list(_sequences(settings, {})),
        tmp_path / "model",
        TrainingParams(max_iterations=5),
        settings,
    )
    assert "embedding_clusters" not in meta
    # an older meta.json has no embedding_clusters feature flag at all
    stored = json.loads((tmp_path / "model" / META_FILE).read_text("utf-8"))
    del stored["features"]["embedding_clusters"]
    (tmp_path / "model" / META_FILE).write_text(json.dumps(stored), encoding="utf-8")
    tagger = CrfTagger.load(tmp_path / "model")
    assert tagger.settings.embedding_clusters is False
    assert not any(
        f.startswith("e")
        for tok in tagger.features("the liver", tokenize("the liver"))
        for f in tok
    )
