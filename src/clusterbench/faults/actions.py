"""Applying and healing faults on a live local cluster. Each action returns a detail dict that is
stored as the fault's event; every heal is idempotent so `heal_all()` can run at any time."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from clusterbench.cluster import Cluster
from clusterbench.faults.spec import PlannedFault
from clusterbench.providers.cgroups import CFS_PERIOD_US
from clusterbench.providers.network import shape_plan

log = logging.getLogger(__name__)

# A chain of our own in each namespace, so healing a partition removes exactly our rules.
CHAIN = "CBPART"


def partition_plan(
    ns_of: dict[int, str], addr_of: dict[int, str], pairs: list[tuple[int, int]]
) -> list[list[str]]:
    """iptables commands that cut each pair both ways, inside each node's namespace (pure)."""
    cmds: list[list[str]] = []
    involved = sorted({i for p in pairs for i in p})
    for i in involved:
        ns = ns_of[i]
        cmds += [
            ["ip", "netns", "exec", ns, "iptables", "-w", "-N", CHAIN],
            ["ip", "netns", "exec", ns, "iptables", "-w", "-I", "INPUT", "-j", CHAIN],
            ["ip", "netns", "exec", ns, "iptables", "-w", "-I", "OUTPUT", "-j", CHAIN],
        ]
    for a, b in pairs:
        for me, peer in ((a, b), (b, a)):
            ns = ns_of[me]
            cmds += [
                ["ip", "netns", "exec", ns, "iptables", "-w", "-A", CHAIN, "-s", addr_of[peer], "-j", "DROP"],
                ["ip", "netns", "exec", ns, "iptables", "-w", "-A", CHAIN, "-d", addr_of[peer], "-j", "DROP"],
            ]
    return cmds


def unpartition_plan(ns_of: dict[int, str], nodes: list[int]) -> list[list[str]]:
    cmds: list[list[str]] = []
    for i in sorted(nodes):
        ns = ns_of[i]
        cmds += [
            ["ip", "netns", "exec", ns, "iptables", "-w", "-D", "INPUT", "-j", CHAIN],
            ["ip", "netns", "exec", ns, "iptables", "-w", "-D", "OUTPUT", "-j", CHAIN],
            ["ip", "netns", "exec", ns, "iptables", "-w", "-F", CHAIN],
            ["ip", "netns", "exec", ns, "iptables", "-w", "-X", CHAIN],
        ]
    return cmds


def restore_link(cluster: Cluster, i: int) -> str:
    """Put node i's link back to the topology's shaping (tbf at its bandwidth, or none); returns
    what it is now. Used by the throttle-link heal and by healing a killed run's leftovers."""
    names = cluster.names
    role = names.node_role(i)
    configured = cluster.topology.node_resources(i).bandwidth
    if configured:
        # `tc qdisc replace` swaps whatever root qdisc is there for the configured one.
        for argv in shape_plan(names, role, configured):
            cluster.local.run(argv)
        return configured
    cluster.local.run(["tc", "qdisc", "del", "dev", names.veth(role), "root"], check=False)
    cluster.local.run(
        ["ip", "netns", "exec", names.netns(role), "tc", "qdisc", "del", "dev", "eth0", "root"], check=False
    )
    return "unlimited"


def wanted_quota_us(cluster: Cluster, i: int) -> int:
    """The topology's cfs quota for node i in microseconds per period; -1 is unlimited."""
    want = cluster.topology.node_resources(i).cpu_quota
    return int(want * CFS_PERIOD_US) if want else -1


def quota_file(cluster: Cluster, i: int) -> Path:
    return (
        cluster.cgroups.root / "cpu" / cluster.names.cgroup(cluster.names.node_role(i)) / "cpu.cfs_quota_us"
    )


def restore_cpu_quota(cluster: Cluster, i: int) -> None:
    path = quota_file(cluster, i)
    if path.exists():
        path.write_text(str(wanted_quota_us(cluster, i)))


class Action(Protocol):
    active: bool

    def apply(self) -> dict[str, Any]: ...

    def heal(self) -> dict[str, Any]: ...


class _Base:
    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        self.cluster = cluster
        self.fault = fault
        self.active = False


class KillNodes(_Base):
    def apply(self) -> dict[str, Any]:
        self.active = True
        return {"killed": [self.cluster.node_kill(i) for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        return {"restarted": self.cluster.restart_nodes(self.fault.nodes)}


class StopNodes(_Base):
    def apply(self) -> dict[str, Any]:
        self.active = True
        return {"stopped": [self.cluster.node_stop(i) for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        return {"restarted": self.cluster.restart_nodes(self.fault.nodes)}


class PauseNodes(_Base):
    def apply(self) -> dict[str, Any]:
        self.active = True
        for i in self.fault.nodes:
            self.cluster.node(i).pause()
        return {"paused": [f"n{i}" for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        for i in self.fault.nodes:
            self.cluster.node(i).resume()
        return {"resumed": [f"n{i}" for i in self.fault.nodes]}


class IsolateNodes(_Base):
    """Link down on the host side of the node's veth: the node reaches nobody, nobody reaches it."""

    def _veth(self, i: int) -> str:
        return self.cluster.names.veth(self.cluster.names.node_role(i))

    def apply(self) -> dict[str, Any]:
        self.active = True
        for i in self.fault.nodes:
            self.cluster.local.run(["ip", "link", "set", self._veth(i), "down"])
        return {"isolated": [f"n{i}" for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        for i in self.fault.nodes:
            self.cluster.local.run(["ip", "link", "set", self._veth(i), "up"], check=False)
        return {"reconnected": [f"n{i}" for i in self.fault.nodes]}


class Partition(_Base):
    def _maps(self) -> tuple[dict[int, str], dict[int, str]]:
        t = self.cluster.topology
        names = self.cluster.names
        ns_of = {i: names.netns(names.node_role(i)) for i in t.node_indexes()}
        addr_of = {i: t.node_address(i) for i in t.node_indexes()}
        return ns_of, addr_of

    def apply(self) -> dict[str, Any]:
        self.active = True
        ns_of, addr_of = self._maps()
        pairs = [(int(p[0]), int(p[1])) for p in self.fault.params["pairs"]]
        for argv in partition_plan(ns_of, addr_of, pairs):
            self.cluster.local.run(argv)
        return {"cut": [f"n{a}|n{b}" for a, b in pairs]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        ns_of, _ = self._maps()
        for argv in unpartition_plan(ns_of, list(self.fault.nodes)):
            self.cluster.local.run(argv, check=False)
        return {"healed": [f"n{i}" for i in self.fault.nodes]}


class ThrottleLink(_Base):
    def apply(self) -> dict[str, Any]:
        self.active = True
        rate = str(self.fault.params["rate"])
        names = self.cluster.names
        for i in self.fault.nodes:
            for argv in shape_plan(names, names.node_role(i), rate):
                self.cluster.local.run(argv)
        return {"rate": rate, "nodes": [f"n{i}" for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        restored = {f"n{i}": restore_link(self.cluster, i) for i in self.fault.nodes}
        return {"restored": restored}


class ThrottleCpu(_Base):
    def _group(self, i: int) -> str:
        return self.cluster.names.cgroup(self.cluster.names.node_role(i))

    def apply(self) -> dict[str, Any]:
        self.active = True
        quota = float(self.fault.params["cpu_quota"])
        for i in self.fault.nodes:
            n = self.cluster.node(i)
            self.cluster.cgroups.create(self._group(i), quota, None)
            if n.proc is not None:
                self.cluster.cgroups.attach(self._group(i), n.proc.pid)
        return {"cpu_quota": quota, "nodes": [f"n{i}" for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        for i in self.fault.nodes:
            restore_cpu_quota(self.cluster, i)
        return {
            "restored": {
                f"n{i}": self.cluster.topology.node_resources(i).cpu_quota or "unlimited"
                for i in self.fault.nodes
            }
        }


class DesyncNodes(_Base):
    """wsrep_desync=ON: the node stops taking part in flow control (as a donor or backup would)."""

    def apply(self) -> dict[str, Any]:
        self.active = True
        for i in self.fault.nodes:
            self.cluster.node(i).query("SET GLOBAL wsrep_desync=ON")
        return {"desynced": [f"n{i}" for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        for i in self.fault.nodes:
            n = self.cluster.node(i)
            if n.alive():
                n.query("SET GLOBAL wsrep_desync=OFF")
        return {"resynced": [f"n{i}" for i in self.fault.nodes]}


class RollingRestart(_Base):
    """Restart every node in turn, each only after the previous one is Synced again (F19)."""

    def apply(self) -> dict[str, Any]:
        self.active = True
        steps = []
        for i in self.fault.nodes:
            steps.append(self.cluster.node_restart(i))
        self.active = False
        return {"restarts": steps}

    def heal(self) -> dict[str, Any]:
        # A rolling restart that was interrupted may have left a node stopped: start it.
        if not self.active:
            return {}
        self.active = False
        return {
            "restarted": [self.cluster.node_start(n.index) for n in self.cluster.nodes() if not n.alive()]
        }


class KillBalancer(_Base):
    """kill -9 HAProxy on one balancer host. With a keepalived pair, `balancer` means the one that
    holds the VIP when the fault starts (the drill people run), `lb:N` a given one."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        self.index = fault.balancer or 1

    def apply(self) -> dict[str, Any]:
        self.active = True
        if self.fault.params.get("target") != "lb" and len(self.cluster.haproxies()) > 1:
            holder = self.cluster.vip_holder()
            if holder is not None and holder.startswith("lb"):
                self.index = int(holder[2:])
        return {"killed": self.cluster.balancer_kill(self.index)}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        t0 = time.monotonic()
        msg = self.cluster.balancer_start(self.index)
        return {"restarted": f"{msg} ({time.monotonic() - t0:.1f} s)"}


ACTIONS: dict[str, Callable[[Cluster, PlannedFault], Action]] = {
    "kill-node": KillNodes,
    "stop-node": StopNodes,
    "pause-node": PauseNodes,
    "isolate-node": IsolateNodes,
    "partition": Partition,
    "throttle-link": ThrottleLink,
    "throttle-cpu": ThrottleCpu,
    "desync-node": DesyncNodes,
    "rolling-restart": RollingRestart,
    "kill-balancer": KillBalancer,
}


def make_action(cluster: Cluster, fault: PlannedFault) -> Action:
    return ACTIONS[fault.kind](cluster, fault)
