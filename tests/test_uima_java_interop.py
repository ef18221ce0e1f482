"""casflow XMI written by cassis loads in Apache UIMA Java 2.10 with the same content.

The CASes are built here with cassis (multiple views, non-ASCII and non-BMP text, the
DKPro linguistic layers, discontinuous mentions), written with ``to_xmi()``, and loaded
by ``XmiTypeCounts.java`` strictly. Java tests skip when java/javac or uimaj-core.jar is
missing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import cassis
import pytest
from lxml import etree

import casflow.typesystem as T
from casflow.pipeline import uima_java
from casflow.pipeline.uima_java import (
    DOCUMENT_ANNOTATION,
    CasReport,
    SofaInfo,
    UimaJavaError,
    cassis_cas_report,
    cassis_type_counts,
    compare_reports,
    compile_checker,
    find_uima_jar,
    java_available,
    java_cas_reports,
    java_type_counts,
)

# U+1D6FC (MATHEMATICAL ITALIC SMALL ALPHA) is outside the BMP: one code point, two
# UTF-16 units. Everything after it is shifted by one between Python and Java offsets.
NON_BMP = "\U0001d6fc"
TEXT = (
    f"IL-2 (α–β, 5 µM) binds {NON_BMP}-actinin in T cells.\n"
    "The TNF-α\treceptor was not detected in µg amounts."
)
VIEWS = ("_InitialView", "gold", "system")


def _skip_reason() -> str | None:
    if not java_available():
        return "java and javac are not on PATH"
    if find_uima_jar() is None:
        return (
            f"Apache UIMA jar not found (set {uima_java.UIMA_JAR_ENV} or install "
            "libuima-core-java for /usr/share/java/uimaj-core.jar)"
        )
    return None


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    path = tmp_path_factory.mktemp("uima-java-build")
    compile_checker(path)
    return path


# --------------------------------------------------------------------------- CAS builders


def _token_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"\w+|[^\w\s]", text)]


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def _span_of(text: str, fragment: str) -> tuple[int, int]:
    begin = text.index(fragment)
    return begin, begin + len(fragment)


def _add_linguistic_layers(view: cassis.Cas, ts: cassis.TypeSystem) -> None:
    """Sentences, tokens with POS and lemma, a dependency tree and a constituent tree."""
    text = view.sofa_string
    Sentence, Token, POS, Lemma = (ts.get_type(n) for n in (T.SENTENCE, T.TOKEN, T.POS, T.LEMMA))
    Dependency, DepRoot = ts.get_type(T.DEPENDENCY), ts.get_type(T.DEPENDENCY_ROOT)
    Constituent, ConstRoot = ts.get_type(T.CONSTITUENT), ts.get_type(T.CONSTITUENT_ROOT)
    FSArray = ts.get_type("uima.cas.FSArray")
    token_spans = _token_spans(text)
    for sent_begin, sent_end in _sentence_spans(text):
        view.add(Sentence(begin=sent_begin, end=sent_end))
        tokens = []
        for begin, end in token_spans:
            if not (sent_begin <= begin and end <= sent_end):
                continue
            word = text[begin:end]
            pos = POS(begin=begin, end=end, PosValue="NN" if word.isalpha() else "SYM")
            pos.coarseValue = "NOUN" if word.isalpha() else "SYM"
            lemma = Lemma(begin=begin, end=end, value=word.lower())
            token = Token(begin=begin, end=end, pos=pos, lemma=lemma)
            view.add(pos)
            view.add(lemma)
            view.add(token)
            tokens.append(token)
        head = tokens[0]
        # DKPro convention: the root relation has Governor == Dependent.
        view.add(
            DepRoot(
                begin=head.begin,
                end=head.end,
                Governor=head,
                Dependent=head,
                DependencyType="ROOT",
                flavor="basic",
            )
        )
        for token in tokens[1:]:
            view.add(
                Dependency(
                    begin=token.begin,
                    end=token.end,
                    Governor=head,
                    Dependent=token,
                    DependencyType="dep",
                    flavor="basic",
                )
            )
        noun_phrase = Constituent(
            begin=tokens[0].begin,
            end=tokens[1].end,
            constituentType="NP",
            children=FSArray(elements=tokens[:2]),
        )
        root = ConstRoot(
            begin=sent_begin,
            end=sent_end,
            constituentType="ROOT",
            children=FSArray(elements=[noun_phrase, *tokens[2:]]),
        )
        noun_phrase.parent = root
        for token in tokens[:2]:
            token.parent = noun_phrase
        for token in tokens[2:]:
            token.parent = root
        view.add(noun_phrase)
        view.add(root)


def _add_gene_mentions(view: cassis.Cas, ts: cassis.TypeSystem, gold: bool) -> None:
    text = view.sofa_string
    Gene, Fragment = ts.get_type(T.GENE_MENTION), ts.get_type(T.FRAGMENT)
    Alternative, FSArray = ts.get_type(T.ALTERNATIVE), ts.get_type("uima.cas.FSArray")
    # Contiguous mention starting with the non-BMP character.
    begin, end = _span_of(text, f"{NON_BMP}-actinin")
    actinin = Gene(begin=begin, end=end, value="GENE", identifier="PR:000003677")
    if gold:
        alternative = Alternative(begin=begin + 2, end=end)  # "actinin" alone
        view.add(alternative)
        actinin.alternatives = FSArray(elements=[alternative])
    view.add(actinin)
    # Discontinuous mention "TNF ... receptor" with its fragments in text order.
    tnf, receptor = _span_of(text, "TNF"), _span_of(text, "receptor")
    fragments = [Fragment(begin=b, end=e) for b, e in (tnf, receptor)]
    for fragment in fragments:
        view.add(fragment)
    view.add(
        Gene(
            begin=tnf[0],
            end=receptor[1],
            value="GENE",
            ontology="PR",
            fragments=FSArray(elements=fragments),
            confidence=None if gold else 0.75,
        )
    )
    if not gold:
        view.add(Gene(begin=_span_of(text, "IL-2")[0], end=_span_of(text, "IL-2")[1], value="GENE"))


def build_full_cas(ts: cassis.TypeSystem) -> cassis.Cas:
    """Three views over the same text; only the initial view has DocumentMetaData."""
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = TEXT
    cas.sofa_mime = "text/plain"
    DocumentMetaData = ts.get_type(T.DOCUMENT_METADATA)
    cas.add(
        DocumentMetaData(
            begin=0, end=len(TEXT), documentId="PMC0000001", documentTitle="α–µ test", language="en"
        )
    )
    _add_linguistic_layers(cas, ts)
    gold = cas.create_view("gold")
    gold.sofa_string = TEXT
    _add_gene_mentions(gold, ts, gold=True)
    system = cas.create_view("system")
    system.sofa_string = TEXT
    _add_linguistic_layers(system, ts)
    _add_gene_mentions(system, ts, gold=False)
    return cas


def build_edge_case_cas(ts: cassis.TypeSystem) -> cassis.Cas:
    """DocumentMetaData with end 0, an indexed FSArray, an empty view and a text-less view."""
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = f"{NON_BMP}{NON_BMP} x"
    cas.add(ts.get_type(T.DOCUMENT_METADATA)(documentId="edge"))  # begin = end = 0
    token = ts.get_type(T.TOKEN)(begin=1, end=2)
    cas.add(token)
    # Indexed arrays are valid UIMA; UIMA 2.10's getAllIndexedFS(TOP) skips them.
    cas.add(ts.get_type("uima.cas.FSArray")(elements=[token]))
    cas.create_view("empty").sofa_string = ""
    cas.create_view("no_text")
    return cas


@pytest.fixture(scope="session")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The type system XML and the XMI files, written once."""
    folder = tmp_path_factory.mktemp("uima-java-xmi")
    ts = T.load_typesystem()
    paths = {"typesystem": folder / "TypeSystem.xml"}
    paths["typesystem"].write_text(ts.to_xml(), encoding="utf-8")
    # A non-ASCII file name: the JVM must open it whatever the caller's locale.
    for name, file_name, builder in (
        ("full", "full.xmi", build_full_cas),
        ("edge", "edge-µ.xmi", build_edge_case_cas),
    ):
        paths[name] = folder / file_name
        paths[name].write_text(builder(ts).to_xmi(), encoding="utf-8")
    return paths


@pytest.fixture(scope="session")
def java_reports(written: dict[str, Path], build_dir: Path) -> dict[Path, CasReport]:
    return java_cas_reports(
        written["typesystem"], [written["full"], written["edge"]], spans=True, build_dir=build_dir
    )


# --------------------------------------------------------------------------- without Java


def test_cassis_writes_utf16_offsets_to_xmi(written: dict[str, Path]) -> None:
    tree = etree.parse(str(written["full"]))
    ns = "{http:///de/tudarmstadt/ukp/dkpro/core/api/segmentation/type.ecore}"
    xmi_token_offsets = {(int(t.get("begin")), int(t.get("end"))) for t in tree.iter(f"{ns}Token")}
    begin, end = _span_of(TEXT, NON_BMP)
    assert (begin, end + 1) in xmi_token_offsets  # two UTF-16 units in the XMI
    after_begin, after_end = _span_of(TEXT, "actinin")
    assert (after_begin + 1, after_end + 1) in xmi_token_offsets
    # ... and cassis maps them back to code points on reading.
    report = cassis_cas_report(written["full"], spans=True)
    assert (T.TOKEN, begin, end) in report.spans["_InitialView"]


def test_compare_reports_names_each_difference() -> None:
    java = CasReport(
        sofas={"v": SofaInfo.of("a")},
        indexed_counts={"v": {T.TOKEN: 2}},
        annotation_counts={"v": {T.TOKEN: 2}},
        spans={"v": [(T.TOKEN, 0, 1), (T.TOKEN, 0, 1)]},
        offset_problems=["v: Token [1,2): offset falls inside a surrogate pair"],
    )
    other = CasReport(
        sofas={"v": SofaInfo.of("b"), "w": SofaInfo.of(None)},
        indexed_counts={"v": {T.TOKEN: 1}},
        annotation_counts={"v": {T.TOKEN: 1}},
        spans={"v": [(T.TOKEN, 0, 1)]},
    )
    differences = compare_reports(java, other)
    assert len(differences) == 6, differences
    assert compare_reports(other, other) == []


def test_find_uima_jar_honours_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jar = tmp_path / "uimaj-core-2.10.4.jar"
    monkeypatch.setenv(uima_java.UIMA_JAR_ENV, str(jar))
    assert find_uima_jar() is None
    jar.write_bytes(b"PK")
    assert find_uima_jar() == jar


# --------------------------------------------------------------------------- with Java


@pytest.mark.slow
@pytest.mark.java
def test_java_counts_equal_cassis_counts(written: dict[str, Path], build_dir: Path) -> None:
    xmi_paths = [written["full"], written["edge"]]
    java = java_type_counts(written["typesystem"], xmi_paths, build_dir=build_dir)
    expected = {path: cassis_type_counts(path, written["typesystem"]) for path in xmi_paths}
    assert java == expected
    full = java[written["full"]]
    assert set(full) == set(VIEWS)
    assert full["_InitialView"][T.DEPENDENCY_ROOT] == 2
    assert full["system"][T.GENE_MENTION] == 3
    assert full["gold"][T.ALTERNATIVE] == 1


@pytest.mark.slow
@pytest.mark.java
def test_text_annotation_spans_and_index_agree(
    written: dict[str, Path], java_reports: dict[Path, CasReport]
) -> None:
    for name in ("full", "edge"):
        cassis_report = cassis_cas_report(written[name], spans=True)
        assert compare_reports(java_reports[written[name]], cassis_report) == [], name


@pytest.mark.slow
@pytest.mark.java
def test_non_bmp_offsets_round_trip_through_java(
    written: dict[str, Path], java_reports: dict[Path, CasReport]
) -> None:
    report = java_reports[written["full"]]
    for view in VIEWS:
        # Java counts the non-BMP character twice; the text itself is identical.
        assert report.sofas[view] == SofaInfo.of(TEXT)
        assert report.sofas[view].utf16_length == len(TEXT) + 1
    begin, end = _span_of(TEXT, f"{NON_BMP}-actinin")
    assert (T.GENE_MENTION, begin, end) in report.spans["system"]
    tnf_begin, receptor_end = _span_of(TEXT, "TNF")[0], _span_of(TEXT, "receptor")[1]
    assert (T.GENE_MENTION, tnf_begin, receptor_end) in report.spans["gold"]
    assert report.offset_problems == []


@pytest.mark.slow
@pytest.mark.java
def test_java_creates_document_annotation_only_where_the_xmi_has_none(
    written: dict[str, Path], java_reports: dict[Path, CasReport]
) -> None:
    java = java_reports[written["full"]]
    raw = cassis_cas_report(written["full"], predict_java_document_annotation=False)
    for view in ("gold", "system"):
        assert DOCUMENT_ANNOTATION not in raw.indexed_counts[view]
        assert java.indexed_counts[view][DOCUMENT_ANNOTATION] == 1
        assert (DOCUMENT_ANNOTATION, 0, len(TEXT)) in java.spans[view]
    # DocumentMetaData is a DocumentAnnotation: Java adds none beside it.
    assert DOCUMENT_ANNOTATION not in java.indexed_counts["_InitialView"]
    assert java.indexed_counts["_InitialView"][T.DOCUMENT_METADATA] == 1

    edge = java_reports[written["edge"]]
    assert DOCUMENT_ANNOTATION in edge.indexed_counts["empty"]  # empty text still gets one
    assert edge.indexed_counts["no_text"] == {}  # no sofa text, no document annotation


@pytest.mark.slow
@pytest.mark.java
def test_java_stretches_an_existing_document_annotation_to_the_text_end(
    written: dict[str, Path], java_reports: dict[Path, CasReport]
) -> None:
    raw = cassis_cas_report(written["edge"], spans=True, predict_java_document_annotation=False)
    assert (T.DOCUMENT_METADATA, 0, 0) in raw.spans["_InitialView"]
    edge = java_reports[written["edge"]]
    text_length = edge.sofas["_InitialView"].code_points
    assert (T.DOCUMENT_METADATA, 0, text_length) in edge.spans["_InitialView"]


@pytest.mark.slow
@pytest.mark.java
def test_indexed_fsarray_is_counted(
    written: dict[str, Path], java_reports: dict[Path, CasReport]
) -> None:
    assert java_reports[written["edge"]].indexed_counts["_InitialView"]["uima.cas.FSArray"] == 1


def _extended_typesystem() -> cassis.TypeSystem:
    """casflow's type system plus a type and a feature the Java side will not know."""
    ts = cassis.load_typesystem(T.typesystem_xml())  # a copy: load_typesystem() is shared
    ts.create_type("casflow.test.Unknown", supertypeName="uima.tcas.Annotation")
    ts.create_feature(ts.get_type(T.TOKEN), "unknownFeature", "uima.cas.String")
    return ts


@pytest.mark.slow
@pytest.mark.java
def test_unknown_type_or_feature_fails_strict_java_loading(
    written: dict[str, Path], build_dir: Path, tmp_path: Path
) -> None:
    ts = _extended_typesystem()
    unknown_type = cassis.Cas(typesystem=ts)
    unknown_type.sofa_string = "abc"
    unknown_type.add(ts.get_type("casflow.test.Unknown")(begin=0, end=1))
    unknown_feature = cassis.Cas(typesystem=ts)
    unknown_feature.sofa_string = "abc"
    unknown_feature.add(ts.get_type(T.TOKEN)(begin=0, end=3, unknownFeature="x"))
    bad_type, bad_feature = tmp_path / "unknown_type.xmi", tmp_path / "unknown_feature.xmi"
    bad_type.write_text(unknown_type.to_xmi(), encoding="utf-8")
    bad_feature.write_text(unknown_feature.to_xmi(), encoding="utf-8")

    with pytest.raises(UimaJavaError) as raised:
        java_cas_reports(
            written["typesystem"], [bad_type, written["full"], bad_feature], build_dir=build_dir
        )
    error = raised.value
    assert set(error.failures) == {bad_type, bad_feature}
    assert "unknown type: casflow.test.Unknown" in error.failures[bad_type]
    assert "unknown feature: unknownFeature" in error.failures[bad_feature]
    assert str(bad_type) in str(error)
    assert list(error.reports) == [written["full"]]  # the good document still loaded


@pytest.mark.slow
@pytest.mark.java
def test_offset_inside_a_surrogate_pair_is_reported(build_dir: Path, tmp_path: Path) -> None:
    ts = T.load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = f"a{NON_BMP}b"
    cas.add(ts.get_type(T.TOKEN)(begin=1, end=2))
    xmi = cas.to_xmi()
    assert 'begin="1" end="3"' in xmi
    # What a writer that used code points instead of UTF-16 units would produce.
    broken = tmp_path / "broken.xmi"
    broken.write_text(xmi.replace('begin="1" end="3"', 'begin="1" end="2"'), encoding="utf-8")
    typesystem_xml = tmp_path / "TypeSystem.xml"
    typesystem_xml.write_text(ts.to_xml(), encoding="utf-8")

    report = java_cas_reports(typesystem_xml, [broken], spans=True, build_dir=build_dir)[broken]
    assert len(report.offset_problems) == 1
    assert "surrogate pair" in report.offset_problems[0]
    with pytest.warns(UserWarning):  # cassis cannot map the offset either
        cassis_report = cassis_cas_report(broken, typesystem_xml, spans=True)
    assert compare_reports(report, cassis_report) != []


@pytest.mark.slow
@pytest.mark.java
def test_checker_is_compiled_once_per_source_version(
    build_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class_dir = compile_checker(build_dir)
    class_file = class_dir / "XmiTypeCounts.class"
    compiled_at = os.stat(class_file).st_mtime_ns
    assert compile_checker(build_dir) == class_dir
    assert os.stat(class_file).st_mtime_ns == compiled_at

    edited = tmp_path / "XmiTypeCounts.java"
    edited.write_text(uima_java.checker_source().read_text() + "\n// edited\n")
    monkeypatch.setattr(uima_java, "checker_source", lambda: edited)
    recompiled = compile_checker(build_dir)
    assert recompiled != class_dir
    assert (recompiled / "XmiTypeCounts.class").is_file()
