"""``train.stanza.syntax.v1``: a tiny Stanza tagger and parser trained through ``casflow
train`` from hand-written gold views (once per session; the tests that use it are
``slow``), resumed after an interruption, and loaded into ``stanza.pipeline.v1``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cassis
import pytest

from casflow.pipeline.component import RunContext
from casflow.pipeline.registry import registry
from casflow.typesystem import DEPENDENCY, DEPENDENCY_ROOT, POS, SENTENCE, TOKEN
from tests.helpers.training import (
    assert_same_weights,
    train,
    train_until,
    training_workflow,
    write_gold_splits,
    write_vectors,
)
from tests.spacy_fixtures import SENTENCES, gold_document

TINY = {
    "tagger_epochs": 3,
    "parser_epochs": 3,
    "tagger_options": {
        "hidden_dim": 16,
        "char_hidden_dim": 16,
        "word_emb_dim": 8,
        "char_emb_dim": 8,
        "tag_emb_dim": 8,
        "transformed_dim": 8,
        "deep_biaff_hidden_dim": 16,
        "composite_deep_biaff_hidden_dim": 8,
        "batch_size": 8,
    },
    "parser_options": {
        "hidden_dim": 16,
        "char_hidden_dim": 16,
        "word_emb_dim": 8,
        "char_emb_dim": 8,
        "tag_emb_dim": 8,
        "transformed_dim": 8,
        "deep_biaff_hidden_dim": 16,
        "deep_biaff_output_dim": 8,
        "batch_size": 60,
    },
}


def _workflow(
    root: Path, output: Path, layers: tuple[str, ...] = ("pos", "dependencies"), **changes: object
) -> Path:
    return training_workflow(
        root,
        output,
        types=["Sentence", "Token", "POS", "Dependency"],
        layers=list(layers),
        trainer="train.stanza.syntax.v1",
        config={**TINY, "vectors": str(root / "vectors.txt"), **changes},
        seed=5,
    )


@pytest.fixture(scope="session")
def tiny_syntax_gold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    root = tmp_path_factory.mktemp("tiny_stanza_syntax")
    splits = {"train": range(6), "dev": [3]}
    write_gold_splits(root, splits, lambda k: gold_document(k % len(SENTENCES)))
    write_vectors(root / "vectors.txt", sorted({row[0] for rows, _ in SENTENCES for row in rows}))
    return root


@pytest.fixture(scope="session")
def tiny_syntax_training(tiny_syntax_gold: Path):
    workflow = _workflow(tiny_syntax_gold, tiny_syntax_gold / "out")
    return (workflow, *train(workflow))


@pytest.mark.slow
def test_training_report_model_folder_card_and_reuse(tiny_syntax_training) -> None:
    workflow, result, lines = tiny_syntax_training
    model = result.model_dir
    assert {p.name for p in model.iterdir()} >= {
        "tagger.pt",
        "parser.pt",
        "pretrain.pt",
        "meta.json",
        "MODEL_CARD.md",
    }
    scores = result.report["final"]["dev_scores"]
    assert set(scores) == {"xpos", "uas", "las"}
    assert all(0 <= v <= 100 for v in scores.values())
    assert len([line for line in lines if re.search(r"tagger epoch \d/3 .*: dev xpos", line)]) == 3
    assert (
        len([line for line in lines if re.search(r"parser epoch \d/3 .*: dev xpos .* las", line)])
        == 3
    )
    # the final scores (stanza pipeline over the gold tokens) equal the kept epochs' scores
    curve = json.loads((model.parent / "curve.json").read_text())
    kept_parser = max((p for p in curve if p["stage"] == "parser"), key=lambda p: p["las"])
    assert scores["las"] == kept_parser["las"] and scores["uas"] == kept_parser["uas"]
    card = (model / "MODEL_CARD.md").read_text()
    assert "| parser | 3 |" in card and "| tagger | 1 |" in card
    _, again = train(workflow)
    assert any("reused" in line for line in again)


@pytest.mark.slow
def test_interrupted_and_resumed_training_ends_with_the_same_model(
    tiny_syntax_gold: Path, tiny_syntax_training, tmp_path: Path
) -> None:
    """Stopped after the parser's second epoch was logged and started again, training
    continues from the checkpoint (the tagger is not trained again) and ends with the
    uninterrupted run's weights, bit for bit."""
    workflow = _workflow(tiny_syntax_gold, tmp_path / "interrupted")
    train_until(workflow, "parser epoch 2/3")
    resumed, lines = train(workflow)
    assert any("tagger: continuing from the checkpoint after epoch 3" in x for x in lines)
    assert any("parser: continuing from the checkpoint after epoch 2" in x for x in lines)
    assert re.findall(r"(tagger|parser) epoch (\d)/3", "\n".join(lines)) == [("parser", "3")]
    for name in ("tagger.pt", "parser.pt"):
        assert_same_weights(
            tiny_syntax_training[1].model_dir / name, resumed.model_dir / name, "model"
        )
    assert (
        resumed.report["final"]["dev_scores"]
        == tiny_syntax_training[1].report["final"]["dev_scores"]
    )


def _tokens_only(rotation: int) -> cassis.Cas:
    """The gold document (view ``gold``) with its sentences and tokens, untagged, copied
    into ``_InitialView``."""
    cas = gold_document(rotation)
    gold = cas.get_view("gold")
    ts = cas.typesystem
    S, T = ts.get_type(SENTENCE), ts.get_type(TOKEN)
    cas.add_all([S(begin=s.begin, end=s.end) for s in gold.select(SENTENCE)])
    cas.add_all([T(begin=t.begin, end=t.end) for t in gold.select(TOKEN)])
    return cas


def _pipeline(model: Path):  # type: ignore[no-untyped-def]
    component = registry().get("stanza.pipeline.v1")
    files = {
        name: {"model": str(model / file), "pretrain": str(model / "pretrain.pt")}
        for name, file in (("pos", "tagger.pt"), ("depparse", "parser.pt"))
    }
    config = component.Config(
        processors={"pos": "default", "lemma": "identity", "depparse": "default"},
        layers=["pos", "dependencies"],
        model_files=files,
        use_existing_sentences=True,
        use_existing_tokens=True,
    )
    return component(config, RunContext(output_dir=Path(".")))


@pytest.mark.slow
def test_fewer_epochs_over_a_longer_run_train_afresh(
    tiny_syntax_gold: Path, tiny_syntax_training, tmp_path: Path
) -> None:
    """A rerun over the same output asking for fewer parser epochs than its checkpoint
    has ends with a fresh run's parser, not the longer run's best epoch."""
    fresh, _ = train(
        _workflow(
            tiny_syntax_gold,
            tmp_path / "fresh",
            ("dependencies",),
            parser_epochs=1,
            parser_tags="gold",
        )
    )
    longer = tmp_path / "longer"
    train(
        _workflow(tiny_syntax_gold, longer, ("dependencies",), parser_epochs=2, parser_tags="gold")
    )
    shorter, lines = train(
        _workflow(tiny_syntax_gold, longer, ("dependencies",), parser_epochs=1, parser_tags="gold")
    )
    assert any("parser: the checkpoint is after epoch 2, more than 1 epochs" in x for x in lines)
    assert re.findall(r"parser epoch (\d)/1", "\n".join(lines)) == ["1"]
    assert_same_weights(fresh.model_dir / "parser.pt", shorter.model_dir / "parser.pt", "model")


@pytest.mark.slow
def test_model_loads_into_stanza_pipeline_tags_and_heads_at_exact_offsets(
    tiny_syntax_training,
) -> None:
    """stanza.pipeline.v1 with the trained folder tags and parses the view's own tokens;
    on the development document, eval.pos.v1 and eval.dependencies.v1 (as craft-eval.yaml
    configures it) give exactly the trainer's development scores."""
    from casflow.pipeline.testing import build, evaluate

    cas = _tokens_only(3)  # the development document
    tokens_before = [(t.begin, t.end) for t in cas.select(TOKEN)]
    _pipeline(tiny_syntax_training[1].model_dir).process(cas)
    text = cas.sofa_string
    tokens = list(cas.select(TOKEN))
    assert [(t.begin, t.end) for t in tokens] == tokens_before
    assert len(list(cas.select(POS))) == len(tokens)
    for token in tokens:
        assert token.pos is not None and token.pos.PosValue and token.pos.coarseValue
        assert (token.pos.begin, token.pos.end) == (token.begin, token.end)
    relations = list(cas.select(DEPENDENCY))
    assert len(relations) == len(tokens)
    spans = {(t.begin, t.end) for t in tokens}
    for relation in relations:
        assert (relation.begin, relation.end) == (relation.Dependent.begin, relation.Dependent.end)
        assert (relation.Governor.begin, relation.Governor.end) in spans
        assert text[relation.begin : relation.end] == relation.Dependent.get_covered_text()
    for sentence in cas.select(SENTENCE):
        assert len(cas.select_covered(DEPENDENCY_ROOT, sentence)) == 1
        for relation in cas.select_covered(DEPENDENCY, sentence):
            assert sentence.begin <= relation.Governor.begin
            assert relation.Governor.end <= sentence.end
    scores = tiny_syntax_training[1].report["final"]["dev_scores"]
    views = {"gold_view": "gold", "system_views": ["_InitialView"]}
    for name, config, expected in (
        ("eval.pos.v1", {"tagsets": ["xpos"]}, {"XPOS accuracy": scores["xpos"]}),
        (
            "eval.dependencies.v1",
            {"labels": "full"},
            {"UAS": scores["uas"], "LAS": scores["las"]},
        ),
    ):
        (result,) = evaluate(name, cas, **views, **config).values()
        evaluator = build(name, **views, **config)
        summary = evaluator.summary(evaluator.score(result.counts))
        assert {k: round(summary[k], 2) for k in expected} == expected, name


def test_config_errors_before_any_document(tmp_path: Path) -> None:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    from pydantic import ValidationError

    trainer = registry().get("train.stanza.syntax.v1")
    with pytest.raises(ValidationError, match="tagger_epoch"):
        trainer.Config(tagger_epoch=3)
    with pytest.raises(ValidationError):
        trainer.Config(parser_tags="silver")
    problems = trainer.check_config(
        trainer.Config(
            vectors=str(tmp_path / "none.txt"),
            tagger_options={"seed": 3, "hidden_dim": 20, "no_such_option": 1},
            parser_options={"save_name": "x", "deep_biaff_hidden_dim": 20},
        ),
        RunContext(output_dir=Path(".")),
    )
    assert any("tagger_options.seed: set by casflow" in p for p in problems)
    assert any(
        "tagger_options.no_such_option: not an option of Stanza's tagger" in p for p in problems
    )
    assert any("parser_options.save_name: set by casflow" in p for p in problems)
    assert any("vectors: nothing at" in p for p in problems)
    assert len(problems) == 4
    [problem] = trainer.check_layers(trainer.Config(), ["dependencies"])
    assert "learn pos too, or set parser_tags: gold" in problem
    assert not trainer.check_layers(trainer.Config(), ["pos"])
    # a parser alone learns from gold tags
    assert not trainer.check_layers(trainer.Config(parser_tags="gold"), ["dependencies"])


def test_workflow_errors_name_their_yaml_line(tmp_path: Path) -> None:
    pytest.importorskip("stanza", reason="Stanza is the stanza extra")
    from casflow.pipeline.training import load_training_workflow

    (tmp_path / "train").mkdir()
    (tmp_path / "dev").mkdir()
    workflow = _workflow(tmp_path, tmp_path / "out", parser_epoch=2)
    with pytest.raises(
        Exception, match=r"out\.yaml:\d+: model -> config -> parser_epoch: unknown key"
    ):
        load_training_workflow(workflow)


@pytest.mark.slow
def test_a_parser_alone_learns_from_gold_tags_and_parses_the_views_tags(
    tiny_syntax_gold: Path, tmp_path: Path
) -> None:
    """layers [dependencies] with parser_tags gold: no tagger; the parser runs in
    stanza.pipeline.v1 over the view's own tags (use_existing_pos), and over the
    development document's gold tags it scores what the trainer reports."""
    from casflow.pipeline.testing import build, evaluate

    workflow = _workflow(
        tiny_syntax_gold, tmp_path / "parser", layers=("dependencies",), parser_tags="gold"
    )
    result, lines = train(workflow)
    model = result.model_dir
    assert {p.name for p in model.iterdir()} >= {"parser.pt", "pretrain.pt", "meta.json"}
    assert not (model / "tagger.pt").exists()
    assert not any("tagger epoch" in line for line in lines)
    assert any(re.search(r"parser epoch 3/3 .*: dev uas", line) for line in lines)
    scores = result.report["final"]["dev_scores"]
    assert set(scores) == {"uas", "las"}
    card = (model / "MODEL_CARD.md").read_text()
    assert "alone, without a tagger" in card and "| tagger |" not in card

    cas = _tokens_only(3)  # the development document, its tokens untagged
    gold = cas.get_view("gold")
    pos_type = cas.typesystem.get_type(POS)
    for token, gold_token in zip(cas.select(TOKEN), gold.select(TOKEN), strict=True):
        token.pos = pos_type(
            begin=token.begin,
            end=token.end,
            PosValue=gold_token.pos.PosValue,
            coarseValue=gold_token.pos.coarseValue,
        )
        cas.add(token.pos)
    component = registry().get("stanza.pipeline.v1")
    config = component.Config(
        processors={"lemma": "identity", "depparse": "default"},
        layers=["dependencies"],
        model_files={
            "depparse": {"model": str(model / "parser.pt"), "pretrain": str(model / "pretrain.pt")}
        },
        use_existing_sentences=True,
        use_existing_tokens=True,
        use_existing_pos=True,
    )
    component(config, RunContext(output_dir=tmp_path)).process(cas)
    for sentence in cas.select(SENTENCE):
        assert len(cas.select_covered(DEPENDENCY_ROOT, sentence)) == 1
    views = {"gold_view": "gold", "system_views": ["_InitialView"]}
    (evaluated,) = evaluate("eval.dependencies.v1", cas, **views, labels="full").values()
    evaluator = build("eval.dependencies.v1", **views, labels="full")
    summary = evaluator.summary(evaluator.score(evaluated.counts))
    assert {"uas": round(summary["UAS"], 2), "las": round(summary["LAS"], 2)} == scores
