"""Where a run's warm-up really ends: MSER truncation of its per-second series. Pure.

With `warmup_until = "steady"` sysbench runs `warmup + time` seconds without a checkpoint, so its
final summary covers the whole run. Afterwards the leading intervals that were not yet at steady
state are cut off: at most the `warmup` the user allows, as many as the MSER rule asks for.

MSER (White, 1997; "Marginal Standard Error Rule"): for a series y_0 .. y_{n-1} and a candidate
truncation d, z(d) = sum_{i >= d} (y_i - mean(y_d..))^2 / (n - d)^2; the truncation is the d that
minimises z, searched over 0 .. min(allowed, n // 2). Dropping a point lowers z only when it
is far enough from the rest to outweigh the shorter series, so a run that starts steady keeps
every second. MSER reads one series, all clients together per interval, the one where the
load's start shows:
- without a rate limit (a closed loop), the throughput: every thread starts its next
  transaction when the last one ends, so a slow start is a low throughput;
- at a fixed --rate, the mean latency: the throughput follows the schedule whatever happens,
  and a cold start shows as transactions waiting longer (the mean, from the interval's
  histogram, is steadier second to second than a percentile of the same few events).

Cutting d intervals is exact for every counter (they are read whole at each report). The latency
histogram is the final histogram less the cut intervals': an interval's histogram and counters
can differ by the few transactions that end while its report is taken (5 of 4,833 in one run), so
the cut histogram is right to within those. The cut summary's minimum, average and maximum
latency come from that histogram, to within its bucket width.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from clusterbench.workloads.parse import COUNTERS, Sample, Summary, merge_exact

log = logging.getLogger(__name__)


def mser(series: Sequence[float], most: int) -> int:
    """The number of leading points to drop (0 .. min(most, n // 2)) by the MSER rule."""
    n = len(series)
    best, best_z = 0, None
    for d in range(0, min(most, n // 2) + 1):
        rest = series[d:]
        mean = sum(rest) / len(rest)
        z = sum((y - mean) ** 2 for y in rest) / len(rest) ** 2
        if best_z is None or z < best_z - 1e-12:
            best, best_z = d, z
    return best


def steady_cut(clients: Sequence[Sequence[Sample]], warmup: float, rate_limited: bool = False) -> int:
    """How many leading intervals of every client are warm-up: give each client's reports
    without the tail (the rest of the run after sysbench's last report). Only the intervals every
    client reported count; the cut never reaches past `warmup` s."""
    n = min((len(c) for c in clients), default=0)
    if n < 2 or warmup <= 0:
        return 0
    allowed = min(sum(1 for s in c[:n] if s.t <= warmup + 0.1 * s.interval) for c in clients)
    if allowed == 0:
        return 0
    series = [sum(c[k].events / c[k].interval for c in clients) for k in range(n)]
    if rate_limited:
        series = _mean_latency(clients, n) or series
    return mser(series, allowed)


def _mean_latency(clients: Sequence[Sequence[Sample]], n: int) -> list[float] | None:
    """Each interval's mean latency, all clients together. A second without a finished
    transaction (a stall) counts as the slowest second of the run. None without histograms."""
    means: list[float | None] = []
    for k in range(n):
        h = merge_exact(c[k].hist for c in clients)
        if h is None:
            log.warning("a report without a latency histogram: the warm-up is read on the throughput")
            return None
        means.append(h.mean_ms())
    seen = [m for m in means if m is not None]
    if not seen:
        return None
    worst = max(seen)
    return [worst if m is None else m for m in means]


def cut_summary(summary: Summary, cut: Sequence[Sample]) -> Summary | None:
    """The summary of a whole run less its first intervals `cut`; None when the latency
    histograms cannot tell the rest's latency (one of them is missing or they do not nest)."""
    if not cut:
        return summary
    dropped = merge_exact(s.hist for s in cut)
    if summary.hist is None or dropped is None:
        return None
    hist = summary.hist.minus(dropped)
    if hist is None:
        return None
    counts = {k: getattr(summary, k) - sum(getattr(s, k) for s in cut) for k in COUNTERS}
    if min(counts.values()) < 0:
        return None
    return replace(
        summary,
        duration=max(summary.duration - max(s.t for s in cut), 0.001),
        lat_min_ms=hist.min_ms() or 0.0,
        lat_avg_ms=hist.mean_ms() or 0.0,
        lat_max_ms=hist.max_ms() or 0.0,
        lat_pct_ms=hist.percentile(summary.percentile) if hist.total else None,
        hist=hist,
        **counts,
    )


def steady_line(warmup: int, cut: float) -> str:
    """What the warm-up until steady turned out to be, in one line for the trial's notes."""
    if cut <= 0:
        return f"warm-up until steady: steady from the first second; all {warmup} s of it are measured"
    kept = max(0.0, warmup - cut)
    rest = f"; the other {kept:.0f} s are measured" if kept >= 0.5 else ""
    return f"warm-up until steady: the first {cut:.0f} s (of up to {warmup} s) were warm-up{rest}"
