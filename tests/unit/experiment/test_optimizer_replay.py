"""The optimizer benchmark's replay on the shipped grid (recorded for real): the data loads, and
one seed's search is what the docs say it is."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "optimizer_replay", ROOT / "benchmarks" / "optimizer_replay.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shipped_grid_and_one_replayed_seed() -> None:
    b = bench()
    grid = b.Grid(json.loads(b.DATA.read_text()))
    assert len(grid.reps) == 90 and grid.trials == 180
    assert grid.factors == {"nodes": [1, 2, 3, 4, 5], "threads": [2, 4, 8, 16, 32, 64],
                            "wsrep_slave_threads": [1, 4, 16]}  # fmt: skip
    assert round(grid.best, 1) == 595.2 and grid.within({"nodes": 1, "threads": 4, "wsrep_slave_threads": 4})
    assert not grid.within({"nodes": 5, "threads": 64, "wsrep_slave_threads": 1})  # a negative control
    r = b.replay(grid, 45, 2, None)
    assert r["trials"] == 45 and r["to_5pct"] is not None and r["to_5pct"] <= 45
    again = b.replay(grid, 45, 2, None)
    assert again == r  # seeded: the same search twice
