"""Cluster._survivors_primary: how the heal of a kill decides between rejoining one by one and
starting every killed node together (quorum lost)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from clusterbench.cluster import Cluster
from clusterbench.components.galera.status import WsrepStatus
from clusterbench.spec.topology import Topology
from tests.unit.fakes import FakeClock


def view(size: int, primary: bool) -> WsrepStatus:
    return WsrepStatus(
        state=4 if primary else 0,
        state_comment="Synced" if primary else "Initialized",
        cluster_size=size,
        cluster_status="Primary" if primary else "non-Primary",
        ready=primary,
        connected=True,
        last_committed=7,
        flow_control_paused=0.0,
        cluster_state_uuid="u",
        cluster_conf_id=3 if primary else -1,
    )


@dataclass
class FakeNode:
    index: int
    live: bool
    views: list[WsrepStatus] = field(default_factory=list)  # one per poll; the last one repeats

    def alive(self) -> bool:
        return self.live

    def status(self) -> WsrepStatus | None:
        return self.views.pop(0) if len(self.views) > 1 else self.views[0]


def cluster_with(nodes: list[FakeNode], clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> Cluster:
    topo = Topology.model_validate({"mariadb": {"evs_suspect_timeout": 5.0, "evs_inactive_timeout": 15.0}})
    c = Cluster(topo, clock=clock)
    monkeypatch.setattr(c, "nodes", lambda: nodes)
    return c


def test_waits_until_the_survivors_view_drops_the_dead(monkeypatch: pytest.MonkeyPatch) -> None:
    # Killed n2, n3: n1 still reports the old 3-node Primary view for a while, then non-Primary.
    n1 = FakeNode(1, True, [view(3, True)] * 10 + [view(1, False)])
    clock = FakeClock()
    c = cluster_with([n1, FakeNode(2, False), FakeNode(3, False)], clock, monkeypatch)
    assert c._survivors_primary() is False
    assert clock.elapsed == pytest.approx(2.0)  # ten polls of 0.2 s, not an immediate "Primary"


def test_survivors_of_a_minority_kill_are_primary_once_their_view_shrinks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n1 = FakeNode(1, True, [view(3, True), view(3, True), view(2, True)])
    n2 = FakeNode(2, True, [view(3, True), view(3, True), view(2, True)])
    clock = FakeClock()
    c = cluster_with([n1, n2, FakeNode(3, False)], clock, monkeypatch)
    assert c._survivors_primary() is True
    assert clock.elapsed == pytest.approx(0.4)


def test_a_view_that_never_settles_is_treated_as_lost_quorum(monkeypatch: pytest.MonkeyPatch) -> None:
    n1 = FakeNode(1, True, [view(3, True)])
    clock = FakeClock()
    c = cluster_with([n1, FakeNode(2, False), FakeNode(3, False)], clock, monkeypatch)
    assert c._survivors_primary() is False
    assert clock.elapsed == pytest.approx(25.0)  # evs.inactive_timeout + 10 s
