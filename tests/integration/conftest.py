"""Integration fixtures: real MariaDB Galera + HAProxy in network namespaces. Needs root and the
Debian packages (`make setup`); skipped otherwise. Every cluster made here is torn down, also when
a test fails, and the session checks that nothing it started is left behind."""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from clusterbench.cluster import Cluster
from clusterbench.engines.base import DbNode
from clusterbench.engines.galera.node import GaleraNode
from clusterbench.engines.group_replication import rootfs
from clusterbench.providers.naming import Names
from clusterbench.scenario.drill import Drill, DrillOutcome
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.spec.topology import Topology
from clusterbench.workloads import SysbenchRunner, build_shim

NEEDED = ["mariadbd", "haproxy", "sysbench", "socat", "rsync", "ip"]

# A test session started in the background of a non-interactive shell (`make test &`, `nohup`)
# inherits SIGINT ignored, and every CLI process the tests start would inherit that too: the
# Ctrl-C tests' SIGINT would then do nothing (seen in a rehearsal: four of them failed, a fifth
# after them). With Python's own handler here, children start with the default disposition again.
signal.signal(signal.SIGINT, signal.default_int_handler)


# The sysbench load of the drills whose load only keeps writes in flight through their faults: a
# fixed rate, not a closed loop that takes every CPU cycle the test files running beside it need
# (`make test` runs four at once on two cores). A 15 s drill here used 24 CPU-seconds with a closed
# loop of 2 threads, 9 at 25 tps. Tests about the load itself (its throughput, its ids, the
# bottleneck it finds) keep their closed loops.
DRILL_RATE = 25


def all_ready(c: Cluster, size: int | None = None) -> None:
    n = size or c.topology.cluster.nodes
    for node in c.nodes():
        node.wait_ready(90, expect_size=n)


def writers(c: Cluster) -> list[int]:
    return [v.index for v in c.status().nodes if v.health is not None and v.health.writable]


def run_scenario(c: Cluster, data: dict[str, Any]) -> DrillOutcome:
    """A drill of `data` (a scenario's fields) on `c`; on an engine with a primary, target
    "primary" is the node taking writes now."""
    spec = ScenarioSpec.model_validate(data)
    primary = next(iter(writers(c)), None) if c.topology.engine.has_primary else None
    faults = spec.planned(c.topology.cluster.nodes, 1, "test", primary=primary)
    drill = Drill(c, spec, c.home / "results.db", SysbenchRunner(shim=build_shim(c.home / "lib")))
    return drill.run("test", faults)


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "integration tests need root (network namespaces)"
    missing = [b for b in NEEDED if shutil.which(b, path="/usr/sbin:/usr/bin:/sbin:/bin") is None]
    if missing:
        return f"missing {', '.join(missing)}; run `make setup`"
    return None


def worker() -> int:
    """This pytest-xdist worker's number (0 in a session without workers). `make test` runs the
    test files on several workers at once; each worker has its own session clusters (their names
    and subnets carry this number), and every module's own cluster has a name and subnet no other
    module uses, so two workers never ask for one cluster or one subnet."""
    w = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(w[2:]) if w.startswith("gw") and w[2:].isdigit() else 0


def _own(base: str, third_octet: int, spare: int) -> tuple[str, str]:
    """Worker 0 keeps `base` on 198.18.<third_octet>.0/24; worker w > 0 gets `base<w>` on
    198.18.<spare + w>.0/24 (ranges no module's own cluster uses)."""
    w = worker()
    if w == 0:
        return base, f"198.18.{third_octet}.0/24"
    return f"{base}{w}", f"198.18.{spare + w}.0/24"


@pytest.fixture(scope="session")
def cb_home() -> Iterator[Path]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    # Not under pytest's tmp dir: mariadbd runs as `mysql` and must traverse every parent (0755).
    home = Path(f"/tmp/cbtest-{os.getpid()}")
    home.mkdir(mode=0o755, exist_ok=True)
    os.chmod(home, 0o755)
    old = os.environ.get("CLUSTERBENCH_HOME")
    os.environ["CLUSTERBENCH_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("CLUSTERBENCH_HOME", None)
    else:
        os.environ["CLUSTERBENCH_HOME"] = old
    shutil.rmtree(home, ignore_errors=True)


def galera(node: DbNode) -> GaleraNode:
    """A node of a Galera cluster, for tests of Galera's own behaviour (grastate, wsrep status)."""
    assert isinstance(node, GaleraNode), f"{node.name} is not a Galera node"
    return node


def acknowledged_missing(
    c: Cluster, ops: list[Any], table: str, session: str
) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """An independent count beside the ledger checker: the (client, seq) keys of acknowledged
    inserts, and those missing on at least one node (read with `session` set first)."""
    ok_keys: set[tuple[int, int]] = set()
    for o in ops:
        if o.outcome.value == "ok" and o.key:
            client, seq = o.key.split(":")
            ok_keys.add((int(client), int(seq)))
    missing: set[tuple[int, int]] = set()
    for n in c.nodes():
        with n.connect(5.0) as conn, conn.cursor() as cur:
            cur.execute(session)
            cur.execute(f"SELECT client, seq FROM sbtest.{table}")
            present = {(int(a), int(b)) for a, b in cur.fetchall()}
        missing |= ok_keys - present
    return ok_keys, missing


def make_topology(name: str, subnet: str, nodes: int = 3, **extra: object) -> Topology:
    data: dict[str, object] = {"cluster": {"name": name, "nodes": nodes, "subnet": subnet}}
    data.update(extra)
    return Topology.model_validate(data)


def leftovers(name: str) -> list[str]:
    """Namespaces, links, cgroups, mounts and live processes of cluster `name` still on the machine."""
    prefix = Names(name).prefix
    found: list[str] = []
    for line in os.popen("ip netns list").read().splitlines():
        if line.split(" ")[0].startswith(prefix):
            found.append(f"netns {line.split(' ')[0]}")
    for line in os.popen("ip -o link show").read().splitlines():
        ifname = line.split(":")[1].strip().split("@")[0]
        if ifname.startswith(prefix):
            found.append(f"link {ifname}")
    for ctl in ("cpu", "cpuset"):
        d = Path("/sys/fs/cgroup") / ctl / "clusterbench"
        if d.is_dir():
            found += [f"cgroup {p}" for p in d.iterdir() if p.name.startswith(f"{name}-")]
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split(" ")[4]
        if f"/clusters/{name}/" in point:
            found.append(f"mount {point}")
    for line in os.popen("losetup -l -n -O NAME,BACK-FILE").read().splitlines():
        if f"/clusters/{name}/" in line:
            found.append(f"loop device {line.strip()}")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] in "ZX":
            continue
        if f"/clusters/{name}/" in cmd:
            found.append(f"process {pid} {cmd[:80]}")
    return found


def _session_alive(pid: int) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return pid != os.getpid() and "pytest" in cmd


def clear_stale(topology: Topology, home: Path) -> None:
    """Remove what a killed earlier test session left of this test's own cluster name (its
    namespaces and the servers in them), so one killed run does not fail every later one. A cluster
    of that name that a live test session is using is left alone: the test then fails in `up`."""
    name = topology.name
    found = leftovers(name)
    if not found:
        return
    owners = {int(m) for line in found for m in re.findall(r"/tmp/cbtest-(\d+)/", line)}
    if any(_session_alive(pid) for pid in owners):
        return
    print(f"\nremoving what a killed test session left of cluster {name}: {len(found)} item(s)", flush=True)
    Cluster(topology, home=home).down()


@contextmanager
def running(topology: Topology, home: Path) -> Iterator[Cluster]:
    """A cluster of a module's (or the session's) own: what a killed earlier session left of it is
    removed first, it is brought up, and afterwards taken down with nothing of it left. up()
    removes what it started when it fails, and touches nothing when preflight refuses (e.g. a
    cluster of that name is already up): only a cluster brought up here is taken down here."""
    clear_stale(topology, home)
    c = Cluster(topology, home=home)
    c.up()
    try:
        yield c
    finally:
        c.down()
    assert leftovers(topology.cluster.name) == []


@pytest.fixture(scope="session")
def cluster(cb_home: Path) -> Iterator[Cluster]:
    """A 3-node cluster + HAProxy shared by the session's tests. Tests that break it must heal it."""
    # CB_TEST_CLUSTER / CB_TEST_SUBNET let two test sessions run side by side on one machine.
    own_name, own_subnet = _own("cbit", 201, 190)
    name = os.environ.get("CB_TEST_CLUSTER", own_name)
    subnet = os.environ.get("CB_TEST_SUBNET", own_subnet)
    topo = make_topology(
        name,
        subnet,
        mariadb={"evs_suspect_timeout": 2.0, "evs_inactive_timeout": 4.0, "evs_keepalive_period": 0.5},
    )
    with running(topo, cb_home) as c:
        yield c


# --- the Group Replication cluster of a module ---

_GR_NAME, _GR_SUBNET = _own("cbgr", 203, 180)
NAME = os.environ.get("CB_TEST_GR_CLUSTER", _GR_NAME)
SUBNET = os.environ.get("CB_TEST_GR_SUBNET", _GR_SUBNET)


def gr_skip_reason() -> str | None:
    """Why the Group Replication tests cannot run here (printed by pytest -ra, never silent)."""
    bad = rootfs.problem(rootfs.rootfs_dir())
    return f"Group Replication tests skipped: {bad}" if bad else None


def gr_topology(name: str = NAME, subnet: str = SUBNET, nodes: int = 3, mode: str | None = None) -> Topology:
    engine: dict[str, object] = {"kind": "group_replication"}
    if mode:
        engine["mode"] = mode
    # A 1 s expel timeout keeps the failover tests short (MySQL's default is 5 s).
    return make_topology(name, subnet, nodes, engine=engine, mysql={"member_expel_timeout": 1})


@pytest.fixture(scope="module")
def gr_cluster(cb_home: Path) -> Iterator[Cluster]:
    """A 3-member Group Replication cluster + HAProxy (single primary) for the tests of one module,
    taken down after them. Not one per session: idle, a group and its health checks use a tenth of
    a core, and on `make test`'s workers each group sat idle for most of the run after the one or
    two modules that used it (a bring-up costs about 6 s)."""
    reason = gr_skip_reason()
    if reason:
        pytest.skip(reason)
    clear_stale(gr_topology(), cb_home)
    c = Cluster(gr_topology(), home=cb_home)
    timings = c.up()
    print(f"\nGroup Replication: 3 members + HAProxy up in {timings['total']:.1f} s", flush=True)
    try:
        yield c
    finally:
        c.down()
    assert leftovers(NAME) == []
