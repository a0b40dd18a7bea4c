"""The experiment report's analysis plots: changes against a baseline, Pareto charts of effects,
fitted surfaces, a search's progress and parallel coordinates; split from plots.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clusterbench.analysis.plots import (
    PHASE_COLORS,
    STYLE,
    WIDTH_IN,
    _figure,
    _matplotlib,
    _svg,
)


def _label_margin(labels: Sequence[str], fontsize: float = 7.5) -> float:
    """The left margin (figure fraction) that fits the longest label at this font size."""
    chars = max((len(s) for s in labels), default=4)
    return min(0.55, 0.03 + chars * fontsize * 0.56 / (WIDTH_IN * 72))


def change_svg(labels: Sequence[str], changes: Sequence[float | None], *, title: str, unit: str = "%") -> str:
    """One horizontal bar per point: its change against the baseline, in the order given."""
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    n = len(labels)
    left = _label_margin(labels)
    with matplotlib.rc_context(STYLE):
        height = 0.75 + 0.14 * n
        fig = Figure(figsize=(WIDTH_IN, height), dpi=100)
        fig.subplots_adjust(left=left, right=0.93, top=1 - 0.4 / height, bottom=0.35 / height)
        ax = fig.add_subplot()
        ys = list(range(n))
        vals = [0.0 if v is None else v for v in changes]
        ax.barh(ys, vals, height=0.7, color=["#d62728" if v < 0 else "#1f77b4" for v in vals])
        ax.axvline(0, color="#444", lw=0.8)
        span = max((abs(v) for v in vals), default=0.0) or 1.0
        for y, v in zip(ys, changes, strict=True):
            text = "—" if v is None else f"{v:+.1f}{unit}"
            x = 0.0 if v is None else v
            ax.annotate(text, xy=(x, y), xytext=(3 if x >= 0 else -3, 0), textcoords="offset points",
                        ha="left" if x >= 0 else "right", va="center", fontsize=6.5)  # fmt: skip
        ax.set_xlim(-span * 1.25 if min(vals) < 0 else 0, span * 1.25 if max(vals) > 0 else span * 0.1)
        ax.set_yticks(ys, labels, fontsize=7.5)
        ax.set_ylim(n - 0.5, -0.5)
        ax.grid(axis="y", visible=False)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        ax.set_title(title, loc="left")
        return _svg(fig)


def pareto_svg(
    terms: Sequence[str],
    sizes: Sequence[float],
    significant: Sequence[bool],
    texts: Sequence[str],
    *,
    critical: float | None,
    critical_label: str,
    xlabel: str,
    title: str,
) -> str:
    """A Pareto chart: bars of each term's size, largest on top, significant ones red, each with
    its text (the effect) at its end, and the significance threshold dashed."""
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    order = sorted(range(len(terms)), key=lambda i: sizes[i], reverse=True)
    n = len(order)
    with matplotlib.rc_context(STYLE):
        height = 0.9 + 0.22 * n
        fig = Figure(figsize=(WIDTH_IN, height), dpi=100)
        fig.subplots_adjust(left=_label_margin([terms[i] for i in order], 8), right=0.9,
                            top=1 - 0.4 / height, bottom=0.45 / height)  # fmt: skip
        ax = fig.add_subplot()
        ys = list(range(n))
        ax.barh(ys, [sizes[i] for i in order], height=0.65,
                color=["#d62728" if significant[i] else "#8fa3b8" for i in order])  # fmt: skip
        for y, i in zip(ys, order, strict=True):
            ax.annotate(texts[i], xy=(sizes[i], y), xytext=(3, 0), textcoords="offset points", va="center",
                        fontsize=7)  # fmt: skip
        top = max([*sizes, critical or 0.0], default=1.0) or 1.0
        if critical is not None:
            ax.axvline(critical, color="#444", ls="--", lw=1)
            xlabel += f"; dashed: {critical_label}"
        ax.set_xlim(0, top * 1.18)
        ax.set_yticks(ys, [terms[i] for i in order], fontsize=8)
        ax.set_ylim(n - 0.5, -0.5)
        ax.grid(axis="y", visible=False)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        return _svg(fig)


def contour_svg(
    xs: Sequence[float],
    ys: Sequence[float],
    z: Sequence[Sequence[float]],
    *,
    x_ticks: Sequence[tuple[float, str]],
    y_ticks: Sequence[tuple[float, str]],
    xlabel: str,
    ylabel: str,
    zlabel: str,
    runs: Sequence[tuple[float, float]] = (),
    best: tuple[float, float] | None = None,
    best_label: str = "predicted best",
) -> str:
    """A fitted surface as filled contours with labelled lines, the points run (white) and the
    predicted best (a red cross); axes in coded units, ticked at the factor's levels."""
    matplotlib = _matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 4.2), dpi=100)
        fig.subplots_adjust(left=0.1, right=0.92, top=0.9, bottom=0.13)
        ax = fig.add_subplot()
        filled = ax.contourf(xs, ys, z, levels=10, cmap="viridis")
        lines = ax.contour(xs, ys, z, levels=filled.levels, colors="white", linewidths=0.5)
        ax.clabel(lines, fontsize=7, fmt=lambda v: f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}")
        bar = fig.colorbar(filled, ax=ax, fraction=0.05, pad=0.02)
        bar.set_label(zlabel)
        bar.locator = MaxNLocator(nbins=5)
        bar.update_ticks()
        if runs:
            ax.scatter([r[0] for r in runs], [r[1] for r in runs], s=22, color="white", edgecolors="black",
                       linewidths=0.8, label="points run", zorder=3)  # fmt: skip
        if best is not None:
            ax.scatter([best[0]], [best[1]], s=60, marker="x", color="#d62728", linewidths=2,
                       label=best_label, zorder=4)  # fmt: skip
        ax.set_xticks([t[0] for t in x_ticks], [t[1] for t in x_ticks])
        ax.set_yticks([t[0] for t in y_ticks], [t[1] for t in y_ticks])
        ax.grid(visible=False)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if runs or best is not None:
            ax.legend(loc="upper left", bbox_to_anchor=(0, 1.1), ncols=2, fontsize=8)
        return _svg(fig)


def progress_svg(
    trials: Sequence[tuple[int, float, str]],
    best: Sequence[tuple[int, float]],
    *,
    metric: str,
    from_zero: bool = True,
    title: str = "",
) -> str:
    """A search's progress: each trial's value (coloured by why it ran) against the trial number,
    and the best so far as a step line."""
    matplotlib = _matplotlib()
    from matplotlib.ticker import MaxNLocator
    with matplotlib.rc_context(STYLE):
        fig = _figure(3.0)
        ax = fig.add_subplot()
        phases = list(dict.fromkeys(p for _, _, p in trials))
        for ph in phases:
            pts = [(x, y) for x, y, p in trials if p == ph]
            ax.scatter([x for x, _ in pts], [y for _, y in pts], s=16, color=PHASE_COLORS.get(ph, "#7f7f7f"),
                       label=ph, zorder=3)  # fmt: skip
        last = max((x for x, _, _ in trials), default=0)
        if best:
            xs = [x for x, _ in best] + [last]
            ys = [y for _, y in best] + [best[-1][1]]
            ax.step(xs, ys, where="post", color="#333", lw=1.3, label="best so far (median of its trials)")
        values = [y for _, y, _ in trials] + [y for _, y in best]
        if from_zero:
            ax.set_ylim(0, max(values, default=0.0) * 1.1 or 1)
        ax.set_xlim(0, last + 1)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=5))
        ax.set_xlabel("trial")
        ax.set_ylabel(metric)
        ax.legend(loc="lower right", ncols=4)
        ax.set_title(title, loc="left")
        return _svg(fig)


@dataclass(frozen=True)
class Dimension:
    """One axis of a parallel-coordinates plot: every line's position on it (0 .. 1) and the ticks."""

    name: str
    positions: Sequence[float]
    ticks: Sequence[tuple[float, str]]


def _wrap(name: str, width: int = 14) -> str:
    lines: list[str] = []
    for word in name.split("_"):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += "_" + word
        else:
            lines.append(word if not lines else "_" + word)
    return "\n".join(lines)


def parallel_svg(
    dims: Sequence[Dimension], color: Sequence[float], *, color_label: str, title: str = ""
) -> str:
    """Parallel coordinates: one line per configuration across the dimensions, coloured by
    `color` (the best on top)."""
    matplotlib = _matplotlib()
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    n = len(color)
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 3.6), dpi=100)
        fig.subplots_adjust(left=0.06, right=0.9, top=0.86, bottom=0.2)
        ax = fig.add_subplot()
        cmap = colormaps["viridis"]
        norm = Normalize(min(color, default=0.0), max(color, default=1.0))
        xs = list(range(len(dims)))
        for i in sorted(range(n), key=lambda i: color[i]):
            ax.plot(xs, [d.positions[i] for d in dims], color=cmap(norm(color[i])), lw=1.1, alpha=0.85)
        for x, d in zip(xs, dims, strict=True):
            ax.axvline(x, color="#555", lw=0.8)
            for pos, text in d.ticks:
                ax.annotate(text, xy=(x, pos), xytext=(-3, 0), textcoords="offset points", ha="right",
                            va="center", fontsize=6.5, color="#333")  # fmt: skip
        ax.set_xticks(xs, [_wrap(d.name) for d in dims], fontsize=7.5)
        ax.set_xlim(-0.3, len(dims) - 0.7)
        ax.set_ylim(-0.05, 1.05)
        ax.set_yticks([])
        ax.grid(visible=False)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        bar = fig.colorbar(ScalarMappable(norm, cmap), ax=ax, fraction=0.04, pad=0.02)
        bar.set_label(color_label)
        bar.locator = MaxNLocator(nbins=5)
        bar.update_ticks()
        if title:
            ax.set_title(title, loc="left")
        return _svg(fig)
