"""Benchmark runs: sysbench tests as the trials of one stored run (`run`, `suite`).

`BenchPlan` says what to run (tests, options, endpoint, clients); `BenchRunner.execute` makes one
run of it: each test a `Trial` handed to the one pipeline (trial.pipeline), which prepares once
per dataset, measures, checks and records; a suite's groups are cleaned up after their last test.
Nothing here prints: progress goes to a `TrialListener`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pymysql  # type: ignore[import-untyped, unused-ignore]
from pydantic import ValidationError

from clusterbench.cluster import Cluster
from clusterbench.errors import ClusterbenchError, InputError
from clusterbench.runner.provenance import ServerProbe, host_facts
from clusterbench.spec.endpoint import Endpoint
from clusterbench.spec.topology import Topology
from clusterbench.store import Store
from clusterbench.store.refs import resolve_run as resolve_run  # re-exported
from clusterbench.telemetry.sampler import TelemetrySource
from clusterbench.trial.data import DataSets
from clusterbench.trial.listener import TrialListener
from clusterbench.trial.pipeline import Pipeline, TrialOutcome, preflight
from clusterbench.trial.recorder import Recorder
from clusterbench.trial.spec import Load, Trial, endpoint_provenance, stored_params, workload_provenance
from clusterbench.workloads import SysbenchOptions, SysbenchRunner, client_databases, group_tests
from clusterbench.workloads.placement import ClientHost
from clusterbench.workloads.slap import check_slap
from clusterbench.workloads.sysbench import (
    HTTP_TESTS,
    SLAP_TEST,
    canonical_test,
    check_known_tests,
    steady_problem,
)

Kind = Literal["run", "suite", "scenario"]

# What shows a bench run's progress (the live view): the trial pipeline's listener.
BenchListener = TrialListener


class BenchInterrupted(ClusterbenchError):
    """Ctrl-C or SIGTERM stopped a run; what it measured is stored and marked interrupted."""

    exit_code = 130


class TrialsFailed(ClusterbenchError):
    """The run finished, but at least one trial failed (its reason is stored as an event)."""

    exit_code = 1


def make_options(**fields: Any) -> SysbenchOptions:
    """SysbenchOptions from user input; a bad value becomes one InputError line naming the option."""
    if "test" in fields:
        fields["test"] = canonical_test(fields["test"])  # `-w http` is the mixed page
        check_known_tests([fields["test"]])
    try:
        return SysbenchOptions(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        if not err["loc"]:  # a check across options (batch against table_size)
            raise InputError(str(err["msg"]).removeprefix("Value error, ")) from None
        name = "--" + "-".join(str(p) for p in err["loc"]).replace("_", "-")
        name = {"--time": "--duration"}.get(name, name)  # the flag's name, not SysbenchOptions'

        msg = str(err["msg"]).removeprefix("Value error, ")  # a validator's own words
        raise InputError(f"{name}: {msg} (got {err.get('input')!r})") from None


def check_steady_tests(tests: Sequence[str], options: SysbenchOptions) -> None:
    """A warm-up until steady for every test of a run (the options checked their own test only)."""
    problem = steady_problem(tests, options.warmup) if options.warmup_until == "steady" else None
    if problem:
        raise InputError(f"--warmup-until: {problem}")


@dataclass(frozen=True)
class BenchPlan:
    """What to run. `options.test` is replaced by each test in turn."""

    kind: Kind
    tests: tuple[str, ...]
    options: SysbenchOptions
    endpoint: Endpoint
    clients: int = 1
    separate_schemas: bool = False
    prepare: bool = True
    cleanup: bool = False
    name: str = ""
    command_line: str = ""
    topology: dict[str, Any] | None = None
    # where the clients run, round-robin; empty: this machine
    client_hosts: tuple[ClientHost, ...] = ()
    # what each client loads, round-robin (e.g. one node each); empty: `endpoint` for all.
    # `endpoint` still serves the schema checks, prepare and cleanup.
    client_endpoints: tuple[Endpoint, ...] = ()
    # --tag and --notes: stored with the run when it is created, so an interrupted run has them
    tags: tuple[str, ...] = ()
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.tests:
            raise InputError("no test to run; name at least one sysbench test")
        object.__setattr__(self, "tests", tuple(canonical_test(t) for t in self.tests))  # -w http
        check_known_tests(self.tests)
        if self.clients < 1:
            raise InputError(f"--clients must be at least 1, got {self.clients}")
        http = [t for t in self.tests if t in HTTP_TESTS]
        if http and self.options.rate <= 0:  # the first test's options were checked, not the others'
            raise InputError(
                f"--rate: {http[0]} sends requests at a fixed rate whatever the latency; give --rate R "
                "(requests per second, all clients together) above 0"
            )
        check_steady_tests(self.tests, self.options)  # as above: the others' were not checked
        if SLAP_TEST in self.tests:
            check_slap(self.trial_options(SLAP_TEST), self.endpoint, self.clients)
            if len(self.client_endpoints) > 1:
                raise InputError("--target: mysqlslap connects to one address; use balancer or node:N")

    def trial_options(self, test: str) -> SysbenchOptions:
        return self.options.model_copy(update={"test": test})

    def trial(self, test: str, *, telemetry: bool = True) -> Trial:
        """The trial of one test: its load, prepared afresh once per dataset (or the tables an
        earlier run left, --no-prepare); a tpcc consistency FAIL fails it."""
        load = Load(
            options=self.trial_options(test), endpoint=self.endpoint, clients=self.clients,
            separate_schemas=self.separate_schemas, client_hosts=self.client_hosts,
            client_endpoints=self.client_endpoints, web_urls=self.web_urls,
        )  # fmt: skip
        return Trial(load=load, params=stored_params(load), prepare="fresh" if self.prepare else "existing",
                     telemetry=telemetry)  # fmt: skip

    @property
    def databases(self) -> list[str]:
        return client_databases(self.endpoint, self.clients, self.separate_schemas)

    @property
    def web_urls(self) -> tuple[str, ...]:
        """Where the HTTP tests go: the web tier's front of the cluster (its topology); none
        against an endpoint or a cluster without a web tier."""
        if self.topology is None:
            return ()
        return tuple(Topology.model_validate(self.topology).web_urls())

    def workload_provenance(self) -> dict[str, Any]:
        load = self.trial(self.tests[0]).load
        return workload_provenance(self.kind, self.tests, load, prepare=self.prepare, cleanup=self.cleanup)

    def endpoint_provenance(self) -> dict[str, Any]:
        return endpoint_provenance(self.endpoint)


@dataclass
class BenchOutcome:
    run_id: int
    status: str
    trials: list[TrialOutcome] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        return [f"{t.test}: {t.failure}" for t in self.trials if t.failure]


Connect = Callable[..., Any]


class BenchRunner:
    """Runs a BenchPlan against an endpoint (or a cluster's) and records it in a Store."""

    def __init__(
        self,
        sysbench: SysbenchRunner,
        probe: ServerProbe | None = None,
        *,
        facts: Callable[[], dict[str, Any]] = host_facts,
        connect: Connect = pymysql.connect,
        monotonic: Callable[[], float] = time.monotonic,
        telemetry: TelemetrySource | None = None,
        telemetry_on: bool = True,
    ) -> None:
        self.sysbench = sysbench
        self.probe = probe
        # the cluster whose servers are sampled every second beside the load (None: an endpoint)
        self.telemetry = telemetry
        # the cluster the load runs on, when it is one clusterbench runs: the pipeline checks its
        # nodes after the load (the web tier's acknowledged writes) and ends a load it outlived
        self.cluster = telemetry if isinstance(telemetry, Cluster) else None
        self.telemetry_on = telemetry_on
        self.facts = facts
        self.connect = connect
        self.monotonic = monotonic

    def _data(self, lis: TrialListener) -> DataSets:
        return DataSets(self.sysbench, self.connect, phase=lis.phase, note=lis.note, monotonic=self.monotonic)

    def _pipeline(self, rec: Recorder, lis: TrialListener) -> Pipeline:
        data = self._data(lis)
        probe = self.probe
        return Pipeline(
            self.sysbench, rec, data, snapshot=(lambda _: probe.snapshot()) if probe is not None else None,
            telemetry=self.telemetry, listener=lis, monotonic=self.monotonic, cluster=self.cluster,
        )  # fmt: skip

    def check(self, plan: BenchPlan) -> None:
        """Fail fast, before the run exists: reach every address, create the schemas the clients
        need, log in to each; --no-prepare: every group's tables must be there."""
        data = self._data(TrialListener())
        groups = group_tests(plan.tests)
        preflight(self.sysbench, data, plan.trial(groups[0].tests[0]))
        for group in groups[1:] if not plan.prepare else []:
            data.check_tables(plan.trial_options(group.tests[0]), plan.endpoint, plan.databases)

    def execute(self, plan: BenchPlan, store: Store, listener: TrialListener | None = None) -> BenchOutcome:
        """Run every test of the plan as a trial of one new run. Call `check` first.

        Ctrl-C / SIGTERM (KeyboardInterrupt): sysbench is stopped by the workload runner, the
        current trial and the run are marked interrupted (their samples stay), and the exception
        goes on to the caller.
        """
        lis = listener or TrialListener()
        rec = Recorder(store)
        run_id = rec.create_run(plan.kind, name=plan.name, command_line=plan.command_line, tags=plan.tags,
                                notes=plan.notes)  # fmt: skip
        outcome = BenchOutcome(run_id=run_id, status="running")
        lis.run_created(run_id)
        pipe = self._pipeline(rec, lis)
        try:
            rec.run_provenance(run_id, "workload", plan.workload_provenance())
            rec.run_provenance(run_id, "endpoint", plan.endpoint_provenance())
            if plan.topology is not None:
                rec.run_provenance(run_id, "topology", plan.topology)
            rec.run_facts(run_id, self.facts())
            seq = 0
            for group in group_tests(plan.tests):
                for test in group.tests:
                    seq += 1
                    trial = plan.trial(test, telemetry=self.telemetry_on)
                    outcome.trials.append(pipe.run(trial, run_id, seq))
                if plan.cleanup:
                    lis.phase(f"cleaning up the {group.name} tables")
                    pipe.data.cleanup(plan.trial_options(group.tests[0]), plan.endpoint, plan.databases)
                    rec.run_event(run_id, "cleanup", {"group": group.name})
        except BaseException as exc:
            outcome.status = rec.abort_run(run_id, exc)
            raise
        outcome.status = "failed" if any(t.status != "completed" for t in outcome.trials) else "completed"
        rec.finish_run(run_id, outcome.status)
        return outcome


CLIENT_HOSTS_HELP = "auto, local or a number of client hosts"


def choose_client_hosts(
    spec: str, available: Sequence[ClientHost], *, external: bool = False
) -> list[ClientHost]:
    """The hosts the clients run on, from --client-hosts.

    auto: the cluster's client hosts when it has any (its topology put them there to carry the
    load), else this machine; local: this machine; N: the first N client hosts. [] means this
    machine.
    """
    spec = spec.strip().lower()
    if spec == "local":
        return []
    if spec == "auto":
        return list(available)
    if not spec.isdigit() or int(spec) < 1:
        raise InputError(f"--client-hosts must be {CLIENT_HOSTS_HELP}, got {spec!r}")
    if external:
        raise InputError(
            f"--client-hosts {spec} needs a clusterbench cluster's client hosts; leave it out with --host"
        )
    n = int(spec)
    if n > len(available):
        raise InputError(
            f"--client-hosts {n}: the cluster has {len(available)} client host(s); add them with "
            "`[clients] hosts = K` in the topology (or hosts with role client over ssh) and run `up` again"
        )
    return list(available[:n])


def default_clients(
    clients: int | None, hosts: Sequence[ClientHost], endpoints: Sequence[Endpoint] = ()
) -> int:
    """--clients, or one client per client host or per target, whichever is more (at least one)."""
    if clients is not None:
        return clients
    return max(1, len(hosts), len(endpoints))


def parse_tests(text: str | None, default: Sequence[str]) -> tuple[str, ...]:
    """'a,b , c' → ('a', 'b', 'c'), checked against the known tests."""
    if text is None:
        return tuple(default)
    tests = tuple(canonical_test(t.strip()) for t in text.split(",") if t.strip())
    if not tests:
        raise InputError("--workload is empty; give a comma-separated list of sysbench tests")
    check_known_tests(tests)
    return tests
