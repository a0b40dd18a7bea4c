"""The TPC-C-like workload against the session's real 3-node Galera cluster, as a user runs it:
`clusterbench run -w tpcc` loads 1 warehouse, runs 10 s through HAProxy and checks the twelve
consistency conditions after the load and after the trial; then a drill on the same tables
(`prepare = false`: no second load) whose `sql` fault changes a history row behind the workload's
back FAILs its `tpcc-consistency` verdict and the drill (exit 1), and `clusterbench tpcc-check` FAILs
naming the conditions (the negative controls). The same on the module's Group Replication cluster,
at a reduced scale so that it adds seconds.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pymysql  # type: ignore[import-untyped, unused-ignore]
import pytest

from clusterbench.cluster import Cluster
from clusterbench.runner import BenchPlan, BenchRunner, make_options
from clusterbench.store import Store
from clusterbench.trial.data import admin_connect, check_tpcc
from clusterbench.workloads import SysbenchRunner
from clusterbench.workloads.shim import build_shim
from clusterbench.workloads.sysbench import TPCC_TABLES
from clusterbench.workloads.tpcc import TYPES

from .conftest import DRILL_RATE

pytestmark = pytest.mark.integration

DB = "tpccit"
# The Galera test's schema: the one a drill's load uses (the cluster's endpoint schema), so that
# the drill reuses the warehouse the run loaded.
DRILL_DB = "sbtest"

# A drill on the loaded warehouse: no second load; its one fault adds 1 to the amount of the first
# history row the load wrote (a row no transaction of the load writes again, so the statement
# never conflicts with it): W_YTD, D_YTD and that customer's balance no longer match their history
# (conditions 8, 9, 10). Nothing else beside it, so that it adds seconds.
TAMPER_DRILL = f"""
name = "tpcc, a district's YTD changed behind the workload's back"

[load]
workload = "tpcc"
threads = 2
duration = 4
prepare = false

[verify]
ledger_clients = 0
prober = false
monitor = false
convergence = false

[[fault]]
kind = "sql"
target = "node:1"
at = 1
statement = "UPDATE {DRILL_DB}.history SET h_amount = h_amount + 1 ORDER BY h_pk LIMIT 1"
"""


def cb(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        ["clusterbench", *args], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


def test_tpcc_run_checker_and_negative_control(cluster: Cluster, tmp_path: Path) -> None:
    name = cluster.topology.name
    results = tmp_path / "results.db"
    res = cb("run", "-n", name, "-w", "tpcc", "--warehouses", "1", "--threads", "4", "--duration", "6",
             "--warmup", "1", "--database", DRILL_DB, "--results", str(results),
             "--no-telemetry")  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "TPC-C consistency after load: PASS" in out, out
    assert "TPC-C consistency after run: PASS" in out and "condition 11 reported as load-only" in out, out
    assert "tpmC " in out, out

    with Store.open(results) as store:
        run = store.list_runs()[-1]
        prov = store.provenance(run.id)
        (load,) = prov["tpcc_load"]  # one entry per load
        # one warehouse at full scale: 100k items + 100k stock + 30k customers, history, orders ...
        assert load["warehouses"] == 1 and load["rows"] > 500_000 and load["rows_per_s"] > 0
        assert load["bytes_per_warehouse"] > 30 * 2**20 and load["data_to_buffer_pool"] > 0
        assert prov[f"tpcc_consistency@load:{DRILL_DB}"]["verdict"] == "PASS"
        (trial,) = store.trials(run.id)
        tprov = store.provenance(run.id, trial.id)
        f = tprov["tpcc"]
        assert f["tpmC"] > 0 and f["tpm"] > f["tpmC"]
        assert all(f["types"][t]["count"] > 0 for t in TYPES), f["types"]
        # per-type latency from the script's own histograms
        assert all(f["types"][t]["p95_ms"] >= f["types"][t]["p50_ms"] > 0 for t in TYPES), f["types"]
        # 45 % New-Order, 43 % Payment (a weighted draw: a few points either way in 6 s)
        assert 35 <= f["types"]["new_order"]["share_pct"] <= 55
        assert 33 <= f["types"]["payment"]["share_pct"] <= 53
        # per second: the reported intervals (the final summary also counts the last partial one)
        per_second = sum(s["new_order"] for s in f["per_second"])
        assert 0.8 * f["types"]["new_order"]["count"] <= per_second <= f["types"]["new_order"]["count"]
        check = tprov[f"tpcc_consistency:{DRILL_DB}"]
        assert check["verdict"] == "PASS"
        assert {c["condition"]: c["status"] for c in check["conditions"]}[11] in ("PASS", "load-only")
        assert tprov["stalls"]["median_tps"] > 0
        assert len(store.samples(trial.id)) >= 5

    # the checker on demand passes on the same tables ...
    ok = cb("tpcc-check", "-n", name, "--database", DRILL_DB)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "condition 1 (W_YTD = sum(D_YTD) for each warehouse): PASS" in ok.stdout
    # ... after 20 s of tpcc through the balancer with n2 killed at 4 s and restarted at 12 s, the
    # drill's tpcc-consistency verdict passes with every other checker (no second load)
    kill = cb("fault", "kill-node", "-n", name, "--node", "2", "--at", "4", "--for", "8", "-w", "tpcc",
              "--duration", "20", "--threads", "4", "--load-rate", str(DRILL_RATE), "--no-prepare",
              "--ledger-clients", "1", "--results", str(results), "--no-telemetry")  # fmt: skip
    out = kill.stdout + kill.stderr
    assert kill.returncode == 0, out
    assert "loading tpcc" not in out and "overall: PASS" in out, out
    with Store.open(results) as store:
        run = store.list_runs()[-1]
        verdicts = {v["checker"]: v["result"] for v in store.verdicts(run.id)}
        assert verdicts["tpcc-consistency"] == "PASS" and verdicts["ledger"] == "PASS", verdicts
        assert set(verdicts.values()) == {"PASS"}, verdicts
        (trial,) = store.trials(run.id)
        f = store.provenance(run.id, trial.id)["tpcc"]
        assert f["tpmC"] > 0 and all(f["types"][t]["count"] > 0 for t in TYPES), f["types"]
    # ... a drill on the same tables whose fault changes a history row behind the workload's back
    # fails its tpcc-consistency verdict, and so the drill (exit 1), though the trial ran as planned
    scenario = tmp_path / "tamper.toml"
    scenario.write_text(TAMPER_DRILL)
    drill = cb("scenario", str(scenario), "-n", name, "--results", str(results), "--no-telemetry")
    out = drill.stdout + drill.stderr
    assert drill.returncode == 1, out
    assert "loading tpcc" not in out and "tpcc-consistency" in out and "overall: FAIL" in out, out
    with Store.open(results) as store:
        run = store.list_runs()[-1]
        verdicts = {v["checker"]: v for v in store.verdicts(run.id)}
        assert verdicts["trial"]["result"] == "PASS", verdicts["trial"]["summary"]
        tpcc = verdicts["tpcc-consistency"]
        assert tpcc["result"] == "FAIL", tpcc["summary"]
        first = "condition 8 (W_YTD = sum(H_AMOUNT) for each warehouse): FAIL, 1 row(s)"
        assert tpcc["summary"].startswith(first), tpcc["summary"]
        assert "; condition 9 (D_YTD = sum(H_AMOUNT) for each district): FAIL, 1 row(s)" in tpcc["summary"]
        assert "; condition 10 (C_BALANCE = " in tpcc["summary"]
        # no second load: the drill reused the run's tables
        assert [e["detail"] for e in store.events(run.id) if e["kind"] == "prepare"] == [
            {"group": "tpcc", "skipped": True}
        ]
        (trial,) = store.trials(run.id)
        check = store.provenance(run.id, trial.id)[f"tpcc_consistency:{DRILL_DB}"]
        assert [c["condition"] for c in check["conditions"] if c["status"] == "FAIL"] == [8, 9, 10]
    # ... and the checker on demand fails too, naming the conditions
    fail = cb("tpcc-check", "-n", name, "--database", DRILL_DB)
    assert fail.returncode == 1, fail.stdout + fail.stderr
    assert "TPC-C consistency after run: FAIL: condition 8 (W_YTD = sum(H_AMOUNT) for each warehouse); " \
        "condition 9 (D_YTD = sum(H_AMOUNT) for each district); condition 10 (" in fail.stdout + fail.stderr
    tables = ", ".join(f"{DRILL_DB}.{t}" for t in TPCC_TABLES)
    cb("sql", "1", "-n", name, "-e", f"DROP TABLE IF EXISTS {tables}")


def test_tpcc_on_group_replication(gr_cluster: Cluster, tmp_path: Path) -> None:
    """Single primary, writes through HAProxy's write endpoint; 300 customers per district and
    10,000 items (a tenth of the scale: the load takes a few seconds), 1 s warm-up + 8 s, with a
    transaction mix of its own."""
    ep = gr_cluster.endpoint("balancer", database=DB)
    # a mix of its own (--mix): Order-Status at 20 % instead of 4 %
    opts = make_options(test="tpcc", warehouses=1, threads=4, time=8, warmup=1, mix=(40, 30, 20, 5, 5),
                        customers=300, items=10000)  # fmt: skip
    runner = BenchRunner(SysbenchRunner(shim=build_shim(gr_cluster.home / "lib")), None, telemetry_on=False)
    plan = BenchPlan(kind="run", tests=("tpcc",), options=opts, endpoint=ep)
    runner.check(plan)
    with Store.open(tmp_path / "results.db") as store:
        out = runner.execute(plan, store)
        assert out.status == "completed", out.failures
        prov = store.provenance(out.run_id)
        # 10,000 items + 10,000 stock + 3,000 customers, their history and orders, 900 new orders ...
        (load,) = prov["tpcc_load"]
        assert load["rows"] > 40_000 and load["data_to_buffer_pool"] > 0
        assert prov[f"tpcc_consistency@load:{DB}"]["verdict"] == "PASS"
        (trial,) = store.trials(out.run_id)
        tprov = store.provenance(out.run_id, trial.id)
        f = tprov["tpcc"]
        assert f["tpmC"] > 0 and all(f["types"][t]["count"] > 0 for t in TYPES), f["types"]
        assert f["mix"] == "new_order=40,payment=30,order_status=20,delivery=5,stock_level=5"
        # a weighted draw over a few hundred transactions: a few points either way
        assert 13 <= f["types"]["order_status"]["share_pct"] <= 27, f["types"]
        assert 32 <= f["types"]["new_order"]["share_pct"] <= 48, f["types"]
        assert tprov[f"tpcc_consistency:{DB}"]["verdict"] == "PASS"
        assert tprov["stalls"]["median_tps"] > 0
    # the negative control: a payment's amount lost from one district's history
    conn = admin_connect(pymysql.connect, ep, 10)
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {DB}.district SET d_ytd = d_ytd - 5 WHERE d_w_id = 1 AND d_id = 7")
    conn.close()
    report = check_tpcc(admin_connect(pymysql.connect, ep, 10), ep, DB, "run")
    assert report.failed
    assert report.summary_line() == (
        "TPC-C consistency after run: FAIL: condition 1 (W_YTD = sum(D_YTD) for each warehouse); "
        "condition 9 (D_YTD = sum(H_AMOUNT) for each district)"
    )
    conn = admin_connect(pymysql.connect, ep, 10)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {DB}")
    conn.close()
