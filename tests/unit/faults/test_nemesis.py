from __future__ import annotations

import time
from typing import Any

from clusterbench.faults.nemesis import Nemesis
from clusterbench.faults.spec import PlannedFault


class FakeAction:
    def __init__(self, log: list[str], name: str, fail_heal: bool = False) -> None:
        self.log, self.name, self.fail_heal = log, name, fail_heal
        self.active = False

    def apply(self) -> dict[str, Any]:
        self.active = True
        self.log.append(f"apply {self.name}")
        return {"did": self.name}

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        self.log.append(f"heal {self.name}")
        if self.fail_heal:
            raise RuntimeError("tc said no")
        return {"healed": self.name}


def make(
    faults: list[PlannedFault], fail_heal: bool = False
) -> tuple[Nemesis, list[str], list[tuple[str, dict[str, Any]]]]:
    log: list[str] = []
    events: list[tuple[str, dict[str, Any]]] = []
    n = Nemesis(
        None,  # type: ignore[arg-type]
        faults,
        lambda kind, detail, t: events.append((kind, detail)),
        action_factory=lambda _c, f: FakeAction(log, f.label(), fail_heal),
    )
    return n, log, events


def wait_for(cond: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.005)


def test_schedule_applies_and_heals_in_time_order() -> None:
    a = PlannedFault(1, "kill-node", (2,), None, 0.0, 0.02)
    b = PlannedFault(2, "pause-node", (3,), None, 0.01, 0.03)
    n, log, events = make([a, b])
    n.start(time.monotonic())
    wait_for(lambda: len(log) == 4)
    n.heal_all()
    assert log == ["apply kill-node n2", "apply pause-node n3", "heal kill-node n2", "heal pause-node n3"]
    assert [(d["fault"], d["phase"]) for _, d in events] == [
        ("kill-node n2", "start"),
        ("kill-node n2", "applied"),
        ("pause-node n3", "start"),
        ("pause-node n3", "applied"),
        ("kill-node n2", "end"),
        ("pause-node n3", "end"),
    ]
    assert [w[0] for w in n.windows()] == ["kill-node n2", "pause-node n3"]
    assert n.errors() == []


def test_heal_all_heals_what_is_active_and_skips_what_never_started() -> None:
    a = PlannedFault(1, "kill-node", (2,), None, 0.0, 100.0)
    b = PlannedFault(2, "pause-node", (3,), None, 50.0, 60.0)
    n, log, events = make([a, b])
    n.start(time.monotonic())
    wait_for(lambda: log == ["apply kill-node n2"])
    n.heal_all()  # as on Ctrl-C: the second fault never starts
    assert log == ["apply kill-node n2", "heal kill-node n2"]
    assert events[-1][1]["phase"] == "end"
    n.heal_all()  # idempotent
    assert log == ["apply kill-node n2", "heal kill-node n2"]


def test_a_failed_heal_is_recorded_not_swallowed() -> None:
    a = PlannedFault(1, "throttle-link", (1,), None, 0.0, 0.01)
    n, log, events = make([a], fail_heal=True)
    n.start(time.monotonic())
    wait_for(lambda: len(log) == 2)
    n.heal_all()
    assert n.errors() == ["throttle-link n1: heal failed: tc said no"]
    assert events[-1][1]["error"] == "heal failed: tc said no"
