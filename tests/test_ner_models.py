"""casflow.components.ner: tokenizer, features, labels, lexicon, CRF, component, shipped models."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import cassis
import pytest

from casflow.components.crfsuite.abbreviations import abbreviation_features, find_abbreviations
from casflow.components.crfsuite.clusters import cluster_features
from casflow.components.crfsuite.crf import CrfTagger, TrainingParams, labels_for, train_crf
from casflow.components.crfsuite.ensemble import assemble, vote
from casflow.components.crfsuite.features import (
    FeatureSettings,
    sentence_features,
    shape,
    short_shape,
)
from casflow.components.crfsuite.labels import decode, encode, token_range
from casflow.components.crfsuite.lexicon import Lexicon
from casflow.components.crfsuite.lexicons import classify_terms, ontology_lexicon
from casflow.components.crfsuite.postprocess import balance_brackets, drop_long_chunks
from casflow.components.crfsuite.tagger import (
    AnatomyNer,
    AnatomyNerConfig,
    CrfNer,
    CrfNerConfig,
    GeneNer,
    GeneNerConfig,
    model_problem,
    resolve_model,
)
from casflow.components.crfsuite.tokenize import refine, tokenize
from casflow.components.formats.obo import read_obo, terms
from casflow.pipeline.component import RunContext
from casflow.typesystem import (
    ANATOMY_MENTION,
    GENE_MENTION,
    SENTENCE,
    TOKEN,
    load_typesystem,
)

# ---------------------------------------------------------------- tokenizer


def words(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[b:e] for b, e in spans]


def test_tokenize_splits_punctuation_and_letter_digit_changes() -> None:
    text = "IL-2-induced p53/p21  (CD4+) β-catenin."
    spans = tokenize(text)
    assert words(text, spans) == [
        "IL", "-", "2", "-", "induced", "p", "53", "/", "p", "21",
        "(", "CD", "4", "+", ")", "β", "-", "catenin", ".",
    ]  # fmt: skip
    assert spans[5] == (13, 14)  # "p" of p53, after one space
    assert spans[10] == (22, 23)  # "(" after the double space


def test_tokenize_offsets_are_exact_within_a_range() -> None:
    text = "xx TNF-alpha yy"
    spans = tokenize(text, 3, 12)
    assert spans == [(3, 6), (6, 7), (7, 12)]
    assert "".join(words(text, spans)) == "TNF-alpha"


def test_tokenize_keeps_combining_marks_with_their_character() -> None:
    # decomposed accents (e + U+0301) and a keycap mark: a boundary never falls before one
    text = "Cafe\u0301 e\u0301tude nai\u0308ve-2\u20e3 \U0001d400b"
    assert words(text, tokenize(text)) == [
        "Cafe\u0301", "e\u0301tude", "nai\u0308ve", "-", "2\u20e3", "\U0001d400b",
    ]  # fmt: skip


def test_refine_splits_existing_tokens() -> None:
    text = "anti-CD3 mAb"
    assert words(text, refine(text, [(0, 8), (9, 12)])) == ["anti", "-", "CD", "3", "mAb"]


# ---------------------------------------------------------------- features


def test_shapes() -> None:
    assert shape("Abc-12") == "Xxx-dd"
    assert short_shape("Abc-12") == "Xx-d"
    assert short_shape("mRNA") == "xX"


def test_sentence_features_on_hand_written_tokens() -> None:
    text = "The IL-2 alpha gene"
    spans = tokenize(text)  # The | IL | - | 2 | alpha | gene
    feats = sentence_features(text, spans, FeatureSettings(window=1))
    il = set(feats[1])
    assert {"w=IL", "lw=il", "sh=XX", "ALLCAP", "sp=10", "cw=il-2", "cpos=B"} <= il
    assert {"lw[-1]=the", "lw[1]=-", "bg-=the|il"} <= il
    assert "lw[-2]=<PAD>" not in il  # window 1
    assert "sp=00" in feats[2]  # "-" inside IL-2
    assert {"DIGITS", "nw=0"} <= set(feats[3])
    assert "GREEK" in feats[4]
    assert "c3=<al" in feats[4] and "s2=ha" in feats[4]
    assert "lw[-1]=<PAD>" in feats[0]


def test_dictionary_tags_become_features_with_neighbours() -> None:
    text = "Purkinje cells die"
    spans = tokenize(text)
    tags = Lexicon().add_all([("Purkinje cell", "CL")]).token_tags(text, spans)
    assert tags == [["B-CL"], ["I-CL"], []]
    feats = sentence_features(text, spans, dictionary_tags=tags)
    assert "dict=B-CL" in feats[0] and "dict[1]=I-CL" in feats[0]
    assert "dict[-1]=I-CL" in feats[2]


# ---------------------------------------------------------------- labels and lexicon


@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
def test_labels_round_trip(scheme: str) -> None:
    ranges = [(0, 1, "Cell"), (2, 5, "Organ"), (5, 6, "Organ")]
    labels = encode(7, ranges, scheme)
    assert decode(labels) == ranges
    if scheme == "BIOES":
        assert labels == ["S-Cell", "O", "B-Organ", "I-Organ", "E-Organ", "S-Organ", "O"]


def test_decode_starts_a_mention_at_a_stray_inside_label() -> None:
    assert decode(["O", "I-GENE", "I-GENE", "O", "B-X", "I-Y"]) == [
        (1, 3, "GENE"),
        (4, 5, "X"),
        (5, 6, "Y"),
    ]


def test_token_range_and_labels_for_character_spans() -> None:
    text = "p53 binds MDM2"
    spans = tokenize(text)  # p | 53 | binds | MDM | 2
    assert token_range(spans, 0, 3) == (0, 2)
    assert labels_for(spans, [(0, 3, "GENE"), (10, 14, "GENE")], "BIO") == [
        "B-GENE", "I-GENE", "O", "B-GENE", "I-GENE",
    ]  # fmt: skip


def test_lexicon_longest_match_ignores_case_and_plural(tmp_path: Path) -> None:
    lexicon = Lexicon().add_all([("heart", "Organ"), ("heart muscle", "Tissue"), ("the", "X")])
    assert len(lexicon) == 2  # stop word dropped
    # longest match at each start: "heart muscle" from token 0; "muscle" alone is no entry
    assert lexicon.matches(["Heart", "muscles", "of"]) == [(0, 2, frozenset({"Tissue"}))]
    assert lexicon.matches(["hearts"]) == [(0, 1, frozenset({"Organ"}))]
    lexicon.save(tmp_path / "lex.tsv")
    assert Lexicon.load(tmp_path / "lex.tsv").entries == lexicon.entries


def test_ontology_lexicon_reads_names_exact_synonyms_and_caro_classes(tmp_path: Path) -> None:
    obo = tmp_path / "mini.obo.zip"
    with zipfile.ZipFile(obo, "w") as archive:
        archive.writestr(
            "mini.obo",
            "format-version: 1.2\n\n"
            "[Term]\nid: UBERON:0000062\nname: organ\n\n"
            '[Term]\nid: UBERON:1\nname: heart\nsynonym: "cor" EXACT []\n'
            'synonym: "cardium" RELATED []\nis_a: UBERON:0000062 ! organ\n\n'
            "[Term]\nid: UBERON:2\nname: old thing\nis_obsolete: true\n\n"
            "[Term]\nid: GO:3\nname: not anatomy\n\n"
            "[Typedef]\nid: part_of\nname: part of\n",
        )
    cl = tmp_path / "cl.obo"
    cl.write_text("[Term]\nid: CL:1\nname: fibroblast\n", encoding="utf-8")
    lexicon = ontology_lexicon({"UBERON": obo, "CL": cl})
    assert lexicon.entries == {
        ("organ",): {"UBERON", "U-Organ"},
        ("heart",): {"UBERON", "U-Organ"},
        ("cor",): {"UBERON", "U-Organ"},
        ("fibroblast",): {"CL"},
    }


# ---------------------------------------------------------------- a tiny CRF

TRAINING = [
    ("The BRCA1 gene binds p53 protein .", ["BRCA1", "p53"]),
    ("Expression of BRCA1 was high .", ["BRCA1"]),
    ("We measured p53 in cells .", ["p53"]),
    ("The TNF receptor binds TNF .", ["TNF receptor", "TNF"]),
    ("Cells were washed twice .", []),
    ("The IL-2 gene was cloned .", ["IL-2"]),
]


def spans_of(text: str, names: list[str]) -> list[tuple[int, int, str]]:
    out, start = [], 0
    for name in names:
        begin = text.index(name, start)
        out.append((begin, begin + len(name), "GENE"))
        start = begin + len(name)
    return out


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model_dir = tmp_path_factory.mktemp("tiny_crf")
    settings = FeatureSettings()
    sequences = []
    for text, names in TRAINING * 3:
        spans = tokenize(text)
        sequences.append(
            (
                sentence_features(text, spans, settings),
                labels_for(spans, spans_of(text, names), "BIO"),
            )
        )
    meta = train_crf(
        sequences,
        model_dir,
        TrainingParams(c1=0.0, c2=0.01, max_iterations=100),
        settings,
        meta_extra={"mention_type": GENE_MENTION},
    )
    assert meta["scheme"] == "BIO"
    return model_dir


def test_tiny_crf_tags_its_training_sentences_back(tiny_model: Path) -> None:
    tagger = CrfTagger.load(tiny_model)
    for text, names in TRAINING:
        found = [(b, e, label) for b, e, label, _ in tagger.tag(text, tokenize(text))]
        assert found == spans_of(text, names), text


# ---------------------------------------------------------------- the component


def new_view(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def context(tmp_path: Path) -> RunContext:
    return RunContext(output_dir=tmp_path, workflow_dir=tmp_path)


def test_component_writes_gene_mentions_with_exact_offsets(
    tiny_model: Path, tmp_path: Path
) -> None:
    text = "Cells were washed twice. The BRCA1 gene binds  p53 protein."
    view = new_view(text)
    component = CrfNer(CrfNerConfig(model=str(tiny_model)), context(tmp_path))
    component.process(view)
    found = [(m.begin, m.end, m.value) for m in view.select(GENE_MENTION)]
    assert [text[b:e] for b, e, _ in found] == ["BRCA1", "p53"]
    assert found[0] == (29, 34, "GENE") and found[1] == (47, 50, "GENE")
    assert all(0 < m.confidence <= 1 for m in view.select(GENE_MENTION))


def test_component_uses_existing_sentences_and_tokens(tiny_model: Path, tmp_path: Path) -> None:
    text = "The IL-2 gene was cloned ."
    view = new_view(text)
    ts = view.typesystem
    view.add(ts.get_type(SENTENCE)(begin=0, end=len(text)))
    # one coarse token "IL-2" is refined into IL | - | 2
    view.add_all(
        [
            ts.get_type(TOKEN)(begin=b, end=e)
            for b, e in [(0, 3), (4, 8), (9, 13), (14, 17), (18, 24), (25, 26)]
        ]
    )
    config = CrfNerConfig(model=str(tiny_model), use_existing_tokens=True)
    assert CrfNer.requirements(config) == ((TOKEN,), (GENE_MENTION,))
    CrfNer(config, context(tmp_path)).process(view)
    assert [(m.begin, m.end) for m in view.select(GENE_MENTION)] == [(4, 8)]


def test_component_tags_overlapping_sentences_once(tiny_model: Path, tmp_path: Path) -> None:
    # two sentence splitters ran in the view: each mention is still written once
    text = "The BRCA1 gene binds p53 protein ."
    view = new_view(text)
    make = view.typesystem.get_type(SENTENCE)
    view.add_all(
        [make(begin=0, end=len(text)), make(begin=0, end=len(text)), make(begin=4, end=14)]
    )
    CrfNer(CrfNerConfig(model=str(tiny_model)), context(tmp_path)).process(view)
    assert [(m.begin, m.end) for m in view.select(GENE_MENTION)] == [(4, 9), (21, 24)]


def test_existing_tokens_are_read_once_per_document(tiny_model: Path, tmp_path: Path) -> None:
    # thousands of paragraphs: reading every token for each sentence took minutes
    text = " ".join(["The BRCA1 gene binds p53 protein ."] * 3)
    view = new_view(text)
    ts = view.typesystem
    view.add_all([ts.get_type(SENTENCE)(begin=35 * i, end=35 * i + 34) for i in range(3)])
    view.add_all([ts.get_type(TOKEN)(begin=b, end=e) for b, e in tokenize(text)])
    selected: list[str] = []
    select = view.select

    def counting(type_name: str):  # type: ignore[no-untyped-def]
        selected.append(type_name)
        return select(type_name)

    view.select = counting  # type: ignore[method-assign]
    config = CrfNerConfig(model=str(tiny_model), use_existing_tokens=True)
    CrfNer(config, context(tmp_path)).process(view)
    assert selected.count(TOKEN) == 1
    found = [text[m.begin : m.end] for m in select(GENE_MENTION)]
    assert found == ["BRCA1", "p53"] * 3


def test_component_writes_anatomy_mentions_as_configured(tiny_model: Path, tmp_path: Path) -> None:
    # the fixture's meta.json says it learned genes, which an anatomy tagger refuses
    model = tmp_path / "anatomy_model"
    shutil.copytree(tiny_model, model)
    meta = json.loads((model / "meta.json").read_text(encoding="utf-8"))
    (model / "meta.json").write_text(
        json.dumps({**meta, "mention_type": ANATOMY_MENTION}), encoding="utf-8"
    )
    view = new_view("We measured p53 in cells .")
    config = AnatomyNerConfig(model=str(model))
    AnatomyNer(config, context(tmp_path)).process(view)
    assert [(m.begin, m.end) for m in view.select(ANATOMY_MENTION)] == [(12, 15)]
    assert not list(view.select(GENE_MENTION))


def test_check_config_reports_missing_model_and_bad_type(tmp_path: Path) -> None:
    config = CrfNerConfig(model="no/such/model", mention_type="casflow.ner.Nothing")
    problems = CrfNer.check_config(config, context(tmp_path))
    assert len(problems) == 2
    assert "mention_type" in problems[0]
    assert "model.crfsuite" in problems[1] and str(tmp_path / "no/such/model") in problems[1]
    with pytest.raises(FileNotFoundError, match="lacks"):
        CrfNer(config, context(tmp_path))


def test_relative_model_path_resolves_against_the_workflow(tmp_path: Path) -> None:
    assert resolve_model("models/x", tmp_path) == tmp_path / "models/x"
    assert resolve_model("casflow:gene").name == "gene_bc2gm"
    assert resolve_model("casflow:anatomy").name == "anatomy_anatem"


# ---------------------------------------------------------------- shipped models


def shipped_or_skip(name: str) -> Path:
    path = resolve_model(name)
    problem = model_problem(path)
    if problem is not None:
        pytest.skip(f"shipped model {name} not usable: {problem}")
    return path


def test_shipped_gene_model_tags(tmp_path: Path) -> None:
    shipped_or_skip("casflow:gene")
    text = "Mutations in the BRCA1 gene and the tumor suppressor p53 were found in 12 patients."
    view = new_view(text)
    component = GeneNer(GeneNerConfig(), context(tmp_path))
    assert component.check_config(GeneNerConfig(), context(tmp_path)) == []
    component.process(view)
    found = {view.sofa_string[m.begin : m.end] for m in view.select(GENE_MENTION)}
    # BC2GM often includes the head noun ("BRCA1 gene"), so test containment
    assert any("BRCA1" in f for f in found) and any("p53" in f for f in found)
    assert not any("patients" in f for f in found)


def test_shipped_anatomy_model_tags(tmp_path: Path) -> None:
    shipped_or_skip("casflow:anatomy")
    text = "Tumour cells invaded the liver and the surrounding connective tissue."
    view = new_view(text)
    AnatomyNer(AnatomyNerConfig(), context(tmp_path)).process(view)
    found = {(view.sofa_string[m.begin : m.end], m.value) for m in view.select(ANATOMY_MENTION)}
    assert ("liver", "Organ") in found
    assert any(label == "Cell" and "cells" in t for t, label in found)


# ---------------------------------------------------------------- corpora


@pytest.mark.corpus
def test_tokenizer_puts_token_boundaries_at_every_gold_mention_boundary(corpora_dir: Path) -> None:
    from casflow.components.crfsuite.gold_view import mention_document
    from casflow.pipeline.gold_sources import GoldSource, read_source

    context = RunContext(output_dir=Path("."))
    examples = []
    for component, mention_type in (
        ("bc2gm.reader.v1", GENE_MENTION),
        ("anatem.reader.v1", ANATOMY_MENTION),
    ):
        source = GoldSource(component=component, config={"split": "devel"})
        documents = read_source(
            source, context, lambda view, doc_id, t=mention_type: mention_document(view, doc_id, t)
        )
        examples += [e for d in documents for e in d.examples]
    misses = []
    for example in examples:
        starts = {b for b, _ in example.tokens}
        ends = {e for _, e in example.tokens}
        for m in example.mentions:
            if m.begin not in starts or m.end not in ends:
                misses.append((example.id, example.text[m.begin : m.end]))
    assert misses == []


# ---------------------------------------------------------------- abbreviations, clusters, post-processing


def test_find_abbreviations_schwartz_hearst() -> None:
    text = (
        "In colorectal cancer (CRC) and heat shock protein 70 (HSP70) studies, "
        "CRC cells (n = 12) grew in the (cortex)."
    )
    assert find_abbreviations(text) == {
        "CRC": "colorectal cancer",
        "HSP70": "heat shock protein 70",
    }


def test_abbreviation_features_mark_every_use_of_a_short_form() -> None:
    text = "Later, CRC and HSP70 grew."
    spans = tokenize(text)  # Later | , | CRC | and | HSP | 70 | grew | .
    feats = abbreviation_features(
        text,
        spans,
        {"CRC": "colorectal cancer", "HSP70": "heat shock protein 70"},
        {"CRC": ["Cancer"]},
    )
    assert feats[2] == ["abbr", "abbr_last=cancer", "abbr_s3=cer", "abbr_dict=Cancer"]
    assert feats[4] == feats[5] == ["abbr", "abbr_last=70", "abbr_s3=70"]
    assert feats[0] == feats[3] == []


def test_cluster_features_use_normalised_words() -> None:
    clusters = {"liver": (1, 2, 3), "lung": (1, 2, 4), "il0": (5, 6, 7)}
    text = "Liver and IL2"
    spans = tokenize(text)  # Liver | and | IL | 2
    feats = cluster_features(text, spans, clusters)
    assert feats[0] == ["k0=1", "k1=2", "k2=3"]
    assert feats[1] == ["k=UNK", "k1[-1]=2"]


def test_balance_brackets_trims_the_space_a_dropped_bracket_leaves() -> None:
    assert balance_brackets("a ( IL-2 b", [(2, 8, "GENE", 1.0)]) == [(4, 8, "GENE", 1.0)]
    assert balance_brackets("a IL-2 ) b", [(2, 8, "GENE", 1.0)]) == [(2, 6, "GENE", 1.0)]
    assert balance_brackets("a ( ] b", [(2, 5, "GENE", 1.0)]) == []


def test_balance_brackets_repairs_or_drops() -> None:
    text = "the IL-2 (CD25 receptor) and (p53 x) y"
    mentions = [
        (4, 8, "GENE", 0.9),  # IL-2: balanced, kept
        (9, 23, "GENE", 0.8),  # "(CD25 receptor" -> extended over ")"
        (29, 33, "GENE", 0.7),  # "(p53" -> stray bracket dropped
    ]
    assert balance_brackets(text, mentions) == [
        (4, 8, "GENE", 0.9),
        (9, 24, "GENE", 0.8),
        (30, 33, "GENE", 0.7),
    ]


def test_classify_terms_follows_is_a_to_the_upper_classes(tmp_path: Path) -> None:
    obo = tmp_path / "mini.obo"
    obo.write_text(
        "[Term]\nid: U:1\nname: organ\n\n"
        "[Term]\nid: U:2\nname: gland\nis_a: U:1 ! organ\n\n"
        '[Term]\nid: U:3\nname: liver\nsynonym: "hepar" EXACT []\nis_a: U:2 ! gland\n\n'
        "[Term]\nid: U:4\nname: liver lobe\nintersection_of: U:9 ! lobe\n"
        "intersection_of: part_of U:3 ! liver\n\n"
        "[Term]\nid: U:9\nname: lobe\n",
        encoding="utf-8",
    )
    terms_by_id = {t.id: (t.exact_names, t.parents) for t in terms(read_obo(obo), "U:")}
    assert terms_by_id["U:3"] == (["liver", "hepar"], ["U:2"])
    assert terms_by_id["U:4"][1] == ["U:9"]  # the genus, not the part_of differentia
    pairs = set(classify_terms(terms_by_id, {"U:1": "Organ", "U:9": "Part"}))
    assert pairs == {
        ("organ", "Organ"),
        ("gland", "Organ"),
        ("liver", "Organ"),
        ("hepar", "Organ"),
        ("liver lobe", "Part"),
        ("lobe", "Part"),
    }


def test_drop_long_chunks_removes_mentions_in_encoded_runs() -> None:
    garbage = "MathType@MTEF@5@5@+=" + "feaafiart1ev1aaatCvAUfKttLearuWrP9MDH5MBPbIqV92A"
    text = f"liver cells {garbage} heart"
    inside = text.index("Cv")
    mentions = [
        (0, 5, "Organ", 1.0),
        (inside, inside + 2, "Cell", 1.0),
        (len(text) - 5, len(text), "Organ", 1.0),
    ]
    assert drop_long_chunks(text, mentions) == [mentions[0], mentions[2]]


def test_vote_keeps_majority_mentions_and_resolves_overlaps() -> None:
    a = [(0, 5, "Organ", 0.9), (10, 15, "Cell", 0.8)]
    b = [(0, 5, "Organ", 0.7), (10, 20, "Cell", 0.6)]
    c = [(0, 5, "Tissue", 0.5), (10, 20, "Cell", 0.9), (30, 35, "Cell", 0.9)]
    assert vote([a, b, c], 2) == [(0, 5, "Organ", 2 / 3), (10, 20, "Cell", 2 / 3)]


def test_component_runs_a_voting_model_folder(tiny_model: Path, tmp_path: Path) -> None:
    assemble(tmp_path / "vote", [tiny_model, tiny_model, tiny_model])
    assert model_problem(tmp_path / "vote") is None
    text = "We measured p53 in cells ."
    view = new_view(text)
    CrfNer(CrfNerConfig(model=str(tmp_path / "vote")), context(tmp_path)).process(view)
    assert [(m.begin, m.end, m.confidence) for m in view.select(GENE_MENTION)] == [(12, 15, 1.0)]


def test_pos_features_take_the_place_of_dictionary_tags_as_the_shipped_models_were_trained() -> (
    None
):
    """With a POS tagger the dictionary features come from the POS tags' characters (the
    shipped anatomy member 2 was trained so); the lexicon's matches only without one."""
    from casflow.components.crfsuite.crf import DocumentContext

    class FixedPos:
        def tag(self, text: str, spans: list[tuple[int, int]]) -> list[str]:
            return ["NN", "VBZ"][: len(spans)]

    lexicon = Lexicon()
    lexicon.add("heart", "Organ")
    text = "heart beats"
    spans = tokenize(text)
    plain = DocumentContext(FeatureSettings(), lexicon, None, None, None).features(text, spans)
    assert "dict=B-Organ" in plain[0] and "dict[-1]=B-Organ" in plain[1]
    with_pos = DocumentContext(FeatureSettings(pos=True), lexicon, None, FixedPos(), None)
    features = with_pos.features(text, spans)
    assert "pos=NN" in features[0] and "pos=VBZ" in features[1]
    assert [f for f in features[0] if f.startswith("dict=")] == ["dict=N", "dict=N"]
    assert "dict=B-Organ" not in features[0]
