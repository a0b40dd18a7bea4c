"""A keepalived balancer pair: [balancer] count/vip/advert_int validation, the address plan, and
what cluster.py derives from it (endpoints, host plans, component configs, state, VIP queries)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.cluster import Cluster
from clusterbench.components.haproxy.component import HAProxy
from clusterbench.components.keepalived.component import Keepalived
from clusterbench.engines.galera import engine as galera_engine
from clusterbench.engines.galera.engine import GaleraEngine
from clusterbench.engines.galera.node import Credentials
from clusterbench.errors import ClusterStateError, ComponentError, InputError
from clusterbench.hosts.base import ProcessRef
from clusterbench.providers import preflight
from clusterbench.providers.network import HostPlan
from clusterbench.spec.endpoint import Address
from clusterbench.spec.topology import Topology, load_topology, topology_from_data
from tests.unit.fakes import FakeClock, FakeHost, local_provider

CREDS = Credentials("cbadmin", "adm-pw", "bench", "app-pw", "cbmon", "mon-pw")
EXAMPLES = Path(__file__).parents[2] / "examples" / "topologies"
PAIR: dict[str, object] = {"balancer": {"count": 2}}


def topo(data: dict[str, object]) -> Topology:
    return topology_from_data(data, "t.toml")


def error_of(data: dict[str, object]) -> str:
    with pytest.raises(InputError) as info:
        topology_from_data(data, "t.toml")
    return str(info.value)


def cluster(tmp_path: Path, data: dict[str, object] | None = None) -> Cluster:
    c = Cluster(Topology.model_validate(PAIR if data is None else data), home=tmp_path, clock=FakeClock())
    c.creds = CREDS
    return c


# ---------------------------------------------------------------- topology: defaults and plan


def test_defaults_one_haproxy_no_vip() -> None:
    t = Topology()
    b = t.balancer
    assert (b.count, b.vip, b.advert_int, b.paired) == (1, None, 1.0, False)
    assert t.balancer_indexes() == [1]
    assert t.vip_address() is None
    assert t.client_address() == "198.18.0.2"


def test_address_plan_of_a_pair() -> None:
    t = topo(PAIR)
    assert t.balancer.paired
    assert t.balancer_indexes() == [1, 2]
    # Stable: bridge .1, lb1 .2, nodes .10+N as with one HAProxy; the VIP .3 and lb2 .4 are new.
    assert (t.bridge_address(), t.balancer_address(1), t.vip_address(), t.balancer_address(2)) == (
        "198.18.0.1",
        "198.18.0.2",
        "198.18.0.3",
        "198.18.0.4",
    )
    assert t.balancer_address() == t.balancer_address(1)
    assert [t.node_address(i) for i in t.node_indexes()] == ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
    assert t.client_address() == "198.18.0.3"


def test_address_plan_pair_in_a_26() -> None:
    t = topo({"cluster": {"nodes": 9, "subnet": "198.18.7.64/26"}, "balancer": {"count": 2}})
    assert (t.balancer_address(1), t.vip_address(), t.balancer_address(2), t.node_address(9)) == (
        "198.18.7.66",
        "198.18.7.67",
        "198.18.7.68",
        "198.18.7.83",
    )


@pytest.mark.parametrize(("vip", "want"), [(True, "198.18.0.3"), ("198.18.0.100", "198.18.0.100")])
def test_vip_true_or_an_address(vip: object, want: str) -> None:
    t = topo({"balancer": {"count": 2, "vip": vip}})
    assert t.vip_address() == want == t.client_address()


def test_no_balancer() -> None:
    t = topo({"balancer": {"kind": "none"}})
    assert (t.balancer_indexes(), t.vip_address(), t.client_address()) == ([], None, None)


def test_fractional_advert_int() -> None:
    assert topo({"balancer": {"count": 2, "advert_int": 0.25}}).balancer.advert_int == 0.25


def test_example_topology() -> None:
    t = load_topology(EXAMPLES / "3-nodes-vip.toml")
    assert (t.name, t.cluster.nodes, t.balancer.count, t.vip_address()) == ("vip", 3, 2, "198.18.3.3")
    assert t.warnings() == []


# ---------------------------------------------------------------- topology: one-line errors


@pytest.mark.parametrize(
    ("balancer", "message"),
    [
        ({"count": 3}, "t.toml: balancer.count: Input should be less than or equal to 2 (got 3)"),
        ({"count": 0}, "t.toml: balancer.count: Input should be greater than or equal to 1 (got 0)"),
        (
            {"vip": True},
            "t.toml: (top level): balancer.vip needs balancer.count = 2 "
            "(keepalived moves the VIP between two HAProxies)",
        ),
        (
            {"count": 2, "vip": False},
            "t.toml: (top level): balancer.count = 2 needs a VIP; remove vip = false or set vip = true",
        ),
        (
            {"kind": "none", "count": 2},
            "t.toml: (top level): balancer.count and balancer.vip need balancer.kind = 'haproxy'",
        ),
        (
            {"count": 2, "vip": "198.18.0.300"},
            "t.toml: balancer.vip: '198.18.0.300' is not an IPv4 address like 198.18.0.3 (or use true) "
            "(got '198.18.0.300')",
        ),
        (
            {"count": 2, "vip": 3},
            "t.toml: balancer.vip: must be true, false or an address like 198.18.0.3 (got 3)",
        ),
        (
            {"count": 2, "vip": "10.0.0.3"},
            "t.toml: (top level): balancer.vip 10.0.0.3 is not a host address in cluster.subnet "
            "198.18.0.0/24",
        ),
        (
            {"count": 2, "vip": "198.18.0.255"},
            "t.toml: (top level): balancer.vip 198.18.0.255 is not a host address in cluster.subnet "
            "198.18.0.0/24",
        ),
        (
            {"count": 2, "vip": "198.18.0.1"},
            "t.toml: (top level): balancer.vip 198.18.0.1 is already the address of the bridge",
        ),
        (
            {"count": 2, "vip": "198.18.0.4"},
            "t.toml: (top level): balancer.vip 198.18.0.4 is already the address of lb2",
        ),
        (
            {"count": 2, "vip": "198.18.0.12"},
            "t.toml: (top level): balancer.vip 198.18.0.12 is already the address of node 2",
        ),
        (
            {"count": 2, "advert_int": 0},
            "t.toml: balancer.advert_int: Input should be greater than or equal to 0.1 (got 0)",
        ),
        (
            {"count": 2, "advert_int": 41},
            "t.toml: balancer.advert_int: Input should be less than or equal to 40 (got 41)",
        ),
        (
            {"count": 2, "advert_int": 0.125},
            "t.toml: balancer.advert_int: 0.125 has more than two decimals; keepalived counts in 1/100 s "
            "(got 0.125)",
        ),
    ],
)
def test_balancer_pair_errors(balancer: dict[str, object], message: str) -> None:
    assert error_of({"balancer": balancer}) == message


def test_vip_on_a_node_that_does_not_exist_is_fine() -> None:
    # .15 would be node 5; with 3 nodes it is free.
    assert topo({"balancer": {"count": 2, "vip": "198.18.0.15"}}).vip_address() == "198.18.0.15"


def test_errors_from_a_file(tmp_path: Path) -> None:
    p = tmp_path / "t.toml"
    p.write_text('[balancer]\ncount = 2\nvip = "198.18.0.2"\n')
    with pytest.raises(InputError) as info:
        load_topology(p)
    assert str(info.value) == f"{p}: (top level): balancer.vip 198.18.0.2 is already the address of lb1"


# ---------------------------------------------------------------- preflight


def test_keepalived_required_only_for_a_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight.shutil, "which", lambda b, path=None: None if b == "keepalived" else b)
    monkeypatch.setattr(galera_engine, "GALERA_PROVIDER", str(Path(__file__)))
    assert preflight.missing_binaries(Topology(), GaleraEngine(Topology()).required()) == []
    assert preflight.missing_binaries(topo(PAIR), {}) == ["keepalived (Debian package keepalived)"]


# ---------------------------------------------------------------- cluster: endpoints and plans


def test_endpoints_of_a_pair(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    assert c.endpoint("vip").addresses == (Address(host="198.18.0.3", port=3306),)
    assert c.endpoint("balancer").addresses == (Address(host="198.18.0.3", port=3306),)
    assert c.endpoint("balancer").name == "balancer"
    assert c.endpoint("vip").name == "vip"
    with pytest.raises(ClusterStateError) as info:
        c.endpoint("lb")
    assert str(info.value) == "unknown target 'lb'; use balancer, vip, node:N or all-nodes"


def test_vip_endpoint_needs_a_pair(tmp_path: Path) -> None:
    with pytest.raises(ClusterStateError) as info:
        cluster(tmp_path, {}).endpoint("vip")
    assert str(info.value) == "this cluster has no VIP (it needs [balancer] count = 2); use --target balancer"
    assert cluster(tmp_path, {}).endpoint("balancer").addresses == (Address(host="198.18.0.2", port=3306),)


def test_host_plans_of_a_pair(tmp_path: Path) -> None:
    assert local_provider(cluster(tmp_path)).host_plans() == [
        HostPlan("n1", "198.18.0.11"),
        HostPlan("n2", "198.18.0.12"),
        HostPlan("n3", "198.18.0.13"),
        HostPlan("lb1", "198.18.0.2"),
        HostPlan("lb2", "198.18.0.4"),
    ]


def test_haproxies_and_keepaliveds(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    h1, h2 = c.haproxies()
    first = c.haproxy()
    assert first is not None and first.cfg == h1.cfg
    assert (h1.cfg.address, h1.cfg.vip, h1.cfg.dir, h1.host.name) == (
        "198.18.0.2",
        "198.18.0.3",
        tmp_path / "clusters" / "lab" / "lb1",
        "cb-lab-lb1",
    )
    assert (h2.cfg.address, h2.cfg.vip, h2.host.name) == ("198.18.0.4", "198.18.0.3", "cb-lab-lb2")
    k1, k2 = c.keepaliveds()
    assert (k1.cfg.index, k1.cfg.src_ip, k1.cfg.peer_ip, k1.cfg.vip, k1.cfg.prefixlen) == (
        1,
        "198.18.0.2",
        "198.18.0.4",
        "198.18.0.3",
        24,
    )
    assert (k2.cfg.index, k2.cfg.src_ip, k2.cfg.peer_ip) == (2, "198.18.0.4", "198.18.0.2")
    assert k1.cfg.haproxy_socket == h1.cfg.stats_socket
    assert k2.cfg.haproxy_socket == h2.cfg.stats_socket
    assert k2.host.name == "cb-lab-lb2"


def test_single_haproxy_has_no_keepalived(tmp_path: Path) -> None:
    c = cluster(tmp_path, {})
    assert [h.cfg.dir.name for h in c.haproxies()] == ["lb1"]
    assert c.haproxies()[0].cfg.vip is None
    assert c.keepaliveds() == []
    assert c.keepalived(1) is None
    with pytest.raises(ClusterStateError) as info:
        c.haproxy(2)
    assert str(info.value) == "balancer 2 does not exist; cluster 'lab' has lb1 only"
    with pytest.raises(ClusterStateError) as info:
        cluster(tmp_path).haproxy(3)
    assert str(info.value) == "balancer 3 does not exist; cluster 'lab' has lb1-lb2"


def test_no_balancer_at_all(tmp_path: Path) -> None:
    c = cluster(tmp_path, {"balancer": {"kind": "none"}})
    assert (c.haproxies(), c.keepaliveds(), c.vip_holders(), c.vip_holder()) == ([], [], [], None)
    with pytest.raises(ClusterStateError) as info:
        c.balancer_kill(1)
    assert str(info.value) == "this cluster has no balancer"


# ---------------------------------------------------------------- cluster: state


def test_processes_recorded_per_balancer(tmp_path: Path) -> None:
    c = cluster(tmp_path)
    c.state = {"balancer": {"proc": {"pid": 1, "start_ticks": 1}}}  # as written before pairs
    h2 = c.haproxy(2)
    assert h2 is not None
    h2.proc = ProcessRef(20, 200)
    c._record_balancer(h2)
    ka1 = c.keepalived(1)
    assert ka1 is not None
    ka1.proc = ProcessRef(11, 110)
    c._record_keepalived(ka1)
    h1 = c.haproxy(1)
    assert h1 is not None and h1.proc == ProcessRef(1, 1)
    h1.proc = ProcessRef(10, 100)
    c._record_balancer(h1)
    assert "balancer" not in c.state
    assert c.state["balancers"] == {
        "lb1": {"proc": {"pid": 10, "start_ticks": 100}, "keepalived": {"pid": 11, "start_ticks": 110}},
        "lb2": {"proc": {"pid": 20, "start_ticks": 200}},
    }
    assert [h.proc for h in c.haproxies()] == [ProcessRef(10, 100), ProcessRef(20, 200)]
    assert [k.proc for k in c.keepaliveds()] == [ProcessRef(11, 110), None]
    assert (tmp_path / "clusters" / "lab" / "state.json").exists()


# ---------------------------------------------------------------- cluster: VIP queries and faults


def _holders(monkeypatch: pytest.MonkeyPatch, holding: dict[str, bool]) -> None:
    def holds(self: Keepalived) -> bool:
        return holding[self.cfg.role]

    monkeypatch.setattr(Keepalived, "holds_vip", holds)


def test_vip_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster(tmp_path)
    holding = {"lb1": False, "lb2": True}
    _holders(monkeypatch, holding)
    assert (c.vip_holders(), c.vip_holder()) == (["lb2"], "lb2")
    holding["lb1"] = True
    assert (c.vip_holders(), c.vip_holder()) == (["lb1", "lb2"], None)  # a split brain
    holding.update(lb1=False, lb2=False)
    assert (c.vip_holders(), c.vip_holder()) == ([], None)


def test_wait_vip_moves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster(tmp_path)
    clock = c.clock
    assert isinstance(clock, FakeClock)
    holding = {"lb1": True, "lb2": False}
    _holders(monkeypatch, holding)
    assert c.wait_vip(5) == "lb1"
    clock.at(clock.now() + 0.5, lambda: holding.update(lb1=False))
    clock.at(clock.now() + 1.2, lambda: holding.update(lb2=True))
    assert c.wait_vip(5, not_on="lb1") == "lb2"
    assert 1.2 <= clock.elapsed < 1.3


def test_wait_vip_times_out_with_what_it_saw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster(tmp_path)
    _holders(monkeypatch, {"lb1": True, "lb2": False})
    with pytest.raises(ComponentError) as info:
        c.wait_vip(3, not_on="lb1")
    d = tmp_path / "clusters" / "lab"
    assert str(info.value) == (
        "the VIP 198.18.0.3 is not on exactly one balancer other than lb1 after 3 s (lb1 holds it); "
        f"see {d}/lb1/keepalived.log, {d}/lb2/keepalived.log"
    )
    with pytest.raises(ClusterStateError) as info2:
        cluster(tmp_path, {}).wait_vip(1)
    assert str(info2.value) == "cluster 'lab' has no VIP"


def test_balancer_kill_and_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster(tmp_path)
    host = FakeHost()
    real = Cluster.haproxy

    def haproxy(self: Cluster, index: int = 1) -> HAProxy | None:
        h = real(self, index)
        assert h is not None
        h.host = host
        return h

    monkeypatch.setattr(Cluster, "haproxy", haproxy)
    monkeypatch.setattr(HAProxy, "start", lambda self: setattr(self, "proc", ProcessRef(99, 9)))
    monkeypatch.setattr(HAProxy, "wait_all_up", lambda self, names, timeout: None)
    monkeypatch.setattr(Keepalived, "alive", lambda self: True)
    waited: list[tuple[str, float]] = []

    def wait_ready(self: Keepalived, timeout: float) -> str:
        waited.append((self.cfg.role, timeout))
        return "BACKUP"

    monkeypatch.setattr(Keepalived, "wait_ready", wait_ready)
    _holders(monkeypatch, {"lb1": False, "lb2": True})
    host.live.add(50)
    c.state = {"balancers": {"lb2": {"proc": {"pid": 50, "start_ticks": 5}}}}
    assert c.balancer_kill(2) == "haproxy lb2 killed (it held the VIP)"
    assert host.signal_numbers() == [9]
    assert c.balancer_kill(2) == "haproxy lb2 not running (it held the VIP)"
    assert c.balancer_start(2).startswith("haproxy lb2 UP in ")
    assert c.state["balancers"]["lb2"]["proc"] == {"pid": 99, "start_ticks": 9}
    assert waited == [("lb2", 2 * 1 + 3 * 1.0 + 5)]  # rise x interval + a master-down interval
    host.live.add(99)
    assert c.balancer_start(2) == "haproxy lb2 already running"
    assert c.balancer_kill(1) == "haproxy lb1 not running"
