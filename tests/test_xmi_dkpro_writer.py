"""``xmi.dkpro.writer.v1``: one view as the initial view of a CAS of DKPro Core types only.

Each test builds a small CAS by hand (or imports a two-sentence Penn tree file), writes
it with the writer and reads the file back with the written ``TypeSystem.xml`` alone,
so a casflow type left in the output fails to load.
"""

from __future__ import annotations

import gzip
import textwrap
from pathlib import Path
from typing import Any

import cassis
import pytest
from lxml import etree

import casflow.typesystem as T
from casflow.components.formats.view_writer import ViewContentError
from casflow.components.formats.xmi.dkpro_writer import (
    DKPRO_DIV,
    DKPRO_HEADING,
    DKPRO_PARAGRAPH,
    DkproXmiWriter,
    DkproXmiWriterConfig,
)
from casflow.pipeline import uima_java
from casflow.pipeline.component import RunContext
from casflow.pipeline.testing import add_spans, cas_from_text, run_component, view_of
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from tests.test_gold_readers import PENN_TEXT, PENN_TREES
from tests.test_uima_java_interop import build_full_cas

_POS = T.POS + "_"
_RESOURCE_NS = "{http://uima.apache.org/resourceSpecifier}"


def write(cas: cassis.Cas, tmp_path: Path, doc_id: str = "doc1", **config: Any) -> Path:
    """The writer's file for ``cas`` (and TypeSystem.xml beside it)."""
    writer = DkproXmiWriter(DkproXmiWriterConfig(**config), RunContext(output_dir=tmp_path))
    (path,) = writer.write(cas, doc_id)
    writer.finish()
    return path


def written(cas: cassis.Cas, tmp_path: Path, **config: Any) -> cassis.Cas:
    """What the writer wrote, read strictly with the TypeSystem.xml beside it alone."""
    path = write(cas, tmp_path, **config)
    with open(path.parent / "TypeSystem.xml", "rb") as f:
        typesystem = cassis.load_typesystem(f)
    with open(path, "rb") as f:
        return cassis.load_cas_from_xmi(f, typesystem=typesystem)


def only(view: cassis.Cas, type_name: str) -> Any:
    (fs,) = [fs for fs in view.select_all_fs() if fs.type.name == type_name]
    return fs


def type_names(view: cassis.Cas) -> set[str]:
    return {fs.type.name for fs in view.select_all_fs()}


def linguistic_cas() -> cassis.Cas:
    """ "Pax6 and Sox2 bind." with POS (fine and coarse), lemmas, dependencies, a chunk."""
    cas = cas_from_text("Pax6 and Sox2 bind.", doc_id="doc1")
    cas.get_document_annotation().language = "en"
    ts = cas.typesystem
    Token, POS, Lemma = (ts.get_type(n) for n in (T.TOKEN, T.POS, T.LEMMA))
    add_spans(cas, "Sentence", [(0, 19, {"id": "s1"})])
    tokens = []
    for (begin, end), (tag, coarse) in zip(
        [(0, 4), (5, 8), (9, 13), (14, 18), (18, 19)],
        [("NN", "PROPN"), ("CC", "CCONJ"), ("NN", None), ("VBP", "VERB"), (".", "FOO")],
        strict=True,
    ):
        pos = POS(begin=begin, end=end, PosValue=tag, coarseValue=coarse)
        lemma = Lemma(begin=begin, end=end, value=cas.sofa_string[begin:end].lower())
        token = Token(begin=begin, end=end, pos=pos, lemma=lemma, id=str(len(tokens) + 1))
        cas.add_all([pos, lemma, token])
        tokens.append(token)
    root = ts.get_type(T.DEPENDENCY_ROOT)
    dependency = ts.get_type(T.DEPENDENCY)
    cas.add(root(begin=14, end=18, Governor=tokens[3], Dependent=tokens[3], DependencyType="ROOT"))
    cas.add(
        dependency(begin=0, end=4, Governor=tokens[3], Dependent=tokens[0], DependencyType="nsubj")
    )
    add_spans(cas, "Chunk", [(0, 13, {"chunkValue": "NP"})])
    add_spans(cas, "PennTree", [(0, 19, {"PennTree": "(ROOT (S (NP (NN Pax6)) ...))"})])
    return cas


# --------------------------------------------------------------------------- type system


def test_the_type_system_holds_only_dkpro_core_types(tmp_path: Path) -> None:
    write(linguistic_cas(), tmp_path)
    root = etree.parse(str(tmp_path / "xmi-dkpro" / "TypeSystem.xml")).getroot()
    names = [t.findtext(f"{_RESOURCE_NS}name") for t in root.iter(f"{_RESOURCE_NS}typeDescription")]
    ranges = [r.text for r in root.iter(f"{_RESOURCE_NS}rangeTypeName")]
    assert names and all(n.startswith("de.tudarmstadt.ukp.dkpro.core.api.") for n in names)
    assert not [r for r in ranges if r.startswith("casflow.")]
    assert {T.TOKEN, T.NAMED_ENTITY, T.CONSTITUENT, DKPRO_DIV, _POS + "NOUN"} <= set(names)
    write(linguistic_cas(), tmp_path, folder="plain", coarse_pos_types=False)
    plain = (tmp_path / "plain" / "TypeSystem.xml").read_text("utf-8")
    assert _POS not in plain


# --------------------------------------------------------------------------- mapping


def test_linguistic_layers_are_copied_with_their_links(tmp_path: Path) -> None:
    out = written(linguistic_cas(), tmp_path)
    meta = only(out, T.DOCUMENT_METADATA)
    assert (meta.documentId, meta.language, meta.begin, meta.end) == ("doc1", "en", 0, 19)
    assert only(out, T.SENTENCE).id == "s1"
    tokens = sorted(out.select(T.TOKEN), key=lambda t: t.begin)
    assert [t.get_covered_text() for t in tokens] == ["Pax6", "and", "Sox2", "bind", "."]
    assert [t.lemma.value for t in tokens] == ["pax6", "and", "sox2", "bind", "."]
    assert [t.id for t in tokens] == ["1", "2", "3", "4", "5"]
    assert [t.pos.PosValue for t in tokens] == ["NN", "CC", "NN", "VBP", "."]
    root = only(out, T.DEPENDENCY_ROOT)
    assert root.Governor is tokens[3] and root.Dependent is tokens[3]
    (nsubj,) = [d for d in out.select(T.DEPENDENCY) if d.type.name == T.DEPENDENCY]
    assert (nsubj.Governor, nsubj.Dependent, nsubj.DependencyType) == (
        tokens[3],
        tokens[0],
        "nsubj",
    )
    assert only(out, T.CHUNK).chunkValue == "NP"
    assert only(out, T.PENN_TREE).PennTree == "(ROOT (S (NP (NN Pax6)) ...))"


def test_pos_is_written_as_dkpro_type_of_its_coarse_tag(tmp_path: Path) -> None:
    out = written(linguistic_cas(), tmp_path)
    tokens = sorted(out.select(T.TOKEN), key=lambda t: t.begin)
    # CCONJ is DKPro's POS_CONJ (UD v1's name); no or an unknown coarse tag stays POS
    assert [t.pos.type.name for t in tokens] == [
        _POS + "PROPN",
        _POS + "CONJ",
        T.POS,
        _POS + "VERB",
        T.POS,
    ]
    assert [t.pos.coarseValue for t in tokens] == ["PROPN", "CCONJ", None, "VERB", "FOO"]
    plain = written(linguistic_cas(), tmp_path, folder="plain", coarse_pos_types=False)
    assert {t.pos.type.name for t in plain.select(T.TOKEN)} == {T.POS}


def test_every_mention_type_becomes_a_named_entity_with_class_and_concept_id(
    tmp_path: Path,
) -> None:
    cas = cas_from_text("Pax6 in the eye and the cell membrane.")
    ts = cas.typesystem
    fragments = [ts.get_type(T.FRAGMENT)(begin=b, end=e) for b, e in [(24, 28), (29, 37)]]
    cas.add_all(fragments)
    add_spans(cas, "GeneMention", [(0, 4, {"value": "GENE", "identifier": "PR:000012318"})])
    add_spans(cas, "AnatomyMention", [(12, 15, {"value": "Organ", "identifier": "UBERON:0000970"})])
    add_spans(
        cas,
        "ConceptMention",
        [
            (
                24,
                37,
                {
                    "identifier": "GO:0005886",
                    "ontology": "GO_CC",
                    "fragments": ts.get_type("uima.cas.FSArray")(elements=fragments),
                    "confidence": 0.5,
                },
            )
        ],
    )
    add_spans(cas, "NamedEntity", [(8, 11, {"value": "OTHER"})])
    out = written(cas, tmp_path)
    assert type_names(out) == {T.DOCUMENT_METADATA, T.NAMED_ENTITY}
    entities = sorted(out.select(T.NAMED_ENTITY), key=lambda e: e.begin)
    assert [(e.begin, e.end, e.value, e.identifier) for e in entities] == [
        (0, 4, "GENE", "PR:000012318"),
        (8, 11, "OTHER", None),
        (12, 15, "Organ", "UBERON:0000970"),
        # no class of its own: its type's short name; the whole span, fragments left out
        (24, 37, "ConceptMention", "GO:0005886"),
    ]


def test_treebank_trees_lose_their_empty_categories_and_stay_trees(tmp_path: Path) -> None:
    (tmp_path / "doc1.tree").write_text(PENN_TREES, encoding="utf-8")
    cas = cas_from_text(PENN_TEXT, doc_id="doc1")
    run_component("penn.import.v1", cas, path=str(tmp_path / "{doc_id}.tree"))
    assert cas.select(T.EMPTY_CATEGORY) and cas.select(T.TREEBANK_CONSTITUENT)
    out = written(cas, tmp_path)
    assert not [n for n in type_names(out) if n.startswith("casflow.")]
    constituents = list(out.select(T.CONSTITUENT))
    assert {c.type.name for c in constituents} == {T.CONSTITUENT, T.CONSTITUENT_ROOT}
    # (NP (-NONE- *T*-1)) had only an empty element: it is gone, and VP has only "grows"
    first = (0, len("The cell (HeLa) grows."))
    (vp,) = [c for c in constituents if c.constituentType == "VP" and c.end <= first[1]]
    assert [child.get_covered_text() for child in vp.children.elements] == ["grows"]
    assert sum(c.constituentType == "NP" for c in constituents if c.end <= first[1]) == 3
    (subject,) = [c for c in constituents if c.syntacticFunction == "SBJ" and c.end <= first[1]]
    assert (subject.constituentType, subject.get_covered_text()) == ("NP", "The cell (HeLa)")
    # Every node is its children's parent; every leaf is a token with a parent.
    for constituent in constituents:
        children = constituent.children.elements
        assert children, constituent.constituentType
        for child in children:
            assert child.parent is constituent
            assert child.type.name in (T.TOKEN, T.CONSTITUENT)
    roots = [c for c in constituents if c.type.name == T.CONSTITUENT_ROOT]
    assert len(roots) == 2 and all(r.parent is None for r in roots)
    tokens = list(out.select(T.TOKEN))
    assert len(tokens) == len(cas.select(T.TOKEN)) and all(t.parent is not None for t in tokens)
    # The bracket labels as written (NP-SBJ-1) stay in the PennTree string.
    assert [p.PennTree for p in out.select(T.PENN_TREE)] == [
        p.PennTree for p in cas.select(T.PENN_TREE)
    ]
    assert "NP-SBJ-1" in out.select(T.PENN_TREE)[0].PennTree


def test_parents_are_the_constituents_whose_children_list_them(tmp_path: Path) -> None:
    # A tool that links children but sets no parent (and a trace under ROOT).
    cas = cas_from_text("It binds.")
    ts = cas.typesystem
    FSArray = ts.get_type("uima.cas.FSArray")
    tokens = add_spans(cas, "Token", [(0, 2), (3, 8), (8, 9)])
    (trace,) = add_spans(cas, "EmptyCategory", [(3, 3, {"value": "*"})])
    (np,) = add_spans(cas, "Constituent", [(0, 2, {"constituentType": "NP"})])
    np.children = FSArray(elements=tokens[:1])
    (root,) = add_spans(cas, "casflow.syntax.TreebankConstituent", [(0, 9)])
    root.constituentType, root.originalLabel = "S", "S-1"
    root.children = FSArray(elements=[np, trace, *tokens[1:]])
    out = written(cas, tmp_path)
    out_tokens = sorted(out.select(T.TOKEN), key=lambda t: t.begin)
    (out_np,) = [c for c in out.select(T.CONSTITUENT) if c.constituentType == "NP"]
    (out_s,) = [c for c in out.select(T.CONSTITUENT) if c.constituentType == "S"]
    assert out_s.type.name == T.CONSTITUENT
    assert out_s.children.elements == [out_np, *out_tokens[1:]]
    assert [t.parent for t in out_tokens] == [out_np, out_s, out_s]
    assert out_np.parent is out_s and out_s.parent is None


def test_structure_maps_to_dkpro_structure_or_is_left_out(tmp_path: Path) -> None:
    text = "Title\nAbstract text.\nResults\nA paragraph. Fig. 1 A caption."
    cas = cas_from_text(text)
    add_spans(cas, "Title", [(0, 5)])
    add_spans(cas, "Abstract", [(6, 20)])
    add_spans(cas, "Section", [(21, len(text), {"sectionType": "results", "depth": 1})])
    add_spans(cas, "casflow.structure.Heading", [(21, 28, {"depth": 1})])
    add_spans(cas, "casflow.structure.Paragraph", [(29, 41)])
    add_spans(cas, "Caption", [(42, len(text), {"captionOf": "figure"})])
    add_spans(cas, "Typography", [(0, 5, {"style": "bold"})])
    add_spans(cas, "Citation", [(42, 48, {"target": "F1"})])
    out = written(cas, tmp_path)
    assert type_names(out) == {T.DOCUMENT_METADATA, DKPRO_HEADING, DKPRO_PARAGRAPH, DKPRO_DIV}
    found = sorted(
        (fs.type.name, fs.get_covered_text(), fs.divType)
        for fs in out.select_all_fs()
        if fs.type.name != T.DOCUMENT_METADATA
    )
    assert found == [
        (DKPRO_DIV, "Abstract text.", "abstract"),
        (DKPRO_DIV, text[21:], "section"),
        (DKPRO_HEADING, "Results", None),
        (DKPRO_HEADING, "Title", "title"),
        (DKPRO_PARAGRAPH, "A paragraph.", None),
    ]


def dkpro_read_cas() -> cassis.Cas:
    """A CAS as xmi.reader.v1 reads DKPro Core or INCEpTION XMI: DKPro's own types (Div,
    Heading, POS_NOUN, Person, NC, Anomaly) beside casflow's, and ``order="0"`` tokens."""
    ts = cassis.load_typesystem(T.typesystem_xml())  # a copy: load_typesystem() is shared
    div = ts.create_type(DKPRO_DIV, "uima.tcas.Annotation")
    ts.create_feature(div, "divType", "uima.cas.String")
    ts.create_feature(div, "id", "uima.cas.String")
    ts.create_type(DKPRO_PARAGRAPH, DKPRO_DIV)
    ts.create_type(DKPRO_HEADING, DKPRO_DIV)
    ts.create_type(_POS + "NOUN", T.POS)
    ts.create_type("de.tudarmstadt.ukp.dkpro.core.api.ner.type.Person", T.NAMED_ENTITY)
    ts.create_type("de.tudarmstadt.ukp.dkpro.core.api.syntax.type.chunk.NC", T.CHUNK)
    ts.create_type("de.tudarmstadt.ukp.dkpro.core.api.anomaly.type.Anomaly", "uima.tcas.Annotation")
    text = "Results\nPax6 binds Sox2."
    cas = cas_from_text(text, doc_id="doc1", typesystem=ts)
    add_spans(cas, DKPRO_HEADING, [(0, 7)])
    add_spans(cas, DKPRO_DIV, [(8, 24, {"divType": "section", "id": "sec1"})])
    add_spans(cas, DKPRO_PARAGRAPH, [(8, 24)])
    # INCEpTION's POS_NOUN has no coarse tag: its type says it
    (noun,) = add_spans(cas, _POS + "NOUN", [(8, 12, {"PosValue": "NN"})])
    add_spans(cas, "Token", [(8, 12, {"pos": noun, "order": 0}), (13, 18, {"order": 0})])
    add_spans(cas, "de.tudarmstadt.ukp.dkpro.core.api.ner.type.Person", [(8, 12)])
    add_spans(cas, "de.tudarmstadt.ukp.dkpro.core.api.syntax.type.chunk.NC", [(8, 12)])
    add_spans(cas, "de.tudarmstadt.ukp.dkpro.core.api.anomaly.type.Anomaly", [(13, 18)])
    return cas


def test_dkpro_types_read_from_dkpro_xmi_keep_their_type_or_nearest_written_one(
    tmp_path: Path,
) -> None:
    out = written(dkpro_read_cas(), tmp_path)
    found = sorted(
        (fs.type.name, fs.get_covered_text(), getattr(fs, "divType", None))
        for fs in out.select_all_fs()
        if fs.type.name in (DKPRO_DIV, DKPRO_HEADING, DKPRO_PARAGRAPH)
    )
    assert found == [
        (DKPRO_DIV, "Pax6 binds Sox2.", "section"),
        (DKPRO_HEADING, "Results", None),
        (DKPRO_PARAGRAPH, "Pax6 binds Sox2.", None),
    ]
    assert only(out, DKPRO_DIV).id == "sec1"
    (noun, binds) = sorted(out.select(T.TOKEN), key=lambda t: t.begin)
    assert (noun.pos.type.name, noun.pos.PosValue) == (_POS + "NOUN", "NN")
    # Types the output does not declare: the nearest one it does; Anomaly has none.
    assert (only(out, T.NAMED_ENTITY).value, only(out, T.CHUNK).begin) == ("Person", 8)
    assert type_names(out) == {
        T.DOCUMENT_METADATA,
        DKPRO_DIV,
        DKPRO_HEADING,
        DKPRO_PARAGRAPH,
        T.TOKEN,
        _POS + "NOUN",
        T.NAMED_ENTITY,
        T.CHUNK,
    }
    plain = written(dkpro_read_cas(), tmp_path, folder="plain", coarse_pos_types=False)
    assert {t.pos.type.name for t in plain.select(T.TOKEN) if t.pos} == {T.POS}


def test_token_order_is_written_only_where_it_is_not_0(tmp_path: Path) -> None:
    # DKPro Core 1.9 and 1.10 have no Token.order; UIMA Java writes order="0" everywhere.
    cas = dkpro_read_cas()
    path = write(cas, tmp_path)
    tokens = [e for e in etree.parse(str(path)).getroot() if e.tag.endswith("}Token")]
    assert len(tokens) == 2 and not [t for t in tokens if "order" in t.attrib]
    for token in cas.select(T.TOKEN):
        token.order = 1  # the second word of a contraction, say
    path = write(cas, tmp_path, folder="ordered")
    tokens = [e for e in etree.parse(str(path)).getroot() if e.tag.endswith("}Token")]
    assert [t.get("order") for t in tokens] == ["1", "1"]


# --------------------------------------------------------------------------- views and files


def test_the_chosen_view_becomes_the_initial_view(tmp_path: Path) -> None:
    cas = cas_from_text("Pax6 binds.", doc_id="PMC1")
    add_spans(cas, "GeneMention", [(0, 4, {"value": "system"})])
    gold = view_of(cas, "gold")  # no metadata of its own, as a view a step made
    add_spans(gold, "GeneMention", [(0, 4, {"value": "GENE"})])
    add_spans(gold, "Token", [(0, 4), (5, 10), (10, 11)])
    out = written(cas, tmp_path, view="gold")
    assert [s.sofaID for s in out.sofas] == ["_InitialView"]
    assert out.sofa_string == "Pax6 binds."
    assert [e.value for e in out.select(T.NAMED_ENTITY)] == ["GENE"]
    assert len(out.select(T.TOKEN)) == 3
    meta = only(out, T.DOCUMENT_METADATA)  # the document's, from the initial view
    assert (meta.documentId, meta.begin, meta.end) == ("PMC1", 0, 11)
    # UIMA Java gives every view a plain DocumentAnnotation: the document's metadata
    # still comes from the initial view, in its place.
    gold.get_document_annotation().language = "x-unspecified"
    assert {fs.type.name for fs in gold.select_all_fs()} >= {T.DOCUMENT_ANNOTATION}
    out = written(cas, tmp_path, folder="with-annotation", view="gold")
    documents = [fs for fs in out.select_all_fs() if "Document" in fs.type.name]
    assert [(d.type.name, d.documentId) for d in documents] == [(T.DOCUMENT_METADATA, "PMC1")]
    with pytest.raises(ViewContentError, match=r"document PMC1: no view 'system' to write"):
        write(cas, tmp_path, doc_id="PMC1", view="system")


def test_files_are_named_as_xmi_writer_names_them(tmp_path: Path) -> None:
    path = write(linguistic_cas(), tmp_path, compress="gzip", folder="gz")
    assert path == tmp_path / "gz" / "doc1.xmi.gz"
    assert b"<xmi:XMI" in gzip.decompress(path.read_bytes())
    assert (tmp_path / "gz" / "TypeSystem.xml").is_file()


def test_a_view_that_nothing_writes_is_a_validation_error(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    workflow = textwrap.dedent(
        f"""\
        reader:
          component: text.reader.v1
          config: {{input: "{tmp_path / "in"}"}}
        writers:
          - component: xmi.dkpro.writer.v1
            config: {{view: gold}}
        run: {{output: "{tmp_path / "out"}"}}
        """
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(workflow, "wf.yaml")
    assert "'xmi.dkpro.writer.v1' reads view 'gold', which nothing before it writes" in str(
        info.value
    )


# --------------------------------------------------------------------------- Apache UIMA Java


@pytest.mark.slow
@pytest.mark.java
def test_the_files_load_strictly_in_uima_java_with_the_written_type_system(
    tmp_path: Path,
) -> None:
    if not uima_java.java_available() or uima_java.find_uima_jar() is None:
        pytest.skip("java/javac or the Apache UIMA jar (libuima-core-java) is not installed")
    full = build_full_cas(T.load_typesystem())  # three views, mentions with fragments
    (tmp_path / "doc1.tree").write_text(PENN_TREES, encoding="utf-8")
    trees = cas_from_text(PENN_TEXT, doc_id="doc1")
    run_component("penn.import.v1", trees, view="gold", path=str(tmp_path / "{doc_id}.tree"))
    paths = [
        write(full, tmp_path, doc_id="full"),
        write(full, tmp_path, doc_id="gold", view="gold"),
        write(trees, tmp_path, doc_id="trees", view="gold"),
    ]
    typesystem = tmp_path / "xmi-dkpro" / "TypeSystem.xml"
    build = tmp_path / "build"
    uima_java.compile_checker(build)
    reports = uima_java.java_cas_reports(typesystem, paths, spans=True, build_dir=build)
    for path in paths:
        cassis_report = uima_java.cassis_cas_report(path, typesystem, spans=True)
        assert uima_java.compare_reports(reports[path], cassis_report) == [], path
    tree_counts = reports[paths[2]].indexed_counts["_InitialView"]
    assert tree_counts[T.CONSTITUENT_ROOT] == 2 and T.TREEBANK_CONSTITUENT not in tree_counts
