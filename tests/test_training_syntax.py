"""Syntax training: gold -> spaCy Docs, CRAFT tokenizer rules, the training driver, the shipped model."""

from __future__ import annotations

from pathlib import Path

import pytest
import spacy

from casflow.components.metrics.segmentation import score_segmentation
from casflow.components.spacy.craft_tokenizer import blank_craft_english
from casflow.components.spacy.evaluate_syntax import score_docs
from casflow.components.spacy.gold import GoldSyntaxDocument
from casflow.components.spacy.trainer import SYNTAX_CONFIG, train_pipeline
from casflow.components.spacy.training_docs import (
    chunk_sentences,
    gold_to_doc,
    gold_to_docs,
    write_docbin,
)


def _gold(
    text: str, sentences: list[list[tuple[str, str, int, str]]], doc_id: str = "d"
) -> GoldSyntaxDocument:
    """Gold from (form, tag, head within the sentence 1-based or 0 for root, deprel) per word;
    forms are found in order in ``text``."""
    gold = GoldSyntaxDocument(doc_id, text, [], [], [], [], [])
    position = 0
    for words in sentences:
        offset = len(gold.tokens)
        for form, tag, head, deprel in words:
            begin = text.index(form, position)
            position = begin + len(form)
            gold.tokens.append((begin, position))
            gold.tags.append(tag)
            gold.heads.append(offset + head - 1 if head else len(gold.tokens) - 1)
            gold.deprels.append(deprel)
        gold.sentences.append((gold.tokens[offset][0], gold.tokens[-1][1]))
    gold.validate()
    return gold


TEXT = "Pax6-deficient mice died.\n\nResults  here"
GOLD = _gold(
    TEXT,
    [
        [
            ("Pax6", "NN", 3, "npadvmod"),
            ("-", "HYPH", 3, "punct"),
            ("deficient", "JJ", 4, "amod"),
            ("mice", "NNS", 5, "nsubj"),
            ("died", "VBD", 0, "root"),
            (".", ".", 5, "punct"),
        ],
        [("Results", "NNS", 0, "root"), ("here", "RB", 1, "advmod")],
    ],
)


def test_gold_to_doc_keeps_text_spacing_and_annotation() -> None:
    doc = gold_to_doc(spacy.blank("en").vocab, GOLD)
    assert doc.text == TEXT
    assert [t.text for t in doc] == [
        "Pax6", "-", "deficient", "mice", "died", ".", "\n\n", "Results", " ", "here",
    ]  # fmt: skip
    assert [t.whitespace_ for t in doc][:5] == ["", "", " ", " ", ""]
    assert [t.tag_ for t in doc] == [
        "NN",
        "HYPH",
        "JJ",
        "NNS",
        "VBD",
        ".",
        "_SP",
        "NNS",
        "_SP",
        "RB",
    ]
    assert [t.head.i for t in doc] == [2, 2, 3, 4, 4, 4, 5, 7, 7, 7]
    # the blank line stays in the first sentence, so the second starts at "Results"
    assert [s.text for s in doc.sents] == ["Pax6-deficient mice died.\n\n", "Results  here"]
    assert [t.dep_ for t in doc][4] == "root"


def test_gold_to_doc_chunks_and_validation() -> None:
    vocab = spacy.blank("en").vocab
    assert list(chunk_sentences(GOLD, max_tokens=3)) == [(0, 1), (1, 2)]
    assert list(chunk_sentences(GOLD, max_tokens=100)) == [(0, 2)]
    docs = list(gold_to_docs(vocab, [GOLD], max_tokens=3))
    assert [d.text for d in docs] == ["Pax6-deficient mice died.", "Results  here"]
    bad = GoldSyntaxDocument("bad", "a b", [(0, 3)], [(0, 1), (2, 3)], ["X"], [0, 0], ["root"])
    with pytest.raises(ValueError, match="tags has 1 entries for 2 tokens"):
        bad.validate()


def test_scoring_gold_against_itself_is_perfect() -> None:
    doc = gold_to_doc(spacy.blank("en").vocab, GOLD)
    summary_counts = score_docs([GOLD], [doc])
    assert score_segmentation(summary_counts)["sentence"]["f1"] == 1.0
    assert summary_counts["uas/correct"] == summary_counts["uas/gold"] == 8
    assert summary_counts["las/correct"] == 8
    assert summary_counts["pos/correct"] == 8


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Pax6-deficient", ["Pax6", "-", "deficient"]),
        ("(IOP)", ["(", "IOP", ")"]),
        ("at E12.5,", ["at", "E12.5", ","]),
        ("p<0.05", ["p", "<", "0.05"]),
        ("Shh-/-", ["Shh", "-", "/", "-"]),
        ("PGC-1α−/−", ["PGC", "-", "1α", "−", "/", "−"]),
        ("C57BL/6J", ["C57BL", "/", "6J"]),
        ("anti-rabbit non-BC", ["anti-rabbit", "non-BC"]),
        ("a 2-fold rise", ["a", "2-fold", "rise"]),
        ("32,000 cells, 5%", ["32,000", "cells", ",", "5", "%"]),
        ("at 37 °C.", ["at", "37", "°C", "."]),
        ("(Fig. 1A).", ["(", "Fig.", "1A", ")", "."]),
        ("i.e. we cannot", ["i.e.", "we", "can", "not"]),
        ("the 3′-UTR", ["the", "3", "′", "-", "UTR"]),
        ("[24].", ["[", "24", "]", "."]),
        ("the mouse's eye", ["the", "mouse", "'s", "eye"]),
    ],
)
def test_craft_tokenizer_rules(text: str, tokens: list[str]) -> None:
    nlp = blank_craft_english()
    assert [t.text for t in nlp(text)] == tokens


def test_craft_tokenizer_survives_serialisation(tmp_path: Path) -> None:
    nlp = blank_craft_english()
    nlp.to_disk(tmp_path / "blank")
    loaded = spacy.load(tmp_path / "blank")
    assert [t.text for t in loaded("Shh-/- at 37 °C.")] == [
        "Shh",
        "-",
        "/",
        "-",
        "at",
        "37",
        "°C",
        ".",
    ]


def test_craft_tokenizer_rules_do_not_depend_on_the_hash_seed() -> None:
    """The infix rules are saved with every model: same seed, same bytes needs them
    built in one order whatever Python's string hash seed."""
    import os
    import subprocess
    import sys

    code = (
        "from casflow.components.spacy.craft_tokenizer import craft_infixes;"
        "print(repr(craft_infixes()))"
    )
    rules = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(3)
    }
    assert len(rules) == 1


@pytest.mark.slow
def test_training_driver_runs_a_few_steps(tmp_path: Path) -> None:
    vocab = spacy.blank("en").vocab
    other = _gold(
        "Mice died (n=3).",
        [
            [
                ("Mice", "NNS", 2, "nsubj"),
                ("died", "VBD", 0, "root"),
                ("(", "-LRB-", 5, "punct"),
                ("n", "NN", 5, "nsubj"),
                ("=", "SYM", 2, "dep"),
                ("3", "CD", 5, "dobj"),
                (")", "-RRB-", 5, "punct"),
                (".", ".", 2, "punct"),
            ]
        ],
    )
    write_docbin(gold_to_docs(vocab, [GOLD, other] * 4), tmp_path / "train.spacy")
    write_docbin(gold_to_docs(vocab, [GOLD, other]), tmp_path / "dev.spacy")
    nlp = train_pipeline(
        SYNTAX_CONFIG,
        tmp_path / "train.spacy",
        tmp_path / "dev.spacy",
        tmp_path / "run",
        {
            "training.max_steps": 6,
            "training.eval_frequency": 3,
            "components.tok2vec.model.encode.width": 16,
            "components.tok2vec.model.encode.depth": 1,
            "components.parser.model.hidden_width": 16,
        },
        stdout=open(Path(tmp_path / "log.txt"), "w"),  # noqa: SIM115
    )
    assert nlp.pipe_names == ["tok2vec", "tagger", "parser"]
    assert {"NN", "NNS", "VBD", "-LRB-"} <= set(nlp.get_pipe("tagger").labels)
    assert "nsubj" in nlp.get_pipe("parser").labels
    assert (tmp_path / "run" / "model-last" / "config.cfg").is_file()
    doc = nlp("Mice died (n=3).")
    assert [t.text for t in doc] == ["Mice", "died", "(", "n", "=", "3", ")", "."]
    assert all(t.tag_ for t in doc) and doc.has_annotation("DEP")


@pytest.mark.slow
def test_a_stage_scores_its_last_step_when_not_an_evaluation_step(tmp_path: Path) -> None:
    """spaCy's loop evaluates every eval_frequency steps only: a last step between two
    evaluations (here: only step 0 is one) is scored after the loop, and kept as
    model-best when it is at least as good, rather than thrown away."""
    vocab = spacy.blank("en").vocab
    write_docbin(gold_to_docs(vocab, [GOLD] * 8), tmp_path / "train.spacy")
    write_docbin(gold_to_docs(vocab, [GOLD]), tmp_path / "dev.spacy")
    log = tmp_path / "log.txt"
    with log.open("w") as stdout:
        train_pipeline(
            SYNTAX_CONFIG,
            tmp_path / "train.spacy",
            tmp_path / "dev.spacy",
            tmp_path / "run",
            {
                "training.max_steps": 12,
                "training.eval_frequency": 100,
                "training.optimizer.learn_rate": 0.01,
                "components.tok2vec.model.encode.width": 16,
                "components.tok2vec.model.encode.depth": 1,
                "components.parser.model.hidden_width": 16,
            },
            stdout=stdout,
        )
    said = log.read_text()
    assert "step 12 (the last, not a multiple of eval_frequency 100)" in said
    assert "model-best is now the last step" in said
    run = tmp_path / "run"
    for name in ("tagger/model", "parser/model", "tok2vec/model"):
        assert (run / "model-best" / name).read_bytes() == (run / "model-last" / name).read_bytes()


def test_shipped_model_tags_and_parses() -> None:
    from casflow.components.models import MODELS_DIR, shipped_model_path

    if not (MODELS_DIR / "craft_syntax" / "config.cfg").is_file():
        pytest.skip("the craft_syntax model folder is absent (not trained/shipped yet)")
    nlp = spacy.load(shipped_model_path("craft_syntax"))
    doc = nlp("Pax6-deficient mice died at E12.5.\n\nResults\n\nThe lens did not form.")
    assert [t.text for t in doc][:5] == ["Pax6", "-", "deficient", "mice", "died"]
    assert doc[4].tag_ == "VBD"
    assert sum(1 for t in doc if t.dep_ == "ROOT" and not t.is_space) == len(list(doc.sents)) == 3
    assert {t.head.i for t in doc[:4]} <= set(range(len(doc)))


@pytest.mark.slow
@pytest.mark.corpus
def test_craft_article_converts_with_exact_text(craft_dir: Path) -> None:
    from casflow.components.spacy.gold_cas import gold_syntax_from_view
    from casflow.pipeline.component import RunContext
    from casflow.pipeline.gold_sources import GoldSource, read_source

    source = GoldSource(
        component="craft.reader.v1",
        config={
            "corpus": str(craft_dir),
            "split": "dev",
            "ids": None,
            "layers": ["sentences", "tokens", "pos", "lemmas", "dependencies"],
            "ontologies": [],
        },
    )
    context = RunContext(output_dir=Path("."))
    golds = read_source(source, context, gold_syntax_from_view)
    assert len(golds) == 7
    gold = golds[0]
    vocab = spacy.blank("en").vocab
    whole = gold_to_doc(vocab, gold)
    first, last = gold.tokens[0][0], gold.tokens[-1][1]
    assert whole.text == gold.text[first:last]
    assert len(list(whole.sents)) == len(gold.sentences)
    chunks = list(gold_to_docs(vocab, [gold], max_tokens=200))
    assert sum(len(list(c.sents)) for c in chunks) == len(gold.sentences)
    assert sum(1 for c in chunks for t in c if not t.is_space) == len(gold.tokens)
