"""A workflow that combines three parsers' views in one run and scores the trust score."""

from __future__ import annotations

import json
from pathlib import Path

import cassis
import pytest

from casflow.components.combine.reparse import check_tree
from casflow.components.evaluators.adapters import dependency_sentences
from casflow.pipeline.cli import main
from casflow.pipeline.uima_java import find_uima_jar, java_available
from casflow.typesystem import SENTENCE_AGREEMENT

TEXT = "Pax6 binds DNA. It works.\n"
WORDS = [["Pax6", "binds", "DNA", "."], ["It", "works", "."]]
GOLD = ([2, 0, 2, 2], [2, 0, 2])
LABELS = (["nsubj", "root", "obj", "punct"], ["nsubj", "root", "punct"])
# brat mentions: "Pax6" (0-4) and "DNA" (11-14); each member misses or adds one.
GENES = {
    "gold": [(0, 4)],
    "p1": [(0, 4), (11, 14)],
    "p2": [(0, 4)],
    "p3": [],
}
# Each parser errs once, each on another word: the vote is right everywhere.
MEMBERS = {
    "p1": ([2, 0, 4, 2], [2, 0, 2]),
    "p2": ([2, 0, 2, 3], [2, 0, 2]),
    "p3": ([2, 0, 2, 2], [3, 0, 2]),
}

WORKFLOW = """\
name: combine-three-parsers
reader: {component: text.reader.v1, config: {input: docs}}
components:
  - {component: conllu.import.v1, view: gold, config: {path: "gold/{doc_id}.conllu"}}
  - {component: conllu.import.v1, view: p1, config: {path: "p1/{doc_id}.conllu"}}
  - {component: conllu.import.v1, view: p2, config: {path: "p2/{doc_id}.conllu"}}
  - {component: conllu.import.v1, view: p3, config: {path: "p3/{doc_id}.conllu"}}
  - component: combine.dependencies.v1
    view: combined
    config: {members: [p1, p2, {view: p3, weight: 1.5}]}
  - {component: brat.import.v1, view: p1, config: {path: "p1/{doc_id}.ann", types: {Gene: GeneMention}}}
  - {component: brat.import.v1, view: p2, config: {path: "p2/{doc_id}.ann", types: {Gene: GeneMention}}}
  - {component: brat.import.v1, view: p3, config: {path: "p3/{doc_id}.ann", types: {Gene: GeneMention}}}
  - {component: brat.import.v1, view: gold, config: {path: "gold/{doc_id}.ann", types: {Gene: GeneMention}}}
  - component: combine.mentions.v1
    view: combined
    config: {members: [p1, p2, p3], type: GeneMention}
writers:
  - {component: xmi.writer.v1}
evaluators:
  - id: dependencies
    component: eval.dependencies.v1
    config: {gold_view: gold, system_views: [p1, p2, p3, combined]}
  - id: trust
    component: eval.agreement.v1
    config: {gold_view: gold, system_views: [combined], layer: dependencies, bands: [0, 0.75, 1]}
  - id: genes
    component: eval.mentions.v1
    config: {gold_view: gold, system_views: [p1, p2, p3, combined], type: GeneMention}
  - id: gene_trust
    component: eval.agreement.v1
    config: {gold_view: gold, system_views: [combined], layer: mentions, type: GeneMention, bands: [0, 1]}
run: {jobs: 1, progress: false}
"""


def conllu(heads: tuple[list[int], list[int]]) -> str:
    lines = []
    for number, (words, sentence_heads, labels) in enumerate(
        zip(WORDS, heads, LABELS, strict=True)
    ):
        lines.append(f"# sent_id = {number}")
        for i, (word, head, label) in enumerate(
            zip(words, sentence_heads, labels, strict=True), start=1
        ):
            lines.append(f"{i}\t{word}\t_\t_\t_\t_\t{head}\t{label}\t_\t_")
        lines.append("")
    return "\n".join(lines) + "\n"


@pytest.fixture
def combined_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "doc1.txt").write_text(TEXT, encoding="utf-8")
    for name, heads in {"gold": GOLD, **MEMBERS}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "doc1.conllu").write_text(conllu(heads), encoding="utf-8")
        (tmp_path / name / "doc1.ann").write_text(
            "".join(
                f"T{i}\tGene {b} {e}\t{TEXT[b:e]}\n" for i, (b, e) in enumerate(GENES[name], 1)
            ),
            encoding="utf-8",
        )
    (tmp_path / "wf.yaml").write_text(WORKFLOW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "wf.yaml", "--output", "out"]) == 0
    return tmp_path / "out"


def test_three_views_are_combined_in_one_run(combined_run: Path) -> None:
    evaluation = json.loads((combined_run / "evaluation.json").read_text())
    las = {
        name: system["scores"]["las"]["f1"]
        for name, system in evaluation["dependencies"]["systems"].items()
    }
    assert las["combined"] == 1.0
    assert max(las[m] for m in MEMBERS) < 1.0
    bands = evaluation["trust"]["systems"]["combined"]["scores"]
    assert bands["all"]["sentences"] == 2
    assert sum(bands[b]["sentences"] for b in ("0-0.75", "0.75-1", ">=1")) == 2
    report = (combined_run / "evaluation.md").read_text()
    assert "## trust (`eval.agreement.v1`)" in report
    assert "majority_share 0.75-1: LAS" in report

    cas = cassis.load_cas_from_xmi(
        (combined_run / "xmi" / "doc1.xmi").read_text(),
        typesystem=cassis.load_typesystem((combined_run / "xmi" / "TypeSystem.xml").read_text()),
    )
    combined = cas.get_view("combined")
    for sentence in dependency_sentences(combined):
        spans = [w.span for w in sentence]
        check_tree([0 if w.governor is None else spans.index(w.governor) + 1 for w in sentence])
    agreement = sorted(combined.select(SENTENCE_AGREEMENT), key=lambda a: (a.begin, a.layer))
    assert [(a.begin, a.layer, a.members) for a in agreement] == [
        (0, "dependencies", 3),
        (0, "mentions:GeneMention", 3),
        (16, "dependencies", 3),
        (16, "mentions:GeneMention", 3),
    ]
    genes = {
        name: system["scores"]["strict"]["micro"]["f1"]
        for name, system in evaluation["genes"]["systems"].items()
    }
    assert genes["combined"] == 1.0 and genes["p1"] < 1.0 and genes["p3"] == 0.0
    gene_bands = evaluation["gene_trust"]["systems"]["combined"]["scores"]
    # sentence 1: Pax6 has a majority, DNA not (majority share 0.5); sentence 2: no mention
    assert gene_bands["0-1"]["sentences"] == 1 and gene_bands["0-1"]["f1"] == 1.0
    assert gene_bands[">=1"]["sentences"] == 1


@pytest.mark.slow
@pytest.mark.java
def test_combined_xmi_loads_in_uima_java(combined_run: Path) -> None:
    if not java_available() or find_uima_jar() is None:
        pytest.skip("java, javac or the Apache UIMA jar (libuima-core-java) is missing")
    assert main(["check-xmi", str(combined_run / "xmi"), "--spans"]) == 0


def test_a_member_view_without_parses_is_found_before_any_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = WORKFLOW.replace(
        'view: p3, config: {path: "p3/{doc_id}.conllu"}',
        'view: p3, config: {path: "p3/{doc_id}.conllu", layers: [sentences, tokens]}',
    ).replace("members: [p1, p2, {view: p3, weight: 1.5}]", "members: [p1, p2, p3, p4]")
    (tmp_path / "wf.yaml").write_text(broken, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "wf.yaml"]) == 2
    err = capsys.readouterr().err
    assert "'combine.dependencies.v1' requires Dependency in view 'p3'" in err
    assert "view 'p4'" in err
