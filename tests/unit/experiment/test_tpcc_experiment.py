"""tpcc in experiment files: the file accepts it (warehouses as a setting and a factor), the plan
keys the data set by warehouses, the runner loads once per scale and records the load (data/
buffer-pool ratio included), stores tpmC, stalls and the consistency verdict per trial, fails a
trial whose check fails, and the report and trials CSV show the figures. Fakes for sysbench, the
cluster and the servers' sessions."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import InputError
from clusterbench.experiment.load import experiment_from_data
from clusterbench.experiment.planner import TPCC_ROWS_PER_WAREHOUSE, CostModel, Plan, expand
from clusterbench.experiment.report import build_experiment_report, trials_csv
from clusterbench.experiment.runner import ExperimentListener, ExperimentRunner
from clusterbench.experiment.spec import Experiment
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.spec.topology import Topology, parse_toml
from clusterbench.store import Store
from tests.unit.runner.test_bench_tpcc import DB, FakeTpcc

BASE = """
[experiment]
name = "tp"
repetitions = 1

[topology.cluster]
name = "tpx1"
subnet = "198.18.230.0/24"
nodes = 3

[workload]
workload = "tpcc"
warehouses = 2
duration = 5
"""


def exp(extra: str) -> Experiment:
    return experiment_from_data(parse_toml(BASE + extra, "x.toml"), "x.toml")


def test_tpcc_is_a_workload_of_experiment_files_with_warehouses_as_a_factor() -> None:
    plan = expand(exp("[factors]\nthreads = [2, 4]\nwarehouses = [1, 3]\n"))
    got = [(t.test, t.warehouses, t.threads, t.dataset()) for t in plan.trials]
    # warehouses before threads in the grid: every trial of one scale before the next load
    assert got == [
        ("tpcc", 1, 2, (1, TPCC_ROWS_PER_WAREHOUSE)),
        ("tpcc", 1, 4, (1, TPCC_ROWS_PER_WAREHOUSE)),
        ("tpcc", 3, 2, (3, TPCC_ROWS_PER_WAREHOUSE)),
        ("tpcc", 3, 4, (3, TPCC_ROWS_PER_WAREHOUSE)),
    ]
    assert plan.trials[0].describe()["warehouses"] == 1
    # two loads: 1 and 3 warehouses at 500,000 rows each and 40,000 rows/s, 1 s per schema
    assert plan.estimate(CostModel()).phases["prepare"] == pytest.approx(2 + 4 * 500_000 / 40_000)
    # without a factor, the workload's warehouses
    assert {t.warehouses for t in expand(exp("[factors]\nthreads = [2]\n")).trials} == {2}


def test_warehouses_needs_tpcc_and_at_least_one() -> None:
    with pytest.raises(InputError, match=r"factor warehouses is the tpcc scale and no trial runs tpcc"):
        exp("[factors]\nworkload = ['oltp_read_write']\nwarehouses = [1, 2]\n")
    with pytest.raises(InputError, match=r"factors.warehouses.*at least 1 \(got 0\)"):
        exp("[factors]\nwarehouses = [0, 2]\n")
    with pytest.raises(InputError, match=r"workload.warehouses"):
        text = BASE.replace("warehouses = 2", "warehouses = 0") + "[factors]\nthreads=[1]\n"
        experiment_from_data(parse_toml(text, "x"), "x")
    # the setting without a tpcc trial: one line, as the other tests' own settings
    oltp = BASE.replace('workload = "tpcc"', 'workload = "oltp_read_write"') + "[factors]\nthreads=[1]\n"
    with pytest.raises(InputError) as info:
        experiment_from_data(parse_toml(oltp, "x.toml"), "x.toml")
    assert str(info.value) == (
        'x.toml: parts.main: workload.warehouses is the tpcc scale and no trial runs tpcc; remove it or '
        'add workload = "tpcc"'
    )


def test_the_mix_of_an_experiment_is_a_workload_setting_checked_like_the_option() -> None:
    plan = expand(exp("[factors]\nthreads = [2]\n[parts.custom]\nfactors = { threads = [2] }\n"
                      "workload = { mix = { new_order = 50, payment = 50 } }\n"))  # fmt: skip
    assert [(t.part, t.mix) for t in plan.trials] == [("main", None), ("custom", (50, 50, 0, 0, 0))]
    assert plan.trials[1].describe()["mix"] == [50, 50, 0, 0, 0] and "mix" not in plan.trials[0].describe()
    string = BASE.replace('warehouses = 2', 'warehouses = 2\nmix = "new_order=90,delivery=10"')
    e = experiment_from_data(parse_toml(string + "[factors]\nthreads = [1]\n", "x.toml"), "x.toml")
    assert e.parts["main"][0].mix == (90, 0, 0, 10, 0)
    bad = BASE.replace('warehouses = 2', 'warehouses = 2\nmix = "new_order=90,delivery=9"')
    with pytest.raises(InputError) as info:
        experiment_from_data(parse_toml(bad + "[factors]\nthreads = [1]\n", "x.toml"), "x.toml")
    assert str(info.value) == (
        "x.toml: workload.mix: the weights sum to 99, not 100; make them add up to 100 "
        "(a transaction left out weighs 0) (got 'new_order=90,delivery=9')"
    )
    oltp = BASE.replace('workload = "tpcc"', 'workload = "oltp_read_write"').replace(
        'warehouses = 2', 'mix = "new_order=100"')
    with pytest.raises(InputError, match=r"workload.mix is the tpcc transaction mix and no trial runs tpcc"):
        experiment_from_data(parse_toml(oltp + "[factors]\nthreads = [1]\n", "x.toml"), "x.toml")


class Node:
    def __init__(self, index: int, log: list[str]) -> None:
        self.index, self.log = index, log

    def query(self, sql: str, timeout: float = 2.0) -> list[tuple[Any, ...]]:
        if sql.startswith("SELECT variable_name") or "global_variables" in sql:
            return []
        self.log.append(sql)
        if sql.startswith("SELECT table_name"):
            return [("warehouse",), ("district",)] if "IN ('warehouse'" in sql else []
        return []

    def alive(self) -> bool:
        return True

    def engine_status(self) -> dict[str, str]:
        return {}


class Cluster:
    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.log: list[str] = []

    def node(self, i: int) -> Node:
        return Node(i, self.log)

    def endpoint(self, target: str, database: str = "sbtest") -> Endpoint:
        return Endpoint(name=target, addresses=(Address(host="198.18.230.11"),), user="u", password="p",
                        database=database, auto_inc_off=False)  # fmt: skip

    def haproxy(self) -> None:
        return None

    def admin_node(self) -> None:  # no health: the tool's own statements go to node 1
        return None


class Notes(ExperimentListener):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def phase(self, message: str) -> None:
        self.lines.append(message)

    def note(self, t: Any, line: str) -> None:
        self.lines.append(line)


BASE_TPS = [100, 110, 4, 90, 100]  # 404 transactions in 5 s


class CountingTpcc(FakeTpcc):
    def __init__(self, tps: list[int]) -> None:
        super().__init__(tps)
        self.loads: list[int] = []
        self.mixes: list[Any] = []
        self.rates: list[int] = []

    def run(self, opts: Any, endpoint: Endpoint, **kw: Any) -> Any:
        self.mixes.append(opts.mix)
        self.rates.append(opts.rate)
        self.tps = [2 * x for x in BASE_TPS] if opts.warehouses == 1 else BASE_TPS  # 1 warehouse: twice
        return super().run(opts, endpoint, **kw)

    def prepare(self, opts: Any, endpoint: Endpoint, **kw: Any) -> Any:
        self.loads.append(opts.warehouses)
        assert opts.test == "tpcc" and kw["databases"] == ["sbtest"]
        return super().prepare(opts, endpoint, **kw)


def run(tmp_path: Path, plan: Plan, db: DB) -> tuple[Store, int, ExperimentRunner, Notes, list[str]]:
    store = Store.open(tmp_path / "r.db")
    run_id = store.create_run("experiment", name="tp")
    notes = Notes()
    sb = CountingTpcc(BASE_TPS)
    runner = ExperimentRunner(plan, store, sb, home=tmp_path, listener=notes, facts=dict,
                              telemetry=False, connect=db.connect)  # fmt: skip
    cluster = Cluster(plan.trials[0].topology)
    runner.cluster = cluster  # type: ignore[assignment]
    runner.running = 3
    statuses = [runner._trial(run_id, i, t) for i, t in enumerate(plan.trials, 1)]
    assert sb.loads == sorted(sb.loads)
    assert sb.mixes == [t.mix for t in plan.trials]
    runner.loads = sb.loads  # type: ignore[attr-defined]
    runner.rates = sb.rates  # type: ignore[attr-defined]
    return store, run_id, runner, notes, statuses


def test_the_runner_loads_once_per_scale_and_stores_figures_stalls_and_verdicts(tmp_path: Path) -> None:
    plan = expand(exp("[factors]\nthreads = [2, 4]\n"))
    db = DB(tables=["district", "sbtest1", "warehouse"])
    store, run_id, runner, notes, statuses = run(tmp_path, plan, db)
    assert statuses == ["completed", "completed"]
    assert runner.loads == [2]  # type: ignore[attr-defined]  # the second trial reuses the load
    (load,) = store.provenance(run_id)["tpcc_load"]
    assert load == {
        "group": 1, "nodes": 3, "database": "sbtest", "warehouses": 2, "threads": 2, "seconds": 0.0,
        "rows": 250, "rows_per_s": None, "data_bytes": 200 * 2**20, "bytes_per_warehouse": 100 * 2**20,
        "buffer_pool_bytes": 128 * 2**20, "data_to_buffer_pool": 1.562,
        "consistency": "TPC-C consistency after load: PASS, 12 conditions",
    }  # fmt: skip
    for tr in store.trials(run_id):
        prov = store.provenance(run_id, tr.id)
        assert prov["tpcc"]["tpmC"] == 2424.0 and prov["tpcc"]["types"]["new_order"]["count"] == 202
        assert prov["stalls"]["count"] == 1 and prov["stalls"]["runs"] == [[3.0, 1]]
        assert prov["tpcc_consistency:sbtest"]["verdict"] == "PASS"
    assert "  warehouse 2: 100 rows (2 of 2)" in notes.lines
    assert any(ln.startswith("tpcc load: 2 warehouse(s), 250 rows") for ln in notes.lines)
    assert notes.lines.count("TPC-C consistency after run: PASS, 12 conditions") == 2
    assert sum(ln.startswith("stalls: 1 interval(s) below") for ln in notes.lines) == 2
    # the load dropped only the tpcc tables found (warehouse, district), not sbtest<N>
    drops = [s for s in db.sql if s.startswith("DROP")]
    assert drops == ["DROP TABLE IF EXISTS `sbtest`.`warehouse`", "DROP TABLE IF EXISTS `sbtest`.`district`"]

    sections = build_experiment_report(store, run_id).sections
    shaded = next(s for s in sections if s.key == "series").figures[0].svg
    sec = next(s for s in sections if s.key == "tpcc")
    (row,) = [r for r in sec.tables[0].rows if r[1] == "threads=2"]
    assert row[:5] == ["main", "threads=2", "1", "2,424 [2,424, 2,424]", "4,884"]  # 407 in 5 s
    assert row[-3:] == ["1", "1", "1/1 PASS"]
    assert "data/buffer pool 1.56" in sec.intro[0]
    rows = list(csv.DictReader(io.StringIO(trials_csv(store, run_id))))
    assert [(r["tpmC"], r["stalls"], r["longest_stall"]) for r in rows] == [("2424.0", "1", "1")] * 2
    # the stalled second is shaded in the per-second tps panels: without the stalls, another picture
    for tr in store.trials(run_id):
        store.set_provenance(run_id, "stalls", {"runs": [], "count": 0, "longest": 0}, trial_id=tr.id)
    again = build_experiment_report(store, run_id).sections
    plain = next(s for s in again if s.key == "series").figures[0].svg
    assert shaded != plain


def test_a_new_scale_loads_again_and_a_broken_condition_fails_the_trial(tmp_path: Path) -> None:
    # (the mix in [workload], written after BASE's table: it reaches every trial's options)
    plan = expand(exp("mix = { new_order = 50, payment = 50 }\n[factors]\nwarehouses = [1, 2]\n"))
    assert [t.mix for t in plan.trials] == [(50, 50, 0, 0, 0)] * 2
    # checks: 1 after the first load, 2 after trial 1, 3 after the second load, 4 after trial 2
    store, run_id, runner, notes, statuses = run(tmp_path, plan, DB(broken={4: (9,)}))
    assert runner.loads == [1, 2]  # type: ignore[attr-defined]
    assert statuses == ["completed", "failed"]
    assert [x["warehouses"] for x in store.provenance(run_id)["tpcc_load"]] == [1, 2]
    fail = "TPC-C consistency after run: FAIL: condition 9 (D_YTD = sum(H_AMOUNT) for each district)"
    assert fail in notes.lines
    ev = store.conn.execute("SELECT detail FROM events WHERE kind = 'trial_failed'").fetchall()
    assert len(ev) == 1 and "condition 9" in ev[0][0]


def test_a_broken_condition_after_the_load_stops_the_experiment(tmp_path: Path) -> None:
    from clusterbench.errors import WorkloadError

    plan = expand(exp("[factors]\nthreads = [2]\n"))
    with pytest.raises(WorkloadError, match=r"sbtest: TPC-C consistency after load: FAIL: condition 1 \(W_"):
        run(tmp_path, plan, DB(broken={1: (1,)}))


def test_rate_of_max_takes_the_maximum_of_the_same_scale(tmp_path: Path) -> None:
    plan = expand(exp("[factors]\nwarehouses = [1, 2]\n[parts.sustained]\nfactors = { warehouses = [2] }\n"
                      "workload = { rate_of_max = 0.5 }\n"))  # fmt: skip
    assert [(t.part, t.warehouses) for t in plan.trials] == [("main", 1), ("main", 2), ("sustained", 2)]
    store, run_id, runner, notes, statuses = run(tmp_path, plan, DB())
    # 1 warehouse ran at 161.6 tps, 2 at 80.8: half of the 2-warehouse maximum, not of the other one
    assert runner.rates == [0, 0, 40]  # type: ignore[attr-defined]


def test_a_drop_takes_only_the_tables_a_prepare_makes_and_forgets_what_used_them(tmp_path: Path) -> None:
    from clusterbench.workloads.sysbench import TPCC_TABLES

    plan = expand(exp("[factors]\nthreads = [2]\n"))
    db = DB(tables=["sbtest1", "sbtest2", "sbtest512", "users", *TPCC_TABLES])
    store, run_id, runner, notes, statuses = run(tmp_path, plan, db)
    oltp, access = ("sbtest", "oltp", 4, 100), ("sbtest", "access", 1, 100, 512, 32)
    runner.data.prepared = {
        oltp: frozenset({"sbtest1", "sbtest2", "sbtest3", "sbtest4"}),
        access: frozenset({"sbtest512"}),
        ("sbtest", "tpcc", 1, 1): frozenset(TPCC_TABLES),
    }
    db.sql.clear()
    admin = runner.cluster.endpoint("node:1")  # type: ignore[union-attr]
    runner.data.drop(admin, "sbtest", [])  # mysqlslap makes no table of ours: nothing is dropped
    assert db.sql == []
    runner.data.drop(admin, "sbtest", ["sbtest1", "sbtest2"])  # a bulk_insert trial of 2 threads
    assert [s for s in db.sql if s.startswith("DROP")] == [
        "DROP TABLE IF EXISTS `sbtest`.`sbtest1`", "DROP TABLE IF EXISTS `sbtest`.`sbtest2`",
    ]  # fmt: skip
    # the oltp tables are gone (prepared again when needed); the access table and tpcc's stay known
    assert set(runner.data.prepared) == {access, ("sbtest", "tpcc", 1, 1)}
