"""MySQL Group Replication (9.x from Debian unstable, chrooted into its rootfs) as a clusterbench
engine, against real mysqld members in namespaces, HAProxy's write and read endpoints, and the
heal rules. Behaviour both engines share runs on both (the `either` fixture)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest

from clusterbench.checkers import check_bank, check_convergence, check_ledger
from clusterbench.checkers.verdict import Result
from clusterbench.cluster import Cluster
from clusterbench.engines.group_replication import rootfs
from clusterbench.engines.group_replication.node import GRNode
from clusterbench.errors import PreflightError
from clusterbench.scenario.drill import Drill
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.verify import BankWorkload, History, LedgerWorkload, Outcome, Timebase, collect_convergence
from clusterbench.workloads import SysbenchRunner, build_shim

from .conftest import (
    DRILL_RATE,
    NAME,
    acknowledged_missing,
    all_ready,
    gr_skip_reason,
    gr_topology,
    leftovers,
    make_topology,
    writers,
)

pytestmark = pytest.mark.integration


@pytest.fixture(params=["galera", "group_replication"])
def either(request: pytest.FixtureRequest) -> Cluster:
    """The session's Galera cluster or its Group Replication cluster."""
    c: Cluster = request.getfixturevalue("cluster" if request.param == "galera" else "gr_cluster")
    return c


def gr(node: object) -> GRNode:
    assert isinstance(node, GRNode)
    return node


def app_conn(c: Cluster, target: str = "balancer") -> pymysql.connections.Connection:
    ep = c.endpoint(target)
    a = ep.addresses[0]
    return pymysql.connect(
        host=a.host, port=a.port, user=ep.user, password=ep.password, database="sbtest",
        autocommit=True, connect_timeout=3, read_timeout=10, write_timeout=10,
    )  # fmt: skip


def sql(c: Cluster, stmt: str, target: str = "balancer") -> tuple[tuple[object, ...], ...]:
    conn = app_conn(c, target)
    try:
        with conn.cursor() as cur:
            cur.execute(stmt)
            return tuple(cur.fetchall())
    finally:
        conn.close()


# ---------------------------------------------------------------- Group Replication's own


def test_up_gives_one_primary_and_two_secondaries(gr_cluster: Cluster) -> None:
    st = gr_cluster.status()
    views = [
        (v.index, v.health.state, v.health.role, v.health.size, v.health.ready) for v in st.nodes if v.health
    ]
    assert sorted(views) == [
        (1, "ONLINE", "PRIMARY", 3, True),
        (2, "ONLINE", "SECONDARY", 3, True),
        (3, "ONLINE", "SECONDARY", 3, True),
    ]
    assert len({v.health.group_id for v in st.nodes if v.health}) == 1
    # HAProxy: writes only to the primary, reads over the secondaries.
    ups = sorted((b.proxy, b.name) for b in st.backends if b.up)
    assert ups == [("read", "n2"), ("read", "n3"), ("write", "n1")]
    for n in gr_cluster.nodes():
        assert n.proc is not None
        ns = subprocess.run(
            ["ip", "netns", "identify", str(n.proc.pid)], capture_output=True, text=True
        ).stdout
        assert ns.strip() == f"cb-{NAME}-n{n.index}"
        status = Path(f"/proc/{n.proc.pid}/status").read_text()
        assert int(status.split("Uid:")[1].split()[0]) != 0  # mysqld dropped to mysql
        # The chroot hides the node directory; mysqld's command line still names it.
        assert str(n.dir) in Path(f"/proc/{n.proc.pid}/cmdline").read_bytes().decode(errors="replace")
        assert Path(f"/proc/{n.proc.pid}/root").resolve() == rootfs.rootfs_dir().resolve()


def test_write_endpoint_reaches_the_primary_and_read_endpoint_a_secondary(gr_cluster: Cluster) -> None:
    sql(gr_cluster, "CREATE TABLE IF NOT EXISTS sbtest.grw (id INT PRIMARY KEY, v VARCHAR(20))")
    sql(gr_cluster, "REPLACE INTO sbtest.grw VALUES (1, 'via-balancer')")
    assert sql(gr_cluster, "SELECT @@report_host") == ((gr_cluster.topology.node_address(1),),)
    conn = app_conn(gr_cluster, "balancer-read")
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION group_replication_consistency='BEFORE'")
            cur.execute("SELECT @@report_host, @@super_read_only, v FROM sbtest.grw WHERE id=1")
            host, ro, v = cur.fetchone()  # type: ignore[misc]
    finally:
        conn.close()
    assert host in (gr_cluster.topology.node_address(2), gr_cluster.topology.node_address(3))
    assert (ro, v) == (1, "via-balancer")
    with pytest.raises(pymysql.MySQLError) as info:
        gr(gr_cluster.node(2)).query("INSERT INTO sbtest.grw VALUES (2, 'on-a-secondary')")
    assert info.value.args[0] == 1290  # --super-read-only


def test_sysbench_against_the_write_endpoint(gr_cluster: Cluster) -> None:
    ep = gr_cluster.endpoint("balancer")
    a = ep.addresses[0]
    base = [
        "sysbench", "--db-driver=mysql", f"--mysql-host={a.host}", f"--mysql-port={a.port}",
        f"--mysql-user={ep.user}", f"--mysql-password={ep.password}", "--mysql-db=sbtest",
        "--tables=1", "--table-size=1000",
    ]  # fmt: skip
    subprocess.run([*base, "oltp_read_write", "cleanup"], capture_output=True, text=True)
    prep = subprocess.run([*base, "oltp_read_write", "prepare"], capture_output=True, text=True, timeout=120)
    assert prep.returncode == 0, prep.stderr
    run = subprocess.run(
        [*base, "--threads=2", "--time=3", "oltp_read_write", "run"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    tps = float(run.stdout.split("transactions:")[1].split("(")[1].split()[0])
    assert tps > 10


def test_losing_the_majority_heals_by_rebooting_the_group(gr_cluster: Cluster) -> None:
    c = gr_cluster
    (primary,) = writers(c)
    victims = [i for i in c.topology.node_indexes() if i != primary]
    for i in victims:
        c.node_kill(i)
    # The survivor suspects the others after ~5 s; then it is ONLINE in a view it cannot commit in.
    deadline = time.monotonic() + 30
    h = c.node(primary).health()
    while h is not None and h.in_quorum and time.monotonic() < deadline:
        time.sleep(0.2)
        h = c.node(primary).health()
    assert h is not None and h.state == "ONLINE" and not h.in_quorum and not h.writable
    out = c.restart_nodes(victims)
    print("heal after a lost majority:", out)
    assert out[0] == "no member is in a group with a majority: rebooting the group", out
    # mysqld's own shutdown waits for the blocked group to let it leave: SIGKILL after the bound.
    assert any(
        line.startswith(f"n{primary} ") and line.endswith("(its group had no majority)") for line in out
    )
    all_ready(c)
    assert len(writers(c)) == 1


def test_rootfs_missing_refuses_up_in_one_line(cb_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERBENCH_ROOTFS", str(cb_home / "no-rootfs"))
    c = Cluster(gr_topology("cbgrnr", "198.18.204.0/24"), home=cb_home)
    with pytest.raises(PreflightError) as info:
        c.up()
    msg = str(info.value)
    assert len(msg.splitlines()) == 1
    assert str(cb_home / "no-rootfs") in msg and "clusterbench rootfs build" in msg
    assert leftovers("cbgrnr") == []


# ---------------------------------------------------------------- shared with Galera


def test_shared_kill_a_node_and_heal(either: Cluster) -> None:
    c = either
    victim = max(
        i for i in c.topology.node_indexes() if i not in writers(c) or c.topology.engine.kind == "galera"
    )
    c.node_kill(victim)
    out = c.restart_nodes([victim])
    assert any(f"n{victim}" in line for line in out), out
    all_ready(c)
    assert writers(c)


def test_shared_cold_start_after_every_node_was_killed_keeps_acknowledged_writes(either: Cluster) -> None:
    c = either
    sql(c, "CREATE TABLE IF NOT EXISTS sbtest.cold (id INT PRIMARY KEY)")
    sql(c, "DELETE FROM sbtest.cold")
    for k in range(1, 21):
        sql(c, f"INSERT INTO sbtest.cold VALUES ({k})")
    for i in c.topology.node_indexes():
        c.node_kill(i)
    c.start_all()
    all_ready(c)
    for h in c.haproxies():
        h.wait_all_up([f"n{i}" for i in c.topology.node_indexes()], timeout=30)
    assert sql(c, "SELECT COUNT(*) FROM sbtest.cold") == ((20,),)
    sql(c, "DROP TABLE sbtest.cold")  # the worker's session cluster serves other files' tests next


def test_multi_primary_every_member_takes_writes(cb_home: Path) -> None:
    reason = gr_skip_reason()
    if reason:
        pytest.skip(reason)
    name = "cbgrmp"
    c = Cluster(gr_topology(name, "198.18.211.0/24", mode="multi-primary"), home=cb_home)
    c.up()
    try:
        st = c.status()
        assert sorted((v.index, v.health.state, v.health.writable) for v in st.nodes if v.health) == [
            (1, "ONLINE", True),
            (2, "ONLINE", True),
            (3, "ONLINE", True),
        ]
        want = [(r, f"n{i}") for r in ("read", "write") for i in (1, 2, 3)]
        deadline = time.monotonic() + 15  # up waits until each node is UP on one route, not on both
        while sorted((b.proxy, b.name) for b in c.status().backends if b.up) != want:
            assert time.monotonic() < deadline, c.status().backends
            time.sleep(0.2)
        gr(c.node(1)).query("CREATE TABLE sbtest.mp (id INT PRIMARY KEY, n VARCHAR(4))")
        for i in (1, 2, 3):
            gr(c.node(i)).query(f"INSERT INTO sbtest.mp VALUES ({i}, 'n{i}')")
        with c.node(3).connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION group_replication_consistency='BEFORE'")
            cur.execute("SELECT COUNT(*) FROM sbtest.mp")
            assert cur.fetchone() == (3,)
    finally:
        c.down()
    assert leftovers(name) == []


# ---------------------------------------------------------------- anomaly checkers over GR


def test_anomaly_workloads_and_checkers_on_a_single_primary_group(
    gr_cluster: Cluster, tmp_path: Path
) -> None:
    """The anomaly companion of a drill on Group Replication, through the engine interface only:
    its writers are the nodes whose health says writable (the primary), the stale-read probe reads
    on the secondaries, the sessions come from GR's SessionSql (the group's own consistency vs BEFORE)."""
    from clusterbench.checkers.verdict import Result
    from clusterbench.store import Store

    c = gr_cluster
    (primary,) = writers(c)
    spec = ScenarioSpec.model_validate(
        {
            "name": "anomalies on gr",
            "seed": 2,
            "load": {"workload": "oltp_read_write", "threads": 1, "duration": 8, "tables": 1,
                     "table_size": 500, "rate": 20},
            "verify": {"ledger_clients": 1, "prober": False},
            "anomalies": {
                "counter": {"modes": ["read-modify-write", "for-update", "increment"]},
                "stale_read": {"rate": 0},
                "list_append": {"rate": 0, "keys": 4},
            },
        }
    )  # fmt: skip
    db = tmp_path / "r.db"
    faults = spec.planned(3, 1, "test")
    drill = Drill(c, spec, db, SysbenchRunner(shim=build_shim(c.home / "lib")))
    out = drill.run("test", faults)
    by = {v.checker: v for v in out.verdicts}
    for v in out.verdicts:
        print(f"GR {v.checker}: {v.result.value} {v.summary}")
    assert by["trial"].result is Result.PASS, by["trial"].summary
    assert by["ledger"].result is Result.PASS, by["ledger"].summary
    # Counters: every client on the primary. FOR UPDATE and v = v + 1 lose nothing.
    for mode in ("for-update", "increment"):
        v = by[f"counter:{mode}"]
        assert v.result is Result.PASS and v.evidence["increments"]["ok"] > 50, v.summary
    rmw = by["counter:read-modify-write"]
    assert rmw.evidence["increments"]["ok"] > 50, rmw.summary
    if rmw.result is Result.FAIL:  # InnoDB's REPEATABLE READ: documented, never a broken promise
        assert rmw.documented_limitation and rmw.evidence["lost"] > 0, rmw.summary
    else:
        assert rmw.result is Result.PASS, rmw.summary
    # Reads on the secondaries: BEFORE waits for every transaction the group ordered before it.
    causal = by["stale-read:causal"]
    assert causal.result is Result.PASS and causal.evidence["stale"] == 0, causal.summary
    assert causal.evidence["reads"] > 50
    assert causal.evidence["statements"] == ["SET SESSION group_replication_consistency='BEFORE'"]
    assert set(causal.evidence["by_pair"]) == {f"node:{primary}>node:{i}" for i in (1, 2, 3) if i != primary}
    default = by["stale-read:default"]
    assert default.evidence["reads"] > 50
    if default.result is Result.FAIL:
        assert default.documented_limitation and default.evidence["stale"] > 0, default.summary
    else:
        assert default.result is Result.PASS and "not observed in" in default.summary
    la = by["list-append:default/plain"]
    assert la.evidence["outcomes"]["ok"] > 50, la.summary
    never = {"G0", "G1a", "G1b", "G1c", "lost-append", "incompatible-order", "phantom-value"}
    assert not set(la.evidence["anomalies"]) & never, la.summary
    assert la.result is Result.PASS or la.documented_limitation, la.summary
    with Store.open(db) as s:
        [ev] = [e for e in s.events(out.run_id) if e["kind"] == "anomaly_tables"]
        assert ev["detail"]["writers"] == [f"node:{primary}"]


def test_bank_negative_control_on_the_primary_without_for_update_fails_with_it_holds(
    gr_cluster: Cluster,
) -> None:
    """test_verify.py's bank negative control (Galera there), on a single primary: 6 clients
    through the write endpoint, so every transfer runs on one member. Without FOR UPDATE, a
    transfer's read and its UPDATE of a computed balance lose concurrent updates under REPEATABLE
    READ (documented: FAIL, a documented limitation); with it, the total holds."""
    c = gr_cluster
    for for_update, seconds in ((False, 4.0), (True, 4.0)):
        h = History()
        bank = BankWorkload(
            [c.endpoint("balancer")], h, Timebase(), accounts=3, clients=6, rate=40, read_fraction=0.2,
            for_update=for_update, think_time=0.005, seed=7, table=f"cb_bank_{secrets.token_hex(3)}",
        )  # fmt: skip
        bank.setup(c.node(writers(c)[0]))
        bank.start()
        time.sleep(seconds)
        assert bank.stop() == []
        try:
            v = check_bank(h.ops(), bank.read_all(c.nodes()), **bank.params)
            print(f"GR bank for_update={for_update}:", v.summary, v.evidence["transfers"])
            assert v.evidence["transfers"]["ok"] > 50, v.summary
            if for_update:
                assert v.result is Result.PASS, v.summary
                assert not v.documented_limitation
            else:
                assert v.result is Result.FAIL and v.documented_limitation, v.summary
                assert v.evidence["bad_final"] != {}, v.summary  # the total broke on every member
        finally:
            bank.drop(c.node(writers(c)[0]))


def test_cli_fault_kill_primary_twice_in_a_row_passes_and_prints_the_failover(gr_cluster: Cluster) -> None:
    """Two kill-primary drills in a row on one group: the second starts where the first left it
    (node 1 a secondary, the primary elsewhere) and must set up its verification tables on the
    new primary, not on the first running member (which refused with 1290, super-read-only).
    30 s of load: the group shrinks and elects about 16 s after the kill (GCS's 15 s suspicion
    check), 22 s into a run with the kill at 5 s; a 20 s run ended before it."""
    c = gr_cluster
    env = {**os.environ, "CLUSTERBENCH_HOME": str(c.home), "COLUMNS": "200"}
    victims = []
    for drill in (1, 2):
        (before,) = writers(c)
        victims.append(before)
        res = subprocess.run(
            [sys.executable, "-m", "clusterbench", "fault", "kill-node", "--target", "primary", "--at", "5",
             "--for", "12", "--duration", "30", "--threads", "2", "--load-rate", str(DRILL_RATE),
             "-n", c.topology.name],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        print(f"drill {drill}:", res.stdout[-4000:])
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        assert "Traceback" not in res.stderr
        assert f"kill-node n{before}" in res.stdout
        rows = [ln.replace("│", " ").replace("┃", " ").split() for ln in res.stdout.splitlines()]
        checkers = ("ledger", "convergence", "split-brain", "availability", "trial")
        verdicts = {r[0]: r[1] for r in rows if len(r) > 1 and r[0] in checkers}
        assert set(verdicts) >= {"ledger", "convergence", "split-brain", "availability"}, res.stdout
        assert set(verdicts.values()) == {"PASS"}, verdicts
        assert "overall: PASS" in res.stdout
        # The failover table: the victim was the primary, a new one was elected, writes went on.
        row = next(r for r in rows if r[:3] == ["kill-node", f"n{before}", "yes"])
        figures = [float(x) for x in row[3:] if x.replace(".", "", 1).isdigit()]
        assert len(figures) >= 4, row
        suspected, shrunk, elected, writes = figures[:4]
        assert 0 < suspected <= shrunk <= 30 and 0 < elected <= 30 and 0 < writes <= 30, row
        # The command restarted the victim: this session's Cluster must see its new process.
        c.state = Cluster.load(c.topology.name, home=c.home).state
        assert f"n{before} rejoined" in res.stdout, res.stdout[-2000:]
        all_ready(c)
        (after,) = writers(c)
        assert after != before  # no preemption: the old primary came back as a secondary
    assert victims[0] != victims[1]


def test_cli_status_sql_logs_and_a_missing_rootfs(gr_cluster: Cluster, tmp_path: Path) -> None:
    c = gr_cluster
    env = {**os.environ, "CLUSTERBENCH_HOME": str(c.home), "COLUMNS": "200"}

    def cli(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "clusterbench", *args], env={**env, **extra}, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip

    (primary,) = writers(c)
    st = cli("status", "-n", c.topology.name)
    assert st.returncode == 0, st.stderr
    rows = [ln.replace("│", " ").split() for ln in st.stdout.splitlines()]
    roles: dict[str, list[str]] = {}
    for r in rows:
        if r and r[0] in ("n1", "n2", "n3"):
            roles.setdefault(r[0], r)  # the node table comes first
    assert set(roles) == {"n1", "n2", "n3"}, st.stdout
    assert "PRIMARY" in roles[f"n{primary}"] and all("ONLINE" in r for r in roles.values()), st.stdout
    secondary = next(i for i in (1, 2, 3) if i != primary)
    assert "SECONDARY" in roles[f"n{secondary}"], st.stdout
    q = cli("sql", str(secondary), "-n", c.topology.name, "-e", "SELECT @@super_read_only, @@version_comment")
    assert q.returncode == 0, q.stderr
    assert "1" in q.stdout.split() and "(Debian)" in q.stdout, q.stdout
    lg = cli("logs", str(primary), "-n", c.topology.name, "--lines", "5")
    assert lg.returncode == 0 and len(lg.stdout.strip().splitlines()) >= 1, lg.stderr
    # The rootfs missing: `up` says how to make it, in one line, exit 2, nothing started.
    topo = tmp_path / "gr.toml"
    topo.write_text(
        '[cluster]\nname = "cbgrnr2"\nsubnet = "198.18.204.0/24"\n[engine]\nkind = "group_replication"\n'
    )
    up = cli("up", "-f", str(topo), CLUSTERBENCH_ROOTFS=str(tmp_path / "no-rootfs"))
    assert up.returncode == 2, up.stdout + up.stderr
    err = [ln for ln in up.stderr.splitlines() if ln.strip()]
    assert (
        len(err) == 1 and "clusterbench rootfs build" in err[0] and str(tmp_path / "no-rootfs") in err[0]
    ), err
    assert leftovers("cbgrnr2") == []


def test_shared_negative_controls_a_change_on_one_node_fails_convergence_and_ledger(either: Cluster) -> None:
    """The checkers can fail on either engine: a change made on one writer only, through the
    engine's own unreplicated session (Galera: wsrep_on=OFF; GR: sql_log_bin=0 on the primary)."""
    c = either
    w = writers(c)[0]
    node = c.node(w)

    def local(*statements: str) -> None:
        with node.connect() as conn, conn.cursor() as cur:
            for s in (*node.session.unreplicated, *statements):
                cur.execute(s)

    def converged() -> Any:
        return check_convergence(collect_convergence(c.nodes(), ["sbtest"], timeout=30), 3)

    table = f"sbtest.cb_negc_{secrets.token_hex(3)}"
    h = History()
    led = LedgerWorkload(
        [c.endpoint("balancer")], h, Timebase(), table=f"cb_negl_{secrets.token_hex(3)}", clients=2, rate=20
    )
    node.query(f"CREATE TABLE {table} (id INT PRIMARY KEY, v INT NOT NULL)")
    try:
        node.query(f"INSERT INTO {table} VALUES (1, 10), (2, 20), (3, 30)")
        assert converged().result is Result.PASS
        local(f"UPDATE {table} SET v = 21 WHERE id = 2")
        bad = converged()
        assert bad.result is Result.FAIL, bad.summary
        assert list(bad.evidence["mismatched_tables"]) == [table]
        per = bad.evidence["mismatched_tables"][table]
        others = [f"n{i}" for i in c.topology.node_indexes() if i != w]
        assert per[others[0]] == per[others[1]] != per[f"n{w}"]
        local(f"UPDATE {table} SET v = 20 WHERE id = 2")
        assert converged().result is Result.PASS

        led.setup(node)
        led.start()
        time.sleep(1.5)
        assert led.stop() == []
        ok = [o for o in h.ops("ledger") if o.outcome is Outcome.OK]
        assert len(ok) >= 20
        assert check_ledger(h.ops("ledger"), led.read_all(c.nodes())).result is Result.PASS
        assert ok[5].key is not None
        cl, seq = ok[5].key.split(":")
        local(f"DELETE FROM {led.table} WHERE client = {cl} AND seq = {seq}")
        lost = check_ledger(h.ops("ledger"), led.read_all(c.nodes()))
        assert lost.result is Result.FAIL
        assert lost.evidence["lost"] == {"count": 1, "examples": [{"key": ok[5].key, "nodes": [f"n{w}"]}]}
        local(f"INSERT INTO {led.table} VALUES ({cl}, {seq}, '{cl}-{seq}')")
        assert check_ledger(h.ops("ledger"), led.read_all(c.nodes())).result is Result.PASS
    finally:
        node.query(f"DROP TABLE IF EXISTS {table}")
        led.drop(node)
        all_ready(c)


def test_coordinated_crash_with_flush_0_on_a_group_loses_what_the_ledger_says(gr_cluster: Cluster) -> None:
    """N1 on Group Replication: every member killed within 0.3 s while the primary acknowledges
    inserts with innodb_flush_log_at_trx_commit=0 (and sync_binlog=0), then the engine's cold start
    from the member with the most transactions. The ledger's lost keys must be exactly the
    acknowledged keys an independent SELECT on each member misses."""
    from clusterbench.checkers.ledger import check_ledger
    from clusterbench.checkers.verdict import Result
    from clusterbench.faults.actions import CoordinatedCrash
    from clusterbench.faults.spec import FaultSpec, plan
    from clusterbench.history.ops import History, Timebase
    from clusterbench.verify.ledger import LedgerWorkload

    c = gr_cluster
    (primary,) = writers(c)
    for n in c.nodes():
        n.query("SET GLOBAL innodb_flush_log_at_trx_commit = 0")
    ledger = LedgerWorkload(
        [c.endpoint(f"node:{primary}")], History(), Timebase(), clients=6, rate=100, table="cb_ledger_grn1"
    )
    ledger.setup(c.node(primary))
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
        all_ready(c)
        assert {int(n.query("SELECT @@innodb_flush_log_at_trx_commit")[0][0]) for n in c.nodes()} == {
            c.topology.mysql.innodb_flush_log_at_trx_commit
        }, healed
        verdict = check_ledger(ledger.ops(), ledger.read_all(c.nodes()))
        ok_keys, lost_any = acknowledged_missing(
            c, ledger.ops(), "cb_ledger_grn1", "SET SESSION group_replication_consistency='BEFORE'"
        )
        assert len(ok_keys) > 100
        if lost_any:
            assert verdict.result is Result.FAIL, verdict.summary
            assert verdict.evidence["lost"]["count"] == len(lost_any)
        else:
            assert verdict.result is Result.PASS, verdict.summary
        print(
            f"GR N1: {len(ok_keys)} acknowledged, {len(lost_any)} lost; ledger: {verdict.summary}; "
            f"heal: {healed}"
        )
    finally:
        with contextlib.suppress(Exception):
            ledger.stop()
        crash.heal()
        all_ready(c)
        with contextlib.suppress(Exception):
            ledger.drop(c.node(writers(c)[0]))


def test_keepalived_pair_in_front_of_the_primary_moves_the_vip(cb_home: Path) -> None:
    """Two HAProxies sharing a VIP work unchanged in front of Group Replication: the VIP's port is
    the write endpoint (the primary), and killing the HAProxy that holds it moves it. Member 3's
    datadir is a file system of its own (what disk-full fills): the chrooted mysqld sees it
    (`mount --rbind`; with --bind, InnoDB saw the empty directory under it and `up` failed)."""
    reason = gr_skip_reason()
    if reason:
        pytest.skip(reason)
    if shutil.which("keepalived", path="/usr/sbin:/usr/bin:/sbin:/bin") is None:
        pytest.skip("keepalived is not installed; run `make setup`")
    name = os.environ.get("CB_TEST_GR_VIP_CLUSTER", "cbgrvip")
    subnet = os.environ.get("CB_TEST_GR_VIP_SUBNET", "198.18.217.0/24")
    topo = make_topology(
        name, subnet, engine={"kind": "group_replication"}, mysql={"member_expel_timeout": 1},
        balancer={"count": 2, "advert_int": 1.0}, node=[{"index": 3, "datadir_size": "512M"}],
    )  # fmt: skip
    c = Cluster(topo, home=cb_home)
    c.up()
    try:
        from clusterbench.providers import datadirfs

        n3 = c.node(3)
        assert datadirfs.fs_of_its_own(n3.host, n3.datadir, 512 * 2**20)
        assert (n3.datadir / "mysql.ibd").exists()  # the member's files are on it
        assert c.wait_vip(15) == "lb1"
        (primary,) = writers(c)
        sql(c, "CREATE TABLE sbtest.grvip (id INT PRIMARY KEY)", target="vip")
        sql(c, "INSERT INTO sbtest.grvip VALUES (1)", target="vip")
        assert sql(c, "SELECT @@report_host", target="vip") == ((topo.node_address(primary),),)
        assert c.balancer_kill(1) == "haproxy lb1 killed (it held the VIP)"
        t0 = time.monotonic()
        assert c.wait_vip(15, not_on="lb1", poll=0.02) == "lb2"
        deadline = time.monotonic() + 15
        while True:
            try:
                sql(c, "INSERT INTO sbtest.grvip VALUES (2)", target="vip")
                break
            except pymysql.MySQLError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        took = time.monotonic() - t0
        print(f"VIP moved to lb2 and writes through it reached the primary again {took:.1f} s after the kill")
        assert sql(c, "SELECT @@report_host, COUNT(*) FROM sbtest.grvip", target="vip") == (
            (topo.node_address(primary), 2),
        )
        assert c.balancer_start(1).startswith("haproxy lb1")
        assert c.vip_holder() == "lb2"  # nopreempt
    finally:
        c.down()
    assert leftovers(name) == []


def test_a_group_replication_run_is_described_as_one(gr_cluster: Cluster, tmp_path: Path) -> None:
    """Issue 24 item 5: the run records MySQL (not the host's MariaDB), auto_inc_off (not "galera"),
    the engine; its outputs name the engine; its variables report finds nothing that differs by
    design (local address, read_only, super_read_only, init_file), so the report opens without the
    'did not all run as the topology says' warning; --json of show carries the same."""
    import json

    from clusterbench.analysis.document import build_report
    from clusterbench.analysis.variables import variable_report
    from clusterbench.store import Store

    c = gr_cluster
    env = {**os.environ, "CLUSTERBENCH_HOME": str(c.home), "COLUMNS": "200"}
    db = tmp_path / "r.db"
    res = subprocess.run(
        [sys.executable, "-m", "clusterbench", "run", "-w", "oltp_read_write", "--duration", "5",
         "--threads", "2", "--tables", "1", "--table-size", "1000", "-n", c.topology.name,
         "--results", str(db), "--no-telemetry"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    with Store.open(db) as s:
        run = s.list_runs()[-1].id
        prov = s.provenance(run)
        assert "mysql_server" in prov["versions"] and "mariadb" not in prov["versions"], prov["versions"]
        assert prov["endpoint"]["auto_inc_off"] is True and "galera" not in prov["endpoint"]
        assert variable_report(s, run).findings == [], [r.name for r in variable_report(s, run).findings]
        rep = build_report(s, run)
        assert not any("did not all run as the topology says" in w for w in rep.warnings), rep.warnings
        assert dict(rep.facts)["engine"].startswith("MySQL Group Replication")
    argv = [sys.executable, "-m", "clusterbench", "results", "show", str(run), "--json", "--results", str(db)]
    show = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(show.stdout)["run"]["engine"] == "group_replication"
