"""Word vectors as the first step of train.spacy.syntax.v1 (components/gensim/word2vec.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from casflow.components.spacy.trainer import (
    SpacySyntaxTrainer,
    SpacySyntaxTrainerConfig,
    word2vec_sentences,
)
from casflow.pipeline.component import TrainingContext
from casflow.pipeline.gold_sources import GoldSource

pytest.importorskip("gensim")

TEXTS = {
    "a": "Pax6-deficient mice died.\n\nThe mice were small.\n",
    "b": "Small mice and large mice.\nThe mice died.",
}


def _settings(folder: Path, **extra: object) -> dict:
    return {
        "word2vec": {
            "text": [
                {"component": "text.reader.v1", "config": {"input": str(folder)}, "order": "id"}
            ],
            "dims": 8,
            "min_count": 2,
            "max_words": 50,
            "epochs": 3,
            **extra,
        }
    }


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    folder = tmp_path / "text"
    folder.mkdir()
    for name, text in TEXTS.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    return folder


def _trainer(tmp_path: Path, texts: Path, **extra: object) -> SpacySyntaxTrainer:
    config = SpacySyntaxTrainerConfig.model_validate({"vectors": _settings(texts, **extra)})
    context = TrainingContext(output_dir=tmp_path / "run", seed=0, layers=("pos",))
    return SpacySyntaxTrainer(config, context)


def test_sentences_are_the_non_empty_lines_of_the_views_craft_tokenised(
    tmp_path: Path, texts: Path
) -> None:
    source = GoldSource(component="text.reader.v1", config={"input": str(texts)}, order="id")
    sentences = word2vec_sentences([source], TrainingContext(output_dir=tmp_path))
    assert sentences == [
        ["Pax6", "-", "deficient", "mice", "died", "."],
        ["The", "mice", "were", "small", "."],
        ["Small", "mice", "and", "large", "mice", "."],
        ["The", "mice", "died", "."],
    ]


def test_vectors_step_trains_once_and_is_deterministic(tmp_path: Path, texts: Path) -> None:
    import spacy

    lines: list[str] = []
    trainer = _trainer(tmp_path, texts)
    folder = trainer.vectors(lines.append)
    assert folder == tmp_path / "run" / "vectors"
    vectors = spacy.load(folder).vocab.vectors
    # words seen at least twice (min_count 2), most frequent first
    keys = [
        spacy.load(folder).vocab.strings[k]
        for k, _ in sorted(vectors.key2row.items(), key=lambda kv: kv[1])
    ]
    assert keys[0] == "mice" and set(keys) == {"mice", ".", "died", "The"}
    assert len(vectors.key2row) == 4 and vectors.shape[1] == 8
    table = (folder / "vocab" / "vectors").read_bytes()
    # a second run of the same settings and text reuses the vectors
    lines.clear()
    assert _trainer(tmp_path, texts).vectors(lines.append) == folder
    assert any("already trained" in line for line in lines)
    # elsewhere, from scratch: the same bytes
    again = _trainer(tmp_path / "again", texts).vectors(lambda line: None)
    assert (again / "vocab" / "vectors").read_bytes() == table
    # other settings: trained again
    lines.clear()
    _trainer(tmp_path, texts, epochs=4).vectors(lines.append)
    assert not any("already trained" in line for line in lines)


def test_named_pipeline_or_none(tmp_path: Path) -> None:
    context = TrainingContext(output_dir=tmp_path, seed=0, layers=("pos",))
    none = SpacySyntaxTrainer(SpacySyntaxTrainerConfig(vectors=None), context)
    assert none.vectors(lambda line: None) is None
    named = SpacySyntaxTrainer(SpacySyntaxTrainerConfig(vectors=str(tmp_path / "p")), context)
    assert named.vectors(lambda line: None) == tmp_path / "p"


def test_bad_text_sources_are_reported_before_training(tmp_path: Path) -> None:
    config = SpacySyntaxTrainerConfig.model_validate(
        {
            "vectors": {
                "word2vec": {
                    "text": [
                        {"component": "nope.reader.v1"},
                        {"component": "text.reader.v1", "config": {"inptu": "x"}},
                    ]
                }
            }
        }
    )
    problems = SpacySyntaxTrainer.check_config(config, TrainingContext(output_dir=tmp_path))
    assert any(p.startswith("vectors text: nope.reader.v1:") for p in problems), problems
    assert any("text.reader.v1 config: inptu" in p for p in problems), problems


def test_text_too_small_for_min_count_is_a_clear_error() -> None:
    from casflow.components.gensim.word2vec import fit_word2vec

    with pytest.raises(
        ValueError, match=r"no word occurs 3 times or more in the text \(2 sentences, 4 tokens\)"
    ):
        fit_word2vec([["the", "mice"], ["small", "mice"]], min_count=3)
    words, table = fit_word2vec([["the", "mice"], ["small", "mice"]], min_count=2, dims=4)
    assert words == ["mice"] and table.shape == (1, 4)
