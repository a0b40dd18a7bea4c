"""Applying and healing faults on a live cluster, local or over ssh. Each action returns a detail
dict that is stored as the fault's event; every heal is idempotent so `heal_all()` can run at any
time. Actions that cannot work on the cluster's provider or kernel refuse when they are built,
before the trial starts."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from clusterbench.cluster import Cluster
from clusterbench.errors import PreflightError
from clusterbench.faults.spec import PlannedFault
from clusterbench.hosts.base import Machine
from clusterbench.hosts.ssh import on_hosts
from clusterbench.providers.cgroups import CFS_PERIOD_US
from clusterbench.providers.network import shape_plan, tbf_args

log = logging.getLogger(__name__)

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


def node_host(cluster: Cluster, i: int) -> Machine:
    return cluster.host(cluster.names.node_role(i))


def netem_args(params: dict[str, Any]) -> list[str]:
    """The netem qdisc of a delay-link or loss-link fault (pure)."""
    if "delay" in params:
        jitter = [str(params["jitter"])] if params.get("jitter") else []
        return ["netem", "delay", str(params["delay"]), *jitter]
    return ["netem", "loss", f"{float(params['loss']):g}%"]


# Exit 0 when the kernel can run netem: the module is loaded, loads, or (built in) a netem qdisc
# can be added to an idle loopback and removed again.
_HAS_NETEM = (
    "[ -d /sys/module/sch_netem ] && exit 0; "
    "command -v modprobe >/dev/null 2>&1 && modprobe -q sch_netem 2>/dev/null && exit 0; "
    "tc qdisc show dev lo | grep -q noqueue || exit 1; "
    "tc qdisc add dev lo root netem delay 0ms 2>/dev/null || exit 1; tc qdisc del dev lo root; exit 0"
)


def netem_missing(cluster: Cluster, nodes: tuple[int, ...]) -> list[str]:
    """Nodes whose host kernel has no netem, as 'n2 (host h2)'."""
    hosts = [(i, cluster.local if not cluster.remote else node_host(cluster, i)) for i in nodes]
    out = []
    for (i, host), res in on_hosts(hosts, lambda ih: ih[1].run(["sh", "-c", _HAS_NETEM], check=False)):
        if isinstance(res, Exception) or not res.ok:
            out.append(f"n{i} (host {host.name})" if cluster.remote else f"n{i} (this machine)")
    return out


def restore_link(cluster: Cluster, i: int) -> str:
    """Put node i's link back to the topology's shaping (tbf at its bandwidth, or none); returns
    what it is now. Used by the throttle-link/netem heals and by healing a killed run's leftovers."""
    names = cluster.names
    role = names.node_role(i)
    if cluster.remote:
        # No shaping in an ssh topology: removing our root qdisc gives the interface back its
        # default one.
        node_host(cluster, i).run(["tc", "qdisc", "del", "dev", cluster.interface(role), "root"], check=False)
        return "unlimited"
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
    """Locally: link down on the host side of the node's veth. Over ssh the link must stay up (it
    carries our session): iptables drops everything but loopback and SSH instead. Either way the
    node reaches nobody and nobody reaches it."""

    def _veth(self, i: int) -> str:
        return self.cluster.names.veth(self.cluster.names.node_role(i))

    def apply(self) -> dict[str, Any]:
        self.active = True
        for i in self.fault.nodes:
            if self.cluster.remote:
                port = self.cluster.topology.db_hosts()[i - 1].port
                for argv in isolate_rules(port):
                    node_host(self.cluster, i).run(argv)
            else:
                self.cluster.local.run(["ip", "link", "set", self._veth(i), "down"])
        return {"isolated": [f"n{i}" for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        for i in self.fault.nodes:
            if self.cluster.remote:
                for j, argv in unpartition_rules([i]):
                    node_host(self.cluster, j).run(argv, check=False)
            else:
                self.cluster.local.run(["ip", "link", "set", self._veth(i), "up"], check=False)
        return {"reconnected": [f"n{i}" for i in self.fault.nodes]}


class Partition(_Base):
    def apply(self) -> dict[str, Any]:
        self.active = True
        t = self.cluster.topology
        addr_of = {i: t.node_address(i) for i in t.node_indexes()}
        pairs = [(int(p[0]), int(p[1])) for p in self.fault.params["pairs"]]
        # On each node's own host: its namespace here, its machine over ssh.
        for i, argv in partition_rules(addr_of, pairs):
            node_host(self.cluster, i).run(argv)
        return {"cut": [f"n{a}|n{b}" for a, b in pairs]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        for i, argv in unpartition_rules(list(self.fault.nodes)):
            node_host(self.cluster, i).run(argv, check=False)
        return {"healed": [f"n{i}" for i in self.fault.nodes]}


class ThrottleLink(_Base):
    def apply(self) -> dict[str, Any]:
        self.active = True
        rate = str(self.fault.params["rate"])
        names = self.cluster.names
        for i in self.fault.nodes:
            role = names.node_role(i)
            if self.cluster.remote:
                # Egress of the node's interface only: ingress shaping would need an ifb device.
                dev = self.cluster.interface(role)
                argv = ["tc", "qdisc", "replace", "dev", dev, "root", *tbf_args(rate)]
                node_host(self.cluster, i).run(argv)
            else:
                for argv in shape_plan(names, role, rate):
                    self.cluster.local.run(argv)
        return {"rate": rate, "nodes": [f"n{i}" for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        restored = {f"n{i}": restore_link(self.cluster, i) for i in self.fault.nodes}
        return {"restored": restored}


class NetemLink(_Base):
    """Added delay or loss with netem, where the kernel has sch_netem (this lab machine's does not;
    many distribution kernels do). Locally on both ends of the node's veth, over ssh on the
    egress of the node's interface."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        missing = netem_missing(cluster, fault.nodes)
        if missing:
            raise PreflightError(
                f"{fault.kind} needs netem (sch_netem), which the kernel of {', '.join(missing)} does not "
                "have; use throttle-link (tbf) there, or a machine whose kernel has netem"
            )

    def apply(self) -> dict[str, Any]:
        self.active = True
        qdisc = netem_args(self.fault.params)
        names = self.cluster.names
        for i in self.fault.nodes:
            role = names.node_role(i)
            if self.cluster.remote:
                dev = self.cluster.interface(role)
                node_host(self.cluster, i).run(["tc", "qdisc", "replace", "dev", dev, "root", *qdisc])
            else:
                self.cluster.local.run(["tc", "qdisc", "replace", "dev", names.veth(role), "root", *qdisc])
                node_host(self.cluster, i).run(["tc", "qdisc", "replace", "dev", "eth0", "root", *qdisc])
        return {"netem": " ".join(qdisc[1:]), "nodes": [f"n{i}" for i in self.fault.nodes]}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        return {"restored": {f"n{i}": restore_link(self.cluster, i) for i in self.fault.nodes}}


class ThrottleCpu(_Base):
    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        if cluster.remote:
            raise PreflightError(
                "throttle-cpu is not available with the ssh provider (it would need cgroups set up on "
                "the remote machines); use pause-node, throttle-link, or limit the machines themselves"
            )

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
    "delay-link": NetemLink,
    "loss-link": NetemLink,
}


def make_action(cluster: Cluster, fault: PlannedFault) -> Action:
    return ACTIONS[fault.kind](cluster, fault)
