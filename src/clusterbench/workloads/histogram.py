"""sysbench's latency histogram, as read by the Lua report hook.

sysbench 1.0.20 keeps latencies (ms) in a log-scaled array: an event of `v` ms lands in bucket
`i = floor((ln v - deduct) * mult + 0.5)` (clamped to [0, size-1]), and bucket i stands for
`exp(i / mult + deduct)` ms. With the default 1024 buckets over 0.001..100000 ms, neighbouring
buckets are 1.8 % apart. Percentiles here use sysbench's own rule, so a percentile computed from
an interval's histogram equals the one sysbench reports for that interval.

Histograms from several clients or intervals are merged by adding counts, never by averaging
percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from clusterbench.errors import WorkloadError


@dataclass(frozen=True)
class HistogramScheme:
    size: int
    deduct: float
    mult: float

    def value_ms(self, index: int) -> float:
        return math.exp(index / self.mult + self.deduct)


# sysbench 1.0.20: sb_histogram_init(&sb_latency_histogram, 1024, 0.001, 100000)
DEFAULT_SCHEME = HistogramScheme(
    size=1024, deduct=math.log(0.001), mult=1023 / (math.log(100000) - math.log(0.001))
)


@dataclass
class LatencyHistogram:
    scheme: HistogramScheme
    counts: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, scheme: HistogramScheme, pairs: Iterable[Iterable[int]]) -> LatencyHistogram:
        counts: dict[int, int] = {}
        for pair in pairs:
            i, c = (int(x) for x in pair)
            if c:
                counts[i] = counts.get(i, 0) + c
        return cls(scheme, counts)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def merge(self, other: LatencyHistogram) -> LatencyHistogram:
        if other.scheme != self.scheme:
            raise WorkloadError(
                "cannot merge latency histograms with different bucket schemes; "
                "use one sysbench build for all clients"
            )
        counts = dict(self.counts)
        for i, c in other.counts.items():
            counts[i] = counts.get(i, 0) + c
        return LatencyHistogram(self.scheme, counts)

    def minus(self, other: LatencyHistogram | None) -> LatencyHistogram | None:
        """The counts of `self` not in `other` (a later cumulative histogram less an earlier part
        of it); None when `other` has a count `self` has not, so the two do not nest."""
        if other is None:
            return self
        if other.scheme != self.scheme:
            return None
        counts = dict(self.counts)
        for i, c in other.counts.items():
            left = counts.get(i, 0) - c
            if left < 0:
                return None
            counts[i] = left
        return LatencyHistogram(self.scheme, {i: c for i, c in counts.items() if c})

    def percentile(self, pct: float) -> float | None:
        """sysbench's rule: first bucket where the running count reaches floor(n*pct/100 + 0.5)."""
        n = self.total
        if n == 0:
            return None
        nmax = math.floor(n * pct / 100 + 0.5)
        running = 0
        last = 0
        for i in sorted(self.counts):
            running += self.counts[i]
            last = i
            if running >= nmax:
                return self.scheme.value_ms(i)
        return self.scheme.value_ms(last)

    def min_ms(self) -> float | None:
        return self.scheme.value_ms(min(self.counts)) if self.counts else None

    def max_ms(self) -> float | None:
        return self.scheme.value_ms(max(self.counts)) if self.counts else None

    def mean_ms(self) -> float | None:
        n = self.total
        if n == 0:
            return None
        return sum(self.scheme.value_ms(i) * c for i, c in self.counts.items()) / n

    def buckets(self) -> list[tuple[float, int]]:
        """(bucket value in ms, count), ascending, non-empty buckets only."""
        return [(self.scheme.value_ms(i), self.counts[i]) for i in sorted(self.counts)]

    def to_json(self) -> dict[str, object]:
        return {
            "scheme": {"size": self.scheme.size, "deduct": self.scheme.deduct, "mult": self.scheme.mult},
            "buckets": [[i, self.counts[i]] for i in sorted(self.counts)],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> LatencyHistogram:
        s = data["scheme"]
        assert isinstance(s, Mapping)
        scheme = HistogramScheme(int(s["size"]), float(s["deduct"]), float(s["mult"]))
        pairs = data["buckets"]
        assert isinstance(pairs, list)
        return cls.from_pairs(scheme, pairs)


def merge_all(hists: Iterable[LatencyHistogram | None]) -> LatencyHistogram | None:
    out: LatencyHistogram | None = None
    for h in hists:
        if h is None:
            continue
        out = h if out is None else out.merge(h)
    return out
