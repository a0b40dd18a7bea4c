"""Telemetry in the reports: each trial's bottleneck, a table of every server's figures, and plots on
the time axis of the trial's tps and latency (same width and margins as analysis/plots.py draws
them, so the seconds line up), fault windows shaded."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from clusterbench.analysis import plots
from clusterbench.analysis.sections import Figure, Section, Table, table_section
from clusterbench.engines.base import METRICS
from clusterbench.store import Store
from clusterbench.telemetry.recorder import series_of
from clusterbench.telemetry.verdict import tier_of

Series = dict[tuple[str, str], list[tuple[float, float]]]

BOTTLENECK_HEADER = ["trial", "test", "bottleneck", "verdict"]

NODE_HEADER = [
    "server", "CPU cores", "CPU limit", "CPU % of limit", "RSS MiB", "sent Mbit/s", "received Mbit/s",
    "link % of limit", "disk read MiB/s", "disk write MiB/s",
]  # fmt: skip
ENGINE_HEADER = [
    "node", "flow control paused %", "recv queue max", "send queue max", "cert failures/s",
    "replicated KiB/s", "buffer pool reads/s", "row lock waits/s", "history max", "fsyncs/s",
]  # fmt: skip


def bottleneck_rows(store: Store, run_id: int) -> list[list[str]]:
    """trial, test, the verdict in a few words, and in a sentence; trials without one are left out."""
    rows = []
    for tr in store.trials(run_id):
        b = store.bottleneck(tr.id)
        if b is not None:
            rows.append([str(tr.seq), tr.workload, str(b.get("short") or b["resource"]), str(b["summary"])])
    return rows


def point_bottleneck(store: Store, trial_ids: Sequence[int]) -> str:
    """The repetitions' verdicts of one experiment point: the most common one with how many
    repetitions had it and their mean utilization, e.g. 'link n3 96% (3/3)'; '—' without any."""
    found = [b for b in (store.bottleneck(t) for t in trial_ids) if b is not None]
    if not found:
        return "—"
    kinds: dict[tuple[str, str], list[float]] = {}
    for b in found:
        kinds.setdefault((b["resource"], b.get("source") or ""), []).append(
            float(b.get("utilization") or 0.0)
        )
    (resource, source), utils = max(kinds.items(), key=lambda kv: len(kv[1]))
    what = resource if resource in ("none", "unknown") else f"{resource} {source}".strip()
    if resource not in ("none", "unknown"):
        what += f" {statistics.fmean(utils):.0%}"
    return f"{what} ({len(utils)}/{len(found)})"


def point_tier(store: Store, trial_ids: Sequence[int]) -> str:
    """The tier of what limited an experiment point (its repetitions' most common verdict): 'web
    node', 'front balancer', 'database node', 'machine'...; '—' when none was near its limit."""
    found = [b for b in (store.bottleneck(t) for t in trial_ids) if b is not None]
    counts: dict[tuple[str, str], int] = {}
    for b in found:
        k = (str(b["resource"]), str(b.get("source") or ""))
        counts[k] = counts.get(k, 0) + 1
    if not counts:
        return "—"
    resource, source = max(counts, key=lambda k: counts[k])
    return "—" if resource in ("none", "unknown") else (tier_of(source) or resource)


def _mean(xs: Sequence[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


Window = tuple[float, float]


def _vals(series: Series, src: str, metric: str, window: Window) -> list[float]:
    start, end = window
    return [v for t, v in series.get((src, metric), ()) if start < t <= end + 0.5]


def trial_window(store: Store, trial_id: int) -> Window:
    """The measured seconds of a trial on its samples' axis (see recorder.measured_window)."""
    rows = store.samples(trial_id)
    if not rows:
        return (0.0, 0.0)
    first = min(rows, key=lambda r: r["t"])
    return first["t"] - first["interval"], max(r["t"] for r in rows)


def _f(x: float | None, spec: str = ".2f") -> str:
    return "—" if x is None else format(x, spec)


def _roles(series: Series) -> list[str]:
    return sorted({s for s, _ in series if "/" not in s and not s.startswith("host")},
                  key=lambda r: (r[:1] != "n", len(r), r))  # fmt: skip


def node_rows(series: Series, end: Window) -> list[list[str]]:
    """Per server (node or balancer): its resources, means over the measured seconds."""
    rows = []
    for src in _roles(series):

        def m(metric: str, src: str = src) -> float | None:
            return _mean(_vals(series, src, metric, end))

        rows.append([
            src, _f(m("cpu_cores")), _f(m("cpu_limit_cores"), "g"), _f(_pct(m("cpu_util")), ".0f"),
            _f(m("rss_mib"), ".0f"), _f(m("net_tx_mbit")), _f(m("net_rx_mbit")),
            _f(_pct(m("net_util")), ".0f"), _f(m("io_read_mib_s")), _f(m("io_write_mib_s")),
        ])  # fmt: skip
    return rows


def engine_rows(series: Series, end: Window) -> list[list[str]]:
    """Per node the engine's figures (means; queues and history: the maximum); nodes without any
    (a balancer) are left out."""
    rows = []
    for src in _roles(series):
        if not any(s == src and m in ENGINE_METRICS for s, m in series):
            continue

        def m(metric: str, src: str = src) -> float | None:
            return _mean(_vals(series, src, metric, end))

        def mx(metric: str, src: str = src) -> float | None:
            v = _vals(series, src, metric, end)
            return max(v) if v else None

        rows.append([
            src, _f(_pct(m("flow_control_paused")), ".1f"), _f(mx("recv_queue"), ".0f"),
            _f(mx("send_queue"), ".0f"), _f(m("cert_failures_s")), _f(m("replicated_kib_s"), ".1f"),
            _f(m("buffer_pool_reads_s"), ".1f"), _f(m("row_lock_waits_s")), _f(mx("history_length"), ".0f"),
            _f(m("fsyncs_s"), ".1f"),
        ])  # fmt: skip
    return rows


ENGINE_METRICS = {m.stored for m in METRICS.values()}


def _pct(x: float | None) -> float | None:
    return None if x is None else 100 * x


def host_rows(series: Series, end: Window) -> list[list[str]]:
    """Machines (CPU busy), disks (utilization, operations; a throttled one against its limit) and
    the balancers' backends."""
    rows = []
    sources = sorted({s for s, _ in series})
    for src in sources:
        busy = _mean(_vals(series, src, "host_cpu_busy", end))
        if busy is not None:
            cpus = _mean(_vals(series, src, "host_cpus", end))
            probe = _mean(_vals(series, src, "probe_cpu_cores", end))
            rows.append([src, f"{_f(cpus, 'g')} CPU(s) busy {_f(_pct(busy), '.0f')} %",
                         f"the telemetry probe used {_f(_pct(probe), '.2f')} % of one CPU"])  # fmt: skip
    for src in sources:
        util = _mean(_vals(series, src, "disk_util", end))
        if util is None:
            continue
        r = _mean(_vals(series, src, "disk_read_iops", end))
        w = _mean(_vals(series, src, "disk_write_iops", end))
        rmb = _mean(_vals(series, src, "disk_read_mib_s", end))
        wmb = _mean(_vals(series, src, "disk_write_mib_s", end))
        ops = f"{_f(r, '.0f')} reads/s ({_f(rmb)} MiB/s), {_f(w, '.0f')} writes/s ({_f(wmb)} MiB/s)"
        held = _mean(_vals(series, src, "disk_limit_mib_s", end))
        if held:
            ops += f"; writes held to {_f(held)} MiB/s"
        rows.append([src, f"disk busy {_f(_pct(util), '.0f')} %", ops])
    for src in sources:
        sess = _vals(series, src, "sessions", end)
        if not sess:
            continue
        up = _vals(series, src, "up", end)
        errs = _mean(_vals(series, src, "conn_errors_s", end))
        down = sum(1 for v in up if v < 0.5)
        what = f"sessions mean {_f(_mean(sess), '.1f')}, max {_f(max(sess), '.0f')}"
        state = f"DOWN {down} s" if down else "UP throughout"
        rows.append([src, what, f"{state}; connection errors/s {_f(errs)}"])
    return rows


# ---- plots ---------------------------------------------------------------------------------------


def _panel(
    title: str,
    lines: Sequence[tuple[str, list[float], list[float]]],
    t_axis: Sequence[float],
    windows: Sequence[plots.Window],
    *,
    unit_max: float | None = None,
    dashed: Sequence[tuple[str, list[float], list[float]]] = (),
) -> str:
    matplotlib = plots._matplotlib()  # imported on first use (see there)
    from matplotlib.ticker import MaxNLocator

    with matplotlib.rc_context(plots.STYLE):
        fig = plots._figure(2.2)
        ax = fig.add_subplot()
        ax.set_title(title, loc="left")
        for name, ts, vs in lines:
            ax.plot(ts, vs, lw=1.2, label=name)
        for name, ts, vs in dashed:
            ax.plot(ts, vs, lw=1.0, ls="--", color="#7f7f7f", label=name)
        top = max([v for _, _, vs in [*lines, *dashed] for v in vs], default=0.0)
        ax.set_ylim(0, max(top * 1.12, unit_max or 0.0, 1e-9) if top > 0 or unit_max else 1)
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
        plots._shade(ax, windows, label=False)
        plots._xaxis(ax, t_axis)
        if lines or dashed:
            ax.legend(loc="best", ncols=min(6, len(lines) + len(dashed)))
        return plots._svg(fig)


def _lines(
    series: Series, metric: str, end: float, scale: float = 1.0
) -> list[tuple[str, list[float], list[float]]]:
    out = []
    for (src, m), pts in sorted(series.items(), key=lambda kv: (len(kv[0][0]), kv[0][0])):
        if m != metric or src.startswith("host"):
            continue
        kept = [(t, v * scale) for t, v in pts if 0 <= t <= end + 0.5]
        if kept:
            out.append((src, [t for t, _ in kept], [v for _, v in kept]))
    return out


def telemetry_svgs(
    series: Series, t_axis: Sequence[float], windows: Sequence[plots.Window]
) -> list[tuple[str, str]]:
    """(title, svg) per panel: CPU and link as % of each one's limit, flow control, disks."""
    if not series or not t_axis:
        return []
    end = max(t_axis)
    out = []
    cpu = [ln for ln in _lines(series, "cpu_util", end, 100) if ln[0].startswith("n")]
    host = [(f"{src} (all CPUs)", [t for t, _ in pts if 0 <= t <= end + 0.5],
             [100 * v for t, v in pts if 0 <= t <= end + 0.5])
            for (src, m), pts in series.items() if m == "host_cpu_busy"]  # fmt: skip
    if cpu:
        out.append(("CPU", _panel("CPU, % of each server's limit (quota, else the CPUs it may use)", cpu,
                                  t_axis, windows, unit_max=100, dashed=host)))  # fmt: skip
    link = [ln for ln in _lines(series, "net_util", end, 100) if ln[0].startswith("n")]
    if link:
        out.append(("link", _panel("link, % of its limit (the busier direction)", link, t_axis, windows,
                                   unit_max=100)))  # fmt: skip
    else:
        mbit = [
            (src, ts, [a + b for a, b in zip(vs, rx, strict=False)])
            for (src, ts, vs), (_, _, rx) in zip(
                _lines(series, "net_tx_mbit", end), _lines(series, "net_rx_mbit", end), strict=False
            )
            if src.startswith("n")
        ]
        if mbit:
            out.append(("link", _panel("link, Mbit/s sent + received (no limit set)", mbit, t_axis, windows)))
    fc = _lines(series, "flow_control_paused", end, 100)
    if any(v > 0 for _, _, vs in fc for v in vs):  # all zero: the table says so
        out.append(("flow control", _panel("replication paused by flow control, % of the time", fc, t_axis,
                                           windows, unit_max=5)))  # fmt: skip
    lag = _lines(series, "recv_queue", end)
    if any(v > 0 for _, _, vs in lag for v in vs):
        out.append(("replication lag", _panel("replication lag: transactions received, waiting to be applied",
                                              lag, t_axis, windows)))  # fmt: skip
    conflicts = _lines(series, "cert_failures_s", end)
    if any(v > 0 for _, _, vs in conflicts for v in vs):
        title = "certification conflicts: local transactions rolled back per second"
        out.append(("certification conflicts", _panel(title, conflicts, t_axis, windows)))
    disks = [
        (src, [t for t, _ in pts if 0 <= t <= end + 0.5], [100 * v for t, v in pts if 0 <= t <= end + 0.5])
        for (src, m), pts in sorted(series.items())
        if m == "disk_util"
    ]
    if any(v >= 25 for _, _, vs in disks for v in vs):  # a mostly idle disk: the table says so
        out.append(("disk", _panel("disk busy, % of the time", disks, t_axis, windows, unit_max=100)))
    return out


# ---- the report's sections -------------------------------------------------------------------------


INTRO = (
    "Sampled every second beside the load (docs/telemetry.md): each server process's CPU time against "
    "its limit (its cgroup quota, else the CPUs it may use), memory, disk bytes; each node's link, sent "
    "and received, against its configured limit (tbf); the machine's CPUs and disks; the engine's "
    "figures (flow control, queues, certification failures, replicated bytes, InnoDB reads from disk, "
    "lock waits, history length); HAProxy's view of each backend. Means over the measured seconds; "
    "queues and history: the maximum."
)


def busiest_per_second(store: Store, trial_id: int) -> tuple[list[float], list[float]]:
    """Per second, the highest share of its limit any node's CPU or link reached (%), for the
    experiment report's small multiples: one line per trial on the tps panels' time axis."""
    per: dict[float, float] = {}
    for metric in ("cpu_util", "net_util"):
        for r in store.telemetry(trial_id, metric):
            if r["source"].startswith("n"):
                k = float(round(r["t"]))
                per[k] = max(per.get(k, 0.0), 100 * r["value"])
    ts = sorted(per)
    return ts, [per[t] for t in ts]


def trial_traces(store: Store, trial_id: int) -> dict[str, list[list[float]]]:
    """For the experiment report's per-trial plot: per node, its CPU and link as % of their limits
    and flow control as % of the time, each as [[t...], [value...]]."""
    out: dict[str, list[list[float]]] = {}
    for (src, metric), pts in sorted(series_of(store.telemetry(trial_id)).items()):
        label = {"cpu_util": "cpu", "net_util": "link", "flow_control_paused": "fc"}.get(metric)
        if label is None or not src.startswith("n"):
            continue
        out[f"{src} {label} %"] = [[round(t, 2) for t, _ in pts], [round(100 * v, 1) for _, v in pts]]
    return out


def trial_tables(
    store: Store, trial_id: int, end: Window
) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    series = series_of(store.telemetry(trial_id))
    return node_rows(series, end), engine_rows(series, end), host_rows(series, end)


def telemetry_figures(
    store: Store, trial_id: int, t_axis: Sequence[float], windows: Sequence[Any]
) -> list[Any]:
    """The report's Figure objects for one trial's telemetry (after its tps and latency)."""
    series = series_of(store.telemetry(trial_id))
    return [Figure("", svg) for _, svg in telemetry_svgs(series, t_axis, windows)]


def bottleneck_section(store: Store, run_id: int) -> Any | None:
    """'Bottlenecks': a row per trial; None when no trial has a verdict."""
    return table_section(
        "bottlenecks", "Bottlenecks",
        "Per trial, the resource nearest its limit over the measured seconds: a server's CPU (of its "
        "quota, else the CPUs it may use), its link (of the configured rate), a disk, the load client "
        "(saturated: its tps is a floor for the cluster's capacity), the machine's CPUs, or flow "
        "control; 'none' when nothing was within 90 % of its limit (flow control: 25 % paused).",
        Table(BOTTLENECK_HEADER, bottleneck_rows(store, run_id), ["r", "l", "l", "l"]),
    )  # fmt: skip


def telemetry_section(store: Store, run_id: int, trials: Sequence[Any]) -> Any | None:
    """'Server telemetry': per trial a table per server and one per machine; None without telemetry."""
    tables = []
    for tr in trials:
        nodes, engine, hosts = trial_tables(store, tr.id, trial_window(store, tr.id))
        if nodes:
            t = Table(NODE_HEADER, nodes, ["l"] + ["r"] * (len(NODE_HEADER) - 1))
            t.caption = f"Trial {tr.seq} ({tr.workload}): servers"
            tables.append(t)
        if engine:
            t = Table(ENGINE_HEADER, engine, ["l"] + ["r"] * (len(ENGINE_HEADER) - 1))
            t.caption = f"Trial {tr.seq} ({tr.workload}): the engine's figures"
            tables.append(t)
        if hosts:
            t = Table(["where", "figure", "detail"], hosts, ["l", "l", "l"])
            t.caption = f"Trial {tr.seq} ({tr.workload}): machines, disks and balancer backends"
            tables.append(t)
    if not tables:
        return None
    sec = Section("telemetry", "Server telemetry")
    sec.intro.append(INTRO + " The plots are under each trial's tps and latency in 'Per-second series'.")
    sec.tables += tables
    return sec
