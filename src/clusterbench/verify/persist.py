"""Histories and monitor samples into the store as the run goes; verdicts after the checks.

The writer threads never touch the caller's SQLite connection (sqlite3 connections belong to the
thread that made them): each batch opens its own short-lived connection to the same file (WAL,
busy timeout), which costs about a millisecond per batch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from clusterbench.checkers.split_brain import MonitorSample
from clusterbench.checkers.verdict import Verdict
from clusterbench.errors import InputError
from clusterbench.store import Store
from clusterbench.verify.history import Op, OpSink
from clusterbench.verify.monitor import SampleSink


def _path(store: Store) -> Path:
    p = store.path
    if p is None:
        raise InputError("live histories need a store file, not an in-memory database")
    return p


def op_sink(store: Store, trial_id: int) -> OpSink:
    path = _path(store)

    def write(batch: list[Op]) -> None:
        with Store.open(path) as s:
            s.add_ops(trial_id, [o.to_row() for o in batch])

    return write


def monitor_sink(store: Store, trial_id: int) -> SampleSink:
    path = _path(store)

    def write(batch: list[MonitorSample]) -> None:
        with Store.open(path) as s:
            s.add_monitor_samples(trial_id, [m.to_row() for m in batch])

    return write


def load_ops(store: Store, trial_id: int, workload: str | None = None) -> list[Op]:
    return [Op.from_row(r) for r in store.ops(trial_id, workload)]


def load_monitor_samples(store: Store, trial_id: int) -> list[MonitorSample]:
    return [MonitorSample.from_row(r) for r in store.monitor_samples(trial_id)]


def save_verdicts(
    store: Store, run_id: int, verdicts: Sequence[Verdict], *, trial_id: int | None = None
) -> None:
    for v in verdicts:
        store.add_verdict(run_id, v.to_json(), trial_id=trial_id)
