"""A tiny hand-written AnatEM-like corpus for the Stanza NER trainer's tests: eight
sentences with their anatomy mentions, gold CASes of them, vectors for their words,
and a ``casflow train`` workflow over them."""

from __future__ import annotations

import re
from pathlib import Path

import cassis

from casflow.components.crfsuite.tokenize import tokenize
from casflow.typesystem import ANATOMY_MENTION, SENTENCE, TOKEN, load_typesystem
from tests.helpers.training import training_workflow, write_gold_splits, write_vectors

#: (text, [(mention text, AnatEM class), ...]) -- mention texts are found left to right.
SENTENCES = [
    ("Biopsies of the liver showed fibrosis.", [("liver", "Organ")]),
    (
        "CD4+ T cells were isolated from blood.",
        [("CD4+ T cells", "Cell"), ("blood", "Organism_substance")],
    ),
    ("The tumour invaded the kidney.", [("tumour", "Cancer"), ("kidney", "Organ")]),
    (
        "Mitochondria in hepatocytes were swollen.",
        [("Mitochondria", "Cellular_component"), ("hepatocytes", "Cell")],
    ),
    ("We measured glucose in plasma samples.", [("plasma", "Organism_substance")]),
    ("Lung tissue was stained with eosin.", [("Lung tissue", "Tissue")]),
    ("The patients received no treatment.", []),
    (
        "Neurons of the cortex express the gene.",
        [("Neurons", "Cell"), ("cortex", "Multi-tissue_structure")],
    ),
]


def gold_cas(
    rows: list[tuple[str, list[tuple[str, str]]]], mention_type: str = ANATOMY_MENTION
) -> cassis.Cas:
    """The sentences as one paragraph; gold sentences, tokens, mentions in view ``gold``."""
    ts = load_typesystem()
    document = cassis.Cas(typesystem=ts)
    text = " ".join(t for t, _ in rows)
    document.sofa_string = text
    cas = document.create_view("gold")
    cas.sofa_string = text
    S, T, M = (ts.get_type(n) for n in (SENTENCE, TOKEN, mention_type))
    position = 0
    for sentence_text, mentions in rows:
        begin = text.index(sentence_text, position)
        end = begin + len(sentence_text)
        cas.add(S(begin=begin, end=end))
        cas.add_all([T(begin=b, end=e) for b, e in tokenize(text, begin, end)])
        cursor = begin
        for mention, label in mentions:
            b = text.index(mention, cursor)
            cas.add(M(begin=b, end=b + len(mention), value=label))
            cursor = b + len(mention)
        position = end
    return document


def unmarked_gold_cas(k: int) -> cassis.Cas:
    """Document ``k`` of a corpus whose gold has no mentions (the sentences rotated by
    ``k``, so the documents differ): training data with nothing to learn."""
    cas = gold_cas(SENTENCES[k:] + SENTENCES[:k])
    view = cas.get_view("gold")
    for mention in list(view.select(ANATOMY_MENTION)):
        view.remove(mention)
    return cas


def ner_vectors(path: Path) -> Path:
    words = {w.lower() for t, _ in SENTENCES for w in re.findall(r"[^\W\d_]+|\d+|\S", t)}
    return write_vectors(path, sorted(words))


TINY = {
    "epochs": 12,
    "hidden_dim": 16,
    "char_hidden_dim": 8,
    "batch_size": 4,
    "optim": "adam",
    "lr": 0.01,
    "stanza_options": {"char_emb_dim": 8, "dropout": 0.1},
}


def ner_workflow(root: Path, output: Path, **changes: object) -> Path:
    return training_workflow(
        root,
        output,
        types=["Sentence", "Token", "AnatomyMention"],
        layers=["anatomy"],
        trainer="train.stanza.ner.v1",
        config={**TINY, "vectors": str(root / "vectors.txt"), **changes},
        seed=3,
    )


def write_tiny_ner_corpus(root: Path) -> Path:
    """Six training documents (the sentences in rotated orders), one dev document and
    vectors for their words, in ``root``."""
    write_gold_splits(root, {"train": range(6)}, lambda k: gold_cas(SENTENCES[k:] + SENTENCES[:k]))
    write_gold_splits(root, {"dev": [0]}, lambda _: gold_cas(SENTENCES[2:6]))
    ner_vectors(root / "vectors.txt")
    return root
