"""The local network as data: commands to build and remove a bridge, namespaces and veths.

Every namespace gets lo, one veth on the cluster's bridge and an address from the subnet, and no
default route, so nothing can leave the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterbench.providers.naming import Names


@dataclass(frozen=True)
class HostPlan:
    role: str
    address: str
    bandwidth: str | None = None


def tbf_args(rate: str) -> list[str]:
    # burst must hold at least one MTU-sized packet per timer tick; 32kbit is fine up to ~100mbit,
    # larger rates need a larger bucket or tbf caps below the asked rate.
    burst = "32kbit"
    if rate.endswith("gbit") or (rate.endswith("mbit") and float(rate[:-4]) > 100):
        burst = "256kbit"
    return ["tbf", "rate", rate, "burst", burst, "latency", "400ms"]


def up_plan(names: Names, bridge_cidr: str, hosts: list[HostPlan], prefixlen: int) -> list[list[str]]:
    cmds: list[list[str]] = [
        ["ip", "link", "add", names.bridge, "type", "bridge"],
        ["ip", "addr", "add", bridge_cidr, "dev", names.bridge],
        ["ip", "link", "set", names.bridge, "up"],
    ]
    for h in hosts:
        ns = names.netns(h.role)
        veth = names.veth(h.role)
        cmds += [
            ["ip", "netns", "add", ns],
            ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns],
            ["ip", "link", "set", veth, "master", names.bridge],
            ["ip", "link", "set", veth, "up"],
            ["ip", "-n", ns, "link", "set", "lo", "up"],
            ["ip", "-n", ns, "addr", "add", f"{h.address}/{prefixlen}", "dev", "eth0"],
            ["ip", "-n", ns, "link", "set", "eth0", "up"],
        ]
        if h.bandwidth:
            cmds += shape_plan(names, h.role, h.bandwidth)
    return cmds


def shape_plan(names: Names, role: str, rate: str) -> list[list[str]]:
    """Both directions of one host's link: the host-side veth shapes traffic towards the
    namespace, eth0 inside it shapes traffic leaving it."""
    return [
        ["tc", "qdisc", "replace", "dev", names.veth(role), "root", *tbf_args(rate)],
        [
            "ip",
            "netns",
            "exec",
            names.netns(role),
            "tc",
            "qdisc",
            "replace",
            "dev",
            "eth0",
            "root",
            *tbf_args(rate),
        ],
    ]


def down_plan(names: Names, netns: list[str], links: list[str]) -> list[list[str]]:
    """Remove what exists (as listed by the caller). Deleting a veth removes its peer too."""
    cmds: list[list[str]] = []
    for link in sorted(links):
        if link != names.bridge:
            cmds.append(["ip", "link", "del", link])
    for ns in sorted(netns):
        cmds.append(["ip", "netns", "del", ns])
    if names.bridge in links:
        cmds.append(["ip", "link", "del", names.bridge])
    return cmds
