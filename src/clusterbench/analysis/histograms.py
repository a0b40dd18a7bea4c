"""The report's latency histograms, from the histograms stored with each trial (sysbench's own
buckets, all clients added up): how many transactions took how long, on a log time axis, with the
p50, p95 and p99 marked. The percentiles of the summary table are read off the same counts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from clusterbench.analysis import plots
from clusterbench.analysis.sections import Figure, Section
from clusterbench.store import Store
from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram

INTRO = (
    "Transactions per latency bucket over each trial's measured time, all clients added up (sysbench's "
    "own buckets, 1.8 % apart, merged into about 60 bars); the dashed lines are p50, p95 and p99."
)


def stored_histogram(store: Store, trial_id: int) -> LatencyHistogram | None:
    """A trial's stored histogram (all clients) back in sysbench's buckets: a bucket's value is
    exp(i / mult + deduct), so i is read back from it."""
    rows = store.histogram(trial_id)
    if not rows:
        return None
    sc = DEFAULT_SCHEME
    counts: dict[int, int] = {}
    for value_ms, _, count in rows:
        i = max(0, min(sc.size - 1, round((math.log(value_ms) - sc.deduct) * sc.mult)))
        counts[i] = counts.get(i, 0) + count
    return LatencyHistogram(sc, counts)


def histogram_svg(title: str, h: LatencyHistogram) -> str:
    matplotlib = plots._matplotlib()
    with matplotlib.rc_context(plots.STYLE):
        fig = plots._figure(2.4)
        ax = fig.add_subplot()
        ax.set_title(title, loc="left")
        items = sorted(h.counts.items())
        lo, hi = items[0][0], items[-1][0]
        width = max(1, (hi - lo + 1) // 60)  # about 60 bars whatever the spread
        bars: dict[int, int] = {}
        for i, c in items:
            bars[lo + (i - lo) // width * width] = bars.get(lo + (i - lo) // width * width, 0) + c
        edges = [(h.scheme.value_ms(i), h.scheme.value_ms(i + width)) for i in sorted(bars)]
        ax.bar([a for a, _ in edges], [bars[i] for i in sorted(bars)], width=[b - a for a, b in edges],
               align="edge", color="#1f77b4", lw=0)  # fmt: skip
        ax.set_xscale("log")
        for p, style in ((50, ":"), (95, "--"), (99, "-.")):
            v = h.percentile(p)
            if v is not None:
                ax.axvline(v, color="#d62728", ls=style, lw=1.0, label=f"p{p} {v:.3g} ms")
        ax.set_xlabel("latency, ms (log scale)")
        ax.set_ylabel("transactions")
        ax.legend(loc="best")
        return plots.svg_text(fig)


def histogram_section(store: Store, trials: Sequence[Any]) -> Section | None:
    figures = []
    for tr in trials:
        h = stored_histogram(store, tr.id)
        if h is None or h.total == 0:
            continue
        title = f"trial {tr.seq} ({tr.workload}): {h.total:,} transactions"
        figures.append(Figure(title, histogram_svg(title, h)))
    if not figures:
        return None
    return Section("latency-histograms", "Latency histograms", intro=[INTRO], figures=figures)
