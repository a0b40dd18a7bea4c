"""Report plots as inline SVG (matplotlib, no JavaScript): a report stays one offline HTML file of
a few hundred KB instead of carrying a 4.8 MB plotting library.

Each trial gets a tps panel and a latency panel drawn with the same width and margins, so their
time axes line up; the latency panel is drawn twice, on a linear and on a log scale, and the page
shows one of them (a checkbox switches, in CSS). A suite gets one overview figure: tps and p95 per
test, side by side, with the baseline run's bars beside them when the report compares two runs.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # never a window, whatever the environment says

from matplotlib.figure import Figure  # noqa: E402 - after choosing the backend
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

WIDTH_IN = 8.0  # 800 px at 100 dpi: the page shows it at the width of its column
MARGINS = {"left": 0.085, "right": 0.985}
COLORS = {"tps": "#1f77b4", "avg": "#2ca02c", "p95": "#ff7f0e", "p99": "#d62728", "base": "#7f7f7f"}
STYLE = {
    "svg.fonttype": "none",  # text stays text: small, searchable, crisp
    "svg.hashsalt": "clusterbench",  # stable ids: the same data gives the same file
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "legend.fontsize": 8,
    "legend.frameon": False,
}


@dataclass(frozen=True)
class Series:
    """One trial's per-second points (None where a value is unknown)."""

    t: Sequence[float]
    tps: Sequence[float]
    lat_avg: Sequence[float | None]
    p95: Sequence[float | None]
    p99: Sequence[float | None]


@dataclass(frozen=True)
class Window:
    label: str
    start: float
    end: float


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    # inline in HTML: drop the XML prolog and DOCTYPE, let the page size it
    text = text[text.index("<svg") :]
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r"<svg\1", text, count=1)
    return text


def _figure(height_in: float) -> Figure:
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, height_in), dpi=100)
        fig.subplots_adjust(top=0.86, bottom=0.2, **MARGINS)
    return fig


def _shade(ax: object, windows: Sequence[Window], label: bool) -> None:
    for w in windows:
        ax.axvspan(w.start, max(w.end, w.start + 0.2), color="#d62728", alpha=0.12, lw=0)  # type: ignore[attr-defined]
        if label:
            ax.annotate(  # type: ignore[attr-defined]
                w.label, xy=(w.start, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                color="#a00", va="bottom",
            )  # fmt: skip


def _xaxis(ax: object, t: Sequence[float], other: Sequence[float] = ()) -> None:
    xs = [*t, *other]
    if xs:
        ax.set_xlim(min(0.0, min(xs)), max(xs) + 0.5)  # type: ignore[attr-defined]
    # a 5 s trial gets 6 ticks, not one per second and a half
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))  # type: ignore[attr-defined]
    ax.set_xlabel("seconds since the measurement started")  # type: ignore[attr-defined]


def _none_to_nan(v: Sequence[float | None]) -> list[float]:
    return [float("nan") if x is None else float(x) for x in v]


def tps_svg(
    s: Series,
    *,
    windows: Sequence[Window] = (),
    clients: Sequence[tuple[str, Sequence[float], Sequence[float]]] = (),
    baseline: Series | None = None,
    baseline_label: str = "baseline",
) -> str:
    """tps per second from 0 up, per-client lines dotted, a baseline run's tps dashed grey."""
    with matplotlib.rc_context(STYLE):
        fig = _figure(2.6)
        ax = fig.add_subplot()
        ax.set_title("transactions per second", loc="left")
        if baseline is not None:
            ax.plot(baseline.t, baseline.tps, color=COLORS["base"], ls="--", lw=1.2, label=baseline_label)
        ax.plot(s.t, s.tps, color=COLORS["tps"], lw=1.6, marker="o", ms=2.5,
                label="tps, all clients" if clients else "tps")  # fmt: skip
        for name, ct, cv in clients:
            ax.plot(ct, cv, ls=":", lw=1, label=name)
        ax.set_ylim(bottom=0)
        top = max([*s.tps, *(baseline.tps if baseline else [])], default=0.0)
        ax.set_ylim(0, top * 1.12 if top > 0 else 1)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
        _shade(ax, windows, label=True)
        _xaxis(ax, s.t, baseline.t if baseline else ())
        ax.legend(loc="lower right", ncols=4)
        return _svg(fig)


def latency_svgs(
    s: Series,
    *,
    windows: Sequence[Window] = (),
    baseline: Series | None = None,
    baseline_label: str = "baseline",
) -> tuple[str, str]:
    """avg, p95 and p99 latency per second (ms): on a linear scale from 0, and the same figure on a
    log scale (drawn once, saved twice)."""
    with matplotlib.rc_context(STYLE):
        fig = _figure(2.6)
        ax = fig.add_subplot()
        if baseline is not None:
            ax.plot(baseline.t, _none_to_nan(baseline.p95), color=COLORS["base"], ls="--", lw=1.2,
                    label=f"p95, {baseline_label}")  # fmt: skip
        for key, values in (("avg", s.lat_avg), ("p95", s.p95), ("p99", s.p99)):
            ax.plot(s.t, _none_to_nan(values), color=COLORS[key], lw=1.4 if key == "p95" else 1.0, label=key)
        _shade(ax, windows, label=False)
        _xaxis(ax, s.t, baseline.t if baseline else ())
        ax.legend(loc="upper right", ncols=4)
        ax.set_title("latency, ms", loc="left")
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
        linear = _svg(fig)
        known = [v for v in (*s.lat_avg, *s.p95, *s.p99) if v is not None and v > 0]
        if not known:
            return linear, linear
        ax.set_title("latency, ms (log scale)", loc="left")
        ax.set_yscale("log")
        ax.autoscale(axis="y")
        # 1, 2, 5, 10, 20, 50 ... as plain numbers, not 2 x 10^0
        decades = math.log10(max(known) / min(known)) if min(known) > 0 else 0.0
        subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        return linear, _svg(fig)


@dataclass(frozen=True)
class Bar:
    test: str
    tps: float | None
    p95: float | None


def overview_svg(bars: Sequence[Bar], baseline: Sequence[Bar] = (), baseline_label: str = "baseline") -> str:
    """One figure for a whole suite: tps (left) and p95 ms (right) per test, a baseline's beside."""
    tests = [b.test for b in bars]
    base = {b.test: b for b in baseline}
    n = len(tests)
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 0.9 + 0.32 * n * (2 if base else 1)), dpi=100)
        fig.subplots_adjust(
            left=0.25,
            right=0.985,
            top=1 - 0.45 / fig.get_figheight(),
            bottom=0.5 / fig.get_figheight(),
            wspace=0.08,
        )
        ax_t, ax_p = fig.subplots(1, 2, sharey=True)
        ys = list(range(n))
        h = 0.4 if base else 0.7
        off = h / 2 if base else 0.0
        for ax, key, title in ((ax_t, "tps", "tps (transactions/s)"), (ax_p, "p95", "p95 latency (ms)")):
            vals = [getattr(b, key) or 0.0 for b in bars]
            bvals = [(getattr(base[t], key) or 0.0) if t in base else 0.0 for t in tests] if base else []
            # bulk_insert's "tps" is rows per second, 10-100x the others: it would squash every other
            # bar, so the axis is scaled to the other tests and its bar is cut, with its value written
            others = [v for b, v in zip(bars, vals, strict=True) if b.test != "bulk_insert"]
            others += [v for t, v in zip(tests, bvals, strict=False) if t != "bulk_insert"]
            top = max(others or [*vals, *bvals], default=0.0)
            limit = top * 1.18 if top > 0 else 1.0
            shown = [min(v, limit) for v in vals]
            ax.barh([y - off for y in ys], shown, height=h, color=COLORS["tps" if key == "tps" else "p95"],
                    label="this run")  # fmt: skip
            if base:
                ax.barh([y + off for y in ys], [min(v, limit) for v in bvals], height=h, color=COLORS["base"],
                        label=baseline_label)  # fmt: skip
            ax.set_title(title, loc="left")
            ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
            ax.grid(axis="y", visible=False)
            for y, v in zip(ys, vals, strict=True):
                text = f"{v:,.0f}" if key == "tps" else f"{v:.2f}"
                if v > limit:
                    text += " (rows/s, off scale)" if key == "tps" else " (off scale)"
                ax.annotate(text, xy=(min(v, limit), y - off), xytext=(-3 if v > limit else 2, 0),
                            textcoords="offset points",
                            va="center", fontsize=7, ha="right" if v > limit else "left",
                            color="white" if v > limit else "black")  # fmt: skip
            ax.set_xlim(0, limit)
        ax_t.set_yticks(ys, tests)
        ax_t.invert_yaxis()
        if base:
            ax_p.legend(loc="lower right")
        return _svg(fig)
