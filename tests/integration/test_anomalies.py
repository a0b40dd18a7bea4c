"""The anomaly workloads and checkers on the session's real 3-node Galera cluster: lost updates
without FOR UPDATE and none with it, stale reads with the default session and none with the causal
one, list-append histories checked and exported for Elle, a coordinated crash with
innodb_flush_log_at_trx_commit=0 whose lost acknowledged inserts the ledger reports exactly as an
independent count finds them, a drill with all of it stored, and a soak interrupted with Ctrl-C.
A few seconds of load each."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from clusterbench.checkers.counter import check_counter
from clusterbench.checkers.ledger import check_ledger
from clusterbench.checkers.list_append import check_list_append
from clusterbench.checkers.stale_read import check_stale_reads
from clusterbench.checkers.verdict import Result
from clusterbench.cluster import Cluster
from clusterbench.faults import leftovers
from clusterbench.faults.actions import CoordinatedCrash
from clusterbench.faults.spec import FaultSpec, plan
from clusterbench.history.ops import History, Timebase
from clusterbench.history.txn import txns_from_ops
from clusterbench.scenario.drill import Drill
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.store import Store
from clusterbench.verify.counter import CounterWorkload
from clusterbench.verify.edn import list_append_edn, run_list_append_edn
from clusterbench.verify.ledger import LedgerWorkload
from clusterbench.verify.list_append import ListAppendWorkload
from clusterbench.verify.sessions import documented, statements
from clusterbench.verify.stale_read import StaleReadProbe, ring_pairs
from clusterbench.workloads import SysbenchRunner, build_shim

from .conftest import acknowledged_missing

pytestmark = pytest.mark.integration


def node_endpoints(c: Cluster) -> list[Any]:
    return [c.endpoint(f"node:{i}") for i in c.topology.node_indexes()]


def run_for(workload: Any, c: Cluster, seconds: float) -> None:
    admin = c.nodes()[0]
    workload.setup(admin)
    try:
        workload.start()
        time.sleep(seconds)
    finally:
        assert workload.stop() == []


def drop(workload: Any, c: Cluster) -> None:
    workload.drop(c.nodes()[0])


def test_lost_updates_without_for_update_and_none_with_it(cluster: Cluster) -> None:
    c = cluster
    sess = c.nodes()[0].session
    w = CounterWorkload(node_endpoints(c), History(), Timebase(), session=sess, table="cb_counter_it")
    try:
        run_for(w, c, 4)
        final = w.read_all(c.nodes())
    finally:
        drop(w, c)
    doc = documented(sess, "default")
    rmw = check_counter(w.ops(), final, mode="read-modify-write", documented=doc)
    fu = check_counter(w.ops(), final, mode="for-update", documented=doc)
    inc = check_counter(w.ops(), final, mode="increment", documented=doc)
    # Three clients, one per node, back to back on one row: certification failures (1213) are
    # definite fails; increments computed from a stale read overwrite others'.
    assert rmw.result is Result.FAIL and rmw.documented_limitation, rmw.summary
    assert rmw.evidence["lost"] > 0
    # Every node holds the same value, and it is exactly the acknowledged increments minus those lost.
    (key,) = rmw.evidence["keys"]
    values = set(rmw.evidence["keys"][key]["final"].values())
    assert len(values) == 1 and values.pop() == rmw.evidence["increments"]["ok"] - rmw.evidence["lost"]
    for v in (fu, inc):
        assert v.evidence["increments"]["ok"] > 50
        (key,) = v.evidence["keys"]
        values = set(v.evidence["keys"][key]["final"].values())
        assert len(values) == 1, v.summary  # every node holds one value
        value, inc_ok = values.pop(), v.evidence["increments"]["ok"]
        if v.result is Result.FAIL:
            # Jepsen found lost updates (P4) in healthy Galera clusters (MariaDB Galera Cluster
            # 12.1.2, 2026), with appends the server computes. Seen here twice among many suite
            # runs, with other tests loading the machine: 4 of 1,233 and 101 of 1,162 acknowledged
            # `v = v + 1` increments lost. A real finding the checker must report as a FAIL, not
            # as a documented limitation, with its arithmetic exact; how many are lost is the
            # server's doing, so no bound on it is asserted.
            assert not v.documented_limitation, v.summary
            assert 0 < v.evidence["lost"] == inc_ok - value, v.summary
        else:
            assert v.result is Result.PASS, v.summary
            assert inc_ok <= value <= inc_ok + v.evidence["increments"]["unknown"]


def test_stale_reads_in_the_default_session_none_in_the_causal_one(cluster: Cluster) -> None:
    c = cluster
    sess = c.nodes()[0].session
    p = StaleReadProbe(
        ring_pairs(node_endpoints(c)), History(), Timebase(), session=sess, rate=0, table="cb_stale_it"
    )
    try:
        run_for(p, c, 4)
    finally:
        drop(p, c)
    default = check_stale_reads(
        p.ops(),
        session="default",
        statements=statements(sess, "default"),
        documented=documented(sess, "default"),
    )
    causal = check_stale_reads(
        p.ops(),
        session="causal",
        statements=statements(sess, "causal"),
        documented=documented(sess, "causal"),
    )
    assert causal.result is Result.PASS, causal.summary
    assert causal.evidence["reads"] > 100 and causal.evidence["stale"] == 0
    assert causal.summary.startswith(f"no stale read: not observed in {causal.evidence['reads']} reads")
    assert "wsrep_sync_wait=1" in causal.summary  # the statement comes from the engine's SessionSql
    # Stale reads at wsrep_sync_wait=0 are documented; usually seen (here 10-35 % of reads), but a
    # run that sees none says so with the number of reads.
    assert default.evidence["reads"] > 100
    if default.result is Result.FAIL:
        assert default.documented_limitation and default.evidence["stale"] > 0
        assert default.evidence["staleness_ms"]["max"] >= 0
    else:
        assert default.result is Result.PASS and "not observed in" in default.summary


@pytest.mark.parametrize("reads", ["plain", "for-update"])
def test_list_append_history_is_checked_and_exported_for_elle(cluster: Cluster, reads: str) -> None:
    c = cluster
    sess = c.nodes()[0].session
    w = ListAppendWorkload(
        node_endpoints(c), History(), Timebase(), keys=4, rate=0, reads=reads, session=sess,
        table=f"cb_append_it_{reads.replace('-', '')}", seed=1,
    )  # fmt: skip
    try:
        run_for(w, c, 3)
        assert w.final_reads(c.nodes()) == {}
    finally:
        drop(w, c)
    txns = txns_from_ops(w.ops())
    assert sum(1 for t in txns if t.final) == 3
    doc = set(documented(sess, "default"))
    if reads == "for-update":
        doc -= {"lost-update", "internal"}
    v = check_list_append(txns, documented=doc)
    ok = v.evidence["outcomes"]["ok"]
    assert ok > 100 and v.evidence["graph"]["edges"]["wr"] > 0
    assert v.result in (Result.PASS, Result.FAIL), v.summary
    # No acknowledged append is ever missing from a node, and every final read agrees.
    assert (
        "lost-append" not in v.evidence["anomalies"] and "incompatible-order" not in v.evidence["anomalies"]
    )
    if reads == "for-update":
        # Reads that lock what they read: no lost update (P4) with FOR UPDATE.
        assert "lost-update" not in v.evidence["anomalies"], v.summary
    edn = list_append_edn(txns)
    lines = edn.splitlines()
    assert len(lines) == 2 * len(txns)
    assert lines[0].startswith("{:type :invoke, :f :txn, :value [[")
    assert all(re.search(r":type :(invoke|ok|fail|info)", line) for line in lines)


def test_coordinated_crash_with_flush_0_loses_what_the_ledger_says(cluster: Cluster) -> None:
    """N1: every node killed within 0.3 s after commits were acknowledged with
    innodb_flush_log_at_trx_commit=0 (set at runtime; the restart brings back the file's value).
    The ledger's lost keys must be exactly the acknowledged keys an independent count misses."""
    c = cluster
    nodes = c.nodes()
    for n in nodes:
        n.query("SET GLOBAL innodb_flush_log_at_trx_commit = 0")
    h, tb = History(), Timebase()
    ledger = LedgerWorkload(node_endpoints(c), h, tb, clients=6, rate=100, table="cb_ledger_n1")
    ledger.setup(nodes[0])
    spec = FaultSpec.model_validate({"kind": "coordinated-crash", "at": 0, "for": 1, "window": 0.3})
    (fault,) = plan([spec], nodes=3, balancers=1, trial_time=10, seed=5)
    crash = CoordinatedCrash(c, fault)
    try:
        ledger.start()
        time.sleep(3)
        detail = crash.apply()
        assert len(detail["killed"]) == 3 and detail["at_s"][-1] <= 0.3 + 0.5
        time.sleep(0.5)
        ledger.stop()
        healed = crash.heal()
        for n in c.nodes():
            n.wait_ready(120, expect_size=3)
        # The restart read the configuration file again: flushing is back to its value there.
        assert {int(n.query("SELECT @@innodb_flush_log_at_trx_commit")[0][0]) for n in c.nodes()} == {
            c.topology.mariadb.innodb_flush_log_at_trx_commit
        }, healed
        per_node = ledger.read_all(c.nodes())
        verdict = check_ledger(ledger.ops(), per_node)
        # An independent count: which acknowledged rows does each node have?
        ok_keys, lost_any = acknowledged_missing(
            c, ledger.ops(), "cb_ledger_n1", "SET SESSION wsrep_sync_wait=0"
        )
        assert len(ok_keys) > 100
        if lost_any:
            assert verdict.result is Result.FAIL, verdict.summary
            assert verdict.evidence["lost"]["count"] == len(lost_any)
        else:
            # flush=0 keeps up to a second of commits in memory; a crash that happened to lose
            # none is possible: then the ledger must agree that none were lost.
            assert verdict.result is Result.PASS, verdict.summary
        print(f"N1: {len(ok_keys)} acknowledged, {len(lost_any)} lost; ledger: {verdict.summary}")
    finally:
        with contextlib.suppress(Exception):
            ledger.stop()
        crash.heal()
        for n in c.nodes():
            n.wait_ready(120, expect_size=3)
        with contextlib.suppress(Exception):
            ledger.drop(c.nodes()[0])


def _scenario(duration: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": "anomalies it",
        "seed": 4,
        "load": {"workload": "oltp_read_write", "threads": 1, "duration": duration, "tables": 1,
                 "table_size": 500, "rate": 20},
        "verify": {"ledger_clients": 1, "prober": False},
        "anomalies": {
            "counter": {"modes": ["read-modify-write", "increment"], "rate": 100},
            "stale_read": {"rate": 50},
            "list_append": {"rate": 30, "keys": 4},
        },
        **extra,
    }  # fmt: skip


def test_drill_with_anomalies_and_a_coordinated_crash_stores_everything(
    cluster: Cluster, tmp_path: Path
) -> None:
    spec = ScenarioSpec.model_validate(
        _scenario(
            14, fault=[{"kind": "coordinated-crash", "target": "all", "window": 0.5, "at": 4, "for": 3}]
        )
    )
    faults = spec.planned(3, 1, "test")
    db = tmp_path / "r.db"
    drill = Drill(cluster, spec, db, SysbenchRunner(shim=build_shim(cluster.home / "lib")))
    out = drill.run("test", faults)
    by = {v.checker: v for v in out.verdicts}
    for name in ("counter:read-modify-write", "counter:increment", "stale-read:default", "stale-read:causal",
                 "list-append:default/plain", "ledger"):  # fmt: skip
        assert name in by, sorted(by)
    # Server-side increments survive a crash of every node with flush=2 (a process crash).
    assert by["counter:increment"].result is Result.PASS, by["counter:increment"].summary
    assert by["stale-read:causal"].result is Result.PASS, by["stale-read:causal"].summary
    assert by["ledger"].result is Result.PASS, by["ledger"].summary
    with Store.open(db) as s:
        stored = {v["checker"]: v for v in s.verdicts(out.run_id)}
        assert set(by) <= set(stored)
        prov = s.provenance(out.run_id)
        assert prov["fault_schedule"]["seed"] == 4
        assert prov["fault_schedule"]["faults"][0]["params"]["window"] == 0.5
        assert prov["scenario"]["anomalies"]["counter"]["modes"] == ["read-modify-write", "increment"]
        [trial] = s.trials(out.run_id)
        assert {o["workload"] for o in s.ops(trial.id)} >= {"counter", "stale-read", "list-append", "ledger"}
        edn = run_list_append_edn(s, out.run_id)
        assert edn.count(":type :invoke") > 50
    # The trial's own tables are gone.
    tables = {r[0] for r in cluster.nodes()[0].query("SHOW TABLES FROM sbtest LIKE 'cb\\_%'")}
    assert not any(re.match(r"cb_(counter|stale|append)_t\d+_", t) for t in tables), tables


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            out += [int(x) for x in (task / "children").read_text().split()]
    return out


def _runs(db: Path) -> Sequence[Any]:
    if not db.exists():
        return []
    with Store.open(db) as s:
        return s.list_runs()


def test_soak_interrupted_with_ctrl_c_leaves_nothing_running_and_keeps_histories(
    cluster: Cluster, tmp_path: Path
) -> None:
    scen = tmp_path / "soak.toml"
    scen.write_text(
        "name = 'soak it'\nseed = 1\n"
        "[load]\nthreads = 1\nduration = 8\ntables = 1\ntable_size = 500\nrate = 20\n"
        "[verify]\nledger_clients = 1\nprober = false\n"
        "[anomalies]\ncheckers = ['counter', 'list-append']\n"
        "[anomalies.counter]\nmodes = ['increment']\nrate = 50\n"
        "[anomalies.list_append]\nrate = 20\n"
    )
    db = tmp_path / "r.db"
    env = {**os.environ, "CLUSTERBENCH_HOME": str(cluster.home), "COLUMNS": "200"}
    p = subprocess.Popen(
        [sys.executable, "-m", "clusterbench", "soak", str(scen), "--trials", "5", "--results", str(db),
         "-n", cluster.topology.name],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and len(_runs(db)) < 2:
            time.sleep(0.5)
        assert len(_runs(db)) == 2, "the second trial never started"
        time.sleep(4)  # inside the second trial's load
        kids = _children(p.pid)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=180)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    # The table of what was seen so far, and the runs.
    assert "soak: 2 trial(s) of soak it" in out or "soak: 1 trial(s) of soak it" in out, out
    assert "trials where seen" in out
    # Nothing left running: no load client, no fault; the cluster serves.
    for k in kids:
        assert not Path(f"/proc/{k}").exists() or "Z" in Path(f"/proc/{k}/stat").read_text().split()[2], k
    assert leftovers.find(cluster) == []
    for n in cluster.nodes():
        n.wait_ready(60, expect_size=3)
    with Store.open(db) as s:
        runs = s.list_runs()
        assert [r.status for r in runs] == ["completed", "interrupted"]
        for r in runs:
            [trial] = s.trials(r.id)
            assert len(s.ops(trial.id, "counter")) > 0, "histories stay in the store"
        assert any(v["checker"] == "counter:increment" for v in s.verdicts(runs[0].id))
