"""xmi.reader.v1 reads XMI that DKPro Core and INCEpTION write: with the type system
that came with the files merged with casflow's.

The fixtures are written here by hand and declare only what each test needs, under
the names DKPro Core and INCEpTION use: a POS subtype (``POS_NOUN``, as every DKPro
tagger writes), ``Token.morph`` (not in casflow's type system) and INCEpTION's
``TagsetDescription`` and ``LayerDefinition``.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import textwrap
from pathlib import Path

import cassis
import pytest

from casflow.components.evaluators.adapters import tagged_tokens
from casflow.components.formats.xmi.reader import XmiDocumentError, XmiReader
from casflow.pipeline.component import RunContext
from casflow.pipeline.runner import run_workflow
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import (
    DOCUMENT_METADATA,
    POS,
    TOKEN,
    load_typesystem,
    typesystem_xml,
    typesystem_xml_path,
)

_API = "de.tudarmstadt.ukp.dkpro.core.api."
POS_NOUN = _API + "lexmorph.type.pos.POS_NOUN"
MORPH = _API + "lexmorph.type.morph.MorphologicalFeatures"
TAGSET = _API + "metadata.type.TagsetDescription"
LAYER = "de.tudarmstadt.ukp.clarin.webanno.api.type.LayerDefinition"

DKPRO_XMI = """\
<?xml version="1.0" encoding="UTF-8"?>
<xmi:XMI xmlns:xmi="http://www.omg.org/XMI" xmlns:cas="http:///uima/cas.ecore"
    xmlns:type="http:///de/tudarmstadt/ukp/dkpro/core/api/segmentation/type.ecore"
    xmlns:pos="http:///de/tudarmstadt/ukp/dkpro/core/api/lexmorph/type/pos.ecore"
    xmlns:morph="http:///de/tudarmstadt/ukp/dkpro/core/api/lexmorph/type/morph.ecore"
    xmlns:type2="http:///de/tudarmstadt/ukp/dkpro/core/api/metadata/type.ecore"
    xmlns:type3="http:///de/tudarmstadt/ukp/clarin/webanno/api/type.ecore" xmi:version="2.0">
  <cas:NULL xmi:id="0"/>
  <cas:Sofa xmi:id="1" sofaNum="1" sofaID="_InitialView" mimeType="text"
      sofaString="Cells grow."/>
  <type:Sentence xmi:id="10" sofa="1" begin="0" end="11"/>
  <type:Token xmi:id="11" sofa="1" begin="0" end="5" pos="20" morph="30"/>
  <type:Token xmi:id="12" sofa="1" begin="6" end="10" pos="21"/>
  <type:Token xmi:id="13" sofa="1" begin="10" end="11" pos="22"/>
  <pos:POS_NOUN xmi:id="20" sofa="1" begin="0" end="5" PosValue="NNS" coarseValue="NOUN"/>
  <pos:POS xmi:id="21" sofa="1" begin="6" end="10" PosValue="VBP" coarseValue="VERB"/>
  <pos:POS xmi:id="22" sofa="1" begin="10" end="11" PosValue="." coarseValue="PUNCT"/>
  <morph:MorphologicalFeatures xmi:id="30" sofa="1" begin="0" end="5" value="Number=Plur"/>
  <type2:TagsetDescription xmi:id="40" sofa="1" begin="0" end="11"
      layer="de.tudarmstadt.ukp.dkpro.core.api.lexmorph.type.pos.POS" name="ptb"/>
  <type3:LayerDefinition xmi:id="50" name="de.tudarmstadt.ukp.dkpro.core.api.lexmorph.type.pos.POS"
      uiName="Part of speech"/>
  <cas:View sofa="1" members="10 11 12 13 20 21 22 30 40 50"/>
</xmi:XMI>
"""


def _type(name: str, supertype: str, *features: tuple[str, str, str]) -> str:
    described = "".join(
        f"<featureDescription><name>{f}</name><description>{d}</description>"
        f"<rangeTypeName>{r}</rangeTypeName></featureDescription>"
        for f, r, d in features
    )
    return (
        f"<typeDescription><name>{name}</name><supertypeName>{supertype}</supertypeName>"
        f"<features>{described}</features></typeDescription>"
    )


def typesystem(*types: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<typeSystemDescription xmlns="http://uima.apache.org/resourceSpecifier">'
        f"<types>{''.join(types)}</types></typeSystemDescription>"
    )


STRING = "uima.cas.String"
ANNOTATION = "uima.tcas.Annotation"
# The descriptions are not casflow's: DKPro's differ between its releases, and only
# names, ranges and supertypes must agree.
DKPRO_TOKEN = _type(
    TOKEN,
    ANNOTATION,
    ("pos", POS, "Part-of-speech (DKPro's wording)"),
    ("morph", MORPH, "Morphological features"),
)
DKPRO_POS = _type(
    POS, ANNOTATION, ("PosValue", STRING, "Fine-grained POS"), ("coarseValue", STRING, "")
)
DKPRO_TYPESYSTEM = typesystem(
    DKPRO_TOKEN,
    DKPRO_POS,
    _type(POS_NOUN, POS),
    _type(MORPH, ANNOTATION, ("value", STRING, "")),
    _type(TAGSET, ANNOTATION, ("layer", STRING, ""), ("name", STRING, "")),
    _type(LAYER, "uima.cas.TOP", ("name", STRING, ""), ("uiName", STRING, "")),
)


def _reader(input_path: Path, tmp_path: Path, **config: object) -> XmiReader:
    return XmiReader(
        XmiReader.Config(input=str(input_path), **config),
        RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path),
    )


def _load(reader: XmiReader) -> cassis.Cas:
    (ref,) = reader.iter_documents()
    return reader.load(ref, cassis.Cas(typesystem=load_typesystem()))


def _load_error(reader: XmiReader) -> XmiDocumentError:
    with pytest.raises(XmiDocumentError) as info:
        _load(reader)
    return info.value


def _dkpro_folder(tmp_path: Path, typesystem_name: str | None = "TypeSystem.xml") -> Path:
    folder = tmp_path / "dkpro"
    folder.mkdir()
    (folder / "doc.xmi").write_text(DKPRO_XMI, encoding="utf-8")
    if typesystem_name:
        (folder / typesystem_name).write_text(DKPRO_TYPESYSTEM, encoding="utf-8")
    return folder


def _assert_dkpro_content(cas: cassis.Cas) -> None:
    tokens = cas.select(TOKEN)
    assert [t.pos.type.name for t in tokens] == [POS_NOUN, POS, POS]
    assert tokens[0].morph.value == "Number=Plur"
    # A POS_NOUN is a POS to casflow's components and evaluators.
    assert len(cas.select(POS)) == 3
    assert [t.tag for t in tagged_tokens(cas)] == ["NNS", "VBP", "."]
    assert [t.tag for t in tagged_tokens(cas, "coarseValue")] == ["NOUN", "VERB", "PUNCT"]
    assert cas.select(TAGSET)[0].name == "ptb"
    assert cas.select(LAYER)[0].uiName == "Part of speech"


def test_dkpro_xmi_reads_with_the_type_system_beside_it(tmp_path: Path) -> None:
    cas = _load(_reader(_dkpro_folder(tmp_path), tmp_path))
    _assert_dkpro_content(cas)


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("typesystem.xml", "beside"),  # DKPro Core before 1.9
        ("TypeSystem.xml.gz", "beside"),  # DKPro's XmiWriter with compression
        ("TypeSystem.xml", "above"),  # DKPro writes it at the top of its output folder
    ],
)
def test_the_type_system_is_found_by_its_other_names_and_above_the_file(
    tmp_path: Path, name: str, where: str
) -> None:
    folder = tmp_path / "in"
    sub = folder / "sub" if where == "above" else folder
    sub.mkdir(parents=True)
    (sub / "doc.xmi").write_text(DKPRO_XMI, encoding="utf-8")
    xml = DKPRO_TYPESYSTEM.encode()
    (folder / name).write_bytes(gzip.compress(xml) if name.endswith(".gz") else xml)
    _assert_dkpro_content(_load(_reader(folder, tmp_path)))


def test_a_type_system_above_the_input_folder_is_not_taken(tmp_path: Path) -> None:
    (tmp_path / "TypeSystem.xml").write_text(DKPRO_TYPESYSTEM, encoding="utf-8")
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "doc.xmi").write_text(DKPRO_XMI, encoding="utf-8")
    assert "no type system came with the file" in str(_load_error(_reader(folder, tmp_path)))


def test_the_type_system_beside_a_tar_archive_reads_its_members(tmp_path: Path) -> None:
    folder = _dkpro_folder(tmp_path)
    with tarfile.open(folder / "batch.tar", "w") as tar:
        tar.add(folder / "doc.xmi", arcname="doc.xmi")
    (folder / "doc.xmi").unlink()
    _assert_dkpro_content(_load(_reader(folder, tmp_path)))


def test_the_typesystem_option_names_the_type_system(tmp_path: Path) -> None:
    folder = _dkpro_folder(tmp_path, typesystem_name=None)
    (tmp_path / "dkpro-types.xml").write_text(DKPRO_TYPESYSTEM, encoding="utf-8")
    # Relative to the workflow's folder, as other paths in a workflow are.
    reader = _reader(folder, tmp_path, typesystem="dkpro-types.xml")
    _assert_dkpro_content(_load(reader))


def test_without_a_type_system_an_unknown_type_fails_saying_what_to_give(
    tmp_path: Path,
) -> None:
    folder = _dkpro_folder(tmp_path, typesystem_name=None)
    xmi = (folder / "doc.xmi").read_text("utf-8").replace(' morph="30"', "")
    (folder / "doc.xmi").write_text(xmi, encoding="utf-8")
    error = _load_error(_reader(folder, tmp_path))
    message = str(error)
    assert f"type {POS_NOUN} is not declared by casflow's type system" in message
    assert str(typesystem_xml_path()) in message and "no type system came with" in message
    assert error.hint and "TypeSystem.xml beside the XMI" in error.hint
    assert "typesystem: PATH" in error.hint and "lenient: true" in error.hint


def test_lenient_without_a_type_system_names_the_dropped_annotation_referred_to(
    tmp_path: Path,
) -> None:
    # cassis drops the POS_NOUN, but Token.pos still points to it.
    folder = _dkpro_folder(tmp_path, typesystem_name=None)
    xmi = (folder / "doc.xmi").read_text("utf-8").replace(' morph="30"', "")
    (folder / "doc.xmi").write_text(xmi, encoding="utf-8")
    error = _load_error(_reader(folder, tmp_path, lenient=True))
    assert f"refers to xmi:id 20, a {POS_NOUN}, which lenient: true dropped" in str(error)
    assert error.hint and "TypeSystem.xml beside the XMI" in error.hint


@pytest.mark.parametrize("lenient", [False, True])
def test_without_a_type_system_an_unknown_feature_fails_naming_it(
    tmp_path: Path, lenient: bool
) -> None:
    folder = _dkpro_folder(tmp_path, typesystem_name=None)
    xmi = (folder / "doc.xmi").read_text("utf-8").replace("pos:POS_NOUN", "pos:POS")
    (folder / "doc.xmi").write_text(xmi, encoding="utf-8")
    error = _load_error(_reader(folder, tmp_path, lenient=lenient))
    assert f"feature 'morph' of type {TOKEN} is not declared by" in str(error)
    assert error.hint and "TypeSystem.xml beside the XMI" in error.hint
    assert "not unknown features" in error.hint


def test_lenient_drops_what_no_type_system_declares(tmp_path: Path) -> None:
    folder = _dkpro_folder(tmp_path)
    xmi = (folder / "doc.xmi").read_text("utf-8")
    xmi = xmi.replace(
        '<cas:View sofa="1" members="',
        '<type:Stem xmi:id="60" sofa="1" '
        'begin="0" end="5" value="cell"/><cas:View sofa="1" members="60 ',
    )
    (folder / "doc.xmi").write_text(xmi, encoding="utf-8")
    message = str(_load_error(_reader(folder, tmp_path)))
    assert f"type {_API}segmentation.type.Stem is not declared by casflow's" in message
    assert message.endswith(f" merged with {folder / 'TypeSystem.xml'}")
    with pytest.warns(UserWarning, match="Stem"):
        cas = _load(_reader(folder, tmp_path, lenient=True))
    _assert_dkpro_content(cas)


@pytest.mark.parametrize(
    ("conflicting", "said"),
    [
        (
            _type(TOKEN, ANNOTATION, ("pos", STRING, "")),
            f"{TOKEN}:pos is uima.cas.String there but {POS} in casflow's",
        ),
        (
            # A supertype more specific than casflow's is refused as well (cassis's merge
            # would not give the type its new parent's features).
            _type(TOKEN, _API + "segmentation.type.Sentence")
            + _type(_API + "segmentation.type.Sentence", ANNOTATION),
            f"{TOKEN} is a {_API}segmentation.type.Sentence there but a {ANNOTATION} in casflow's",
        ),
    ],
)
def test_a_type_system_that_conflicts_with_casflows_fails_naming_both_files(
    tmp_path: Path, conflicting: str, said: str
) -> None:
    folder = _dkpro_folder(tmp_path, typesystem_name=None)
    (folder / "TypeSystem.xml").write_text(typesystem(conflicting), encoding="utf-8")
    error = _load_error(_reader(folder, tmp_path))
    assert str(error) == (
        f"{folder / 'doc.xmi'}: the type system {folder / 'TypeSystem.xml'} conflicts with "
        f"casflow's type system ({typesystem_xml_path()}): {said}"
    )
    assert error.hint and "typesystem: PATH" in error.hint
    # Said before the run too, for the input folder's type system and for typesystem:.
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    for config in (
        XmiReader.Config(input=str(folder)),
        XmiReader.Config(input=str(folder), typesystem=str(folder / "TypeSystem.xml")),
    ):
        (problem,) = XmiReader.check_config(config, context)
        assert said in problem and str(typesystem_xml_path()) in problem


def test_a_type_system_cassis_cannot_load_fails_naming_it(tmp_path: Path) -> None:
    folder = _dkpro_folder(tmp_path, typesystem_name=None)
    (folder / "TypeSystem.xml").write_text(typesystem(DKPRO_POS)[:-30], encoding="utf-8")
    error = _load_error(_reader(folder, tmp_path))
    assert str(error).startswith(
        f"{folder / 'doc.xmi'}: cannot load the type system {folder / 'TypeSystem.xml'}: "
    )


def test_a_typesystem_option_that_is_not_a_file_is_said_before_the_run(tmp_path: Path) -> None:
    folder = _dkpro_folder(tmp_path)
    config = XmiReader.Config(input=str(folder), typesystem="missing.xml")
    context = RunContext(output_dir=tmp_path / "out", workflow_dir=tmp_path)
    assert XmiReader.check_config(config, context) == ["typesystem: missing.xml is not a file"]


def test_casflows_own_type_system_beside_the_files_reads_them_as_before(tmp_path: Path) -> None:
    # What xmi.writer.v1 writes: read with casflow's type system itself, so a document
    # read back is written again byte for byte.
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "TypeSystem.xml").write_text(typesystem_xml(), encoding="utf-8")
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = "Cells grow."
    pos = load_typesystem().get_type(POS)(begin=0, end=5, PosValue="NNS")
    cas.add(pos)
    cas.add(load_typesystem().get_type(TOKEN)(begin=0, end=5, pos=pos))
    written = cas.to_xmi().encode("utf-8")
    (folder / "doc.xmi").write_bytes(written)
    loaded = _load(_reader(folder, tmp_path))
    assert loaded.typesystem is load_typesystem()
    assert loaded.to_xmi().encode("utf-8") == written


def test_a_workflow_reads_dkpro_xmi_and_writes_it_again(tmp_path: Path) -> None:
    folder = _dkpro_folder(tmp_path)
    out = tmp_path / "out"
    text = textwrap.dedent(
        f"""\
        reader: {{component: xmi.reader.v1, config: {{input: "{folder}"}}}}
        writers: [{{component: xmi.writer.v1}}]
        run: {{output: "{out}", progress: false}}
        """
    )
    report = run_workflow(load_workflow_text(text, source=str(tmp_path / "wf.yaml")))
    assert report.counts["ok"] == 1, report.failures
    written = (out / "xmi" / "doc.xmi").read_text("utf-8")
    assert "POS_NOUN" in written and 'morph="' in written and "TagsetDescription" in written
    # The type system beside the output is the documents' own (casflow's and the
    # input's), so the file written loads strictly with it alone.
    beside = (out / "xmi" / "TypeSystem.xml").read_bytes()
    assert POS_NOUN.encode() in beside and b"<name>morph</name>" in beside
    with (out / "xmi" / "doc.xmi").open("rb") as xmi:
        cassis.load_cas_from_xmi(xmi, typesystem=cassis.load_typesystem(io.BytesIO(beside)))


def test_documents_read_with_different_type_systems_all_load_with_the_one_written(
    tmp_path: Path,
) -> None:
    # Two folders, each with its own type system: the one written beside the output is
    # casflow's merged with both, whichever worker wrote which document.
    inputs = tmp_path / "in"
    inputs.mkdir()
    dkpro = _dkpro_folder(tmp_path)
    dkpro.rename(inputs / "a")
    custom = typesystem(_type("my.Custom", "uima.tcas.Annotation", ("kind", STRING, "")))
    (inputs / "b").mkdir()
    (inputs / "b" / "TypeSystem.xml").write_text(custom, encoding="utf-8")
    merged = cassis.merge_typesystems(
        load_typesystem(), cassis.load_typesystem(io.BytesIO(custom.encode()))
    )
    cas = cassis.Cas(typesystem=merged)
    cas.sofa_string = "Custom text."
    cas.add(merged.get_type("my.Custom")(begin=0, end=6, kind="k"))
    (inputs / "b" / "other.xmi").write_bytes(cas.to_xmi().encode("utf-8"))
    out = tmp_path / "out"
    text = textwrap.dedent(
        f"""\
        reader: {{component: xmi.reader.v1, config: {{input: "{inputs}"}}}}
        writers: [{{component: xmi.writer.v1}}]
        run: {{output: "{out}", progress: false, jobs: 2, batch_size: 1}}
        """
    )
    report = run_workflow(load_workflow_text(text, source=str(tmp_path / "wf.yaml")))
    assert report.counts["ok"] == 2, report.failures
    beside = cassis.load_typesystem(io.BytesIO((out / "xmi" / "TypeSystem.xml").read_bytes()))
    assert beside.contains_type(POS_NOUN) and beside.contains_type("my.Custom")
    for name in ("doc.xmi", "other.xmi"):
        with (out / "xmi" / name).open("rb") as xmi:
            cassis.load_cas_from_xmi(xmi, typesystem=beside)


def test_casflows_type_system_is_written_beside_casflows_documents(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Cells grow.", encoding="utf-8")
    out = tmp_path / "out"
    text = textwrap.dedent(
        f"""\
        reader: {{component: text.reader.v1, config: {{input: "{folder}"}}}}
        writers: [{{component: xmi.writer.v1}}]
        run: {{output: "{out}", progress: false}}
        """
    )
    assert run_workflow(load_workflow_text(text, source=str(tmp_path / "wf.yaml"))).exit_code == 0
    assert (out / "xmi" / "TypeSystem.xml").read_text("utf-8") == typesystem_xml()


# What UIMA Java writes in XML 1.1 (INCEpTION's "UIMA CAS XMI (XML 1.1)" export, DKPro
# Core's XmiWriter with version 1.1) for a text with control characters: character
# references XML 1.0 forbids, decimal or hexadecimal; 🧬 before them is two UTF-16 units.
XML11_XMI = """\
<?xml version="1.1" encoding="UTF-8"?><xmi:XMI xmlns:xmi="http://www.omg.org/XMI" \
xmlns:cas="http:///uima/cas.ecore" \
xmlns:type3="http:///de/tudarmstadt/ukp/dkpro/core/api/segmentation/type.ecore" \
xmi:version="2.0"><cas:NULL xmi:id="0"/>\
<type3:Token xmi:id="11" sofa="1" begin="0" end="2" lemma="21"/>\
<type3:Token xmi:id="12" sofa="1" begin="3" end="9" lemma="22"/>\
<type3:Token xmi:id="13" sofa="1" begin="10" end="15"/>\
<type3:Lemma xmi:id="21" sofa="1" begin="0" end="2" value="&#129516;"/>\
<type3:Lemma xmi:id="22" sofa="1" begin="3" end="9" value="brca1&#1;"/>\
<cas:Sofa xmi:id="1" sofaNum="1" sofaID="_InitialView" mimeType="text" \
sofaString="&#129516; BRCA1&#1; binds&#x0B;"/>\
<cas:View sofa="1" members="11 12 13 21 22"/></xmi:XMI>"""


def _xml11_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "inception"
    folder.mkdir()
    (folder / "doc.xmi").write_text(XML11_XMI, encoding="utf-8")
    return folder


def test_xml11_control_characters_fail_naming_the_place_and_the_option(tmp_path: Path) -> None:
    error = _load_error(_reader(_xml11_folder(tmp_path), tmp_path))
    message = str(error)
    # The first in the file: a lemma's value, named by its full type name.
    assert "feature 'value' of a de.tudarmstadt.ukp.dkpro.core.api.segmentation.type.Lemma" in (
        message
    )
    assert "&#1;" in message and "XML 1.1" in message and "cannot load XMI" not in message
    assert error.hint and "control_characters: space" in error.hint


def test_xml11_control_characters_read_as_spaces_keep_the_offsets(tmp_path: Path) -> None:
    cas = _load(_reader(_xml11_folder(tmp_path), tmp_path, control_characters="space"))
    assert cas.sofa_string == "🧬 BRCA1  binds "
    tokens = cas.select(TOKEN)
    assert [t.get_covered_text() for t in tokens] == ["🧬", "BRCA1 ", "binds"]
    assert [t.lemma.value for t in tokens[:2]] == ["🧬", "brca1 "]


def test_a_plain_document_annotation_gives_way_to_the_document_metadata(
    tmp_path: Path,
) -> None:
    # XMI from a UIMA tool other than DKPro Core: UIMA Java's plain DocumentAnnotation,
    # with the language, and no DocumentMetaData, which the run adds.
    folder = tmp_path / "uima"
    folder.mkdir()
    xmi = DKPRO_XMI.replace(
        '<type:Sentence xmi:id="10"',
        '<tcas:DocumentAnnotation xmi:id="9" sofa="1" begin="0" end="11" language="de"/>'
        '<type:Sentence xmi:id="10"',
    )
    xmi = xmi.replace(
        ' xmi:version="2.0">', ' xmlns:tcas="http:///uima/tcas.ecore" xmi:version="2.0">'
    )
    xmi = xmi.replace('members="10 ', 'members="9 10 ')
    (folder / "doc.xmi").write_text(xmi, encoding="utf-8")
    (folder / "TypeSystem.xml").write_text(DKPRO_TYPESYSTEM, encoding="utf-8")
    out = tmp_path / "out"
    text = textwrap.dedent(
        f"""\
        reader: {{component: xmi.reader.v1, config: {{input: "{folder}"}}}}
        writers: [{{component: xmi.writer.v1}}, {{component: xmi.dkpro.writer.v1}}]
        run: {{output: "{out}", progress: false}}
        """
    )
    report = run_workflow(load_workflow_text(text, source=str(tmp_path / "wf.yaml")))
    assert report.counts["ok"] == 1, report.failures
    for folder_name in ("xmi", "xmi-dkpro"):
        beside = (out / folder_name / "TypeSystem.xml").read_bytes()
        with (out / folder_name / "doc.xmi").open("rb") as written:
            cas = cassis.load_cas_from_xmi(
                written, typesystem=cassis.load_typesystem(io.BytesIO(beside))
            )
        # One document annotation per view, as UIMA Java expects: with two, its
        # getDocumentLanguage() read the DocumentMetaData's and lost "de".
        (document,) = cas.select("uima.tcas.DocumentAnnotation")
        assert document.type.name == DOCUMENT_METADATA, folder_name
        assert document.language == "de" and document.documentId == "doc"


def test_a_control_character_in_the_text_names_the_view(tmp_path: Path) -> None:
    folder = _xml11_folder(tmp_path)
    xmi = XML11_XMI.replace('value="brca1&#1;"', 'value="brca1"')
    (folder / "doc.xmi").write_text(xmi, encoding="utf-8")
    message = str(_load_error(_reader(folder, tmp_path)))
    assert "the text of view '_InitialView'" in message and "&#1;" in message


def test_a_plain_document_annotations_own_features_move_to_the_metadata() -> None:
    # A type system may add features to uima.tcas.DocumentAnnotation itself; replacing
    # the plain annotation kept only its language and lost them.
    from casflow.cas.metadata import set_document_metadata
    from casflow.typesystem import DOCUMENT_ANNOTATION, DOCUMENT_METADATA, typesystem_xml

    typesystem = cassis.load_typesystem(typesystem_xml())  # a copy: the loaded one is shared
    plain_type = typesystem.get_type(DOCUMENT_ANNOTATION)
    typesystem.create_feature(plain_type, "source", "uima.cas.String")
    cas = cassis.Cas(typesystem=typesystem)
    cas.sofa_string = "Gene text."
    cas.add(plain_type(begin=0, end=10, language="de", source="PubMed"))
    set_document_metadata(cas, doc_id="d1", uri="file:d1")
    (meta,) = cas.select(DOCUMENT_ANNOTATION)
    assert meta.type.name == DOCUMENT_METADATA
    assert (meta.language, meta.get("source"), meta.documentId) == ("de", "PubMed", "d1")
