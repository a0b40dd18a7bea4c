"""List-append dependency-graph checker: isolation anomalies in a history of transactions that
append unique values to lists and read whole lists (Elle's list-append test, checked by our own
code; `checkers.append` holds the parts, docs/checkers.md the definitions).

Only transactions that committed take part in the graph: ok ones, and ones of unknown outcome
whose appends some read showed. A transaction of unknown outcome never makes the history fail by
being absent, and its reads are never used; a definite failure whose element is read is G1a.

Anomalies, each defined in the module that finds it:

- version order and single transactions or reads (`append.observe`, `append.reads`): G1a, G1b,
  dirty-update, internal, future-read, incompatible-order, duplicate-elements, phantom-value,
  lost-update (Elle's definition), stale-read, lost-append; duplicate-appends is an input
  error: the history cannot be checked;
- cycles of the dependency graph (`append.classes`, `append.cycles`): G0, G1c, G-single,
  G-nonadjacent, G2-item, each also as a -process and a -realtime variant.

The strongest consistency models the history is consistent with come from `append.models`,
what the engine's documentation covers from `append.documented`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.checkers.append import documented as docmod
from clusterbench.checkers.append import explain, models
from clusterbench.checkers.append.classes import ORDER
from clusterbench.checkers.append.cycles import Cycle, Search
from clusterbench.checkers.append.graph import NAMES, EdgeList, Graph, process_edges, realtime_edges, ww_edges
from clusterbench.checkers.append.observe import (
    Index,
    build_index,
    dirty_updates,
    future_reads,
    internal_reads,
    lost_appends,
    lost_updates,
)
from clusterbench.checkers.append.reads import ReadPass
from clusterbench.checkers.verdict import Result, Verdict, pass_unless
from clusterbench.history.txn import Txn

NAME = "list-append"
EXAMPLES = 5
CYCLE_CLASSES = ORDER
INPUT_ERRORS = ("duplicate-appends",)
ANOMALIES = (
    *ORDER[:5],
    "G1a",
    "G1b",
    "dirty-update",
    "lost-update",
    "stale-read",
    "internal",
    "future-read",
    "incompatible-order",
    "duplicate-elements",
    "phantom-value",
    "lost-append",
    *ORDER[5:],
    *INPUT_ERRORS,
)
LOST_UPDATE_DEFINITION = (
    "lost-update: Elle's definition, two or more committed transactions read the same version of a "
    "key and then appended to it; Berenson's P4 (the overwriting transaction need not have read the "
    "key) is a G-single cycle marked p4"
)


@dataclass
class Analysis:
    txns: int
    outcomes: dict[str, int]
    nodes: int
    edges: dict[str, int]
    keys: int
    anomalies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    search_truncated: bool = False
    not_searched: dict[str, str] = field(default_factory=dict)

    def found(self) -> list[str]:
        return [a for a in ANOMALIES if self.anomalies.get(a)]

    @property
    def refused(self) -> bool:
        return any(self.anomalies.get(a) for a in INPUT_ERRORS)

    @property
    def g_single_all_p4(self) -> bool:
        return all(e.get("p4") for e in self.anomalies.get("G-single", []))

    def strongest_models(self) -> list[str]:
        """Empty when even read uncommitted is ruled out, or the history could not be checked."""
        return [] if self.refused else models.strongest(self.found())

    def strongest_level(self) -> str:
        return "not checked" if self.refused else models.describe(self.found())


def analyze(txns: Sequence[Txn], documented: Iterable[str] = ()) -> Analysis:
    """`documented` only decides which process and realtime variants need no search (a class
    already found that is a promise broken, or documents them, implies them)."""
    found: dict[str, list[dict[str, Any]]] = {a: [] for a in ANOMALIES}
    outcomes = {o: sum(1 for t in txns if str(t.outcome) == o) for o in ("ok", "fail", "unknown")}
    ix = build_index(txns, found)
    keys = len(set(ix.writer) | {m.key for t in txns for m in t.mops})
    if ix.duplicate_appends:  # nothing else can be inferred: report only why
        return Analysis(len(txns), outcomes, 0, {}, keys, {"duplicate-appends": ix.duplicate_appends})
    internal_reads(ix, found)
    future_reads(ix, found)
    lost_updates(ix, found)
    dirty_updates(ix, found)
    lost_appends(ix, found)
    edges = EdgeList()
    ReadPass(ix, edges, found).run()
    ww_edges(ix, edges)
    process_edges(txns, edges)
    realtime_edges(txns, ix.committed, edges)
    counts = {name: edges.count(bit) for bit, name in NAMES.items()}
    graph = Graph(len(txns), edges)
    del edges
    p4 = _P4(ix)
    doc = set(documented)

    def skip(name: str, so_far: Any) -> str | None:
        now = [a for a, v in found.items() if v] + [c for c, v in so_far.cycles.items() if v]
        return docmod.needless(name, now, doc, p4.all(so_far.cycles))

    cf = Search(graph, skip).run()
    p4.all(cf.cycles)
    for name in ORDER:
        ranked = sorted(
            cf.cycles.get(name, []), key=lambda c: (name == "G-single" and p4.of[tuple(c[0])], len(c[0]))
        )
        found[name] = [_entry(ix, name, c, i < EXAMPLES, p4.of) for i, c in enumerate(ranked)]
    for name, (nodes, _) in cf.fallback:
        ids = [ix.txns[x].id for x in nodes]
        for e in found[name][:EXAMPLES]:  # only the examples are shown, and carry their ids
            if e["txn_ids"] == ids:
                e["note"] = "found after the search bound"
    return Analysis(
        txns=len(txns),
        outcomes=outcomes,
        nodes=sum(ix.committed),
        edges=counts,
        keys=keys,
        anomalies={a: v for a, v in found.items() if v},
        search_truncated=cf.truncated,
        not_searched=cf.not_searched,
    )


class _P4:
    """Whether each G-single cycle found is Berenson's P4, worked out once per cycle."""

    def __init__(self, ix: Index) -> None:
        self.ix = ix
        self.of: dict[tuple[int, ...], bool] = {}
        self.done = 0
        self.every = True

    def all(self, cycles: dict[str, list[Cycle]]) -> bool:
        found = cycles.get("G-single", [])
        for nodes, labels in found[self.done :]:
            self.of[tuple(nodes)] = is_p4 = explain.p4(self.ix, nodes, labels)
            self.every = self.every and is_p4
        self.done = len(found)
        return self.every


def _entry(ix: Index, name: str, c: Cycle, full: bool, p4_of: dict[tuple[int, ...], bool]) -> dict[str, Any]:
    """A cycle's evidence: in full (each edge explained) for the examples; the others are only
    counted (_summary), so they keep just what the counts read (a G-single's p4)."""
    nodes, labels = c
    e: dict[str, Any] = {}
    if full:
        e = explain.cycle(ix, nodes, labels)
        e["txn_ids"] = [ix.txns[x].id for x in nodes]
    if name == "G-single":
        e["p4"] = p4_of[tuple(nodes)]
    return e


# ---- the verdict -----------------------------------------------------------------------------


def documented_found(analysis: Analysis, documented: Iterable[str]) -> tuple[list[str], list[str]]:
    """(documented limitations seen, promises broken): the anomaly names found, split by what the
    engine documents as possible in the session the workload used (see append.documented)."""
    found = [a for a in analysis.found() if a not in INPUT_ERRORS]
    return docmod.split(found, documented, analysis.g_single_all_p4)


def _summary(name: str, found: list[dict[str, Any]]) -> dict[str, Any]:
    """Count and examples of one anomaly; G-single cycles not explained by a lost update first."""
    out: dict[str, Any] = {"count": len(found), "examples": found[:EXAMPLES]}
    if name == "G-single":
        out["p4"] = sum(1 for e in found if e.get("p4"))
    if name == "lost-update":
        out["definition"] = LOST_UPDATE_DEFINITION
    return out


def check_list_append(
    txns: Sequence[Txn],
    *,
    documented: Iterable[str] = (),
    label: str = "",
) -> Verdict:
    """`documented`: anomaly names the engine documents as possible for this workload's session and
    reads (e.g. lost-update without FOR UPDATE, stale-read in the default session)."""
    name = f"{NAME}:{label}" if label else NAME
    doc = sorted(set(documented))
    a = analyze(txns, doc)
    seen_doc, broken = documented_found(a, doc)
    evidence: dict[str, Any] = {
        "txns": a.txns,
        "outcomes": a.outcomes,
        "graph": {"txns": a.nodes, "edges": a.edges},
        "keys": a.keys,
        "strongest_level": a.strongest_level(),
        "strongest_models": a.strongest_models(),
        "not": [] if a.refused else models.weakest_ruled_out(a.found()),
        "anomalies": {k: _summary(k, v) for k, v in a.anomalies.items()},
        "documented_seen": seen_doc,
        "broken": broken,
        "documented": doc,
        "search_truncated": a.search_truncated,
        "not_searched": a.not_searched,
    }
    if a.refused:
        why = a.anomalies["duplicate-appends"][0]["why"]
        return Verdict(name, Result.UNKNOWN, f"cannot check this history: {why}", evidence)
    found = a.found()
    if found:
        counts = ", ".join(f"{k} x{len(a.anomalies[k])}" for k in found)
        parts = [counts, f"consistent with {a.strongest_level()} at best"]
        if broken:
            parts.append(f"promise broken: {', '.join(broken)}")
        if seen_doc:
            parts.append(f"documented limitation seen: {', '.join(seen_doc)}")
        return Verdict(name, Result.FAIL, "; ".join(parts), evidence, documented_limitation=not broken)
    ok_reads = sum(1 for t in txns if t.ok and any(m.f == "r" for m in t.mops))
    nothing = a.outcomes["ok"] == 0 or ok_reads == 0
    doubts = [(nothing, f"no ok transaction with a read among {a.txns}: nothing to check")]
    passed = (
        f"{a.outcomes['ok']} ok transactions ({a.outcomes['fail']} failed, {a.outcomes['unknown']} unknown), "
        f"{sum(a.edges.values())} dependencies, no anomaly: consistent with {a.strongest_level()}"
    )
    return pass_unless(name, doubts, passed, evidence)
