"""Reports rendered from the store alone: Markdown, and one self-contained HTML file (plotly inline).

The summary table follows sysbench's own end-of-run layout (tps; qps read/write/other; latency
min/avg/max/p95; errors; reconnects) with one row per trial. Per-second series add up the
clients of a trial; their latency percentiles come from merged interval histograms, never from
averaged percentiles.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped, unused-ignore]
import plotly.io as pio  # type: ignore[import-untyped, unused-ignore]
from plotly.subplots import make_subplots  # type: ignore[import-untyped, unused-ignore]

from clusterbench.store.store import Store
from clusterbench.verify.latency import workload_latency
from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram
from clusterbench.workloads.merge import merge_intervals
from clusterbench.workloads.parse import Sample
from clusterbench.workloads.saturation import WARNING as SATURATION_WARNING
from clusterbench.workloads.saturation import num


@dataclass(frozen=True)
class SummaryRow:
    run_id: int
    trial: int
    workload: str
    status: str
    threads: int | None
    duration: float | None
    tps: float | None
    qps_read: float | None
    qps_write: float | None
    qps_other: float | None
    qps_total: float | None
    lat_min: float | None
    lat_avg: float | None
    lat_max: float | None
    p95: float | None
    p99: float | None
    errors: int | None
    reconnects: int | None

    @property
    def errors_per_s(self) -> float | None:
        if self.errors is None or not self.duration:
            return None
        return self.errors / self.duration


COLUMNS: tuple[tuple[str, str], ...] = (
    ("trial", "trial"),
    ("workload", "test"),
    ("threads", "threads"),
    ("tps", "tps"),
    ("qps_read", "qps read"),
    ("qps_write", "qps write"),
    ("qps_other", "qps other"),
    ("lat_min", "lat min ms"),
    ("lat_avg", "lat avg ms"),
    ("lat_max", "lat max ms"),
    ("p95", "lat p95 ms"),
    ("errors", "errors"),
    ("reconnects", "reconnects"),
)


def summary_rows(store: Store, run_id: int) -> list[SummaryRow]:
    """One row per trial (all clients merged), as data: the CLI prints these with rich."""
    rows = []
    for tr in store.trials(run_id):
        s = store.summary(tr.id)

        def g(key: str, s: dict[str, Any] | None = s) -> Any:
            return None if s is None else s[key]

        qps = None if s is None else s["qps_read"] + s["qps_write"] + s["qps_other"]
        rows.append(
            SummaryRow(
                run_id=run_id, trial=tr.seq, workload=tr.workload, status=tr.status,
                threads=g("threads"), duration=g("duration"), tps=g("tps"), qps_read=g("qps_read"),
                qps_write=g("qps_write"), qps_other=g("qps_other"), qps_total=qps, lat_min=g("lat_min"),
                lat_avg=g("lat_avg"), lat_max=g("lat_max"), p95=g("p95"), p99=g("p99"),
                errors=g("errors"), reconnects=g("reconnects"),
            )
        )  # fmt: skip
    return rows


def format_cell(key: str, value: Any) -> str:
    if value is None:
        return "—"
    if key in ("tps", "qps_read", "qps_write", "qps_other", "qps_total"):
        return f"{value:,.2f}"
    if key.startswith("lat") or key in ("p95", "p99"):
        return f"{value:.2f}"
    return str(value)


def table_cells(rows: Sequence[SummaryRow]) -> tuple[list[str], list[list[str]]]:
    """Header and formatted cells of the summary table (shared by Markdown, HTML and the CLI)."""
    header = [title for _, title in COLUMNS]
    cells = [[format_cell(k, getattr(r, k)) for k, _ in COLUMNS] for r in rows]
    return header, cells


@dataclass(frozen=True)
class SeriesPoint:
    t: float
    tps: float
    qps: float
    lat_avg: float | None
    p95: float | None
    p99: float | None
    errors: int
    reconnects: int
    clients: int = 1  # clients that reported this interval
    complete: bool = True  # every client of the trial reported it


def _row_sample(r: Any) -> Sample:
    """A stored sample as a Sample: its stored rates are kept as they are, so sums stay exact."""
    hist = LatencyHistogram.from_pairs(DEFAULT_SCHEME, json.loads(r["hist"])) if r["hist"] else None
    return Sample(
        t=r["t"], interval=r["interval"], threads=r["threads"], events=r["events"], reads=0, writes=0,
        other=0, errors=r["errors"], reconnects=r["reconnects"], percentile=r["percentile"] or 0.0,
        lat_pct_ms=r["lat_pct"], client=r["client"], hist=hist,
        rates=(r["tps"], r["qps_read"], r["qps_write"], r["qps_other"]),
    )  # fmt: skip


def trial_samples(store: Store, trial_id: int) -> list[Sample]:
    rows = store.conn.execute(
        "SELECT client, t, interval, threads, events, tps, qps_read, qps_write, qps_other, percentile, "
        "lat_pct, errors, reconnects, hist FROM samples WHERE trial_id = ? ORDER BY t, client",
        (trial_id,),
    ).fetchall()
    return [_row_sample(r) for r in rows]


def trial_clients_of(store: Store, trial_id: int) -> list[int]:
    """The trial's clients: from its client rows, else from its per-client summaries or samples."""
    rows = store.trial_clients(trial_id)
    if rows:
        return [r["client"] for r in rows]
    found = {s["client"] for s in store.summaries(trial_id) if s["client"] >= 0}
    found |= {r[0] for r in store.conn.execute("SELECT DISTINCT client FROM samples WHERE trial_id = ?",
                                                (trial_id,)).fetchall()}  # fmt: skip
    return sorted(found)


def trial_series(store: Store, trial_id: int) -> list[SeriesPoint]:
    """Per-interval series of a trial: the clients added up per interval index (tps, qps, errors
    as sums of the clients' own figures), latency from the sum of their interval histograms, never
    from averaged percentiles. `complete` is False where some client did not report."""
    samples = trial_samples(store, trial_id)
    out = []
    for m in merge_intervals(samples, trial_clients_of(store, trial_id) or None):
        s = m.sample
        out.append(
            SeriesPoint(
                t=float(m.index), tps=s.tps, qps=s.qps, lat_avg=s.lat_avg_ms, p95=s.pct(95), p99=s.pct(99),
                errors=s.errors, reconnects=s.reconnects, clients=len(m.clients), complete=m.complete,
            )
        )  # fmt: skip
    return out


CLIENT_HEADER = [
    "client", "host", "target", "schema", "threads", "tps", "p95 ms", "errors", "--rate", "reached",
    "client CPU", "host CPU", "flags",
]  # fmt: skip


def _pct(x: Any) -> str:
    return "—" if x is None else f"{float(x):.0%}"


def client_rows(store: Store, trial_id: int) -> list[list[str]]:
    """One row per load client: where it ran, its own tps and p95 (from its own histogram), the
    rate it was asked for and reached, its CPU use and its saturation flags."""
    summaries = {s["client"]: s for s in store.summaries(trial_id) if s["client"] >= 0}
    placed = {r["client"]: r for r in store.trial_clients(trial_id)}
    run_id = store.conn.execute("SELECT run_id FROM trials WHERE id = ?", (trial_id,)).fetchone()[0]
    info = store.provenance(run_id, trial_id).get("clients") or {}
    targets = {c["client"]: c.get("target") or "—" for c in info.get("clients", [])}
    rows = []
    for c in sorted(set(summaries) | set(placed)):
        s, p = summaries.get(c), placed.get(c, {})
        cpu = p.get("cpu") or {}
        proc = "—"
        if cpu.get("proc_cores") is not None:
            if cpu.get("wait_cores") is not None:
                # used + waited for (runnable, no CPU free) of usable: a starved client wants CPU too
                proc = (f"{cpu['proc_cores']:.2f}+{cpu['wait_cores']:.2f}w/{cpu.get('usable') or '?'} "
                        f"({_pct(cpu.get('demand_frac'))})")  # fmt: skip
            else:
                proc = f"{cpu['proc_cores']:.2f}/{cpu.get('usable') or '?'} ({_pct(cpu.get('proc_frac'))})"
        rate = p.get("rate_asked") or 0

        def cell(key: str, s: dict[str, Any] | None = s) -> str:
            return format_cell(key, s[key] if s else None)

        rows.append(
            [
                str(c), str(p.get("host", "—")), targets.get(c, "—"), str(p.get("database", "—")),
                cell("threads"), cell("tps"),
                cell("p95"), cell("errors"), num(rate) if rate else "—",
                format_cell("tps", p.get("rate_achieved")) if rate else "—",
                proc, _pct(cpu.get("host_busy")), ", ".join(p.get("flags") or []) or "—",
            ]
        )  # fmt: skip
    return rows


def client_notes(store: Store, run_id: int, trial_id: int) -> list[str]:
    """Start skew and fairness of a trial with several clients, as sentences."""
    info = store.provenance(run_id, trial_id).get("clients") or {}
    notes = []
    skew, launch = info.get("start_skew_s"), info.get("launch_skew_s")
    if skew is not None:
        notes.append(
            f"Clients started measuring within {skew * 1000:.0f} ms of each other"
            + (f" (sysbench exec'd within {launch * 1000:.0f} ms)" if launch is not None else "")
            + "; their intervals are summed by index."
        )
    fair = info.get("fairness_tps")
    if fair:
        notes.append(
            f"Fairness of tps across {fair['n']} clients: min {fair['min']:,.1f}, max {fair['max']:,.1f}, "
            f"mean {fair['mean']:,.1f}, CV {fair['cv']:.1%}, Jain's index {fair['jain']:.3f} (1 = even)."
        )
    return notes


def saturation_lines(store: Store, run_id: int) -> list[tuple[int | None, str]]:
    """(trial id, line) per saturated client of the run, from its client_saturated events."""
    out = []
    for e in store.events(run_id):
        if e["kind"] == "client_saturated":
            out += [(e["trial_id"], w) for w in e["detail"].get("warnings", [])]
    return out


def _trial_seq(store: Store, run_id: int) -> dict[int, int]:
    return {t.id: t.seq for t in store.trials(run_id)}


def multi_client(store: Store, trial_id: int) -> bool:
    return len(trial_clients_of(store, trial_id)) > 1 or any(
        r["flags"] for r in store.trial_clients(trial_id)
    )


VERIFY_LATENCY_HEADER = [
    "trial", "workload", "clients", "ops", "ok", "p50 ms", "p95 ms", "p99 ms", "max ms", "p95 ms per client",
]  # fmt: skip


def verification_latency_rows(store: Store, run_id: int) -> list[list[str]]:
    """Per trial and verification workload: ok-operation latency from the clients' merged HDR
    histograms, and each client's own p95."""

    def ms(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}"

    rows = []
    for tr in store.trials(run_id):
        for w in workload_latency(store.ops(tr.id)):
            per = ", ".join(f"{c}: {v:.2f}" for c, v in w.client_p95_ms.items()) or "—"
            rows.append([str(tr.seq), w.workload, str(w.clients), str(w.ops), str(w.ok), ms(w.p50_ms),
                         ms(w.p95_ms), ms(w.p99_ms), ms(w.max_ms), per])  # fmt: skip
    return rows


def fault_windows(store: Store, run_id: int, trial_id: int) -> list[tuple[str, float, float]]:
    """(label, start, end) of every fault of a trial, from its start/end events (seconds since the
    load started). A fault without an end event (a killed run) ends at its last event."""
    starts: dict[int, tuple[str, float]] = {}
    ends: dict[int, float] = {}
    for e in store.events(run_id):
        if e["kind"] != "fault" or e["trial_id"] != trial_id or e["t"] is None:
            continue
        d = e["detail"]
        idx = int(d.get("index", 0))
        if d.get("phase") == "start":
            starts[idx] = (str(d.get("fault")), float(e["t"]))
        elif d.get("phase") in ("end", "applied"):
            ends[idx] = max(ends.get(idx, 0.0), float(e["t"]))
    return [(label, t0, ends.get(i, t0)) for i, (label, t0) in sorted(starts.items())]


def fault_rows(store: Store, run_id: int) -> list[list[str]]:
    """One row per fault event after the start: what was done and how it healed."""
    rows = []
    for e in store.events(run_id):
        d = e["detail"]
        if e["kind"] != "fault" or d.get("phase") == "start":
            continue
        what = "; ".join(f"{k}: {v}" for k, v in d.items() if k not in ("fault", "index", "phase"))
        rows.append(
            [f"{e['t']:.1f}" if e["t"] is not None else "-", str(d.get("fault")), str(d.get("phase")), what]
        )
    return rows


def verdict_rows(store: Store, run_id: int) -> list[dict[str, Any]]:
    out = []
    for v in store.verdicts(run_id):
        ev = v["evidence"]
        out.append({**v, "evidence": json.loads(ev) if isinstance(ev, str) else ev})
    return out


def availability_rows(verdicts: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Per fault and entry point, from the availability checker's evidence."""

    def f(x: Any) -> str:
        return "-" if x is None else f"{float(x):.2f}"

    rows = []
    for v in verdicts:
        if v["checker"] != "availability":
            continue
        for fault in v["evidence"].get("faults", []):
            for p in fault.get("paths", []):
                rows.append(
                    [
                        str(fault["fault"]["name"]),
                        str(p["process"]),
                        f(p["first_error_after"]),
                        f(p["unavailable"]),
                        f"{p['errors']}/{p['ops']}",
                        ", ".join(f"{k}:{n}" for k, n in p.get("errors_by_code", {}).items()) or "-",
                        f(p["max_latency"]),
                        f(fault.get("tps_recovered_after")),
                    ]
                )
    return rows


AVAILABILITY_HEADER = [
    "fault",
    "entry point",
    "first error after s",
    "unavailable s",
    "errors/ops",
    "errors by code",
    "max latency s",
    "tps back to 95 % after s",
]


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows
    ]


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "") -> str:
    out = f"<table class='{cls}'><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header)
    out += "</tr></thead><tbody>"
    out += "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return out + "</tbody></table>"


def render_markdown(store: Store, run_id: int) -> str:
    run = store.get_run(run_id)
    header, cells = table_cells(summary_rows(store, run_id))
    lines = [
        f"# Run {run.id}: {run.name or run.kind}",
        "",
        f"- status: {run.status}",
        f"- started: {run.started_at}",
        f"- ended: {run.ended_at or '—'}",
    ]
    if run.command_line:
        lines.append(f"- command: `{run.command_line}`")
    lines += ["", "## Summary", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    lines += [
        "",
        "Latency in ms. p95 from the merged latency histogram of all clients; tps and qps per second of",
        "measured time (warm-up excluded).",
    ]
    sat = saturation_lines(store, run_id)
    if sat:
        seqs = _trial_seq(store, run_id)
        lines += ["", f"> **Warning: {SATURATION_WARNING}.**", ">"]
        lines += [f"> - trial {seqs.get(t, '?') if t is not None else '?'}: {w}" for t, w in sat]
    for tr in store.trials(run_id):
        if not multi_client(store, tr.id):
            continue
        lines += ["", f"## Clients of trial {tr.seq} ({tr.workload})", ""]
        lines += _md_table(CLIENT_HEADER, client_rows(store, tr.id))
        notes = client_notes(store, run_id, tr.id)
        if notes:
            lines += [""] + notes
    verdicts = verdict_rows(store, run_id)
    if verdicts:
        lines += ["", "## Verdicts", ""]
        lines += _md_table(
            ["checker", "result", "summary"],
            [
                [
                    v["checker"],
                    v["result"] + (" (documented limitation)" if v["documented_limitation"] else ""),
                    v["summary"],
                ]
                for v in verdicts
            ],
        )
    avail = availability_rows(verdicts)
    if avail:
        lines += [
            "",
            "## Availability",
            "",
            "Per entry point: a fresh connection and a small write every 100 ms.",
            "",
        ]
        lines += _md_table(AVAILABILITY_HEADER, avail)
    vlat = verification_latency_rows(store, run_id)
    if vlat:
        note = "Successful operations; percentiles from the sum of the clients' HDR histograms."
        lines += ["", "## Verification latency", "", note, ""]
        lines += _md_table(VERIFY_LATENCY_HEADER, vlat)
    faults = fault_rows(store, run_id)
    if faults:
        lines += ["", "## Faults", ""]
        lines += _md_table(["t s", "fault", "phase", "detail"], faults)
    prov = store.provenance(run_id)
    if prov:
        lines += ["", "## Provenance", ""]
        lines += [f"- {k}: `{json.dumps(v, sort_keys=True)}`" for k, v in prov.items()]
    events = store.events(run_id)
    if events:
        lines += ["", "## Events", ""]
        lines += [
            f"- {e['at']} t={e['t']} {e['kind']} `{json.dumps(e['detail'], sort_keys=True)}`" for e in events
        ]
    return "\n".join(lines) + "\n"


def trial_figure(
    store: Store, trial_id: int, title: str, windows: Sequence[tuple[str, float, float]] = ()
) -> go.Figure:
    every = trial_series(store, trial_id)
    # an interval some client did not report would show as a drop that never happened
    pts = [p for p in every if p.complete]
    ts = [p.t for p in pts]
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, subplot_titles=("transactions / s", "latency (ms)")
    )
    clients = trial_clients_of(store, trial_id)
    fig.add_trace(
        go.Scatter(x=ts, y=[p.tps for p in pts], name="tps" if len(clients) < 2 else "tps, all clients",
                   mode="lines+markers"),
        row=1, col=1,
    )  # fmt: skip
    if len(clients) > 1:
        for c in clients:
            own = store.samples(trial_id, client=c)
            fig.add_trace(
                go.Scatter(x=[round(r["t"]) for r in own], y=[r["tps"] for r in own], name=f"client {c}",
                           mode="lines", line={"dash": "dot", "width": 1}),
                row=1, col=1,
            )  # fmt: skip
    fig.add_trace(go.Scatter(x=ts, y=[p.lat_avg for p in pts], name="avg", mode="lines"), row=2, col=1)
    fig.add_trace(go.Scatter(x=ts, y=[p.p95 for p in pts], name="p95", mode="lines"), row=2, col=1)
    fig.add_trace(go.Scatter(x=ts, y=[p.p99 for p in pts], name="p99", mode="lines"), row=2, col=1)
    for label, start, end in windows:
        # Shade each fault window on both panels so the dip lines up with its cause.
        fig.add_vrect(
            x0=start,
            x1=max(end, start + 0.2),
            fillcolor="red",
            opacity=0.15,
            line_width=0,
            annotation_text=label,
            annotation_position="top left",
            row="all",
            col=1,
        )
    fig.update_xaxes(title_text="seconds since start", row=2, col=1)
    fig.update_layout(title=title, height=520, margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return fig


def render_html(store: Store, run_id: int) -> str:
    """One self-contained HTML page: plotly.js is embedded once; no network needed to view it."""
    run = store.get_run(run_id)
    header, cells = table_cells(summary_rows(store, run_id))
    table = (
        "<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr></thead><tbody>"
    )
    table += "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)
    table += "</tbody></table>"
    plots = []
    first = True
    for tr in store.trials(run_id):
        fig = trial_figure(
            store, tr.id, f"trial {tr.seq}: {tr.workload}", fault_windows(store, run_id, tr.id)
        )
        plots.append(pio.to_html(fig, include_plotlyjs=first, full_html=False, config={"displaylogo": False}))
        first = False
    verdicts = verdict_rows(store, run_id)
    extra = ""
    sat = saturation_lines(store, run_id)
    if sat:
        seqs = _trial_seq(store, run_id)
        extra += (
            f"<div class='warn'><b>Warning: {html.escape(SATURATION_WARNING)}.</b><ul>"
            + "".join(f"<li>trial {seqs.get(t, '?') if t is not None else '?'}: {html.escape(w)}</li>"
                      for t, w in sat)
            + "</ul></div>"
        )  # fmt: skip
    for tr in store.trials(run_id):
        if not multi_client(store, tr.id):
            continue
        extra += f"<h2>Clients of trial {tr.seq} ({html.escape(tr.workload)})</h2>"
        extra += _html_table(CLIENT_HEADER, client_rows(store, tr.id), "clients")
        extra += "".join(f"<p>{html.escape(n)}</p>" for n in client_notes(store, run_id, tr.id))
    if verdicts:
        colors = {"PASS": "#2a2", "FAIL": "#c22", "UNKNOWN": "#b80"}
        extra += "<h2>Verdicts</h2><table class='verdicts'><thead><tr><th>checker</th><th>result</th>"
        extra += "<th>summary</th></tr></thead><tbody>"
        for v in verdicts:
            res = v["result"] + (" (documented limitation)" if v["documented_limitation"] else "")
            color = colors.get(v["result"], "#000")
            extra += (
                f"<tr><td>{html.escape(v['checker'])}</td>"
                f"<td style='color:{color}'><b>{html.escape(res)}</b></td>"
                f"<td style='text-align:left'>{html.escape(v['summary'])}</td></tr>"
            )
        extra += "</tbody></table>"
    avail = availability_rows(verdicts)
    if avail:
        extra += (
            "<h2>Availability</h2><p>Per entry point: a fresh connection and a small write every 100 ms.</p>"
        )
        extra += _html_table(AVAILABILITY_HEADER, avail, "availability")
    vlat = verification_latency_rows(store, run_id)
    if vlat:
        extra += (
            "<h2>Verification latency</h2><p>Successful operations; percentiles from the sum of the "
            "clients' HDR histograms.</p>" + _html_table(VERIFY_LATENCY_HEADER, vlat, "vlatency")
        )
    faults = fault_rows(store, run_id)
    if faults:
        extra += "<h2>Faults</h2>" + _html_table(["t s", "fault", "phase", "detail"], faults, "faults")
    title = html.escape(f"Run {run.id}: {run.name or run.kind}")
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#eee}"
        ".warn{border:2px solid #c60;background:#fff4e5;padding:0.5em 1em;margin:1em 0}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title><style>{style}</style>"
        f"</head><body><h1>{title}</h1><p>status {html.escape(run.status)}, started "
        f"{html.escape(run.started_at)}</p><h2>Summary</h2>{table}{extra}<h2>Per-second series</h2>"
        + "".join(plots)
        + "</body></html>"
    )


def write_report(store: Store, run_id: int, out_dir: Path) -> tuple[Path, Path]:
    """Write report-<run>.md and report-<run>.html into out_dir; return both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / f"report-{run_id}.md"
    page = out_dir / f"report-{run_id}.html"
    md.write_text(render_markdown(store, run_id))
    page.write_text(render_html(store, run_id))
    return md, page


def rows_as_dicts(rows: Sequence[SummaryRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
