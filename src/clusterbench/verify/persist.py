"""Histories and monitor samples read back from the store (trial.recorder writes them as the run
goes)."""

from __future__ import annotations

from clusterbench.checkers.split_brain import MonitorSample
from clusterbench.history.ops import Op
from clusterbench.store import Store


def load_ops(store: Store, trial_id: int, workload: str | None = None) -> list[Op]:
    return [Op.from_row(r) for r in store.ops(trial_id, workload)]


def load_monitor_samples(store: Store, trial_id: int) -> list[MonitorSample]:
    return [MonitorSample.from_row(r) for r in store.monitor_samples(trial_id)]
