"""`results export RUN --format telemetry`: every stored figure of every trial, one row each."""

from __future__ import annotations

import csv
import io

from clusterbench.store import Store
from clusterbench.store.export import FORMAT_VERSION
from clusterbench.telemetry.rates import METRIC_UNITS

TELEMETRY_COLUMNS = (
    "run_id", "trial_seq", "workload", "t_s", "wall_s", "source", "metric", "unit", "value", "format_version"
)  # fmt: skip


def telemetry_csv(store: Store, run_id: int) -> str:
    store.get_run(run_id)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(TELEMETRY_COLUMNS)
    for tr in store.trials(run_id):
        for r in store.telemetry(tr.id):
            unit = METRIC_UNITS.get(r["metric"], "")
            w.writerow([run_id, tr.seq, tr.workload, round(r["t"], 3), round(r["wall"], 3), r["source"],
                        r["metric"], unit, r["value"], FORMAT_VERSION])  # fmt: skip
    return out.getvalue()
