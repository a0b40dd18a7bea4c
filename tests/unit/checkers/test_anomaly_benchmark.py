"""benchmarks/anomaly_checkers.py: its synthetic histories are what it says (serial ones PASS,
anomalous ones FAIL with cycles and no impossible class), and its per-minute table reads real
stored verdicts and operations."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from clusterbench.checkers.list_append import check_list_append
from clusterbench.checkers.verdict import Result
from clusterbench.history.ops import Op, Outcome
from clusterbench.store import Store

ROOT = Path(__file__).resolve().parents[3]


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "anomaly_checkers", ROOT / "benchmarks" / "anomaly_checkers.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["anomaly_checkers"] = mod
    spec.loader.exec_module(mod)
    return mod


DOC = ("lost-update", "internal", "G2-item", "stale-read")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_serial_histories_pass_and_anomalous_ones_fail(seed: int) -> None:
    b = bench()
    serial = check_list_append(b.list_append_history(600, keys=4, stale=0.0, seed=seed), documented=DOC)
    assert serial.result is Result.PASS, serial.summary
    assert serial.evidence["outcomes"]["fail"] > 0 and serial.evidence["outcomes"]["unknown"] > 0
    bad = check_list_append(b.list_append_history(600, keys=4, stale=0.3, seed=seed), documented=DOC)
    assert bad.result is Result.FAIL, bad.summary
    found = set(bad.evidence["anomalies"])
    # Old snapshots for reads, appends onto the newest list: lost updates, write skew, stale reads;
    # never a write cycle, an aborted or intermediate read, or an order no read agrees with.
    assert {"G2-item", "stale-read"} <= found, bad.summary
    assert not found & {"G0", "G1a", "G1b", "G1c", "incompatible-order", "lost-append", "phantom-value"}


def _op(workload: str, kind: str, key: str, t: float, value: str | None = None) -> Op:
    return Op(workload, 0, "node:1", "198.18.0.2", kind, key, value, 1e9 + t, 1e9 + t + 0.01, t, t + 0.01,
              Outcome.OK)  # fmt: skip


def test_per_minute_from_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = bench()
    db = tmp_path / "r.db"
    with Store.open(db) as s:
        run = s.create_run("scenario")
        trial = s.add_trial(run, 1, "oltp_read_write", {})
        # The counter ran from 0 to 30 s: half a minute.
        s.add_ops(trial, [_op("counter", "incr", "read-modify-write/1", 0.0).to_row(),
                          _op("counter", "incr", "read-modify-write/1", 29.99).to_row()])  # fmt: skip
        s.add_verdict(run, {"checker": "counter:read-modify-write", "result": "FAIL", "summary": "",
                            "evidence": {"lost": 12, "increments": {"ok": 40}}}, trial_id=trial)  # fmt: skip
    assert b.main(["--results", str(db)]) == 0
    out = capsys.readouterr().out
    assert "1 trial(s) from" in out and "0.50 minutes" in out
    (line,) = [x for x in out.splitlines() if "read-modify-write" in x]
    assert line.split()[-4:] == ["1", "1", "12", "24.0"]


def test_bad_sizes_and_missing_store_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = bench()
    assert b.main(["--sizes", "0"]) == 2
    assert b.main(["--results", str(tmp_path / "none.db")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "error: --sizes '0': give positive integers like 1000,10000",
        f"error: --results {tmp_path / 'none.db'}: no such store; give the path of a results database",
    ]
