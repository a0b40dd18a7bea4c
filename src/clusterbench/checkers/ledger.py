"""C1 ledger checker (Jepsen set-full): acknowledged inserts must be on every node after heal.

- lost: an insert that was acknowledged (ok) is absent on at least one node;
- phantom: a row is present that no client ever attempted;
- fail_but_present: an insert classified as definitely failed is present (a classification bug
  or a database bug).
Unknown inserts may be present or absent. The verdict is UNKNOWN when there was no ok insert (the
run proves nothing) or a node could not be read (and nothing else failed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict, pass_unless, read_doubts, split_read
from clusterbench.history.ops import Op, Outcome

EXAMPLES = 20
NAME = "ledger"
WORKLOAD = "ledger"  # the operations' workload name in the history

Key = tuple[int, int]  # (client, seq): a ledger row's primary key


def ledger_key(client: int, seq: int) -> str:
    return f"{client}:{seq}"


def parse_key(key: str) -> Key:
    c, s = key.split(":")
    return int(c), int(s)


def _examples(keys: set[Key], where: Mapping[Key, list[str]] | None = None) -> list[Any]:
    out: list[Any] = []
    for k in sorted(keys)[:EXAMPLES]:
        out.append({"key": ledger_key(*k), "nodes": where[k]} if where is not None else ledger_key(*k))
    return out


def check_ledger(ops: Sequence[Op], nodes: Mapping[str, set[Key] | str]) -> Verdict:
    """`ops`: the history (only ledger inserts are used); `nodes`: per node name, the set of
    (client, seq) keys read after heal, or an error string if the node could not be read."""
    outcome_of: dict[Key, Outcome] = {}
    for o in ops:
        if o.workload == WORKLOAD and o.kind == "insert" and o.key is not None:
            outcome_of[parse_key(o.key)] = o.outcome
    by_outcome = Counter(str(v) for v in outcome_of.values())
    counts = {k: by_outcome.get(k, 0) for k in ("ok", "fail", "unknown")}
    ok = {k for k, v in outcome_of.items() if v is Outcome.OK}
    failed = {k for k, v in outcome_of.items() if v is Outcome.FAIL}
    unknown = {k for k, v in outcome_of.items() if v is Outcome.UNKNOWN}

    readable, unreadable = split_read(nodes)
    present_anywhere: set[Key] = set().union(*readable.values()) if readable else set()

    lost_on: dict[Key, list[str]] = {}
    for n, rows in sorted(readable.items()):
        for k in ok - rows:
            lost_on.setdefault(k, []).append(n)
    phantom = present_anywhere - set(outcome_of)
    fail_present = failed & present_anywhere
    evidence: dict[str, Any] = {
        "ops": counts,
        "unknown_present": len(unknown & present_anywhere),
        "unknown_absent": len(unknown - present_anywhere),
        "rows_per_node": {n: len(rows) for n, rows in sorted(readable.items())},
        "unreadable_nodes": unreadable,
        "lost": {"count": len(lost_on), "examples": _examples(set(lost_on), lost_on)},
        "phantom": {"count": len(phantom), "examples": _examples(phantom)},
        "fail_but_present": {"count": len(fail_present), "examples": _examples(fail_present)},
    }
    problems = []
    if lost_on:
        problems.append(f"{len(lost_on)} acknowledged inserts lost")
    if phantom:
        problems.append(f"{len(phantom)} phantom rows")
    if fail_present:
        problems.append(f"{len(fail_present)} failed inserts present")
    if problems:
        return Verdict(NAME, Result.FAIL, "; ".join(problems), evidence)
    doubts = [
        *read_doubts("the ledger", readable, unreadable),
        (not ok, f"no acknowledged insert among {len(outcome_of)} attempts"),
    ]
    passed = (
        f"all {len(ok)} acknowledged inserts on all {len(readable)} nodes; no phantom; "
        f"{counts['fail']} failed and {counts['unknown']} unknown"
    )
    return pass_unless(NAME, doubts, passed, evidence)
