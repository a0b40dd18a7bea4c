"""Two runs of the same shape (two suites, two runs of one test, two drills) compared test by test.

Per test present in both: tps, p95 and p99 of each run (from the stored summaries, the numbers of
the summary table), the relative change of B against A, and whether the per-second tps of the two
trials differ significantly (Welch's t and Mann-Whitney U over the measured seconds). Seconds of
one run are not independent of each other (a slow second tends to follow a slow second), so this
p-value is optimistic: repeat the runs (an experiment with repetitions) to be sure. Experiment runs
are compared point by point over repetitions instead (`experiment.results`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from clusterbench.analysis.report import SummaryRow, summary_rows, trial_series
from clusterbench.analysis.stats import Test, mwu_p, welch_p
from clusterbench.errors import InputError
from clusterbench.store import Store

CAVEAT = (
    "p-values treat the measured seconds of each trial as independent samples; neighbouring seconds "
    "are correlated, so they are optimistic: repeat the runs (an experiment) to be sure"
)


@dataclass(frozen=True)
class TestDiff:
    test: str
    trial_a: int
    trial_b: int
    seconds_a: int
    seconds_b: int
    tps_a: float | None
    tps_b: float | None
    tps_change: float | None  # (b - a) / a
    p95_a: float | None
    p95_b: float | None
    p95_change: float | None
    p99_a: float | None
    p99_b: float | None
    p_welch: float | None
    p_mwu: float | None
    verdict: str  # faster, slower, no significant difference, not compared

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunComparison:
    run_a: int
    run_b: int
    test: Test
    alpha: float
    rows: list[TestDiff]
    only_a: list[str]
    only_b: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a, "run_b": self.run_b, "test": self.test, "alpha": self.alpha,
            "caveat": CAVEAT, "tests": [r.to_json() for r in self.rows],
            "only_in_a": self.only_a, "only_in_b": self.only_b,
        }  # fmt: skip


def _change(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return (b - a) / a


def _keyed(rows: list[SummaryRow]) -> dict[str, SummaryRow]:
    """Rows by test; a test that runs twice in one run is 'test#2' the second time."""
    out: dict[str, SummaryRow] = {}
    for r in rows:
        key, k = r.workload, 1
        while key in out:
            k += 1
            key = f"{r.workload}#{k}"
        out[key] = r
    return out


def _tps_seconds(store: Store, run_id: int, seq: int) -> list[float]:
    trial = next(t for t in store.trials(run_id) if t.seq == seq)
    return [p.tps for p in trial_series(store, trial.id) if p.complete]


def compare_runs(
    store: Store, run_a: int, run_b: int, *, test: Test = "welch", alpha: float = 0.05
) -> RunComparison:
    """B against A, test by test. InputError when they share no test."""
    a, b = _keyed(summary_rows(store, run_a)), _keyed(summary_rows(store, run_b))
    common = [k for k in a if k in b]
    if not common:
        raise InputError(
            f"runs {run_a} and {run_b} have no sysbench test in common; compare two runs of the same "
            "tests (`clusterbench results list` shows what each ran)"
        )
    rows = []
    for key in common:
        x, y = a[key], b[key]
        sa, sb = _tps_seconds(store, run_a, x.trial), _tps_seconds(store, run_b, y.trial)
        pw, pm = welch_p(sa, sb), mwu_p(sa, sb)
        p = pw if test == "welch" else pm
        change = _change(x.tps, y.tps)
        if p is None or change is None:
            verdict = "not compared"
        elif p >= alpha or change == 0:
            verdict = "no significant difference"
        else:
            verdict = "faster" if change > 0 else "slower"
        rows.append(
            TestDiff(
                test=key, trial_a=x.trial, trial_b=y.trial, seconds_a=len(sa), seconds_b=len(sb),
                tps_a=x.tps, tps_b=y.tps, tps_change=change, p95_a=x.p95, p95_b=y.p95,
                p95_change=_change(x.p95, y.p95), p99_a=x.p99, p99_b=y.p99, p_welch=pw, p_mwu=pm,
                verdict=verdict,
            )
        )  # fmt: skip
    return RunComparison(
        run_a, run_b, test, alpha, rows, [k for k in a if k not in b], [k for k in b if k not in a]
    )
