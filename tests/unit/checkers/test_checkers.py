from __future__ import annotations

import json
from typing import Any

import pytest

from clusterbench.checkers import (
    ConvergenceSnapshot,
    FaultWindow,
    MonitorSample,
    NodeState,
    PathFigures,
    Result,
    availability,
    availability_verdict,
    check_bank,
    check_convergence,
    check_ledger,
    check_split_brain,
)
from clusterbench.checkers.availability import tps_recovery
from clusterbench.history.ops import Outcome
from clusterbench.verify.convergence import collect_convergence
from tests.unit.verify.fakes_verify import StepClock, op

OK, F, U = Outcome.OK, Outcome.FAIL, Outcome.UNKNOWN

# ---- ledger ------------------------------------------------------------------------------

LEDGER_OPS = [op("1:1", OK), op("1:2", OK), op("1:3", F, code=1213), op("1:4", U, code=2013), op("2:1", U)]


def test_ledger_pass_with_unknowns_either_way() -> None:
    rows = {(1, 1), (1, 2), (1, 4)}
    v = check_ledger(LEDGER_OPS, {"n1": rows, "n2": set(rows), "n3": set(rows)})
    assert v.result is Result.PASS
    assert v.summary == "all 2 acknowledged inserts on all 3 nodes; no phantom; 1 failed and 2 unknown"
    assert v.evidence["ops"] == {"ok": 2, "fail": 1, "unknown": 2}
    assert (v.evidence["unknown_present"], v.evidence["unknown_absent"]) == (1, 1)
    assert v.evidence["rows_per_node"] == {"n1": 3, "n2": 3, "n3": 3}


def test_ledger_lost_phantom_and_fail_but_present() -> None:
    v = check_ledger(
        LEDGER_OPS,
        {"n1": {(1, 1), (1, 2), (1, 3)}, "n2": {(1, 1), (9, 9)}, "n3": {(1, 1), (1, 2)}},
    )
    assert v.result is Result.FAIL
    assert v.summary == "1 acknowledged inserts lost; 1 phantom rows; 1 failed inserts present"
    assert v.evidence["lost"] == {"count": 1, "examples": [{"key": "1:2", "nodes": ["n2"]}]}
    assert v.evidence["phantom"] == {"count": 1, "examples": ["9:9"]}
    assert v.evidence["fail_but_present"] == {"count": 1, "examples": ["1:3"]}
    assert not v.documented_limitation


def test_ledger_examples_are_capped_at_20() -> None:
    ops = [op(f"1:{i}", OK) for i in range(30)]
    v = check_ledger(ops, {"n1": set()})
    assert v.evidence["lost"]["count"] == 30 and len(v.evidence["lost"]["examples"]) == 20


def test_ledger_unknown_when_unreadable_or_nothing_acknowledged() -> None:
    rows = {(1, 1), (1, 2)}
    v = check_ledger(LEDGER_OPS, {"n1": rows, "n2": "OperationalError: (2003, 'refused')"})
    assert (v.result, v.summary) == (Result.UNKNOWN, "could not read the ledger on n2")
    assert v.evidence["unreadable_nodes"] == {"n2": "OperationalError: (2003, 'refused')"}
    # An unreadable node does not hide a loss seen elsewhere.
    assert check_ledger(LEDGER_OPS, {"n1": {(1, 1)}, "n2": "down"}).result is Result.FAIL
    v = check_ledger([op("1:1", U), op("1:2", F)], {"n1": {(1, 1)}})
    assert (v.result, v.summary) == (Result.UNKNOWN, "no acknowledged insert among 2 attempts")
    assert check_ledger(LEDGER_OPS, {}).result is Result.UNKNOWN


# ---- bank --------------------------------------------------------------------------------

ACCOUNTS = [1, 2, 3]


def bank_read(t: float, balances: dict[str, int], outcome: Outcome = OK) -> object:
    return op(None, outcome, t, workload="bank", kind="read", value=json.dumps(balances))


def transfer(outcome: Outcome) -> object:
    return op("1>2", outcome, workload="bank", kind="transfer", value="5")


def test_bank_pass() -> None:
    ops = [transfer(OK), transfer(F), bank_read(1.0, {"1": 95, "2": 105, "3": 100})]
    final = {"n1": {"1": 95, "2": 105, "3": 100}, "n2": {"1": 95, "2": 105, "3": 100}}
    v = check_bank(ops, final, accounts=ACCOUNTS, total=300)  # type: ignore[arg-type]
    assert v.result is Result.PASS
    assert v.summary == "total 300 conserved in 1 ok reads and on 2 nodes after 1 transfers"
    assert v.evidence["transfers"] == {"ok": 1, "fail": 1, "unknown": 0}


def test_bank_violations_and_documented_limitation() -> None:
    ops = [
        transfer(OK),
        bank_read(1.0, {"1": 90, "2": 105, "3": 100}),
        bank_read(2.0, {"1": -5, "2": 205, "3": 100}),
        bank_read(3.0, {"1": 100, "2": 100}),
        bank_read(4.0, {"1": 1, "2": 1, "3": 1}, outcome=F),  # a failed read is not checked
    ]
    final = {"n1": {"1": 100, "2": 100, "3": 100, "4": 0}}
    v = check_bank(ops, final, accounts=ACCOUNTS, total=300, for_update=True)  # type: ignore[arg-type]
    assert v.result is Result.FAIL and not v.documented_limitation
    assert v.summary == "3 of 3 ok reads violate the invariant; final balances wrong on n1"
    assert [r["problems"] for r in v.evidence["bad_reads"]["examples"]] == [
        ["total 295 != 300"],
        ["negative balances {'1': -5}"],
        ["missing accounts ['3']", "total 200 != 300"],
    ]
    assert v.evidence["bad_final"] == {"n1": ["unexpected accounts ['4']"]}
    ops2 = [transfer(OK), bank_read(2.0, {"1": -5, "2": 205, "3": 100})]
    v = check_bank(ops2, {"n1": {"1": 0, "2": 300, "3": 0}}, accounts=ACCOUNTS, total=300, for_update=False)  # type: ignore[arg-type]
    assert v.result is Result.FAIL and v.documented_limitation
    assert v.evidence["bad_reads"]["examples"][0]["problems"] == ["negative balances {'1': -5}"]
    assert v.summary.endswith("(documented limitation: transfers without SELECT ... FOR UPDATE lose updates)")


def test_bank_unknown() -> None:
    good = {"1": 100, "2": 100, "3": 100}
    v = check_bank([transfer(OK)], {"n1": good, "n2": "down"}, accounts=ACCOUNTS, total=300)  # type: ignore[list-item]
    assert (v.result, v.summary) == (Result.UNKNOWN, "could not read balances on n2")
    v = check_bank([transfer(U)], {"n1": good}, accounts=ACCOUNTS, total=300)  # type: ignore[list-item]
    assert (v.result, v.summary) == (Result.UNKNOWN, "no transfer was acknowledged")


# ---- convergence -------------------------------------------------------------------------


def node(name: str, **kw: object) -> NodeState:
    base: dict[str, object] = {
        "answered": True,
        "local_state": "Synced",
        "cluster_status": "Primary",
        "ready": True,
        "size": 3,
        "conf_id": 5,
        "state_uuid": "u-1",
        "last_committed": 100,
        "position": "100",
        "tables": {"sbtest.sbtest1": (1000, 123), "sbtest.cb_ledger": (50, 77)},
    }
    base.update(kw)
    return NodeState(name, **base)  # type: ignore[arg-type]


def test_convergence_pass() -> None:
    v = check_convergence(ConvergenceSnapshot([node("n1"), node("n2"), node("n3")], True, 3), 3)
    assert v.result is Result.PASS
    assert v.summary == "3 nodes ready in one view with quorum of 3, at position 100, 2 tables identical"
    assert v.evidence["nodes"]["n2"]["tables"]["sbtest.sbtest1"] == {"rows": 1000, "checksum": 123}


def test_convergence_fail_on_checksum_state_and_view() -> None:
    snap = ConvergenceSnapshot(
        [
            node("n1"),
            node("n2", tables={"sbtest.sbtest1": (1000, 124), "sbtest.cb_ledger": (50, 77)}),
            node("n3", local_state="Donor/Desynced", ready=False, size=2, conf_id=6),
        ],
        True,
    )
    v = check_convergence(snap, 3)
    assert v.result is Result.FAIL
    assert v.summary == (
        "n3: state Donor/Desynced, not ready, size 2 != 3; view differs: n1=5, n2=5, n3=6; "
        "tables differ between nodes: sbtest.sbtest1"
    )
    assert v.evidence["mismatched_tables"] == {
        "sbtest.sbtest1": {
            "n1": {"rows": 1000, "checksum": 123},
            "n2": {"rows": 1000, "checksum": 124},
            "n3": {"rows": 1000, "checksum": 123},
        }
    }
    missing = ConvergenceSnapshot([node("n1"), node("n2", tables={"sbtest.sbtest1": (1000, 123)})], True)
    v = check_convergence(missing, 3)
    assert v.evidence["mismatched_tables"]["sbtest.cb_ledger"]["n2"] is None


def test_convergence_unknown_when_unread_or_unsettled() -> None:
    v = check_convergence(ConvergenceSnapshot([node("n1"), NodeState("n2", False, "not running")], True), 3)
    assert (v.result, v.summary) == (Result.UNKNOWN, "could not read n2 (not running)")
    v = check_convergence(ConvergenceSnapshot([node("n1"), node("n2")], False, 9, waited=4.5), 3)
    assert (v.result, v.summary) == (Result.UNKNOWN, "the replication position did not settle in 4.5 s")
    assert check_convergence(ConvergenceSnapshot([], True), 3).result is Result.UNKNOWN


def test_collect_convergence_waits_for_two_equal_polls_and_retries_when_moved() -> None:
    seq = iter([(5, 4, 5), (5, 5, 5), (5, 5, 5), (6, 6, 6), (6, 6, 6), (6, 6, 6), (6, 6, 6)])
    reads: list[str] = []

    def read(n: object, schemas: object) -> NodeState:
        reads.append(str(n))
        return node(str(n))

    snap = collect_convergence(
        ["n1", "n2", "n3"],  # type: ignore[list-item]
        clock=StepClock(0.0, 0.0),
        read=read,
        positions=lambda nodes: next(seq),
    )
    # (5,4,5) (5,5,5) (5,5,5): stable; read; then (6,6,6): moved, retry;
    # (6,6,6) (6,6,6): stable; read; (6,6,6): unchanged.
    assert (snap.stable, snap.polls, snap.attempts) == (True, 7, 2)
    assert reads == ["n1", "n2", "n3"] * 2


def test_collect_convergence_gives_up_at_the_deadline() -> None:
    counter = iter(range(1000))
    snap = collect_convergence(
        ["n1"],  # type: ignore[list-item]
        timeout=2.0,
        poll=0.5,
        clock=StepClock(0.0, 0.0),
        read=lambda n, s: node(str(n)),
        positions=lambda nodes: (next(counter),),
    )
    assert (snap.stable, snap.polls, snap.attempts, snap.waited) == (False, 4, 1, 2.0)
    assert check_convergence(snap, 3).result is Result.UNKNOWN


# ---- split brain -------------------------------------------------------------------------

M = "198.18.0.11:3306,198.18.0.12:3306,198.18.0.13:3306"


def s(t: float, n: str, status: str = "Primary", size: int = 3, conf: int = 3, uuid: str = "u-1",
      members: str = M, answered: bool = True) -> MonitorSample:  # fmt: skip
    return MonitorSample(t, 1e9 + t, n, answered, status, size, conf, uuid, "Synced", True, 10, members)


def test_split_brain_pass_through_a_transition() -> None:
    two = "198.18.0.11:3306,198.18.0.12:3306"
    samples = [
        s(0.0, "n1"), s(0.0, "n2"), s(0.0, "n3"),
        # n2 killed: n1 already in the 2-member view, n3 still reports the old 3-member view
        s(1.0, "n1", size=2, conf=4, members="198.18.0.11:3306,198.18.0.13:3306"),
        s(1.0, "n2", answered=False), s(1.1, "n3"),
        s(2.0, "n3", size=2, conf=4, members="198.18.0.11:3306,198.18.0.13:3306"),
        s(3.0, "n2", status="non-Primary", size=1, conf=-1, members=two),
        s(4.0, "n1", conf=5), s(4.0, "n2", conf=5), s(4.0, "n3", conf=5),
    ]  # fmt: skip
    v = check_split_brain(samples, 3)
    assert v.result is Result.PASS
    assert v.summary == "at most one component with quorum in 11 samples of 3 nodes"
    assert v.evidence["max_primary_components"] == 1
    assert v.evidence["primary_views"] == [
        {"uuid": "u-1", "conf_id": 3, "size": 3},
        {"uuid": "u-1", "conf_id": 4, "size": 2},
        {"uuid": "u-1", "conf_id": 5, "size": 3},
    ]


def test_split_brain_fails_on_two_primary_components() -> None:
    samples = [
        s(0.0, "n1", size=2, conf=4, members="198.18.0.11:3306,198.18.0.12:3306"),
        s(0.0, "n2", size=2, conf=4, members="198.18.0.11:3306,198.18.0.12:3306"),
        # n3 bootstrapped on its own: a second Primary component with a new history
        s(0.5, "n3", size=1, conf=1, uuid="u-2", members="198.18.0.13:3306"),
    ]
    v = check_split_brain(samples, 3)
    assert v.result is Result.FAIL
    assert v.summary == "2 components with quorum (sizes sum 3 of 3) at t=0.5 s; 1 samples in violation"
    assert v.evidence["violations"]["examples"][0]["components"] == [
        [{"uuid": "u-1", "conf_id": 4, "size": 2, "nodes": ["n1", "n2"],
          "members": ["198.18.0.11:3306", "198.18.0.12:3306"]}],
        [{"uuid": "u-2", "conf_id": 1, "size": 1, "nodes": ["n3"], "members": ["198.18.0.13:3306"]}],
    ]  # fmt: skip


def test_split_brain_same_history_disjoint_members_and_size_sum() -> None:
    a = s(0.0, "n1", size=2, conf=7, members="198.18.0.11:3306,198.18.0.12:3306")
    b = s(0.0, "n3", size=2, conf=8, members="198.18.0.13:3306,198.18.0.14:3306")
    assert check_split_brain([a, b], 4).result is Result.FAIL
    # Unknown membership, one history: a transition, unless the sizes exceed N.
    c = s(0.0, "n1", size=3, conf=7, members="")
    d = s(0.0, "n2", size=2, conf=8, members="AUTO,AUTO")
    assert check_split_brain([c, d], 3).result is Result.PASS
    e = s(0.0, "n1", size=2, conf=7, uuid="u-1", members="")
    f = s(0.0, "n2", size=2, conf=1, uuid="u-2", members="")
    v = check_split_brain([e, f], 3)
    assert v.result is Result.FAIL and v.evidence["violations"]["examples"][0]["size_sum"] == 4


def test_split_brain_stale_samples_expire_and_no_answers_is_unknown() -> None:
    old = s(0.0, "n3", size=1, conf=1, uuid="u-2", members="198.18.0.13:3306")
    new = s(5.0, "n1", size=2, conf=4, members="198.18.0.11:3306,198.18.0.12:3306")
    assert check_split_brain([old, new], 3, stale=3.0).result is Result.PASS
    assert check_split_brain([old, new], 3, stale=10.0).result is Result.FAIL
    v = check_split_brain([s(0.0, "n1", answered=False)], 3)
    assert (v.result, v.summary) == (Result.UNKNOWN, "no monitor sample answered")
    assert check_split_brain([], 3).result is Result.UNKNOWN


# ---- availability ------------------------------------------------------------------------


def probe(
    t0: float, t1: float, outcome: Outcome, process: str = "balancer", code: int | None = None
) -> object:
    return op(None, outcome, t0, t1, workload="probe", kind="probe", process=process, code=code)


def test_availability_exact_figures() -> None:
    ops = [
        probe(9.0, 9.01, OK),
        probe(9.9, 10.3, U, code=2013),  # in flight at the fault, fails after it
        probe(10.4, 10.41, F, code=2003),
        probe(10.5, 10.51, F, code=2003),
        probe(10.6, 12.6, OK),  # slow but ok, started before the last failure
        probe(10.7, 10.71, F, code=1047),
        probe(10.8, 10.85, OK),  # first ok after the last failure
        probe(11.0, 11.01, OK),
        probe(10.0, 10.02, OK, process="node:1"),
        probe(10.1, 10.12, OK, process="node:1"),
        op("1:1", F, 10.2, 10.3, code=2013),  # a ledger op: not a probe, ignored by default
    ]
    figs = availability(ops, [FaultWindow("kill n2", 10.0, 14.0)])  # type: ignore[arg-type]
    assert len(figs) == 1
    bal, n1 = figs[0].paths
    assert bal == PathFigures(
        process="balancer",
        ops=7,
        errors=4,
        first_error_after=0.3,
        unavailable_from=10.0,
        unavailable_until=10.85,
        unavailable=0.85,
        recovered=True,
        errors_by_code={"1047": 1, "2003": 2, "2013": 1},
        max_latency=2.0,
        max_ok_latency=2.0,
    )
    assert n1 == PathFigures("node:1", 2, 0, None, None, None, 0.0, True, {}, 0.02, 0.02)
    with_ledger = availability(ops, [FaultWindow("kill n2", 10.0, 14.0)], workloads=("probe", "ledger"))  # type: ignore[arg-type]
    assert [p.process for p in with_ledger[0].paths] == ["balancer", "node:1"]
    assert with_ledger[0].paths[0].errors == 5


def test_availability_scopes_each_fault_and_reports_unrecovered_paths() -> None:
    ops = [probe(1.0, 1.1, F, code=2003), probe(2.0, 2.1, OK), probe(5.5, 5.6, F), probe(6.0, 6.1, F)]
    figs = availability(ops, [FaultWindow("b", 5.0, 7.0), FaultWindow("a", 0.5, 3.0)])  # type: ignore[arg-type]
    assert [f.fault.name for f in figs] == ["a", "b"]
    a, b = figs[0].paths[0], figs[1].paths[0]
    assert (a.ops, a.unavailable, a.recovered) == (2, 1.1, True)
    assert (b.ops, b.unavailable_from, b.unavailable, b.recovered) == (2, 5.5, None, False)
    v = availability_verdict(figs)
    assert (v.result, v.summary) == (Result.FAIL, "never recovered: b/balancer")
    v = availability_verdict(figs[:1], max_unavailable=1.0)
    assert (v.result, v.summary) == (
        Result.FAIL, "balancer unavailable 1.1 s (from 1.0 s to 2.1 s, a), over its 1 s budget"
    )  # fmt: skip
    v = availability_verdict(figs[:1], max_unavailable=2.0)
    assert (v.result, v.summary) == (Result.PASS, "every path recovered; longest window 1.10 s (a/balancer)")


PARTITION_THEN_KILL = [FaultWindow("partition", 3.0, 12.0), FaultWindow("kill-balancer", 32.0, 36.0)]


def test_a_probe_cut_by_the_next_fault_is_that_faults_not_a_recovery_that_never_came() -> None:
    """CI's partition-then-kill-balancer drill: the path recovered after the partition, then the
    probe in flight when the balancer was killed failed (2013). It is the kill's failure; charged
    to the partition it read "never recovered" (3 of 7 suite runs)."""
    ops: list[Any] = [
        probe(2.9, 2.91, OK), probe(6.0, 9.0, U, code=2013), probe(9.1, 12.1, U, code=2013),
        probe(12.2, 12.21, OK), probe(31.879, 31.887, OK),
        probe(31.979, 32.004, U, code=2013),  # in flight at the kill
        probe(32.079, 32.08, F, code=2003), probe(36.3, 36.31, OK),
    ]  # fmt: skip
    part, kill = availability(ops, PARTITION_THEN_KILL)
    p, k = part.paths[0], kill.paths[0]
    assert (p.ops, p.errors, p.errors_by_code, p.recovered) == (4, 2, {"2013": 2}, True)
    assert (p.unavailable_from, p.unavailable_until, p.unavailable) == (6.0, 12.21, 6.21)
    assert (k.ops, k.errors, k.errors_by_code, k.unavailable) == (3, 2, {"2003": 1, "2013": 1}, 4.31)
    assert availability_verdict([part, kill]).result is Result.PASS


@pytest.mark.parametrize(
    "ops",
    [
        # the partition's outage still lasted: its last failure ended just before the kill
        [probe(2.9, 2.91, OK), probe(6.0, 31.9, U, code=2013), probe(31.95, 32.1, U, code=2013)],
        # an ok op ended before the cut probe began, but it started before the last failure
        [probe(6.0, 9.0, U, code=2013), probe(8.0, 9.5, OK), probe(8.5, 31.9, F, code=2013),
         probe(31.95, 32.1, U, code=2013)],
        # no failure ended in the window and no ok op either: a hang from the fault's start
        [probe(3.05, 33.0, U, code=2013)],
    ],
)  # fmt: skip
def test_a_failure_across_the_next_faults_start_stays_this_faults_while_it_lasts(ops: list[Any]) -> None:
    part, _ = availability(ops, PARTITION_THEN_KILL)
    failed = [o for o in ops if o.outcome is not OK and o.t_start < 32.0]
    assert (part.paths[0].recovered, part.paths[0].errors) == (False, len(failed))
    assert availability_verdict([part]).summary == "never recovered: partition/balancer"


def test_a_long_write_outage_fails_its_budget_per_path_and_says_when_no_budget_is_set() -> None:
    """Issue 24: a 23-s write outage through the balancer got PASS; with a budget it FAILs naming
    the window; node:1 has a budget of its own; without any budget PASS says none was set."""
    ops = [probe(10.0, 10.1, F, code=2013), probe(33.0, 33.1, OK),
           probe(10.0, 10.1, F, process="node:1"), probe(13.0, 13.1, OK, process="node:1")]  # fmt: skip
    figs = availability(ops, [FaultWindow("kill-node n2", 10.0, 40.0)])  # type: ignore[arg-type]
    v = availability_verdict(figs, {"balancer": 10.0, "node:1": 5.0})
    assert (v.result, v.summary) == (
        Result.FAIL,
        "balancer unavailable 23.1 s (from 10.0 s to 33.1 s, kill-node n2), over its 10 s budget",
    )
    assert availability_verdict(figs, 30.0).result is Result.PASS
    v = availability_verdict(figs)
    assert (v.result, v.summary) == (
        Result.PASS,
        "every path recovered; longest window 23.10 s (kill-node n2/balancer); no outage budget set "
        "(max_outage_s, --max-outage)",
    )


def test_outage_budgets_in_a_scenario_are_checked() -> None:
    from clusterbench.scenario.spec import ScenarioSpec

    spec = ScenarioSpec.model_validate({"verify": {"max_outage_s": {"balancer": 10}}})
    assert spec.verify.max_outage_s == {"balancer": 10.0}
    with pytest.raises(ValueError, match="max_outage_s: node:2 is not a prober target"):
        ScenarioSpec.model_validate({"verify": {"max_outage_s": {"node:2": 10}}})
    with pytest.raises(ValueError, match="budgets are seconds above 0"):
        ScenarioSpec.model_validate({"verify": {"max_outage_s": 0}})
    assert availability_verdict(availability([], [FaultWindow("x", 0, 1)])).result is Result.UNKNOWN


def test_tps_recovery() -> None:
    tps = [(t, 100.0) for t in range(1, 10)] + [
        (10, 96.0),
        (11, 20.0),
        (12, 0.0),
        (13, 90.0),
        (14, 95.0),
        (15, 99.0),
    ]
    assert tps_recovery(tps, 10.0) == (100.0, 4.0)
    assert tps_recovery([(1, 100.0), (2, 100.0), (3, 100.0)], 2.5) == (100.0, 0.0)
    assert tps_recovery([(3, 1.0)], 2.5) == (None, None)
    assert tps_recovery([(1, 100.0), (3, 1.0)], 2.5) == (100.0, None)
    figs = availability([], [FaultWindow("k", 10.0, 12.0)], tps)
    assert (figs[0].tps_baseline, figs[0].tps_recovered_after) == (100.0, 4.0)


@pytest.mark.parametrize("window", [1.0, 30.0])
def test_tps_baseline_window(window: float) -> None:
    tps = [(1.0, 10.0), (2.0, 10.0), (9.5, 100.0)]
    assert tps_recovery(tps, 10.0, window)[0] == (100.0 if window == 1.0 else 10.0)
