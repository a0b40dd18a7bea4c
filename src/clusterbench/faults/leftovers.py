"""Faults left in place by a run that was SIGKILLed (it could not heal): find them, heal them."""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass

from clusterbench.cluster import Cluster
from clusterbench.faults.actions import (
    CHAIN,
    node_host,
    quota_file,
    restore_cpu_quota,
    restore_link,
    unpartition_rules,
    wanted_quota_us,
)
from clusterbench.hosts import process
from clusterbench.hosts.ssh import SshHost


@dataclass(frozen=True)
class Leftover:
    node: int
    what: str  # link-down, shaping, netem, partition, paused, cpu-quota, desync

    def describe(self) -> str:
        return {
            "link-down": f"n{self.node}: link is down (isolate-node)",
            "shaping": f"n{self.node}: tbf shaping not in the topology (throttle-link)",
            "netem": f"n{self.node}: netem delay or loss on its link (delay-link, loss-link)",
            "partition": f"n{self.node}: iptables chain {CHAIN} present (partition)",
            "paused": f"n{self.node}: mariadbd is stopped with SIGSTOP (pause-node)",
            "cpu-quota": f"n{self.node}: CPU quota differs from the topology (throttle-cpu)",
            "desync": f"n{self.node}: wsrep_desync=ON (desync-node)",
        }[self.what]


def _proc_state(host: object, pid: int) -> str | None:
    if isinstance(host, SshHost):
        st = host.proc_state(pid)
        return st[0] if st else None
    return process.state(pid)


def find(cluster: Cluster) -> list[Leftover]:
    out: list[Leftover] = []
    names = cluster.names
    t = cluster.topology
    remote = cluster.remote
    by_name: dict[str, dict[str, object]] = {}
    if not remote:
        links = json.loads(cluster.local.run(["ip", "-j", "link", "show"], check=False).stdout or "[]")
        by_name = {e.get("ifname"): e for e in links}
    for n in cluster.nodes():
        i = n.index
        role = names.node_role(i)
        host = node_host(cluster, i)
        link = by_name.get(names.veth(role))
        if link is not None and "UP" not in link.get("flags", []):  # type: ignore[operator]
            out.append(Leftover(i, "link-down"))
        if remote:
            shown = host.run(["tc", "-j", "qdisc", "show", "dev", cluster.interface(role)], check=False)
        else:
            shown = cluster.local.run(["tc", "-j", "qdisc", "show", "dev", names.veth(role)], check=False)
        qd = json.loads(shown.stdout or "[]") if shown.ok else []
        kinds = {q.get("kind") for q in qd}
        if "netem" in kinds:
            out.append(Leftover(i, "netem"))
        elif "tbf" in kinds and not t.node_resources(i).bandwidth:
            out.append(Leftover(i, "shaping"))
        # iptables on the node's own host: inside its namespace here, on its machine over ssh.
        if host.run(["iptables", "-w", "-S", CHAIN], check=False).ok:
            out.append(Leftover(i, "partition"))
        if n.proc is not None and n.alive() and _proc_state(host, n.proc.pid) == "T":
            out.append(Leftover(i, "paused"))
        path = quota_file(cluster, i)
        if not remote and path.exists() and int(path.read_text().strip()) != wanted_quota_us(cluster, i):
            out.append(Leftover(i, "cpu-quota"))
        if n.alive() and not any(x.node == i and x.what == "paused" for x in out):
            try:
                rows = n.query("SHOW GLOBAL VARIABLES LIKE 'wsrep_desync'", timeout=1.0)
                if rows and str(rows[0][1]).upper() == "ON":
                    out.append(Leftover(i, "desync"))
            except Exception:  # noqa: BLE001 - a node that does not answer is not a desync leftover
                pass
    return out


def heal(cluster: Cluster, leftovers: list[Leftover]) -> list[str]:
    names = cluster.names
    done = []
    for lo in leftovers:
        role = names.node_role(lo.node)
        n = cluster.node(lo.node)
        if lo.what == "link-down":  # local only: over ssh, isolation is an iptables chain
            cluster.local.run(["ip", "link", "set", names.veth(role), "up"])
        elif lo.what in ("shaping", "netem"):
            restore_link(cluster, lo.node)
        elif lo.what == "partition":
            for i, argv in unpartition_rules([lo.node]):
                node_host(cluster, i).run(argv, check=False)
        elif lo.what == "paused" and n.proc is not None:
            n.host.signal(n.proc, signal.SIGCONT)
        elif lo.what == "cpu-quota":
            restore_cpu_quota(cluster, lo.node)
        elif lo.what == "desync":
            n.query("SET GLOBAL wsrep_desync=OFF")
        done.append(f"healed {lo.describe()}")
    return done
