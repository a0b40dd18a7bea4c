"""Automatic repetitions: repeat a design point until the 95 % confidence interval of its
statistic lies within a tolerance (default 5 %) of it, or until a cap. Pure.

`[experiment] repetitions = "auto"` plans `min_repetitions` per point; the runner then adds one
repetition at a time while `needs_more` says so. The statistic (`ci_statistic`):

* `median` (default): the distribution-free order-statistic interval of analysis/stats.py, the
  one the report prints. A 95 % interval of this kind needs at least 6 values, so a point never
  converges with fewer (n = 5 covers only 93.75 %).
* `mean`: Student's t interval (scipy), mean ± t(0.975, n-1) · s / √n; from 2 values on, and it
  assumes roughly normal per-repetition values (each is itself an average over many events).

Converged: the interval reaches the asked confidence and both its ends are within
`ci_tolerance` × |statistic| of the statistic.

The value per repetition is what the experiment is about: for the access-method tests the mean
latency of one access (µs per access and its CI scale together, so the relative width is the
same), for every other test the transactions per second.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from clusterbench.analysis.stats import median_ci
from clusterbench.workloads.sysbench import ACCESS_TESTS

Statistic = Literal["median", "mean"]
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Convergence:
    statistic: Statistic
    n: int
    center: float | None  # the median or mean of the values (None without values)
    low: float | None
    high: float | None
    coverage: float  # the interval's real confidence (order statistics: discrete)
    converged: bool

    @property
    def half_width(self) -> float | None:
        """The larger distance from the statistic to an end of the interval, relative to it."""
        if self.center is None or self.low is None or self.high is None or self.center == 0:
            return None
        return max(self.center - self.low, self.high - self.center) / abs(self.center)

    def text(self) -> str:
        """'converged after 7 repetition(s) (median ±3.1 %)', or 'not converged after 10 ...'."""
        hw = self.half_width
        spread = f"{self.statistic} ±{hw * 100:.1f} %" if hw is not None else f"{self.statistic}: no interval"
        if self.coverage < CONFIDENCE - 1e-9 and self.n > 0:
            spread += f", {self.coverage * 100:.0f} % coverage"
        word = "converged" if self.converged else "not converged"
        return f"{word} after {self.n} repetition(s) ({spread})"


def converge(
    values: Sequence[float],
    statistic: Statistic = "median",
    tolerance: float = 0.05,
    confidence: float = CONFIDENCE,
) -> Convergence:
    """The confidence interval of the values' statistic and whether it is within tolerance."""
    xs = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    n = len(xs)
    if n == 0:
        return Convergence(statistic, 0, None, None, None, 0.0, False)
    if statistic == "median":
        ci = median_ci(xs, confidence)
        center, low, high, coverage = ci.median, ci.low, ci.high, ci.coverage
    else:
        center = statistics.fmean(xs)
        if n < 2:
            return Convergence(statistic, n, center, None, None, 0.0, False)
        sd = statistics.stdev(xs)
        if sd == 0:
            low = high = center
        else:
            from scipy import stats as sps  # type: ignore[import-untyped, unused-ignore]  # ~0.5 s: on use

            lo, hi = sps.t.interval(confidence, n - 1, loc=center, scale=sd / math.sqrt(n))
            low, high = float(lo), float(hi)
        coverage = confidence
    within = center != 0 and max(center - low, high - center) <= tolerance * abs(center) + 1e-12
    ok = coverage >= confidence - 1e-9 and within
    return Convergence(statistic, n, center, low, high, coverage, ok)


def needs_more(c: Convergence, max_repetitions: int) -> bool:
    return not c.converged and c.n < max_repetitions


def trial_value(test: str, summary: Mapping[str, Any] | None) -> float | None:
    """The value a repetition contributes: mean latency (ms) of an access-method test, else tps."""
    if not summary:
        return None
    key = "lat_avg" if test in ACCESS_TESTS else "tps"
    v = summary.get(key)
    return float(v) if v is not None else None


def value_name(test: str) -> str:
    return "µs/access" if test in ACCESS_TESTS else "tps"
