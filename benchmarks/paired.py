"""Paired A/B measurements on a noisy machine: the ratio of A to B with a confidence interval.

Each pair runs A and B back to back, in alternating order (AB, BA, AB, ...), so slow drift and a
"first of a pair" effect cancel instead of biasing the ratio. The ratio is summarized as the
geometric mean of the per-pair ratios with a Student t interval on their logarithms (ratios are
multiplicative: 0.5 and 2.0 average to 1). The order effect (the mean ratio of the second run of a
pair to the first, whatever they were) is reported beside it, so a systematic warm-up effect shows.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats  # type: ignore[import-untyped, unused-ignore]


@dataclass(frozen=True)
class RatioCI:
    n: int
    ratio: float  # geometric mean of A/B
    low: float
    high: float
    min: float
    max: float
    second_over_first: float  # geometric mean of (second run / first run) over the pairs

    def line(self, what: str = "A/B") -> str:
        return (
            f"{what} = {self.ratio:.3f}, 95 % CI {self.low:.3f}-{self.high:.3f} over {self.n} pairs "
            f"(pairs {self.min:.3f}-{self.max:.3f}; "
            f"second run of a pair / first {self.second_over_first:.3f})"
        )


def ratio_ci(
    a: Sequence[float], b: Sequence[float], a_first: Sequence[bool], confidence: float = 0.95
) -> RatioCI:
    """a[i], b[i]: the two measurements of pair i; a_first[i]: A ran first in pair i."""
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    n = len(logs)
    mean = statistics.fmean(logs)
    if n > 1:
        half = stats.t.ppf(0.5 + confidence / 2, n - 1) * statistics.stdev(logs) / math.sqrt(n)
    else:
        half = float("inf")
    order = [(y / x if first else x / y) for x, y, first in zip(a, b, a_first, strict=True)]
    return RatioCI(
        n=n,
        ratio=math.exp(mean),
        low=math.exp(mean - half),
        high=math.exp(mean + half),
        min=math.exp(min(logs)),
        max=math.exp(max(logs)),
        second_over_first=math.exp(statistics.fmean(math.log(r) for r in order)),
    )
