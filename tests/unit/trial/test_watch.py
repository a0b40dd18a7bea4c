"""trial/watch.py: a load whose cluster died ends at its planned time and says so."""

from __future__ import annotations

import time

from clusterbench.trial.watch import DOWN_GRACE_S, ClusterWatch


class Node:
    def __init__(self, up: bool) -> None:
        self.up = up

    def alive(self) -> bool:
        return self.up


class Cluster:
    def __init__(self) -> None:
        self.n = [Node(True), Node(True)]

    def nodes(self) -> list[Node]:
        return self.n


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_watch_names_when_every_node_went_down_and_stops_only_after_the_planned_end() -> None:
    c, clock = Cluster(), Clock()
    with ClusterWatch(c, planned_s=10.0, interval=0.01, monotonic=clock) as w:
        clock.t = 104.0
        time.sleep(0.05)
        assert w.down_since is None and w.stop_reason() is None and w.down_now() is None
        c.n[0].up = False  # one node down: the cluster is still there
        time.sleep(0.05)
        assert w.down_since is None
        c.n[1].up = False
        clock.t = 106.2
        time.sleep(0.05)
        assert w.down_since == 6.2
        assert w.stop_reason() is None  # before the planned end: the load goes on
        clock.t = 100 + 10.0 + DOWN_GRACE_S - 0.1
        assert w.stop_reason() is None
        clock.t = 100 + 10.0 + DOWN_GRACE_S
        assert w.stop_reason() == "every node of the cluster is down since 6.2 s"
    assert w.down_now() == "every node of the cluster is down since 6.2 s"
    c.n[0].up = True
    assert w.down_now() is None


def test_a_node_that_comes_back_clears_the_down_time() -> None:
    c, clock = Cluster(), Clock()
    with ClusterWatch(c, planned_s=5.0, interval=0.01, monotonic=clock) as w:
        for n in c.n:
            n.up = False
        clock.t = 101.0
        time.sleep(0.05)
        assert w.down_since == 1.0
        c.n[1].up = True
        time.sleep(0.05)
        assert w.down_since is None
        clock.t = 200.0
        assert w.stop_reason() is None
