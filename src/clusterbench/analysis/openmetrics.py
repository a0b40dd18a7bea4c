"""A run in the OpenMetrics text format, from the store alone: `results export --format openmetrics`
and the live `/metrics` endpoint (`--metrics-port`) render the same families, the endpoint while
the run is being written (its last second and the servers' latest telemetry then say "now").

The text is kept to what both OpenMetrics and Prometheus' classic text parser accept (promtool
checks it in the tests): gauges and summaries only, base units (seconds) in the names with their
# UNIT lines, no sample timestamps, and `# EOF` at the end. Every sample carries `run` (and `trial`,
`workload` where it is a trial's), so several runs can be scraped into one Prometheus.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from clusterbench.store import Store

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
RESULTS = ("PASS", "FAIL", "UNKNOWN")
QUANTILES = (("0.5", "p50"), ("0.95", "p95"), ("0.99", "p99"))
PREFIX = "clusterbench_"


def _escape(v: Any) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: dict[str, Any]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _value(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return repr(float(x))


class Family:
    """One metric family: its metadata and samples, written together as the format requires."""

    def __init__(self, name: str, kind: str, help_: str, unit: str = "") -> None:
        self.name, self.kind, self.help, self.unit = PREFIX + name, kind, help_, unit
        self.samples: list[tuple[str, dict[str, Any], float]] = []

    def add(self, labels: dict[str, Any], value: float | None, suffix: str = "") -> None:
        if value is not None:
            self.samples.append((self.name + suffix, labels, float(value)))

    def text(self) -> list[str]:
        if not self.samples:
            return []
        out = [f"# TYPE {self.name} {self.kind}"]
        if self.unit:
            out.append(f"# UNIT {self.name} {self.unit}")
        out.append(f"# HELP {self.name} {self.help}")
        out += [f"{n}{_labels(lb)} {_value(v)}" for n, lb, v in self.samples]
        return out


def _families() -> dict[str, Family]:
    fams = [
        Family("run_info", "gauge",
               "A run: its kind, name, engine, cluster, status and export format (always 1)."),
        Family("run_verdict", "gauge", "The run's combined verdict: 1 for its result, 0 for the others."),
        Family("transactions_per_second", "gauge", "Transactions per second of a trial's measured time."),
        Family("queries_per_second", "gauge", "Queries per second of a trial's measured time, by kind."),
        Family("latency_seconds", "summary", "Transaction latency over a trial's measured time.", "seconds"),
        Family("errors", "gauge", "Ignored errors of a trial's load (a count)."),
        Family("reconnects", "gauge", "Reconnects of a trial's load (a count)."),
        Family("measured_seconds", "gauge", "Seconds a trial measured.", "seconds"),
        Family("last_second_transactions_per_second", "gauge",
               "Transactions per second in a trial's last stored second (all clients)."),
        Family("last_second_latency_seconds", "summary",
               "Transaction latency in a trial's last stored second (all clients).", "seconds"),
        Family("check_result", "gauge",
               "A checker's verdict on a trial: 1 for its result, 0 for the others."),
        Family("bottleneck_utilization_ratio", "gauge",
               "Utilization of the resource nearest its limit in a trial (1 = at its limit).", "ratio"),
        Family("telemetry_value", "gauge",
               "A server figure's latest value in a trial (the unit label says what it counts)."),
    ]  # fmt: skip
    return {f.name.removeprefix(PREFIX): f for f in fams}


def render(store: Store, run_ids: Sequence[int]) -> str:
    """The runs' families as OpenMetrics text, ending with # EOF."""
    fams = _families()
    for run_id in run_ids:
        _run(store, run_id, fams)
    lines = [ln for f in fams.values() for ln in f.text()]
    return "\n".join([*lines, "# EOF"]) + "\n"


def _run(store: Store, run_id: int, fams: dict[str, Family]) -> None:
    from clusterbench.analysis.outcome import FORMAT_VERSION, overview

    run = store.get_run(run_id)
    ov = overview(store, run_id)
    fams["run_info"].add({"run": run_id, "kind": run.kind, "name": run.name, "engine": ov.engine,
                          "cluster": ov.cluster, "status": run.status,
                          "format_version": FORMAT_VERSION}, 1)  # fmt: skip
    if ov.verdicts.result is not None:
        for r in RESULTS:
            fams["run_verdict"].add({"run": run_id, "result": r}, int(ov.verdicts.result == r))
    for tr in store.trials(run_id):
        lb = {"run": run_id, "trial": tr.seq, "workload": tr.workload}
        _summary(store.summary(tr.id), lb, fams)
        _last_second(store, tr.id, lb, fams)
        for v in store.verdicts(run_id, tr.id):
            for r in RESULTS:
                fams["check_result"].add({**lb, "checker": v["checker"], "result": r}, int(v["result"] == r))
        neck = store.bottleneck(tr.id)
        if neck is not None and neck.get("utilization") is not None:
            util = fams["bottleneck_utilization_ratio"]
            util.add({**lb, "resource": neck["resource"]}, neck["utilization"])
        _telemetry(store, tr.id, lb, fams)


def _summary(s: dict[str, Any] | None, lb: dict[str, Any], fams: dict[str, Family]) -> None:
    if s is None:
        return
    fams["transactions_per_second"].add(lb, s["tps"])
    for kind in ("read", "write", "other"):
        fams["queries_per_second"].add({**lb, "kind": kind}, s[f"qps_{kind}"])
    lat = fams["latency_seconds"]
    for q, key in QUANTILES:
        lat.add({**lb, "quantile": q}, None if s[key] is None else s[key] / 1000)
    lat.add(lb, s["lat_avg"] * s["events"] / 1000, "_sum")
    lat.add(lb, s["events"], "_count")
    fams["errors"].add(lb, s["errors"])
    fams["reconnects"].add(lb, s["reconnects"])
    fams["measured_seconds"].add(lb, s["duration"])


def _last_second(store: Store, trial_id: int, lb: dict[str, Any], fams: dict[str, Family]) -> None:
    from clusterbench.analysis.report import trial_series

    series = [p for p in trial_series(store, trial_id) if p.complete]
    if not series:
        return
    last = series[-1]
    fams["last_second_transactions_per_second"].add(lb, last.tps)
    lat = fams["last_second_latency_seconds"]
    for q, key in QUANTILES[1:]:
        v = getattr(last, key)
        lat.add({**lb, "quantile": q}, None if v is None else v / 1000)
    events = round(last.tps)  # a second's events (its rate over about one second)
    lat.add(lb, 0.0 if last.lat_avg is None else last.lat_avg * events / 1000, "_sum")
    lat.add(lb, events, "_count")


def _telemetry(store: Store, trial_id: int, lb: dict[str, Any], fams: dict[str, Family]) -> None:
    from clusterbench.telemetry.rates import METRIC_UNITS

    latest: dict[tuple[str, str], float] = {}
    for r in _rows(store, trial_id):
        latest[(r["source"], r["metric"])] = r["value"]
    for (source, metric), value in sorted(latest.items()):
        unit = METRIC_UNITS.get(metric, "")
        fams["telemetry_value"].add({**lb, "source": source, "metric": metric, "unit": unit}, value)


def _rows(store: Store, trial_id: int) -> Iterable[dict[str, Any]]:
    return store.telemetry(trial_id)
