"""The experiment report: Markdown and one self-contained HTML page rendered from one description
(analysis/document.py's Report, by the same templates as run reports), and CSV files.

* an overview of the parts (design, factors and levels, points, trials);
* per part: tps and p95 against each factor (medians with their CIs, one line per combination of
  the other factors, a panel per level of one of them when there are many), the median tps change
  against a baseline point (experiment.baseline, else the first level of the part's first
  factor), and a table per point: n, median tps with its CI and real coverage, CV (flagged when
  high), p95 from the pooled histograms of the repetitions, errors, rate, change;
* designed parts and searches: their own sections (doe_report.py, search_report.py);
* faults inside trials, saturated load clients, the per-second series of every trial as small
  multiples (one panel per point, its repetitions overlaid, fault windows shaded), the wall time,
  provenance.

The plots are inline SVG (analysis/plots.py): no script, no external file.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clusterbench.analysis import design_plots, multiples, plots
from clusterbench.analysis.document import render_html_report, render_markdown_report
from clusterbench.analysis.report import fault_windows, trial_series
from clusterbench.analysis.sections import Figure, Report, Section, Table
from clusterbench.analysis.stats import median_ci
from clusterbench.analysis.workload_tables import ACCESS_NOTE
from clusterbench.experiment.planner import label
from clusterbench.experiment.results import (
    POINT_CSV,
    PointStats,
    experiment_info,
    point_csv_rows,
    point_stats,
)
from clusterbench.experiment.runner import trial_rows
from clusterbench.experiment.spec import INTERCONNECTS
from clusterbench.store import Store
from clusterbench.telemetry.report import busiest_per_second, point_bottleneck
from clusterbench.workloads.sysbench import ACCESS_TESTS, SLAP_TEST, TPCC, access_rows

CI_NOTE = (
    "tps: the median over a point's repetitions with its order-statistic confidence interval (95 %; "
    "with fewer than 6 repetitions no such interval exists and the table shows [min, max] with its real "
    "coverage: 50 % for 2, 75 % for 3). p95: read from the repetitions' latency histograms added "
    "together, never from averaged percentiles; its interval spans the repetitions' own p95. Latencies "
    "in milliseconds per transaction, tps in transactions per second of measured time (warm-up "
    "excluded), all clients added up."
)
MAX_LINES = 6  # more lines than this in one panel: a panel per level of one of the other factors
MAX_PANELS = 9
MAX_FACTOR_COLUMNS = 7  # a points table shows each factor in a column, up to this many


def varying(points: Sequence[PointStats]) -> list[str]:
    names: list[str] = []
    for p in points:
        for k in p.point:
            if k not in names:
                names.append(k)
    return [k for k in names if len({json.dumps(p.point.get(k)) for p in points}) > 1]


def baseline_of(points: Sequence[PointStats], baseline: dict[str, Any]) -> dict[str, Any]:
    """The levels that define a point's baseline: experiment.baseline's for the factors that vary
    here, else the first point's level of the first factor that varies."""
    vary = varying(points)
    base = {k: v for k, v in baseline.items() if k in vary}
    if not base and vary:
        base = {vary[0]: points[0].point[vary[0]]}
    return base


def baseline_changes(
    points: Sequence[PointStats], baseline: dict[str, Any]
) -> list[tuple[str, float | None]]:
    """(point label, % change of median tps against its baseline point: the point with the
    baseline's levels and the other factors equal)."""
    base = baseline_of(points, baseline)
    by_point = {json.dumps(p.point, sort_keys=True): p for p in points}
    out: list[tuple[str, float | None]] = []
    for p in points:
        ref = by_point.get(json.dumps({**p.point, **base}, sort_keys=True))
        if ref is None or ref.tps_ci is None or p.tps_ci is None or ref.tps_ci.median == 0:
            out.append((p.label, None))
        else:
            out.append((p.label, 100.0 * (p.tps_ci.median - ref.tps_ci.median) / ref.tps_ci.median))
    return out


def rate_text(rate: int) -> str:
    return f"{rate} tps" if rate else "max (unthrottled)"


def level_text(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def levels_of(info: dict[str, Any], part: str, factor: str, points: Sequence[PointStats]) -> list[Any]:
    """The levels of a factor that the part's points have: numbers in ascending order, others in
    the file's order (levels the file does not list, such as a design's centre, after them)."""
    stored = (((info.get("parts") or {}).get(part) or {}).get("factors") or {}).get(factor) or []
    seen: dict[str, Any] = {}
    for p in points:
        if factor in p.point:
            seen.setdefault(_key(p.point[factor]), p.point[factor])
    if all(_is_number(v) for v in seen.values()):
        return sorted(seen.values(), key=float)
    known = [v for v in stored if _key(v) in seen]
    rest = [v for k, v in seen.items() if k not in {_key(x) for x in known}]
    return known + sorted(rest, key=str)


# ---- per part ------------------------------------------------------------------------------------


def _f(v: float | None, spec: str = ",.1f") -> str:
    return "—" if v is None else format(v, spec)


def _factor_figures(info: dict[str, Any], part: str, pts: Sequence[PointStats], factor: str) -> list[Figure]:
    """tps and p95 against one factor: lines per combination of the other factors; with more than
    MAX_LINES of them, a panel per level of the other factor with the fewest levels."""
    levels = levels_of(info, part, factor, pts)
    index = {_key(v): i for i, v in enumerate(levels)}
    others = [k for k in varying(pts) if k != factor]
    facet = None
    if len(others) >= 2 and len({tuple(_key(p.point.get(k)) for k in others) for p in pts}) > MAX_LINES:
        counts = {k: len({_key(p.point.get(k)) for p in pts}) for k in others}
        facet = min(others, key=lambda k: (counts[k], others.index(k)))
        if counts[facet] > MAX_PANELS:
            facet = None
    lines = [k for k in others if k != facet]
    panel_levels = levels_of(info, part, facet, pts) if facet else [None]
    grouped: dict[str, dict[str, list[PointStats]]] = {_key(v): {} for v in panel_levels}
    for p in pts:
        where = grouped[_key(p.point.get(facet)) if facet else _key(None)]
        where.setdefault(label((k, p.point[k]) for k in lines if k in p.point) or "median", []).append(p)
    # lines only where they join points: on average at least two per line (a grid), else markers
    # (a design or a search, whose other factors all differ from point to point)
    connect = 2 * sum(len(g) for g in grouped.values()) <= len(pts)

    def estimates(ps: list[PointStats], what: str) -> list[plots.Estimate]:
        out = []
        for p in ps:
            i = index[_key(p.point.get(factor))]
            if what == "tps":
                t = p.tps_ci
                out.append(
                    plots.Estimate(i, t.median if t else None, t.low if t else None, t.high if t else None)
                )
            else:
                q = p.p95_ci
                out.append(plots.Estimate(i, p.p95_pooled, q.low if q else None, q.high if q else None))
        return out

    def panels(what: str) -> list[plots.Panel]:
        if not connect:  # a design's points: every other factor varies, so no line joins two of them
            return [plots.Panel("", [plots.Curve(p.label, estimates([p], what)) for p in pts])]
        return [
            plots.Panel(f"{facet}={level_text(v)}" if facet else "",
                        [plots.Curve(name, estimates(ps, what)) for name, ps in grouped[_key(v)].items()])
            for v in panel_levels
        ]  # fmt: skip

    xs = [level_text(v) for v in levels]
    how = "" if connect else " (one marker per point)"
    tps = plots.curves_svg(
        xs, panels("tps"), xlabel=factor, ylabel="tps", connect=connect,
        title=f"tps: median and CI over the repetitions{how}",
    )  # fmt: skip
    lin, log = plots.curves_latency_svgs(
        xs, panels("p95"), xlabel=factor, ylabel="p95 ms", connect=connect,
        title=f"p95 latency, ms: pooled, with the repetitions' range{how}",
    )  # fmt: skip
    return [Figure(f"{part}: tps and p95 against {factor}", tps), Figure("", lin, log, "latency")]


def _points_table(
    pts: Sequence[PointStats], changes: Sequence[float | None], cv_warn: float, store: Store | None = None
) -> Table:
    vary = varying(pts)
    by_factor = 0 < len(vary) <= MAX_FACTOR_COLUMNS
    changed = any(c not in (None, 0.0) for c in changes)
    keys = vary if by_factor else ["point"]
    rates = len({p.rate for p in pts}) > 1  # a constant rate is said once, in the part's intro
    # one coverage for every point (the same number of repetitions everywhere): said in the header
    covers = {f"{p.tps_ci.coverage:.0%}" for p in pts if p.tps_ci is not None and p.n > 1}
    one_cover = covers.pop() if len(covers) == 1 else None
    ci_head = f"tps CI ({one_cover} coverage)" if one_cover else "tps CI (coverage)"
    head = [*keys, "n", "tps median", ci_head, "tps CV", "p95 ms (pooled)", "p95 ms range", "errors/s"]
    head += (["--rate per client"] if rates else []) + (["tps vs baseline"] if changed else [])
    # each point's bottleneck: the most common verdict of its repetitions (telemetry)
    necks = [point_bottleneck(store, p.trial_ids) for p in pts] if store is not None else []
    if not any(n != "—" for n in necks):
        necks = []
    head += ["bottleneck"] if necks else []
    auto = any(p.convergence is not None for p in pts)
    head += ["converged"] if auto else []
    rows: list[list[str]] = []
    marks: set[tuple[int, int]] = set()
    cv_col = len(keys) + 3
    for i, (p, ch) in enumerate(zip(pts, changes, strict=True)):
        t, q = p.tps_ci, p.p95_ci
        cv = "—" if p.cv is None else f"{p.cv:.1%}"
        if p.cv_high:
            marks.add((i, cv_col))
        first = [level_text(p.point.get(k)) for k in vary] if by_factor else [p.label]
        err = statistics.median(p.errors_per_s) if p.errors_per_s else 0.0
        ci = "—"  # one repetition has no interval
        if t and p.n > 1:
            ci = f"{t.low:,.1f} – {t.high:,.1f}" + ("" if one_cover else f" ({t.coverage:.0%})")
        spread = f"{q.low:.2f} – {q.high:.2f}" if q and len(p.p95s) > 1 else "—"
        cells = [*first, str(p.n), _f(t.median if t else None), ci, cv, _f(p.p95_pooled, ".2f"), spread]
        rows.append(
            [*cells, f"{err:.2f}"]
            + ([rate_text(p.rate)] if rates else [])
            + (["—" if ch is None else f"{ch:+.1f}%"] if changed else [])
            + ([necks[i]] if necks else [])
            + ([converged_text(p)] if auto else [])
        )
    # levels that are numbers are right-aligned like every other number
    numeric = [by_factor and all(_is_number(p.point.get(k)) for p in pts) for k in keys]
    align = ["r" if x else "l" for x in numeric] + ["r"] * (len(head) - len(keys) - (1 if necks else 0))
    align += ["l"] if necks else []
    align += ["l"] if auto else []
    return Table(head, rows, align, marks, caption=f"Points (CV flagged (!) above {cv_warn:.0%})")


def converged_text(p: PointStats) -> str:
    """'yes, ±3.1 %' or 'no, ±8.2 %' (the CI's wider side relative to the statistic), '—' without
    repetitions = "auto"."""
    c = p.convergence
    if c is None:
        return "—"
    hw = c.half_width
    width = f", ±{hw * 100:.1f} %" if hw is not None else ", no CI"
    if c.coverage < 0.95 - 1e-9 and c.n > 1:
        width += f" ({c.coverage:.0%} coverage)"
    return ("yes" if c.converged else "no") + width


def repetitions_fact(settings: dict[str, Any], points: Sequence[PointStats]) -> str:
    order = f", {settings['repetition_order']}" if settings.get("repetition_order") else ""
    if settings.get("repetitions") != "auto":
        return f"{settings.get('repetitions', '?')} per point{order}"
    tol = float(settings.get("ci_tolerance", 0.05))
    done = [p for p in points if p.convergence is not None]
    ok = sum(1 for p in done if p.convergence is not None and p.convergence.converged)
    return (
        f"auto: {settings.get('min_repetitions', '?')}-{settings.get('max_repetitions', '?')} per point, "
        f"until the 95 % CI of the {settings.get('ci_statistic', 'median')} (of µs/access for access tests, "
        f"else tps) is within {tol:.0%} of it; {ok} of {len(done)} point(s) converged{order}"
    )


def part_sections(
    store: Store, run_id: int, info: dict[str, Any], points: Sequence[PointStats]
) -> list[Section]:
    settings = info.get("settings") or {}
    cv_warn = float(settings.get("cv_warn") or 0.10)
    out = []
    parts = list(dict.fromkeys(p.part for p in points))
    for part in parts:
        pts = [p for p in points if p.part == part]
        vary = varying(pts)
        sec = Section(f"part-{part}", f"Part {part}")
        fixed = [f"{k}={level_text(v)}" for k, v in pts[0].point.items() if k not in vary]
        sec.intro.append(
            f"{len(pts)} point(s), {sum(p.n for p in pts)} trial(s) with results"
            + (f"; factors varied: {', '.join(vary)}" if vary else "")
            + (f"; the same in every point: {', '.join(fixed)}" if fixed else "")
            + (f"; --rate per client: {rate_text(pts[0].rate)}" if len({p.rate for p in pts}) == 1 else "")
            + "."
        )
        for factor in vary:
            sec.figures += _factor_figures(info, part, pts, factor)
        base = baseline_of(pts, settings.get("baseline") or {})
        changes = [c for _, c in baseline_changes(pts, settings.get("baseline") or {})]
        if any(c not in (None, 0.0) for c in changes):
            sec.figures.append(
                Figure(f"{part}: median tps change against the baseline",
                       design_plots.change_svg([p.label for p in pts], changes,
                                        title="median tps, % change against the baseline point"))
            )  # fmt: skip
        sec.tables.append(_points_table(pts, changes, cv_warn, store))
        if base and any(c not in (None, 0.0) for c in changes):
            sec.paragraphs.append(
                f"tps vs baseline: the change of the median tps against the point with {label(base.items())} "
                "and the other factors equal (— where that point has no result)."
            )
        out.append(sec)
    return out


# ---- faults, clients, series, wall time ------------------------------------------------------------


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


FAULT_HEADER = ["trial", "point", "rep", "fault", "from s", "to s", "tps before", "tps back to 95 % after s",
                "errors until recovered"]  # fmt: skip


def fault_table_rows(rows: Sequence[dict[str, Any]], several_parts: bool = True) -> list[list[str]]:
    def cell(v: Any) -> str:
        return "—" if v is None else str(v)

    out = []
    for r in rows:
        back = r.get("tps_recovered_after_s")
        if back is None and r.get("tps_before") is not None:
            back = "not recovered"
        out.append([cell(c) for c in (
            f"#{r['index']}", _where(r, several_parts), r["rep"], r["fault"], r["start"], r["end"],
            r.get("tps_before"), back, r.get("errors_until_recovered", r.get("errors_in_window")),
        )])  # fmt: skip
    return out


def fault_section(rows: Sequence[dict[str, Any]], several_parts: bool = True) -> Section | None:
    if not rows:
        return None
    sec = Section("faults", "Faults inside trials")
    sec.intro.append(
        "Each trial ran the part's fault schedule under load; times are seconds from the start of the load "
        "(warm-up included). 'tps back' is measured against the median tps of the measured seconds before "
        "the fault; errors are counted from the fault's start until tps is back (or to the end of the trial)."
    )
    body = fault_table_rows(rows, several_parts)
    sec.tables.append(Table(FAULT_HEADER, body, ["r", "l", "r", "l", "r", "r", "r", "r", "r"]))
    return sec


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


def client_warning(rows: Sequence[dict[str, Any]]) -> str:
    trials = len({(r["part"], r["point"], r["rep"]) for r in rows})
    points = len({(r["part"], r["point"]) for r in rows})
    return (
        f"in {trials} trial(s) of {points} point(s) a load client was the bottleneck (its CPU, or the asked "
        "rate was not reached), so their numbers are the client's limit, not the cluster's; see 'Client "
        "saturation'. Use more client hosts ([clients] hosts) or fewer threads per client."
    )


def _where(r: dict[str, Any], several_parts: bool) -> str:
    return f"{r['part']}: {r['point']}" if several_parts else str(r["point"])


def client_section(rows: Sequence[dict[str, Any]], several_parts: bool = True) -> Section | None:
    if not rows:
        return None
    sec = Section("clients", "Client saturation")
    sec.intro.append(
        "Trials in which a load client hit a limit of its own (its CPU, or the rate it was asked for): "
        "their numbers are a floor for the cluster's capacity, not the cluster's."
    )
    head = ["trial", "point", "rep", "client", "host", "finding"]
    body = [[f"#{r['index']}", _where(r, several_parts), str(r["rep"]), str(r["client"]), str(r["host"]),
             "; ".join(map(str, r["warnings"]))] for r in rows]  # fmt: skip
    wrap = {(i, c): "wrap" for i in range(len(body)) for c in (1, 5)}
    sec.tables.append(Table(head, body, ["r", "l", "r", "r", "l", "l"], styles=wrap))
    return sec


def _short(point: dict[str, Any], names: Sequence[str]) -> str:
    return " / ".join(level_text(point.get(n)) for n in names) or "(base)"


def series_section(store: Store, run_id: int, points: Sequence[PointStats]) -> Section | None:
    """Every trial's per-second tps and p95 as small multiples (a panel per point, its repetitions
    overlaid), and a table of each trial's per-second figures."""
    rows = trial_rows(store, run_id)
    if not rows:
        return None
    by_trial = {r["trial_id"]: r for r in rows}
    parts = list(dict.fromkeys(p.part for p in points))
    sec = Section("series", "Per-second series")
    sec.intro.append(
        "Every measured second of every trial, all clients added up (seconds since the load started, "
        "warm-up included; an interval not every client reported is left out). One panel per point, its "
        "repetitions overlaid, every panel on the same scale; fault windows and stalls (seconds under 10 % "
        "of the trial's median tps) shaded."
    )
    head = ["trial", "point", "rep", "seconds", "tps min", "tps median", "tps max", "p95 ms median",
            "p95 ms max", "worst p95 at s"]  # fmt: skip
    table: list[list[str]] = []
    for part in parts:
        pts = [p for p in points if p.part == part]
        names = varying(pts)
        tps_panels, p95_panels, busy_panels = [], [], []
        for p in pts:
            tps_traces, p95_traces, busy_traces = [], [], []
            windows: list[plots.Window] = []
            for tid, rep in sorted(zip(p.trial_ids, p.reps, strict=True), key=lambda x: x[1]):
                s = [x for x in trial_series(store, tid) if x.complete]
                t = [x.t for x in s]
                tps_traces.append(plots.Trace(f"rep {rep}", t, [x.tps for x in s]))
                p95_traces.append(plots.Trace(f"rep {rep}", t, [x.p95 for x in s]))
                bt, bv = busiest_per_second(store, tid)
                if bt:
                    busy_traces.append(plots.Trace(f"rep {rep}", bt, list(bv)))
                windows += [plots.Window(lb, a, b) for lb, a, b in fault_windows(store, run_id, tid)]
                # the stall detector's runs (seconds under 10 % of the trial's median tps)
                runs = (store.provenance(run_id, tid).get("stalls") or {}).get("runs") or []
                windows += [plots.Window("stall", t0 - 0.5, t0 + n - 0.5) for t0, n in runs]
                p95 = [(x.p95, x.t) for x in s if x.p95 is not None]
                worst = max(p95) if p95 else None
                r = by_trial.get(tid, {})
                tps = [x.tps for x in s]
                table.append([
                    f"#{r.get('index', '?')}", f"{part}: {p.label}" if len(parts) > 1 else p.label, str(rep),
                    str(len(s)), _f(min(tps, default=None)), _f(statistics.median(tps) if tps else None),
                    _f(max(tps, default=None)),
                    _f(statistics.median([v for v, _ in p95]) if p95 else None, ".2f"),
                    _f(worst[0] if worst else None, ".2f"), f"{worst[1]:g}" if worst else "—",
                ])  # fmt: skip
            title = _short(p.point, names)
            tps_panels.append(plots.Multiple(title, tps_traces, windows))
            p95_panels.append(plots.Multiple(title, p95_traces, windows))
            busy_panels.append(plots.Multiple(title, busy_traces, windows))
        what = f"panels: {' / '.join(names)}" if names else "one panel"
        tps_svg = multiples.multiples_svg(tps_panels, title="tps per second", ylabel="tps")
        sec.figures.append(Figure(f"{part}: tps per second ({what})", tps_svg))
        lin, log = multiples.multiples_latency_svgs(
            p95_panels, title="p95 latency per second, ms", ylabel="p95 ms"
        )
        sec.figures.append(Figure(f"{part}: p95 latency per second ({what})", lin, log, "latency"))
        if any(m.traces for m in busy_panels):
            busy = multiples.multiples_svg(
                busy_panels, title="servers: the busiest CPU or link per second, % of its limit", ylabel="%"
            )
            sec.figures.append(Figure(f"{part}: the servers' busiest resource per second ({what})", busy))
    table.sort(key=lambda r: int(r[0][1:]) if r[0][1:].isdigit() else 0)
    sec.tables.append(Table(head, table, ["r", "l", "r", "r", "r", "r", "r", "r", "r", "r"]))
    return sec


def wall_section(store: Store, run_id: int) -> tuple[Section | None, str | None]:
    wall = next((e["detail"] for e in reversed(store.events(run_id)) if e["kind"] == "wall_time"), None)
    if not wall:
        return None, None
    total = float(wall.get("wall") or 0.0)
    share = float(wall.get("not_measuring_share") or 0.0)
    summary = f"{total:,.0f} s, {share:.0%} not measuring"
    sec = Section("wall", "Wall time")
    sec.intro.append(
        f"The last invocation of `experiment run` (a resumed run counts from its resume): {summary}."
    )
    phases = sorted((wall.get("phases") or {}).items(), key=lambda kv: -kv[1])
    sec.tables.append(
        Table(["phase", "seconds", "share of the wall time"],
              [[k, f"{v:,.1f}", f"{v / total:.1%}" if total else "—"] for k, v in phases], ["l", "r", "r"])
    )  # fmt: skip
    return sec, summary


def provenance_section(store: Store, run_id: int) -> Section | None:
    prov = store.provenance(run_id)
    if not prov:
        return None
    sec = Section("provenance", "Provenance")
    sec.intro.append("What the run ran on and with, as stored with it (per trial: `results show`).")
    for k, v in prov.items():
        text = json.dumps(v, sort_keys=True)
        if len(text) > 160:
            sec.details.append((k, json.dumps(v, sort_keys=True, indent=1)))
        else:
            sec.bullets.append(f"{k}: {text}")
    return sec


# ---- the whole report ------------------------------------------------------------------------------


def _overview(info: dict[str, Any], points: Sequence[PointStats]) -> Section:
    settings = info.get("settings") or {}
    sec = Section("experiment", "Experiment")
    if settings.get("description"):
        sec.intro.append(str(settings["description"]))
    sec.paragraphs.append(CI_NOTE)
    stored = info.get("parts") or {}
    head = ["part", "design", "factors and levels", "points", "trials with results"]
    rows = []
    for part in dict.fromkeys([*stored, *(p.part for p in points)]):
        meta = stored.get(part) or {}
        design = (meta.get("design") or {}).get("kind") or ("search" if part == "search" else "full-grid")
        factors = meta.get("factors") or {}
        if not factors:
            pts = [p for p in points if p.part == part]
            factors = {k: levels_of(info, part, k, pts) for k in varying(pts)}
        pts = [p for p in points if p.part == part]
        levels = "; ".join(f"{k} {', '.join(map(level_text, v))}" for k, v in factors.items())
        rows.append([part, design, levels, str(len(pts)), str(sum(p.n for p in pts))])
    sec.tables.append(
        Table(head, rows, ["l", "l", "l", "r", "r"], styles={(i, 2): "wrap" for i in range(len(rows))})
    )
    return sec


def access_section(store: Store, run_id: int, points: Sequence[PointStats]) -> Section | None:
    """µs per access of the access-method points (median over repetitions, with its CI; p95 from
    the repetitions' merged histogram), and batched ÷ serial per row size."""
    rows_by_trial = {r["trial_id"]: r for r in trial_rows(store, run_id)}
    auto = any(p.convergence is not None for p in points)
    table: list[list[str]] = []
    medians: dict[tuple[str, str, str, int, int], float] = {}
    # (part, other factors, row bytes, batch) → method → interconnect → median µs/access
    by_ic: dict[tuple[str, str, int, int], dict[str, dict[str, float]]] = {}
    reps: dict[tuple[str, str, int, int, str, str], str] = {}  # repetitions = "auto": " (7)"
    for p in points:
        trs = [rows_by_trial[t] for t in p.trial_ids if t in rows_by_trial]
        if not trs or trs[0].get("test") not in ACCESS_TESTS:
            continue
        first = trs[0]
        test, size, batch = str(first["test"]), int(first.get("row_size", 20)), int(first.get("batch", 32))
        n_rows = access_rows(test, batch, int(first.get("table_size", 10000)))
        us = [float(r["summary"]["lat_avg"]) * 1000.0 / n_rows for r in trs if r.get("summary")]
        acc = [float(r["summary"]["tps"]) * n_rows for r in trs if r.get("summary")]
        if not us:
            continue
        ci = median_ci(us)
        pooled = p.p95_pooled * 1000.0 / n_rows if p.p95_pooled is not None else None
        others = " ".join(f"{k}={level_text(v)}" for k, v in p.point.items()
                          if k not in ("workload", "row_size", "batch"))  # fmt: skip
        medians[(p.part, others, test, size, batch)] = ci.median
        ic = str(first.get("interconnect") or "")
        if ic:
            rest = " ".join(f"{k}={level_text(v)}" for k, v in p.point.items()
                            if k not in ("workload", "row_size", "batch", "interconnect"))  # fmt: skip
            # the statistic the repetitions converged on: the median, or the mean when asked for
            mean = p.convergence is not None and p.convergence.statistic == "mean"
            center = statistics.fmean(us) if mean else ci.median
            by_ic.setdefault((p.part, rest, size, batch), {}).setdefault(test, {})[ic] = center
            if p.convergence is not None:
                reps[(p.part, rest, size, batch, test, ic)] = (
                    f" ({p.convergence.n}{'' if p.convergence.converged else ', not converged'})"
                )
        table.append([p.part, others or "—", test.removeprefix("access_"), str(size), str(n_rows),
                      str(len(us)), f"{ci.median:,.2f} [{ci.low:,.2f}, {ci.high:,.2f}]", _f(pooled, ",.2f"),
                      _f(statistics.median(acc), ",.0f")]
                     + ([converged_text(p)] if auto else []))  # fmt: skip
    if not table:
        return None
    head = ["part", "point", "method", "row bytes", "rows/access", "n", "µs/access median [95 % CI]",
            "µs p95 pooled", "accesses/s"] + (["converged"] if auto else [])  # fmt: skip
    align = ["l"] * 3 + ["r"] * 6 + (["l"] if auto else [])
    sec = Section("access-methods", "Access methods", tables=[Table(head, table, align)])
    ratios = []
    for (part, others, test, size, batch), batched in medians.items():
        serial = medians.get((part, others, test.removesuffix("_batch"), size, batch))
        if test.endswith("_batch") and serial:
            ratios.append([part, others or "—", test.removeprefix("access_"), str(size), str(batch),
                           f"{batched / serial:.3f}"])  # fmt: skip
    if ratios:
        ratio_head = ["part", "point", "method", "row bytes", "batch", "batched ÷ serial µs/access"]
        sec.tables.append(Table(ratio_head, ratios, ["l", "l", "l", "r", "r", "r"]))
    sec.tables += interconnect_tables(by_ic, reps)
    sec.paragraphs.append(ACCESS_NOTE)
    if by_ic:
        sec.paragraphs.append(INTERCONNECT_NOTE)
    return sec


def slap_section(store: Store, run_id: int, points: Sequence[PointStats]) -> Section | None:
    """The mysqlslap points: what each ran (load type and engine, or the user's SQL), queries/s
    (median over repetitions, with its CI), seconds per run of all clients' queries and runs/s."""
    rows_by_trial = {r["trial_id"]: r for r in trial_rows(store, run_id)}
    table: list[list[str]] = []
    for p in points:
        trs = [rows_by_trial[t] for t in p.trial_ids if t in rows_by_trial]
        if not trs or trs[0].get("test") != SLAP_TEST:
            continue
        done = [r for r in trs if r.get("summary")]
        if not done:
            continue
        o = done[0].get("options") or {}
        sql = o.get("slap_query")
        load = f"SQL: {sql[:40]}{'…' if len(sql) > 40 else ''}" if sql else \
            f"{o.get('slap_load_type', 'mixed')} ({o.get('slap_engine', 'InnoDB')})"
        qps = median_ci([float(r["summary"]["qps_other"]) for r in done])
        per_run = statistics.median(float(r["summary"]["lat_avg"]) / 1000.0 for r in done)
        runs = statistics.median(float(r["summary"]["tps"]) for r in done)
        others = " ".join(f"{k}={level_text(v)}" for k, v in p.point.items() if k != "workload")
        table.append([p.part, others or "—", load, str(o.get("slap_queries", "")), str(o.get("threads", "")),
                      str(len(done)), f"{qps.median:,.0f} [{qps.low:,.0f}, {qps.high:,.0f}]",
                      f"{per_run:.3f}", f"{runs:,.1f}"])  # fmt: skip
    if not table:
        return None
    head = ["part", "point", "load (engine)", "queries/client", "clients", "n", "queries/s median [95 % CI]",
            "s/run median", "runs/s"]  # fmt: skip
    sec = Section("mysqlslap", "mysqlslap", tables=[Table(head, table, ["l", "l", "l"] + ["r"] * 6)])
    sec.paragraphs.append(
        "One mariadb-slap run = every client (its concurrency, the threads setting) sending its queries "
        "once; the trial repeats runs until its time is up. queries/s counts all clients' queries; "
        "s/run is mariadb-slap's own average seconds to run them; runs/s is runs per measured second. "
        "Elsewhere in this report a mysqlslap trial's tps is its runs per second (a run is one event), "
        "not queries: compare mysqlslap points by this table."
    )
    return sec


INTERCONNECT_NOTE = (
    "By interconnect: socket = the node's Unix socket, the client on the node's own host; tcp = TCP to "
    "the node over the bridge; haproxy = TCP through the balancer to a node; shaped = TCP to the node "
    "with every node's link limited by tbf (workload.shaped_bandwidth). Each cell is the median µs per "
    "access over the point's repetitions (the mean with ci_statistic = \"mean\"). The noop row "
    "(SELECT 1) is the client's own cost plus that interconnect's round trip; a serial access minus it "
    "is the server's share."
)


def interconnect_tables(
    by_ic: dict[tuple[str, str, int, int], dict[str, dict[str, float]]],
    reps: dict[tuple[str, str, int, int, str, str], str] | None = None,
) -> list[Table]:
    """The study's shape: access method × interconnect, µs per access (median over repetitions),
    one table per part, other factors, row size and batch; then batched ÷ serial per interconnect.
    With repetitions = "auto" a cell also says how many repetitions it took, and when it did not
    converge: "99.67 (8, not converged)"."""
    reps = reps or {}
    out: list[Table] = []
    order = {t: i for i, t in enumerate(ACCESS_TESTS)}
    for (part, rest, size, batch), methods in by_ic.items():
        ics = [ic for ic in INTERCONNECTS if any(ic in v for v in methods.values())]
        where = f"{part}{' ' + rest if rest else ''}, {size}-byte rows, batch {batch}"
        rows = []
        for test in sorted(methods, key=lambda t: order.get(t, len(order))):
            cells = methods[test]
            shown = [_f(cells.get(ic), ",.2f") + reps.get((part, rest, size, batch, test, ic), "")
                     for ic in ics]  # fmt: skip
            rows.append([test.removeprefix("access_"), *shown])
        for test in sorted(methods, key=lambda t: order.get(t, len(order))):
            serial = methods.get(test.removesuffix("_batch"), {})
            if not test.endswith("_batch") or not serial:
                continue
            ratio = [
                f"{methods[test][ic] / serial[ic]:.3f}" if ic in methods[test] and serial.get(ic) else "—"
                for ic in ics
            ]
            method = test.removeprefix("access_")
            rows.append([f"{method} ÷ {method.removesuffix('_batch')}", *ratio])
        head = [f"µs/access ({where})", *ics]
        out.append(Table(head, rows, ["l"] + ["r"] * len(ics)))
    return out
def tpcc_section(store: Store, run_id: int, points: Sequence[PointStats]) -> Section | None:
    """The tpcc points: tpmC (median over repetitions, with its CI), tpm, each type's p95 (median
    over repetitions), retries per second, the stall detector's counts and the consistency verdicts;
    before them the loads (rows/s, bytes per warehouse, data/buffer-pool ratio)."""
    from clusterbench.workloads.tpcc import TYPES, load_line

    rows_by_trial = {r["trial_id"]: r for r in trial_rows(store, run_id)}
    table: list[list[str]] = []
    for p in points:
        trs = [rows_by_trial[t] for t in p.trial_ids if t in rows_by_trial]
        if not trs or trs[0].get("test") != TPCC:
            continue
        figs, stalls, verdicts = [], [], []
        for r in trs:
            prov = store.provenance(run_id, r["trial_id"])
            if prov.get("tpcc"):
                figs.append(prov["tpcc"])
            if prov.get("stalls"):
                stalls.append(prov["stalls"])
            verdicts += [v["verdict"] for k, v in prov.items() if k.startswith("tpcc_consistency:")]
        if not figs:
            continue
        ci = median_ci([float(f["tpmC"]) for f in figs])
        p95 = []
        for ty in TYPES:
            vals = [f["types"][ty]["p95_ms"] for f in figs if f["types"][ty].get("p95_ms") is not None]
            p95.append(_f(statistics.median(vals), ",.1f") if vals else "—")
        retries = statistics.median(f["retries"] / max(1e-9, float(f["duration_s"])) for f in figs)
        others = " ".join(f"{k}={level_text(v)}" for k, v in p.point.items() if k != "workload")
        passed = sum(1 for v in verdicts if v == "PASS")
        tpmc = f"{ci.median:,.0f} [{ci.low:,.0f}, {ci.high:,.0f}]"
        table.append([p.part, others or "—", str(len(figs)), tpmc,
                      _f(statistics.median(float(f["tpm"]) for f in figs), ",.0f"), *p95, _f(retries, ",.1f"),
                      " ".join(str(x["count"]) for x in stalls) or "—",
                      _f(max((float(x["longest"]) for x in stalls), default=0.0), "g"),
                      f"{passed}/{len(verdicts)} PASS" if verdicts else "—"])  # fmt: skip
    if not table:
        return None
    head = ["part", "point", "n", "tpmC median [95 % CI]", "tpm", *[f"p95 ms {t}" for t in TYPES],
            "retries/s", "stalls per rep", "longest stall", "consistency"]  # fmt: skip
    sec = Section("tpcc", "TPC-C", tables=[Table(head, table, ["l", "l"] + ["r"] * (len(head) - 2))])
    for load in store.provenance(run_id).get("tpcc_load") or []:
        sec.intro.append(f"Group {load.get('group')}, {load.get('nodes')} node(s): {load_line(load)}; "
                         f"{load.get('consistency', '')}.")  # fmt: skip
    sec.paragraphs.append(
        "tpmC: New-Order transactions per minute (rolled-back ones included); tpm: all five types. p95 per "
        "type: the median over repetitions of each trial's p95 (the script's own histograms). A stall is "
        "a second under 10 % of the trial's median tps; 'stalls per rep' gives the count of each "
        "repetition. Consistency: the twelve TPC-C conditions after each trial (condition 11 holds only "
        "right after a load and is reported as load-only)."
    )
    return sec


def build_experiment_report(store: Store, run_id: int, *, log_latency: bool = False) -> Report:
    from clusterbench.experiment.doe_report import design_sections
    from clusterbench.experiment.search_report import search_sections

    run = store.get_run(run_id)
    info = experiment_info(store, run_id)
    settings = info.get("settings") or {}
    points = point_stats(store, run_id)
    trials = store.trials(run_id)
    done = sum(p.n for p in points)
    source = f" ({info['source']})" if info.get("source") else ""
    facts: list[tuple[str, str]] = [
        ("run", f"{run.id} ({run.kind}{', ' + run.name if run.name else ''})"),
        ("experiment", f"{info.get('name') or run.name}{source}"),
        ("profile", str(info.get("profile") or "none")),
        ("status", run.status),
        ("started", run.started_at),
        ("ended", run.ended_at or "—"),
        ("repetitions", repetitions_fact(settings, points)),
        ("trials", f"{len(trials)} run, {done} with results"),
    ]  # fmt: skip
    wall, wall_summary = wall_section(store, run_id)
    if wall_summary:
        facts.append(("wall time", wall_summary + " (last invocation)"))
    from clusterbench.analysis.outcome import label_facts

    facts += label_facts(store, run)  # tags are labels of their own since store schema 5
    warnings: list[str] = []
    failed = [t for t in trials if t.status != "completed"]
    if failed:
        counts: dict[str, int] = {}
        for t in failed:
            counts[t.status] = counts.get(t.status, 0) + 1
        kinds = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        warnings.append(
            f"{len(failed)} trial(s) did not complete ({kinds}); the statistics use completed trials only."
        )
    clients = client_findings(store, run_id)
    if clients:
        warnings.append(client_warning(clients))
    sections: list[Section] = [_overview(info, points)]
    sections += part_sections(store, run_id, info, points)
    sections += design_sections(store, run_id)
    sections += search_sections(store, run_id)
    several = len({p.part for p in points}) > 1
    for extra in (
        access_section(store, run_id, points),
        slap_section(store, run_id, points),
        tpcc_section(store, run_id, points),
        fault_section(fault_effects(store, run_id), several),
        client_section(clients, several),
        series_section(store, run_id, points),
        wall,
        provenance_section(store, run_id),
    ):
        if extra is not None:
            sections.append(extra)
    title = f"Experiment {info.get('name') or run.name} (run {run.id})"
    return Report(run.id, title, facts, {"command"}, warnings, sections, log_latency)


def render_markdown(store: Store, run_id: int, **kw: Any) -> str:
    return render_markdown_report(build_experiment_report(store, run_id, **kw))


def render_html(store: Store, run_id: int, **kw: Any) -> str:
    return render_html_report(build_experiment_report(store, run_id, **kw))


# ---- CSV -------------------------------------------------------------------------------------------


def points_csv(store: Store, run_id: int) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(POINT_CSV)
    w.writerows(point_csv_rows(point_stats(store, run_id)))
    return out.getvalue()


TRIAL_CSV = ("trial_id", "index", "part", "point", "rep", "nodes", "test", "threads", "clients", "rate",
             "tps", "p95_ms", "errors", "duration", "bottleneck", "bottleneck_source",
             "bottleneck_utilization", "tpmC", "tpm", "stalls", "longest_stall")  # fmt: skip


def trials_csv(store: Store, run_id: int) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(TRIAL_CSV)
    for r in trial_rows(store, run_id):
        s = r.get("summary") or {}
        b = store.bottleneck(r["trial_id"]) or {}
        util = b.get("utilization")
        prov = store.provenance(run_id, r["trial_id"])
        f, st = prov.get("tpcc") or {}, prov.get("stalls") or {}
        w.writerow([r["trial_id"], r["index"], r["part"], r["point_label"], r["rep"], r["nodes"], r["test"],
                    r["threads"], r["clients"], r.get("effective_rate", 0), s.get("tps", ""),
                    s.get("p95", ""), s.get("errors", ""), s.get("duration", ""), b.get("resource", ""),
                    b.get("source", ""), "" if util is None else round(float(util), 4),
                    f.get("tpmC", ""), f.get("tpm", ""), st.get("count", ""),
                    st.get("longest", "")])  # fmt: skip
    return out.getvalue()


def write_experiment_report(
    store: Store, run_id: int, out_dir: Path, *, log_latency: bool = False
) -> list[Path]:
    """experiment-RUN.html and .md (one description, two renderings), -points.csv, -trials.csv and,
    with designed parts, -effects.csv; returns their paths, the HTML first."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rep = build_experiment_report(store, run_id, log_latency=log_latency)
    page = out_dir / f"experiment-{run_id}.html"
    md = out_dir / f"experiment-{run_id}.md"
    pts = out_dir / f"experiment-{run_id}-points.csv"
    trs = out_dir / f"experiment-{run_id}-trials.csv"
    page.write_text(render_html_report(rep))
    md.write_text(render_markdown_report(rep))
    pts.write_text(points_csv(store, run_id))
    trs.write_text(trials_csv(store, run_id))
    return [page, md, pts, trs, *_extra_files(store, run_id, out_dir)]


def _extra_files(store: Store, run_id: int, out_dir: Path) -> list[Path]:
    """The effects of designed parts as CSV (their own module)."""
    from clusterbench.experiment.doe_report import effects_csv

    text = effects_csv(store, run_id)
    if text is None:
        return []
    path = out_dir / f"experiment-{run_id}-effects.csv"
    path.write_text(text)
    return [path]
