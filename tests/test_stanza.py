"""Stanza: ``stanza.pipeline.v1`` on tiny models trained once per session by Stanza's
own trainers (tokenizer, POS tagger, dependency parser, NER; a few hand-written sentences,
random word vectors written in Stanza's pretrain format), and the mapping of
multi-word tokens, entities and constituency trees on Documents built with Stanza's
own classes. Skips when Stanza (and PyTorch) are not installed."""

from __future__ import annotations

import json
import random
from pathlib import Path

import cassis
import pytest

from casflow.components.layers import LongSentenceWarning
from casflow.pipeline.registry import registry
from casflow.typesystem import (
    ANATOMY_MENTION,
    CONSTITUENT_ROOT,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    GENE_MENTION,
    NAMED_ENTITY,
    PENN_TREE,
    POS,
    SENTENCE,
    TOKEN,
    TREEBANK_CONSTITUENT,
    load_typesystem,
)

pytest.importorskip(
    "stanza",
    reason="Stanza is the stanza extra: pip install torch==2.13.0, then 'casflow[stanza]'",
)

# (form, lemma, UPOS, XPOS, head, relation)
SENTENCES = [
    [
        ("The", "the", "DET", "DT", 2, "det"),
        ("protein", "protein", "NOUN", "NN", 3, "nsubj"),
        ("binds", "bind", "VERB", "VBZ", 0, "root"),
        ("DNA", "DNA", "NOUN", "NN", 3, "obj"),
        (".", ".", "PUNCT", ".", 3, "punct"),
    ],
    [
        ("Cells", "cell", "NOUN", "NNS", 2, "nsubj"),
        ("grow", "grow", "VERB", "VBP", 0, "root"),
        ("in", "in", "ADP", "IN", 4, "case"),
        ("culture", "culture", "NOUN", "NN", 2, "obl"),
        (".", ".", "PUNCT", ".", 2, "punct"),
    ],
    [
        ("Mice", "mouse", "NOUN", "NNS", 2, "nsubj"),
        ("lack", "lack", "VERB", "VBP", 0, "root"),
        ("the", "the", "DET", "DT", 4, "det"),
        ("receptor", "receptor", "NOUN", "NN", 2, "obj"),
        (".", ".", "PUNCT", ".", 2, "punct"),
    ],
]
TREES = """(ROOT (S (NP-SBJ (DT The) (NN protein)) (VP (VBZ binds) (NP (NN DNA))) (. .)))
(ROOT (S (NP-SBJ (NNS Cells)) (VP (VBP grow) (PP (IN in) (NP (NN culture)))) (. .)))
(ROOT (S (NP-SBJ (NNS Mice)) (VP (VBP lack) (NP (DT the) (NN receptor))) (. .)))
"""
XPOS = {row[3] for sentence in SENTENCES for row in sentence}


def _sentence_text(rows: list[tuple]) -> str:
    return " ".join(row[0] for row in rows[:-1]) + rows[-1][0]


def _conllu(sentences: list[list[tuple]]) -> str:
    lines = []
    for rows in sentences:
        lines.append(f"# text = {_sentence_text(rows)}")
        for i, (form, lemma, upos, xpos, head, rel) in enumerate(rows, 1):
            misc = "SpaceAfter=No" if i == len(rows) - 1 else "_"
            lines.append(f"{i}\t{form}\t{lemma}\t{upos}\t{xpos}\t_\t{head}\t{rel}\t_\t{misc}")
        lines.append("")
    return "\n".join(lines) + "\n"


def train_tiny_models(folder: Path) -> dict[str, Path]:
    """Stanza's tokenizer, tagger and parser trained for a few steps (tens of seconds)."""
    from stanza.models import parser, tagger, tokenizer
    from stanza.models.common.pretrain import Pretrain
    from stanza.utils.datasets import prepare_tokenizer_data

    train = SENTENCES * 4
    for split, sentences in (("train", train), ("dev", SENTENCES)):
        (folder / f"{split}.conllu").write_text(_conllu(sentences), encoding="utf-8")
        (folder / f"{split}.txt").write_text(
            " ".join(_sentence_text(s) for s in sentences) + "\n", encoding="utf-8"
        )
        prepare_tokenizer_data.main(
            [
                str(folder / f"{split}.txt"),
                str(folder / f"{split}.conllu"),
                "-o",
                str(folder / f"{split}.labels"),
                "-m",
                str(folder / f"{split}.mwt.json"),
            ]
        )
    rng = random.Random(0)
    words = sorted(
        {row[0] for s in SENTENCES for row in s} | {row[0].lower() for s in SENTENCES for row in s}
    )
    with open(folder / "vectors.txt", "w", encoding="utf-8") as out:
        out.write(f"{len(words)} 8\n")
        for word in words:
            out.write(word + " " + " ".join(f"{rng.uniform(-1, 1):.4f}" for _ in range(8)) + "\n")
    pretrain = folder / "pretrain.pt"
    Pretrain(str(pretrain), str(folder / "vectors.txt")).load()  # writes the .pt file
    common = ["--lang", "en", "--shorthand", "en_test", "--save_dir", str(folder), "--cpu"]
    tokenizer.main(
        [
            "--mode", "train",
            "--txt_file", str(folder / "train.txt"),
            "--label_file", str(folder / "train.labels"),
            "--mwt_json_file", str(folder / "train.mwt.json"),
            "--dev_txt_file", str(folder / "dev.txt"),
            "--dev_label_file", str(folder / "dev.labels"),
            "--dev_conll_gold", str(folder / "dev.conllu"),
            "--conll_file", str(folder / "tokenizer-dev.conllu"),
            "--steps", "80", "--eval_steps", "80", "--batch_size", "8", "--max_seqlen", "40",
            "--emb_dim", "8", "--hidden_dim", "16",
            "--save_name", "tokenizer.pt",
            *common,
        ]
    )  # fmt: skip
    tagged = [
        "--wordvec_pretrain_file", str(pretrain),
        "--train_file", str(folder / "train.conllu"),
        "--eval_file", str(folder / "dev.conllu"),
        "--max_steps", "10", "--eval_interval", "10", "--log_step", "10",
        "--batch_size", "50", "--augment_nopunct", "0.0",
        "--hidden_dim", "16", "--char_hidden_dim", "16", "--word_emb_dim", "8",
        "--char_emb_dim", "8", "--transformed_dim", "8",
        *common,
    ]  # fmt: skip
    tagger.main(
        [*tagged, "--output_file", str(folder / "pos-dev.conllu"), "--save_name", "pos.pt",
         "--tag_emb_dim", "8"]
    )  # fmt: skip
    parser.main(
        [*tagged, "--output_file", str(folder / "dep-dev.conllu"), "--save_name", "depparse.pt",
         "--tag_emb_dim", "8", "--deep_biaff_hidden_dim", "16"]
    )  # fmt: skip
    from stanza.models import ner_tagger

    # BioNLP'13 CG labels, so the bionlp13cg preset applies.
    tags = {"DNA": "GENE_OR_GENE_PRODUCT", "receptor": "GENE_OR_GENE_PRODUCT", "Cells": "CELL",
            "Mice": "ORGANISM"}  # fmt: skip
    ner_sentences = [
        [{"text": row[0], "ner": f"S-{tags[row[0]]}" if row[0] in tags else "O"} for row in s]
        for s in SENTENCES
    ]
    (folder / "ner.train.json").write_text(json.dumps(ner_sentences * 4), encoding="utf-8")
    (folder / "ner.dev.json").write_text(json.dumps(ner_sentences), encoding="utf-8")
    ner_tagger.main(
        [
            "--data_dir", str(folder), "--wordvec_pretrain_file", str(pretrain),
            "--train_file", str(folder / "ner.train.json"),
            "--eval_file", str(folder / "ner.dev.json"),
            "--max_steps", "60", "--eval_interval", "60", "--batch_size", "12", "--lr", "0.1",
            "--hidden_dim", "16", "--char_hidden_dim", "16", "--word_emb_dim", "8",
            "--char_emb_dim", "8", "--save_name", "ner.pt",
            "--shorthand", "en_test", "--save_dir", str(folder), "--cpu",
        ]
    )  # fmt: skip
    # Constituency: Stanza's trainer scores its dev set with CoreNLP (Java, not here), so
    # the model is built by the trainer's own build_trainer and saved untrained: a real
    # Stanza parser whose trees are arbitrary but well-formed.
    from stanza.models import constituency_parser
    from stanza.models.common.foundation_cache import FoundationCache
    from stanza.models.constituency import parser_training, tree_reader

    trees = tree_reader.read_trees(TREES)
    args = constituency_parser.parse_args(
        [
            "--pattn_num_layers", "0", "--lattn_d_proj", "0", "--hidden_size", "20",
            "--delta_embedding_dim", "10", "--wordvec_pretrain_file", str(pretrain),
            "--save_dir", str(folder), "--save_name", str(folder / "constituency.pt"),
            "--shorthand", "en_test", "--no_retag", "--cpu",
        ]
    )  # fmt: skip
    trainer, _, _, _ = parser_training.build_trainer(
        args, trees, trees[-1:], [], FoundationCache(), None
    )
    trainer.save(str(folder / "constituency.pt"))
    return {
        "constituency": folder / "constituency.pt",
        "ner": folder / "ner.pt",
        "tokenize": folder / "tokenizer.pt",
        "pos": folder / "pos.pt",
        "depparse": folder / "depparse.pt",
        "pretrain": pretrain,
    }


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return train_tiny_models(tmp_path_factory.mktemp("stanza-models"))


def _config(models: dict[str, Path], **extra: object) -> dict:
    pretrain = str(models["pretrain"])
    return {
        "processors": {"tokenize": "tiny", "pos": "tiny", "lemma": "identity", "depparse": "tiny"},
        "model_files": {
            "tokenize": {"model": str(models["tokenize"])},
            "pos": {"model": str(models["pos"]), "pretrain": pretrain},
            "depparse": {"model": str(models["depparse"]), "pretrain": pretrain},
        },
        **extra,
    }


def _component(config: dict):  # type: ignore[no-untyped-def]
    cls = registry().get("stanza.pipeline.v1")
    return cls(cls.Config(**config))


def _cas(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def _check_view(cas: cassis.Cas, lemmas: bool = True) -> None:
    """Exact offsets and well-formed trees, whatever the tiny models predicted."""
    text = cas.sofa_string
    tokens = sorted(cas.select(TOKEN), key=lambda t: t.begin)
    assert tokens
    for before, after in zip(tokens, tokens[1:], strict=False):
        assert before.end <= after.begin
    for token in tokens:
        covered = text[token.begin : token.end]
        assert covered and covered == covered.strip() and token.get_covered_text() == covered
        assert token.pos is not None and token.pos.PosValue in XPOS
        # identity lemmas: Stanza's word text (inner whitespace as Stanza writes it)
        # (Stanza writes "<UNK>" as the text of a word its tokenizer finds too long; the
        # Token keeps the exact offsets: only the identity lemma shows it.)
        assert token.lemma is not None
        assert not lemmas or token.lemma.value.split() == covered.split()
    relations = list(cas.select(DEPENDENCY))
    by_dependent = {}
    for relation in relations:
        assert id(relation.Dependent) not in by_dependent
        by_dependent[id(relation.Dependent)] = relation
        assert (relation.begin, relation.end) == (relation.Dependent.begin, relation.Dependent.end)
    assert set(by_dependent) == {id(t) for t in tokens}
    for sentence in cas.select(SENTENCE):
        inside = cas.select_covered(TOKEN, sentence)
        roots = [r for r in cas.select_covered(DEPENDENCY_ROOT, sentence)]
        # ROOT, or the label the parser gave its root word where not root (the tiny
        # test parser says nsubj): kept, as conll18_ud_eval.py scores it
        assert len(roots) == 1 and roots[0].DependencyType
        assert roots[0].Governor is roots[0].Dependent
        for token in inside:
            governor = by_dependent[id(token)].Governor
            assert sentence.begin <= governor.begin < sentence.end


@pytest.mark.slow
def test_raw_text_offsets_and_layers(tiny_models: dict[str, Path]) -> None:
    component = _component(_config(tiny_models))
    text = "The protein binds DNA.  Cells grow in culture.\n\nMice lack the\u00a0receptor."
    cas = _cas(text)
    component.process(cas)
    _check_view(cas)
    sentences = list(cas.select(SENTENCE))
    assert sentences
    # Structure blocks are never crossed: nothing spans the blank line.
    blank = text.index("\n\n")
    assert all(not (s.begin < blank < s.end) for s in sentences)
    assert all(not (t.begin < blank < t.end) for t in cas.select(TOKEN))


@pytest.mark.slow
def test_batch_equals_one_by_one(tiny_models: dict[str, Path]) -> None:
    component = _component(_config(tiny_models))
    texts = ["The protein binds DNA.", "Mice lack the receptor. Cells grow in culture."]
    alone = [_cas(t) for t in texts]
    for cas in alone:
        component.process(cas)
    together = [_cas(t) for t in texts]
    component.process_batch(together)
    for a, b in zip(alone, together, strict=True):
        assert [(t.begin, t.end, t.pos.PosValue) for t in a.select(TOKEN)] == [
            (t.begin, t.end, t.pos.PosValue) for t in b.select(TOKEN)
        ]


@pytest.mark.slow
@pytest.mark.parametrize("threads", [None, 2])
def test_torch_threads_while_analysing_then_restored(
    tiny_models: dict[str, Path], threads: int | None
) -> None:
    # PyTorch's default (one thread per core) beside a busy core made a step 35 times
    # slower: the step runs on its own count, 1 unless configured, and leaves the
    # process's count as it found it.
    import torch

    extra = {} if threads is None else {"threads": threads}
    component = _component(_config(tiny_models, **extra))
    seen = []
    bulk_process = component.nlp.bulk_process

    def recording(documents, **options):  # type: ignore[no-untyped-def]
        seen.append(torch.get_num_threads())
        return bulk_process(documents, **options)

    component.nlp.bulk_process = recording
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        component.process(_cas("The protein binds DNA."))
        # the tokenizer, then the processors after it (on sentences cut to the cap)
        assert seen == [threads or 1] * 2
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_pretokenized_over_existing_tokens_and_xmi(tiny_models: dict[str, Path]) -> None:
    text = "Mice lack the receptor (Tlr4).\nCells grow in culture"
    cas = _cas(text)
    ts = cas.typesystem
    spans = []
    for line_begin, line in ((0, text.split("\n")[0]), (text.index("\n") + 1, text.split("\n")[1])):
        cas.add(ts.get_type(SENTENCE)(begin=line_begin, end=line_begin + len(line)))
        position = 0
        for word in line.replace("(", " ( ").replace(")", " ) ").replace(".", " .").split():
            begin = line.index(word, position)
            spans.append((line_begin + begin, line_begin + begin + len(word)))
            position = begin + len(word)
    for b, e in spans:
        cas.add(ts.get_type(TOKEN)(begin=b, end=e))
    config = _config(tiny_models, use_existing_tokens=True, use_existing_sentences=True)
    config["processors"] = {k: v for k, v in config["processors"].items() if k != "tokenize"}
    del config["model_files"]["tokenize"]
    component = _component(config)
    component.process(cas)
    assert [(t.begin, t.end) for t in cas.select(TOKEN)] == spans  # no token added or moved
    assert len(list(cas.select(SENTENCE))) == 2
    _check_view(cas)
    loaded = cassis.load_cas_from_xmi(cas.to_xmi(), typesystem=load_typesystem())
    assert len(list(loaded.select(DEPENDENCY))) == len(spans)
    assert all(t.pos is not None for t in loaded.select(TOKEN))


@pytest.mark.slow
def test_a_sentence_longer_than_the_cap_is_analysed_in_pieces(
    tiny_models: dict[str, Path],
) -> None:
    # A table flattened to text is one "sentence" of thousands of words: whole, the
    # parser's memory grows with its square (21 GB for 2,000 words with the tiny model).
    text = " ".join(f"w{i}" for i in range(7))
    cas = _cas(text)
    ts = cas.typesystem
    cas.add(ts.get_type(SENTENCE)(begin=0, end=len(text)))
    position = 0
    for word in text.split():
        begin = text.index(word, position)
        cas.add(ts.get_type(TOKEN)(begin=begin, end=begin + len(word)))
        position = begin + len(word)
    config = _config(
        tiny_models, use_existing_tokens=True, use_existing_sentences=True, max_sentence_words=3
    )
    config["processors"] = {k: v for k, v in config["processors"].items() if k != "tokenize"}
    del config["model_files"]["tokenize"]
    with pytest.warns(
        LongSentenceWarning, match=r"\(0, 20\) has 7 words.*max_sentence_words \(3\)"
    ):
        _component(config).process(cas)
    roots = sorted(r.begin for r in cas.select(DEPENDENCY_ROOT))
    assert len(roots) == 3  # pieces of 3, 3 and 1 words, one tree each
    pieces = [(0, 3), (3, 6), (6, 7)]
    tokens = sorted(cas.select(TOKEN), key=lambda t: t.begin)
    for relation in cas.select(DEPENDENCY):
        dependent = tokens.index(relation.Dependent)
        governor = tokens.index(relation.Governor)
        assert any(lo <= dependent < hi and lo <= governor < hi for lo, hi in pieces)
    assert len(list(cas.select(DEPENDENCY))) == 7


def _recorded_sentence_lengths(component) -> dict[str, list[int]]:  # type: ignore[no-untyped-def]
    """Per processor after the tokenizer, the words of each sentence it is given."""
    seen: dict[str, list[int]] = {}
    for name in ("pos", "lemma", "depparse"):
        processor = component.nlp.processors[name]
        lengths = seen.setdefault(name, [])

        def recording(documents, processor=processor, lengths=lengths):  # type: ignore[no-untyped-def]
            lengths.extend(len(s.words) for d in documents for s in d.sentences)
            return type(processor).bulk_process(processor, documents)

        processor.bulk_process = recording
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("given_sentence", [False, True])
def test_a_long_sentence_of_stanzas_tokenizer_reaches_the_parser_in_pieces(
    tiny_models: dict[str, Path], given_sentence: bool
) -> None:
    # A 100 KB line without a sentence end was one sentence of some 20,000 words to the
    # parser: the process took all the memory and was killed. Stanza's tokenizer makes
    # one sentence of it here too (and of a given Sentence in tokenize_no_ssplit mode).
    words = ["The", "protein", "binds", "DNA", "and", "cells", "grow", "in", "culture"] * 4
    text = "Cells grow.\n\n" + " ".join(words)
    long_begin = text.index("The")
    cas = _cas(text)
    if given_sentence:
        for begin, end in ((0, long_begin - 2), (long_begin, len(text))):
            cas.add(cas.typesystem.get_type(SENTENCE)(begin=begin, end=end))
    component = _component(
        _config(tiny_models, max_sentence_words=4, use_existing_sentences=given_sentence)
    )
    seen = _recorded_sentence_lengths(component)
    with pytest.warns(LongSentenceWarning, match=r"max_sentence_words \(4\)") as caught:
        component.process(cas)
    for name, lengths in seen.items():
        assert lengths and max(lengths) <= 4, (name, lengths)
    assert sum(seen["depparse"]) == len(list(cas.select(TOKEN)))
    long = [w for w in caught if issubclass(w.category, LongSentenceWarning)]
    assert len(long) == 1 and f"at ({long_begin}, {len(text)})" in str(long[0].message)
    assert len(list(cas.select(DEPENDENCY_ROOT))) == len(seen["depparse"])  # one per piece
    if given_sentence:
        assert len(list(cas.select(SENTENCE))) == 2  # the view's, none written
        for token in cas.select(TOKEN):
            covered = text[token.begin : token.end]
            assert covered and covered == covered.strip() and token.pos is not None
    else:
        _check_view(cas, lemmas=False)  # exact offsets, one root in each Sentence
        sentences = sorted(cas.select(SENTENCE), key=lambda s: s.begin)
        assert len(sentences) == len(seen["depparse"])  # each piece a Sentence
        assert all(len(cas.select_covered(TOKEN, s)) <= 4 for s in sentences)
        assert sentences[-1].end == len(text)


@pytest.mark.slow
def test_no_sentence_over_the_cap_as_one_call_of_the_whole_pipeline(
    tiny_models: dict[str, Path],
) -> None:
    # The tokenizer runs apart from the processors after it; under the cap the result is
    # what Stanza's whole pipeline gives in one call.
    texts = ["The protein binds DNA.  Cells grow in culture.\n\nMice lack the receptor.", "DNA."]
    config = _config(tiny_models, max_sentence_words=40)
    config["processors"]["ner"] = "tiny"
    config["model_files"]["ner"] = {
        "model": str(tiny_models["ner"]),
        "pretrain": str(tiny_models["pretrain"]),
    }
    split, whole = _component(config), _component(config)
    whole._analyse = lambda views, units: list(  # type: ignore[method-assign]
        whole.nlp.bulk_process(whole._documents(units))
    )
    ours, theirs = [_cas(t) for t in texts], [_cas(t) for t in texts]
    split.process_batch(ours)
    whole.process_batch(theirs)
    assert [c.to_xmi() for c in ours] == [c.to_xmi() for c in theirs]
    assert list(ours[0].select(DEPENDENCY_ROOT))


def test_cutting_keeps_multiword_tokens_whole_and_offsets() -> None:
    from stanza.models.common.doc import END_CHAR, ID, START_CHAR, TEXT, Document

    from casflow.components.stanza.pipeline import cut_long_sentences

    text = "xx It cannot bind liver cells. Mice grow."
    first = [
        {ID: (1,), TEXT: "It", START_CHAR: 3, END_CHAR: 5},
        {ID: (2, 3), TEXT: "cannot", START_CHAR: 6, END_CHAR: 12},
        {ID: (2,), TEXT: "can"},
        {ID: (3,), TEXT: "not"},
        {ID: (4,), TEXT: "bind", START_CHAR: 13, END_CHAR: 17},
        {ID: (5,), TEXT: "liver", START_CHAR: 18, END_CHAR: 23},
        {ID: (6,), TEXT: "cells", START_CHAR: 24, END_CHAR: 29},
        {ID: (7,), TEXT: ".", START_CHAR: 29, END_CHAR: 30},
    ]
    second = [
        {ID: (1,), TEXT: "Mice", START_CHAR: 31, END_CHAR: 35},
        {ID: (2,), TEXT: "grow", START_CHAR: 36, END_CHAR: 40},
        {ID: (3,), TEXT: ".", START_CHAR: 40, END_CHAR: 41},
    ]
    # the document as Stanza's tokenizer gives a block that starts at 3 in the view
    for entry in first + second:
        if START_CHAR in entry:
            entry[START_CHAR] -= 3
            entry[END_CHAR] -= 3
    document = Document([first, second], text=text[3:])
    view = _cas(text)
    assert cut_long_sentences(view, 3, document, 7) is document  # none too long
    with pytest.warns(LongSentenceWarning, match=r"\(3, 30\) has 7 words"):
        cut = cut_long_sentences(view, 3, document, 3)
    pieces = [[[w.text for w in t.words] for t in s.tokens] for s in cut.sentences]
    assert pieces == [
        [["It"], ["can", "not"]],  # the multi-word token is never cut
        [["bind"], ["liver"], ["cells"]],
        [["."]],
        [["Mice"], ["grow"], ["."]],
    ]
    for sentence in cut.sentences:
        assert [w.id for w in sentence.words] == list(range(1, len(sentence.words) + 1))
        for token in sentence.tokens:
            assert text[3 + token.start_char : 3 + token.end_char] == token.text


@pytest.mark.slow
def test_ner_with_preset_over_existing_tokens(tiny_models: dict[str, Path]) -> None:
    text = "Mice lack the receptor. The protein binds DNA. Cells grow in culture."
    cas = _cas(text)
    ts = cas.typesystem
    position = 0
    for sentence in text.split(". "):
        sentence = sentence if sentence.endswith(".") else sentence + "."
        begin = text.index(sentence, position)
        cas.add(ts.get_type(SENTENCE)(begin=begin, end=begin + len(sentence)))
        for word in sentence[:-1].split() + ["."]:
            start = text.index(word, position)
            cas.add(ts.get_type(TOKEN)(begin=start, end=start + len(word)))
            position = start + len(word)
    component = _component(
        {
            "processors": {"ner": "tiny"},
            "model_files": {
                "ner": {"model": str(tiny_models["ner"]), "pretrain": str(tiny_models["pretrain"])}
            },
            "use_existing_tokens": True,
            "use_existing_sentences": True,
            "ner_preset": "bionlp13cg",
        }
    )
    component.process(cas)
    found = {(m.type.name, m.get_covered_text(), m.value) for m in cas.select(NAMED_ENTITY)}
    # Labels land on their preset's types (CELL -> AnatEM's Cell; ORGANISM is unmapped),
    # at the existing tokens' offsets.
    allowed = {
        (GENE_MENTION, "DNA", "GENE_OR_GENE_PRODUCT"),
        (GENE_MENTION, "receptor", "GENE_OR_GENE_PRODUCT"),
        (ANATOMY_MENTION, "Cells", "Cell"),
        (NAMED_ENTITY, "Mice", "ORGANISM"),
    }
    assert found and found <= allowed, found
    assert {kind for kind, _, _ in found} & {GENE_MENTION, ANATOMY_MENTION}


@pytest.mark.slow
def test_constituency_trees_over_tokens_and_xmi(tiny_models: dict[str, Path]) -> None:
    config = _config(tiny_models, layers=["sentences", "tokens", "pos", "constituents"])
    config["processors"] = {"tokenize": "tiny", "pos": "tiny", "constituency": "tiny"}
    config["model_files"]["constituency"] = {
        "model": str(tiny_models["constituency"]),
        "pretrain": str(tiny_models["pretrain"]),
    }
    del config["model_files"]["depparse"]
    component = _component(config)
    cas = _cas("The protein binds DNA.  Mice lack the receptor.")
    component.process(cas)
    loaded = cassis.load_cas_from_xmi(cas.to_xmi(), typesystem=load_typesystem())
    sentences = list(loaded.select(SENTENCE))
    roots = list(loaded.select(CONSTITUENT_ROOT))
    assert sentences and len(roots) == len(sentences)
    for sentence, root in zip(sentences, roots, strict=True):
        assert (root.begin, root.end) == (sentence.begin, sentence.end)
        assert root.constituentType == "ROOT" and root.parent is None
    tokens = list(loaded.select(TOKEN))
    for token in tokens:
        assert token.parent is not None  # every token hangs in its sentence's tree
        assert any(child is token for child in token.parent.children.elements)
    for constituent in loaded.select(TREEBANK_CONSTITUENT):
        children = constituent.children.elements
        assert children and constituent.parent is not None
        assert (constituent.begin, constituent.end) == (children[0].begin, children[-1].end)
        assert all(child.parent is constituent for child in children)
    assert len(list(loaded.select(PENN_TREE))) == len(sentences)


@pytest.mark.slow
@pytest.mark.java
def test_every_layer_loads_in_apache_uima_java(
    tiny_models: dict[str, Path], tmp_path: Path
) -> None:
    from tests.helpers.uima import uima_java_counts

    config = _config(tiny_models)
    config["processors"]["constituency"] = "tiny"
    config["model_files"]["constituency"] = {
        "model": str(tiny_models["constituency"]),
        "pretrain": str(tiny_models["pretrain"]),
    }
    component = _component(config)
    cas = _cas("The protein binds DNA.  Mice lack the \U0001d6fc-receptor.")
    component.process(cas)
    counts = uima_java_counts(cas, tmp_path)["_InitialView"]
    for name in (TOKEN, POS, DEPENDENCY_ROOT, CONSTITUENT_ROOT, TREEBANK_CONSTITUENT, PENN_TREE):
        assert counts.get(name, 0) > 0, name


def test_missing_model_says_what_to_download(tmp_path: Path) -> None:
    cls = registry().get("stanza.pipeline.v1")
    from casflow.pipeline.component import RunContext

    config = cls.Config(
        processors={"tokenize": "craft", "pos": "craft"}, resources_dir=str(tmp_path)
    )
    problems = cls.check_config(config, RunContext(output_dir=tmp_path, workflow_dir=tmp_path))
    assert len(problems) == 1 and "resources.json" in problems[0]
    assert "stanza.download('en'" in problems[0]
    (tmp_path / "resources.json").write_text("{}")
    (tmp_path / "en" / "tokenize").mkdir(parents=True)
    (tmp_path / "en" / "tokenize" / "craft.pt").write_bytes(b"")
    problems = cls.check_config(config, RunContext(output_dir=tmp_path, workflow_dir=tmp_path))
    assert len(problems) == 1 and "pos" in problems[0] and "craft.pt" in problems[0]
    with pytest.raises(FileNotFoundError, match="pos"):
        cls(config, RunContext(output_dir=tmp_path, workflow_dir=tmp_path))


def test_config_errors() -> None:
    cls = registry().get("stanza.pipeline.v1")
    with pytest.raises(ValueError, match="use_existing_sentences"):
        cls.Config(use_existing_tokens=True)
    with pytest.raises(ValueError, match="constituency"):
        cls.Config(layers=["tokens", "constituents"])
    with pytest.raises(ValueError, match="tokenize"):
        cls.Config(processors={"pos": "craft"})
    config = cls.Config(processors={"tokenize": "default", "ner": "anatem"}, ner_preset="anatem")
    requires, produces = cls.requirements(config)
    assert ANATOMY_MENTION in produces and NAMED_ENTITY in produces and POS not in produces


# -- the mapping on Documents made with Stanza's own classes --------------------------


def _document():  # type: ignore[no-untyped-def]
    """ "It cannot bind liver cells." with a splittable MWT (can+not), NER tags and a tree;
    "He won't." with an MWT whose words do not spell it (will+n't)."""
    from stanza.models.common.doc import Document
    from stanza.models.constituency.tree_reader import read_trees

    first = [
        {"id": (1,), "text": "It", "upos": "PRON", "xpos": "PRP", "head": 4, "deprel": "nsubj",
         "misc": "start_char=0|end_char=2", "ner": "O"},
        {"id": (2, 3), "text": "cannot", "misc": "start_char=3|end_char=9", "ner": "O"},
        {"id": (2,), "text": "can", "upos": "AUX", "xpos": "MD", "head": 4, "deprel": "aux"},
        {"id": (3,), "text": "not", "upos": "PART", "xpos": "RB", "head": 4, "deprel": "advmod"},
        {"id": (4,), "text": "bind", "upos": "VERB", "xpos": "VB", "head": 0, "deprel": "root",
         "misc": "start_char=10|end_char=14", "ner": "O"},
        {"id": (5,), "text": "liver", "upos": "NOUN", "xpos": "NN", "head": 6, "deprel": "compound",
         "misc": "start_char=15|end_char=20", "ner": "B-ANATOMY"},
        {"id": (6,), "text": "cells", "upos": "NOUN", "xpos": "NNS", "head": 4, "deprel": "obj",
         "misc": "start_char=21|end_char=26", "ner": "E-ANATOMY"},
        {"id": (7,), "text": ".", "upos": "PUNCT", "xpos": ".", "head": 4, "deprel": "punct",
         "misc": "start_char=26|end_char=27", "ner": "S-GENE"},
    ]  # fmt: skip
    second = [
        {"id": (1,), "text": "He", "upos": "PRON", "xpos": "PRP", "head": 3, "deprel": "nsubj",
         "misc": "start_char=28|end_char=30", "ner": "O"},
        {"id": (2, 3), "text": "won't", "misc": "start_char=31|end_char=36", "ner": "O"},
        {"id": (2,), "text": "will", "upos": "AUX", "xpos": "MD", "head": 0, "deprel": "root"},
        {"id": (3,), "text": "n't", "upos": "PART", "xpos": "RB", "head": 2, "deprel": "advmod"},
        {"id": (4,), "text": ".", "upos": "PUNCT", "xpos": ".", "head": 2, "deprel": "punct",
         "misc": "start_char=36|end_char=37", "ner": "O"},
    ]  # fmt: skip
    document = Document([first, second], text="It cannot bind liver cells. He won't.")
    trees = read_trees(
        "(ROOT (S (NP-SBJ (PRP It)) (VP (MD can) (RB not) (VP (VB bind) (NP (NN liver) "
        "(NNS cells)))) (. .)))\n(ROOT (S (NP (PRP He)) (VP (MD will) (RB n't)) (. .)))"
    )
    for sentence, tree in zip(document.sentences, trees, strict=True):
        sentence.constituency = tree
    return document


def test_mapping_of_mwt_entities_and_trees() -> None:
    from casflow.components.stanza.pipeline import ALL_LAYERS, DocumentWriter, _Unit
    from casflow.components.stanza.presets import NER_PRESETS

    document = _document()
    cas = _cas(document.text)
    writer = DocumentWriter(set(ALL_LAYERS), dict(NER_PRESETS["anatem"]), "named_entity")
    new: list = []
    writer.write(cas, _Unit(0, 0, document.text), document, new)
    from casflow.components.spacy.mapping import add_annotations

    add_annotations(cas, new)
    tokens = [(t.get_covered_text(), t.pos.PosValue) for t in cas.select(TOKEN)]
    # cannot = can + not (exact): two Tokens; won't = will + n't: one Token, the head word's
    assert tokens == [
        ("It", "PRP"), ("can", "MD"), ("not", "RB"), ("bind", "VB"), ("liver", "NN"),
        ("cells", "NNS"), (".", "."), ("He", "PRP"), ("won't", "MD"), (".", "."),
    ]  # fmt: skip
    relations = {
        (r.Dependent.get_covered_text(), r.DependencyType, r.Governor.get_covered_text())
        for r in cas.select(DEPENDENCY)
    }
    assert ("not", "advmod", "bind") in relations and ("He", "nsubj", "won't") in relations
    assert ("won't", "ROOT", "won't") in relations and ("bind", "ROOT", "bind") in relations
    assert len(relations) == 10  # n't -> will is inside one Token: not written
    assert [(m.get_covered_text(), m.value) for m in cas.select(ANATOMY_MENTION)] == [
        ("liver cells", "Anatomy")
    ]
    plain = [m for m in cas.select(NAMED_ENTITY) if m.type.name == NAMED_ENTITY]
    assert [(m.get_covered_text(), m.value) for m in plain] == [(".", "GENE")]
    assert not list(cas.select(GENE_MENTION))
    roots = list(cas.select(CONSTITUENT_ROOT))
    assert len(roots) == 1  # the second sentence has an MWT without offsets per word
    constituents = {c.originalLabel: c for c in cas.select(TREEBANK_CONSTITUENT)}
    subject = constituents["NP-SBJ"]
    assert (subject.constituentType, subject.syntacticFunction) == ("NP", "SBJ")
    assert subject.parent.constituentType == "S" and subject.parent.parent is roots[0]
    assert [c.get_covered_text() for c in subject.children.elements] == ["It"]
    phrases = [
        c.get_covered_text() for c in cas.select(TREEBANK_CONSTITUENT) if c.constituentType == "VP"
    ]
    assert phrases == ["cannot bind liver cells", "bind liver cells"]
    assert [s.get_covered_text() for s in cas.select(SENTENCE)] == [
        "It cannot bind liver cells.",
        "He won't.",
    ]


@pytest.mark.corpus
@pytest.mark.slow
def test_craft_articles_exact_offsets(tiny_models: dict[str, Path], craft_dir: Path) -> None:
    from tests.test_segmenters import assert_exact_tokens, craft_view, craft_views

    component = _component(_config(tiny_models))
    views = [craft_view(text, structure) for _, text, structure in craft_views(craft_dir)[:2]]
    component.process_batch(views)
    for view, (pmid, _, structure) in zip(views, craft_views(craft_dir)[:2], strict=True):
        assert_exact_tokens(view)
        _check_view(view, lemmas=False)
        for token in view.select(TOKEN):
            assert not any(token.begin < b < token.end for _, b, _ in structure), pmid


def test_the_empty_resources_folder_is_one_per_user_not_one_per_process(tmp_path: Path) -> None:
    # Every worker process made its own temporary folder and none was ever removed
    # (49 of them in /tmp after a day of runs): two processes must share one, in the
    # user's cache, and leave nothing in the temporary directory.
    import os
    import subprocess
    import sys

    code = (
        "from casflow.components.stanza.model import _empty_resources_dir; "
        "print(_empty_resources_dir())"
    )
    cache, temporary = tmp_path / "cache", tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "TMPDIR": str(temporary)}
    folders = {
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(folders) == 1
    (folder,) = folders
    assert Path(folder).is_relative_to(cache)
    assert (Path(folder) / "resources.json").read_text() == "{}"
    assert list(temporary.iterdir()) == []


@pytest.mark.parametrize("planted", ["a link", "a file", "writable by others", "another user's"])
def test_an_empty_resources_folder_another_user_may_control_is_not_used(
    planted: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    recwarn: pytest.WarningsRecorder,
) -> None:
    # It was a name known in advance in the shared /tmp: another user could make it
    # first (every Stanza step then failed) or fill it with a resources.json naming
    # models of theirs for Stanza to load. Such a folder is left alone; the process
    # makes a private one instead, once.
    import os
    import stat
    import tempfile

    from casflow.components.stanza import model

    cache, temporary = tmp_path / "cache", tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.setattr(model, "_PRIVATE_RESOURCES", None, raising=False)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    resources = '{"en": {"default_processors": {"pos": "theirs"}}}'
    (theirs / "resources.json").write_text(resources)
    known = cache / "casflow" / "stanza" / "empty-resources"
    known.parent.mkdir(parents=True)
    # where the name was before, in the temporary directory
    before = temporary / f"casflow-stanza-resources-{os.getuid()}"
    for place in (known, before):
        if planted == "a link":
            place.symlink_to(theirs, target_is_directory=True)
        elif planted == "a file":
            place.write_text("{}")
        else:
            place.mkdir()
            (place / "resources.json").write_text(resources)
            if planted == "writable by others":
                place.chmod(0o777)
    if planted == "another user's":
        real_uid = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: real_uid + 1)

    folder = model._empty_resources_dir()
    assert folder not in (known, before, theirs)
    assert folder.parent == temporary
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert (folder / "resources.json").read_text() == "{}"
    assert (theirs / "resources.json").read_text() == resources
    if planted != "a link" and planted != "a file":
        assert (known / "resources.json").read_text() == resources
    (said,) = [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert str(said.message).startswith(f"{known} ") and "XDG_CACHE_HOME" in str(said.message)
    # one private folder per process, not one per Stanza step, said once
    assert model._empty_resources_dir() == folder
    assert len([w for w in recwarn if issubclass(w.category, RuntimeWarning)]) == 1


def test_a_root_word_the_parser_labelled_otherwise_keeps_its_label() -> None:
    # As conllu.import.v1 and conll18_ud_eval.py: a word at HEAD 0 labelled "dep" is a
    # wrong label on the right head. Written as ROOT it scored correct in the chain and
    # wrong when the same parse was imported from CoNLL-U.
    from casflow.components.spacy.mapping import add_annotations
    from casflow.components.stanza.pipeline import ALL_LAYERS, DocumentWriter, _Unit

    document = _document()
    bind = document.sentences[0].words[3]
    assert (bind.text, bind.head) == ("bind", 0)
    bind.deprel = "dep"
    document.sentences[1].words[1].deprel = "root:x"  # "will": a subtype of root is root
    cas = _cas(document.text)
    new: list = []
    DocumentWriter(set(ALL_LAYERS), {}, "named_entity").write(
        cas, _Unit(0, 0, document.text), document, new
    )
    add_annotations(cas, new)
    roots = {
        (r.Dependent.get_covered_text(), r.DependencyType) for r in cas.select(DEPENDENCY_ROOT)
    }
    assert roots == {("bind", "dep"), ("won't", "ROOT")}
