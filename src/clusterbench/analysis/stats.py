"""Statistics over repetitions: median with a 95 % confidence interval, coefficient of variation,
and two-sample tests (Mann-Whitney U, Welch's t) for comparing two runs point by point.

The CI of the median is the distribution-free order-statistic interval: with n values sorted,
[x_(j), x_(n+1-j)] (1-based) covers the true median with probability 1 - 2 * P(Binom(n, 1/2) < j).
We take the largest j whose coverage is still >= 95 %. With fewer than 6 values no such j exists;
the interval is then [min, max] and `coverage` says what it really is (e.g. 50 % for n = 2, 93.75 %
for n = 5). Latency percentiles are never averaged: a point's p95 comes from the histograms of its
repetitions added together, and its spread from the per-repetition p95 values.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

DEFAULT_CV_WARN = 0.10


@dataclass(frozen=True)
class Interval:
    median: float
    low: float
    high: float
    coverage: float  # the real confidence of [low, high]
    n: int


def median(xs: Sequence[float]) -> float:
    if not xs:
        raise ValueError("median of no values")
    return float(statistics.median(xs))


def median_ci(xs: Sequence[float], confidence: float = 0.95) -> Interval:
    """Order-statistic confidence interval of the median (exact, distribution-free)."""
    from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]  # on first use: ~0.6 s

    if not xs:
        raise ValueError("no values")
    v = sorted(float(x) for x in xs)
    n = len(v)
    alpha = 1.0 - confidence
    best_j = 0
    for j in range(1, n // 2 + 1):
        # P(X < j) for X ~ Binom(n, 1/2): the chance the median lies below x_(j)
        tail = float(sps.binom.cdf(j - 1, n, 0.5))
        if 2 * tail <= alpha:
            best_j = j
        else:
            break
    if best_j == 0:
        cover = 1.0 - 2 * 0.5**n if n > 1 else 0.0
        return Interval(median(v), v[0], v[-1], cover, n)
    cover = 1.0 - 2 * float(sps.binom.cdf(best_j - 1, n, 0.5))
    return Interval(median(v), v[best_j - 1], v[n - best_j], cover, n)


def cv(xs: Sequence[float]) -> float | None:
    """Coefficient of variation: sample standard deviation / mean; None below 2 values or mean 0."""
    if len(xs) < 2:
        return None
    m = statistics.fmean(xs)
    if m == 0:
        return None
    return statistics.stdev(xs) / abs(m)


def cv_flag(xs: Sequence[float], threshold: float = DEFAULT_CV_WARN) -> bool:
    c = cv(xs)
    return c is not None and c > threshold


Test = Literal["welch", "mwu"]


@dataclass(frozen=True)
class Comparison:
    median_a: float
    median_b: float
    change: float | None  # (median_b - median_a) / median_a
    p_welch: float | None
    p_mwu: float | None
    test: Test
    alpha: float

    @property
    def p(self) -> float | None:
        return self.p_welch if self.test == "welch" else self.p_mwu

    def verdict(self, higher_is_better: bool = True) -> str:
        """'faster', 'slower' or 'no significant difference' (B against A)."""
        p = self.p
        if p is None or math.isnan(p) or p >= self.alpha or self.change is None or self.change == 0:
            return "no significant difference"
        better = self.change > 0 if higher_is_better else self.change < 0
        return "faster" if better else "slower"


def welch_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    if len(a) < 2 or len(b) < 2:
        return None
    if statistics.pvariance(a) == 0 and statistics.pvariance(b) == 0:
        return 1.0 if statistics.fmean(a) == statistics.fmean(b) else 0.0
    from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]

    return float(sps.ttest_ind(a, b, equal_var=False).pvalue)


def mwu_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    if not a or not b:
        return None
    from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]

    return float(sps.mannwhitneyu(a, b, alternative="two-sided", method="auto").pvalue)


def compare(
    a: Sequence[float], b: Sequence[float], *, test: Test = "welch", alpha: float = 0.05
) -> Comparison:
    ma, mb = median(a), median(b)
    change = None if ma == 0 else (mb - ma) / ma
    return Comparison(ma, mb, change, welch_p(a, b), mwu_p(a, b), test, alpha)
