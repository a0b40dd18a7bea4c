"""Operators' rebuilds on real clusters: a Group Replication member the group provisions by a clone
rejoins in one `node start` (clusterbench is the supervisor MySQL expects after a clone), also when
its donor is killed mid-clone, and `node rebuild` wipes a node and brings it back by a full state
transfer on either engine, converged."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterbench.checkers.convergence import check_convergence
from clusterbench.checkers.verdict import Result
from clusterbench.cluster import Cluster
from clusterbench.verify.convergence import collect_convergence

from .conftest import gr_skip_reason, make_topology, running

pytestmark = pytest.mark.integration

NAME = "cbclone"


def cli(c: Cluster, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLUSTERBENCH_HOME": str(c.home), "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(sys.path)}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "clusterbench", *args, "-n", c.topology.name], env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def converged(c: Cluster) -> Any:
    """The convergence verdict once the group has settled (every member back in one view)."""
    c.state = Cluster.load(c.topology.name, home=c.home).state
    for line in c.settle():
        print(line)
    return check_convergence(collect_convergence(c.nodes(), ["sbtest"], timeout=60), c.topology.cluster.nodes)


def fill(c: Cluster, table: str, rows: int, pad: int = 200) -> None:
    """Rows on the primary (or any node), in batches: what a joining member must get."""
    primary = c.admin_node()
    assert primary is not None
    primary.query(f"CREATE TABLE IF NOT EXISTS sbtest.{table} (id INT PRIMARY KEY, v VARCHAR({pad}))")
    start = int(primary.query(f"SELECT COALESCE(MAX(id), 0) FROM sbtest.{table}")[0][0])
    for lo in range(start, start + rows, 2000):
        ids = range(lo + 1, min(lo + 2000, start + rows) + 1)
        values = ",".join(f"({i}, REPEAT('x', {pad}))" for i in ids)
        primary.query(f"INSERT INTO sbtest.{table} VALUES {values}", timeout=60)


@pytest.fixture(scope="module")
def cloning_group(cb_home: Path) -> Iterator[Cluster]:
    """3 members; n3 is provisioned by a clone whenever it rejoins with anything missing
    (group_replication_clone_threshold = 1 of its own) and has a 40 Mbit/s link, so a clone of a
    few tens of MiB takes long enough to kill its donor in the middle."""
    reason = gr_skip_reason()
    if reason:
        pytest.skip(reason)
    subnet = "198.18.233.0/24"
    n3 = {"index": 3, "bandwidth": "40mbit", "mysql": {"extra": {"group_replication_clone_threshold": 1}}}
    # MySQL's default expel timeout (not the failover tests' 1 s): a recovery or clone that fills
    # n3's 40 Mbit/s link delays its group messages, and with 1 s a loaded CI run saw n3 expelled
    # right after all three were in one view.
    topo = make_topology(
        NAME, subnet, engine={"kind": "group_replication"}, mysql={"member_expel_timeout": 5}, node=[n3]
    )
    with running(topo, cb_home) as c:
        yield c


def test_a_member_the_group_clones_rejoins_in_one_node_start_and_says_so(cloning_group: Cluster) -> None:
    c = cloning_group
    assert int(c.node(3).query("SELECT @@group_replication_clone_threshold")[0][0]) == 1
    assert int(c.node(2).query("SELECT @@group_replication_clone_threshold")[0][0]) > 1  # n3's only
    assert c.node_kill(3) == "n3 killed"
    fill(c, "cb_clone1", 20_000)
    r = cli(c, "node", "start", "3")
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    assert "n3 rejoined by clone from" in r.stdout and "MiB in" in r.stdout, r.stdout
    v = converged(c)
    assert v.result is Result.PASS, v.summary


def test_a_clone_whose_donor_is_killed_still_rejoins_in_one_node_start(cloning_group: Cluster) -> None:
    c = cloning_group
    assert c.node_kill(3) == "n3 killed"
    fill(c, "cb_clone2", 150_000)  # ~35 MiB: several seconds over n3's 40 Mbit/s link
    killed: list[str] = []

    def kill_the_donor() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            try:
                rows = c.node(3).query("SELECT STATE, SOURCE FROM performance_schema.clone_status", timeout=1)
            except Exception:  # noqa: BLE001 - n3 starting or restarting
                rows = []
            if rows and rows[0][0] == "In Progress" and rows[0][1]:
                donor = next(n for n in c.nodes() if n.address == str(rows[0][1]).split(":")[0])
                killed.append(c.node_kill(donor.index))
                return
            time.sleep(0.2)

    t = threading.Thread(target=kill_the_donor)
    t.start()
    r = cli(c, "node", "start", "3")
    t.join()
    print(killed, r.stdout, r.stderr)
    assert killed, "the clone never showed as in progress"
    if r.returncode == 0:  # MySQL retried from the other member by itself, then restarted
        assert "n3 rejoined" in r.stdout
    else:  # or one line, naming the clone and its donor
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1 and "clone" in lines[0], r.stderr
    v = converged(c)
    assert v.result is Result.PASS, v.summary


def test_node_rebuild_on_group_replication_clones_and_converges(cloning_group: Cluster) -> None:
    c = cloning_group
    r = cli(c, "node", "rebuild", "2")
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    assert "n2 rebuilt from an empty datadir by clone from" in r.stdout and " s" in r.stdout, r.stdout
    v = converged(c)
    assert v.result is Result.PASS, v.summary


def test_node_rebuild_on_galera_rejoins_by_sst_and_converges(cluster: Cluster) -> None:
    c = cluster
    fill(c, "cb_rebuild", 5_000)
    r = cli(c, "node", "rebuild", "2")
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr
    assert "n2 rebuilt from an empty datadir: rejoined by SST" in r.stdout, r.stdout
    v = converged(c)
    assert v.result is Result.PASS, v.summary
    c.node(1).query("DROP TABLE sbtest.cb_rebuild")
