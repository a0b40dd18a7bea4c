"""Faults left in place by a run that was SIGKILLed (it could not heal): find them, heal them."""

from __future__ import annotations

import signal
from dataclasses import dataclass

from clusterbench.cluster import Cluster
from clusterbench.datadir_layers import layer_of, layered
from clusterbench.engines.base import Desyncable
from clusterbench.engines.fakeclock import parse_offset
from clusterbench.faults import delayline, diskthrottle
from clusterbench.faults.actions import (
    CHAIN,
    VRRP_CHAIN,
    fill_path,
    heal_vrrp,
    node_host,
    restore_link,
    unpartition_rules,
)
from clusterbench.faults.clock import set_offset


@dataclass(frozen=True)
class Leftover:
    node: int  # 0 for a balancer's leftover (see role)
    # link-down, shaping, netem, impaired-link, partition, paused, cpu-quota, desync, vrrp-cut,
    # disk-full, disk-throttle, disk-faults, clock-skew; on the web tier: web-down, web-paused,
    # front-down
    what: str
    role: str = ""  # lb1/lb2 for balancer leftovers, w<i>/fe<k> for the web tier's

    def describe(self) -> str:
        if self.what == "vrrp-cut":
            return f"{self.role}: iptables chain {VRRP_CHAIN} drops VRRP to its peer (cut-vrrp)"
        web = {
            "web-down": f"web node {self.role} is not running (kill-node or stop-node web:N)",
            "web-paused": f"web node {self.role} is stopped with SIGSTOP (pause-node web:N)",
            "front-down": f"front haproxy {self.role} is not running (kill-balancer front)",
        }
        if self.what in web:
            return web[self.what]
        return {
            "link-down": f"n{self.node}: link is down (isolate-node)",
            "shaping": f"n{self.node}: tbf shaping not in the topology (throttle-link)",
            "netem": f"n{self.node}: netem delay or loss on its link (delay-link, loss-link)",
            "impaired-link": f"n{self.node}: delay-line rules or process on its link (delay-link, loss-link)",
            "partition": f"n{self.node}: iptables chain {CHAIN} present (partition)",
            "paused": f"n{self.node}: the server is stopped with SIGSTOP (pause-node)",
            "cpu-quota": f"n{self.node}: CPU quota differs from the topology (throttle-cpu)",
            "desync": f"n{self.node}: desynced from flow control (desync-node)",
            "disk-full": f"n{self.node}: its datadir file system is filled (disk-full)",
            "disk-throttle": f"n{self.node}: a block I/O limit on its datadir disk (throttle-disk)",
            "clock-skew": f"n{self.node}: its server's wall clock is shifted (clock-skew)",
            "disk-faults": f"n{self.node}: delays, errors or a freeze on its power-loss layer "
            "(disk-slow, disk-error, power-loss)",
        }[self.what]


def find(cluster: Cluster) -> list[Leftover]:
    out: list[Leftover] = []
    for n in cluster.nodes():
        i = n.index
        role = cluster.names.node_role(i)
        host = node_host(cluster, i)
        kinds = cluster.provider.fault_leftovers(role)
        out += [Leftover(i, what) for what in kinds if what != "cpu-quota"]
        # iptables on the node's own host: inside its namespace here, on its machine over ssh.
        if host.run(["iptables", "-w", "-S", CHAIN], check=False).ok:
            out.append(Leftover(i, "partition"))
        if delayline.leftovers(host, cluster.role_dir(role) / "delayline"):
            out.append(Leftover(i, "impaired-link"))
        st = host.proc_state(n.proc.pid) if n.proc is not None and n.alive() else None
        if st is not None and st[0] == "T":
            out.append(Leftover(i, "paused"))
        if "cpu-quota" in kinds:
            out.append(Leftover(i, "cpu-quota"))
        if n.alive() and st is not None and st[0] != "T" and isinstance(n, Desyncable):
            try:
                if n.desynced():
                    out.append(Leftover(i, "desync"))
            except Exception:  # noqa: BLE001 - a node that does not answer is not a desync leftover
                pass
    out += _disk_leftovers(cluster)
    if cluster.topology.cluster.clock == "faketime":
        for n in cluster.nodes():
            text = (n.host.read_file(n.clock_file) or "+0").strip()
            if (parse_offset(text) or 0.0) != 0.0:
                out.append(Leftover(n.index, "clock-skew"))
    if cluster.topology.vip_address() is not None:
        for k in cluster.topology.balancer_indexes():
            if cluster.host(f"lb{k}").run(["iptables", "-w", "-S", VRRP_CHAIN], check=False).ok:
                out.append(Leftover(0, "vrrp-cut", f"lb{k}"))
    return out + _web_leftovers(cluster)


def _web_leftovers(cluster: Cluster) -> list[Leftover]:
    """A web node or front HAProxy a killed run's fault left down, a web node left paused."""
    out: list[Leftover] = []
    for w in cluster.web_nodes():
        states = [w.host.proc_state(p.pid) for p in w.masters()]
        if not w.alive():
            out.append(Leftover(0, "web-down", w.name))
        elif any(st is not None and st[0] == "T" for st in states):
            out.append(Leftover(0, "web-paused", w.name))
    out += [Leftover(0, "front-down", h.cfg.dir.name) for h in cluster.fronts() if not h.alive()]
    return out


def _disk_leftovers(cluster: Cluster) -> list[Leftover]:
    out = []
    layers = layered(cluster)
    for i in cluster.topology.node_indexes():
        if cluster.topology.node_datadir_size(i) and node_host(cluster, i).exists(fill_path(cluster, i)):
            out.append(Leftover(i, "disk-full"))
        if diskthrottle.leftover(cluster, i):
            out.append(Leftover(i, "disk-throttle"))
        if i in layers:
            try:
                st = layer_of(cluster, i).status()
            except Exception:  # noqa: BLE001 - a layer that does not answer has nothing to heal
                continue
            if st.frozen or st.faults:
                out.append(Leftover(i, "disk-faults"))
    return out


def heal(cluster: Cluster, leftovers: list[Leftover]) -> list[str]:
    done = []
    cuts = [lo for lo in leftovers if lo.what == "vrrp-cut"]
    if cuts:
        # One heal for the pair, then (as the fault's own heal does) until one balancer holds the
        # VIP: `status` right after must not still see both.
        heal_vrrp(cluster)
        done += [f"healed {lo.describe()}" for lo in cuts]
        t0 = cluster.clock.now()
        holder = cluster.wait_vip(timeout=3 * cluster.topology.balancer.advert_int + 10)
        done.append(f"the VIP is on {holder} alone {cluster.clock.now() - t0:.1f} s later")
    for lo in leftovers:
        if lo.what in ("web-down", "web-paused", "front-down"):
            done.append(_heal_web(cluster, lo))
            continue
        if lo.what == "vrrp-cut":
            continue
        role = cluster.names.node_role(lo.node)
        n = cluster.node(lo.node)
        if lo.what == "link-down":
            cluster.provider.reconnect(role)
        elif lo.what in ("shaping", "netem"):
            restore_link(cluster, lo.node)
        elif lo.what == "impaired-link":
            delayline.heal_leftovers(node_host(cluster, lo.node), cluster.role_dir(role) / "delayline",
                                     dev=cluster.interface(role), clock=cluster.clock)  # fmt: skip
        elif lo.what == "partition":
            for i, argv in unpartition_rules([lo.node]):
                node_host(cluster, i).run(argv, check=False)
        elif lo.what == "paused" and n.proc is not None:
            n.host.signal(n.proc, signal.SIGCONT)
        elif lo.what == "cpu-quota":
            cluster.provider.restore_cpu(role)
        elif lo.what == "disk-full":
            n.host.run(["rm", "-f", str(fill_path(cluster, lo.node))], check=False)
        elif lo.what == "clock-skew":
            set_offset(n, 0.0)
        elif lo.what == "disk-throttle":
            diskthrottle.clear(cluster, lo.node)
        elif lo.what == "disk-faults":
            layer = layer_of(cluster, lo.node)
            layer.clear_faults()
            layer.thaw()
        elif lo.what == "desync" and isinstance(n, Desyncable):
            n.desync(False)
        done.append(f"healed {lo.describe()}")
    return done


def _heal_web(cluster: Cluster, lo: Leftover) -> str:
    index = int(lo.role.lstrip("wfe"))
    if lo.what == "front-down":
        return f"healed {lo.describe()}: {cluster.front_start(index)}"
    if lo.what == "web-paused":
        cluster.web_resume(index)
    return f"healed {lo.describe()}: {cluster.web_start(index)}"
