"""``train.crf.mentions.v1``: CRF mention taggers trained by ``casflow train`` from gold views.

The fixtures are a tiny corpora folder written by hand below: BC2GM-format gene
sentences, AnatEM NERsuite documents, and the CRAFT ontology and mention files
the anatomy lexicons read. Mentions are marked in the sentences as ``{text}``
(genes) or ``{text|Class}`` (anatomy); the helpers compute the offsets.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import cassis
import pytest

from casflow.components.crfsuite.crf import META_FILE, MODEL_FILE
from casflow.components.crfsuite.tagger import (
    AnatomyNer,
    AnatomyNerConfig,
    CrfNer,
    CrfNerConfig,
    GeneNer,
    GeneNerConfig,
)
from casflow.components.crfsuite.tokenize import tokenize
from casflow.pipeline.component import RunContext
from casflow.pipeline.training import load_training_workflow, run_training
from casflow.pipeline.validation import WorkflowValidationError
from casflow.typesystem import ANATOMY_MENTION, GENE_MENTION, SENTENCE, load_typesystem

REPO = Path(__file__).resolve().parent.parent
_MARK = re.compile(r"\{([^{}|]+)(?:\|([^{}]+))?\}")

# ----------------------------------------------------------------------------- fixtures


def unmark(marked: str) -> tuple[str, list[tuple[int, int, str]]]:
    """``"The {p53} gene"`` -> ("The p53 gene", [(4, 7, "")])."""
    text, spans, last = "", [], 0
    for match in _MARK.finditer(marked):
        text += marked[last : match.start()]
        spans.append((len(text), len(text) + len(match.group(1)), match.group(2) or ""))
        text += match.group(1)
        last = match.end()
    return text + marked[last:], spans


GENE_TRAIN = [
    "The {BRCA1} gene is mutated in breast cancer .",
    "Expression of {p53} protein was increased in tumours .",
    "{MDM2} binds {p53} and inhibits its activity .",
    "The {EGFR} gene is amplified in gliomas .",
    "Levels of {IL-2} were measured in serum .",
    "{BRCA1} and {BRCA2} interact with {RAD51} .",
    "Expression of {EGFR} protein was reduced after treatment .",
    "The {RAD51} gene is expressed in lymphocytes .",
    "{IL-2 receptor alpha} ( {CD25} ) marks regulatory cells .",
    "Levels of {MDM2} were measured in tumours .",
    "The {BRCA2} gene is mutated in ovarian cancer .",
    "No genes were found in this sample .",
]
GENE_DEV = [
    "Expression of {BRCA2} protein was increased .",
    "The {p53} gene is mutated in tumours .",
    "Levels of {EGFR} were measured in serum .",
    "{RAD51} binds {BRCA1} .",
]
# accepted alternatives (BioCreative ALTGENE.eval): a longer span of a gold gene
GENE_ALTERNATIVES = {"The {BRCA1} gene": "{BRCA1 gene}", "The {p53} gene": "{p53 gene}"}


def _bc2_offsets(text: str, begin: int, end: int) -> str:
    """BioCreative offsets: non-space characters before, last character inclusive."""
    first = len(text[:begin].replace(" ", ""))
    return f"{first} {first + len(text[begin:end].replace(' ', '')) - 1}"


def write_bc2gm(folder: Path, split: str, marked: list[str], prefix: str) -> list[str]:
    sentences, genes, alternatives, ids = [], [], [], []
    for number, line in enumerate(marked, start=1):
        sid = f"{prefix}{number}"
        ids.append(sid)
        text, spans = unmark(line)
        sentences.append(f"{sid} {text}")
        for begin, end, _ in spans:
            genes.append(f"{sid}|{_bc2_offsets(text, begin, end)}|{text[begin:end]}")
        for where, alternative in GENE_ALTERNATIVES.items():
            if unmark(where)[0] in text:
                plain, ((b, e, _),) = unmark(alternative)
                b += text.index(plain)
                e += text.index(plain)
                alternatives.append(f"{sid}|{_bc2_offsets(text, b, e)}|{text[b:e]}")
    split_dir = folder / "bc2gm" / "bc2-format" / split
    split_dir.mkdir(parents=True)
    (split_dir / f"{split}.in").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    (split_dir / "GENE.eval").write_text("\n".join(genes) + "\n", encoding="utf-8")
    (split_dir / "ALTGENE.eval").write_text("\n".join(alternatives) + "\n", encoding="utf-8")
    return ids


# AnatEM documents: sentences of space-separated tokens
ANATEM_TRAIN = {
    "PMID-30": [
        "{Cells|Cell} in {heart tissue|Organ} were counted .",
        "The {liver|Organ} and {kidney|Organ} were enlarged .",
    ],
    "PMID-4": [
        "{Fibroblasts|Cell} from {skin|Tissue} were cultured .",
        "Tumour {cells|Cell} invaded the {heart|Organ} .",
    ],
    "PMID-12": [
        "Human {umbilical vein endothelial cells|Cell} ( {HUVEC|Cell} ) were used .",
        "{HUVEC|Cell} grew on the {skin|Tissue} graft .",
    ],
    "PMC-7-sec-01": [
        "{Blood|Organism_substance} samples were taken from the {liver|Organ} .",
        "The {tumour|Cancer} grew in the {kidney|Organ} .",
    ],
    "PMID-5": [
        "{Fibroblasts|Cell} in the {heart|Organ} were stained .",
        "No anatomy is named here .",
    ],
    "PMID-100": [
        "{Cells|Cell} of the {liver|Organ} were counted .",
        "The {tumour|Cancer} invaded the {skin|Tissue} .",
    ],
}
ANATEM_DEV = {
    "PMID-900": [
        "{Fibroblasts|Cell} in {heart tissue|Organ} were counted .",
        "The {kidney|Organ} was enlarged .",
    ],
    "PMID-901": ["{Blood|Organism_substance} samples were taken from the {heart|Organ} ."],
}
POS_TAGS = {
    "the": "DT",
    "in": "IN",
    "of": "IN",
    "from": "IN",
    "on": "IN",
    "and": "CC",
    "were": "VBD",
    "was": "VBD",
    "is": "VBZ",
    ".": ".",
    "(": "-LRB-",
    ")": "-RRB-",
}


def nersuite(sentences: list[str]) -> str:
    rows, offset = [], 0
    for marked in sentences:
        text, spans = unmark(marked)
        position = 0
        for token in text.split(" "):
            begin = text.index(token, position)
            position = begin + len(token)
            tag = "O"
            for b, e, label in spans:
                if b <= begin < e:
                    tag = ("B-" if begin == b else "I-") + label
            pos = POS_TAGS.get(token.lower(), "NNS" if token.endswith("s") else "NN")
            rows.append(
                f"{tag}\t{offset + begin}\t{offset + position}\t{token}\t{token.lower()}\t{pos}\tO"
            )
        rows.append("")
        offset += len(text) + 1
    return "\n".join(rows) + "\n"


def write_anatem(folder: Path, split: str, documents: dict[str, list[str]]) -> None:
    root = folder / "anatem"
    (root / "nersuite" / split).mkdir(parents=True)
    (root / "splits").mkdir(exist_ok=True)
    # the list is not in name order, so document_order matters
    (root / "splits" / f"{split}-documents.list").write_text(
        "\n".join(documents) + "\n", encoding="utf-8"
    )
    for doc_id, sentences in documents.items():
        (root / "nersuite" / split / f"{doc_id}.nersuite").write_text(
            nersuite(sentences), encoding="utf-8"
        )


UBERON_OBO = """\
format-version: 1.2

[Term]
id: UBERON:0000062
name: organ

[Term]
id: UBERON:0000948
name: heart
def: "A hollow, muscular organ." [ZFIN:curator]
synonym: "cardiac muscle organ" EXACT []
is_a: UBERON:0000062 ! organ

[Term]
id: UBERON:0002107
name: liver
is_a: UBERON:0000062 ! organ

[Term]
id: UBERON:0000479
name: tissue

[Term]
id: UBERON:0002097
name: skin of body
synonym: "skin" EXACT []
is_a: UBERON:0000479 ! tissue
"""
CL_OBO = """\
format-version: 1.2

[Term]
id: CL:0000000
name: cell

[Term]
id: CL:0000057
name: fibroblast
"""
CRAFT_TEXT = "endothelial cells of the cell wall\n"
KNOWTATOR = """\
<?xml version="1.0" encoding="UTF-8"?>
<annotations textSource="1.txt">
  <annotation>
    <mention id="craft_1" />
    <annotator id="a">A</annotator>
    <span start="0" end="17" />
    <spannedText>endothelial cells</spannedText>
  </annotation>
  <annotation>
    <mention id="craft_2" />
    <annotator id="a">A</annotator>
    <span start="0" end="11" />
    <span start="25" end="29" />
    <spannedText>endothelial ... cell</spannedText>
  </annotation>
  <classMention id="craft_1">
    <mentionClass id="CL:0000115">endothelial cell</mentionClass>
  </classMention>
  <classMention id="craft_2">
    <mentionClass id="CL:0000115">endothelial cell</mentionClass>
  </classMention>
</annotations>
"""
# hand-made word clusters (word<TAB>ids at three granularities)
CLUSTERS = (
    "cells\t0 1 2\nfibroblasts\t0 1 3\nheart\t1 2 4\nliver\t1 2 5\nkidney\t1 2 6\nskin\t1 3 7\n"
)


def write_craft(folder: Path) -> None:
    articles = folder / "craft" / "articles"
    (articles / "txt").mkdir(parents=True)
    (articles / "ids").mkdir()
    (articles / "txt" / "1.txt").write_text(CRAFT_TEXT, encoding="utf-8")
    (articles / "ids" / "craft-ids-train.txt").write_text("1\n", encoding="utf-8")
    (articles / "ids" / "craft-ids-dev.txt").write_text("", encoding="utf-8")
    concepts = folder / "craft" / "concept-annotation"
    for name, obo in (("UBERON", UBERON_OBO), ("CL", CL_OBO)):
        (concepts / name / name / "knowtator").mkdir(parents=True)
        with zipfile.ZipFile(concepts / name / name / f"{name}.obo.zip", "w") as archive:
            archive.writestr(f"{name}.obo", obo)
    (concepts / "CL" / "CL" / "knowtator" / "1.txt.knowtator.xml").write_text(
        KNOWTATOR, encoding="utf-8"
    )


@pytest.fixture
def corpora(tmp_path: Path) -> Path:
    folder = tmp_path / "corpora"
    write_bc2gm(folder, "train", GENE_TRAIN, "T")
    write_bc2gm(folder, "devel", GENE_DEV, "D")
    write_anatem(folder, "train", ANATEM_TRAIN)
    write_anatem(folder, "devel", ANATEM_DEV)
    write_craft(folder)
    (folder / "clusters.tsv").write_text(CLUSTERS, encoding="utf-8")
    return folder


GENE_WORKFLOW = """\
name: tiny_genes
gold:
  reader:
    component: bc2gm.reader.v1
    view: gold
    config: {corpus: CORPORA/bc2gm}
  train: {split: train}
  dev: {split: devel}
layers: [genes]
model:
  component: train.crf.mentions.v1
  config:
    label: GENE
    scoring: alt_eval
    eval_sentences: gold
    crf:
      scheme: BIOES
      c1: 0.03
      c2: 0.05
      iterations: 40
      features: {abbreviations: true}
      train_lexicon_folds: 2
      postprocess: [balance_brackets]
cross_validation: {folds: 2}
seed: 0
output: OUT
"""

ANATOMY_WORKFLOW = """\
name: tiny_anatomy
gold:
  reader:
    component: anatem.reader.v1
    view: gold
    config: {corpus: CORPORA/anatem}
  train: {split: train}
  dev: {split: devel}
layers: [anatomy]
model:
  component: train.crf.mentions.v1
  config:
    resources:
      ontologies: CORPORA/craft/concept-annotation
      mention_lexicon:
        component: craft.reader.v1
        config: {corpus: CORPORA/craft, layers: [concepts], ontologies: [CL]}
      cluster_text:
        - {component: craft.reader.v1, config: {corpus: CORPORA/craft, layers: []}, units: lines}
        - {definitions: [UBERON, CL]}
        - {component: anatem.reader.v1, config: {corpus: CORPORA/anatem, split: train}, units: tokens}
      pos_tagger:
        component: anatem.reader.v1
        config: {corpus: CORPORA/anatem, split: train, pos: true}
        order: id
    document_order: id
    members:
      - scheme: BIOES
        c1: 0.03
        c2: 0.05
        iterations: 30
        features: {abbreviations: true}
        ontology_lexicon: true
        clusters: CORPORA/clusters.tsv
      - scheme: BIOES
        c1: 0.03
        c2: 0.05
        iterations: 30
        features: {abbreviations: true}
        ontology_lexicon: true
        craft_lexicon: [CL]
        clusters: CORPORA/clusters.tsv
        pos_model: POS
        postprocess: [drop_long_chunks]
      - scheme: BIO
        iterations: 30
        features: {abbreviations: true}
        ontology_lexicon: true
        clusters: CORPORA/clusters.tsv
    needed: 2
cross_validation: {folds: 0}
seed: 0
output: OUT
"""


def workflow(tmp_path: Path, text: str, corpora: Path, out: Path, name: str = "train.yaml") -> Path:
    path = tmp_path / name
    path.write_text(
        text.replace("CORPORA", str(corpora))
        .replace("OUT", str(out))
        .replace("POS", str(tmp_path / "cache" / "pos.crfsuite")),
        encoding="utf-8",
    )
    return path


def tag(component: CrfNer, text: str, sentences: bool = False) -> list[tuple[str, str]]:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    if sentences:
        cas.add(cas.typesystem.get_type(SENTENCE)(begin=0, end=len(text)))
    component.process(cas)
    mention_type = component.config.mention_type
    return [(m.get_covered_text(), m.value) for m in cas.select(mention_type)]


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


# ----------------------------------------------------------------------------- genes


def test_gene_model_cross_validation_report_card_and_runtime_component(
    tmp_path: Path, corpora: Path
) -> None:
    out = tmp_path / "out"
    loaded = load_training_workflow(workflow(tmp_path, GENE_WORKFLOW, corpora, out))
    lines: list[str] = []
    result = run_training(loaded, log=lines.append)

    report = json.loads((out / "training-report.json").read_text("utf-8"))
    folds = report["cross_validation"]["folds"]
    # contiguous folds in sentence-id order: T1..T6, then T7..T12
    assert [f["held_out"] for f in folds] == [
        [f"T{n}" for n in range(1, 7)],
        [f"T{n}" for n in range(7, 13)],
    ]
    keys = {"p", "r", "f", "strict_p", "strict_r", "strict_f"}
    for fold in folds:
        assert set(fold["scores"]) == keys
        assert all(0.0 <= v <= 100.0 for v in fold["scores"].values())
    assert report["final"]["model"] == str(out / "final" / "model")
    dev = report["final"]["dev_scores"]
    assert set(dev) == keys

    # the model folder is a plain CRF folder, loaded by the runtime components
    model = result.model_dir
    meta = json.loads((model / META_FILE).read_text("utf-8"))
    assert meta["scheme"] == "BIOES" and meta["postprocess"] == ["balance_brackets"]
    assert meta["training"]["c1"] == 0.03 and meta["training"]["train_lexicon_folds"] == 2
    assert meta["features"]["abbreviations"] is True and meta["lexicon"] == "lexicon.tsv"
    gene = GeneNer(GeneNerConfig(model=str(model)), RunContext(output_dir=tmp_path))
    assert ("BRCA1", "GENE") in tag(gene, "The BRCA1 gene is mutated in breast cancer .")

    # the dev strict scores are those of the runtime component's mentions, counted here
    tp = fp = fn = 0
    for marked in GENE_DEV:
        text, spans = unmark(marked)
        cas = cassis.Cas(typesystem=load_typesystem())
        cas.sofa_string = text
        cas.add(cas.typesystem.get_type(SENTENCE)(begin=0, end=len(text)))
        gene.process(cas)
        found = {(m.begin, m.end) for m in cas.select(GENE_MENTION)}
        gold = {(b, e) for b, e, _ in spans}
        tp, fp, fn = tp + len(found & gold), fp + len(found - gold), fn + len(gold - found)
    expected = [round(100 * v, 2) for v in prf(tp, fp, fn)]
    assert [dev["strict_p"], dev["strict_r"], dev["strict_f"]] == expected
    assert dev["f"] >= dev["strict_f"]  # alternatives only add matches

    card = (model / "MODEL_CARD.md").read_text("utf-8")
    assert "2-fold cross-validation" in card and "| fold 2 (held out) |" in card
    assert f"| dev | {dev['p']:.2f} | {dev['r']:.2f} | {dev['f']:.2f} |" in card
    assert "alt_eval" in card and "One linear-chain CRF" in card
    assert any("training a CRF (BIOES, c1 0.03, c2 0.05, 40 iterations)" in ln for ln in lines)

    # a rerun finds the folds and the final model trained
    lines.clear()
    again = run_training(loaded, log=lines.append)
    assert any("fold 1/2: already done" in line for line in lines)
    assert any("already trained with these settings and data; skipped" in ln for ln in lines)
    assert again.report["final"]["dev_scores"] == dev


# ----------------------------------------------------------------------------- anatomy


@pytest.mark.slow
def test_anatomy_vote_of_three_crfs_with_lexicons_clusters_and_pos(
    tmp_path: Path, corpora: Path
) -> None:
    out = tmp_path / "out"
    loaded = load_training_workflow(workflow(tmp_path, ANATOMY_WORKFLOW, corpora, out))
    lines: list[str] = []
    result = run_training(loaded, log=lines.append)

    model = result.model_dir
    assert json.loads((model / META_FILE).read_text("utf-8")) == {
        "members": ["member1", "member2", "member3"],
        "needed": 2,
        "mention_type": ANATOMY_MENTION,
    }
    metas = [json.loads((model / f"member{n}" / META_FILE).read_text("utf-8")) for n in (1, 2, 3)]
    assert [m["scheme"] for m in metas] == ["BIOES", "BIOES", "BIO"]
    assert [m["training"]["c1"] for m in metas] == [0.03, 0.03, 0.1]
    assert [m["clusters"] for m in metas] == ["clusters.tsv"] * 3
    assert [m["pos"] for m in metas] == [None, "pos.crfsuite", None]
    assert metas[1]["postprocess"] == ["drop_long_chunks"]
    assert metas[1]["training"]["craft_lexicon"] == ["CL"]
    # the CRAFT mention texts are in member 2's lexicon only; the ontology names in all
    lexicons = [(model / f"member{n}" / "lexicon.tsv").read_text("utf-8") for n in (1, 2, 3)]
    assert ["K-CL\tendothelial cell" in lex for lex in lexicons] == [False, True, False]
    assert all("UBERON\theart" in lex and "U-Organ\tliver" in lex for lex in lexicons)
    assert (tmp_path / "cache" / "pos.crfsuite").is_file()  # trained once, kept as a cache
    assert any("training the POS tagger" in line for line in lines)

    dev = result.report["final"]["dev_scores"]
    assert set(dev) == {"p", "r", "f", "macro_f"}
    card = (model / "MODEL_CARD.md").read_text("utf-8")
    assert "A vote of 3 linear-chain CRFs (a mention is kept when 2 output it)" in card
    assert '"document_order": "id"' in card

    text = " ".join(unmark(s)[0] for s in ANATEM_TRAIN["PMID-30"])
    gold = {(text[b:e], c) for s in ANATEM_TRAIN["PMID-30"] for b, e, c in unmark(s)[1]}
    anatomy = AnatomyNer(AnatomyNerConfig(model=str(model)), RunContext(output_dir=tmp_path))
    found = set(tag(anatomy, text))
    assert found & gold, found
    generic = CrfNer(
        CrfNerConfig(model=str(model), mention_type=ANATOMY_MENTION),
        RunContext(output_dir=tmp_path),
    )
    assert set(tag(generic, text)) == found

    # resume: every member is found trained; a second run elsewhere gives the same bytes
    lines.clear()
    run_training(loaded, log=lines.append)
    assert sum("already trained" in line for line in lines) == 3
    other = load_training_workflow(
        workflow(tmp_path, ANATOMY_WORKFLOW, corpora, tmp_path / "again", "again.yaml")
    )
    second = run_training(other, log=lambda line: None)
    for n in (1, 2, 3):
        member = f"member{n}/{MODEL_FILE}"
        assert (second.model_dir / member).read_bytes() == (model / member).read_bytes()
    assert second.report["final"]["dev_scores"] == dev
    # other clusters make other models: nothing is skipped
    with (corpora / "clusters.tsv").open("a", encoding="utf-8") as clusters:
        clusters.write("tumour\t2 4 8\n")
    lines.clear()
    run_training(loaded, log=lines.append)
    assert not any("already trained" in line for line in lines)
    assert sum("training a CRF" in line for line in lines) == 3


TWO_MEMBERS = """\
name: tiny_anatomy_two
gold:
  reader:
    component: anatem.reader.v1
    view: gold
    config: {corpus: CORPORA/anatem}
  train: {split: train}
  dev: {split: devel}
layers: [anatomy]
model:
  component: train.crf.mentions.v1
  config:
    document_order: id
    members:
      - scheme: BIOES
        iterations: 20
        features: {abbreviations: true}
        clusters: CORPORA/clusters.tsv
        embedding_clusters: CORPORA/embedding-clusters.tsv
      - scheme: BIO
        iterations: 20
        clusters: CORPORA/clusters.tsv
    needed: 1
    document_postprocess: [propagate_abbreviations]
output: OUT
"""


def test_embedding_clusters_and_document_steps_reach_the_model_and_component(
    tmp_path: Path, corpora: Path
) -> None:
    # hand-made embedding clusters (word<TAB>ids), distinct from the PPMI ones
    (corpora / "embedding-clusters.tsv").write_text(
        "cells\t3 4 5\nheart\t0 1 2\nhuvec\t3 4 6\nliver\t0 1 3\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    loaded = load_training_workflow(workflow(tmp_path, TWO_MEMBERS, corpora, out))
    lines: list[str] = []
    result = run_training(loaded, log=lines.append)
    model = result.model_dir
    assert json.loads((model / META_FILE).read_text("utf-8")) == {
        "members": ["member1", "member2"],
        "needed": 1,
        "mention_type": ANATOMY_MENTION,
        "document_postprocess": ["propagate_abbreviations"],
    }
    metas = [json.loads((model / f"member{n}" / META_FILE).read_text("utf-8")) for n in (1, 2)]
    assert metas[0]["embedding_clusters"] == "embedding_clusters.tsv"
    assert metas[0]["features"]["embedding_clusters"] is True
    assert "embedding_clusters" not in metas[1] and not metas[1]["features"]["embedding_clusters"]
    assert (model / "member1" / "embedding_clusters.tsv").read_text("utf-8") == (
        corpora / "embedding-clusters.tsv"
    ).read_text("utf-8")
    assert "then propagate_abbreviations over each document's mentions" in (
        model / "MODEL_CARD.md"
    ).read_text("utf-8")

    anatomy = AnatomyNer(AnatomyNerConfig(model=str(model)), RunContext(output_dir=tmp_path))
    member = anatomy.tagger.members[0]
    features = member.features("The heart", tokenize("The heart"))
    assert "e0=0" in features[1] and "e=UNK" in features[0]
    assert anatomy.document_steps  # the vote's mentions are post-processed per document

    # other embedding clusters make another member 1; member 2 is kept
    with (corpora / "embedding-clusters.tsv").open("a", encoding="utf-8") as clusters:
        clusters.write("skin\t0 1 4\n")
    lines.clear()
    run_training(loaded, log=lines.append)
    assert sum("already trained" in line for line in lines) == 1
    assert sum("training a CRF" in line for line in lines) == 1


def test_a_kill_while_the_vote_meta_is_rewritten_leaves_the_whole_file(
    tmp_path: Path, corpora: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every run rewrites the model's meta.json after its members are marked done; a
    kill in the middle must not leave a truncated file that every rerun trusts."""
    import os

    loaded = load_training_workflow(workflow(tmp_path, TWO_MEMBERS, corpora, tmp_path / "out"))
    model = run_training(loaded, log=lambda line: None).model_dir
    before = (model / META_FILE).read_text("utf-8")
    replace, write_text = os.replace, Path.write_text

    def killed_replace(source: object, target: object) -> None:
        if Path(str(target)).name == META_FILE:
            raise KeyboardInterrupt  # killed before the rename
        replace(source, target)  # type: ignore[arg-type]

    def killed_write(path: Path, text: str, *args: object, **kwargs: object) -> int:
        if path.name == META_FILE:
            write_text(path, text[: len(text) // 2], *args, **kwargs)  # type: ignore[arg-type]
            raise KeyboardInterrupt  # killed half-way
        return write_text(path, text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", killed_replace)
    monkeypatch.setattr(Path, "write_text", killed_write)
    with pytest.raises(KeyboardInterrupt):
        run_training(loaded, log=lambda line: None)
    monkeypatch.undo()
    assert (model / META_FILE).read_text("utf-8") == before


def test_unknown_document_steps_are_reported(tmp_path: Path, corpora: Path) -> None:
    bad = TWO_MEMBERS.replace("[propagate_abbreviations]", "[propagate_everything]")
    errors = problems(workflow(tmp_path, bad, corpora, tmp_path / "out"))
    assert any(
        "train.yaml:24: model -> config -> document_postprocess" in e
        and "unknown document post-processing propagate_everything" in e
        for e in errors
    ), errors


# ----------------------------------------------------------------------------- validation


def problems(path: Path) -> list[str]:
    with pytest.raises(WorkflowValidationError) as info:
        load_training_workflow(path)
    return [issue.format("train.yaml") for issue in info.value.issues]


def test_layer_problems_are_reported_with_yaml_lines(tmp_path: Path, corpora: Path) -> None:
    out = tmp_path / "out"
    unknown = GENE_WORKFLOW.replace("layers: [genes]", "layers: [genez]")
    errors = problems(workflow(tmp_path, unknown, corpora, out))
    assert any(
        e.startswith("train.yaml:9: layers -> 0: train.crf.mentions.v1 cannot learn layer 'genez'")
        and "genes, anatomy" in e
        for e in errors
    ), errors
    # the AnatEM reader writes AnatomyMention, not GeneMention
    wrong_reader = ANATOMY_WORKFLOW.replace("layers: [anatomy]", "layers: [genes]")
    errors = problems(workflow(tmp_path, wrong_reader, corpora, out))
    assert any(
        e.startswith("train.yaml:3: gold -> reader: layer 'genes' needs GeneMention in view 'gold'")
        and "anatem.reader.v1 does not write" in e
        for e in errors
    ), errors
    both = GENE_WORKFLOW.replace("layers: [genes]", "layers: [genes, anatomy]")
    errors = problems(workflow(tmp_path, both, corpora, out))
    assert any("train.yaml:9: layers: a CRF model learns one mention layer" in e for e in errors)


def test_model_settings_problems_are_reported_with_yaml_lines(
    tmp_path: Path, corpora: Path
) -> None:
    out = tmp_path / "out"
    bad = GENE_WORKFLOW.replace("[balance_brackets]", "[balance_braces]").replace(
        "      iterations: 40", "      iterations: 40\n      c3: 1"
    )
    errors = problems(workflow(tmp_path, bad, corpora, out))
    assert any("train.yaml:21: model -> config -> crf -> c3: unknown key 'c3'" in e for e in errors)
    assert any("unknown post-processing balance_braces" in e for e in errors), errors
    both = ANATOMY_WORKFLOW.replace("    members:", "    crf: {scheme: BIO}\n    members:")
    errors = problems(workflow(tmp_path, both, corpora, out))
    assert any(
        e.startswith("train.yaml:27: model -> config -> crf: Value error, give exactly one of crf")
        for e in errors
    ), errors
    neither = GENE_WORKFLOW.replace("    crf:", "    crf_settings:")
    errors = problems(workflow(tmp_path, neither, corpora, out))
    assert any("unknown key 'crf_settings'" in e for e in errors), errors
    assert any("model -> config -> crf: Value error, give exactly one" in e for e in errors)
    too_many = ANATOMY_WORKFLOW.replace("needed: 2", "needed: 4")
    errors = problems(workflow(tmp_path, too_many, corpora, out))
    assert any(
        "train.yaml:50: model -> config -> needed: Value error, needed 4 is more" in e
        for e in errors
    ), errors
    # the gold sources and ontologies the settings need are checked before any document
    # is read (the clusters cache being absent, its text sources are needed)
    (corpora / "clusters.tsv").unlink()
    missing = ANATOMY_WORKFLOW.replace(
        "CORPORA/anatem, split: train}, units", "CORPORA/none, split: train}, units"
    )
    missing = missing.replace("{definitions: [UBERON, CL]}", "{definitions: [UBERON, GO]}")
    errors = problems(workflow(tmp_path, missing, corpora, out))
    assert any(
        e.startswith("train.yaml:10: model -> config: members 1, 2, 3: building the word clusters")
        and f"anatem.reader.v1: the AnatEM folder {corpora / 'none'} does not exist" in e
        for e in errors
    ), errors
    assert any(
        "the GO ontology needs " + str(corpora / "craft" / "concept-annotation" / "GO" / "GO") in e
        for e in errors
    ), errors


# ----------------------------------------------------------------------------- resources from gold views


def _resources(tmp_path: Path, corpora: Path):
    from casflow.components.crfsuite.trainer import CrfMentionTrainer, Resources
    from casflow.pipeline.component import TrainingContext

    loaded = load_training_workflow(workflow(tmp_path, ANATOMY_WORKFLOW, corpora, tmp_path / "o"))
    config = loaded.trainer.config
    assert isinstance(loaded.trainer.component_class, type(CrfMentionTrainer))
    context = TrainingContext(output_dir=tmp_path, workflow_dir=tmp_path, layers=("anatomy",))
    return config, Resources(config.resources, context, 0)


def test_craft_lexicon_comes_from_the_concept_mentions_of_gold_views(
    tmp_path: Path, corpora: Path
) -> None:
    config, resources = _resources(tmp_path, corpora)
    # the mention in two pieces is no name: only the contiguous one is read
    assert resources.mention_texts(lambda line: None) == [("endothelial cells", "CL")]
    member2 = config.members[1]
    lexicon = resources.static_lexicon(member2, lambda line: None)
    assert lexicon is not None
    assert lexicon.entries[("endothelial", "cell")] == {"K-CL"}
    # member 2 has the ontology lexicon too: names by ontology, UBERON's also by CARO class
    assert lexicon.entries[("fibroblast",)] == {"CL"}
    assert lexicon.entries[("liver",)] == {"UBERON", "U-Organ"}
    assert lexicon.entries[("skin",)] == {"UBERON", "U-Tissue"}
    only_ontologies = resources.static_lexicon(config.members[0], lambda line: None)
    assert only_ontologies is not None and ("endothelial", "cell") not in only_ontologies.entries


def test_cluster_text_is_the_gold_views_and_definitions_in_order(
    tmp_path: Path, corpora: Path
) -> None:
    _, resources = _resources(tmp_path, corpora)
    lines: list[str] = []
    texts = list(resources.cluster_text(lines.append))
    anatem_tokens = [
        " ".join(" ".join(unmark(s)[0] for s in sentences).split(" "))
        for sentences in ANATEM_TRAIN.values()  # the reader's order (no order: id given)
    ]
    assert texts == [
        "endothelial cells of the cell wall",  # CRAFT, by lines
        "",
        "A hollow, muscular organ.",  # UBERON's one definition; CL has none
        *anatem_tokens,  # AnatEM train, Token texts joined by spaces
    ]
    assert any("anatem.reader.v1" in line for line in lines)


def test_pos_tagger_learns_from_the_pos_of_gold_view_tokens(tmp_path: Path, corpora: Path) -> None:
    from casflow.components.crfsuite.pos_features import PosTagger, pos_sequences
    from casflow.pipeline.gold_sources import read_source

    config, resources = _resources(tmp_path, corpora)
    source = config.resources.pos_tagger
    context = resources.context
    per_document = read_source(source, context, lambda view, _: pos_sequences(view))
    first = sorted(ANATEM_TRAIN)[0]  # order: id
    sentence = unmark(ANATEM_TRAIN[first][0])[0]
    features, labels = per_document[0][0]
    words = [sentence[b:e] for b, e in tokenize(sentence)]
    assert len(features) == len(labels) == len(words)
    assert labels == [
        "PU"
        if not w[0].isalnum()
        else {"DT": "DT", "IN": "IN", "CC": "CC", "VBD": "VB", "VBZ": "VB", "NNS": "NNS"}.get(
            POS_TAGS.get(w.lower(), "NNS" if w.endswith("s") else "NN"), "NN"
        )
        for w in words
    ]
    model = resources.pos_model(str(tmp_path / "pos.crfsuite"), lambda line: None)
    assert PosTagger(model).tag(sentence, tokenize(sentence)) == labels


# ----------------------------------------------------------------------------- real corpora


@pytest.mark.corpus
def test_shipped_crf_training_workflows_validate(
    corpora_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CASFLOW_CORPORA", str(corpora_dir))
    for name, layer in (("train-gene.yaml", "genes"), ("train-anatomy.yaml", "anatomy")):
        loaded = load_training_workflow(REPO / "workflows" / name)
        assert loaded.resolved["model"]["component"] == "train.crf.mentions.v1"
        assert loaded.resolved["layers"] == [layer]


def test_warnings_about_the_gold_data_are_logged_and_in_the_report_and_card(
    tmp_path: Path, corpora: Path
) -> None:
    # a dev gene line whose text differs from the text at its offsets: kept, with a warning
    genes = corpora / "bc2gm" / "bc2-format" / "devel" / "GENE.eval"
    genes.write_text(genes.read_text("utf-8") + "D1|0 9|Wrong text\n", encoding="utf-8")
    out = tmp_path / "out"
    text = GENE_WORKFLOW.replace("cross_validation: {folds: 2}\n", "")
    lines: list[str] = []
    run_training(load_training_workflow(workflow(tmp_path, text, corpora, out)), log=lines.append)
    report = json.loads((out / "training-report.json").read_text("utf-8"))
    (said,) = report["data"]["warnings"]
    assert said["gold"] == "dev" and said["document"] is None  # the reader read the file whole
    assert said["category"] == "FormatWarning" and "GENE.eval:6: sentence D1" in said["message"]
    assert any("warning: dev listing: " in line and "GENE.eval:6" in line for line in lines)
    card = (out / "final" / "model" / "MODEL_CARD.md").read_text("utf-8")
    assert "1 warning(s) about the gold data" in card
