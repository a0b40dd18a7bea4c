"""Report sections of designed experiments: effects with CIs, ANOVA, Pareto chart, fitted surface,
aliases, as sections of the experiment report's description (report.py renders them as Markdown
and HTML). Kept apart from report.py (one call from there)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.analysis import design_plots
from clusterbench.analysis.doe import DoeAnalysis, analyze
from clusterbench.analysis.sections import Figure, Section, Table
from clusterbench.experiment.design import SURFACE, Coding, DesignSpec, expand_design
from clusterbench.experiment.results import experiment_info
from clusterbench.experiment.runner import trial_rows
from clusterbench.experiment.spec import factor_kinds
from clusterbench.store import Store


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


def _effects_table(a: DoeAnalysis) -> Table:
    head = ["term", "effect (low → high)", f"{a.confidence:.0%} CI", "t", "p", "significant"]
    rows = []
    for e in sorted(a.effects, key=lambda e: -abs(e.effect)):
        ci = "—" if e.low is None or e.high is None else f"{e.low:,.2f} – {e.high:,.2f}"
        rows.append(
            [e.term, f"{e.effect:+,.2f}", ci, _num(e.t), _num(e.p, "{:.3g}"), "yes" if e.significant else ""]
        )
    return Table(head, rows, ["l", "r", "r", "r", "r", "l"], caption=f"{a.response}: effects")


def _anova_table(a: DoeAnalysis) -> Table | None:
    if not a.anova:
        return None
    rows = [[r.term, f"{r.df:g}", f"{r.sum_sq:,.1f}", _num(r.f), _num(r.p, "{:.3g}")] for r in a.anova]
    return Table(["term", "df", "sum of squares", "F", "p"], rows, ["l", "r", "r", "r", "r"],
                 caption=f"{a.response}: ANOVA (type II)")  # fmt: skip


def pareto_svg(a: DoeAnalysis) -> str:
    """Standardized effects (|t|) sorted, with the significance line; |effect| without CIs."""
    use_t = a.t_crit is not None
    return design_plots.pareto_svg(
        [e.term for e in a.effects],
        [abs(e.t or 0.0) if use_t else abs(e.effect) for e in a.effects],
        [e.significant for e in a.effects],
        [f"{e.effect:+,.1f}" for e in a.effects],
        critical=a.t_crit,
        critical_label=f"t = {a.t_crit:.2f} ({a.confidence:.0%})" if a.t_crit is not None else "",
        xlabel="|t| (standardized effect)" if use_t else "|effect| (no residual df: no t)",
        title=f"{a.response}: standardized effects, the effect (low → high) at each bar",
    )


def surface_svg(a: DoeAnalysis, points: list[dict[str, Any]]) -> str | None:
    s = a.surface
    if s is None:
        return None
    cx, cy = a.codings[s.x], a.codings[s.y]
    seen = sorted({(cx.code(p[s.x]), cy.code(p[s.y])) for p in points if s.x in p and s.y in p})
    return design_plots.contour_svg(
        s.xs, s.ys, s.z, x_ticks=s.x_ticks, y_ticks=s.y_ticks, xlabel=s.x, ylabel=s.y,
        zlabel=f"fitted {a.response}", runs=seen, best=(s.best[0], s.best[1]),
        best_label=f"predicted best: {s.best[2]:,.1f}",
    )  # fmt: skip


def design_sections(store: Store, run_id: int) -> list[Section]:
    """For every designed part: its design and aliases, then per response (tps, p95) the fit, the
    effects with a Pareto chart, the ANOVA table and the fitted surface (none when the run has no
    designed part)."""
    out: list[Section] = []
    for pa in designed_parts(store, run_id):
        sec = Section(f"design-{pa.part}", f"Designed experiment: part {pa.part}")
        sec.intro.append(
            f"{pa.design.describe()} over "
            + ", ".join(f"{k} {v}" for k, v in pa.levels.items())
            + f"; {len(pa.points)} trial(s) with results. Effects are the change from the low to the "
            "high end of a factor's range, from an OLS fit over coded factors (every repetition one "
            "observation)."
        )
        sec.paragraphs += [f"note: {n}" for n in pa.notes]
        if pa.aliases:
            sec.paragraphs.append(
                "Alias structure: effects on one line cannot be told apart by this design (up to two-factor "
                "interactions):"
            )
            sec.bullets += pa.aliases
        out.append(sec)
        for a in (pa.tps, pa.p95):
            if a is None:
                continue
            key = "tps" if a is pa.tps else "p95"
            sub = Section(f"design-{pa.part}-{key}", f"{pa.part}: {a.response} effects", level=3)
            sub.intro.append(f"n = {a.n}, residual df {a.df_resid:g}, R² {_num(a.r2, '{:.3f}')}.")
            sub.intro += [f"note: {n}" for n in a.notes]
            if a.dropped:
                sub.intro.append(
                    "not in the model (aliased with terms before them, or not estimable from the points "
                    "run): " + ", ".join(a.dropped)
                )
            sub.tables.append(_effects_table(a))
            if a.effects:
                sub.figures.append(Figure(f"{pa.part}: Pareto chart of {a.response} effects", pareto_svg(a)))
            anova = _anova_table(a)
            if anova is not None:
                sub.tables.append(anova)
            surface = surface_svg(a, pa.points)
            if surface is not None:
                rest = [n for n in a.codings if a.surface is not None and n not in (a.surface.x, a.surface.y)]
                centre = f" ({', '.join(rest)} at the centre)" if rest else ""
                what = f"{pa.part}: fitted {a.response} over the two strongest factors{centre}"
                sub.figures.append(Figure(what, surface))
            out.append(sub)
    return out


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
