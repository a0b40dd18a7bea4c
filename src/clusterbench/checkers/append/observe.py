"""What a list-append history says before any graph: who appended each element, each key's
version order, which transactions committed, and the anomalies visible in single transactions or
single reads.

Version order (Kingsbury and Alvaro's inference for list-append): a read of a list shows the
order of every append it contains, so the distinct elements of a key's longest read are its
version order, and every other read must be a prefix of it. An append that no read shows (an
acknowledged one whose key was never read again, a history without final reads) still happened
after everything that was read: it is placed after the longest read, and a key's only appends
right after its initial empty state. The inference needs every appended value to be unique per
key; a history that appends one value twice is refused (`duplicate-appends`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.history.ops import Outcome
from clusterbench.history.txn import Txn

OK = Outcome.OK  # compared with `is`: cheaper than Txn.ok in the hot loops

EXAMPLES = 5
Found = dict[str, list[dict[str, Any]]]


def tname(t: Txn) -> str:
    return f"T{t.id}"


@dataclass
class Index:
    """The history's indexes; transactions are referred to by their position in `txns`."""

    txns: Sequence[Txn]
    writer: dict[int, dict[int, int]] = field(default_factory=dict)  # key -> element -> writer
    intermediate: dict[int, set[int]] = field(default_factory=dict)  # not the writer's last append
    order: dict[int, tuple[int, ...]] = field(default_factory=dict)  # key -> version order
    pos: dict[int, dict[int, int]] = field(default_factory=dict)  # key -> element -> position
    committed: list[bool] = field(default_factory=list)  # in the graph: ok, or unknown but seen
    unread: dict[int, list[int]] = field(default_factory=dict)  # key -> committed unread appenders
    duplicate_appends: list[dict[str, Any]] = field(default_factory=list)



def desc(found: Found, cls: str, t: Txn) -> dict[str, Any]:
    """A transaction in an anomaly's evidence: in full for the first few of its class (the
    examples a report shows), by id only after them (a large history may have thousands)."""
    return t.describe() if len(found[cls]) < EXAMPLES else {"txn": t.id}


def dedup(values: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(values))


def duplicate_append(ix: Index, t: Txn, k: int, v: int) -> None:
    """Records a second append of one value to one key (an input error: refused)."""
    first = ix.txns[ix.writer[k][v]]
    ix.duplicate_appends.append(
        {
            "key": k,
            "value": v,
            "txns": [first.describe(), t.describe()],
            "why": f"{tname(first)} and {tname(t)} both appended {v} to key {k}: "
            "list-append needs every appended value to be unique per key",
        }
    )


def duplicate_elements(found: Found, t: Txn, k: int, r: tuple[int, ...]) -> None:
    """Records a read that shows an element twice."""
    found["duplicate-elements"].append(
        {
            "key": k,
            "read": list(r),
            "txn": desc(found, "duplicate-elements", t),
            "why": f"{tname(t)} read key {k} as {list(r)}, with an element twice",
        }
    )


def build_index(txns: Sequence[Txn], found: Found) -> Index:
    """Pass over the history: writers, duplicate appends, each key's longest read (a read with
    an element twice counts with its first occurrences), and which transactions committed."""
    ix = Index(txns)
    longest: dict[int, tuple[int, ...]] = {}
    for i, t in enumerate(txns):
        mine: dict[int, list[int]] = {}
        for m in t.mops:
            if m.f == "append":
                v = int(m.value)  # type: ignore[arg-type]
                by_key = ix.writer.setdefault(m.key, {})
                if v in by_key:
                    duplicate_append(ix, t, m.key, v)
                    continue
                by_key[v] = i
                mine.setdefault(m.key, []).append(v)
            elif t.outcome is OK and isinstance(m.value, tuple):
                r = m.value
                if len(set(r)) != len(r):
                    duplicate_elements(found, t, m.key, r)
                    r = dedup(r)
                if len(r) > len(longest.get(m.key, ())):
                    longest[m.key] = r
        for k, vs in mine.items():
            if len(vs) > 1:
                ix.intermediate.setdefault(k, set()).update(vs[:-1])
    ix.order = longest
    ix.pos = {k: {v: p for p, v in enumerate(o)} for k, o in longest.items()}
    _committed(ix)
    return ix


def _committed(ix: Index) -> None:
    """Ok transactions and those of unknown outcome whose appends a read showed are in the
    graph; their appends that no read showed are placed after the longest read."""
    ix.committed = [t.outcome is OK for t in ix.txns]
    for k, pos in ix.pos.items():
        w = ix.writer.get(k, {})
        for v in pos:
            i = w.get(v)
            if i is not None and ix.txns[i].outcome is Outcome.UNKNOWN:
                ix.committed[i] = True  # its append was seen, so it committed
    for k, by_value in ix.writer.items():
        pos = ix.pos.get(k, {})
        unread = {i for v, i in by_value.items() if v not in pos and ix.committed[i]}
        if unread:
            ix.unread[k] = sorted(unread)


# ---- anomalies inside one transaction ------------------------------------------------------------


def future_reads(ix: Index, found: Found) -> None:
    """`future-read`: a read shows an element the same transaction appends only later."""
    for t in ix.txns:
        if t.outcome is not OK:
            continue
        seen: dict[int, set[int]] = {}
        for m in t.mops:
            if m.f == "r" and isinstance(m.value, tuple):
                seen.setdefault(m.key, set()).update(m.value)
            elif m.f == "append" and m.value in seen.get(m.key, ()):
                found["future-read"].append(
                    {
                        "key": m.key,
                        "element": m.value,
                        "txn": desc(found, "future-read", t),
                        "why": f"{tname(t)} read {m.value} in key {m.key} before appending it",
                    }
                )


def internal_reads(ix: Index, found: Found) -> None:
    """`internal` (Cerone et al.'s INT axiom): a read disagrees with what the transaction itself
    read or appended to the key before: after a read, the list read plus its own appends since;
    after appends without a read, a list that ends with them."""
    for t in ix.txns:
        if t.outcome is not OK:
            continue
        known: dict[int, tuple[int, ...]] = {}  # key -> the whole list expected
        suffix: dict[int, tuple[int, ...]] = {}  # key -> own appends, prefix unknown
        for m in t.mops:
            k = m.key
            if m.f == "append":
                v = int(m.value)  # type: ignore[arg-type]
                if k in known:
                    known[k] += (v,)
                else:
                    suffix[k] = suffix.get(k, ()) + (v,)
                continue
            if not isinstance(m.value, tuple):
                continue
            r = m.value
            expected: list[Any] | None = None
            if k in known and known[k] != r:
                expected = list(known[k])
            elif k in suffix and (len(r) < len(suffix[k]) or r[len(r) - len(suffix[k]) :] != suffix[k]):
                expected = ["...", *suffix[k]]
            if expected is not None:
                found["internal"].append(
                    {
                        "key": k,
                        "read": list(r),
                        "expected": expected,
                        "txn": desc(found, "internal", t),
                        "why": f"{tname(t)} read key {k} as {list(r)}; its own operations left it {expected}",
                    }
                )
            known[k] = r
            suffix.pop(k, None)


def lost_updates(ix: Index, found: Found) -> None:
    """Lost update as Elle defines it: two or more committed (ok) transactions read the same
    version of a key (their first read of it) and then appended to it. (Berenson's P4, where the
    overwriting transaction need not have read the key, shows up as a G-single cycle marked
    `p4`.)"""
    groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for i, t in enumerate(ix.txns):
        if t.outcome is not OK:
            continue
        first_read: dict[int, tuple[int, ...]] = {}
        wrote: set[int] = set()
        for m in t.mops:
            if m.f == "r" and isinstance(m.value, tuple):
                first_read.setdefault(m.key, m.value)
            elif m.f == "append" and m.key not in wrote:
                wrote.add(m.key)
                if m.key in first_read:
                    groups.setdefault((m.key, first_read[m.key]), []).append(i)
    for (k, version), members in sorted(groups.items(), key=lambda kv: kv[1][0]):
        if len(members) < 2:
            continue
        names = ", ".join(tname(ix.txns[i]) for i in members)
        found["lost-update"].append(
            {
                "key": k,
                "read": list(version),
                "definition": "elle",
                "txns": [desc(found, "lost-update", ix.txns[i]) for i in members],
                "why": f"lost update (Elle: one version read, then appended to, by each): {names} "
                f"read key {k} as {list(version)} and appended to it",
            }
        )


def dirty_updates(ix: Index, found: Found) -> None:
    """A committed (ok) append ordered right after an element of a transaction that definitely
    failed (with only unknown-outcome appends between): the ok transaction wrote onto state that
    was never committed."""
    for k, o in ix.order.items():
        w = ix.writer.get(k, {})
        failed_at: int | None = None
        for p, v in enumerate(o):
            i = w.get(v)
            if i is None or ix.txns[i].outcome is Outcome.UNKNOWN:
                continue
            t = ix.txns[i]
            if t.outcome is Outcome.FAIL:
                failed_at = p
                continue
            if failed_at is not None:
                bad = ix.txns[w[o[failed_at]]]
                found["dirty-update"].append(
                    {
                        "key": k,
                        "values": list(o[failed_at : p + 1]),
                        "failed": desc(found, "dirty-update", bad),
                        "txn": desc(found, "dirty-update", t),
                        "why": f"{tname(t)} appended {v} to key {k} after {o[failed_at]}, "
                        f"appended by {tname(bad)}, which failed",
                    }
                )
            failed_at = None


def lost_appends(ix: Index, found: Found) -> None:
    """Acknowledged appends missing from a key's final read (after heal) on some node."""
    finals = [t for t in ix.txns if t.final and t.outcome is OK]
    if not finals:
        return
    lists = [
        (f, {m.key: set(m.value) for m in f.mops if m.f == "r" and isinstance(m.value, tuple)})
        for f in finals
    ]
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for t in ix.txns:
        if t.outcome is not OK or t.final:
            continue
        for m in t.mops:
            if m.f != "append":
                continue
            v = int(m.value)  # type: ignore[arg-type]
            missing_on = [f.process for f, by_key in lists if m.key in by_key and v not in by_key[m.key]]
            if missing_on:
                out[(m.key, v)] = {
                    "key": m.key,
                    "value": v,
                    "missing_on": missing_on,
                    "txn": t.describe(),
                    "why": f"{tname(t)} appended {v} to key {m.key} (acknowledged); the final read on "
                    f"{', '.join(missing_on)} lacks it",
                }
    found["lost-append"].extend(e for _, e in sorted(out.items()))
