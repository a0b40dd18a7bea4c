"""Report sections of designed experiments: effects with CIs, ANOVA, Pareto chart, fitted surface,
aliases. Kept apart from report.py (one call from there), so the page's layout can change
without touching the analysis."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped, unused-ignore]

from clusterbench.analysis.doe import DoeAnalysis, analyze
from clusterbench.experiment.design import SURFACE, Coding, DesignSpec, expand_design
from clusterbench.experiment.results import experiment_info
from clusterbench.experiment.runner import trial_rows
from clusterbench.experiment.spec import factor_kinds
from clusterbench.store import Store

Plot = Callable[[go.Figure], str]


@dataclass
class PartAnalysis:
    part: str
    design: DesignSpec
    levels: dict[str, list[Any]]
    tps: DoeAnalysis | None
    p95: DoeAnalysis | None
    aliases: list[str]
    notes: list[str]
    points: list[dict[str, Any]]


def designed_parts(store: Store, run_id: int) -> list[PartAnalysis]:
    """Every part of the run that ran a designed experiment, analysed from its stored trials."""
    info = experiment_info(store, run_id)
    parts = info.get("parts") or {}
    rows = trial_rows(store, run_id)
    kinds = factor_kinds()
    out = []
    for part, meta in parts.items():
        raw = meta.get("design") or {"kind": "full-grid"}
        design = DesignSpec.model_validate(raw)
        if design.kind == "full-grid":
            continue
        stored = meta.get("factors") or {}
        # the planner's order (the spec's), which the alias letters follow
        levels = {k: list(stored[k]) for k in [*kinds, *stored] if k in stored}
        codings = {k: Coding(k, kinds.get(k, "categorical"), tuple(v)) for k, v in levels.items()}
        if "aliases" in meta:
            aliases, notes = list(meta["aliases"]), list(meta.get("design_notes") or [])
        else:
            try:
                res = expand_design(levels, design, kinds, f"parts.{part}")
                aliases, notes = res.aliases, res.notes
            except ValueError:
                aliases, notes = [], []
        pts, tps, p95_pts, p95 = [], [], [], []
        for r in rows:
            s = r.get("summary")
            if r.get("part") != part or s is None:
                continue
            point = dict(r["point"])
            pts.append(point)
            tps.append(float(s["tps"]))
            if s.get("p95") is not None:
                p95_pts.append(point)
                p95.append(float(s["p95"]))
        quad = design.kind in SURFACE
        a_tps = analyze(pts, tps, codings, response="tps", quadratic=quad) if pts else None
        a_p95 = analyze(p95_pts, p95, codings, response="p95 ms", quadratic=quad) if p95_pts else None
        out.append(PartAnalysis(part, design, levels, a_tps, a_p95, aliases, notes, pts))
    return out


def _num(v: float | None, fmt: str = "{:,.2f}") -> str:
    return "—" if v is None else fmt.format(v)


def _effects_table(a: DoeAnalysis) -> str:
    head = ["term", "effect (low → high)", f"{a.confidence:.0%} CI", "t", "p", ""]
    rows = []
    for e in sorted(a.effects, key=lambda e: -abs(e.effect)):
        mark = "<b>significant</b>" if e.significant else ""
        ci = "—" if e.low is None else f"{e.low:,.2f} – {e.high:,.2f}"
        rows.append([html.escape(e.term), f"{e.effect:+,.2f}", ci, _num(e.t), _num(e.p, "{:.3g}"), mark])
    return _table(head, rows)


def _anova_table(a: DoeAnalysis) -> str:
    if not a.anova:
        return ""
    rows = [
        [html.escape(r.term), f"{r.df:g}", f"{r.sum_sq:,.1f}", _num(r.f), _num(r.p, "{:.3g}")]
        for r in a.anova
    ]
    return "<h4>ANOVA (type II)</h4>" + _table(["term", "df", "sum of squares", "F", "p"], rows)


def _table(head: list[str], rows: list[list[str]]) -> str:
    return (
        "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        + "</tbody></table>"
    )  # fmt: skip


def pareto_figure(a: DoeAnalysis, title: str) -> go.Figure:
    """Standardized effects (|t|) sorted, with the significance line; |effect| without CIs."""
    use_t = a.t_crit is not None
    effs = sorted(a.effects, key=lambda e: (abs(e.t or 0.0) if use_t else abs(e.effect)))
    xs = [abs(e.t or 0.0) if use_t else abs(e.effect) for e in effs]
    fig = go.Figure(
        go.Bar(
            x=xs,
            y=[e.term for e in effs],
            orientation="h",
            marker_color=["#c33" if e.significant else "#89a" for e in effs],
            text=[f"{e.effect:+,.1f}" for e in effs],
            textposition="outside",
        )
    )
    if use_t:
        fig.add_vline(
            x=a.t_crit, line_dash="dash", annotation_text=f"t = {a.t_crit:.2f} ({a.confidence:.0%})"
        )
    fig.update_layout(
        title=title,
        xaxis_title="|t| (standardized effect)" if use_t else "|effect|",
        height=max(260, 28 * len(effs) + 120),
        margin={"l": 200, "r": 40, "t": 60, "b": 40},
    )
    return fig


def surface_figure(a: DoeAnalysis, points: list[dict[str, Any]], title: str) -> go.Figure | None:
    s = a.surface
    if s is None:
        return None
    fig = go.Figure(go.Contour(x=s.xs, y=s.ys, z=s.z, colorscale="Viridis", colorbar={"title": a.response},
                               contours={"showlabels": True}))  # fmt: skip
    cx, cy = a.codings[s.x], a.codings[s.y]
    seen = {(cx.code(p[s.x]), cy.code(p[s.y])) for p in points if s.x in p and s.y in p}
    fig.add_trace(go.Scatter(x=[p[0] for p in seen], y=[p[1] for p in seen], mode="markers", name="runs",
                             marker={"color": "white", "line": {"color": "black", "width": 1}}))  # fmt: skip
    fig.add_trace(go.Scatter(x=[s.best[0]], y=[s.best[1]], mode="markers", name="predicted best",
                             marker={"symbol": "x", "size": 12, "color": "red"}))  # fmt: skip
    fig.update_xaxes(title_text=s.x, tickvals=[t[0] for t in s.x_ticks], ticktext=[t[1] for t in s.x_ticks])
    fig.update_yaxes(title_text=s.y, tickvals=[t[0] for t in s.y_ticks], ticktext=[t[1] for t in s.y_ticks])
    fig.update_layout(title=title, height=480, margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return fig


def design_sections(store: Store, run_id: int, plot: Plot) -> str:
    """HTML for every designed part (empty when the run has none)."""
    out: list[str] = []
    for pa in designed_parts(store, run_id):
        out.append(f"<h2>Designed experiment: part {html.escape(pa.part)}</h2>")
        out.append(
            f"<p>{html.escape(pa.design.describe())} over "
            + ", ".join(f"{html.escape(k)} {html.escape(str(v))}" for k, v in pa.levels.items())
            + f"; {len(pa.points)} trial(s) with results. Effects are the change from the low to the "
            "high end of a factor's range, from an OLS fit over coded factors (every repetition one "
            "observation).</p>"
        )
        for n in pa.notes:
            out.append(f"<p>note: {html.escape(n)}</p>")
        if pa.aliases:
            out.append(
                "<h4>Alias structure</h4><p>Effects on one line cannot be told apart by this design "
                "(up to two-factor interactions):</p><ul>"
                + "".join(f"<li>{html.escape(x)}</li>" for x in pa.aliases) + "</ul>"
            )  # fmt: skip
        for a in (pa.tps, pa.p95):
            if a is None:
                continue
            out.append(
                f"<h3>{html.escape(a.response)}: effects</h3><p>n = {a.n}, residual df {a.df_resid:g}, "
                f"R² {_num(a.r2, '{:.3f}')}</p>"
            )
            for n in a.notes:
                out.append(f"<p>note: {html.escape(n)}</p>")
            if a.dropped:
                out.append(
                    "<p>not in the model (aliased with terms before them, or not estimable from the "
                    f"points run): {html.escape(', '.join(a.dropped))}</p>"
                )
            out.append(_effects_table(a))
            out.append(plot(pareto_figure(a, f"{pa.part}: Pareto chart of {a.response} effects")))
            out.append(_anova_table(a))
            fig = surface_figure(
                a,
                pa.points,
                f"{pa.part}: fitted {a.response} over the two strongest factors (others at the centre)",
            )
            if fig is not None:
                out.append(plot(fig))
    return "".join(out)


EFFECTS_CSV = ("part", "design", "response", "term", "effect", "ci_low", "ci_high", "t", "p", "significant")


def effects_csv(store: Store, run_id: int) -> str | None:
    """One row per effect of every designed part (None when the run has none)."""
    import csv
    import io

    parts = designed_parts(store, run_id)
    if not parts:
        return None
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(EFFECTS_CSV)
    for pa in parts:
        for a in (pa.tps, pa.p95):
            if a is None:
                continue
            for e in a.effects:
                w.writerow([pa.part, pa.design.kind, a.response, e.term, round(e.effect, 4),
                            _r(e.low), _r(e.high), _r(e.t), _r(e.p, 6), int(e.significant)])  # fmt: skip
    return out.getvalue()


def _r(v: float | None, nd: int = 4) -> Any:
    return "" if v is None else round(v, nd)
