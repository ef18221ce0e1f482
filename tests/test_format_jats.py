"""Tests for the NXML/JATS text assembly (casflow.components.formats.jats.parse)."""

from __future__ import annotations

import difflib
import gzip
import http.server
import io
import re
import threading
import time
import warnings
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from casflow.components.formats.common import FormatWarning
from casflow.components.formats.jats.parse import (
    BLOCK_SEPARATOR,
    SPAN_TYPES,
    DocumentFormatError,
    JatsDocument,
    StructureSpan,
    normalise_pmcid,
    read_jats,
)

NAMESPACES = (
    'xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:mml="http://www.w3.org/1998/Math/MathML"'
)


def article(body: str = "", front: str = "", back: str = "") -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<article {NAMESPACES}>'
        f"<front><article-meta>{front}</article-meta></front>"
        f"<body>{body}</body><back>{back}</back></article>"
    ).encode()


FULL_ARTICLE = f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE article PUBLIC "-//NLM//DTD Journal Archiving and Interchange DTD v2.3 20070202//EN" "archivearticle.dtd">
<article {NAMESPACES} article-type="research-article">
<front>
<journal-meta><journal-id journal-id-type="nlm-ta">J Tests</journal-id>
<journal-title-group><journal-title>Journal of Tests</journal-title></journal-title-group></journal-meta>
<article-meta>
<article-id pub-id-type="publisher-id">jt-1</article-id>
<article-id pub-id-type="pmid">12345</article-id>
<article-id pub-id-type="pmc">987</article-id>
<article-id pub-id-type="doi">10.1000/test.1</article-id>
<title-group><article-title>The <italic>Tbx15</italic> gene
      in mice</article-title></title-group>
<abstract>
  <sec><title>Background</title><p>Little is known.</p></sec>
  <sec><title>Results</title><p>We found <italic>Car2</italic><sup>n</sup> alleles.</p></sec>
</abstract>
<abstract abstract-type="toc"><p>A blurb for the table of contents.</p></abstract>
</article-meta>
</front>
<body>
<p>An opening paragraph.</p>
<sec sec-type="intro" id="s1"><title>Introduction</title>
  <p>Glaucoma is common [<xref ref-type="bibr" rid="B1">1</xref>,<xref ref-type="bibr" rid="B2 B3">2,3</xref>]
     (Figure <xref ref-type="fig" rid="F1">1</xref>).</p>
  <sec id="s1a"><label>1.1</label><title>Mouse models</title>
    <p>Mice are useful.</p>
  </sec>
</sec>
<sec sec-type="methods"><title>Methods</title>
  <p>We measured IOP
    <fig id="F1" position="float"><label>Figure 1</label>
      <caption><title>IOP by strain.</title><p>Mean IOP is shown.</p></caption>
      <graphic xlink:href="f1.gif"/></fig>
    in 30 strains.</p>
  <table-wrap id="T1"><label>Table 1</label><caption><p>Strains used</p></caption>
    <table><tr><td>CELLTEXT</td></tr></table>
    <table-wrap-foot><fn><p>Footnote of the table.</p></fn></table-wrap-foot></table-wrap>
</sec>
</body>
<back>
<ack><p>We thank everyone.</p></ack>
<ref-list><title>References</title>
  <ref id="B1"><label>1</label><element-citation publication-type="journal">
    <person-group><name><surname>Quigley</surname><given-names>HA</given-names></name></person-group>
    <article-title>Glaucoma worldwide.</article-title><source>Br J Ophthalmol</source>
    <year>1996</year><volume>80</volume><fpage>389</fpage><lpage>393</lpage></element-citation></ref>
  <ref id="B2"><mixed-citation>Smith J, Jones K. Mice. <source>Nature</source>. 2001.</mixed-citation></ref>
</ref-list>
</back>
</article>
""".encode()

FULL_ARTICLE_TEXT = (
    "The Tbx15 gene in mice\n\n"
    "Background\n\nLittle is known.\n\n"
    "Results\n\nWe found Car2n alleles.\n\n"
    "An opening paragraph.\n\n"
    "Introduction\n\nGlaucoma is common [1,2,3] (Figure 1).\n\n"
    "1.1 Mouse models\n\nMice are useful.\n\n"
    "Methods\n\nWe measured IOP in 30 strains.\n\n"
    "We thank everyone.\n\n"
    "Figure 1\n\nIOP by strain.\n\nMean IOP is shown.\n\n"
    "Table 1\n\nStrains used\n\nFootnote of the table."
)


def covered(doc: JatsDocument, span_type: str) -> list[tuple[str, dict]]:
    return [(doc.covered_text(s), s.features) for s in doc.spans_of(span_type)]


def assert_well_formed(doc: JatsDocument) -> None:
    """Invariants every document must satisfy, whatever its source."""
    text = doc.text
    assert text == text.strip()
    assert "\n\n\n" not in text
    for block in text.split(BLOCK_SEPARATOR) if text else []:
        assert block and "\n" not in block and block == block.strip()
    assert doc.spans == sorted(doc.spans, key=lambda s: (s.begin, -s.end, SPAN_TYPES.index(s.type)))
    for span in doc.spans:
        assert span.type in SPAN_TYPES
        assert 0 <= span.begin < span.end <= len(text), span
        assert not text[span.begin].isspace() and not text[span.end - 1].isspace(), span
    block_spans = [s for s in doc.spans if s.type in ("title", "heading", "paragraph", "reference")]
    for span in block_spans:
        # Blocks are whole lines: a separator or the text edge on both sides.
        assert span.begin == 0 or text[span.begin - 2 : span.begin] == BLOCK_SEPARATOR, span
        assert span.end == len(text) or text[span.end : span.end + 2] == BLOCK_SEPARATOR, span
    for inline in (s for s in doc.spans if s.type in ("citation", "typography")):
        assert "\n" not in text[inline.begin : inline.end]


# ---------------------------------------------------------------- layout


def test_full_article_text_and_separators():
    doc = read_jats(FULL_ARTICLE)
    assert doc.text == FULL_ARTICLE_TEXT
    assert_well_formed(doc)


def test_metadata():
    doc = read_jats(FULL_ARTICLE, name="member.nxml")
    assert (doc.pmcid, doc.pmid, doc.doi) == ("PMC987", "12345", "10.1000/test.1")
    assert doc.title == "The Tbx15 gene in mice"
    assert doc.journal == "Journal of Tests"
    assert doc.source == "member.nxml"


def test_title_abstract_sections_and_headings():
    doc = read_jats(FULL_ARTICLE)
    assert covered(doc, "title") == [("The Tbx15 gene in mice", {})]
    [(abstract, _)] = covered(doc, "abstract")
    assert abstract == "Background\n\nLittle is known.\n\nResults\n\nWe found Car2n alleles."
    assert covered(doc, "heading") == [
        ("Background", {"depth": 1}),
        ("Results", {"depth": 1}),
        ("Introduction", {"depth": 1}),
        ("1.1 Mouse models", {"depth": 2}),
        ("Methods", {"depth": 1}),
    ]
    sections = covered(doc, "section")
    assert sections == [
        ("Background\n\nLittle is known.", {"depth": 1}),
        ("Results\n\nWe found Car2n alleles.", {"depth": 1}),
        (
            "Introduction\n\nGlaucoma is common [1,2,3] (Figure 1).\n\n1.1 Mouse models\n\nMice are useful.",
            {"depth": 1, "sectionType": "intro"},
        ),
        ("1.1 Mouse models\n\nMice are useful.", {"depth": 2}),
        ("Methods\n\nWe measured IOP in 30 strains.", {"depth": 1, "sectionType": "methods"}),
    ]


def test_paragraphs_and_whitespace_normalisation():
    doc = read_jats(FULL_ARTICLE)
    paragraphs = [text for text, _ in covered(doc, "paragraph")]
    assert paragraphs == [
        "Little is known.",
        "We found Car2n alleles.",
        "An opening paragraph.",
        "Glaucoma is common [1,2,3] (Figure 1).",
        "Mice are useful.",
        "We measured IOP in 30 strains.",
        "We thank everyone.",
        "IOP by strain.",
        "Mean IOP is shown.",
        "Strains used",
        "Footnote of the table.",
    ]


def test_inline_markup_typography_and_citations():
    doc = read_jats(FULL_ARTICLE)
    assert covered(doc, "typography") == [
        ("Tbx15", {"style": "italic"}),
        ("Car2", {"style": "italic"}),
        ("n", {"style": "sup"}),
    ]
    # Only bibliography xrefs are citations; the figure xref is plain text.
    assert covered(doc, "citation") == [("1", {"target": "B1"}), ("2,3", {"target": "B2 B3"})]


def test_figure_in_paragraph_is_moved_to_captions_and_table_cells_are_left_out():
    doc = read_jats(FULL_ARTICLE)
    assert "CELLTEXT" not in doc.text
    assert covered(doc, "caption") == [
        (
            "Figure 1\n\nIOP by strain.\n\nMean IOP is shown.",
            {"captionOf": "figure", "label": "Figure 1"},
        ),
        (
            "Table 1\n\nStrains used\n\nFootnote of the table.",
            {"captionOf": "table", "label": "Table 1"},
        ),
    ]
    # Captions come after the body and back matter.
    first_caption = doc.spans_of("caption")[0]
    assert all(p.end < first_caption.begin for p in doc.spans_of("section"))


def test_a_float_between_sentences_leaves_a_space_where_it_stood():
    body = (
        '<p>As shown in Table 1.<table-wrap id="T1"><label>Table 1</label>'
        "<caption><p>Doses.</p></caption></table-wrap>The next sentence"
        '<fig id="F1"><caption><p>A figure.</p></caption></fig>ends here.</p>'
    )
    doc = read_jats(article(body=body))
    assert covered(doc, "paragraph")[0][0] == "As shown in Table 1. The next sentence ends here."
    assert_well_formed(doc)


def test_an_array_is_left_out_like_table_cells():
    doc = read_jats(
        article(
            body="<p>Values:<array><tbody><tr><td>a1</td><td>b1</td></tr>"
            "</tbody></array> as listed.</p>"
        )
    )
    assert doc.text == "Values: as listed."


def test_text_loose_in_captions_and_table_footnotes_is_kept():
    # Outside any <p>: not valid JATS, but in files; it was dropped without a word.
    body = (
        '<fig id="F1"><label>Figure 1.</label><caption>Growth of <italic>E. coli</italic>'
        " at 37 \u00b0C.</caption></fig>"
        '<fig id="F2"><caption><title>Knockouts.</title>Mice lacking Pax6.</caption></fig>'
        '<table-wrap id="T1"><label>Table 1</label><caption><p>Doses.</p></caption>'
        "<table-wrap-foot><fn><label>a</label>Per kilogram.</fn>"
        "<fn><label>b</label><p>Per day.</p></fn></table-wrap-foot></table-wrap>"
    )
    doc = read_jats(article(body="<p>Text.</p>" + body))
    assert [t for t, _ in covered(doc, "caption")] == [
        "Figure 1.\n\nGrowth of E. coli at 37 \u00b0C.",
        "Knockouts.\n\nMice lacking Pax6.",
        # Footnote labels are not text, with or without a <p> around the note.
        "Table 1\n\nDoses.\n\nPer kilogram.\n\nPer day.",
    ]
    assert "Growth of E. coli at 37 \u00b0C." in [t for t, _ in covered(doc, "paragraph")]
    assert_well_formed(doc)


def test_text_loose_beside_blocks_in_a_section_is_a_paragraph_of_its_own():
    body = "<sec><title>Methods</title>Mice were housed.<p>Then tested.</p>Loose again.</sec>"
    doc = read_jats(article(body=body))
    assert doc.text == "Methods\n\nMice were housed.\n\nThen tested.\n\nLoose again."
    assert [t for t, _ in covered(doc, "section")] == [doc.text]
    assert_well_formed(doc)
    doc = read_jats(article(front="<abstract>An abstract without a paragraph.</abstract>"))
    assert covered(doc, "abstract") == [("An abstract without a paragraph.", {})]


def test_toc_abstract_is_skipped_unless_asked_for():
    assert "blurb" not in read_jats(FULL_ARTICLE).text
    doc = read_jats(FULL_ARTICLE, skipped_abstract_types=())
    assert [t for t, _ in covered(doc, "abstract")][1] == "A blurb for the table of contents."


def test_back_matter_flag():
    assert "We thank everyone." in read_jats(FULL_ARTICLE).text
    assert "We thank everyone." not in read_jats(FULL_ARTICLE, include_back_matter=False).text


def test_references_off_by_default_and_laid_out_on_request():
    assert read_jats(FULL_ARTICLE).spans_of("reference") == []
    doc = read_jats(FULL_ARTICLE, include_references=True)
    assert_well_formed(doc)
    assert covered(doc, "reference") == [
        ("1 Quigley HA. Glaucoma worldwide. Br J Ophthalmol. 1996;80:389-393.", {"refId": "B1"}),
        ("Smith J, Jones K. Mice. Nature. 2001.", {"refId": "B2"}),
    ]
    assert doc.text.endswith(
        "References\n\n1 Quigley HA. Glaucoma worldwide. Br J Ophthalmol. 1996;80:389-393.\n\nSmith J, Jones K. Mice. Nature. 2001."
    )


def test_back_matter_glossary_footnotes_and_float_only_sections():
    back = (
        "<glossary><title>Abbreviations</title><def-list>"
        "<def-item><term>IOP</term><def><p>intraocular pressure</p></def></def-item>"
        "<def-item><term><italic>a<sup>e</sup></italic> </term><def><p>extreme nonagouti</p></def></def-item>"
        "</def-list></glossary>"
        '<sec sec-type="display-objects"><title>Figures and Tables</title>'
        '<fig id="F9"><label>Figure 9</label><caption><p>A model.</p></caption></fig></sec>'
        '<fn-group><fn id="n1"><label>*</label><p><bold>Competing interests.</bold> None.</p></fn></fn-group>'
    )
    doc = read_jats(article(body="<p>Body.</p>", back=back))
    assert_well_formed(doc)
    assert doc.text == (
        "Body.\n\nAbbreviations\n\nIOP: intraocular pressure\n\nae: extreme nonagouti\n\n"
        "Competing interests. None.\n\nFigure 9\n\nA model."
    )
    assert (
        "Abbreviations\n\nIOP: intraocular pressure\n\nae: extreme nonagouti",
        {"depth": 1, "sectionType": "glossary"},
    ) in covered(doc, "section")
    # A section holding only floats gets no heading: its figure is with the captions.
    assert "Figures and Tables" not in doc.text
    assert ("ae", {"style": "italic"}) in covered(doc, "typography")


def test_titled_ack_is_a_section_and_untitled_wrappers_are_transparent():
    back = "<ack><sec><title>Acknowledgements</title><p>Thanks.</p></sec></ack><notes><title>Note</title><p>Noted.</p></notes>"
    doc = read_jats(article(back=back))
    assert covered(doc, "heading") == [("Acknowledgements", {"depth": 1}), ("Note", {"depth": 1})]
    assert ("Note\n\nNoted.", {"depth": 1, "sectionType": "notes"}) in covered(doc, "section")


def test_supplementary_material_caption_prefers_its_own_over_the_media_caption():
    body = (
        "<sec><title>S</title><p>See the files.</p>"
        '<supplementary-material id="S1"><caption><title>Additional file 1</title><p>Gene list.</p></caption>'
        "<media><caption><p>Click here for file</p></caption></media></supplementary-material>"
        '<supplementary-material id="S2"><label>Data S2</label>'
        "<media><caption><p>Raw counts.</p></caption></media></supplementary-material></sec>"
    )
    doc = read_jats(article(body=body))
    assert "Click here" not in doc.text
    assert covered(doc, "caption") == [
        ("Additional file 1\n\nGene list.", {"captionOf": "supplementary"}),
        ("Data S2\n\nRaw counts.", {"captionOf": "supplementary", "label": "Data S2"}),
    ]


def test_display_and_inline_formulas():
    body = (
        "<sec><title>Model</title>"
        "<p>We fit <disp-formula><label>(1)</label><mml:math><mml:mi>y</mml:mi><mml:mo>=</mml:mo>"
        "<mml:mi>x</mml:mi></mml:math></disp-formula> where <inline-formula><alternatives>"
        "<tex-math>\\beta</tex-math><mml:math><mml:mi>β</mml:mi></mml:math></alternatives></inline-formula>"
        "<sub>1</sub> is a slope.</p>"
        '<disp-formula id="e2"><graphic xlink:href="e2.gif"/></disp-formula>'
        "<p>Then.</p></sec>"
    )
    doc = read_jats(article(body=body))
    assert_well_formed(doc)
    assert doc.text == "Model\n\nWe fit y=x where β1 is a slope.\n\nThen."


def test_a_display_formula_outside_a_paragraph_is_text_without_its_number():
    body = (
        "<sec><title>Model</title><p>We fit</p>"
        '<disp-formula id="e1"><label>(1)</label><mml:math><mml:mi>y</mml:mi><mml:mo>=</mml:mo>'
        "<mml:mi>x</mml:mi></mml:math></disp-formula><p>Then.</p></sec>"
    )
    doc = read_jats(article(body=body))
    assert_well_formed(doc)
    assert doc.text == "Model\n\nWe fit\n\ny=x\n\nThen."


def test_namespaced_jats_lays_out_as_jats_without_a_namespace():
    namespaced = FULL_ARTICLE.replace(
        f"<article {NAMESPACES}".encode(),
        f'<article xmlns="http://jats.nlm.nih.gov/ns/archiving/1.3/" {NAMESPACES}'.encode(),
    )
    assert namespaced != FULL_ARTICLE
    plain = read_jats(FULL_ARTICLE, include_references=True)
    doc = read_jats(namespaced, include_references=True)
    # Captions (figures, tables) and the reference list included.
    assert doc.text == plain.text and "Footnote of the table." in doc.text
    assert doc.spans == plain.spans and doc.spans_of("reference")


def test_block_elements_inside_a_paragraph_split_it():
    body = (
        "<p>Primers:<list><list-item><label>a</label><p>P1: ACGT</p></list-item>"
        "<list-item><p>P2: TTGA</p></list-item></list>were used.</p>"
    )
    doc = read_jats(article(body=body))
    assert [t for t, _ in covered(doc, "paragraph")] == [
        "Primers:",
        "P1: ACGT",
        "P2: TTGA",
        "were used.",
    ]


def test_boxed_text_and_inline_footnotes():
    body = (
        "<sec><title>Results</title><p>It works<fn><p>FOOTNOTE</p></fn>.</p>"
        "<boxed-text><sec><title>Patient Summary</title><p>In short.</p></sec></boxed-text></sec>"
    )
    doc = read_jats(article(body=body))
    assert "FOOTNOTE" not in doc.text
    assert doc.text == "Results\n\nIt works.\n\nPatient Summary\n\nIn short."
    assert ("Patient Summary", {"depth": 2}) in covered(doc, "heading")


PRETTY_PRINTED = (
    "<p>Loss of \n\t\t\t<italic>Sox9</italic>\n\t\t\t<sup>flox</sup> in \n\t\t\t"
    "<italic>Kit</italic>\n\t\t\t<sup>W/Wv</sup> mice and \n\t\t\t<italic>Fgf9</italic> &#x0005b;\n\t\t\t"
    '<xref ref-type="bibr" rid="b1">21</xref>,\n\t\t\t<xref ref-type="bibr" rid="b2">22</xref>&#x0005d;.</p>'
)


def test_pretty_printed_inline_markup_loses_its_indentation():
    # The PLoS 2006 pattern: a line break and tabs before every inline tag,
    # with the original space (if any) kept before the break.
    doc = read_jats(article(body=PRETTY_PRINTED))
    assert doc.text == "Loss of Sox9flox in KitW/Wv mice and Fgf9 [21,22]."
    assert covered(doc, "citation") == [("21", {"target": "b1"}), ("22", {"target": "b2"})]


def test_pretty_printing_can_be_forced_either_way():
    as_spaces = read_jats(article(body=PRETTY_PRINTED), pretty_printed=False)
    assert as_spaces.text == "Loss of Sox9 flox in Kit W/Wv mice and Fgf9 [ 21, 22]."
    forced = read_jats(
        article(body="<p>A \n  <italic>B</italic>\n  <sup>C</sup></p>"), pretty_printed=True
    )
    assert forced.text == "A BC"


def test_line_break_is_a_space_in_ordinary_files():
    doc = read_jats(
        article(
            body="<p>The gene\n<italic>Kit</italic> and\n  <italic>Sox9</italic>\tare\r\nhere.</p>"
        )
    )
    assert doc.text == "The gene Kit and Sox9 are here."


def test_unicode_spaces_are_content_and_kept_but_trimmed_at_block_and_span_ends():
    doc = read_jats(
        article(body="<p>\u00a010\u2009mM and 5\u00a0<italic>µl\u200a</italic>\u2003</p>")
    )
    assert doc.text == "10\u2009mM and 5\u00a0µl"
    assert covered(doc, "typography") == [("µl", {"style": "italic"})]


def test_an_article_without_any_text_is_refused_naming_the_file():
    # Laid out, it would be an empty document passed on to every later stage.
    with pytest.raises(DocumentFormatError, match=r"blank\.nxml: the article has no text") as info:
        read_jats(article(body="<sec><title>  </title><p> </p></sec>"), name="blank.nxml")
    assert "leave the file out" in info.value.hint


def test_article_set_wrapper_and_wrong_root():
    wrapped = (
        b"<pmc-articleset>" + article(body="<p>Hi.</p>").split(b"\n", 1)[1] + b"</pmc-articleset>"
    )
    assert read_jats(wrapped).text == "Hi."
    with pytest.raises(
        DocumentFormatError, match=r"doc\.xml: root element is <html>, not a JATS <article>"
    ) as info:
        read_jats(b"<html><body/></html>", name="doc.xml")
    assert "leave the file out" in info.value.hint
    with pytest.raises(DocumentFormatError, match=r"holding 2 <article> elements.*split"):
        read_jats(b"<pmc-articleset><article/><article/></pmc-articleset>")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1234567", "PMC1234567"),
        ("PMC1234567", "PMC1234567"),
        (" pmc42 ", "PMC42"),
        ("abc", None),
        (None, None),
    ],
)
def test_normalise_pmcid(value, expected):
    assert normalise_pmcid(value) == expected


def test_input_forms_agree(tmp_path):
    path = tmp_path / "An Article-1-2-345.nxml"
    path.write_bytes(FULL_ARTICLE)
    from_path = read_jats(path)
    assert from_path.source == str(path)
    assert read_jats(str(path)) == from_path
    with path.open("rb") as handle:
        assert read_jats(handle).text == from_path.text
    assert read_jats(io.BytesIO(FULL_ARTICLE)).source == "<stream>"
    assert read_jats(bytearray(FULL_ARTICLE)).spans == from_path.spans
    assert read_jats(FULL_ARTICLE) == read_jats(FULL_ARTICLE)  # deterministic


def test_text_mode_file_object_is_refused(tmp_path):
    path = tmp_path / "a.nxml"
    path.write_bytes(FULL_ARTICLE)
    with path.open("r", encoding="utf-8") as handle, pytest.raises(TypeError, match="binary mode"):
        read_jats(handle)
    with pytest.raises(TypeError, match="pass a path, bytes or a binary file object"):
        read_jats(42)


# ---------------------------------------------------------------- inline offsets (property)

_WORDS = st.text(alphabet="abcXYZ019.,-", min_size=1, max_size=5)
_SPACES = st.sampled_from([" ", "  ", "\n", "\t", " \n\t ", "\r\n"])
_STYLES = st.sampled_from(["italic", "bold", "sup", "sub"])


def _markup(depth: int = 0):
    leaf = st.one_of(_WORDS.map(lambda w: ("text", w)), _SPACES.map(lambda s: ("text", s)))
    if depth >= 2:
        return st.lists(leaf, min_size=1, max_size=6)
    element = st.tuples(_STYLES, st.deferred(lambda: _markup(depth + 1)))
    return st.lists(st.one_of(leaf, element), min_size=1, max_size=6)


def _render(nodes, styled: Counter) -> tuple[str, str]:
    """(XML, raw text) of a node list; counts (style, normalised text) of each element."""
    xml, raw = [], []
    for node in nodes:
        if node[0] == "text":
            xml.append(node[1].replace("\r", "&#13;"))
            raw.append(node[1])
        else:
            style, children = node
            inner_xml, inner_raw = _render(children, styled)
            xml.append(f"<{style}>{inner_xml}</{style}>")
            raw.append(inner_raw)
            normalised = re.sub(r"[ \t\n\r]+", " ", inner_raw).strip()
            if normalised:
                styled[(style, normalised)] += 1
    return "".join(xml), "".join(raw)


@settings(max_examples=200, deadline=None)
@given(_markup())
def test_inline_offsets_follow_whitespace_normalisation(nodes):
    styled: Counter = Counter()
    xml, raw = _render(nodes, styled)
    # Indentation detection is tested on its own; here a line break is a space. The
    # title keeps an article whose paragraph is blank from being refused as empty.
    title = "<title-group><article-title>T</article-title></title-group>"
    doc = read_jats(article(body=f"<p>{xml}</p>", front=title), pretty_printed=False)
    expected = re.sub(r"[ \t\n\r]+", " ", raw).strip()
    assert doc.text == "T" + (BLOCK_SEPARATOR + expected if expected else "")
    assert_well_formed(doc)
    got = Counter((s.features["style"], doc.covered_text(s)) for s in doc.spans_of("typography"))
    assert got == styled


# ---------------------------------------------------------------- hostile and broken input

BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE article [\n<!ENTITY lol "lol">\n'
    + b"".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'.encode()
        for i in range(1, 10)
    )
    + b"]>\n<article><body><p>x &lol9; y</p></body></article>"
)


def test_billion_laughs_is_refused():
    with pytest.raises(
        DocumentFormatError, match=r"laughs\.nxml: cannot parse XML at line \d+.*entity"
    ) as info:
        read_jats(BILLION_LAUGHS, name="laughs.nxml")
    assert "entity-expansion attack" in str(info.value)
    # The line where the entity is used, not where libxml2 stopped (the declarations).
    assert "cannot parse XML at line 14:" in str(info.value)
    assert "clean copy" in info.value.hint


def _nested(depth: int) -> bytes:
    return (
        b'<?xml version="1.0"?>\n<article><body>'
        + b"<sec>" * depth
        + b"<p>deep</p>"
        + b"</sec>" * depth
        + b"</body></article>"
    )


@pytest.mark.parametrize(
    ("data", "limit"),
    [
        (_nested(300), "nesting depth (256 levels)"),
        (
            b'<?xml version="1.0"?>\n<article><body><p>'
            + b"a" * 10_500_000
            + b"</p></body></article>",
            "text node size (10 MB)",
        ),
    ],
)
def test_a_well_formed_file_over_the_parser_limits_says_which_limit_and_how_to_lift_it(
    data: bytes, limit: str
) -> None:
    with pytest.raises(DocumentFormatError) as info:
        read_jats(data, name="big.nxml")
    message = str(info.value)
    assert f"exceeds the XML parser's safety limit on {limit}" in message
    assert "not well-formed" not in message and "re-download" not in message
    assert "huge_tree: true" in info.value.hint
    assert "deep" in read_jats(data, name="big.nxml", huge_tree=True).text or limit.startswith(
        "text"
    )


def test_small_internal_entity_is_left_unexpanded():
    data = (
        b'<?xml version="1.0"?><!DOCTYPE article [<!ENTITY lol "LOL"><!ENTITY lol2 "&lol;&lol;">]>'
        b"<article><body><p>x &lol2; y</p></body></article>"
    )
    doc = read_jats(data)
    assert doc.text == "x y"


def test_external_file_entities_are_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    data = (
        f'<?xml version="1.0"?><!DOCTYPE article [<!ENTITY s SYSTEM "{secret.as_uri()}">'
        '<!ENTITY passwd SYSTEM "file:///etc/passwd">]>'
        "<article><body><p>a &s; b &passwd; c</p></body></article>"
    ).encode()
    path = tmp_path / "xxe.nxml"
    path.write_bytes(data)
    doc = read_jats(path)
    assert doc.text == "a b c"
    assert "TOPSECRET" not in doc.text and "root:" not in doc.text


@pytest.fixture
def http_server():
    """A local HTTP server that records every request made to it."""
    requests: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            requests.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(
                b'<!ENTITY leak "LEAKED">' if self.path.endswith(".dtd") else b"REMOTE"
            )

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


def test_network_entities_and_dtds_are_not_fetched(http_server, tmp_path):
    base, requests = http_server
    data = (
        f'<?xml version="1.0"?>\n<!DOCTYPE article SYSTEM "{base}/article.dtd" [\n'
        f'<!ENTITY % remote SYSTEM "{base}/param.dtd">\n%remote;\n'
        f'<!ENTITY web SYSTEM "{base}/entity">\n]>\n'
        "<article><body><p>a &web; b &leak; c</p></body></article>"
    ).encode()
    path = tmp_path / "net.nxml"
    path.write_bytes(data)
    doc = read_jats(path)
    assert doc.text == "a b c"
    assert requests == []
    # The recorder does record requests, so the empty list above means something.
    import urllib.request

    with urllib.request.urlopen(f"{base}/probe") as response:
        assert response.read() == b"REMOTE"
    assert requests == ["/probe"]


def test_truncated_file(tmp_path):
    path = tmp_path / "cut.nxml"
    path.write_bytes(FULL_ARTICLE[: len(FULL_ARTICLE) // 2])
    with pytest.raises(DocumentFormatError) as info:
        read_jats(path)
    message = str(info.value)
    assert message.startswith(f"{path}: cannot parse XML at line ")
    assert re.search(r"line \d+, column \d+", message)
    assert "truncated" in message


@pytest.mark.parametrize("content", [b"", b"  \n\t "])
def test_empty_file(tmp_path, content):
    path = tmp_path / "empty.nxml"
    path.write_bytes(content)
    with pytest.raises(DocumentFormatError, match=rf"{re.escape(str(path))}: the file is empty"):
        read_jats(path)


@pytest.mark.parametrize(
    "garbage",
    [bytes(range(256)) * 4, b"\x89PNG\r\n\x1a\n" + bytes(64), gzip.compress(FULL_ARTICLE)],
    ids=["all-bytes", "png", "gzip"],
)
def test_binary_garbage(garbage):
    with pytest.raises(
        DocumentFormatError,
        match=r"blob\.nxml: cannot parse XML at line 1, column 1: .*the content is not XML",
    ):
        read_jats(garbage, name="blob.nxml")


def test_latin1_bytes_declared_as_utf8():
    data = '<?xml version="1.0" encoding="UTF-8"?>\n<article><body><p>Caf\u00e9</p></body></article>'.encode(
        "latin-1"
    )
    with pytest.raises(
        DocumentFormatError, match=r"l1\.nxml: cannot parse XML at line 2, column \d+.*encoding"
    ) as info:
        read_jats(data, name="l1.nxml")
    assert isinstance(info.value, ValueError)
    # Declared correctly, the same bytes are fine.
    fixed = data.replace(b"UTF-8", b"ISO-8859-1")
    assert read_jats(fixed).text == "Caf\u00e9"


def test_undeclared_named_entity():
    with pytest.raises(
        DocumentFormatError,
        match=r"ent\.nxml: .*line 1, column \d+: Entity 'nbsp' not defined; .*numeric character references",
    ):
        read_jats(b"<article><body><p>a&nbsp;b</p></body></article>", name="ent.nxml")


DOCTYPE = (
    b'<?xml version="1.0"?>\n<!DOCTYPE article PUBLIC "-//NLM//DTD Journal Archiving and '
    b'Interchange DTD v2.3 20070202//EN" "archivearticle.dtd">\n'
)


def test_html_named_entities_of_a_file_naming_its_dtd_are_read_as_their_characters():
    # The DTD is never loaded, so without help these stayed nodes without text:
    # "TNF-&alpha;" was read as "TNF-", "IL&ndash;6" as "IL6".
    data = DOCTYPE + (
        b"<article><front><article-meta><title-group><article-title>TNF-&alpha; in "
        b"<italic>IL&ndash;6</italic></article-title></title-group></article-meta></front>"
        b"<body><p>10&nbsp;mM&thinsp;&amp; &lsquo;x&rsquo;&hellip;</p></body></article>"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        doc = read_jats(data, name="ent.nxml")
    assert doc.text == "TNF-\u03b1 in IL\u20136\n\n10\u00a0mM\u2009& \u2018x\u2019\u2026"
    assert doc.title == "TNF-\u03b1 in IL\u20136"
    assert_well_formed(doc)


def test_entities_it_cannot_read_are_named_in_a_warning():
    # &agr; is ISO 8879's alpha, not an HTML name; &lol; is declared by the file,
    # and declarations are never expanded.
    data = (
        b'<?xml version="1.0"?><!DOCTYPE article SYSTEM "archivearticle.dtd" '
        b'[<!ENTITY lol "LOL">]>'
        b"<article><body><p>An &agr; and &lol; and &beta;.</p></body></article>"
    )
    with pytest.warns(FormatWarning, match=r"ent\.nxml: entity references left out .*&agr;, &lol;"):
        doc = read_jats(data, name="ent.nxml")
    assert doc.text == "An and and \u03b2."


def test_an_article_without_body_text_is_read_with_a_warning():
    front = (
        "<title-group><article-title>A letter</article-title></title-group>"
        "<abstract><p>Only an abstract.</p></abstract>"
    )
    for body in ("", '<fig id="F1"><caption><p>Scanned page.</p></caption></fig>'):
        with pytest.warns(FormatWarning, match=r"scan\.nxml: the article has no body text"):
            doc = read_jats(article(front=front, body=body), name="scan.nxml")
        assert doc.text.startswith("A letter\n\nOnly an abstract.")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_jats(article(front=front, body="<p>Text.</p>"))


def test_structure_span_is_plain_data():
    span = StructureSpan("paragraph", 0, 3)
    assert span.features == {} and span == StructureSpan("paragraph", 0, 3, {})


# ---------------------------------------------------------------- CRAFT corpus

_WORD = re.compile(r"\w+")


def token_coverage(reference: str, candidate: str, min_moved_run: int = 4) -> tuple[float, float]:
    """Share of the reference's word tokens found in order in the candidate.

    Returns ``(strict, with_moves)``: ``strict`` is one order-preserving
    alignment of the whole texts; ``with_moves`` also counts stretches the
    first alignment missed that are found, in order, elsewhere in the candidate
    as runs of at least ``min_moved_run`` tokens (captions are moved to the end
    of the text, so they are out of order by design).
    """
    ref, cand = _WORD.findall(reference), _WORD.findall(candidate)
    if not ref:
        return 1.0, 1.0
    blocks = difflib.SequenceMatcher(None, ref, cand, autojunk=False).get_matching_blocks()
    strict = sum(block.size for block in blocks)
    moved, position = 0, 0
    for block in blocks:
        gap = ref[position : block.a]
        if len(gap) >= min_moved_run:
            matcher = difflib.SequenceMatcher(None, gap, cand, autojunk=False)
            moved += sum(b.size for b in matcher.get_matching_blocks() if b.size >= min_moved_run)
        position = block.a + block.size
    return strict / len(ref), (strict + moved) / len(ref)


def test_token_coverage_measure():
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    assert token_coverage(text, text) == (1.0, 1.0)
    moved = "eta theta iota kappa lambda mu alpha beta gamma delta epsilon zeta"
    strict, with_moves = token_coverage(text, moved)
    assert strict == 0.5 and with_moves == 1.0
    unrelated = "one two three four five six seven eight nine ten eleven twelve alpha"
    assert token_coverage(text, unrelated)[1] < 0.1


def _craft_articles(craft_dir: Path) -> list[tuple[str, str]]:
    pairs = []
    mapping = craft_dir / "articles" / "ids" / "craft-idmappings.txt"
    for line in mapping.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            file_name, _pmcid, pmid = line.split("\t")
            pairs.append((file_name, pmid))
    return pairs


@pytest.mark.slow
@pytest.mark.corpus
def test_craft_articles(craft_dir):
    articles = _craft_articles(craft_dir)
    assert len(articles) == 67
    problems, report = [], []
    for file_name, pmid in articles:
        started = time.perf_counter()
        doc = read_jats(craft_dir / "articles" / "nxml" / file_name)
        seconds = time.perf_counter() - started
        assert_well_formed(doc)
        reference = (craft_dir / "articles" / "txt" / f"{pmid}.txt").read_text(encoding="utf-8")
        reference_lines = {line.strip() for line in reference.splitlines()}
        for span in doc.spans:
            if span.type in ("title", "heading") and doc.covered_text(span) not in reference_lines:
                problems.append(
                    f"{pmid}: {span.type} {doc.covered_text(span)!r} is not a line of the CRAFT text"
                )
        if doc.title is None or not doc.spans_of("heading") or not doc.spans_of("caption"):
            problems.append(f"{pmid}: missing title, headings or captions")
        strict, with_moves = token_coverage(reference, doc.text)
        report.append(
            f"{pmid} strict={strict:.4f} with_moves={with_moves:.4f} {seconds * 1000:.0f}ms"
        )
        if with_moves < 0.95:
            problems.append(f"{pmid}: only {with_moves:.2%} of the CRAFT tokens found in order")
        if seconds > 1.0:
            problems.append(f"{pmid}: took {seconds:.2f} s")
    print("\n".join(report))
    assert not problems, "\n".join(problems)
