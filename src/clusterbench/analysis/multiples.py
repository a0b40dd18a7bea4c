"""Small multiples: one small panel per design point (tps, p95, how busy the servers were), the
repetitions as traces, fault windows shaded; split from plots.py (the experiment report's)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from clusterbench.analysis.plots import (
    PALETTE,
    STYLE,
    WIDTH_IN,
    Multiple,
    _heading,
    _legend_rows,
    _log_ticks,
    _matplotlib,
    _svg,
)

PANEL_POINTS = 40  # a small multiple is about 130 px wide: more points per trace than this are not seen


def _thin(t: Sequence[float], y: Sequence[float | None], most: int) -> list[tuple[float, float | None]]:
    """At most about 2 x `most` points of a trace: beyond `most`, each run of seconds becomes its
    lowest and its highest value (in their order), so a drop or a spike of one second still shows."""
    pts = list(zip(t, y, strict=True))
    if len(pts) <= 2 * most:
        return pts
    step = math.ceil(len(pts) / most)
    out: list[tuple[float, float | None]] = []
    for i in range(0, len(pts), step):
        chunk = [p for p in pts[i : i + step] if p[1] is not None]
        if not chunk:
            out.append((pts[i][0], None))
            continue
        lo = min(chunk, key=lambda p: p[1] or 0.0)
        hi = max(chunk, key=lambda p: p[1] or 0.0)
        out += sorted({lo, hi})
    return out


def _scales(
    panels: Sequence[Multiple], log: bool
) -> tuple[float, float, list[float], list[float], Callable[[float], float]]:
    """The scales every panel shares: the time range and its ticks, the value ticks, and where a
    value goes in a panel (0 at the bottom, 1 at the top; log or linear)."""
    from matplotlib.ticker import MaxNLocator

    ts = [t for p in panels for tr in p.traces for t in tr.t]
    vs = [float(v) for p in panels for tr in p.traces for v in tr.y if v is not None and (v > 0 or not log)]
    t0, t1 = (min(0.0, min(ts)), max(ts) + 0.5) if ts else (0.0, 1.0)
    xticks = [t for t in MaxNLocator(nbins=3, integer=True).tick_values(t0, t1) if t0 <= t <= t1]
    if log and vs:
        y0, y1 = min(vs) / 1.3, max(vs) * 1.3

        def frac_log(v: float) -> float:
            return (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) if v > 0 else math.nan

        return t0, t1, xticks, _log_ticks(y0, y1), frac_log
    y0, y1 = 0.0, (max(vs) * 1.08 if vs and max(vs) > 0 else 1.0)

    def frac(v: float) -> float:
        return (v - y0) / (y1 - y0)

    return t0, t1, xticks, [v for v in MaxNLocator(nbins=3).tick_values(y0, y1) if y0 <= v <= y1], frac


def _multiples(
    panels: Sequence[Multiple], *, title: str, ylabel: str, xlabel: str, cols: int, log: bool = False
) -> Figure:
    """Small multiples drawn into one axes, each panel a cell of a grid in inches: a few paths for
    the whole figure (every trace of one label is one path) instead of an axes per panel, which
    is what keeps a hundred panels small and quick to draw. Every panel has the same scales;
    tick labels at the left of each row and under the lowest panel of each column, light grid
    lines in every panel."""
    _matplotlib()
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    labels = list(dict.fromkeys(tr.label for p in panels for tr in p.traces))
    n = len(panels)
    cols = max(1, min(cols, n))
    rows = max(1, math.ceil(n / cols))
    top_in, bottom_in, left_in, right_in = 0.4 + 0.22 * _legend_rows(labels), 0.45, 0.6, 0.1
    panel_h, vgap, hgap = 0.75, 0.3, 0.12
    grid_w = WIDTH_IN - left_in - right_in
    grid_h = rows * panel_h + (rows - 1) * vgap
    height = top_in + bottom_in + grid_h
    panel_w = (grid_w - (cols - 1) * hgap) / cols
    fig = Figure(figsize=(WIDTH_IN, height), dpi=100)
    ax = fig.add_axes((left_in / WIDTH_IN, bottom_in / height, grid_w / WIDTH_IN, grid_h / height))
    ax.set_axis_off()
    ax.set_xlim(0, grid_w)
    ax.set_ylim(0, grid_h)
    t0, t1, xticks, yticks, frac = _scales(panels, log)

    def cell(i: int) -> tuple[float, float]:  # the panel's lower left corner
        r, c = divmod(i, cols)
        return c * (panel_w + hgap), grid_h - (r + 1) * panel_h - r * vgap

    def X(x0: float, t: float) -> float:
        return x0 + (t - t0) / (t1 - t0) * panel_w

    frame: tuple[list[float], list[float]] = ([], [])  # x and y of every panel's frame, one path
    grid: tuple[list[float], list[float]] = ([], [])
    trace_xy: dict[str, tuple[list[float], list[float]]] = {lab: ([], []) for lab in labels}
    shades = []
    for i, p in enumerate(panels):
        x0, b0 = cell(i)
        frame[0].extend([x0, x0, x0 + panel_w, math.nan])
        frame[1].extend([b0 + panel_h, b0, b0, math.nan])
        for v in yticks:
            grid[0].extend([x0, x0 + panel_w, math.nan])
            grid[1].extend([b0 + frac(v) * panel_h] * 2 + [math.nan])
        for w in p.windows:
            a, z = max(t0, w.start), min(t1, max(w.end, w.start + 0.2))
            if z > a:
                shades.append(
                    [(X(x0, a), b0), (X(x0, z), b0), (X(x0, z), b0 + panel_h), (X(x0, a), b0 + panel_h)]
                )
        for tr in p.traces:
            xs, ys = trace_xy[tr.label]
            for t, val in _thin(tr.t, tr.y, PANEL_POINTS):
                xs.append(X(x0, t))
                ys.append(math.nan if val is None else b0 + frac(float(val)) * panel_h)
            xs.append(math.nan)
            ys.append(math.nan)
        ax.text(x0, b0 + panel_h + 0.03, p.title, fontsize=7, va="bottom", ha="left")
        if i % cols == 0:
            for v in yticks:
                ax.text(-0.05, b0 + frac(v) * panel_h, f"{v:,.0f}" if v >= 10 else f"{v:g}", fontsize=6.5,
                        ha="right", va="center")  # fmt: skip
        if i + cols >= n:
            for t in xticks:
                ax.text(X(x0, t), b0 - 0.04, f"{t:g}", fontsize=6.5, ha="center", va="top")
    if shades:
        ax.add_collection(PolyCollection(shades, facecolors="#d62728", alpha=0.12, linewidths=0))
    ax.plot(*grid, color="#ececec", lw=0.6)
    ax.plot(*frame, color="#555", lw=0.7)
    color = {lab: PALETTE[i % len(PALETTE)] for i, lab in enumerate(labels)}
    handles = [(ax.plot(*trace_xy[lab], color=color[lab], lw=1.0)[0], lab) for lab in labels]
    _heading(fig, title, handles if len(labels) > 1 else [], left=left_in / WIDTH_IN)
    fig.text(0.05 / WIDTH_IN, 1 - (top_in + grid_h / 2) / height, ylabel, rotation=90, ha="left",
             va="center", fontsize=8)  # fmt: skip
    fig.text(0.5, 0.05 / height, xlabel, ha="center", va="bottom", fontsize=8)
    return fig


def multiples_svg(
    panels: Sequence[Multiple], *, title: str, ylabel: str = "tps", xlabel: str = "s", cols: int = 6
) -> str:
    """Small multiples: one panel per point, its trials' per-second values overlaid, every panel on
    the same scales (the y axis from 0), fault windows shaded."""
    matplotlib = _matplotlib()
    with matplotlib.rc_context(STYLE):
        return _svg(_multiples(panels, title=title, ylabel=ylabel, xlabel=xlabel, cols=cols))


def multiples_latency_svgs(
    panels: Sequence[Multiple], *, title: str, ylabel: str = "ms", xlabel: str = "s", cols: int = 6
) -> tuple[str, str]:
    """As multiples_svg for a latency: linear from 0, and the same figure on a log scale."""
    matplotlib = _matplotlib()
    with matplotlib.rc_context(STYLE):
        linear = _svg(_multiples(panels, title=title, ylabel=ylabel, xlabel=xlabel, cols=cols))
        if not any(v is not None and v > 0 for p in panels for tr in p.traces for v in tr.y):
            return linear, linear
        log = _svg(_multiples(panels, title=f"{title} (log scale)", ylabel=ylabel, xlabel=xlabel, cols=cols,
                              log=True))  # fmt: skip
        return linear, log


