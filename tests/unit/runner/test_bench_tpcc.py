"""A tpcc run through BenchRunner with fakes: the load's provenance and progress, tpmC stored per
trial, the consistency check after the load and after the trial, and a FAIL that fails the trial
naming the condition."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import WorkloadError
from clusterbench.runner import BenchListener, BenchPlan, BenchRunner, make_options
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.store import Store
from clusterbench.workloads import (
    ClientRun,
    CommandOutput,
    RunResult,
    Sample,
    SysbenchCommand,
    SysbenchOptions,
)
from clusterbench.workloads.parse import parse_output
from clusterbench.workloads.placement import ClientHost
from clusterbench.workloads.runner import SysbenchRunner
from clusterbench.workloads.tpcc_check import CONDITIONS

EP = Endpoint(
    name="balancer",
    addresses=(Address(host="198.18.9.2"),),
    user="bench",
    password="pw",
    tls_dir=None,
    galera=False,
)


def line(kind: str, t: float, no: int, pay: int, events: int) -> str:
    extra = {
        "tpcc": {
            "new_order": [no, 1, 2, no * 1000],
            "payment": [pay, 0, 1, pay * 500],
            "order_status": [1, 0, 0, 10],
            "delivery": [1, 0, 0, 10],
            "stock_level": [1, 0, 0, 10],
        }
    }
    obj = {
        "type": kind,
        "time_total": t,
        "time_interval": 1.0 if kind == "interval" else t,
        "threads": 2,
        "events": events,
        "reads": 1,
        "writes": 1,
        "other": 1,
        "errors": 3,
        "reconnects": 0,
        "percentile": 95,
        "latency_pct_ms": 1.0,
        "extra": extra,
    }
    return "CBJSON " + json.dumps(obj)


class FakeTpcc(SysbenchRunner):
    def __init__(self, tps: Sequence[int]) -> None:
        super().__init__(shim=None)
        self.tps = tps
        self.lines_seen: list[str] = []

    def check_endpoint(
        self, endpoint: Endpoint, databases: Sequence[str] | None = None, tls: bool | None = None
    ) -> None:
        pass

    def prepare(self, opts: SysbenchOptions, endpoint: Endpoint, **kw: Any) -> list[CommandOutput]:
        out = [
            "CBLOAD warehouse 1: 100 rows",
            "CBLOAD warehouse 2: 100 rows",
            "CBLOAD thread 0: 250 rows, 2 warehouse(s) in 1.0 s",
        ]
        for ln in out:
            kw["on_line"](ln)
        return [CommandOutput(("sysbench",), 0, out, [])]

    def run(
        self,
        opts: SysbenchOptions,
        endpoint: Endpoint,
        *,
        clients: int = 1,
        separate_schemas: bool = False,
        on_sample: Callable[[Sample], None] | None = None,
        preflight: bool = True,
        hosts: Sequence[ClientHost] | None = None,
        endpoints: Sequence[Endpoint] | None = None,
    ) -> RunResult:
        lines, no, pay = [], 0, 0
        for i, n in enumerate(self.tps, 1):
            no, pay = no + n // 2, pay + n - n // 2
            lines.append(line("interval", float(i), no, pay, n))
        lines.append(line("summary", float(len(self.tps)), no, pay, sum(self.tps)))
        parsed = parse_output(lines, threads=2)
        for s in parsed.samples:
            assert on_sample is not None
            on_sample(s)
        cr = ClientRun(client=0, database="sbtest", command=SysbenchCommand(argv=("sysbench",)))
        cr.returncode, cr.samples, cr.summary = 0, parsed.samples, parsed.summary
        return RunResult(
            test=opts.test,
            clients=[cr],
            samples=parsed.samples,
            summary=parsed.summary,
            exit_code=0,
            stderr_tail=[],
            killed=False,
        )


class Cursor:
    def __init__(self, db: DB) -> None:
        self.db = db
        self.last = ""

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str, args: Any = None) -> None:
        self.last = sql
        self.db.sql.append(sql)

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self.last.startswith("SELECT table_name FROM information_schema.tables"):
            sysbench_only = "REGEXP" in self.last  # the server's filter for sysbench's sbtest<N>
            return [(t,) for t in self.db.tables if not sysbench_only or re.fullmatch(r"sbtest\d+", t)]
        for c in CONDITIONS:
            if self.last == c.sql and c.number in self.db.broken.get(self.db.checks(), ()):
                return [(1, 3, "30001.00", "30000.00")]
        return []

    def fetchone(self) -> tuple[Any, ...]:
        return (200 * 2**20,) if "data_length" in self.last else (128 * 2**20,)


class DB:
    def __init__(
        self, broken: dict[int, tuple[int, ...]] | None = None, tables: Sequence[str] = ()
    ) -> None:
        self.sql: list[str] = []
        self.tables = list(tables)  # what the table listing returns
        self.broken = broken or {}  # check number (1: after load, 2: after trial) -> failing conditions

    def checks(self) -> int:
        return sum(1 for s in self.sql if s == CONDITIONS[0].sql)

    def connect(self, **kw: Any) -> Any:
        db = self

        class Conn:
            def cursor(self) -> Cursor:
                return Cursor(db)

            def close(self) -> None:
                pass

        return Conn()


class Notes(BenchListener):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def phase(self, message: str) -> None:
        self.lines.append(message)

    def note(self, line: str) -> None:
        self.lines.append(line)


def go(tmp_path: Path, tps: Sequence[int], db: DB) -> tuple[Store, Any, Notes]:
    store = Store.open(tmp_path / "r.db")
    runner = BenchRunner(
        FakeTpcc(tps),
        None,
        facts=dict,
        connect=db.connect,
        monotonic=iter(range(0, 1000, 5)).__next__,
        telemetry_on=False,
    )
    opts = make_options(test="tpcc", threads=2, time=len(tps), warehouses=2)
    notes = Notes()
    out = runner.execute(BenchPlan(kind="run", tests=("tpcc",), options=opts, endpoint=EP), store, notes)
    return store, out, notes


def test_a_tpcc_run_stores_its_load_figures_and_consistency(tmp_path: Path) -> None:
    store, out, notes = go(tmp_path, [100, 110, 4, 90, 100], DB())
    assert out.status == "completed"
    prov = store.provenance(out.run_id)
    assert prov["tpcc_load"] == {
        "warehouses": 2,
        "threads": 2,
        "seconds": 5,
        "rows": 250,
        "rows_per_s": 50.0,
        "data_bytes": 200 * 2**20,
        "bytes_per_warehouse": 100 * 2**20,
        "buffer_pool_bytes": 128 * 2**20,
        "data_to_buffer_pool": 1.562,
    }
    assert prov["tpcc_consistency@load:sbtest"]["verdict"] == "PASS"
    trial = store.trials(out.run_id)[0]
    tprov = store.provenance(out.run_id, trial.id)
    assert tprov["tpcc"]["types"]["new_order"]["count"] == 202 and tprov["tpcc"]["tpmC"] == 2424.0
    assert tprov["tpcc_consistency:sbtest"]["verdict"] == "PASS"
    assert tprov["stalls"]["count"] == 1 and tprov["stalls"]["runs"] == [[3.0, 1]]
    assert (
        "  warehouse 1: 100 rows (1 of 2)" in notes.lines
        and "  warehouse 2: 100 rows (2 of 2)" in notes.lines
    )
    assert any(ln.startswith("tpmC 2424, tpm ") for ln in notes.lines)
    assert "TPC-C consistency after run: PASS, 12 conditions" in notes.lines
    assert any(ln.startswith("stalls: 1 interval(s) below") for ln in notes.lines)


def test_a_condition_broken_after_the_trial_fails_it_by_name(tmp_path: Path) -> None:
    store, out, notes = go(tmp_path, [50, 50, 50], DB(broken={2: (9,)}))
    assert out.status == "failed"
    assert out.failures == [
        "tpcc: TPC-C consistency after run: FAIL: condition 9 (D_YTD = sum(H_AMOUNT) for each district)"
    ]
    trial = store.trials(out.run_id)[0]
    assert trial.status == "failed"


def test_a_condition_broken_after_the_load_stops_the_run(tmp_path: Path) -> None:
    with pytest.raises(
        WorkloadError, match=r"sbtest: TPC-C consistency after load: FAIL: condition 1 \(W_YTD"
    ):
        go(tmp_path, [50], DB(broken={1: (1,)}))
