"""A sequential optimizer over experiment knobs: Optuna's TPE, made noise-aware. Pure (no cluster).

`[search]` names knobs (each one an experiment factor: its type in the spec decides whether it is
an integer, a float or a categorical knob, so a factor added to the spec is a knob at once), an
objective, optional constraints, a trial budget and a stopping rule. `Optimizer` is an ask/record
loop: `next()` says which configuration the next trial runs and why, `record()` takes what the
trial measured. A run resumes by recording the stored trials again, in order.

Noise: one measurement of a configuration is one draw of a noisy number, and the largest of many
noisy draws is biased upwards. So:

* a configuration's estimate is the **median** of its measurements; the incumbent is the best
  estimate among feasible configurations (constraints are checked on medians too);
* after the random start, a new incumbent measured fewer than `recheck` times is measured
  again before exploring on;
* when the stopping rule fires (`patience` trials without a better incumbent) or only the
  trials needed for confirmation are left, the incumbent and up to `contenders` configurations
  within `close` of it are measured until each has `confirm` measurements, round-robin; if the
  incumbent changes, the new one and its contenders are confirmed in turn while the budget lasts.

Every measurement is told to TPE as a trial of its own (repeated configurations too), with the
constraint values as Optuna constraints (<= 0 is feasible).
"""

from __future__ import annotations

import math
import re
import statistics
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from clusterbench.analysis.stats import Interval, median_ci
from clusterbench.errors import InputError
from clusterbench.experiment.spec import (
    METRICS,
    Factors,
    SearchSpec,
    Workload,
    check_client_hosts,
    check_own_workloads,
    factor_kinds,
)
from clusterbench.experiment.web import check_web
from clusterbench.spec.topology import Topology

Level = int | float | str | bool
KnobKind = Literal["int", "float", "levels", "categorical"]
LOWER_IS_BETTER = ("p50", "p95", "p99", "latency_avg", "errors_per_s")


@dataclass(frozen=True)
class Knob:
    name: str
    kind: KnobKind
    low: float | None = None  # int and float ranges
    high: float | None = None
    log: bool = False
    values: tuple[Level, ...] = ()  # levels (ordered) and categorical choices

    def describe(self) -> str:
        if self.kind in ("int", "float"):
            return f"{self.kind} {_fmt(self.low)} .. {_fmt(self.high)}" + (" (log)" if self.log else "")
        what = "levels" if self.kind == "levels" else "choices"
        return f"{what} " + ", ".join(map(_fmt, self.values))

    def distribution(self) -> Any:
        from optuna.distributions import (
            CategoricalDistribution,
            FloatDistribution,
            IntDistribution,
        )

        if self.kind == "int":
            return IntDistribution(int(self.low or 0), int(self.high or 0), log=self.log)
        if self.kind == "float":
            return FloatDistribution(float(self.low or 0), float(self.high or 0), log=self.log)
        if self.kind == "levels":
            return IntDistribution(0, len(self.values) - 1)  # by position: neighbours are related
        return CategoricalDistribution(list(self.values))

    def from_param(self, v: Any) -> Level:
        if self.kind == "levels":
            return self.values[int(v)]
        if self.kind == "int":
            return int(v)
        if self.kind == "float":
            return round(float(v), 4)
        return v

    def to_param(self, v: Level) -> Any:
        if self.kind == "levels":
            return self.values.index(v)
        return v

    def grid(self) -> list[Level]:
        """The levels a full grid over this knob would use (for 'nearest grid configurations')."""
        if self.kind in ("levels", "categorical"):
            return list(self.values)
        lo, hi = float(self.low or 0), float(self.high or 0)
        if self.kind == "int":
            if self.log and lo > 0:
                out, x = [], lo
                while x < hi:
                    out.append(int(x))
                    x *= 2
                return sorted({*out, int(hi)})
            if hi - lo <= 8:
                return list(range(int(lo), int(hi) + 1))
            return sorted({int(round(lo + (hi - lo) * i / 4)) for i in range(5)})
        return [round(lo + (hi - lo) * i / 4, 4) for i in range(5)]


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def parse_knobs(raw: Mapping[str, Any], where: str) -> list[Knob]:
    """Knobs from `[search] knobs`, in the order given. InputError names the knob."""
    kinds = factor_kinds()
    out: list[Knob] = []
    for name, spec in raw.items():
        field_ = f"{where}: search.knobs.{name}"
        if name not in kinds:
            raise InputError(f"{field_}: not a factor; knobs are factors: {', '.join(kinds)}")
        kind = kinds[name]
        low = high = None
        log = False
        values: list[Any] | None = None
        if isinstance(spec, list):
            if kind != "categorical" and len(spec) == 2:
                low, high = spec
            else:
                values = list(spec)
        elif isinstance(spec, dict):
            extra = set(spec) - {"low", "high", "log", "levels", "choices"}
            if extra:
                raise InputError(
                    f"{field_}: unknown key '{sorted(extra)[0]}' "
                    "(known keys: low, high, log, levels, choices)"
                )
            if "levels" in spec or "choices" in spec:
                values = list(spec.get("levels", spec.get("choices")) or [])
            else:
                low, high, log = spec.get("low"), spec.get("high"), bool(spec.get("log", False))
        else:
            raise InputError(
                f"{field_}: give [low, high], a list of levels, or a table ({{ low, high, log }})"
            )
        if values is not None:
            if len(values) < 2:
                raise InputError(f"{field_}: empty range: a knob needs at least 2 levels (got {len(values)})")
            _check_levels(name, values, field_)
            ordered = isinstance(spec, dict) and "levels" in spec  # { levels = [...] }: ordered, any kind
            if not ordered and (kind == "categorical" or (isinstance(spec, dict) and "choices" in spec)):
                out.append(Knob(name, "categorical", values=tuple(values)))
            else:
                out.append(Knob(name, "levels", values=tuple(values)))
            continue
        if kind == "categorical":
            raise InputError(f"{field_}: {name} is categorical: give its choices as a list")
        if low is None or high is None or isinstance(low, bool) or isinstance(high, bool):
            raise InputError(f"{field_}: a range needs numbers low and high")
        if not isinstance(low, int | float) or not isinstance(high, int | float):
            raise InputError(f"{field_}: a range needs numbers low and high")
        if kind == "int" and (float(low) != int(low) or float(high) != int(high)):
            raise InputError(f"{field_}: {name} takes integers (got {low}, {high})")
        if not low < high:
            raise InputError(f"{field_}: empty range [{_fmt(low)}, {_fmt(high)}]: low must be below high")
        if log and low <= 0:
            raise InputError(f"{field_}: a log range needs low above 0 (got {_fmt(low)})")
        _check_levels(
            name, [int(low) if kind == "int" else low, int(high) if kind == "int" else high], field_
        )
        out.append(Knob(name, kind, float(low), float(high), log))
    return out


def _check_levels(name: str, values: list[Any], field_: str) -> None:
    """The spec's own checks of a factor's levels (node counts 1-9, known tests ...)."""
    try:
        Factors.model_validate({name: values})
    except ValidationError as exc:
        msg = str(exc.errors()[0].get("msg", "invalid")).removeprefix("Value error, ")
        raise InputError(f"{field_}: {msg}") from None


@dataclass(frozen=True)
class Objective:
    direction: Literal["max", "min"]
    metric: str

    @property
    def text(self) -> str:
        return f"{self.direction} {self.metric}"

    def better(self, a: float, b: float) -> bool:
        return a > b if self.direction == "max" else a < b

    def improved(self, new: float, old: float | None, rel: float) -> bool:
        if old is None:
            return True
        margin = abs(old) * rel
        return new > old + margin if self.direction == "max" else new < old - margin


@dataclass(frozen=True)
class Constraint:
    metric: str
    op: Literal["<=", ">="]
    bound: float

    @property
    def text(self) -> str:
        return f"{self.metric} {self.op} {_fmt(self.bound)}"

    def violation(self, v: float) -> float:
        """<= 0 when met (Optuna's convention)."""
        return v - self.bound if self.op == "<=" else self.bound - v


def parse_objective(text: str, where: str) -> Objective:
    m = re.fullmatch(r"\s*(max|min)(?:imize)?\s+(\w+)\s*", text)
    if not m:
        raise InputError(f"{where}: search.objective: '{text}' is not 'max METRIC' or 'min METRIC'")
    metric = m.group(2)
    if metric not in METRICS:
        raise InputError(f"{where}: search.objective: unknown metric '{metric}'; known: {', '.join(METRICS)}")
    return Objective(m.group(1), metric)  # type: ignore[arg-type]


def parse_constraint(text: str, where: str, i: int) -> Constraint:
    m = re.fullmatch(r"\s*(\w+)\s*(<=|>=)\s*([0-9.eE+-]+)\s*", text)
    if not m:
        raise InputError(f"{where}: search.constraints[{i}]: '{text}' is not 'METRIC <= NUMBER' or '>='")
    if m.group(1) not in METRICS:
        raise InputError(
            f"{where}: search.constraints[{i}]: unknown metric '{m.group(1)}'; known: {', '.join(METRICS)}"
        )
    try:
        bound = float(m.group(3))
    except ValueError:
        raise InputError(f"{where}: search.constraints[{i}]: '{m.group(3)}' is not a number") from None
    return Constraint(m.group(1), m.group(2), bound)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SearchSetup:
    """A parsed and checked [search]."""

    spec: SearchSpec
    knobs: tuple[Knob, ...]
    objective: Objective
    constraints: tuple[Constraint, ...]

    @property
    def startup(self) -> int:
        return self.spec.startup or max(3, min(10, self.spec.budget // 4))

    def label(self, config: Mapping[str, Level]) -> str:
        return " ".join(f"{k.name}={_fmt(config[k.name])}" for k in self.knobs)


def setup(spec: SearchSpec, where: str = "") -> SearchSetup:
    knobs = parse_knobs(spec.knobs, where)
    obj = parse_objective(spec.objective, where)
    cons = [parse_constraint(c, where, i) for i, c in enumerate(spec.constraints)]
    return SearchSetup(spec, tuple(knobs), obj, tuple(cons))


def check_search(spec: SearchSpec, wl: Workload, topo: Topology, where: str) -> None:
    """Everything about a [search] that can be refused before anything starts."""
    s = setup(spec, where)
    names = {k.name for k in s.knobs}
    latency = s.objective.metric in LOWER_IS_BETTER and s.objective.direction == "min"
    if latency and "rate" not in names and wl.rate == 0:
        raise InputError(
            f"{where}: search.objective: '{s.objective.text}' needs a fixed rate: set workload.rate "
            "(per client process); unthrottled, the lowest latency is at the least load"
        )
    if wl.rate_of_max is not None:
        raise InputError(f"{where}: workload.rate_of_max: not available in a search; give workload.rate")
    if "workload" in names and len(wl.tests) > 1:
        raise InputError(
            f"{where}: search.knobs.workload: several tests in workload.workload and the knob workload; "
            "give them one way"
        )
    # what a grid refuses about the tests' own settings (batch against the table, the tpcc scale,
    # mysqlslap's one process and its settings), with each knob's extreme values as its levels
    ranges = {k.name: list(k.values) if k.values else [k.low or 0, k.high or 0] for k in s.knobs}
    check_own_workloads(wl, ranges, where, set(wl.model_fields_set))
    check_web(wl, ranges, topo, where, set(wl.model_fields_set))
    for k in s.knobs:
        if k.name == "client_hosts":
            check_client_hosts([int(x) for x in _levels_of(s, "client_hosts", 0)], topo,
                               f"{where}: search.knobs.client_hosts")  # fmt: skip
        if k.name == "target":
            nodes_low = int(min(v for v in _levels_of(s, "nodes", topo.cluster.nodes)))
            for t in k.values:
                if str(t).startswith("node:") and int(str(t)[5:]) > nodes_low:
                    raise InputError(f"{where}: search.knobs.target: {t} is beyond the smallest node count")


def _levels_of(s: SearchSetup, name: str, default: int) -> list[float]:
    for k in s.knobs:
        if k.name == name:
            if k.kind in ("int", "float"):
                return [float(k.low or 0), float(k.high or 0)]
            return [float(v) for v in k.values]
    return [float(default)]


def capacity(s: SearchSetup, base_nodes: int) -> int:
    """The node count the search's cluster is built for: the most any trial can ask for."""
    return int(max(_levels_of(s, "nodes", base_nodes)))


# ---- metrics of a trial -------------------------------------------------------------------------


def metrics_of(summary: Mapping[str, Any] | None) -> dict[str, float] | None:
    """The metrics a search can use, from a stored all-clients summary."""
    if summary is None:
        return None
    dur = float(summary.get("duration") or 0) or 1.0
    out = {
        "tps": float(summary.get("tps") or 0.0),
        "qps": float(sum(float(summary.get(k) or 0.0) for k in ("qps_read", "qps_write", "qps_other"))),
        "errors_per_s": float(summary.get("errors") or 0) / dur,
    }
    for k, col in (("p50", "p50"), ("p95", "p95"), ("p99", "p99"), ("latency_avg", "lat_avg")):
        if summary.get(col) is not None:
            out[k] = float(summary[col])
    return out


# ---- the optimizer -------------------------------------------------------------------------------

Phase = Literal["explore", "recheck", "confirm"]


@dataclass
class Step:
    config: dict[str, Level]
    phase: Phase
    number: int  # 1-based trial number this step will be


@dataclass
class Record:
    number: int
    config: dict[str, Level]
    label: str
    phase: Phase
    values: dict[str, float] | None  # None: the trial failed
    score: float | None
    incumbent: str | None = None  # after this trial
    incumbent_score: float | None = None


@dataclass
class ConfigStats:
    config: dict[str, Level]
    label: str
    values: list[dict[str, float]] = field(default_factory=list)
    first: int = 0  # trial number of its first measurement

    def series(self, metric: str) -> list[float]:
        return [v[metric] for v in self.values if metric in v]

    def estimate(self, metric: str) -> float | None:
        xs = self.series(metric)
        return statistics.median(xs) if xs else None

    @property
    def n(self) -> int:
        return len(self.values)


@dataclass
class Winner:
    config: dict[str, Level]
    label: str
    score: Interval  # median and its order-statistic CI over the winner's measurements
    n: int
    found_at: int  # trial number of its first measurement
    confirmed: bool  # it and every close contender have `confirm` measurements
    runner_up: str | None
    p_vs_runner_up: float | None  # Welch's t, winner vs runner-up measurements


class Optimizer:
    def __init__(self, s: SearchSetup) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.s = s
        self.obj = s.objective
        self.dists = {k.name: k.distribution() for k in s.knobs}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sampler = optuna.samplers.TPESampler(
                seed=s.spec.seed, n_startup_trials=s.startup, multivariate=True, group=False
            )
        self.study = optuna.create_study(
            direction="maximize" if self.obj.direction == "max" else "minimize", sampler=sampler
        )
        self.configs: dict[str, ConfigStats] = {}
        self.records: list[Record] = []
        self.best_score: float | None = None  # best incumbent estimate seen (for the stopping rule)
        self.last_improvement = 0
        self.exploring = True
        self.stopped_by: str | None = None
        self._pending: dict[str, list[Any]] = {}  # label -> asked Optuna trials, oldest first
        self._start: list[dict[str, Level]] | None = None  # the random start still to run

    # ---- state --------------------------------------------------------------------------------

    @property
    def used(self) -> int:
        return len(self.records)

    def feasible(self, c: ConfigStats) -> bool:
        for con in self.s.constraints:
            v = c.estimate(con.metric)
            if v is None or con.violation(v) > 0:
                return False
        return c.estimate(self.obj.metric) is not None

    def incumbent(self) -> ConfigStats | None:
        best: ConfigStats | None = None
        for c in self.configs.values():
            if not self.feasible(c):
                continue
            e = c.estimate(self.obj.metric)
            b = None if best is None else best.estimate(self.obj.metric)
            if e is not None and (b is None or self.obj.better(e, b)):
                best = c
        return best

    def contenders(self, inc: ConfigStats) -> list[ConfigStats]:
        e0 = inc.estimate(self.obj.metric)
        assert e0 is not None
        close = []
        for c in self.configs.values():
            if c is inc or not self.feasible(c):
                continue
            e = c.estimate(self.obj.metric)
            if e is not None and abs(e - e0) <= abs(e0) * self.s.spec.close:
                close.append(c)
        close.sort(key=lambda c: c.estimate(self.obj.metric) or 0.0, reverse=self.obj.direction == "max")
        return close[: self.s.spec.contenders]

    def _confirm_set(self) -> list[ConfigStats]:
        inc = self.incumbent()
        return [] if inc is None else [inc, *self.contenders(inc)]

    def _needed(self) -> int:
        """Trials to keep for confirmation: the incumbent and as many contenders as may turn up."""
        have = sum(min(self.s.spec.confirm, c.n) for c in self._confirm_set())
        return max(0, (1 + self.s.spec.contenders) * self.s.spec.confirm - have)

    # ---- ask / record --------------------------------------------------------------------------

    def next(self) -> Step | None:
        """The next trial, or None when the search is over (budget spent or confirmed)."""
        left = self.s.spec.budget - self.used
        if left <= 0:
            self.stopped_by = self.stopped_by or "budget"
            return None
        number = self.used + 1
        inc = self.incumbent()
        if self.exploring:
            patience = self.s.spec.patience
            # the stopping rule counts from the end of the random start at the earliest
            since = self.used - max(self.last_improvement, self.s.startup)
            if patience is not None and since >= patience and inc is not None:
                self.exploring, self.stopped_by = False, "stopping rule"
            elif inc is not None and left <= self._needed():
                self.exploring, self.stopped_by = False, "budget"
        if self.exploring:
            # rechecks start after the random start, which stays exactly what `plan` shows
            if (
                self.used >= self.s.startup
                and inc is not None
                and inc.n < min(self.s.spec.recheck, self.s.spec.confirm)
            ):
                return Step(dict(inc.config), "recheck", number)
            start = self._random_start()
            if start:
                return Step(start.pop(0), "explore", number)
            return Step(self._ask(), "explore", number)
        conf = self._confirm_set()
        todo = [c for c in conf if c.n < self.s.spec.confirm]
        if not todo:
            if self.stopped_by == "stopping rule" or not conf:
                return None
            # Confirmed with budget to spare (fewer contenders turned up than were kept for): explore
            # while a new contender could still be confirmed, else narrow the incumbent's CI.
            if left > self.s.spec.confirm:
                return Step(self._ask(), "explore", number)
            return Step(dict(conf[0].config), "confirm", number)
        c = min(todo, key=lambda c: (c.n, c.first))  # round-robin: the least measured first
        return Step(dict(c.config), "confirm", number)

    def _ask(self) -> dict[str, Level]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask(self.dists)
        config = {k.name: k.from_param(trial.params[k.name]) for k in self.s.knobs}
        self._pending.setdefault(self.s.label(config), []).append(trial)
        return config

    def random_start(self) -> list[dict[str, Level]]:
        """The random start in the order it runs (what `plan` shows)."""
        return list(self._random_start())

    def _random_start(self) -> list[dict[str, Level]]:
        """The random start, drawn at once (it does not depend on any result) and run largest node
        count first, so the cluster only shrinks and no node rejoins by state transfer during it.
        On a resumed run the configurations of the start already recorded are left out."""
        if self._start is None:
            import optuna

            n = min(self.s.startup, self.s.spec.budget)
            drawn = [self._ask() for _ in range(n)]
            if any(k.name == "nodes" for k in self.s.knobs):
                drawn.sort(key=lambda c: -float(c["nodes"]))
            done: dict[str, int] = {}
            for r in self.records[:n]:
                if r.phase == "explore":
                    done[r.label] = done.get(r.label, 0) + 1
            self._start = []
            for c in drawn:
                lab = self.s.label(c)
                if done.get(lab, 0) > 0:
                    done[lab] -= 1
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        self.study.tell(self._pending[lab].pop(0), state=optuna.trial.TrialState.FAIL)
                else:
                    self._start.append(c)
        return self._start

    def record(self, step_or_config: Step | Mapping[str, Level], values: Mapping[str, float] | None,
               phase: Phase | None = None) -> Record:  # fmt: skip
        """What a trial measured (None: it failed). Also used to replay stored trials on resume."""
        import optuna

        if isinstance(step_or_config, Step):
            config, ph = dict(step_or_config.config), step_or_config.phase
        else:
            config, ph = dict(step_or_config), phase or "explore"
        label = self.s.label(config)
        number = self.used + 1
        c = self.configs.get(label)
        if c is None:
            c = self.configs[label] = ConfigStats(config, label, first=number)
        score = None
        vals = dict(values) if values is not None else None
        if vals is not None and self.obj.metric in vals:
            score = vals[self.obj.metric]
            c.values.append(vals)
        cons = {
            con.text: con.violation(vals.get(con.metric, math.inf if con.op == "<=" else -math.inf))
            for con in self.s.constraints
        } if vals is not None else {}  # fmt: skip
        cons = {k: (v if math.isfinite(v) else 1e9) for k, v in cons.items()}
        queue = self._pending.get(label) or []
        trial = queue.pop(0) if queue else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if trial is not None and ph == "explore":
                if score is None:
                    self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                else:
                    for k, v in cons.items():
                        trial.set_constraint(k, v)
                    self.study.tell(trial, score)
            else:
                if trial is not None:  # asked but recorded as another phase: close it
                    self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                params = {k.name: k.to_param(config[k.name]) for k in self.s.knobs}
                self.study.add_trial(
                    optuna.trial.create_trial(
                        params=params,
                        distributions=self.dists,
                        value=score,
                        state=optuna.trial.TrialState.COMPLETE
                        if score is not None
                        else optuna.trial.TrialState.FAIL,
                        constraints=cons or None,
                    )
                )
        inc = self.incumbent()
        inc_score = None if inc is None else inc.estimate(self.obj.metric)
        if inc_score is not None and self.obj.improved(
            inc_score, self.best_score, self.s.spec.min_improvement
        ):
            self.best_score = inc_score
            self.last_improvement = number
        rec = Record(number, config, label, ph, vals, score, inc.label if inc else None, inc_score)
        self.records.append(rec)
        return rec

    # ---- the answer ------------------------------------------------------------------------------

    def winner(self) -> Winner | None:
        inc = self.incumbent()
        if inc is None:
            return None
        from clusterbench.analysis.stats import welch_p

        xs = inc.series(self.obj.metric)
        others = [c for c in self.configs.values() if c is not inc and self.feasible(c)]
        others.sort(key=lambda c: c.estimate(self.obj.metric) or 0.0, reverse=self.obj.direction == "max")
        ru = others[0] if others else None
        confirmed = all(c.n >= self.s.spec.confirm for c in self._confirm_set())
        return Winner(
            config=dict(inc.config),
            label=inc.label,
            score=median_ci(xs),
            n=inc.n,
            found_at=inc.first,
            confirmed=confirmed,
            runner_up=ru.label if ru else None,
            p_vs_runner_up=_quiet_welch(welch_p, xs, ru.series(self.obj.metric)) if ru else None,
        )


def _quiet_welch(fn: Callable[..., float | None], a: list[float], b: list[float]) -> float | None:
    """Welch's p without scipy's precision warning for (nearly) identical samples."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(a, b)


def run_loop(
    s: SearchSetup,
    execute: Callable[[Step], Mapping[str, float] | None],
    history: Sequence[tuple[Mapping[str, Level], Mapping[str, float] | None, Phase]] = (),
) -> Optimizer:
    """The whole search with `execute` running each trial (a real runner, a replay, a fake)."""
    opt = Optimizer(s)
    for config, values, phase in history:
        opt.record(config, values, phase)
    while (step := opt.next()) is not None:
        opt.record(step, execute(step))
    return opt
