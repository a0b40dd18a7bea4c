"""Coordinated crashes and random crash + partition schedules: planned from the seed (the same
seed gives the same schedule), validated up front, applied at their offsets."""

from __future__ import annotations

from typing import Any

import pytest

from clusterbench.faults.actions import CoordinatedCrash
from clusterbench.faults.spec import FaultSpec, RandomFaults, expand_random, plan


def crash(**kw: Any) -> FaultSpec:
    return FaultSpec.model_validate({"kind": "coordinated-crash", "at": 5, "for": 10, **kw})


def test_coordinated_crash_kills_every_node_within_the_window_in_a_seeded_order() -> None:
    (f,) = plan([crash(window=2.0)], nodes=3, balancers=1, trial_time=30, seed=7)
    assert f.nodes == (1, 2, 3) and f.kind == "coordinated-crash"
    assert sorted(f.params["order"]) == [1, 2, 3]
    offsets = f.params["offsets"]
    assert offsets[0] == 0.0 and offsets[-1] == 2.0 and offsets == sorted(offsets)
    (g,) = plan([crash(window=2.0)], nodes=3, balancers=1, trial_time=30, seed=7)
    assert g.params == f.params  # reproducible
    (h,) = plan([crash()], nodes=3, balancers=1, trial_time=30, seed=7)
    assert h.params["offsets"] == [0.0, 0.0, 0.0] and h.params["window"] == 0.0
    (m,) = plan([crash(target="majority", window=1)], nodes=5, balancers=1, trial_time=30, seed=1)
    assert len(m.nodes) == 3 and m.params["offsets"][-1] == 1.0


def test_coordinated_crash_bad_input() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        crash(window=-1)
    with pytest.raises(ValueError, match="window only applies to coordinated-crash"):
        plan([FaultSpec.model_validate({"kind": "kill-node", "at": 1, "for": 2, "window": 1})], 3, 1, 30)


class FakeCluster:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def node_kill(self, i: int) -> str:
        self.calls.append(("kill", i))
        return f"n{i} killed"

    def restart_nodes(self, nodes: tuple[int, ...]) -> list[str]:
        self.calls.append(("restart", nodes))
        return ["cold start from n2"]


def test_coordinated_crash_action_kills_at_the_offsets_then_restarts_all() -> None:
    (f,) = plan([crash(window=0.5)], nodes=3, balancers=1, trial_time=30, seed=3)
    cluster = FakeCluster()
    slept: list[float] = []
    action = CoordinatedCrash(cluster, f, sleep=slept.append)  # type: ignore[arg-type]
    detail = action.apply()
    assert [c for c in cluster.calls] == [("kill", i) for i in f.params["order"]]
    assert len(detail["killed"]) == 3 and detail["window_s"] == 0.5
    assert slept and all(0 < s <= 0.5 for s in slept)
    healed = action.heal()
    assert cluster.calls[-1] == ("restart", (1, 2, 3)) and healed["restarted"] == ["cold start from n2"]
    assert action.heal() == {}  # idempotent


def test_random_schedule_is_reproducible_from_its_seed_and_fits_the_load() -> None:
    rf = RandomFaults(kinds=["kill-node", "partition", "coordinated-crash"], count=4, start=5, end=95)
    a = expand_random(rf, nodes=3, trial_time=100, seed=42)
    b = expand_random(rf, nodes=3, trial_time=100, seed=42)
    c = expand_random(rf, nodes=3, trial_time=100, seed=43)
    assert a == b and a != c
    assert len(a) == 4
    assert all(f.at >= 5 and f.at + (f.duration or 0) <= 95 for f in a)
    # one after another, with the gap
    for x, y in zip(a, a[1:], strict=False):
        assert x.at + (x.duration or 0) + rf.gap <= y.at + 1e-9
    planned = plan(a, nodes=3, balancers=1, trial_time=100, seed=42)
    assert len(planned) == 4
    for f in a:
        if f.kind == "partition":
            assert f.groups is not None and sorted(sum(f.groups, [])) == [1, 2, 3]
            assert min(len(g) for g in f.groups) == 1
        if f.kind == "coordinated-crash":
            assert f.target == "all" and f.window == rf.window


def test_random_schedule_that_cannot_fit_is_refused_with_the_reason() -> None:
    rf = RandomFaults(count=10, max_for=8, gap=5)
    with pytest.raises(
        ValueError, match="10 faults of up to 8 s with 5 s gaps do not fit between 5 s and 60 s"
    ):
        expand_random(rf, nodes=3, trial_time=60, seed=1)
    with pytest.raises(ValueError, match="min_for"):
        expand_random(RandomFaults(min_for=9, max_for=3), nodes=3, trial_time=600, seed=1)
