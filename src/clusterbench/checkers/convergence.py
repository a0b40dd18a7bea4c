"""C2 convergence checker, Codership's way, for any engine: after the load stops, the replication
position (Galera's seqno, Group Replication's executed GTID set) must be equal and stable on every
node, a causal read must succeed on each, every node must be a ready member of the quorum in one
view of N members (same group id and view), and every table of the given schemas must have the
same row count and CHECKSUM TABLE, and the same definition (columns, indexes, engine: a digest of
what information_schema says), on every node. A DDL that failed on one node only (its disk was
full) leaves equal data but another definition there: divergence all the same.

The snapshot is collected by verify.convergence.collect_convergence; this module is pure."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict

NAME = "convergence"


@dataclass(frozen=True)
class NodeState:
    node: str
    answered: bool
    error: str | None = None  # status read failed, or the causal read / table reads failed
    local_state: str = ""
    cluster_status: str = ""
    ready: bool = False
    size: int = 0
    conf_id: int = -1
    state_uuid: str = ""
    last_committed: int = -1  # the engine's progress count (Galera: seqno)
    position: str = ""  # the exact replication position, equal on converged nodes
    # "schema.table" -> (row count, CHECKSUM TABLE value or None when the engine gives none)
    tables: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    # "schema.table" -> its definition, one line per property (see verify.convergence.read_definitions)
    definitions: dict[str, str] = field(default_factory=dict)


def digest(definition: str) -> str:
    return hashlib.sha256(definition.encode()).hexdigest()[:16]


def definition_diff(per_node: dict[str, str | None]) -> dict[str, list[str]]:
    """For each node whose definition of a table differs from the most common one: what it lacks
    and what it has in addition, line by line ('lacks index k_2 ...', 'has ...'); pure."""
    common, _ = Counter(v for v in per_node.values() if v is not None).most_common(1)[0]
    want = common.splitlines()
    out: dict[str, list[str]] = {}
    for node, text in sorted(per_node.items()):
        if text == common:
            continue
        if text is None:
            out[node] = ["lacks the table"]
            continue
        have = text.splitlines()
        out[node] = [f"lacks {ln}" for ln in want if ln not in have] + [
            f"has {ln}" for ln in have if ln not in want
        ]
    return out


@dataclass(frozen=True)
class ConvergenceSnapshot:
    nodes: list[NodeState]
    stable: bool  # the position was equal on all nodes for >= 2 consecutive polls
    polls: int = 0
    attempts: int = 1
    waited: float = 0.0
    note: str = ""


def _node_json(n: NodeState) -> dict[str, Any]:
    return {
        "answered": n.answered,
        "error": n.error,
        "state": n.local_state,
        "status": n.cluster_status,
        "ready": n.ready,
        "size": n.size,
        "conf_id": n.conf_id,
        "state_uuid": n.state_uuid,
        "last_committed": n.last_committed,
        "position": n.position,
        "tables": {t: {"rows": c, "checksum": s} for t, (c, s) in sorted(n.tables.items())},
        "definitions": {t: digest(d) for t, d in sorted(n.definitions.items())},
    }


def check_convergence(snap: ConvergenceSnapshot, expected_size: int) -> Verdict:
    nodes: Sequence[NodeState] = snap.nodes
    evidence: dict[str, Any] = {
        "stable": snap.stable,
        "polls": snap.polls,
        "attempts": snap.attempts,
        "waited_s": round(snap.waited, 2),
        "nodes": {n.node: _node_json(n) for n in nodes},
    }
    if snap.note:
        evidence["note"] = snap.note
    if not nodes:
        return Verdict(NAME, Result.UNKNOWN, "no node state collected", evidence)
    problems: list[str] = []
    answered = [n for n in nodes if n.answered]
    for n in answered:
        bad = []
        if not n.ready:
            bad.append(f"state {n.local_state or '?'}, not ready")
        if n.cluster_status != "Primary":
            bad.append(f"status {n.cluster_status or '?'}")
        if n.size != expected_size:
            bad.append(f"size {n.size} != {expected_size}")
        if bad:
            problems.append(f"{n.node}: {', '.join(bad)}")
    for attr, label in (("state_uuid", "group id"), ("conf_id", "view")):
        values = {getattr(n, attr) for n in answered}
        if len(values) > 1:
            problems.append(
                f"{label} differs: " + ", ".join(f"{n.node}={getattr(n, attr)}" for n in answered)
            )
    unreadable = [n for n in nodes if not n.answered or n.error]
    readable = [n for n in nodes if n.answered and not n.error]
    mismatched: dict[str, dict[str, Any]] = {}
    schema_mismatch: dict[str, dict[str, Any]] = {}
    if snap.stable and len(readable) > 1:
        names = sorted(set().union(*(n.tables for n in readable)))
        for t in names:
            per = {n.node: n.tables.get(t) for n in readable}
            if len({v for v in per.values()}) > 1:
                mismatched[t] = {
                    node: (None if v is None else {"rows": v[0], "checksum": v[1]}) for node, v in per.items()
                }
        if mismatched:
            problems.append(f"tables differ between nodes: {', '.join(mismatched)}")
        # definitions: only where the nodes read them (an older snapshot has none)
        defined = [n for n in readable if n.definitions]
        for t in sorted(set().union(*(n.definitions for n in defined))) if len(defined) > 1 else []:
            per_def = {n.node: n.definitions.get(t) for n in defined}
            if len(set(per_def.values())) > 1:
                diff = definition_diff(per_def)
                schema_mismatch[t] = {
                    "digests": {node: (None if d is None else digest(d)) for node, d in per_def.items()},
                    "differences": diff,
                }
        if schema_mismatch:
            problems.append(
                "table definitions differ between nodes: "
                + "; ".join(
                    f"{t} ({', '.join(f'{node} {x}' for node, xs in m['differences'].items() for x in xs)})"
                    for t, m in schema_mismatch.items()
                )
            )
        pos = {n.position for n in readable}
        if len(pos) > 1:
            problems.append(
                "replication position differs: " + ", ".join(f"{n.node}={n.position}" for n in readable)
            )
    evidence["mismatched_tables"] = mismatched
    evidence["mismatched_definitions"] = schema_mismatch
    if problems:
        return Verdict(NAME, Result.FAIL, "; ".join(problems), evidence)
    if unreadable:
        return Verdict(
            NAME,
            Result.UNKNOWN,
            "could not read " + ", ".join(f"{n.node} ({n.error or 'no answer'})" for n in unreadable),
            evidence,
        )
    if not snap.stable:
        return Verdict(
            NAME, Result.UNKNOWN, f"the replication position did not settle in {snap.waited:.1f} s", evidence
        )
    tables = len(readable[0].tables)
    return Verdict(
        NAME,
        Result.PASS,
        f"{len(readable)} nodes ready in one view with quorum of {expected_size}, at position "
        f"{readable[0].position}, {tables} tables identical"
        + (" in data and definition" if all(n.definitions for n in readable) else ""),
        evidence,
    )
