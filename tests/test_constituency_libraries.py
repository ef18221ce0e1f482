"""benchmarks/constituency_libraries.py: the treebank conversion and scoring (no supar needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from casflow.components.formats.penn.parse import parse_tree
from casflow.components.metrics.parseval import parseval_counts, score_parseval
from casflow.pipeline.counts import Counts, add_counts

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "constituency_libraries.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("constituency_libraries", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SCRIPT.parent))  # it imports benchmarks/_common.py
        spec.loader.exec_module(module)
    return module


def test_default_data_is_where_the_shipped_training_writes_it(script: ModuleType) -> None:
    workflow = yaml.safe_load((REPO / "workflows" / "train-craft-constituency.yaml").read_text())
    written = REPO / workflow["output"] / "final" / "data"
    assert written == script.DATA
    assert script.WORKDIR.parent == REPO / "runs"


def test_missing_data_is_one_line_naming_the_training(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.mrg").write_text("(ROOT (NP (NN A)))\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        script.check_data(tmp_path)
    assert stopped.value.code == 2
    message = capsys.readouterr().err
    assert message.count("\n") == 1
    assert f"{tmp_path} has no dev.mrg, vectors.txt" in message
    assert "workflows/train-craft-constituency.yaml" in message


def test_read_trees_one_string_per_tree_whatever_the_lines(script: ModuleType) -> None:
    text = "(ROOT (S (NP (NN A))\n   (VP (VBZ is))))\n(ROOT (NP (NN B)))\n\n( (NP (NN C)) )\n"
    assert script.read_trees(text) == [
        "(ROOT (S (NP (NN A)) (VP (VBZ is))))",
        "(ROOT (NP (NN B)))",
        "((NP (NN C)))",
    ]


@pytest.mark.parametrize("text", ["(ROOT (NP (NN A))", "(ROOT (NP (NN A))))", "word (NP (NN A))"])
def test_read_trees_rejects_unbalanced_text(script: ModuleType, text: str) -> None:
    with pytest.raises(ValueError):
        script.read_trees(text)


def test_with_root_gives_every_tree_a_labelled_root_over_one_child(script: ModuleType) -> None:
    rooted = "(ROOT (S (NP (NN A)) (VP (VBZ is))))"
    assert script.with_root(rooted) == rooted
    assert script.with_root("(TOP (NP (NN A)))") == "(TOP (NP (NN A)))"
    assert script.with_root("((S (NP (NN A)) (VP (VBZ is))))") == rooted
    assert script.with_root("(S (NP (NN A)) (VP (VBZ is)))") == rooted
    with pytest.raises(ValueError):
        script.with_root("(ROOT (NP (NN A)) (. .))")


def test_supar_line_keeps_a_word_with_a_no_break_space_one_word(script: ModuleType) -> None:
    tree = script.read_trees("(ROOT (NP (NN Xpd\u00a0TTD) (NN mice)))")[0]
    assert script.supar_line(tree) == "(ROOT (NP (NN Xpd_TTD) (NN mice)))"


def test_stanza_filtering_of_the_training_trees(script: ModuleType) -> None:
    trees = [
        "(ROOT (NP (NN A)))",
        "(ROOT (NN A))",
        "(ROOT (NP (NN A)))",
        "(ROOT (S (NP (NN B)) (VP (VBZ is))))",
    ]
    assert script.without_repeats(trees) == [trees[0], trees[1], trees[3]]
    assert script.without_singletons(trees) == [trees[0], trees[2], trees[3]]


def test_parseval_scores_the_root_as_craft_s_unlabelled_outer_bracket(
    script: ModuleType,
) -> None:
    gold = (
        "(ROOT (S (NP (DT The) (NN cell)) (VP (VBZ divides) (PP (IN in) (NP (NN culture)))) (. .)))"
    )
    test = (
        "(ROOT (S (NP (DT The) (NN cell)) (VP (VBZ divides)) (PP (IN in) (NP (NN culture))) (. .)))"
    )
    same = script.parseval([(gold, gold)])
    assert same["f1"] == 1.0
    # Brackets: outer, S, NP, VP, PP, NP in gold; the test's VP is shorter.
    scores = script.parseval([(gold, test)])
    assert (scores["matched"], scores["gold"], scores["test"]) == (5, 6, 6)
    counts: Counts = {}
    craft_style = [g.replace("(ROOT ", "( ", 1) for g in (gold, test)]
    add_counts(counts, parseval_counts(parse_tree(craft_style[0]), parse_tree(craft_style[1])))
    assert score_parseval(counts)["f1"] == scores["f1"]
