"""What one trial is, as data: its load, where the tool's own statements go, its faults, the
verification workloads beside it, the server settings and node count it runs with.

`run`, `suite`, `fault`, `scenario`, `soak`, `experiment run` and `[search]` each build `Trial`s
and hand them to the one pipeline (`trial.pipeline`); none runs a phase of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from clusterbench.checkers.trial import VerifierRun
from clusterbench.checkers.verdict import Verdict
from clusterbench.faults.spec import PlannedFault
from clusterbench.spec.endpoint import Endpoint
from clusterbench.workloads import SysbenchOptions, client_databases, needed_schemas
from clusterbench.workloads.placement import ClientHost

# fresh: the dataset is prepared unless this pipeline prepared the same one on this cluster
# before (a run's first trial of a prepare group, an experiment's first trial of a dataset);
# existing: the tables an earlier run left (--no-prepare), checked before anything starts.
Prepare = Literal["fresh", "existing"]
# After a tpcc trial the twelve consistency conditions are checked on the settled cluster and
# stored as the verdict `tpcc-consistency`; with "fail-trial" a FAIL also fails the trial (run,
# suite, experiments), with "verdict" it is the verdict alone (a drill, whose outcome is its verdicts).
Consistency = Literal["fail-trial", "verdict"]


@dataclass(frozen=True)
class Load:
    """The load of one trial: one test, from `clients` processes (round-robin over the client
    hosts and the client endpoints), through `endpoint`. `admin` is where the tool's own
    statements go (schemas, prepare, drops, checks): the endpoint itself, or a node that takes
    writes where the endpoint may not (all nodes, a socket, TLS on and off)."""

    options: SysbenchOptions
    endpoint: Endpoint
    clients: int = 1
    separate_schemas: bool = False
    client_hosts: tuple[ClientHost, ...] = ()
    client_endpoints: tuple[Endpoint, ...] = ()
    admin: Endpoint | None = None
    # where the HTTP tests send their requests: the web tier's front (Topology.web_urls); empty
    # without a web tier (they are then refused). `endpoint` still takes the prepare and checks.
    web_urls: tuple[str, ...] = ()

    @property
    def test(self) -> str:
        return self.options.test

    @property
    def databases(self) -> list[str]:
        return client_databases(self.endpoint, self.clients, self.separate_schemas)

    @property
    def schemas(self) -> list[str]:
        return needed_schemas(self.endpoint, self.clients, self.separate_schemas)

    @property
    def admin_endpoint(self) -> Endpoint:
        return self.admin or self.endpoint


class TrialContext(Protocol):
    """What a verifier sees of the trial it runs beside."""

    @property
    def cluster(self) -> Any: ...

    @property
    def record(self) -> Any:
        """The trial's TrialRecord: where histories, events and figures are written."""

    @property
    def t0(self) -> float:
        """The load's start on time.monotonic(); fault times count from it."""

    def windows(self) -> list[tuple[str, float, float]]:
        """(fault label, start, end) of every fault that was applied."""

    def fault_records(self) -> list[Any]: ...

    def samples(self) -> list[Any]:
        """The load's per-interval samples so far."""


class Verifier(Protocol):
    """A verification workload beside the load (ledger, bank, prober, monitors, anomaly
    workloads): started when the load starts, stopped when it ends (faults healed), checked once
    the cluster has settled. `findings` holds figures for people (availability, failover)."""

    name: str

    def start(self, ctx: TrialContext) -> None: ...

    def stop(self) -> None: ...

    def verifier_runs(self, windows: list[tuple[float, float]]) -> list[VerifierRun]:
        """Per workload: operations expected outside the fault windows, and recorded."""

    def check(self, ctx: TrialContext, findings: dict[str, Any]) -> list[Verdict]: ...

    def drop(self) -> None:
        """Drop this trial's own tables (never another run's)."""


@dataclass(frozen=True)
class Trial:
    """One trial, everything needed to run it."""

    load: Load
    params: dict[str, Any] = field(default_factory=dict)  # stored with the trial
    prepare: Prepare = "fresh"
    faults: tuple[PlannedFault, ...] = ()
    verifiers: tuple[Verifier, ...] = ()
    consistency: Consistency = "fail-trial"
    # nodes 1..nodes run in this trial (None: every node of the cluster); settling waits for them
    nodes: int | None = None
    # SET GLOBAL name = value on every running node after the prepare, before the load
    server: tuple[tuple[str, int], ...] = ()
    telemetry: bool = True
    # wait until the cluster is settled before the trial (Pipeline.check: a drill must not inherit
    # an earlier fault's aftermath); it always settles after the load when faults or verifiers ran
    settle_before: bool = False

    @property
    def test(self) -> str:
        return self.load.test

    @property
    def settle_after(self) -> bool:
        return bool(self.faults or self.verifiers)


def stored_params(load: Load) -> dict[str, Any]:
    """The params a run or suite stores with a trial: the options, the clients, where they go."""
    params: dict[str, Any] = {
        **load.options.model_dump(mode="json"),
        "clients": load.clients,
        "separate_schemas": load.separate_schemas,
        "endpoint": load.endpoint.name,
    }
    if load.client_hosts:
        params["client_hosts"] = [h.name for h in load.client_hosts]
    if load.client_endpoints:
        params["client_targets"] = [e.name for e in load.client_endpoints]
    return params


def endpoint_provenance(e: Endpoint) -> dict[str, Any]:
    """An endpoint as a run's provenance records it (never its password)."""
    return {
        "name": e.name,
        "addresses": [f"{a.host}:{a.port}" for a in e.addresses],
        "user": e.user,
        "database": e.database,
        "tls": e.tls,
        "auto_inc_off": e.auto_inc_off,
    }


def workload_provenance(
    kind: str, tests: Sequence[str], load: Load, *, prepare: bool, cleanup: bool
) -> dict[str, Any]:
    """The load of a run (its tests share every option but the test) as its provenance."""
    return {
        "kind": kind,
        "tests": list(tests),
        "options": load.options.model_dump(mode="json", exclude={"test"}),
        "clients": load.clients,
        "separate_schemas": load.separate_schemas,
        "client_hosts": [h.name for h in load.client_hosts],
        "client_targets": [e.name for e in load.client_endpoints],
        "prepare": prepare,
        "cleanup": cleanup,
    }


def fault_labels(faults: Sequence[PlannedFault]) -> str:
    return "; ".join(
        f"{f.label()} at {f.at:g} s" + (f" for {f.until - f.at:g} s" if f.until else "") for f in faults
    )
