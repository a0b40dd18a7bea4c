"""A drill: a trial with a fault schedule and verification workloads, run through the one trial
pipeline, then checked. `fault`, `scenario` and `soak` build a ScenarioSpec and hand it here; the
CLI only parses and prints.

    drill = Drill(cluster, spec, store_path, sysbench, listener=view)
    out = drill.run(command_line)       # settle, prepare, load + faults + verifiers, heal, settle, check
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field
from pathlib import Path
from typing import Any

import pymysql  # type: ignore[import-untyped, unused-ignore]

from clusterbench.checkers.verdict import Result, Verdict, combine
from clusterbench.cluster import Cluster
from clusterbench.errors import ClusterStateError
from clusterbench.faults import leftovers
from clusterbench.faults.spec import PlannedFault
from clusterbench.paths import home_dir, known_clusters
from clusterbench.runner.bench import make_options
from clusterbench.runner.provenance import ClusterProbe, host_facts
from clusterbench.scenario.anomalies import AnomalyVerification
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.scenario.verification import Verification
from clusterbench.spec.topology import Topology, load_topology
from clusterbench.store import Store
from clusterbench.trial.data import DataSets
from clusterbench.trial.listener import TrialListener
from clusterbench.trial.pipeline import Pipeline, TrialOutcome
from clusterbench.trial.recorder import Recorder
from clusterbench.trial.spec import (
    Load,
    Trial,
    Verifier,
    endpoint_provenance,
    stored_params,
    workload_provenance,
)
from clusterbench.workloads import Sample, SysbenchRunner

KIND = "scenario"


@dataclass
class DrillOutcome:
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


def plan_faults(
    spec: ScenarioSpec, topology: Topology, source: str, primary: int | None
) -> list[PlannedFault]:
    """The scenario's fault schedule against a topology (targets resolved, seeded); InputError
    lines name the source."""
    return spec.planned(
        topology.cluster.nodes, 1 if topology.balancer.kind == "haproxy" else 0, source, primary=primary,
        web_nodes=topology.web.nodes, fronts=len(topology.web.front_indexes()),
    )  # fmt: skip


def precheck(spec: ScenarioSpec, topo_path: Path | None) -> None:
    """Plan the schedule against the scenario's topology file before anything is brought up (a
    scenario without one is planned against the cluster that is up, once it is known)."""
    if topo_path is None:
        return
    topo = load_topology(topo_path)
    plan_faults(spec, topo, KIND, 1 if topo.engine.has_primary else None)  # member 1 leads after `up`


def pick_cluster(name: str | None) -> str:
    """The cluster a drill without a topology file runs on: the one named, or the only one up."""
    if name is not None:
        return name
    known = known_clusters(home_dir())
    if len(known) != 1:
        raise ClusterStateError(
            "no cluster is up; start one with `clusterbench up`"
            if not known
            else f"several clusters are up ({', '.join(known)}); choose one with --name"
        )
    return known[0]


def check_leftovers(cluster: Cluster) -> None:
    """A drill must not start over faults an earlier, killed run left in place."""
    left = leftovers.find(cluster)
    if left:
        raise ClusterStateError(
            f"faults left by an earlier run on cluster '{cluster.topology.name}': "
            + "; ".join(lo.describe() for lo in left)
            + f"; heal them with `clusterbench heal -n {cluster.topology.name}`"
        )


def soak_spec(spec: ScenarioSpec, i: int) -> ScenarioSpec:
    """Trial i of a soak: the scenario with seed + i (and the random schedule's own seed + i), so
    every trial draws other faults and targets, reproducibly."""
    update: dict[str, Any] = {"seed": spec.seed + i}
    rf = spec.random_faults
    if rf is not None and rf.seed is not None:
        update["random_faults"] = rf.model_copy(update={"seed": rf.seed + i})
    return spec.model_copy(update=update)


@dataclass(eq=False)
class Drill:
    """One drill on a cluster that is up."""

    cluster: Cluster
    spec: ScenarioSpec
    store_path: Path
    sysbench: SysbenchRunner
    _: KW_ONLY
    listener: TrialListener = field(default_factory=TrialListener)
    tags: Sequence[str] = ()
    notes: str = ""
    telemetry: bool = True
    connect: Any = pymysql.connect
    facts: Any = host_facts

    def __post_init__(self) -> None:
        self.tags = tuple(self.tags)

    def faults(self) -> list[PlannedFault]:
        """The schedule on this cluster: `target = "primary"` is the member taking the writes now."""
        primary = self.cluster.primary() if self.spec.targets_primary() else None
        if primary is None and self.spec.targets_primary() and not self.cluster.engine.every_node_writes:
            raise ClusterStateError(
                f"target primary: no member of '{self.cluster.topology.name}' is a writable primary now; "
                "see `clusterbench status`, heal it (`clusterbench start`) and run again"
            )
        return plan_faults(self.spec, self.cluster.topology, KIND, primary)

    def load(self) -> Load:
        load = self.spec.load
        opts = make_options(
            test=load.workload, threads=load.threads, time=load.duration, tables=load.tables,
            table_size=load.table_size, warehouses=load.warehouses, customers=load.customers,
            items=load.items, mix=load.mix, rate=load.rate, batch=load.batch, row_size=load.row_size,
            http_timeout=load.http_timeout, http_max_workers=load.http_max_workers,
            http_keepalive=load.http_keepalive,
        )  # fmt: skip
        # The sysbench load comes from the topology's client hosts when it has some; the
        # verification workloads (ledger, bank, prober) stay on this machine.
        return Load(options=opts, endpoint=self.cluster.endpoint(load.target),
                    client_hosts=tuple(self.cluster.client_hosts()),
                    web_urls=tuple(self.cluster.topology.web_urls()))  # fmt: skip

    def trial(self, faults: Sequence[PlannedFault]) -> Trial:
        load = self.load()
        verifiers: list[Verifier] = [Verification(self.cluster, self.spec)]
        if self.spec.anomalies is not None:
            verifiers.append(AnomalyVerification(self.cluster, self.spec.anomalies, seed=self.spec.seed))
        return Trial(
            load=load, params=stored_params(load), faults=tuple(faults), verifiers=tuple(verifiers),
            # `prepare = false`: the tables an earlier run left, as `run --no-prepare`
            prepare="fresh" if self.spec.load.prepare else "existing",
            # tpcc: the consistency check is a verdict of its own, once the faults are healed
            consistency="verdict", telemetry=self.telemetry,
            # the first fault must not mix with an earlier one's effects
            settle_before=True,
        )  # fmt: skip

    def run(self, command_line: str = "", faults: Sequence[PlannedFault] | None = None) -> DrillOutcome:
        """Settle, check that the load can start (a missing table stops here: nothing stored), then
        the trial; Ctrl-C goes through once the faults are healed and the verifiers stopped."""
        planned = list(faults) if faults is not None else self.faults()
        trial = self.trial(planned)
        data = DataSets(self.sysbench, self.connect, phase=self.listener.phase, note=self.listener.note)
        with Store.open(self.store_path) as store:
            rec = Recorder(store)
            pipe = Pipeline(
                self.sysbench, rec, data, cluster=self.cluster, listener=self.listener,
                snapshot=lambda _: ClusterProbe(self.cluster).snapshot(),
                telemetry=self.cluster if self.telemetry else None,
            )  # fmt: skip
            pipe.check(trial)  # settled, and the load can start: a missing table stops here
            run_id = self._create_run(rec, command_line, planned)
            try:
                out = pipe.run(trial, run_id, 1)
            except BaseException as exc:
                rec.abort_run(run_id, exc)
                raise
            status = "completed" if out.status == "completed" else "failed"
            rec.finish_run(run_id, status)
        return self._outcome(run_id, out)

    def _create_run(self, rec: Recorder, command_line: str, faults: Sequence[PlannedFault]) -> int:
        spec = self.spec
        run_id = rec.create_run(
            KIND, name=spec.name, command_line=command_line, tags=self.tags, notes=self.notes
        )
        self.listener.run_created(run_id)
        load = self.load()
        workload = workload_provenance(KIND, [load.test], load, prepare=spec.load.prepare, cleanup=False)
        rec.run_provenance(run_id, "workload", workload)
        rec.run_provenance(run_id, "endpoint", endpoint_provenance(load.endpoint))
        rec.run_provenance(run_id, "topology", self.cluster.topology.model_dump(mode="json"))
        rec.run_facts(run_id, self.facts())
        # What reproduces the trial: the scenario as run and its fault schedule with the seed that
        # drew its random targets and faults.
        rec.run_provenance(run_id, "scenario", spec.model_dump(mode="json", by_alias=True))
        rec.run_provenance(run_id, "fault_schedule", {
            "seed": spec.seed,
            "random_faults_seed": spec.random_seed if spec.random_faults is not None else None,
            "faults": [asdict(f) for f in faults],
        })  # fmt: skip
        return run_id

    @staticmethod
    def _outcome(run_id: int, out: TrialOutcome) -> DrillOutcome:
        return DrillOutcome(
            run_id, out.trial_id, out.status,
            verdicts=out.verdicts, windows=out.windows,
            heal_details=[{"fault": r.fault.label(), "apply": r.apply_detail, "heal": r.heal_detail,
                           "error": r.error} for r in out.faults],
            availability=out.findings.get("availability", []), failover=out.findings.get("failover", []),
            samples=out.samples, notes=out.notes,
        )  # fmt: skip
