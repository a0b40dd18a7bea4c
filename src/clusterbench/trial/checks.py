"""What every trial is checked for after its load, from its result (pure): stalls, TPC-C figures
and consistency verdict, what each fault did to the load, and whether the trial ran as planned."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterbench.checkers.availability import tps_recovery
from clusterbench.checkers.tpcc import check_tpcc_consistency, tpcc_unknown
from clusterbench.checkers.trial import FaultRun, TrialRun, VerifierRun
from clusterbench.checkers.verdict import Verdict
from clusterbench.workloads import RunResult, SysbenchOptions, tpcc
from clusterbench.workloads.parse import combine_samples
from clusterbench.workloads.tpcc_check import CheckReport


def trial_stalls(result: RunResult) -> tpcc.Stalls:
    """The stall detector over a trial's per-interval tps, all clients summed."""
    return tpcc.detect_stalls((s.t, s.tps) for s in combine_samples(result.samples))


def tpcc_figures(result: RunResult, opts: SysbenchOptions) -> dict[str, Any] | None:
    """tpmC, tpm and the per-type figures of a tpcc trial (None without the script's counters), with
    the mix asked (`mix`, as new_order=45,payment=43,...)."""
    figures = tpcc.summarize(
        [tpcc.TpccClient(c.samples, c.warmup_samples, c.checkpoint_extra,
                         c.summary.extra if c.summary is not None else None) for c in result.clients],
        result.summary.duration if result.summary is not None else float(opts.time),
    )  # fmt: skip
    if figures is not None:
        figures["mix"] = tpcc.mix_text(opts.mix)
    return figures


def consistency_verdict(reports: Sequence[tuple[str, CheckReport]] | str) -> Verdict:
    """The TPC-C consistency verdict from the reports of every database, or the reason the check
    could not run."""
    if isinstance(reports, str):
        return tpcc_unknown(reports)
    return check_tpcc_consistency(reports)


def fault_effects(
    samples: Sequence[Any], windows: Sequence[tuple[str, float, float]]
) -> list[dict[str, Any]]:
    """Per fault window: the tps before it, how long until tps was back to 95 % of that, and the
    client errors until then (errors often come when healed nodes return), or to the trial's end
    when it never recovered."""
    per_second: dict[int, float] = {}
    errors: dict[int, int] = {}
    for s in samples:
        k = round(s.t)
        per_second[k] = per_second.get(k, 0.0) + s.tps
        errors[k] = errors.get(k, 0) + s.errors
    tps = sorted((float(k), v) for k, v in per_second.items())
    out = []
    for label, start, end in windows:
        base, back = tps_recovery(tps, start, baseline_window=max(1.0, start))
        until = start + back if back is not None else float("inf")
        in_window = sum(v for k, v in errors.items() if start <= k <= max(until, end + 1))
        out.append({
            "fault": label,
            "start": round(start, 2),
            "end": round(end, 2),
            "tps_before": None if base is None else round(base, 1),
            "tps_recovered_after_s": None if back is None else round(back, 2),
            "errors_until_recovered": in_window,
        })  # fmt: skip
    return out


def trial_run(
    status: str,
    failure: str | None,
    planned_s: float,
    samples: Sequence[Any],
    faults: Sequence[Any],
    windows: Sequence[tuple[str, float, float]],
    verifiers: Sequence[VerifierRun],
) -> TrialRun:
    """What the trial checker needs: how the load, the faults (nemesis records) and the verifiers
    really ran."""
    runs = [FaultRun(r.fault.label(), r.fault.at, r.fault.until, r.started, r.ended, r.error) for r in faults]
    measured = sum(s.interval for s in combine_samples(list(samples))) if samples else 0.0
    return TrialRun(
        load_status=status,
        load_failure=failure,
        planned_s=planned_s,
        measured_s=measured,
        faults=runs,
        verifiers=list(verifiers),
    )
