"""The experiment report: one self-contained HTML page (plotly.js embedded) and CSV files.

* tps and p95 against each factor, one line per level of the other factors, CI as error bars;
* relative change of median tps against a baseline point (experiment.baseline, else the first
  level of the part's first factor);
* the per-second series (tps, p95) of any trial, picked from a list;
* a table per point: n, median tps with its CI and real coverage, CV (flagged when high), p95 from
  the pooled histograms of the repetitions, errors.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped, unused-ignore]
import plotly.io as pio  # type: ignore[import-untyped, unused-ignore]
from plotly.subplots import make_subplots  # type: ignore[import-untyped, unused-ignore]

from clusterbench.analysis.report import trial_series
from clusterbench.experiment.planner import label
from clusterbench.experiment.results import (
    POINT_CSV,
    PointStats,
    experiment_info,
    point_csv_rows,
    point_stats,
)
from clusterbench.experiment.runner import trial_rows
from clusterbench.store import Store


def varying(points: Sequence[PointStats]) -> list[str]:
    names: list[str] = []
    for p in points:
        for k in p.point:
            if k not in names:
                names.append(k)
    return [k for k in names if len({json.dumps(p.point.get(k)) for p in points}) > 1]


def factor_figure(points: Sequence[PointStats], factor: str, title: str) -> go.Figure:
    others = [k for k in varying(points) if k != factor]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("tps (median, 95 % CI)", "p95 latency ms (pooled)"))
    lines: dict[str, list[PointStats]] = {}
    for p in points:
        key = label((k, p.point[k]) for k in others if k in p.point) if others else "all"
        lines.setdefault(key, []).append(p)
    for name, pts in lines.items():
        xs = [str(p.point.get(factor)) for p in pts]
        t = [p.tps_ci for p in pts]
        fig.add_trace(
            go.Scatter(
                x=xs, y=[c.median if c else None for c in t], name=name, legendgroup=name,
                mode="lines+markers",
                error_y={"type": "data", "symmetric": False,
                         "array": [c.high - c.median if c else 0 for c in t],
                         "arrayminus": [c.median - c.low if c else 0 for c in t]},
            ), row=1, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(x=xs, y=[p.p95_pooled for p in pts], name=name, legendgroup=name, showlegend=False,
                       mode="lines+markers"), row=1, col=2,
        )  # fmt: skip
    fig.update_xaxes(title_text=factor, type="category")
    fig.update_layout(title=title, height=420, margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return fig


def baseline_changes(
    points: Sequence[PointStats], baseline: dict[str, Any]
) -> list[tuple[str, float | None]]:
    """(point label, % change of median tps against its baseline point)."""
    vary = varying(points)
    base = {k: v for k, v in baseline.items() if k in vary}
    if not base and vary:
        base = {vary[0]: points[0].point[vary[0]]}
    by_point = {json.dumps(p.point, sort_keys=True): p for p in points}
    out: list[tuple[str, float | None]] = []
    for p in points:
        ref = by_point.get(json.dumps({**p.point, **base}, sort_keys=True))
        if ref is None or ref.tps_ci is None or p.tps_ci is None or ref.tps_ci.median == 0:
            out.append((p.label, None))
        else:
            out.append((p.label, 100.0 * (p.tps_ci.median - ref.tps_ci.median) / ref.tps_ci.median))
    return out


def _points_table(points: Sequence[PointStats]) -> str:
    head = [
        "point",
        "n",
        "tps median",
        "95 % CI",
        "coverage",
        "CV",
        "p95 ms (pooled)",
        "p95 CI",
        "err/s",
        "rate",
    ]
    rows = []
    for p in points:
        t, q = p.tps_ci, p.p95_ci
        cv = "—" if p.cv is None else f"{p.cv:.1%}"
        if p.cv_high:
            cv = f"<b style='color:#c22'>{cv} high</b>"
        err = sorted(p.errors_per_s)[len(p.errors_per_s) // 2] if p.errors_per_s else 0.0
        rows.append([
            html.escape(p.label), str(p.n), f"{t.median:,.1f}" if t else "—",
            f"{t.low:,.1f} – {t.high:,.1f}" if t else "—", f"{t.coverage:.0%}" if t else "—", cv,
            f"{p.p95_pooled:.2f}" if p.p95_pooled is not None else "—",
            f"{q.low:.2f} – {q.high:.2f}" if q else "—", f"{err:.2f}", str(p.rate or "max"),
        ])  # fmt: skip
    return (
        "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        + "</tbody></table>"
    )  # fmt: skip


def fault_effects(store: Store, run_id: int) -> list[dict[str, Any]]:
    """One row per fault of every trial that had a fault schedule (`fault_effect` events)."""
    trials = {r["trial_id"]: r for r in trial_rows(store, run_id)}
    out = []
    for e in store.events(run_id):
        if e["kind"] != "fault_effect" or e["trial_id"] not in trials:
            continue
        r = trials[e["trial_id"]]
        out.append({"trial_id": e["trial_id"], "index": r["index"], "part": r["part"],
                    "point": r["point_label"], "rep": r["rep"], **e["detail"]})  # fmt: skip
    return out


def _faults_block(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return ""
    head = ["trial", "point", "rep", "fault", "from s", "to s", "tps before", "tps back to 95 % after s",
            "errors until recovered"]  # fmt: skip

    def cell(v: Any) -> str:
        return "-" if v is None else html.escape(str(v))

    body = "".join(
        "<tr>" + "".join(f"<td>{cell(c)}</td>" for c in (
            f"#{r['index']}", f"{r['part']}: {r['point']}", r["rep"], r["fault"], r["start"], r["end"],
            r.get("tps_before"),
            r.get("tps_recovered_after_s") if r.get("tps_recovered_after_s") is not None
            else ("not recovered" if r.get("tps_before") is not None else None),
            r.get("errors_until_recovered", r.get("errors_in_window")))) + "</tr>"
        for r in rows
    )  # fmt: skip
    return (
        "<h2>Faults inside trials</h2><p>Each trial ran the part's fault schedule under load; times are "
        "seconds from the start of the load (warm-up included). 'tps back' is measured against the "
        "median tps of the measured seconds before the fault; errors are counted from the fault's start "
        "until tps is back (or to the end of the trial).</p><table><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>" + body + "</tbody></table>"
    )


def client_findings(store: Store, run_id: int) -> list[dict[str, Any]]:
    """One row per load client that hit a bottleneck of its own (`client_saturated` events)."""
    trials = {r["trial_id"]: r for r in trial_rows(store, run_id)}
    out = []
    for e in store.events(run_id):
        if e["kind"] != "client_saturated" or e["trial_id"] not in trials:
            continue
        r = trials[e["trial_id"]]
        d = e["detail"]
        out.append({"index": r["index"], "part": r["part"], "point": r["point_label"], "rep": r["rep"],
                    "client": d.get("client"), "host": d.get("host"),
                    "warnings": d.get("warnings") or d.get("flags") or []})  # fmt: skip
    return out


def _clients_block(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return ""
    body = "".join(
        f"<tr><td>#{r['index']}</td><td>{html.escape(r['part'])}: {html.escape(r['point'])}</td>"
        f"<td>{r['rep']}</td><td>{r['client']}</td><td>{html.escape(str(r['host']))}</td>"
        f"<td style='text-align:left'>{html.escape('; '.join(map(str, r['warnings'])))}</td></tr>"
        for r in rows
    )
    points = len({(r["part"], r["point"]) for r in rows})
    return (
        "<h2>Client saturation</h2><p style='color:#a00'><b>Warning:</b> in the trials below a load "
        "client was the bottleneck (its CPU, or the asked rate was not reached), so their numbers are "
        f"the client's limit, not the cluster's ({points} point(s)). Use more client hosts "
        "(<code>[clients] hosts</code>) or fewer threads per client.</p><table><thead><tr><th>trial</th>"
        "<th>point</th><th>rep</th><th>client</th><th>host</th><th>finding</th></tr></thead><tbody>"
        + body + "</tbody></table>"
    )


def _series_block(store: Store, run_id: int) -> str:
    data: dict[str, Any] = {}
    options = []
    windows: dict[int, list[tuple[float, float, str]]] = {}
    for f in fault_effects(store, run_id):
        windows.setdefault(f["trial_id"], []).append((f["start"], f["end"], f["fault"]))
    for r in trial_rows(store, run_id):
        pts = trial_series(store, r["trial_id"])
        name = f"#{r['index']} {r['part']}: {r['point_label']} rep {r['rep']}"
        data[str(r["trial_id"])] = {
            "name": name,
            "t": [p.t for p in pts],
            "tps": [p.tps for p in pts],
            "p95": [p.p95 for p in pts],
            "faults": windows.get(r["trial_id"], []),
        }
        options.append(f"<option value='{r['trial_id']}'>{html.escape(name)}</option>")
    if not data:
        return "<p>no completed trials</p>"
    return (
        "<select id='trial' onchange='showTrial(this.value)'>" + "".join(options) + "</select>"
        "<div id='series' style='height:480px'></div><script>"
        f"const SERIES={json.dumps(data)};"
        "function showTrial(id){const s=SERIES[id];Plotly.react('series',["
        "{x:s.t,y:s.tps,name:'tps',mode:'lines+markers',yaxis:'y'},"
        "{x:s.t,y:s.p95,name:'p95 ms',mode:'lines',yaxis:'y2'}],"
        "{title:s.name,xaxis:{title:'seconds since the load started'},yaxis:{title:'tps'},"
        "yaxis2:{title:'p95 ms',overlaying:'y',side:'right'},height:480,"
        "shapes:s.faults.map(f=>({type:'rect',xref:'x',yref:'paper',x0:f[0],x1:f[1],y0:0,y1:1,"
        "fillcolor:'red',opacity:0.15,line:{width:0}}))});}"
        "showTrial(document.getElementById('trial').value);</script>"
    )


def _extra_sections(store: Store, run_id: int, plot: Any) -> str:
    """Sections of designed experiments and searches (their own modules)."""
    from clusterbench.experiment.doe_report import design_sections
    from clusterbench.experiment.search_report import search_sections

    return design_sections(store, run_id, plot) + search_sections(store, run_id, plot)


def render_html(store: Store, run_id: int) -> str:
    run = store.get_run(run_id)
    info = experiment_info(store, run_id)
    settings = info.get("settings") or {}
    points = point_stats(store, run_id)
    body: list[str] = []
    first = True

    def plot(fig: go.Figure) -> str:
        nonlocal first
        out = pio.to_html(fig, include_plotlyjs=first, full_html=False, config={"displaylogo": False})
        first = False
        return str(out)

    parts = list(dict.fromkeys(p.part for p in points))
    for part in parts:
        pts = [p for p in points if p.part == part]
        body.append(f"<h2>Part {html.escape(part)}</h2>")
        for f in varying(pts):
            body.append(plot(factor_figure(pts, f, f"{part}: tps and p95 against {f}")))
        changes = baseline_changes(pts, settings.get("baseline") or {})
        if len(pts) > 1:
            fig = go.Figure(go.Bar(x=[c[0] for c in changes], y=[c[1] for c in changes]))
            fig.update_layout(title=f"{part}: median tps change against the baseline (%)", height=380,
                              yaxis_title="%", margin={"l": 60, "r": 20, "t": 60, "b": 120})  # fmt: skip
            body.append(plot(fig))
        body.append(_points_table(pts))
    body.append(_extra_sections(store, run_id, plot))
    if first:  # no plot yet (a single point): plotly.js is still needed by the series block
        body.append(f"<div style='display:none'>{plot(go.Figure())}</div>")
    wall = next((e["detail"] for e in reversed(store.events(run_id)) if e["kind"] == "wall_time"), None)
    wall_html = ""
    if wall:
        share = wall.get("not_measuring_share", 0.0)
        phases = ", ".join(f"{k} {v:.0f} s" for k, v in wall.get("phases", {}).items())
        wall_html = (
            f"<p>wall time of the last invocation {wall.get('wall', 0):.0f} s, "
            f"{share:.0%} not measuring ({html.escape(phases)})</p>"
        )
    title = html.escape(f"Experiment {info.get('name', run.name)} (run {run.id})")
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#eee}"
    )
    desc = html.escape(settings.get("description", ""))
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head>"
        f"<body><h1>{title}</h1><p>{desc}</p><p>profile {html.escape(str(info.get('profile')))}, "
        f"status {html.escape(run.status)}, started {html.escape(run.started_at)}, "
        f"{settings.get('repetitions', '?')} repetition(s) per point. The CI is the order-statistic "
        "interval of the median; its real coverage is shown (below 95 % with fewer than 6 repetitions). "
        "p95 comes from the repetitions' histograms added together, never from averaged percentiles.</p>"
        f"{wall_html}" + _clients_block(client_findings(store, run_id)) + "".join(body)
        + _faults_block(fault_effects(store, run_id))
        + "<h2>Per-second series</h2>" + _series_block(store, run_id)
        + "</body></html>"
    )  # fmt: skip


def points_csv(store: Store, run_id: int) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(POINT_CSV)
    w.writerows(point_csv_rows(point_stats(store, run_id)))
    return out.getvalue()


TRIAL_CSV = ("trial_id", "index", "part", "point", "rep", "nodes", "test", "threads", "clients", "rate",
             "tps", "p95_ms", "errors", "duration")  # fmt: skip


def trials_csv(store: Store, run_id: int) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(TRIAL_CSV)
    for r in trial_rows(store, run_id):
        s = r.get("summary") or {}
        w.writerow([r["trial_id"], r["index"], r["part"], r["point_label"], r["rep"], r["nodes"], r["test"],
                    r["threads"], r["clients"], r.get("effective_rate", 0), s.get("tps", ""),
                    s.get("p95", ""), s.get("errors", ""), s.get("duration", "")])  # fmt: skip
    return out.getvalue()


def write_experiment_report(store: Store, run_id: int, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / f"experiment-{run_id}.html"
    pts = out_dir / f"experiment-{run_id}-points.csv"
    trs = out_dir / f"experiment-{run_id}-trials.csv"
    page.write_text(render_html(store, run_id))
    pts.write_text(points_csv(store, run_id))
    trs.write_text(trials_csv(store, run_id))
    return [page, pts, trs, *_extra_files(store, run_id, out_dir)]


def _extra_files(store: Store, run_id: int, out_dir: Path) -> list[Path]:
    """The effects of designed parts as CSV (their own module)."""
    from clusterbench.experiment.doe_report import effects_csv

    text = effects_csv(store, run_id)
    if text is None:
        return []
    path = out_dir / f"experiment-{run_id}-effects.csv"
    path.write_text(text)
    return [path]
