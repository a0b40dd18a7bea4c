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
    "own buckets, 1.8 % apart, merged into about 60 bars); the lines are p50, p95 and p99. A run of "
    "more than six trials shows each one's share of its transactions per bucket in one figure."
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
            k = i - i % width
            bars[k] = bars.get(k, 0) + c
        # one filled outline (ax.stairs), not a rectangle per bar: a tenth of the SVG
        starts = list(range(lo - lo % width, hi + width, width))
        edges = [h.scheme.value_ms(i) for i in [*starts, starts[-1] + width]]
        ax.stairs([bars.get(i, 0) for i in starts], edges, fill=True, color="#1f77b4", lw=0)
        ax.set_xscale("log")
        for p, style in ((50, ":"), (95, "--"), (99, "-.")):
            v = h.percentile(p)
            if v is not None:
                ax.axvline(v, color="#d62728", ls=style, lw=1.0, label=f"p{p} {v:.3g} ms")
        ax.set_xlabel("latency, ms (log scale)")
        ax.set_ylabel("transactions")
        ax.legend(loc="best")
        return plots.svg_text(fig)


def overlay_svg(title: str, hists: Sequence[tuple[str, LatencyHistogram]]) -> str:
    """Many trials in one figure: each one's share of its transactions per bucket, as an outline."""
    matplotlib = plots._matplotlib()
    with matplotlib.rc_context(plots.STYLE):
        fig = plots._figure(3.2)
        ax = fig.add_subplot()
        ax.set_title(title, loc="left")
        lo = min(min(h.counts) for _, h in hists)
        hi = max(max(h.counts) for _, h in hists)
        width = max(1, (hi - lo + 1) // 60)
        starts = list(range(lo - lo % width, hi + width, width))
        sc = hists[0][1].scheme
        edges = [sc.value_ms(i) for i in [*starts, starts[-1] + width]]
        for label, h in hists:
            bars: dict[int, int] = {}
            for i, c in h.counts.items():
                bars[i - i % width] = bars.get(i - i % width, 0) + c
            ax.stairs([bars.get(i, 0) / h.total for i in starts], edges, lw=1.0, label=label)
        ax.set_xscale("log")
        ax.set_xlabel("latency, ms (log scale)")
        ax.set_ylabel("share of transactions")
        ax.legend(loc="best", ncols=3, fontsize=7)
        return plots.svg_text(fig)


# up to this many trials, a histogram each; more (a suite), one figure of them all
EACH_UP_TO = 6


def histogram_section(store: Store, trials: Sequence[Any]) -> Section | None:
    hists = []
    for tr in trials:
        h = stored_histogram(store, tr.id)
        if h is not None and h.total > 0:
            hists.append((tr, h))
    if not hists:
        return None
    if len(hists) > EACH_UP_TO:
        title = f"{len(hists)} trials: each one's latency distribution"
        pairs = [(f"{tr.seq} {tr.workload}", h) for tr, h in hists]
        svg = overlay_svg("share of each trial's transactions per latency bucket", pairs)
        figure = Figure(title, svg)
        return Section("latency-histograms", "Latency histograms", intro=[INTRO], figures=[figure])
    figures = []
    for tr, h in hists:
        title = f"trial {tr.seq} ({tr.workload}): {h.total:,} transactions"
        figures.append(Figure(title, histogram_svg("transactions per latency bucket", h)))
    return Section("latency-histograms", "Latency histograms", intro=[INTRO], figures=figures)
