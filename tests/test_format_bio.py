"""Generic BIO / CoNLL column format."""

from __future__ import annotations

import pytest

from casflow.components.formats.bio import parse as bio
from casflow.components.formats.bio.parse import Mention
from casflow.components.formats.common import FormatError

BIO = (
    "white\tJJ\tB-Multi-tissue_structure\n"
    "matter\tNN\tI-Multi-tissue_structure\n"
    "of\tIN\tO\n"
    "rat\tNN\tO\n"
    "spinal\tJJ\tB-Organ\n"
    "cord\tNN\tI-Organ\n"
    "\n"
    "Cells\tNNS\tB-Cell\n"
    "grew\tVBD\tO\n"
    "\n"
)


def test_tokens_mentions_and_rebuilt_text():
    document = bio.parse_bio(BIO)
    assert document.text == "white matter of rat spinal cord\nCells grew"
    assert [len(s.tokens) for s in document.sentences] == [6, 2]
    found = [(document.text[m.begin : m.end], m.label, m.tokens) for m in document.mentions]
    assert found == [
        ("white matter", "Multi-tissue_structure", (0, 2)),
        ("spinal cord", "Organ", (4, 6)),
        ("Cells", "Cell", (0, 1)),
    ]
    assert document.sentences[1].tokens[0].line == 8


def test_round_trip_and_other_columns_kept(tmp_path):
    document = bio.parse_bio(BIO)
    assert bio.format_bio(document) == BIO
    path = tmp_path / "x.conll"
    bio.write_bio(document, path)
    assert bio.read_bio(path).mentions == document.mentions


def test_writer_uses_the_mentions_not_the_tags_read():
    document = bio.parse_bio(BIO)
    first = document.sentences[0]
    first.mentions = [Mention(first.tokens[3].begin, first.tokens[5].end, "Organism_subdivision")]
    lines = bio.format_bio(document).splitlines()
    assert [line.split("\t")[2] for line in lines[:6]] == [
        "O",
        "O",
        "O",
        "B-Organism_subdivision",
        "I-Organism_subdivision",
        "I-Organism_subdivision",
    ]


def test_columns_are_configurable():
    text = "1 white B-Tissue JJ\n2 cells I-Tissue NNS\n"
    document = bio.parse_bio(text, token_column=1, tag_column=2, separator=None)
    assert document.text == "white cells"
    assert [(m.label, m.tokens) for m in document.mentions] == [("Tissue", (0, 2))]
    assert bio.format_bio(document, tag_column=2, separator=" ") == text + "\n"


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        # IOB1 / conlleval: I- after O or after another class starts a mention
        (["I-A", "I-A", "O", "I-A"], [(0, 2, "A"), (3, 4, "A")]),
        (["B-A", "I-B", "I-B"], [(0, 1, "A"), (1, 3, "B")]),
        (["B-A", "B-A", "I-A"], [(0, 1, "A"), (1, 3, "A")]),
        (["O", "O"], []),
        (["B-A", "I-A"], [(0, 2, "A")]),
    ],
)
def test_bio_to_spans_follows_conlleval(tags, expected):
    assert bio.bio_to_spans(tags) == expected


def test_iob1_input_is_written_as_bio():
    document = bio.parse_bio("a\tI-X\nb\tI-X\nc\tO\n")
    assert bio.format_bio(document) == "a\tB-X\nb\tI-X\nc\tO\n\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\tO\nb\tE-X\n", r"x\.tsv:2: tag 'E-X'"),
        ("a\tO\nb\tB-\n", r"x\.tsv:2: tag 'B-'"),
        ("a\tO\nb\tx\tO\n", r"x\.tsv:2: 3 columns"),
    ],
)
def test_bad_lines_name_file_and_line(text, message):
    with pytest.raises(FormatError, match=message):
        bio.parse_bio(text, "x.tsv")


TOKENS = [Mention(0, 5, ""), Mention(6, 12, ""), Mention(13, 15, "")]  # "white matter of"


def test_spans_to_bio():
    tags = bio.spans_to_bio(TOKENS, [Mention(0, 12, "T"), Mention(13, 15, "U")])
    assert tags == ["B-T", "I-T", "B-U"]


def test_spans_to_bio_rejects_spans_inside_tokens():
    with pytest.raises(ValueError, match="token boundaries"):
        bio.spans_to_bio(TOKENS, [Mention(0, 3, "T")])
    with pytest.raises(ValueError, match="covers no token"):
        bio.spans_to_bio(TOKENS, [Mention(5, 6, "T")])


def test_spans_to_bio_overlap_policy():
    nested = [Mention(6, 12, "Inner"), Mention(0, 12, "Outer")]
    with pytest.raises(ValueError, match="overlap"):
        bio.spans_to_bio(TOKENS, nested)
    assert bio.spans_to_bio(TOKENS, nested, overlap="longest") == ["B-Outer", "I-Outer", "O"]


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize("split", ["train", "devel"])
def test_bc2gm_conll_round_trip(corpora_dir, split):
    path = corpora_dir / "bc2gm" / "conll" / f"{split}.tsv"
    document = bio.read_bio(path)
    assert bio.format_bio(document) == path.read_text()
    sentence_file = corpora_dir / "bc2gm" / "bc2-format" / split / f"{split}.in"
    sentence_texts = [line.split(" ", 1)[1] for line in sentence_file.read_text().splitlines()]
    assert len(document.sentences) == len(sentence_texts)
    # the tokens are the BC2 sentences, tokenized
    for sentence, text in zip(document.sentences, sentence_texts, strict=True):
        assert "".join(t.text for t in sentence.tokens) == "".join(text.split())
