"""cluster.py: endpoints, node configs, host plans, persisted state and the rejoin path, without root.

Nothing here starts a process: nodes that would run get a FakeHost; paths live under tmp_path.
"""

from __future__ import annotations

import json
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clusterbench.cluster import Cluster
from clusterbench.engines.galera.node import Credentials, GaleraNode
from clusterbench.engines.galera.status import GraState, WsrepStatus
from clusterbench.errors import ClusterStateError, ComponentError
from clusterbench.hosts.base import ProcessRef
from clusterbench.hosts.procs import LIST_PROCS
from clusterbench.paths import known_clusters
from clusterbench.providers.network import HostPlan
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.spec.topology import Topology
from tests.unit.fakes import FakeClock, FakeHost, galera_engine_of, local_provider

DATA = Path(__file__).parent / "data"
UUID = "3664e239-e640-11f1-8093-aa394a74bc52"
LISTING = ["sh", "-c", LIST_PROCS]
CREDS = Credentials("cbadmin", "adm-pw", "bench", "app-pw", "cbmon", "mon-pw")


def cluster(
    tmp_path: Path, data: dict[str, object] | None = None, creds: Credentials | None = CREDS
) -> Cluster:
    c = Cluster(Topology.model_validate(data or {}), home=tmp_path, clock=FakeClock())
    c.creds = creds
    return c


# ---------------------------------------------------------------- endpoints


def test_endpoint_balancer(tmp_path: Path) -> None:
    assert cluster(tmp_path).endpoint() == Endpoint(
        name="balancer",
        addresses=(Address(host="198.18.0.2", port=3306),),
        user="bench",
        password="app-pw",
        database="sbtest",
    )


def test_endpoint_balancer_port_and_database(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"balancer": {"port": 6033}, "cluster": {"subnet": "10.9.0.0/24"}})
    ep = c.endpoint("balancer", database="ledger")
    assert ep.addresses == (Address(host="10.9.0.2", port=6033),)
    assert ep.database == "ledger"


def test_endpoint_node(tmp_path: Path) -> None:
    ep = cluster(tmp_path).endpoint("node:2")
    assert ep.name == "node:2"
    assert ep.addresses == (Address(host="198.18.0.12", port=3306),)
    assert (ep.user, ep.password) == ("bench", "app-pw")


def test_endpoint_all_nodes(tmp_path: Path) -> None:
    ep = cluster(tmp_path, {"cluster": {"nodes": 5}}).endpoint("all-nodes")
    assert ep.name == "all-nodes"
    assert ep.addresses == tuple(Address(host=f"198.18.0.{10 + i}", port=3306) for i in range(1, 6))


@pytest.mark.parametrize("target", ["node:4", "node:0", "node:10"])
def test_endpoint_node_out_of_range(tmp_path: Path, target: str) -> None:
    with pytest.raises(ClusterStateError) as info:
        cluster(tmp_path).endpoint(target)
    assert str(info.value) == f"node {target[5:]} does not exist; cluster 'lab' has nodes 1-3"


@pytest.mark.parametrize("target", ["node:x", "node:", "node:-1", "nodes", "n1", "", "Balancer", "all"])
def test_endpoint_bad_target(tmp_path: Path, target: str) -> None:
    with pytest.raises(ClusterStateError) as info:
        cluster(tmp_path).endpoint(target)
    assert str(info.value) == f"unknown target '{target}'; use balancer, node:N or all-nodes"


def test_endpoint_no_balancer(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"balancer": {"kind": "none"}})
    with pytest.raises(ClusterStateError) as info:
        c.endpoint("balancer")
    assert str(info.value) == "this cluster has no balancer; use --target node:N or all-nodes"
    assert c.endpoint("node:1").addresses == (Address(host="198.18.0.11"),)


def test_endpoint_without_credentials(tmp_path: Path) -> None:
    with pytest.raises(ClusterStateError) as info:
        cluster(tmp_path, creds=None).endpoint()
    assert str(info.value) == "credentials of cluster 'lab' are missing; recreate it"


# ---------------------------------------------------------------- configs and plans


def test_node_config(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"cluster": {"name": "east", "subnet": "198.18.5.0/24"}})
    cfg = galera_engine_of(c).node_config(2, c.node_dir(2))
    assert cfg.cluster_name == "east"
    assert cfg.index == 2
    assert cfg.address == "198.18.5.12"
    assert cfg.peers == ("198.18.5.11", "198.18.5.12", "198.18.5.13")
    assert cfg.dir == tmp_path / "clusters" / "east" / "n2"
    assert cfg.settings == c.topology.mariadb


def test_node_objects_live_in_their_namespaces(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    nodes = c.nodes()
    assert [n.index for n in nodes] == [1, 2, 3]
    assert [n.host.name for n in nodes] == ["cb-lab-n1", "cb-lab-n2", "cb-lab-n3"]
    assert all(n.proc is None for n in nodes)


def test_node_restores_recorded_processes(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    c.state = {
        "nodes": {"2": {"proc": {"pid": 10, "start_ticks": 20}, "check": {"pid": 11, "start_ticks": 21}}}
    }
    n = c.node(2)
    assert n.proc == ProcessRef(10, 20)
    assert n.check_proc == ProcessRef(11, 21)
    assert c.node(1).proc is None


def test_host_plans(tmp_path: Path) -> None:
    c = cluster(
        tmp_path, {"resources": {"bandwidth": "10mbit"}, "node": [{"index": 3, "bandwidth": "1gbit"}]}
    )
    assert local_provider(c).host_plans() == [
        HostPlan("n1", "198.18.0.11", "10mbit"),
        HostPlan("n2", "198.18.0.12", "10mbit"),
        HostPlan("n3", "198.18.0.13", "1gbit"),
        HostPlan("lb1", "198.18.0.2"),
    ]


def test_host_plans_without_balancer(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"balancer": {"kind": "none"}, "cluster": {"nodes": 1}})
    assert local_provider(c).host_plans() == [HostPlan("n1", "198.18.0.11", None)]
    assert c.haproxy() is None


def test_haproxy_config(tmp_path: Path) -> None:
    h = cluster(tmp_path).haproxy()
    assert h is not None
    assert h.cfg.servers == (("n1", "198.18.0.11"), ("n2", "198.18.0.12"), ("n3", "198.18.0.13"))
    assert h.cfg.address == "198.18.0.2"
    assert h.cfg.dir == tmp_path / "clusters" / "lab" / "lb1"
    assert h.host.name == "cb-lab-lb1"


# ---------------------------------------------------------------- persisted state


def test_load_not_up(tmp_path: Path) -> None:
    with pytest.raises(ClusterStateError) as info:
        Cluster.load("lab", home=tmp_path)
    assert str(info.value) == "cluster 'lab' is not up; start it with `clusterbench up`"


def test_load_unreadable_state(tmp_path: Path) -> None:
    p = tmp_path / "clusters" / "lab" / "state.json"
    p.parent.mkdir(parents=True)
    p.write_text("{not json")
    with pytest.raises(ClusterStateError) as info:
        Cluster.load("lab", home=tmp_path)
    assert str(info.value).startswith(f"{p} is unreadable (")
    assert str(info.value).endswith("); run `clusterbench down -n lab`")


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"cluster": {"name": "ut", "nodes": 5}})
    c.state = {"name": "ut", "topology": c.topology.model_dump(mode="json"), "nodes": {}}
    c.save()
    c.secrets_path.write_text(json.dumps(CREDS.to_json()))
    loaded = Cluster.load("ut", home=tmp_path)
    assert loaded.topology == c.topology
    assert loaded.creds == CREDS
    assert loaded.state == c.state
    assert known_clusters(tmp_path) == ["ut"]


def test_load_without_secrets(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    c.state = {"topology": c.topology.model_dump(mode="json")}
    c.save()
    assert Cluster.load("lab", home=tmp_path).creds is None


def test_known_clusters(tmp_path: Path) -> None:
    assert known_clusters(tmp_path) == []
    for name in ("b", "a"):
        (tmp_path / "clusters" / name).mkdir(parents=True)
        (tmp_path / "clusters" / name / "state.json").write_text("{}")
    (tmp_path / "clusters" / "gone").mkdir()  # no state: not up
    assert known_clusters(tmp_path) == ["a", "b"]


# ---------------------------------------------------------------- node start / rejoin


def _synced(size: int = 3) -> WsrepStatus:
    return WsrepStatus(4, "Synced", size, "Primary", True, True, 10, 0.0, UUID, 9)


class SyncedNode(GaleraNode):
    """Answers Synced instead of connecting to a server."""

    def status(self) -> WsrepStatus | None:
        return _synced()


def _fake_node(c: Cluster, index: int) -> tuple[GaleraNode, FakeHost]:
    host = FakeHost(f"cb-lab-n{index}", die_on=(signal.SIGTERM, signal.SIGKILL))
    cfg = galera_engine_of(c).node_config(index, c.node_dir(index))
    return SyncedNode(cfg, host, CREDS, clock=c.clock), host


def rejoin(c: Cluster, n: GaleraNode) -> str:
    return galera_engine_of(c)._rejoin(c, n, timeout=60)


def test_rejoin_after_crash_uses_recovered_position_never_new_cluster(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    n, host = _fake_node(c, 2)
    host.files[n.cfg.datadir / "grastate.dat"] = (DATA / "grastate_crashed.dat").read_text()
    host.files[n.cfg.dir / "recover.log"] = (DATA / "wsrep_recover.log").read_text()
    host.files[n.cfg.error_log] = (DATA / "join_ist.log").read_text()
    msg = rejoin(c, n)
    assert re.fullmatch(rf"n2 rejoined by IST after recovering {UUID}:4 in \d+\.\d s", msg)
    # Before recovery and before the start, the node's stray processes are looked for.
    assert host.runs == [
        LISTING,
        [
            "mariadbd",
            f"--defaults-file={n.cfg.cnf_path}",
            "--wsrep-recover",
            f"--log-error={n.cfg.dir / 'recover.log'}",
        ],
        LISTING,
    ]
    assert [s.argv for s in host.spawned] == [
        ["mariadbd", f"--defaults-file={n.cfg.cnf_path}", f"--wsrep-start-position={UUID}:4"],
        ["socat", "TCP-LISTEN:9200,bind=198.18.0.12,fork,reuseaddr", f"EXEC:{n.cfg.health_script}"],
    ]
    assert all("--wsrep-new-cluster" not in s.argv for s in host.spawned)
    state = json.loads(c.state_path.read_text())
    assert state["nodes"]["2"]["proc"] == host.spawned[0].proc.to_json()
    assert state["nodes"]["2"]["check"] == host.spawned[1].proc.to_json()


def test_rejoin_after_clean_stop_needs_no_recovery(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    n, host = _fake_node(c, 3)
    host.files[n.cfg.datadir / "grastate.dat"] = (DATA / "grastate_clean.dat").read_text()
    host.files[n.cfg.error_log] = (DATA / "join_ist.log").read_text()
    msg = rejoin(c, n)
    assert re.fullmatch(r"n3 rejoined by IST in \d+\.\d s", msg)
    assert host.runs == [LISTING]
    assert host.spawned[0].argv == ["mariadbd", f"--defaults-file={n.cfg.cnf_path}"]


def test_rejoin_with_empty_datadir_reports_sst(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    n, host = _fake_node(c, 2)
    host.files[n.cfg.error_log] = (DATA / "join_sst.log").read_text()
    msg = rejoin(c, n)
    assert re.fullmatch(r"n2 rejoined by SST in \d+\.\d s", msg)
    assert host.spawned[0].argv == ["mariadbd", f"--defaults-file={n.cfg.cnf_path}"]


def test_node_start_refuses_unsafe_bootstrap(tmp_path: Path) -> None:
    c = cluster(tmp_path)  # no node has a process recorded, and no grastate.dat exists
    with pytest.raises(ClusterStateError) as info:
        c.node_start(2)
    assert str(info.value) == (
        "no node of 'lab' is running and n2 is not safe to bootstrap; "
        "run `clusterbench start` to cold-start from the most advanced node"
    )


def test_node_operations_validate_the_index(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    for op in (c.node_start, c.node_stop, c.node_kill):
        with pytest.raises(ClusterStateError) as info:
            op(0)
        assert str(info.value) == "node 0 does not exist; cluster 'lab' has nodes 1-3"


def _all_crashed(tmp_path: Path) -> tuple[Cluster, dict[int, Any], dict[int, int]]:
    """A 3-node cluster of fake nodes that all crashed, each with the position it recovers."""
    c = cluster(tmp_path)
    fakes = {i: _fake_node(c, i) for i in (1, 2, 3)}
    seqnos = {1: 10480, 2: 10486, 3: 10471}
    for i, (n, host) in fakes.items():
        host.files[n.cfg.datadir / "grastate.dat"] = (DATA / "grastate_crashed.dat").read_text()
        host.files[n.cfg.dir / "recover.log"] = f"WSREP: Recovered position: {UUID}:{seqnos[i]}\n"
        host.files[n.cfg.error_log] = (DATA / "join_ist.log").read_text()
    nodes = {i: fakes[i][0] for i in fakes}
    c.node = lambda i: nodes[i]  # type: ignore[method-assign, assignment]
    c.nodes = lambda: [nodes[i] for i in (1, 2, 3)]  # type: ignore[method-assign]
    return c, fakes, seqnos


def test_a_cold_start_recovers_every_node_at_once(tmp_path: Path) -> None:
    """Each recovery is an InnoDB start of its own: the three run together (each waits here until
    all three have begun; one after the other, the first would wait alone until the timeout). The
    nodes that rejoin after the bootstrap start from that position: no second recovery."""
    c, fakes, _ = _all_crashed(tmp_path)
    together = threading.Barrier(3, timeout=5)
    calls: list[int] = []
    for i, (n, _host) in fakes.items():
        alone = n.recover_position

        def recover(alone: Callable[[], str | None] = alone, i: int = i) -> str | None:
            calls.append(i)
            together.wait()
            return alone()

        n.recover_position = recover
    out = galera_engine_of(c).start_all(c, lambda _: None)
    assert out[:3] == [f"n{i} recovered position {UUID}:{s}" for i, s in ((1, 10480), (2, 10486), (3, 10471))]
    assert sorted(calls) == [1, 2, 3]


def test_cold_start_after_kill_all_continues_the_recovered_history(tmp_path: Path) -> None:
    """Issue 15, item 4: the node with the highest recovered seqno bootstraps from that uuid:seqno
    (grastate rewritten with it, safe to bootstrap), so the cluster keeps its UUID and seqnos go on;
    seqno -1 would make Galera start a new history ('Starting new group from scratch')."""
    c, fakes, seqnos = _all_crashed(tmp_path)
    said: list[str] = []
    out = galera_engine_of(c).start_all(c, said.append)
    assert said == out  # the user sees every step, the recovered positions and the choice too
    n2, host2 = fakes[2]
    assert n2.grastate() == GraState(UUID, 10486, True)
    assert host2.spawned[0].argv == ["mariadbd", f"--defaults-file={n2.cfg.cnf_path}", "--wsrep-new-cluster"]
    assert out[3:5] == [
        f"n2 has the highest seqno (10486); bootstrapping from {UUID}:10486",
        "n2 bootstrapped",
    ]
    for i in (1, 3):
        n, host = fakes[i]
        assert host.spawned[0].argv == [
            "mariadbd",
            f"--defaults-file={n.cfg.cnf_path}",
            f"--wsrep-start-position={UUID}:{seqnos[i]}",
        ]


def test_rejoin_retries_once_with_another_donor_when_the_donor_died(tmp_path: Path) -> None:
    """Galera aborts a joiner whose donor dies mid-SST instead of choosing another donor: the
    start is retried once with --wsrep-sst-donor naming a live node other than the failed one."""
    c = cluster(tmp_path)
    n, host = _fake_node(c, 3)
    others = {i: _fake_node(c, i)[0] for i in (1, 2)}
    for i, o in others.items():
        o.proc = ProcessRef(100 + i, 1)
        o.host.live.add(100 + i)  # type: ignore[attr-defined]
    c.nodes = lambda: [others[1], others[2], n]  # type: ignore[method-assign]
    died = (
        "WSREP: Member 2.0 (n3) requested state transfer from '*any*'. Selected 0.0 (n1)(SYNCED) as donor.\n"
        "[ERROR] WSREP: State transfer to 2.0 (n3) failed: -111 (Connection refused)\n"
    )
    host.files[n.cfg.error_log] = died
    first = {"done": False}

    def dies_once(timeout: float, expect_size: int | None = None, give_up: object = None) -> object:
        if not first["done"]:
            first["done"] = True
            assert n.proc is not None
            host.live.discard(n.proc.pid)
            raise ComponentError("node n3 exited while joining")
        host.files[n.cfg.error_log] = died + "WSREP_SST: [INFO] rsync SST completed on joiner\n"
        return None

    n.wait_synced = dies_once  # type: ignore[method-assign, assignment]
    msg = rejoin(c, n)
    assert [s.argv[-1] for s in host.spawned if s.argv[0] == "mariadbd"] == [
        f"--defaults-file={n.cfg.cnf_path}",
        "--wsrep-sst-donor=n2",
    ]
    assert msg.endswith("(its donor n1 failed during the transfer; retried with donor n2)")


def test_a_joiner_stranded_by_its_dead_donor_is_stopped_and_retried_with_another(tmp_path: Path) -> None:
    """Seen in the donor-kill integration test: the joiner does not die with its donor but runs
    on outside any component ('Sending JOIN failed: -103', Initialized, 0 members) until the
    180 s timeout. The wait gives up once the chosen donor is dead and the joiner is outside the
    cluster: the joiner is killed and started again with the other donor."""
    from clusterbench.engines import server as server_mod

    # n2 kept Primary: its view counts only itself once the dead donor and the killed joiner left.
    c, n, host, said, attempts = _stranded_joiner(tmp_path, survivor=lambda said: _synced(1))
    t0 = c.clock.now()
    msg = rejoin(c, n)
    assert attempts == [f"--defaults-file={n.cfg.cnf_path}", "--wsrep-sst-donor=n2"]
    assert c.clock.now() - t0 < server_mod.GIVE_UP_EVERY + 1  # not the 60 s timeout
    assert [s.sig for s in host.signals] == [signal.SIGKILL]  # the stranded joiner
    assert msg.endswith("(its donor n1 failed during the transfer; retried with donor n2)")
    assert said == []  # n2 kept Primary: nothing to re-form


def test_down_tears_down_even_when_the_engine_cannot_make_its_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Group Replication cluster whose rootfs is gone: `down` must still remove the namespaces
    (the provider's teardown stops what runs in them), or the cluster's name stays taken."""
    monkeypatch.setenv("CLUSTERBENCH_ROOTFS", str(tmp_path / "gone"))
    c = cluster(tmp_path, {"engine": {"kind": "group_replication"}})
    c.state = {"nodes": {"1": {"proc": {"pid": 4242, "start_ticks": 1}}}}
    torn: list[tuple[bool, bool]] = []

    def teardown(keep: bool, keep_remote: bool) -> list[str]:
        torn.append((keep, keep_remote))
        return ["netns removed"]

    monkeypatch.setattr(c.provider, "teardown", teardown)
    done = c.down()
    assert torn == [(False, False)]
    assert done[0].startswith("nodes not stopped one by one (") and str(tmp_path / "gone") in done[0]
    assert done[1:] == ["netns removed"]


def test_node_start_stops_and_names_what_its_earlier_server_left_running(tmp_path: Path) -> None:
    """Issue 15, item 8: a killed donor's SST script and its rsync (reparented to PID 1, naming
    the node's directory) are stopped before the node starts, and `node start` says so; another
    node's helpers are left alone."""
    c = cluster(tmp_path)
    n, host = _fake_node(c, 3)
    others = {i: _fake_node(c, i)[0] for i in (1, 2)}
    for i, o in others.items():
        o.proc = ProcessRef(100 + i, 1)
        o.host.live.add(100 + i)  # type: ignore[attr-defined]
    nodes = {1: others[1], 2: others[2], 3: n}
    c.node = lambda i: nodes[i]  # type: ignore[method-assign, assignment]
    c.nodes = lambda: [nodes[i] for i in (1, 2, 3)]  # type: ignore[method-assign]
    host.files[n.cfg.datadir / "grastate.dat"] = (DATA / "grastate_clean.dat").read_text()
    host.files[n.cfg.error_log] = (DATA / "join_ist.log").read_text()

    def stat(pid: int) -> str:
        return f"{pid} (x) S " + " ".join(["0"] * 18) + f" {pid * 10} 0"

    d, other = n.cfg.dir, others[2].cfg.dir
    sst = "/bin/bash -ue /usr/bin/wsrep_sst_rsync --role donor --datadir"
    host.responses[tuple(LISTING)] = "\n".join(
        [
            f"800\t1\t{stat(800)}\t{sst} {d}/data/",
            f"801\t800\t{stat(801)}\trsync --archive {d}/data/ rsync://198.18.0.12:4444/rsync_sst",
            f"900\t1\t{stat(900)}\t{sst} {other}/data/",
        ]
    )
    host.live |= {800, 801, 900}
    msg = c.node_start(3)
    assert re.fullmatch(
        r"n3 rejoined by IST in \d+\.\d s \(first stopped 2 process\(es\) its earlier server left "
        r"running: rsync, wsrep_sst_rsync\)",
        msg,
    ), msg
    assert {s.proc.pid for s in host.signals} == {800, 801}
    assert host.live & {800, 801} == set() and 900 in host.live
    assert host.spawned[0].argv == ["mariadbd", f"--defaults-file={n.cfg.cnf_path}"]


def test_no_retry_when_the_donors_death_took_the_quorum_and_the_message_says_what_to_start(
    tmp_path: Path,
) -> None:
    c = cluster(tmp_path)
    n, host = _fake_node(c, 3)
    others = {i: _fake_node(c, i)[0] for i in (1, 2)}
    others[2].proc = ProcessRef(102, 1)
    others[2].host.live.add(102)  # type: ignore[attr-defined]
    alone = WsrepStatus(4, "Initialized", 1, "non-Primary", False, True, -1, 0.0, UUID, 9)
    others[2].status = lambda: alone  # type: ignore[method-assign]
    c.nodes = lambda: [others[1], others[2], n]  # type: ignore[method-assign]
    host.files[n.cfg.error_log] = (
        "WSREP: Member 2.0 (n3) requested state transfer from '*any*'. Selected 0.0 (n1)(SYNCED) as donor.\n"
    )

    def dies(timeout: float, expect_size: int | None = None, give_up: object = None) -> object:
        assert n.proc is not None
        host.live.discard(n.proc.pid)
        raise ComponentError("node n3 exited while joining")

    n.wait_synced = dies  # type: ignore[method-assign, assignment]
    with pytest.raises(ComponentError) as info:
        rejoin(c, n)
    assert str(info.value) == (
        "node n3 exited while joining; not retried: no other node is in a Primary component "
        "(n2 running); start n1 again first, then this node"
    )


def _stranded_joiner(
    tmp_path: Path, survivor: Callable[[list[str]], WsrepStatus]
) -> tuple[Cluster, GaleraNode, FakeHost, list[str], list[str]]:
    """n1, the donor, died mid-SST; n3 is stranded outside any component on its first start and
    synced on its second; n2 runs and answers `survivor(said)`, `said` being the SQL sent to it."""
    c = cluster(tmp_path)
    n, host = _fake_node(c, 3)
    others = {i: _fake_node(c, i)[0] for i in (1, 2)}
    others[2].proc = ProcessRef(102, 1)
    others[2].host.live.add(102)  # type: ignore[attr-defined]
    c.nodes = lambda: [others[1], others[2], n]  # type: ignore[method-assign]
    host.files[n.cfg.error_log] = (
        "WSREP: Member 2.0 (n3) requested state transfer from '*any*'. Selected 0.0 (n1)(SYNCED) as donor.\n"
        "[ERROR] WSREP: ./gcs/src/gcs.cpp:s_join():988: Sending JOIN failed: -103 (Connection was closed).\n"
    )
    stranded = WsrepStatus(1, "Initialized", 0, "Disconnected", False, False, -1, 0.0, UUID, -1)
    said: list[str] = []
    attempts: list[str] = []
    n.status = lambda: stranded if len(attempts) == 1 else _synced()  # type: ignore[method-assign]
    others[2].status = lambda: survivor(said)  # type: ignore[method-assign]

    def query(sql: str, timeout: float = 2.0) -> list[tuple[object, ...]]:
        said.append(sql)
        return []

    others[2].query = query  # type: ignore[method-assign]
    real_spawn = n.spawn

    def spawn(argv: list[str]) -> ProcessRef:
        attempts.append(argv[-1])
        if len(attempts) == 2:
            host.files[n.cfg.error_log] += "WSREP_SST: [INFO] rsync SST completed on joiner\n"
        return real_spawn(argv)

    n.spawn = spawn  # type: ignore[method-assign]
    return c, n, host, said, attempts


def _left_alone(size: int) -> Callable[[list[str]], WsrepStatus]:
    """n2 non-Primary in a view of `size` members, until told pc.bootstrap; then synced."""
    alone = WsrepStatus(4, "Initialized", size, "non-Primary", False, True, -1, 0.0, UUID, 9)
    return lambda said: _synced() if said else alone


def test_a_survivor_left_non_primary_by_the_dead_donor_is_re_formed_before_the_retry(tmp_path: Path) -> None:
    c, n, _, said, _ = _stranded_joiner(tmp_path, _left_alone(1))
    msg = rejoin(c, n)
    assert said == ["SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'"]
    assert msg.endswith(
        "(its donor n1 failed during the transfer; the survivors had lost Primary with it (n2; every "
        "other member stopped), re-formed on n2; retried with donor n2)"
    ), msg


def test_no_bootstrap_while_the_survivor_sees_a_member_it_cannot_account_for(tmp_path: Path) -> None:
    # n2's view still holds two members although only n2 runs here: not settled, nothing bootstrapped.
    c, n, _, said, _ = _stranded_joiner(tmp_path, _left_alone(2))
    with pytest.raises(ComponentError, match="no other node is in a Primary component"):
        rejoin(c, n)
    assert said == []


# ---------------------------------------------------------------- the writable node


class _Node:
    def __init__(self, index: int, alive: bool, writable: bool | None) -> None:
        self.index, self._alive, self._writable = index, alive, writable

    def alive(self) -> bool:
        return self._alive

    def health(self) -> object:
        if self._writable is None:
            return None
        from clusterbench.engines.base import NodeHealth

        return NodeHealth("ONLINE", True, True, self._writable, 3)


@pytest.mark.parametrize(
    ("nodes", "want"),
    [
        # after a failover n1 is a running secondary: the primary n2 takes the DDL
        ([(1, True, False), (2, True, True), (3, True, False)], 2),
        ([(1, False, None), (2, True, False), (3, True, True)], 3),
        # nobody writable (no quorum): the first running node, whose error then names the state
        ([(1, False, None), (2, True, False), (3, True, None)], 2),
        ([(1, False, None), (2, False, None)], None),
    ],
)
def test_admin_node_is_a_writable_one_wherever_it_is(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    nodes: list[tuple[int, bool, bool | None]],
    want: int | None,
) -> None:
    c = cluster(tmp_path)
    monkeypatch.setattr(c, "nodes", lambda: [_Node(*n) for n in nodes])
    got = c.admin_node()
    assert (got.index if got is not None else None) == want
