"""Every shipped example must load and plan: the docs point users at them."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.scenario.spec import load_scenario
from clusterbench.spec.topology import load_topology

ROOT = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("path", sorted((ROOT / "topologies").glob("*.toml")), ids=lambda p: p.name)
def test_topology_examples_load(path: Path) -> None:
    t = load_topology(path)
    assert 1 <= t.cluster.nodes <= 9


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.toml")), ids=lambda p: p.name)
def test_scenario_examples_load_and_plan(path: Path) -> None:
    spec, topo = load_scenario(path)
    assert topo is not None and topo.exists()
    t = load_topology(topo)
    faults = spec.planned(t.cluster.nodes, t.balancer.count if hasattr(t.balancer, "count") else 1, str(path),
                          web_nodes=t.web.nodes, fronts=len(t.web.front_indexes()))  # fmt: skip
    assert faults or spec.anomalies is not None, "a drill without a fault (or anomaly workloads)"
    assert all(f.until is None or f.until <= spec.load.duration for f in faults)


def test_the_web_tier_examples_are_the_studys_layout() -> None:
    t = load_topology(ROOT / "topologies" / "web-tier.toml")
    assert (t.cluster.nodes, t.web.nodes, t.web.front.count, t.front_vip_address()) == (3, 3, 2, "198.18.4.6")
    spec, topo = load_scenario(ROOT / "scenarios" / "web-failover.toml")
    assert topo == ROOT / "topologies" / "web-tier.toml"
    faults = spec.planned(3, 1, "x", web_nodes=3, fronts=2)
    assert [f.label() for f in faults] == ["kill-balancer fe1", "kill-node w2", "kill-node n3"]
    assert spec.load.workload == "http_mixed" and spec.load.rate > 0
