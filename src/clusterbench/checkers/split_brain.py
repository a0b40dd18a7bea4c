"""C6 split-brain check over monitor samples.

At every sample time, each node's latest answer (no older than `stale` seconds) is taken. The
nodes that claim Primary are grouped by view (cluster_state_uuid, conf_id). Two views are the
same component in transition when they share the state uuid and their memberships intersect (or
a membership is unknown): a node that has not yet noticed a departure still reports the old,
larger view. Views with disjoint memberships, or with different state uuids, are distinct Primary
components: a split brain. Independently, the sizes of the distinct components must sum to ≤ N.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict

NAME = "split-brain"
EXAMPLES = 20


@dataclass(frozen=True)
class MonitorSample:
    t: float  # trial time (monotonic seconds since the trial start)
    wall: float
    node: str
    answered: bool
    cluster_status: str = ""
    size: int = 0
    conf_id: int = -1
    state_uuid: str = ""
    local_state: str = ""
    ready: bool = False
    last_committed: int = -1
    members: str = ""  # wsrep_incoming_addresses: comma-separated client addresses of the view
    # For failover figures (checkers/failover.py); not stored with the samples.
    writable: bool = False
    role: str = ""

    @property
    def primary(self) -> bool:
        return self.answered and self.cluster_status == "Primary"

    def member_set(self) -> frozenset[str] | None:
        """None when unknown (empty, or Galera's 'AUTO' placeholders for a member's address)."""
        parts = [p.strip() for p in self.members.split(",") if p.strip()]
        if not parts or any(p.upper().startswith("AUTO") for p in parts):
            return None
        return frozenset(parts)

    def to_row(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_row(row: dict[str, Any]) -> MonitorSample:
        d = {k: row[k] for k in MonitorSample.__dataclass_fields__ if k in row}
        d["answered"] = bool(d.get("answered"))
        d["ready"] = bool(d.get("ready"))
        return MonitorSample(**d)


@dataclass(frozen=True)
class _View:
    uuid: str
    conf_id: int
    size: int
    members: frozenset[str] | None
    nodes: tuple[str, ...]


def _views(latest: dict[str, MonitorSample]) -> list[_View]:
    grouped: dict[tuple[str, int], list[MonitorSample]] = {}
    for s in latest.values():
        if s.primary:
            grouped.setdefault((s.state_uuid, s.conf_id), []).append(s)
    out = []
    for (uuid, conf), ss in sorted(grouped.items()):
        members = next((m for m in (s.member_set() for s in ss) if m is not None), None)
        out.append(_View(uuid, conf, max(s.size for s in ss), members, tuple(sorted(s.node for s in ss))))
    return out


def _related(a: _View, b: _View) -> bool:
    if a.uuid != b.uuid:
        return False
    if a.members is None or b.members is None:
        return True
    return bool(a.members & b.members)


def components(views: list[_View]) -> list[list[_View]]:
    """Connected components of views under `_related` (union-find over a handful of views)."""
    parent = list(range(len(views)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(views)):
        for j in range(i + 1, len(views)):
            if _related(views[i], views[j]):
                parent[find(i)] = find(j)
    groups: dict[int, list[_View]] = {}
    for i, v in enumerate(views):
        groups.setdefault(find(i), []).append(v)
    return list(groups.values())


def check_split_brain(samples: Sequence[MonitorSample], n_nodes: int, *, stale: float = 3.0) -> Verdict:
    ordered = sorted(samples, key=lambda s: (s.t, s.node))
    answered = [s for s in ordered if s.answered]
    nodes_seen = sorted({s.node for s in ordered})
    evidence: dict[str, Any] = {
        "samples": len(ordered),
        "answered": len(answered),
        "nodes": nodes_seen,
        "max_primary_components": 0,
        "violations": {"count": 0, "examples": []},
    }
    if not answered:
        return Verdict(NAME, Result.UNKNOWN, "no monitor sample answered", evidence)
    latest: dict[str, MonitorSample] = {}
    violations: list[dict[str, Any]] = []
    max_components = 0
    views_seen: set[tuple[str, int, int]] = set()
    for s in ordered:
        latest[s.node] = s
        current = {n: x for n, x in latest.items() if s.t - x.t <= stale}
        views = _views(current)
        views_seen |= {(v.uuid, v.conf_id, v.size) for v in views}
        comps = components(views)
        max_components = max(max_components, len(comps))
        total = sum(max(v.size for v in c) for c in comps)
        if len(comps) > 1 or total > n_nodes:
            violations.append(
                {
                    "t": round(s.t, 3),
                    "components": [
                        [{"uuid": v.uuid, "conf_id": v.conf_id, "size": v.size, "nodes": list(v.nodes),
                          "members": sorted(v.members) if v.members else None} for v in c]
                        for c in comps
                    ],
                    "size_sum": total,
                }
            )  # fmt: skip
    evidence["max_primary_components"] = max_components
    evidence["primary_views"] = [
        {"uuid": u, "conf_id": c, "size": z} for u, c, z in sorted(views_seen, key=lambda v: (v[1], v[0]))
    ]
    evidence["violations"] = {"count": len(violations), "examples": violations[:EXAMPLES]}
    if violations:
        first = violations[0]
        return Verdict(
            NAME,
            Result.FAIL,
            f"{len(first['components'])} components with quorum (sizes sum {first['size_sum']} of {n_nodes}) "
            f"at t={first['t']} s; {len(violations)} samples in violation",
            evidence,
        )
    return Verdict(
        NAME,
        Result.PASS,
        f"at most one component with quorum in {len(ordered)} samples of {len(nodes_seen)} nodes",
        evidence,
    )
