"""Report sections of a [search] run: best so far against trial number, the explored points, and the
winner against the nearest configurations of the knobs' grid, as sections of the experiment
report's description (report.py renders them as Markdown and HTML). Kept apart from report.py (one
call from there)."""

from __future__ import annotations

import json
from typing import Any

from clusterbench.analysis import design_plots
from clusterbench.analysis.sections import Figure, Section, Table
from clusterbench.analysis.stats import median_ci, welch_p
from clusterbench.experiment.results import experiment_info
from clusterbench.experiment.search_run import stored_steps
from clusterbench.store import Store


def _label(config: dict[str, Any], names: list[str]) -> str:
    return " ".join(f"{n}={_fmt(config.get(n))}" for n in names)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def search_data(store: Store, run_id: int) -> dict[str, Any] | None:
    info = experiment_info(store, run_id)
    search = info.get("search")
    if not search:
        return None
    names = list(search.get("knob_order") or search.get("knobs") or {})
    objective = str(search.get("objective", "max tps")).split()
    direction, metric = objective[0], objective[-1]
    steps = stored_steps(store, run_id)
    per: dict[str, dict[str, Any]] = {}
    for i, st in enumerate(steps, start=1):
        lab = _label(st.config, names)
        p = per.setdefault(lab, {"config": st.config, "values": [], "first": i, "phases": []})
        p["phases"].append(st.phase)
        if st.values is not None and metric in st.values:
            p["values"].append(st.values)
    result = next((e["detail"] for e in reversed(store.events(run_id)) if e["kind"] == "search_result"), None)
    incumbents = [e["detail"] for e in store.events(run_id) if e["kind"] == "search_step"]
    return {
        "names": names,
        "metric": metric,
        "direction": direction,
        "search": search,
        "steps": steps,
        "points": per,
        "result": result,
        "incumbents": incumbents,
    }


def progress_svg(d: dict[str, Any]) -> str:
    metric = d["metric"]
    trials = [(i, float(st.values[metric]), st.phase) for i, st in enumerate(d["steps"], start=1)
              if st.values is not None and metric in st.values]  # fmt: skip
    best = [(int(e["number"]), float(e["incumbent_score"])) for e in d["incumbents"]
            if e.get("incumbent_score") is not None]  # fmt: skip
    # the step line changes only where the best so far does
    steps = [b for i, b in enumerate(best) if i == 0 or b[1] != best[i - 1][1]]
    title = f"{metric} per trial, coloured by why it ran, and the best so far"
    return design_plots.progress_svg(trials, steps, metric=metric, from_zero=True, title=title)


def _position(v: Any, levels: list[Any]) -> float:
    if v in levels:
        i = float(levels.index(v))
    elif isinstance(v, int | float) and not isinstance(v, bool) and levels:
        i = float(min(range(len(levels)), key=lambda j: abs(float(levels[j]) - float(v))))
    else:
        i = 0.0
    return i / max(1, len(levels) - 1)


def explored_svg(d: dict[str, Any]) -> str | None:
    """Parallel coordinates of the explored configurations: each knob at its position on the
    grid a full sweep would use (or among the values seen), then the metric's median."""
    names, metric = d["names"], d["metric"]
    pts = [p for p in d["points"].values() if p["values"]]
    if len(pts) < 2:
        return None
    grid = (d["search"].get("knob_grid") or {}) if d["search"] else {}
    dims = []
    for n in names:
        vals = [p["config"].get(n) for p in pts]
        levels = list(grid.get(n) or [])
        if not levels or any(
            v not in levels for v in vals if not isinstance(v, int | float) or isinstance(v, bool)
        ):
            levels = sorted({json.dumps(v) for v in vals})
            levels = [json.loads(x) for x in levels]
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in levels):
                levels.sort()
        ticks = [(_position(v, levels), _fmt(v)) for v in levels]
        if len(ticks) > 7:  # the ends and every other level between
            ticks = [t for i, t in enumerate(ticks) if i % 2 == 0 or i == len(ticks) - 1]
        dims.append(design_plots.Dimension(n, [_position(v, levels) for v in vals], ticks))
    med = [median_ci([v[metric] for v in p["values"]]).median for p in pts]
    lo, hi = min(med), max(med)
    span = (hi - lo) or 1.0
    ticks = [(0.0, f"{lo:,.0f}"), (1.0, f"{hi:,.0f}")] if hi != lo else [(0.0, f"{lo:,.0f}")]
    dims.append(design_plots.Dimension(f"{metric} median", [(m - lo) / span for m in med], ticks))
    title = "explored configurations, one line each, coloured by the median"
    return design_plots.parallel_svg(dims, med, color_label=f"{metric} (median)", title=title)


def _points_table(d: dict[str, Any]) -> Table:
    metric = d["metric"]
    rows = []
    pts = [p for p in d["points"].values() if p["values"]]
    pts.sort(
        key=lambda p: median_ci([v[metric] for v in p["values"]]).median, reverse=d["direction"] == "max"
    )
    for p in pts:
        ci = median_ci([v[metric] for v in p["values"]])
        p95 = [v["p95"] for v in p["values"] if "p95" in v]
        rows.append([*_cells(p["config"], d["names"]), str(len(p["values"])), f"{ci.median:,.1f}",
                     f"{ci.low:,.1f} – {ci.high:,.1f} ({ci.coverage:.0%})" if len(p["values"]) > 1 else "—",
                     f"{median_ci(p95).median:.1f}" if p95 else "—", f"#{p['first']}",
                     ", ".join(sorted(set(p["phases"])))])  # fmt: skip
    head = [*d["names"], "n", f"{metric} median", "CI (coverage)", "p95 ms median", "first", "why"]
    return Table(head, rows, [*_aligns(d), "r", "r", "r", "r", "r", "l"])


def _cells(config: dict[str, Any], names: list[str]) -> list[str]:
    """A configuration as one cell per knob (a table column each)."""
    return [_fmt(config.get(n)) for n in names]


def _aligns(d: dict[str, Any]) -> list[str]:
    """Knobs whose values are numbers right-aligned, the others left."""
    configs = [p["config"] for p in d["points"].values()]
    return [
        "r"
        if all(isinstance(c.get(n), int | float) and not isinstance(c.get(n), bool) for c in configs)
        else "l"
        for n in d["names"]
    ]


def nearest_grid(config: dict[str, Any], grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The grid configuration nearest to `config` (each knob snapped to its nearest grid level),
    then its neighbours one grid step away in one knob."""

    def snap(n: str, v: Any) -> int:
        levels = grid.get(n) or [v]
        if v in levels:
            return levels.index(v)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return min(range(len(levels)), key=lambda i: abs(float(levels[i]) - float(v)))
        return 0

    names = [n for n in config if n in grid] + [n for n in grid if n not in config]
    base = {n: snap(n, config.get(n)) for n in names}
    out = [{n: grid[n][base[n]] for n in names}]
    for n in names:
        for step in (-1, 1):
            i = base[n] + step
            if 0 <= i < len(grid[n]):
                c = {m: grid[m][base[m]] for m in names}
                c[n] = grid[n][i]
                out.append(c)
    return out


def nearest_measured(
    d: dict[str, Any], config: dict[str, Any], grid: dict[str, list[Any]], k: int
) -> list[dict[str, Any]]:
    """The k measured configurations closest to `config` (not itself): per knob the distance in
    grid positions over the knob's number of steps, added up."""

    def pos(n: str, v: Any) -> float:
        levels = grid.get(n) or [v]
        if v in levels:
            i = float(levels.index(v))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            i = float(min(range(len(levels)), key=lambda j: abs(float(levels[j]) - float(v))))
        else:
            i = 0.0
        return i / max(1, len(levels) - 1)

    def dist(c: dict[str, Any]) -> float:
        return sum(abs(pos(n, c.get(n)) - pos(n, config.get(n))) for n in grid)

    others = [p for p in d["points"].values() if p["values"] and p["config"] != config]
    return sorted(others, key=lambda p: dist(p["config"]))[:k]


def winner_section(d: dict[str, Any]) -> Section:
    res = d["result"]
    metric, names = d["metric"], d["names"]
    sec = Section("search-winner", "Winner", level=3)
    if res is None:
        sec.intro.append("The search has not finished (no result yet): run the same command again to resume.")
        return sec
    w = res.get("winner")
    if w is None:
        sec.intro.append(f"No configuration met the constraints in {res['trials']} trial(s).")
        return sec
    state = "confirmed" if w["confirmed"] else "NOT confirmed (the budget ran out)"
    vs = ""
    if w.get("runner_up"):
        p = w.get("p_vs_runner_up")
        vs = f" Runner-up: {w['runner_up']}" + (f" (Welch p = {p:.3g})." if p is not None else ".")
    sec.intro.append(
        f"{w['label']}: {metric} median {w['median']:,.1f}, CI {w['low']:,.1f} – {w['high']:,.1f} (coverage "
        f"{w['coverage']:.0%}), n = {w['n']}; first measured at trial {w['found_at']} of {res['trials']}; "
        f"{state}; exploring stopped by {res['stopped_by']}.{vs}"
    )
    grid = (d["search"].get("knob_grid") or {}) if d["search"] else {}
    if not grid:
        return sec
    # the stored label may list the knobs in another order than this report: match by configuration
    win_key = _label(w["config"], names)
    win_vals = [v[metric] for v in d["points"].get(win_key, {}).get("values", [])]
    rows = []
    listed: set[str] = set()
    near = [(c, "nearest grid point" if i == 0 else "its grid neighbour")
            for i, c in enumerate(nearest_grid(w["config"], grid))]  # fmt: skip
    measured = [(p["config"], "measured nearby") for p in nearest_measured(d, w["config"], grid, 5)]
    for c, kind in near + measured:
        lab = _label(c, names)
        if lab in listed:
            continue
        listed.add(lab)
        p = d["points"].get(lab)
        vals = [v[metric] for v in p["values"]] if p else []
        if lab == win_key:
            kind += " (the winner)"
        if vals:
            ci = median_ci(vals)
            diff = 100.0 * (ci.median - w["median"]) / w["median"] if w["median"] else 0.0
            pv = welch_p(vals, win_vals) if lab != win_key else None
            p_text = "—" if pv is None else f"{pv:.3g}"
            interval = f"{ci.low:,.1f} – {ci.high:,.1f}" if len(vals) > 1 else "—"
            rows.append([*_cells(c, names), kind, str(len(vals)), f"{ci.median:,.1f}", interval,
                         f"{diff:+.1f}%", p_text])  # fmt: skip
        else:
            rows.append([*_cells(c, names), kind, "0", "not measured", "—", "—", "—"])
    sec.paragraphs.append(
        "The winner and the nearest grid configurations: the grid a full sweep of these knobs would use is "
        + "; ".join(f"{k} {', '.join(map(_fmt, v))}" for k, v in grid.items())
        + ". Below them, the 5 configurations the search measured nearest to the winner (grid steps, each "
        "knob's range counting 1). Measured points are compared with the winner (Welch's t over the trials)."
    )
    sec.tables.append(
        Table([*names, "which", "n", f"{metric} median", "CI", "vs winner", "p"], rows,
              [*_aligns(d), "l", "r", "r", "r", "r", "r"],
              caption="The winner and the nearest grid configurations")
    )  # fmt: skip
    return sec


def search_sections(store: Store, run_id: int) -> list[Section]:
    d = search_data(store, run_id)
    if d is None:
        return []
    s = d["search"]
    cons = s.get("constraints") or []
    sec = Section("search", "Search")
    sec.intro.append(
        f"objective {s.get('objective')}"
        + (f" subject to {', '.join(cons)}" if cons else "")
        + f"; budget {s.get('budget')} trial(s); {len(d['steps'])} run; Optuna TPE (seed {s.get('seed')}). "
        "A configuration's value is the median of its trials; a new best is measured again before the "
        f"search explores on, and the winner and its close contenders are measured {s.get('confirm')} times."
    )
    sec.figures.append(Figure("best so far against trial number", progress_svg(d)))
    explored = Section("search-explored", "Explored configurations", level=3)
    fig = explored_svg(d)
    if fig is not None:
        explored.figures.append(Figure("explored configurations (parallel coordinates)", fig))
    explored.tables.append(_points_table(d))
    return [sec, winner_section(d), explored]
