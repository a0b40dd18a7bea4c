"""C7 availability figures: pure arithmetic over prober (or any client) ops, fault windows and
optional per-second tps samples. All times are trial times (monotonic seconds since the trial start).

Per fault and per entry point (op.process), over the ops that end after the fault starts and start
before the next fault starts, with one exception. A failed op still in flight when the next fault
starts counts for the next fault when the path had recovered before the op began: an ok op had
ended by then that started after this fault's last failure (the last that ended before the next
fault; any ok op, when none did). Such a probe, cut at the window's end by a balancer kill say,
says nothing about this fault; while this fault's outage still lasts, it stays this fault's.
- first_error_after: from the fault's start to the end of the first op that did not succeed;
- unavailable: from the start of the first failed op (not earlier than the fault start) to the end
  of the first ok op that started after the last failed op started (the write-unavailability
  window); `recovered` is False when no such ok op exists;
- errors_by_code: the failed (fail or unknown) ops per MySQL error code ('none' for timeouts);
- max_latency / max_ok_latency: the slowest op of any outcome / the slowest ok op.
Per fault, with tps samples: the pre-fault median tps over `baseline_window` seconds and the time
from the fault start until tps is back to ≥ 95 % of it after its first dip below (0 without a dip).
"Time until Synced" and IST vs SST come from the fault orchestration, not from here.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict
from clusterbench.history.ops import Op, Outcome

NAME = "availability"
TPS_RECOVERED = 0.95


@dataclass(frozen=True)
class FaultWindow:
    name: str
    start: float
    end: float


@dataclass(frozen=True)
class PathFigures:
    process: str
    ops: int
    errors: int
    first_error_after: float | None
    unavailable_from: float | None
    unavailable_until: float | None
    unavailable: float | None
    recovered: bool
    errors_by_code: dict[str, int]
    max_latency: float | None
    max_ok_latency: float | None


@dataclass(frozen=True)
class FaultFigures:
    fault: FaultWindow
    paths: list[PathFigures] = field(default_factory=list)
    tps_baseline: float | None = None
    tps_recovered_after: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def without_next_faults(ops: Sequence[Op], next_start: float) -> list[Op]:
    """`ops` without the failed ones that count for the next fault (the module's exception)."""
    ok = [o for o in ops if o.outcome is Outcome.OK]
    resolved = [o.t_start for o in ops if o.outcome is not Outcome.OK and o.t_end < next_start]
    since = max(resolved, default=float("-inf"))

    def next_ones(o: Op) -> bool:
        return (o.outcome is not Outcome.OK and o.t_end >= next_start
                and any(k.t_start > since and k.t_end <= o.t_start for k in ok))  # fmt: skip

    return [o for o in ops if not next_ones(o)]


def path_figures(
    process: str, ops: Sequence[Op], fault_start: float, next_start: float = float("inf")
) -> PathFigures:
    ops = without_next_faults(ops, next_start)
    failed = [o for o in ops if o.outcome is not Outcome.OK]
    ok = [o for o in ops if o.outcome is Outcome.OK]
    max_lat = max((o.latency for o in ops), default=None)
    max_ok = max((o.latency for o in ok), default=None)
    if not failed:
        return PathFigures(process, len(ops), 0, None, None, None, 0.0, True, {}, _r(max_lat), _r(max_ok))
    first_err = min(o.t_end for o in failed) - fault_start
    frm = max(fault_start, min(o.t_start for o in failed))
    last_fail_start = max(o.t_start for o in failed)
    after = [o.t_end for o in ok if o.t_start > last_fail_start]
    until = min(after) if after else None
    codes = Counter("none" if o.error_code is None else str(o.error_code) for o in failed)
    return PathFigures(
        process=process,
        ops=len(ops),
        errors=len(failed),
        first_error_after=_r(first_err),
        unavailable_from=_r(frm),
        unavailable_until=_r(until),
        unavailable=_r(None if until is None else until - frm),
        recovered=until is not None,
        errors_by_code=dict(sorted(codes.items())),
        max_latency=_r(max_lat),
        max_ok_latency=_r(max_ok),
    )


def tps_recovery(
    tps: Sequence[tuple[float, float]], start: float, baseline_window: float = 30.0
) -> tuple[float | None, float | None]:
    """(pre-fault median tps, seconds from `start` until tps ≥ 95 % of it again after its first dip)."""
    before = [v for t, v in tps if start - baseline_window <= t < start]
    if not before:
        return None, None
    base = statistics.median(before)
    after = sorted((t, v) for t, v in tps if t >= start)
    dip = next((i for i, (_, v) in enumerate(after) if v < TPS_RECOVERED * base), None)
    if dip is None:
        return base, 0.0
    back = next((t for t, v in after[dip:] if v >= TPS_RECOVERED * base), None)
    return base, None if back is None else _r(back - start)


def availability(
    ops: Sequence[Op],
    faults: Sequence[FaultWindow],
    tps: Sequence[tuple[float, float]] | None = None,
    *,
    workloads: Sequence[str] = ("probe",),
    baseline_window: float = 30.0,
) -> list[FaultFigures]:
    ordered = sorted(faults, key=lambda f: f.start)
    out = []
    for i, f in enumerate(ordered):
        until = ordered[i + 1].start if i + 1 < len(ordered) else float("inf")
        scope = [o for o in ops if o.workload in workloads and o.t_end >= f.start and o.t_start < until]
        by_path: dict[str, list[Op]] = {}
        for o in sorted(scope, key=lambda o: o.t_start):
            by_path.setdefault(o.process, []).append(o)
        paths = [path_figures(p, os_, f.start, until) for p, os_ in sorted(by_path.items())]
        base, back = tps_recovery(tps, f.start, baseline_window) if tps else (None, None)
        out.append(FaultFigures(f, paths, base, back))
    return out


Budget = float | dict[str, float] | None


def budget_of(budget: Budget, process: str) -> float | None:
    """A path's outage budget (s): its own, its entry point's ('all-nodes' for 'all-nodes/<ip>'),
    or the one for every path; None when none is set."""
    if budget is None or isinstance(budget, int | float):
        return budget
    return budget.get(process, budget.get(process.split("/", 1)[0]))


def availability_verdict(figures: Sequence[FaultFigures], max_unavailable: Budget = None) -> Verdict:
    """UNKNOWN without ops; FAIL when a path never recovered or stayed unavailable longer than its
    budget (`max_unavailable`: seconds for every path, or per entry point; the scenario's
    `max_outage_s`, `--max-outage`), naming the window; PASS otherwise."""
    evidence = {"faults": [f.to_json() for f in figures], "max_unavailable": max_unavailable}
    paths = [(f.fault.name, p) for f in figures for p in f.paths]
    if not paths:
        return Verdict(NAME, Result.UNKNOWN, "no probe operations during the faults", evidence)
    stuck = [f"{n}/{p.process}" for n, p in paths if not p.recovered]
    over = []
    for n, p in paths:
        limit = budget_of(max_unavailable, p.process)
        if limit is not None and p.unavailable is not None and p.unavailable > limit:
            over.append(f"{p.process} unavailable {p.unavailable:.1f} s (from {p.unavailable_from:.1f} s to "
                        f"{p.unavailable_until:.1f} s, {n}), over its {limit:g} s budget")  # fmt: skip
    if stuck or over:
        parts = ([f"never recovered: {', '.join(stuck)}"] if stuck else []) + over
        return Verdict(NAME, Result.FAIL, "; ".join(parts), evidence)
    worst = max(paths, key=lambda np: np[1].unavailable or 0.0)
    unset = "" if max_unavailable is not None else "; no outage budget set (max_outage_s, --max-outage)"
    return Verdict(
        NAME,
        Result.PASS,
        f"every path recovered; longest window {worst[1].unavailable or 0.0:.2f} s "
        f"({worst[0]}/{worst[1].process}){unset}",
        evidence,
    )
