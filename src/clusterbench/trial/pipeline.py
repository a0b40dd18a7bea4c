"""The one pipeline every trial runs through: `run`, `suite`, `fault`, `scenario`, `soak`,
`experiment run` and `[search]` build `Trial`s and hand them here.

    settle (a drill) -> prepare -> server settings -> load: warm-up, measure, faults on schedule,
    verifiers beside it -> heal -> settle (after faults or verifiers) -> check -> record

Every phase lives here once, with its limits; everything is stored as it happens through the
trial's record (trial.recorder), so an interrupted trial keeps what it measured. Ctrl-C during
the load heals the faults and stops the verifiers before it goes on to the caller.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from clusterbench.checkers.trial import check_trial
from clusterbench.checkers.verdict import Result, Verdict
from clusterbench.durability import durability
from clusterbench.errors import WorkloadError
from clusterbench.faults.nemesis import FaultRecord, Nemesis
from clusterbench.runner.provenance import ServerSnapshot
from clusterbench.telemetry.recorder import TrialTelemetry
from clusterbench.telemetry.sampler import TelemetrySource
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.trial import web
from clusterbench.trial.checks import (
    consistency_verdict,
    fault_effects,
    tpcc_figures,
    trial_run,
    trial_stalls,
)
from clusterbench.trial.data import DataSets
from clusterbench.trial.listener import TrialListener
from clusterbench.trial.recorder import Recorder, TrialRecord
from clusterbench.trial.spec import Trial, stored_params
from clusterbench.trial.watch import ClusterWatch
from clusterbench.workloads import RunResult, Sample, SysbenchRunner, tpcc
from clusterbench.workloads.steady import steady_line
from clusterbench.workloads.sysbench import TPCC, use_tls

log = logging.getLogger(__name__)

Snapshot = Callable[[int | None], ServerSnapshot]


@dataclass
class TrialOutcome:
    """What one trial did: its status and failure, its verdicts (drills, tpcc), the figures for
    people (availability, failover), the notes, and the wall time of each phase."""

    seq: int
    test: str
    trial_id: int | None = None
    status: str = "running"
    failure: str | None = None
    samples: list[Sample] = field(default_factory=list)
    result: RunResult | None = None
    bottleneck: Bottleneck | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    findings: dict[str, Any] = field(default_factory=dict)
    faults: list[FaultRecord] = field(default_factory=list)
    windows: list[tuple[str, float, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    # the load ended with every node of the cluster down: what happened, in one line
    cluster_down: str | None = None
    load_wall: float | None = None  # the wall clock (s) at the trial's time 0 (the faults' axis)


def preflight(sysbench: SysbenchRunner, data: DataSets, trial: Trial) -> None:
    """Fail fast, before anything is stored: reach every address, create the schemas the clients
    need, log in to each; with prepare = existing, the tables must be there."""
    load = trial.load
    sysbench.check_load(load.options, load.clients, load.web_urls, load.endpoint.database)
    data.create_schemas(load.admin_endpoint, load.schemas)
    sysbench.check_endpoint(load.endpoint, load.databases, use_tls(load.options, load.endpoint))
    for ep in load.client_endpoints:
        sysbench.check_endpoint(ep, load.databases, use_tls(load.options, ep))
    if trial.prepare == "existing":
        data.check_tables(load.options, load.admin_endpoint, load.databases)


class _Context:
    """What verifiers see of the running trial."""

    def __init__(self, cluster: Any, record: TrialRecord, t0: float, nemesis: Nemesis | None,
                 out: TrialOutcome) -> None:  # fmt: skip
        self.cluster = cluster
        self.record = record
        self.t0 = t0
        self.nemesis = nemesis
        self.out = out

    def windows(self) -> list[tuple[str, float, float]]:
        return self.nemesis.windows() if self.nemesis is not None else []

    def fault_records(self) -> list[FaultRecord]:
        return list(self.nemesis.records) if self.nemesis is not None else []

    def samples(self) -> list[Sample]:
        return list(self.out.samples)


@dataclass(eq=False)
class Pipeline:
    """Runs trials on one cluster (or an endpoint: `cluster` None) into one run of the store."""

    sysbench: SysbenchRunner
    recorder: Recorder
    data: DataSets
    _: KW_ONLY
    cluster: Any = None
    snapshot: Snapshot | None = None
    telemetry: TelemetrySource | None = None
    listener: TrialListener = field(default_factory=TrialListener)
    monotonic: Callable[[], float] = time.monotonic

    # ---- before the run exists ---------------------------------------------------------------

    def check(self, trial: Trial) -> None:
        """Before the run is stored: a drill first waits for a settled cluster (it must not inherit
        an earlier fault's aftermath); then the load must be able to start (preflight)."""
        if trial.settle_before and self.cluster is not None:
            self.cluster.settle(trial.nodes)
        preflight(self.sysbench, self.data, trial)

    # ---- the trial ---------------------------------------------------------------------------

    @contextmanager
    def _phase(self, out: TrialOutcome, name: str) -> Iterator[None]:
        t = self.monotonic()
        try:
            yield
        finally:
            out.phases[name] = out.phases.get(name, 0.0) + max(0.0, self.monotonic() - t)

    def run(self, trial: Trial, run_id: int, seq: int) -> TrialOutcome:
        out = TrialOutcome(seq=seq, test=trial.test)
        t_begin = self.monotonic()
        with self._phase(out, "prepare"):
            self._prepare(trial, run_id)
        self._server_settings(trial)
        record = self.recorder.trial(run_id, seq, trial.test, trial.params or stored_params(trial.load))
        out.trial_id = record.trial_id
        self._snapshot(record, trial, "start")
        self.listener.trial_started(seq, trial.test, trial.load.options)
        nemesis = self._nemesis(trial, record)
        result, ctx = self._load(trial, record, nemesis, out)
        record.result(result)
        out.result = result
        # a cluster that died is what happened, not the clients' retries or a connection error
        out.failure = out.cluster_down or result.failure()
        with self._phase(out, "faults"):
            self._after_faults(trial, record, nemesis, out)
        self._snapshot(record, trial, "end")
        with self._phase(out, "checks"):
            self._checks(trial, ctx, result, out)
        out.status = "completed" if result.ok and out.failure is None else "failed"
        if out.failure:
            record.failed(out.failure, result.stderr_tail, test=trial.test)
        record.finish(out.status)
        out.phases["trial overhead"] = max(0.0, self.monotonic() - t_begin - sum(out.phases.values()))
        self.listener.trial_finished(seq, trial.test, result, out.status)
        for v in out.verdicts:
            self.listener.verdict(v)
        for line in out.notes:
            self.listener.note(line)
        return out

    def _prepare(self, trial: Trial, run_id: int) -> None:
        load = trial.load
        if trial.prepare == "existing":
            self.data.check_tables(load.options, load.admin_endpoint, load.databases)
            self.recorder.run_event(run_id, "prepare", {"group": load.test, "skipped": True})
            return
        labels = {k: trial.params[k] for k in ("group", "nodes") if k in trial.params}
        self.data.ensure(load.options, load.admin_endpoint, load.databases, self.recorder, run_id, labels)

    def _server_settings(self, trial: Trial) -> None:
        if not trial.server or self.cluster is None:
            return
        sql = "SET GLOBAL " + ", ".join(f"{k} = {int(v)}" for k, v in trial.server)
        for i in range(1, (trial.nodes or self.cluster.topology.cluster.nodes) + 1):
            self.cluster.node(i).query(sql, timeout=10)

    def _snapshot(self, record: TrialRecord, trial: Trial, when: str) -> None:
        if self.snapshot is None:
            return
        snap = self.snapshot(trial.nodes)
        record.snapshot(when, snap)
        line = durability(snap.variables).line() if when == "start" else ""
        if self.recorder.durability_changed(record.run_id, line):
            self.listener.phase(line)

    def _nemesis(self, trial: Trial, record: TrialRecord) -> Nemesis | None:
        if not trial.faults or self.cluster is None:
            return None

        def sink(kind: str, detail: dict[str, Any], t: float) -> None:  # the nemesis' thread
            record.event(kind, detail, t=round(t, 3))
            self.listener.fault_event(t, detail)

        return Nemesis(self.cluster, list(trial.faults), sink)

    def _load(
        self, trial: Trial, record: TrialRecord, nemesis: Nemesis | None, out: TrialOutcome
    ) -> tuple[RunResult, _Context]:
        """The load, with the verifiers and the fault schedule started when it starts; the faults
        healed and the verifiers stopped when it ends, however it ends."""
        load, opts = trial.load, trial.load.options
        tel = TrialTelemetry(self.telemetry, record, warmup=opts.warmup, total_time=opts.total_time,
                             enabled=trial.telemetry)  # fmt: skip

        def on_sample(s: Sample) -> None:
            record.sample(s)
            out.samples.append(s)
            self.listener.sample(out.seq, s)
            line = tel.live_line()
            if line:
                self.listener.telemetry(out.seq, line)

        t0 = time.monotonic()  # the faults' and verifiers' time axis (their threads read the real clock)
        out.load_wall = time.time()
        t_load = self.monotonic()
        ctx = _Context(self.cluster, record, t0, nemesis, out)
        started: list[Any] = []
        watch = ClusterWatch(self.cluster, opts.total_time) if self.cluster is not None else None
        extra: dict[str, Any] = {"stop": watch.stop_reason} if watch is not None else {}
        result: RunResult | None = None
        if load.web_urls:
            extra["web_urls"] = load.web_urls
        try:
            for v in trial.verifiers:
                v.start(ctx)
                started.append(v)
            if nemesis is not None:
                nemesis.start(t0)
            with tel, watch or contextlib.nullcontext():
                result = self.sysbench.run(
                    opts, load.endpoint, clients=load.clients, separate_schemas=load.separate_schemas,
                    on_sample=on_sample, preflight=False, hosts=load.client_hosts or None,
                    endpoints=load.client_endpoints or None, **extra,
                )  # fmt: skip
        finally:
            took = self.monotonic() - t_load
            # until steady, the warm-up is what the run found it to be
            cut = result.warmup_cut if result is not None else None
            warm = float(opts.warmup) if cut is None else cut
            out.phases["warm-up"] = min(warm, took)
            out.phases["measuring"] = min(opts.total_time - warm, max(0.0, took - warm))
            with self._phase(out, "faults"):
                self._heal(nemesis, started)
        if result.warmup_cut is not None:  # until steady, the warm-up seconds kept arrive last
            out.samples.sort(key=lambda s: (s.t, s.client))
            out.notes.append(steady_line(opts.warmup, result.warmup_cut))
        out.bottleneck = tel.conclude(result, duration=float(opts.time))
        self.listener.bottleneck(out.seq, out.bottleneck)
        out.cluster_down = watch.down_now() if watch is not None else None
        return result, ctx

    @staticmethod
    def _heal(nemesis: Nemesis | None, verifiers: list[Any]) -> None:
        try:
            if nemesis is not None:
                nemesis.heal_all()
        finally:
            for v in verifiers:
                try:
                    v.stop()
                except Exception:  # noqa: BLE001 - the others must still stop
                    log.exception("stopping %s", v.name)

    def _after_faults(
        self, trial: Trial, record: TrialRecord, nemesis: Nemesis | None, out: TrialOutcome
    ) -> None:
        """What each fault did to the load, then settle: the checks, and the next trial, need every
        node back and converged."""
        if nemesis is not None:
            out.faults = list(nemesis.records)
            out.windows = nemesis.windows()
            for effect in fault_effects(out.samples, out.windows):
                record.event("fault_effect", effect)
            http = web.outages(out.result, out.windows, out.load_wall)
            for o in http:
                record.event("http_outage", {**o.to_json(), "summary": o.line()})
                out.notes.append(o.line())
            if http:
                out.findings["http_outages"] = [o.to_json() for o in http]
            for err in nemesis.errors():
                record.event("fault_error", {"error": err})
                out.notes.append(err)
        if not trial.settle_after or self.cluster is None:
            return
        try:
            lines = self.cluster.settle(trial.nodes)
        except Exception as exc:  # noqa: BLE001 - recorded; verdicts that need a settled cluster say UNKNOWN
            lines = [f"cluster did not settle after heal: {exc}"]
        for line in lines:
            record.event("settle", {"note": line})
        out.notes += lines

    def _checks(self, trial: Trial, ctx: _Context, result: RunResult, out: TrialOutcome) -> None:
        """Stalls, TPC-C figures and consistency, the verifiers' checkers, and whether the trial ran
        as planned; every verdict stored with the trial."""
        record = ctx.record
        stalls = trial_stalls(result)
        record.provenance("stalls", stalls.to_json())
        if stalls.count or trial.test == TPCC:  # the study's point: shown for every tpcc trial
            out.notes.append(tpcc.stall_line(stalls))
        verdicts: list[Verdict] = []
        if trial.test == TPCC:
            verdicts.append(self._tpcc(trial, record, result, out))
        acked = web.acknowledged_verdict(self.cluster, result, trial.nodes)
        if acked is not None:
            verdicts.append(acked)
            # as a tpcc consistency FAIL: a lost write fails a run's trial; a drill's is its verdict
            if acked.result is Result.FAIL and trial.consistency == "fail-trial" and out.failure is None:
                out.failure = acked.summary
        for v in trial.verifiers:
            verdicts += v.check(ctx, out.findings)
            v.drop()
        if trial.verifiers or trial.faults:
            own = [self._trial_verdict(trial, result, out)]
            if any(r.error for r in out.faults):
                errors = [r.error for r in out.faults if r.error]
                why = "a fault could not be applied or healed; see notes"
                own.append(Verdict("faults", Result.UNKNOWN, why, {"errors": errors}))
            # A PASS only counts when the trial ran as planned: the trial verdict comes first.
            verdicts = own[:1] + verdicts + own[1:]
        out.verdicts = verdicts
        record.verdicts(verdicts)

    def _tpcc(self, trial: Trial, record: TrialRecord, result: RunResult, out: TrialOutcome) -> Verdict:
        figures = tpcc_figures(result, trial.load.options)
        if figures is not None:
            record.provenance("tpcc", figures)
            out.notes += tpcc.figure_lines(figures)
        load = trial.load
        if out.cluster_down and not trial.settle_after:  # nobody brought it back: nothing to check
            return consistency_verdict(out.cluster_down)
        try:
            reports = self.data.tpcc_consistency(load.admin_endpoint, load.databases)
        except WorkloadError as exc:
            verdict = consistency_verdict(str(exc))
            if trial.consistency == "fail-trial" and out.failure is None:
                out.failure = str(exc)
            return verdict
        for db, report in reports:
            record.provenance(f"tpcc_consistency:{db}", report.to_json())
            out.notes.append(report.summary_line())
            if report.failed and trial.consistency == "fail-trial" and out.failure is None:
                out.failure = report.summary_line()
        return consistency_verdict(reports)

    def _trial_verdict(self, trial: Trial, result: RunResult, out: TrialOutcome) -> Verdict:
        windows = [(start, end) for _, start, end in out.windows]
        runs = [r for v in trial.verifiers for r in v.verifier_runs(windows)]
        status = "completed" if result.ok else "failed"
        failure = f"{trial.test}: {result.failure()}" if result.failure() else None
        return check_trial(trial_run(status, failure, float(trial.load.options.time), out.samples, out.faults,
                                     out.windows, runs))  # fmt: skip
