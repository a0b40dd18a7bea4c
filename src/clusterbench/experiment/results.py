"""Per design point statistics of an experiment run, from the store alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clusterbench.analysis.stats import DEFAULT_CV_WARN, Interval, cv, median_ci
from clusterbench.experiment.convergence import Convergence, converge, trial_value
from clusterbench.experiment.stored import trial_rows
from clusterbench.store import Store
from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram, merge_all


@dataclass
class PointStats:
    part: str
    key: str
    label: str
    point: dict[str, Any]
    trial_ids: list[int] = field(default_factory=list)
    reps: list[int] = field(default_factory=list)
    tps: list[float] = field(default_factory=list)
    p95s: list[float] = field(default_factory=list)
    errors_per_s: list[float] = field(default_factory=list)
    p95_pooled: float | None = None
    p99_pooled: float | None = None
    tests: set[str] = field(default_factory=set)  # the tests its trials ran
    tps_ci: Interval | None = None
    p95_ci: Interval | None = None
    cv: float | None = None
    cv_high: bool = False
    rate: int = 0
    # repetitions = "auto": how far the point's repetitions got towards the CI target
    convergence: Convergence | None = None
    values: list[float] = field(default_factory=list)  # the per-repetition values it is judged on

    @property
    def n(self) -> int:
        return len(self.tps)


def trial_histogram(store: Store, trial_id: int) -> LatencyHistogram | None:
    rows = store.conn.execute(
        "SELECT idx, count FROM histograms WHERE trial_id = ? AND client = -1 ORDER BY idx", (trial_id,)
    ).fetchall()
    if not rows:
        return None
    return LatencyHistogram.from_pairs(DEFAULT_SCHEME, [(int(r[0]), int(r[1])) for r in rows])


def experiment_info(store: Store, run_id: int) -> dict[str, Any]:
    return dict(store.provenance(run_id).get("experiment") or {})


def point_stats(store: Store, run_id: int, cv_warn: float | None = None) -> list[PointStats]:
    info = experiment_info(store, run_id)
    threshold = (
        cv_warn if cv_warn is not None else (info.get("settings") or {}).get("cv_warn", DEFAULT_CV_WARN)
    )
    points: dict[str, PointStats] = {}
    hists: dict[str, list[LatencyHistogram | None]] = {}
    for r in trial_rows(store, run_id):
        s = r.get("summary")
        if s is None:
            continue
        pk = r["point_key"]
        p = points.setdefault(pk, PointStats(r["part"], pk, r["point_label"], dict(r["point"])))
        p.trial_ids.append(r["trial_id"])
        p.tests.add(str(r.get("test") or ""))
        p.reps.append(int(r["rep"]))
        p.tps.append(float(s["tps"]))
        if s.get("p95") is not None:
            p.p95s.append(float(s["p95"]))
        dur = float(s.get("duration") or 0) or 1.0
        p.errors_per_s.append(float(s["errors"]) / dur)
        p.rate = int(r.get("effective_rate") or 0)
        v = trial_value(str(r.get("test") or ""), s)
        if v is not None:
            p.values.append(v)
        hists.setdefault(pk, []).append(trial_histogram(store, r["trial_id"]))
    settings = info.get("settings") or {}
    for pk, p in points.items():
        if settings.get("repetitions") == "auto":
            p.convergence = converge(
                p.values, settings.get("ci_statistic", "median"), float(settings.get("ci_tolerance", 0.05))
            )
        p.tps_ci = median_ci(p.tps)
        p.p95_ci = median_ci(p.p95s) if p.p95s else None
        merged = merge_all(hists[pk])
        p.p95_pooled = merged.percentile(95) if merged is not None else None
        p.p99_pooled = merged.percentile(99) if merged is not None else None
        p.cv = cv(p.tps)
        p.cv_high = p.cv is not None and p.cv > threshold
    # Parts in the order they ran; inside a part, points in the order of the levels as the file
    # lists them (the run order is descending in node count, which is not how anyone reads a
    # table or a curve).
    order = info.get("trials") or []
    part_rank: dict[str, int] = {}
    for k in order:
        part_rank.setdefault(k.split("|", 1)[0], len(part_rank))
    parts = info.get("parts") or {}

    def key(p: PointStats) -> tuple[Any, ...]:
        levels = (parts.get(p.part) or {}).get("factors") or {}
        return (part_rank.get(p.part, 1 << 30), p.part, _levels_key(p.point, levels))

    return sorted(points.values(), key=key)


def _levels_key(point: dict[str, Any], levels: dict[str, list[Any]]) -> tuple[tuple[int, float, str], ...]:
    """Each factor's level by its position in the file's list; unknown levels after, by value."""
    out = []
    for k, v in point.items():
        known = levels.get(k) or []
        if v in known:
            out.append((0, float(known.index(v)), ""))
        elif isinstance(v, bool | int | float):
            out.append((1, float(v), ""))
        else:
            out.append((2, 0.0, str(v)))
    return tuple(out)


POINT_CSV = (
    "part", "point", "n", "tps_median", "tps_ci_low", "tps_ci_high", "ci_coverage", "tps_cv", "cv_high",
    "p95_pooled_ms", "p95_median_ms", "p95_ci_low_ms", "p95_ci_high_ms", "errors_per_s_median", "rate",
    "trial_ids",
)  # fmt: skip


def point_csv_rows(points: list[PointStats]) -> list[list[Any]]:
    import statistics

    rows = []
    for p in points:
        t, q = p.tps_ci, p.p95_ci
        rows.append([
            p.part, p.label, p.n,
            _r(t.median if t else None), _r(t.low if t else None), _r(t.high if t else None),
            _r(t.coverage if t else None, 4), _r(p.cv, 4), int(p.cv_high),
            _r(p.p95_pooled, 3), _r(q.median if q else None, 3), _r(q.low if q else None, 3),
            _r(q.high if q else None, 3),
            _r(statistics.median(p.errors_per_s) if p.errors_per_s else None, 3), p.rate,
            " ".join(map(str, p.trial_ids)),
        ])  # fmt: skip
    return rows


def _r(x: float | None, nd: int = 2) -> Any:
    return "" if x is None else round(x, nd)
