"""Evidence for a cycle: each edge with the keys and operations that put it there, written out.

Only the few cycles reported are explained, so the graph keeps no keys per edge: they are found
again from the transactions and the version orders.
"""

from __future__ import annotations

from typing import Any

from clusterbench.checkers.append.graph import NAMES, PROCESS, REALTIME, RW, WR, WW
from clusterbench.checkers.append.observe import Index, tname

Step = dict[str, Any]


def _reads(ix: Index, i: int, k: int) -> list[tuple[int, ...]]:
    return [m.value for m in ix.txns[i].mops if m.f == "r" and m.key == k and isinstance(m.value, tuple)]


def _after(ix: Index, k: int, v: int) -> int:
    """Where an element stands in the key's order; an unread one after all of it."""
    return ix.pos.get(k, {}).get(v, len(ix.order.get(k, ())))


def _ww(ix: Index, x: int, y: int) -> list[tuple[int, str]]:
    out = []
    tx, ty = ix.txns[x], ix.txns[y]
    for k in sorted(
        {m.key for m in ty.mops if m.f == "append"} & {m.key for m in tx.mops if m.f == "append"}
    ):
        vx = [v for v in tx.appends(k) if v in ix.pos.get(k, {})]
        vy = [v for v in ty.appends(k) if _after(ix, k, v) > max((ix.pos[k][u] for u in vx), default=-1)]
        if vx and vy:
            out.append((k, f"{tname(ty)} appended {vy[0]} after {tname(tx)}'s {vx[-1]} to key {k}"))
    return out


def _wr(ix: Index, x: int, y: int) -> list[tuple[int, str]]:
    out = []
    tx, ty = ix.txns[x], ix.txns[y]
    for k in sorted({m.key for m in tx.mops if m.f == "append"}):
        mine = set(tx.appends(k))
        for r in _reads(ix, y, k):
            if r and r[-1] in mine:
                out.append(
                    (k, f"{tname(ty)} read key {k} as {list(r)}, ending with {tname(tx)}'s append of {r[-1]}")
                )
                break
    return out


def _rw(ix: Index, x: int, y: int) -> list[tuple[int, str]]:
    out = []
    tx, ty = ix.txns[x], ix.txns[y]
    for k in sorted({m.key for m in ty.mops if m.f == "append"}):
        for r in _reads(ix, x, k):
            seen = len(dict.fromkeys(r))
            later = [v for v in ty.appends(k) if _after(ix, k, v) >= seen]
            if later:
                out.append(
                    (k, f"{tname(tx)} read key {k} as {list(r)}, without {tname(ty)}'s append of {later[0]}")
                )
                break
    return out


def step(ix: Index, x: int, y: int, typ: int) -> Step:
    tx, ty = ix.txns[x], ix.txns[y]
    if typ == PROCESS:
        why: list[tuple[int | None, str]] = [
            (None, f"{tname(tx)} and then {tname(ty)} ran in one session of client {tx.client}")
        ]
    elif typ == REALTIME:
        ended, began = f"{tx.t_end:.3f} s", f"{ty.t_start:.3f} s"
        why = [(None, f"{tname(tx)} was acknowledged at {ended}, before {tname(ty)} began at {began}")]
    else:
        why = list({WW: _ww, WR: _wr, RW: _rw}[typ](ix, x, y))
    keys = [k for k, _ in why if k is not None]
    return {"from": tx.id, "to": ty.id, "type": NAMES[typ], "keys": keys, "why": why[0][1] if why else ""}


def _arrow(s: Step) -> str:
    keys = f"({','.join(map(str, s['keys']))})" if s["keys"] else ""
    return f"T{s['from']} -{s['type']}{keys}-> T{s['to']}"


def p4(ix: Index, nodes: list[int], labels: list[int]) -> bool:
    """A G-single cycle T1 -rw-> T2 -> ... -> Tn -> T1 is Berenson's P4 (a lost update in the
    wider sense) when T1 wrote after a transaction it did not see: the cycle returns to T1 by a
    ww edge, or T1 and T2 appended to one key with T2's element first. T1 missed T2, so it also
    missed everything on the cycle that depends on T2, yet its append landed after it: two
    concurrent writers of one key both committed. A cycle that returns by wr is a read skew."""
    i = labels.index(RW)
    a, b = nodes[i], nodes[(i + 1) % len(nodes)]
    if labels[i - 1] == WW:
        return True
    ta, tb = ix.txns[a], ix.txns[b]
    for k in {m.key for m in ta.mops if m.f == "append"}:
        pb = [_after(ix, k, v) for v in tb.appends(k)]
        pa = [_after(ix, k, v) for v in ta.appends(k)]
        if pa and pb and min(pb) < max(pa):
            return True
    return False


def cycle(ix: Index, nodes: list[int], labels: list[int]) -> dict[str, Any]:
    """The cycle's evidence, starting at its first rw edge when it has one (a G-single's P4 mark
    is the caller's: worked out once per cycle, for every cycle, by list_append._P4)."""
    if RW in labels:
        i = labels.index(RW)
        nodes, labels = nodes[i:] + nodes[:i], labels[i:] + labels[:i]
    steps = [step(ix, x, y, t) for x, y, t in zip(nodes, nodes[1:] + nodes[:1], labels, strict=True)]
    return {
        "length": len(nodes),
        "cycle": [_arrow(s) for s in steps],
        "steps": steps,
        "txns": [ix.txns[x].describe() for x in nodes],
    }
