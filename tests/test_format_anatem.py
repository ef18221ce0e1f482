"""AnatEM CoNLL and NERsuite forms."""

from __future__ import annotations

import pytest

from casflow.components.formats.anatem import parse as anatem
from casflow.components.formats.bio.parse import Mention
from casflow.components.formats.common import FormatError

NERSUITE = (
    "O\t0\t14\tImmunostaining\tImmunostaining\tNN\tB-NP\n"
    "O\t15\t17\tof\tof\tIN\tB-PP\n"
    "O\t18\t21\trat\trat\tNN\tB-NP\n"
    "B-Organ\t23\t29\tspinal\tspinal\tJJ\tI-NP\n"
    "I-Organ\t30\t34\tcord\tcord\tNN\tI-NP\n"
    "O\t34\t35\t.\t.\t.\tO\n"
    "\n"
    "B-Cell\t37\t42\tCells\tcell\tNNS\tB-NP\n"
    "O\t43\t47\tgrew\tgrow\tVBD\tB-VP\n"
    "\n"
)
CONLL = "Immunostaining\tO\nof\tO\nrat\tO\nspinal\tB-Organ\ncord\tI-Organ\n.\tO\n\nCells\tB-Cell\ngrew\tO\n\n"


def test_text_is_rebuilt_from_the_offsets():
    document = anatem.parse_nersuite(NERSUITE, "nersuite/train/PMID-1.nersuite")
    assert document.id == "PMID-1"
    assert document.text == "Immunostaining of rat  spinal cord.  Cells grew"
    tokens = [t for s in document.sentences for t in s.tokens]
    assert all(document.text[t.begin : t.end] == t.text for t in tokens)
    assert [(s.begin, s.end) for s in document.sentences] == [(0, 35), (37, 47)]
    found = [(document.text[m.begin : m.end], m.label, m.tokens) for m in document.mentions]
    assert found == [("spinal cord", "Organ", (3, 5)), ("Cells", "Cell", (0, 1))]


def test_sentence_break_option_puts_a_newline_in_the_first_gap():
    document = anatem.parse_nersuite(NERSUITE, sentence_break="\n")
    assert document.text == "Immunostaining of rat  spinal cord.\n Cells grew"


def test_both_forms_round_trip_and_agree():
    document = anatem.parse_nersuite(NERSUITE, "a.nersuite")
    assert anatem.format_nersuite(document) == NERSUITE
    assert anatem.format_conll(document) == CONLL
    anatem.check_agreement(document, anatem.parse_conll(CONLL, "a.conll"))


def test_writers_use_the_mentions(tmp_path):
    document = anatem.parse_nersuite(NERSUITE)
    first = document.sentences[0]
    first.mentions = [Mention(first.tokens[2].begin, first.tokens[4].end, "Organism_subdivision")]
    anatem.write_conll(document, tmp_path / "x.conll")
    anatem.write_nersuite(document, tmp_path / "x.nersuite")
    again = anatem.read_document(tmp_path / "x.nersuite", tmp_path / "x.conll")
    assert [(m.label, m.tokens) for m in again.sentences[0].mentions] == [
        ("Organism_subdivision", (2, 5))
    ]
    assert again.text == document.text


def test_disagreeing_conll_is_reported():
    document = anatem.parse_nersuite(NERSUITE, "a.nersuite")
    other = anatem.parse_conll(CONLL.replace("cord\tI-Organ", "cord\tO"), "a.conll")
    with pytest.raises(FormatError, match=r"a\.conll:1: mentions .* a\.nersuite:1"):
        anatem.check_agreement(document, other)
    split = anatem.parse_conll(CONLL.replace(".\tO\n\n", ".\tO\n"), "a.conll")
    with pytest.raises(FormatError, match="1 sentences"):
        anatem.check_agreement(document, split)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("O\t40\t44\tgrow\tgrow\tVBD", "6 tab-separated columns"),
        ("O\t40\t45\tgrow\tgrow\tVBD\tB-VP", "do not fit"),
        ("O\t16\t20\tgrow\tgrow\tVBD\tB-VP", "overlaps or precedes"),
        ("B-Bone\t40\t44\tgrow\tgrow\tVBD\tB-VP", "not one of the AnatEM classes"),
        ("X\t40\t44\tgrow\tgrow\tVBD\tB-VP", "bad offset or tag"),
    ],
)
def test_bad_nersuite_lines(line, message):
    text = "O\t0\t14\tImmunostaining\tImmunostaining\tNN\tB-NP\nO\t15\t17\tof\tof\tIN\tB-PP\n"
    with pytest.raises(FormatError, match=rf"x\.nersuite:3: .*{message}"):
        anatem.parse_nersuite(text + line + "\n", "x.nersuite")


def test_other_classes_when_allowed():
    document = anatem.parse_nersuite("B-Bone\t0\t4\tbone\tbone\tNN\tB-NP\n", classes=None)
    assert document.mentions[0].label == "Bone"


@pytest.mark.slow
@pytest.mark.corpus
def test_anatem_corpus(corpora_dir):
    root = corpora_dir / "anatem"
    labels = set()
    count = 0
    for split in ("train", "devel"):
        for doc_id in anatem.document_ids(root, split):
            nersuite_path = root / "nersuite" / split / f"{doc_id}.nersuite"
            conll_path = root / "conll" / split / f"{doc_id}.conll"
            document = anatem.read_document(nersuite_path, conll_path)
            for sentence in document.sentences:
                for token in sentence.tokens:
                    assert document.text[token.begin : token.end] == token.text
                for mention in sentence.mentions:
                    assert sentence.begin <= mention.begin < mention.end <= sentence.end
            labels |= {m.label for m in document.mentions}
            assert anatem.format_nersuite(document) == nersuite_path.read_text()
            assert anatem.format_conll(document) == conll_path.read_text()
            count += 1
    assert count == 606 + 202
    assert labels == set(anatem.ANATEM_CLASSES)
