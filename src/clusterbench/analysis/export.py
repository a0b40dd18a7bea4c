"""The summary export: one row per trial (and so per test), the numbers people copy from the summary
table, with the trial's parameters beside them and the unit in every column name. The per-second
export (store/export.py samples_csv) is its companion; docs/workloads.md lists the columns of both."""

from __future__ import annotations

import csv
import io
from typing import Any

from clusterbench.analysis.report import summary_rows
from clusterbench.store import Store
from clusterbench.store.export import FORMAT_VERSION

# The columns in order; docs/workloads.md says what each one is.
SUMMARY_COLUMNS: tuple[str, ...] = (
    "run_id", "run_kind", "run_name", "run_tags", "engine", "cluster", "run_verdict", "trial", "test",
    "status", "from_samples",
    "threads", "clients", "duration_s", "warmup_s", "rate_tps_per_client", "tables", "table_size",
    "rand_type", "target", "part", "point", "rep",
    "tps", "reads_per_s", "writes_per_s", "other_per_s", "queries_per_s",
    "lat_min_ms", "lat_avg_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms",
    "errors", "errors_per_s", "reconnects", "measured_s", "format_version",
)  # fmt: skip


def summary_records(store: Store, run_id: int) -> list[dict[str, Any]]:
    """One dict per trial with the SUMMARY_COLUMNS keys (None where unknown)."""
    from clusterbench.analysis.outcome import cluster_of, engine_of, run_verdicts

    run = store.get_run(run_id)
    tags = ",".join(store.tags(run_id))
    prov = store.provenance(run_id)
    engine, cluster = engine_of(store, run_id, prov), cluster_of(prov)
    verdict = run_verdicts(store, run_id).result
    params = {t.seq: t.params for t in store.trials(run_id)}
    out = []
    for r in summary_rows(store, run_id):
        raw = params.get(r.trial, {})
        # an experiment trial keeps its sysbench options under "options" and its rate as effective_rate
        p = {**(raw.get("options") or {}), **raw}
        if "effective_rate" in raw:
            p["rate"] = raw["effective_rate"]
        endpoint = p.get("endpoint")
        targets = p.get("client_targets")
        out.append({
            "run_id": run_id, "run_kind": run.kind, "run_name": run.name, "run_tags": tags, "engine": engine,
            "cluster": cluster, "run_verdict": verdict,
            "trial": r.trial, "test": r.workload, "status": r.status, "from_samples": r.from_samples,
            "threads": r.threads, "clients": p.get("clients"), "duration_s": p.get("time", p.get("duration")),
            "warmup_s": p.get("warmup"), "rate_tps_per_client": p.get("rate"), "tables": p.get("tables"),
            "table_size": p.get("table_size"), "rand_type": p.get("rand_type"),
            "target": ";".join(targets) if targets else endpoint if endpoint else p.get("target"),
            "part": p.get("part"), "point": p.get("point_label", p.get("point")), "rep": p.get("rep"),
            "tps": r.tps, "reads_per_s": r.qps_read, "writes_per_s": r.qps_write, "other_per_s": r.qps_other,
            "queries_per_s": r.qps_total, "lat_min_ms": r.lat_min, "lat_avg_ms": r.lat_avg,
            "lat_p95_ms": r.p95, "lat_p99_ms": r.p99, "lat_max_ms": r.lat_max, "errors": r.errors,
            "errors_per_s": r.errors_per_s, "reconnects": r.reconnects,
            "measured_s": r.duration, "format_version": FORMAT_VERSION,
        })  # fmt: skip
    return out


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, float):
        return round(v, 3)
    if isinstance(v, dict | list):
        return str(v)
    return v


def summary_csv(store: Store, run_ids: list[int]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SUMMARY_COLUMNS)
    for run_id in run_ids:
        for rec in summary_records(store, run_id):
            w.writerow([_cell(rec[c]) for c in SUMMARY_COLUMNS])
    return buf.getvalue()


def run_json(store: Store, run_id: int) -> dict[str, Any]:
    """`results export --format json`: the whole run with its format version, what it ran on and
    how it came out (the verdicts with their evidence) first."""
    from clusterbench.analysis.outcome import FORMAT_VERSION, overview
    from clusterbench.store.export import run_data

    ov = overview(store, run_id)
    return {"format": "clusterbench-run", "format_version": FORMAT_VERSION, **ov.to_json(),
            "verdicts": ov.verdicts.to_json(), **run_data(store, run_id)}  # fmt: skip
