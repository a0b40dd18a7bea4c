"""C3 bank checker (Jepsen bank): every ok read and the final read on each node must show every
account exactly once, no negative balance, and the fixed total.

Without SELECT ... FOR UPDATE a violation is a documented Galera limitation (lost update, P4,
across nodes and even on one node under REPEATABLE READ), so the FAIL carries
documented_limitation=True and does not fail the run."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict, pass_unless
from clusterbench.history.ops import Op, Outcome

NAME = "bank"
WORKLOAD = "bank"  # the operations' workload name in the history
EXAMPLES = 20


def read_problems(balances: Mapping[str, int], accounts: Sequence[int], total: int) -> list[str]:
    """What is wrong with one read of all balances (empty: nothing)."""
    out = []
    expected = {str(a) for a in accounts}
    missing = sorted(expected - set(balances), key=int)
    extra = sorted(set(balances) - expected, key=lambda k: (len(k), k))
    if missing:
        out.append(f"missing accounts {missing}")
    if extra:
        out.append(f"unexpected accounts {extra}")
    negative = {k: v for k, v in balances.items() if v < 0}
    if negative:
        out.append(f"negative balances {negative}")
    s = sum(balances.values())
    if s != total:
        out.append(f"total {s} != {total}")
    return out


def check_bank(
    ops: Sequence[Op],
    final: Mapping[str, Mapping[str, int] | str],
    *,
    accounts: Sequence[int],
    total: int,
    for_update: bool = True,
) -> Verdict:
    """`final`: per node the balances read after heal (with a causal wait), or an error string."""
    reads = [o for o in ops if o.workload == WORKLOAD and o.kind == "read" and o.outcome is Outcome.OK]
    transfers = [o for o in ops if o.workload == WORKLOAD and o.kind == "transfer"]
    bad_reads: list[dict[str, Any]] = []
    for o in reads:
        bal = json.loads(o.value or "{}")
        problems = read_problems(bal, accounts, total)
        if problems:
            bad_reads.append({"t": round(o.t_end, 3), "process": o.process, "client": o.client,
                              "problems": problems})  # fmt: skip
    bad_final: dict[str, list[str]] = {}
    unreadable: dict[str, str] = {}
    for node, bal in sorted(final.items()):
        if isinstance(bal, str):
            unreadable[node] = bal
            continue
        problems = read_problems(bal, accounts, total)
        if problems:
            bad_final[node] = problems
    evidence: dict[str, Any] = {
        "total": total,
        "accounts": len(accounts),
        "for_update": for_update,
        "reads_ok": len(reads),
        "transfers": {k: sum(1 for o in transfers if str(o.outcome) == k) for k in ("ok", "fail", "unknown")},
        "bad_reads": {"count": len(bad_reads), "examples": bad_reads[:EXAMPLES]},
        "final": {n: (b if isinstance(b, str) else dict(b)) for n, b in sorted(final.items())},
        "bad_final": bad_final,
        "unreadable_nodes": unreadable,
    }
    if bad_reads or bad_final:
        parts = []
        if bad_reads:
            parts.append(f"{len(bad_reads)} of {len(reads)} ok reads violate the invariant")
        if bad_final:
            parts.append(f"final balances wrong on {', '.join(bad_final)}")
        summary = "; ".join(parts)
        if not for_update:
            summary += " (documented limitation: transfers without SELECT ... FOR UPDATE lose updates)"
        return Verdict(NAME, Result.FAIL, summary, evidence, documented_limitation=not for_update)
    doubts = [
        (bool(unreadable), f"could not read balances on {', '.join(unreadable)}"),
        (not final, "no final read"),
        (evidence["transfers"]["ok"] == 0, "no transfer was acknowledged"),
    ]
    passed = (
        f"total {total} conserved in {len(reads)} ok reads and on {len(final)} nodes after "
        f"{evidence['transfers']['ok']} transfers"
    )
    return pass_unless(NAME, doubts, passed, evidence)
