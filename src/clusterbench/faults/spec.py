"""Fault specifications and schedules: pure data, validated up front, every problem listed.

A fault has a kind, a target, a start time `at` (seconds after the trial starts) and a duration
`for` after which it is healed. Targets are resolved to concrete nodes with a seeded RNG, so a
schedule is reproducible and printable before anything runs.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from clusterbench.engines.fakeclock import parse_drift, parse_offset
from clusterbench.spec.fields import checked
from clusterbench.spec.topology import RATE_RE

FaultKind = Literal[
    "kill-node",
    "stop-node",
    "pause-node",
    "isolate-node",
    "partition",
    "throttle-link",
    "throttle-cpu",
    "desync-node",
    "rolling-restart",
    "kill-balancer",
    "cut-vrrp",
    "delay-link",
    "loss-link",
    "coordinated-crash",
    "disk-full",
    "sql",
    "power-loss",
    "disk-slow",
    "disk-error",
    "throttle-disk",
    "clock-skew",
]

KINDS: tuple[str, ...] = FaultKind.__args__  # type: ignore[attr-defined]

# Kinds that act on a set of nodes chosen by `target`.
NODE_KINDS = {
    "kill-node",
    "stop-node",
    "pause-node",
    "isolate-node",
    "throttle-link",
    "throttle-cpu",
    "desync-node",
    "delay-link",
    "loss-link",
    "coordinated-crash",
    "disk-full",
    "power-loss",
    "disk-slow",
    "disk-error",
    "throttle-disk",
    "clock-skew",
}
DELAY_RE = re.compile(r"^[0-9]+(\.[0-9]+)?(us|ms|s)$")
DISK_RATE_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(B|KB|MB|GB|KiB|MiB|GiB)/s$", re.I)
_DISK_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3,
               "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}  # fmt: skip
TARGET_RE = re.compile(
    r"^(node:[1-9](,[1-9])*|random|one|majority|minority|all|primary|balancer|lb:[12]|web:[1-9](,[1-9])*|front"
    r"|fe:[12])$"
)
# Kinds that may act on web nodes (target web:N): their process dies, stops or hangs.
WEB_KINDS = ("kill-node", "stop-node", "pause-node")
# kill-balancer's targets on the web tier's front: the one holding the front VIP, or fe<N>
FRONT_TARGETS = ("front", "fe:1", "fe:2")

Target = Annotated[
    str,
    checked(
        TARGET_RE.match,
        "is not a target; use node:N (or node:1,2), random, one, majority, minority, all, "
        "primary, balancer, lb:N, web:N (a web node), front or fe:N (a front balancer)",
    ),
]
Delay = Annotated[str, checked(DELAY_RE.match, "is not a delay like '100ms' or '1.5ms'")]
ClockOffset = Annotated[
    str,
    checked(lambda v: parse_offset(v) is not None, "is not a clock offset like '+30s', '-2m' or '+250ms'"),
]
ClockDrift = Annotated[
    str,
    checked(lambda v: parse_drift(v) is not None, "is not a clock drift like '+10ms/s' or '-1s/m'"),
]


class FaultSpec(BaseModel):
    """One fault as written in a scenario file or given on the command line."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    kind: FaultKind
    target: Target = "random"
    at: float = Field(ge=0, description="seconds after the trial starts")
    duration: float | None = Field(None, alias="for", gt=0, description="seconds until it is healed")
    # kind-specific
    rate: str | None = None  # throttle-link, e.g. "1mbit"; throttle-disk, e.g. "1MB/s"
    iops: int | None = Field(None, gt=0)  # throttle-disk: operations per second, reads and writes each
    # clock-skew (servers under libfaketime, cluster.clock = "faketime"): the wall clock jumps by
    # `offset` ("+30s", "-2m") and/or drifts by `drift` ("+10ms/s") until the heal bumps it back
    offset: ClockOffset | None = None
    drift: ClockDrift | None = None
    cpu_quota: float | None = Field(None, gt=0, le=64)  # throttle-cpu, in CPUs
    groups: list[list[int]] | None = None  # partition: [[1], [2, 3]]
    cuts: list[list[int]] | None = None  # partition: [[1, 2]] = 1 and 2 cannot reach each other
    # delay-link / loss-link (the delay line or netem, faults/delayline.py): "100ms", 5.0 (%)
    delay: Delay | None = None
    jitter: Delay | None = None
    loss: float | None = Field(None, gt=0, le=100)
    # coordinated-crash: every target is killed within this many seconds (0: all at once)
    window: float | None = Field(None, ge=0, le=600)
    # sql: a statement run once on the target node at `at` (e.g. a DDL while a node's disk is full)
    statement: str | None = None
    # disk-slow / disk-error (the datadir layer, datadir_layer = "faultfs"): which operations the
    # delay or error hits ("read", "write", "fsync", "all"), the error, and how often it happens
    ops: list[Literal["read", "write", "fsync", "all"]] | None = None
    error: Literal["EIO", "ENOSPC"] | None = None
    probability: float | None = Field(None, gt=0, le=1)

    @field_validator("rate")
    @classmethod
    def _rate(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        if info.data.get("kind") == "throttle-disk":
            if disk_rate_bytes(v) is None:
                raise ValueError(f"'{v}' is not a disk rate like '1MB/s' or '512KiB/s'")
        elif not RATE_RE.match(v):
            raise ValueError(f"'{v}' is not a rate like '1mbit' or '512kbit'")
        return v


def disk_rate_bytes(text: str) -> int | None:
    """'1MB/s' -> 1000000, '512KiB/s' -> 524288; None when it is not such a rate (pure)."""
    m = DISK_RATE_RE.match(text.strip())
    if not m or float(m.group(1)) <= 0:
        return None
    return int(float(m.group(1)) * _DISK_UNITS[m.group(2).lower()])


@dataclass(frozen=True)
class PlannedFault:
    """A fault with its targets resolved to node numbers and its heal time fixed."""

    index: int
    kind: str
    nodes: tuple[int, ...]
    balancer: int | None
    at: float
    until: float | None  # None: the fault ends by itself (rolling restart)
    params: dict[str, Any] = field(default_factory=dict)
    web: tuple[int, ...] = ()  # the web nodes it acts on (target web:N) instead of database nodes

    @property
    def front(self) -> bool:
        """A kill-balancer of the web tier's front (fe<balancer>), not of the database's."""
        return self.params.get("target") in ("front", "fe")

    def label(self) -> str:
        if self.kind == "cut-vrrp":
            return "cut-vrrp lb1|lb2"
        if self.web:
            return f"{self.kind} {','.join(f'w{i}' for i in self.web)}"
        if self.balancer:
            return f"{self.kind} {'fe' if self.front else 'lb'}{self.balancer}"
        return f"{self.kind} {','.join(f'n{i}' for i in self.nodes) or 'cluster'}"


def _pairs_from(spec: FaultSpec, n: int) -> tuple[list[tuple[int, int]], list[str]]:
    errors: list[str] = []
    pairs: set[tuple[int, int]] = set()
    if spec.groups and spec.cuts:
        errors.append("give either groups or cuts, not both")
    if spec.groups:
        seen: set[int] = set()
        for g in spec.groups:
            for i in g:
                if not 1 <= i <= n:
                    errors.append(f"groups: node {i} does not exist (nodes 1-{n})")
                if i in seen:
                    errors.append(f"groups: node {i} is in two groups")
                seen.add(i)
        for a_i, a in enumerate(spec.groups):
            for b in spec.groups[a_i + 1 :]:
                pairs |= {(min(x, y), max(x, y)) for x in a for y in b}
    elif spec.cuts:
        for c in spec.cuts:
            if len(c) != 2 or c[0] == c[1]:
                errors.append(f"cuts: {c} must be two different nodes")
                continue
            for i in c:
                if not 1 <= i <= n:
                    errors.append(f"cuts: node {i} does not exist (nodes 1-{n})")
            pairs.add((min(c), max(c)))
    else:
        errors.append("partition needs groups = [[...], [...]] or cuts = [[a, b], ...]")
    return sorted(pairs), errors


NO_PRIMARY = (
    "target primary: this cluster's engine has no single primary (every node takes writes); "
    "use node:N, or a Group Replication topology in single-primary mode"
)


def resolve_nodes(
    target: str, n: int, rng: random.Random, primary: int | None = None
) -> tuple[tuple[int, ...], str | None]:
    """Node numbers for a target. `primary` is the node that takes the writes when the schedule
    is planned (a Group Replication single primary), None where every node does."""
    nodes = list(range(1, n + 1))
    if target == "primary":
        if primary is None:
            return (), NO_PRIMARY
        return (primary,), None
    if target.startswith("node:"):
        chosen = tuple(int(x) for x in target[5:].split(","))
        bad = [i for i in chosen if i > n]
        if bad:
            return (), f"target {target}: node {bad[0]} does not exist (nodes 1-{n})"
        return chosen, None
    if target in ("random", "one"):
        return (rng.choice(nodes),), None
    if target == "majority":
        return tuple(sorted(rng.sample(nodes, n // 2 + 1))), None
    if target == "minority":
        k = (n - 1) // 2
        if k == 0:
            return (), f"target minority: a {n}-node cluster has no minority to fail"
        return tuple(sorted(rng.sample(nodes, k))), None
    if target == "all":
        return tuple(nodes), None
    return (), f"target {target} is for balancer faults, not for nodes"


# The settings each kind takes besides target, at and for; any other one given is refused.
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "throttle-link": ("rate",),
    "throttle-cpu": ("cpu_quota",),
    "partition": ("groups", "cuts"),
    "delay-link": ("delay", "jitter"),
    "loss-link": ("loss",),
    "coordinated-crash": ("window",),
    "sql": ("statement",),
    "disk-slow": ("delay", "jitter", "ops"),
    "disk-error": ("error", "ops", "probability"),
    "throttle-disk": ("rate", "iops"),
    "clock-skew": ("offset", "drift"),
}
OPTIONAL_FIELDS = ("rate", "cpu_quota", "groups", "cuts", "delay", "jitter", "loss", "window", "statement",
                   "ops", "error", "probability", "iops", "offset", "drift")  # fmt: skip
# what each kind needs given, with the example the message names
REQUIRED: dict[str, tuple[tuple[str, str], ...]] = {
    "throttle-link": (("rate", 'rate is required, e.g. rate = "1mbit"'),),
    "throttle-cpu": (("cpu_quota", "cpu_quota is required (CPUs, e.g. 0.1)"),),
    "delay-link": (("delay", 'delay is required, e.g. delay = "50ms"'),),
    "loss-link": (("loss", "loss is required (percent, e.g. 5)"),),
    "disk-slow": (("delay", 'delay is required, e.g. delay = "20ms" (added to each operation)'),),
    "throttle-disk": (("rate", 'rate is required, e.g. rate = "1MB/s" (iops = N limits operations too)'),),
}


def _common_checks(s: FaultSpec, where: str, trial_time: float) -> list[str]:
    """What every kind must satisfy: a duration (but rolling-restart and sql), inside the load, and
    only the settings of its own kind."""
    errors = []
    until = None if s.duration is None else s.at + s.duration
    if s.kind not in ("rolling-restart", "sql") and s.duration is None:
        errors.append(f"{where}: `for` (duration in seconds) is required")
    if s.kind == "sql" and s.duration is not None:
        errors.append(f"{where}: sql runs once at `at`; remove `for`")
    if s.kind == "sql" and s.statement is None:
        errors.append(f'{where}: sql needs statement = "..."')
    if s.at >= trial_time:
        errors.append(f"{where}: at={s.at:g} is not before the end of the load ({trial_time:g} s)")
    if until is not None and until > trial_time:
        errors.append(f"{where}: it would heal at {until:g} s, after the load ends ({trial_time:g} s)")
    own = KIND_FIELDS.get(s.kind, ())
    for name in OPTIONAL_FIELDS:
        if getattr(s, name) is not None and name not in own:
            kinds = [k for k, fields in KIND_FIELDS.items() if name in fields]
            errors.append(f"{where}: {name} only applies to {' and '.join(kinds)}")
    for name, message in REQUIRED.get(s.kind, ()):
        if getattr(s, name) is None:
            errors.append(f"{where}: {message}")
    if s.kind == "clock-skew" and s.offset is None and s.drift is None:
        errors.append(f'{where}: offset or drift is required, e.g. offset = "+30s" or drift = "+10ms/s"')
    return errors


def _front_target(s: FaultSpec, where: str, fronts: int) -> tuple[int | None, dict[str, Any], list[str]]:
    """kill-balancer of the web tier's front: `front` is the one holding its VIP when the fault
    starts (fe1 without a pair), fe:N a given one."""
    k = int(s.target[3:]) if s.target.startswith("fe:") else 1
    errors = []
    if fronts == 0:
        errors.append(f"{where}: this cluster has no front balancer; set [web] nodes in the topology")
    elif k > fronts:
        errors.append(f"{where}: fe:{k} does not exist (this cluster has {fronts} front balancer)")
    return k, {"target": "fe" if s.target.startswith("fe:") else "front"}, errors


def _web_targets(s: FaultSpec, where: str, web_nodes: int) -> tuple[tuple[int, ...], list[str]]:
    """web:N[,M]: the web nodes a kill, stop or pause acts on."""
    chosen = tuple(int(x) for x in s.target[4:].split(","))
    if s.kind not in WEB_KINDS:
        return chosen, [f"{where}: target {s.target} is a web node; {s.kind} acts on database nodes "
                        f"(web nodes take {', '.join(WEB_KINDS)})"]  # fmt: skip
    bad = [i for i in chosen if i > web_nodes]
    if bad:
        have = f"web nodes 1-{web_nodes}" if web_nodes else "no web nodes ([web] nodes = 0)"
        return chosen, [f"{where}: target {s.target}: web node {bad[0]} does not exist ({have})"]
    return chosen, []


def _balancer_target(
    s: FaultSpec, where: str, balancers: int, fronts: int = 0
) -> tuple[int | None, dict[str, Any], list[str]]:
    """kill-balancer and cut-vrrp: which balancer, its params, problems."""
    if s.kind == "kill-balancer" and s.target in FRONT_TARGETS:
        return _front_target(s, where, fronts)
    errors = []
    if balancers == 0:
        errors.append(f"{where}: this cluster has no balancer")
    if s.kind == "cut-vrrp":
        # between the two balancers of a keepalived pair (checked against the cluster when the
        # fault is built: only the topology knows whether it has a pair)
        if s.target not in ("balancer", "random"):
            errors.append(f"{where}: target must be balancer (the keepalived pair)")
        return None, {}, errors
    if s.target not in ("balancer", "lb:1", "lb:2"):
        errors.append(f"{where}: target must be balancer or lb:N (front or fe:N: the web tier's front)")
    lb = int(s.target[3:]) if s.target.startswith("lb:") else 1
    if balancers and lb > balancers:
        errors.append(f"{where}: lb:{lb} does not exist (this cluster has {balancers})")
    return lb, {"target": "lb" if s.target.startswith("lb:") else "balancer"}, errors


def _crash_order(node_ids: tuple[int, ...], window: float, rng: random.Random) -> dict[str, Any]:
    """coordinated-crash: the kill order and offsets, the first at 0 and the last at `window`."""
    order = list(node_ids)
    rng.shuffle(order)
    inner = sorted(rng.uniform(0, window) for _ in range(max(0, len(order) - 2)))
    offsets = [0.0, *inner, window][: len(order)] if len(order) > 1 else [0.0]
    return {"window": window, "order": order, "offsets": [round(x, 3) for x in offsets]}


def _node_targets(
    s: FaultSpec, where: str, nodes: int, rng: random.Random, primary: int | None
) -> tuple[tuple[int, ...], dict[str, Any], list[str]]:
    """The nodes a fault acts on, with the params that come with them."""
    if s.kind == "partition":
        pairs, errs = _pairs_from(s, nodes)
        return tuple(sorted({i for p in pairs for i in p})), {"pairs": pairs}, [f"{where}: {e}" for e in errs]
    if s.kind == "rolling-restart":
        return tuple(range(1, nodes + 1)), {}, []
    # `random` (the default target) means every node for a coordinated crash
    target = "all" if s.kind == "coordinated-crash" and s.target == "random" else s.target
    node_ids, err = resolve_nodes(target, nodes, rng, primary)
    errors = [f"{where}: {err}"] if err else []
    params: dict[str, Any] = {}
    if s.kind == "sql":
        if not s.target.startswith("node:") or len(node_ids) != 1:
            errors.append(f'{where}: sql runs on one node: target = "node:N"')
        params["statement"] = s.statement
    if s.kind == "coordinated-crash":
        params = _crash_order(node_ids, float(s.window or 0.0), rng)
    return node_ids, params, errors


def _kind_params(s: FaultSpec) -> dict[str, Any]:
    """The kind's own settings, as the action reads them."""
    out: dict[str, Any] = {}
    for name in KIND_FIELDS.get(s.kind, ()):
        value = getattr(s, name)
        if value is not None and name not in ("groups", "cuts", "statement", "window"):
            out[name] = value
    if s.kind == "disk-slow":
        out.setdefault("ops", ["fsync"])
    if s.kind == "throttle-disk" and s.rate is not None:
        out["bytes_per_s"] = disk_rate_bytes(s.rate)
    if s.kind == "clock-skew":
        out["offset_s"] = parse_offset(s.offset) if s.offset else 0.0
        out["drift_s_per_s"] = parse_drift(s.drift) if s.drift else 0.0
    if s.kind == "disk-error":
        out.setdefault("ops", ["fsync"])
        out.setdefault("error", "EIO")
        out.setdefault("probability", 1.0)
    return out


def plan(
    specs: list[FaultSpec],
    nodes: int,
    balancers: int,
    trial_time: float,
    seed: int = 0,
    primary: int | None = None,
    web_nodes: int = 0,
    fronts: int = 0,
) -> list[PlannedFault]:
    """Resolve targets and check the schedule (`primary`: the node taking the writes now, for
    target primary; `web_nodes` and `fronts`: the web tier's, for web:N, front and fe:N). Raises
    ValueError listing every problem."""
    rng = random.Random(seed)
    out: list[PlannedFault] = []
    errors: list[str] = []
    for k, s in enumerate(specs, start=1):
        where = f"fault {k} ({s.kind})"
        errors += _common_checks(s, where, trial_time)
        lb: int | None = None
        node_ids: tuple[int, ...] = ()
        web: tuple[int, ...] = ()
        if s.kind in ("kill-balancer", "cut-vrrp"):
            lb, params, errs = _balancer_target(s, where, balancers, fronts)
        elif s.target.startswith("web:"):
            web, errs = _web_targets(s, where, web_nodes)
            params = {}
        elif s.target in FRONT_TARGETS:
            params, errs = {}, [f'{where}: target {s.target} is a front balancer; use kind = "kill-balancer"']
        else:
            node_ids, params, errs = _node_targets(s, where, nodes, rng, primary)
        errors += errs
        until = None if s.duration is None else s.at + s.duration
        out.append(PlannedFault(k, s.kind, node_ids, lb, s.at, until, {**params, **_kind_params(s)}, web))
    # Two faults on the same node at overlapping times would heal each other's state: refuse.
    # (A statement of a sql step changes no state of the node's that a heal would undo.)
    for i, a in enumerate(out):
        for b in out[i + 1 :]:
            same = set(a.nodes) & set(b.nodes) or set(a.web) & set(b.web)
            if "sql" not in (a.kind, b.kind) and same and _overlap(a, b):
                errors.append(
                    f"fault {a.index} and fault {b.index} act on the same node at overlapping times"
                )
    if errors:
        raise ValueError("\n".join(errors))
    return sorted(out, key=lambda f: (f.at, f.index))


def _overlap(a: PlannedFault, b: PlannedFault) -> bool:
    a_end = a.until if a.until is not None else float("inf")
    b_end = b.until if b.until is not None else float("inf")
    return a.at < b_end and b.at < a_end


RandomKind = Literal[
    "kill-node", "stop-node", "pause-node", "isolate-node", "partition", "coordinated-crash", "power-loss"
]


class RandomFaults(BaseModel):
    """`[random_faults]`: a schedule of crashes and partitions drawn from a seed. The same seed,
    node count and load duration give the same schedule; the seed goes into the run's provenance.

    The faults run one after another: `count` slots share [start, end], each holds one fault of a
    kind drawn from `kinds`, lasting between `min_for` and `max_for` seconds, followed by at least
    `gap` quiet seconds (the heal, a restart or a cold start, happens in them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kinds: list[RandomKind] = Field(default_factory=lambda: ["kill-node", "partition"], min_length=1)  # type: ignore[arg-type]
    count: int = Field(3, ge=1, le=1000)
    start: float = Field(5.0, ge=0, description="seconds after the load starts")
    end: float | None = Field(None, gt=0, description="every fault healed by then (default: the load's end)")
    min_for: float = Field(3.0, gt=0)
    max_for: float = Field(8.0, gt=0)
    gap: float = Field(5.0, ge=0, description="quiet seconds after each fault")
    window: float = Field(1.0, ge=0, le=600, description="coordinated-crash: seconds to kill them all in")
    seed: int | None = Field(None, description="default: the scenario's seed")


def random_partition(n: int, rng: random.Random) -> list[list[int]]:
    """One node cut off, or a minority of about half: the majority side keeps quorum."""
    nodes = list(range(1, n + 1))
    rng.shuffle(nodes)
    k = 1 if n <= 3 or rng.random() < 0.5 else (n - 1) // 2
    return [sorted(nodes[:k]), sorted(nodes[k:])]


def expand_random(rf: RandomFaults, nodes: int, trial_time: float, seed: int) -> list[FaultSpec]:
    """The FaultSpecs of a random schedule. Raises ValueError when they cannot fit."""
    end = trial_time if rf.end is None else rf.end
    errors = []
    if rf.min_for > rf.max_for:
        errors.append(f"random_faults: min_for ({rf.min_for:g}) is above max_for ({rf.max_for:g})")
    if end > trial_time:
        errors.append(f"random_faults: end ({end:g}) is after the load ends ({trial_time:g} s)")
    slot = (end - rf.start) / rf.count
    if slot < rf.max_for + rf.gap:
        errors.append(
            f"random_faults: {rf.count} faults of up to {rf.max_for:g} s with {rf.gap:g} s gaps do not fit "
            f"between {rf.start:g} s and {end:g} s; fewer faults, shorter ones or a longer load"
        )
    if nodes < 2 and any(k in ("partition", "isolate-node") for k in rf.kinds):
        errors.append("random_faults: partitions need at least 2 nodes")
    if errors:
        raise ValueError("\n".join(errors))
    rng = random.Random(seed)
    out: list[FaultSpec] = []
    for i in range(rf.count):
        kind = rng.choice(rf.kinds)
        dur = round(rng.uniform(rf.min_for, rf.max_for), 2)
        lo = rf.start + i * slot
        at = round(lo + rng.uniform(0, slot - dur - rf.gap), 2)
        fields: dict[str, Any] = {"kind": kind, "at": at, "for": dur}
        if kind == "partition":
            fields["groups"] = random_partition(nodes, rng)
        elif kind == "coordinated-crash":
            fields["target"] = "all"
            fields["window"] = rf.window
        elif kind == "power-loss":  # one node, or (one time in three) every node at once
            fields["target"] = "all" if rng.random() < 1 / 3 else f"node:{rng.randint(1, nodes)}"
        else:
            fields["target"] = f"node:{rng.randint(1, nodes)}"
        out.append(FaultSpec.model_validate(fields))
    return out


__all__ = ["KINDS", "FaultSpec", "PlannedFault", "RandomFaults", "expand_random", "plan", "resolve_nodes"]
