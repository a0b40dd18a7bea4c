"""The TPC-C consistency verdict of a drill whose load is `tpcc` (pure): the twelve conditions of
clause 3.3.2 (workloads/tpcc_check.py), run once the faults are healed and the cluster has settled,
as one row of the drill's verdicts. PASS when every condition holds on every database the load
wrote (condition 11 is load-only after a run); FAIL naming each broken condition; UNKNOWN when the
check could not run."""

from __future__ import annotations

from collections.abc import Sequence

from clusterbench.checkers.verdict import Result, Verdict
from clusterbench.workloads.tpcc_check import CheckReport

NAME = "tpcc-consistency"


def check_tpcc_consistency(reports: Sequence[tuple[str, CheckReport]]) -> Verdict:
    """One verdict over the reports of every database (name, report) the load wrote."""
    if not reports:
        return tpcc_unknown("no database was checked")
    evidence = {db: r.to_json() for db, r in reports}
    several = len(reports) > 1
    broken = [(db, c) for db, r in reports for c in r.failed]
    if broken:
        return Verdict(
            NAME,
            Result.FAIL,
            "; ".join((f"{db}: " if several else "") + c.line() for db, c in broken),
            evidence,
        )
    n = len(reports[0][1].results)
    load_only = sorted({c.number for _, r in reports for c in r.results if c.status == "load-only"})
    return Verdict(
        NAME,
        Result.PASS,
        f"{n} conditions hold in {', '.join(db for db, _ in reports)}"
        + (f" (condition {', '.join(map(str, load_only))} reported as load-only)" if load_only else ""),
        evidence,
    )


def tpcc_unknown(reason: str) -> Verdict:
    return Verdict(NAME, Result.UNKNOWN, f"the check could not run: {reason}", {"error": reason})
