"""A run as open data: the whole run as JSON and its per-second samples as CSV, with one naming
scheme (the unit in every name that has one: t_s, tps, reads_per_s, lat_p95_ms) and a format
version in every file (docs/results.md; the JSON Schema in schemas/)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from clusterbench.store.store import Store

# Bumped when a field is renamed or changes meaning.
FORMAT_VERSION = 2

# stored column -> exported name
NAMES: dict[str, str] = {
    "t": "t_s", "interval": "interval_s", "duration": "duration_s", "qps_read": "reads_per_s",
    "qps_write": "writes_per_s", "qps_other": "other_per_s", "lat_min": "lat_min_ms", "lat_avg": "lat_avg_ms",
    "lat_max": "lat_max_ms", "lat_pct": "lat_pct_ms", "p50": "lat_p50_ms", "p95": "lat_p95_ms",
    "p99": "lat_p99_ms", "p999": "lat_p999_ms",
}  # fmt: skip

SAMPLE_CSV_COLUMNS: tuple[str, ...] = (
    "run_id", "trial_seq", "workload", "client", "t_s", "interval_s", "threads", "events", "tps",
    "reads_per_s", "writes_per_s", "other_per_s", "lat_min_ms", "lat_avg_ms", "lat_max_ms", "percentile",
    "lat_pct_ms", "lat_p50_ms", "lat_p95_ms", "lat_p99_ms", "lat_p999_ms", "errors", "reconnects",
    "format_version",
)  # fmt: skip


def named(row: dict[str, Any]) -> dict[str, Any]:
    """A stored sample or summary under its exported names."""
    return {NAMES.get(k, k): v for k, v in row.items()}


def run_data(store: Store, run_id: int) -> dict[str, Any]:
    """Everything stored of a run, its trials with summaries, samples, histogram, clients,
    provenance, bottleneck, telemetry and verdicts."""
    run = store.get_run(run_id)
    trials = []
    for tr in store.trials(run_id):
        trials.append({
            **tr.__dict__,
            "summaries": [named(r) for r in store.summaries(tr.id)],
            "samples": [named(r) for r in store.samples(tr.id)],
            "histogram": [{"value_ms": v, "le_ms": le, "count": c} for v, le, c in store.histogram(tr.id)],
            "clients": store.trial_clients(tr.id),
            "provenance": store.provenance(run_id, tr.id),
            "bottleneck": store.bottleneck(tr.id),
            "telemetry": [{"t_s": r["t"], "wall_s": r["wall"], "source": r["source"], "metric": r["metric"],
                           "value": r["value"]} for r in store.telemetry(tr.id)],
            "verdicts": store.verdicts(run_id, tr.id),
        })  # fmt: skip
    return {
        "run": {**run.__dict__, "tags": store.tags(run_id)},
        "provenance": store.provenance(run_id),
        "events": store.events(run_id),
        "trials": trials,
    }


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """`header` and then `rows` as CSV, lines ending in \\n."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue()


def samples_csv(store: Store, run_id: int) -> str:
    """Every sample of the run, one row each, with its trial's seq and workload."""
    store.get_run(run_id)

    def rows() -> Iterator[list[Any]]:
        for tr in store.trials(run_id):
            for s in store.samples(tr.id):
                row = {**named(s), "run_id": run_id, "trial_seq": tr.seq, "workload": tr.workload,
                       "format_version": FORMAT_VERSION}  # fmt: skip
                yield ["" if row[c] is None else row[c] for c in SAMPLE_CSV_COLUMNS]

    return csv_text(SAMPLE_CSV_COLUMNS, rows())
