"""spaCy Doc -> CAS conversion (casflow.components.spacy.mapping).

Docs are built by hand (``Doc(vocab, words, spaces, heads, deps, ...)``) so every
expectation is exact; the pipeline tests run the same code on a trained model.
"""

from __future__ import annotations

import cassis
import pytest
import spacy
from spacy.tokens import Doc, Span

from casflow.components.layers import EntityTarget, add_annotations, produced_types
from casflow.components.spacy.mapping import DocMapper
from casflow.typesystem import (
    ANATOMY_MENTION,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    GENE_MENTION,
    LEMMA,
    NAMED_ENTITY,
    POS,
    SENTENCE,
    TOKEN,
    load_typesystem,
)

ALL = ["sentences", "tokens", "pos", "lemma", "dependencies", "entities"]


@pytest.fixture(scope="module")
def nlp() -> spacy.language.Language:
    return spacy.blank("en")


def new_view(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def spans(view: cassis.Cas, type_name: str) -> list[tuple[int, int]]:
    return [(a.begin, a.end) for a in view.select(type_name)]


def exact_type(view: cassis.Cas, type_name: str) -> list:
    return [a for a in view.select(type_name) if a.type.name == type_name]


@pytest.mark.parametrize(
    "text",
    [
        "Plain ASCII text.  Two spaces,\n\nand a blank line.\n",
        "  Leading space, café and naïve, then\ttab.",
        "Non-BMP: 😀 binds 𝛼-actin in 𝔼. coli (𠀀 CJK).",
        "\n\n\n",
    ],
)
def test_tokens_are_never_whitespace_and_offsets_are_exact(nlp, text: str) -> None:
    doc = nlp.make_doc(text)
    view = new_view(text)
    DocMapper(view.typesystem, ["tokens"]).add_doc(view, doc)
    tokens = view.select(TOKEN)
    expected = [(t.idx, t.idx + len(t)) for t in doc if not t.is_space]
    assert spans(view, TOKEN) == expected
    for token in tokens:
        covered = text[token.begin : token.end]
        assert covered and covered == covered.strip()
    # Python str offsets are code points, so non-BMP characters count once (as in cassis).
    if "😀" in text:
        smiley = next(t for t in tokens if t.get_covered_text() == "😀")
        assert smiley.end - smiley.begin == 1


def test_offset_shifts_a_chunk_into_place(nlp) -> None:
    text = "Title\n\nBRCA2 binds 😀 RAD51."
    start = text.index("BRCA2")
    doc = nlp.make_doc(text[start:])
    view = new_view(text)
    DocMapper(view.typesystem, ["tokens"]).add_doc(view, doc, offset=start)
    assert [t.get_covered_text() for t in view.select(TOKEN)] == [t.text for t in doc]
    assert view.select(TOKEN)[0].begin == start


def parsed_doc(nlp, root_label: str = "ROOT") -> Doc:
    # "BRCA2 binds RAD51 .\n\nIt works ." -- two sentences, whitespace token between.
    words = ["BRCA2", "binds", "RAD51", ".", "\n\n", "It", "works", "."]
    spaces = [True, True, False, False, False, True, False, False]
    heads = [1, 1, 1, 1, 3, 6, 6, 6]
    deps = ["nsubj", root_label, "dobj", "punct", "dep", "nsubj", root_label, "punct"]
    tags = ["NN", "VBZ", "NN", ".", "_SP", "PRP", "VBZ", "."]
    pos = ["NOUN", "VERB", "NOUN", "PUNCT", "SPACE", "PRON", "VERB", "PUNCT"]
    lemmas = ["brca2", "bind", "rad51", ".", "\n\n", "it", "work", "."]
    return Doc(
        nlp.vocab,
        words=words,
        spaces=spaces,
        heads=heads,
        deps=deps,
        tags=tags,
        pos=pos,
        lemmas=lemmas,
    )


@pytest.mark.parametrize("root_label", ["ROOT", "root"])
def test_roots_follow_the_dkpro_convention(nlp, root_label: str) -> None:
    doc = parsed_doc(nlp, root_label)
    view = new_view(doc.text)
    DocMapper(view.typesystem, ALL).add_doc(view, doc)
    roots = view.select(DEPENDENCY_ROOT)
    assert [r.Dependent.get_covered_text() for r in roots] == ["binds", "works"]
    for root in roots:
        assert root.Governor is root.Dependent
        assert root.DependencyType == "ROOT"
        assert root.flavor == "basic"
        assert (root.begin, root.end) == (root.Dependent.begin, root.Dependent.end)
    deps = exact_type(view, DEPENDENCY)
    assert sorted(
        (d.Governor.get_covered_text(), d.Dependent.get_covered_text(), d.DependencyType)
        for d in deps
    ) == sorted(
        [
            ("binds", "BRCA2", "nsubj"),
            ("binds", "RAD51", "dobj"),
            ("binds", ".", "punct"),
            ("works", "It", "nsubj"),
            ("works", ".", "punct"),
        ]
    )
    assert all(d.flavor == "basic" and d.Dependent.begin == d.begin for d in deps)
    # Every non-whitespace token is the dependent of exactly one relation.
    assert len(deps) + len(roots) == len(view.select(TOKEN)) == 7


def test_pos_and_lemma_are_linked_from_tokens(nlp) -> None:
    doc = parsed_doc(nlp)
    view = new_view(doc.text)
    DocMapper(view.typesystem, ALL).add_doc(view, doc)
    token = view.select(TOKEN)[1]
    assert token.get_covered_text() == "binds"
    assert (token.pos.PosValue, token.pos.coarseValue) == ("VBZ", "VERB")
    assert token.lemma.value == "bind"
    assert (
        (token.pos.begin, token.pos.end)
        == (token.lemma.begin, token.lemma.end)
        == (
            token.begin,
            token.end,
        )
    )
    # The whitespace token has no POS or Lemma either.
    assert len(view.select(POS)) == len(view.select(LEMMA)) == 7


def test_sentences_are_trimmed_of_whitespace_tokens(nlp) -> None:
    doc = parsed_doc(nlp)
    view = new_view(doc.text)
    DocMapper(view.typesystem, ["sentences"]).add_doc(view, doc)
    assert [s.get_covered_text() for s in view.select(SENTENCE)] == [
        "BRCA2 binds RAD51.",
        "It works.",
    ]
    assert view.select(TOKEN) == []  # layers not asked for are not written


def test_dependent_of_a_whitespace_token_goes_to_its_nearest_real_ancestor(nlp) -> None:
    # "A\n\nB C": B's head is the whitespace token, whose head is C (the root).
    words = ["A", "\n\n", "B", "C"]
    doc = Doc(
        nlp.vocab,
        words=words,
        spaces=[False, False, True, False],
        heads=[3, 3, 1, 3],
        deps=["nsubj", "dep", "amod", "ROOT"],
    )
    view = new_view(doc.text)
    DocMapper(view.typesystem, ["tokens", "dependencies"]).add_doc(view, doc)
    relations = {
        d.Dependent.get_covered_text(): (d.Governor.get_covered_text(), d.DependencyType)
        for d in view.select(DEPENDENCY)
    }
    assert relations == {"A": ("C", "nsubj"), "B": ("C", "amod"), "C": ("C", "ROOT")}


def test_whitespace_root_hands_its_place_to_its_first_real_dependent(nlp) -> None:
    # The parser made "\n\n" the root; "A" and "B" hang from it, "C" from "B".
    doc = Doc(
        nlp.vocab,
        words=["\n\n", "A", "B", "C"],
        spaces=[False, True, True, False],
        heads=[0, 0, 0, 2],
        deps=["ROOT", "dep", "pobj", "amod"],
    )
    view = new_view(doc.text)
    DocMapper(view.typesystem, ["tokens", "dependencies"]).add_doc(view, doc)
    roots = view.select(DEPENDENCY_ROOT)
    assert [r.Dependent.get_covered_text() for r in roots] == ["A"]
    relations = {
        d.Dependent.get_covered_text(): (d.Governor.get_covered_text(), d.DependencyType)
        for d in exact_type(view, DEPENDENCY)
    }
    assert relations == {"B": ("A", "pobj"), "C": ("B", "amod")}


def entity_doc(nlp) -> Doc:
    doc = nlp.make_doc("BRCA2 in liver cells causes cancer.")
    doc.ents = [
        Span(doc, 0, 1, label="GENE"),
        Span(doc, 2, 4, label="ANATOMY"),
        Span(doc, 5, 6, label="DISEASE"),
    ]
    return doc


def test_entities_are_mapped_to_casflow_mention_types(nlp) -> None:
    doc = entity_doc(nlp)
    view = new_view(doc.text)
    mapping = {
        "GENE": EntityTarget(type="gene"),
        "ANATOMY": EntityTarget(type="anatomy", value="Multi-tissue_structure"),
    }
    DocMapper(view.typesystem, ["entities"], mapping, "named_entity").add_doc(view, doc)
    genes = view.select(GENE_MENTION)
    anatomy = view.select(ANATOMY_MENTION)
    plain = exact_type(view, NAMED_ENTITY)
    assert [(g.get_covered_text(), g.value) for g in genes] == [("BRCA2", "GENE")]
    assert [(a.get_covered_text(), a.value) for a in anatomy] == [
        ("liver cells", "Multi-tissue_structure")
    ]
    assert [(e.get_covered_text(), e.value) for e in plain] == [("cancer", "DISEASE")]


def test_unmapped_entities_can_be_dropped(nlp) -> None:
    doc = entity_doc(nlp)
    view = new_view(doc.text)
    mapping = {"GENE": EntityTarget(type="gene")}
    DocMapper(view.typesystem, ["entities"], mapping, "drop").add_doc(view, doc)
    assert [e.type.name for e in view.select(NAMED_ENTITY)] == [GENE_MENTION]


def test_existing_tokens_get_pos_and_no_new_tokens(nlp) -> None:
    doc = parsed_doc(nlp)
    view = new_view(doc.text)
    token_type = view.typesystem.get_type(TOKEN)
    existing = [None if t.is_space else token_type(begin=t.idx, end=t.idx + len(t)) for t in doc]
    view.add_all([t for t in existing if t is not None])
    DocMapper(view.typesystem, ["pos", "lemma", "dependencies"]).add_doc(
        view, doc, existing_tokens=existing
    )
    tokens = view.select(TOKEN)
    assert tokens == [t for t in existing if t is not None]
    assert all(t.pos is not None and t.lemma is not None for t in tokens)
    assert {d.Dependent.xmiID for d in view.select(DEPENDENCY)} == {t.xmiID for t in tokens}


def test_produced_types_follow_layers_and_mapping() -> None:
    mapping = {"GENE": EntityTarget(type="gene")}
    assert produced_types(["tokens", "pos"], mapping, "drop") == (TOKEN, POS, f"{TOKEN}:pos")
    assert produced_types(["entities"], mapping, "drop") == (GENE_MENTION,)
    assert produced_types(["entities"], mapping, "named_entity") == (GENE_MENTION, NAMED_ENTITY)
    assert produced_types(["dependencies"], {}, "drop") == (DEPENDENCY, DEPENDENCY_ROOT)
    assert produced_types(["entities"], {}, "drop") == ()


def test_unknown_layer_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown layers"):
        DocMapper(load_typesystem(), ["tokens", "chunks"])


def test_bulk_add_gives_the_same_cas_as_add_all(nlp) -> None:
    text = "BRCA2 binds RAD51."
    views = []
    for add in (cassis.Cas.add_all, add_annotations):
        view = new_view(text)
        ts = view.typesystem
        # Something already indexed, so the bulk insert merges with it.
        view.add(ts.get_type(SENTENCE)(begin=0, end=len(text)))
        pos = [ts.get_type(POS)(begin=b, end=e, PosValue="NN") for b, e in [(6, 11), (0, 5)]]
        tokens = [ts.get_type(TOKEN)(begin=p.begin, end=p.end, pos=p) for p in pos]
        sentence = ts.get_type(SENTENCE)(begin=0, end=len(text))  # same span as the first
        add(view, [*pos, *tokens, sentence])
        views.append(view)
    assert views[0].to_xmi() == views[1].to_xmi()
    assert [(t.begin, t.pos.begin) for t in views[1].select(TOKEN)] == [(0, 0), (6, 6)]
    assert len(views[1].select(SENTENCE)) == 2
