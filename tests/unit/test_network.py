"""providers/network.py and naming.py: the local network as argv lists, and names within Linux's limits."""

from __future__ import annotations

import pytest

from clusterbench.providers.naming import Names
from clusterbench.providers.network import HostPlan, down_plan, shape_plan, tbf_args, up_plan

IFNAMSIZ = 15  # Linux interface names: at most 15 characters


# ---------------------------------------------------------------- names


def test_names_golden() -> None:
    n = Names("lab")
    assert n.prefix == "cb-lab-"
    assert n.bridge == "cb-lab-br"
    assert n.node_role(3) == "n3"
    assert n.netns("n3") == "cb-lab-n3"
    assert n.veth("lb1") == "cb-lab-lb1"
    assert n.cgroup("n3") == "clusterbench/lab-n3"


def test_longest_names_fit_in_ifnamsiz() -> None:
    n = Names("abcdefgh")  # the longest cluster name the topology accepts
    names = [n.bridge, n.veth("lb1"), n.veth(n.node_role(9)), n.netns("lb1"), n.netns("n9")]
    assert names == [
        "cb-abcdefgh-br",
        "cb-abcdefgh-lb1",
        "cb-abcdefgh-n9",
        "cb-abcdefgh-lb1",
        "cb-abcdefgh-n9",
    ]
    assert max(len(x) for x in names) == IFNAMSIZ


def test_prefixes_of_two_clusters_do_not_overlap() -> None:
    # `down -n lab` must not find `lab2`'s links by prefix.
    assert not Names("lab2").bridge.startswith(Names("lab").prefix)
    assert not Names("lab").bridge.startswith(Names("lab2").prefix)


# ---------------------------------------------------------------- tbf


@pytest.mark.parametrize(
    ("rate", "burst"),
    [
        ("512kbit", "32kbit"),
        ("9600bit", "32kbit"),
        ("10mbit", "32kbit"),
        ("100mbit", "32kbit"),
        ("100.5mbit", "256kbit"),
        ("101mbit", "256kbit"),
        ("1gbit", "256kbit"),
        ("2.5gbit", "256kbit"),
    ],
)
def test_tbf_burst_choice(rate: str, burst: str) -> None:
    assert tbf_args(rate) == ["tbf", "rate", rate, "burst", burst, "latency", "400ms"]


def test_shape_plan_both_directions() -> None:
    assert shape_plan(Names("lab"), "n2", "10mbit") == [
        ["tc", "qdisc", "replace", "dev", "cb-lab-n2", "root",
         "tbf", "rate", "10mbit", "burst", "32kbit", "latency", "400ms"],
        [
            "ip", "netns", "exec", "cb-lab-n2",
            "tc", "qdisc", "replace", "dev", "eth0", "root",
            "tbf", "rate", "10mbit", "burst", "32kbit", "latency", "400ms",
        ],
    ]  # fmt: skip


# ---------------------------------------------------------------- up / down


def _host_cmds(role: str, address: str) -> list[list[str]]:
    ns, veth = f"cb-lab-{role}", f"cb-lab-{role}"
    return [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns],
        ["ip", "link", "set", veth, "master", "cb-lab-br"],
        ["ip", "link", "set", veth, "up"],
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        ["ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "eth0"],
        ["ip", "-n", ns, "link", "set", "eth0", "up"],
    ]


def test_up_plan_golden() -> None:
    hosts = [HostPlan("n1", "198.18.0.11"), HostPlan("n2", "198.18.0.12"), HostPlan("lb1", "198.18.0.2")]
    assert up_plan(Names("lab"), "198.18.0.1/24", hosts, 24) == [
        ["ip", "link", "add", "cb-lab-br", "type", "bridge"],
        ["ip", "addr", "add", "198.18.0.1/24", "dev", "cb-lab-br"],
        ["ip", "link", "set", "cb-lab-br", "up"],
        *_host_cmds("n1", "198.18.0.11"),
        *_host_cmds("n2", "198.18.0.12"),
        *_host_cmds("lb1", "198.18.0.2"),
    ]


def test_up_plan_has_no_default_route() -> None:
    cmds = up_plan(Names("lab"), "198.18.0.1/24", [HostPlan("n1", "198.18.0.11")], 24)
    assert not any("route" in c for c in cmds)


def test_up_plan_shapes_only_hosts_with_bandwidth() -> None:
    hosts = [HostPlan("n1", "198.18.0.11", "1gbit"), HostPlan("n2", "198.18.0.12")]
    cmds = up_plan(Names("lab"), "198.18.0.1/24", hosts, 24)
    tc = [c for c in cmds if "tc" in c]
    assert tc == shape_plan(Names("lab"), "n1", "1gbit")
    # shaping of n1 comes right after n1's link is up, before n2 is created
    i = cmds.index(["ip", "-n", "cb-lab-n1", "link", "set", "eth0", "up"])
    assert cmds[i + 1 : i + 3] == tc
    assert cmds[i + 3] == ["ip", "netns", "add", "cb-lab-n2"]
    assert len(cmds) == 3 + 7 + 2 + 7


def test_up_plan_prefixlen_used_for_hosts() -> None:
    cmds = up_plan(Names("lab"), "10.20.0.1/16", [HostPlan("n1", "10.20.0.11")], 16)
    assert ["ip", "addr", "add", "10.20.0.1/16", "dev", "cb-lab-br"] in cmds
    assert ["ip", "-n", "cb-lab-n1", "addr", "add", "10.20.0.11/16", "dev", "eth0"] in cmds


def test_down_plan_golden_order() -> None:
    n = Names("lab")
    netns = ["cb-lab-n2", "cb-lab-lb1", "cb-lab-n1"]
    links = ["cb-lab-n2", "cb-lab-br", "cb-lab-n1", "cb-lab-lb1"]
    assert down_plan(n, netns, links) == [
        ["ip", "link", "del", "cb-lab-lb1"],
        ["ip", "link", "del", "cb-lab-n1"],
        ["ip", "link", "del", "cb-lab-n2"],
        ["ip", "netns", "del", "cb-lab-lb1"],
        ["ip", "netns", "del", "cb-lab-n1"],
        ["ip", "netns", "del", "cb-lab-n2"],
        ["ip", "link", "del", "cb-lab-br"],
    ]


def test_down_plan_nothing_left() -> None:
    assert down_plan(Names("lab"), [], []) == []


def test_down_plan_only_namespaces() -> None:
    assert down_plan(Names("lab"), ["cb-lab-n1"], []) == [["ip", "netns", "del", "cb-lab-n1"]]


def test_down_plan_only_bridge() -> None:
    assert down_plan(Names("lab"), [], ["cb-lab-br"]) == [["ip", "link", "del", "cb-lab-br"]]
