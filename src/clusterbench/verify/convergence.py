"""Collect what checkers.convergence needs from a live cluster, once the load has stopped."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from clusterbench.checkers.convergence import ConvergenceSnapshot, NodeState
from clusterbench.clock import Clock, SystemClock
from clusterbench.components.galera.node import GaleraNode
from clusterbench.components.galera.status import parse_wsrep_status


def read_node_state(node: GaleraNode, schemas: Sequence[str], read_timeout: float = 120.0) -> NodeState:
    """Status first (sync_wait=0: a non-Primary node still answers), then a causal read
    (wsrep_sync_wait=1) of every table's row count and CHECKSUM TABLE."""
    if not node.alive():
        return NodeState(node.name, answered=False, error="not running")
    try:
        with node.connect(2.0, read_timeout=read_timeout) as conn:
            return _read(conn, node.name, schemas)
    except Exception as exc:  # noqa: BLE001 - an unreachable node makes the verdict UNKNOWN
        return NodeState(node.name, answered=False, error=f"{type(exc).__name__}: {exc}")


def _read(conn: Any, name: str, schemas: Sequence[str]) -> NodeState:
    with conn.cursor() as cur:
        cur.execute("SET SESSION wsrep_sync_wait=0")
        cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep_%'")
        st = parse_wsrep_status([(str(r[0]), "" if r[1] is None else str(r[1])) for r in cur.fetchall()])
    state = NodeState(
        name,
        answered=True,
        local_state=st.state_comment,
        cluster_status=st.cluster_status,
        ready=st.ready,
        size=st.cluster_size,
        conf_id=st.cluster_conf_id,
        state_uuid=st.cluster_state_uuid,
        last_committed=st.last_committed,
    )
    tables: dict[str, tuple[int, int | None]] = {}
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION wsrep_sync_wait=1")
            marks = ", ".join(["%s"] * len(schemas))
            cur.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                f"WHERE table_schema IN ({marks}) AND table_type = 'BASE TABLE' "
                "ORDER BY table_schema, table_name",
                tuple(schemas),
            )
            names = [(str(r[0]), str(r[1])) for r in cur.fetchall()]
            for schema, table in names:
                q = f"`{schema}`.`{table}`"
                cur.execute(f"SELECT COUNT(*) FROM {q}")
                count = int(cur.fetchone()[0])
                cur.execute(f"CHECKSUM TABLE {q}")
                row = cur.fetchone()
                tables[f"{schema}.{table}"] = (count, None if row is None or row[1] is None else int(row[1]))
    except Exception as exc:  # noqa: BLE001 - the node answered but the causal read failed
        return replace(state, error=f"causal read: {type(exc).__name__}: {exc}")
    return replace(state, tables=tables)


def last_committed(nodes: Sequence[GaleraNode]) -> tuple[int | None, ...]:
    out = []
    for n in nodes:
        st = n.status()
        out.append(None if st is None else st.last_committed)
    return tuple(out)


def collect_convergence(
    nodes: Sequence[GaleraNode],
    schemas: Sequence[str] = ("sbtest",),
    *,
    timeout: float = 60.0,
    poll: float = 0.5,
    retries: int = 2,
    clock: Clock | None = None,
    read: Callable[[GaleraNode, Sequence[str]], NodeState] = read_node_state,
    positions: Callable[[Sequence[GaleraNode]], tuple[int | None, ...]] = last_committed,
) -> ConvergenceSnapshot:
    """Wait (≤ `timeout`) until wsrep_last_committed is equal on every node and unchanged over two
    consecutive polls, read every node, and check that the position did not move meanwhile;
    retry up to `retries` times when it did (something still wrote)."""
    clock = clock or SystemClock()
    t0 = clock.now()
    deadline = t0 + timeout
    polls = 0
    states: list[NodeState] = []
    stable = False
    attempts = 0
    for _ in range(retries + 1):
        attempts += 1
        stable = False
        prev: tuple[int | None, ...] | None = None
        pos: tuple[int | None, ...] = ()
        while clock.now() < deadline:
            pos = positions(nodes)
            polls += 1
            settled = None not in pos and len(set(pos)) == 1
            if settled and pos == prev:
                stable = True
                break
            prev = pos if settled else None
            clock.sleep(poll)
        states = [read(n, schemas) for n in nodes]
        if not stable:
            break
        after = positions(nodes)
        polls += 1
        if after == pos:
            break
        stable = False
    note = "" if stable else f"last positions {list(positions(nodes))}"
    return ConvergenceSnapshot(states, stable, polls, attempts, clock.now() - t0, note)
