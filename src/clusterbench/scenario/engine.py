"""Runs a scenario: sysbench load + verification workloads + a fault schedule, then heals, waits
for the cluster to settle and runs the checkers. Everything is stored as it happens."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clusterbench.checkers.trial import FaultRun, TrialRun, VerifierRun, check_trial
from clusterbench.checkers.verdict import Result, Verdict, combine
from clusterbench.cluster import Cluster
from clusterbench.engines.base import DbNode
from clusterbench.errors import WorkloadError
from clusterbench.faults.nemesis import Nemesis
from clusterbench.faults.spec import PlannedFault
from clusterbench.runner.bench import BenchListener, BenchPlan, BenchRunner, make_options
from clusterbench.runner.provenance import ClusterProbe
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.store import Store
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.workloads import RunResult, Sample, SysbenchOptions, SysbenchRunner
from clusterbench.workloads.parse import combine_samples
from clusterbench.workloads.tpcc_check import CheckReport

log = logging.getLogger(__name__)

SETTLE_TIMEOUT = 240.0


def _ready(n: DbNode) -> bool:
    h = n.health()
    return h is not None and h.ready


class ThreadStores:
    """One Store connection per thread (sqlite3 connections are not shared across threads)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._all: list[Store] = []
        self._lock = threading.Lock()

    def get(self) -> Store:
        s = getattr(self._local, "store", None)
        if s is None:
            s = Store.open(self.path)
            self._local.store = s
            with self._lock:
                self._all.append(s)
        return s


class ScenarioListener(BenchListener):
    def fault_event(self, t: float, detail: dict[str, Any]) -> None:
        """A fault started, was applied or ended (t: seconds after the load started)."""

    def verdict(self, v: Verdict) -> None:
        """A checker finished."""


@dataclass
class ScenarioOutcome:
    run_id: int
    trial_id: int | None
    status: str
    verdicts: list[Verdict] = field(default_factory=list)
    windows: list[tuple[str, float, float]] = field(default_factory=list)
    heal_details: list[dict[str, Any]] = field(default_factory=list)
    availability: list[dict[str, Any]] = field(default_factory=list)
    failover: list[dict[str, Any]] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def result(self) -> Result:
        return combine(self.verdicts)


class Companion:
    """Something that runs beside the load: started when the load starts, stopped after it."""

    name = "companion"

    def start(self, trial_id: int, t0: float, run_id: int | None = None) -> None:  # pragma: no cover
        pass

    def stop(self) -> None:  # pragma: no cover - interface default
        pass

    def verifier_runs(self, windows: list[tuple[float, float]]) -> list[VerifierRun]:
        """Per verification workload: operations expected at its rate and recorded, outside the
        fault `windows` (for the trial checker). Default: none."""
        return []


CompanionFactory = Callable[[Cluster, ScenarioSpec, ThreadStores], list[Companion]]


class _Hooks(BenchListener):
    """Starts the nemesis and the companions exactly when sysbench's load starts."""

    def __init__(self, engine: ScenarioEngine, outer: ScenarioListener) -> None:
        self.e = engine
        self.outer = outer

    def run_created(self, run_id: int) -> None:
        self.e.run_id = run_id
        # What reproduces the trial: the scenario as run and its fault schedule with the seed that
        # drew its random targets and faults.
        store = self.e.stores.get()
        spec = self.e.spec
        store.set_provenance(run_id, "scenario", spec.model_dump(mode="json", by_alias=True))
        store.set_provenance(
            run_id,
            "fault_schedule",
            {
                "seed": spec.seed,
                "random_faults_seed": spec.random_seed if spec.random_faults is not None else None,
                "faults": [asdict(f) for f in self.e.faults],
            },
        )
        self.outer.run_created(run_id)

    def phase(self, message: str) -> None:
        self.outer.phase(message)

    def trial_started(self, seq: int, test: str, options: SysbenchOptions) -> None:
        store = self.e.stores.get()
        assert self.e.run_id is not None
        self.e.trial_id = store.trials(self.e.run_id)[-1].id
        self.e.t0 = time.monotonic()
        for c in self.e.companions:
            c.start(self.e.trial_id, self.e.t0, self.e.run_id)
        self.e.nemesis.start(self.e.t0)
        self.outer.trial_started(seq, test, options)

    def sample(self, seq: int, sample: Sample) -> None:
        self.e.samples.append(sample)
        self.outer.sample(seq, sample)

    def telemetry(self, seq: int, line: str) -> None:
        self.outer.telemetry(seq, line)

    def bottleneck(self, seq: int, verdict: Bottleneck) -> None:
        self.outer.bottleneck(seq, verdict)

    def trial_finished(self, seq: int, test: str, result: RunResult, status: str) -> None:
        self.e.stop_all()
        self.outer.trial_finished(seq, test, result, status)

    def note(self, line: str) -> None:
        self.outer.note(line)


class ScenarioEngine:
    def __init__(
        self,
        cluster: Cluster,
        spec: ScenarioSpec,
        faults: list[PlannedFault],
        store_path: Path,
        sysbench: SysbenchRunner,
        companions: CompanionFactory | None = None,
        listener: ScenarioListener | None = None,
        tags: Sequence[str] = (),
        notes: str = "",
        telemetry: bool = True,
    ) -> None:
        self.cluster = cluster
        self.tags = tuple(tags)  # stored with the run when it is created
        self.notes = notes
        self.telemetry = telemetry
        self.spec = spec
        self.faults = faults
        self.stores = ThreadStores(store_path)
        self.sysbench = sysbench
        self.listener = listener or ScenarioListener()
        self.run_id: int | None = None
        self.trial_id: int | None = None
        self.t0 = 0.0
        self.samples: list[Sample] = []
        self.availability: list[dict[str, Any]] = []
        self.failover: list[dict[str, Any]] = []
        self.nemesis = Nemesis(cluster, faults, self._fault_sink)
        self.companions: list[Companion] = companions(cluster, spec, self.stores) if companions else []
        self._stopped = False
        # set by `run`: the load as planned and the runner that ran it (the checkers read the tables
        # the load wrote through them)
        self.plan: BenchPlan | None = None
        self.bench: BenchRunner | None = None

    def _fault_sink(self, kind: str, detail: dict[str, Any], t: float) -> None:
        # Called from the nemesis thread: it writes through its own connection.
        if self.run_id is not None:
            self.stores.get().add_event(self.run_id, kind, detail, trial_id=self.trial_id, t=round(t, 3))
        self.listener.fault_event(t, detail)

    def stop_all(self) -> None:
        """Heal every fault and stop every companion. Idempotent; safe on Ctrl-C."""
        if self._stopped:
            return
        self._stopped = True
        try:
            self.nemesis.heal_all()
        finally:
            for c in self.companions:
                try:
                    c.stop()
                except Exception:  # noqa: BLE001 - the others must still stop
                    log.exception("stopping %s", c.name)

    def bench_plan(self, command_line: str) -> BenchPlan:
        load = self.spec.load
        opts = make_options(
            test=load.workload,
            threads=load.threads,
            time=load.duration,
            tables=load.tables,
            table_size=load.table_size,
            warehouses=load.warehouses,
            customers=load.customers,
            items=load.items,
            mix=load.mix,
            rate=load.rate,
            batch=load.batch,
            row_size=load.row_size,
        )
        return BenchPlan(
            # `prepare = false`: the tables an earlier run left, as `run --no-prepare`
            prepare=load.prepare,
            # tpcc: the consistency check is a verdict, after the faults are healed (run_checkers)
            consistency_after_trial=False,
            kind="scenario",
            tests=(load.workload,),
            options=opts,
            endpoint=self.cluster.endpoint(load.target),
            name=self.spec.name,
            command_line=command_line,
            topology=self.cluster.topology.model_dump(mode="json"),
            # The sysbench load comes from the topology's client hosts when it has some; the
            # verification workloads (ledger, bank, prober) stay on this machine.
            client_hosts=tuple(self.cluster.client_hosts()),
            tags=self.tags,
            notes=self.notes,
        )

    def settle(self, timeout: float = SETTLE_TIMEOUT) -> list[str]:
        """After heal: every node a ready member of the quorum (Galera: Synced in the Primary
        component; Group Replication: ONLINE in the majority) in one view of full size."""
        size = self.cluster.topology.cluster.nodes
        notes = []
        t0 = time.monotonic()
        for n in self.cluster.nodes():
            if not n.alive():
                notes.append(f"n{n.index} was not running after heal; starting it")
                notes.append(self.cluster.node_start(n.index))
        # Running but not ready members the engine may have to bring back (a Group Replication
        # member expelled by a fault stays out of the group); Galera's come back by themselves.
        unready = [n.index for n in self.cluster.nodes() if not _ready(n)]
        if unready:
            notes += self.cluster.recover(unready)
        for n in self.cluster.nodes():
            n.wait_ready(max(1.0, timeout - (time.monotonic() - t0)), expect_size=size)
        notes.append(f"all {size} nodes ready in one view {time.monotonic() - t0:.1f} s after heal")
        # Clients come through the balancers: settled means they see every node UP again too
        # (HAProxy needs `rise` good checks after a node returns).
        backends = [f"n{i}" for i in self.cluster.topology.node_indexes()]
        for h in self.cluster.haproxies():
            if not h.alive():
                continue
            h.wait_all_up(backends, timeout=max(5.0, timeout - (time.monotonic() - t0)))
        if self.cluster.haproxies():
            notes.append(f"balancers see every node UP {time.monotonic() - t0:.1f} s after heal")
        return notes

    def run(
        self, command_line: str = "", checkers: Callable[[ScenarioEngine], list[Verdict]] | None = None
    ) -> ScenarioOutcome:
        plan = self.bench_plan(command_line)
        # Start from a healthy cluster, or the first fault's effects mix with an earlier one's.
        self.settle(timeout=120)
        bench = BenchRunner(self.sysbench, ClusterProbe(self.cluster), telemetry=self.cluster,
                            telemetry_on=self.telemetry)  # fmt: skip
        bench.check(plan)  # a missing table (prepare = false) stops here: nothing started, nothing stored
        self.plan, self.bench = plan, bench
        store = self.stores.get()
        try:
            bench_out = bench.execute(plan, store, _Hooks(self, self.listener))
        finally:
            self.stop_all()
        assert self.run_id is not None
        out = ScenarioOutcome(self.run_id, self.trial_id, bench_out.status, samples=list(self.samples))
        out.windows = self.nemesis.windows()
        out.heal_details = [
            {"fault": r.fault.label(), "apply": r.apply_detail, "heal": r.heal_detail, "error": r.error}
            for r in self.nemesis.records
        ]
        for err in self.nemesis.errors():
            out.notes.append(err)
        try:
            out.notes += self.settle()
        except Exception as exc:  # noqa: BLE001 - recorded; verdicts that need a settled cluster say UNKNOWN
            out.notes.append(f"cluster did not settle after heal: {exc}")
        for note in out.notes:
            store.add_event(self.run_id, "scenario", {"note": note}, trial_id=self.trial_id)
        if checkers is not None:
            out.verdicts = checkers(self)
            out.availability = self.availability
            out.failover = self.failover
        own = [check_trial(self.trial_run(bench_out.status, bench_out.failures))]
        if self.nemesis.errors():
            own.append(
                Verdict(
                    "faults",
                    Result.UNKNOWN,
                    "a fault could not be applied or healed; see notes",
                    {"errors": self.nemesis.errors()},
                )
            )
        for v in own:
            store.add_verdict(self.run_id, v.to_json(), trial_id=self.trial_id)
        # A PASS only counts when the trial ran as planned: the trial verdict comes first.
        out.verdicts = own[:1] + out.verdicts + own[1:]
        for v in out.verdicts:
            self.listener.verdict(v)
        return out

    def tpcc_consistency(self) -> list[tuple[str, CheckReport]]:
        """The TPC-C consistency conditions on the tables the load wrote, stored with the trial
        (BenchRunner.tpcc_consistency); WorkloadError when the check cannot run."""
        if self.bench is None or self.plan is None or self.run_id is None or self.trial_id is None:
            raise WorkloadError("the load never started a trial")
        return self.bench.tpcc_consistency(self.plan, self.stores.get(), self.run_id, self.trial_id)

    def trial_run(self, status: str, failures: list[str]) -> TrialRun:
        """What the trial checker needs: how the load, the faults and the verifiers really ran."""
        faults = [
            FaultRun(r.fault.label(), r.fault.at, r.fault.until, r.started, r.ended, r.error)
            for r in self.nemesis.records
        ]
        windows = [(start, end) for _, start, end in self.nemesis.windows()]
        measured = sum(s.interval for s in combine_samples(self.samples)) if self.samples else 0.0
        verifiers = [v for c in self.companions for v in c.verifier_runs(windows)]
        return TrialRun(
            load_status=status,
            load_failure="; ".join(failures) or None,
            planned_s=float(self.spec.load.duration),
            measured_s=measured,
            faults=faults,
            verifiers=verifiers,
        )
