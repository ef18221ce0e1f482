"""evaluation.html: tables, plots and error lists from a small in-process workflow.

The workflow scores three dependency parsers and their combination, two
constituency parsers and two gene taggers on hand-written CoNLL-U, Penn and
brat files. The fast tests read the HTML with lxml; the slow one opens it in
headless Chromium (Debian's ``chromium``), reads the rendered DOM and takes a
screenshot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lxml import html as lxml_html

from casflow.components.evaluators.base import span_error_examples
from casflow.components.metrics.length_bands import (
    band_of,
    score_length_bands,
    sentence_length_counts,
)
from casflow.pipeline.cli import main
from casflow.pipeline.counts import sum_counts
from casflow.pipeline.html_report import _marked
from casflow.pipeline.significance_report import load_evaluator

DOCS = {
    "doc1": "Pax6 binds DNA in the developing eye of mice. It works.\n",
    "doc2": "BRCA1 and BARD1 form a stable complex that repairs damaged DNA in human cells "
    "after irradiation. p53 acts.\n",
}
# (word, gold head, gold label) per sentence.
SENTENCES = {
    "doc1": [
        [
            ("Pax6", 2, "nsubj"),
            ("binds", 0, "root"),
            ("DNA", 2, "obj"),
            ("in", 7, "case"),
            ("the", 7, "det"),
            ("developing", 7, "amod"),
            ("eye", 2, "obl"),
            ("of", 9, "case"),
            ("mice", 7, "nmod"),
            (".", 2, "punct"),
        ],
        [("It", 2, "nsubj"), ("works", 0, "root"), (".", 2, "punct")],
    ],
    "doc2": [
        [
            ("BRCA1", 4, "nsubj"),
            ("and", 3, "cc"),
            ("BARD1", 1, "conj"),
            ("form", 0, "root"),
            ("a", 7, "det"),
            ("stable", 7, "amod"),
            ("complex", 4, "obj"),
            ("that", 9, "nsubj"),
            ("repairs", 7, "acl:relcl"),
            ("damaged", 11, "amod"),
            ("DNA", 9, "obj"),
            ("in", 14, "case"),
            ("human", 14, "amod"),
            ("cells", 9, "obl"),
            ("after", 16, "case"),
            ("irradiation", 9, "obl"),
            (".", 4, "punct"),
        ],
        [("p53", 2, "nsubj"), ("acts", 0, "root"), (".", 2, "punct")],
    ],
}
# Each parser's changes: (document, sentence, word number) -> (head, label).
PARSERS: dict[str, dict[tuple[str, int, int], tuple[int, str]]] = {
    "p1": {
        ("doc1", 0, 7): (3, "nmod"),
        ("doc2", 0, 14): (11, "nmod"),
        ("doc2", 0, 16): (11, "nmod"),
    },
    "p2": {("doc1", 0, 9): (3, "nmod"), ("doc2", 0, 3): (4, "conj"), ("doc2", 1, 1): (2, "obj")},
    "p3": {("doc1", 0, 7): (3, "nmod"), ("doc2", 0, 11): (4, "obj"), ("doc2", 0, 16): (14, "nmod")},
}
TREES = {
    "doc1": {
        "gold": [
            "(S (NP (NN Pax6)) (VP (VBZ binds) (NP (NN DNA)) (PP (IN in) (NP (NP (DT the) "
            "(VBG developing) (NN eye)) (PP (IN of) (NP (NNS mice)))))) (. .))",
            "(S (NP (PRP It)) (VP (VBZ works)) (. .))",
        ],
        "t1": [
            "(S (NP (NN Pax6)) (VP (VBZ binds) (NP (NP (NN DNA)) (PP (IN in) (NP (DT the) "
            "(VBG developing) (NN eye)))) (PP (IN of) (NP (NNS mice)))) (. .))",
            "(S (NP (PRP It)) (VP (VBZ works)) (. .))",
        ],
        "t2": [
            "(S (NP (NN Pax6)) (VP (VBZ binds) (NP (NN DNA)) (PP (IN in) (NP (DT the) "
            "(VBG developing) (NN eye) (PP (IN of) (NP (NNS mice)))))) (. .))",
            "(S (NP (PRP It)) (VP (VBZ works) (. .)))",
        ],
    },
    "doc2": {
        "gold": [
            "(S (NP (NN BRCA1) (CC and) (NN BARD1)) (VP (VBP form) (NP (NP (DT a) (JJ stable) "
            "(NN complex)) (SBAR (WHNP (WDT that)) (S (VP (VBZ repairs) (NP (VBN damaged) "
            "(NN DNA)) (PP (IN in) (NP (JJ human) (NNS cells))) (PP (IN after) "
            "(NP (NN irradiation)))))))) (. .))",
            "(S (NP (NN p53)) (VP (VBZ acts)) (. .))",
        ],
        "t1": [
            "(S (NP (NN BRCA1) (CC and) (NN BARD1)) (VP (VBP form) (NP (NP (DT a) (JJ stable) "
            "(NN complex)) (SBAR (WHNP (WDT that)) (S (VP (VBZ repairs) (NP (NP (VBN damaged) "
            "(NN DNA)) (PP (IN in) (NP (JJ human) (NNS cells)))) (PP (IN after) "
            "(NP (NN irradiation)))))))) (. .))",
            "(S (NP (NN p53)) (VP (VBZ acts)) (. .))",
        ],
        "t2": [
            "(S (NP (NP (NN BRCA1)) (CC and) (NP (NN BARD1))) (VP (VBP form) (NP (DT a) "
            "(JJ stable) (NN complex) (SBAR (WHNP (WDT that)) (S (VP (VBZ repairs) (NP (VBN "
            "damaged) (NN DNA)) (PP (IN in) (NP (JJ human) (NNS cells))) (PP (IN after) "
            "(NP (NN irradiation)))))))) (. .))",
            "(FRAG (NP (NN p53)) (VP (VBZ acts)) (. .))",
        ],
    },
}
GENES = {
    "gold": {"doc1": ["Pax6"], "doc2": ["BRCA1", "BARD1", "p53"]},
    "g1": {"doc1": ["Pax6", "DNA"], "doc2": ["BRCA1", "BARD1", "p53"]},
    "g2": {"doc1": ["Pax6 binds"], "doc2": ["BRCA1 and BARD1"]},
}

WORKFLOW = """\
name: report-fixture
reader: {component: text.reader.v1, config: {input: docs}}
components:
DEPENDENCY_VIEWS
TREE_VIEWS
GENE_VIEWS
  - component: combine.dependencies.v1
    view: combined
    config: {members: [p1, p2, p3]}
evaluators:
  - id: dependencies
    component: eval.dependencies.v1
    config:
      system_views: [p1, p2, p3, combined]
      significance: {metric: las/f1, iterations: 200, seed: 1, units: sentences}
  - id: trust
    component: eval.agreement.v1
    config: {system_views: [combined], layer: dependencies, bands: [0, 0.75, 1]}
  - id: parseval
    component: eval.constituents.v1
    config: {gold_view: tgold, system_views: [t1, t2]}
  - id: productions
    component: eval.productions.v1
    config: {gold_view: tgold, system_views: [t1, t2]}
  - id: genes
    component: eval.mentions.v1
    config:
      gold_view: ggold
      system_views: [g1, g2]
      type: GeneMention
      significance: {metric: strict/micro/f1, iterations: 200, seed: 1}
run: {jobs: 1, progress: false}
"""


def _conllu(doc: str, changes: dict[tuple[str, int, int], tuple[int, str]]) -> str:
    lines = []
    for number, sentence in enumerate(SENTENCES[doc]):
        lines.append(f"# sent_id = {number}")
        for i, (word, head, label) in enumerate(sentence, start=1):
            head, label = changes.get((doc, number, i), (head, label))
            lines.append(f"{i}\t{word}\t_\t_\t_\t_\t{head}\t{label}\t_\t_")
        lines.append("")
    return "\n".join(lines) + "\n"


def _brat(text: str, names: list[str]) -> str:
    lines, start = [], 0
    for i, name in enumerate(names, start=1):
        begin = text.index(name, start)
        lines.append(f"T{i}\tGene {begin} {begin + len(name)}\t{name}\n")
        start = begin + len(name)
    return "".join(lines)


@pytest.fixture(scope="module")
def report_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    (root / "docs").mkdir()
    steps = {"DEPENDENCY_VIEWS": [], "TREE_VIEWS": [], "GENE_VIEWS": []}
    for name, changes in {"gold": {}, **PARSERS}.items():
        (root / name).mkdir()
        for doc in DOCS:
            (root / name / f"{doc}.conllu").write_text(_conllu(doc, changes), encoding="utf-8")
        steps["DEPENDENCY_VIEWS"].append(
            f'  - {{component: conllu.import.v1, view: {name}, config: {{path: "{root}/{name}/{{doc_id}}.conllu"}}}}'
        )
    for name in ("gold", "t1", "t2"):
        view = "tgold" if name == "gold" else name
        (root / view).mkdir()
        for doc in DOCS:
            lines = "".join(f"( {tree} )\n" for tree in TREES[doc][name])
            (root / view / f"{doc}.tree").write_text(lines, encoding="utf-8")
        steps["TREE_VIEWS"].append(
            f'  - {{component: penn.import.v1, view: {view}, config: {{path: "{root}/{view}/{{doc_id}}.tree"}}}}'
        )
    for name, genes in GENES.items():
        view = "ggold" if name == "gold" else name
        (root / view).mkdir()
        for doc, text in DOCS.items():
            (root / view / f"{doc}.ann").write_text(_brat(text, genes[doc]), encoding="utf-8")
        steps["GENE_VIEWS"].append(
            f"  - {{component: brat.import.v1, view: {view}, "
            f'config: {{path: "{root}/{view}/{{doc_id}}.ann", types: {{Gene: GeneMention}}}}}}'
        )
    for doc, text in DOCS.items():
        (root / "docs" / f"{doc}.txt").write_text(text, encoding="utf-8")
    workflow = WORKFLOW.replace("input: docs", f"input: {root / 'docs'}")
    for key, lines in steps.items():
        workflow = workflow.replace(key, "\n".join(lines))
    (root / "wf.yaml").write_text(workflow, encoding="utf-8")
    code = main(["run", str(root / "wf.yaml"), "--output", str(root / "out")])
    assert code == 0
    return root / "out"


def _summary_cells(out: Path) -> dict[tuple[str, str], dict[str, float]]:
    """What the score tables must show: evaluator.summary of evaluation.json's scores."""
    summary = json.loads((out / "evaluation.json").read_text(encoding="utf-8"))
    expected = {}
    for label, entry in summary.items():
        evaluator = load_evaluator(out, label)
        for system, data in entry["systems"].items():
            expected[(label, system)] = evaluator.summary(data["scores"])
    return expected


def _check_tables(document: Any, out: Path) -> None:
    """Every score table cell equals evaluation.json, in value and as printed."""
    expected = _summary_cells(out)
    tables = document.xpath("//table[contains(@class, 'scores')]")
    assert {t.get("data-evaluator") for t in tables} == {
        "dependencies", "trust", "parseval", "productions", "genes",
    }  # fmt: skip
    seen = set()
    for table in tables:
        label = table.get("data-evaluator")
        columns = [th.text_content() for th in table.xpath("./thead/tr/th")][2:]
        for row in table.xpath("./tbody/tr"):
            system = row.get("data-system")
            cells = row.xpath("./td")[1:]
            values = expected[(label, system)]
            assert columns == list(values)
            for column, cell in zip(columns, cells, strict=True):
                assert float(cell.get("data-value")) == pytest.approx(values[column], abs=1e-12)
                value = values[column]
                shown = str(value) if isinstance(value, int) else f"{value:.2f}"
                assert cell.text_content() == shown
            seen.add((label, system))
    assert seen == set(expected)
    # The per-document table: each document's headline F, as evaluation-documents.json has it.
    per_document = json.loads((out / "evaluation-documents.json").read_text(encoding="utf-8"))
    genes = document.xpath("//table[@data-evaluator='genes' and contains(@class, 'per-document')]")
    systems = [th.text_content() for th in genes[0].xpath("./thead/tr/th")][1:]
    for row in genes[0].xpath("./tbody/tr"):
        doc = row.xpath("./th")[0].text_content()
        for system, cell in zip(systems, row.xpath("./td"), strict=True):
            f1 = per_document["genes"][system][doc]["strict"]["micro"]["f1"]
            assert float(cell.get("data-value")) == pytest.approx(f1, abs=1e-12)


def test_report_has_tables_plots_bands_and_errors(report_run: Path) -> None:
    page = (report_run / "evaluation.html").read_text(encoding="utf-8")
    assert "http://" not in page.replace("http://www.w3.org/", "")  # nothing fetched at view time
    assert "https://" not in page
    document = lxml_html.fromstring(page)
    _check_tables(document, report_run)
    # Best LAS in bold: the combination (every parser errs elsewhere, the vote is right).
    las = json.loads((report_run / "evaluation.json").read_text())["dependencies"]["systems"]
    best = max(las, key=lambda s: las[s]["scores"]["las"]["f1"])
    row = document.xpath(
        "//table[@data-evaluator='dependencies']/tbody/tr[@data-system=$s]", s=best
    )
    assert row[0].xpath("./td[contains(@class, 'best')]")
    # Plots: inline SVG, ids unique in the page (several figures in one document).
    svgs = document.xpath("//figure/svg")
    assert len(svgs) >= 10
    ids = document.xpath("//svg//@id")
    assert len(ids) == len(set(ids))
    captions = " ".join(document.xpath("//figcaption//text()"))
    assert "F by sentence length" in captions and "F by agreement" in captions
    # Significance, as tested: two rows per pair of gene taggers and parsers.
    significance = document.xpath("//table[contains(@class, 'significance')]/tbody/tr")
    assert len(significance) == 6 + 1
    # Production error classes of each tree system, totals as evaluation.json counts them.
    detail = document.xpath("//table[contains(@class, 'detail')]")
    assert "Clegg & Shepherd" in detail[0].xpath("./caption")[0].text_content()
    # Errors with the gold and system spans of a boundary error marked in context.
    items = document.xpath("//details[@data-system='g2']//li")
    boundary = [li for li in items if "boundary" in li.text_content()]
    assert boundary
    marked = {m.get("class"): m.text_content() for m in boundary[0].xpath(".//mark")}
    assert marked == {"both": "Pax6", "sys": " binds"}


def test_length_bands_in_the_counts_add_up(report_run: Path) -> None:
    summary = json.loads((report_run / "evaluation.json").read_text())
    for label in ("dependencies", "parseval"):
        for system in summary[label]["systems"].values():
            bands = system["scores"]["by_length"]
            # Dependencies: every sentence; constituents: those EVALB scored.
            assert sum(b["sentences"] for b in bands.values()) == 4
            assert bands["1-10"]["sentences"] == 3 and bands["11-20"]["sentences"] == 1
    lines = [
        json.loads(x) for x in (report_run / "evaluation-counts.jsonl").read_text().split("\n") if x
    ]
    for line in lines:
        if line["units"]:
            assert sum_counts(line["units"]) == pytest.approx(line["counts"])


def test_band_names_and_counts() -> None:
    assert [band_of(n) for n in (1, 10, 11, 50, 51)] == ["1-10", "1-10", "11-20", "41-50", ">50"]
    counts = sum_counts(
        [sentence_length_counts(5, 3, 4, 4), sentence_length_counts(7, 1, 2, 2),
         sentence_length_counts(60, 0, 3, 1)]
    )  # fmt: skip
    scores = score_length_bands(counts)
    assert scores["1-10"] == {"sentences": 2, "precision": 4 / 6, "recall": 4 / 6, "f1": 4 / 6}
    assert scores[">50"]["f1"] == 0.0 and scores["11-20"]["sentences"] == 0
    assert score_length_bands({"las/correct": 1}) == {}


def test_span_errors_grouped_with_their_context() -> None:
    text = "Mutant BRCA1 gene binds p53 here."
    context = 5

    def error(kind: str, begin: int, end: int, label: str = "GENE") -> dict[str, Any]:
        left = text[max(0, begin - context) : begin]
        return {
            "type": kind, "begin": begin, "end": end, "label": label, "text": text[begin:end],
            "context": f"{left}[[{text[begin:end]}]]{text[end:end + context]}",
        }  # fmt: skip

    examples = span_error_examples(
        [error("FN", 7, 12), error("FP", 7, 17), error("FN", 24, 27), error("FP", 29, 33)]
    )
    assert [e.note for e in examples] == ["boundary", "missed", "spurious"]
    first = examples[0]
    assert first.text == text[2:22] and first.start == 2
    assert [first.text[b:e] for b, e in first.gold] == ["BRCA1"]
    assert [first.text[b:e] for b, e in first.system] == ["BRCA1 gene"]
    assert _marked(first) == (
        'tant <mark class="both">BRCA1</mark><mark class="sys"> gene</mark> bind'
    )
    (label,) = span_error_examples([error("FN", 7, 12), error("FP", 7, 12, "PROTEIN")])
    assert label.note == "label: gold GENE, system PROTEIN"


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


@pytest.mark.slow
def test_report_in_headless_chromium(report_run: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("headless Chromium not installed (Debian: apt-get install chromium)")
    page = (report_run / "evaluation.html").resolve().as_uri()
    common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*common, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    document = lxml_html.fromstring(dom)
    _check_tables(document, report_run)
    rendered = document.xpath("//figure/svg[contains(@class, 'plot')]")
    assert len(rendered) >= 10 and all(svg.xpath(".//path") for svg in rendered)
    screenshot = tmp_path / "evaluation.png"
    subprocess.run(
        [*common, "--window-size=1200,3000", f"--screenshot={screenshot}", page],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 50_000  # a page of tables and plots, not a blank one
    if keep := os.environ.get("CASFLOW_REPORT_SCREENSHOT"):  # to look at it after the run
        shutil.copyfile(screenshot, keep)


def test_error_lists_take_examples_from_every_document(
    report_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import casflow.pipeline.html_report as html_report

    monkeypatch.setattr(html_report, "MAX_ERRORS", 2)
    found = html_report._collect_examples(
        report_run / "evaluation-errors.jsonl", {"genes": load_evaluator(report_run, "genes")}
    )
    shown, total = found["genes"]["g2"]
    # g2 errs once in doc1 and twice in doc2: the two shown come from both documents.
    assert total == 3
    assert [document for document, _ in shown] == ["doc1", "doc2"]


def test_report_command_writes_the_same_page_again(report_run: Path) -> None:
    page = report_run / "evaluation.html"
    written = page.read_text(encoding="utf-8")
    page.unlink()
    assert main(["report", str(report_run)]) == 0
    assert page.read_text(encoding="utf-8") == written  # same inputs, same file
    assert main(["report", str(report_run / "missing")]) != 0


def test_damaged_evaluation_files_are_named_with_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "evaluation.json").write_text('{"tokens": {\n  "component": \n}\n')
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'evaluation.json'}:3: not JSON" in err and "Traceback" not in err
    args = ["significance", str(tmp_path), "--evaluator", "tokens", "--metric", "f1"]
    assert main([*args, "--systems", "a", "b"]) == 2
    assert f"{tmp_path / 'evaluation.json'}:3: not JSON" in capsys.readouterr().err

    scores = {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp": 1, "fp": 0, "fn": 0}
    summary = {
        "tokens": {
            "component": "eval.tokens.v1",
            "gold_view": "gold",
            "config": {"system_views": ["a"]},
            "systems": {"a": {"documents": 1, "counts": {"token/tp": 1}, "scores": scores}},
        }
    }
    (tmp_path / "evaluation.json").write_text(json.dumps(summary))
    line = {"evaluator": "tokens", "system": "a", "document": "d", "type": "FP"}
    (tmp_path / "evaluation-errors.jsonl").write_text(json.dumps(line) + "\n{broken\n")
    assert main(["report", str(tmp_path)]) == 2
    assert f"{tmp_path / 'evaluation-errors.jsonl'}:2: not JSON" in capsys.readouterr().err


def test_a_system_without_evaluated_documents_is_neither_scored_nor_best() -> None:
    # Its scores are those of no counts: 0.00 everywhere, and were marked best when no
    # system had a document.
    from casflow.pipeline.component import RunContext
    from casflow.pipeline.html_report import _overview, _score_table
    from casflow.pipeline.registry import registry

    cls = registry().get("eval.constituents.v1")
    evaluator = cls(cls.Config.model_validate({"system_views": ["a", "b"]}), RunContext(Path(".")))
    none = {"documents": 0, "counts": {}, "scores": evaluator.score({})}
    counts = {"parseval/sentences": 1, "parseval/valid": 1, "parseval/matched": 3,
              "parseval/gold": 4, "parseval/test": 4}  # fmt: skip
    some = {"documents": 1, "counts": counts, "scores": evaluator.score(counts)}
    assert _score_table("c", evaluator, {"a": none, "b": none}) == (
        "<p>(no document was evaluated)</p>"
    )
    entry = {"component": cls.name, "systems": {"a": none, "b": some}}
    table = lxml_html.fromstring(_score_table("c", evaluator, entry["systems"]))
    row_a = table.xpath("//tr[@data-system='a']/td")
    assert row_a[0].text_content() == "0" and all(td.text_content() == "" for td in row_a[1:])
    assert not table.xpath("//tr[@data-system='a']//*[@class='best']")
    overview = lxml_html.fromstring(_overview({"c": entry}, {"c": evaluator}))
    assert overview.xpath("//tr[@data-system='a']/td")[0].text_content() == ""
    assert overview.xpath("//tr[@data-system='b']/td")[0].text_content() == "75.00"
    assert _overview({"c": {"systems": {"a": none, "b": none}}}, {"c": evaluator}) == ""


def _tokens_run(folder: Path) -> Path:
    """A finished run's evaluation.json (eval.tokens.v1, system a), hand-written."""
    folder.mkdir()
    scores = {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp": 1, "fp": 0, "fn": 0}
    summary = {
        "tokens": {
            "component": "eval.tokens.v1",
            "gold_view": "gold",
            "config": {"system_views": ["a"]},
            "systems": {"a": {"documents": 1, "counts": {"token/tp": 1}, "scores": scores}},
        }
    }
    (folder / "evaluation.json").write_text(json.dumps(summary), encoding="utf-8")
    return folder


def _damage_summary(folder: Path, change: Any) -> None:
    path = folder / "evaluation.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(change(summary)), encoding="utf-8")


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (
            lambda f: (f / "workflow.resolved.yaml").write_text("name: [unclosed\n"),
            "workflow.resolved.yaml:2: not YAML (expected ',' or ']', but got '<stream end>'); "
            "the file is damaged: delete it (the page then takes its title from "
            "run-report.json) or run the workflow again",
        ),
        (
            lambda f: (f / "workflow.resolved.yaml").write_text("- a list\n"),
            "workflow.resolved.yaml: a YAML list, not a workflow",
        ),
        (
            lambda f: _damage_summary(
                f, lambda s: {"tokens": {**s["tokens"], "component": "eval.gone.v1"}}
            ),
            "evaluation.json: evaluator 'tokens' is 'eval.gone.v1', which cannot be used here "
            "(unknown component 'eval.gone.v1'.",
        ),
        (
            lambda f: _damage_summary(
                f,
                lambda s: {"tokens": {**s["tokens"], "config": {"old_option": 1}}},
            ),
            "evaluation.json: the config of evaluator 'tokens' does not fit this casflow's "
            "eval.tokens.v1 (old_option: Extra inputs are not permitted); use the casflow "
            "version that wrote the run, or run the workflow again with this one",
        ),
        (
            lambda f: _damage_summary(f, lambda s: {"tokens": {"component": "eval.tokens.v1"}}),
            "evaluation.json: evaluator 'tokens': no 'gold_view', 'config', 'systems', as "
            "casflow writes it; the file is damaged",
        ),
        (
            lambda f: (f / "evaluation.json").write_text("[]"),
            "evaluation.json: a JSON list, not the object of evaluators casflow writes; the "
            "file is damaged: run the workflow again into a new output folder (or with "
            "--overwrite)",
        ),
        (
            lambda f: (f / "evaluation-documents.json").write_text("[]"),
            "evaluation-documents.json: a JSON list",
        ),
        (
            lambda f: (f / "evaluation-errors.jsonl").write_text('{"a": 1}\n'),
            "evaluation-errors.jsonl:1: no 'evaluator', 'system', 'document' on this line, "
            "which casflow writes on every line; the file is damaged",
        ),
        (
            lambda f: (f / "evaluation-errors.jsonl").write_text("[1]\n"),
            "evaluation-errors.jsonl:1: a JSON list, not the object casflow writes",
        ),
        (
            lambda f: (f / "evaluation-errors.jsonl").write_text(
                '{"evaluator": "tokens", "system": "a", "document": "d", "unit": "token", '
                '"type": "FN", "begin": "zero", "end": 3}\n'
            ),
            "evaluation-errors.jsonl: the errors of document 'd' (tokens, a) are not as "
            "eval.tokens.v1 writes them (ValueError: invalid literal",
        ),
        (
            lambda f: (f / "evaluation.json").unlink(),
            "evaluation.json not found; give the output folder of a run with evaluators, or "
            "run the workflow with evaluators first (casflow run)",
        ),
    ],
)
def test_damaged_inputs_of_the_report_are_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, said: str
) -> None:
    out = _tokens_run(tmp_path / "out")
    damage(out)
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"casflow report: {out}") and said in err, err
    assert err.count("\n") == 1


def test_the_report_is_not_rebuilt_from_an_earlier_runs_evaluation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What run-report.json holds after a run that wrote no evaluation: the evaluation
    # files in the folder are an earlier run's, and a page from them would mislead.
    out = _tokens_run(tmp_path / "out")
    report = out / "run-report.json"
    interrupted = {"signal": "SIGTERM", "exit_status": 143, "documents_not_finished": ["d2"],
                   "listing_finished": False}  # fmt: skip
    cases = [
        ({"interrupted": interrupted}, "the last run was stopped by SIGTERM and wrote no "
         "evaluation, so the evaluation files here are an earlier run's; run the same command "
         "(casflow run) again to finish the run; it writes them"),
        ({"final_files_error": "could not write the run's final files"},
         "the last run stopped early (could not write the run's final files) and wrote no "
         "evaluation"),
        ({}, "the last run had no evaluators and wrote no evaluation, so the evaluation files "
         "here are an earlier run's; run a workflow with evaluators into this folder"),
    ]  # fmt: skip
    for fields, said in cases:
        report.write_text(json.dumps({"workflow": "wf.yaml", "evaluation": None, **fields}))
        assert main(["report", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"casflow report: {report}: {said}") and err.count("\n") == 1
        assert not (out / "evaluation.html").exists()
    # A folder whose runs never had evaluators (the quick start's) holds no earlier
    # run's evaluation either: the message says that it has none, not that it is old.
    summary = out / "evaluation.json"
    kept = summary.read_bytes()
    summary.unlink()
    report.write_text(json.dumps({"workflow": "wf.yaml", "evaluation": None}))
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert "evaluation.json not found; give the output folder of a run with evaluators" in err
    assert "earlier run" not in err
    summary.write_bytes(kept)
    # The last run wrote its evaluation; a run report from before that field was written
    # says nothing either way.
    for fields in ({"evaluation": {"tokens": {}}}, {}):
        report.write_text(json.dumps({"workflow": "wf.yaml", **fields}))
        assert main(["report", str(out)]) == 0


def _point(f1: float) -> dict[str, dict[str, float]]:
    return {"strict": {"precision": f1, "recall": f1, "f1": f1},
            "overlap": {"precision": f1, "recall": f1, "f1": f1}}  # fmt: skip


def test_long_view_names_under_the_bars_stay_out_of_the_next_row() -> None:
    # 14 systems do not fit two panels side by side: the second panel goes under the
    # first, and the first's rotated labels ran into it under a fixed spacing.
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from casflow.pipeline.html_report import PLOT_STYLE, _prf_bars

    points = {
        f"{name}-biobert-large-cased-v1.1-finetuned-anatem-seed{seed}": _point(0.7)
        for seed in range(2)
        for name in ("m1", "m2", "m3", "shipped", "majority", "union", "intersection")
    }
    with plt.rc_context(PLOT_STYLE):
        figure = _prf_bars(points)
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        first, second = (a for a in figure.axes if a.get_visible())
        assert first.get_position().y0 > second.get_position().y1  # one above the other
        below = min(t.get_window_extent(renderer).y0 for t in first.get_xticklabels())
        top_of_next = max(
            second.get_window_extent(renderer).y1, second.title.get_window_extent(renderer).y1
        )
        assert below > top_of_next
        labels = [t.get_window_extent(renderer) for t in second.get_xticklabels()]
        assert min(box.y0 for box in labels) >= 0  # the last row's labels inside the figure
        plt.close(figure)


def test_view_names_are_drawn_as_text_not_tex() -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from casflow.pipeline.html_report import PLOT_STYLE, _Figures, _pr_scatter, _prf_bars

    points = {"a$_1$": _point(0.5), "x$\\foo$": _point(0.6)}
    with plt.rc_context(PLOT_STYLE):
        figures = _Figures()
        # "x$\foo$" stopped the whole page with a mathtext ParseFatalException.
        svg = figures.add(_prf_bars(points), "bars") + figures.add(_pr_scatter(points), "pr")
    texts = lxml_html.fromstring(f"<div>{svg}</div>").xpath("//text//text()")
    assert "a$_1$" in texts and "x$\\foo$" in texts


def test_nothing_to_score_is_a_dash_not_a_best_zero() -> None:
    from casflow.pipeline.component import RunContext
    from casflow.pipeline.evaluation_report import _markdown_table
    from casflow.pipeline.html_report import _overview, _score_table
    from casflow.pipeline.registry import registry

    cls = registry().get("eval.mentions.v1")
    config = cls.Config.model_validate(
        {"system_views": ["empty", "spurious"], "criteria": ["strict", "overlap"]}
    )
    evaluator = cls(config, RunContext(Path(".")))
    # Gold without mentions: "empty" finds none (nothing to score: P, R, F undefined),
    # "spurious" finds one (precision 0 and F 0, by error). Both were 0.00 in bold.
    spurious = {"strict/micro/fp": 1, "overlap/micro/fp": 1}
    zeros = {f"{c}/micro/{k}": 0 for c in ("strict", "overlap") for k in ("tp", "fp", "fn")}
    systems = {
        "empty": {"documents": 2, "counts": zeros, "scores": evaluator.score(zeros)},
        "spurious": {"documents": 2, "counts": spurious, "scores": evaluator.score(spurious)},
    }
    table = lxml_html.fromstring(_score_table("genes", evaluator, systems))
    empty = table.xpath("//tr[@data-system='empty']/td")
    assert empty[0].text_content() == "2"
    assert {td.text_content() for td in empty[1:]} == {"–"}
    assert all("undefined" in td.get("class") for td in empty[1:])
    spurious_cells = table.xpath("//tr[@data-system='spurious']/td")[1:]
    assert {td.text_content() for td in spurious_cells} == {"0.00"}
    assert not table.xpath("//*[contains(@class, 'best')]")  # one score per column
    markdown = "\n".join(_markdown_table("genes", cls.name, evaluator, systems))
    assert "| empty | 2 | – | – | – | – |" in markdown
    entry = {"component": cls.name, "systems": systems}
    overview = lxml_html.fromstring(_overview({"genes": entry}, {"genes": evaluator}))
    assert overview.xpath("//tr[@data-system='empty']/td")[0].text_content() == "–"
    assert overview.xpath("//tr[@data-system='spurious']/td")[0].text_content() == "0.00"
    tokens = registry().get("eval.tokens.v1")
    evaluator = tokens(tokens.Config.model_validate({"system_views": ["a"]}), RunContext(Path(".")))
    assert evaluator.summary(evaluator.score({"token/tp": 0, "token/fp": 0, "token/fn": 0})) == {}
    assert evaluator.summary(evaluator.score({"token/fp": 1})) == {"P": 0.0, "R": 0.0, "F": 0.0}


def test_an_agreement_band_without_mentions_has_no_f() -> None:
    from casflow.components.metrics.agreement import SentenceCounts, band_counts
    from casflow.pipeline.component import RunContext
    from casflow.pipeline.registry import registry

    cls = registry().get("eval.agreement.v1")
    bounds = [0, 0.5, 0.9, 1]
    config = cls.Config.model_validate({"system_views": ["combined"], "bands": bounds})
    evaluator = cls(config, RunContext(Path(".")))
    # No sentence in 0.5-0.9, and the one at 1 without tokens on either side (LAS).
    sentences = [SentenceCounts(0.2, 1, 2, 2), SentenceCounts(1.0, 0, 0, 0)]
    scores = evaluator.score(band_counts(sentences, bounds))
    columns = evaluator.summary(scores)
    assert columns["majority_share 0.5-0.9: sentences"] == 0
    assert "majority_share 0.5-0.9: LAS" not in columns  # was 0.00, a score
    assert columns["majority_share >=1: sentences"] == 1
    assert "majority_share >=1: LAS" not in columns
    assert columns["majority_share 0-0.5: LAS"] == 50.0
    assert columns["all: LAS"] == 50.0


def test_many_documents_draw_their_dots_as_one_image() -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from casflow.pipeline.html_report import (
        MAX_VECTOR_DOTS,
        PLOT_STYLE,
        _document_spread,
        _Figures,
    )

    def page(documents: int) -> str:
        values = {s: [(i % 97) / 97 for i in range(documents)] for s in ("a", "b")}
        with plt.rc_context(PLOT_STYLE):
            return _Figures().add(_document_spread(values, "F"), "spread")

    few, many = page(MAX_VECTOR_DOTS // 2), page(MAX_VECTOR_DOTS // 2 + 1)
    assert "<image" not in few and "<image" in many
    assert len(many) < len(few) / 5  # one element per dot made 5 MB pages


def test_sections_have_distinct_ids_for_labels_alike() -> None:
    from casflow.pipeline.html_report import _anchors

    anchors = _anchors(["genes b", "genes-b", "genes?b", "anatomy"])
    assert len(set(anchors.values())) == 4
    assert anchors["genes b"] == "eval-genes-b" and anchors["anatomy"] == "eval-anatomy"


def _pdf_pages(pdf: Path) -> int:
    # The page tree's root counts every page: the largest /Count in the file.
    counts = [int(n) for n in __import__("re").findall(rb"/Count (\d+)", pdf.read_bytes())]
    return max(counts)


@pytest.mark.slow
def test_printing_unfolds_the_error_lists(report_run: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("headless Chromium not installed (Debian: apt-get install chromium)")
    page = (report_run / "evaluation.html").read_text(encoding="utf-8")
    assert "<details" in page and "<details open" not in page.replace(
        '<details class="errors" data-system="g1" open', ""
    )  # closed lists, which the content of a closed <details> is not printed
    unfolded = tmp_path / "unfolded.html"
    unfolded.write_text(page.replace("<details ", "<details open "), encoding="utf-8")
    common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
              "--no-pdf-header-footer"]  # fmt: skip
    pages = []
    for html_file, pdf in ((report_run / "evaluation.html", "as-is.pdf"), (unfolded, "open.pdf")):
        subprocess.run(
            [*common, f"--print-to-pdf={tmp_path / pdf}", html_file.resolve().as_uri()],
            capture_output=True,
            timeout=120,
            check=True,
        )
        pages.append(_pdf_pages(tmp_path / pdf))
    assert pages[0] == pages[1]
