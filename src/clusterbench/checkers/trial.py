"""Did the trial run as planned? A drill's verdicts only mean something when its load ran for its
whole time, every scheduled fault was applied on time and lasted as long as planned, and the
verification workloads really worked beside it. This checker says PASS only then; otherwise
UNKNOWN with the reasons, so that `overall` can never be PASS over a failed trial (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict

NAME = "trial"

# A fault that starts this much after its planned time did not run as planned (the nemesis was
# busy with an earlier fault's slow heal, or the trial was stopping).
LATE_S = 5.0
# Healed this much before its planned end: cut short (the load ended early and everything healed).
EARLY_S = 0.5
# Share of the planned load seconds that per-second samples must cover; a short trial may always
# miss one report interval (sysbench does not report the last, partial second: 7 intervals of an
# 8 s load were seen on a busy machine).
MIN_SAMPLE_SHARE = 0.9
MISSING_S = 1.5
# Share of the operations a verifier should have recorded outside fault windows.
MIN_OPS_SHARE = 0.5


@dataclass(frozen=True)
class FaultRun:
    label: str
    at: float  # planned start, seconds after the load started
    until: float | None  # planned end (None: it ends by itself)
    started: float | None  # when it was applied (None: never)
    ended: float | None
    error: str | None = None


@dataclass(frozen=True)
class VerifierRun:
    workload: str  # ledger, bank, probe
    expected: float  # operations it should have recorded outside fault windows at its rate
    recorded: int  # operations it recorded outside fault windows (any outcome)


@dataclass(frozen=True)
class TrialRun:
    load_status: str  # completed, failed, interrupted
    load_failure: str | None
    planned_s: float  # seconds of load asked for
    measured_s: float  # seconds covered by per-second samples
    faults: Sequence[FaultRun] = ()
    verifiers: Sequence[VerifierRun] = ()
    notes: list[str] = field(default_factory=list)


def check_trial(t: TrialRun) -> Verdict:
    problems: list[str] = []
    if t.load_status != "completed":
        problems.append(f"the load {t.load_status}: {t.load_failure or 'no reason recorded'}")
    if t.planned_s > 0 and t.measured_s < min(MIN_SAMPLE_SHARE * t.planned_s, t.planned_s - MISSING_S):
        problems.append(f"the load was measured for {t.measured_s:.0f} of {t.planned_s:.0f} s")
    for f in t.faults:
        if f.started is None:
            problems.append(f"{f.label} was never applied (planned at {f.at:g} s)")
            continue
        if f.started > f.at + LATE_S:
            problems.append(f"{f.label} was applied at {f.started:.1f} s, planned at {f.at:g} s")
        if f.until is not None and f.ended is not None and f.ended < f.until - EARLY_S:
            problems.append(f"{f.label} was healed at {f.ended:.1f} s, planned at {f.until:g} s")
    for v in t.verifiers:
        if v.expected >= 10 and v.recorded < MIN_OPS_SHARE * v.expected:
            problems.append(
                f"the {v.workload} verifier recorded {v.recorded} operations outside faults, "
                f"about {v.expected:.0f} expected"
            )
    evidence: dict[str, Any] = {
        "load": {
            "status": t.load_status,
            "failure": t.load_failure,
            "planned_s": t.planned_s,
            "measured_s": round(t.measured_s, 1),
        },
        "faults": [f.__dict__ for f in t.faults],
        "verifiers": [v.__dict__ for v in t.verifiers],
    }
    if problems:
        return Verdict(NAME, Result.UNKNOWN, "not as planned: " + "; ".join(problems), evidence)
    n = len(t.faults)
    return Verdict(
        NAME,
        Result.PASS,
        f"ran as planned: {t.measured_s:.0f} s of load, {n} fault(s) applied and healed on time"
        + (", verifiers at their rates" if t.verifiers else ""),
        evidence,
    )


def outside(t0: float, t1: float, windows: Sequence[tuple[float, float]]) -> float:
    """Seconds of [t0, t1] not covered by any window (windows may overlap)."""
    if t1 <= t0:
        return 0.0
    spans = sorted((max(t0, a), min(t1, b)) for a, b in windows if b > t0 and a < t1)
    covered = 0.0
    cur_a: float | None = None
    cur_b = 0.0
    for a, b in spans:
        if cur_a is None or a > cur_b:
            if cur_a is not None:
                covered += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_a is not None:
        covered += cur_b - cur_a
    return (t1 - t0) - covered


def in_windows(t: float, windows: Sequence[tuple[float, float]]) -> bool:
    return any(a <= t <= b for a, b in windows)
