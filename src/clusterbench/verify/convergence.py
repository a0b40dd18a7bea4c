"""Collect what checkers.convergence needs from a live cluster, once the load has stopped."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from clusterbench.checkers.convergence import ConvergenceSnapshot, NodeState
from clusterbench.clock import Clock, SystemClock
from clusterbench.engines.base import DbNode


def read_node_state(node: DbNode, schemas: Sequence[str], read_timeout: float = 120.0) -> NodeState:
    """Health first (in a monitoring session: a node without quorum still answers), then a causal
    read of every table's row count and CHECKSUM TABLE."""
    if not node.alive():
        return NodeState(node.name, answered=False, error="not running")
    try:
        h = node.health()
        if h is None:
            return NodeState(node.name, answered=False, error="no answer")
        state = NodeState(
            node.name,
            answered=True,
            local_state=h.state,
            cluster_status=h.quorum_word,
            ready=h.ready,
            size=h.size,
            conf_id=h.view_seq,
            state_uuid=h.group_id,
            last_committed=h.progress,
            position=h.position,
        )
        with node.connect(2.0, read_timeout=read_timeout) as conn:
            return _read(conn, state, schemas, node.session.causal)
    except Exception as exc:  # noqa: BLE001 - an unreachable node makes the verdict UNKNOWN
        return NodeState(node.name, answered=False, error=f"{type(exc).__name__}: {exc}")


def _read(conn: Any, state: NodeState, schemas: Sequence[str], causal: Sequence[str]) -> NodeState:
    tables: dict[str, tuple[int, int | None]] = {}
    try:
        with conn.cursor() as cur:
            for stmt in causal:
                cur.execute(stmt)
            marks = ", ".join(["%s"] * len(schemas))
            cur.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                f"WHERE table_schema IN ({marks}) AND table_type = 'BASE TABLE' "
                "ORDER BY table_schema, table_name",
                tuple(schemas),
            )
            names = [(str(r[0]), str(r[1])) for r in cur.fetchall()]
            definitions = read_definitions(cur, schemas)
            for schema, table in names:
                q = f"`{schema}`.`{table}`"
                cur.execute(f"SELECT COUNT(*) FROM {q}")
                count = int(cur.fetchone()[0])
                cur.execute(f"CHECKSUM TABLE {q}")
                row = cur.fetchone()
                tables[f"{schema}.{table}"] = (count, None if row is None or row[1] is None else int(row[1]))
    except Exception as exc:  # noqa: BLE001 - the node answered but the causal read failed
        return replace(state, error=f"causal read: {type(exc).__name__}: {exc}")
    return replace(state, tables=tables, definitions=definitions)


def _s(v: Any) -> str:
    return "" if v is None else str(v)


def read_definitions(cur: Any, schemas: Sequence[str]) -> dict[str, str]:
    """Every base table's definition, "schema.table" -> one line per property, from
    information_schema (the same on MariaDB and MySQL): engine and collation, each column (name,
    type, nullability, default, extra, collation) and each index (name, unique, type, columns with
    prefix lengths). Nothing that differs between healthy nodes (AUTO_INCREMENT, statistics)."""
    marks = ", ".join(["%s"] * len(schemas))
    lines: dict[str, list[str]] = {}
    cur.execute(
        "SELECT table_schema, table_name, engine, table_collation FROM information_schema.tables "
        f"WHERE table_schema IN ({marks}) AND table_type = 'BASE TABLE'",
        tuple(schemas),
    )
    for sch, name, engine, coll in cur.fetchall():
        lines[f"{sch}.{name}"] = [f"table engine {_s(engine)} collation {_s(coll)}"]
    cur.execute(
        "SELECT table_schema, table_name, ordinal_position, column_name, column_type, is_nullable, "
        "column_default, extra, collation_name FROM information_schema.columns "
        f"WHERE table_schema IN ({marks}) ORDER BY table_schema, table_name, ordinal_position",
        tuple(schemas),
    )
    for sch, name, pos, col, ctype, null, default, extra, coll in cur.fetchall():
        t = f"{sch}.{name}"
        if t in lines:
            lines[t].append(
                f"column {_s(pos)} {_s(col)} {_s(ctype)} null={_s(null)} default={_s(default)} "
                f"extra={_s(extra)} collation={_s(coll)}"
            )
    cur.execute(
        "SELECT table_schema, table_name, index_name, non_unique, index_type, seq_in_index, column_name, "
        f"sub_part FROM information_schema.statistics WHERE table_schema IN ({marks}) "
        "ORDER BY table_schema, table_name, index_name, seq_in_index",
        tuple(schemas),
    )
    indexes: dict[tuple[str, str, str, str], list[str]] = {}
    for sch, name, index, non_unique, itype, _seq, col, sub in cur.fetchall():
        kind = "unique" if str(non_unique) == "0" else "non-unique"
        key = (f"{sch}.{name}", _s(index), kind, _s(itype))
        indexes.setdefault(key, []).append(_s(col) + (f"({sub})" if sub is not None else ""))
    for (t, index, kind, itype), cols in sorted(indexes.items()):
        if t in lines:
            lines[t].append(f"index {index} {kind} {itype} ({', '.join(cols)})")
    return {t: "\n".join(ls) for t, ls in lines.items()}


def positions_of(nodes: Sequence[DbNode]) -> tuple[str | None, ...]:
    """Each node's replication position (None when it does not answer)."""
    out = []
    for n in nodes:
        h = n.health()
        out.append(None if h is None else h.position)
    return tuple(out)


def collect_convergence(
    nodes: Sequence[DbNode],
    schemas: Sequence[str] = ("sbtest",),
    *,
    timeout: float = 60.0,
    poll: float = 0.5,
    retries: int = 2,
    clock: Clock | None = None,
    read: Callable[[DbNode, Sequence[str]], NodeState] = read_node_state,
    positions: Callable[[Sequence[DbNode]], tuple[object, ...]] = positions_of,
) -> ConvergenceSnapshot:
    """Wait (≤ `timeout`) until the replication position is equal on every node and unchanged over two
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
        prev: tuple[object, ...] | None = None
        pos: tuple[object, ...] = ()
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
