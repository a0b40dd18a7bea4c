"""spec/web.py and the topology's [web] section: defaults, the address plan, and one line per bad
value naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from clusterbench.errors import InputError
from clusterbench.spec.resources import Resources, cpu_list
from clusterbench.spec.topology import Topology, topology_from_data


def topo(data: dict[str, Any]) -> Topology:
    return topology_from_data(data, "t.toml")


def error(data: dict[str, Any]) -> str:
    with pytest.raises(InputError) as err:
        topo(data)
    return str(err.value)


def test_no_web_tier_by_default() -> None:
    t = topo({})
    assert t.web.nodes == 0
    assert t.web.indexes() == [] and t.web.front_indexes() == []
    assert t.web_urls() == []
    assert t.front_vip_address() is None


def test_address_plan_clears_every_other_role() -> None:
    t = topo({"cluster": {"nodes": 9}, "balancer": {"count": 2}, "clients": {"hosts": 16},
              "web": {"nodes": 9, "front": {"count": 2}}})  # fmt: skip
    assert [t.web_address(i) for i in (1, 9)] == ["198.18.0.21", "198.18.0.29"]
    assert [t.front_address(k) for k in (1, 2)] == ["198.18.0.5", "198.18.0.7"]
    assert t.front_vip_address() == "198.18.0.6"
    addrs = t.addresses()
    # 1 bridge + 2 lb + 9 nodes + 16 clients + 9 web + 2 fe + 2 VIPs, none shared
    assert len(addrs) == 41
    assert t.web_urls() == ["http://198.18.0.6:80"]
    assert t.web_database_address() == ("198.18.0.3", 3306)


def test_single_front_and_no_front() -> None:
    t = topo({"web": {"nodes": 2, "front": {"port": 8080}}})
    assert t.web.front_indexes() == [1]
    assert t.web_urls() == ["http://198.18.0.5:8080"]
    assert t.web_database_address() == ("198.18.0.2", 3306)
    t = topo({"web": {"nodes": 2, "port": 8000, "front": {"kind": "none"}}})
    assert t.web.front_indexes() == []
    assert t.web_urls() == ["http://198.18.0.21:8000", "http://198.18.0.22:8000"]


def test_front_vip_as_an_address() -> None:
    t = topo({"web": {"nodes": 1, "front": {"count": 2, "vip": "198.18.0.50"}}})
    assert t.front_vip_address() == "198.18.0.50"


def test_web_node_resources_override_the_sections() -> None:
    t = topo({"web": {"nodes": 3, "resources": {"cpu_quota": 0.5, "bandwidth": "100mbit"},
                      "node": [{"index": 2, "cpu_quota": 1.0}, {"index": 3, "cpuset": "0-1"}]}})  # fmt: skip
    assert t.web.node_resources(1) == Resources(cpu_quota=0.5, bandwidth="100mbit")
    assert t.web.node_resources(2) == Resources(cpu_quota=1.0, bandwidth="100mbit")
    assert t.web.node_resources(3).cpus() == 0.5  # the quota binds before the set
    assert Resources(cpuset="0-1,3").cpus() == 3.0
    assert Resources().cpus() is None
    assert cpu_list("0-2,5") == [0, 1, 2, 5]
    assert t.node_resources(1) == Resources()  # [resources] of the db nodes is not the web's


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"web": {"nodes": 10}}, "t.toml: web.nodes: Input should be less than or equal to 9 (got 10)"),
        ({"web": {"nodes": -1}}, "t.toml: web.nodes: Input should be greater than or equal to 0 (got -1)"),
        ({"web": {"nodes": 2, "node": [{"index": 3}]}},
         "t.toml: (top level): web.node.index 3 is larger than web.nodes (2)"),
        ({"web": {"nodes": 2, "node": [{"index": 1}, {"index": 1}]}},
         "t.toml: (top level): web.node.index 1 is given twice"),
        ({"web": {"nodes": 1, "front": {"vip": True}}},
         "t.toml: (top level): web.front.vip needs web.front.count = 2 (keepalived moves the VIP between two "
         "HAProxies)"),
        ({"web": {"nodes": 1, "front": {"count": 2, "vip": False}}},
         "t.toml: (top level): web.front.count = 2 needs a VIP; remove vip = false or set vip = true"),
        ({"web": {"nodes": 1, "front": {"kind": "none", "count": 2}}},
         "t.toml: (top level): web.front.count and web.front.vip need web.front.kind = 'haproxy'"),
        ({"web": {"nodes": 2, "front": {"count": 2, "vip": "198.18.0.22"}}},
         "t.toml: (top level): web.front.vip 198.18.0.22 is already the address of web node 2"),
        ({"web": {"nodes": 1, "front": {"count": 2, "vip": "10.0.0.1"}}},
         "t.toml: (top level): web.front.vip 10.0.0.1 is not a host address in cluster.subnet 198.18.0.0/24"),
        ({"balancer": {"count": 2}, "web": {"nodes": 1, "front": {"count": 2, "vip": "198.18.0.3"}}},
         "t.toml: (top level): web.front.vip 198.18.0.3 is already the address of the balancer VIP"),
        ({"balancer": {"count": 2, "vip": "198.18.0.6"}, "web": {"nodes": 1, "front": {"count": 2}}},
         "t.toml: (top level): balancer.vip 198.18.0.6 is already the address of the web front VIP"),
        ({"balancer": {"count": 2, "vip": "198.18.0.25"}, "web": {"nodes": 5}},
         "t.toml: (top level): balancer.vip 198.18.0.25 is already the address of web node 5"),
        ({"balancer": {"kind": "none"}, "web": {"nodes": 2}},
         "t.toml: (top level): web.nodes: the web nodes reach the database through the balancer; set "
         "balancer.kind = 'haproxy' (or web.nodes = 0)"),
        ({"web": {"nodes": 1, "fpm": {"pm": "always"}}},
         "t.toml: web.fpm.pm: Input should be 'static', 'dynamic' or 'ondemand' (got 'always')"),
        ({"web": {"nodes": 1, "fpm": {"max_children": 0}}},
         "t.toml: web.fpm.max_children: Input should be greater than or equal to 1 (got 0)"),
        ({"web": {"nodes": 1, "app": {"db_connect_timeout": 0}}},
         "t.toml: web.app.db_connect_timeout: Input should be greater than or equal to 1 (got 0)"),
        ({"web": {"nodes": 1, "resources": {"bandwidth": "fast"}}},
         "t.toml: web.resources.bandwidth: 'fast' is not a rate like '100mbit', '512kbit' or '1gbit' "
         "(got 'fast')"),
        ({"web": {"nodes": 1, "node": [{"index": 1, "cpuset": "a"}]}},
         "t.toml: web.node[0].cpuset: 'a' is not a CPU list like '0' or '0-1' or '0,1' (got 'a')"),
        ({"web": {"nodes": 1, "pool": 3}},
         "t.toml: unknown key 'web.pool' (known keys: app, fpm, front, nginx_workers, node, nodes, port, "
         "resources)"),
    ],
)
def test_bad_values_are_one_line_naming_the_field(data: dict[str, Any], message: str) -> None:
    assert error(data) == message


def test_web_tier_refused_over_ssh() -> None:
    data = {
        "provider": {"kind": "ssh"},
        "hosts": [{"name": "a", "address": "10.0.0.11", "roles": ["db", "balancer"]}],
        "web": {"nodes": 1},
    }
    assert error(data) == (
        "t.toml: (top level): web.nodes: the web tier runs in the local provider's namespaces; "
        "set web.nodes = 0 with provider.kind = 'ssh'"
    )
