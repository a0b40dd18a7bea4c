"""Faults on the web tier: web:N, front and fe:N targets as planned (pure), the actions over a
recording fake cluster (kill, stop, pause a web node; kill the front holding the VIP and time the
VIP's move), and the leftovers a killed run leaves on the tier."""

from __future__ import annotations

from typing import Any

import pytest

from clusterbench.errors import ComponentError
from clusterbench.faults import kinds
from clusterbench.faults.spec import FaultSpec, PlannedFault, plan
from clusterbench.faults.web import KillFront, KillWeb, PauseWeb, StopWeb, vip_move


def spec(**kw: object) -> FaultSpec:
    return FaultSpec.model_validate(kw)


def test_web_targets_are_planned_onto_web_nodes_and_fronts() -> None:
    got = plan(
        [spec(kind="kill-balancer", target="front", at=5, **{"for": 5}),
         spec(kind="pause-node", target="web:2,3", at=12, **{"for": 4}),
         spec(kind="kill-node", target="node:1", at=12, **{"for": 4}),
         spec(kind="kill-balancer", target="fe:2", at=20, **{"for": 3})],
        3, 1, 30, web_nodes=3, fronts=2,
    )  # fmt: skip
    assert got[0] == PlannedFault(1, "kill-balancer", (), 1, 5.0, 10.0, {"target": "front"})
    assert got[1] == PlannedFault(2, "pause-node", (), None, 12.0, 16.0, {}, (2, 3))
    assert got[2].nodes == (1,) and got[2].web == ()  # a database node at the same time is fine
    labels = ["kill-balancer fe1", "pause-node w2,w3", "kill-node n1", "kill-balancer fe2"]
    assert [f.label() for f in got] == labels
    assert got[0].front and not got[2].front
    # the database's balancer keeps its own labels
    [lb] = plan([spec(kind="kill-balancer", target="balancer", at=1, **{"for": 1})], 3, 1, 30)
    assert lb.label() == "kill-balancer lb1" and not lb.front


def test_web_target_problems_are_listed_exactly() -> None:
    specs = [
        spec(kind="kill-node", target="web:4", at=1, **{"for": 2}),
        spec(kind="throttle-cpu", target="web:1", cpu_quota=0.1, at=1, **{"for": 2}),
        spec(kind="kill-balancer", target="fe:2", at=1, **{"for": 2}),
        spec(kind="kill-node", target="front", at=1, **{"for": 2}),
        spec(kind="stop-node", target="web:2", at=5, **{"for": 5}),
        spec(kind="kill-node", target="web:2", at=8, **{"for": 5}),
    ]
    with pytest.raises(ValueError) as exc:
        plan(specs, 3, 1, 30, web_nodes=3, fronts=1)
    assert str(exc.value).splitlines() == [
        "fault 1 (kill-node): target web:4: web node 4 does not exist (web nodes 1-3)",
        "fault 2 (throttle-cpu): target web:1 is a web node; throttle-cpu acts on database nodes (web nodes "
        "take kill-node, stop-node, pause-node)",
        "fault 3 (kill-balancer): fe:2 does not exist (this cluster has 1 front balancer)",
        'fault 4 (kill-node): target front is a front balancer; use kind = "kill-balancer"',
        "fault 5 and fault 6 act on the same node at overlapping times",
    ]
    with pytest.raises(ValueError) as exc:
        plan([spec(kind="kill-balancer", target="front", at=1, **{"for": 2}),
              spec(kind="kill-node", target="web:1", at=1, **{"for": 2})], 3, 1, 30)  # fmt: skip
    assert str(exc.value).splitlines() == [
        "fault 1 (kill-balancer): this cluster has no front balancer; set [web] nodes in the topology",
        "fault 2 (kill-node): target web:1: web node 1 does not exist (no web nodes ([web] nodes = 0))",
    ]
    with pytest.raises(ValueError, match=r"not a target; use node:N .* web:N \(a web node\), front or fe:N"):
        spec(kind="kill-node", target="web:0", at=1, **{"for": 1})


class FakeWebCluster:
    """The web tier's operations, recorded; the front VIP on fe1 until fe1 is killed, then on fe2
    after `move_polls` looks."""

    def __init__(self, move_polls: int = 3, paired: bool = True) -> None:
        self.calls: list[str] = []
        self.holder: str | None = "fe1"
        self.move_polls = move_polls
        self.paired = paired
        from clusterbench.spec.topology import Topology

        front = {"count": 2} if paired else {}
        self.topology = Topology.model_validate({"web": {"nodes": 3, "front": front}})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("web_"):

            def op(i: int) -> str:
                self.calls.append(f"{name} {i}")
                return f"{name} w{i}"

            return op
        raise AttributeError(name)

    def fronts(self) -> list[Any]:
        return []

    def front_vip_holder(self) -> str | None:
        return self.holder

    def front_vip_holders(self) -> list[str]:
        return [self.holder] if self.holder else []

    def front_kill(self, k: int) -> str:
        self.calls.append(f"front_kill {k}")
        self.holder = None
        return f"front haproxy fe{k} killed"

    def front_start(self, k: int) -> str:
        self.calls.append(f"front_start {k}")
        return f"front haproxy fe{k} UP in 2.0 s"

    def wait_front_vip(self, timeout: float, *, not_on: str | None = None, poll: float = 0.05) -> str:
        self.calls.append(f"wait_front_vip not_on={not_on} timeout={timeout:g}")
        return "fe2"


def planned(target: str, kind: str = "kill-node") -> PlannedFault:
    [f] = plan([spec(kind=kind, target=target, at=1, **{"for": 2})], 3, 1, 30, web_nodes=3, fronts=2)
    return f


def test_web_actions_act_on_web_nodes_and_heal_once() -> None:
    c: Any = FakeWebCluster()
    for cls, kind, calls in (
        (KillWeb, "kill-node", ["web_kill 2", "web_start 2"]),
        (StopWeb, "stop-node", ["web_stop 2", "web_start 2"]),
        (PauseWeb, "pause-node", ["web_pause 2", "web_resume 2"]),
    ):
        c.calls.clear()
        f = planned("web:2", kind)
        action = kinds.make_action(c, f)
        assert type(action) is cls
        action.apply()
        action.heal()
        assert action.heal() == {}  # healed once
        assert c.calls == calls


def test_killing_the_front_takes_the_vip_holder_and_times_the_move() -> None:
    c: Any = FakeWebCluster()
    action = kinds.make_action(c, planned("front", "kill-balancer"))
    assert isinstance(action, KillFront)
    c.holder = "fe2"  # the VIP had moved to fe2 before: fe2 is the one killed
    out = action.apply()
    assert c.calls == ["front_kill 2", "wait_front_vip not_on=fe2 timeout=8"]
    assert out["killed"] == "front haproxy fe2 killed" and out["vip_moved_to"] == "fe2"
    assert 0 <= out["vip_move_s"] < 1
    assert action.heal() == {"restarted": "front haproxy fe2 UP in 2.0 s"}
    # fe:1 is fe1 whoever holds the VIP; a front that did not hold it has no VIP move
    c = FakeWebCluster()
    c.holder = "fe2"
    out = kinds.make_action(c, planned("fe:1", "kill-balancer")).apply()
    assert out == {"killed": "front haproxy fe1 killed"}


def test_a_vip_that_does_not_move_is_said_not_raised() -> None:
    def stuck(**kw: Any) -> str:
        raise ComponentError("the front VIP 198.18.0.6 is not on exactly one front balancer")

    got = vip_move(stuck, "fe1", 1.0, 0.0)
    assert got == {"vip_moved_to": None, "vip_move_s": None,
                   "vip_error": "the front VIP 198.18.0.6 is not on exactly one front balancer"}  # fmt: skip
