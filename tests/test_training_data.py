"""``casflow train`` refuses gold data it cannot learn from before training: documents
without the gold of a layer, a gold set without text, two documents under one id. And
what a trained CRF says about itself: the model card names the reader settings of the
training and development documents, and its meta.json the mention type it learned,
which ``ner.crf.v1`` then checks. Tiny hand-written corpora; each training takes
seconds (NLTK Punkt and python-crfsuite)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cassis
import pytest

from casflow.components.crfsuite.crf import META_FILE
from casflow.components.crfsuite.tagger import CrfNer, CrfNerConfig
from casflow.pipeline.component import RunContext
from casflow.pipeline.testing import cas_from_text
from casflow.pipeline.training import TrainingDataError
from casflow.typesystem import ANATOMY_MENTION, GENE_MENTION, SENTENCE
from tests.helpers.ner_corpus import SENTENCES, gold_cas, unmarked_gold_cas
from tests.helpers.training import train, training_workflow, write_gold_splits

CRF = {"crf": {"iterations": 5}}


def crf_workflow(root: Path, output: Path, **config: object) -> Path:
    return training_workflow(
        root,
        output,
        types=["Sentence", "Token", "AnatomyMention"],
        layers=["anatomy"],
        trainer="train.crf.mentions.v1",
        config={**CRF, **config},
        seed=0,
    )


def punkt_workflow(root: Path, output: Path) -> Path:
    return training_workflow(
        root,
        output,
        types=["Sentence"],
        layers=["sentences"],
        trainer="train.nltk.punkt.v1",
        config={},
        seed=0,
    )


def marked(k: int) -> cassis.Cas:
    return gold_cas(SENTENCES[k:] + SENTENCES[:k])


def without_sentences(k: int) -> cassis.Cas:
    cas = marked(k)
    view = cas.get_view("gold")
    for sentence in list(view.select(SENTENCE)):
        view.remove(sentence)
    return cas


def test_training_documents_without_the_layers_gold_are_refused_before_training(
    tmp_path: Path,
) -> None:
    """A CRF learned from documents without one mention (the reader's views config left
    AnatomyMention out, say) trained, 'finished' and tagged nothing: refused before any
    model is written, naming the type, the layer, the view and the settings to check."""
    write_gold_splits(tmp_path, {"train": range(3)}, unmarked_gold_cas)
    write_gold_splits(tmp_path, {"dev": [0]}, marked)
    with pytest.raises(TrainingDataError) as raised:
        train(crf_workflow(tmp_path, tmp_path / "out"))
    message = str(raised.value)
    assert "the 3 training documents hold no AnatomyMention (the anatomy layer)" in message
    assert "in view 'gold' (read by xmi.reader.v1 with the gold.train settings)" in message
    assert not (tmp_path / "out" / "final").exists()


def test_development_documents_without_the_layers_gold_are_refused(tmp_path: Path) -> None:
    """Without gold mentions in the dev documents the final scores are 0 whatever the
    model learned: refused before training, naming the dev settings."""
    write_gold_splits(tmp_path, {"train": range(3)}, marked)
    write_gold_splits(tmp_path, {"dev": [0, 1]}, unmarked_gold_cas)
    with pytest.raises(TrainingDataError) as raised:
        train(crf_workflow(tmp_path, tmp_path / "out"))
    message = str(raised.value)
    assert (
        "the 2 development documents hold no AnatomyMention (the anatomy layer, scored on "
        "them)" in message
    )
    assert "gold.dev settings" in message
    assert not (tmp_path / "out" / "final").exists()


def test_a_gold_set_without_text_is_refused(tmp_path: Path) -> None:
    write_gold_splits(tmp_path, {"train": range(2)}, lambda _: gold_cas([]))
    write_gold_splits(tmp_path, {"dev": [0]}, marked)
    with pytest.raises(TrainingDataError, match="the 2 training documents hold no text"):
        train(crf_workflow(tmp_path, tmp_path / "out"))


def test_punkt_learns_from_text_without_gold_sentences_but_is_scored_on_them(
    tmp_path: Path,
) -> None:
    """Punkt is unsupervised: training documents without sentences are fine; the
    development documents must hold the sentences it is scored on."""
    pytest.importorskip("nltk", reason="NLTK is the tools extra")
    write_gold_splits(tmp_path, {"train": range(3)}, without_sentences)
    write_gold_splits(tmp_path, {"dev": [0]}, marked)
    result, _ = train(punkt_workflow(tmp_path, tmp_path / "out"))
    assert result.report["final"]["dev_scores"]["sentences_f1"] > 0

    shutil.rmtree(tmp_path / "dev")
    write_gold_splits(tmp_path, {"dev": [0]}, without_sentences)
    with pytest.raises(TrainingDataError) as raised:
        train(punkt_workflow(tmp_path, tmp_path / "out2"))
    assert "the 1 development documents hold no Sentence (the sentences layer, scored" in str(
        raised.value
    )


def test_two_training_documents_under_one_id_are_refused_before_reading(tmp_path: Path) -> None:
    """Two folders with the same file names gave one id twice: with --folds the copies
    landed in two folds at once (not disjoint) and were scored in place of each other."""
    pytest.importorskip("nltk", reason="NLTK is the tools extra")
    write_gold_splits(tmp_path, {"train": range(4)}, marked)
    write_gold_splits(tmp_path, {"dev": [0]}, marked)
    copies = tmp_path / "copies"
    copies.mkdir()
    for name in ("train1.xmi", "train2.xmi"):
        shutil.copy(tmp_path / "train" / name, copies / name)
    workflow = punkt_workflow(tmp_path, tmp_path / "out")
    text = workflow.read_text(encoding="utf-8")
    workflow.write_text(
        text.replace(f"{{input: {tmp_path / 'train'}}}", f"{{input: '{tmp_path}/[ct]*/*.xmi'}}")
        + "cross_validation: {folds: 3}\n",
        encoding="utf-8",
    )
    with pytest.raises(TrainingDataError) as raised:
        train(workflow)
    message = str(raised.value)
    assert "2 train document(s) repeat the id of another (e.g. train1:" in message
    assert str(copies / "train1.xmi") in message and str(tmp_path / "train" / "train1.xmi") in (
        message
    )
    assert not (tmp_path / "out" / "folds").exists()


def test_the_card_names_the_reader_settings_of_both_gold_sets(tmp_path: Path) -> None:
    """The card said 'training documents: 3 (train0, train1, train2)' and nothing of where
    they came from; the reader settings (input, split, ids, limit) say it."""
    write_gold_splits(tmp_path, {"train": range(3)}, marked)
    write_gold_splits(tmp_path, {"dev": [0]}, marked)
    result, _ = train(crf_workflow(tmp_path, tmp_path / "out"))
    card = (result.model_dir / "MODEL_CARD.md").read_text(encoding="utf-8")
    train_line = next(line for line in card.splitlines() if "training documents:" in line)
    dev_line = next(line for line in card.splitlines() if "development documents:" in line)
    assert json.dumps(str(tmp_path / "train")) in train_line
    assert "(dev0)" in dev_line and json.dumps(str(tmp_path / "dev")) in dev_line


def test_a_crf_model_says_what_it_learned_and_another_mention_type_is_refused(
    tmp_path: Path,
) -> None:
    """An anatomy CRF run as its card said (ner.crf.v1, model: <folder>) wrote
    GeneMention, ner.crf.v1's default, with AnatEM classes as values: the model's
    meta.json names its type, and a tagger writing another is refused."""
    write_gold_splits(tmp_path, {"train": range(3)}, marked)
    write_gold_splits(tmp_path, {"dev": [0]}, marked)
    result, _ = train(crf_workflow(tmp_path, tmp_path / "out"))
    model = result.model_dir
    meta = json.loads((model / META_FILE).read_text(encoding="utf-8"))
    assert meta["mention_type"] == ANATOMY_MENTION
    assert "`mention_type: AnatomyMention`" in (model / "MODEL_CARD.md").read_text("utf-8")

    context = RunContext(output_dir=tmp_path)
    wrong = CrfNerConfig(model=str(model))
    assert wrong.mention_type == GENE_MENTION
    (problem,) = CrfNer.check_config(wrong, context)
    assert "learned AnatomyMention mentions" in problem
    assert "set mention_type: AnatomyMention" in problem
    with pytest.raises(ValueError, match="learned AnatomyMention"):
        CrfNer(wrong, context)

    right = CrfNerConfig(model=str(model), mention_type="AnatomyMention")
    assert CrfNer.check_config(right, context) == []
    cas = cas_from_text(" ".join(t for t, _ in SENTENCES))
    tagger = CrfNer(right, context)
    tagger.process(cas)
    assert list(cas.select(ANATOMY_MENTION)) and not list(cas.select(GENE_MENTION))


def test_the_shipped_crf_models_say_what_they_learned() -> None:
    from casflow.components.models import model_path

    for model, mention_type in (
        ("casflow:gene", GENE_MENTION),
        ("casflow:anatomy", ANATOMY_MENTION),
    ):
        meta = json.loads((model_path(model) / META_FILE).read_text(encoding="utf-8"))
        assert meta["mention_type"] == mention_type


def test_reading_the_gold_logs_a_line_every_few_seconds_not_every_ten_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line every ten documents made 1,500 lines of a CI log for BC2GM's sentences:
    read quickly, the documents of a gold set get one line, at the end."""
    pytest.importorskip("nltk", reason="NLTK is the tools extra")
    from casflow.pipeline import training

    write_gold_splits(tmp_path, {"train": range(25)}, marked)
    write_gold_splits(tmp_path, {"dev": [0]}, marked)
    _, lines = train(punkt_workflow(tmp_path, tmp_path / "out"))
    read = [line.split("] ", 1)[1] for line in lines if "] read " in line]
    assert [line.split(" documents")[0] for line in read] == ["read 25/25 train", "read 1/1 dev"]

    monkeypatch.setattr(training, "READ_LOG_SECONDS", 0.0)
    _, lines = train(punkt_workflow(tmp_path, tmp_path / "out2"))
    assert len([line for line in lines if "] read " in line]) == 25 + 1
