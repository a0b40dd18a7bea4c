"""The web tier in experiments (pure): the factors `web_nodes` and `web_layout` (each level a cluster
of its own, `[web] nodes` and `layout` of the base topology), and what an experiment with the HTTP
tests must say: a request rate, a web tier at every point, and the HTTP settings only where an
HTTP test runs. Every problem is one InputError line naming the part and the field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clusterbench.errors import InputError
from clusterbench.spec.topology import Topology
from clusterbench.workloads.sysbench import HTTP_SETTINGS, HTTP_TESTS

Level = int | float | str | bool


def check_web(
    wl: Any, levels: Mapping[str, Sequence[Level]], topo: Topology, where: str, given: set[str]
) -> None:
    """`wl`: the part's Workload; `levels`: its factors' levels; `given`: the workload keys the
    file sets."""
    tests = [str(t) for t in levels.get("workload", wl.tests)]
    http = [t for t in tests if t in HTTP_TESTS]
    settings = [k for k in HTTP_SETTINGS if k in given]
    if not http:
        if settings:
            raise InputError(
                f"{where}: workload.{settings[0]} is a setting of the HTTP tests and no trial runs one; "
                'remove it or add workload = "http_mixed" (or http_read, http_write)'
            )
    else:
        rates = [int(r) for r in levels.get("rate", [wl.rate])]
        if wl.rate_of_max is None and min(rates) <= 0:
            raise InputError(
                f"{where}: {http[0]} sends requests at a fixed rate whatever the latency; give workload.rate "
                "(requests per second) or factor rate levels above 0"
            )
        webs = [int(w) for w in levels.get("web_nodes", [topo.web.nodes])]
        if min(webs) == 0:
            what = "factor web_nodes has 0" if "web_nodes" in levels else "the topology has [web] nodes = 0"
            raise InputError(
                f"{where}: {http[0]} loads the web tier and {what}; set topology.web.nodes = 1..9 "
                "(or web_nodes levels from 1)"
            )
    if "web_layout" in levels and "web_nodes" not in levels and topo.web.nodes == 0:
        raise InputError(
            f"{where}: factor web_layout needs web nodes; set topology.web.nodes or the factor web_nodes"
        )


def web_topology(data: dict[str, Any], point: Mapping[str, Level], nodes: int, where: str) -> None:
    """Put a point's web factors into its topology's data (`nodes`: the database nodes running at
    that point). A colocated web node runs on its database node's host: it needs that node."""
    web = dict(data.get("web") or {})
    if "web_nodes" in point:
        web["nodes"] = int(point["web_nodes"])
    if "web_layout" in point:
        web["layout"] = str(point["web_layout"])
    data["web"] = web
    if web.get("layout") == "colocated" and int(web.get("nodes") or 0) > nodes:
        raise InputError(
            f"{where}: {web['nodes']} colocated web nodes need as many database nodes running, and the "
            f"point runs {nodes}; leave that combination out (parts) or use web_layout = separate there"
        )
