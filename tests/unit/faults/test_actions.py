from __future__ import annotations

from clusterbench.faults.actions import partition_plan, unpartition_plan

NS = {1: "cb-t-n1", 2: "cb-t-n2", 3: "cb-t-n3"}
ADDR = {1: "198.18.0.11", 2: "198.18.0.12", 3: "198.18.0.13"}


def test_partition_plan_cuts_each_pair_both_ways_in_a_chain_of_our_own() -> None:
    cmds = partition_plan(NS, ADDR, [(1, 2)])
    x = ["ip", "netns", "exec"]
    assert cmds == [
        [*x, "cb-t-n1", "iptables", "-w", "-N", "CBPART"],
        [*x, "cb-t-n1", "iptables", "-w", "-I", "INPUT", "-j", "CBPART"],
        [*x, "cb-t-n1", "iptables", "-w", "-I", "OUTPUT", "-j", "CBPART"],
        [*x, "cb-t-n2", "iptables", "-w", "-N", "CBPART"],
        [*x, "cb-t-n2", "iptables", "-w", "-I", "INPUT", "-j", "CBPART"],
        [*x, "cb-t-n2", "iptables", "-w", "-I", "OUTPUT", "-j", "CBPART"],
        [*x, "cb-t-n1", "iptables", "-w", "-A", "CBPART", "-s", "198.18.0.12", "-j", "DROP"],
        [*x, "cb-t-n1", "iptables", "-w", "-A", "CBPART", "-d", "198.18.0.12", "-j", "DROP"],
        [*x, "cb-t-n2", "iptables", "-w", "-A", "CBPART", "-s", "198.18.0.11", "-j", "DROP"],
        [*x, "cb-t-n2", "iptables", "-w", "-A", "CBPART", "-d", "198.18.0.11", "-j", "DROP"],
    ]
    # Node 3 is untouched: it still reaches both sides (a partial partition).
    assert not any("cb-t-n3" in c for c in cmds)


def test_unpartition_removes_exactly_our_chain() -> None:
    x = ["ip", "netns", "exec", "cb-t-n3", "iptables", "-w"]
    assert unpartition_plan(NS, [3]) == [
        [*x, "-D", "INPUT", "-j", "CBPART"],
        [*x, "-D", "OUTPUT", "-j", "CBPART"],
        [*x, "-F", "CBPART"],
        [*x, "-X", "CBPART"],
    ]


def test_partition_rules_run_on_each_nodes_own_host() -> None:
    from clusterbench.faults.actions import partition_rules, unpartition_rules

    rules = partition_rules(ADDR, [(1, 3)])
    assert [i for i, _ in rules] == [1, 1, 1, 3, 3, 3, 1, 1, 3, 3]
    assert rules[6] == (1, ["iptables", "-w", "-A", "CBPART", "-s", "198.18.0.13", "-j", "DROP"])
    assert unpartition_rules([2])[-1] == (2, ["iptables", "-w", "-X", "CBPART"])


def test_isolation_over_ssh_keeps_loopback_and_the_ssh_session() -> None:
    from clusterbench.faults.actions import isolate_rules

    rules = isolate_rules(2222)
    assert rules[3:] == [
        ["iptables", "-w", "-A", "CBPART", "-s", "127.0.0.0/8", "-j", "RETURN"],
        ["iptables", "-w", "-A", "CBPART", "-p", "tcp", "--dport", "2222", "-j", "RETURN"],
        ["iptables", "-w", "-A", "CBPART", "-p", "tcp", "--sport", "2222", "-j", "RETURN"],
        ["iptables", "-w", "-A", "CBPART", "-j", "DROP"],
    ]
