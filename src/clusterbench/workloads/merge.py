"""Load from several clients as one: alignment of their intervals, fairness across them. Pure.

The sums themselves (counts, rates, histograms) are `parse.combine_samples` and
`parse.merge_summaries`; this module says which intervals may be summed and how evenly the
clients were served.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from clusterbench.workloads.parse import Sample, combine_group, interval_key


@dataclass(frozen=True)
class MergedInterval:
    """One report interval summed over the clients that reported it."""

    index: int
    sample: Sample  # client = -1; rates and counts summed, latency from the summed histogram
    clients: tuple[int, ...]  # the clients that reported this interval
    complete: bool  # every client of the run reported it
    wall_spread: float | None  # max - min of the clients' report wall clocks (s), None if unknown


def merge_intervals(samples: Iterable[Sample], clients: Sequence[int] | None = None) -> list[MergedInterval]:
    """Samples of several clients, summed per interval index, in order.

    `clients` are the clients of the run (default: those seen). An interval some client did not
    report (sysbench's last report races its exit) is kept but marked incomplete: its sum is
    not the load of every client, and a plot of it would show a drop that never happened.
    """
    by_key: dict[int, list[Sample]] = {}
    for s in samples:
        by_key.setdefault(interval_key(s), []).append(s)
    everyone = set(clients) if clients is not None else {s.client for g in by_key.values() for s in g}
    out = []
    for k in sorted(by_key):
        group = by_key[k]
        walls = [s.wall for s in group if s.wall is not None]
        spread = max(walls) - min(walls) if walls and len(walls) == len(group) else None
        seen = tuple(sorted({s.client for s in group}))
        out.append(MergedInterval(k, combine_group(float(k), group), seen, set(seen) >= everyone, spread))
    return out


def client_start_walls(samples: Iterable[Sample]) -> dict[int, float]:
    """When each client's measurement clock started (epoch s): the median of wall - t over its
    samples, so one late report (a stalled reporting thread) does not move it."""
    per: dict[int, list[float]] = {}
    for s in samples:
        if s.wall is not None:
            per.setdefault(s.client, []).append(s.wall - s.t)
    return {c: statistics.median(v) for c, v in sorted(per.items())}


def start_skew(samples: Iterable[Sample], clock_offsets: Mapping[int, float] | None = None) -> float | None:
    """Seconds between the first and the last client to start measuring; None with < 2 clients
    that carry wall clocks. `clock_offsets` (client → its host's clock minus ours, s) put clients
    on other machines on one clock: each client reports, and waits for the common start, on its
    own host's clock, so an offset between machines would otherwise not show as skew."""
    offsets = clock_offsets or {}
    starts = [w - offsets.get(c, 0.0) for c, w in client_start_walls(samples).items()]
    if len(starts) < 2:
        return None
    return max(starts) - min(starts)


@dataclass(frozen=True)
class Fairness:
    """How evenly the clients were served, from one figure per client (e.g. its tps)."""

    n: int
    min: float
    max: float
    mean: float
    cv: float  # population standard deviation / mean; 0 = all equal
    jain: float  # Jain's index (sum x)^2 / (n sum x^2): 1 = all equal, 1/n = one client got it all

    @property
    def spread(self) -> float:
        """(max - min) / mean."""
        return (self.max - self.min) / self.mean if self.mean else 0.0

    def to_json(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "cv": self.cv,
            "jain": self.jain,
            "spread": self.spread,
        }


def fairness(values: Sequence[float]) -> Fairness | None:
    if not values:
        return None
    n = len(values)
    mean = sum(values) / n
    sq = sum(v * v for v in values)
    cv = math.sqrt(sum((v - mean) ** 2 for v in values) / n) / mean if mean else 0.0
    jain = (sum(values) ** 2) / (n * sq) if sq else 1.0
    return Fairness(n=n, min=min(values), max=max(values), mean=mean, cv=cv, jain=jain)
