"""The web tier (`[web]`): web nodes running nginx + php-fpm + clusterbench's small application,
which reach the database through today's balancer(s), and a front HAProxy (one, or a keepalived
pair with a virtual IP of its own) that HTTP clients talk to. Pure.

`nodes = 0` (the default) is today's layout: no web tier, clients talk to the database.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from clusterbench.spec.balancer import BalancerSettings, pair_problem
from clusterbench.spec.resources import Resources, Strict

MAX_WEB_NODES = 9
# php-fpm children when neither max_children nor a CPU limit says otherwise
MIN_CHILDREN = 2


class FpmSettings(Strict):
    """The php-fpm pool of every web node (`[web.fpm]`)."""

    # static: the pool is all there from the start (no spawning while measuring); dynamic keeps
    # spare children between min and max spare; ondemand forks per demand and reaps idle ones.
    pm: Literal["static", "dynamic", "ondemand"] = "static"
    # pm.max_children; None: children_per_cpu x the node's CPUs (its cpu_quota or cpuset, else
    # the machine's), at least MIN_CHILDREN. A request spends most of its time waiting for the
    # database, so a CPU serves several children.
    max_children: int | None = Field(None, ge=1, le=1024)
    children_per_cpu: int = Field(4, ge=1, le=64)
    # request_terminate_timeout (s): php-fpm kills a child whose request runs longer (the client
    # then gets 502 from nginx)
    request_timeout: float = Field(30.0, gt=0, le=3600)
    # pm.max_requests: recycle a child after this many requests; 0 = never
    max_requests: int = Field(0, ge=0, le=1_000_000)
    # listen.backlog of the pool's socket: requests nginx may queue while every child is busy
    listen_backlog: int = Field(511, ge=1, le=65535)

    def children(self, cpus: float | None, machine_cpus: int) -> int:
        """pm.max_children for a node with `cpus` CPUs (None: the machine's `machine_cpus`)."""
        if self.max_children is not None:
            return self.max_children
        have = cpus if cpus is not None else float(machine_cpus)
        return max(MIN_CHILDREN, math.ceil(self.children_per_cpu * have))


class AppSettings(Strict):
    """clusterbench's web application (`[web.app]`): how it talks to the database."""

    # mysqli's connect timeout (whole seconds): how long /health and every page wait for the
    # balancer to take the connection
    db_connect_timeout: int = Field(2, ge=1, le=60)
    # mysqli's read timeout (whole seconds): a statement that takes longer fails, the page
    # answers 5xx
    db_timeout: int = Field(10, ge=1, le=3600)
    # keep one database connection per php-fpm child across requests (mysqli "p:" hosts); off:
    # a connection per request, through the balancer, as most PHP applications do
    persistent: bool = False
    # point selects the mixed page makes before its one write
    mixed_reads: int = Field(4, ge=0, le=100)


class FrontSettings(BalancerSettings):
    """The front HAProxy over the web nodes (`[web.front]`): HTTP mode, each web node checked with
    GET /health. The same keys as `[balancer]`; `count = 2` makes a keepalived pair with a VIP
    of its own. kind = "none": HTTP clients talk to the web nodes directly."""

    port: int = Field(80, ge=1, le=65535)
    algorithm: Literal["leastconn", "roundrobin", "first"] = "roundrobin"


class WebNodeOverride(Resources):
    """`[[web.node]]`: limits of one web node, over `[web.resources]`."""

    index: int = Field(ge=1, le=MAX_WEB_NODES)


class WebSettings(Strict):
    nodes: int = Field(0, ge=0, le=MAX_WEB_NODES)
    # where nginx listens on each web node
    port: int = Field(80, ge=1, le=65535)
    # nginx worker processes; None: one per CPU the node has (at least 1)
    nginx_workers: int | None = Field(None, ge=1, le=64)
    resources: Resources = Field(default_factory=Resources)
    node: list[WebNodeOverride] = Field(default_factory=list)
    fpm: FpmSettings = Field(default_factory=FpmSettings)
    app: AppSettings = Field(default_factory=AppSettings)
    front: FrontSettings = Field(default_factory=FrontSettings)

    def problem(self) -> str | None:
        """What is wrong across the keys of `[web]`, as one line naming the field; None if
        nothing (the topology checks it, so that the line names web.* from the top)."""
        seen: set[int] = set()
        for o in self.node:
            if o.index > self.nodes:
                return f"web.node.index {o.index} is larger than web.nodes ({self.nodes})"
            if o.index in seen:
                return f"web.node.index {o.index} is given twice"
            seen.add(o.index)
        return pair_problem(self.front, "web.front")

    def indexes(self) -> list[int]:
        return list(range(1, self.nodes + 1))

    def node_resources(self, index: int) -> Resources:
        for o in self.node:
            if o.index == index:
                return self.resources.merged(Resources(cpu_quota=o.cpu_quota, cpuset=o.cpuset,
                                                       bandwidth=o.bandwidth))  # fmt: skip
        return self.resources

    def front_indexes(self) -> list[int]:
        """1 (fe1) or 1 and 2 (fe1, fe2); empty without web nodes or with front kind 'none'."""
        if self.nodes == 0 or self.front.kind == "none":
            return []
        return list(range(1, self.front.count + 1))
