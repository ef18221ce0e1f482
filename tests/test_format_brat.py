"""brat standoff .ann/.txt."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.components.formats.brat import parse as brat
from casflow.components.formats.brat.offsets import align
from casflow.components.formats.cas_builders import MentionSpec, add_mentions
from casflow.components.formats.common import LINE_BREAKS, FormatError, FormatWarning
from casflow.components.formats.document_files import ImportFormatError
from casflow.pipeline.component import DocumentWarning, RunContext
from casflow.pipeline.testing import build, cas_from_text, run_component
from casflow.typesystem import ANATOMY_MENTION, NAMED_ENTITY, load_typesystem

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


# ------------------------------------------------------------------ lines, as brat splits them
# brat reads its .ann with str.splitlines, which ends a line at U+2028, U+0085, a form
# feed ... as well as at \n and \r; no line of an .ann may hold one, and casflow reads
# the lines brat reads.

#: the line breaks other than \n and \r, which editors do not show as line ends
UNUSUAL_BREAKS = [c for c in LINE_BREAKS if c not in "\r\n"]


def test_line_breaks_are_the_characters_str_splitlines_breaks_on() -> None:
    breaking = {chr(c) for c in range(0x110000) if len(f"a{chr(c)}b".splitlines()) == 2}
    assert set(LINE_BREAKS) == breaking


@pytest.mark.parametrize("line_break", LINE_BREAKS)
@pytest.mark.parametrize(
    "annotation",
    [
        brat.TextBound("T1", "X", ((0, 5),), "a{}bcd"),
        brat.Normalization("N1", "Reference", "T1", "DB", "1", "a{}bcd"),
        brat.Note("#1", "AnnotatorNotes", "T1", "a{}bcd"),
    ],
    ids=["T", "N", "#"],
)
def test_format_ann_refuses_a_line_break_in_a_line(line_break: str, annotation: Any) -> None:
    broken = type(annotation)(**{**annotation.__dict__, "text": annotation.text.format(line_break)})
    with pytest.raises(ValueError, match=rf"{annotation.id}: .* holds a line break"):
        brat.format_ann([broken])


@pytest.mark.parametrize("line_break", [*UNUSUAL_BREAKS, "\r"])
def test_parse_ann_ends_lines_where_brat_does(line_break: str) -> None:
    ann = f"T1\tOrgan 0 4\tleft{line_break}T2\tOrgan 5 14\tventricle\n"
    assert len(ann.splitlines()) == 2  # brat's reading: two lines
    document = brat.parse_ann(ann, text="left ventricle")
    assert [(t.id, t.spans, t.text) for t in document.textbounds] == [
        ("T1", ((0, 4),), "left"),
        ("T2", ((5, 14),), "ventricle"),
    ]


@pytest.mark.parametrize("line_break", UNUSUAL_BREAKS)
def test_a_t_text_holding_a_line_break_is_two_lines_as_for_brat(line_break: str) -> None:
    # what a writer that does not split a mention at line breaks leaves
    ann = f"T1\tOrgan 0 14\tleft{line_break}ventricle\n"
    hint = rf"line 1 ends with U\+{ord(line_break):04X}, a line break to brat"
    with pytest.raises(FormatError, match=rf"doc\.ann:2: expected 'ID<TAB>\.\.\.'.*{hint}"):
        brat.parse_ann(ann, source="doc.ann")
    text = f"left{line_break}ventricle"
    with pytest.raises(FormatError, match=rf"doc\.ann:1: T1: text 'left' differs .*{hint}"):
        brat.parse_ann(ann, text=text, source="doc.ann")


def test_split_at_line_breaks() -> None:
    text = "left and right\r\n\nventricles\u2028\n"
    assert (
        brat.split_at_line_breaks(text, [(0, len(text))])
        == ((0, 14), (17, 27))
        == (
            span_of(text, "left and right"),
            span_of(text, "ventricles"),
        )
    )
    # fragments are split each, in text order; line breaks at the edges are dropped
    assert brat.split_at_line_breaks(text, [(17, 29), (9, 17)]) == ((9, 14), (17, 27))
    assert brat.split_at_line_breaks(text, [(3, 3)]) == ((3, 3),)  # empty: kept
    assert brat.split_at_line_breaks(text, [(14, 17), (27, 29)]) == ()


# ------------------------------------------------------- offsets counted with CRs and a BOM
# brat reads its .txt without newline translation, so a CR (of a CRLF or alone) and a
# leading byte-order mark each count one in the .ann; text.reader.v1 reads CRLF as LF,
# keeps a lone CR and drops the mark.

FILE_TEXTS = {
    "crlf": "Title line\r\nThe heart beats.\r\nLeft\r\nventricle wall.\r\nThe aorta.\r\n",
    "lone cr": "Title line\rThe heart beats.\rLeft\rventricle wall.\rThe aorta.\r",
    "mix": "Title line\r\nThe heart beats.\rLeft\r\nventricle wall.\nThe aorta.\r\n",
    "bom, beyond the BMP": "\ufeff\U0001d6fc-actin\r\n\U0001f600 heart\r\nLeft\r\nventricle wall. aorta",
}
WORDS = ["heart", "wall", "aorta"]


def read_as_text_reader(file_text: str) -> str:
    return file_text.removeprefix("\ufeff").replace("\r\n", "\n")


def span_of(text: str, word: str) -> tuple[int, int]:
    begin = text.index(word)
    return begin, begin + len(word)


def brat_ann(file_text: str) -> str:
    """T lines as brat writes them: offsets on the file's characters, the covered text."""
    lines = [
        f"T{i}\tOrgan {' '.join(map(str, span_of(file_text, w)))}\t{w}"
        for i, w in enumerate(WORDS, 1)
    ]
    left, ventricle = span_of(file_text, "Left"), span_of(file_text, "ventricle")
    # brat splits a selection across a line break into fragments, one per line
    lines.append(f"T9\tOrgan {left[0]} {left[1]};{ventricle[0]} {ventricle[1]}\tLeft ventricle")
    return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize("file_text", FILE_TEXTS.values(), ids=FILE_TEXTS)
def test_offsets_on_the_file_map_onto_the_text_read_from_it(file_text: str) -> None:
    text = read_as_text_reader(file_text)
    offsets = align(file_text, text)
    for word in [*WORDS, "Left", "ventricle", "Title", "actin"]:
        if word in file_text:
            assert offsets.span(*span_of(file_text, word)) == span_of(text, word), word
    assert offsets.to_text(len(file_text)) == len(text)


def test_a_span_that_begins_or_ends_inside_a_crlf_pair() -> None:
    offsets = align("ab\r\ncd", "ab\ncd")
    # on the CR and between CR and LF: both where the LF is in the text
    assert [offsets.to_text(k) for k in range(7)] == [0, 1, 2, 2, 3, 4, 5]
    assert offsets.span(0, 3) == (0, 2)  # "ab\r": the CR is not in the text
    assert offsets.span(3, 6) == (2, 5)  # "\ncd"


def test_align_takes_a_lone_cr_read_as_lf_and_a_control_character_read_as_a_space() -> None:
    offsets = align("a\rb\x0cc\r\nd", "a\nb c\nd")
    assert offsets.dropped == (5,)
    assert offsets.span(7, 8) == (6, 7)  # the d
    assert align("same\r\ntext", "same\r\ntext").dropped == ()


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("one\ntwo\nthreX", r"line 3, column 5 \(character 14\) the file has 'e'"),
        ("one\ntwo\nthree and more", r"line 3, column 6 .* the file has '' where .* ' and more'"),
        ("one\ntwo", r"line 2, column 4 .* the file has '\\r\\nthree' where .* has ''"),
    ],
)
def test_align_names_where_a_text_not_read_from_the_file_differs(text: str, where: str) -> None:
    with pytest.raises(ValueError, match=where):
        align("one\r\ntwo\r\nthree", text)


@pytest.mark.parametrize("file_text", FILE_TEXTS.values(), ids=FILE_TEXTS)
def test_align_up_to_an_offset_maps_as_the_whole_file_and_tells_a_later_difference(
    file_text: str,
) -> None:
    text = read_as_text_reader(file_text)
    whole = align(file_text, text)
    end = f"(character {len(file_text)}) the file has "
    # the .txt beside gained a character at its end, or the document text some
    for other_file, other_text, where in [
        (file_text + "X", text, end + "'X' where the document text has ''"),
        (file_text, text + "More.\n", end + "'' where the document text has 'More.\\n'"),
    ]:
        with pytest.raises(ValueError, match=re.escape(where)):
            align(other_file, other_text)
        # every stop: on a CR of a pair or between it and its LF, on a lone CR, after a BOM
        for up_to in range(len(file_text) + 1):
            offsets = align(other_file, other_text, up_to=up_to)
            mapped = [offsets.to_text(k) for k in range(up_to + 1)]
            assert mapped == [whole.to_text(k) for k in range(up_to + 1)], up_to
            assert offsets.later_difference is not None
            assert where in offsets.later_difference
    with pytest.raises(ValueError, match=re.escape(end + "'X'")):
        align(file_text + "X", text, up_to=len(file_text) + 1)
    assert align(file_text, text, up_to=len(file_text)).later_difference is None
    assert align(file_text, text, up_to=0) == whole


def test_align_up_to_an_offset_raises_on_a_difference_before_it() -> None:
    file_text = "one\r\ntwo\r\nthree"
    offsets = align(file_text, "one\ntwo\nthreX", up_to=len("one\r\ntwo\r\nthr"))
    assert offsets.dropped == (3, 8)
    assert offsets.later_difference is not None
    assert "line 3, column 5 (character 14) the file has 'e'" in offsets.later_difference
    with pytest.raises(ValueError, match=r"line 3, column 5 \(character 14\) the file has 'e'"):
        align(file_text, "one\ntwo\nthreX", up_to=len(file_text))
    # a lone CR read as LF before the offset still fits, as in the whole file
    assert align("a\rb\r\nc", "a\nb\nX", up_to=5).dropped == (3,)


def test_read_brat_counts_every_character_of_the_txt(tmp_path: Path) -> None:
    file_text = FILE_TEXTS["mix"]
    (tmp_path / "doc.txt").write_bytes(file_text.encode("utf-8"))
    (tmp_path / "doc.ann").write_bytes(brat_ann(file_text).encode("utf-8"))
    document = brat.read_brat(tmp_path / "doc.ann")  # checks each T line's text
    assert document.text == file_text
    brat.write_brat(document, tmp_path / "again.ann")
    assert (tmp_path / "again.txt").read_bytes() == file_text.encode("utf-8")


def read_and_import(folder: Path, ann: str = "docs/{doc_id}.ann", **config: Any) -> cassis.Cas:
    """text.reader.v1 reads docs/doc1.txt, then brat.import.v1 fills view gold, as a run."""
    context = RunContext(output_dir=folder / "out", workflow_dir=folder)
    reader = build("text.reader.v1", context, input=str(folder / "docs"))
    (ref,) = reader.iter_documents()
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(ref, cas)
    config = {"path": ann, "types": {"Organ": "AnatomyMention"}, **config}
    return run_component("brat.import.v1", cas, view="gold", context=context, **config)


def write_pair(folder: Path, file_text: str, ann: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "doc1.txt").write_bytes(file_text.encode("utf-8"))
    (folder / "doc1.ann").write_bytes(ann.encode("utf-8"))


@pytest.mark.parametrize("file_text", FILE_TEXTS.values(), ids=FILE_TEXTS)
def test_brat_import_maps_offsets_counted_on_the_txt(tmp_path: Path, file_text: str) -> None:
    write_pair(tmp_path / "docs", file_text, brat_ann(file_text))
    gold = read_and_import(tmp_path).get_view("gold")
    text = gold.sofa_string
    assert text == read_as_text_reader(file_text)
    mentions = sorted(gold.select(ANATOMY_MENTION), key=lambda m: m.begin)
    left, ventricle = span_of(text, "Left"), span_of(text, "ventricle")
    expected = [(*span_of(text, w), w) for w in WORDS]
    expected.append((left[0], ventricle[1], text[left[0] : ventricle[1]]))
    assert len(set(expected)) == 4
    assert [(m.begin, m.end, m.get_covered_text()) for m in mentions] == sorted(expected)
    (discontinuous,) = [m for m in mentions if m.fragments is not None]
    assert [f.get_covered_text() for f in discontinuous.fragments.elements] == ["Left", "ventricle"]


def test_brat_import_maps_a_span_across_or_into_a_crlf_line_end(tmp_path: Path) -> None:
    file_text = FILE_TEXTS["crlf"]
    left, ventricle = span_of(file_text, "Left"), span_of(file_text, "ventricle")
    ann = (
        f"T1\tOrgan {left[0]} {ventricle[1]}\tLeft ventricle\n"  # across the line break
        f"T2\tOrgan {left[0]} {left[1] + 1}\tLeft\n"  # ends on the CR: "Left\r"
        f"T3\tOrgan {left[1] + 1} {ventricle[1]}\tventricle\n"  # begins on the LF
    )
    write_pair(tmp_path / "docs", file_text, ann)
    gold = read_and_import(tmp_path, check_text=False).get_view("gold")
    line_break = gold.sofa_string.index("Left\nventricle") + len("Left")
    spans = {m.get_covered_text(): (m.begin, m.end) for m in gold.select(ANATOMY_MENTION)}
    assert spans == {
        "Left\nventricle": (line_break - 4, line_break + 10),
        "Left": (line_break - 4, line_break),
        "\nventricle": (line_break, line_break + 10),
    }


def test_brat_import_checks_t_texts_on_the_txt(tmp_path: Path) -> None:
    file_text = FILE_TEXTS["crlf"]
    write_pair(tmp_path / "docs", file_text, brat_ann(file_text).replace("\twall", "\twalls"))
    with pytest.raises(
        ImportFormatError, match=r"doc1\.ann:2: T2: text 'walls' differs from 'wall'"
    ):
        read_and_import(tmp_path)


def test_brat_import_fails_when_the_txt_beside_is_not_the_documents_text(tmp_path: Path) -> None:
    file_text = FILE_TEXTS["crlf"]
    write_pair(tmp_path / "docs", file_text, "")
    other = file_text.replace("heart", "liver")
    write_pair(tmp_path / "system", other, brat_ann(other.replace("liver", "heart")))
    with pytest.raises(
        ImportFormatError,
        match=r"system/doc1\.txt beside doc1\.ann is not the document's text \(at line 2, column 5",
    ):
        read_and_import(tmp_path, ann="system/{doc_id}.ann")


def expected_mentions(text: str) -> list[tuple[int, int, str]]:
    """brat_ann's annotations over the document text, as (begin, end, covered text)."""
    left, ventricle = span_of(text, "Left"), span_of(text, "ventricle")
    expected = [(*span_of(text, w), w) for w in WORDS]
    expected.append((left[0], ventricle[1], text[left[0] : ventricle[1]]))
    return sorted(expected)


def imported_mentions(gold: cassis.Cas) -> list[tuple[int, int, str]]:
    return sorted((m.begin, m.end, m.get_covered_text()) for m in gold.select(ANATOMY_MENTION))


#: (document file, brat's .txt beside, where they differ): a .txt as an editor may have
#: saved it, not the document's text only after the last annotation ("aorta", which
#: ends at character 62 of FILE_TEXTS["crlf"], "...The aorta.\r\n")
LATER_DIFFERENCES = {
    "a final line break added": (
        FILE_TEXTS["crlf"],
        FILE_TEXTS["crlf"] + "\r\n",
        r"at line 6, column 1 \(character 65\) the file has '\\r\\n' where the document text "
        r"has ''",
    ),
    "the final line break left out": (
        FILE_TEXTS["crlf"],
        FILE_TEXTS["crlf"][:-2],
        r"at line 5, column 11 \(character 63\) the file has '' where the document text has "
        r"'\\n'",
    ),
    "a tab expanded": (
        FILE_TEXTS["crlf"].replace("aorta.", "aorta.\tok"),
        FILE_TEXTS["crlf"].replace("aorta.", "aorta.    ok"),
        r"at line 5, column 11 \(character 63\) the file has '    ok\\r\\n' where the document "
        r"text has '\\tok\\n'",
    ),
}


@pytest.mark.parametrize("check_text", [True, False])
@pytest.mark.parametrize(
    ("document", "txt", "where"), LATER_DIFFERENCES.values(), ids=LATER_DIFFERENCES
)
def test_brat_import_warns_of_a_txt_that_differs_only_after_the_last_annotation(
    tmp_path: Path, document: str, txt: str, where: str, check_text: bool
) -> None:
    write_pair(tmp_path / "docs", document, "")
    write_pair(tmp_path / "system", txt, brat_ann(FILE_TEXTS["crlf"]))
    with pytest.warns(
        FormatWarning,
        match=r"system/doc1\.txt: differs from the document's text after the end of the last "
        r"annotation of doc1\.ann \(character 62\): " + where,
    ):
        gold = read_and_import(tmp_path, ann="system/{doc_id}.ann", check_text=check_text)
    view = gold.get_view("gold")
    # mapped past every CRLF of the .txt, as for a .txt that is the document's text
    assert imported_mentions(view) == expected_mentions(view.sofa_string)


#: brat's .txt beside that is not the document's text between two annotations
STALE_TXT = FILE_TEXTS["crlf"].replace("beats", "beat!")
STALE_AT = r"at line 2, column 15 \(character 26\) the file has '!"


def test_brat_import_fails_on_a_txt_that_differs_before_the_last_annotation(
    tmp_path: Path,
) -> None:
    write_pair(tmp_path / "docs", FILE_TEXTS["crlf"], "")
    write_pair(tmp_path / "system", STALE_TXT, brat_ann(STALE_TXT))
    with pytest.raises(
        ImportFormatError,
        match=r"system/doc1\.txt beside doc1\.ann is not the document's text \("
        + STALE_AT
        + r".*; the last annotation ends at character 62\).*check_text: false counts them on "
        r"the document's text instead",
    ):
        read_and_import(tmp_path, ann="system/{doc_id}.ann")


def test_brat_import_without_checks_counts_on_the_document_text_when_the_txt_differs(
    tmp_path: Path,
) -> None:
    # the .ann made on the document's text, beside a .txt left from another version of it
    write_pair(tmp_path / "docs", FILE_TEXTS["crlf"], "")
    text = read_as_text_reader(FILE_TEXTS["crlf"])
    write_pair(tmp_path / "system", STALE_TXT, brat_ann(text))
    with pytest.warns(
        FormatWarning,
        match=r"system/doc1\.txt: not the document's text \(" + STALE_AT + r".*; the last "
        r"annotation of doc1\.ann ends at character 58\); check_text is false, so the offsets "
        r"are counted on the document's text instead",
    ):
        gold = read_and_import(tmp_path, ann="system/{doc_id}.ann", check_text=False)
    assert imported_mentions(gold.get_view("gold")) == expected_mentions(text)


def test_brat_import_without_a_txt_counts_on_the_document_text(tmp_path: Path) -> None:
    file_text = FILE_TEXTS["crlf"]
    write_pair(tmp_path / "docs", file_text, "")
    text = read_as_text_reader(file_text)
    (tmp_path / "system").mkdir()
    ann = "".join(
        f"T{i}\tOrgan {' '.join(map(str, span_of(text, w)))}\t{w}\n" for i, w in enumerate(WORDS, 1)
    )
    (tmp_path / "system" / "doc1.ann").write_text(ann, encoding="utf-8")
    gold = read_and_import(tmp_path, ann="system/{doc_id}.ann").get_view("gold")
    assert [m.get_covered_text() for m in gold.select(ANATOMY_MENTION)] == WORDS
    # offsets counted with CRs, with no .txt to say so: the message says what was assumed
    (tmp_path / "system" / "doc1.ann").write_text(brat_ann(file_text), encoding="utf-8")
    with pytest.raises(
        ImportFormatError,
        match=r"differs from 'eart ' at its offsets; offsets counted on the document's text "
        r"\(no doc1\.txt beside the \.ann\)",
    ):
        read_and_import(tmp_path, ann="system/{doc_id}.ann")


def test_brat_import_discontinuous_into_a_type_without_fragments(tmp_path: Path) -> None:
    # NamedEntity (the default type) has no 'fragments': the mention covers its pieces,
    # with a warning naming the line (it raised TypeError from cassis)
    file_text = FILE_TEXTS["crlf"]
    write_pair(tmp_path / "docs", file_text, brat_ann(file_text))
    with pytest.warns(FormatWarning, match=r"T9 is discontinuous but .*NamedEntity has no"):
        gold = read_and_import(tmp_path, types={}).get_view("gold")
    text = gold.sofa_string
    covered = sorted(m.get_covered_text() for m in gold.select(NAMED_ENTITY))
    assert covered == sorted(
        [*WORDS, text[span_of(text, "Left")[0] : span_of(text, "ventricle")[1]]]
    )


def test_brat_writer_txt_and_ann_agree_for_a_text_read_with_crs(tmp_path: Path) -> None:
    # text.reader.v1 keeps a lone CR: the written .txt must hold it where the .ann counts
    # it; a character beyond the BMP counts one, in the view as in brat
    file_text = "\U0001f600 " + FILE_TEXTS["mix"]
    write_pair(tmp_path / "docs", file_text, brat_ann(file_text))
    cas = read_and_import(tmp_path)
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    written = build("brat.writer.v1", context, view="gold", type="AnatomyMention").write(
        cas, "doc1"
    )
    ann_path = next(p for p in written if p.suffix == ".ann")
    document = brat.read_brat(ann_path)  # fails on a T line whose text is not at its offsets
    assert document.text == cas.get_view("gold").sofa_string
    assert sorted(t.text for t in document.textbounds) == sorted([*WORDS, "Left ventricle"])
    mentions = cas.get_view("gold").select(ANATOMY_MENTION)
    assert sorted((t.begin, t.end) for t in document.textbounds) == sorted(
        (m.begin, m.end) for m in mentions
    )


# ------------------------------------------------ brat.writer.v1: mentions across line breaks


def mentions_cas(text: str, specs: list[MentionSpec]) -> cassis.Cas:
    cas = cas_from_text(text, doc_id="doc1")
    add_mentions(cas, ANATOMY_MENTION, specs)
    return cas


def write_brat_files(folder: Path, cas: cassis.Cas, **config: Any) -> Path:
    """brat.writer.v1's .ann for ``cas`` (its .txt beside)."""
    writer = build("brat.writer.v1", RunContext(output_dir=folder), **config)
    return next(p for p in writer.write(cas, "doc1") if p.suffix == ".ann")


def import_back(folder: Path, text: str, ann_path: Path, **types: str) -> cassis.Cas:
    """brat.import.v1 of ``ann_path`` (and the .txt beside it) over a CAS of ``text``."""
    back = cas_from_text(text, doc_id="doc1")
    context = RunContext(output_dir=folder, workflow_dir=folder)
    return run_component("brat.import.v1", back, context=context, path=str(ann_path), types=types)


def spans_and_pieces(cas: cassis.Cas, type_name: str) -> list[tuple[int, int, list[str]]]:
    return sorted(
        (m.begin, m.end, [f.get_covered_text() for f in m.fragments.elements])
        if getattr(m, "fragments", None)
        else (m.begin, m.end, [])
        for m in cas.select(type_name)
    )


@pytest.mark.parametrize("line_break", [*LINE_BREAKS, "\r\n", "\n\n"])
def test_brat_writer_writes_a_mention_across_lines_one_fragment_per_line(
    tmp_path: Path, line_break: str
) -> None:
    # as brat stores a selection across lines: "Left\nventricle" is "0 4;5 14"
    text = f"Left{line_break}ventricle wall."
    end = span_of(text, "ventricle")[1]
    cas = mentions_cas(text, [MentionSpec(0, end, "Organ", identifier="UBERON:0002082")])
    ann_path = write_brat_files(tmp_path, cas)
    pieces = f"0 4;{4 + len(line_break)} {end}"
    assert ann_path.read_text("utf-8") == (
        f"T1\tOrgan {pieces}\tLeft ventricle\nN1\tReference T1 UBERON:0002082\tLeft ventricle\n"
    )
    assert len(ann_path.read_bytes().decode("utf-8").splitlines()) == 2  # brat's lines
    brat.read_brat(ann_path)  # checks the T text at its offsets in the .txt
    # back with the same begin/end, discontinuous
    back = import_back(tmp_path, text, ann_path, Organ=ANATOMY_MENTION)
    assert spans_and_pieces(back, ANATOMY_MENTION) == [(0, end, ["Left", "ventricle"])]
    assert [m.identifier for m in back.select(ANATOMY_MENTION)] == ["UBERON:0002082"]


def test_brat_writer_splits_each_fragment_at_line_breaks(tmp_path: Path) -> None:
    text = "left and right\nventricles"
    right = (span_of(text, "right")[0], len(text))  # "right\nventricles"
    cas = mentions_cas(text, [MentionSpec(0, len(text), "Organ", fragments=((0, 4), right))])
    ann_path = write_brat_files(tmp_path, cas)
    assert ann_path.read_text("utf-8") == "T1\tOrgan 0 4;9 14;15 25\tleft right ventricles\n"
    back = import_back(tmp_path, text, ann_path, Organ=ANATOMY_MENTION)
    assert spans_and_pieces(back, ANATOMY_MENTION) == [
        (0, len(text), ["left", "right", "ventricles"])
    ]


def test_brat_writer_leaves_out_a_mention_of_line_breaks_only(tmp_path: Path) -> None:
    text = "heart\r\n\u2028lung"
    specs = [
        MentionSpec(0, 7, "Organ"),  # "heart\r\n": written without its line end
        MentionSpec(5, 8, "Organ"),  # "\r\n\u2028"
        MentionSpec(8, 12, "Organ"),
    ]
    with pytest.warns(
        DocumentWarning,
        match=r"document doc1: Organ mention '\\r\\n\\u2028' at 5-8 holds only line breaks",
    ):
        ann_path = write_brat_files(tmp_path, mentions_cas(text, specs))
    assert ann_path.read_text("utf-8") == "T1\tOrgan 0 5\theart\nT2\tOrgan 8 12\tlung\n"


def test_brat_writer_round_trip_into_a_type_without_fragments(tmp_path: Path) -> None:
    # NamedEntity has no 'fragments': the mention comes back over the same begin/end,
    # contiguous, with the importer's warning
    text = "Left\nventricle wall."
    cas = cas_from_text(text, doc_id="doc1", spans={NAMED_ENTITY: [(0, 14, {"value": "Organ"})]})
    ann_path = write_brat_files(tmp_path, cas)
    assert ann_path.read_text("utf-8") == "T1\tOrgan 0 4;5 14\tLeft ventricle\n"
    with pytest.warns(FormatWarning, match="T1 is discontinuous but .*NamedEntity has no"):
        back = import_back(tmp_path, text, ann_path)
    assert spans_and_pieces(back, NAMED_ENTITY) == [(0, 14, [])]
