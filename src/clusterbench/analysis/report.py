"""The numbers of a run's report, from the store alone: the summary rows, per-second series, per-client
rows, verdicts, faults. analysis/document.py arranges them into the report's sections.

The summary table follows sysbench's own end-of-run layout (tps; qps read/write/other; latency
min/avg/max/p95; errors; reconnects) with one row per trial. Per-second series add up the
clients of a trial; their latency percentiles come from merged interval histograms, never from
averaged percentiles.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from clusterbench.store.store import Store, TrialRow
from clusterbench.verify.latency import workload_latency
from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram
from clusterbench.workloads.merge import merge_intervals
from clusterbench.workloads.parse import Sample
from clusterbench.workloads.saturation import WARNING, num

SATURATION_WARNING = WARNING


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
    # no summary was stored (the load failed or was interrupted): the row adds up the per-second
    # samples that were measured before it stopped
    from_samples: bool = False
    seconds: int = 0  # measured seconds (intervals) stored for the trial

    @property
    def errors_per_s(self) -> float | None:
        if self.errors is None or not self.duration:
            return None
        return self.errors / self.duration


# (attribute, header with its unit, alignment): sysbench's end-of-run layout with p99 beside p95.
# The same columns in the terminal, the Markdown and the HTML report.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("trial", "trial", "r"),
    ("workload", "test", "l"),
    ("threads", "threads", "r"),
    ("tps", "tps", "r"),
    ("qps_read", "reads/s", "r"),
    ("qps_write", "writes/s", "r"),
    ("qps_other", "other/s", "r"),
    ("lat_min", "min ms", "r"),
    ("lat_avg", "avg ms", "r"),
    ("p95", "p95 ms", "r"),
    ("p99", "p99 ms", "r"),
    ("lat_max", "max ms", "r"),
    ("errors", "errors", "r"),
    ("errors_per_s", "errors/s", "r"),
    ("reconnects", "reconnects", "r"),
)


def measured_row(store: Store, run_id: int, tr: Any) -> SummaryRow | None:
    """A trial without a stored summary (its load failed or was interrupted), summarized from the
    per-second samples it stored: rates are the counts over the measured time (as the summary's
    are), latencies come from the sum of the samples' histograms, counts add up. None when it
    stored no sample."""
    samples = trial_samples(store, tr.id)
    if not samples:
        return None
    series = merge_intervals(samples, trial_clients_of(store, tr.id) or None)
    n = len(series)
    hist = None
    for smp in samples:
        if smp.hist is not None:
            hist = smp.hist if hist is None else hist.merge(smp.hist)

    seconds = sum(m.sample.interval for m in series)

    def mean(f: Any) -> float:
        return sum(f(m.sample) * m.sample.interval for m in series) / seconds if seconds else 0.0

    threads = max(m.sample.threads for m in series)
    qr, qw, qo = mean(lambda x: x.qps_read), mean(lambda x: x.qps_write), mean(lambda x: x.qps_other)
    return SummaryRow(
        run_id=run_id, trial=tr.seq, workload=tr.workload, status=tr.status, threads=threads,
        duration=seconds, tps=mean(lambda x: x.tps), qps_read=qr, qps_write=qw, qps_other=qo,
        qps_total=qr + qw + qo, lat_min=hist.min_ms() if hist else None,
        lat_avg=hist.mean_ms() if hist else None, lat_max=hist.max_ms() if hist else None,
        p95=hist.percentile(95) if hist else None, p99=hist.percentile(99) if hist else None,
        errors=sum(m.sample.errors for m in series), reconnects=sum(m.sample.reconnects for m in series),
        from_samples=True, seconds=n,
    )  # fmt: skip


def summary_rows(store: Store, run_id: int) -> list[SummaryRow]:
    """One row per trial (all clients merged), as data: the CLI prints these with rich. A trial
    whose load failed before its summary still gets the numbers of the seconds it measured."""
    rows = []
    for tr in store.trials(run_id):
        s = store.summary(tr.id)
        seconds = store.conn.execute(
            "SELECT COUNT(DISTINCT CAST(ROUND(t) AS INTEGER)) FROM samples WHERE trial_id = ?", (tr.id,)
        ).fetchone()[0]
        if s is None:
            measured = measured_row(store, run_id, tr)
            if measured is not None:
                rows.append(measured)
                continue

        def g(key: str, s: dict[str, Any] | None = s) -> Any:
            return None if s is None else s[key]

        qps = None if s is None else s["qps_read"] + s["qps_write"] + s["qps_other"]
        rows.append(
            SummaryRow(
                run_id=run_id, trial=tr.seq, workload=tr.workload, status=tr.status,
                threads=g("threads"), duration=g("duration"), tps=g("tps"), qps_read=g("qps_read"),
                qps_write=g("qps_write"), qps_other=g("qps_other"), qps_total=qps, lat_min=g("lat_min"),
                lat_avg=g("lat_avg"), lat_max=g("lat_max"), p95=g("p95"), p99=g("p99"),
                errors=g("errors"), reconnects=g("reconnects"), seconds=int(seconds),
            )
        )  # fmt: skip
    return rows


def format_cell(key: str, value: Any) -> str:
    if value is None:
        return "—"
    if key in ("tps", "qps_read", "qps_write", "qps_other", "qps_total", "errors_per_s"):
        return f"{value:,.2f}"
    if key.startswith("lat") or key in ("p95", "p99"):
        return f"{value:.2f}"
    return str(value)


def test_label(r: SummaryRow) -> str:
    """The test, with what went wrong: 'oltp_insert (failed, 3 s measured)'."""
    if r.status == "completed":
        return r.workload
    if r.from_samples:
        return f"{r.workload} ({r.status}, {r.seconds} s measured)"
    return f"{r.workload} ({r.status})"


def table_cells(rows: Sequence[SummaryRow]) -> tuple[list[str], list[list[str]]]:
    """Header and formatted cells of the summary table (shared by Markdown, HTML and the CLI)."""
    header = [title for _, title, _ in COLUMNS]
    cells = [
        [test_label(r) if k == "workload" else format_cell(k, getattr(r, k)) for k, _, _ in COLUMNS]
        for r in rows
    ]
    return header, cells


def table_align() -> list[str]:
    return [a for _, _, a in COLUMNS]


def summary_parts() -> list[tuple[str, list[int]]]:
    """The summary as two tables that each fit 800 px (or 100 terminal columns): (caption, column
    indexes into COLUMNS); both start with trial and test."""
    lat = [i for i, (_, h, _) in enumerate(COLUMNS) if h.endswith(" ms")]
    rest = [i for i in range(len(COLUMNS)) if i not in lat]
    return [("throughput and errors", rest), ("latency per transaction", [0, 1, *lat])]


@dataclass(frozen=True)
class SummaryPart:
    """One of the summary's tables (see summary_parts), its cells formatted."""

    caption: str
    header: list[str]
    rows: list[list[str]]
    align: list[str]


def summary_tables(rows: Sequence[SummaryRow]) -> list[SummaryPart]:
    """The summary rows as the tables the terminal, the Markdown and the HTML report all show."""
    header, cells = table_cells(rows)
    align = table_align()
    return [
        SummaryPart(caption, [header[i] for i in cols], [[r[i] for i in cols] for r in cells],
                    [align[i] for i in cols])
        for caption, cols in summary_parts()
    ]  # fmt: skip


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


def saturation_lines(store: Store, run_id: int) -> list[tuple[str, str]]:
    """(trial number, '?' when unknown; line) per saturated client of the run, from its
    client_saturated events."""
    seqs = _trial_seq(store, run_id)
    out = []
    for e in store.events(run_id):
        if e["kind"] == "client_saturated":
            where = "?" if e["trial_id"] is None else str(seqs.get(e["trial_id"], "?"))
            out += [(where, w) for w in e["detail"].get("warnings", [])]
    return out


def _trial_seq(store: Store, run_id: int) -> dict[int, int]:
    return {t.id: t.seq for t in store.trials(run_id)}


def multi_client(store: Store, trial_id: int) -> bool:
    return len(trial_clients_of(store, trial_id)) > 1 or any(
        r["flags"] for r in store.trial_clients(trial_id)
    )


@dataclass(frozen=True)
class ClientTable:
    """A trial's per-client rows (client_rows) and its notes (client_notes)."""

    trial: TrialRow
    rows: list[list[str]]
    notes: list[str]


def client_tables(store: Store, run_id: int) -> list[ClientTable]:
    """The per-client tables of the run: one per trial with several clients (or a flagged one)."""
    return [
        ClientTable(tr, client_rows(store, tr.id), client_notes(store, run_id, tr.id))
        for tr in store.trials(run_id)
        if multi_client(store, tr.id)
    ]


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


def rows_as_dicts(rows: Sequence[SummaryRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
