"""Lost-update counter checker (Jepsen's counter, per mode and key).

Clients increment counters that start at 0; each increment is one transaction with a three-valued
outcome. After heal, every node's value of every counter is read (causal session). With `ok`
acknowledged and `unknown` maybe-committed increments, the final value must lie in
[ok, ok + unknown]:

- below `ok`: acknowledged increments were lost (overwritten: a lost update, P4; or lost commits);
- above `ok + unknown`: increments nobody made (or a definite failure that committed);
- nodes disagreeing on a counter's value: divergence.

The mode says how a client increments (verify.counter): `read-modify-write` (plain SELECT, then
UPDATE with the client's value: InnoDB's REPEATABLE READ lets a concurrent increment be
overwritten, on one server and across nodes, so losses there are a documented limitation when the
engine documents lost updates), `for-update` (SELECT ... FOR UPDATE first) and `increment`
(`UPDATE ... SET v = v + 1`): losses in these two are broken promises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict, pass_unless, read_doubts, split_read
from clusterbench.history.ops import Op, Outcome

NAME = "counter"
WORKLOAD = "counter"
DOCUMENTED_MODE = "read-modify-write"


def mode_of(key: str) -> str:
    return key.split("/", 1)[0]


def check_counter(
    ops: Sequence[Op],
    final: Mapping[str, Mapping[str, int] | str],
    *,
    mode: str,
    keys: Iterable[str] | None = None,
    documented: Iterable[str] = (),
) -> Verdict:
    """`final`: per node, counter key -> value read after heal, or an error string.
    `keys`: the counters of this mode (default: those in the history)."""
    name = f"{NAME}:{mode}"
    incs = [
        o for o in ops if o.workload == WORKLOAD and o.kind == "incr" and o.key and mode_of(o.key) == mode
    ]
    wanted = sorted(set(keys) if keys is not None else {o.key for o in incs if o.key})
    per_key: dict[str, dict[str, Any]] = {}
    readable, unreadable = split_read(final)
    lost_total = excess_total = 0
    problems: list[str] = []
    for k in wanted:
        mine = [o for o in incs if o.key == k]
        ok = sum(1 for o in mine if o.outcome is Outcome.OK)
        unk = sum(1 for o in mine if o.outcome is Outcome.UNKNOWN)
        fail = sum(1 for o in mine if o.outcome is Outcome.FAIL)
        values = {n: v.get(k) for n, v in sorted(readable.items())}
        entry: dict[str, Any] = {"ok": ok, "unknown": unk, "fail": fail, "final": values}
        present = [v for v in values.values() if v is not None]
        if len(set(present)) > 1:
            problems.append(f"{k}: nodes disagree ({', '.join(f'{n}={v}' for n, v in values.items())})")
            entry["diverged"] = True
        missing = [n for n, v in values.items() if v is None]
        if missing:
            problems.append(f"{k}: no row on {', '.join(missing)}")
        if present:
            low = min(present)
            high = max(present)
            lost = max(0, ok - low)
            excess = max(0, high - (ok + unk))
            entry["lost"] = lost
            entry["excess"] = excess
            lost_total += lost
            excess_total += excess
            if lost:
                problems.append(f"{k}: {ok} acknowledged increments, value {low}: {lost} lost")
            if excess:
                problems.append(
                    f"{k}: value {high} above {ok} ok + {unk} unknown increments: {excess} never made"
                )
        per_key[k] = entry
    oks = sum(e["ok"] for e in per_key.values())
    evidence: dict[str, Any] = {
        "mode": mode,
        "keys": per_key,
        "increments": {
            "ok": oks,
            "unknown": sum(e["unknown"] for e in per_key.values()),
            "fail": sum(e["fail"] for e in per_key.values()),
        },
        "lost": lost_total,
        "excess": excess_total,
        "unreadable_nodes": unreadable,
    }
    if oks:
        evidence["lost_fraction"] = round(lost_total / oks, 4)
    documented_loss = mode == DOCUMENTED_MODE and "lost-update" in set(documented)
    if problems:
        only_lost = (
            lost_total > 0 and excess_total == 0 and not any(e.get("diverged") for e in per_key.values())
        )
        only_lost = only_lost and not any("no row" in p for p in problems)
        doc = documented_loss and only_lost
        summary = "; ".join(problems[:4]) + (f"; ... {len(problems) - 4} more" if len(problems) > 4 else "")
        if doc:
            summary += " (documented limitation: read-modify-write without a lock loses updates)"
        return Verdict(name, Result.FAIL, summary, evidence, documented_limitation=doc)
    doubts = [
        *read_doubts("the counters", readable, unreadable),
        (oks == 0, f"no acknowledged increment among {len(incs)} attempts"),
    ]
    passed = (
        f"{oks} acknowledged increments on {len(wanted)} counter(s), every node's value within "
        "[ok, ok + unknown]; none lost"
    )
    return pass_unless(name, doubts, passed, evidence)
