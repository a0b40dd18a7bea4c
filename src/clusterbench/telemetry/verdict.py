"""Which resource limited a trial (pure): the bottleneck verdict.

Every resource that has a limit gets a utilization over the trial's measured seconds (the mean of
its per-second figures):

| resource | figure | limit | near at |
|---|---|---|---|
| cpu (node k) | CPU time of its server process | its cgroup quota, else the CPUs it may use | 90 % |
| link (node k) | the busier direction of its link | the tbf rate, else the NIC's speed | 90 % |
| disk | busy time (%util); under a block I/O limit, its use of it | the wall clock; the limit | 90 % |
| client | sysbench's CPU use + run-queue wait; its --rate | workloads/saturation.py | its flags |
| host CPU | all CPUs of a machine busy | its CPUs | 90 % |
| flow control | share of the time replication was paused | all of it | 25 % |

The verdict names the one nearest its limit, in this order of kinds: a server's own limit (CPU,
link or disk: the highest utilization among them) first, since the topology set it or the machine
has it; then a saturated load client (its tps is then a floor, not the cluster's capacity); then a
machine whose CPU was busy as a whole (on the local provider that machine is shared by every node,
the balancer and the clients); then flow control (the symptom of a slow member, when none of the
above explains it). A flow-control verdict also names its likely cause, the member furthest behind:
the one with the longest queue of transactions waiting to be applied (on average, then at its
longest), else the busiest CPU among the members; its CPU figure, and its own disk's when its data
has one, are given beside it. Everything else
near its limit is listed beside it. When nothing is near, the
verdict says so and names the highest figure for reference.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

NEAR = 0.90
FLOW_CONTROL_NEAR = 0.25

# the order in which kinds are considered (see the module's docstring)
SERVER_KINDS = ("cpu", "link", "disk")
ORDER = ("server", "client", "host_cpu", "flow_control")

Series = Mapping[tuple[str, str], Sequence[tuple[float, float]]]  # (source, metric) → [(t, value)]


@dataclass(frozen=True)
class Candidate:
    resource: str  # cpu, link, disk, client, host_cpu, flow_control
    source: str  # n2, host/vda, client 0, host, host:db1
    utilization: float
    threshold: float
    label: str  # "CPU of n2"
    detail: str  # "0.49 of its 0.5-CPU quota"
    cause: str = ""  # flow control: the member furthest behind, the likely cause ("n3")

    @property
    def near(self) -> bool:
        return self.utilization >= self.threshold

    @property
    def group(self) -> str:
        return "server" if self.resource in SERVER_KINDS else self.resource

    def line(self) -> str:
        return f"{self.label} at {self.utilization:.0%} ({self.detail})"


@dataclass(frozen=True)
class ClientFacts:
    """What the saturation detection found for one load client."""

    client: int
    host: str
    flags: tuple[str, ...]
    demand: float | None  # CPU used + waited for, over what it may use
    warnings: tuple[str, ...] = ()
    cores: float | None = None  # CPUs it kept busy


@dataclass(frozen=True)
class Bottleneck:
    resource: str  # a Candidate's resource, "none" (nothing near its limit) or "unknown"
    source: str
    utilization: float | None
    summary: str
    candidates: list[Candidate] = field(default_factory=list)
    cause: str = ""  # a flow-control verdict: the member furthest behind ("n3"), else ""

    @property
    def tier(self) -> str:
        """The tier of what limited the trial (tier_of); '' for none or unknown."""
        return tier_of(self.source) if self.resource not in ("none", "unknown") else ""

    @property
    def short(self) -> str:
        """For tables: 'cpu n2 98%', 'link n3 96%', 'client 0', 'none (cpu n1 45%)'."""
        if self.resource in ("none", "unknown"):
            top = max(self.candidates, key=lambda c: c.utilization / c.threshold, default=None)
            if self.resource == "none" and top is not None:
                return f"none ({_tag(top)})"
            return self.resource
        top = next(
            (c for c in self.candidates if c.resource == self.resource and c.source == self.source), None
        )
        return _tag(top) if top is not None else self.resource

    def to_json(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "source": self.source,
            "utilization": self.utilization,
            "summary": self.summary,
            "short": self.short,
            "tier": self.tier,
            "cause": self.cause,
            "candidates": [asdict(c) for c in self.candidates],
        }


# The tier of a source, by its role's prefix: what an experiment's report names as the tier that
# limited a point ("lb1/n2": a backend as a balancer sees it, the balancer's tier).
TIERS = (("fe", "front balancer"), ("lb", "database balancer"), ("w", "web node"), ("n", "database node"),
         ("client", "load client"), ("host", "machine"))  # fmt: skip


def tier_of(source: str) -> str:
    """'w2' -> 'web node', 'fe1' -> 'front balancer', 'n3' -> 'database node', 'host/vda' ->
    'machine'; '' when unknown (no source)."""
    for prefix, tier in TIERS:
        if source.startswith(prefix):
            return tier
    return ""


def role_name(source: str) -> str:
    """How a verdict names a source: web nodes and front balancers by their tier ('web node w2',
    'front balancer fe1'); database nodes and balancers, as ever, by their role alone."""
    tier = tier_of(source)
    return f"{tier} {source}" if tier in ("web node", "front balancer") else source


def _tag(c: Candidate) -> str:
    """A few words for tables: 'cpu n2 98%', 'link n3 96%', 'client 0 95%', 'machine cpu 97%'."""
    if c.resource == "host_cpu":
        what = "machine cpu" if c.source == "host" else f"{c.source} cpu"
    elif c.resource == "flow_control":
        what = f"flow control {c.source}"
    else:
        what = f"{c.resource} {c.source}" if c.resource != "client" else c.source
    return f"{what} {c.utilization:.0%}"


def in_window(points: Sequence[tuple[float, float]], start: float, end: float) -> list[float]:
    """The values of the trial's measured seconds (start, end], the last half second included."""
    return [v for t, v in points if start < t <= end + 0.5]


def window_mean(points: Sequence[tuple[float, float]], start: float, end: float) -> float | None:
    vals = in_window(points, start, end)
    return statistics.fmean(vals) if vals else None


def _cores(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x < 10 else f"{x:.0f}"


def candidates(
    series: Series, start: float, end: float, clients: Sequence[ClientFacts], shared_sites: Sequence[str] = ()
) -> list[Candidate]:
    """Every resource with a limit and its utilization over (start, end]."""
    out: list[Candidate] = []

    def mean(src: str, metric: str) -> float | None:
        return window_mean(series.get((src, metric), ()), start, end)

    sources = sorted({s for s, _ in series})
    behind = _furthest_behind(series, start, end)
    for src in sources:
        util = mean(src, "cpu_util")
        if util is not None:
            cores, limit, q = (
                mean(src, "cpu_cores"),
                mean(src, "cpu_limit_cores"),
                mean(src, "cpu_quota_cores"),
            )
            quota = f"its {_cores(q)}-CPU quota" if q else f"the {_cores(limit or 0)} CPU(s) it may use"
            thr = mean(src, "cpu_throttled")
            detail = f"{_cores(cores or 0)} of {quota}" + (
                f", throttled in {thr:.0%} of periods" if thr else ""
            )
            out.append(Candidate("cpu", src, util, NEAR, f"CPU of {role_name(src)}", detail))
        util = mean(src, "net_util")
        if util is not None:
            rx, tx, limit = mean(src, "net_rx_mbit"), mean(src, "net_tx_mbit"), mean(src, "net_limit_mbit")
            detail = f"sent {tx or 0:.1f}, received {rx or 0:.1f} of {limit or 0:g} Mbit/s"
            out.append(Candidate("link", src, util, NEAR, f"link of {role_name(src)}", detail))
        util = mean(src, "disk_util")
        if util is not None:
            r, w = mean(src, "disk_read_iops"), mean(src, "disk_write_iops")
            detail = f"busy {util:.0%} of the time, {r or 0:.0f} reads/s, {w or 0:.0f} writes/s"
            held = mean(src, "disk_limit_mib_s")
            if held:
                wrote = mean(src, "disk_write_mib_s") or 0
                detail = (
                    f"wrote {wrote:.2f} of the {held:.2f} MiB/s its limit allows, "
                    f"{r or 0:.0f} reads/s, {w or 0:.0f} writes/s"
                )
            out.append(Candidate("disk", src, util, NEAR, f"disk {src}", detail))
        util = mean(src, "host_cpu_busy")
        if util is not None:
            n = mean(src, "host_cpus")
            shared = src in shared_sites
            what = (
                "this machine's CPUs (shared by the nodes, balancer and clients)"
                if shared
                else f"CPUs of {src}"
            )
            detail = f"{_cores(n or 0)} CPU(s) busy {util:.0%}"
            if shared:
                detail += ": " + _shares(series, start, end, clients, util * (n or 0))
            out.append(Candidate("host_cpu", src, util, NEAR, what, detail))
        util = mean(src, "flow_control_paused")
        if util is not None:
            # An engine that sums the time over its waiting sessions (GR's throttle time) can pass
            # 100 %: the share of the time is at most all of it.
            share = min(util, 1.0)
            detail = f"writes held back by flow control {share:.0%} of the time"
            cause = ""
            if behind is not None and share > 0:
                cause = behind[0]
                detail += f"; the member furthest behind: {cause} ({behind[1]})"
            out.append(Candidate("flow_control", src, share, FLOW_CONTROL_NEAR, f"flow control at {src}",
                                 detail, cause))  # fmt: skip
    for c in clients:
        saturated = bool(c.flags)
        util = c.demand if c.demand is not None else (1.0 if saturated else 0.0)
        detail = "; ".join(c.warnings) if c.warnings else f"sysbench on {c.host}"
        out.append(Candidate("client", f"client {c.client}", util if not saturated else max(util, NEAR),
                             NEAR, f"load client {c.client} on {c.host}", detail))  # fmt: skip
    return out


def _furthest_behind(series: Series, start: float, end: float) -> tuple[str, str] | None:
    """The member that most likely caused flow control, and why: the longest applier queue (its
    mean over the window, then its longest), else, when no member queued, the busiest CPU."""
    members = sorted({s for s, m in series if m in ("recv_queue", "flow_control_paused")})
    if not members:
        return None

    def stat(src: str, metric: str) -> tuple[float, float]:
        pts = in_window(series.get((src, metric), ()), start, end)
        return (statistics.fmean(pts), max(pts)) if pts else (0.0, 0.0)

    queues = {m: stat(m, "recv_queue") for m in members}
    cpus = {m: stat(m, "cpu_util")[0] for m in members}
    top = max(members, key=lambda m: (queues[m], cpus[m]))
    mean_q, max_q = queues[top]
    if max_q <= 0:
        top = max(members, key=lambda m: cpus[m])
        if cpus[top] <= 0:
            return None
    why = [f"applier queue {mean_q:.1f} on average, up to {max_q:.0f}"] if max_q > 0 else []
    if (top, "cpu_util") in series:
        why.append(f"CPU at {cpus[top]:.0%} of its limit")
    for src, metric in sorted(series):  # its own disk (a datadir file system of its own)
        if metric == "disk_util" and src.startswith(f"{top}/"):
            limited = " of its limit" if (src, "disk_limit_mib_s") in series else " of the time"
            why.append(f"disk {src} busy {stat(src, 'disk_util')[0]:.0%}{limited}")
    return top, ", ".join(why)


NO_SERVERS = "no server telemetry (the endpoint is not a cluster clusterbench runs)"


def _shares(series: Series, start: float, end: float, clients: Sequence[ClientFacts], busy: float) -> str:
    """Who kept a shared machine's CPUs busy: nodes, balancers, web nodes (when there are), load
    clients, everything else."""
    per: dict[str, float] = {"nodes": 0.0, "balancers": 0.0}
    for (src, metric), pts in series.items():
        if metric == "cpu_cores" and "/" not in src and not src.startswith("host"):
            tier = tier_of(src)
            key = {"database node": "nodes", "web node": "web nodes"}.get(tier, "balancers")
            per[key] = per.get(key, 0.0) + (window_mean(pts, start, end) or 0.0)
    per["load clients"] = sum(c.cores or 0.0 for c in clients)
    per["everything else"] = max(0.0, busy - sum(per.values()))
    return ", ".join(f"{k} {v:.2f}" for k, v in per.items()) + " CPUs"


def decide(
    cands: Sequence[Candidate], *, have_servers: bool = True, no_servers: str = NO_SERVERS
) -> Bottleneck:
    """The verdict from the candidates (see the module's docstring for the order)."""
    ranked = sorted(cands, key=lambda c: (ORDER.index(c.group), -c.utilization / c.threshold))
    near = [c for c in ranked if c.near]
    if near:
        top = near[0]
        others = [c.line() for c in near[1:]]
        summary = f"{top.label} was nearest its limit: {top.utilization:.0%} ({top.detail})"
        if top.resource == "client":
            summary = (
                f"the load client limited the load ({top.label}, {top.utilization:.0%}): its tps is a floor "
                "for the cluster's capacity"
            )
        if others:
            summary += "; also near their limit: " + "; ".join(others)
        cause = top.cause if top.resource == "flow_control" else ""
        return Bottleneck(top.resource, top.source, top.utilization, summary, list(cands), cause)
    if not have_servers:
        return Bottleneck(
            "unknown", "", None, f"{no_servers}; the load client was not saturated", list(cands)
        )
    top_any = max(cands, key=lambda c: c.utilization / c.threshold, default=None)
    summary = "no resource near its limit"
    if top_any is not None:
        summary += f"; the highest was {top_any.line()}"
    return Bottleneck("none", "", None, summary, list(cands))
