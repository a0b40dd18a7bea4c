"""A keepalived pair in front of a real cluster: two HAProxies share a VIP with unicast VRRP and a
track script on HAProxy, so killing the active HAProxy moves the VIP (RELIABILITY F15).

Its own cluster (cbvip, 198.18.205.0/24), brought up once for the module and always torn down."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
from rich.console import Console

from clusterbench.analysis.report import summary_rows
from clusterbench.cli import console
from clusterbench.cli.main import main
from clusterbench.cluster import Cluster
from clusterbench.faults import leftovers as fault_leftovers
from clusterbench.faults.actions import CutVrrp, heal_vrrp
from clusterbench.faults.spec import PlannedFault
from clusterbench.hosts import process
from clusterbench.loadclients import LoadClients
from clusterbench.store import Store

from .conftest import DRILL_RATE, leftovers, make_topology

pytestmark = pytest.mark.integration

NAME = "cbvip"
SUBNET = "198.18.205.0/24"
VIP = "198.18.205.3"
ADVERT_INT = 1.0
VIPCHECK_TABLE = (
    "CREATE TABLE IF NOT EXISTS sbtest.vipcheck (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20))"
)
# RELIABILITY F15: ≈ 3 x advert_int + skew when the master goes silent; with the track script the
# master gives the VIP up itself (FAULT, priority-0 advert), which is faster. A generous bound.
FAILOVER_BOUND = 10.0


def _connect(host: str, port: int, c: Cluster) -> pymysql.connections.Connection:
    ep = c.endpoint("vip")
    return pymysql.connect(
        host=host,
        port=port,
        user=ep.user,
        password=ep.password,
        database="sbtest",
        autocommit=True,
        connect_timeout=3,
        read_timeout=10,
        write_timeout=10,
    )


def _vip_conn(c: Cluster) -> pymysql.connections.Connection:
    a = c.endpoint("vip").addresses[0]
    return _connect(a.host, a.port, c)


def _insert_and_count(c: Cluster, value: str) -> int:
    conn = _vip_conn(c)
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO vipcheck (v) VALUES (%s)", (value,))
            cur.execute("SELECT COUNT(*) FROM vipcheck")
            row = cur.fetchone()
            assert row is not None
            return int(row[0])
    finally:
        conn.close()


@pytest.fixture(scope="module")
def vip_cluster(cb_home: Path) -> Iterator[Cluster]:
    if shutil.which("keepalived", path="/usr/sbin:/usr/bin:/sbin:/bin") is None:
        pytest.skip("keepalived is not installed; run `make setup`")
    topo = make_topology(NAME, SUBNET, balancer={"count": 2, "advert_int": ADVERT_INT})
    c = Cluster(topo, home=cb_home)
    t0 = time.monotonic()
    c.up()  # cleans up after itself on failure; a refused up must not take down someone else's cluster
    print(f"\ncbvip up with a keepalived pair in {time.monotonic() - t0:.1f} s")
    try:
        # the table the tests write through the VIP, so that each test can also run on its own
        # (make test runs a test that failed among the workers again, alone)
        c.node(1).query(VIPCHECK_TABLE)
        yield c
    finally:
        c.down()
    assert leftovers(NAME) == []


def _failover(c: Cluster) -> tuple[str, str, float]:
    """kill -9 the HAProxy that holds the VIP; wait until the other one holds it."""
    old = c.vip_holder()
    assert old in ("lb1", "lb2")
    t0 = time.monotonic()
    assert c.balancer_kill(int(old[2:])) == f"haproxy {old} killed (it held the VIP)"
    new = c.wait_vip(FAILOVER_BOUND + 5, not_on=old, poll=0.02)
    took = time.monotonic() - t0
    print(f"\nVIP failover {old} -> {new} after kill -9 of haproxy: {took:.2f} s")
    return old, new, took


def test_vip_on_exactly_one_balancer(vip_cluster: Cluster) -> None:
    c = vip_cluster
    assert c.topology.vip_address() == VIP
    assert c.endpoint("balancer") == c.endpoint("vip").model_copy(update={"name": "balancer"})
    assert c.vip_holders() == ["lb1"]  # the higher priority wins the first election
    assert c.vip_holder() == "lb1"
    st = c.status()
    assert st.vip == f"{VIP}:3306"
    assert st.vip_holders == ["lb1"]
    assert [(b.role, b.address, b.alive, b.keepalived_alive, b.holds_vip) for b in st.balancers] == [
        ("lb1", "198.18.205.2:3306", True, True, True),
        ("lb2", "198.18.205.4:3306", True, True, False),
    ]
    for b in st.balancers:
        assert [(s.name, s.status) for s in b.backends] == [("n1", "UP"), ("n2", "UP"), ("n3", "UP")]
    for ka in c.keepaliveds():
        log = ka.cfg.log_path.read_text()
        # The track script really runs (script security would disable it and leave the VIP
        # pinned to a dead HAProxy).
        assert "VRRP_Script(chk_haproxy) succeeded" in log
        assert "SECURITY VIOLATION" not in log and "Disabling track script" not in log


def test_client_through_the_vip(vip_cluster: Cluster) -> None:
    c = vip_cluster
    conn = _vip_conn(c)
    with conn.cursor() as cur:
        cur.execute("SHOW STATUS LIKE 'wsrep_cluster_size'")
        assert cur.fetchone() == ("wsrep_cluster_size", "3")
    conn.close()
    assert _insert_and_count(c, "first") == 1
    # Each HAProxy also answers on its own address.
    for k in (1, 2):
        own = _connect(c.topology.balancer_address(k), 3306, c)
        own.close()


def test_status_command_shows_the_pair(vip_cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(console, "out", Console(file=buf, width=200, highlight=False))
    assert main(["status", "-n", NAME]) == 0
    text = buf.getvalue()
    print(text)
    assert f"VIP {VIP}:3306 held by lb1" in text
    assert "haproxy lb1 198.18.205.2:3306 (alive, keepalived alive, holds the VIP)" in text
    assert "haproxy lb2 198.18.205.4:3306 (alive, keepalived alive, backup)" in text


def test_kill_active_haproxy_moves_the_vip(vip_cluster: Cluster) -> None:
    c = vip_cluster
    before = _vip_conn(c)  # through lb1, which is about to die
    old, new, took = _failover(c)
    assert (old, new) == ("lb1", "lb2")
    assert took < FAILOVER_BOUND
    # The session through the killed HAProxy is gone: its outcome is unknown to the client.
    with pytest.raises(pymysql.err.MySQLError), before.cursor() as cur:
        cur.execute("SELECT 1")
    before.close()
    # A new connection through the VIP reaches lb2 and works.
    assert _insert_and_count(c, "after-failover") == 2
    st = c.status()
    assert [(b.role, b.alive, b.holds_vip) for b in st.balancers] == [
        ("lb1", False, False),
        ("lb2", True, True),
    ]


def test_restarted_haproxy_comes_back_as_backup(vip_cluster: Cluster) -> None:
    c = vip_cluster
    assert c.balancer_start(1).startswith("haproxy lb1 UP in ")
    h = c.haproxy(1)
    assert h is not None and h.alive()
    assert all(s.up for s in h.servers())
    # nopreempt: lb1 has the higher priority, but it does not take the VIP back (a second
    # outage for clients on lb2). Wait past a full master-down interval to be sure.
    time.sleep(3 * ADVERT_INT + 1)
    assert c.vip_holders() == ["lb2"]
    assert _insert_and_count(c, "lb1-back") == 3


def test_failover_back_and_forth(vip_cluster: Cluster) -> None:
    """lb1 is a healthy backup again: killing lb2's HAProxy moves the VIP back; once more the
    other way, for a few measurements."""
    c = vip_cluster
    times = []
    for expect in (("lb2", "lb1"), ("lb1", "lb2")):
        old, new, took = _failover(c)
        assert (old, new) == expect
        assert took < FAILOVER_BOUND
        times.append(took)
        assert _insert_and_count(c, f"to-{new}") >= 4
        c.balancer_start(int(old[2:]))
    print(f"\nVIP failover times: {', '.join(f'{t:.2f}' for t in times)} s")
    assert c.vip_holders() == ["lb2"]


def _cli_env(c: Cluster) -> dict[str, str]:
    return {**os.environ, "CLUSTERBENCH_HOME": str(c.home), "COLUMNS": "200",
            "PYTHONPATH": os.pathsep.join(sys.path)}  # fmt: skip


CLI = [sys.executable, "-m", "clusterbench"]


def _cli(c: Cluster, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], env=_cli_env(c), capture_output=True, text=True, timeout=120)


def _mac(c: Cluster, k: int) -> str:
    res = c.host(f"lb{k}").run(["ip", "-j", "link", "show", "dev", "eth0"])
    return str(json.loads(res.stdout)[0]["address"])


def _locktime(dev: str) -> float:
    """Seconds the kernel keeps a neighbour entry from being replaced by an unsolicited ARP."""
    return int(Path(f"/proc/sys/net/ipv4/neigh/{dev}/locktime").read_text()) / 100


def _neigh() -> str:
    return subprocess.run(["ip", "neigh", "show", VIP], capture_output=True, text=True).stdout.strip()


def test_status_exits_1_while_both_hold_the_vip_until_heal(vip_cluster: Cluster) -> None:
    """The VRRP path cut as a killed drill leaves it: both balancers hold the VIP (from ~3 x
    advert_int after the cut) and keep it until healed, so `status` (the real command, however
    long it takes on a loaded machine) must exit 1 and name the cut; `heal` removes the cut and
    returns with one holder, which announces itself again so that clients reach it at once, and
    `status` exits 0 again."""
    c = vip_cluster
    cut = CutVrrp(c, PlannedFault(index=1, kind="cut-vrrp", nodes=(), balancer=None, at=0, until=None))
    t0 = time.monotonic()
    cut.apply()
    try:
        deadline = t0 + 3 * ADVERT_INT + 10
        while len(c.vip_holders()) < 2:
            assert time.monotonic() < deadline, "the VIP was never held by both balancers"
            time.sleep(0.1)
        print(f"\nboth balancers hold the VIP {time.monotonic() - t0:.1f} s after the cut")
        t1 = time.monotonic()
        st = _cli(c, "status", "-n", NAME)
        print(f"status took {time.monotonic() - t1:.1f} s")
        assert c.vip_holders() == ["lb1", "lb2"]  # held by both before, during and after status
        assert st.returncode == 1, (st.stdout, st.stderr)
        assert f"VIP {VIP}:3306 held by lb1 and lb2 at once" in st.stdout
        assert "the VIP is held by lb1 and lb2 at once" in st.stderr and "VRRP cut?" in st.stderr
        for lb in ("lb1", "lb2"):
            assert f"fault left in place: {lb}: iptables chain CBVRRP drops VRRP to its peer" in st.stderr
        # The worst case for clients: this machine's ARP entry for the VIP names lb2, which loses
        # the next election (lb1 has the higher priority). Measured without
        # vrrp_higher_prio_send_advert: no connection through the VIP for 25 s after the heal.
        subprocess.run(["ip", "neigh", "replace", VIP, "lladdr", _mac(c, 2), "dev", c.names.bridge,
                        "nud", "reachable"], check=True)  # fmt: skip
        # A client's entry is older than that: the kernel ignores an unsolicited ARP update of an
        # entry changed less than `locktime` ago (1 s by default), and on a quiet machine the
        # heal's gratuitous ARPs came sooner, the next ones 5 s later (keepalived's garp delay).
        time.sleep(_locktime(c.names.bridge) + 0.2)
        h = _cli(c, "heal", "-n", NAME)
        assert h.returncode == 0, (h.stdout, h.stderr)
        for lb in ("lb1", "lb2"):
            assert f"healed {lb}: iptables chain CBVRRP" in h.stdout
        holder = c.vip_holder()
        assert holder in ("lb1", "lb2") and f"the VIP is on {holder} alone" in h.stdout, h.stdout
        assert holder == "lb1"
        # The winner announced itself again: clients reach the VIP at once.
        t2 = time.monotonic()
        while True:
            try:
                assert _insert_and_count(c, "after-split") >= 1
                break
            except pymysql.err.MySQLError:
                assert time.monotonic() - t2 < 3, (
                    f"no connection through the VIP: {_neigh()} (lb1 {_mac(c, 1)}, lb2 {_mac(c, 2)})"
                )
                time.sleep(0.1)
        print(f"through the VIP {time.monotonic() - t2:.2f} s after heal returned; {_neigh()}")
        assert _mac(c, 1) in _neigh()
        st = _cli(c, "status", "-n", NAME)
        assert st.returncode == 0, (st.stdout, st.stderr)
        assert f"VIP {VIP}:3306 held by {holder}" in st.stdout and "at once" not in st.stdout
        assert fault_leftovers.find(c) == []
    finally:
        heal_vrrp(c)
        c.wait_vip(3 * ADVERT_INT + 10)
        subprocess.run(["ip", "neigh", "del", VIP, "dev", c.names.bridge], check=False)


def test_cut_vrrp_is_a_split_brain_fail_with_its_duration(vip_cluster: Cluster, tmp_path: Path) -> None:
    """A drill cuts VRRP between the pair: both balancers hold the VIP (from ~3 x advert_int
    after the cut) until the heal, the drill's vip verdict is FAIL with that duration, and the
    heal leaves one holder and no rule behind. (`status` during a split: the test above, on a
    split that lasts until it is healed; here the drill heals on its own schedule.)"""
    c = vip_cluster
    db = tmp_path / "r.db"
    drill = subprocess.Popen(
        [*CLI, "fault", "cut-vrrp", "--at", "4", "--for", "12", "--duration", "22", "--threads", "2",
         "--load-rate", str(DRILL_RATE),
         "--ledger-clients", "1", "--results", str(db), "-n", NAME],
        env=_cli_env(c), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(c.vip_holders()) < 2:
            assert time.monotonic() < deadline and drill.poll() is None, "the VIP was never held twice"
            time.sleep(0.2)
        out, err = drill.communicate(timeout=300)
    finally:
        if drill.poll() is None:
            drill.kill()
            drill.wait()
            # its sysbench outlives a SIGKILLed clusterbench (seen here: still running 91 min later)
            for r in LoadClients(c.home, NAME).records():
                process.send(r.pid, r.start_ticks, signal.SIGKILL)
    print(out)
    assert drill.returncode == 1, (out, err)
    assert "overall: FAIL" in out
    with Store.open(db) as s:
        run = s.list_runs()[-1]
        got = {v["checker"]: v for v in s.verdicts(run.id)}
        vip = got["vip"]
        assert vip["result"] == "FAIL", vip
        held = vip["evidence"]["held_by_two_s"]
        print(f"VIP held by both balancers for {held} s of a 12 s VRRP cut: {vip['summary']}")
        events = s.events(run.id)
        faults = {e["detail"]["phase"]: e for e in events if e["kind"] == "fault"}
        changes = [e for e in events if e["kind"] == "vip_holders"]
        split = next(e["t"] for e in changes if len(e["detail"]["holders"]) == 2)
        over = next(e["t"] for e in changes if e["t"] > split and len(e["detail"]["holders"]) == 1)
        applied = faults["applied"]["t"]
        healed = faults["end"]["t"] + faults["end"]["detail"]["one_holder_after_s"]
        print(f"cut applied at {applied} s, two holders from {split} s, healed at {healed:.2f} s, "
              f"one holder from {over} s")  # fmt: skip
        # Both held it from ~3 x advert_int after the cut until the heal (whenever the drill
        # healed: at its planned end, or earlier when its load died), and the verdict says so.
        assert applied < split <= applied + 3 * ADVERT_INT + 2
        assert healed - 1.0 <= over <= healed + 1.5  # the monitor samples every 0.5 s
        assert held == pytest.approx(over - split, abs=0.02)
        assert 0 < held <= 12.0 + 1.0
        # the summary's one-decimal figures (the evidence keeps two: 8.65 was "8.7" here, "8.6" there)
        m = re.search(r"for ([\d.]+) s \(from ([\d.]+) s to ([\d.]+) s", vip["summary"])
        assert m is not None, vip["summary"]
        said = [float(x) for x in m.groups()]
        assert said == pytest.approx([held, split, over], abs=0.051), (said, held, split, over)
        heal = faults["end"]
        print(f"after the heal one balancer held the VIP again in {heal['detail']['one_holder_after_s']} s")
        # a run whose load died still summarizes what it measured
        [row] = summary_rows(s, run.id)
        assert row.tps is not None and row.seconds > 0
    assert len(c.vip_holders()) == 1
    assert fault_leftovers.find(c) == []
