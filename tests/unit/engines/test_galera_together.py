"""The Galera bring-up's start of every node at once (template.start_together), with fake nodes:
one position and safe_to_bootstrap 0 on each, one Primary view naming them all in every
gvwstate.dat, all started before any is waited for, and a node that exits named with its log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from clusterbench.engines.galera.node import GaleraNode
from clusterbench.engines.galera.status import GraState
from clusterbench.engines.galera.template import start_together
from clusterbench.errors import ComponentError

POS = GraState("89181572-eb68-11f1-9269-738b0ce85c06", 7, safe_to_bootstrap=True)


class FakeHost:
    def __init__(self) -> None:
        self.files: dict[Path, str] = {}

    def put_file(self, path: Path, text: str, mode: int = 0o644, owner: str | None = None) -> None:
        assert owner == "mysql"
        self.files[path] = text


class FakeNode:
    def __init__(self, index: int, events: list[str], dies: bool = False) -> None:
        self.index, self.events, self.dies = index, events, dies
        self.name = f"n{index}"
        self.datadir = Path(f"/c/{self.name}/data")
        self.error_log = Path(f"/c/{self.name}/error.log")
        self.host = FakeHost()
        self.grastate: GraState | None = None
        self.running = False

    def set_grastate(self, g: GraState) -> None:
        self.grastate = g

    def alive(self) -> bool:
        return self.running and not self.dies

    def error_log_tail(self, n: int = 5) -> str:
        return f"[ERROR] {self.name}: unknown variable 'no_such_option=1'"

    def wait_synced(self, timeout: float, expect_size: int | None = None,
                    give_up: Callable[[], str | None] | None = None) -> None:  # fmt: skip
        self.events.append(f"wait {self.name} for {expect_size}")
        assert give_up is not None
        give_up()


def view(text: str) -> tuple[str, list[str], str]:
    lines = text.splitlines()
    me = lines[0].removeprefix("my_uuid: ")
    members = [ln.split()[1] for ln in lines if ln.startswith("member: ")]
    rep = next(ln.split()[2] for ln in lines if ln.startswith("view_id: "))
    return me, members, rep


def run(nodes: list[FakeNode], events: list[str]) -> list[str]:
    reports: list[str] = []

    def start(n: Any) -> None:
        events.append(f"start {n.name}")
        n.running = True

    start_together(cast(list[GaleraNode], nodes), POS, reports.append, start, timeout=5.0)
    return reports


def test_every_node_gets_one_position_and_one_view_of_all_and_starts_before_any_wait() -> None:
    events: list[str] = []
    nodes = [FakeNode(i, events) for i in (1, 2, 3)]
    reports = run(nodes, events)
    assert events == ["start n1", "start n2", "start n3", "wait n1 for 3", "wait n2 for 3", "wait n3 for 3"]
    for n in nodes:
        # Nobody bootstraps: the saved view forms the component, so no node is safe to.
        assert n.grastate == GraState(POS.uuid, 7, safe_to_bootstrap=False)
    views = [view(n.host.files[n.datadir / "gvwstate.dat"]) for n in nodes]
    members = views[0][1]
    assert len(set(members)) == 3 and members == sorted(members)
    # each node is its own member, in node order (n1 the lowest UUID: local index 0)
    assert [v[0] for v in views] == members
    assert all(v[1] == members and v[2] == members[0] for v in views)
    assert reports == [f"3 nodes started together at {POS.uuid}:7: one Primary component, no state transfer"]


def test_two_bring_ups_give_their_nodes_different_gcomm_ids() -> None:
    a = [FakeNode(i, []) for i in (1, 2)]
    b = [FakeNode(i, []) for i in (1, 2)]
    run(a, [])
    run(b, [])
    ids_a = set(view(a[0].host.files[a[0].datadir / "gvwstate.dat"])[1])
    ids_b = set(view(b[0].host.files[b[0].datadir / "gvwstate.dat"])[1])
    assert not ids_a & ids_b


def test_a_node_that_exits_fails_the_wait_naming_it_with_its_own_log() -> None:
    events: list[str] = []
    nodes = [FakeNode(1, events), FakeNode(2, events, dies=True), FakeNode(3, events)]
    with pytest.raises(ComponentError) as caught:
        run(nodes, events)
    msg = str(caught.value)
    assert msg.startswith("node n2 exited while joining; errors from /c/n2/error.log")
    assert "unknown variable 'no_such_option=1'" in msg
    assert events[-1] == "wait n1 for 3"  # failed in the first wait, not after a timeout
