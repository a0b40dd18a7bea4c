"""The SQLite store of runs, trials, samples, summaries, histograms, events and provenance."""

from __future__ import annotations

from clusterbench.store.schema import SCHEMA_VERSION
from clusterbench.store.store import (
    ALL_CLIENTS,
    RunRow,
    Store,
    TrialRow,
    process_start_ticks,
)

__all__ = [
    "ALL_CLIENTS",
    "SCHEMA_VERSION",
    "RunRow",
    "Store",
    "TrialRow",
    "process_start_ticks",
]
