"""A tpcc run through BenchRunner with fakes: the load's provenance and progress, tpmC stored per
trial, the consistency check after the load and after the trial, and a FAIL that fails the trial
naming the condition. A tpcc drill through the scenario engine: the check after the faults are
healed is a verdict (tpcc-consistency) that counts in overall, and `prepare = false` reuses the
tables or stops before anything starts."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pymysql
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
    auto_inc_off=False,
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
        stop: Callable[[], str | None] | None = None,
        web_urls: Sequence[str] = (),
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
        self.args: tuple[Any, ...] = ()

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str, args: Any = None) -> None:
        self.last, self.args = sql, tuple(args or ())
        self.db.sql.append(sql)
        if sql == CONDITIONS[0].sql and self.db.checks() == self.db.unreachable:
            raise pymysql.err.OperationalError(2013, "Lost connection to server during query")

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self.last.startswith("SELECT table_name FROM information_schema.tables"):
            return [(t,) for t in self.db.tables if t in self.args[1:]]  # the named ones that exist
        for c in CONDITIONS:
            if self.last == c.sql and c.number in self.db.broken.get(self.db.checks(), ()):
                return [(1, 3, "30001.00", "30000.00")]
        return []

    def fetchone(self) -> tuple[Any, ...]:
        return (200 * 2**20,) if "data_length" in self.last else (128 * 2**20,)


class DB:
    def __init__(
        self,
        broken: dict[int, tuple[int, ...]] | None = None,
        tables: Sequence[str] = (),
        unreachable: int = 0,
    ) -> None:
        self.sql: list[str] = []
        self.tables = list(tables)  # what the table listing returns
        self.broken = broken or {}  # check number (1: after load, 2: after trial) -> failing conditions
        self.unreachable = unreachable  # this check number loses its connection

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
    db = DB()
    store, out, notes = go(tmp_path, [100, 110, 4, 90, 100], db)
    assert out.status == "completed"
    # each check (after the load, after the trial) first refreshes the answering node's statistics
    firsts = [i for i, sql in enumerate(db.sql) if sql == CONDITIONS[0].sql]
    assert len(firsts) == 2
    assert all(db.sql[i - 1].startswith("ANALYZE NO_WRITE_TO_BINLOG TABLE `warehouse`, ") for i in firsts)
    prov = store.provenance(out.run_id)
    # one entry per load, as in experiments (which load once per scale)
    assert prov["tpcc_load"] == [{
        "warehouses": 2,
        "threads": 2,
        "database": "sbtest",
        "consistency": "TPC-C consistency after load: PASS, 12 conditions",
        "seconds": 5,
        "rows": 250,
        "rows_per_s": 50.0,
        "data_bytes": 200 * 2**20,
        "bytes_per_warehouse": 100 * 2**20,
        "buffer_pool_bytes": 128 * 2**20,
        "data_to_buffer_pool": 1.562,
    }]  # fmt: skip
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


# ---- a tpcc drill: the consistency check is a verdict -------------------------------------------


class DrillTpcc(FakeTpcc):
    """FakeTpcc that records its calls and lists the tables an earlier run left."""

    def __init__(self, tps: Sequence[int], tables: Sequence[str] = ()) -> None:
        super().__init__(tps)
        self.tables = set(tables)
        self.calls: list[str] = []

    def existing_tables(self, endpoint: Endpoint, database: str, tls: bool) -> set[str]:
        return set(self.tables)

    def prepare(self, opts: SysbenchOptions, endpoint: Endpoint, **kw: Any) -> list[CommandOutput]:
        self.calls.append("prepare")
        return super().prepare(opts, endpoint, **kw)

    def run(self, opts: SysbenchOptions, endpoint: Endpoint, **kw: Any) -> RunResult:
        self.calls.append("run")
        return super().run(opts, endpoint, **kw)


class Node:
    index = 1

    def alive(self) -> bool:
        return True

    def health(self) -> Any:
        return type("Health", (), {"ready": True})()

    def wait_ready(self, timeout: float, expect_size: int | None = None) -> None:
        pass


class OneNodeCluster:
    """What the scenario engine asks of a cluster, with no server behind it."""

    def __init__(self) -> None:
        from clusterbench.spec.topology import Topology

        self.topology = Topology.model_validate({"cluster": {"nodes": 1}})

    def nodes(self) -> list[Node]:
        return [Node()]

    def haproxies(self) -> list[Any]:
        return []

    def endpoint(self, target: str = "balancer", database: str = "sbtest") -> Endpoint:
        return EP

    def client_hosts(self) -> list[Any]:
        return []

    def settle(self, running: int | None = None) -> list[str]:
        return []

    def admin_node(self) -> Node:
        return Node()

    def model_dump(self) -> dict[str, Any]:
        return {}


def drill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db: DB, sysbench: DrillTpcc, prepare: bool = True
) -> Any:
    """A tpcc drill with no fault: the real drill, pipeline and checkers, fake servers."""
    from clusterbench.scenario.drill import Drill
    from clusterbench.scenario.spec import ScenarioSpec

    spec = ScenarioSpec.model_validate({
        "name": "tpcc drill",
        "load": {"workload": "tpcc", "threads": 2, "duration": len(sysbench.tps), "prepare": prepare},
        "verify": {"ledger_clients": 0, "prober": False, "monitor": False, "convergence": False},
    })  # fmt: skip
    d = Drill(OneNodeCluster(), spec, tmp_path / "r.db", sysbench, telemetry=False,  # type: ignore[arg-type]
              connect=db.connect, facts=dict)  # fmt: skip
    return d.run("clusterbench fault ... -w tpcc", [])


def test_a_tpcc_drill_checks_consistency_once_healed_as_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterbench.checkers.verdict import Result, exit_code

    db = DB()
    out = drill(tmp_path, monkeypatch, db, DrillTpcc([50, 50, 50]))
    assert [(v.checker, v.result) for v in out.verdicts] == [("trial", Result.PASS),
                                                             ("tpcc-consistency", Result.PASS)]  # fmt: skip
    assert out.verdicts[1].summary == "12 conditions hold in sbtest"
    assert out.result is Result.PASS and exit_code(out.result) == 0
    assert db.checks() == 2  # after the load, and once after the trial (not twice)
    with Store.open(tmp_path / "r.db") as store:
        stored = {v["checker"]: v for v in store.verdicts(out.run_id)}
        assert stored["tpcc-consistency"]["result"] == "PASS"
        assert stored["tpcc-consistency"]["trial_id"] == out.trial_id
        tprov = store.provenance(out.run_id, out.trial_id)
        assert tprov["tpcc_consistency:sbtest"]["verdict"] == "PASS"


def test_a_condition_broken_in_a_drill_fails_the_drill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative control: district D_YTD off after the trial (condition 9) -> FAIL, overall FAIL,
    exit 1, while the trial itself ran as planned. Condition 11 (load-only) is no failure."""
    from clusterbench.checkers.verdict import Result, exit_code

    out = drill(tmp_path, monkeypatch, DB(broken={2: (9, 11)}), DrillTpcc([50, 50, 50]))
    trial, tpcc = out.verdicts
    assert trial.result is Result.PASS, trial.summary
    assert tpcc.checker == "tpcc-consistency" and tpcc.result is Result.FAIL
    assert tpcc.summary == (
        "condition 9 (D_YTD = sum(H_AMOUNT) for each district): FAIL, 1 row(s), e.g. 1, 3, 30001.00, 30000.00"
    )
    assert tpcc.evidence["sbtest"]["verdict"] == "FAIL"
    assert out.result is Result.FAIL and exit_code(out.result) == 1
    with Store.open(tmp_path / "r.db") as store:
        stored = [v["result"] for v in store.verdicts(out.run_id) if v["checker"] == "tpcc-consistency"]
        assert stored == ["FAIL"]


def test_a_consistency_check_that_cannot_run_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterbench.checkers.verdict import Result, exit_code

    out = drill(tmp_path, monkeypatch, DB(unreachable=2), DrillTpcc([50, 50, 50]))
    tpcc = out.verdicts[1]
    assert tpcc.result is Result.UNKNOWN
    assert tpcc.summary.startswith(
        "the check could not run: the TPC-C consistency check on sbtest could not run: "
        "Lost connection to server during query"
    )
    assert out.result is Result.UNKNOWN and exit_code(out.result) == 3


def test_a_drill_without_prepare_reuses_the_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterbench.checkers.verdict import Result
    from clusterbench.workloads.sysbench import TPCC_TABLES

    db = DB()
    sb = DrillTpcc([50, 50, 50], tables=TPCC_TABLES)
    out = drill(tmp_path, monkeypatch, db, sb, prepare=False)
    assert sb.calls == ["run"] and db.checks() == 1  # no load, no check after a load
    assert out.result is Result.PASS
    with Store.open(tmp_path / "r.db") as store:
        assert store.get_run(out.run_id).status == "completed"
        assert {"kind": "prepare", "detail": {"group": "tpcc", "skipped": True}}.items() <= {
            **next(e for e in store.events(out.run_id) if e["kind"] == "prepare")
        }.items()


def test_a_drill_without_prepare_and_without_tables_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sb = DrillTpcc([50, 50, 50], tables=("warehouse", "district"))
    with pytest.raises(WorkloadError) as e:
        drill(tmp_path, monkeypatch, DB(), sb, prepare=False)
    assert str(e.value) == (
        "--no-prepare, but tables customer, history, new_order, orders, order_line, item, stock are "
        "missing in sbtest; run without --no-prepare to create them"
    )
    assert sb.calls == []
    with Store.open(tmp_path / "r.db") as store:
        assert store.list_runs() == []
