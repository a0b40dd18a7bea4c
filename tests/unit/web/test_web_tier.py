"""webtier.py and the local provider's part of it: host plans, limits and limited hosts of the
web roles, the web nodes' and front balancers' configurations, bring-up order, persisted processes,
the fault operations and teardown, over fake hosts (nothing real starts)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from clusterbench.cluster import Cluster
from clusterbench.components.haproxy.component import HAProxy
from clusterbench.components.haproxy.status import BackendServer
from clusterbench.components.keepalived.component import Keepalived
from clusterbench.engines.base import Credentials
from clusterbench.errors import ClusterStateError
from clusterbench.hosts.base import Machine, ProcessRef
from clusterbench.hosts.local import NetnsHost
from clusterbench.providers.cgroups import CgroupV1
from clusterbench.providers.local import LocalProvider
from clusterbench.providers.network import HostPlan
from clusterbench.spec.topology import Topology
from tests.unit.fakes import FakeClock, FakeHost, local_provider
from tests.unit.web.test_web_node import WebHost

CREDS = Credentials("cbadmin", "adm", "bench", "app", "cbmon", "mon", "cbrepl", "rpl", "cbweb", "web-pw")


def cluster(tmp_path: Path, data: dict[str, Any]) -> Cluster:
    c = Cluster(Topology.model_validate(data), home=tmp_path, clock=FakeClock())
    c.creds = CREDS
    return c


def with_hosts(c: Cluster, hosts: dict[str, FakeHost]) -> dict[str, FakeHost]:
    """Every role's host is a fake made on first use (web roles get a WebHost)."""

    def host(role: str) -> Machine:
        if role not in hosts:
            hosts[role] = WebHost() if role.startswith(("w", "n")) else FakeHost(role)
        return hosts[role]

    c.host = host  # type: ignore[method-assign]
    c.provider.limited_host = host
    return hosts


# ---------------------------------------------------------------- the provider


def limited(p: LocalProvider, role: str) -> NetnsHost:
    h = p.limited_host(role)
    assert isinstance(h, NetnsHost)
    return h


def test_host_plans_give_web_nodes_and_fronts_namespaces(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"cluster": {"nodes": 1}, "web": {
        "nodes": 2, "resources": {"bandwidth": "100mbit"}, "node": [{"index": 2, "bandwidth": "10mbit"}],
        "front": {"count": 2}}})  # fmt: skip
    assert local_provider(c).host_plans() == [
        HostPlan("n1", "198.18.0.11", None),
        HostPlan("lb1", "198.18.0.2"),
        HostPlan("w1", "198.18.0.21", "100mbit"),
        HostPlan("w2", "198.18.0.22", "10mbit"),
        HostPlan("fe1", "198.18.0.5"),
        HostPlan("fe2", "198.18.0.7"),
    ]


def test_colocated_web_nodes_get_no_namespace_of_their_own(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"cluster": {"nodes": 2}, "web": {"nodes": 2, "layout": "colocated"}})
    roles = [p.role for p in local_provider(c).host_plans()]
    assert roles == ["n1", "n2", "lb1", "fe1"]


def test_limits_and_limited_hosts_of_web_roles(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"resources": {"cpu_quota": 1.0}, "web": {
        "nodes": 2, "resources": {"cpu_quota": 0.5}, "node": [{"index": 2, "cpuset": "1"}]}})  # fmt: skip
    p = local_provider(c)
    p.cgroups = CgroupV1(tmp_path / "cg")
    assert p.limited_roles() == ["n1", "n2", "n3", "w1", "w2"]
    assert p.resources("w2").cpuset == "1" and p.resources("lb1").cpus() is None
    # no group made yet: nothing to enter
    assert limited(p, "w1").wrap(["nginx"]) == ["ip", "netns", "exec", "cb-lab-w1", "nginx"]
    group = tmp_path / "cg" / "cpu" / "clusterbench" / "lab-w1"
    group.mkdir(parents=True)
    (group / "cgroup.procs").write_text("")
    # the group is entered before the namespace: `ip netns exec` mounts a /sys without it
    argv = limited(p, "w1").wrap(["nginx"])
    assert argv[:2] == ["sh", "-c"] and argv[-7:] == [
        str(group / "cgroup.procs"), "--", "ip", "netns", "exec", "cb-lab-w1", "nginx"]  # fmt: skip


# ---------------------------------------------------------------- configurations


def test_web_node_reaches_the_database_balancer_with_its_own_account(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"balancer": {"count": 2}, "web": {"nodes": 3, "resources": {"cpu_quota": 0.5}}})
    with_hosts(c, {})
    w = c.web_node(2)
    assert (w.cfg.address, w.cfg.dir, w.cfg.cpus) == ("198.18.0.22", tmp_path / "clusters/lab/w2", 0.5)
    db = w.cfg.database
    got = (db.host, db.port, db.user, db.password, db.schema)
    assert got == ("198.18.0.3", 3306, "cbweb", "web-pw", "sbtest")
    assert w.cfg.children == 2  # 4 per CPU of a half-CPU node, at least 2


def test_colocated_web_node_runs_on_its_database_nodes_host_under_its_limits(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"resources": {"cpu_quota": 1.5}, "web": {"nodes": 2, "layout": "colocated"}})
    hosts = with_hosts(c, {})
    w = c.web_node(2)
    assert w.host is hosts["n2"] and w.cfg.address == "198.18.0.12" and w.cfg.cpus == 1.5
    fe = c.front(1)
    assert fe.cfg.servers == (("w1", "198.18.0.11"), ("w2", "198.18.0.12"))


def test_unknown_web_node_and_front_are_one_line(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"web": {"nodes": 2}})
    with pytest.raises(ClusterStateError) as info:
        c.web_node(3)
    assert str(info.value) == "web node 3 does not exist; cluster 'lab' has web nodes w1-w2"
    with pytest.raises(ClusterStateError) as info:
        c.front(2)
    assert str(info.value) == "front balancer 2 does not exist; cluster 'lab' has fe1 only"
    with pytest.raises(ClusterStateError, match="has no web tier$"):
        cluster(tmp_path, {}).web_node(1)


# ---------------------------------------------------------------- bring-up, operations, teardown


class FakeHAProxy:
    """What bring-up asks of a front HAProxy, in order, and what it sees."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        log = self.log

        def step(name: str) -> Any:
            def f(h: HAProxy, *a: Any, **k: Any) -> Any:
                log.append(f"{name} {h.cfg.dir.name}")
                if name == "start":
                    h.proc = ProcessRef(900 + int(h.cfg.dir.name[2:]), 1)
                    assert isinstance(h.host, FakeHost)
                    h.host.live.add(h.proc.pid)
                    return h.proc
                if name == "wait_all_up":
                    log[-1] += " " + ",".join(a[0])
                return None

            return f

        for name in ("write_files", "validate", "start", "wait_all_up"):
            monkeypatch.setattr(HAProxy, name, step(name))
        monkeypatch.setattr(HAProxy, "servers", lambda h: [BackendServer("web", "w1", "UP", 0, 0, "L7OK", 0)])

        def ka_step(name: str) -> Any:
            def f(ka: Keepalived, *a: Any, **k: Any) -> Any:
                log.append(f"keepalived {name} {ka.cfg.role}")
                if name == "start":
                    ka.proc = ProcessRef(950 + ka.cfg.index, 1)
                    return ka.proc
                return None

            return f

        for name in ("write_files", "validate", "start"):
            monkeypatch.setattr(Keepalived, name, ka_step(name))
        monkeypatch.setattr(Keepalived, "holds_vip", lambda ka: ka.cfg.role == "fe1")


def test_up_web_starts_web_nodes_then_fronts_then_keepalived_and_records_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster(tmp_path, {"cluster": {"nodes": 1}, "web": {"nodes": 2, "front": {"count": 2}}})
    hosts = with_hosts(c, {})
    log: list[str] = []
    FakeHAProxy(log).install(monkeypatch)
    lines: list[str] = []
    c._up_web(lines.append)
    assert log == [
        "write_files fe1", "validate fe1", "start fe1", "write_files fe2", "validate fe2", "start fe2",
        "keepalived write_files fe1", "keepalived validate fe1", "keepalived write_files fe2",
        "keepalived validate fe2", "keepalived start fe1", "keepalived start fe2",
        "wait_all_up fe1 w1,w2", "wait_all_up fe2 w1,w2",
    ]  # fmt: skip
    assert [s.argv[0] for s in hosts["w1"].spawned] == ["php-fpm8.2", "nginx"]
    # the pool and the workers follow this machine's CPUs (the node has no limit)
    assert lines[0].startswith("web node w1 started: http://198.18.0.21:80, php-fpm ")
    assert lines[-1] == "front keepalived: VIP 198.18.0.6:80 on fe1"
    st = c.state
    assert set(st["web"]) == {"w1", "w2"} and st["web"]["w1"]["nginx"] is not None
    assert st["fronts"]["fe2"] == {
        "proc": {"pid": 902, "start_ticks": 1}, "keepalived": {"pid": 952, "start_ticks": 1},
    }  # fmt: skip
    # a reloaded cluster finds them again
    again = cluster(tmp_path, c.topology.model_dump(mode="json"))
    again.state = st
    assert again.web_node(1).refs() == st["web"]["w1"] and again.front(2).proc == ProcessRef(902, 1)


def test_web_faults_kill_and_start_a_web_node_and_the_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster(tmp_path, {"cluster": {"nodes": 1}, "web": {"nodes": 2, "front": {"count": 2}}})
    hosts = with_hosts(c, {})
    log: list[str] = []
    FakeHAProxy(log).install(monkeypatch)
    c._up_web(lambda _: None)
    log.clear()
    assert c.web_kill(2) == "web node w2 killed"
    assert c.state["web"]["w2"]["fpm"] is not None and not c.web_node(2).alive()
    assert c.web_start(2) == "web node w2 UP in 0.0 s"
    assert log == ["wait_all_up fe1 w2", "wait_all_up fe2 w2"]
    assert c.web_node(2).alive()
    assert c.front_kill(1) == "front haproxy fe1 killed (it held the front VIP)"
    assert [s.sig for s in hosts["fe1"].signals] == [signal.SIGKILL]
    assert not c.front(1).alive()
    assert c.front_kill(1) == "front haproxy fe1 not running (it held the front VIP)"


def test_down_stops_keepalived_then_fronts_then_web_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cluster(tmp_path, {"cluster": {"nodes": 1}, "web": {"nodes": 1, "front": {"count": 2}}})
    hosts = with_hosts(c, {})
    FakeHAProxy([]).install(monkeypatch)
    c._up_web(lambda _: None)
    for h in hosts.values():
        h.die_on = (signal.SIGKILL, signal.SIGTERM)
    monkeypatch.setattr(Keepalived, "stop", lambda ka, timeout=10.0: "stopped")
    assert c._down_web() == [
        "keepalived fe1 stopped", "keepalived fe2 stopped", "front haproxy fe1 stopped",
        "front haproxy fe2 stopped", "web node w1 stopped",
    ]  # fmt: skip
    assert c._down_web()[-1:] != ["web node w1 stopped"]  # nothing left to stop


def test_what_up_says_of_the_web_tier() -> None:
    from clusterbench.spec.describe import web_banner, web_endpoints

    pair = Topology.model_validate({"web": {"nodes": 2, "front": {"count": 2}}})
    assert web_banner(pair) == " + 2 web nodes + 2 front HAProxy with keepalived (VIP)"
    assert web_endpoints(pair, "fe1") == [
        ("http", "http://198.18.0.6:80", "front keepalived VIP, now on fe1"),
        ("", "http://198.18.0.5:80", "fe1 itself"),
        ("", "http://198.18.0.7:80", "fe2 itself"),
        ("", "http://198.18.0.21:80", "web node w1"),
        ("", "http://198.18.0.22:80", "web node w2"),
    ]
    one = Topology.model_validate({"web": {"nodes": 1, "layout": "colocated"}})
    assert web_banner(one) == " + 1 web node on the database nodes' hosts + front HAProxy"
    assert web_endpoints(one, None) == [
        ("http", "http://198.18.0.5:80", "front HAProxy fe1"), ("", "http://198.18.0.11:80", "web node w1"),
    ]  # fmt: skip
    assert web_banner(Topology()) == "" and web_endpoints(Topology(), None) == []
