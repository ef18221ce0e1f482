"""Paired approximate randomization."""

from __future__ import annotations

import random
import time

import pytest

from casflow.components.metrics.matching import Mention
from casflow.components.metrics.mentions import mention_counts, score_mentions
from casflow.pipeline.significance import (
    F1Metric,
    RatioMetric,
    approximate_randomization,
)

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
