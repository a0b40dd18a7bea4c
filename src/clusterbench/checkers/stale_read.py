"""Stale-read checker (C5): a write acknowledged on node A, then at once a read on node B.

The prober (verify.stale_read) writes version v of its own row on A; after the COMMIT is
acknowledged it reads the row on B in a session of a given kind: the engine's `default` session
(stale reads possible: Galera wsrep_sync_wait=0, Group Replication the group's configured
group_replication_consistency) or its `causal` one (Galera wsrep_sync_wait=1, GR BEFORE). A read
that returns an older version than the last acknowledged one is stale. How stale: in versions
(acknowledged - seen) and in milliseconds since the first version it missed was acknowledged.

In the default session a stale read is a documented limitation; in the causal session it breaks
the engine's promise. Reads that failed, and reads after a write of unknown outcome that return
the newer version, are never stale.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict, pass_unless
from clusterbench.history.ops import Op, Outcome

NAME = "stale-read"
WORKLOAD = "stale-read"
EXAMPLES = 10


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def check_stale_reads(
    ops: Sequence[Op],
    *,
    session: str,
    statements: Iterable[str] = (),
    documented: Iterable[str] = (),
) -> Verdict:
    """`session`: 'default' or 'causal' (the ops of that session are checked); `statements`: what
    the session ran (shown as the mode); `documented`: the engine's documented anomalies for it."""
    name = f"{NAME}:{session}"
    mine = [o for o in ops if o.workload == WORKLOAD and o.key and o.key.startswith(f"{session}/")]
    acks: dict[tuple[str, int], float] = {}
    for o in mine:
        if o.kind == "write" and o.outcome is Outcome.OK and o.value is not None:
            acks[(o.key or "", int(o.value))] = o.t_end
    reads = [o for o in mine if o.kind == "read" and o.outcome is Outcome.OK and o.value]
    checked = stale = 0
    versions: list[int] = []
    ms: list[float] = []
    examples: list[dict[str, Any]] = []
    by_pair: dict[str, dict[str, int]] = {}
    for o in reads:
        v = json.loads(o.value or "{}")
        expect, seen = v.get("expect"), v.get("seen")
        if expect is None:
            continue
        checked += 1
        pair = str(v.get("pair", o.process))
        counts = by_pair.setdefault(pair, {"reads": 0, "stale": 0})
        counts["reads"] += 1
        if seen is None or seen >= expect:
            continue
        stale += 1
        counts["stale"] += 1
        versions.append(expect - seen)
        first_missed = acks.get((o.key or "", seen + 1))
        if first_missed is not None:
            ms.append((o.t_start - first_missed) * 1000)
        if len(examples) < EXAMPLES:
            examples.append(
                {"pair": pair, "t": round(o.t_start, 4), "expected": expect, "seen": seen,
                 "ms_since_missed_ack": round(ms[-1], 2) if first_missed is not None else None}
            )  # fmt: skip
    evidence: dict[str, Any] = {
        "session": session,
        "statements": list(statements),
        "reads": checked,
        "stale": stale,
        "rate": round(stale / checked, 4) if checked else None,
        "by_pair": by_pair,
        "writes": {
            k: sum(1 for o in mine if o.kind == "write" and str(o.outcome) == k)
            for k in ("ok", "fail", "unknown")
        },
        "examples": examples,
    }
    if versions:
        evidence["staleness_versions"] = {"max": max(versions), "median": statistics.median(versions)}
    if ms:
        evidence["staleness_ms"] = {
            "median": round(statistics.median(ms), 2),
            "p99": round(_pct(ms, 0.99), 2),
            "max": round(max(ms), 2),
        }
    mode = f"{session} ({'; '.join(statements)})" if statements else session
    if stale:
        doc = session == "default" and "stale-read" in set(documented)
        summary = f"{stale} of {checked} reads stale ({100 * stale / checked:.1f} %) in the {mode} session"
        if "staleness_ms" in evidence:
            summary += f"; up to {evidence['staleness_ms']['max']:.1f} ms and {max(versions)} versions behind"
        if doc:
            summary += " (documented limitation)"
        return Verdict(name, Result.FAIL, summary, evidence, documented_limitation=doc)
    doubts = [(checked == 0, f"no read after an acknowledged write in the {mode} session")]
    passed = f"no stale read: not observed in {checked} reads in the {mode} session"
    return pass_unless(name, doubts, passed, evidence)
