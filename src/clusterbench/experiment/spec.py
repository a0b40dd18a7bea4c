"""Experiment files: a base topology and workload, factors with levels, repetitions, profiles.

Pure. `load_experiment(path, profile)` returns a validated `Experiment` or raises `InputError`
with one line per problem, each naming the file (and profile) and the field.

Layout of a file:

    [experiment]   name, description, repetitions (a number, or "auto" with min_repetitions,
                   max_repetitions, ci_statistic, ci_tolerance: experiment/convergence.py),
                   repetition_order ("blocked" or "interleaved"),
                   design ("full-grid", or a designed experiment: see experiment/design.py),
                   baseline, cv_warn
    [topology]     the base topology: the same tables as a topology file ([topology.cluster] ...)
    [workload]     tests, tables, table_size, warehouses and mix (tpcc), threads, clients, separate_schemas,
                   rate, rate_of_max, rand_type, target, tls, compression, batch and row_size (access_*),
                   slap_load_type, slap_queries, slap_query and slap_engine (mysqlslap),
                   interconnect and shaped_bandwidth, duration, warmup, cooldown, and
                   [[workload.faults]] (a fault schedule run inside every trial; times from the
                   start of the load, warm-up included)
    [factors]      factor = [levels...]: shorthand for [parts.main.factors]
    [parts.NAME]   factors = {...}, workload = {...}, design = ...: another sweep over the same base
    [search]       knobs, objective, constraints, budget, stopping rule: a sequential optimizer
                   (experiment/search.py) instead of factors
    [profiles.P]   any of the tables above, merged over them when `--profile P` is given
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from clusterbench.errors import InputError
from clusterbench.experiment.design import DesignSpec, FactorKind, kind_of
from clusterbench.faults.spec import FaultSpec
from clusterbench.spec.aliases import canonical_keys
from clusterbench.spec.topology import (
    MAX_NODES,
    RATE_RE,
    SIZE_RE,
    Topology,
)
from clusterbench.spec.web import MAX_WEB_NODES, WebLayout
from clusterbench.workloads import tpcc
from clusterbench.workloads.sysbench import (
    ACCESS_TESTS,
    KNOWN_TESTS,
    SLAP_SETTINGS,
    SLAP_TEST,
    TPCC,
    SlapLoadType,
    WarmupUntil,
    canonical_test,
    check_slap_engine,
    check_slap_query,
    steady_problem,
)

Level = int | float | str | bool

# Factors that change the cluster itself (a rebuild), and those changed on a running cluster.
TOPOLOGY_FACTORS = ("cpu_quota", "cpuset", "bandwidth")
# Failure detection: each level is a cluster of its own with the setting in its engine's section
# (Galera's evs timeouts in seconds, Group Replication's member_expel_timeout); with kill-node
# faults and `failover_figures`, what a failover study varies. Each belongs to one engine.
DETECTION_FACTORS: dict[str, str] = {
    "evs_suspect_timeout": "galera",
    "evs_inactive_timeout": "galera",
    "member_expel_timeout": "group_replication",
}
# `nodes` is changed at runtime: the cluster is built for the largest count of its group and the
# extra nodes are stopped (a graceful leave) between points, largest node count first.
SERVER_FACTORS = (  # SET GLOBAL
    "wsrep_slave_threads",
    "innodb_flush_log_at_trx_commit",
    "innodb_buffer_pool_size",
)
CLIENT_FACTORS = (
    "workload",
    "threads",
    "clients",
    "client_hosts",
    "separate_schemas",
    "rate",
    "rand_type",
    "target",
    "tls",
    "compression",
    "batch",
    "row_size",
    "interconnect",
    "warehouses",
    "slap_load_type",
    "slap_queries",
    "slap_engine",
)
# The web tier ([web] nodes and layout): each level is a cluster of its own (experiment/web.py).
WEB_FACTORS = ("web_nodes", "web_layout")
# `engine` builds another cluster (galera or group_replication) from the same base topology: one
# file compares the two engines on the same hardware and load.
ALL_FACTORS = ("engine", "nodes", *WEB_FACTORS, *TOPOLOGY_FACTORS, *DETECTION_FACTORS, *SERVER_FACTORS,
               *CLIENT_FACTORS)  # fmt: skip
ENGINES = ("galera", "group_replication")
# How the load client reaches the database (the access-method study's interconnects): the node's
# Unix socket with the client on the node's own host; TCP to the node over the bridge; TCP through
# the balancer (HAProxy); TCP to the node over links shaped to `shaped_bandwidth` (tbf).
INTERCONNECTS = ("socket", "tcp", "haproxy", "shaped")
Interconnect = Literal["socket", "tcp", "haproxy", "shaped"]


def _target(x: str) -> bool:
    return x in ("balancer", "all-nodes") or (x.startswith("node:") and x[5:].isdigit())


def _detection_seconds(x: float) -> bool:
    return 0 < x <= 3600 or (x == 0 and isinstance(x, int))


# What each level of these factors must be: a test, and the problem when a level fails it ({x}: the level).
LEVEL_CHECKS: dict[str, tuple[Callable[[Any], object], str]] = {
    "nodes": (lambda x: 1 <= x <= MAX_NODES, f"node counts must be 1-{MAX_NODES} (got {{x}})"),
    "web_nodes": (
        lambda x: 0 <= x <= MAX_WEB_NODES, f"web node counts must be 0-{MAX_WEB_NODES} (got {{x}})"
    ),
    "row_size": (lambda x: 16 <= x <= 16384, "row sizes must be 16-16384 bytes (got {x})"),
    **dict.fromkeys(
        ("threads", "clients", "wsrep_slave_threads", "client_hosts", "batch", "warehouses", "slap_queries"),
        (lambda x: x >= 1, "levels must be at least 1 (got {x})"),
    ),
    **dict.fromkeys(
        ("evs_suspect_timeout", "evs_inactive_timeout", "member_expel_timeout"),
        (_detection_seconds, "levels are seconds, above 0 and at most 3600 (got {x})"),
    ),
    "rate": (lambda x: x >= 0, "rates must be 0 (unlimited) or more (got {x})"),
    "cpu_quota": (lambda x: 0 < x <= 64, "cpu_quota levels are CPUs, above 0 and at most 64 (got {x})"),
    "innodb_buffer_pool_size": (SIZE_RE.match, "'{x}' is not a size like '128M' or '1G'"),
    "bandwidth": (RATE_RE.match, "'{x}' is not a rate like '100mbit'"),
    "target": (_target, "'{x}' is not a target; use balancer, node:N or all-nodes"),
}


def _known_tests(names: list[str]) -> list[str]:
    """The tests by their canonical names ("http" is the mixed page); an unknown one is an error."""
    tests = [canonical_test(x) for x in names]
    for x in tests:
        if x not in KNOWN_TESTS:
            raise ValueError(f"unknown sysbench test '{x}'; known: {', '.join(KNOWN_TESTS)}")
    return tests


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Factors(_Strict):
    """Each factor is a list of levels; the design crosses them (full grid)."""

    engine: list[Literal["galera", "group_replication"]] | None = None
    nodes: list[int] | None = None
    # the web tier: web nodes (0-9), on hosts of their own or on the database nodes' hosts
    web_nodes: list[int] | None = None
    web_layout: list[WebLayout] | None = None
    cpu_quota: list[float] | None = None
    cpuset: list[str] | None = None
    bandwidth: list[str] | None = None
    evs_suspect_timeout: list[float] | None = None  # Galera: seconds before a silent member is suspected
    evs_inactive_timeout: list[float] | None = None  # Galera: seconds before it is declared dead
    member_expel_timeout: list[int] | None = None  # Group Replication: seconds a suspect may stay
    wsrep_slave_threads: list[int] | None = None
    innodb_flush_log_at_trx_commit: list[Literal[0, 1, 2]] | None = None
    innodb_buffer_pool_size: list[str] | None = None  # sizes like "128M"; resized online
    # access_* tests: approximate bytes per row and rows per batched / eq-bound / range access;
    # before `workload`, so a grid runs every method on one prepared table before the next one
    row_size: list[int] | None = None
    batch: list[int] | None = None
    # how the client reaches the database (INTERCONNECTS); after row_size and batch so a grid
    # changes link shaping only between interconnects, before workload for the same reason
    interconnect: list[Interconnect] | None = None
    # tpcc: the scale; before `workload` too, so a grid runs everything on one load before the next
    warehouses: list[int] | None = None
    workload: list[str] | None = None
    threads: list[int] | None = None
    clients: list[int] | None = None
    # how many of the topology's client machines the trial's client processes are spread over
    client_hosts: list[int] | None = None
    separate_schemas: list[bool] | None = None
    rate: list[int] | None = None
    rand_type: list[Literal["uniform", "gaussian", "special", "pareto"]] | None = None
    target: list[str] | None = None
    tls: list[bool] | None = None
    compression: list[bool] | None = None
    # mysqlslap: the auto-generated load's type, queries per client per run, the table's engine
    slap_load_type: list[SlapLoadType] | None = None
    slap_queries: list[int] | None = None
    slap_engine: list[str] | None = None

    @field_validator("*")
    @classmethod
    def _non_empty(cls, v: list[Any] | None) -> list[Any] | None:
        if v is not None:
            if not v:
                raise ValueError("needs at least one level")
            if len(set(map(repr, v))) != len(v):
                raise ValueError("a level is given twice")
        return v

    @field_validator(*LEVEL_CHECKS)
    @classmethod
    def _each_level(cls, v: list[Any] | None, info: ValidationInfo) -> list[Any] | None:
        ok, problem = LEVEL_CHECKS[str(info.field_name)]
        for x in v or []:
            if not ok(x):
                raise ValueError(problem.format(x=x))
        return v

    @field_validator("workload")
    @classmethod
    def _tests(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else _known_tests(v)

    @field_validator("slap_engine")
    @classmethod
    def _engines(cls, v: list[str] | None) -> list[str] | None:
        for x in v or []:
            try:
                check_slap_engine(x)
            except ValueError as exc:  # a level of a list: say which one
                raise ValueError(f"{exc} (got {x!r})") from None
        return v

    def levels(self) -> dict[str, list[Level]]:
        """Factors that are set, in a fixed order (topology first, then server, then client)."""
        return {k: list(v) for k, v in self.model_dump(exclude_none=True).items()}


class Workload(_Strict):
    """Everything a trial runs with, unless a factor sets it. The tests are `workload` in the file
    (`test`, `tests` accepted; one name or a list: several become the factor `workload`); in code
    they are `tests`."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    tests: list[str] = Field(default_factory=lambda: ["oltp_read_write"], min_length=1, alias="workload")
    tables: int = Field(4, ge=1)
    table_size: int = Field(10000, ge=1)
    threads: int = Field(4, ge=1)
    clients: int = Field(1, ge=1)
    separate_schemas: bool = False
    rate: int = Field(0, ge=0)
    # A fraction of the highest tps measured earlier in the experiment on the same cluster with
    # the same test and node count (the sustained-rate run "at 75 % of the maximum").
    rate_of_max: float | None = Field(None, gt=0, le=2)
    rand_type: Literal["uniform", "gaussian", "special", "pareto"] = "special"
    target: str = "balancer"
    tls: bool = False
    compression: bool = False
    batch: int = Field(32, ge=1, description="access_* tests: rows per batched, eq-bound or range access")
    row_size: int = Field(20, ge=16, le=16384, description="access_* tests: approximate bytes per row")
    interconnect: Interconnect | None = Field(
        None, description="socket, tcp, haproxy or shaped: how the client reaches the database (else: target)"
    )
    shaped_bandwidth: str = Field("100mbit", description="the links' rate for interconnect = shaped")
    warehouses: int = Field(1, ge=1, description="tpcc: warehouses loaded (the scale)")
    # tpcc: whole-percent weights in tpcc.TYPES order, from "new_order=45,payment=43,..." or a table
    # { new_order = 45, ... }; None = the standard mix
    mix: tuple[int, ...] | None = None
    # mysqlslap (the flags --slap-*): the auto-generated load, or slap_query (SQL of the user's,
    # run in the workload's schema) instead of it
    slap_load_type: SlapLoadType = Field("mixed", description="mysqlslap: auto-generated load type")
    slap_queries: int = Field(100, ge=1, description="mysqlslap: queries per client per run")
    slap_query: str | None = Field(None, min_length=1, description="mysqlslap: SQL instead of auto-generated")
    slap_engine: str = Field("InnoDB", description="mysqlslap: storage engine of the auto-generated table")
    # HTTP tests (http_read, http_write, http_mixed; run's --http-*): `rate` is their request rate
    http_timeout: float = Field(10.0, gt=0, le=600, description="HTTP: s before a request is an error")
    http_max_workers: int = Field(0, ge=0, description="HTTP: cap on vegeta's workers per client; 0 = none")
    http_keepalive: bool = Field(True, description="HTTP: reuse connections (off: one per request)")
    duration: int = Field(30, ge=1, description="measured seconds per trial (alias: time)")
    warmup: int = Field(0, ge=0, description="seconds before `duration`, excluded from the results")
    warmup_until: WarmupUntil = Field(
        "time", description="time: the warm-up is `warmup` s; steady: at most that, until steady state"
    )
    cooldown: float = Field(0, ge=0, description="idle seconds after each trial")
    # Applied by a nemesis inside every trial of the part and healed before it ends; the cluster
    # is settled (every running node Synced, the balancer sees them UP) before the next trial.
    faults: list[FaultSpec] = Field(default_factory=list)
    # With faults: run the split-brain monitor and the availability prober beside the load, so each
    # trial stores its failover figures (suspected, view without the victim, new primary, writes
    # ok again) and the report shows them against the factors
    failover_figures: bool = False

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        data = canonical_keys(data)
        if isinstance(data, dict) and isinstance(data.get("workload"), str):
            data = {**data, "workload": [data["workload"]]}  # one test, as in scenario files
        return data

    @field_validator("shaped_bandwidth")
    @classmethod
    def _shaped(cls, v: str) -> str:
        if not RATE_RE.match(v):
            raise ValueError(f"'{v}' is not a rate like '100mbit'")
        return v

    @field_validator("mix", mode="before")
    @classmethod
    def _mix(cls, v: Any) -> Any:
        return None if v is None else tpcc.parse_mix(v)

    @field_validator("slap_engine")
    @classmethod
    def _slap_engine(cls, v: str) -> str:
        return check_slap_engine(v)

    @field_validator("slap_query")
    @classmethod
    def _slap_query(cls, v: str | None) -> str | None:
        return check_slap_query(v)

    @field_validator("tests")
    @classmethod
    def _tests(cls, v: list[str]) -> list[str]:
        return _known_tests(v)


def client_machines(topo: Topology) -> int:
    """The client machines a topology has: local client namespaces, or ssh hosts with role client."""
    if topo.provider.kind == "ssh":
        return sum(1 for h in topo.hosts if "client" in h.roles)
    return topo.clients.hosts


def check_client_hosts(levels: list[int], topo: Topology, field_: str) -> None:
    have = client_machines(topo)
    k = max(levels, default=0)
    if k > have:
        raise InputError(
            f"{field_}: {k} client machine(s) asked, the topology has {have}; set "
            "topology.clients.hosts (or give more hosts the role client)"
        )


def server_value(name: str, value: Level) -> int:
    """A server factor's level as the integer SET GLOBAL takes (sizes like '128M' in bytes)."""
    if isinstance(value, str):
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(value[-1:].upper(), 1)
        return int(value.rstrip("KMGkmg")) * mult
    return int(value)


def factor_kinds() -> dict[str, FactorKind]:
    """Every factor's kind (int, float, categorical), read from the Factors model's types."""
    return {name: kind_of(f.annotation) for name, f in Factors.model_fields.items()}


class Part(_Strict):
    factors: Factors = Field(default_factory=Factors)
    workload: dict[str, Any] = Field(default_factory=dict)
    design: DesignSpec | None = None  # instead of the experiment's design for this part


class ExperimentSettings(_Strict):
    name: str = Field(min_length=1, max_length=64)
    description: str = ""
    # a number, or "auto": min_repetitions per point, then one more at a time until the 95 %
    # confidence interval of ci_statistic is within ci_tolerance of it, at most max_repetitions
    # (experiment/convergence.py)
    repetitions: int | Literal["auto"] = Field(3, description='repetitions per point, or "auto"')
    min_repetitions: int = Field(3, ge=1, le=100, description='repetitions = "auto": planned per point')
    max_repetitions: int = Field(10, ge=1, le=100, description='repetitions = "auto": at most, per point')
    ci_statistic: Literal["median", "mean"] = "median"
    ci_tolerance: float = Field(0.05, gt=0, lt=1, description="the CI's ends within this fraction")
    # "full-grid", or a designed experiment: a name or a table, see experiment/design.py
    design: DesignSpec = Field(default_factory=DesignSpec)
    # blocked: a point's repetitions back to back (fewest node changes). interleaved: repetition 1
    # of every point, then repetition 2 ...: slow drift (a warming buffer pool, a growing table)
    # then spreads over all points instead of biasing the later ones, at the price of growing the
    # cluster again (nodes rejoin by IST) once per repetition.
    repetition_order: Literal["blocked", "interleaved"] = "blocked"
    baseline: dict[str, Level] = Field(default_factory=dict)
    cv_warn: float = Field(0.10, gt=0, description="flag a point whose coefficient of variation is above")

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, v: Any) -> Any:
        if v == "auto":
            return v
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100:
            raise ValueError('repetitions must be a number 1-100 or "auto"')
        return v

    @model_validator(mode="after")
    def _auto(self) -> ExperimentSettings:
        if self.repetitions != "auto":
            given = [k for k in ("min_repetitions", "max_repetitions") if k in self.model_fields_set]
            if given:
                raise ValueError(f'{given[0]} needs repetitions = "auto"; set that or remove {given[0]}')
        elif self.min_repetitions > self.max_repetitions:
            raise ValueError(
                f"min_repetitions {self.min_repetitions} is more than max_repetitions "
                f"{self.max_repetitions}; lower min_repetitions or raise max_repetitions"
            )
        return self

    @property
    def auto(self) -> bool:
        return self.repetitions == "auto"

    @property
    def planned_repetitions(self) -> int:
        """Repetitions planned per point (with "auto": the minimum; the runner adds more)."""
        return self.min_repetitions if self.repetitions == "auto" else int(self.repetitions)


METRICS = ("tps", "qps", "p50", "p95", "p99", "latency_avg", "errors_per_s")  # of a trial's summary


class SearchSpec(_Strict):
    """`[search]`: a sequential optimizer over knobs instead of a planned design (see search.py)."""

    # name = [low, high] | [level, level, ...] | { low, high, log } | { levels = [...] } |
    # { choices = [...] }; every knob must be a factor (its type decides int, float or categorical)
    knobs: dict[str, Any] = Field(min_length=1)
    objective: str = "max tps"  # "max METRIC" or "min METRIC"
    constraints: list[str] = Field(default_factory=list)  # "p95 <= 50", "errors_per_s <= 0.1"
    budget: int = Field(30, ge=1, description="trials in all, repetitions included")
    seed: int = Field(1, ge=0)
    startup: int | None = Field(None, ge=1, description="random trials before TPE models the space")
    patience: int | None = Field(
        None, ge=1, description="stop exploring after this many trials without a better incumbent"
    )
    min_improvement: float = Field(0.01, ge=0, description="what counts as better (relative)")
    recheck: int = Field(2, ge=1, description="measurements of a new incumbent before exploring on")
    confirm: int = Field(3, ge=1, description="measurements of the winner and close contenders")
    contenders: int = Field(2, ge=0, description="close contenders confirmed beside the incumbent")
    close: float = Field(0.05, ge=0, description="a contender is within this fraction of the incumbent")


class ExperimentFile(_Strict):
    experiment: ExperimentSettings
    topology: dict[str, Any] = Field(default_factory=dict)
    workload: Workload = Field(default_factory=Workload)
    factors: Factors | None = None
    parts: dict[str, Part] = Field(default_factory=dict)
    search: SearchSpec | None = None
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _parts(self) -> ExperimentFile:
        if self.search is not None and (self.factors is not None or self.parts):
            raise ValueError(
                "[search] and [factors]/[parts] in one file: put the search in a file of its own"
            )
        if self.search is not None and self.experiment.auto:
            raise ValueError(
                'repetitions = "auto" and [search]: a search repeats by its own recheck and confirm; '
                "give repetitions a number"
            )
        if self.factors is None and not self.parts and self.search is None:
            raise ValueError("no factors: add a [factors] table (or [parts.NAME.factors], or a [search])")
        if self.factors is not None and "main" in self.parts:
            raise ValueError("[factors] is the part 'main'; rename [parts.main]")
        for k in self.experiment.baseline:
            if k not in ALL_FACTORS:
                raise ValueError(f"experiment.baseline: unknown factor '{k}'")
        return self


class Experiment(BaseModel):
    """A resolved experiment: the profile is merged in, the base topology validated."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    settings: ExperimentSettings
    topology: Topology
    parts: dict[str, tuple[Workload, dict[str, list[Level]]]]
    profile: str | None
    source: str
    designs: dict[str, DesignSpec] = Field(default_factory=dict)  # per part; full grid when absent
    search: SearchSpec | None = None
    search_workload: Workload | None = None  # the workload of every search trial

    # The base topology per engine, when `engine` is a factor (or a knob): each with the other
    # engine's server section left out.
    engine_topologies: dict[str, Topology] = Field(default_factory=dict)

    def design(self, part: str) -> DesignSpec:
        return self.designs.get(part, self.settings.design)

    def base_topology(self, engine: Any = None) -> Topology:
        """The base topology of a point (its `engine` level, if it has one)."""
        if engine is None:
            return self.topology
        return self.engine_topologies[str(engine)]

    @property
    def name(self) -> str:
        return self.settings.name


def check_steady_warmup(wl: Workload, tests: list[str], where: str) -> None:
    """A warm-up until steady state is cut on sysbench's per-second histograms, within `warmup`."""
    problem = steady_problem(tests, wl.warmup) if wl.warmup_until == "steady" else None
    if problem:
        raise InputError(f"{where}: {problem}")


def check_own_workloads(
    wl: Workload, levels: dict[str, list[Level]], where: str, given: set[str] | None = None
) -> None:
    """The access-method tests' batch must fit the table, and batch and row_size are set only where
    a trial runs one of them; warehouses is a factor only with tpcc;
    mysqlslap is one client process at one address, without a rate limit; its settings (`given`:
    the workload keys the file sets) only where a trial runs it, and slap_query without the
    settings of the auto-generated load it replaces."""
    tests = [str(t) for t in levels.get("workload", wl.tests)]
    check_steady_warmup(wl, tests, where)
    batches = [int(b) for b in levels.get("batch", [wl.batch])]
    if any(t in ACCESS_TESTS for t in tests) and max(batches) > wl.table_size:
        raise InputError(
            f"{where}: batch {max(batches)} is more than workload.table_size {wl.table_size}; "
            "lower batch or raise table_size"
        )
    if wl.mix is not None and TPCC not in tests:
        raise InputError(
            f"{where}: workload.mix is the tpcc transaction mix and no trial runs tpcc; remove it"
        )
    if "warehouses" in levels and TPCC not in tests:
        raise InputError(
            f"{where}: factor warehouses is the tpcc scale and no trial runs tpcc; "
            "add workload = \"tpcc\" or remove the factor"
        )
    if "warehouses" in (given or set()) and TPCC not in tests:
        raise InputError(
            f"{where}: workload.warehouses is the tpcc scale and no trial runs tpcc; "
            "remove it or add workload = \"tpcc\""
        )
    slap_keys = [k for k in SLAP_SETTINGS if k in (given or set())]
    slap_factors = [k for k in SLAP_SETTINGS if k in levels]
    if SLAP_TEST not in tests and (slap_keys or slap_factors):
        if slap_keys:
            raise InputError(
                f"{where}: workload.{slap_keys[0]} is a mysqlslap setting and no trial runs mysqlslap; "
                'remove it or add workload = "mysqlslap"'
            )
        raise InputError(
            f"{where}: factor {slap_factors[0]} is a mysqlslap setting and no trial runs mysqlslap; "
            'add workload = "mysqlslap" or remove the factor'
        )
    if wl.slap_query is not None:
        for k in ("slap_load_type", "slap_engine"):
            if k in levels or k in (given or set()):
                what = f"factor {k}" if k in levels else f"workload.{k}"
                raise InputError(
                    f"{where}: workload.slap_query replaces the auto-generated load, so {what} does "
                    "nothing; remove one of them"
                )
    if SLAP_TEST in tests:
        clients = [int(c) for c in levels.get("clients", [wl.clients])]
        targets = [str(t) for t in levels.get("target", [wl.target])]
        if max(clients) > 1:
            raise InputError(f"{where}: mysqlslap runs as one client process; set clients = 1, vary threads")
        if "all-nodes" in targets:
            raise InputError(f"{where}: mysqlslap connects to one address; use target balancer or node:N")
        if wl.rate or wl.rate_of_max or levels.get("rate"):
            raise InputError(f"{where}: mysqlslap has no rate limit; remove rate and rate_of_max")
    access_keys = [k for k in ("batch", "row_size") if k in (given or set())]
    access_factors = [k for k in ("batch", "row_size") if k in levels]
    if not any(t in ACCESS_TESTS for t in tests) and (access_keys or access_factors):
        what = f"workload.{access_keys[0]}" if access_keys else f"factor {access_factors[0]}"
        raise InputError(
            f"{where}: {what} is a setting of the access_* tests and no trial runs one; "
            'remove it or add workload = "access_pk" (or another access_* test)'
        )


def interconnect_target(interconnect: str, target: str) -> str:
    """The target an interconnect reaches: the balancer for haproxy; for the node interconnects
    (socket, tcp, shaped) the workload's node:N, else node 1."""
    if interconnect == "haproxy":
        return "balancer"
    return target if target.startswith("node:") else "node:1"


def for_engine(topology: dict[str, Any], kind: str) -> dict[str, Any]:
    """The base topology as the given engine runs it: engine.kind set, and the other engine's
    server section ([mariadb] for Galera, [mysql] for Group Replication) and Group Replication's
    engine.mode left out, so one file can hold the settings of both."""
    data = copy.deepcopy(topology)
    engine = dict(data.get("engine") or {})
    engine["kind"] = kind
    if kind != "group_replication":
        engine.pop("mode", None)
        data.pop("mysql", None)
    else:
        data.pop("mariadb", None)
    data["engine"] = engine
    return data


def server_default(topo: Topology, name: str) -> Level | None:
    """A server factor's value in the topology's own engine section; None when that engine has no
    such setting (wsrep_slave_threads under Group Replication)."""
    section = topo.mysql if topo.engine.kind == "group_replication" else topo.mariadb
    value = getattr(section, name, None)
    return value if isinstance(value, int | float | str | bool) else None
