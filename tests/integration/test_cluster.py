"""The cluster lifecycle against real MariaDB Galera, HAProxy and namespaces."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql
import pytest

from clusterbench.cluster import Cluster
from clusterbench.engines.galera.status import classify_join
from clusterbench.errors import ClusterStateError
from clusterbench.hosts import procs

from .conftest import clear_stale, galera, leftovers, make_topology

pytestmark = pytest.mark.integration


def _all_synced(c: Cluster, size: int = 3) -> None:
    for n in c.nodes():
        h = n.wait_ready(60, expect_size=size)
        assert h.ready and h.size == size, f"n{n.index}: {h}"


def _app_conn(c: Cluster, target: str = "balancer") -> pymysql.connections.Connection:
    ep = c.endpoint(target)
    a = ep.addresses[0]
    return pymysql.connect(
        host=a.host,
        port=a.port,
        user=ep.user,
        password=ep.password,
        database="sbtest",
        autocommit=True,
        connect_timeout=3,
        read_timeout=10,
        write_timeout=10,
    )


def test_up_gives_synced_cluster_with_haproxy_up(cluster: Cluster) -> None:
    st = cluster.status()
    assert [v.index for v in st.nodes] == [1, 2, 3]
    for v in st.nodes:
        assert v.alive and v.health is not None
        h = v.health
        assert (h.state, h.size, h.in_quorum, h.ready) == ("Synced", 3, True, True)
    # One cluster state uuid everywhere: the seeded joiners joined the bootstrap node's cluster.
    assert len({v.health.group_id for v in st.nodes if v.health}) == 1
    assert st.balancer_alive
    assert sorted((b.name, b.status) for b in st.backends) == [("n1", "UP"), ("n2", "UP"), ("n3", "UP")]
    # Every daemon runs inside its own namespace and mariadbd runs as mysql, not root.
    for n in cluster.nodes():
        assert n.proc is not None
        ns = subprocess.run(
            ["ip", "netns", "identify", str(n.proc.pid)], capture_output=True, text=True
        ).stdout
        assert ns.strip() == f"cb-{cluster.topology.name}-n{n.index}"
        uid = Path(f"/proc/{n.proc.pid}/status").read_text().split("Uid:")[1].split()[0]
        assert int(uid) != 0


def test_write_on_node1_read_on_node3(cluster: Cluster) -> None:
    n1, n3 = cluster.node(1), cluster.node(3)
    n1.query("CREATE TABLE IF NOT EXISTS sbtest.w13 (id INT PRIMARY KEY, v VARCHAR(20))")
    n1.query("REPLACE INTO sbtest.w13 VALUES (1, 'from-n1')")
    # Causal read: wait for the write to be applied on n3 before reading.
    with n3.connect() as conn, conn.cursor() as cur:
        cur.execute("SET SESSION wsrep_sync_wait=1")
        cur.execute("SELECT v FROM sbtest.w13 WHERE id=1")
        assert cur.fetchall() == (("from-n1",),)


def test_balancer_spreads_connections_over_all_nodes(cluster: Cluster) -> None:
    seen = set()
    for _ in range(9):
        conn = _app_conn(cluster)
        with conn.cursor() as cur:
            cur.execute("SELECT @@wsrep_node_name")
            row = cur.fetchone()
            assert row is not None
            seen.add(row[0])
        conn.close()
    assert seen == {"n1", "n2", "n3"}


class _Writer(threading.Thread):
    """A small write load through the balancer; counts acknowledged inserts, reconnects on errors."""

    def __init__(self, c: Cluster, table: str) -> None:
        super().__init__(daemon=True)
        self.c, self.table = c, table
        self.acked: list[int] = []
        self.errors = 0
        self.stop = threading.Event()

    def run(self) -> None:
        seq = 0
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = _app_conn(self.c)
                seq += 1
                with conn.cursor() as cur:
                    cur.execute(f"INSERT INTO sbtest.{self.table} VALUES (%s)", (seq,))
                self.acked.append(seq)
            except pymysql.MySQLError:
                self.errors += 1
                conn = None
                time.sleep(0.05)
            time.sleep(0.01)


def test_kill9_under_write_load_restarts_by_ist(cluster: Cluster) -> None:
    cluster.node(1).query("CREATE TABLE IF NOT EXISTS sbtest.k9 (id INT PRIMARY KEY)")
    w = _Writer(cluster, "k9")
    w.start()
    try:
        time.sleep(1.5)
        assert cluster.node_kill(2) == "n2 killed"
        time.sleep(3)
        n2 = galera(cluster.node(2))
        g = n2.grastate()
        assert g is not None and g.crashed, "kill -9 leaves seqno -1 in grastate.dat"
        # the kill took effect: n2's server is gone and the survivors formed a view of two
        assert not n2.alive()
        # Galera suspects a silent peer only after evs.suspect_timeout (5 s by default)
        deadline = time.monotonic() + 30
        st = galera(cluster.node(1)).status()
        while (st is None or st.cluster_size != 2) and time.monotonic() < deadline:
            time.sleep(0.5)
            st = galera(cluster.node(1)).status()
        assert st is not None and st.cluster_size == 2, st
        offset = n2.error_log_size()
        msg = cluster.node_start(2)
        assert "rejoined by IST after recovering" in msg, msg
        assert classify_join(galera(cluster.node(2)).error_log_since(offset)) == "IST"
        time.sleep(1)
    finally:
        w.stop.set()
        w.join(10)
    assert len(w.acked) > 20
    _all_synced(cluster)
    # Every acknowledged insert is on every node (causal read), and nothing else is.
    for n in cluster.nodes():
        with n.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION wsrep_sync_wait=1")
            cur.execute("SELECT id FROM sbtest.k9")
            present = {r[0] for r in cur.fetchall()}
        assert set(w.acked) <= present, f"n{n.index} lost acknowledged writes"


def test_graceful_stop_and_start(cluster: Cluster) -> None:
    assert cluster.node_stop(3) == "n3 stopped"
    g = galera(cluster.node(3)).grastate()
    assert g is not None and not g.crashed and g.seqno > 0
    # Survivors stay Primary with 2 members after a graceful leave.
    h = cluster.node(1).health()
    assert h is not None and h.in_quorum and h.size == 2
    cluster.node(1).query("CREATE TABLE IF NOT EXISTS sbtest.gs (id INT PRIMARY KEY)")
    cluster.node(1).query("REPLACE INTO sbtest.gs VALUES (7)")
    msg = cluster.node_start(3)
    assert msg.startswith("n3 rejoined by IST"), msg
    assert cluster.node(3).query("SELECT id FROM sbtest.gs") == [(7,)]
    assert cluster.node_start(3) == "n3 already running"


def test_cold_restart_of_whole_cluster(cluster: Cluster) -> None:
    # its own table: the worker's session cluster may hold another file's sbtest.cold
    cluster.node(1).query("DROP TABLE IF EXISTS sbtest.cold_restart")
    cluster.node(1).query("CREATE TABLE sbtest.cold_restart (id INT PRIMARY KEY)")
    cluster.node(1).query("INSERT INTO sbtest.cold_restart VALUES (42)")
    lines = cluster.stop_all()
    assert lines == ["n3 stopped", "n2 stopped", "n1 stopped"]
    safe = [g.safe_to_bootstrap if (g := galera(cluster.node(i)).grastate()) else None for i in (1, 2, 3)]
    assert safe == [True, False, False]
    with pytest.raises(ClusterStateError, match="not safe to bootstrap"):
        cluster.node_start(2)
    out = cluster.start_all()
    assert out[0] == "n1 bootstrapped"
    assert all("rejoined by IST" in ln for ln in out[1:]), out
    _all_synced(cluster)
    assert cluster.node(3).query("SELECT id FROM sbtest.cold_restart") == [(42,)]
    h = cluster.haproxy()
    assert h is not None
    h.wait_all_up(["n1", "n2", "n3"], timeout=30)
    cluster.node(1).query("DROP TABLE sbtest.cold_restart")


def test_cold_start_after_kill_of_every_node_keeps_the_cluster_history(cluster: Cluster) -> None:
    """Issue 15, item 4: after kill -9 of every node under write load, the cold start bootstraps
    from the most advanced recovered position: the cluster keeps its state UUID, seqnos go on
    from there (no 'Starting new group from scratch'), the others rejoin by IST, and no
    acknowledged write is lost."""
    before = cluster.node(1).health()
    assert before is not None
    cluster.node(1).query("CREATE TABLE IF NOT EXISTS sbtest.ka (id INT PRIMARY KEY)")
    w = _Writer(cluster, "ka")
    w.start()
    try:
        time.sleep(1.5)
        for i in (1, 2, 3):
            assert cluster.node_kill(i) == f"n{i} killed"
    finally:
        w.stop.set()
        w.join(10)
    assert len(w.acked) > 20
    assert not any(n.alive() for n in cluster.nodes())  # the kills took effect: every server is gone
    offsets = {i: cluster.node(i).error_log_size() for i in (1, 2, 3)}
    out = cluster.start_all()
    chosen = next(int(ln[1]) for ln in out if ln.endswith(" bootstrapped"))
    assert any(f"bootstrapping from {before.group_id}:" in ln for ln in out), out
    joins = [ln for ln in out if "rejoined by" in ln]
    assert len(joins) == 2 and all("rejoined by IST" in ln for ln in joins), out
    log = galera(cluster.node(chosen)).error_log_since(offsets[chosen])
    assert "Starting new group from scratch" not in log
    after = [cluster.node(i).wait_ready(60, expect_size=3) for i in (1, 2, 3)]
    assert {h.group_id for h in after} == {before.group_id}
    assert all(h.progress > before.progress for h in after)
    for n in cluster.nodes():
        with n.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION wsrep_sync_wait=1")
            cur.execute("SELECT id FROM sbtest.ka")
            assert set(w.acked) <= {r[0] for r in cur.fetchall()}, f"n{n.index} lost acknowledged writes"
    h = cluster.haproxy()
    assert h is not None
    h.wait_all_up(["n1", "n2", "n3"], timeout=30)


def test_node_whose_donor_was_killed_mid_sst_starts_with_one_command(cluster: Cluster) -> None:
    """Issue 15, item 8: kill -9 of the donor's mariadbd during a full state transfer leaves its
    wsrep_sst_rsync helpers running; the donor's next `node start` stops them first and rejoins,
    and the joiner, aborted by Galera, is retried once with another donor."""
    cluster.node(1).query("CREATE TABLE IF NOT EXISTS sbtest.big (id INT PRIMARY KEY, v TEXT)")
    cluster.node(1).query(
        "INSERT IGNORE INTO sbtest.big SELECT seq, REPEAT('x', 2000) FROM sbtest.seq_1_to_40000"
    )
    assert cluster.node_stop(3) == "n3 stopped"
    n3 = galera(cluster.node(3))
    # An empty datadir: the rejoin needs a full SST (tens of MB, a few seconds with rsync).
    subprocess.run(["rm", "-rf", str(n3.datadir)], check=True)
    n3.host.mkdir(n3.datadir, owner="mysql")
    result: dict[str, object] = {}

    def start() -> None:
        try:
            result["msg"] = cluster.node_start(3)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            result["error"] = exc

    t = threading.Thread(target=start, daemon=True)
    t.start()
    donor = None
    deadline = time.monotonic() + 60
    while donor is None and time.monotonic() < deadline:
        for i in (1, 2):
            h = cluster.node(i).health()
            if h is not None and h.state.startswith("Donor"):
                donor = i
        time.sleep(0.05)
    assert donor is not None, "no node became a donor"
    time.sleep(0.5)
    assert cluster.node_kill(donor) == f"n{donor} killed"
    dn = galera(cluster.node(donor))
    left = procs.strays(procs.list_processes(dn.host), f"{dn.dir}/")
    print(f"\nafter kill -9 of donor n{donor}: {[procs.program(e.cmdline) for e in left]} left running")
    t.join(240)
    assert not t.is_alive()
    assert "error" not in result, str(result.get("error"))
    # Galera aborts the joiner when its donor dies (then it is retried with the other donor), or
    # the transfer finishes from the other node: either way one call, a full SST.
    print(result["msg"])
    assert str(result["msg"]).startswith("n3 rejoined by SST"), result["msg"]
    # The killed donor starts again with one command, its leftover SST helpers stopped first
    # (and named, when any were still running).
    msg = cluster.node_start(donor)
    print(msg)
    assert msg.startswith(f"n{donor} rejoined"), msg
    dn = galera(cluster.node(donor))  # with the processes this start recorded
    keep = [p.pid for p in (dn.proc, dn.check_proc) if p is not None]
    assert len(keep) == 2
    assert procs.strays(procs.list_processes(dn.host), f"{dn.dir}/", keep) == []
    _all_synced(cluster)
    cluster.node(1).query("DROP TABLE sbtest.big")
    lb = cluster.haproxy()
    assert lb is not None
    lb.wait_all_up(["n1", "n2", "n3"], timeout=30)


def test_cli_status_and_sql_against_running_cluster(cluster: Cluster) -> None:
    env = {**os.environ, "CLUSTERBENCH_HOME": str(cluster.home), "COLUMNS": "160"}
    st = subprocess.run(
        [sys.executable, "-m", "clusterbench", "status", "-n", cluster.topology.name],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert st.returncode == 0, st.stderr
    assert st.stdout.count("Synced") == 3 and st.stdout.count("UP") == 3
    q = subprocess.run(
        [
            sys.executable,
            "-m",
            "clusterbench",
            "sql",
            "2",
            "-n",
            cluster.topology.name,
            "-e",
            "SHOW STATUS LIKE 'wsrep_cluster_size'",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert q.returncode == 0 and "wsrep_cluster_size\t3" in q.stdout
    # Credentials are never printed in full.
    assert cluster.credentials().app_password not in st.stdout + q.stdout


def test_up_refuses_a_cluster_that_is_already_up_and_an_overlapping_subnet(
    cluster: Cluster, tmp_path: Path
) -> None:
    env = {**os.environ, "CLUSTERBENCH_HOME": str(cluster.home)}
    f = tmp_path / "same.toml"
    name, subnet = cluster.topology.name, str(cluster.topology.cluster.subnet)
    f.write_text(f'[cluster]\nname = "{name}"\nsubnet = "{subnet}"\n')
    r = subprocess.run(
        [sys.executable, "-m", "clusterbench", "up", "-f", str(f)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 2
    assert f"cluster '{name}' is already up" in r.stderr and "Traceback" not in r.stderr
    half = subnet.replace("/24", "/25")
    f.write_text(f'[cluster]\nname = "other"\nsubnet = "{half}"\n')
    r = subprocess.run(
        [sys.executable, "-m", "clusterbench", "up", "-f", str(f)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 2
    assert f"overlaps {subnet} dev cb-{name}-br" in r.stderr
    assert leftovers("other") == []


def test_failed_join_reports_log_tail_and_leaves_nothing(cb_home: Path) -> None:
    # n2 has a server option mariadbd does not know: it exits at start while n1 waits for it, or,
    # when an earlier bring-up left a datadir template, already when its copy is prepared offline.
    topo = make_topology(
        "cbbad", "198.18.202.0/24", nodes=2, node=[{"index": 2, "mariadb": {"extra": {"no_such_option": 1}}}]
    )
    c = Cluster(topo, home=cb_home)
    joining = r"node n2( exited while joining|: mariadbd in bootstrap mode).*no_such_option"
    with pytest.raises(Exception, match=joining) as caught:
        c.up()
    assert "unknown variable" in str(caught.value)
    assert leftovers("cbbad") == []
    assert not (cb_home / "clusters" / "cbbad" / "state.json").exists()


def test_ctrl_c_during_up_tears_down(cb_home: Path, tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    # HAProxy spreads its first checks over 60 s: `up` is still waiting for it when the Ctrl-C comes
    # (with the default 0.1 s, one loaded CI run finished `up` before it)
    f.write_text('[cluster]\nname = "cbint"\nsubnet = "198.18.209.0/24"\nnodes = 3\n'
                 "[balancer]\nfast_check_interval_ms = 60000\n")  # fmt: skip
    clear_stale(make_topology("cbint", "198.18.209.0/24"), cb_home)  # what a killed session left
    env = {**os.environ, "CLUSTERBENCH_HOME": str(cb_home)}
    p = subprocess.Popen(
        [sys.executable, "-m", "clusterbench", "up", "-f", str(f)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Wait until the first node has been started, then interrupt as a terminal's Ctrl-C would.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (cb_home / "clusters" / "cbint" / "n1" / "mysqld.pid").exists():
        time.sleep(0.05)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, (out, err)
    assert "interrupted" in err and "Traceback" not in err
    assert leftovers("cbint") == []
    # down after that is a no-op and says so.
    r = subprocess.run(
        [sys.executable, "-m", "clusterbench", "down", "-n", "cbint"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and "nothing to do" in r.stdout


def test_down_after_sigkill_of_the_tool_finds_leftovers(cb_home: Path, tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text('[cluster]\nname = "cbkill"\nsubnet = "198.18.210.0/24"\nnodes = 1\n')
    env = {**os.environ, "CLUSTERBENCH_HOME": str(cb_home)}
    p = subprocess.Popen(
        [sys.executable, "-m", "clusterbench", "up", "-f", str(f)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while (
        time.monotonic() < deadline and not (cb_home / "clusters" / "cbkill" / "n1" / "mysqld.pid").exists()
    ):
        time.sleep(0.05)
    p.kill()
    p.wait()
    assert leftovers("cbkill"), "a SIGKILLed up leaves things behind"
    r = subprocess.run(
        [sys.executable, "-m", "clusterbench", "up", "-f", str(f)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "clusterbench down -n cbkill" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "clusterbench", "down", "-n", "cbkill"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert leftovers("cbkill") == []
