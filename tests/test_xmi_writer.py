"""casflow.cas.xmi writes the bytes cassis's ``to_xmi()`` writes.

Every comparison builds the same CAS twice, serializes one with cassis and the
other with the fast path (``fast_xmi_text``, so a silent fallback cannot make a
test pass), and compares the bytes, the ids cassis gives feature structures
that had none, and a second serialization.
"""

from __future__ import annotations

import gc
import logging
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cassis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import casflow.typesystem as T
from casflow.cas import xmi as xmi_writer
from casflow.cas.sofa import set_sofa_text
from casflow.cas.xmi import XmiFastPathUnsupported, cas_to_xmi_bytes, fast_xmi_text
from casflow.components.corpora.craft import CraftReader, CraftReaderConfig
from casflow.components.formats.xmi.writer import XmiWriter, XmiWriterConfig
from casflow.pipeline.component import DocumentRef, RunContext
from tests.test_uima_java_interop import NON_BMP, build_edge_case_cas, build_full_cas

CRAFT_FIXTURE = Path(__file__).parent / "fixtures" / "craft"
FS_ARRAY = "uima.cas.FSArray"


def serialize_both(build: Callable[[], cassis.Cas]) -> tuple[bytes, bytes, cassis.Cas, cassis.Cas]:
    """(cassis bytes, fast bytes, cassis's CAS, fast path's CAS), warnings compared too."""
    with warnings.catch_warnings(record=True) as cassis_warnings:
        warnings.simplefilter("always")
        reference_cas = build()
        expected = reference_cas.to_xmi().encode("utf-8")
    with warnings.catch_warnings(record=True) as fast_warnings:
        warnings.simplefilter("always")
        cas = build()
        actual = fast_xmi_text(cas).encode("utf-8")
    assert [str(w.message) for w in fast_warnings] == [str(w.message) for w in cassis_warnings]
    return expected, actual, reference_cas, cas


def assert_identical(build: Callable[[], cassis.Cas], cassis_again: bool = True) -> bytes:
    expected, actual, reference_cas, cas = serialize_both(build)
    if actual != expected:
        at = next(i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b)
        at = min(at, len(actual), len(expected))
        pytest.fail(
            f"differs at byte {at}:\ncassis: {expected[at - 150 : at + 150]!r}\n"
            f"fast:   {actual[at - 150 : at + 150]!r}"
        )
    # Ids given during serialization leave both CASes in the same state ...
    assert cas._xmi_id_generator._next_id == reference_cas._xmi_id_generator._next_id
    # ... so writing again (either way) gives the same bytes.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # compared above
        assert fast_xmi_text(cas).encode("utf-8") == expected
        assert cas_to_xmi_bytes(reference_cas) == expected
        if cassis_again:
            assert cas.to_xmi().encode("utf-8") == expected
    return actual


# --------------------------------------------------------------------------- fixed CASes


def test_interop_cases_are_byte_identical() -> None:
    ts = T.load_typesystem()
    assert_identical(lambda: build_full_cas(ts))
    assert_identical(lambda: build_edge_case_cas(ts))


def test_the_full_interop_cas_uses_every_casflow_feature_kind() -> None:
    """Guard for the test above: it covers FSArrays, references, doubles, non-BMP text."""
    data = assert_identical(lambda: build_full_cas(T.load_typesystem())).decode("utf-8")
    assert 'children="' in data and 'fragments="' in data and 'confidence="0.75"' in data
    assert NON_BMP in data and "&#10;" in data and "&#9;" in data
    assert 'xmlns:type0="' in data  # several namespaces with the same last part


def test_sofa_text_set_by_casflow_converts_offsets_like_cassis() -> None:
    """set_sofa_text installs casflow's compact offset maps instead of cassis's dicts."""
    ts = T.load_typesystem()
    text = f"a{NON_BMP}b c\U0001f600d e"

    def build(setter: Callable[[cassis.Cas, str], None]) -> Callable[[], cassis.Cas]:
        def make() -> cassis.Cas:
            cas = cassis.Cas(typesystem=ts)
            setter(cas, text)
            for begin, end in ((0, 1), (1, 2), (2, 3), (4, 6), (7, 8), (0, len(text))):
                cas.add(ts.get_type(T.TOKEN)(begin=begin, end=end))
            other = cas.create_view("plain")
            setter(other, "plain text")
            other.add(ts.get_type(T.SENTENCE)(begin=0, end=10))
            return cas

        return make

    casflow_maps = assert_identical(build(set_sofa_text))
    assert casflow_maps == assert_identical(build(lambda cas, t: setattr(cas, "sofa_string", t)))
    assert b'begin="5" end="8"' in casflow_maps  # after one, then over another astral character


def test_out_of_range_offsets_warn_and_stay_as_cassis_leaves_them() -> None:
    ts = T.load_typesystem()

    def build() -> cassis.Cas:
        cas = cassis.Cas(typesystem=ts)
        set_sofa_text(cas, "short")
        cas.add(ts.get_type(T.TOKEN)(begin=3, end=99))
        view = cas.create_view("dicts")
        view.sofa_string = f"{NON_BMP}x"
        view.add(ts.get_type(T.TOKEN)(begin=1, end=40))
        within_bmp = cas.create_view("dicts within the BMP")
        within_bmp.sofa_string = "plain"
        within_bmp.add(ts.get_type(T.TOKEN)(begin=6, end=5))
        return cas

    data = assert_identical(build)  # with the warnings cassis gives
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast_xmi_text(build())
    assert len([w for w in caught if "Not mapping internal offset" in str(w.message)]) == 3
    assert b'end="99"' in data and b'begin="2" end="40"' in data and b'begin="6" end="5"' in data


# "x", a DNA helix (two UTF-16 units), a space, another, "y": UTF-16 positions 2 and 5
# fall inside the pairs. The spans are UTF-16, as Java writes them.
SPLIT_TEXT = "x\U0001f9ec \U0001f9ecy"


def split_offsets_xmi(spans: list[tuple[int, int]]) -> bytes:
    tokens = "".join(
        f'<type:Token xmi:id="{i}" sofa="1" begin="{b}" end="{e}"/>'
        for i, (b, e) in enumerate(spans, start=2)
    )
    members = " ".join(str(i) for i in range(2, len(spans) + 2))
    return (
        '<?xml version="1.0" encoding="UTF-8"?><xmi:XMI xmlns:xmi="http://www.omg.org/XMI" '
        'xmlns:cas="http:///uima/cas.ecore" '
        'xmlns:type="http:///de/tudarmstadt/ukp/dkpro/core/api/segmentation/type.ecore" '
        f'xmi:version="2.0"><cas:NULL xmi:id="0"/>{tokens}'
        f'<cas:Sofa xmi:id="1" sofaNum="1" sofaID="_InitialView" mimeType="text" '
        f'sofaString="{SPLIT_TEXT}"/><cas:View sofa="1" members="{members}"/></xmi:XMI>'
    ).encode()


def test_offsets_inside_a_surrogate_pair_are_found_and_snapped_to_whole_characters() -> None:
    from casflow.cas.xmi_offsets import load_xmi, snap_to_characters

    spans = [(0, 2), (2, 3), (3, 4), (4, 5), (5, 7), (5, 5)]
    cas, problems = load_xmi(split_offsets_xmi(spans), T.load_typesystem())
    assert [(p.begin, p.end, p.inside_pair) for p in problems] == [
        (0, 2, True),
        (2, 3, True),
        (4, 5, True),
        (5, 7, True),
        (5, 5, True),
    ]
    assert "Token at UTF-16 offsets [2,3) in view '_InitialView'" in problems[1].describe()
    snap_to_characters(cas, problems)
    # Begin down to its pair's start, end up to its pair's end; empty stays empty.
    found = [(t.begin, t.end, t.get_covered_text()) for t in cas.select(T.TOKEN)]
    assert found == [
        (0, 2, "x\U0001f9ec"),
        (1, 2, "\U0001f9ec"),
        (2, 3, " "),
        (3, 3, ""),
        (3, 4, "\U0001f9ec"),
        (3, 5, "\U0001f9ecy"),
    ]
    assert b'begin="4" end="7"' in cas_to_xmi_bytes(cas)  # written back whole


def test_offsets_outside_the_text_or_clean_files_are_told_apart() -> None:
    from casflow.cas.xmi_offsets import load_xmi

    cas, problems = load_xmi(split_offsets_xmi([(6, 9), (0, 1)]), T.load_typesystem())
    assert [(p.begin, p.end, p.inside_pair) for p in problems] == [(6, 9, False)]
    assert "outside the text" in problems[0].describe()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of cassis's escapes on a clean file
        _, none = load_xmi(split_offsets_xmi([(0, 1), (1, 3), (3, 4)]), T.load_typesystem())
    assert none == []


def test_document_language_and_unindexed_references_get_ids_as_in_cassis() -> None:
    ts = T.load_typesystem()

    def build() -> cassis.Cas:
        cas = cassis.Cas(typesystem=ts, sofa_string="Tumour cells", document_language="en")
        # Neither the POS, the lemma nor the token it governs is indexed: cassis
        # gives them ids breadth-first while serializing.
        unindexed = ts.get_type(T.TOKEN)(begin=7, end=12, lemma=ts.get_type(T.LEMMA)(value="cell"))
        token = ts.get_type(T.TOKEN)(begin=0, end=6, pos=ts.get_type(T.POS)(PosValue="NN"))
        cas.add(token)
        cas.add(ts.get_type(T.DEPENDENCY)(begin=7, end=12, Governor=token, Dependent=unindexed))
        return cas

    data = assert_identical(build).decode("utf-8")
    assert 'language="en"' in data


# --------------------------------------------------------------------------- CRAFT


def craft_cas(corpus: Path, pmid: str) -> cassis.Cas:
    reader = CraftReader(
        CraftReaderConfig(corpus=str(corpus), ontologies=["PR", "SO", "UBERON", "CL", "GO_CC"]),
        RunContext(output_dir=Path("unused")),
    )
    cas = cassis.Cas(typesystem=T.load_typesystem())
    reader.load(DocumentRef(pmid, str(reader.paths.text(pmid))), cas)
    return cas


def test_craft_fixture_with_all_layers_is_byte_identical() -> None:
    data = assert_identical(lambda: craft_cas(CRAFT_FIXTURE, "90000001")).decode("utf-8")
    for type_name in (T.TREEBANK_CONSTITUENT, T.DEPENDENCY, T.LEMMA, T.GENE_MENTION, T.FRAGMENT):
        assert f":{type_name.rsplit('.', 1)[1]} " in data, type_name
    assert 'children="' in data and 'fragments="' in data  # inline FSArrays


@pytest.mark.slow
@pytest.mark.corpus
def test_real_craft_articles_are_byte_identical(craft_dir: Path) -> None:
    ids = (craft_dir / "articles" / "ids" / "craft-ids-dev.txt").read_text().split()
    # the three shortest dev articles keep the test short on a shared machine
    shortest = sorted(
        ids, key=lambda i: (craft_dir / "articles" / "txt" / f"{i}.txt").stat().st_size
    )
    for pmid in shortest[:3]:
        assert_identical(lambda pmid=pmid: craft_cas(craft_dir, pmid), cassis_again=False)


# --------------------------------------------------------------------------- random CASes


def extended_typesystem() -> cassis.TypeSystem:
    """casflow's types plus every primitive kind, shared arrays and odd namespaces."""
    ts = cassis.load_typesystem(T.typesystem_xml())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cassis warns about the reserved names
        kinds = ts.create_type("casflow.test.AllKinds", supertypeName="uima.tcas.Annotation")
        for name, range_type in (
            ("flag", "uima.cas.Boolean"),
            ("ratio", "uima.cas.Float"),
            ("score", "uima.cas.Double"),
            ("big", "uima.cas.Long"),
            ("small", "uima.cas.Short"),
            ("tiny", "uima.cas.Byte"),
            ("count", "uima.cas.Integer"),
            ("label", "uima.cas.String"),
            ("anything", "uima.cas.TOP"),
            ("type", "uima.cas.String"),  # stored as type_, written as type
            ("self", "uima.cas.String"),
        ):
            ts.create_feature(kinds, name, range_type)
        ts.create_feature(kinds, "shared", FS_ARRAY, multipleReferencesAllowed=True)
        ts.create_feature(kinds, "unusedList", "uima.cas.IntegerList")
        ts.create_feature(kinds, "unusedStrings", "uima.cas.StringArray")
    # not an annotation: its begin is not converted
    thing = ts.create_type("org.example.type.Thing", supertypeName="uima.cas.TOP")
    ts.create_feature(thing, "begin", "uima.cas.Integer")
    ts.create_feature(thing, "target", "uima.tcas.Annotation")
    ts.create_type("org.example.cas.Odd", supertypeName="uima.tcas.Annotation")
    ts.create_type("org.xmi.Odder", supertypeName="uima.tcas.Annotation")
    ts.create_type("NoPackage", supertypeName="uima.tcas.Annotation")
    return ts


TS = extended_typesystem()
RANDOM_TYPES = [
    T.TOKEN, T.POS, T.LEMMA, T.SENTENCE, T.DEPENDENCY, T.DEPENDENCY_ROOT, T.CONSTITUENT,
    T.TREEBANK_CONSTITUENT, T.GENE_MENTION, T.ANATOMY_MENTION, T.FRAGMENT, T.DOCUMENT_METADATA,
    T.SECTION, T.EMPTY_CATEGORY, T.ABBREVIATION, "casflow.test.AllKinds",
    "org.example.type.Thing", "org.example.cas.Odd", "org.xmi.Odder", "NoPackage", FS_ARRAY,
]  # fmt: skip
VIEW_NAMES = ("_InitialView", "second", "third")
SPECIAL = "<>&\"' \n\t\r\u00e9\u00b5\u2028\U0001f600" + NON_BMP
TEXT = st.lists(
    st.text(st.sampled_from(SPECIAL), max_size=3)
    | st.text(
        st.characters(
            codec="utf-8", exclude_categories=["Cs", "Cc"], exclude_characters="\ufffe\uffff"
        ),
        max_size=6,
    ),
    max_size=4,
).map("".join)
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1e-7, 1e22])


def value_strategy(feature: cassis.typesystem.Feature, fs_count: int) -> st.SearchStrategy[Any]:
    """A recipe value for one feature: plain values, ("ref", i) or ("array", [i, ...])."""
    range_name = feature.rangeType.name
    refs = st.integers(0, fs_count - 1)
    if range_name == "uima.cas.String":
        return st.none() | TEXT
    if range_name in ("uima.cas.Integer", "uima.cas.Long", "uima.cas.Short", "uima.cas.Byte"):
        return st.none() | st.integers(-(2**63), 2**63 - 1)
    if range_name == "uima.cas.Boolean":
        return st.none() | st.booleans()
    if range_name in ("uima.cas.Float", "uima.cas.Double"):
        return st.none() | FLOATS
    if range_name == FS_ARRAY:
        return (
            st.none()
            | st.tuples(st.just("array"), st.lists(refs, max_size=4))
            | st.just(("array", None))
        )
    if range_name in ("uima.cas.IntegerList", "uima.cas.StringArray"):
        return st.none()  # declared, never set: must not stop the fast path
    return st.none() | st.tuples(st.just("ref"), refs)


@st.composite
def recipes(draw: st.DrawFn) -> dict[str, Any]:
    """Plain data describing a CAS, so that the same CAS can be built twice."""
    texts = draw(st.lists(st.none() | TEXT, min_size=1, max_size=3))
    if texts[0] is None and draw(st.booleans()):
        texts[0] = ""
    compact_maps = draw(st.lists(st.booleans(), min_size=len(texts), max_size=len(texts)))
    fs_count = draw(st.integers(1, 20))
    structures = []
    for _ in range(fs_count):
        type_name = draw(st.sampled_from(RANDOM_TYPES))
        type_ = TS.get_type(type_name)
        values = {}
        if type_name == FS_ARRAY:
            values["elements"] = draw(
                value_strategy(TS.get_type(T.CONSTITUENT).get_feature("children"), fs_count)
            )
        else:
            for feature in type_.all_features:
                if feature.name in ("sofa", "begin", "end"):
                    continue
                values[feature.name] = draw(value_strategy(feature, fs_count))
            longest = max(len(t or "") for t in texts)
            for offset in ("begin", "end"):
                if type_.get_feature(offset) is not None:
                    # now and then beyond the text: cassis warns and keeps such offsets
                    values[offset] = draw(st.integers(0, longest + 2))
        views = draw(st.lists(st.integers(0, len(texts) - 1), max_size=2))  # [] = not indexed
        # now and then an id of its own, kept by cas.add (ids may then repeat)
        given_id = draw(st.integers(1000, 1030)) if draw(st.integers(0, 9)) == 0 else None
        structures.append((type_name, values, views, given_id))
    return {"texts": texts, "compact": compact_maps, "structures": structures}


def build_from(recipe: dict[str, Any]) -> cassis.Cas:
    cas = cassis.Cas(typesystem=TS)
    views = []
    for i, (text, compact) in enumerate(zip(recipe["texts"], recipe["compact"], strict=True)):
        view = cas if i == 0 else cas.create_view(VIEW_NAMES[i])
        if text is not None:
            if compact:
                set_sofa_text(view, text)
            else:
                view.sofa_string = text
        views.append(view)
    structures = [TS.get_type(type_name)() for type_name, *_ in recipe["structures"]]
    for fs, (_, values, _, given_id) in zip(structures, recipe["structures"], strict=True):
        for name, value in values.items():
            if isinstance(value, tuple) and value[0] == "ref":
                value = structures[value[1]]
            elif isinstance(value, tuple) and value[0] == "array":
                elements = None if value[1] is None else [structures[i] for i in value[1]]
                value = TS.get_type(FS_ARRAY)(elements=elements) if name != "elements" else elements
            setattr(fs, name, value)
        fs.xmiID = given_id
    for fs, (_, _, view_numbers, _) in zip(structures, recipe["structures"], strict=True):
        for number in view_numbers:
            views[number].add(fs)
    return cas


def repeated_ids(recipe: dict[str, Any]) -> bool:
    kept = [given_id for *_, given_id in recipe["structures"] if given_id is not None]
    return len(kept) != len(set(kept))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recipes())
def test_random_cases_are_byte_identical(recipe: dict[str, Any]) -> None:
    if not repeated_ids(recipe):
        assert_identical(lambda: build_from(recipe))
        return

    # Two feature structures with one id: cassis refuses the CAS, or writes one of
    # them and silently drops the other. The fast path declines; cassis decides.
    # (Refusing, cassis may overflow the stack printing a cyclic structure.)
    def outcome(serialize: Callable[[cassis.Cas], bytes]) -> bytes | str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return serialize(build_from(recipe))
            except (ValueError, RecursionError) as error:
                return f"{type(error).__name__}: {error}"

    expected = outcome(lambda cas: cas.to_xmi().encode("utf-8"))
    assert isinstance(expected, bytes) or "Duplicate FS id" in expected or "recursion" in expected
    try:
        fast = outcome(lambda cas: fast_xmi_text(cas).encode("utf-8"))
    except XmiFastPathUnsupported as declined:
        assert "used twice" in str(declined)
    else:  # the repeated ids were not both reached
        assert fast == expected
    assert outcome(cas_to_xmi_bytes) == expected


@settings(max_examples=100, deadline=None)
@given(st.text(st.sampled_from("a<\x00\x01\x08\x0b\x0c\x1f\ufffe\uffff\ud800"), min_size=1))
def test_characters_xml_forbids_fail_as_in_cassis(value: str) -> None:
    def build() -> cassis.Cas:
        cas = cassis.Cas(typesystem=TS, sofa_string="abc")
        cas.add(TS.get_type(T.TOKEN)(begin=0, end=1, id=value))
        return cas

    forbidden = any(c not in "a<" for c in value)
    if not forbidden:
        assert_identical(build)
        return
    with pytest.raises((ValueError, UnicodeEncodeError)) as by_cassis:
        build().to_xmi()
    with pytest.raises(XmiFastPathUnsupported):
        fast_xmi_text(build())
    with pytest.raises(type(by_cassis.value)):
        cas_to_xmi_bytes(build())


def test_namespace_prefixes_are_numbered_in_order_of_first_use() -> None:
    def build(order: list[str]) -> Callable[[], cassis.Cas]:
        def make() -> cassis.Cas:
            cas = cassis.Cas(typesystem=TS, sofa_string="abcdef")
            for i, type_name in enumerate(order):
                type_ = TS.get_type(type_name)
                if type_.get_feature("end") is None:  # FSArray, Thing
                    cas.add(type_())
                else:
                    cas.add(type_(begin=i, end=i + 1))
            return cas

        return make

    # uima.cas types take the counter of the "cas" prefix but are written as cas:
    odd_after_array = assert_identical(
        build([FS_ARRAY, "org.example.cas.Odd", T.TOKEN, T.SENTENCE])
    )
    assert b'xmlns:cas1="http:///org/example/cas.ecore"' in odd_after_array
    assert b"<cas:FSArray" in odd_after_array and b"<cas1:Odd" in odd_after_array
    odd_first = assert_identical(
        build(["org.example.cas.Odd", FS_ARRAY, "org.xmi.Odder", "NoPackage"])
    )
    assert b"<cas0:Odd" in odd_first and b"<xmi0:Odder" in odd_first
    assert b'xmlns:noNamespace="http:///uima/noNamespace.ecore"' in odd_first
    reversed_order = assert_identical(build([T.SENTENCE, T.TOKEN, "org.example.type.Thing"]))
    assert b'xmlns:type="http:///de/tudarmstadt/ukp/dkpro/core/api/segmentation/type.ecore"' in (
        reversed_order
    )


# --------------------------------------------------------------------------- fallback


def fallback_case(make: Callable[[cassis.Cas], None], typesystem: cassis.TypeSystem = TS) -> None:
    """The fast path declines the CAS and cas_to_xmi_bytes writes cassis's bytes."""

    def build() -> cassis.Cas:
        cas = cassis.Cas(typesystem=typesystem, sofa_string="some text")
        make(cas)
        return cas

    with pytest.raises(XmiFastPathUnsupported):
        fast_xmi_text(build())
    assert cas_to_xmi_bytes(build()) == build().to_xmi().encode("utf-8")


def list_and_array_typesystem() -> cassis.TypeSystem:
    ts = cassis.load_typesystem(T.typesystem_xml())
    holder = ts.create_type("casflow.test.Holder", supertypeName="uima.tcas.Annotation")
    for name, range_type in (
        ("ints", "uima.cas.IntegerArray"),
        ("bytes", "uima.cas.ByteArray"),
        ("strings", "uima.cas.StringArray"),
        ("names", "uima.cas.StringList"),
        ("numbers", "uima.cas.IntegerList"),
        ("things", "uima.cas.FSList"),
    ):
        ts.create_feature(holder, name, range_type)
    ts.create_feature(holder, "sharedInts", "uima.cas.IntegerArray", multipleReferencesAllowed=True)
    return ts


LISTS_TS = list_and_array_typesystem()


@pytest.mark.parametrize(
    "feature, value",
    [
        ("ints", lambda: LISTS_TS.get_type("uima.cas.IntegerArray")(elements=[1, -2])),
        ("bytes", lambda: LISTS_TS.get_type("uima.cas.ByteArray")(elements=[1, 255])),
        ("strings", lambda: LISTS_TS.get_type("uima.cas.StringArray")(elements=["a b", "<c>"])),
        ("sharedInts", lambda: LISTS_TS.get_type("uima.cas.IntegerArray")(elements=[3])),
        ("names", lambda: LISTS_TS.get_type("uima.cas.NonEmptyStringList")(
            head="x", tail=LISTS_TS.get_type("uima.cas.EmptyStringList")())),
        ("numbers", lambda: LISTS_TS.get_type("uima.cas.EmptyIntegerList")()),
        ("things", lambda: LISTS_TS.get_type("uima.cas.NonEmptyFSList")(
            head=LISTS_TS.get_type(T.TOKEN)(begin=0, end=4),
            tail=LISTS_TS.get_type("uima.cas.EmptyFSList")())),
    ],
)  # fmt: skip
def test_lists_and_other_arrays_fall_back_to_cassis(feature: str, value: Callable[[], Any]) -> None:
    def make(cas: cassis.Cas) -> None:
        cas.add(LISTS_TS.get_type("casflow.test.Holder")(begin=0, end=4, **{feature: value()}))

    fallback_case(make, LISTS_TS)


def test_unset_list_features_keep_the_fast_path() -> None:
    def build() -> cassis.Cas:
        cas = cassis.Cas(typesystem=LISTS_TS, sofa_string="text")
        cas.add(LISTS_TS.get_type("casflow.test.Holder")(begin=0, end=4))
        return cas

    assert_identical(build)


def test_an_indexed_primitive_array_falls_back() -> None:
    fallback_case(lambda cas: cas.add(TS.get_type("uima.cas.IntegerArray")(elements=[1, 2])))


def test_a_sofa_with_uri_or_array_falls_back() -> None:
    fallback_case(lambda cas: setattr(cas, "sofa_uri", "file:///doc.txt"))

    def with_array(cas: cassis.Cas) -> None:
        cas.create_view("bytes").sofa_array = TS.get_type("uima.cas.ByteArray")(elements=[1])

    fallback_case(with_array)


def test_a_prefix_cassis_numbers_into_an_existing_one_falls_back() -> None:
    ts = cassis.load_typesystem(T.typesystem_xml())
    ts.create_type("org.example.type0.Clash", supertypeName="uima.tcas.Annotation")

    def make(cas: cassis.Cas) -> None:
        cas.add(ts.get_type("org.example.type0.Clash")(begin=0, end=1))  # takes "type0"
        cas.add(ts.get_type(T.SENTENCE)(begin=0, end=4))  # "type"
        cas.add(ts.get_type(T.DOCUMENT_METADATA)(begin=0, end=4))  # numbered "type0" again

    fallback_case(make, ts)


def test_a_feature_structure_of_another_typesystem_falls_back() -> None:
    other = cassis.load_typesystem(T.typesystem_xml())
    fallback_case(lambda cas: cas.add(other.get_type(T.TOKEN)(begin=0, end=4)))


def test_errors_are_cassis_errors() -> None:
    def null_element() -> cassis.Cas:
        cas = cassis.Cas(typesystem=TS, sofa_string="abc")
        cas.add(
            TS.get_type(T.CONSTITUENT)(
                begin=0, end=3, children=TS.get_type(FS_ARRAY)(elements=[None])
            )
        )
        return cas

    with pytest.raises(AttributeError) as by_cassis:
        null_element().to_xmi()
    with pytest.raises(AttributeError) as by_fast_path:
        cas_to_xmi_bytes(null_element())
    assert str(by_fast_path.value) == str(by_cassis.value)


def test_a_feature_structure_older_than_a_feature_of_its_type_is_written_by_cassis(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ts = cassis.load_typesystem(T.typesystem_xml())
    cas = cassis.Cas(typesystem=ts, sofa_string="some text")
    cas.add(ts.get_type(T.TOKEN)(begin=0, end=4))
    ts.create_feature(ts.get_type(T.TOKEN), "extra", "uima.cas.String")  # the token has no slot
    with caplog.at_level(logging.DEBUG, logger=xmi_writer.__name__):
        data = cas_to_xmi_bytes(cas)
    assert data == cas.to_xmi().encode("utf-8")
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


def test_an_unexpected_fast_path_failure_is_reported_and_cassis_writes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: Any) -> str:
        raise RuntimeError("bug")

    monkeypatch.setattr(xmi_writer._XmiWriter, "write", broken)
    cas = build_full_cas(T.load_typesystem())
    with caplog.at_level(logging.WARNING, logger=xmi_writer.__name__):
        assert cas_to_xmi_bytes(cas) == cas.to_xmi().encode("utf-8")
    assert "RuntimeError: bug" in caplog.text


# --------------------------------------------------------------------------- dkpro-cassis's own test files

CASSIS_FIXTURES = Path(__file__).parent / "fixtures" / "cassis"  # see its NOTICE
# XMI file -> (its type system, True if the fast path writes it; False: it holds
# lists or primitive arrays, which cas_to_xmi_bytes leaves to cassis). The pairs
# are those of cassis's own deserialization tests.
CASSIS_CASES = {
    "small_cas": ("small_typesystem", True),
    "cas_with_inheritance": ("typesystem_with_inheritance", True),
    "cas_with_collections": ("typesystem_with_collections", False),
    "cas_with_references": ("webanno_types", True),
    "cas_with_nonindexed_fs": ("important_dkpro_types", True),
    "cas_with_empty_array_reference": ("important_dkpro_types", True),
    "cas_with_reserved_names": ("typesystem_with_reserved_names", True),
    "cas_with_two_sofas": ("small_typesystem", True),
    "cas_with_smileys": ("important_dkpro_types", True),
    "cas_with_floating_point_special_values": ("typesystem_with_floating_points", False),
    "cas_has_fs_with_no_namespace": ("typesystem_has_types_with_no_namespace", True),
    "cas_with_multiple_references_allowed_string_array": (
        "typesystem_with_multiple_references_allowed",
        False,
    ),
    "cas_with_list_features": ("typesystem_with_list_features", False),
    "cas_with_array_features": ("typesystem_with_array_features", False),
}


def load_cassis_fixture(name: str) -> cassis.Cas:
    typesystem_name = CASSIS_CASES[name][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cassis warns about reserved feature names
        ts = cassis.load_typesystem(
            (CASSIS_FIXTURES / "typesystems" / f"{typesystem_name}.xml").read_text("utf-8")
        )
        with open(CASSIS_FIXTURES / "xmi" / f"{name}.xmi", "rb") as xmi:
            return cassis.load_cas_from_xmi(xmi, typesystem=ts)


def test_every_cassis_fixture_is_listed() -> None:
    assert sorted(p.stem for p in (CASSIS_FIXTURES / "xmi").glob("*.xmi")) == sorted(CASSIS_CASES)


@pytest.mark.parametrize("name", sorted(CASSIS_CASES))
def test_cassis_test_files_are_written_as_cassis_writes_them(name: str) -> None:
    if CASSIS_CASES[name][1]:
        assert_identical(lambda: load_cassis_fixture(name))
    else:
        with pytest.raises(XmiFastPathUnsupported):
            fast_xmi_text(load_cassis_fixture(name))
    # What the XMI writer writes either way: cassis's bytes.
    expected = load_cassis_fixture(name).to_xmi().encode("utf-8")
    assert cas_to_xmi_bytes(load_cassis_fixture(name)) == expected


# --------------------------------------------------------------------------- plans, writer


def test_plans_are_cached_per_type_and_remade_when_features_change() -> None:
    ts = cassis.load_typesystem(T.typesystem_xml())
    token = ts.get_type(T.TOKEN)
    plan = xmi_writer.type_plan(ts, token)
    assert xmi_writer.type_plan(ts, token) is plan
    ts.create_feature(token, "extra", "uima.cas.String")
    remade = xmi_writer.type_plan(ts, token)
    assert remade is not plan and "extra" in [name for name, _, _ in remade.attributes]

    def build() -> cassis.Cas:
        cas = cassis.Cas(typesystem=ts, sofa_string="word")
        cas.add(token(begin=0, end=4, extra="x&y"))
        return cas

    assert b'extra="x&amp;y"' in assert_identical(build)


def in_place_case() -> tuple[cassis.TypeSystem, cassis.Cas]:
    ts = cassis.TypeSystem()
    elem = ts.create_type("test.Elem")
    foo = ts.create_type("test.Foo")
    ts.create_feature(foo, "arr", FS_ARRAY, elementType="test.Elem")
    ts.create_feature(foo, "flag", "uima.cas.Integer")
    cas = cassis.Cas(ts)
    element = elem()
    cas.add(element)
    cas.add(foo(arr=ts.get_type(FS_ARRAY)(elements=[element]), flag=1))
    return ts, cas


def test_a_feature_changed_in_place_between_writes_gives_a_new_plan() -> None:
    # The same Feature objects, changed as cassis's own tests change them: a plan
    # keyed on feature identity wrote the first layout again.
    ts, cas = in_place_case()
    foo = ts.get_type("test.Foo")
    assert fast_xmi_text(cas) == cas.to_xmi()
    before = xmi_writer.type_plan(ts, foo)

    foo.get_feature("arr").multipleReferencesAllowed = True  # the array becomes its own element
    shared = fast_xmi_text(cas)
    assert shared == cas.to_xmi()
    assert "<cas:FSArray " in shared
    assert xmi_writer.type_plan(ts, foo) is not before

    foo.get_feature("flag").rangeType = ts.get_type("uima.cas.Boolean")  # 1 -> "true"
    text = fast_xmi_text(cas)
    assert text == cas.to_xmi()
    assert 'flag="true"' in text

    foo.get_feature("arr").multipleReferencesAllowed = False  # back to inline
    assert fast_xmi_text(cas) == cas.to_xmi()


def test_plans_do_not_keep_type_systems_alive() -> None:
    ts = cassis.load_typesystem(T.typesystem_xml())
    key = id(ts.get_type(T.TOKEN))
    xmi_writer.type_plan(ts, ts.get_type(T.TOKEN))
    assert key in xmi_writer._plans
    del ts
    gc.collect()
    assert key not in xmi_writer._plans


def test_floats_are_written_as_cassis_writes_them() -> None:
    values = [0.1, -0.0, 1e-7, 1.5e22, math.nan, math.inf, -math.inf, 3]

    def build() -> cassis.Cas:
        cas = cassis.Cas(typesystem=TS, sofa_string="x")
        for value in values:
            cas.add(TS.get_type("casflow.test.AllKinds")(begin=0, end=1, score=value, ratio=value))
        return cas

    data = assert_identical(build)
    # Python's repr in upper case, not Java's form (1.0E-7)
    for written in (b'score="1E-07"', b'score="1.5E22"', b'score="NaN"', b'score="-Infinity"'):
        assert written in data


def test_xmi_writer_uses_the_fast_path_and_cassis_for_pretty_printing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ts = T.load_typesystem()
    calls: list[cassis.Cas] = []
    real = xmi_writer._XmiWriter.write

    def counting(self: Any) -> str:
        calls.append(self.cas)
        return real(self)

    monkeypatch.setattr(xmi_writer._XmiWriter, "write", counting)
    context = RunContext(output_dir=tmp_path)
    for pretty in (False, True):
        writer = XmiWriter(XmiWriterConfig(folder=f"pretty{pretty}", pretty_print=pretty), context)
        (path,) = writer.write(build_full_cas(ts), "PMC1")
        assert path.read_bytes() == build_full_cas(ts).to_xmi(pretty_print=pretty).encode("utf-8")
    assert len(calls) == 1  # only the compact file went through the fast path


# --------------------------------------------------------------------------- cassis version guard

# Imports casflow.cas as if another dkpro-cassis release were installed.
_OTHER_RELEASE = """
import importlib.metadata as metadata
real = metadata.version
metadata.version = lambda name: "{version}" if name == "dkpro-cassis" else real(name)
import cassis
from casflow.cas import xmi, sofa
from casflow.cas.xmi import cas_to_xmi_bytes
ts = cassis.TypeSystem()
cas = cassis.Cas(ts)
sofa.set_sofa_text(cas, "a \\U0001F600 b")
calls = []
real_fast = xmi._XmiWriter.write
xmi._XmiWriter.write = lambda self: calls.append(1) or real_fast(self)
assert cas_to_xmi_bytes(cas) == cas.to_xmi().encode("utf-8")
print(xmi.FAST_PATH, bool(calls), type(cas.get_sofa()._offset_converter._python_to_external).__name__)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.12.0", "True True _Utf16Offsets"),
        ("0.13.0", "False False dict"),
        ("1.0", "False False dict"),
    ],
)
def test_an_untested_cassis_release_gets_cassis_own_code_at_import(
    version: str, expected: str
) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _OTHER_RELEASE.format(version=version)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == expected


def test_the_version_guard_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from casflow.cas import cassis_version

    assert cassis_version.fast_paths_allowed("0.12.0")
    assert not cassis_version.fast_paths_allowed("0.11.2")
    assert not cassis_version.fast_paths_allowed("garbage")
    monkeypatch.setenv("CASFLOW_CASSIS_FAST_PATHS", "0")
    assert not cassis_version.fast_paths_allowed("0.12.0")
    assert "turns them off" in cassis_version.fallback_reason("0.12.0")


def test_without_the_fast_path_cassis_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xmi_writer, "FAST_PATH", False)
    monkeypatch.setattr(xmi_writer._XmiWriter, "write", lambda self: pytest.fail("fast path used"))
    cas = build_full_cas(T.load_typesystem())
    assert cas_to_xmi_bytes(cas) == cas.to_xmi().encode("utf-8")


def test_a_character_xml_forbids_in_a_feature_names_its_place(tmp_path: Path) -> None:
    # cassis says only "All strings must be XML compatible"
    from casflow.components.formats.xmi.writer import XmlForbiddenCharacter

    typesystem = T.load_typesystem()
    cas = cassis.Cas(typesystem=typesystem)
    cas.sofa_string = "Cells grow."
    cas.add(typesystem.get_type(T.LEMMA)(begin=0, end=5, value="cell\x01"))
    for pretty_print in (False, True):
        writer = XmiWriter(
            XmiWriterConfig(pretty_print=pretty_print), RunContext(output_dir=tmp_path)
        )
        with pytest.raises(XmlForbiddenCharacter) as raised:
            writer.write(cas, "d1")
        message = str(raised.value)
        assert message.startswith("document d1: view _InitialView: ")
        assert "Lemma at 0-5, feature value = 'cell\\x01' holds '\\x01'" in message
