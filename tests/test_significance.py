"""Paired approximate randomization, its settings, ``casflow significance`` and how the
reports print p."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from lxml import html as lxml_html
from pydantic import ValidationError

from casflow.components.metrics.matching import Mention
from casflow.components.metrics.mentions import mention_counts, score_mentions
from casflow.pipeline.cli import main
from casflow.pipeline.component import Evaluator, RunContext, SignificanceSettings
from casflow.pipeline.html_report import _significance_table
from casflow.pipeline.registry import registry
from casflow.pipeline.significance import (
    F1Metric,
    RatioMetric,
    approximate_randomization,
)
from casflow.pipeline.significance_report import markdown_table, output_name, p_text, pairwise

ACCURACY = RatioMetric(("correct",), ("total",))


def accuracy(counts) -> float:
    return counts.get("correct", 0) / counts["total"] if counts.get("total") else 0.0


def random_units(seed: int, n: int, p_correct: float) -> list[dict[str, float]]:
    rng = random.Random(seed)
    return [
        {"correct": sum(rng.random() < p_correct for _ in range(20)), "total": 20} for _ in range(n)
    ]


def test_identical_systems_give_p_one():
    units = random_units(1, 30, 0.7)
    for metric in (accuracy, ACCURACY):
        result = approximate_randomization(units, units, metric, iterations=500, seed=3)
        assert result.observed_difference == 0.0
        assert result.p_two_sided == result.p_greater == result.p_less == 1.0


def test_clearly_different_systems_give_the_smallest_p():
    good, bad = random_units(1, 60, 0.9), random_units(2, 60, 0.4)
    result = approximate_randomization(good, bad, ACCURACY, iterations=999, seed=0)
    assert result.observed_difference > 0.4
    assert result.p_two_sided == pytest.approx(1 / 1000)
    assert result.p_greater == pytest.approx(1 / 1000)
    assert result.p_less == 1.0


def test_two_units_match_the_exact_permutation_distribution():
    # Shuffled differences: +1 (no swap, prob 1/4), 0 (one swap, 1/2), -1 (both, 1/4).
    a = [{"correct": 1, "total": 1}, {"correct": 1, "total": 1}]
    b = [{"correct": 0, "total": 1}, {"correct": 0, "total": 1}]
    result = approximate_randomization(a, b, ACCURACY, iterations=20_000, seed=11)
    assert result.observed_difference == 1.0
    assert result.p_two_sided == pytest.approx(0.5, abs=0.02)
    assert result.p_greater == pytest.approx(0.25, abs=0.02)
    assert result.p_less == 1.0


def test_same_seed_same_result_and_seed_is_reported():
    a, b = random_units(1, 40, 0.7), random_units(2, 40, 0.65)
    first = approximate_randomization(a, b, accuracy, iterations=300, seed=42)
    assert approximate_randomization(a, b, accuracy, iterations=300, seed=42) == first
    drawn = approximate_randomization(a, b, accuracy, iterations=300)
    assert approximate_randomization(a, b, accuracy, iterations=300, seed=drawn.seed) == drawn


def test_batch_metrics_agree_with_plain_functions():
    a, b = random_units(5, 50, 0.7), random_units(6, 50, 0.68)
    fast = approximate_randomization(a, b, ACCURACY, iterations=400, seed=9)
    slow = approximate_randomization(a, b, accuracy, iterations=400, seed=9)
    assert (fast.p_two_sided, fast.p_greater, fast.p_less) == (
        slow.p_two_sided,
        slow.p_greater,
        slow.p_less,
    )
    assert fast.observed_difference == pytest.approx(slow.observed_difference)


def _mention_units(n: int, seed: int) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    units_a, units_b = [], []
    for _ in range(n):
        gold = [Mention(i * 10, i * 10 + rng.randint(2, 6), rng.choice("AB")) for i in range(8)]
        system_a = [g for g in gold if rng.random() < 0.8]
        system_b = [
            Mention(g.begin, g.end + (rng.random() < 0.3), g.label)
            for g in gold
            if rng.random() < 0.75
        ]
        units_a.append(mention_counts(gold, system_a).counts)
        units_b.append(mention_counts(gold, system_b).counts)
    return units_a, units_b


def test_f1_metric_on_mention_counts_matches_score_mentions():
    units_a, units_b = _mention_units(40, 1)
    generic = approximate_randomization(
        units_a,
        units_b,
        lambda c: score_mentions(c)["strict"]["micro"]["f1"],
        iterations=300,
        seed=5,
    )
    fast = approximate_randomization(
        units_a, units_b, F1Metric("strict/micro"), iterations=300, seed=5
    )
    assert fast.metric_a == pytest.approx(generic.metric_a)
    assert fast.p_two_sided == generic.p_two_sided


def test_thousand_units_ten_thousand_shuffles_run_in_seconds():
    units_a, units_b = _mention_units(1000, 2)
    start = time.perf_counter()
    result = approximate_randomization(units_a, units_b, F1Metric("strict/micro"), seed=1)
    assert result.iterations == 10_000
    assert time.perf_counter() - start < 10


def test_units_must_pair_up():
    with pytest.raises(ValueError, match="same documents"):
        approximate_randomization([{"correct": 1}], [], accuracy)
    with pytest.raises(ValueError, match="at least 1"):
        approximate_randomization([], [], accuracy, iterations=0)


# -- settings, the command and the reports ---------------------------------------------


def test_a_seed_numpy_cannot_take_is_refused_before_the_run() -> None:
    # A negative seed passed validation and then crashed the run at its end.
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        SignificanceSettings(metric="f1", seed=-1)
    with pytest.raises(ValidationError, match="less than or equal to"):
        SignificanceSettings(metric="f1", seed=2**63)
    assert SignificanceSettings(metric="f1", seed=2**63 - 1).seed == 2**63 - 1
    with pytest.raises(ValueError, match="seed must be 0 or more"):
        approximate_randomization([{"correct": 1}], [{"correct": 0}], accuracy, seed=-1)


def _tokens_evaluator(systems: list[str]) -> Evaluator:
    cls = registry().get("eval.tokens.v1")
    config = cls.Config.model_validate({"system_views": systems})
    evaluator = cls(config, RunContext(output_dir=Path(".")))
    assert isinstance(evaluator, Evaluator)
    return evaluator


def _token_counts(tp: int, fp: int = 0, fn: int = 0) -> dict[str, Any]:
    return {"token/tp": tp, "token/fp": fp, "token/fn": fn}


def test_a_test_that_fails_unexpectedly_is_recorded_and_the_others_run() -> None:
    # Any error of one test is that test's row: the run's reports must still be written.
    documents = {
        f"d{i}": {
            "a": {"counts": _token_counts(10)},
            "b": {"counts": _token_counts(6, 4, 4)},
            "c": {"counts": {"token/tp": "damaged"}},
        }
        for i in range(3)
    }
    tests = pairwise(
        _tokens_evaluator(["a", "b", "c"]), documents, ["a", "b", "c"], "f1",
        iterations=50, seed=1,
    )  # fmt: skip
    assert [(t["system_a"], t["system_b"]) for t in tests] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert "error" not in tests[0] and tests[0]["p_two_sided"] > 0
    assert tests[1]["error"].startswith("the test failed: ") and "error" in tests[2]
    assert (tests[1]["iterations"], tests[1]["seed"]) == (50, 1)
    (negative,) = pairwise(
        _tokens_evaluator(["a", "b"]), documents, ["a", "b"], "f1", iterations=50, seed=-1
    )
    assert "seed must be 0 or more" in negative["error"]


def test_small_p_values_are_printed_not_rounded_to_zero() -> None:
    # With more than 20,000 shuffles p can be below 0.00005; it is never 0.
    assert p_text(1 / 30_001) == "3.3e-05"
    assert p_text(0.0001) == "0.0001" and p_text(0.0135) == "0.0135" and p_text(1.0) == "1.0000"
    test = {
        "system_a": "a", "system_b": "b", "metric": "f1", "units": "documents",
        "iterations": 30_000, "seed": 0, "metric_a": 0.9, "metric_b": 0.5,
        "observed_difference": 0.4, "p_two_sided": 1 / 30_001,
    }  # fmt: skip
    assert markdown_table([test])[-2].endswith("| 40.00 | 3.3e-05 |")
    cells = lxml_html.fromstring(_significance_table([test])).xpath("//tbody/tr/td")
    assert cells[5].text_content() == "3.3e-05"


def _finished_run(folder: Path, n_documents: int = 30) -> Path:
    """An output folder as a run with eval.tokens.v1 over systems a and b leaves it: a is
    right on every document, b on half of each (the smallest p the test can give)."""
    folder.mkdir()
    counts = {"a": _token_counts(10), "b": _token_counts(5, 5, 5)}
    lines = [
        json.dumps({"evaluator": "tokens", "system": s, "document": f"d{i:02}",
                    "counts": counts[s], "units": None})
        for i in range(n_documents)
        for s in counts
    ]  # fmt: skip
    (folder / "evaluation-counts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    evaluator = _tokens_evaluator(["a", "b"])
    summary = {
        "tokens": {
            "component": "eval.tokens.v1",
            "gold_view": "gold",
            "config": {"system_views": ["a", "b"]},
            "systems": {
                s: {"documents": n_documents, "counts": c, "scores": evaluator.score(c)}
                for s, c in counts.items()
            },
        }
    }
    (folder / "evaluation.json").write_text(json.dumps(summary), encoding="utf-8")
    return folder


def _significance(out: Path, *options: str) -> list[str]:
    return ["significance", str(out), "--evaluator", "tokens", *options]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--iterations", "0"], "--iterations: at least 1 shuffle, got 0"),
        (["--iterations", "-5"], "--iterations: at least 1 shuffle, got -5"),
        (["--seed", "-1"], "--seed: 0 to 9223372036854775807, got -1"),
        (["--seed", str(2**63)], f"--seed: 0 to 9223372036854775807, got {2**63}"),
    ],
)
def test_options_out_of_range_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], said: str
) -> None:
    out = _finished_run(tmp_path / "out")
    args = _significance(out, "--metric", "f1", "--systems", "a", "b", *options)
    assert main(args) == 2
    assert capsys.readouterr().err == f"casflow significance: {said}\n"


def test_a_system_view_the_evaluator_does_not_have_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _finished_run(tmp_path / "out")
    assert main(_significance(out, "--metric", "f1", "--systems", "a", "nosuch")) == 2
    assert capsys.readouterr().err == (
        "casflow significance: no system view 'nosuch' in evaluator 'tokens'; views there: a, b\n"
    )


def test_tests_of_other_metrics_get_their_own_files_and_small_p_is_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _finished_run(tmp_path / "out")
    for metric in ("f1", "recall"):
        options = ("--metric", metric, "--systems", "a", "b", "--iterations", "20000")
        assert main(_significance(out, *options, "--seed", "1")) == 0
    assert sorted(p.name for p in out.glob("significance-*")) == [
        "significance-tokens-f1-a-vs-b.json",
        "significance-tokens-recall-a-vs-b.json",
    ]
    written = json.loads((out / "significance-tokens-recall-a-vs-b.json").read_text())
    assert (written["evaluator"], written["metric"]) == ("tokens", "recall")
    # 2 of 2^30 swaps are as extreme as the observed difference: none is drawn.
    assert written["p_two_sided"] == 1 / 20_001
    assert "p = 5.0e-05 two-sided" in capsys.readouterr().out
    assert output_name("eval.pos.v1", "xpos/f1", "my view", "b") == (
        "significance-eval.pos.v1-xpos_f1-my%20view-vs-b.json"
    )
    # views whose names differ only where a file name cannot hold the character
    assert output_name("e", "f1", "a b", "c") != output_name("e", "f1", "a_b", "c")
    assert output_name("e", "f1", "a/b", "c") != output_name("e", "f1", "a_b", "c")


def test_no_test_on_the_evaluation_files_of_an_earlier_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _finished_run(tmp_path / "out")
    interrupted = {"signal": "SIGTERM", "exit_status": 143}
    (out / "run-report.json").write_text(
        json.dumps({"workflow": "wf.yaml", "evaluation": None, "interrupted": interrupted})
    )
    assert main(_significance(out, "--metric", "f1", "--systems", "a", "b")) == 2
    err = capsys.readouterr().err
    assert "the last run was stopped by SIGTERM and wrote no evaluation" in err
    assert not list(out.glob("significance-*.json"))
