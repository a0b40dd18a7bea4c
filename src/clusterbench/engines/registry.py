"""Which engine a topology runs: the registry of engines and their session statements (imported
through clusterbench.engines when first used)."""

from __future__ import annotations

from collections.abc import Callable

from clusterbench.engines.base import Engine, SessionSql
from clusterbench.engines.galera.engine import GaleraEngine
from clusterbench.engines.galera.node import GALERA_SESSION
from clusterbench.engines.group_replication.engine import GroupReplicationEngine
from clusterbench.engines.group_replication.node import GR_SESSION
from clusterbench.spec.topology import Topology

ENGINES: dict[str, Callable[[Topology], Engine]] = {
    "galera": GaleraEngine,
    "group_replication": GroupReplicationEngine,
}

# Each engine's session statements, for clients that reach an endpoint without knowing its engine:
# they try each engine's statement and skip those the server does not know (error 1193).
SESSIONS: tuple[SessionSql, ...] = (GALERA_SESSION, GR_SESSION)


def per_node_variables(kind: str) -> frozenset[str]:
    """The server variables that differ between the nodes of an engine by design."""
    engine = ENGINES.get(kind)
    return frozenset(getattr(engine, "per_node_variables", frozenset()))


def make_engine(topology: Topology) -> Engine:
    """The engine the topology names in `[engine] kind`."""
    return ENGINES[topology.engine.kind](topology)
