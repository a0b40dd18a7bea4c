"""An experiment's cluster between trials: brought up once per group, its node count, limits and
TLS changed at runtime for each trial, taken down at the group's end (ExperimentRunner's part that
knows the cluster)."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from clusterbench.cluster import Cluster
from clusterbench.errors import ComponentError
from clusterbench.experiment import tls as tlsmod
from clusterbench.experiment.planner import Plan, TrialSpec
from clusterbench.spec.endpoint import Address, Endpoint

NODE_SETTLE_TIMEOUT = 60.0


class ClusterOps:
    """Mixed into ExperimentRunner: the cluster of the current group and what changes it."""

    plan: Plan
    home: Any
    ledger: Any
    lis: Any
    cluster: Cluster | None
    running: int
    certs: Any
    client_hosts: list[Any]
    data: Any

    # ---- cluster lifecycle --------------------------------------------------------------------

    def _bring_up(self, t: TrialSpec) -> None:
        topo = t.topology
        if any(tr.tls for tr in self.plan.trials):
            with self.ledger.phase("bring-up"):
                self.certs = tlsmod.ensure_certs(self.home / "experiments" / "tls")
        self.lis.phase(f"bringing up {topo.cluster.nodes} node(s) for group {t.group}" + _res(t))
        with self.ledger.phase("bring-up"):
            c = Cluster(topo, home=self.home)
            self.cluster = c
            c.up(report=self.lis.phase)
        self.running = topo.cluster.nodes
        self.data.forget()
        self.client_hosts = list(c.client_hosts())

    def _teardown(self) -> None:
        c = self.cluster
        if c is None:
            return
        with self.ledger.phase("teardown"):
            c.down()
        self.cluster = None
        self.lis.phase("cluster taken down")

    def _set_nodes(self, want: int) -> None:
        c = self.cluster
        assert c is not None
        if want == self.running:
            return
        with self.ledger.phase("node changes"):
            h = c.haproxy()
            if want < self.running:
                for i in range(self.running, want, -1):
                    if h is not None:
                        for route in c.engine.routes():
                            _haproxy_cmd(h, f"set server {route.name}/n{i} state maint")
                    c.node_stop(i)
                    # One leave at a time: a node that leaves while the previous view change is
                    # still in progress can hang in shutdown and the survivors lose quorum
                    # (seen with 9 -> 1). Wait until node 1 is Synced at the new size.
                    _wait_size(c, i - 1, NODE_SETTLE_TIMEOUT)
                self.lis.phase(f"stopped nodes {want + 1}-{self.running}: {want} running")
            else:
                for i in range(self.running + 1, want + 1):
                    msg = c.node_start(i)
                    if h is not None:
                        for route in c.engine.routes():
                            _haproxy_cmd(h, f"set server {route.name}/n{i} state ready")
                    self.lis.phase(msg)
                if h is not None:
                    h.wait_all_up([f"n{i}" for i in range(1, want + 1)], timeout=NODE_SETTLE_TIMEOUT)
            self.running = want

    def _set_resources(self, t: TrialSpec) -> None:
        """Put every node under this trial's CPU and link limits, on the running cluster.

        The cluster's topology becomes the trial's, so anything that restarts a node (a fault's
        heal, settling) or restores a limit after a throttle fault uses these limits too."""
        c = self.cluster
        assert c is not None
        if t.topology == c.topology:
            return
        with self.ledger.phase("node changes"):
            before = c.topology
            c.topology = t.topology
            changed = []
            for i in c.topology.node_indexes():
                want, had = t.topology.node_resources(i), before.node_resources(i)
                if want == had:
                    continue
                changed.append(i)
                n = c.node(i)
                pid = n.proc.pid if n.proc is not None and n.alive() else None
                c.provider.set_limits(c.names.node_role(i), want, had, pid)
            if changed:
                r = t.topology.resources
                self.lis.phase(
                    f"limits now cpu_quota={r.cpu_quota or 'none'} cpuset={r.cpuset or 'all'} "
                    f"bandwidth={r.bandwidth or 'none'} on n{', n'.join(map(str, changed))}"
                )

    def _endpoint(self, t: TrialSpec, database: str = "sbtest") -> Endpoint:
        c = self.cluster
        assert c is not None
        if t.target == "all-nodes":
            ep = c.endpoint("node:1", database=database)
            ep = ep.model_copy(
                update={
                    "name": "all-nodes",
                    "addresses": tuple(
                        Address(host=c.topology.node_address(i)) for i in range(1, self.running + 1)
                    ),
                }
            )
        else:
            ep = c.endpoint(t.target, database=database)
        if t.interconnect == "socket":
            node = c.node(int(t.target[5:]))
            ep = ep.model_copy(update={"name": f"{t.target} socket", "socket": node.socket})
        if t.tls and self.certs is not None:
            ep = ep.model_copy(update={"tls": True, "tls_dir": self.certs})
        return ep

    def _client_hosts(self, t: TrialSpec) -> list[Any] | None:
        """Where the trial's clients run: the target node's own host for interconnect = socket,
        else the topology's client machines ([clients] hosts locally, role client over ssh),
        round-robin; None: this machine."""
        c = self.cluster
        assert c is not None
        if t.interconnect == "socket":
            return [c.node(int(t.target[5:])).host]
        return (self.client_hosts[: t.client_hosts] if t.client_hosts else self.client_hosts) or None

    def _writer(self) -> str:
        """The target of the tool's own DDL and loads: a node that takes writes now (node 1 until
        a fault moved a single primary elsewhere)."""
        c = self.cluster
        assert c is not None
        node = c.admin_node()
        return f"node:{node.index if node is not None else 1}"



def _wait_size(c: Cluster, size: int, timeout: float) -> None:
    """Until node 1 is a ready member of a Primary component of exactly `size` members."""
    n1 = c.node(1)
    deadline = time.monotonic() + timeout
    h = None
    while time.monotonic() < deadline:
        h = n1.health()
        if h is not None and h.in_quorum and h.ready and h.size == size:
            return
        time.sleep(0.05)
    seen = f"{h.quorum_word} {h.state}, size {h.size}" if h else "not answering"
    raise ComponentError(
        f"node n1 is not ready in a Primary component of {size} after {timeout:g} s ({seen})"
    )


def _haproxy_cmd(h: Any, cmd: str) -> None:
    with contextlib.suppress(OSError):
        h.command(cmd)


def _res(t: TrialSpec) -> str:
    r = t.topology.resources
    parts = [
        f"{k}={v}"
        for k, v in (("cpu_quota", r.cpu_quota), ("cpuset", r.cpuset), ("bandwidth", r.bandwidth))
        if v
    ]
    return f" ({', '.join(parts)})" if parts else ""


