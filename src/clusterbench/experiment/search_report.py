"""Report sections of a [search] run: best so far against trial number, the explored points, and the
winner against the nearest configurations of the knobs' grid. Kept apart from report.py (one call
from there)."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped, unused-ignore]

from clusterbench.analysis.stats import median_ci, welch_p
from clusterbench.experiment.results import experiment_info
from clusterbench.experiment.search_run import stored_steps
from clusterbench.store import Store

Plot = Callable[[go.Figure], str]
COLOURS = {"explore": "#4a7", "recheck": "#e90", "confirm": "#c33"}


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


def _progress_figure(d: dict[str, Any]) -> go.Figure:
    metric = d["metric"]
    fig = go.Figure()
    xs, ys, cols, text = [], [], [], []
    for i, st in enumerate(d["steps"], start=1):
        if st.values is None or metric not in st.values:
            continue
        xs.append(i)
        ys.append(st.values[metric])
        cols.append(COLOURS.get(st.phase, "#888"))
        text.append(f"{st.phase}: {_label(st.config, d['names'])}")
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name="each trial", text=text,
                             marker={"color": cols, "size": 8}))  # fmt: skip
    inc = [
        (e["number"], e["incumbent_score"]) for e in d["incumbents"] if e.get("incumbent_score") is not None
    ]
    if inc:
        fig.add_trace(go.Scatter(x=[x for x, _ in inc], y=[y for _, y in inc], mode="lines", line_shape="hv",
                                 name="best so far (median of its trials)"))  # fmt: skip
    fig.update_layout(
        title=f"{metric} per trial (green explore, orange recheck, red confirm) and the best so far",
        xaxis_title="trial", yaxis_title=metric, height=420, margin={"l": 60, "r": 20, "t": 60, "b": 40},
    )  # fmt: skip
    return fig


def _explored_figure(d: dict[str, Any]) -> go.Figure | None:
    names, metric = d["names"], d["metric"]
    pts = [p for p in d["points"].values() if p["values"]]
    if len(pts) < 2:
        return None
    dims = []
    for n in names:
        vals = [p["config"].get(n) for p in pts]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
            dims.append({"label": n, "values": vals})
        else:
            cats = sorted({json.dumps(v) for v in vals})
            dims.append(
                {
                    "label": n,
                    "values": [cats.index(json.dumps(v)) for v in vals],
                    "tickvals": list(range(len(cats))),
                    "ticktext": [json.loads(c) for c in cats],
                }
            )
    med = [median_ci([v[metric] for v in p["values"]]).median for p in pts]
    dims.append({"label": f"{metric} (median)", "values": med})
    fig = go.Figure(
        go.Parcoords(line={"color": med, "colorscale": "Viridis", "showscale": True}, dimensions=dims)
    )
    fig.update_layout(title="explored configurations (one line each, coloured by the median)", height=420,
                      margin={"l": 80, "r": 60, "t": 80, "b": 40})  # fmt: skip
    return fig


def _points_table(d: dict[str, Any]) -> str:
    metric = d["metric"]
    rows = []
    pts = [p for p in d["points"].values() if p["values"]]
    pts.sort(
        key=lambda p: median_ci([v[metric] for v in p["values"]]).median, reverse=d["direction"] == "max"
    )
    for p in pts:
        ci = median_ci([v[metric] for v in p["values"]])
        p95 = [v["p95"] for v in p["values"] if "p95" in v]
        rows.append([html.escape(_label(p["config"], d["names"])), str(len(p["values"])), f"{ci.median:,.1f}",
                     f"{ci.low:,.1f} – {ci.high:,.1f} ({ci.coverage:.0%})",
                     f"{median_ci(p95).median:.1f}" if p95 else "—", f"#{p['first']}",
                     ", ".join(sorted(set(p["phases"])))])  # fmt: skip
    head = ["configuration", "n", f"{metric} median", "CI (coverage)", "p95 ms median", "first", "why"]
    return _table(head, rows)


def _table(head: list[str], rows: list[list[str]]) -> str:
    return (
        "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        + "</tbody></table>"
    )  # fmt: skip


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


def _winner_block(d: dict[str, Any]) -> str:
    res = d["result"]
    metric, names = d["metric"], d["names"]
    if res is None:
        return "<p>The search has not finished (no result yet): run the same command again to resume.</p>"
    w = res.get("winner")
    if w is None:
        return f"<p><b>No configuration met the constraints</b> in {res['trials']} trial(s).</p>"
    state = "confirmed" if w["confirmed"] else "<b style='color:#a60'>not confirmed</b> (the budget ran out)"
    vs = ""
    if w.get("runner_up"):
        p = w.get("p_vs_runner_up")
        vs = f" Runner-up: {html.escape(w['runner_up'])}" + (
            f" (Welch p = {p:.3g})." if p is not None else "."
        )
    out = [
        f"<h3>Winner</h3><p><b>{html.escape(w['label'])}</b>: {metric} median {w['median']:,.1f}, CI "
        f"{w['low']:,.1f} – {w['high']:,.1f} (coverage {w['coverage']:.0%}), n = {w['n']}; first measured "
        f"at trial {w['found_at']} of {res['trials']}; {state}; exploring stopped by {res['stopped_by']}."
        f"{vs}</p>"
    ]
    grid = (d["search"].get("knob_grid") or {}) if d["search"] else {}
    if not grid:
        return "".join(out)
    win_vals = [v[metric] for v in d["points"].get(w["label"], {}).get("values", [])]
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
        if lab == w["label"]:
            kind += " (the winner)"
        if vals:
            ci = median_ci(vals)
            diff = 100.0 * (ci.median - w["median"]) / w["median"] if w["median"] else 0.0
            pv = welch_p(vals, win_vals) if lab != w["label"] else None
            rows.append(
                [
                    html.escape(lab), kind, str(len(vals)), f"{ci.median:,.1f}",
                    f"{ci.low:,.1f} – {ci.high:,.1f}", f"{diff:+.1f} %", "—" if pv is None else f"{pv:.3g}",
                ]
            )  # fmt: skip
        else:
            rows.append([html.escape(lab), kind, "0", "not measured", "", "", ""])
    out.append(
        "<h4>The winner and the nearest grid configurations</h4><p>The grid a full sweep of these knobs "
        "would use: " + html.escape("; ".join(f"{k} {', '.join(map(_fmt, v))}" for k, v in grid.items()))
        + ". Below them, the 5 configurations the search measured nearest to the winner (grid steps, "
        "each knob's range counting 1). Measured points are compared with the winner (Welch's t over "
        "the trials).</p>"
        + _table(["configuration", "", "n", f"{metric} median", "CI", "vs winner", "p"], rows)
    )  # fmt: skip
    return "".join(out)


def search_sections(store: Store, run_id: int, plot: Plot) -> str:
    d = search_data(store, run_id)
    if d is None:
        return ""
    s = d["search"]
    cons = s.get("constraints") or []
    head = (
        f"<h2>Search</h2><p>objective {html.escape(str(s.get('objective')))}"
        + (f" subject to {html.escape(', '.join(cons))}" if cons else "")
        + f"; budget {s.get('budget')} trial(s); {len(d['steps'])} run; Optuna TPE (seed {s.get('seed')}). "
        "A configuration's value is the median of its trials; a new best is measured again before the "
        "search explores on, and the winner and its close contenders are measured "
        f"{s.get('confirm')} times.</p>"
    )
    return (
        head
        + _winner_block(d)
        + plot(_progress_figure(d))
        + (plot(fig) if (fig := _explored_figure(d)) is not None else "")
        + "<h3>Explored configurations</h3>"
        + _points_table(d)
    )
