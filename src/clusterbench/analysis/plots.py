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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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


_FONTS = re.compile(r"font-family: [^;\"]*")
_GEOMETRY = re.compile(r'( (?:d|x|y|points)=")([^"]*)"')
_DECIMALS = re.compile(r"-?\d+\.\d\d+")
_GROUPS = re.compile(r"<g(?: id=\"[^\"]*\")?>|<g |</g>")



def _matplotlib() -> Any:
    """matplotlib, imported on first use (with the Agg backend: never a window, whatever the
    environment says): importing it costs ~0.5 s, which every CLI command paid at start-up even
    when it draws nothing (the CLI started in 3.0 s, most of it matplotlib and scipy)."""
    import matplotlib

    matplotlib.use("Agg")
    return matplotlib

def _round(m: re.Match[str]) -> str:
    return f"{float(m.group()):.1f}".rstrip("0").rstrip(".")


def _flatten(text: str) -> str:
    """Drop the <g> elements that only carry an id (matplotlib wraps every artist in one; nothing
    refers to those ids): a group without attributes changes nothing in the drawing."""
    out: list[str] = []
    bare: list[bool] = []
    pos = 0
    for m in _GROUPS.finditer(text):
        tag = m.group()
        if tag == "</g>":
            drop = bare.pop()
        elif tag == "<g ":
            bare.append(False)
            continue
        else:
            bare.append(True)
            drop = True
        out.append(text[pos : m.start()])
        if not drop:
            out.append(tag)
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _compact(text: str) -> str:
    """The same drawing in fewer bytes: no metadata, one short font family instead of matplotlib's
    list of eleven in every label, coordinates to 0.1 pt (a seventh of a pixel at the page's
    scale), no indentation, no no-op rotations, no groups that only carry an id."""
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = _FONTS.sub("font-family: sans-serif", text)
    text = re.sub(r' transform="rotate\(-0 [^"]*\)"', "", text)
    text = _GEOMETRY.sub(
        lambda m: m.group(1) + _DECIMALS.sub(_round, " ".join(m.group(2).split())) + '"', text
    )
    return _flatten(re.sub(r">\s+<", "><", text))


def svg_text(fig: Figure) -> str:
    """A figure as an inline <svg> element: no prolog, sized by the page, compacted."""
    matplotlib = _matplotlib()
    buf = io.StringIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    # inline in HTML: drop the XML prolog and DOCTYPE, let the page size it
    text = text[text.index("<svg") :]
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r"<svg\1", text, count=1)
    return _compact(text)


_svg = svg_text  # the name the run report's plots and their extensions use


def _figure(height_in: float) -> Figure:
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, height_in), dpi=100)
        fig.subplots_adjust(top=0.86, bottom=0.2, **MARGINS)
    return fig


def label_rows(windows: Sequence[Window], min_gap: float) -> list[int]:
    """The row (0 = lowest) of each window's label above the plot: a label that starts less than
    `min_gap` after one in its row moves up a row, so fault and stall labels never overlap."""
    ends: list[float] = []  # per row, where its last label started
    rows = []
    for w in windows:
        row = next((i for i, last in enumerate(ends) if w.start - last >= min_gap), len(ends))
        if row == len(ends):
            ends.append(w.start)
        ends[row] = w.start
        rows.append(row)
    return rows


def _shade(ax: object, windows: Sequence[Window], label: bool) -> None:
    order = sorted(windows, key=lambda w: w.start)
    span = max((w.end for w in order), default=1.0) - min((w.start for w in order), default=0.0)
    # about one label's width: 8 characters of 8-pt text on a 9-inch axis
    rows = label_rows(order, max(1.0, span * 0.12)) if label else [0] * len(order)
    for w, row in zip(order, rows, strict=True):
        ax.axvspan(w.start, max(w.end, w.start + 0.2), color="#d62728", alpha=0.12, lw=0)  # type: ignore[attr-defined]
        if label:
            ax.annotate(  # type: ignore[attr-defined]
                w.label, xy=(w.start, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                color="#a00", va="bottom", xytext=(0, 9 * row), textcoords="offset points",
            )  # fmt: skip


def _xaxis(ax: object, t: Sequence[float], other: Sequence[float] = ()) -> None:
    _matplotlib()
    from matplotlib.ticker import MaxNLocator
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
    matplotlib = _matplotlib()
    from matplotlib.ticker import MaxNLocator
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
    matplotlib = _matplotlib()
    from matplotlib.ticker import MaxNLocator
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
        log_yaxis(ax, known)
        return linear, _svg(fig)


def log_yaxis(ax: Any, known: Sequence[float], *, minor: bool = True) -> None:
    """Switch an axis to a log scale with ticks people read: 1, 2, 5, 10, 20, 50 ... as plain
    numbers (not 2 x 10^0), only the decades when the values span more than 2.5 of them."""
    _matplotlib()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator
    ax.set_yscale("log")
    ax.autoscale(axis="y")
    positive = [v for v in known if v > 0]
    decades = math.log10(max(positive) / min(positive)) if positive else 0.0
    subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    if not minor:
        ax.yaxis.set_minor_locator(NullLocator())


@dataclass(frozen=True)
class Bar:
    test: str
    tps: float | None
    p95: float | None


def overview_svg(bars: Sequence[Bar], baseline: Sequence[Bar] = (), baseline_label: str = "baseline") -> str:
    """One figure for a whole suite: tps (left) and p95 ms (right) per test, a baseline's beside."""
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
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


# ---- experiments: curves against a factor, small multiples per point, designs, the search -------

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")  # fmt: skip
LEGEND_COLS = 6
PHASE_COLORS = {"explore": "#2ca02c", "recheck": "#ff7f0e", "confirm": "#d62728"}


@dataclass(frozen=True)
class Estimate:
    """A value at one level of a factor (its position among the levels) with its interval."""

    level: int
    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Curve:
    label: str
    estimates: Sequence[Estimate]


@dataclass(frozen=True)
class Panel:
    title: str
    curves: Sequence[Curve]


@dataclass(frozen=True)
class CurveChart:
    """Medians with their intervals against a factor's levels (evenly spaced, in the file's order),
    one line per combination of the other factors, a panel per level of one of them when there
    are many. With connect=False the markers are not joined (points of a design, whose other
    factors all vary) and share one colour."""

    levels: Sequence[str]
    panels: Sequence[Panel]
    xlabel: str
    ylabel: str
    title: str
    connect: bool = True


@dataclass(frozen=True)
class Trace:
    """One trial's per-second values in a small multiple."""

    label: str
    t: Sequence[float]
    y: Sequence[float | None]


@dataclass(frozen=True)
class Multiple:
    title: str
    traces: Sequence[Trace]
    windows: Sequence[Window] = field(default_factory=tuple)


def _grid(n: int, cols: int, panel_in: float, top_in: float, bottom_in: float, *, left: float = 0.085,
          hspace_in: float = 0.45) -> tuple[Figure, list[Any]]:  # fmt: skip
    """A figure of n panels in rows of `cols`; panel heights in inches, so a figure grows with its
    panels instead of squeezing them. Tick labels only on the first column and on the lowest panel
    of each column: the caller gives every panel the same scales (matplotlib's shared axes would
    do that too, but cost time quadratic in the panels)."""
    _matplotlib()
    from matplotlib.figure import Figure
    rows = max(1, math.ceil(n / cols))
    height = top_in + bottom_in + rows * panel_in + (rows - 1) * hspace_in
    fig = Figure(figsize=(WIDTH_IN, height), dpi=100)
    fig.subplots_adjust(left=left, right=0.985, top=1 - top_in / height, bottom=bottom_in / height,
                        hspace=hspace_in / panel_in, wspace=0.06 * cols)  # fmt: skip
    grid = fig.subplots(rows, cols, squeeze=False)
    flat = [a for row in grid for a in row]
    for i, ax in enumerate(flat):
        if i >= n:
            ax.set_visible(False)
        else:
            ax.tick_params(labelbottom=i + cols >= n, labelleft=i % cols == 0)
    return fig, flat[:n]


def _ylim(axes: Sequence[Any], low: float, high: float) -> None:
    for ax in axes:
        ax.set_ylim(low, high)


def _log_panels(axes: Sequence[Any], known: Sequence[float], *, minor: bool) -> None:
    """Every panel on one log scale spanning the known values."""
    for ax in axes:
        log_yaxis(ax, known, minor=minor)
    _ylim(axes, min(known) / 1.3, max(known) * 1.3)


def _heading(fig: Figure, title: str, legend: Sequence[tuple[Any, str]] = (), left: float = 0.085) -> None:
    """The figure's title at the top left, a legend of every line in one block below it."""
    h = fig.get_figheight()
    fig.text(0.01, 1 - 0.08 / h, title, ha="left", va="top", fontsize=10)
    if legend:
        fig.legend([x for x, _ in legend], [lab for _, lab in legend], loc="upper left",
                   bbox_to_anchor=(left - 0.01, 1 - 0.3 / h), ncols=_legend_cols([lab for _, lab in legend]),
                   fontsize=8, handlelength=1.6, columnspacing=1.2)  # fmt: skip


def _legend_cols(labels: Sequence[str]) -> int:
    """As many legend columns as labels of this length fit across the figure (at most 6)."""
    longest = max((len(s) for s in labels), default=1)
    return max(1, min(LEGEND_COLS, len(labels), int((WIDTH_IN - 0.5) / (0.07 * longest + 0.5))))


def _legend_rows(labels: Sequence[str]) -> int:
    return math.ceil(len(labels) / _legend_cols(labels)) if labels else 0


def _curves(chart: CurveChart) -> tuple[Figure, list[Any], list[float]]:
    levels, panels, connect = chart.levels, chart.panels, chart.connect
    _matplotlib()
    from matplotlib.ticker import MaxNLocator
    labels: list[str] = []
    for p in panels:
        for c in p.curves:
            if c.label not in labels:
                labels.append(c.label)
    legend = connect and len(labels) > 1
    cols = min(len(panels), 3)
    titled = any(p.title for p in panels)
    top = 0.3 + 0.2 * (_legend_rows(labels) if legend else 0) + (0.2 if titled else 0.05)
    fig, axes = _grid(len(panels), cols, 2.3 if cols == 1 else 1.9, top, 0.5, hspace_in=0.5)
    color = {lab: PALETTE[i % len(PALETTE)] for i, lab in enumerate(labels)}
    handles: dict[str, Any] = {}
    values: list[float] = []
    for ax, panel in zip(axes, panels, strict=True):
        k = len(panel.curves)
        spread = min(0.36, 0.06 * k) if k > 1 else 0.0
        for i, c in enumerate(panel.curves):
            off = -spread / 2 + spread * i / (k - 1) if k > 1 else 0.0
            est = [e for e in c.estimates if e.value is not None]
            if not est:
                continue
            xs = [e.level + off for e in est]
            ys = [float(e.value) for e in est if e.value is not None]
            col = color[c.label] if connect else PALETTE[0]
            # the intervals as one path (vertical strokes with ticks at the ends), not one per point
            vx: list[float] = []
            vy: list[float] = []
            for x, e in zip(xs, est, strict=True):
                if e.low is not None and e.high is not None and e.high > e.low:
                    w = 0.04
                    vx += [x - w, x + w, math.nan, x, x, math.nan, x - w, x + w, math.nan]
                    vy += [e.low, e.low, math.nan, e.low, e.high, math.nan, e.high, e.high, math.nan]
            if vx:
                ax.plot(vx, vy, color=col, lw=0.9)
            (line,) = ax.plot(xs, ys, color=col, marker="o", ms=3.5, lw=1.3 if connect else 0.0)
            handles.setdefault(c.label, line)
            values += (
                ys + [e.low for e in est if e.low is not None] + [e.high for e in est if e.high is not None]
            )
        if panel.title:
            ax.set_title(panel.title, loc="left", fontsize=8.5, y=1.0)
        ax.set_xticks(range(len(levels)), levels)
        ax.set_xlim(-0.5, len(levels) - 0.5)
        ax.grid(axis="x", visible=False)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
    for i, ax in enumerate(axes):
        if i + cols >= len(axes):
            ax.set_xlabel(chart.xlabel)
        if i % cols == 0:
            ax.set_ylabel(chart.ylabel)
    _heading(fig, chart.title, [(handles[lab], lab) for lab in labels if lab in handles] if legend else [])
    return fig, axes, values


@contextmanager
def _curves_from_zero(chart: CurveChart) -> Iterator[tuple[Figure, list[Any], list[float]]]:
    """The chart in the report's style, its y axis from 0 to a tenth above the highest value; the
    style holds until the block ends (render the figure inside it)."""
    matplotlib = _matplotlib()
    with matplotlib.rc_context(STYLE):
        fig, axes, values = _curves(chart)
        top = max(values, default=0.0)
        _ylim(axes, 0, top * 1.1 if top > 0 else 1)
        yield fig, axes, values


def curves_svg(chart: CurveChart) -> str:
    """The chart, its y axis from 0."""
    with _curves_from_zero(chart) as (fig, _, _):
        return _svg(fig)


def curves_latency_svgs(chart: CurveChart) -> tuple[str, str]:
    """The chart of a latency: on a linear scale from 0, and the same figure on a log scale."""
    with _curves_from_zero(chart) as (fig, axes, values):
        linear = _svg(fig)
        known = [v for v in values if v > 0]
        if not known:
            return linear, linear
        _log_panels(axes, known, minor=True)
        return linear, _svg(fig)


def _log_ticks(low: float, high: float) -> list[float]:
    """1, 2, 5, 10, 20, 50 ... between low and high (only the decades over more than 2.5 of them)."""
    subs = (1.0, 2.0, 5.0) if math.log10(high / low) <= 2.5 else (1.0,)
    out = []
    for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        out += [m * 10.0**e for m in subs if low <= m * 10.0**e <= high]
    return out
