"""One pass over the reads of ok transactions: the wr and rw edges they imply, and the anomalies
a single read shows.

- **wr** writer -> reader: the read's last element (unless the reader appended it itself).
- **rw** reader -> writer: the first committed append after what the read saw; when the read
  saw the whole observed order, every committed append no read showed (they came after it).
- **G1a** (aborted read): the read shows an element of a transaction that definitely failed.
- **G1b** (intermediate read): its last element is not its writer's last append to the key.
- **phantom-value**: it shows an element nobody appended.
- **incompatible-order**: it is not a prefix of the key's longest read (no single order of
  appends explains both); such a read gives no edge.
- **stale-read**: it missed an append that was acknowledged before the reading transaction
  began (the two-transaction G-single-realtime); final reads are checked by lost-append.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterbench.checkers.append.graph import RW, WR, EdgeList
from clusterbench.checkers.append.observe import Found, Index, dedup, desc, tname
from clusterbench.history.ops import Outcome
from clusterbench.history.txn import Txn

OK = Outcome.OK  # compared with `is`: cheaper than Txn.ok in the hot loops

NEVER = (float("inf"), -1)


@dataclass
class _Key:
    """Per key: the next committed writer at or after each position, the earliest acknowledged
    append at or after each position (with its writer), and where failed and phantom elements
    stand in the order."""

    next_writer: list[int]
    first_ack: list[tuple[float, int]]
    failed: list[int]
    phantom: list[int]


def _key_facts(ix: Index, k: int) -> _Key:
    o = ix.order.get(k, ())
    w = ix.writer.get(k, {})
    n = len(o)
    nxt = [-1] * (n + 1)
    ack = [NEVER] * (n + 1)
    for u in ix.unread.get(k, ()):
        if ix.txns[u].outcome is OK:
            ack[n] = min(ack[n], (ix.txns[u].t_end, u))
    failed, phantom = [], []
    for p in range(n - 1, -1, -1):
        i = w.get(o[p])
        nxt[p] = nxt[p + 1]
        ack[p] = ack[p + 1]
        if i is None:
            phantom.append(p)
            continue
        t = ix.txns[i]
        if t.outcome is Outcome.FAIL:
            failed.append(p)
        if ix.committed[i]:
            nxt[p] = i
        if t.outcome is OK:
            ack[p] = min(ack[p], (t.t_end, i))
    return _Key(nxt, ack, sorted(failed), sorted(phantom))


class ReadPass:
    def __init__(self, ix: Index, edges: EdgeList, found: Found) -> None:
        self.ix, self.edges, self.found = ix, edges, found
        self.keys: dict[int, _Key] = {}
        self.reported: set[tuple[str, int, int]] = set()

    def run(self) -> None:
        for i, t in enumerate(self.ix.txns):
            if t.outcome is not OK:
                continue
            for m in t.mops:
                if m.f == "r" and isinstance(m.value, tuple):
                    self.read(i, t, m.key, m.value)

    def read(self, i: int, t: Txn, k: int, r: tuple[int, ...]) -> None:
        ix = self.ix
        if len(set(r)) != len(r):
            r = dedup(r)
        o = ix.order.get(k, ())
        n = len(r)
        if r and r[-1] in ix.intermediate.get(k, ()):
            self._g1b(i, t, k, r)
        if not (r is o or (n <= len(o) and o[:n] == r)):
            self._incompatible(t, k, r, o)
            return
        facts = self.keys.get(k)
        if facts is None:
            facts = self.keys[k] = _key_facts(ix, k)
        for p in facts.failed:
            if p >= n:
                break
            self._aborted(t, k, o[p])
        for p in facts.phantom:
            if p >= n:
                break
            self._phantom(t, k, o[p])
        if n:
            w = ix.writer[k].get(r[-1], -1) if k in ix.writer else -1
            if w >= 0 and ix.committed[w]:
                self.edges.add(w, i, WR)
        nxt = facts.next_writer[n]
        if nxt >= 0:
            self.edges.add(i, nxt, RW)
        else:
            for u in ix.unread.get(k, ()):
                self.edges.add(i, u, RW)
        when, w = facts.first_ack[n]
        if w >= 0 and w != i and when < t.t_start and not t.final:
            self._stale(t, k, r, w, when)

    def _g1b(self, i: int, t: Txn, k: int, r: tuple[int, ...]) -> None:
        w = self.ix.writer[k][r[-1]]
        if w == i:
            return
        wt = self.ix.txns[w]
        self.found["G1b"].append(
            {
                "key": k,
                "read": list(r),
                "writer": desc(self.found, "G1b", wt),
                "reader": desc(self.found, "G1b", t),
                "why": f"{tname(t)} read key {k} ending at {r[-1]}, an intermediate append of {tname(wt)}",
            }
        )

    def _incompatible(self, t: Txn, k: int, r: tuple[int, ...], o: tuple[int, ...]) -> None:
        self.found["incompatible-order"].append(
            {
                "key": k,
                "read": list(r),
                "longest_read": list(o),
                "txn": desc(self.found, "incompatible-order", t),
                "why": f"{tname(t)} read key {k} as {list(r)}, not a prefix of {list(o)}",
            }
        )
        w = self.ix.writer.get(k, {})
        for v in r:
            i = w.get(v)
            if i is None:
                self._phantom(t, k, v)
            elif self.ix.txns[i].outcome is Outcome.FAIL:
                self._aborted(t, k, v)

    def _aborted(self, t: Txn, k: int, v: int) -> None:
        if ("G1a", k, v) in self.reported:
            return
        self.reported.add(("G1a", k, v))
        wt = self.ix.txns[self.ix.writer[k][v]]
        self.found["G1a"].append(
            {
                "key": k,
                "value": v,
                "writer": desc(self.found, "G1a", wt),
                "reader": desc(self.found, "G1a", t),
                "why": f"{tname(t)} read {v} in key {k}, appended by {tname(wt)}, which failed",
            }
        )

    def _phantom(self, t: Txn, k: int, v: int) -> None:
        if ("phantom", k, v) in self.reported:
            return
        self.reported.add(("phantom", k, v))
        self.found["phantom-value"].append(
            {
                "key": k,
                "value": v,
                "read_by": [t.id],
                "why": f"{tname(t)} read {v} in key {k}, which no transaction appended",
            }
        )

    def _stale(self, t: Txn, k: int, r: tuple[int, ...], w: int, when: float) -> None:
        wt = self.ix.txns[w]
        missed = [v for v in wt.appends(k) if v not in r]
        ms = round((t.t_start - when) * 1000, 1)
        self.found["stale-read"].append(
            {
                "key": k,
                "read": list(r),
                "missed": missed[0] if missed else None,
                "acknowledged_before_read_ms": ms,
                "reader": desc(self.found, "stale-read", t),
                "writer": desc(self.found, "stale-read", wt),
                "why": f"{tname(t)} ({t.process}) read key {k} without {missed[0] if missed else '?'}, "
                f"appended by {tname(wt)} ({wt.process}) and acknowledged {ms:.1f} ms before the read began",
            }
        )
