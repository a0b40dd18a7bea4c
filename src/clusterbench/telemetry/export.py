"""`results export RUN --format telemetry`: every stored figure of every trial, one row each."""

from __future__ import annotations

from clusterbench.store import Store
from clusterbench.store.export import FORMAT_VERSION, csv_text
from clusterbench.telemetry.rates import METRIC_UNITS

TELEMETRY_COLUMNS = (
    "run_id", "trial_seq", "workload", "t_s", "wall_s", "source", "metric", "unit", "value", "format_version"
)  # fmt: skip


def telemetry_csv(store: Store, run_id: int) -> str:
    store.get_run(run_id)
    rows = (
        [run_id, tr.seq, tr.workload, round(r["t"], 3), round(r["wall"], 3), r["source"], r["metric"],
         METRIC_UNITS.get(r["metric"], ""), r["value"], FORMAT_VERSION]
        for tr in store.trials(run_id)
        for r in store.telemetry(tr.id)
    )  # fmt: skip
    return csv_text(TELEMETRY_COLUMNS, rows)
