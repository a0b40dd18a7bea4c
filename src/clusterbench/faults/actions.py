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

import pymysql

from clusterbench.cluster import Cluster
from clusterbench.engines.base import DbNode, Desyncable
from clusterbench.errors import ComponentError, PreflightError
from clusterbench.faults import delayline, delayline_plan
from clusterbench.faults.base import FaultAction
from clusterbench.faults.spec import PlannedFault
from clusterbench.faults.web import vip_move
from clusterbench.hosts.base import Machine
from clusterbench.providers import datadirfs
from clusterbench.providers.iptables import (  # noqa: F401 - re-exported for callers and tests
    CHAIN,
    isolate_rules,
    partition_plan,
    partition_rules,
    unpartition_plan,
    unpartition_rules,
)
from clusterbench.spec.topology import size_bytes

log = logging.getLogger(__name__)


def node_host(cluster: Cluster, i: int) -> Machine:
    return cluster.host(cluster.names.node_role(i))


def restore_link(cluster: Cluster, i: int) -> str:
    """Put node i's link back to the topology's shaping (tbf at its bandwidth, or none); returns
    what it is now. Used by the throttle-link/netem heals and by healing a killed run's leftovers."""
    return cluster.provider.restore_link(cluster.names.node_role(i))


def recovered(cluster: Cluster, nodes: tuple[int, ...]) -> dict[str, Any]:
    """The engine's end of a heal that left the nodes running (network, pause, throttle): those
    that do not come back as ready members by themselves are brought back (a Group Replication
    member expelled meanwhile rejoins; Galera's rejoin by themselves). {} when nothing was done."""
    out = cluster.recover([i for i in nodes if cluster.node(i).alive()])
    return {"recovered": out} if out else {}


class Action(Protocol):
    active: bool

    def apply(self) -> dict[str, Any]: ...

    def heal(self) -> dict[str, Any]: ...


class _RestartedOnHeal(FaultAction):
    """A fault that takes nodes down; the heal starts them again."""

    def _heal(self) -> dict[str, Any]:
        return {"restarted": self.cluster.restart_nodes(self.fault.nodes)}


class KillNodes(_RestartedOnHeal):
    def _apply(self) -> dict[str, Any]:
        return {"killed": [self.cluster.node_kill(i) for i in self.fault.nodes]}


class CoordinatedCrash(FaultAction):
    """kill -9 of every target within a window (planned offsets from the scenario's seed), so the
    nodes crash together the way a power cut or a bad deploy takes them down; the heal is the
    engine's recovery of a complete outage (a cold start from the most advanced node) or, when
    some nodes survive, their rejoin. With innodb_flush_log_at_trx_commit=0 this is how
    acknowledged commits get lost (RELIABILITY N1)."""

    def __init__(
        self, cluster: Cluster, fault: PlannedFault, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        super().__init__(cluster, fault)
        self.sleep = sleep

    def _apply(self) -> dict[str, Any]:
        order = [int(i) for i in self.fault.params.get("order") or self.fault.nodes]
        offsets = [float(x) for x in self.fault.params.get("offsets") or [0.0] * len(order)]
        t0 = time.monotonic()
        killed = []
        at = []
        for i, off in zip(order, offsets, strict=False):
            wait = off - (time.monotonic() - t0)
            if wait > 0:
                self.sleep(wait)
            at.append(round(time.monotonic() - t0, 3))
            killed.append(self.cluster.node_kill(i))
        return {"killed": killed, "at_s": at, "window_s": self.fault.params.get("window", 0.0)}

    def _heal(self) -> dict[str, Any]:
        t0 = time.monotonic()
        out = self.cluster.restart_nodes(self.fault.nodes)
        return {"restarted": out, "recovery_s": round(time.monotonic() - t0, 1)}


class StopNodes(_RestartedOnHeal):
    def _apply(self) -> dict[str, Any]:
        return {"stopped": [self.cluster.node_stop(i) for i in self.fault.nodes]}


class PauseNodes(FaultAction):
    def _apply(self) -> dict[str, Any]:
        for i in self.fault.nodes:
            self.cluster.node(i).pause()
        return {"paused": [f"n{i}" for i in self.fault.nodes]}

    def _heal(self) -> dict[str, Any]:
        for i in self.fault.nodes:
            self.cluster.node(i).resume()
        return {"resumed": [f"n{i}" for i in self.fault.nodes], **recovered(self.cluster, self.fault.nodes)}


class IsolateNodes(FaultAction):
    """The node reaches nobody and nobody reaches it: the provider cuts its link (locally the
    host side of its veth goes down; over ssh iptables keeps only loopback and our SSH)."""

    def _apply(self) -> dict[str, Any]:
        for i in self.fault.nodes:
            self.cluster.provider.isolate(self.cluster.names.node_role(i))
        return {"isolated": [f"n{i}" for i in self.fault.nodes]}

    def _heal(self) -> dict[str, Any]:
        for i in self.fault.nodes:
            self.cluster.provider.reconnect(self.cluster.names.node_role(i))
        back = recovered(self.cluster, self.fault.nodes)
        return {"reconnected": [f"n{i}" for i in self.fault.nodes], **back}


class Partition(FaultAction):
    def _apply(self) -> dict[str, Any]:
        t = self.cluster.topology
        addr_of = {i: t.node_address(i) for i in t.node_indexes()}
        pairs = [(int(p[0]), int(p[1])) for p in self.fault.params["pairs"]]
        # On each node's own host: its namespace here, its machine over ssh.
        for i, argv in partition_rules(addr_of, pairs):
            node_host(self.cluster, i).run(argv)
        return {"cut": [f"n{a}|n{b}" for a, b in pairs]}

    def _heal(self) -> dict[str, Any]:
        for i, argv in unpartition_rules(list(self.fault.nodes)):
            node_host(self.cluster, i).run(argv, check=False)
        return {"healed": [f"n{i}" for i in self.fault.nodes], **recovered(self.cluster, self.fault.nodes)}


class ThrottleLink(FaultAction):
    """tbf at a rate on the node's link (locally both directions, over ssh the egress)."""

    def _apply(self) -> dict[str, Any]:
        rate = str(self.fault.params["rate"])
        for i in self.fault.nodes:
            self.cluster.provider.shape(self.cluster.names.node_role(i), rate)
        return {"rate": rate, "nodes": [f"n{i}" for i in self.fault.nodes]}

    def _heal(self) -> dict[str, Any]:
        restored = {f"n{i}": restore_link(self.cluster, i) for i in self.fault.nodes}
        return {"restored": restored, **recovered(self.cluster, self.fault.nodes)}


class ImpairLink(FaultAction):
    """Added delay (and jitter) or loss on each target node's link, on any kernel: netem where the
    kernel has it and it can do the fault, else the NFQUEUE delay line for the delay and the
    iptables `statistic` match for the loss (faults/delayline.py, docs/delayline.md), inside the
    node's namespace. The round trip to another node is measured before, during and after, so
    the fault's row shows what was achieved beside what was asked. Refused when it is built,
    in one line, on a machine that can do neither."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        p = fault.params
        imp = delayline_plan.impairment(p.get("delay"), p.get("jitter"), p.get("loss"))
        self.links: dict[int, delayline.LinkImpairment] = {}
        t = cluster.topology
        for i in fault.nodes:
            role = cluster.names.node_role(i)
            host = cluster.host(role)
            mech = delayline.require(delayline.preflight(host, imp, None))
            peer = next((j for j in t.node_indexes() if j not in fault.nodes), None)
            self.links[i] = delayline.LinkImpairment(
                host, imp, None, workdir=cluster.role_dir(role) / "delayline", mechanism=mech,
                dev=cluster.interface(role), probe_addr=t.node_address(peer) if peer else None,
                seed=fault.index, clock=cluster.clock,
            )  # fmt: skip

    def _apply(self) -> dict[str, Any]:
        out: dict[str, Any] = {f"n{i}": link.apply() for i, link in self.links.items()}
        out["summary"] = "; ".join(impairment_line(node, d) for node, d in list(out.items()))
        return out

    def _heal(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, link in self.links.items():
            out[f"n{i}"] = link.heal()
            if link.mech.delay == "netem":  # netem replaced the root qdisc: the topology's shaping back
                out[f"n{i}"]["restored"] = restore_link(self.cluster, i)
        return {**out, **recovered(self.cluster, self.fault.nodes)}


def impairment_line(node: str, detail: dict[str, Any]) -> str:
    """One node's link fault as asked and as measured: 'n3: 50 ms added round trip by nfqueue;
    RTT to a peer 0.21 -> 50.74 ms (+50.53)'."""
    line = f"{node}: {detail.get('requested', '')} ({detail.get('mechanism', '')})"
    rtt = detail.get("rtt_ms") or {}
    base, during = (rtt.get("base") or {}).get("p50"), (rtt.get("during") or {}).get("p50")
    if base is not None and during is not None:
        line += f"; RTT to a peer {base:.2f} -> {during:.2f} ms (+{during - base:.2f})"
    return line


class ThrottleCpu(FaultAction):
    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        problem = cluster.provider.cpu_limit_problem()
        if problem:
            raise PreflightError(problem)

    def _apply(self) -> dict[str, Any]:
        quota = float(self.fault.params["cpu_quota"])
        for i in self.fault.nodes:
            n = self.cluster.node(i)
            self.cluster.provider.limit_cpu(
                self.cluster.names.node_role(i), quota, n.proc.pid if n.proc is not None else None
            )
        return {"cpu_quota": quota, "nodes": [f"n{i}" for i in self.fault.nodes]}

    def _heal(self) -> dict[str, Any]:
        restored: dict[str, float | str] = {}
        for i in self.fault.nodes:
            q = self.cluster.provider.restore_cpu(self.cluster.names.node_role(i))
            restored[f"n{i}"] = q if q is not None else "unlimited"
        return {"restored": restored, **recovered(self.cluster, self.fault.nodes)}


class DesyncNodes(FaultAction):
    """The node stops taking part in flow control (as a donor or backup would): Galera's
    wsrep_desync. Refused up front on an engine whose nodes cannot desync."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        if not issubclass(type(cluster.node(fault.nodes[0])), Desyncable):
            raise PreflightError(
                f"desync-node is Galera's wsrep_desync, which {cluster.engine.label} has no equivalent of; "
                "to slow one member use throttle-cpu or throttle-link, to take it out pause-node or stop-node"
            )

    def _node(self, i: int) -> Desyncable:
        n = self.cluster.node(i)
        assert isinstance(n, Desyncable)
        return n

    def _apply(self) -> dict[str, Any]:
        for i in self.fault.nodes:
            self._node(i).desync(True)
        return {"desynced": [f"n{i}" for i in self.fault.nodes]}

    def _heal(self) -> dict[str, Any]:
        for i in self.fault.nodes:
            if self.cluster.node(i).alive():
                self._node(i).desync(False)
        return {"resynced": [f"n{i}" for i in self.fault.nodes]}


class RollingRestart(FaultAction):
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


class KillBalancer(FaultAction):
    """kill -9 HAProxy on one balancer host. With a keepalived pair, `balancer` means the one that
    holds the VIP when the fault starts (the drill people run), `lb:N` a given one."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        self.index = fault.balancer or 1

    def _apply(self) -> dict[str, Any]:
        c = self.cluster
        if self.fault.params.get("target") != "lb" and len(c.haproxies()) > 1:
            holder = c.vip_holder()
            if holder is not None and holder.startswith("lb"):
                self.index = int(holder[2:])
        role = f"lb{self.index}"
        held = c.topology.vip_address() is not None and role in c.vip_holders()
        out: dict[str, Any] = {"killed": c.balancer_kill(self.index)}
        t0 = time.monotonic()  # the kill is balancer_kill's last step
        if held:  # how long the VIP took to move to the other balancer
            out.update(vip_move(c.wait_vip, role, c.topology.balancer.advert_int, t0))
        return out

    def _heal(self) -> dict[str, Any]:
        t0 = time.monotonic()
        msg = self.cluster.balancer_start(self.index)
        return {"restarted": f"{msg} ({time.monotonic() - t0:.1f} s)"}


# The file the disk-full fault fills a node's datadir file system with (at the datadir's top: an
# rsync SST copies only directories and known files from there, never this one).
FILL_NAME = "cb-disk-full.fill"


def fill_path(cluster: Cluster, i: int) -> Path:
    return cluster.node(i).datadir / FILL_NAME


class DiskFull(FaultAction):
    """Fill the datadir file system of the target nodes: only a small file system of its own that
    the tool mounted for it at `up` (topology `[[node]] datadir_size`), never the machine's. The
    server then fails to extend its files (writes there fail with 1114 'table is full'; a
    replicated DDL can fail there and be skipped while the node stays in the cluster). Heal
    removes the fill."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        missing = [i for i in fault.nodes if not cluster.topology.node_datadir_size(i)]
        if missing:
            i = missing[0]
            raise PreflightError(
                f"disk-full fills only a datadir file system of the node's own, and n{i} has none: add "
                f'[[node]] index = {i} with datadir_size = "256M" to the topology and bring the cluster up '
                "again (clusterbench never fills the machine's own file system)"
            )

    def _apply(self) -> dict[str, Any]:
        out: dict[str, str] = {}
        for i in self.fault.nodes:
            n = self.cluster.node(i)
            size = size_bytes(self.cluster.topology.node_datadir_size(i) or "0")
            if not datadirfs.fs_of_its_own(n.host, n.datadir, size):
                raise ComponentError(
                    f"n{i}: {n.datadir} is not the datadir file system clusterbench made for it (of "
                    f"at most {datadirfs.human(size)}); refusing to fill it"
                )
            # Until the file system refuses more (ENOSPC): bounded by its size.
            fill = str(fill_path(self.cluster, i))
            n.host.run(["sh", "-c", 'cat /dev/zero > "$1" 2>/dev/null; exit 0', "sh", fill], timeout=300)
            d = datadirfs.disk_space(n.host, n.datadir)
            out[f"n{i}"] = f"{datadirfs.human(d.free)} free" if d else "?"
        return {"filled": out}

    def _heal(self) -> dict[str, Any]:
        out: dict[str, str] = {}
        for i in self.fault.nodes:
            n = self.cluster.node(i)
            n.host.run(["rm", "-f", str(fill_path(self.cluster, i))], check=False)
            d = datadirfs.disk_space(n.host, n.datadir)
            out[f"n{i}"] = d.text() if d else "?"
        caught = {f"n{i}": caught_up(self.cluster.node(i), CATCH_UP_TIMEOUT) for i in self.fault.nodes}
        return {"freed": out, "caught_up": caught}


# A server that cannot write its binary or relay log waits for space and retries once a minute
# (MySQL: "Disk is full writing ... Retry in 60 secs"; a Group Replication member then stays
# ONLINE with its applier stopped); the heal waits for that retry, and a little more.
CATCH_UP_TIMEOUT = 75.0


def caught_up(n: DbNode, timeout: float) -> str:
    """Wait (bounded) until the node applied everything its cluster ordered before now: one read
    in the engine's causal session (Galera: wsrep_sync_wait; Group Replication: consistency
    BEFORE). Says how long that took, or that it did not."""
    t0 = time.monotonic()
    try:
        with n.connect(timeout=5.0, read_timeout=timeout) as conn, conn.cursor() as cur:
            for stmt in n.session.causal:
                cur.execute(stmt)
            cur.execute("SELECT 1")
    except pymysql.MySQLError as exc:
        return f"not caught up after {time.monotonic() - t0:.1f} s ({exc.args[-1] if exc.args else exc})"
    return f"applied the backlog in {time.monotonic() - t0:.1f} s"


class RunSql(FaultAction):
    """A statement run once on one node at its time (e.g. a DDL while another node's disk is full,
    a by-hand step of a drill), as the cluster's admin. Nothing to heal."""

    def _apply(self) -> dict[str, Any]:
        i = self.fault.nodes[0]
        stmt = str(self.fault.params["statement"])
        t0 = time.monotonic()
        with self.cluster.node(i).connect(5.0, read_timeout=300) as conn, conn.cursor() as cur:
            rows = cur.execute(stmt)
        return {"node": f"n{i}", "statement": stmt, "rows": rows, "seconds": round(time.monotonic() - t0, 2)}


# A chain of our own in each balancer's host that drops VRRP (IP protocol 112) to and from its peer.
VRRP_CHAIN = "CBVRRP"
VRRP_PROTO = "112"


def vrrp_cut_rules(peer: str) -> list[list[str]]:
    """iptables argv, run on one balancer's host, that drop the VRRP adverts exchanged with its
    peer both ways (unicast VRRP: the peer's address; nothing else is touched) (pure)."""
    ipt = ["iptables", "-w"]
    return [
        [*ipt, "-N", VRRP_CHAIN],
        [*ipt, "-I", "INPUT", "-j", VRRP_CHAIN],
        [*ipt, "-I", "OUTPUT", "-j", VRRP_CHAIN],
        [*ipt, "-A", VRRP_CHAIN, "-p", VRRP_PROTO, "-s", peer, "-j", "DROP"],
        [*ipt, "-A", VRRP_CHAIN, "-p", VRRP_PROTO, "-d", peer, "-j", "DROP"],
    ]


def vrrp_heal_rules() -> list[list[str]]:
    ipt = ["iptables", "-w"]
    return [
        [*ipt, "-D", "INPUT", "-j", VRRP_CHAIN],
        [*ipt, "-D", "OUTPUT", "-j", VRRP_CHAIN],
        [*ipt, "-F", VRRP_CHAIN],
        [*ipt, "-X", VRRP_CHAIN],
    ]


def heal_vrrp(cluster: Cluster) -> list[str]:
    """Remove the VRRP cut on every balancer host (idempotent); the roles it was found on."""
    healed = []
    for k in cluster.topology.balancer_indexes():
        host = cluster.host(f"lb{k}")
        if host.run(["iptables", "-w", "-S", VRRP_CHAIN], check=False).ok:
            healed.append(f"lb{k}")
        for argv in vrrp_heal_rules():
            host.run(argv, check=False)
    return healed


class CutVrrp(FaultAction):
    """The two keepalived instances of a balancer pair stop hearing each other: iptables in each
    balancer's host drops VRRP to and from the peer. Each then believes the other is gone and the
    backup takes the VIP too (about 3 x advert_int later): both hold it, a split brain. Heal
    removes the rules; the higher priority wins the next election and the other drops the VIP."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        if cluster.topology.vip_address() is None or len(cluster.topology.balancer_indexes()) != 2:
            raise PreflightError(
                "cut-vrrp needs a keepalived pair of balancers with a VIP: [balancer] count = 2 in "
                "the topology (see examples/topologies/3-nodes-vip.toml)"
            )

    def _apply(self) -> dict[str, Any]:
        t = self.cluster.topology
        before = self.cluster.vip_holders()
        for k in t.balancer_indexes():
            peer = t.balancer_address(2 if k == 1 else 1)
            host = self.cluster.host(f"lb{k}")
            for argv in vrrp_cut_rules(peer):
                host.run(argv)
        return {"cut": "VRRP between lb1 and lb2", "vip_holders_before": before}

    def _heal(self) -> dict[str, Any]:
        t0 = time.monotonic()
        heal_vrrp(self.cluster)
        adv = self.cluster.topology.balancer.advert_int
        holder = self.cluster.wait_vip(timeout=3 * adv + 10)
        return {"restored": "VRRP between lb1 and lb2", "vip_on": holder,
                "one_holder_after_s": round(time.monotonic() - t0, 2)}  # fmt: skip
