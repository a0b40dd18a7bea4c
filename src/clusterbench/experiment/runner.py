"""Runs a Plan: builds each group's cluster once, changes node counts and server variables at
runtime, prepares each data set once per cluster, runs the trials into one stored run.

Resumable: the run is found again by the plan's id; trials already completed are skipped, the
others (interrupted, failed, never started) run. Every cluster is torn down at the end, also on
failure or Ctrl-C. The wall time is split into phases so the share spent not measuring (bring-up,
prepare, node changes, warm-up, trial overhead, teardown) can be printed.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pymysql  # type: ignore[import-untyped, unused-ignore]

from clusterbench.cluster import Cluster
from clusterbench.errors import ClusterbenchError, ComponentError
from clusterbench.experiment.clusters import ClusterOps
from clusterbench.experiment.convergence import Convergence, converge, needs_more, trial_value, value_name
from clusterbench.experiment.planner import Plan, TrialSpec, _group_key
from clusterbench.experiment.stored import KIND, done_trials, find_run, trial_rows  # re-exported
from clusterbench.runner.provenance import ServerSnapshot, host_facts, snapshot_nodes
from clusterbench.scenario.spec import ScenarioSpec, VerifySpec
from clusterbench.scenario.verification import Verification
from clusterbench.store import Store
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.trial.data import DataSets
from clusterbench.trial.listener import TrialListener
from clusterbench.trial.pipeline import Pipeline
from clusterbench.trial.recorder import Recorder
from clusterbench.trial.spec import Load, Trial
from clusterbench.workloads import RunResult, Sample, SysbenchOptions, SysbenchRunner
from clusterbench.workloads.sysbench import BULK_GROUP, expected_tables


class ExperimentInterrupted(ClusterbenchError):
    exit_code = 130


class ExperimentListener:
    """Progress of an experiment run; override what you show."""

    def started(self, run_id: int, plan: Plan, done: set[str], resumed: bool) -> None: ...

    def phase(self, message: str) -> None: ...

    def trial_started(self, t: TrialSpec, opts: SysbenchOptions) -> None: ...

    def sample(self, t: TrialSpec, sample: Sample) -> None: ...

    def trial_finished(self, t: TrialSpec, result: RunResult, status: str, wall: float) -> None: ...

    def telemetry(self, t: TrialSpec, line: str) -> None:
        """The servers' latest figures in one line (after a sample, while telemetry runs)."""

    def bottleneck(self, t: TrialSpec, verdict: Bottleneck) -> None:
        """The trial's bottleneck verdict (before trial_finished)."""

    def note(self, t: TrialSpec | None, line: str) -> None:
        """A finding to show: a tpcc load, TPC-C figures, a consistency verdict, stalls (after
        trial_finished; `t` is None for a load)."""


class _Progress(TrialListener):
    """The pipeline's progress of one planned trial, told to an ExperimentListener."""

    def __init__(
        self, lis: ExperimentListener, t: TrialSpec, t_begin: float, clock: Callable[[], float]
    ) -> None:
        self.lis = lis
        self.clock = clock
        self.t = t
        self.t_begin = t_begin

    def phase(self, message: str) -> None:
        self.lis.phase(message)

    def trial_started(self, seq: int, test: str, options: SysbenchOptions) -> None:
        self.lis.trial_started(self.t, options)

    def sample(self, seq: int, sample: Sample) -> None:
        self.lis.sample(self.t, sample)

    def telemetry(self, seq: int, line: str) -> None:
        self.lis.telemetry(self.t, line)

    def fault_event(self, t: float, detail: dict[str, Any]) -> None:
        self.lis.phase(f"{t:6.1f} s  {detail.get('fault')}: {detail.get('phase')}")

    def bottleneck(self, seq: int, verdict: Bottleneck) -> None:
        self.lis.bottleneck(self.t, verdict)

    def trial_finished(self, seq: int, test: str, result: RunResult, status: str) -> None:
        self.lis.trial_finished(self.t, result, status, self.clock() - self.t_begin)

    def note(self, line: str) -> None:
        self.lis.note(self.t, line)


@dataclass
class Ledger:
    """Wall time by phase; 'measuring' is the measured part of the trials."""

    monotonic: Callable[[], float] = time.monotonic
    phases: dict[str, float] = field(default_factory=dict)
    t0: float = 0.0

    def start(self) -> None:
        self.t0 = self.monotonic()

    def add(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + max(0.0, seconds)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = self.monotonic()
        try:
            yield
        finally:
            self.add(name, self.monotonic() - t)

    @property
    def wall(self) -> float:
        return self.monotonic() - self.t0

    @property
    def measuring(self) -> float:
        return self.phases.get("measuring", 0.0)

    def not_measuring_share(self) -> float:
        w = self.wall
        return 0.0 if w <= 0 else 1.0 - self.measuring / w

    def summary(self) -> dict[str, float]:
        out = {k: round(v, 2) for k, v in sorted(self.phases.items(), key=lambda kv: -kv[1])}
        out["other"] = round(max(0.0, self.wall - sum(self.phases.values())), 2)
        return out


@dataclass
class ExperimentOutcome:
    run_id: int
    status: str
    ran: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)


def group_signature(t: TrialSpec) -> str:
    return hashlib.sha256(_group_key(t.topology).encode()).hexdigest()[:12]


# ---- finding and reopening a run ------------------------------------------------------------------


# ---- the runner ---------------------------------------------------------------------------------


class ExperimentRunner(ClusterOps):
    def __init__(
        self,
        plan: Plan,
        store: Store,
        sysbench: SysbenchRunner,
        *,
        home: Path,
        listener: ExperimentListener | None = None,
        command_line: str = "",
        tags: Sequence[str] = (),
        notes: str | None = None,
        facts: Callable[[], dict[str, Any]] = host_facts,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        telemetry: bool = True,
        connect: Callable[..., Any] | None = None,
    ) -> None:
        self.telemetry = telemetry
        # the tool's own sessions (tpcc: data size, consistency checks); pymysql by default
        self.connect = connect
        self.plan = plan
        self.store = store
        self.sysbench = sysbench
        self.home = home
        self.lis = listener or ExperimentListener()
        self.command_line = command_line
        self.tags = list(tags)  # stored with the run as soon as it exists (created or resumed)
        self.notes = notes
        self.facts = facts
        self.sleep = sleep
        self.ledger = Ledger(monotonic=monotonic)
        self.cluster: Cluster | None = None
        self.running = 0
        self.recorder = Recorder(store)
        # what is prepared on the current cluster (forgotten when another is brought up)
        self.data = DataSets(sysbench, connect or pymysql.connect, phase=self.lis.phase,
                             note=lambda line: self.lis.note(None, line), monotonic=monotonic)  # fmt: skip
        self.certs: Path | None = None
        self.client_hosts: list[Any] = []
        self._extra_index = 0  # run-order positions of repetitions added by repetitions = "auto"
        self._attempts: dict[str, int] = {}
        self._told: set[str] = set()

    # ---- the run ------------------------------------------------------------------------------

    def run(self, *, fresh: bool = False) -> ExperimentOutcome:
        self.ledger.start()
        rec = self.recorder
        run_id = None if fresh else find_run(self.store, self.plan)
        resumed = run_id is not None
        if run_id is None:
            exp = self.plan.experiment
            name = f"{exp.name}" + (f" ({exp.profile})" if exp.profile else "")
            run_id = rec.create_run(KIND, name=name, command_line=self.command_line, tags=self.tags,
                                    notes=self.notes or "")  # fmt: skip
            rec.run_provenance(run_id, "experiment", self._experiment_provenance())
            rec.run_provenance(run_id, "topology", exp.topology.model_dump(mode="json"))
            rec.run_facts(run_id, self.facts())
        else:
            rec.reopen_run(run_id, self.command_line, self.tags, self.notes)
        out = ExperimentOutcome(run_id=run_id, status="running", ledger=self.ledger)
        done = done_trials(self.store, run_id)
        out.skipped = sum(1 for t in self.plan.trials if t.key in done)
        self.lis.started(run_id, self.plan, set(done), resumed)
        try:
            self._run_trials(run_id, out, done, rec.next_seq(run_id) - 1)
        except BaseException as exc:
            out.status = rec.abort_run(run_id, exc, {"phases": self.ledger.summary()})
            if isinstance(exc, KeyboardInterrupt):
                raise ExperimentInterrupted(
                    f"interrupted: run {run_id} keeps its finished trials; run the same command again "
                    "to continue where it stopped"
                ) from None
            raise
        out.status = "failed" if out.failed else "completed"
        rec.run_event(run_id, "wall_time", {
            "phases": self.ledger.summary(),
            "wall": round(self.ledger.wall, 2),
            "not_measuring_share": round(self.ledger.not_measuring_share(), 4),
        })  # fmt: skip
        rec.finish_run(run_id, out.status)
        return out

    def _run_trials(self, run_id: int, out: ExperimentOutcome, done: dict[str, int], seq: int) -> None:
        """The trials not done yet, one cluster per group (a search overrides this). With
        repetitions = "auto", a point gets more repetitions until it converges: right after its
        planned ones (blocked order), or in rounds over the group's points at the group's end
        (interleaved)."""
        settings = self.plan.experiment.settings
        last_rep = {t.point_key: t.rep for t in self.plan.trials}  # planned ones, per point
        self._extra_index = len(self.plan.trials)
        for members in self.plan.groups():
            todo = [t for t in members if t.key not in done]
            if not todo and not settings.auto:
                continue
            try:
                for t in members:
                    if t.key not in done:
                        self._ensure_up(t)
                        seq = self._count(run_id, t, out, seq)
                    blocked = settings.repetition_order == "blocked"
                    if settings.auto and blocked and t.rep == last_rep[t.point_key]:
                        while (more := self._next_repetition(run_id, t)) is not None:
                            self._ensure_up(more)
                            seq = self._count(run_id, more, out, seq)
                if settings.auto and settings.repetition_order == "interleaved":
                    firsts = list({t.point_key: t for t in members if t.rep == 1}.values())
                    while wanted := [m for m in (self._next_repetition(run_id, t) for t in firsts) if m]:
                        for more in wanted:
                            self._ensure_up(more)
                            seq = self._count(run_id, more, out, seq)
            finally:
                self._teardown()

    def _ensure_up(self, t: TrialSpec) -> None:
        if self.cluster is None:
            self._bring_up(t)

    def _count(self, run_id: int, t: TrialSpec, out: ExperimentOutcome, seq: int) -> int:
        seq += 1
        status = self._trial(run_id, seq, t)
        out.ran += 1
        if status != "completed":
            out.failed.append(t.key)
        return seq

    def point_convergence(self, rows: list[dict[str, Any]], test: str) -> Convergence:
        """How far a point's completed repetitions (its stored trial rows) are from the
        experiment's CI target."""
        s = self.plan.experiment.settings
        values = [v for r in rows if (v := trial_value(test, r.get("summary"))) is not None]
        return converge(values, s.ci_statistic, s.ci_tolerance)

    def _next_repetition(self, run_id: int, t: TrialSpec) -> TrialSpec | None:
        """One more repetition of t's point while its CI is too wide and the cap not reached;
        None (and a line saying how it ended, once) when it is done."""
        s = self.plan.experiment.settings
        rows = [r for r in trial_rows(self.store, run_id) if r.get("point_key") == t.point_key]
        c = self.point_convergence(rows, t.test)
        reps = [int(r["rep"]) for r in rows]
        attempts = self._attempts.setdefault(t.point_key, 0)
        # a failed repetition is retried at most max_repetitions times in all: no endless loop
        if needs_more(c, s.max_repetitions) and attempts < s.max_repetitions:
            self._attempts[t.point_key] = attempts + 1
            self._extra_index += 1
            return replace(t, rep=max(reps + [t.rep]) + 1, index=self._extra_index)
        if t.point_key not in self._told:
            self._told.add(t.point_key)
            self.lis.phase(f"{t.point_label}: {c.text()} of {value_name(t.test)}")
        return None

    def _extra_params(self, t: TrialSpec) -> dict[str, Any]:
        """More params stored with each trial (a search adds why the trial ran)."""
        return {}

    def _experiment_provenance(self) -> dict[str, Any]:
        exp = self.plan.experiment
        return {
            "name": exp.name,
            "profile": exp.profile,
            "source": exp.source,
            "plan_id": self.plan.id,
            "settings": exp.settings.model_dump(mode="json"),
            "parts": {
                name: {
                    "workload": wl.model_dump(mode="json"),
                    "factors": lv,
                    "design": exp.design(name).model_dump(mode="json"),
                    **_design_facts(self.plan, name),
                }
                for name, (wl, lv) in exp.parts.items()
            },
            "trials": [t.key for t in self.plan.trials],
        }

    # ---- one trial ----------------------------------------------------------------------------

    def _rate(self, run_id: int, t: TrialSpec) -> int:
        if t.rate_of_max is None:
            return t.rate
        sig = group_signature(t)
        per_point: dict[str, list[float]] = {}
        for tr in self.store.trials(run_id):
            p = tr.params
            if (
                tr.status == "completed"
                and p.get("group_sig") == sig
                and p.get("test") == t.test
                and p.get("nodes") == t.nodes
                # tpcc: the same scale and mix (another load is another maximum)
                and p.get("warehouses") == t.describe().get("warehouses")
                and p.get("mix") == t.describe().get("mix")
                and not p.get("rate")
                and p.get("rate_of_max") is None
            ):
                s = self.store.summary(tr.id)
                if s is not None:
                    per_point.setdefault(p["point_key"], []).append(float(s["tps"]))
        if not per_point:
            raise ComponentError(
                f"{t.key}: rate_of_max needs an unlimited-rate trial of {t.test} on {t.nodes} node(s) "
                "earlier in the experiment; add one (e.g. a threads sweep) to the same cluster"
            )
        best = max(statistics.median(v) for v in per_point.values())
        return max(1, round(best * t.rate_of_max))

    def _servers(self, nodes: int | None) -> ServerSnapshot:
        """The running nodes, each with its engine's own status (Galera's wsrep_%; Group
        Replication's member state and the MySQL build its rootfs holds)."""
        c = self.cluster
        assert c is not None
        return snapshot_nodes([c.node(i) for i in range(1, (nodes or self.running) + 1)])

    def _pipeline(self, progress: TrialListener) -> Pipeline:
        return Pipeline(self.sysbench, self.recorder, self.data, cluster=self.cluster, snapshot=self._servers,
                        telemetry=self.cluster if self.telemetry else None, listener=progress,
                        monotonic=self.ledger.monotonic)  # fmt: skip

    def _load(self, t: TrialSpec, rate: int) -> Load:
        opts = SysbenchOptions(
            test=t.test, tables=t.tables, table_size=t.table_size, threads=t.threads, time=t.duration,
            warmup=t.warmup, warmup_until=t.warmup_until, rate=rate, rand_type=t.rand_type, tls=t.tls,
            compression=t.compression,
            batch=t.batch, row_size=t.row_size, warehouses=t.warehouses, mix=t.mix,
            slap_load_type=t.slap_load_type, slap_queries=t.slap_queries, slap_query=t.slap_query,
            slap_engine=t.slap_engine, http_timeout=t.http_timeout, http_max_workers=t.http_max_workers,
            http_keepalive=t.http_keepalive,
        )  # fmt: skip
        c = self.cluster
        assert c is not None
        return Load(
            options=opts, endpoint=self._endpoint(t), clients=t.clients, separate_schemas=t.separate_schemas,
            client_hosts=tuple(self._client_hosts(t) or ()), admin=c.endpoint(self._writer()),
            web_urls=tuple(c.topology.web_urls()),
        )  # fmt: skip

    def _verifiers(self, t: TrialSpec) -> tuple[Verification, ...]:
        """With faults and `failover_figures`: the split-brain monitor and the availability
        prober beside the load, whose samples give each fault's failover times."""
        if not (t.faults and t.failover_figures):
            return ()
        c = self.cluster
        assert c is not None
        watch = VerifySpec(ledger_clients=0, prober=True, monitor=True, convergence=False)
        return (Verification(c, ScenarioSpec(name="failover", verify=watch)),)

    def _trial(self, run_id: int, seq: int, t: TrialSpec) -> str:
        """One planned trial through the pipeline; its phases go to the wall-time ledger."""
        t_begin = self.ledger.monotonic()
        self._set_nodes(t.nodes)
        self._set_resources(t)
        rate = self._rate(run_id, t)
        load = self._load(t, rate)
        c = self.cluster
        assert c is not None
        params = {
            **t.describe(), "key": t.key, "point_key": t.point_key, "point_label": t.point_label,
            "index": t.index, "group": t.group, "group_sig": group_signature(t), "effective_rate": rate,
            "options": load.options.model_dump(mode="json"), **self._extra_params(t),
        }  # fmt: skip
        faults = tuple(t.planned_faults(primary=c.primary())) if t.faults else ()
        trial = Trial(load=load, params=params, faults=faults, verifiers=self._verifiers(t),
                      nodes=t.nodes, server=t.server, telemetry=self.telemetry)  # fmt: skip
        progress = _Progress(self.lis, t, t_begin, self.ledger.monotonic)
        out = self._pipeline(progress).run(trial, run_id, seq)
        for phase, seconds in out.phases.items():
            self.ledger.add(phase, seconds)
        if t.test == BULK_GROUP:  # its trial consumed the tables it prepared: none left for the next
            with self.ledger.phase("prepare"):
                for db in t.databases():
                    self.data.drop(load.admin_endpoint, db, expected_tables(load.options, BULK_GROUP))
        if t.cooldown:
            with self.ledger.phase("cool-down"):
                self.sleep(t.cooldown)
        return out.status


def _design_facts(plan: Plan, part: str) -> dict[str, Any]:
    """What the planner said about a designed part (aliases, notes), for the report."""
    res = plan.designs.get(part)
    return {} if res is None else {"aliases": res.aliases, "design_notes": res.notes}


def plan_json(plan: Plan) -> str:
    return json.dumps([t.describe() | {"key": t.key, "group": t.group} for t in plan.trials], indent=1)
