"""XMI written by Apache UIMA Java, as DKPro Core and INCEpTION write it, read by
xmi.reader.v1 and written again by xmi.writer.v1, loads in UIMA Java with the same
views, texts and annotations.

The input is written here by hand as UIMA Java 2.10 writes it (checked against its
output): UTF-16 offsets with characters beyond the BMP before them, two views (the
second with UIMA's plain DocumentAnnotation), an INCEpTION custom layer with a link
feature and a multi-value string feature (arrays UIMA writes inline), a relation
layer, and ``Token.morph``, a feature casflow's type system lacks. The comparison runs
in Java (``XmiTypeCounts.java``, as ``casflow check-xmi`` does); it skips without
java/javac or uimaj-core.jar.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import cassis
import pytest

from casflow.pipeline import uima_java
from casflow.pipeline.runner import run_workflow
from casflow.pipeline.uima_java import (
    DOCUMENT_ANNOTATION,
    CasReport,
    compare_reports,
    compile_checker,
    find_uima_jar,
    java_available,
    java_cas_reports,
)
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import DOCUMENT_METADATA, TOKEN

_SEG = "de.tudarmstadt.ukp.dkpro.core.api.segmentation.type."
_MORPH = "de.tudarmstadt.ukp.dkpro.core.api.lexmorph.type.morph.MorphologicalFeatures"
_NE = "de.tudarmstadt.ukp.dkpro.core.api.ner.type.NamedEntity"
LAYER = "webanno.custom.MyLayer"
LINK = "webanno.custom.MyLayerRoleLink"
RELATION = "webanno.custom.MyRel"
STRING = "uima.cas.String"
ANNOTATION = "uima.tcas.Annotation"


def _type(name: str, supertype: str, *features: tuple[str, ...]) -> str:
    described = ""
    for name_, range_, *element in features:
        element_xml = f"<elementType>{element[0]}</elementType>" if element else ""
        described += (
            f"<featureDescription><name>{name_}</name><description/>"
            f"<rangeTypeName>{range_}</rangeTypeName>{element_xml}</featureDescription>"
        )
    return (
        f"<typeDescription><name>{name}</name><description/>"
        f"<supertypeName>{supertype}</supertypeName><features>{described}</features>"
        "</typeDescription>"
    )


# The file UIMA Java's TypeSystemUtil writes: the CAS's types that are not built in,
# DocumentAnnotation (for its language feature) included.
TYPESYSTEM = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<typeSystemDescription xmlns="http://uima.apache.org/resourceSpecifier"><types>'
    + _type("uima.tcas.DocumentAnnotation", ANNOTATION, ("language", STRING))
    + _type(
        DOCUMENT_METADATA,
        "uima.tcas.DocumentAnnotation",
        ("documentTitle", STRING),
        ("documentId", STRING),
        ("documentUri", STRING),
        ("collectionId", STRING),
        ("documentBaseUri", STRING),
        ("isLastSegment", "uima.cas.Boolean"),
    )
    + _type(_SEG + "Sentence", ANNOTATION, ("id", STRING))
    + _type(_MORPH, ANNOTATION, ("value", STRING))
    + _type(_SEG + "Token", ANNOTATION, ("morph", _MORPH), ("order", "uima.cas.Integer"))
    + _type(_NE, ANNOTATION, ("value", STRING), ("identifier", STRING))
    + _type(LINK, "uima.cas.TOP", ("role", STRING), ("target", ANNOTATION))
    + _type(
        LAYER,
        ANNOTATION,
        ("Value", STRING),
        ("Flag", "uima.cas.Boolean"),
        ("Role", "uima.cas.FSArray", LINK),
        ("Tags", "uima.cas.StringArray"),
    )
    + _type(RELATION, ANNOTATION, ("Governor", LAYER), ("Dependent", LAYER), ("label", STRING))
    + "</types></typeSystemDescription>"
)

# "🧬 BRCA1 binds 𝛼-helix ." in the initial view, "BRCA1 𝛼" in gold: 🧬 and 𝛼 are two
# UTF-16 units each, so offsets after them differ from Python's.
XMI = """\
<?xml version="1.0" encoding="UTF-8"?><xmi:XMI xmlns:xmi="http://www.omg.org/XMI" \
xmlns:tcas="http:///uima/tcas.ecore" xmlns:cas="http:///uima/cas.ecore" \
xmlns:type="http:///de/tudarmstadt/ukp/dkpro/core/api/metadata/type.ecore" \
xmlns:type2="http:///de/tudarmstadt/ukp/dkpro/core/api/ner/type.ecore" \
xmlns:morph="http:///de/tudarmstadt/ukp/dkpro/core/api/lexmorph/type/morph.ecore" \
xmlns:type3="http:///de/tudarmstadt/ukp/dkpro/core/api/segmentation/type.ecore" \
xmlns:custom="http:///webanno/custom.ecore" xmi:version="2.0"><cas:NULL xmi:id="0"/>\
<type:DocumentMetaData xmi:id="2" sofa="1" begin="0" end="25" language="en" \
documentTitle="doc" documentId="doc" isLastSegment="false"/>\
<type3:Sentence xmi:id="3" sofa="1" begin="0" end="25"/>\
<type3:Token xmi:id="4" sofa="1" begin="0" end="2" order="0"/>\
<type3:Token xmi:id="5" sofa="1" begin="3" end="8" morph="9" order="0"/>\
<type3:Token xmi:id="6" sofa="1" begin="9" end="14" order="0"/>\
<type3:Token xmi:id="7" sofa="1" begin="15" end="23" order="0"/>\
<type3:Token xmi:id="8" sofa="1" begin="24" end="25" order="0"/>\
<morph:MorphologicalFeatures xmi:id="9" sofa="1" begin="3" end="8" value="Number=Sing"/>\
<type2:NamedEntity xmi:id="10" sofa="1" begin="3" end="8" value="GENE" identifier="HGNC:1100"/>\
<custom:MyLayer xmi:id="11" sofa="1" begin="15" end="23" Value="first" Flag="true" \
Role="15"><Tags>a b</Tags><Tags>c&amp;d</Tags></custom:MyLayer>\
<custom:MyLayer xmi:id="12" sofa="1" begin="3" end="8" Value="second" Flag="false"/>\
<custom:MyRel xmi:id="13" sofa="1" begin="3" end="8" Governor="11" Dependent="12" label="r"/>\
<custom:MyLayerRoleLink xmi:id="15" role="agent" target="12"/>\
<tcas:DocumentAnnotation xmi:id="21" sofa="20" begin="0" end="8" language="en"/>\
<type3:Token xmi:id="22" sofa="20" begin="0" end="5" order="0"/>\
<type3:Token xmi:id="23" sofa="20" begin="6" end="8" order="0"/>\
<type2:NamedEntity xmi:id="24" sofa="20" begin="6" end="8" value="SYMBOL"/>\
<cas:Sofa xmi:id="1" sofaNum="1" sofaID="_InitialView" mimeType="text" \
sofaString="&#129516; BRCA1 binds &#120572;-helix ."/>\
<cas:Sofa xmi:id="20" sofaNum="2" sofaID="gold" mimeType="text" \
sofaString="BRCA1 &#120572;"/>\
<cas:View sofa="1" members="2 3 4 5 6 7 8 9 10 11 12 13"/>\
<cas:View sofa="20" members="21 22 23 24"/></xmi:XMI>"""

# The same document as a UIMA tool other than DKPro Core writes it: UIMA's plain
# DocumentAnnotation, and no DocumentMetaData, in the initial view.
PLAIN_XMI = XMI.replace(
    '<type:DocumentMetaData xmi:id="2" sofa="1" begin="0" end="25" language="en" '
    'documentTitle="doc" documentId="doc" isLastSegment="false"/>',
    '<tcas:DocumentAnnotation xmi:id="2" sofa="1" begin="0" end="25" language="en"/>',
)

# The same document exported as XML 1.1 with a control character in the text and in a
# feature, which casflow reads as spaces with control_characters: space.
XML11_XMI = (
    XMI.replace('version="1.0"', 'version="1.1"', 1)
    .replace("binds &#120572;", "binds&#1;&#120572;")
    .replace('label="r"', 'label="r&#11;"')
)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not java_available():
        pytest.skip("java and javac are not on PATH")
    if find_uima_jar() is None:
        pytest.skip(
            f"Apache UIMA jar not found (set {uima_java.UIMA_JAR_ENV} or install "
            "libuima-core-java for /usr/share/java/uimaj-core.jar)"
        )
    path = tmp_path_factory.mktemp("uima-java-build")
    compile_checker(path)
    return path


def _round_trip(tmp_path: Path, xmi: str, reader_config: str = "") -> tuple[Path, Path]:
    """The input folder and the folder xmi.writer.v1 wrote."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "doc.xmi").write_text(xmi, encoding="utf-8")
    (folder / "TypeSystem.xml").write_text(TYPESYSTEM, encoding="utf-8")
    out = tmp_path / "out"
    workflow = textwrap.dedent(
        f"""\
        reader: {{component: xmi.reader.v1, config: {{input: "{folder}"{reader_config}}}}}
        writers: [{{component: xmi.writer.v1}}]
        run: {{output: "{out}", progress: false}}
        """
    )
    report = run_workflow(load_workflow_text(workflow, source=str(tmp_path / "wf.yaml")))
    assert report.counts["ok"] == 1, report.failures
    return folder, out / "xmi"


def _java_report(folder: Path, build_dir: Path) -> CasReport:
    xmi = folder / "doc.xmi"
    reports = java_cas_reports(folder / "TypeSystem.xml", [xmi], spans=True, build_dir=build_dir)
    return reports[xmi]


def _with_metadata(report: CasReport) -> CasReport:
    """``report`` with the initial view's plain DocumentAnnotation as a DocumentMetaData."""
    view = "_InitialView"
    for counts in (report.indexed_counts[view], report.annotation_counts[view]):
        counts[DOCUMENT_METADATA] = counts.pop(DOCUMENT_ANNOTATION)
    assert report.spans is not None
    report.spans[view] = sorted(
        (DOCUMENT_METADATA if name == DOCUMENT_ANNOTATION else name, begin, end)
        for name, begin, end in report.spans[view]
    )
    return report


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.parametrize("case", ["dkpro", "plain", "xml11"])
def test_uima_java_xmi_comes_back_with_the_same_annotations(
    tmp_path: Path, build_dir: Path, case: str
) -> None:
    xmi = {"dkpro": XMI, "plain": PLAIN_XMI, "xml11": XML11_XMI}[case]
    config = ", control_characters: space" if case == "xml11" else ""
    folder, written = _round_trip(tmp_path, xmi, config)
    before = _java_report(folder, build_dir)
    after = _java_report(written, build_dir)
    if case == "plain":
        # The run gives the document its DocumentMetaData, in place of the plain
        # DocumentAnnotation (one document annotation per view, as UIMA expects).
        before = _with_metadata(before)
    if case == "xml11":
        # Each control character became a space: the same lengths, another text.
        for view in before.sofas:
            assert before.sofas[view].utf16_length == after.sofas[view].utf16_length
            after.sofas[view] = before.sofas[view]
    assert compare_reports(before, after) == []
    assert after.offset_problems == []

    # Feature values casflow's type system does not declare come back as well.
    typesystem = cassis.load_typesystem(io.BytesIO((written / "TypeSystem.xml").read_bytes()))
    with (written / "doc.xmi").open("rb") as data:
        cas = cassis.load_cas_from_xmi(data, typesystem=typesystem)
    assert cas.select(TOKEN)[1].morph.value == "Number=Sing"
    first, second = sorted(cas.select(LAYER), key=lambda a: a.Value)
    assert first.get_covered_text() == "𝛼-helix" and list(first.Tags.elements) == ["a b", "c&d"]
    (link,) = first.Role.elements
    assert link.role == "agent" and link.target is second
    (document,) = cas.select(DOCUMENT_ANNOTATION)
    assert document.type.name == DOCUMENT_METADATA and document.language == "en"
