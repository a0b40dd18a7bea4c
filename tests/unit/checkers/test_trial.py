"""The trial checker: PASS only when the trial ran as planned, with negative controls for each way
a trial can go wrong (the load died, a fault never applied, applied late, cut short, a verifier
that stalled), and its wiring into the scenario engine."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from clusterbench.checkers.trial import FaultRun, TrialRun, VerifierRun, check_trial, in_windows, outside
from clusterbench.checkers.verdict import Result, Verdict, combine, exit_code
from clusterbench.faults.spec import FaultSpec, plan
from clusterbench.scenario.spec import LoadSpec, ScenarioSpec
from clusterbench.workloads.parse import Sample

KILL = FaultRun("kill-node n2", at=20, until=35, started=20.01, ended=35.0)
GOOD = TrialRun(
    load_status="completed",
    load_failure=None,
    planned_s=60,
    measured_s=60,
    faults=[KILL],
    verifiers=[
        VerifierRun("ledger", expected=1800, recorded=1790),
        VerifierRun("probe", expected=450, recorded=440),
    ],
)


def test_a_short_trial_may_miss_one_report_interval() -> None:
    short = dataclasses.replace(GOOD, planned_s=8, measured_s=7, faults=[])
    assert check_trial(short).result is Result.PASS
    shorter = dataclasses.replace(GOOD, planned_s=8, measured_s=6, faults=[])
    v = check_trial(shorter)
    assert v.result is Result.UNKNOWN and "the load was measured for 6 of 8 s" in v.summary


def test_ran_as_planned_passes() -> None:
    v = check_trial(GOOD)
    assert v.result is Result.PASS
    assert v.summary == (
        "ran as planned: 60 s of load, 1 fault(s) applied and healed on time, verifiers at their rates"
    )
    assert v.evidence["load"] == {"status": "completed", "failure": None, "planned_s": 60, "measured_s": 60}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {
                "load_status": "failed",
                "load_failure": "sysbench oltp_read_write failed: FATAL: ... error 1146",
            },
            "the load failed: sysbench oltp_read_write failed: FATAL: ... error 1146",
        ),
        ({"measured_s": 12}, "the load was measured for 12 of 60 s"),
        (
            {"faults": [FaultRun("kill-node n2", 20, 35, None, None)]},
            "kill-node n2 was never applied (planned at 20 s)",
        ),
        (
            {"faults": [FaultRun("kill-node n2", 20, 35, 31.2, 35.0)]},
            "kill-node n2 was applied at 31.2 s, planned at 20 s",
        ),
        (
            {"faults": [FaultRun("kill-node n2", 20, 35, 20.0, 24.3)]},
            "kill-node n2 was healed at 24.3 s, planned at 35 s",
        ),
        (
            {"verifiers": [VerifierRun("ledger", expected=1800, recorded=300)]},
            "the ledger verifier recorded 300 operations outside faults, about 1800 expected",
        ),
    ],
)
def test_not_as_planned_is_unknown_never_pass(change: dict[str, Any], reason: str) -> None:
    fields = {**GOOD.__dict__, **change}
    v = check_trial(TrialRun(**fields))
    assert v.result is Result.UNKNOWN
    assert v.summary == f"not as planned: {reason}"
    # whatever the other checkers say, the drill is not PASS: exit 2
    others = [Verdict("ledger", Result.PASS, "ok"), Verdict("convergence", Result.PASS, "ok")]
    assert combine([v, *others]) is Result.UNKNOWN
    assert exit_code(combine([v, *others])) == 3  # UNKNOWN: could not decide (2 is bad input)


def test_a_fail_stays_a_fail_when_the_trial_also_went_wrong() -> None:
    v = check_trial(TrialRun(**{**GOOD.__dict__, "load_status": "failed"}))
    assert combine([v, Verdict("ledger", Result.FAIL, "1 lost")]) is Result.FAIL


def test_a_fault_that_ends_by_itself_and_small_verifiers_are_not_judged() -> None:
    rolling = FaultRun("rolling-restart n1,n2,n3", 5, None, 5.0, 5.0)
    t = TrialRun("completed", None, 30, 30, [rolling], [VerifierRun("bank", expected=4, recorded=0)])
    assert check_trial(t).result is Result.PASS


def test_seconds_outside_windows() -> None:
    assert outside(0, 60, []) == 60
    assert outside(0, 60, [(20, 35)]) == 45
    assert outside(0, 60, [(20, 35), (30, 40), (55, 70)]) == 35
    assert outside(10, 5, [(0, 1)]) == 0
    assert in_windows(20, [(20, 35)]) and not in_windows(36, [(20, 35)])


# ---- wiring: the pipeline feeds the checker what really happened ------------------------------


def sample(t: float) -> Sample:
    return Sample(t=t, interval=1.0, threads=4, events=100, reads=0, writes=0, other=0, errors=0,
                  reconnects=0, percentile=95, lat_pct_ms=2.5)  # fmt: skip


def test_engine_reports_a_load_that_died_before_its_fault(tmp_path: Path) -> None:
    from clusterbench.faults.nemesis import FaultRecord
    from clusterbench.trial.checks import trial_run

    spec = ScenarioSpec(
        load=LoadSpec(duration=60),
        fault=[FaultSpec.model_validate({"kind": "kill-node", "target": "node:2", "at": 20, "for": 15})],
    )
    faults = plan(list(spec.fault), 3, 1, 60)
    samples = [sample(float(t)) for t in range(1, 13)]  # 12 samples, then the load died
    run = trial_run("failed", "oltp_read_write: sysbench oltp_read_write failed: FATAL: 1146", 60.0, samples,
                    [FaultRecord(f) for f in faults], [], [])  # fmt: skip
    v = check_trial(run)
    assert v.result is Result.UNKNOWN
    assert v.summary == (
        "not as planned: the load failed: oltp_read_write: sysbench oltp_read_write failed: FATAL: 1146; "
        "the load was measured for 12 of 60 s; kill-node n2 was never applied (planned at 20 s)"
    )
