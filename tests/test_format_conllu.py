"""CoNLL-U: parsing, exact writing, alignment to a document text."""

from __future__ import annotations

import pytest

from casflow.components.formats.common import FormatError
from casflow.components.formats.conllu import parse as conllu

CONLLU = (
    "# newdoc id = doc1\n"
    "# newpar id = doc1-p0\n"
    "# sent_id = 0\n"
    "# text = Mice don't grow.\n"
    "1\tMice\tmouse\tNOUN\tNNS\tNumber=Plur\t4\tnsubj\t_\t_\n"
    "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t_\t_\n"
    "3\tn't\tnot\tPART\tRB\t_\t4\tneg\t_\t_\n"
    "4\tgrow\tgrow\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\tSpaceAfter=No\n"
    "4.1\tgrew\tgrow\tVERB\tVBD\t_\t_\t_\t4:conj\t_\n"
    "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t_\t4:gap=|SpaceAfter=No\n"
    "\n"
    "# newpar\n"
    "# sent_id = 1\n"
    "# text = Cells  grew\n"
    "1\tCells\tcell\tNOUN\tNNS\tNumber=Plur\t2\tnsubj\t_\t_\n"
    "2\tgrew\tgrow\tVERB\tVBD\t_\t0\troot\t_\t_\n"
    "\n"
)
TEXT = "Mice don't grow.\n\nCells  grew\n"


def test_sentences_comments_and_word_kinds():
    document = conllu.parse_conllu(CONLLU, "doc1.conllu")
    first, second = document.sentences
    assert (first.sent_id, first.text, first.newdoc_id, first.newpar_id) == (
        "0",
        "Mice don't grow.",
        "doc1",
        "doc1-p0",
    )
    assert first.is_newdoc and first.is_newpar
    assert not second.is_newdoc and second.is_newpar and second.newpar_id is None
    assert second.text == "Cells  grew"
    assert [w.id for w in first.syntactic_words] == ["1", "2", "3", "4", "5"]
    assert [w.form for w in first.surface_tokens] == ["Mice", "don't", "grow", "."]
    assert first.words[1].range == (2, 3)
    assert first.words[5].is_empty_node
    assert [w.space_after for w in first.words] == [True, True, True, True, False, True, False]
    assert first.words[6].misc_items == [("4:gap", ""), ("SpaceAfter", "No")]
    assert first.words[0].feats_dict == {"Number": "Plur"}
    assert first.words[4].line == 9


def test_writer_reproduces_the_input(tmp_path):
    document = conllu.parse_conllu(CONLLU)
    assert conllu.format_conllu(document) == CONLLU
    conllu.write_conllu(document, tmp_path / "x.conllu")
    assert (tmp_path / "x.conllu").read_text() == CONLLU


def test_alignment_to_the_document_text():
    document = conllu.parse_conllu(CONLLU)
    spans = conllu.align_to_text(document, TEXT)
    first = spans[0]
    assert [TEXT[s[0] : s[1]] if s else None for s in first] == [
        "Mice",
        "don't",
        "don't",  # the words of a multiword token share its span
        "don't",
        "grow",
        None,  # empty node
        ".",
    ]
    assert [TEXT[b:e] for b, e in spans[1]] == ["Cells", "grew"]
    assert spans[1][0][0] == 18  # across the blank line


def test_alignment_failure_names_file_sentence_and_token():
    document = conllu.parse_conllu(CONLLU, "doc1.conllu")
    text = TEXT.replace("Cells", "Cellz")
    with pytest.raises(
        FormatError,
        match=r"doc1\.conllu:16: sentence 1: token 1 'Cells' not found at offset 18 of doc1\.txt",
    ):
        conllu.align_to_text(document, text, text_source="doc1.txt")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\ta\ta\tX\tX\t_\t0\troot\t_\n", r"x\.conllu:1: 9 tab-separated columns"),
        (
            "1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n3\tb\tb\tX\tX\t_\t1\tdep\t_\t_\n",
            r"x\.conllu:2: word id 3",
        ),
        ("2-3\tab\t_\t_\t_\t_\t_\t_\t_\t_\n", r"x\.conllu:1: multiword range 2-3"),
        ("1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n2.1\tb\tb\tX\tX\t_\t_\t_\t_\t_\n", "empty node 2.1"),
        ("x\ta\ta\tX\tX\t_\t0\troot\t_\t_\n", "is not a word id"),
        ("1\ta\ta\tX\tX\t_\t0\troot\t_\t_\n# late\n", r"x\.conllu:2: comment line inside"),
        ("# sent_id = 1\n\n", r"x\.conllu:1: comment lines with no word lines"),
    ],
)
def test_malformed_input(text, message):
    with pytest.raises(FormatError, match=message):
        conllu.parse_conllu(text, "x.conllu")


@pytest.mark.slow
@pytest.mark.corpus
def test_craft_conllu_round_trip_and_alignment(craft_dir):
    files = sorted((craft_dir / "structural-annotation" / "dependency" / "conllu").glob("*.conllu"))
    assert files
    for path in files:
        raw = path.read_text(encoding="utf-8")
        document = conllu.read_conllu(path)
        assert conllu.format_conllu(document) == raw
        text = (craft_dir / "articles" / "txt" / f"{path.stem}.txt").read_text(encoding="utf-8")
        spans = conllu.align_to_text(document, text, text_source=f"{path.stem}.txt")
        for sentence, sentence_spans in zip(document.sentences, spans, strict=True):
            for word, span in zip(sentence.words, sentence_spans, strict=True):
                assert text[span[0] : span[1]] == word.form
                # SpaceAfter=No agrees with the text (a non-space follows, or the text ends)
                follows = text[span[1] : span[1] + 1]
                assert word.space_after == (follows == "" or follows.isspace())
