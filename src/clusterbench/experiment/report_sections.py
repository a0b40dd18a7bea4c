"""The experiment report's sections about faults, load clients, per-second series, wall time and
provenance (split from experiment/report.py)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from typing import Any

from clusterbench.analysis import multiples, plots
from clusterbench.analysis.report import fault_windows, trial_series
from clusterbench.analysis.sections import Figure, Section, Table, table_section
from clusterbench.experiment.report_text import level_text, varying
from clusterbench.experiment.report_text import num_text as _f
from clusterbench.experiment.results import (
    PointStats,
)
from clusterbench.experiment.runner import trial_rows
from clusterbench.store import Store
from clusterbench.telemetry.report import busiest_per_second

# ---- faults, clients, series, wall time ------------------------------------------------------------


def _trial_events(store: Store, run_id: int, kind: str) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(event, its trial's row) for each event of `kind` of a trial of the run."""
    trials = {r["trial_id"]: r for r in trial_rows(store, run_id)}
    for e in store.events(run_id):
        if e["kind"] == kind and e["trial_id"] in trials:
            yield e, trials[e["trial_id"]]


def fault_effects(store: Store, run_id: int) -> list[dict[str, Any]]:
    """One row per fault of every trial that had a fault schedule (`fault_effect` events)."""
    out = []
    for e, r in _trial_events(store, run_id, "fault_effect"):
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
    body = fault_table_rows(rows, several_parts)
    return table_section(
        "faults", "Faults inside trials",
        "Each trial ran the part's fault schedule under load; times are seconds from the start of the load "
        "(warm-up included). 'tps back' is measured against the median tps of the measured seconds before "
        "the fault; errors are counted from the fault's start until tps is back (or to the end of the "
        "trial).",
        Table(FAULT_HEADER, body, ["r", "l", "r", "l", "r", "r", "r", "r", "r"]),
    )  # fmt: skip


def client_findings(store: Store, run_id: int) -> list[dict[str, Any]]:
    """One row per load client that hit a bottleneck of its own (`client_saturated` events)."""
    out = []
    for e, r in _trial_events(store, run_id, "client_saturated"):
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
    head = ["trial", "point", "rep", "client", "host", "finding"]
    body = [[f"#{r['index']}", _where(r, several_parts), str(r["rep"]), str(r["client"]), str(r["host"]),
             "; ".join(map(str, r["warnings"]))] for r in rows]  # fmt: skip
    wrap = {(i, c): "wrap" for i in range(len(body)) for c in (1, 5)}
    return table_section(
        "clients", "Client saturation",
        "Trials in which a load client hit a limit of its own (its CPU, or the rate it was asked for): "
        "their numbers are a floor for the cluster's capacity, not the cluster's.",
        Table(head, body, ["r", "l", "r", "r", "l", "l"], styles=wrap),
    )  # fmt: skip


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
    from clusterbench.analysis.sections import provenance_section as section

    intro = "What the run ran on and with, as stored with it (per trial: `results show`)."
    return section(store.provenance(run_id), intro)


