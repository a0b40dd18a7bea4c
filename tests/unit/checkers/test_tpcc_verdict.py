"""checkers/tpcc.py: the TPC-C consistency reports of a drill as one verdict (pure)."""

from __future__ import annotations

from clusterbench.checkers.tpcc import check_tpcc_consistency, tpcc_unknown
from clusterbench.checkers.verdict import Result, combine
from clusterbench.workloads.tpcc_check import CONDITIONS, CheckReport, ConditionResult


def report(**status: str) -> CheckReport:
    """Every condition PASS except those given as c<N>=STATUS."""
    return CheckReport(
        "run",
        tuple(
            ConditionResult(c.number, c.title, s, 0 if s == "PASS" else 2, None if s == "PASS" else (1, 4))
            for c in CONDITIONS
            for s in [status.get(f"c{c.number}", "PASS")]
        ),
    )


def test_every_condition_holding_is_pass_and_load_only_is_said() -> None:
    v = check_tpcc_consistency([("sbtest", report(c11="load-only"))])
    assert v.checker == "tpcc-consistency" and v.result is Result.PASS
    assert v.summary == "12 conditions hold in sbtest (condition 11 reported as load-only)"
    assert v.evidence["sbtest"]["verdict"] == "PASS"


def test_a_broken_condition_fails_naming_it_and_fails_overall() -> None:
    """The negative control: one broken condition, and the drill's overall is FAIL."""
    v = check_tpcc_consistency([("sbtest", report(c1="FAIL", c11="load-only"))])
    assert v.result is Result.FAIL
    assert v.summary == "condition 1 (W_YTD = sum(D_YTD) for each warehouse): FAIL, 2 row(s), e.g. 1, 4"
    trial_pass = check_tpcc_consistency([("sbtest", report())])
    assert combine([trial_pass, v]) is Result.FAIL


def test_several_databases_name_theirs() -> None:
    v = check_tpcc_consistency([("db1", report()), ("db2", report(c4="FAIL", c9="FAIL"))])
    assert v.result is Result.FAIL
    assert v.summary.startswith("db2: condition 4 (") and "; db2: condition 9 (" in v.summary
    assert set(v.evidence) == {"db1", "db2"}
    assert check_tpcc_consistency([("db1", report()), ("db2", report())]).summary == (
        "12 conditions hold in db1, db2"
    )


def test_no_check_is_unknown_never_pass() -> None:
    assert check_tpcc_consistency([]).result is Result.UNKNOWN
    v = tpcc_unknown("cannot connect to bench@198.18.9.2:3306")
    assert v.result is Result.UNKNOWN
    assert v.summary == "the check could not run: cannot connect to bench@198.18.9.2:3306"
