"""sentences.rules.v1: rule-based sentence splitting for biomedical full text."""

from __future__ import annotations

from pathlib import Path

import cassis
import pytest

from casflow.components.metrics.segmentation import score_segmentation, sentence_counts
from casflow.components.rules.sentences import (
    SentenceRules,
    SentenceRulesConfig,
    SentenceRulesSplitter,
    split_sentences,
)
from casflow.pipeline.component import RunContext
from casflow.pipeline.counts import sum_counts
from casflow.pipeline.testing import cas_from_text, run_component
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import CAPTION, HEADING, PARAGRAPH, SENTENCE, TITLE, load_typesystem


def sentences(text: str, **kwargs) -> list[str]:
    return [text[b:e] for b, e in split_sentences(text, **kwargs)]


@pytest.mark.parametrize(
    "text",
    [
        "Cells were fixed, e.g. with PFA, and stained, i.e. with DAPI.",
        "As shown by Smith et al. in 2001 the gene is expressed.",
        "See Fig. 2 and Figs. 3-5 for details.",
        "This is described in Ref. 12 and compared vs. controls.",
        "The protein has approx. 300 residues.",
        "Mice (no. 12) were used.",
        "Strains of Bacillus sp. ATCC 1234 and Salmonella spp. were grown.",
        "Dr. Jones provided the E. coli strains and C. elegans mutants.",
        "The dose was 2.5 mg/kg and the ratio 0.75.",
        "We thank J. R. Smith for help.",
    ],
)
def test_abbreviations_initials_and_decimals_do_not_end_a_sentence(text: str) -> None:
    assert sentences(text) == [text]


def test_sentence_ends_after_citations() -> None:
    text = (
        "BRCA2 binds RAD51 [12]. It is expressed in liver (Smith et al., 2001). "
        "Both are needed [3,4]."
    )
    assert sentences(text) == [
        "BRCA2 binds RAD51 [12].",
        "It is expressed in liver (Smith et al., 2001).",
        "Both are needed [3,4].",
    ]


def test_numeric_citation_after_the_period_stays_with_its_sentence() -> None:
    assert sentences("It lasts minutes. [13]. Then it stops.") == [
        "It lasts minutes. [13].",
        "Then it stops.",
    ]


def test_sentences_may_start_with_gene_symbols_digits_and_greek() -> None:
    text = (
        "Cells were lysed. p53 is stabilised. mRNA levels rose. 25 mice were used. "
        "β-catenin was nuclear. the end is lower case."
    )
    assert sentences(text) == [
        "Cells were lysed.",
        "p53 is stabilised.",
        "mRNA levels rose.",
        "25 mice were used.",
        "β-catenin was nuclear. the end is lower case.",
    ]


def test_question_exclamation_and_quotes() -> None:
    assert sentences('Is it? Yes! He said "stop." Then left.') == [
        "Is it?",
        "Yes!",
        'He said "stop."',
        "Then left.",
    ]


def test_acronyms_that_look_like_abbreviations_still_end_sentences() -> None:
    # "no." never ends a sentence, but nitric oxide (NO) does.
    assert sentences("Cells made NO. Levels rose.") == ["Cells made NO.", "Levels rose."]


def test_figure_legends() -> None:
    text = "Sections of the retina. (a) Wild type. (b) Mutant. pe, pigmented epithelium. b: Detail."
    assert sentences(text) == [
        "Sections of the retina.",
        "(a) Wild type.",
        "(b) Mutant.",
        "pe, pigmented epithelium.",
        "b: Detail.",
    ]


def test_blank_lines_and_hard_breaks_end_sentences() -> None:
    text = "Results\n\nBRCA2 binds RAD51\nMethods Cells were grown."
    assert sentences(text) == ["Results", "BRCA2 binds RAD51\nMethods Cells were grown."]
    heading = text.index("Methods")
    assert sentences(text, hard_breaks=[heading, heading + len("Methods")]) == [
        "Results",
        "BRCA2 binds RAD51",
        "Methods",
        "Cells were grown.",
    ]
    assert sentences(text, split_at_newlines=True)[:3] == [
        "Results",
        "BRCA2 binds RAD51",
        "Methods Cells were grown.",
    ]


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\u2028", "\u2029", "\x85"])
def test_every_kind_of_line_break_is_one(newline: str) -> None:
    text = "Results\n\nBRCA2 binds RAD51\nMethods Cells were grown.".replace("\n", newline)
    assert sentences(text) == [
        "Results",
        f"BRCA2 binds RAD51{newline}Methods Cells were grown.",
    ]
    assert sentences(text, split_at_newlines=True) == [
        "Results",
        "BRCA2 binds RAD51",
        "Methods Cells were grown.",
    ]
    # CR LF is one line break: one of them is no blank line
    assert sentences("BRCA2 binds\r\nRAD51.") == ["BRCA2 binds\r\nRAD51."]


def test_extra_abbreviations() -> None:
    custom = "Use the Kit Ser. 5 reagent. Done."
    assert sentences(custom) == ["Use the Kit Ser.", "5 reagent.", "Done."]
    assert sentences(custom, rules=SentenceRules(["ser."])) == [
        "Use the Kit Ser. 5 reagent.",
        "Done.",
    ]
    config = SentenceRulesConfig(extra_abbreviations=["Ser."])
    splitter = SentenceRulesSplitter(config, RunContext(output_dir=Path(".")))
    assert sentences(custom, rules=splitter.rules) == ["Use the Kit Ser. 5 reagent.", "Done."]


def new_view(text: str) -> cassis.Cas:
    cas = cassis.Cas(typesystem=load_typesystem())
    cas.sofa_string = text
    return cas


def test_component_never_crosses_structure(tmp_path: Path) -> None:
    text = "A Study of BRCA2 Introduction BRCA2 binds RAD51 et al. Figure 1 Binding of BRCA2."
    view = new_view(text)
    ts = view.typesystem
    title_end = text.index(" Introduction")
    heading = (title_end + 1, text.index(" BRCA2 binds"))
    paragraph = (heading[1] + 1, text.index(" Figure"))
    caption = (paragraph[1] + 1, len(text))
    view.add_all(
        [
            ts.get_type(TITLE)(begin=0, end=title_end),
            ts.get_type(HEADING)(begin=heading[0], end=heading[1]),
            ts.get_type(PARAGRAPH)(begin=paragraph[0], end=paragraph[1]),
            ts.get_type(CAPTION)(begin=caption[0], end=caption[1]),
        ]
    )
    splitter = SentenceRulesSplitter(SentenceRulesConfig(), RunContext(output_dir=tmp_path))
    splitter.process(view)
    assert [s.get_covered_text() for s in view.select(SENTENCE)] == [
        "A Study of BRCA2",
        "Introduction",
        "BRCA2 binds RAD51 et al.",
        "Figure 1 Binding of BRCA2.",
    ]


def test_structure_can_come_from_another_view() -> None:
    text = "Introduction BRCA2 binds RAD51."
    cas = cas_from_text(text, spans={"Heading": [(0, len("Introduction"))]})
    run_component("sentences.rules.v1", cas, view="system", structure_view="_InitialView")
    assert [s.get_covered_text() for s in cas.get_view("system").select(SENTENCE)] == [
        "Introduction",
        "BRCA2 binds RAD51.",
    ]


def test_a_structure_view_nothing_writes_is_a_validation_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Introduction BRCA2 binds RAD51.", encoding="utf-8")
    workflow = f"""\
reader: {{component: text.reader.v1, config: {{input: {tmp_path}}}}}
components:
  - component: sentences.rules.v1
    config: {{structure_view: gold}}
"""
    with pytest.raises(WorkflowValidationError, match="reads view 'gold', which nothing before"):
        load_workflow_text(workflow, source="wf.yaml")


def test_unknown_structure_type_is_a_config_error(tmp_path: Path) -> None:
    config = SentenceRulesConfig(structure_types=["casflow.structure.Nope"])
    (problem,) = SentenceRulesSplitter.check_config(config, RunContext(output_dir=tmp_path))
    assert "casflow.structure.Nope" in problem


# -- CRAFT --------------------------------------------------------------------


def craft_gold_sentences(craft: Path, pmid: str) -> tuple[str, list[tuple[int, int]]]:
    """Text and gold sentence spans: CoNLL-U token forms aligned to the .txt in order."""
    text = (craft / "articles" / "txt" / f"{pmid}.txt").read_text(encoding="utf-8")
    conllu = craft / "structural-annotation" / "dependency" / "conllu" / f"{pmid}.conllu"
    spans: list[tuple[int, int]] = []
    pos = 0
    begin = None
    for n, line in enumerate(conllu.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            if begin is not None:
                spans.append((begin, pos))
                begin = None
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if not cols[0].isdigit():
            continue  # multiword ranges and empty nodes
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if not text.startswith(cols[1], pos):
            raise AssertionError(f"{conllu}:{n}: {cols[1]!r} not found at offset {pos}")
        if begin is None:
            begin = pos
        pos += len(cols[1])
    if begin is not None:
        spans.append((begin, pos))
    return text, spans


@pytest.mark.corpus
def test_craft_dev_sentence_boundaries(craft_dir: Path) -> None:
    ids_file = craft_dir / "articles" / "ids" / "craft-ids-dev.txt"
    pmids = [line.strip() for line in ids_file.read_text().splitlines() if line.strip()]
    assert len(pmids) == 7
    counts = []
    for pmid in pmids:
        text, gold = craft_gold_sentences(craft_dir, pmid)
        counts.append(sentence_counts(text, gold, split_sentences(text)).counts)
    scores = score_segmentation(sum_counts(counts), keys=["sentence"])["sentence"]
    # Text only, no structure annotations; the rules were written on the train articles.
    assert scores["f1"] >= 0.99, scores
