"""The plan is data: an experiment expanded into trials, ordered, with an estimated wall time. Pure.

Ordering keeps rebuilds rare:

* Trials are grouped by the topology they need apart from the node count and the resource
  limits (cpu_quota, cpuset, bandwidth): a group's cluster is built once, for the largest node
  count any of its trials needs. Resource limits are changed on the running cluster before each
  trial (cgroup v1 quota and cpuset, tbf on the links), so they never force a rebuild; only a
  different base topology (e.g. another server setting) is a new group.
* Inside a group, the node count is changed on the running cluster: extra nodes are stopped (a
  graceful leave, a fraction of a second each). Trials run in descending node count, so the
  cluster only ever shrinks inside a group: no node is started again, and there is no state
  transfer (IST or SST) at all between points.
* Server variables (wsrep_slave_threads, innodb_flush_log_at_trx_commit) are set with SET GLOBAL;
  threads, clients, rate, TLS, compression, target, interconnect and the test are per-trial client
  options (interconnect = shaped also puts every node's link under `shaped_bandwidth`, a runtime
  limit like the bandwidth factor).
* Repetitions of one point run back to back; trials whose rate depends on an earlier maximum
  (`rate_of_max`) run last among the trials of their node count (the maximum they need is
  measured at the same node count).

The design is a full grid per part unless the experiment (or the part) names a designed
experiment (fractional factorial, Plackett-Burman, central composite, Box-Behnken, Latin
hypercube: experiment/design.py, from pyDOE3). A design row that lands on a point already
planned (replicated centre points, rounded integers) adds repetitions to that point; the
ordering is the same for every design.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from clusterbench.errors import InputError
from clusterbench.experiment.design import DesignResult, expand_design
from clusterbench.experiment.spec import (
    DETECTION_FACTORS,
    SERVER_FACTORS,
    Experiment,
    Level,
    Workload,
    factor_kinds,
    interconnect_target,
    server_default,
    server_value,
)
from clusterbench.experiment.web import web_topology
from clusterbench.faults.spec import FaultSpec
from clusterbench.faults.spec import plan as plan_faults
from clusterbench.spec.topology import Topology
from clusterbench.workloads.sysbench import (
    ACCESS_GROUP,
    ACCESS_TESTS,
    BULK_GROUP,
    HTTP_GROUP,
    HTTP_SETTINGS,
    HTTP_TESTS,
    SLAP_GROUP,
    SLAP_SETTINGS,
    SLAP_TEST,
    TPCC,
    SysbenchOptions,
    prepare_group,
)

# mysqlslap's settings when nothing sets them (SysbenchOptions' defaults)
SLAP_DEFAULTS: dict[str, Any] = {k: SysbenchOptions.model_fields[k].default for k in SLAP_SETTINGS}

# rows a tpcc load writes per warehouse (measured: 499,630 plus ITEM's 100,000 once); only used
# for estimates
TPCC_ROWS_PER_WAREHOUSE = 500_000


def label(point: Iterable[tuple[str, Level]]) -> str:
    return " ".join(f"{k}={_fmt(v)}" for k, v in point) or "(base)"


def _fmt(v: Level) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


@dataclass(frozen=True)
class TrialSpec:
    """One trial: a design point of a part, one repetition, everything needed to run it."""

    part: str
    point: tuple[tuple[str, Level], ...]
    rep: int
    topology: Topology  # the cluster to build (its node count is the group's capacity)
    nodes: int  # nodes running during this trial (1..capacity)
    server: tuple[tuple[str, int], ...]  # SET GLOBAL name = value on every running node
    test: str
    threads: int
    clients: int
    separate_schemas: bool
    rate: int
    rate_of_max: float | None
    rand_type: str
    target: str
    tls: bool
    compression: bool
    tables: int
    table_size: int
    duration: int
    warmup: int
    cooldown: float
    faults: tuple[FaultSpec, ...] = ()
    failover_figures: bool = False  # the monitor and prober beside faults: failover times per trial
    warmup_until: str = "time"  # "steady": the warm-up ends at steady state, within `warmup`
    group: int = 0
    index: int = 0  # 1-based position in the run order
    client_hosts: int = 0  # the first N client machines of the topology; 0: all of them
    batch: int = 32  # access_* tests: rows per batched, eq-bound or range access
    row_size: int = 20  # access_* tests: approximate bytes per row
    # how the client reaches the database (spec.INTERCONNECTS); "" when the target alone decides
    interconnect: str = ""
    warehouses: int = 1  # tpcc: the scale loaded
    mix: tuple[int, ...] | None = None  # tpcc: the transaction mix (None: the standard one)
    # mysqlslap: the auto-generated load's type, queries per client per run, the user's SQL
    # instead of the auto-generated load, the auto-generated table's engine
    slap_load_type: str = "mixed"
    slap_queries: int = 100
    slap_query: str | None = None
    slap_engine: str = "InnoDB"
    # the HTTP tests (vegeta): request timeout (s), a cap on its workers per client, keep-alive
    http_timeout: float = 10.0
    http_max_workers: int = 0
    http_keepalive: bool = True

    @property
    def point_label(self) -> str:
        return label(self.point)

    @property
    def point_key(self) -> str:
        return f"{self.part}|{self.point_label}"

    @property
    def key(self) -> str:
        return f"{self.point_key}|rep{self.rep}"

    def databases(self) -> list[str]:
        if self.separate_schemas:
            return [f"sbtest{i}" for i in range(1, self.clients + 1)]
        return ["sbtest"]

    def dataset(self) -> tuple[int, ...] | None:
        """What a prepare makes, as a key: (tables, rows) of the shared oltp tables, (1, rows,
        row_size, batch) of the access-method table, (warehouses, rows per warehouse) of the tpcc
        tables, () for mysqlslap (nothing); None for bulk_insert (prepared per trial). The first
        two numbers multiply to the rows loaded."""
        group = prepare_group(self.test)
        if group == TPCC:
            return (self.warehouses, TPCC_ROWS_PER_WAREHOUSE)
        if group == BULK_GROUP:
            return None
        if group == SLAP_GROUP:
            return ()
        if group == ACCESS_GROUP:
            return (1, self.table_size, self.row_size, self.batch)
        if group == HTTP_GROUP:  # the web application's read table (and its writes table)
            return (1, self.table_size)
        return (self.tables, self.table_size)

    def planned_faults(self, primary: int | None = None) -> list[Any]:
        """The trial's fault schedule with targets resolved (seeded by the trial's key, so a rerun
        or a resumed run hits the same nodes). `primary` is the node taking the writes when the
        trial starts (target primary); by default member 1, the primary after `up`, where the
        engine has one. Raises InputError naming the part."""
        if not self.faults:
            return []
        seed = int(hashlib.sha256(self.key.encode()).hexdigest()[:8], 16)
        if primary is None and self.topology.engine.has_primary:
            primary = 1
        try:
            return plan_faults(
                list(self.faults),
                self.nodes,
                self.topology.balancer.count if self.topology.balancer.kind == "haproxy" else 0,
                float(self.warmup + self.duration),
                seed=seed,
                primary=primary,
                web_nodes=self.topology.web.nodes,
                fronts=len(self.topology.web.front_indexes()),
            )
        except ValueError as exc:
            lines = str(exc).splitlines()
            raise InputError(
                "\n".join(f"parts.{self.part}.workload.faults ({self.point_label}): {ln}" for ln in lines)
            ) from None

    def rate_text(self) -> str:
        if self.rate_of_max is not None:
            return f"{self.rate_of_max:.0%} of max"
        return str(self.rate) if self.rate else "max"

    def describe(self) -> dict[str, Any]:
        out = {
            "part": self.part,
            "point": {k: v for k, v in self.point},
            "rep": self.rep,
            "nodes": self.nodes,
            "server": dict(self.server),
            "test": self.test,
            "threads": self.threads,
            "clients": self.clients,
            "separate_schemas": self.separate_schemas,
            "rate": self.rate,
            "rate_of_max": self.rate_of_max,
            "rand_type": self.rand_type,
            "target": self.target,
            "tls": self.tls,
            "compression": self.compression,
            "tables": self.tables,
            "table_size": self.table_size,
            "duration": self.duration,
            "warmup": self.warmup,
            "cooldown": self.cooldown,
        }
        if self.faults:
            out["faults"] = [f.model_dump(by_alias=True, exclude_none=True) for f in self.faults]
            if self.failover_figures:  # only when set: plan ids of experiments without it stay
                out["failover_figures"] = True
        if self.warmup_until != "time":  # only when set: plan ids of experiments without it stay
            out["warmup_until"] = self.warmup_until
        if self.client_hosts:  # only when set: plan ids of experiments without it stay the same
            out["client_hosts"] = self.client_hosts
        if self.test in ACCESS_TESTS:  # likewise: only the access-method tests read these
            out["batch"] = self.batch
            out["row_size"] = self.row_size
        if self.interconnect:
            out["interconnect"] = self.interconnect
        if self.test == TPCC:
            out["warehouses"] = self.warehouses
            if self.mix is not None:
                out["mix"] = list(self.mix)
        if self.test == SLAP_TEST:  # only those off mysqlslap's defaults: earlier plan ids stay
            out.update({k: v for k, v in self._slap_settings().items() if v != SLAP_DEFAULTS[k]})
        if self.test in HTTP_TESTS:
            out.update(self.test_settings())
        return out

    def _slap_settings(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in SLAP_SETTINGS}

    def test_settings(self) -> dict[str, Any]:
        """The settings only the trial's kind of test reads, all of them (defaults included):
        batch and row_size (access_*), the slap_* ones (mysqlslap), warehouses and mix (tpcc)."""
        if self.test in ACCESS_TESTS:
            return {"batch": self.batch, "row_size": self.row_size}
        if self.test == SLAP_TEST:  # SQL of the user's replaces the auto-generated load and its engine
            if self.slap_query is not None:
                return {"slap_query": self.slap_query, "slap_queries": self.slap_queries}
            return {k: v for k, v in self._slap_settings().items() if k != "slap_query"}
        if self.test == TPCC:
            return {"warehouses": self.warehouses, "mix": list(self.mix) if self.mix else None}
        if self.test in HTTP_TESTS:
            return {k: getattr(self, k) for k in HTTP_SETTINGS}
        return {}


@dataclass(frozen=True)
class CostModel:
    """Seconds, measured on the 2-core machine (see docs/experiments.md); only used for estimates."""

    up_base: float = 4.0
    up_per_node: float = 4.5
    down_base: float = 1.0
    down_per_node: float = 0.3
    node_start: float = 8.0  # each joiner, by IST under load (about 16 s per pair measured here)
    node_stop: float = 0.3
    fault_settle: float = 3.0  # per trial with faults: heal, then every running node Synced again
    balancer_settle: float = 2.5  # HAProxy marks a node UP/DOWN after rise/fall checks
    prepare_base: float = 1.0  # per schema
    prepare_rows_per_s: float = 40000.0
    trial_overhead: float = 1.5  # sysbench start/stop, provenance, SET GLOBAL

    def for_engine(self, kind: str) -> CostModel:
        """Group Replication's own costs where they differ (measured here, 3-5 members): up ~10 s
        for 3, down under 1 s (SIGKILL), a member's graceful leave ~6 s, a rejoin ~5-10 s."""
        if kind != "group_replication":
            return self
        from dataclasses import replace

        gr = {"up_base": 3.0, "up_per_node": 2.3, "down_base": 1.0, "down_per_node": 0.05}
        return replace(self, **gr, node_start=10.0, node_stop=6.0)


@dataclass
class Estimate:
    total: float = 0.0
    measuring: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)

    def add(self, phase: str, seconds: float, *, measuring: bool = False) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds
        self.total += seconds
        if measuring:
            self.measuring += seconds

    @property
    def not_measuring_share(self) -> float:
        return 0.0 if self.total <= 0 else 1.0 - self.measuring / self.total


@dataclass(frozen=True)
class Plan:
    experiment: Experiment
    trials: tuple[TrialSpec, ...]
    designs: dict[str, DesignResult] = field(default_factory=dict)  # parts with a designed experiment

    @property
    def id(self) -> str:
        """Identifies what the trials are (not their order): a resumed run must have the same
        trials with the same settings, so an edited file (another duration, topology setting or
        fault schedule) starts a new run instead of mixing results measured two ways."""
        trials = sorted([t.key, t.describe(), t.topology.model_dump(mode="json")] for t in self.trials)
        what: list[Any] = [self.experiment.name, self.experiment.profile, trials]
        exp = self.experiment
        if exp.search is not None and exp.search_workload is not None:
            # a search's trials are chosen as it runs: it is identified by what it searches
            what += [
                exp.search.model_dump(mode="json"),
                exp.search_workload.model_dump(mode="json"),
                exp.topology.model_dump(mode="json"),
            ]
        blob = json.dumps(what, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def groups(self) -> list[list[TrialSpec]]:
        out: dict[int, list[TrialSpec]] = {}
        for t in self.trials:
            out.setdefault(t.group, []).append(t)
        return [out[g] for g in sorted(out)]

    def points(self) -> list[str]:
        return list(dict.fromkeys(t.point_key for t in self.trials))

    def estimate(self, cost: CostModel | None = None, skip: set[str] | None = None) -> Estimate:
        return estimate(self, cost or CostModel(), skip or set())


# ---- expansion ----------------------------------------------------------------------------------


def full_grid(levels: dict[str, list[Level]]) -> list[tuple[tuple[str, Level], ...]]:
    names = list(levels)
    return [tuple(zip(names, combo, strict=True)) for combo in itertools.product(*(levels[n] for n in names))]


DESIGNS: dict[str, Callable[[dict[str, list[Level]]], list[tuple[tuple[str, Level], ...]]]] = {
    "full-grid": full_grid,
}


def design_points(
    exp: Experiment, part: str, levels: dict[str, list[Level]]
) -> tuple[list[tuple[tuple[tuple[str, Level], ...], int]], DesignResult | None]:
    """(point, copies) of a part's design, in design order, and the design's notes and aliases."""
    d = exp.design(part)
    if d.kind in DESIGNS:
        return [(p, 1) for p in DESIGNS[d.kind](levels)], None
    try:
        r = expand_design(levels, d, factor_kinds(), f"parts.{part}")
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return [(p, r.copies[p]) for p in r.points], r


def _topology_for(base: Topology, point: dict[str, Level], tls_server: dict[str, Any] | None) -> Topology:
    """The cluster a point runs on: `base` (the experiment's base topology for the point's engine:
    Experiment.base_topology) with the point's resource limits."""
    data = base.model_dump(mode="json")
    res = dict(data.get("resources") or {})
    for k in ("cpu_quota", "cpuset", "bandwidth"):
        if k in point:
            res[k] = point[k]
    data["resources"] = res
    nodes = int(point.get("nodes", base.cluster.nodes))
    web_topology(data, point, nodes, f"the point {label(tuple(point.items()))}")
    for k, engine in DETECTION_FACTORS.items():
        if k in point:
            if base.engine.kind != engine:
                raise InputError(
                    f"factor {k} is a setting of engine {engine}, not of {base.engine.kind}; give it to a "
                    f"part whose points run {engine} (parts.<name>.factors)"
                )
            section = "mysql" if engine == "group_replication" else "mariadb"
            data[section] = {**data[section], k: point[k]}
    if tls_server:
        if base.engine.kind == "group_replication":
            raise InputError(
                "tls: the certificates are made for MariaDB; with engine = group_replication (a chrooted "
                "mysqld) TLS is not supported yet: remove tls, or run that engine without it"
            )
        data["mariadb"]["extra"] = {**data["mariadb"].get("extra", {}), **tls_server}
    try:
        return Topology.model_validate(data)
    except ValidationError as exc:  # a level the engine cannot run with (a timeout below another)
        err = exc.errors()[0]
        msg = str(err["msg"]).removeprefix("Value error, ")
        where = ".".join(str(x) for x in err["loc"]) or "topology"
        levels = ", ".join(f"{k} = {v}" for k, v in point.items())
        raise InputError(f"the point {levels}: topology.{where}: {msg}") from None


def point_server(
    topo: Topology, point: dict[str, Level], server_used: list[str], where: str, strict: bool = True
) -> tuple[tuple[str, int], ...]:
    """SET GLOBAL values of a point: its server factors, else the engine's base value. A factor
    the point's engine does not have (wsrep_slave_threads under Group Replication) is refused
    when the point sets it (`strict`; a search's knob is left out instead) and left out when it
    only comes from another point."""
    out = []
    for k in server_used:
        base = server_default(topo, k)
        if base is None:
            if k in point and strict:
                raise InputError(
                    f"{where}: factor {k} is not a setting of engine {topo.engine.kind} (Galera's applier "
                    "threads); give it only to points with engine = galera"
                )
            continue
        out.append((k, server_value(k, point.get(k, base))))
    return tuple(out)


def _group_key(t: Topology) -> str:
    """The topology apart from the node count: trials with the same key ran on the same kind of
    cluster, limits included (what a rate_of_max trial may take its maximum from)."""
    data = t.model_dump(mode="json")
    data["cluster"]["nodes"] = 0
    return json.dumps(data, sort_keys=True)


RUNTIME_RESOURCES = ("cpu_quota", "cpuset", "bandwidth")


def _build_key(t: Topology) -> str:
    """What needs a new cluster: the topology apart from the node count and the resource limits,
    which are set on the running cluster (per-node overrides included)."""
    data = t.model_dump(mode="json")
    data["cluster"]["nodes"] = 0
    data.pop("resources", None)
    for o in data.get("node", []):
        for k in RUNTIME_RESOURCES:
            o.pop(k, None)
    return json.dumps(data, sort_keys=True)


def sized(t: Topology, nodes: int) -> Topology:
    data = t.model_dump(mode="json")
    data["cluster"]["nodes"] = nodes
    return Topology.model_validate(data)


def expand(exp: Experiment, tls_server: dict[str, Any] | None = None) -> Plan:
    """Every trial of the experiment, in run order.

    `tls_server` ([mysqld] settings with the certificates) is added to every cluster when any
    trial uses TLS, so TLS on/off stays a client option and never splits a group."""
    any_tls = any(wl.tls or any(bool(x) for x in lv.get("tls", [])) for wl, lv in exp.parts.values())
    server_used = [
        k for k in SERVER_FACTORS if any(k in lv for _, lv in exp.parts.values())
    ]  # set on every trial, so a point without the factor runs with the base value
    raw: list[TrialSpec] = []
    designs: dict[str, DesignResult] = {}
    for part, (wl, levels) in exp.parts.items():
        lv = dict(levels)
        if "workload" not in lv and len(wl.tests) > 1:
            lv = {"workload": list(wl.tests), **lv}
        points, result = design_points(exp, part, lv)
        if result is not None:
            designs[part] = result
        for point, copies in points:
            p = dict(point)
            base = exp.base_topology(p.get("engine"))
            limits = p
            if p.get("interconnect", wl.interconnect) == "shaped" and "bandwidth" not in p:
                limits = {**p, "bandwidth": wl.shaped_bandwidth}  # every node's link, both ways
            topo = _topology_for(base, limits, tls_server if any_tls else None)
            nodes = int(p.get("nodes", base.cluster.nodes))
            server = point_server(topo, p, server_used, f"parts.{part} ({label(point)})")
            for rep in range(1, copies * exp.settings.planned_repetitions + 1):
                raw.append(_trial(part, point, rep, topo, nodes, server, wl, p))
    ordered = tuple(order(raw, interleaved=exp.settings.repetition_order == "interleaved"))
    for t in ordered:
        t.planned_faults()  # a schedule that cannot run is refused before anything starts
    return Plan(exp, ordered, designs)


def _trial(
    part: str,
    point: tuple[tuple[str, Level], ...],
    rep: int,
    topo: Topology,
    nodes: int,
    server: tuple[tuple[str, int], ...],
    wl: Workload,
    p: dict[str, Level],
) -> TrialSpec:
    def get(name: str, default: Any) -> Any:
        return p.get(name, default)

    interconnect = str(get("interconnect", wl.interconnect or ""))
    target = str(get("target", wl.target))

    return TrialSpec(
        part=part,
        point=point,
        rep=rep,
        topology=topo,
        nodes=nodes,
        server=server,
        test=str(get("workload", wl.tests[0])),
        threads=int(get("threads", wl.threads)),
        clients=int(get("clients", wl.clients)),
        separate_schemas=bool(get("separate_schemas", wl.separate_schemas)),
        rate=int(get("rate", wl.rate)),
        rate_of_max=None if "rate" in p else wl.rate_of_max,
        rand_type=str(get("rand_type", wl.rand_type)),
        target=interconnect_target(interconnect, target) if interconnect else target,
        tls=bool(get("tls", wl.tls)),
        compression=bool(get("compression", wl.compression)),
        tables=wl.tables,
        table_size=wl.table_size,
        duration=wl.duration,
        warmup=wl.warmup,
        warmup_until=wl.warmup_until,
        cooldown=wl.cooldown,
        faults=tuple(wl.faults),
        failover_figures=wl.failover_figures,
        client_hosts=int(get("client_hosts", 0)),
        batch=int(get("batch", wl.batch)),
        row_size=int(get("row_size", wl.row_size)),
        interconnect=interconnect,
        warehouses=int(get("warehouses", wl.warehouses)),
        mix=wl.mix,
        slap_load_type=str(get("slap_load_type", wl.slap_load_type)),
        slap_queries=int(get("slap_queries", wl.slap_queries)),
        slap_query=wl.slap_query,
        slap_engine=str(get("slap_engine", wl.slap_engine)),
        http_timeout=wl.http_timeout,
        http_max_workers=wl.http_max_workers,
        http_keepalive=wl.http_keepalive,
    )


def order(trials: list[TrialSpec], interleaved: bool = False) -> list[TrialSpec]:
    """Group by cluster (first appearance), size each group's cluster for its largest node count,
    then order inside a group: descending nodes (the cluster only shrinks), rate_of_max last
    within a node count, then server variables, then grid order. `interleaved` puts the
    repetition first: every point once, then every point again (the cluster shrinks once per
    repetition and grows back in between)."""
    groups: dict[str, list[tuple[int, TrialSpec]]] = {}
    for i, t in enumerate(trials):
        groups.setdefault(_build_key(t.topology), []).append((i, t))
    out: list[TrialSpec] = []
    for g, members in enumerate(groups.values(), start=1):
        capacity = max(t.nodes for _, t in members)
        members.sort(
            key=lambda it: (
                it[1].rep if interleaved else 0,
                -it[1].nodes,
                it[1].rate_of_max is not None,
                it[1].server,
                it[0],
            )
        )
        for _, t in members:
            # Each trial keeps its own limits; the runner applies them before the trial.
            out.append(_replace(t, topology=sized(t.topology, capacity), group=g, index=len(out) + 1))
    return out


def _replace(t: TrialSpec, **kw: Any) -> TrialSpec:
    from dataclasses import replace

    return replace(t, **kw)


# ---- estimate -----------------------------------------------------------------------------------


def estimate(plan: Plan, base_cost: CostModel, skip: set[str]) -> Estimate:
    """What the runner will do, step by step, in seconds. Trials in `skip` (keys) are done."""
    est = Estimate()
    for members in plan.groups():
        todo = [t for t in members if t.key not in skip]
        if not todo:
            continue
        cap = members[0].topology.cluster.nodes
        cost = base_cost.for_engine(members[0].topology.engine.kind)
        est.add("bring-up", cost.up_base + cost.up_per_node * cap)
        running = cap
        prepared: set[tuple[str, str, tuple[int, ...]]] = set()
        for t in todo:
            if t.nodes > running:
                est.add("node changes", cost.node_start * (t.nodes - running) + cost.balancer_settle)
            elif t.nodes < running:
                est.add("node changes", cost.node_stop * (running - t.nodes) + cost.balancer_settle)
            running = t.nodes
            ds = t.dataset()
            for db in t.databases():
                if ds is None:
                    rows = t.threads  # bulk_insert: empty tables, one per thread
                    est.add("prepare", cost.prepare_base + rows / cost.prepare_rows_per_s)
                elif (db, prepare_group(t.test), ds) not in prepared:
                    prepared.add((db, prepare_group(t.test), ds))
                    rows = ds[0] * ds[1] if ds else 0
                    est.add("prepare", cost.prepare_base + rows / cost.prepare_rows_per_s)
            est.add("trial overhead", cost.trial_overhead)
            est.add("warm-up", t.warmup)
            est.add("measuring", t.duration, measuring=True)
            est.add("cool-down", t.cooldown)
            if t.faults:
                est.add("faults", cost.fault_settle)
        est.add("teardown", cost.down_base + cost.down_per_node * cap)
    return est
