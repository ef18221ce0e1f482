"""brat standoff .ann/.txt."""

from __future__ import annotations

import pytest

from casflow.components.formats.brat import parse as brat
from casflow.components.formats.common import FormatError

TEXT = "The left and right ventricles of the heart.\nCells grew.\n"
ANN = (
    "T1\tOrgan 37 42\theart\n"
    "T2\tMulti-tissue_structure 4 8;19 29\tleft ventricles\n"
    "T3\tCell 44 49\tCells\n"
    "#1\tAnnotatorNotes T2\tcoordination: left [and right] ventricles\n"
    "A1\tNegated T3\n"
    "A2\tCertainty T1 High\n"
    "N1\tReference T1 UBERON:0000948\theart\n"
    "R1\tPart-of Arg1:T2 Arg2:T1\n"
    "E1\tGrowth:T3 Theme:T3\n"
    "*\tEquiv T1 T3\n"
)


def test_parse_all_line_kinds():
    document = brat.parse_ann(ANN, text=TEXT, source="doc.ann")
    first, discontinuous, _ = document.textbounds
    assert (first.label, first.spans, first.text) == ("Organ", ((37, 42),), "heart")
    assert discontinuous.spans == ((4, 8), (19, 29))
    assert (discontinuous.begin, discontinuous.end, discontinuous.is_discontinuous) == (4, 29, True)
    assert document.notes == [
        brat.Note("#1", "AnnotatorNotes", "T2", "coordination: left [and right] ventricles", 4)
    ]
    assert [(a.name, a.target, a.value) for a in document.attributes] == [
        ("Negated", "T3", None),
        ("Certainty", "T1", "High"),
    ]
    (norm,) = document.normalizations
    assert (norm.target, norm.resource, norm.resource_id, norm.text) == (
        "T1",
        "UBERON",
        "0000948",
        "heart",
    )
    others = [a for a in document.annotations if isinstance(a, brat.OtherLine)]
    assert [o.id for o in others] == ["R1", "E1", "*"]
    assert set(document.by_id()) == {"T1", "T2", "T3", "#1", "A1", "A2", "N1", "R1", "E1"}


def test_round_trip_is_exact(tmp_path):
    document = brat.parse_ann(ANN, text=TEXT)
    assert brat.format_ann(document) == ANN
    brat.write_brat(document, tmp_path / "doc.ann")
    again = brat.read_brat(tmp_path / "doc.ann")
    assert again.text == TEXT
    assert again.annotations == document.annotations
    assert again.source == str(tmp_path / "doc.ann")


def test_fragments_text_joins_with_a_space():
    assert brat.fragments_text(TEXT, [(4, 8), (19, 29)]) == "left ventricles"


def test_text_mismatch_names_file_line_and_id():
    with pytest.raises(
        FormatError, match=r"doc\.ann:2: T2: text 'left ventricles' differs from 'left ventricle'"
    ):
        brat.parse_ann(
            "T1\tOrgan 37 42\theart\nT2\tX 4 8;19 28\tleft ventricles\n",
            text=TEXT,
            source="doc.ann",
        )
    # without the text, nothing to check against
    assert brat.parse_ann("T2\tX 4 8;19 28\tleft ventricles\n").textbounds[0].spans[1] == (19, 28)


def test_span_beyond_the_text():
    with pytest.raises(FormatError, match="beyond the 56-character text"):
        brat.parse_ann("T1\tX 50 60\tx\n", text=TEXT, source="doc.ann")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("T1 Organ 37 42 heart", "separates the id with a tab"),
        ("T1\tOrgan 37 42 heart", "is not 'start end'"),
        ("T1\tOrgan 37;42\theart", "is not 'start end'"),
        ("T1\tOrgan 42 37\theart", "before start"),
        ("T1\tOrgan 37 42", "no tab-separated text"),
        ("N1\tReference T1 nocolon\theart", "DB:ID"),
        ("A1\tNegated", "Name TARGET"),
        ("#1\tAnnotatorNotes\tnote", "Kind TARGET"),
    ],
)
def test_bad_lines(line, message):
    with pytest.raises(FormatError, match=rf"doc\.ann:2: .*{message}"):
        brat.parse_ann("T9\tCell 44 49\tCells\n" + line + "\n", source="doc.ann")


def test_duplicate_ids():
    with pytest.raises(FormatError, match="T1 used twice"):
        brat.parse_ann("T1\tA 0 3\tThe\nT1\tB 0 3\tThe\n")


def test_writer_refuses_newlines_in_text():
    annotation = brat.TextBound("T1", "X", ((0, 5),), "a\nbcd")
    with pytest.raises(ValueError, match="newline"):
        brat.format_ann([annotation])
