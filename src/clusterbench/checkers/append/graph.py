"""The dependency graph of a list-append history, compact enough for 100,000 transactions.

Vertices are the committed transactions (by position in the history). An edge a -> b carries a
bit set of why b follows a:

- **ww**: b appended the element right after a's in a key's version order;
- **wr**: b read a list whose last element a appended;
- **rw**: a read a state of a key and b appended the next element (a did not see b);
- **process**: a and b are consecutive ok transactions of one client session (a client is a
  new session after a transaction of unknown outcome, as in Jepsen);
- **realtime**: a was acknowledged before b began (only the transitive reduction is kept: an
  edge from each transaction to those that began after it ended and after nothing that ended
  after it).

Edges are collected in flat arrays, deduplicated with numpy, and strongly connected components
come from scipy; the cycle search reads the successors of the few vertices it visits.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from clusterbench.checkers.append.observe import Index
from clusterbench.history.ops import Outcome
from clusterbench.history.txn import Txn

OK = Outcome.OK  # compared with `is`: cheaper than Txn.ok in the hot loops

WW, WR, RW, PROCESS, REALTIME = 1, 2, 4, 8, 16
DATA = WW | WR | RW
NAMES = {WW: "ww", WR: "wr", RW: "rw", PROCESS: "process", REALTIME: "realtime"}
BITS = {v: k for k, v in NAMES.items()}


class EdgeList:
    """Edges as three flat arrays (a few bytes per edge); self-edges are dropped."""

    def __init__(self) -> None:
        self.src = array("i")
        self.dst = array("i")
        self.typ = array("B")

    def add(self, a: int, b: int, typ: int) -> None:
        if a != b:
            self.src.append(a)
            self.dst.append(b)
            self.typ.append(typ)

    def count(self, typ: int) -> int:
        return int(np.count_nonzero(np.frombuffer(self.typ, dtype=np.uint8) == typ)) if self.typ else 0


def ww_edges(ix: Index, edges: EdgeList) -> None:
    """Consecutive committed writers in each key's order, and from the last one to every
    committed append no read showed (placed after the longest read). Appends to a key that no
    read showed non-empty all follow its empty list, unordered among themselves."""
    for k, o in ix.order.items():
        w = ix.writer.get(k, {})
        prev = -1
        for v in o:
            cur = w.get(v)
            if cur is None or not ix.committed[cur]:
                continue
            if prev >= 0:
                edges.add(prev, cur, WW)
            prev = cur
        if prev >= 0:
            for u in ix.unread.get(k, ()):
                edges.add(prev, u, WW)


def process_edges(txns: Sequence[Txn], edges: EdgeList) -> None:
    """Each client's consecutive ok transactions, in order of start; a transaction of unknown
    outcome ends the client's session (the next one is a new process, as in Jepsen)."""
    by_client: dict[int, list[int]] = {}
    for i, t in enumerate(txns):
        by_client.setdefault(t.client, []).append(i)
    for members in by_client.values():
        members.sort(key=lambda i: (txns[i].t_start, i))
        last = -1
        for i in members:
            t = txns[i]
            if t.outcome is Outcome.UNKNOWN:
                last = -1
            elif t.outcome is OK:
                if last >= 0:
                    edges.add(last, i, PROCESS)
                last = i


def realtime_edges(txns: Sequence[Txn], committed: Sequence[bool], edges: EdgeList) -> None:
    """a -> b when a (ok) ended before b (committed) began, transitively reduced: a frontier of
    ok transactions that ended and have no successor that ended yet; each beginning links the
    frontier to it, each end removes what preceded it from the frontier. A transaction of
    unknown outcome never ends (it may have committed at any later time)."""
    events: list[tuple[float, int, int]] = []
    for i, t in enumerate(txns):
        if committed[i]:
            events.append((t.t_start, 0, i))  # at equal times a start comes first: not ordered
            if t.outcome is OK:
                events.append((t.t_end, 1, i))
    events.sort()
    frontier: dict[int, None] = {}
    before: dict[int, tuple[int, ...]] = {}
    for _, kind, i in events:
        if kind == 0:
            for a in frontier:
                edges.add(a, i, REALTIME)
            before[i] = tuple(frontier)
        else:
            for a in before.pop(i, ()):
                frontier.pop(a, None)
            frontier[i] = None


class Graph:
    """The deduplicated graph in CSR form; components per edge-type mask, cached."""

    def __init__(self, n: int, edges: EdgeList) -> None:
        self.n = n
        src = np.frombuffer(edges.src, dtype=np.int32).astype(np.int64)
        dst = np.frombuffer(edges.dst, dtype=np.int32).astype(np.int64)
        typ = np.frombuffer(edges.typ, dtype=np.uint8)
        if len(src):
            key = src * max(n, 1) + dst
            order = np.argsort(key, kind="stable")
            key, typ = key[order], typ[order]
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            self.masks = np.bitwise_or.reduceat(typ, starts).astype(np.uint8)
            key = key[starts]
            self.src, self.dst = (key // max(n, 1)).astype(np.int32), (key % max(n, 1)).astype(np.int32)
        else:
            self.masks = np.zeros(0, dtype=np.uint8)
            self.src = self.dst = np.zeros(0, dtype=np.int32)
        indptr = np.searchsorted(self.src, np.arange(n + 1))
        # Plain arrays for the search: slicing them gives Python ints fast, at 4-8 bytes each.
        self._indptr = array("q", indptr.astype(np.int64).tobytes())
        self._dst = array("i", self.dst.astype(np.int32).tobytes())
        self._bits = array("B", self.masks.tobytes())
        self._labels: dict[int, tuple[array[int], np.ndarray]] = {}

    def succ(self, v: int) -> zip[tuple[int, int]]:
        """(successor, type bits) of v."""
        a, b = self._indptr[v], self._indptr[v + 1]
        return zip(self._dst[a:b], self._bits[a:b], strict=True)

    def mask(self, a: int, b: int) -> int:
        for w, m in self.succ(a):
            if w == b:
                return m
        return 0

    def components(self, types: int) -> tuple[array[int], np.ndarray]:
        """(label per vertex, size per label) of the strongly connected components of the edges
        with any of these types. Labels are in reverse topological order: every edge between two
        components goes from a higher label to a lower one."""
        if types not in self._labels:
            self._labels[types] = self._components(types)
        return self._labels[types]

    def _components(self, types: int) -> tuple[array[int], np.ndarray]:
        keep = (self.masks & types) != 0
        s, d = self.src[keep], self.dst[keep]
        g = csr_matrix((np.ones(len(s), dtype=np.int8), (s, d)), shape=(self.n, self.n))
        count, labels = connected_components(g, directed=True, connection="strong")
        ls, ld = labels[s], labels[d]
        between = ls != ld
        if not np.all(ls[between] > ld[between]):
            labels = _reverse_topological(labels, count, ls[between], ld[between])
        sizes = np.bincount(labels, minlength=count)
        return array("i", labels.astype(np.int32).tobytes()), sizes

    def edges_of(self, types: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src, dst, mask) of the edges with any of these types."""
        keep = (self.masks & types) != 0
        return self.src[keep], self.dst[keep], self.masks[keep]


def _reverse_topological(labels: np.ndarray, count: int, ls: np.ndarray, ld: np.ndarray) -> np.ndarray:
    """Relabel components so that every edge goes from a higher label to a lower one (Kahn's
    algorithm on the condensation, sinks first)."""
    out_deg = np.bincount(ls, minlength=count)
    preds: list[list[int]] = [[] for _ in range(count)]
    for a, b in zip(ls.tolist(), ld.tolist(), strict=True):
        preds[b].append(a)
    remaining = out_deg.tolist()
    ready = [c for c in range(count) if remaining[c] == 0]
    new = [0] * count
    nxt = 0
    while ready:
        c = ready.pop()
        new[c] = nxt
        nxt += 1
        for p in preds[c]:
            remaining[p] -= 1
            if remaining[p] == 0:
                ready.append(p)
    return np.asarray(new, dtype=labels.dtype)[labels]
