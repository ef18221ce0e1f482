"""casflow's evaluators reproduce the field's scoring programs on development data.

``../shared/scorer-references`` (or ``CASFLOW_SCORER_REFERENCES``; see its
README) holds what EVALB with COLLINS.prm, conll18_ud_eval.py, BioCreative II's
and GENETAG's alt_eval.perl and AnatEM's evalbio.pl print for gold and
perturbed system files (and for the shipped gene tagger's real BC2GM devel
output). Every figure there is reproduced here to 4 decimals (the programs'
printed precision where they print fewer), each through the casflow
components a user would run: the files are read by casflow's gold readers and
importers into views of one CAS and scored by the evaluator components in a
workflow. The programs themselves are not needed.

The CAS-path tests also need the gold corpora (the documents' texts) and take
tens of seconds each (marked ``slow``: ``pytest -m "not slow"`` leaves them out,
the default run and CI include them); the file-level EVALB test needs only the
references.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from casflow.components.formats.penn.parse import parse_tree
from casflow.components.metrics.parseval import (
    evaluate_parseval,
    parse_evalb_params,
    score_parseval,
)
from casflow.pipeline.counts import sum_counts
from casflow.pipeline.runner import RunOptions, run_workflow
from casflow.pipeline.workflow import load_workflow_text

# Reference values printed with 2 decimals are compared to 2 decimals (half a
# unit of the last printed digit); unrounded ones to 4.
PRINTED = 0.005 + 1e-9
FOUR_DECIMALS = 0.00005


@pytest.fixture(scope="module")
def reference(scorer_references: Path) -> dict[str, Any]:
    return json.loads((scorer_references / "reference.json").read_text(encoding="utf-8"))


def run_evaluation(tmp_path: Path, workflow: str) -> dict[str, Any]:
    """Run a workflow in this process; its evaluation.json."""
    output = tmp_path / "out"
    text = textwrap.dedent(workflow) + textwrap.dedent(
        f"""\
        run:
          jobs: 1
          batch_size: 50
          output: {json.dumps(str(output))}
          progress: false
        """
    )
    report = run_workflow(
        load_workflow_text(text, source=str(tmp_path / "wf.yaml")), RunOptions(show_progress=False)
    )
    assert report.counts["failed"] == 0, report.failures
    return json.loads((output / "evaluation.json").read_text(encoding="utf-8"))


def system_scores(evaluation: dict[str, Any], evaluator: str, view: str = "system") -> Any:
    return evaluation[evaluator]["systems"][view]["scores"]


# --- EVALB (COLLINS.prm) ---------------------------------------------------------

EVALB_STATUS = {"ok": "0", "skipped_length": "1", "skipped_words": "1", "skipped_empty": "2"}


def evalb_summary(scores: dict[str, Any]) -> dict[str, float]:
    """casflow's PARSEVAL scores under EVALB's summary names, in EVALB's units."""
    return {
        "Number of sentence": scores["sentences"],
        "Number of Error sentence": scores["error_sentences"],
        "Number of Skip sentence": scores["skip_sentences"],
        "Number of Valid sentence": scores["valid_sentences"],
        "Bracketing Recall": 100 * scores["recall"],
        "Bracketing Precision": 100 * scores["precision"],
        "Bracketing FMeasure": 100 * scores["f1"],
        "Complete match": 100 * scores["complete_match"],
        "Average crossing": scores["average_crossing"],
        "No crossing": 100 * scores["no_crossing"],
        "2 or less crossing": 100 * scores["two_or_less_crossing"],
        "Tagging accuracy": 100 * scores["tagging_accuracy"],
    }


def assert_evalb_equal(scores: dict[str, Any], expected: dict[str, Any]) -> None:
    for section, group in (("all", scores), ("len_le_40", scores["len<=40"])):
        mine = evalb_summary(group)
        for name, value in expected[section].items():
            assert mine[name] == pytest.approx(value, abs=PRINTED), (section, name)
    assert [scores["matched"], scores["gold"], scores["test"]] == expected[
        "matched_gold_test_brackets"
    ]
    assert 100 * scores["f1"] == pytest.approx(expected["corpus_F_unrounded"], abs=FOUR_DECIMALS)
    assert 100 * scores["mean_sentence_f1"] == pytest.approx(
        expected["per_sentence_mean_F"], abs=FOUR_DECIMALS
    )
    assert scores["valid_sentences"] == expected["per_sentence_mean_F_n"]


def evalb_rows(path: Path) -> list[list[str]]:
    """EVALB's per-sentence lines (ID Len Stat Recal Prec Matched Gold Test Cross Words Tags Acc)."""
    return [
        fields
        for line in path.read_text(encoding="utf-8").split("\n")
        if len(fields := line.split()) == 12 and fields[0].isdigit()
    ]


@pytest.mark.slow
@pytest.mark.parametrize("pair", ["gold_vs_system", "gold_vs_gold"])
def test_parseval_equals_evalb_on_the_tree_files(
    scorer_references: Path, reference: dict[str, Any], pair: str
) -> None:
    """Line by line and in both summaries, on the files exactly as EVALB read them."""
    ref = scorer_references / "ref"
    params = parse_evalb_params((ref / "evalb.prm").read_text(encoding="utf-8"))
    gold_lines = (ref / "craft-gold.tree").read_text(encoding="utf-8").split("\n")[:-1]
    system_file = "craft-gold.tree" if pair == "gold_vs_gold" else "craft-sys.tree"
    system_lines = (ref / system_file).read_text(encoding="utf-8").split("\n")[:-1]
    rows = evalb_rows(ref / f"evalb.{pair}.txt")
    assert len(gold_lines) == len(system_lines) == len(rows)
    counts = []
    for gold_line, system_line, row in zip(gold_lines, system_lines, rows, strict=True):
        result = evaluate_parseval(
            parse_tree(gold_line), parse_tree(system_line) if system_line.strip() else None, params
        )
        counts.append(result.counts(cutoff_len=params.cutoff_len))
        mine = [str(result.length), EVALB_STATUS[result.status]]
        mine += [str(n) for n in (result.matched, result.gold, result.test, result.crossing)]
        mine += [str(result.words), str(result.correct_tags)]
        assert mine == row[1:3] + row[5:11], f"sentence {row[0]}"
    assert_evalb_equal(score_parseval(sum_counts(counts)), reference["evalb"][pair])


def split_like_corpus(lines: list[str], sizes: list[int]) -> list[list[str]]:
    """Cut a concatenation back into its documents, given each document's line count."""
    pieces, start = [], 0
    for size in sizes:
        pieces.append(lines[start : start + size])
        start += size
    assert start == len(lines), f"{len(lines)} lines, documents hold {start}"
    return pieces


@pytest.mark.corpus
@pytest.mark.slow
def test_eval_constituents_equals_evalb_through_the_cas(
    scorer_references: Path, reference: dict[str, Any], corpora_dir: Path, tmp_path: Path
) -> None:
    """craft.reader.v1 gold, the system trees by penn.import.v1, eval.constituents.v1."""
    ids = (scorer_references / "craft-ids.txt").read_text(encoding="utf-8").split()
    penn = corpora_dir / "craft" / "structural-annotation" / "treebank" / "penn"
    sizes = [len((penn / f"{i}.tree").read_text(encoding="utf-8").splitlines()) for i in ids]
    system = (scorer_references / "ref" / "craft-sys.tree").read_text(encoding="utf-8")
    (tmp_path / "sys").mkdir()
    for doc_id, lines in zip(ids, split_like_corpus(system.split("\n")[:-1], sizes), strict=True):
        (tmp_path / "sys" / f"{doc_id}.tree").write_text("\n".join(lines) + "\n", "utf-8")
    evaluation = run_evaluation(
        tmp_path,
        f"""\
        reader:
          component: craft.reader.v1
          view: gold
          config:
            corpus: {json.dumps(str(corpora_dir / "craft"))}
            ids: {json.dumps(ids)}
            layers: [pos, constituents]
            ontologies: []
        components:
          - component: penn.import.v1
            view: system
            config:
              path: {json.dumps(str(tmp_path / "sys" / "{doc_id}.tree"))}
              layers: [pos, constituents]
        evaluators:
          - component: eval.constituents.v1
            config:
              prm: {json.dumps(str(scorer_references / "ref" / "evalb.prm"))}
        """,
    )
    assert_evalb_equal(
        system_scores(evaluation, "eval.constituents.v1"), reference["evalb"]["gold_vs_system"]
    )


# --- BioCreative II and GENETAG alt_eval.perl -----------------------------------


def assert_alt_eval_equal(scores: dict[str, Any], expected: dict[str, Any]) -> None:
    micro = scores["alt_eval"]["micro"]
    assert (micro["tp"], micro["fp"], micro["fn"]) == (
        expected["TP"],
        expected["FP"],
        expected["FN"],
    )
    assert micro["precision"] == pytest.approx(expected["Precision"], abs=FOUR_DECIMALS)
    assert micro["recall"] == pytest.approx(expected["Recall"], abs=FOUR_DECIMALS)
    assert micro["f1"] == pytest.approx(expected["F"], abs=FOUR_DECIMALS)


def alt_eval_printed(path: Path) -> dict[str, Any]:
    """The summary alt_eval.perl prints after its per-mention lines."""
    summary: dict[str, Any] = {}
    for line in path.read_text(encoding="utf-8").split("\n"):
        if "|" not in line:
            fields = line.replace(":", " ").split()
            summary.update(zip(fields[::2], map(float, fields[1::2]), strict=True))
    return summary


BC2GM_SYSTEMS = {
    "perturbed": ("sys/bc2gm/system.eval", "ref/bc2gm.gold_vs_system.txt"),
    "shipped tagger": ("bc2gm-real/system.eval", "bc2gm-real/alt_eval.txt"),
}


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("system", sorted(BC2GM_SYSTEMS))
def test_alt_eval_counts_equal_alt_eval_perl_on_bc2gm_devel(
    scorer_references: Path,
    reference: dict[str, Any],
    corpora_dir: Path,
    tmp_path: Path,
    system: str,
) -> None:
    """bc2gm.reader.v1 gold, the system file by bc2.import.v1, eval.mentions.v1 alt_eval."""
    system_file, printed = (scorer_references / name for name in BC2GM_SYSTEMS[system])
    evaluation = run_evaluation(
        tmp_path,
        f"""\
        reader:
          component: bc2gm.reader.v1
          view: gold
          config: {{corpus: {json.dumps(str(corpora_dir / "bc2gm"))}, split: devel}}
        components:
          - component: bc2.import.v1
            view: system
            config: {{path: {json.dumps(str(system_file))}}}
        evaluators:
          - component: eval.mentions.v1
            config: {{type: GeneMention, criteria: [strict], alt_eval: true}}
        """,
    )
    scores = system_scores(evaluation, "eval.mentions.v1")
    expected = alt_eval_printed(printed)
    if system == "perturbed":
        assert expected == {
            k: v for k, v in reference["bc2gm"]["gold_vs_system"].items() if k != "exit_status"
        }
    assert_alt_eval_equal(scores, expected)


@pytest.mark.corpus
@pytest.mark.slow
def test_genetag_output_through_its_importer_equals_alt_eval_perl(
    scorer_references: Path, reference: dict[str, Any], corpora_dir: Path, tmp_path: Path
) -> None:
    """genetag.reader.v1 gold, Test.format by genetag.import.v1, eval.mentions.v1 alt_eval."""
    evaluation = run_evaluation(
        tmp_path,
        f"""\
        reader:
          component: genetag.reader.v1
          view: gold
          config: {{corpus: {json.dumps(str(corpora_dir / "genetag"))}, split: devtest}}
        components:
          - component: genetag.import.v1
            view: system
            config:
              path: {json.dumps(str(scorer_references / "sys" / "genetag" / "Test.format"))}
        evaluators:
          - component: eval.mentions.v1
            config: {{type: GeneMention, criteria: [strict], alt_eval: true}}
        """,
    )
    expected = reference["genetag"]["gold_vs_system"]
    printed = alt_eval_printed(scorer_references / "ref" / "genetag.gold_vs_system.txt")
    assert {k: expected[k] for k in printed} == printed
    assert_alt_eval_equal(system_scores(evaluation, "eval.mentions.v1"), expected)


# --- conll18_ud_eval.py ------------------------------------------------------------


def split_conllu_documents(text: str) -> dict[str, str]:
    """A concatenation of CoNLL-U documents, cut at each '# newdoc id = ...' line."""
    marker = "# newdoc id = "
    pieces = text.split(marker)
    assert not pieces[0].strip(), "the file must start with a '# newdoc id' comment"
    return {piece.split("\n", 1)[0].strip(): marker + piece for piece in pieces[1:]}


def assert_conll18_equal(found: dict[str, Any], expected: dict[str, Any], metric: str) -> None:
    assert found["precision"] == pytest.approx(expected["precision"], abs=FOUR_DECIMALS), metric
    assert found["recall"] == pytest.approx(expected["recall"], abs=FOUR_DECIMALS), metric
    assert found["f1"] == pytest.approx(expected["f1"], abs=FOUR_DECIMALS), metric
    if expected["aligned_accuracy"] is not None:
        assert found["aligned_accuracy"] == pytest.approx(
            expected["aligned_accuracy"], abs=FOUR_DECIMALS
        ), metric
    assert (found["correct"], found["gold"], found["system"]) == (
        expected["correct"],
        expected["gold_total"],
        expected["system_total"],
    ), metric


@pytest.mark.corpus
@pytest.mark.slow
def test_syntax_evaluators_equal_conll18_ud_eval(
    scorer_references: Path, reference: dict[str, Any], corpora_dir: Path, tmp_path: Path
) -> None:
    """craft.reader.v1 gold, the system CoNLL-U by conllu.import.v1; tokens, sentences,
    XPOS and UPOS, UAS and LAS by casflow's evaluators."""
    system = (scorer_references / "ref" / "craft-sys.conllu").read_text(encoding="utf-8")
    (tmp_path / "sys").mkdir()
    documents = split_conllu_documents(system)
    for doc_id, text in documents.items():
        (tmp_path / "sys" / f"{doc_id}.conllu").write_text(text, encoding="utf-8")
    ids = (scorer_references / "craft-ids.txt").read_text(encoding="utf-8").split()
    assert list(documents) == ids
    evaluation = run_evaluation(
        tmp_path,
        f"""\
        reader:
          component: craft.reader.v1
          view: gold
          config:
            corpus: {json.dumps(str(corpora_dir / "craft"))}
            ids: {json.dumps(ids)}
            layers: [sentences, tokens, pos, dependencies]
            ontologies: []
        components:
          - component: conllu.import.v1
            view: system
            config: {{path: {json.dumps(str(tmp_path / "sys" / "{doc_id}.conllu"))}}}
        evaluators:
          - component: eval.tokens.v1
          - component: eval.sentences.v1
          - component: eval.pos.v1
          - component: eval.dependencies.v1
            config: {{labels: full}}
        """,
    )

    def spans(name: str) -> dict[str, Any]:
        scores = system_scores(evaluation, name)
        return {
            **scores,
            "aligned_accuracy": None,
            "correct": scores["tp"],
            "gold": scores["tp"] + scores["fn"],
            "system": scores["tp"] + scores["fp"],
        }

    def tags(tagset: str) -> dict[str, Any]:
        scores = system_scores(evaluation, "eval.pos.v1")[tagset]
        return {**scores, "aligned_accuracy": scores["accuracy"], "correct": scores["tp"]}

    dependencies = system_scores(evaluation, "eval.dependencies.v1")
    found = {
        "Tokens": spans("eval.tokens.v1"),
        "Sentences": spans("eval.sentences.v1"),
        "Words": dependencies["words"],
        "UPOS": tags("upos"),
        "XPOS": tags("xpos"),
        "UAS": dependencies["uas"],
        "LAS": dependencies["las"],
    }
    expected = reference["conll18"]["gold_vs_system"]
    assert set(found) == set(expected)
    for metric, values in expected.items():
        assert_conll18_equal(found[metric], values, metric)


# --- AnatEM evalbio.pl ---------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.slow
def test_mention_evaluator_equals_evalbio_on_anatem_devel(
    scorer_references: Path, reference: dict[str, Any], corpora_dir: Path, tmp_path: Path
) -> None:
    """anatem.reader.v1 gold, the system BIO files by bio.import.v1, eval.mentions.v1
    strict/left/right per class (evalbio.pl: a wrong class misses under every criterion)."""
    gold_folder = corpora_dir / "anatem" / "conll" / "devel"
    names = sorted(path.name for path in gold_folder.glob("*.conll"))
    sizes = [
        len((gold_folder / name).read_text(encoding="utf-8").split("\n")) - 1 for name in names
    ]
    system = (scorer_references / "ref" / "anatem-sys.conll").read_text(encoding="utf-8")
    (tmp_path / "sys").mkdir()
    for name, lines in zip(names, split_like_corpus(system.split("\n")[:-1], sizes), strict=True):
        (tmp_path / "sys" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    evaluation = run_evaluation(
        tmp_path,
        f"""\
        reader:
          component: anatem.reader.v1
          view: gold
          config: {{corpus: {json.dumps(str(corpora_dir / "anatem"))}, split: devel}}
        components:
          - component: bio.import.v1
            view: system
            config:
              path: {json.dumps(str(tmp_path / "sys" / "{doc_id}.conll"))}
              type: AnatomyMention
              tokens: false
        evaluators:
          - component: eval.mentions.v1
            config: {{type: AnatomyMention, criteria: [strict, left, right]}}
        """,
    )
    scores = system_scores(evaluation, "eval.mentions.v1")
    expected = reference["anatem"]["gold_vs_system"]
    for ours, theirs in (("strict", "strict"), ("left", "left"), ("right", "right")):
        groups = [(scores[ours]["micro"], expected["all"])]
        for label, values in expected["per_class"].items():
            # evalbio.pl prints class names cut to 22 characters.
            (full,) = [
                c
                for c in scores[ours]["class"]
                if c == label or (len(label) == 22 and c.startswith(label))
            ]
            groups.append((scores[ours]["class"][full], values))
        for found, values in groups:
            wanted = values[theirs]
            assert (found["tp"], found["fp"], found["fn"]) == (
                wanted["TP"],
                wanted["FP"],
                wanted["FN"],
            ), (ours, values)
            assert found["tp"] + found["fn"] == values["gold"]
            for key, name in (("P", "precision"), ("R", "recall"), ("F", "f1")):
                assert 100 * found[name] == pytest.approx(wanted[key], abs=PRINTED), (ours, key)
