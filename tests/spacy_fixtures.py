"""A tiny spaCy pipeline trained in seconds, for tests that need a real model.

No pretrained model can be downloaded in the test environment, so the tests
train one on a handful of handwritten sentences (no corpus data): a small
shared tok2vec, a tagger with Penn tags, an attribute ruler mapping them to
UPOS (as the scispaCy pipelines do), an edit-tree lemmatizer, a parser with
CLEAR-style labels and an NER with GENE and ANATOMY. It memorises its training
sentences well enough that tests on them see every layer; it is not a model.
"""

from __future__ import annotations

import random
from pathlib import Path

import cassis

from casflow.typesystem import (
    DEPENDENCY,
    DEPENDENCY_ROOT,
    LEMMA,
    POS,
    SENTENCE,
    TOKEN,
    load_typesystem,
)

# word, Penn tag, head (index in the sentence; the root points to itself), label, lemma
Row = tuple[str, str, int, str, str]

SENTENCES: list[tuple[list[Row], list[tuple[int, int, str]]]] = [
    (
        [
            ("BRCA2", "NN", 1, "nsubj", "brca2"),
            ("binds", "VBZ", 1, "ROOT", "bind"),
            ("RAD51", "NN", 1, "dobj", "rad51"),
            ("in", "IN", 1, "prep", "in"),
            ("the", "DT", 5, "det", "the"),
            ("nucleus", "NN", 3, "pobj", "nucleus"),
            (".", ".", 1, "punct", "."),
        ],
        [(0, 1, "GENE"), (2, 3, "GENE"), (5, 6, "ANATOMY")],
    ),
    (
        [
            ("The", "DT", 2, "det", "the"),
            ("p53", "NN", 2, "compound", "p53"),
            ("protein", "NN", 4, "nsubjpass", "protein"),
            ("is", "VBZ", 4, "auxpass", "be"),
            ("expressed", "VBN", 4, "ROOT", "express"),
            ("in", "IN", 4, "prep", "in"),
            ("liver", "NN", 7, "compound", "liver"),
            ("cells", "NNS", 5, "pobj", "cell"),
            (".", ".", 4, "punct", "."),
        ],
        [(1, 2, "GENE"), (6, 8, "ANATOMY")],
    ),
    (
        [
            ("Mutations", "NNS", 3, "nsubj", "mutation"),
            ("in", "IN", 0, "prep", "in"),
            ("Sox9", "NN", 1, "pobj", "sox9"),
            ("cause", "VBP", 3, "ROOT", "cause"),
            ("defects", "NNS", 3, "dobj", "defect"),
            ("of", "IN", 4, "prep", "of"),
            ("the", "DT", 7, "det", "the"),
            ("heart", "NN", 5, "pobj", "heart"),
            (".", ".", 3, "punct", "."),
        ],
        [(2, 3, "GENE"), (7, 8, "ANATOMY")],
    ),
    (
        [
            ("We", "PRP", 1, "nsubj", "we"),
            ("detected", "VBD", 1, "ROOT", "detect"),
            ("Bmp4", "NN", 3, "compound", "bmp4"),
            ("mRNA", "NN", 1, "dobj", "mrna"),
            ("in", "IN", 1, "prep", "in"),
            ("the", "DT", 7, "det", "the"),
            ("limb", "NN", 7, "compound", "limb"),
            ("bud", "NN", 4, "pobj", "bud"),
            (".", ".", 1, "punct", "."),
        ],
        [(2, 3, "GENE"), (6, 8, "ANATOMY")],
    ),
    (
        [
            ("These", "DT", 1, "det", "these"),
            ("results", "NNS", 2, "nsubj", "result"),
            ("suggest", "VBP", 2, "ROOT", "suggest"),
            ("that", "IN", 5, "mark", "that"),
            ("Shh", "NN", 5, "nsubj", "shh"),
            ("regulates", "VBZ", 2, "ccomp", "regulate"),
            ("growth", "NN", 5, "dobj", "growth"),
            (".", ".", 2, "punct", "."),
        ],
        [(4, 5, "GENE")],
    ),
    (
        [
            ("Cells", "NNS", 2, "nsubjpass", "cell"),
            ("were", "VBD", 2, "auxpass", "be"),
            ("stained", "VBN", 2, "ROOT", "stain"),
            ("with", "IN", 2, "prep", "with"),
            ("antibodies", "NNS", 3, "pobj", "antibody"),
            ("against", "IN", 4, "prep", "against"),
            ("Pax6", "NN", 5, "pobj", "pax6"),
            (".", ".", 2, "punct", "."),
        ],
        [(0, 1, "ANATOMY"), (6, 7, "GENE")],
    ),
    (
        [
            ("The", "DT", 1, "det", "the"),
            ("kidneys", "NNS", 5, "nsubj", "kidney"),
            ("of", "IN", 1, "prep", "of"),
            ("mutant", "JJ", 4, "amod", "mutant"),
            ("mice", "NNS", 2, "pobj", "mouse"),
            ("were", "VBD", 5, "ROOT", "be"),
            ("small", "JJ", 5, "acomp", "small"),
            (".", ".", 5, "punct", "."),
        ],
        [(1, 2, "ANATOMY")],
    ),
    (
        [
            ("Expression", "NN", 3, "nsubj", "expression"),
            ("of", "IN", 0, "prep", "of"),
            ("Fgf8", "NN", 1, "pobj", "fgf8"),
            ("increased", "VBD", 3, "ROOT", "increase"),
            ("in", "IN", 3, "prep", "in"),
            ("2", "CD", 6, "nummod", "2"),
            ("days", "NNS", 4, "pobj", "day"),
            (".", ".", 3, "punct", "."),
        ],
        [(2, 3, "GENE")],
    ),
]

# Penn tag -> UPOS, applied by the attribute ruler.
TAG_MAP = {
    "NN": "NOUN",
    "NNS": "NOUN",
    "VBZ": "VERB",
    "VBP": "VERB",
    "VBD": "VERB",
    "VBN": "VERB",
    "IN": "ADP",
    "DT": "DET",
    "PRP": "PRON",
    "JJ": "ADJ",
    "CD": "NUM",
    ".": "PUNCT",
    "_SP": "SPACE",
}

WIDTH = 32
LISTENER = {"@architectures": "spacy.Tok2VecListener.v1", "width": WIDTH, "upstream": "*"}


def sentence_text(rows: list[Row]) -> str:
    """The sentence as running text (no space before the final period)."""
    return " ".join(r[0] for r in rows[:-1]) + rows[-1][0]


def gold_document(rotation: int) -> cassis.Cas:
    """All hand-written sentences (rotated) as one paragraph, gold in view ``gold``."""
    ts = load_typesystem()
    order = SENTENCES[rotation:] + SENTENCES[:rotation]
    text = " ".join(sentence_text(rows) for rows, _ in order)
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = text
    view = cas.create_view("gold")
    view.sofa_string = text
    T, P, L, S = (ts.get_type(n) for n in (TOKEN, POS, LEMMA, SENTENCE))
    D, R = ts.get_type(DEPENDENCY), ts.get_type(DEPENDENCY_ROOT)
    position = 0
    for rows, _ in order:
        tokens = []
        for form, tag, _, _, lemma in rows:
            begin = text.index(form, position)
            position = begin + len(form)
            pos = P(begin=begin, end=position, PosValue=tag, coarseValue=TAG_MAP[tag])
            lem = L(begin=begin, end=position, value=lemma)
            token = T(begin=begin, end=position, pos=pos, lemma=lem)
            view.add_all([pos, lem, token])
            tokens.append(token)
        view.add(S(begin=tokens[0].begin, end=tokens[-1].end))
        for i, (token, (_, _, head, label, _)) in enumerate(zip(tokens, rows, strict=True)):
            kind = R if head == i else D
            view.add(
                kind(
                    begin=token.begin,
                    end=token.end,
                    Governor=tokens[head],
                    Dependent=token,
                    DependencyType="ROOT" if head == i else label,
                    flavor="basic",
                )
            )
    return cas


def training_text(n: int = len(SENTENCES)) -> str:
    """The first ``n`` training sentences as one paragraph."""
    return " ".join(sentence_text(rows) for rows, _ in SENTENCES[:n])


def _parser_model(state_type: str) -> dict:
    return {
        "@architectures": "spacy.TransitionBasedParser.v2",
        "state_type": state_type,
        "extra_state_tokens": False,
        "hidden_width": WIDTH,
        "maxout_pieces": 2,
        "use_upper": True,
        "nO": None,
        "tok2vec": LISTENER,
    }


def _examples(nlp):  # type: ignore[no-untyped-def]
    from spacy.tokens import Doc
    from spacy.training import Example, offsets_to_biluo_tags

    # Single sentences and pairs, so the parser also learns where sentences end.
    groups = [[i] for i in range(len(SENTENCES))]
    groups += [[i, (i + 1) % len(SENTENCES)] for i in range(len(SENTENCES))]
    examples = []
    for group in groups:
        words, spaces, tags, heads, deps, lemmas, sent_starts = [], [], [], [], [], [], []
        entity_tokens: list[tuple[int, int, str]] = []
        for i in group:
            rows, ents = SENTENCES[i]
            base = len(words)
            for k, (word, tag, head, dep, lemma) in enumerate(rows):
                words.append(word)
                spaces.append(k + 2 < len(rows) or k == len(rows) - 1)
                tags.append(tag)
                heads.append(base + head)
                deps.append(dep)
                lemmas.append(lemma)
                sent_starts.append(k == 0)
            entity_tokens += [(base + s, base + e, label) for s, e, label in ents]
        spaces[-1] = False
        predicted = Doc(nlp.vocab, words=words, spaces=spaces)
        offsets = [
            (predicted[s].idx, predicted[e - 1].idx + len(predicted[e - 1]), label)
            for s, e, label in entity_tokens
        ]
        annotations = {
            "words": words,
            "spaces": spaces,
            "tags": tags,
            "heads": heads,
            "deps": deps,
            "lemmas": lemmas,
            "sent_starts": sent_starts,
            "entities": offsets_to_biluo_tags(predicted, offsets),
        }
        examples.append(Example.from_dict(predicted, annotations))
    return examples


def train_tiny_pipeline(output_dir: Path, iterations: int = 30, seed: int = 0) -> Path:
    """Train the tiny pipeline and write it with ``nlp.to_disk``; return its folder."""
    import spacy
    from spacy.util import fix_random_seed, minibatch

    fix_random_seed(seed)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "tok2vec",
        config={
            "model": {
                "@architectures": "spacy.Tok2Vec.v2",
                "embed": {
                    "@architectures": "spacy.MultiHashEmbed.v2",
                    "width": WIDTH,
                    "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
                    "rows": [500, 250, 250, 250],
                    "include_static_vectors": False,
                },
                "encode": {
                    "@architectures": "spacy.MaxoutWindowEncoder.v2",
                    "width": WIDTH,
                    "depth": 1,
                    "window_size": 1,
                    "maxout_pieces": 2,
                },
            }
        },
    )
    tagger_model = {"@architectures": "spacy.Tagger.v2", "nO": None, "tok2vec": LISTENER}
    nlp.add_pipe("tagger", config={"model": tagger_model})
    nlp.add_pipe("attribute_ruler")
    nlp.add_pipe(
        "trainable_lemmatizer",
        name="lemmatizer",
        config={"model": tagger_model, "backoff": "orth", "min_tree_freq": 1, "top_k": 1},
    )
    nlp.add_pipe("parser", config={"model": _parser_model("parser")})
    nlp.add_pipe("ner", config={"model": _parser_model("ner")})

    examples = _examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    # The attribute ruler's initialize clears its patterns, so the tag map comes after.
    nlp.get_pipe("attribute_ruler").load_from_tag_map(
        {tag: {"POS": pos} for tag, pos in TAG_MAP.items()}
    )
    rng = random.Random(seed)
    for _ in range(iterations):
        rng.shuffle(examples)
        for batch in minibatch(examples, size=4):
            nlp.update(batch, sgd=optimizer, drop=0.1)
    output_dir.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output_dir)
    return output_dir
