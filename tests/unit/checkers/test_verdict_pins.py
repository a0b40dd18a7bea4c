"""Pins for the comparisons that decide PASS/FAIL/UNKNOWN in the checkers, each with a failing
case whose expected value is worked out by hand (benchmarks/mutation.py measures how many small
mutations of this code the unit tests notice)."""

from __future__ import annotations

import json

import pytest

from clusterbench.checkers import (
    ConvergenceSnapshot,
    FaultWindow,
    MonitorSample,
    NodeState,
    Result,
    Verdict,
    availability,
    availability_verdict,
    check_bank,
    check_convergence,
    check_split_brain,
    combine,
)
from clusterbench.checkers.counter import check_counter
from clusterbench.checkers.verdict import exit_code
from clusterbench.history.ops import Op, Outcome
from tests.unit.verify.fakes_verify import op

OK, F, U = Outcome.OK, Outcome.FAIL, Outcome.UNKNOWN


# ---- combine() ----------------------------------------------------------------------------------

PASS_ = Verdict("a", Result.PASS, "")
DOC_FAIL = Verdict("b", Result.FAIL, "", documented_limitation=True)
FAIL_ = Verdict("c", Result.FAIL, "")
UNK = Verdict("d", Result.UNKNOWN, "")


@pytest.mark.parametrize(
    ("verdicts", "want", "code"),
    [
        ([PASS_], Result.PASS, 0),
        ([DOC_FAIL], Result.PASS, 0),  # a documented limitation seen does not fail the run
        ([PASS_, DOC_FAIL], Result.PASS, 0),
        ([DOC_FAIL, UNK], Result.UNKNOWN, 3),
        ([FAIL_], Result.FAIL, 1),
        ([UNK, FAIL_], Result.FAIL, 1),  # a broken promise outranks an unknown
        ([DOC_FAIL, FAIL_], Result.FAIL, 1),
        ([PASS_, UNK], Result.UNKNOWN, 3),
        ([], Result.UNKNOWN, 3),  # nothing ran: never PASS
    ],
)
def test_combine(verdicts: list[Verdict], want: Result, code: int) -> None:
    assert combine(verdicts) is want
    assert exit_code(combine(verdicts)) == code


def test_verdict_json() -> None:
    v = Verdict("x", Result.FAIL, "s", {"k": 1}, documented_limitation=True)
    assert v.to_json() == {
        "checker": "x", "result": "FAIL", "summary": "s", "evidence": {"k": 1}, "documented_limitation": True,
    }  # fmt: skip


# ---- bank: a balance just below zero ------------------------------------------------------------


def _read(balances: dict[str, int]) -> Op:
    return op(None, OK, 1.0, workload="bank", kind="read", value=json.dumps(balances))


def test_bank_flags_minus_one_but_not_zero() -> None:
    transfer = op("1>2", OK, workload="bank", kind="transfer", value="1")
    final = {"n1": {"1": 0, "2": 200, "3": 100}}
    bad = check_bank([transfer, _read({"1": -1, "2": 201, "3": 100})], final, accounts=[1, 2, 3], total=300)
    assert bad.result is Result.FAIL
    assert bad.evidence["bad_reads"]["examples"][0]["problems"] == ["negative balances {'1': -1}"]
    good = check_bank([transfer, _read({"1": 0, "2": 200, "3": 100})], final, accounts=[1, 2, 3], total=300)
    assert good.result is Result.PASS


# ---- counter: a loss is measured against the lowest node ----------------------------------------


def _inc(outcome: Outcome) -> Op:
    return Op("counter", 1, "node:1", "x", "incr", "increment/1", None, 0, 0, 0.0, 0.01, outcome)


def test_counter_loss_is_against_the_lowest_node() -> None:
    final = {"n1": {"increment/1": 10}, "n2": {"increment/1": 8}}
    v = check_counter([_inc(OK)] * 10, final, mode="increment")
    assert v.result is Result.FAIL
    assert v.evidence["lost"] == 2 and v.evidence["keys"]["increment/1"]["lost"] == 2
    assert "increment/1: 10 acknowledged increments, value 8: 2 lost" in v.summary


def test_counter_value_exactly_at_the_bounds_passes() -> None:
    ops = [_inc(OK)] * 4 + [_inc(U)] * 2
    for value in (4, 6):  # ok and ok + unknown are both allowed
        assert check_counter(ops, {"n1": {"increment/1": value}}, mode="increment").result is Result.PASS
    for value in (3, 7):
        assert check_counter(ops, {"n1": {"increment/1": value}}, mode="increment").result is Result.FAIL


# ---- convergence: position, group id and quorum each fail on their own --------------------------


def _node(name: str, **kw: object) -> NodeState:
    base: dict[str, object] = {
        "answered": True, "local_state": "Synced", "cluster_status": "Primary", "ready": True, "size": 3,
        "conf_id": 5, "state_uuid": "u-1", "last_committed": 100, "position": "100",
        "tables": {"sbtest.t": (10, 1)},
    }  # fmt: skip
    base.update(kw)
    return NodeState(name, **base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("odd", "summary"),
    [
        ({"position": "101"}, "replication position differs: n1=100, n2=100, n3=101"),
        ({"state_uuid": "u-2"}, "group id differs: n1=u-1, n2=u-1, n3=u-2"),
        ({"cluster_status": "non-Primary"}, "n3: status non-Primary"),
        ({"ready": False}, "n3: state Synced, not ready"),
        ({"size": 4}, "n3: size 4 != 3"),
    ],
)
def test_convergence_each_difference_fails_alone(odd: dict[str, object], summary: str) -> None:
    v = check_convergence(ConvergenceSnapshot([_node("n1"), _node("n2"), _node("n3", **odd)], True), 3)
    assert (v.result, v.summary) == (Result.FAIL, summary)


def test_convergence_needs_more_than_one_readable_node_to_compare() -> None:
    snap = ConvergenceSnapshot([_node("n1", position="7"), NodeState("n2", False, "down")], True)
    v = check_convergence(snap, 3)
    assert (v.result, v.summary) == (Result.UNKNOWN, "could not read n2 (down)")


# ---- split brain: the sizes of a component's views sum as its largest one -----------------------


def _sample(t: float, n: str, size: int, conf: int, members: str) -> MonitorSample:
    return MonitorSample(t, 1e9 + t, n, True, "Primary", size, conf, "u-1", "Synced", True, 10, members)


def test_split_brain_sums_each_component_by_its_largest_view() -> None:
    # one component in transition (same history, overlapping members): views of 4 and 2 members
    small = _sample(0.0, "n2", 2, 8, "a:1,b:1")
    big = _sample(0.1, "n1", 4, 7, "a:1,b:1,c:1,d:1")
    v = check_split_brain([big, small], 3)
    assert v.result is Result.FAIL and v.evidence["violations"]["examples"][0]["size_sum"] == 4
    assert v.summary == "1 components with quorum (sizes sum 4 of 3) at t=0.1 s; 1 samples in violation"
    assert check_split_brain([big, small], 4).result is Result.PASS


# ---- availability: recovery is an ok probe that began after the last failure -------------------


def _probe(t0: float, t1: float, outcome: Outcome) -> Op:
    return op(None, outcome, t0, t1, workload="probe", kind="probe", process="balancer")


def test_availability_ok_before_or_during_the_last_failure_is_no_recovery() -> None:
    ops = [_probe(9.0, 9.1, OK), _probe(10.0, 12.0, OK), _probe(10.5, 10.6, F)]
    figs = availability(ops, [FaultWindow("kill", 10.0, 20.0)])
    (path,) = figs[0].paths
    assert (path.recovered, path.unavailable, path.unavailable_until) == (False, None, None)
    v = availability_verdict(figs)
    assert (v.result, v.summary) == (Result.FAIL, "never recovered: kill/balancer")
    # an ok probe that starts exactly when the last failed one started did not start after it
    same = [_probe(10.5, 10.6, F), _probe(10.5, 10.7, OK)]
    assert availability(same, [FaultWindow("kill", 10.0, 20.0)])[0].paths[0].recovered is False
    later = [_probe(10.5, 10.6, F), _probe(10.6, 10.7, OK)]
    (p,) = availability(later, [FaultWindow("kill", 10.0, 20.0)])[0].paths
    assert (p.recovered, p.unavailable, p.first_error_after) == (True, pytest.approx(0.2), pytest.approx(0.6))


def test_availability_budget_is_inclusive() -> None:
    ops = [_probe(10.0, 10.1, F), _probe(10.2, 10.5, OK)]  # unavailable 10.0 .. 10.5
    figs = availability(ops, [FaultWindow("kill", 10.0, 20.0)])
    assert availability_verdict(figs, max_unavailable=0.5).result is Result.PASS
    v = availability_verdict(figs, max_unavailable=0.4)
    assert (v.result, v.summary) == (
        Result.FAIL, "balancer unavailable 0.5 s (from 10.0 s to 10.5 s, kill), over its 0.4 s budget"
    )


# ---- trial: each tolerance at its edge ----------------------------------------------------------


def test_trial_tolerances_at_their_edges() -> None:
    from clusterbench.checkers.trial import FaultRun, TrialRun, VerifierRun, check_trial, in_windows, outside

    def trial(**kw: object) -> TrialRun:
        base: dict[str, object] = {"load_status": "completed", "load_failure": None, "planned_s": 60.0,
                                   "measured_s": 60.0}  # fmt: skip
        base.update(kw)
        return TrialRun(**base)  # type: ignore[arg-type]

    # 60 s planned: measured must reach min(0.9 x 60, 60 - 1.5) = 54 s
    assert check_trial(trial(measured_s=54.0)).result is Result.PASS
    short = check_trial(trial(measured_s=53.96))
    want = "not as planned: the load was measured for 54 of 60 s"
    assert (short.result, short.summary) == (Result.UNKNOWN, want)
    # 8 s planned: min(7.2, 6.5) = 6.5 s
    assert check_trial(trial(planned_s=8.0, measured_s=6.5)).result is Result.PASS
    assert check_trial(trial(planned_s=8.0, measured_s=6.4)).result is Result.UNKNOWN
    assert check_trial(trial(planned_s=0.0, measured_s=0.0)).result is Result.PASS
    # a fault may start up to 5 s late and be healed up to 0.5 s early
    on_edge = FaultRun("kill-node n2", 10.0, 20.0, 15.0, 19.5)
    assert check_trial(trial(faults=[on_edge])).summary == (
        "ran as planned: 60 s of load, 1 fault(s) applied and healed on time"
    )
    late = check_trial(trial(faults=[FaultRun("kill-node n2", 10.0, 20.0, 15.05, 19.45)]))
    assert late.summary == (
        "not as planned: kill-node n2 was applied at 15.1 s, planned at 10 s; "
        "kill-node n2 was healed at 19.4 s, planned at 20 s"
    )
    never = check_trial(trial(faults=[FaultRun("pause-node n1", 3.5, None, None, None)]))
    assert never.summary == "not as planned: pause-node n1 was never applied (planned at 3.5 s)"
    # a verifier must record half of what its rate asks, once it asks for 10 or more
    assert check_trial(trial(verifiers=[VerifierRun("ledger", 10.0, 5)])).summary.endswith(
        ", verifiers at their rates"
    )
    few = check_trial(trial(verifiers=[VerifierRun("ledger", 10.0, 4)]))
    assert few.summary == (
        "not as planned: the ledger verifier recorded 4 operations outside faults, about 10 expected"
    )
    assert check_trial(trial(verifiers=[VerifierRun("bank", 9.9, 0)])).result is Result.PASS
    failed = check_trial(trial(load_status="failed", measured_s=60.04))
    assert failed.summary == "not as planned: the load failed: no reason recorded"
    load = {"status": "failed", "failure": None, "planned_s": 60.0, "measured_s": 60.0}
    assert failed.evidence["load"] == load
    # seconds outside overlapping windows, and inside them
    assert outside(0.0, 10.0, [(2.0, 4.0), (3.0, 5.0), (7.0, 8.0), (12.0, 13.0)]) == 6.0
    assert outside(0.0, 10.0, [(-1.0, 1.0), (9.0, 11.0)]) == 8.0
    assert outside(0.0, 10.0, [(2.0, 4.0), (4.0, 6.0)]) == 6.0
    assert outside(5.0, 5.0, [(0.0, 10.0)]) == 0.0
    assert (in_windows(2.0, [(2.0, 4.0)]), in_windows(4.0, [(2.0, 4.0)]), in_windows(4.1, [(2.0, 4.0)])) == (
        True, True, False,
    )  # fmt: skip


def test_trial_outside_more_windows_and_a_later_start() -> None:
    from clusterbench.checkers.trial import outside

    assert outside(0.0, 10.0, [(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)]) == 7.0  # three separate windows
    assert outside(5.0, 10.0, [(6.0, 7.0)]) == 4.0


def test_unknown_verdicts_keep_their_name_and_evidence() -> None:
    from clusterbench.checkers.vip import VipSample, check_vip

    bank_ops = [op("1>2", OK, workload="bank", kind="transfer", value="5")]
    good = {"1": 100, "2": 100, "3": 100}
    for v, name, key, value in (
        (check_bank(bank_ops, {}, accounts=[1, 2, 3], total=300), "bank", "unreadable_nodes", {}),
        (check_bank([], {"n1": good}, accounts=[1, 2, 3], total=300), "bank", "transfers",
         {"ok": 0, "fail": 0, "unknown": 0}),
        (check_bank(bank_ops, {"n1": "down"}, accounts=[1, 2, 3], total=300), "bank", "unreadable_nodes",
         {"n1": "down"}),
        (check_counter([_inc(OK)], {}, mode="increment"), "counter:increment", "unreadable_nodes", {}),
        (check_counter([_inc(OK)], {"n1": "x"}, mode="increment"), "counter:increment", "unreadable_nodes",
         {"n1": "x"}),
        (check_counter([_inc(U)], {"n1": {"increment/1": 0}}, mode="increment"), "counter:increment", "lost",
         0),
        (check_vip([VipSample(0.0, 0.0, ("lb1",))]), "vip", "samples", 1),
    ):  # fmt: skip
        assert (v.checker, v.evidence[key]) == (name, value), v.summary
    from clusterbench.checkers import check_ledger

    for v in (check_ledger([], {}), check_ledger([], {"n1": "x"}), check_ledger([], {"n1": set()})):
        assert v.checker == "ledger" and v.result is Result.UNKNOWN and v.evidence["ops"] == {
            "ok": 0, "fail": 0, "unknown": 0}  # fmt: skip
    snaps = (ConvergenceSnapshot([_node("n1"), _node("n2")], False, waited=1.0),
             ConvergenceSnapshot([_node("n1"), NodeState("n2", False)], True))  # fmt: skip
    for snap in snaps:
        c = check_convergence(snap, 3)
        assert c.checker == "convergence" and c.evidence["nodes"]["n1"]["position"] == "100"
    assert check_convergence(snaps[1], 3).summary == "could not read n2 (no answer)"
