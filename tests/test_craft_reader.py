"""craft.reader.v1: the hand-written fixture under tests/fixtures/craft and the real CRAFT."""

from __future__ import annotations

import os
import re
import shutil
import textwrap
import warnings
from pathlib import Path
from typing import Any

import cassis
import pytest
from lxml import etree
from pydantic import ValidationError

import casflow.typesystem as T
from casflow.components.corpora.craft import (
    CraftAlignmentError,
    CraftDataError,
    CraftDataWarning,
    CraftReader,
    CraftReaderConfig,
    descendants,
)
from casflow.components.formats.conllu.parse import read_conllu
from casflow.components.formats.obo import is_a_parents, read_obo
from casflow.components.formats.penn.parse import format_tree, leaves, parse_tree, read_trees
from casflow.pipeline.component import DocumentRef, RunContext
from casflow.typesystem import load_typesystem

FIXTURE = Path(__file__).parent / "fixtures" / "craft"
PMID = "90000001"
ONTOLOGIES = ("PR", "SO", "UBERON", "CL", "GO_CC", "NCBITaxon", "CHEBI")


def make_reader(corpus: Path = FIXTURE, **config: Any) -> CraftReader:
    return CraftReader(
        CraftReaderConfig(corpus=str(corpus), **config), RunContext(output_dir=Path("unused"))
    )


def load(corpus: Path = FIXTURE, pmid: str = PMID, **config: Any) -> cassis.Cas:
    reader = make_reader(corpus, **config)
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(DocumentRef(pmid, str(reader.paths.text(pmid))), cas)
    return cas


@pytest.fixture(scope="module")
def cas() -> cassis.Cas:
    return load()


@pytest.fixture
def corpus_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "craft"))


def texts(annotations: Any) -> list[str]:
    return [a.get_covered_text() for a in annotations]


def sentence_tokens(cas: cassis.Cas, number: int) -> list[Any]:
    return cas.select_covered(T.TOKEN, cas.select(T.SENTENCE)[number])


# ----------------------------------------------------------------------------- text, tokens


def test_text_is_the_article_file_and_metadata_names_the_pmid(cas: cassis.Cas) -> None:
    assert cas.sofa_string == (FIXTURE / "articles" / "txt" / f"{PMID}.txt").read_text("utf-8")
    meta = cas.select(T.DOCUMENT_METADATA)[0]
    assert meta.documentId == PMID
    assert meta.documentTitle == "Brca2 regulates cell growth in mice"


def test_ptb_escapes_align_to_the_raw_characters(cas: cassis.Cas) -> None:
    quoted = sentence_tokens(cas, 5)
    assert texts(quoted) == [
        "The", '"', "Brca2", '"', "gene", "(", "breast", "cancer", "2", ")",
        "binds", "the", "Rad51", "domain", "[", "1", "]", ".",
    ]  # fmt: skip
    assert [t.pos.PosValue for t in quoted[:6]] == ["DT", "``", "NN", "''", "NN", "-LRB-"]
    braces = sentence_tokens(cas, 6)
    assert texts(braces)[2:5] == ["{", "often", "}"]
    assert [t.pos.PosValue for t in braces[2:5]] == ["-LRB-", "RB", "-RRB-"]


def test_every_non_empty_leaf_is_one_token_and_no_token_covers_space(cas: cassis.Cas) -> None:
    trees = read_trees(FIXTURE / "structural-annotation" / "treebank" / "penn" / f"{PMID}.tree")
    words = [w for tree in trees for w, tag in leaves(tree) if tag != "-NONE-"]
    tokens = cas.select(T.TOKEN)
    assert len(tokens) == len(words)
    assert all(
        t.get_covered_text() and t.get_covered_text() == t.get_covered_text().strip()
        for t in tokens
    )
    assert [len(sentence_tokens(cas, i)) for i in range(len(trees))] == [
        sum(tag != "-NONE-" for _, tag in leaves(tree)) for tree in trees
    ]


def test_conllu_gives_lemma_and_upos_on_the_treebank_tokens(cas: cassis.Cas) -> None:
    mice = next(t for t in cas.select(T.TOKEN) if t.get_covered_text() == "mice")
    assert (mice.lemma.value, mice.pos.PosValue, mice.pos.coarseValue) == ("mouse", "NNS", "NOUN")
    assert (mice.lemma.begin, mice.lemma.end) == (mice.begin, mice.end)
    assert len(cas.select(T.LEMMA)) == len(cas.select(T.TOKEN))


# ----------------------------------------------------------------------------- trees


def bracketed(node: Any) -> str:
    """The tree a CAS constituent describes, written like the treebank (words unescaped)."""
    if node.type.name == T.TOKEN:
        return f"({node.pos.PosValue} {node.get_covered_text()})"
    if node.type.name == T.EMPTY_CATEGORY:
        return f"(-NONE- {node.value})"
    for child in node.children.elements:
        assert child.parent is node
    inner = " ".join(bracketed(child) for child in node.children.elements)
    if node.type.name == T.CONSTITUENT_ROOT:
        return f"( {inner} )"
    return f"({node.originalLabel} {inner})"


RAW = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "``": '"', "''": '"'}


def unescaped(tree_line: str) -> str:
    tree = parse_tree(tree_line)
    for leaf in tree.preterminals():
        if leaf.label != "-NONE-":
            leaf.word = RAW.get(leaf.word, leaf.word)
    return format_tree(tree)


def test_constituents_rebuild_every_tree_with_parent_links(cas: cassis.Cas) -> None:
    lines = (FIXTURE / "structural-annotation" / "treebank" / "penn" / f"{PMID}.tree").read_text()
    lines = [line for line in lines.split("\n") if line.strip()]
    roots = cas.select(T.CONSTITUENT_ROOT)
    assert len(roots) == len(lines)
    for root, line in zip(sorted(roots, key=lambda r: r.begin), lines, strict=True):
        assert root.constituentType == "ROOT" and root.parent is None
        assert bracketed(root) == unescaped(line)
        (penn_tree,) = cas.select_covered(T.PENN_TREE, root)
        assert penn_tree.PennTree == line
    # DKPro ROOT and TreebankConstituent are distinct subtypes of Constituent.
    assert not any(c.type.name == T.CONSTITUENT_ROOT for c in cas.select(T.TREEBANK_CONSTITUENT))


def test_constituent_features_and_spans(cas: cassis.Cas) -> None:
    subject = next(c for c in cas.select(T.TREEBANK_CONSTITUENT) if c.originalLabel == "NP-SBJ-1")
    assert (subject.constituentType, subject.syntacticFunction, subject.coindex) == (
        "NP",
        "SBJ",
        "1",
    )
    assert subject.get_covered_text() == "It" and subject.gapIndex is None
    locations = [c for c in cas.select(T.TREEBANK_CONSTITUENT) if c.originalLabel == "PP-LOC"]
    assert texts(locations) == ["in mice", "in liver and kidney cells"]
    token = next(t for t in cas.select(T.TOKEN) if t.get_covered_text() == "kidney")
    assert (
        token.parent.constituentType == "NP" and token.parent.get_covered_text() == "kidney cells"
    )


def test_none_elements_are_zero_width_empty_categories_not_tokens(cas: cassis.Cas) -> None:
    (empty,) = cas.select(T.EMPTY_CATEGORY)
    following = next(t for t in sentence_tokens(cas, 6) if t.get_covered_text() == "in")
    assert (empty.value, empty.begin, empty.end) == ("*-1", following.begin, following.begin)
    trace_np = empty.parent
    assert trace_np.constituentType == "NP" and trace_np.begin == trace_np.end == empty.begin
    assert trace_np.parent.get_covered_text() == "expressed in liver and kidney cells"
    assert "*-1" not in texts(cas.select(T.TOKEN))


# ----------------------------------------------------------------------------- dependencies


def test_dependencies_use_the_treebank_tokens_and_the_dkpro_root(cas: cassis.Cas) -> None:
    tokens = cas.select(T.TOKEN)
    dependencies = cas.select(T.DEPENDENCY)
    assert len(dependencies) == len(tokens)
    token_ids = {t.xmiID for t in tokens}
    assert all(
        d.Dependent.xmiID in token_ids and d.Governor.xmiID in token_ids for d in dependencies
    )
    roots = cas.select(T.DEPENDENCY_ROOT)
    assert len(roots) == len(cas.select(T.SENTENCE))
    for root in roots:
        assert root.Governor is root.Dependent
        assert (root.DependencyType, root.flavor) == ("ROOT", "basic")
        assert (root.begin, root.end) == (root.Dependent.begin, root.Dependent.end)
    others = [d for d in dependencies if d.type.name != T.DEPENDENCY_ROOT]
    assert all(d.Governor is not d.Dependent and d.flavor == "basic" for d in others)
    gene = next(d for d in others if d.Dependent.get_covered_text() == "gene")
    assert (gene.Governor.get_covered_text(), gene.DependencyType) == ("binds", "nsubj")


# ----------------------------------------------------------------------------- structure


def test_sections_titles_captions_headings_paragraphs(cas: cassis.Cas) -> None:
    assert texts(cas.select(T.TITLE)) == ["Brca2 regulates cell growth in mice"]
    assert texts(cas.select(T.ABSTRACT)) == ["Abstract\n\nBrca2 binds Rad51."]
    (section,) = cas.select(T.SECTION)
    assert (section.sectionType, section.depth) == ("Background", 1)
    assert section.get_covered_text().startswith("Background\n\nExpression\n\nThe")
    (caption,) = cas.select(T.CAPTION)
    assert (caption.captionOf, caption.label) == ("figure", "Figure 1")
    assert caption.get_covered_text() == "Figure 1\n\nBrca2 expression in liver."
    headings = [(h.get_covered_text(), h.depth) for h in cas.select(T.HEADING)]
    assert headings == [("Abstract", 1), ("Background", 1), ("Expression", 2)]
    assert texts(cas.select(T.PARAGRAPH)) == [
        "Brca2 binds Rad51.",
        'The "Brca2" gene (breast cancer 2) binds the Rad51 domain [1]. '
        "It is {often} expressed in liver and kidney cells.",
        "Brca2 expression in liver.",
    ]
    styles = [(t.style, t.get_covered_text()) for t in cas.select(T.TYPOGRAPHY)]
    assert styles == [("italic", "Brca2"), ("italic", "Brca2"), ("sup", "1"), ("bold", "Figure 1")]


# ----------------------------------------------------------------------------- concepts


def test_mention_types_ids_and_values(cas: cassis.Cas) -> None:
    by_ontology: dict[str, list[Any]] = {}
    for mention in cas.select(T.CONCEPT_MENTION):
        by_ontology.setdefault(mention.ontology, []).append(mention)
    assert sorted(by_ontology) == ["CL", "PR", "SO", "UBERON"]  # GO_CC: an empty file
    assert {m.type.name for m in by_ontology["PR"]} == {T.GENE_MENTION}
    assert len(by_ontology["PR"]) == 6
    so = {m.get_covered_text(): m for m in by_ontology["SO"]}
    assert (so["gene"].type.name, so["gene"].identifier) == (T.GENE_MENTION, "SO:0000704")
    assert (so["domain"].type.name, so["domain"].identifier) == (T.CONCEPT_MENTION, "SO:0000417")
    anatomy = by_ontology["UBERON"] + by_ontology["CL"]
    assert {m.type.name for m in anatomy} == {T.ANATOMY_MENTION}
    assert all(m.value == m.ontology for m in cas.select(T.CONCEPT_MENTION))


def test_mention_values_and_gene_so_classes_are_configurable() -> None:
    cas = load(
        layers=["concepts"],
        mention_values={"PR": "GENE"},
        gene_so_classes=["SO:0000417"],
        gene_so_descendants=False,
    )
    so = {
        m.get_covered_text(): m.type.name
        for m in cas.select(T.CONCEPT_MENTION)
        if m.ontology == "SO"
    }
    assert so == {"gene": T.CONCEPT_MENTION, "domain": T.GENE_MENTION}
    assert {m.value for m in cas.select(T.CONCEPT_MENTION) if m.ontology == "PR"} == {"GENE"}


def test_discontinuous_mention_has_fragments_in_text_order(cas: cassis.Cas) -> None:
    (hepatocyte,) = [m for m in cas.select(T.CONCEPT_MENTION) if m.identifier == "CL:0000182"]
    assert hepatocyte.get_covered_text() == "liver and kidney cells"
    pieces = hepatocyte.fragments.elements
    assert texts(pieces) == ["liver", "cells"]
    assert all(p.type.name == T.FRAGMENT for p in pieces)
    assert len(cas.select(T.FRAGMENT)) == 2  # the pieces are indexed too
    contiguous = [m for m in cas.select(T.CONCEPT_MENTION) if m is not hepatocyte]
    assert all(m.fragments is None for m in contiguous)


def test_so_closure_follows_is_a_and_skips_obsolete_terms() -> None:
    parents = is_a_parents(read_obo(FIXTURE / "concept-annotation" / "SO" / "SO" / "SO.obo"))
    assert descendants(parents, ["SO:0000704", "SO:0000673"]) == {
        "SO:0000704", "SO:0000902", "SO:0000363", "SO:0000673", "SO:0000234",
    }  # fmt: skip


# ----------------------------------------------------------------------------- bad input


def replace_in(path: Path, old: str, new: str) -> None:
    content = path.read_text("utf-8")
    assert old in content
    path.write_text(content.replace(old, new, 1), "utf-8")


def test_misaligned_tree_token_names_article_sentence_and_token(corpus_copy: Path) -> None:
    tree = corpus_copy / "structural-annotation" / "treebank" / "penn" / f"{PMID}.tree"
    replace_in(tree, "(NN kidney)", "(NN kidnee)")
    with pytest.raises(CraftAlignmentError) as info:
        load(corpus_copy, layers=["tokens"])
    message = str(info.value)
    assert "article 90000001" in message and "sentence 7" in message and "'kidnee'" in message
    assert "'kidney cells." in message  # what the text has there


def test_text_missing_from_the_treebank_is_an_error(corpus_copy: Path) -> None:
    text = corpus_copy / "articles" / "txt" / f"{PMID}.txt"
    text.write_text(text.read_text("utf-8") + "\n\nAn extra sentence.", "utf-8")
    with pytest.raises(CraftAlignmentError, match="'An extra sentence.'"):
        load(corpus_copy, layers=["sentences"])


def test_conllu_word_that_differs_from_the_treebank_is_an_error(corpus_copy: Path) -> None:
    conllu = corpus_copy / "structural-annotation" / "dependency" / "conllu" / f"{PMID}.conllu"
    replace_in(conllu, "13\tRad51\trad51", "13\tRad52\trad51")
    with pytest.raises(CraftAlignmentError, match=r"sentence 6, word 13 'Rad52'.*'Rad51'"):
        load(corpus_copy, layers=["dependencies"])


def test_conllu_with_a_missing_word_is_an_error(corpus_copy: Path) -> None:
    conllu = corpus_copy / "structural-annotation" / "dependency" / "conllu" / f"{PMID}.conllu"
    replace_in(conllu, "2\t1\t1\tNUM\tCD\t_\t1\tnummod\t_\t_\n", "")
    with pytest.raises(CraftAlignmentError, match="sentence 8 has 1 words .* but 2 tokens"):
        load(corpus_copy, layers=["lemmas"])


def test_a_truncated_conllu_file_is_a_craft_data_error(corpus_copy: Path) -> None:
    conllu = corpus_copy / "structural-annotation" / "dependency" / "conllu" / f"{PMID}.conllu"
    data = conllu.read_text("utf-8")
    conllu.write_text(data[: data.index("\tRad51\t") + 3], "utf-8")  # cut inside a line
    with pytest.raises(CraftDataError, match=rf"article {PMID}: .*{PMID}.conllu:\d+: .*columns"):
        load(corpus_copy, layers=["dependencies"])


def test_concept_offsets_outside_the_text_fail(corpus_copy: Path) -> None:
    xml = corpus_copy / "concept-annotation" / "UBERON" / "UBERON" / "knowtator"
    replace_in(xml / f"{PMID}.txt.knowtator.xml", 'end="186"', 'end="9186"')
    with pytest.raises(CraftDataError, match=r"\(181, 9186\) lies outside the article text"):
        load(corpus_copy, layers=["concepts"])


def test_spanned_text_mismatch_warns_and_keeps_the_mention(corpus_copy: Path) -> None:
    xml = (
        corpus_copy / "concept-annotation" / "CL" / "CL" / "knowtator" / f"{PMID}.txt.knowtator.xml"
    )
    replace_in(
        xml, "<spannedText>liver ... cells</spannedText>", "<spannedText>liver cells</spannedText>"
    )
    with pytest.warns(CraftDataWarning, match="1 mention"):
        cas = load(corpus_copy, layers=["concepts"], ontologies=["CL"])
    assert len(cas.select(T.ANATOMY_MENTION)) == 2


def pr_file(corpus: Path) -> Path:
    return corpus / "concept-annotation" / "PR" / "PR" / "knowtator" / f"{PMID}.txt.knowtator.xml"


def sections_file(corpus: Path) -> Path:
    folder = corpus / "structural-annotation" / "sections-and-typography" / "knowtator"
    return folder / f"{PMID}.txt.knowtator.xml"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: "\ufeff" + t, "starts with a byte-order mark"),
        (lambda t: t.replace("\n", "\r\n"), r"carriage return \(CR\) on line 1"),
    ],
)
def test_a_text_not_as_distributed_fails_before_any_offset_is_used(
    corpus_copy: Path, change: Any, message: str
) -> None:
    # a converted copy would shift every span by one character per line (or one in all)
    text = corpus_copy / "articles" / "txt" / f"{PMID}.txt"
    text.write_bytes(change(text.read_text("utf-8")).encode("utf-8"))
    with pytest.raises(CraftDataError, match=message):
        load(corpus_copy, layers=["concepts"], ontologies=["PR"])


def test_a_knowtator_file_of_another_article_fails(corpus_copy: Path) -> None:
    replace_in(pr_file(corpus_copy), 'textSource="90000001.txt"', 'textSource="17244351.txt"')
    with pytest.raises(CraftDataError, match="annotates '17244351.txt'.*not article 90000001"):
        load(corpus_copy, layers=["concepts"], ontologies=["PR"])


def test_a_file_whose_spans_mostly_mismatch_fails_naming_it(corpus_copy: Path) -> None:
    # every PR span shifted by one: each reads as "a mismatch", but the file is wrong
    xml = pr_file(corpus_copy)
    content = xml.read_text("utf-8")
    shifted = re.sub(
        r'start="(\d+)" end="(\d+)"',
        lambda m: f'start="{int(m[1]) + 1}" end="{int(m[2]) + 1}"',
        content,
    )
    xml.write_text(shifted, "utf-8")
    with pytest.raises(CraftDataError, match=rf"{xml}: 6 of 6 mention\(s\) have a spannedText"):
        load(corpus_copy, layers=["concepts"], ontologies=["PR"])


def test_structure_spans_are_checked_against_spanned_text(corpus_copy: Path) -> None:
    xml = sections_file(corpus_copy)
    replace_in(
        xml,
        "<spannedText>Brca2 regulates cell growth in mice</spannedText>",
        "<spannedText>Brca2 regulates cell growth in rats</spannedText>",
    )
    with pytest.warns(CraftDataWarning, match=rf"{xml}: 1 annotation\(s\) whose spannedText"):
        load(corpus_copy, layers=["structure"])
    content = xml.read_text("utf-8")
    xml.write_text(
        re.sub(r"<spannedText>[^<]*</spannedText>", "<spannedText>x</spannedText>", content),
        "utf-8",
    )
    with pytest.raises(CraftDataError, match=r"8 of 8 annotation\(s\) have a spannedText"):
        load(corpus_copy, layers=["structure"])


def test_a_repeated_annotation_is_read_once_with_a_warning(corpus_copy: Path) -> None:
    xml = pr_file(corpus_copy)
    content = xml.read_text("utf-8")
    first = content[content.index("  <annotation>") : content.index("</annotation>") + 14]
    replace_in(xml, first, first + "\n" + first)
    with pytest.warns(CraftDataWarning, match="1 annotation\\(s\\) repeat an earlier one"):
        cas = load(corpus_copy, layers=["concepts"], ontologies=["PR"])
    assert len(cas.select(T.GENE_MENTION)) == 6


def test_span_errors_give_the_file_line_and_say_what_is_wrong(corpus_copy: Path) -> None:
    replace_in(pr_file(corpus_copy), 'start="0" end="5"', 'start="5" end="0"')
    with pytest.raises(
        CraftDataError, match=r"knowtator.xml:3 \(PR:\d+\): span \(5, 0\) is inverted"
    ):
        load(corpus_copy, layers=["concepts"], ontologies=["PR"])
    xml = sections_file(corpus_copy)
    replace_in(xml, 'end="35"', 'end="9999"')
    with pytest.raises(
        CraftDataError,
        match=r"sections-and-typography/knowtator/90000001\.txt\.knowtator\.xml:\d+ ",
    ):
        load(corpus_copy, layers=["structure"])


# ----------------------------------------------------------------------------- configuration


def test_layers_limit_what_is_read_and_declared() -> None:
    cas = load(layers=["concepts"], ontologies=["PR"])
    assert not cas.select(T.TOKEN) and len(cas.select(T.GENE_MENTION)) == 6
    _, produces = CraftReader.requirements(
        CraftReaderConfig(layers=["dependencies"], ontologies=[])
    )
    assert set(produces) == {T.TOKEN, T.DEPENDENCY, T.DEPENDENCY_ROOT}
    _, produces = CraftReader.requirements(
        CraftReaderConfig(layers=["concepts"], ontologies=["CL"])
    )
    assert set(produces) == {T.CONCEPT_MENTION, T.FRAGMENT, T.ANATOMY_MENTION}
    cas = load(layers=["dependencies"])  # tokens come along, sentences do not
    assert cas.select(T.TOKEN) and cas.select(T.DEPENDENCY) and not cas.select(T.SENTENCE)


def test_config_is_strict() -> None:
    with pytest.raises(ValidationError):
        CraftReaderConfig(layer=["tokens"])
    with pytest.raises(ValidationError):
        CraftReaderConfig(layers=["tokenz"])
    with pytest.raises(ValidationError, match="more than once"):
        CraftReaderConfig(ids=["1", "1"])
    with pytest.raises(ValidationError, match="not an SO class id"):
        CraftReaderConfig(gene_so_classes=["gene"])
    with pytest.raises(ValidationError, match="annotation sets listed more than once: PR"):
        CraftReaderConfig(ontologies=["PR", "PR"])
    with pytest.raises(ValidationError, match="unknown mention_values key 'pr' .did you mean 'PR'"):
        CraftReaderConfig(mention_values={"pr": "GENE"})
    with pytest.raises(
        ValidationError, match="unknown mention_values key 'PRX' .did you mean 'PR'"
    ):
        CraftReaderConfig(mention_values={"PRX": "GENE"})


def test_a_missing_so_ontology_file_is_a_validation_error(tmp_path: Path) -> None:
    config = CraftReaderConfig(corpus=str(FIXTURE), so_ontology=str(tmp_path / "SO.obo"))
    problems = CraftReader.check_config(config, RunContext(output_dir=tmp_path))
    assert problems == [
        f"so_ontology {tmp_path / 'SO.obo'} does not exist; give the SO ontology (.obo or "
        ".obo.zip) or leave so_ontology out to use the corpus's"
    ]


def test_splits_and_ids_choose_the_documents() -> None:
    assert [r.doc_id for r in make_reader(split="train").iter_documents()] == [PMID]
    assert [r.doc_id for r in make_reader(split="dev").iter_documents()] == []
    assert [r.doc_id for r in make_reader(ids=[PMID]).iter_documents()] == [PMID]


def test_check_config_reports_missing_folders_and_files(tmp_path: Path, corpus_copy: Path) -> None:
    context = RunContext(output_dir=tmp_path)
    problems = CraftReader.check_config(CraftReaderConfig(corpus=str(tmp_path / "nope")), context)
    assert len(problems) == 1 and "does not exist" in problems[0]
    assert CraftReader.check_config(CraftReaderConfig(corpus=str(corpus_copy)), context) == []
    problems = CraftReader.check_config(
        CraftReaderConfig(corpus=str(corpus_copy), ontologies=["CHEBI"]), context
    )
    assert len(problems) == 2 and "no CHEBI concept file" in problems[0]
    assert "give the layers [structure, sentences," in problems[1]
    (corpus_copy / "concept-annotation" / "SO" / "SO" / "SO.obo").unlink()
    problems = CraftReader.check_config(CraftReaderConfig(corpus=str(corpus_copy)), context)
    assert len(problems) == 1 and "gene_so_descendants" in problems[0]


# ----------------------------------------------------------------------------- other copies


def article_ids(reader: CraftReader) -> list[str]:
    return [ref.doc_id for ref in reader.iter_documents()]


def reads_tokens(reader: CraftReader, ref: DocumentRef) -> int:
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(ref, cas)
    return len(cas.select(T.TOKEN))


def test_a_copy_without_sections_and_typography_names_what_is_missing(
    tmp_path: Path, corpus_copy: Path
) -> None:
    # As the CRAFT test articles come: every layer but the sections-and-typography files.
    shutil.rmtree(corpus_copy / "structural-annotation" / "sections-and-typography")
    context = RunContext(output_dir=tmp_path)
    problems = CraftReader.check_config(CraftReaderConfig(corpus=str(corpus_copy)), context)
    assert len(problems) == 2, problems
    assert problems[0].startswith("1 of 1 article(s) have no sections-and-typography file")
    assert "needed by the layer(s) structure" in problems[0]
    assert problems[1].startswith(
        "the files that are there give the layers [sentences, tokens, pos, lemmas, "
        "constituents, dependencies, concepts] and the annotation sets [PR, SO, UBERON, CL, GO_CC]"
    )
    layers = ["sentences", "tokens", "pos", "lemmas", "constituents", "dependencies", "concepts"]
    config = CraftReaderConfig(corpus=str(corpus_copy), layers=layers)
    assert CraftReader.check_config(config, context) == []
    cas = cassis.Cas(typesystem=load_typesystem())
    reader = CraftReader(config, context)
    (ref,) = reader.iter_documents()
    reader.load(ref, cas)
    assert cas.select(T.DEPENDENCY) and cas.select(T.GENE_MENTION) and not cas.select(T.SECTION)
    assert len(cas.select(T.TOKEN)) == len(load().select(T.TOKEN))


def test_input_names_texts_in_a_craft_folder(tmp_path: Path, corpus_copy: Path) -> None:
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    text = corpus_copy / "articles" / "txt" / f"{PMID}.txt"
    (tmp_path / "list.txt").write_text(f"craft/articles/txt/{PMID}.txt\n")
    # a file, the txt folder, the CRAFT folder itself, a glob, an @list (relative to it)
    for given in (
        str(text),
        str(text.parent),
        str(corpus_copy),
        str(text.parent / "9*.txt"),
        f"@{tmp_path / 'list.txt'}",
        [str(text)],
    ):
        config = CraftReaderConfig(input=given)
        assert CraftReader.check_config(config, context) == [], given
        reader = CraftReader(config, context)
        (ref,) = reader.iter_documents()
        assert ref.doc_id == PMID and Path(ref.uri) == text
        assert reads_tokens(reader, ref) == len(load().select(T.TOKEN))


def test_input_reads_a_flat_folder_of_own_annotations_through_folders(tmp_path: Path) -> None:
    flat = tmp_path / "mine"
    flat.mkdir()
    for source in (
        FIXTURE / "articles" / "txt" / f"{PMID}.txt",
        FIXTURE / "structural-annotation" / "treebank" / "penn" / f"{PMID}.tree",
        FIXTURE / "structural-annotation" / "dependency" / "conllu" / f"{PMID}.conllu",
    ):
        shutil.copy(source, flat)
    context = RunContext(output_dir=tmp_path)
    config = CraftReaderConfig(input=str(flat), layers=["tokens", "dependencies", "concepts"])
    problems = CraftReader.check_config(config, context)
    assert problems[0].startswith(
        "no folder for the treebank, CoNLL-U, PR concept, SO concept, UBERON concept, "
        "CL concept, GO_CC concept files: the texts are not in a CRAFT folder"
    ), problems
    assert "give the layers [] (the text only)" in problems[1]
    config = CraftReaderConfig(
        input=str(flat),
        layers=["tokens", "dependencies"],
        folders={"treebank": str(flat), "conllu": str(flat)},
    )
    assert CraftReader.check_config(config, context) == []
    reader = CraftReader(config, context)
    (ref,) = reader.iter_documents()
    cas = cassis.Cas(typesystem=load_typesystem())
    reader.load(ref, cas)
    assert len(cas.select(T.DEPENDENCY)) == len(load().select(T.DEPENDENCY)) > 0


def test_ids_file_test_split_and_id_errors(tmp_path: Path, corpus_copy: Path) -> None:
    context = RunContext(output_dir=tmp_path, workflow_dir=tmp_path)
    (tmp_path / "ids.txt").write_text(f"# mine\n{PMID}\n")
    reader = CraftReader(CraftReaderConfig(corpus=str(corpus_copy), ids_file="ids.txt"), context)
    assert article_ids(reader) == [PMID]
    (corpus_copy / "articles" / "ids" / "craft-ids-test.txt").write_text(f"{PMID}\n")
    assert article_ids(make_reader(corpus_copy, split="test")) == [PMID]
    problems = CraftReader.check_config(
        CraftReaderConfig(corpus=str(FIXTURE), split="test"), context
    )
    assert problems == [
        f"the test id list {FIXTURE.resolve()}/articles/ids/craft-ids-test.txt does not exist; "
        "check 'corpus', or give 'ids', 'ids_file' or 'input'"
    ]
    problems = CraftReader.check_config(
        CraftReaderConfig(input=str(FIXTURE), ids=["12345"]), context
    )
    assert problems == ["ids not in the 'input' texts: 12345"]
    with pytest.raises(ValidationError, match="not both"):
        CraftReaderConfig(ids=[PMID], ids_file="ids.txt")
    with pytest.raises(
        ValidationError, match="unknown folder key 'tree' \\(did you mean 'treebank'\\?\\)"
    ):
        CraftReaderConfig(folders={"tree": "x"})


def test_workflow_reads_into_gold_view_and_writes_xmi(tmp_path: Path) -> None:
    from casflow.pipeline.runner import run_workflow
    from casflow.pipeline.workflow import load_workflow_text

    workflow = textwrap.dedent(
        f"""\
        reader:
          component: craft.reader.v1
          view: gold
          config: {{corpus: "{FIXTURE}", split: train}}
        writers: [{{component: xmi.writer.v1}}]
        run: {{output: "{tmp_path / "out"}", progress: false}}
        """
    )
    report = run_workflow(load_workflow_text(workflow, source="wf.yaml"))
    assert report.counts["ok"] == 1
    xmi = (tmp_path / "out" / "xmi" / f"{PMID}.xmi").read_text("utf-8")
    loaded = cassis.load_cas_from_xmi(xmi, typesystem=load_typesystem())
    gold = loaded.get_view("gold")
    original = load()
    assert gold.sofa_string == loaded.sofa_string == original.sofa_string
    for type_name in (
        T.TOKEN,
        T.SENTENCE,
        T.CONSTITUENT,
        T.DEPENDENCY,
        T.CONCEPT_MENTION,
        T.HEADING,
    ):
        assert len(gold.select(type_name)) == len(original.select(type_name)) > 0
    assert not loaded.select(T.TOKEN)  # the initial view has only the text
    (hepatocyte,) = [m for m in gold.select(T.ANATOMY_MENTION) if m.identifier == "CL:0000182"]
    assert texts(hepatocyte.fragments.elements) == ["liver", "cells"]
    root = gold.select(T.DEPENDENCY_ROOT)[0]
    assert root.Governor is root.Dependent


# ----------------------------------------------------------------------------- the real CRAFT


def corpus_articles(craft_dir: Path) -> list[str]:
    ids_dir = craft_dir / "articles" / "ids"
    ids = [
        line.strip()
        for split in ("train", "dev")
        for line in (ids_dir / f"craft-ids-{split}.txt").read_text().splitlines()
        if line.strip()
    ]
    if os.environ.get("CASFLOW_FULL_CORPUS_TESTS") == "1":
        return ids
    # The first train and dev articles, and the one with hair spaces inside tokens.
    return [ids[0], ids[-1], "17020410"]


@pytest.mark.corpus
def test_craft_splits(craft_dir: Path) -> None:
    train = [r.doc_id for r in make_reader(craft_dir, split="train").iter_documents()]
    dev = [r.doc_id for r in make_reader(craft_dir, split="dev").iter_documents()]
    everything = [r.doc_id for r in make_reader(craft_dir).iter_documents()]
    assert (len(train), len(dev)) == (60, 7) and everything == train + dev
    assert len(set(everything)) == 67


def knowtator_spanned_texts(path: Path) -> list[tuple[tuple[tuple[int, int], ...], str]]:
    root = etree.parse(str(path)).getroot()
    found = []
    for annotation in root.iter("annotation"):
        spans = tuple(
            sorted((int(s.get("start")), int(s.get("end"))) for s in annotation.iter("span"))
        )
        found.append((spans, annotation.findtext("spannedText")))
    return sorted(found)


@pytest.mark.corpus
@pytest.mark.slow
def test_craft_articles_load_with_all_layers_and_counts_agree(craft_dir: Path) -> None:
    reader = make_reader(craft_dir, ontologies=list(ONTOLOGIES))
    for pmid in corpus_articles(craft_dir):
        cas = cassis.Cas(typesystem=load_typesystem())
        with warnings.catch_warnings():
            warnings.simplefilter("error", CraftDataWarning)  # CRAFT v5 has no spannedText quirk
            reader.load(DocumentRef(pmid, str(reader.paths.text(pmid))), cas)
        trees = read_trees(reader.paths.tree(pmid))
        conllu = read_conllu(reader.paths.conllu(pmid))
        tokens = cas.select(T.TOKEN)
        assert len(cas.select(T.SENTENCE)) == len(trees) == len(conllu.sentences), pmid
        words = [w for tree in trees for w, tag in leaves(tree) if tag != "-NONE-"]
        assert len(tokens) == len(words) == len(cas.select(T.DEPENDENCY)), pmid
        forms = [w.form for s in conllu.sentences for w in s.words]
        assert texts(tokens) == forms, pmid
        assert (
            len(cas.select(T.CONSTITUENT_ROOT)) == len(cas.select(T.DEPENDENCY_ROOT)) == len(trees)
        )
        for ontology in ONTOLOGIES:
            mentions = [m for m in cas.select(T.CONCEPT_MENTION) if m.ontology == ontology]
            in_cas = sorted(
                (
                    tuple((p.begin, p.end) for p in m.fragments.elements)
                    if m.fragments
                    else ((m.begin, m.end),),
                    " ... ".join(
                        texts(m.fragments.elements) if m.fragments else [m.get_covered_text()]
                    ),
                )
                for m in mentions
            )
            assert in_cas == knowtator_spanned_texts(reader.paths.concepts(ontology, pmid)), (
                pmid,
                ontology,
            )
