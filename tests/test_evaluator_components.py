"""Evaluator components on hand-built CAS views, and a workflow run with significance.

The document (two sentences)::

    The BRCA1 gene binds BARD1. TNF and IL-2 receptor act.

Gold tokenisation keeps ``IL-2`` whole; the system splits it into ``IL - 2``.
Every expected number below is worked out by hand in the comments.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import cassis
import pytest

from casflow.components.evaluators.adapters import (
    constituent_trees,
    dependency_sentences,
    mentions,
    tagged_tokens,
)
from casflow.components.evaluators.base import ViewTextMismatch
from casflow.components.formats.penn.parse import Tree, format_tree, parse_tree
from casflow.components.metrics.parseval import evaluate_parseval
from casflow.pipeline.chain import DocumentResult
from casflow.pipeline.cli import main as cli_main
from casflow.pipeline.component import (
    ComponentConfig,
    Evaluator,
    Processor,
    RunContext,
    evaluating_one_document,
)
from casflow.pipeline.evaluation_report import _collect, _markdown_table
from casflow.pipeline.registry import registry
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.significance_report import (
    SignificanceError,
    lookup,
    markdown_table,
    metric_for,
    paired_units,
    run_test,
    settings_problems,
)
from casflow.pipeline.validation import WorkflowValidationError
from casflow.pipeline.workflow import load_workflow_text
from casflow.typesystem import (
    ALTERNATIVE,
    ANATOMY_MENTION,
    CONSTITUENT,
    CONSTITUENT_ROOT,
    DEPENDENCY,
    DEPENDENCY_ROOT,
    DOCUMENT_METADATA,
    FRAGMENT,
    GENE_MENTION,
    NAMED_ENTITY,
    PENN_TREE,
    POS,
    SENTENCE,
    TOKEN,
    load_typesystem,
)

TEXT = "The BRCA1 gene binds BARD1. TNF and IL-2 receptor act."
GOLD_TOKENS = re.compile(r"[A-Za-z0-9-]+|\.")
SYSTEM_TOKENS = re.compile(r"[A-Za-z0-9]+|[.-]")
GOLD_TAGS = ["DT", "NN", "NN", "VBZ", "NN", ".", "NN", "CC", "NN", "NN", "VBP", "."]
# "gene" mistagged; IL - 2 are system-only tokens.
SYSTEM_TAGS = [
    "DT",
    "NN",
    "NNS",
    "VBZ",
    "NN",
    ".",
    "NN",
    "CC",
    "NN",
    "HYPH",
    "CD",
    "NN",
    "VBP",
    ".",
]
SENTENCES = [(0, 27), (28, 54)]


def _span(word: str, start: int = 0) -> tuple[int, int]:
    begin = TEXT.index(word, start)
    return begin, begin + len(word)


def _evaluator(name: str, **config: Any) -> Evaluator:
    cls = registry().get(name)
    return cls(cls.Config.model_validate(config), RunContext(output_dir=Path(".")))  # type: ignore[return-value]


def _cas(doc_id: str = "doc1", text: str = TEXT, system_text: str | None = None) -> cassis.Cas:
    ts = load_typesystem()
    cas = cassis.Cas(typesystem=ts)
    cas.sofa_string = text
    cas.add(ts.get_type(DOCUMENT_METADATA)(begin=0, end=len(text), documentId=doc_id))
    for name in ("gold", "system"):
        cas.create_view(name).sofa_string = text
    if system_text is not None:
        cas.get_view("system").sofa_string = system_text
    return cas


def _tokens(view: cassis.Cas, pattern: re.Pattern[str], tags: list[str] | None) -> list[Any]:
    ts = view.typesystem
    tokens = []
    for i, match in enumerate(pattern.finditer(view.sofa_string)):
        token = ts.get_type(TOKEN)(begin=match.start(), end=match.end())
        if tags is not None:
            tag = tags[i]
            pos = ts.get_type(POS)(
                begin=token.begin,
                end=token.end,
                PosValue=tag,
                coarseValue="PUNCT" if tag in {".", "HYPH"} else "X",
            )
            view.add(pos)
            token.pos = pos
        view.add(token)
        tokens.append(token)
    return tokens


def _sentences(view: cassis.Cas, spans: list[tuple[int, int]]) -> None:
    for begin, end in spans:
        view.add(view.typesystem.get_type(SENTENCE)(begin=begin, end=end))


def _dependencies(view: cassis.Cas, tokens: list[Any], relations: list[tuple[int, str]]) -> None:
    """``relations[i]`` = (head token index, label) for token i; head -1 is the root."""
    ts = view.typesystem
    for token, (head, label) in zip(tokens, relations, strict=True):
        if head < 0:
            dep = ts.get_type(DEPENDENCY_ROOT)(
                begin=token.begin, end=token.end, Governor=token, Dependent=token,
                DependencyType="ROOT", flavor="basic",
            )  # fmt: skip
        else:
            dep = ts.get_type(DEPENDENCY)(
                begin=token.begin, end=token.end, Governor=tokens[head], Dependent=token,
                DependencyType=label, flavor="basic",
            )  # fmt: skip
        view.add(dep)


def _tree(view: cassis.Cas, bracketed: str, tokens: list[Any]) -> None:
    """Write a Penn tree over ``tokens`` as DKPro constituents (ROOT = outer bracket)."""
    ts = view.typesystem
    fs_array = ts.get_type("uima.cas.FSArray")
    remaining = list(tokens)

    def build(node: Tree, is_root: bool) -> Any:
        if node.word is not None:
            token = remaining.pop(0)
            assert token.get_covered_text() == node.word, (token.get_covered_text(), node.word)
            return token
        children = [build(child, False) for child in node.children]
        type_name = CONSTITUENT_ROOT if is_root else CONSTITUENT
        constituent = ts.get_type(type_name)(
            begin=children[0].begin,
            end=children[-1].end,
            constituentType="ROOT" if is_root else node.label,
            children=fs_array(elements=children),
        )
        for child in children:
            child.parent = constituent
        view.add(constituent)
        return constituent

    build(parse_tree(bracketed), True)


GOLD_RELATIONS = [
    # The BRCA1 gene binds BARD1 .
    (2, "det"), (2, "compound"), (3, "nsubj"), (-1, "ROOT"), (3, "obj"), (3, "punct"),
    # TNF and IL-2 receptor act .
    (9, "compound"), (8, "cc"), (6, "conj"), (10, "nsubj"), (-1, "ROOT"), (10, "punct"),
]  # fmt: skip
SYSTEM_RELATIONS = [
    # "The" attached to "BRCA1" (head error), BARD1 labelled iobj (label error).
    (1, "det"), (2, "compound"), (3, "nsubj"), (-1, "ROOT"), (3, "iobj"), (3, "punct"),
    # TNF and IL - 2 receptor act .
    (11, "compound"), (8, "cc"), (6, "conj"), (8, "punct"), (8, "nummod"), (12, "nsubj"),
    (-1, "ROOT"), (12, "punct"),
]  # fmt: skip


def _linguistic_cas() -> cassis.Cas:
    cas = _cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    gold_tokens = _tokens(gold, GOLD_TOKENS, GOLD_TAGS)
    system_tokens = _tokens(system, SYSTEM_TOKENS, SYSTEM_TAGS)
    _sentences(gold, SENTENCES)
    _sentences(system, SENTENCES)
    _dependencies(gold, gold_tokens, GOLD_RELATIONS)
    _dependencies(system, system_tokens, SYSTEM_RELATIONS)
    return cas


def _self_cas(cas: cassis.Cas) -> tuple[cassis.Cas, cassis.Cas]:
    gold = cas.get_view("gold")
    return gold, gold


# -- segmentation -------------------------------------------------------------


def test_sentences_follow_the_craft_protocol() -> None:
    cas = _cas()
    _sentences(cas.get_view("gold"), SENTENCES)
    # (0, 28) ends with the space: trimmed it equals gold; the second gold sentence is split.
    _sentences(cas.get_view("system"), [(0, 28), (28, 40), (41, 54)])
    evaluator = _evaluator("eval.sentences.v1")
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))
    assert result.counts == {"sentence/tp": 1, "sentence/fp": 2, "sentence/fn": 1}
    scores = evaluator.score(result.counts)
    assert scores["precision"] == pytest.approx(1 / 3)
    assert scores["recall"] == pytest.approx(1 / 2)
    assert scores["f1"] == pytest.approx(0.4)
    assert evaluator.summary(scores) == pytest.approx({"P": 100 / 3, "R": 50.0, "F": 40.0})
    assert {e["type"] for e in result.errors} == {"FP", "FN"}


def test_tokens_exact_spans() -> None:
    cas = _linguistic_cas()
    evaluator = _evaluator("eval.tokens.v1")
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))
    # 12 gold tokens, 14 system tokens; only IL-2 vs IL - 2 differs.
    assert result.counts == {"token/tp": 11, "token/fp": 3, "token/fn": 1}
    assert evaluator.score(result.counts)["f1"] == pytest.approx(22 / 26)
    fn = [e for e in result.errors if e["type"] == "FN"]
    assert [e["text"] for e in fn] == ["IL-2"]


# -- POS ----------------------------------------------------------------------


def test_pos_accuracy_over_aligned_tokens_and_span_tag_prf() -> None:
    cas = _linguistic_cas()
    evaluator = _evaluator("eval.pos.v1")
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))
    scores = evaluator.score(result.counts)
    xpos, upos = scores["xpos"], scores["upos"]
    # 11 aligned tokens, "gene" wrong: 10/11; (span, tag) items: 10 of 14 system, 12 gold.
    assert xpos["aligned"] == 11
    assert xpos["accuracy"] == pytest.approx(10 / 11)
    assert xpos["precision"] == pytest.approx(10 / 14)
    assert xpos["recall"] == pytest.approx(10 / 12)
    # UPOS in the same run: X everywhere but punctuation, so "gene" (NN/NNS) agrees.
    assert upos["aligned"] == 11 and upos["accuracy"] == 1.0
    assert upos["precision"] == pytest.approx(11 / 14)
    assert result.errors == [
        {
            "tagset": "xpos",
            "type": "TAG",
            "begin": 10,
            "end": 14,
            "gold_tag": "NN",
            "system_tag": "NNS",
            "text": "gene",
        }
    ]
    summary = evaluator.summary(scores)
    assert summary["XPOS accuracy"] == pytest.approx(1000 / 11)
    assert summary["UPOS accuracy"] == pytest.approx(100.0)
    assert list(summary) == [
        f"{tagset} {column}"
        for tagset in ("XPOS", "UPOS")
        for column in ("accuracy", "P", "R", "F")
    ]


def test_pos_error_lines_keep_the_system_view_and_document() -> None:
    # The report writes {evaluator, system, document} before each error's keys; a POS
    # error's own "system" (its tag) once replaced the view's name in the errors file.
    cas = _linguistic_cas()
    evaluator = _evaluator("eval.pos.v1", system_views=["system"])
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))
    plugin_error = {"type": "FP", "system": "NN", "document": "elsewhere", "error_system": 1}
    entry = {"counts": result.counts, "errors": [*result.errors, plugin_error]}
    done = DocumentResult("doc1", "doc1.txt", "ok", evaluation={"pos": {"system": entry}})
    lines = [json.loads(line) for line in _collect("pos", evaluator, [done]).error_lines]
    assert [(e["evaluator"], e["system"], e["document"]) for e in lines] == [
        ("pos", "system", "doc1")
    ] * 2
    assert (lines[0]["gold_tag"], lines[0]["system_tag"]) == ("NN", "NNS")
    # A plug-in's colliding keys are kept under another name, never over the location.
    assert lines[1] | {"evaluator": 0} == {
        "evaluator": 0, "system": "system", "document": "doc1", "type": "FP",
        "error_system": "NN", "error_document": "elsewhere", "error_error_system": 1,
    }  # fmt: skip


def test_pos_a_token_the_system_left_untagged_counts_as_wrong() -> None:
    cas = _linguistic_cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    evaluator = _evaluator("eval.pos.v1", tagsets=["xpos"])
    before = evaluator.score(evaluator.evaluate(gold, system).counts)["xpos"]
    untagged = next(p for p in system.select(POS) if p.PosValue == "NN")
    untagged.PosValue = None
    after = evaluator.score(evaluator.evaluate(gold, system).counts)["xpos"]
    assert after["aligned"] == before["aligned"] == 11
    assert after["accuracy"] == pytest.approx(before["accuracy"] - 1 / 11)


def test_pos_tag_maps_and_one_tagset() -> None:
    cas = _linguistic_cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    mapped = _evaluator("eval.pos.v1", system_tag_map={"NNS": "NN"})
    assert mapped.score(mapped.evaluate(gold, system).counts)["xpos"]["accuracy"] == 1.0
    coarse = _evaluator("eval.pos.v1", tagsets=["upos"])
    result = coarse.evaluate(gold, system)
    assert set(coarse.score(result.counts)) == {"upos"}
    assert all(key.startswith("upos/") for key in result.counts)
    assert {t.tag for t in tagged_tokens(gold, "coarseValue")} == {"X", "PUNCT"}
    with pytest.raises(ValueError, match="each once"):
        _evaluator("eval.pos.v1", tagsets=["xpos", "xpos"])


def test_pos_leaves_a_tagset_without_gold_tags_out_of_the_table() -> None:
    cas = _cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    for view in (gold, system):
        _tokens(view, GOLD_TOKENS, GOLD_TAGS)
        for pos in view.select(POS):
            pos.coarseValue = None  # a treebank without UPOS
    evaluator = _evaluator("eval.pos.v1")
    scores = evaluator.score(evaluator.evaluate(gold, system).counts)
    assert scores["upos"]["gold"] == 0 and scores["xpos"]["accuracy"] == 1.0
    assert set(evaluator.summary(scores)) == {"XPOS accuracy", "XPOS P", "XPOS R", "XPOS F"}


def test_pos_falls_back_to_unlinked_pos_annotations() -> None:
    cas = _cas()
    view = cas.get_view("gold")
    _tokens(view, GOLD_TOKENS, None)
    ts = view.typesystem
    for (begin, end), tag in zip(
        [(m.start(), m.end()) for m in GOLD_TOKENS.finditer(TEXT)], GOLD_TAGS, strict=True
    ):
        view.add(ts.get_type(POS)(begin=begin, end=end, PosValue=tag))
    assert [t.tag for t in tagged_tokens(view)] == GOLD_TAGS


# -- dependencies ---------------------------------------------------------------


def test_dependency_adapter_reads_dkpro_roots_and_tags() -> None:
    cas = _linguistic_cas()
    sentences = dependency_sentences(cas.get_view("gold"))
    assert [len(s) for s in sentences] == [6, 6]
    binds = sentences[0][3]
    assert (binds.head, binds.deprel, binds.xpos, binds.upos) == (None, "ROOT", "VBZ", "X")
    assert sentences[0][0].head == _span("gene")
    assert sentences[1][5].upos == "PUNCT"


def test_dependencies_las_uas_ls_micro_and_macro() -> None:
    cas = _linguistic_cas()
    evaluator = _evaluator("eval.dependencies.v1")
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))
    scores = evaluator.score(result.counts)
    # Sentence 1: 6 aligned words; UAS 5 (The), LAS 4 (The, BARD1), LS 5 (BARD1).
    # Sentence 2: 6 gold, 8 system, 5 aligned; "and" has an unaligned system head (IL):
    # UAS 4, LAS 4, LS 5. Totals: gold 12, system 14.
    assert (scores["uas"]["correct"], scores["las"]["correct"], scores["ls"]["correct"]) == (
        9,
        8,
        10,
    )
    assert scores["uas"]["f1"] == pytest.approx(18 / 26)
    assert scores["las"]["f1"] == pytest.approx(16 / 26)
    assert scores["ls"]["f1"] == pytest.approx(20 / 26)
    assert scores["uas"]["macro"]["f1"] == pytest.approx((10 / 12 + 8 / 14) / 2)
    assert len(result.units or []) == 2
    summary = evaluator.summary(scores)
    assert list(summary) == ["UAS", "LAS", "LS", "UAS macro", "LAS macro", "LS macro"]
    assert summary["LAS"] == pytest.approx(1600 / 26)


def test_dependencies_a_token_the_parser_left_out_counts_as_wrong() -> None:
    cas = _linguistic_cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    evaluator = _evaluator("eval.dependencies.v1")
    before = evaluator.score(evaluator.evaluate(gold, system).counts)
    binds = next(d for d in system.select(DEPENDENCY) if d.Dependent.get_covered_text() == "binds")
    system.remove(binds)
    after = evaluator.score(evaluator.evaluate(gold, system).counts)
    # "binds" was right (the root); it stays a system word, now a wrong one.
    assert after["uas"]["system"] == before["uas"]["system"] == 14
    assert after["uas"]["correct"] == before["uas"]["correct"] - 1
    assert after["las"]["aligned_accuracy"] < before["las"]["aligned_accuracy"]


def test_dependencies_without_ptb_punctuation() -> None:
    cas = _linguistic_cas()
    evaluator = _evaluator("eval.dependencies.v1", punctuation="exclude_xpos")
    scores = evaluator.score(
        evaluator.evaluate(cas.get_view("gold"), cas.get_view("system")).counts
    )
    # Both gold "." leave (and their aligned system words); HYPH is not PTB punctuation.
    assert (scores["uas"]["gold"], scores["uas"]["system"]) == (10, 12)
    assert scores["uas"]["correct"] == 7


# -- mentions -------------------------------------------------------------------


def _mention(view: cassis.Cas, type_name: str, span: tuple[int, int], value: str, **kw: Any) -> Any:
    ts = view.typesystem
    fs_array = ts.get_type("uima.cas.FSArray")
    features: dict[str, Any] = {}
    for feature, piece_type in (("fragments", FRAGMENT), ("alternatives", ALTERNATIVE)):
        if feature in kw:
            pieces = [ts.get_type(piece_type)(begin=b, end=e) for b, e in kw[feature]]
            for piece in pieces:
                view.add(piece)
            features[feature] = fs_array(elements=pieces)
    mention = ts.get_type(type_name)(begin=span[0], end=span[1], value=value, **features)
    view.add(mention)
    return mention


def _mention_cas() -> cassis.Cas:
    cas = _cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    tnf, receptor, il2 = _span("TNF"), _span("receptor"), _span("IL-2")
    _mention(gold, GENE_MENTION, _span("BRCA1"), "GENE")
    _mention(gold, GENE_MENTION, _span("BARD1"), "GENE")
    # Discontinuous "TNF ... receptor" and "IL-2 receptor" with the alternative "IL-2".
    _mention(gold, GENE_MENTION, (tnf[0], receptor[1]), "GENE", fragments=[tnf, receptor])
    _mention(gold, GENE_MENTION, (il2[0], receptor[1]), "GENE", alternatives=[il2])
    # A plain NamedEntity: in scope for type NamedEntity, not for GeneMention.
    _mention(gold, NAMED_ENTITY, _span("act"), "PROCESS")
    _mention(system, GENE_MENTION, _span("BRCA1 gene"), "GENE")
    _mention(system, GENE_MENTION, _span("BARD1"), "GENE")
    _mention(system, GENE_MENTION, tnf, "GENE")
    _mention(system, GENE_MENTION, il2, "GENE")
    return cas


def test_mention_adapter_reads_fragments_alternatives_and_subtypes() -> None:
    cas = _mention_cas()
    gold = cas.get_view("gold")
    genes = mentions(gold, GENE_MENTION)
    assert [m.label for m in genes] == ["GENE"] * 4
    assert genes[2].fragments == (_span("TNF"), _span("receptor"))
    assert genes[3].alternatives == (_span("IL-2"),)
    assert len(mentions(gold, NAMED_ENTITY)) == 5  # subtypes included


def test_alt_eval_accepts_alternatives_that_belong_to_no_gold_mention() -> None:
    # As alt_eval.perl: "TNF" is an ALTGENE entry overlapping no gold gene, indexed in
    # the gold view as an Alternative no mention lists; a system "TNF" is then no FP.
    cas = _cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    _mention(gold, GENE_MENTION, _span("BARD1"), "GENE")
    gold.add(gold.typesystem.get_type(ALTERNATIVE)(begin=_span("TNF")[0], end=_span("TNF")[1]))
    _mention(system, GENE_MENTION, _span("TNF"), "GENE")
    evaluator = _evaluator(
        "eval.mentions.v1", type="GeneMention", criteria=["alternatives"], alt_eval=True
    )
    scores = evaluator.score(evaluator.evaluate(gold, system).counts)
    assert [scores["alt_eval"]["micro"][k] for k in ("tp", "fp", "fn")] == [0, 0, 1]
    assert [scores["alternatives"]["micro"][k] for k in ("tp", "fp", "fn")] == [0, 1, 1]


def test_mentions_under_each_criterion() -> None:
    cas = _mention_cas()
    evaluator = _evaluator(
        "eval.mentions.v1",
        type="GeneMention",
        criteria=["strict", "left", "right", "overlap", "alternatives"],
        alt_eval=True,
    )
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))
    micro = {name: s["micro"] for name, s in evaluator.score(result.counts).items()}
    tp_fp_fn = {name: (m["tp"], m["fp"], m["fn"]) for name, m in micro.items()}
    assert tp_fp_fn == {
        "strict": (1, 3, 3),  # BARD1 only (TNF vs the covering span of TNF...receptor)
        "left": (4, 0, 0),
        "right": (1, 3, 3),  # BARD1 only
        "overlap": (4, 0, 0),  # TNF shares a fragment; IL-2 lies inside IL-2 receptor
        "alternatives": (2, 2, 2),  # BARD1, IL-2 (accepted alternative)
        "alt_eval": (2, 2, 2),
    }
    summary = evaluator.summary(evaluator.score(result.counts))
    assert summary["strict F"] == pytest.approx(25.0)
    assert summary["alternatives P"] == pytest.approx(50.0)
    assert "left P" not in summary and summary["left F"] == pytest.approx(100.0)
    fp = [e for e in result.errors if e["criterion"] == "strict" and e["type"] == "FP"]
    assert "[[BRCA1 gene]]" in fp[0]["context"]


def test_mentions_type_classes_mapping_and_one_class() -> None:
    cas = _mention_cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    all_types = _evaluator("eval.mentions.v1", criteria=["left"])
    scores = all_types.score(all_types.evaluate(gold, system).counts)["left"]
    # NamedEntity includes GeneMention; PROCESS "act" is a missed fifth mention.
    assert (scores["micro"]["tp"], scores["micro"]["fn"]) == (4, 1)
    assert scores["macro"]["classes"] == 2
    assert scores["macro"]["f1"] == pytest.approx((1.0 + 0.0) / 2)

    only_genes = _evaluator("eval.mentions.v1", criteria=["left"], classes=["GENE"])
    counts = only_genes.evaluate(gold, system).counts
    assert (counts["left/micro/tp"], counts["left/micro/fn"]) == (4, 0)

    mapped = _evaluator(
        "eval.mentions.v1", criteria=["left"], class_mapping={"GENE": ["PROCESS", "GENE"]}
    )
    assert mapped.evaluate(gold, system).counts["left/micro/tp"] == 4
    one = _evaluator("eval.mentions.v1", criteria=["left"], one_class=True)
    assert "left/class/MENTION/tp" in one.evaluate(gold, system).counts


def test_mention_config_resolves_short_type_names() -> None:
    cls = registry().get("eval.mentions.v1")
    config = cls.Config.model_validate({"type": "AnatomyMention"})
    assert config.type == ANATOMY_MENTION  # type: ignore[attr-defined]
    assert cls.requirements(config) == ((ANATOMY_MENTION,), ())
    with pytest.raises(ValueError, match="unknown annotation type 'GeneMentions'"):
        cls.Config.model_validate({"type": "GeneMentions"})


# -- constituents ------------------------------------------------------------------

GOLD_TREES = [
    "( (S (NP (DT The) (NN BRCA1) (NN gene)) (VP (VBZ binds) (NP (NN BARD1))) (. .)) )",
    "( (S (NP (NN TNF) (CC and) (NN IL-2) (NN receptor)) (VP (VBP act)) (. .)) )",
]
SYSTEM_TREES = [
    "( (S (NP (DT The) (NN BRCA1)) (VP (NN gene) (VP (VBZ binds) (NP (NN BARD1)))) (. .)) )",
    "( (S (NP (NN TNF) (CC and) (NN IL) (HYPH -) (CD 2) (NN receptor)) (VP (VBP act)) (. .)) )",
]


def _tree_cas(system_trees: list[str] = SYSTEM_TREES) -> cassis.Cas:
    cas = _cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    gold_tokens = _tokens(gold, GOLD_TOKENS, GOLD_TAGS)
    system_tokens = _tokens(system, SYSTEM_TOKENS, SYSTEM_TAGS)
    for view, trees, tokens in (
        (gold, GOLD_TREES, gold_tokens),
        (system, system_trees, system_tokens),
    ):
        for tree in trees:
            words = len(list(parse_tree(tree).preterminals()))
            _tree(view, tree, tokens[:words])
            tokens = tokens[words:]
    return cas


def test_constituent_adapter_rebuilds_the_penn_trees() -> None:
    cas = _tree_cas()
    trees = constituent_trees(cas.get_view("gold"))
    assert [span for span, _ in trees] == SENTENCES
    assert [format_tree(tree) for _, tree in trees] == GOLD_TREES


def test_parseval_through_the_cas() -> None:
    cas = _tree_cas()
    evaluator = _evaluator("eval.constituents.v1")
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))
    scores = evaluator.score(result.counts)
    # Sentence 1 (punctuation deleted): gold ""(0,5) S(0,5) NP(0,3) VP(3,5) NP(4,5);
    # system ""(0,5) S(0,5) NP(0,2) VP(2,5) VP(3,5) NP(4,5): 4 matched; VP(2,5)
    # crosses NP(0,3). ""(0,5) is the DKPro ROOT, EVALB's outer "( ... )" bracket.
    # Sentence 2 has 7 system words against 5 gold: an error sentence, not scored.
    assert (scores["matched"], scores["gold"], scores["test"]) == (4, 5, 6)
    assert scores["valid_sentences"] == 1 and scores["error_sentences"] == 1
    assert scores["precision"] == pytest.approx(4 / 6)
    assert scores["recall"] == pytest.approx(0.8)
    assert scores["average_crossing"] == 1.0
    assert scores["mean_sentence_f1"] == pytest.approx(8 / 11)
    summary = evaluator.summary(scores)
    assert summary["skipped"] == 1 and isinstance(summary["skipped"], int)
    assert summary["F"] == pytest.approx(100 * 8 / 11)
    dropping = _evaluator("eval.constituents.v1", outer_bracket="drop")
    dropped = dropping.score(dropping.evaluate(cas.get_view("gold"), cas.get_view("system")).counts)
    assert (dropped["matched"], dropped["gold"], dropped["test"]) == (3, 4, 5)
    assert dropped["mean_sentence_f1"] == pytest.approx(6 / 9)
    assert len(result.units or []) == 2
    assert {"type": "FP", "bracket_start": 2, "bracket_end": 5, "label": "VP"} in [
        {k: e[k] for k in ("type", "bracket_start", "bracket_end", "label")}
        for e in result.errors
        if e["type"] in {"FP", "FN"}
    ]


PENN_TEXT = "The cat sat on the mat. It ran."
PENN_GOLD = [
    "( (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)) )",
    "( (S (NP (PRP It)) (VP (VBD ran)) (. .)) )",
]
PENN_SYSTEM = {
    "unlabeled": [
        "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (PP (IN on) (NP (DT the) (NN mat))) (. .)) )",
        "( (S (NP (PRP It)) (VP (VBD ran)) (. .)) )",
    ],
    "TOP and bare": [
        "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (PP (IN on) (NP (DT the) (NN mat))) (. .)))",
        "(S (NP (PRP It)) (VP (VBD ran)) (. .))",
    ],
    "ROOT": [
        "(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat)) (PP (IN on) (NP (DT the) (NN mat))) (. .)))",
        "(ROOT (S (NP (PRP It)) (VP (VBD ran)) (. .)))",
    ],
}


def _unwrapped(tree: Tree) -> Tree:
    """The tree under an unlabeled root, as the CAS keeps it (its DKPro ROOT)."""
    if tree.label in ("", "TOP", "ROOT"):
        return Tree("", tree.children)
    return Tree("", [tree])


def _line_counts(system_lines: list[str], outer: bool) -> list[int]:
    """matched, gold, test of the metric on the lines: as written when the outer
    bracket counts; under the CAS's unlabeled root when it is dropped."""
    results = [
        evaluate_parseval(
            parse_tree(gold),
            parse_tree(test) if outer else _unwrapped(parse_tree(test)),
            outer_bracket=outer,
        )
        for gold, test in zip(PENN_GOLD, system_lines, strict=True)
    ]
    return [sum(getattr(r, name) for r in results) for name in ("matched", "gold", "test")]


@pytest.mark.parametrize("variant", sorted(PENN_SYSTEM))
def test_parseval_through_the_cas_scores_each_tree_line_as_written(
    tmp_path: Path, variant: str
) -> None:
    # penn.import.v1 keeps each line (PennTree); eval.constituents.v1 scores the outer
    # bracket as EVALB reads that line: "( (S" counts "", "(TOP" is deleted, "(S" has
    # none, "(ROOT" counts ROOT. So the CAS path equals the metric on the lines.
    system_lines = PENN_SYSTEM[variant]
    for folder, lines in (("in", None), ("gold", PENN_GOLD), ("system", system_lines)):
        (tmp_path / folder).mkdir()
        name, text = ("doc1.txt", PENN_TEXT) if lines is None else ("doc1.tree", "\n".join(lines))
        (tmp_path / folder / name).write_text(text + "\n", encoding="utf-8")
    workflow = f"""\
        reader: {{component: text.reader.v1, config: {{input: {json.dumps(str(tmp_path / "in"))}}}}}
        components:
          - {{component: penn.import.v1, view: gold, config: {{path: {json.dumps(str(tmp_path / "gold" / "{doc_id}.tree"))}}}}}
          - {{component: penn.import.v1, view: system, config: {{path: {json.dumps(str(tmp_path / "system" / "{doc_id}.tree"))}}}}}
        evaluators:
          - {{component: eval.constituents.v1, id: count}}
          - {{component: eval.constituents.v1, id: drop, config: {{outer_bracket: drop}}}}
        run: {{jobs: 1, output: {json.dumps(str(tmp_path / "out"))}, progress: false}}
        """
    loaded = load_workflow_text(textwrap.dedent(workflow), source=str(tmp_path / "wf.yaml"))
    report = run_workflow(loaded, RunOptions(show_progress=False))
    assert report.counts["ok"] == 1, report.failures
    for key, outer in (("count", True), ("drop", False)):
        scores = report.evaluation[key]["systems"]["system"]["scores"]
        found = [scores[name] for name in ("matched", "gold", "test")]
        assert found == _line_counts(system_lines, outer), key
        if variant == "TOP and bare" and outer:
            # By hand: gold ""+S+NP+VP+PP+NP and ""+S+NP+VP; system S+NP+VP'+PP+NP
            # (TOP deleted) and S+NP+VP (no wrapper): 4 + 3 matched of 10 gold, 8 test.
            assert found == [7, 10, 8]


@pytest.mark.parametrize(
    "line",
    [
        "(ROOT (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))",
        "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))",
        "(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))",
        "( (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)) )",
    ],
)
@pytest.mark.parametrize("without_line", ["system", "gold"])
def test_parseval_scores_a_tree_without_a_line_as_its_partner_is_written(
    tmp_path: Path, line: str, without_line: str
) -> None:
    # A tree without a PennTree line (one whose line was not kept). Scored as "( (S ...) )"
    # against a "(ROOT ...)" gold line, a perfect parse lost its outer bracket on both
    # sides (P = R = 3/4 here), against "(TOP ...)" or "(S ...)" it had one extra test
    # bracket: the tree without a line is written as its partner's line is.
    from casflow.pipeline.testing import cas_from_text, evaluate, run_component, view_of

    (tmp_path / "doc1.tree").write_text(line + "\n", encoding="utf-8")
    cas = cas_from_text("The cat sat.", doc_id="doc1")
    for view in ("gold", "system"):
        view_of(cas, view)
        run_component("penn.import.v1", cas, view=view, path=str(tmp_path / "{doc_id}.tree"))
    parsed = cas.get_view(without_line)
    for written in list(parsed.select(PENN_TREE)):
        parsed.remove(written)
    counts = evaluate("eval.constituents.v1", cas)["system"].counts
    expected = evaluate_parseval(parse_tree(line), parse_tree(line))
    assert expected.gold == expected.test == expected.matched
    assert [counts[f"parseval/{k}"] for k in ("matched", "gold", "test")] == [expected.matched] * 3


def test_tree_evaluators_refuse_trees_whose_tokens_have_no_pos() -> None:
    # Without tags EVALB's deletions (punctuation by tag) cannot be applied: the
    # scores would differ from EVALB's silently, so the document fails instead.
    cas = _tree_cas()
    for pos in cas.get_view("system").select(POS):
        pos.PosValue = None
    for name in ("eval.constituents.v1", "eval.leaf_ancestor.v1", "eval.productions.v1"):
        with pytest.raises(ValueError, match=r"document doc1: token 'The' .* has no POS tag"):
            _evaluator(name).evaluate(cas.get_view("gold"), cas.get_view("system"))


def test_productions_and_leaf_ancestor_through_the_cas() -> None:
    cas = _tree_cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    productions = _evaluator("eval.productions.v1")
    scores = productions.score(productions.evaluate(gold, system).counts)
    # "." is kept: gold S NP VP NP, system S NP VP VP NP; S, VP(binds BARD1), NP(BARD1) match.
    assert (scores["matched"], scores["gold"], scores["test"]) == (3, 4, 5)
    assert scores["skipped_sentences"] == 1
    leaf = _evaluator("eval.leaf_ancestor.v1")
    result = leaf.evaluate(gold, system)
    la = leaf.score(result.counts)
    assert la["valid_sentences"] == 1 and la["words"] == 6
    assert 0 < la["corpus_score"] < 1
    # The report adds "system" (the view) to each error line: lineages are named apart.
    lineage = next(e for e in result.errors if e["type"] == "lineage")
    assert {"gold_lineage", "system_lineage"} <= lineage.keys()
    assert "gold" not in lineage and "system" not in lineage


def test_tree_metrics_share_what_they_read_per_document_not_across_settings() -> None:
    # While the engine evaluates a document, pruned trees, lineages and productions are
    # kept per tree: evaluators with other delete_tags, the other metric, a second
    # system view and the next document must still get their own.
    cas = _tree_cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    no_determiners = {"delete_tags": ["-NONE-", "DT"]}
    evaluators = [
        _evaluator("eval.leaf_ancestor.v1"),
        _evaluator("eval.leaf_ancestor.v1", **no_determiners),
        _evaluator("eval.leaf_ancestor.v1", include_tags=True),
        _evaluator("eval.productions.v1"),
        _evaluator("eval.productions.v1", **no_determiners),
    ]
    alone = [e.evaluate(gold, system) for e in evaluators]
    against_itself = [e.evaluate(gold, gold) for e in evaluators]
    with evaluating_one_document():
        shared = [e.evaluate(gold, system) for e in evaluators]
        shared_itself = [e.evaluate(gold, gold) for e in evaluators]
    assert [r.counts for r in shared] == [r.counts for r in alone]
    assert [r.errors for r in shared] == [r.errors for r in alone]
    assert [r.counts for r in shared_itself] == [r.counts for r in against_itself]
    # the settings do change the scores, so a memo shared across them would show
    assert len({str(sorted(r.counts.items())) for r in alone[:3]}) == 3
    assert alone[3].errors != alone[4].errors  # the rules named differ
    with evaluating_one_document():
        other = [e.evaluate(gold, gold) for e in evaluators]
    assert [r.counts for r in other] == [r.counts for r in against_itself]


def test_gold_sentence_without_system_tree_is_skipped() -> None:
    cas = _tree_cas([SYSTEM_TREES[0]])
    evaluator = _evaluator("eval.constituents.v1")
    result = evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))
    assert evaluator.score(result.counts)["skip_sentences"] == 1


# -- gold against itself, text check ---------------------------------------------

ALL_LAYER_CHECKS = [
    ("eval.sentences.v1", {}, "f1"),
    ("eval.tokens.v1", {}, "f1"),
    ("eval.pos.v1", {}, "xpos/accuracy"),
    ("eval.pos.v1", {}, "upos/f1"),
    ("eval.dependencies.v1", {}, "las/f1"),
    ("eval.dependencies.v1", {}, "uas/macro/f1"),
    ("eval.mentions.v1", {"criteria": ["strict", "alternatives"], "alt_eval": True}, "strict/micro/f1"),
    ("eval.mentions.v1", {"criteria": ["strict", "alternatives"], "alt_eval": True}, "alternatives/micro/f1"),
    ("eval.mentions.v1", {"criteria": ["strict", "alternatives"], "alt_eval": True}, "alt_eval/micro/f1"),
    ("eval.constituents.v1", {}, "f1"),
    ("eval.constituents.v1", {}, "mean_sentence_f1"),
    ("eval.constituents.v1", {}, "complete_match"),
    ("eval.leaf_ancestor.v1", {}, "corpus_score"),
    ("eval.productions.v1", {}, "f1"),
]  # fmt: skip


def _everything_cas() -> cassis.Cas:
    cas = _tree_cas()
    gold = cas.get_view("gold")
    _sentences(gold, SENTENCES)
    _dependencies(gold, list(gold.select(TOKEN)), GOLD_RELATIONS)
    mention_cas = _mention_cas().get_view("gold")
    for m in mention_cas.select(NAMED_ENTITY):
        kw = {}
        if getattr(m, "fragments", None) is not None:
            kw["fragments"] = [(f.begin, f.end) for f in m.fragments.elements]
        if getattr(m, "alternatives", None) is not None:
            kw["alternatives"] = [(a.begin, a.end) for a in m.alternatives.elements]
        _mention(gold, m.type.name, (m.begin, m.end), m.value, **kw)
    return cas


@pytest.mark.parametrize(("name", "config", "path"), ALL_LAYER_CHECKS)
def test_gold_against_itself_scores_one(name: str, config: dict, path: str) -> None:
    gold, same = _self_cas(_everything_cas())
    evaluator = _evaluator(name, **config)
    result = evaluator.evaluate(gold, same)
    assert lookup(evaluator.score(result.counts), path) == 1.0
    assert all(e.get("type") not in {"FP", "FN"} for e in result.errors)
    summary = evaluator.summary(evaluator.score(result.counts))
    assert summary and all(
        v == 100.0 or isinstance(v, int) or k == "avg crossing" for k, v in summary.items()
    )


def test_different_texts_fail_with_document_and_offset() -> None:
    cas = _cas("PMC42", system_text=TEXT.replace("BARD1", "BARD2"))
    evaluator = _evaluator("eval.tokens.v1")
    with pytest.raises(
        ViewTextMismatch, match=r"document PMC42: .*'gold'.*'system'.* differ from character 25"
    ):
        evaluator.evaluate(cas.get_view("gold"), cas.get_view("system"))


def test_bad_annotations_name_the_document() -> None:
    cas = _cas("PMC7")
    gold = cas.get_view("gold")
    _tokens(gold, GOLD_TOKENS, GOLD_TAGS)
    _tokens(gold, GOLD_TOKENS, GOLD_TAGS)  # every token twice
    evaluator = _evaluator("eval.pos.v1")
    with pytest.raises(ValueError, match=r"document PMC7, views 'gold' / 'gold': two gold tokens"):
        evaluator.evaluate(gold, gold)


# -- significance helpers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "config", "path"),
    [
        ("eval.mentions.v1", {}, "strict/micro/f1"),
        ("eval.mentions.v1", {}, "overlap/micro/recall"),
        ("eval.mentions.v1", {}, "strict/class/GENE/recall"),
        ("eval.dependencies.v1", {}, "las/f1"),
        ("eval.dependencies.v1", {}, "ls/macro/f1"),
        ("eval.pos.v1", {}, "xpos/accuracy"),
        ("eval.pos.v1", {}, "upos/recall"),
        ("eval.tokens.v1", {}, "recall"),
        ("eval.constituents.v1", {}, "f1"),
        ("eval.constituents.v1", {}, "len<=40/f1"),
        ("eval.leaf_ancestor.v1", {}, "mean_sentence_score"),
        ("eval.productions.v1", {}, "precision"),
    ],
)
def test_fast_metrics_equal_scoring_the_counts(name: str, config: dict, path: str) -> None:
    cas = _everything_cas()
    system = cas.get_view("system")
    mention_system = _mention_cas().get_view("system")
    for m in mention_system.select(NAMED_ENTITY):
        _mention(system, m.type.name, (m.begin, m.end), m.value)
    _sentences(system, SENTENCES)
    _dependencies(system, list(system.select(TOKEN)), SYSTEM_RELATIONS)
    evaluator = _evaluator(name, **config)
    counts = evaluator.evaluate(cas.get_view("gold"), system).counts
    fast = evaluator.batch_metric(path)
    assert fast is not None
    assert fast(counts) == pytest.approx(lookup(evaluator.score(counts), path))
    assert 0 < fast(counts) < 1


def test_paired_units_use_sentences_and_refuse_one_sided_documents() -> None:
    documents = {
        "d2": {"a": {"counts": {"x": 3}, "units": [{"x": 1}, {"x": 2}]}, "b": {"counts": {"x": 0}, "units": [{"x": 0}, {"x": 0}]}},
        "d1": {"a": {"counts": {"x": 5}, "units": None}, "b": {"counts": {"x": 4}, "units": None}},
    }  # fmt: skip
    a, b = paired_units(documents, "a", "b", "sentences")
    assert a == [{"x": 5}, {"x": 1}, {"x": 2}] and b == [{"x": 4}, {"x": 0}, {"x": 0}]
    assert paired_units(documents, "a", "b", "documents")[0] == [{"x": 5}, {"x": 3}]
    documents["d3"] = {"a": {"counts": {"x": 1}}}
    with pytest.raises(SignificanceError, match="d3 for a only"):
        paired_units(documents, "a", "b", "documents")


def test_metric_path_errors_list_what_exists() -> None:
    evaluator = _evaluator("eval.dependencies.v1")
    with pytest.raises(
        SignificanceError, match="no 'lass' under the top level; available: las, ls"
    ):
        metric_for(evaluator, "lass/f1", {})


# -- workflows --------------------------------------------------------------------


class DeclareTypesConfig(ComponentConfig):
    types: list[str] = []


class DeclareTypes(Processor[DeclareTypesConfig]):
    """Declares what an XMI file brings into a view (xmi.reader.v1 declares nothing)."""

    name = "test.declare_types.v1"

    @classmethod
    def requirements(cls, config: ComponentConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return (), tuple(config.types)  # type: ignore[attr-defined]

    def process(self, view: cassis.Cas) -> None:
        pass


@pytest.fixture(scope="module")
def declare_types() -> None:
    if DeclareTypes.name not in registry().names():
        registry().register(DeclareTypes.name, DeclareTypes, origin="tests")


def _write_xmi_corpus(folder: Path) -> None:
    """Three documents with gold, system (good) and system2 (misses every second gene)."""
    folder.mkdir()
    texts = {
        "d1": "BRCA1 and BARD1 bind p53 and MDM2 in cells.",
        "d2": "TP53 binds MDM2 while ATM and ATR phosphorylate CHK1.",
        "d3": "EGFR and HER2 activate KRAS, BRAF and MEK1.",
    }
    for doc_id, text in texts.items():
        cas = _cas(doc_id, text)
        genes = [(m.start(), m.end()) for m in re.finditer(r"\b[A-Z][A-Z0-9]+\b", text)]
        cas.create_view("system2").sofa_string = text
        for name, keep in (("gold", genes), ("system", genes[:-1]), ("system2", genes[::2])):
            view = cas.get_view(name)
            _tokens(view, re.compile(r"\w+|[^\w\s]"), None)
            for span in keep:
                _mention(view, GENE_MENTION, span, "GENE")
        cas.to_xmi(str(folder / f"{doc_id}.xmi"))


WORKFLOW = """\
reader:
  component: xmi.reader.v1
  config:
    input: INPUT
    views: {gold: [GeneMention, Token], system: [GeneMention, Token], system2: [GeneMention, Token]}
evaluators:
  - component: eval.mentions.v1
    id: genes
    config:
      type: GeneMention
      system_views: [system, system2]
      criteria: [strict, overlap]
      significance: {metric: strict/micro/f1, iterations: 500, seed: 3}
  - component: eval.tokens.v1
    config: {system_views: [system, system2]}
run:
  output: OUTPUT
  backend: sequential
  progress: false
"""


def test_workflow_over_xmi_writes_tables_and_significance(
    tmp_path: Path, declare_types: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_xmi_corpus(tmp_path / "in")
    text = (
        WORKFLOW.replace("INPUT", str(tmp_path / "in"))
        .replace("OUTPUT", str(tmp_path / "out"))
        .replace("GENE_MENTION", GENE_MENTION)
        .replace("TOKEN", TOKEN)
    )
    workflow = load_workflow_text(text, source=str(tmp_path / "wf.yaml"))
    report = run_workflow(workflow, RunOptions(show_progress=False))
    assert report.exit_code == 0, report.failures
    out = tmp_path / "out"
    summary = json.loads((out / "evaluation.json").read_text())
    genes = summary["genes"]["systems"]
    # Genes per document: d1 3, d2 5, d3 5 = 13. system drops the last of each
    # document (10 found), system2 keeps every second one (2 + 3 + 3 = 8).
    assert genes["system"]["scores"]["strict"]["micro"]["recall"] == pytest.approx(10 / 13)
    assert genes["system2"]["scores"]["strict"]["micro"]["recall"] == pytest.approx(8 / 13)
    assert genes["system"]["scores"]["strict"]["micro"]["precision"] == 1.0
    (test,) = summary["genes"]["significance"]
    assert (test["system_a"], test["system_b"], test["iterations"], test["seed"]) == (
        "system", "system2", 500, 3,
    )  # fmt: skip
    # F = 2 tp / (2 tp + fp + fn): 20/23 and 16/21.
    assert test["observed_difference"] == pytest.approx(20 / 23 - 16 / 21)

    markdown = (out / "evaluation.md").read_text()
    f_system = 100 * 20 / 23
    assert "| system | documents | strict P | strict R | strict F | overlap F |" in markdown
    assert (
        f"| system | 3 | 100.00 | {100 * 10 / 13:.2f} | {f_system:.2f} | {f_system:.2f} |"
        in markdown
    )
    assert "| system | system2 |" in markdown
    assert (
        "## eval.tokens.v1" in markdown and "| system2 | 3 | 100.00 | 100.00 | 100.00 |" in markdown
    )

    counts_lines = (out / "evaluation-counts.jsonl").read_text().splitlines()
    assert len(counts_lines) == 2 * 3 * 2  # evaluators x documents x systems
    errors = [
        json.loads(line) for line in (out / "evaluation-errors.jsonl").read_text().splitlines()
    ]
    assert {e["system"] for e in errors if e["evaluator"] == "genes"} == {"system", "system2"}

    code = cli_main(
        [
            "significance", str(out), "--evaluator", "genes", "--metric", "strict/micro/f1",
            "--systems", "system", "system2", "--iterations", "500", "--seed", "3",
        ]
    )  # fmt: skip
    assert code == 0
    written = json.loads(
        (out / "significance-genes-strict_micro_f1-system-vs-system2.json").read_text()
    )
    # The command reads the counts file and gives the same test as the report.
    assert written["p_two_sided"] == test["p_two_sided"]
    assert written["metric_a"] == pytest.approx(20 / 23)
    assert "p = " in capsys.readouterr().out

    assert cli_main(
        ["significance", str(out), "--evaluator", "genes", "--metric", "strict/micro/f2",
         "--systems", "system", "system2"]
    ) == 2  # fmt: skip
    assert "no 'f2' under strict/micro" in capsys.readouterr().err


def test_evaluator_reading_a_view_nothing_writes_is_a_validation_error(
    tmp_path: Path, test_components: None
) -> None:
    (tmp_path / "a.txt").write_text("Some text.\n", encoding="utf-8")
    text = textwrap.dedent(
        f"""\
        reader:
          component: text.reader.v1
          config: {{input: {tmp_path}}}
        components:
          - component: test.whitespace_tokenizer.v1
            view: system
        evaluators:
          - component: eval.tokens.v1
            config:
              gold_view: gold
          - component: eval.pos.v1
            config:
              gold_view: system
        """
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(text, source="wf.yaml")
    messages = [issue.format("wf.yaml") for issue in info.value.issues]
    assert any(
        m.startswith("wf.yaml:9: evaluators -> 0 -> config:")
        and "view 'gold', which nothing writes" in m
        for m in messages
    ), messages
    assert any(
        m.startswith("wf.yaml:11: evaluators -> 1 -> component:")
        and "requires POS in view 'system'" in m
        for m in messages
    ), messages


def test_a_document_with_nothing_to_score_has_no_report_point() -> None:
    # 0 gold and 0 system items: F is undefined, not 0, so the report's per-document
    # spread leaves the document out (a 0 would drag it down on BC2GM-like corpora).
    cas = _cas()
    gold, system = cas.get_view("gold"), cas.get_view("system")
    for name in ("eval.mentions.v1", "eval.tokens.v1"):
        evaluator = _evaluator(name)
        assert evaluator.prf_points(evaluator.score(evaluator.evaluate(gold, system).counts)) == {}
    _tokens(gold, GOLD_TOKENS, GOLD_TAGS)
    tokens = _evaluator("eval.tokens.v1")
    assert tokens.prf_points(tokens.score(tokens.evaluate(gold, system).counts)) == {
        "": {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    }


def test_sentences_from_an_evaluator_without_them_are_recorded_as_documents() -> None:
    # eval.pos.v1 gives no per-sentence units: its documents are shuffled, and every
    # report says so rather than "sentences".
    evaluator = _evaluator("eval.pos.v1", system_views=["a", "b"])
    counts = {"xpos/tp": 1, "xpos/fp": 0, "xpos/fn": 0}
    documents = {d: {s: {"counts": counts, "units": None} for s in "ab"} for d in ("d1", "d2")}
    test = run_test(
        evaluator, documents, "a", "b", "xpos/f1", iterations=10, seed=0, units="sentences"
    )
    assert (test["units"], test["n_units"], test["units_asked"]) == ("documents", 2, "sentences")
    assert test["units_note"] == "eval.pos.v1 gives no per-sentence counts"
    heading = markdown_table([test])[0]
    assert "units: documents (eval.pos.v1 gives no per-sentence counts)" in heading
    # Some documents split, some whole: sentences, with how many were whole.
    split = {"counts": counts, "units": [counts, {}]}
    documents["d2"] = {"a": split, "b": split}
    test = run_test(
        evaluator, documents, "a", "b", "xpos/f1", iterations=10, seed=0, units="sentences"
    )
    assert (test["units"], test["n_units"]) == ("sentences", 3)
    assert test["units_note"] == (
        "1 of 2 documents have no per-sentence counts and are shuffled whole"
    )
    plain = run_test(
        evaluator, documents, "a", "b", "xpos/f1", iterations=10, seed=0, units="documents"
    )
    assert plain["units"] == "documents" and "units_note" not in plain


def test_significance_settings_and_system_views_are_checked_before_the_run(
    tmp_path: Path, test_components: None
) -> None:
    (tmp_path / "a.txt").write_text("Some text.\n", encoding="utf-8")
    text = textwrap.dedent(
        f"""\
        reader:
          component: text.reader.v1
          view: gold
          config: {{input: {tmp_path}}}
        components:
          - component: test.whitespace_tokenizer.v1
            view: system
          - component: test.whitespace_tokenizer.v1
            view: gold
        evaluators:
          - component: eval.pos.v1
            config:
              system_views: [system]
              significance: {{metric: xpos/f1, units: sentences}}
          - component: eval.tokens.v1
            config:
              system_views: [system, system]
          - component: eval.mentions.v1
            config:
              system_views: [system]
              significance:
                metric: strict/micro/f2
          - component: eval.dependencies.v1
            config:
              system_views: [system]
              significance: {{metric: las/macro, units: sentences}}
        """
    )
    with pytest.raises(WorkflowValidationError) as info:
        load_workflow_text(text, source="wf.yaml")
    messages = [issue.format("wf.yaml") for issue in info.value.issues]
    expected = [
        "wf.yaml:14: evaluators -> 0 -> config -> significance -> units: eval.pos.v1 gives "
        "no per-sentence counts, so only whole documents can be shuffled; use units: documents",
        "wf.yaml:17: evaluators -> 1 -> config -> system_views: Value error, system view(s) "
        "named more than once: system (got ['system', 'system'])",
        "wf.yaml:22: evaluators -> 2 -> config -> significance -> metric: metric path "
        "'strict/micro/f2': no 'f2' under strict/micro; available: f1, fn, fp, precision, "
        "recall, tp",
        "wf.yaml:26: evaluators -> 3 -> config -> significance -> metric: metric path "
        "'las/macro' leads to a dict, not a number; under it: precision, recall, f1, sentences",
    ]
    assert [m for m in messages if "requires" not in m] == expected, messages


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("eval.mentions.v1", "strict/class/Gene/f1"),  # classes come with documents
        ("eval.pos.v1", "xpos/tag/NN/f1"),
        ("eval.dependencies.v1", "by_length/1-10/f1"),
        ("eval.constituents.v1", "len<=40/f1"),
        ("eval.dependencies.v1", "las/f1"),
    ],
)
def test_metric_paths_that_documents_bring_pass_the_check(name: str, path: str) -> None:
    assert settings_problems(_evaluator(name), path, "documents") == {}
    assert "units" not in settings_problems(_evaluator(name), path, "sentences") or (
        name in ("eval.mentions.v1", "eval.pos.v1")
    )


def test_markdown_escapes_view_names_and_leaves_unevaluated_systems_empty() -> None:
    evaluator = _evaluator("eval.tokens.v1", system_views=["a|b", "<A>"])
    scored = {"documents": 2, "scores": evaluator.score({"token/tp": 1})}
    none = {"documents": 0, "scores": evaluator.score({})}
    lines = _markdown_table("x & <y>", "eval.tokens.v1", evaluator, {"a|b": scored, "<A>": none})
    assert lines[0] == "## x & &lt;y> (`eval.tokens.v1`)"
    assert lines[4] == "| a\\|b | 2 | 100.00 | 100.00 | 100.00 |"
    # No document scored: no scores (not 0.00), so nothing to rank either.
    assert lines[5] == "| &lt;A> | 0 |  |  |  |"
    # "&" before a letter could start an entity; "<=" and ">=" stay readable as they are.
    assert _markdown_table("a &b <=40 >=1", "eval.tokens.v1", evaluator, {})[0] == (
        "## a &amp;b <=40 >=1 (`eval.tokens.v1`)"
    )
    assert _markdown_table("x", "eval.tokens.v1", evaluator, {"<A>": none})[2] == (
        "(no document was evaluated)"
    )
    failed = {"system_a": "a|b", "system_b": "<A>", "metric": "f1", "iterations": 9, "seed": 4,
              "units": "documents", "error": "no document was scored for both"}  # fmt: skip
    table = markdown_table([failed])
    assert table[0].endswith("9 shuffles, seed 4, units: documents):")
    assert table[4] == "| a\\|b | &lt;A> | | | | no document was scored for both |"
