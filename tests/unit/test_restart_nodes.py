"""Cluster._survivors_primary: how the heal of a kill decides between rejoining one by one and
starting every killed node together (quorum lost)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from clusterbench.cluster import Cluster
from clusterbench.engines.base import NodeHealth
from clusterbench.engines.galera.engine import GaleraEngine
from clusterbench.engines.galera.node import health_of
from clusterbench.engines.galera.status import WsrepStatus
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

    def health(self) -> NodeHealth | None:
        st = self.status()
        return None if st is None else health_of(st)


def survivors_primary(c: Cluster) -> bool:
    assert isinstance(c.engine, GaleraEngine)
    return c.engine._survivors_primary(c)


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
    assert survivors_primary(c) is False
    assert clock.elapsed == pytest.approx(2.0)  # ten polls of 0.2 s, not an immediate "Primary"


def test_survivors_of_a_minority_kill_are_primary_once_their_view_shrinks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n1 = FakeNode(1, True, [view(3, True), view(3, True), view(2, True)])
    n2 = FakeNode(2, True, [view(3, True), view(3, True), view(2, True)])
    clock = FakeClock()
    c = cluster_with([n1, n2, FakeNode(3, False)], clock, monkeypatch)
    assert survivors_primary(c) is True
    assert clock.elapsed == pytest.approx(0.4)


def test_a_view_that_never_settles_is_treated_as_lost_quorum(monkeypatch: pytest.MonkeyPatch) -> None:
    n1 = FakeNode(1, True, [view(3, True)])
    clock = FakeClock()
    c = cluster_with([n1, FakeNode(2, False), FakeNode(3, False)], clock, monkeypatch)
    assert survivors_primary(c) is False
    assert clock.elapsed == pytest.approx(25.0)  # evs.inactive_timeout + 10 s


@dataclass
class StartableNode(FakeNode):
    waited: list[int] = field(default_factory=list)  # expect_size of each wait_synced
    started: bool = False

    def grastate(self) -> None:
        return None

    def wait_synced(self, timeout: float, expect_size: int | None = None, give_up: object = None) -> None:
        assert expect_size is not None
        self.waited.append(expect_size)

    def start_health_agent(self) -> None:
        pass


def test_lost_quorum_heal_waits_only_for_the_members_of_the_last_primary_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 5-node cluster running 3 nodes (n4, n5 stopped on purpose); n2 and n3 killed: n1 alone is
    # non-Primary. The heal starts n2 and n3 and waits for a component of 3, not of 5.
    n = [StartableNode(1, True, [view(1, False)])]
    n += [StartableNode(i, False, [view(1, False)]) for i in (2, 3, 4, 5)]
    clock = FakeClock()
    c = cluster_with(list(n), clock, monkeypatch)
    by_index = {x.index: x for x in n}
    monkeypatch.setattr(c, "node", lambda i: by_index[i])

    def start(
        site: object, node: StartableNode, *, bootstrap: bool = False, start_position: str | None = None
    ) -> None:
        node.live = node.started = True

    monkeypatch.setattr(c.engine, "_start", start)
    monkeypatch.setattr(c, "recorded", lambda node: None)
    out = c.restart_nodes((2, 3))
    assert [x.index for x in n if x.started] == [2, 3]
    assert [x.waited for x in n] == [[3], [3], [3], [], []]
    assert out[-1].startswith("Primary component re-formed by itself with 3 nodes")
