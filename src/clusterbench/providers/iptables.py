"""iptables rules that cut hosts off from each other (pure): partitions between nodes, a host
isolated from everybody but our SSH session. Each host gets a chain of its own, so healing
removes exactly our rules."""

from __future__ import annotations

# A chain of our own in each namespace, so healing a partition removes exactly our rules.
CHAIN = "CBPART"


def _chain(ipt: list[str]) -> list[list[str]]:
    return [
        [*ipt, "-N", CHAIN],
        [*ipt, "-I", "INPUT", "-j", CHAIN],
        [*ipt, "-I", "OUTPUT", "-j", CHAIN],
    ]


def partition_rules(addr_of: dict[int, str], pairs: list[tuple[int, int]]) -> list[tuple[int, list[str]]]:
    """(node, iptables argv) that cut each pair both ways, run on each node's host (pure)."""
    ipt = ["iptables", "-w"]
    cmds: list[tuple[int, list[str]]] = []
    for i in sorted({i for p in pairs for i in p}):
        cmds += [(i, argv) for argv in _chain(ipt)]
    for a, b in pairs:
        for me, peer in ((a, b), (b, a)):
            cmds += [
                (me, [*ipt, "-A", CHAIN, "-s", addr_of[peer], "-j", "DROP"]),
                (me, [*ipt, "-A", CHAIN, "-d", addr_of[peer], "-j", "DROP"]),
            ]
    return cmds


def partition_plan(
    ns_of: dict[int, str], addr_of: dict[int, str], pairs: list[tuple[int, int]]
) -> list[list[str]]:
    """partition_rules as run inside each node's local namespace (pure)."""
    return [["ip", "netns", "exec", ns_of[i], *argv] for i, argv in partition_rules(addr_of, pairs)]


def unpartition_rules(nodes: list[int]) -> list[tuple[int, list[str]]]:
    ipt = ["iptables", "-w"]
    cmds: list[tuple[int, list[str]]] = []
    for i in sorted(nodes):
        cmds += [
            (i, [*ipt, "-D", "INPUT", "-j", CHAIN]),
            (i, [*ipt, "-D", "OUTPUT", "-j", CHAIN]),
            (i, [*ipt, "-F", CHAIN]),
            (i, [*ipt, "-X", CHAIN]),
        ]
    return cmds


def unpartition_plan(ns_of: dict[int, str], nodes: list[int]) -> list[list[str]]:
    return [["ip", "netns", "exec", ns_of[i], *argv] for i, argv in unpartition_rules(nodes)]


def isolate_rules(ssh_port: int) -> list[list[str]]:
    """A remote node cut off from everybody, except loopback and our SSH session to it (we could
    not heal it otherwise): the link itself must stay up over ssh (pure)."""
    ipt = ["iptables", "-w"]
    return [
        *_chain(ipt),
        [*ipt, "-A", CHAIN, "-s", "127.0.0.0/8", "-j", "RETURN"],
        [*ipt, "-A", CHAIN, "-p", "tcp", "--dport", str(ssh_port), "-j", "RETURN"],
        [*ipt, "-A", CHAIN, "-p", "tcp", "--sport", str(ssh_port), "-j", "RETURN"],
        [*ipt, "-A", CHAIN, "-j", "DROP"],
    ]
