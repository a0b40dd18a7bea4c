"""A cluster's nodes as operators handle them: stop, kill, start (rejoin or bootstrap), restart,
recover after a fault, cold start and stop of all, the node that takes writes now, and settling
(mixed into Cluster; the engine decides how each is done)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from clusterbench.engines.base import DbNode
from clusterbench.spec.topology import Topology

JOIN_TIMEOUT = 180.0
# The one limit of settling (after a heal, before a drill, after a node change): the nodes back as
# ready members and the balancers seeing them. A rejoin by full state transfer (a Group
# Replication clone, an SST) is the slow case it has to cover.
SETTLE_TIMEOUT = 240.0

Report = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


class NodeOps:
    """What Cluster does to its nodes; it provides the engine, nodes and balancers used here."""

    engine: Any
    topology: Topology
    node: Callable[[int], DbNode]
    nodes: Callable[[], list[DbNode]]
    haproxies: Callable[[], list[Any]]
    keepaliveds: Callable[[], list[Any]]
    _record_balancer: Callable[[Any], None]
    _record_keepalived: Callable[[Any], None]
    recorded: Callable[[DbNode], None]
    settle_web: Callable[[float], list[str]]

    def node_stop(self, index: int) -> str:
        return self._node_act(index, lambda n: n.stop())

    def node_kill(self, index: int) -> str:
        return self._node_act(index, lambda n: n.kill())

    def _node_act(self, index: int, act: Callable[[DbNode], str]) -> str:
        """`act` (a stop, a kill) on node `index`, whose processes are recorded right after:
        'n<index> <what it did>'."""
        n = self.node(index)
        what = act(n)
        self.recorded(n)
        return f"n{index} {what}"

    def node_start(self, index: int, timeout: float = JOIN_TIMEOUT) -> str:
        """Start one node: it rejoins the running ones, or bootstraps when none runs and the
        engine's rules allow this node to."""
        n = self.node(index)  # validates the index
        # What an earlier server process of this node left running (a killed donor's SST script
        # and its rsync) would block the start: stopped first, and said (issue 15, item 8).
        stopped = [] if n.alive() else n.stop_strays()
        msg = self.engine.start_node(self, index, timeout)
        if stopped:
            names = ", ".join(sorted(set(stopped)))
            msg += f" (first stopped {len(stopped)} process(es) its earlier server left running: {names})"
        return msg

    def node_rebuild(self, index: int, timeout: float = JOIN_TIMEOUT) -> str:
        """Wipe a node's data and let it rejoin by a full state transfer (the engine's: SST,
        clone), as an operator does after a disk loss."""
        self.node(index)  # validates the index
        return self.engine.rebuild_node(self, index, timeout)

    def restart_nodes(self, indexes: Sequence[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        """The heal of kill and stop faults: the engine brings the nodes back whatever the
        survivors' state (quorum kept, quorum lost, nobody left)."""
        return self.engine.restart_nodes(self, indexes, timeout)

    def recover(self, indexes: Sequence[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        """The end of the heal of network, pause and throttle faults: nodes that do not come
        back as ready members by themselves are brought back the engine's way (a Group
        Replication member expelled meanwhile rejoins)."""
        return self.engine.recover(self, indexes, timeout)

    def primary(self) -> int | None:
        """The node that takes the writes where one node does (Group Replication's single
        primary, as the members with quorum report it); None where every node writes or
        none is writable now."""
        if self.engine.every_node_writes:
            return None
        for n in self.nodes():
            h = n.health()
            if h is not None and h.writable and h.role == "PRIMARY":
                return n.index
        return None

    def admin_node(self) -> DbNode | None:
        """The node the tool's own DDL and verification setup go to: one that takes writes now
        (a single-primary group's primary wherever it is, after any failover; any ready Galera
        node), else the first running one; None when no node runs. A drill or a prepare must
        start from whatever state the previous one left, never assume node 1 is writable."""
        alive = [n for n in self.nodes() if n.alive()]
        for n in alive:
            h = n.health()
            if h is not None and h.writable:
                return n
        return alive[0] if alive else None

    def settle(self, running: int | None = None, timeout: float = SETTLE_TIMEOUT) -> list[str]:
        """Until nodes 1..running (every node by default) are ready members of one view of that
        size and every running balancer sees them UP: after a fault is healed, before a drill (it
        must not inherit an earlier fault's aftermath) and after node changes. Nodes that are not
        running are started (rejoin, or the engine's cold start), running ones that do not come
        back by themselves are brought back the engine's way (a Group Replication member expelled
        by a fault), and nodes beyond `running` that a cold start brought back are stopped again,
        last first. Returns what happened, one line each; ComponentError past `timeout`."""
        size = running or self.topology.cluster.nodes
        t0 = time.monotonic()

        def left() -> float:
            return max(1.0, timeout - (time.monotonic() - t0))

        beyond = range(self.topology.cluster.nodes, size, -1)
        notes = [self.node_stop(i) for i in beyond if self.node(i).alive()]
        for i in range(1, size + 1):
            if not self.node(i).alive():
                notes.append(f"n{i} was not running; starting it")
                notes.append(self.node_start(i))
        unready = [i for i in range(1, size + 1) if not _ready(self.node(i))]
        if unready:
            notes += self.recover(unready)
        for i in range(1, size + 1):
            self.node(i).wait_ready(left(), expect_size=size)
        notes.append(f"all {size} nodes ready in one view {time.monotonic() - t0:.1f} s after heal")
        # Clients come through the balancers: settled means they see every node UP again too
        # (HAProxy needs `rise` good checks after a node returns).
        backends = [f"n{i}" for i in range(1, size + 1)]
        running_balancers = [h for h in self.haproxies() if h.alive()]
        for h in running_balancers:
            h.wait_all_up(backends, timeout=max(5.0, left()))
        if running_balancers:
            notes.append(f"balancers see every node UP {time.monotonic() - t0:.1f} s after heal")
        return notes + self.settle_web(left())

    def node_restart(self, index: int) -> str:
        stopped = self.node_stop(index)
        return f"{stopped}; {self.node_start(index)}"

    def start_all(self, report: Report = _quiet) -> list[str]:
        """Cold start from the most advanced node, then the balancers that are not running."""
        out = self.engine.start_all(self, report)
        for h in self.haproxies():
            if not h.alive():
                h.start()
                self._record_balancer(h)
        for ka in self.keepaliveds():
            if not ka.alive():
                ka.start()
                self._record_keepalived(ka)
        return out

    def stop_all(self) -> list[str]:
        """Graceful stop of every node, in the engine's order."""
        return [self.node_stop(n.index) for n in self.engine.stop_order(self.nodes())]


def _ready(n: DbNode) -> bool:
    h = n.health()
    return h is not None and h.ready
