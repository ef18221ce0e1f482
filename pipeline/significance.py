"""Paired approximate randomization test (Noreen 1989; Yeh 2000; sigf).

Units (documents or sentences) are scored by two systems A and B on the same gold
data. Under the null hypothesis the two outputs of a unit are exchangeable, so each
shuffle swaps every unit's A and B counts with probability 0.5, sums the counts,
and recomputes ``metric(A) - metric(B)``. With ``r`` shuffles at least as extreme as
the observed difference out of ``N``, the p-value is ``(r + 1) / (N + 1)``.

p-values: ``p_two_sided`` counts ``|d| >= |observed|``; ``p_greater`` (H1: A is
better) counts ``d >= observed``; ``p_less`` (H1: B is better) counts ``d <= observed``.

Speed: counts are turned into one array per side (units x keys), and shuffled sums
come from matrix products in batches. The metric is then called once per shuffle
and side on a plain dict; metrics with a ``batch`` method (``F1Metric``,
``RatioMetric``) are evaluated on whole arrays instead, which is much faster.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

Metric = Callable[[Mapping[str, float]], float]
DEFAULT_ITERATIONS = 10_000
# Floating-point noise must not decide whether a shuffle ties the observed difference.
TIE_TOLERANCE = 1e-12
BATCH_CELLS = 4_000_000


@runtime_checkable
class BatchMetric(Protocol):
    def __call__(self, counts: Mapping[str, float]) -> float: ...

    def batch(self, columns: Mapping[str, np.ndarray]) -> np.ndarray: ...


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


@dataclass(frozen=True)
class F1Metric:
    """Balanced F from ``<prefix>/tp``, ``/fp``, ``/fn`` (e.g. ``"strict/micro"``)."""

    prefix: str

    def __call__(self, counts: Mapping[str, float]) -> float:
        columns = {
            k: np.asarray([counts.get(f"{self.prefix}/{k}", 0.0)]) for k in ("tp", "fp", "fn")
        }
        return float(self._f1(columns)[0])

    def batch(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        return self._f1({k: columns[f"{self.prefix}/{k}"] for k in ("tp", "fp", "fn")})

    @staticmethod
    def _f1(c: Mapping[str, np.ndarray]) -> np.ndarray:
        return _ratio(2 * c["tp"], 2 * c["tp"] + c["fp"] + c["fn"])


@dataclass(frozen=True)
class RatioMetric:
    """``sum(numerator keys) / sum(denominator keys)``, e.g. accuracy or CoNLL F1."""

    numerator: tuple[str, ...]
    denominator: tuple[str, ...]

    def __call__(self, counts: Mapping[str, float]) -> float:
        columns = {
            k: np.asarray([counts.get(k, 0.0)]) for k in {*self.numerator, *self.denominator}
        }
        return float(self.batch(columns)[0])

    def batch(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        numerator = sum(columns[k] for k in self.numerator)
        denominator = sum(columns[k] for k in self.denominator)
        return _ratio(np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float))


@dataclass(frozen=True)
class SignificanceResult:
    metric_a: float
    metric_b: float
    observed_difference: float  # metric_a - metric_b
    p_two_sided: float
    p_greater: float  # H1: A better than B
    p_less: float  # H1: B better than A
    iterations: int
    seed: int


def _count_matrices(
    units_a: Sequence[Mapping[str, float]], units_b: Sequence[Mapping[str, float]]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    if len(units_a) != len(units_b):
        raise ValueError(
            f"system A has {len(units_a)} units and system B {len(units_b)}; the test pairs "
            "units, so both must be scored on the same documents/sentences in the same order"
        )
    keys = sorted({key for unit in (*units_a, *units_b) for key in unit})
    column = {key: j for j, key in enumerate(keys)}
    a = np.zeros((len(units_a), len(keys)))
    b = np.zeros((len(units_b), len(keys)))
    for matrix, units in ((a, units_a), (b, units_b)):
        for i, unit in enumerate(units):
            for key, value in unit.items():
                matrix[i, column[key]] = value
    return keys, a, b


def _evaluate(metric: Metric, keys: list[str], sums: np.ndarray) -> np.ndarray:
    """Metric of every row of ``sums`` (rows are shuffles, columns ``keys``)."""
    if isinstance(metric, BatchMetric):
        columns = {key: sums[:, j] for j, key in enumerate(keys)}
        missing = np.zeros(sums.shape[0])
        return np.asarray(metric.batch(_DefaultZero(columns, missing)), dtype=float)
    return np.fromiter(
        (metric(dict(zip(keys, row, strict=True))) for row in sums.tolist()),
        dtype=float,
        count=sums.shape[0],
    )


class _DefaultZero(dict):
    """Columns for a batch metric; keys no unit has are all zero."""

    def __init__(self, columns: dict[str, np.ndarray], zeros: np.ndarray) -> None:
        super().__init__(columns)
        self._zeros = zeros

    def __missing__(self, key: str) -> np.ndarray:
        return self._zeros


def approximate_randomization(
    units_a: Sequence[Mapping[str, float]],
    units_b: Sequence[Mapping[str, float]],
    metric: Metric,
    *,
    iterations: int = DEFAULT_ITERATIONS,
    seed: int | None = None,
) -> SignificanceResult:
    """Paired approximate randomization test of ``metric(A) - metric(B)``.

    ``units_a[i]`` and ``units_b[i]`` are the additive counts of unit ``i`` for each
    system. ``seed=None`` draws a seed, which the result reports for reproduction.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    if seed is None:
        seed = secrets.randbits(63)  # within SignificanceSettings.seed: it can go into a workflow
    if seed < 0:
        raise ValueError(f"seed must be 0 or more (numpy takes no negative seed), got {seed}")
    keys, a, b = _count_matrices(units_a, units_b)
    total_a, total_b = a.sum(axis=0), b.sum(axis=0)
    observed_a, observed_b = _evaluate(metric, keys, np.vstack([total_a, total_b]))
    observed = float(observed_a - observed_b)

    rng = np.random.default_rng(seed)
    difference = b - a  # what a swap moves from A's total to B's and back
    n_units = a.shape[0]
    batch = max(1, BATCH_CELLS // max(1, n_units))
    at_least_abs = at_least = at_most = 0
    done = 0
    while done < iterations:
        size = min(batch, iterations - done)
        swaps = rng.random((size, n_units)) < 0.5
        moved = swaps.astype(float) @ difference
        shuffled = _evaluate(metric, keys, total_a + moved) - _evaluate(
            metric, keys, total_b - moved
        )
        at_least_abs += int(np.count_nonzero(np.abs(shuffled) >= abs(observed) - TIE_TOLERANCE))
        at_least += int(np.count_nonzero(shuffled >= observed - TIE_TOLERANCE))
        at_most += int(np.count_nonzero(shuffled <= observed + TIE_TOLERANCE))
        done += size

    def p_value(r: int) -> float:
        return (r + 1) / (iterations + 1)

    return SignificanceResult(
        metric_a=float(observed_a),
        metric_b=float(observed_b),
        observed_difference=observed,
        p_two_sided=p_value(at_least_abs),
        p_greater=p_value(at_least),
        p_less=p_value(at_most),
        iterations=iterations,
        seed=seed,
    )
