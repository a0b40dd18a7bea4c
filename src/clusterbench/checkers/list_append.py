"""List-append dependency-graph checker: isolation anomalies in a history of transactions that
append unique values to lists and read whole lists.

Definitions (Adya's generalized isolation levels; the list-append inference is the one Kingsbury
and Alvaro published for Elle). Only transactions that completed ok, and transactions of unknown
outcome whose appends some read observed (so they committed), take part:

- **Version order** of a key: its longest read. Every read of the key must be a prefix of it,
  otherwise the history has no single order (*incompatible-order*).
- **ww** T1 → T2: T2 appended the element right after T1's in a key's order.
- **wr** T1 → T2: the last element T2 read of a key was appended by T1.
- **rw** T1 → T2: T1 read a key and T2 appended the next element after what T1 saw.
- **G0** a cycle of ww edges only; **G1c** a cycle of ww and wr edges (at least one wr);
  **G-single** a cycle with exactly one rw edge; **G2-item** a cycle with two or more rw edges.
- **G1a** (aborted read): a read saw an element appended by a transaction that definitely failed.
- **G1b** (intermediate read): a read's last element was not the last one its writer appended to
  that key.
- **lost-update** (P4): T1 read a key, T2 appended the next element, and T1 appended to the key
  after T2 did: T1's append was computed from a state that no longer existed. Such a pair is also
  a G-single cycle. A G-single cycle T1 -rw-> T2 -> ... -> Tn -> T1 is marked `p4` when it returns
  to T1 by a ww edge: T1 missed T2, so also every transaction after T2 on the cycle, yet wrote
  after Tn: two concurrent writers of one key both committed (T1 wrote onto a row newer than its
  snapshot, as InnoDB's REPEATABLE READ allows and snapshot isolation's first-committer-wins rule
  forbids). One that returns by wr is a read skew (T1 saw Tn, which depends on T2, but not T2).
- **stale-read** (the two-transaction G-single-realtime): a read missed an element whose append
  was acknowledged before the read began.
- **internal**: a read inside one transaction that disagrees with the transaction's own earlier
  reads or appends of the key.
- **duplicate-elements** / **phantom-value**: a read with an element twice / an element nobody
  appended.
- **lost-append**: an acknowledged append missing from a key's final read (after heal) on a node.

Outcomes: a transaction of unknown outcome never makes the history fail by being absent, and its
reads are never used; a definite failure whose element is seen is G1a. Every cycle reported is the
shortest the search found through one edge, with its transactions as evidence.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from clusterbench.checkers.verdict import Result, Verdict
from clusterbench.history.ops import Outcome
from clusterbench.history.txn import Txn

NAME = "list-append"
EXAMPLES = 5
# Cycle search bounds: per class and strongly connected component, the number of distinct cycles
# kept and the edges tried, and a wall-clock budget for the whole search.
CYCLES_PER_SCC = 5
EDGES_PER_SCC = 400
SEARCH_BUDGET_S = 30.0

CYCLE_CLASSES = ("G0", "G1c", "G-single", "G2-item")
ANOMALIES = (
    "G0",
    "G1a",
    "G1b",
    "G1c",
    "G-single",
    "G2-item",
    "lost-update",
    "stale-read",
    "internal",
    "incompatible-order",
    "duplicate-elements",
    "phantom-value",
    "lost-append",
)

# Isolation levels, strongest first, and the strongest level each anomaly still allows.
LEVELS = (
    "strict-serializable",
    "serializable",
    "snapshot-isolation",
    "read-committed",
    "read-uncommitted",
    "none",
)
ALLOWED_UP_TO = {
    "stale-read": "serializable",
    "G2-item": "snapshot-isolation",
    "G-single": "read-committed",
    "lost-update": "read-committed",
    "internal": "read-committed",
    "G1a": "read-uncommitted",
    "G1b": "read-uncommitted",
    "G1c": "read-uncommitted",
    "G0": "none",
    "incompatible-order": "none",
    "duplicate-elements": "none",
    "phantom-value": "none",
}
PREFERENCE = {"ww": 0, "wr": 1, "rw": 2}


@dataclass
class Analysis:
    txns: int
    outcomes: dict[str, int]
    nodes: int
    edges: dict[str, int]
    keys: int
    anomalies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    search_truncated: bool = False

    def found(self) -> list[str]:
        return [a for a in ANOMALIES if self.anomalies.get(a)]

    def strongest_level(self) -> str:
        level = 0
        for a in self.found():
            cap = ALLOWED_UP_TO.get(a)
            if cap is not None:
                level = max(level, LEVELS.index(cap))
        return LEVELS[level]


@dataclass(frozen=True)
class _Read:
    txn: Txn
    key: int
    full: tuple[int, ...]
    external: tuple[int, ...] | None  # what the transaction saw of others' appends


class _Graph:
    """A dependency graph: an edge carries the (type, key) pairs that put it there."""

    def __init__(self) -> None:
        self.g: nx.DiGraph = nx.DiGraph()

    def add(self, a: int, b: int, typ: str, key: int) -> None:
        if a == b:
            return
        if self.g.has_edge(a, b):
            self.g[a][b]["why"].add((typ, key))
        else:
            self.g.add_edge(a, b, why={(typ, key)})

    def types(self, a: int, b: int) -> set[str]:
        return {t for t, _ in self.g[a][b]["why"]}

    def keys(self, a: int, b: int, typ: str) -> list[int]:
        return sorted(k for t, k in self.g[a][b]["why"] if t == typ)


def analyze(txns: Sequence[Txn]) -> Analysis:
    by_id = {t.id: t for t in txns}
    outcomes = {o: sum(1 for t in txns if str(t.outcome) == o) for o in ("ok", "fail", "unknown")}
    anomalies: dict[str, list[dict[str, Any]]] = {a: [] for a in ANOMALIES}

    writer: dict[tuple[int, int], int] = {}
    for t in txns:
        for v_key, v in ((m.key, m.value) for m in t.mops if m.f == "append"):
            writer[(v_key, int(v))] = t.id  # type: ignore[arg-type]

    reads = _reads(txns, anomalies)
    keys = sorted({r.key for r in reads} | {k for k, _ in writer})

    # Version order per key: the longest read; every read must be a prefix of it.
    order: dict[int, tuple[int, ...]] = {}
    for r in reads:
        if len(r.full) > len(order.get(r.key, ())):
            order[r.key] = r.full
    incompatible: set[tuple[int, int]] = set()  # (txn, key) whose read disagrees with the order
    for r in reads:
        o = order.get(r.key, ())
        if o[: len(r.full)] != r.full:
            incompatible.add((r.txn.id, r.key))
            anomalies["incompatible-order"].append(
                {
                    "key": r.key,
                    "read": list(r.full),
                    "longest_read": list(o),
                    "txn": r.txn.describe(),
                    "why": f"T{r.txn.id} read key {r.key} as {list(r.full)}, not a prefix of {list(o)}",
                }
            )

    # Which transactions committed: ok ones, and unknown ones whose appends were seen.
    seen_values = {(r.key, v) for r in reads for v in r.full}
    committed = {t.id for t in txns if t.ok}
    for (k, v), wid in writer.items():
        if (k, v) in seen_values and by_id[wid].outcome is Outcome.UNKNOWN:
            committed.add(wid)
    for k, v in sorted(seen_values):
        w = writer.get((k, v))
        if w is None:
            readers = [r.txn.id for r in reads if r.key == k and v in r.full]
            anomalies["phantom-value"].append(
                {"key": k, "value": v, "read_by": readers[:EXAMPLES],
                 "why": f"T{readers[0]} read {v} in key {k}, which no transaction appended"}
            )  # fmt: skip
        elif by_id[w].outcome is Outcome.FAIL:
            reader = next(r for r in reads if r.key == k and v in r.full)
            anomalies["G1a"].append(
                {"key": k, "value": v, "writer": by_id[w].describe(), "reader": reader.txn.describe(),
                 "why": f"T{reader.txn.id} read {v} in key {k}, appended by T{w}, which failed"}
            )  # fmt: skip

    graph = _Graph()
    for tid in committed:
        graph.g.add_node(tid)
    counts = {"ww": 0, "wr": 0, "rw": 0}
    # ww: consecutive elements of each key's order, between committed writers.
    for k, o in order.items():
        prev: int | None = None
        for v in o:
            cur = writer.get((k, v))
            if cur is None or cur not in committed:
                continue
            if prev is not None and prev != cur:
                graph.add(prev, cur, "ww", k)
                counts["ww"] += 1
            prev = cur
    # wr, rw, G1b and stale reads from every read that agrees with the order.
    for r in reads:
        if r.external is None or (r.txn.id, r.key) in incompatible:
            continue
        t, k, ext = r.txn, r.key, r.external
        o = order.get(k, ())
        if ext:
            w = writer.get((k, ext[-1]))
            if w is not None and w != t.id and w in committed:
                graph.add(w, t.id, "wr", k)
                counts["wr"] += 1
                own = by_id[w].appends(k)
                if ext[-1] in own and ext[-1] != own[-1]:
                    anomalies["G1b"].append(
                        {"key": k, "read": list(ext), "writer": by_id[w].describe(), "reader": t.describe(),
                         "why": f"T{t.id} read key {k} ending at {ext[-1]}, an intermediate append of T{w}"}
                    )  # fmt: skip
        if len(ext) < len(o):
            nxt = writer.get((k, o[len(ext)]))
            if nxt is not None and nxt != t.id and nxt in committed:
                graph.add(t.id, nxt, "rw", k)
                counts["rw"] += 1
                w_txn = by_id[nxt]
                if not t.final and w_txn.ok and w_txn.t_end < t.t_start:
                    anomalies["stale-read"].append(
                        {
                            "key": k,
                            "read": list(ext),
                            "missed": o[len(ext)],
                            "acknowledged_before_read_ms": round((t.t_start - w_txn.t_end) * 1000, 1),
                            "reader": t.describe(),
                            "writer": w_txn.describe(),
                            "why": f"T{t.id} ({t.process}) read key {k} without {o[len(ext)]}, appended by "
                            f"T{nxt} ({w_txn.process}) and acknowledged "
                            f"{(t.t_start - w_txn.t_end) * 1000:.1f} ms before the read began",
                        }
                    )
    p4 = _lost_updates(reads, order, writer, committed, incompatible, by_id)
    anomalies["lost-update"] = [e for _, e in sorted(p4.items())]
    anomalies["lost-append"] = _lost_appends(txns, writer)

    truncated = _cycles(graph, by_id, _concurrent_writers(graph, order, writer, by_id), anomalies)
    anomalies = {a: v for a, v in anomalies.items() if v}
    return Analysis(
        txns=len(txns),
        outcomes=outcomes,
        nodes=graph.g.number_of_nodes(),
        edges=counts,
        keys=len(keys),
        anomalies=anomalies,
        search_truncated=truncated,
    )


def _reads(txns: Sequence[Txn], anomalies: dict[str, list[dict[str, Any]]]) -> list[_Read]:
    """Every read of an ok transaction, with what it saw of other transactions' appends; internal
    inconsistencies and duplicate elements are recorded on the way."""
    out: list[_Read] = []
    for t in txns:
        if not t.ok:
            continue
        own: dict[int, list[int]] = {}
        seen: dict[int, tuple[int, ...]] = {}
        for m in t.mops:
            if m.f == "append":
                own.setdefault(m.key, []).append(int(m.value))  # type: ignore[arg-type]
                continue
            if not isinstance(m.value, tuple):
                continue
            full = m.value
            if len(set(full)) != len(full):
                anomalies["duplicate-elements"].append(
                    {"key": m.key, "read": list(full), "txn": t.describe(),
                     "why": f"T{t.id} read key {m.key} with an element twice"}
                )  # fmt: skip
            mine = own.get(m.key, [])
            external: tuple[int, ...] | None = full
            if mine:
                if list(full[len(full) - len(mine) :]) != mine or len(full) < len(mine):
                    anomalies["internal"].append(
                        {"key": m.key, "read": list(full), "own_appends": mine, "txn": t.describe(),
                         "why": "the read does not end with the transaction's own appends"}
                    )  # fmt: skip
                    external = None
                else:
                    external = full[: len(full) - len(mine)]
            if external is not None and m.key in seen and seen[m.key] != external:
                anomalies["internal"].append(
                    {"key": m.key, "read": list(full), "earlier": list(seen[m.key]), "txn": t.describe(),
                     "why": "two reads of the key in one transaction saw different states"}
                )  # fmt: skip
            if external is not None:
                seen.setdefault(m.key, external)
            out.append(_Read(t, m.key, full, external))
    return out


def _lost_updates(
    reads: Iterable[_Read],
    order: dict[int, tuple[int, ...]],
    writer: dict[tuple[int, int], int],
    committed: set[int],
    incompatible: set[tuple[int, int]],
    by_id: dict[int, Txn],
) -> dict[tuple[int, int], dict[str, Any]]:
    """P4 per (reader, key): it read the key, another transaction appended the next element, and
    the reader's own append comes after that one in the key's order."""
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for r in reads:
        t, k = r.txn, r.key
        if r.external is None or (t.id, k) in incompatible or (t.id, k) in out:
            continue
        o = order.get(k, ())
        mine = [o.index(v) for v in t.appends(k) if v in o]
        p = len(r.external)
        if not mine or p >= len(o):
            continue
        nxt = writer.get((k, o[p]))
        if nxt is None or nxt == t.id or nxt not in committed or min(mine) <= p:
            continue
        out[(t.id, k)] = {
            "key": k,
            "read": list(r.external),
            "overwritten_by": by_id[nxt].describe(),
            "reader": t.describe(),
            "why": f"T{t.id} read key {k} up to {r.external[-1] if r.external else 'empty'}, T{nxt} appended "
            f"{o[p]} next, and T{t.id} appended after it anyway",
        }
    return out


def _lost_appends(txns: Sequence[Txn], writer: dict[tuple[int, int], int]) -> list[dict[str, Any]]:
    """Acknowledged appends missing from a key's final read on some node."""
    finals = [t for t in txns if t.final and t.ok]
    if not finals:
        return []
    final_lists: list[tuple[Txn, dict[int, tuple[int, ...]]]] = [
        (f, {m.key: m.value for m in f.mops if m.f == "r" and isinstance(m.value, tuple)}) for f in finals
    ]
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for t in txns:
        if not t.ok or t.final:
            continue
        for m in t.mops:
            if m.f != "append":
                continue
            v = int(m.value)  # type: ignore[arg-type]
            missing_on = [f.process for f, lists in final_lists if m.key in lists and v not in lists[m.key]]
            if missing_on:
                out[(m.key, v)] = {
                    "key": m.key,
                    "value": v,
                    "missing_on": missing_on,
                    "txn": t.describe(),
                    "why": f"T{t.id} appended {v} to key {m.key} (acknowledged); the final read on "
                    f"{', '.join(missing_on)} lacks it",
                }
    return [e for _, e in sorted(out.items())]


# ---- cycles ----------------------------------------------------------------------------------


def _step_label(graph: _Graph, a: int, b: int, allowed: set[str]) -> tuple[str, list[int]]:
    typ = min((t for t in graph.types(a, b) if t in allowed), key=PREFERENCE.__getitem__)
    return typ, graph.keys(a, b, typ)


def _canonical(cycle: list[int]) -> tuple[int, ...]:
    i = cycle.index(min(cycle))
    return tuple(cycle[i:] + cycle[:i])


def _two_rw_path(graph: _Graph, nodes: set[int], src: int, dst: int) -> list[tuple[int, str]] | None:
    """A shortest simple path src → dst inside `nodes` that uses at least one rw edge (BFS over
    (node, used rw) states, never revisiting a node of the path being extended). Returns
    [(node, type of the edge into it), ...] starting after src."""
    start = (src, False)
    prev: dict[tuple[int, bool], tuple[tuple[int, bool], str] | None] = {start: None}
    q = deque([start])
    goal = (dst, True)

    def on_path(state: tuple[int, bool]) -> set[int]:
        out = set()
        cur: tuple[int, bool] | None = state
        while cur is not None:
            out.add(cur[0])
            link = prev[cur]
            cur = None if link is None else link[0]
        return out

    while q:
        state = q.popleft()
        if state == goal:
            break
        node, used = state
        if node == dst:
            continue  # reached without an rw edge: the cycle may not pass through its start twice
        visited = on_path(state)
        for nb in graph.g.successors(node):
            if nb not in nodes or nb in visited:
                continue
            # An edge that is also ww or wr counts as that (the weaker anomaly); only an edge that is
            # nothing but rw adds an anti-dependency to the cycle.
            types = graph.types(node, nb)
            if types - {"rw"}:
                nxt, typ = (nb, used), min(types - {"rw"}, key=PREFERENCE.__getitem__)
            else:
                nxt, typ = (nb, True), "rw"
            if nxt not in prev:
                prev[nxt] = (state, typ)
                q.append(nxt)
    if goal not in prev:
        return None
    path: list[tuple[int, str]] = []
    cur = goal
    while prev[cur] is not None:
        p, typ = prev[cur]  # type: ignore[misc]
        path.append((cur[0], typ))
        cur = p
    return list(reversed(path))


def _concurrent_writers(
    graph: _Graph,
    order: dict[int, tuple[int, ...]],
    writer: dict[tuple[int, int], int],
    by_id: dict[int, Txn],
) -> set[tuple[int, int]]:
    """The rw edges a → b where a also wrote after b: some key both appended to has b's element
    before a's in its order, although a's reads missed b. Then a and b were concurrent writers of
    one key and both committed: a lost update in the wider sense (P4; a's write went onto a row
    newer than its snapshot, as InnoDB's REPEATABLE READ allows and snapshot isolation's
    first-committer-wins rule forbids). A G-single cycle through such an edge is marked `p4`."""
    pos: dict[tuple[int, int], list[int]] = {}  # (txn, key) -> positions of its elements
    for k, o in order.items():
        for i, v in enumerate(o):
            w = writer.get((k, v))
            if w is not None:
                pos.setdefault((w, k), []).append(i)
    out = set()
    for a, b in graph.g.edges():
        if "rw" not in graph.types(a, b):
            continue
        for k in {m.key for m in by_id[a].mops if m.f == "append"}:
            pa, pb = pos.get((a, k)), pos.get((b, k))
            if pa and pb and min(pb) < max(pa):
                out.add((a, b))
                break
    return out


def _cycles(
    graph: _Graph,
    by_id: dict[int, Txn],
    lost_update_pairs: set[tuple[int, int]],
    anomalies: dict[str, list[dict[str, Any]]],
) -> bool:
    """Find G0, G1c, G-single and G2-item cycles; returns True when a bound cut the search short."""
    deadline = time.monotonic() + SEARCH_BUDGET_S
    truncated = False
    seen: set[tuple[int, ...]] = set()
    g = graph.g
    for scc in sorted(nx.strongly_connected_components(g), key=min):
        if len(scc) < 2:
            continue
        sub = g.subgraph(scc)
        views = {
            "ww": nx.subgraph_view(sub, filter_edge=lambda a, b: "ww" in graph.types(a, b)),
            "ww+wr": nx.subgraph_view(sub, filter_edge=lambda a, b: bool(graph.types(a, b) & {"ww", "wr"})),
        }
        found_any = False
        # The first edge of a cycle is of the class's defining type and of no weaker one (an edge
        # that is ww as well as wr makes a G0 cycle, not G1c; one that is also ww or wr, no G-single).
        for cls, first, weaker, view, allowed in (
            ("G0", "ww", set(), "ww", {"ww"}),
            ("G1c", "wr", {"ww"}, "ww+wr", {"ww", "wr"}),
            ("G-single", "rw", {"ww", "wr"}, "ww+wr", {"ww", "wr"}),
            ("G2-item", "rw", {"ww", "wr"}, None, {"ww", "wr", "rw"}),
        ):
            kept = tried = 0
            for a, b in sorted(sub.edges()):
                types = graph.types(a, b)
                if first not in types or types & weaker:
                    continue
                if kept >= CYCLES_PER_SCC or tried >= EDGES_PER_SCC or time.monotonic() > deadline:
                    truncated = True
                    break
                tried += 1
                steps: list[tuple[int, int, str, list[int]]]
                if view is not None:
                    try:
                        path = nx.shortest_path(views[view], b, a)
                    except nx.NetworkXNoPath:
                        continue
                    steps = [(a, b, first, graph.keys(a, b, first))]
                    for x, y in zip(path, path[1:], strict=False):
                        typ, ks = _step_label(graph, x, y, allowed)
                        steps.append((x, y, typ, ks))
                else:
                    p2 = _two_rw_path(graph, scc, b, a)
                    if p2 is None:
                        continue
                    steps = [(a, b, "rw", graph.keys(a, b, "rw"))]
                    x = b
                    for y, typ in p2:
                        steps.append((x, y, typ, graph.keys(x, y, typ)))
                        x = y
                cycle = [s[0] for s in steps]
                canon = _canonical(cycle)
                if canon in seen:
                    continue
                seen.add(canon)
                kept += 1
                found_any = True
                entry: dict[str, Any] = {
                    "length": len(cycle),
                    "cycle": [f"T{x} -{typ}({','.join(map(str, ks))})-> T{y}" for x, y, typ, ks in steps],
                    "txns": [by_id[x].describe() for x in cycle],
                }
                if cls == "G-single":
                    # a missed b, and everything after b on the cycle depends on b, so it is not in
                    # a's snapshot either. When the cycle returns to a by a ww edge, a wrote onto
                    # a row newer than its snapshot: concurrent writers that both committed, a
                    # lost update in the wider sense. When it returns by wr, a read a state that
                    # depends on b but missed b: a read skew, which no lost update explains.
                    last = steps[-1]
                    entry["p4"] = (a, b) in lost_update_pairs or "ww" in graph.types(last[0], last[1])
                anomalies[cls].append(entry)
        if not found_any:
            # A strongly connected component always holds a cycle: never leave it unreported.
            a, b = min(sub.edges())
            path = nx.shortest_path(sub, b, a)
            pairs = [(a, b), *zip(path, path[1:], strict=False)]
            steps = [(x, y, *_step_label(graph, x, y, {"ww", "wr", "rw"})) for x, y in pairs]
            rw = sum(1 for s in steps if s[2] == "rw")
            wr = sum(1 for s in steps if s[2] == "wr")
            cls = "G2-item" if rw > 1 else "G-single" if rw == 1 else "G1c" if wr else "G0"
            anomalies[cls].append(
                {
                    "length": len(steps),
                    "cycle": [f"T{x} -{t}({','.join(map(str, ks))})-> T{y}" for x, y, t, ks in steps],
                    "txns": [by_id[s[0]].describe() for s in steps],
                    "note": "found after the search bound",
                }
            )
            truncated = True
    for cls in CYCLE_CLASSES:
        anomalies[cls].sort(key=lambda e: e["length"])
    return truncated


# ---- the verdict -----------------------------------------------------------------------------


def documented_found(analysis: Analysis, documented: Iterable[str]) -> tuple[list[str], list[str]]:
    """(documented limitations seen, promises broken): the anomaly names found, split by whether
    the engine documents them as possible in the session the workload used. A G-single cycle
    counts as documented when every one found is a lost update (P4) and lost updates are."""
    doc = set(documented)
    seen_doc: list[str] = []
    broken: list[str] = []
    for a in analysis.found():
        if a == "G-single":
            ok = "lost-update" in doc and all(e.get("p4") for e in analysis.anomalies[a])
            (seen_doc if ok or a in doc else broken).append(a)
        else:
            (seen_doc if a in doc else broken).append(a)
    return seen_doc, broken


def _summary(name: str, found: list[dict[str, Any]]) -> dict[str, Any]:
    """Count and examples of one anomaly; G-single cycles not explained by a lost update first."""
    if name != "G-single":
        return {"count": len(found), "examples": found[:EXAMPLES]}
    ordered = sorted(found, key=lambda e: (bool(e.get("p4")), e["length"]))
    return {"count": len(found), "p4": sum(1 for e in found if e.get("p4")), "examples": ordered[:EXAMPLES]}


def check_list_append(
    txns: Sequence[Txn],
    *,
    documented: Iterable[str] = (),
    label: str = "",
) -> Verdict:
    """`documented`: anomaly names the engine documents as possible for this workload's session and
    reads (e.g. lost-update without FOR UPDATE, stale-read in the default session)."""
    name = f"{NAME}:{label}" if label else NAME
    a = analyze(txns)
    seen_doc, broken = documented_found(a, documented)
    evidence: dict[str, Any] = {
        "txns": a.txns,
        "outcomes": a.outcomes,
        "graph": {"txns": a.nodes, "edges": a.edges},
        "keys": a.keys,
        "strongest_level": a.strongest_level(),
        "anomalies": {k: _summary(k, v) for k, v in a.anomalies.items()},
        "documented_seen": seen_doc,
        "broken": broken,
        "documented": sorted(set(documented)),
        "search_truncated": a.search_truncated,
    }
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
    if a.outcomes["ok"] == 0 or ok_reads == 0:
        return Verdict(
            name, Result.UNKNOWN, f"no ok transaction with a read among {a.txns}: nothing to check", evidence
        )
    return Verdict(
        name,
        Result.PASS,
        f"{a.outcomes['ok']} ok transactions ({a.outcomes['fail']} failed, {a.outcomes['unknown']} unknown), "
        f"{sum(a.edges.values())} dependencies, no anomaly: consistent with {a.strongest_level()}",
        evidence,
    )
