"""engines/group_replication/group.py: the heal rules over a simulated group (never two primaries).

`World` plays Group Replication's membership at the level the rules need: which mysqld runs,
which members form a group (with quorum or not), what each has executed. Members are fakes of
GRNode's surface; the clock never sleeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import pytest

from clusterbench.engines.group_replication.group import GRGroup, join_kind
from clusterbench.engines.group_replication.node import GRNode
from clusterbench.engines.group_replication.status import GroupMember, GRStatus, GtidSet
from clusterbench.errors import ClusterStateError, ComponentError
from clusterbench.hosts.base import ProcessRef
from clusterbench.spec.engine import MySQLSettings
from tests.unit.fakes import FakeClock

UUID = "6f1c3a2e-0c4b-4d8e-9a51-7f00d1b2c3e4"


@dataclass
class Group:
    """One group incarnation: its view (member indexes) and who in it is reachable from whom."""

    view: list[int]
    primary: int
    alive_in_view: set[int] = field(default_factory=set)


class World:
    def __init__(self, n: int) -> None:
        self.n = n
        self.running: set[int] = set()
        self.groups: list[Group] = []
        self.executed: dict[int, int] = dict.fromkeys(range(1, n + 1), 0)
        self.log: list[str] = []
        self.error: set[int] = set()  # expelled members that heard of it: ERROR, in no group
        # members the group provisions by a clone at their next join: mysqld restarts itself at the
        # clone's end (a new PID under its supervisor) with Group Replication off
        self.clone: set[int] = set()
        self.restarts: dict[int, int] = dict.fromkeys(range(1, n + 1), 0)

    def group_of(self, i: int) -> Group | None:
        return next((g for g in self.groups if i in g.alive_in_view), None)

    def primaries_with_quorum(self) -> list[int]:
        return [
            g.primary
            for g in self.groups
            if 2 * len(g.alive_in_view) > len(g.view) and g.primary in g.alive_in_view
        ]

    def crash(self, i: int) -> None:
        self.running.discard(i)
        g = self.group_of(i)
        if g is not None:
            g.alive_in_view.discard(i)
            # The majority expels a dead member; a minority cannot change its view.
            if 2 * len(g.alive_in_view) > len(g.view):
                g.view.remove(i)
                if g.primary == i and g.alive_in_view:
                    g.primary = min(g.alive_in_view)
        self.groups = [g for g in self.groups if g.alive_in_view]


@dataclass
class Cfg:
    index: int
    address: str
    settings: MySQLSettings


class FakeMember:
    def __init__(self, world: World, index: int) -> None:
        self.w = world
        self.index = index
        self.cfg = Cfg(index, f"198.18.50.{10 + index}", MySQLSettings())
        self.name = f"n{index}"

    log_offset = 0

    def alive(self) -> bool:
        return self.index in self.w.running

    def restarting(self) -> bool:
        return False

    @property
    def proc(self) -> ProcessRef:
        return ProcessRef(1000 * self.index + self.w.restarts[self.index], 1)

    def query(self, sql: str, timeout: float = 2.0) -> list[tuple[object, ...]]:
        if "clone_status" not in sql or not self.w.restarts[self.index]:
            return []
        return [("Completed", "198.18.50.11:3306", 43.25, "", 212 * 2**20)]

    def error_log_tail(self, lines: int = 8) -> str:
        return ""

    def start(self, init_statements: list[str] | None = None) -> None:
        self.w.log.append(f"start n{self.index}")
        self.w.running.add(self.index)

    def wait_sql(self, timeout: float) -> None:
        assert self.alive()

    def kill(self) -> str:
        self.w.crash(self.index)
        return "killed"

    def status(self) -> GRStatus | None:
        if not self.alive():
            return None
        if self.index in self.w.error:
            me = GroupMember(f"uuid-{self.index}", self.cfg.address, 3306, "ERROR", "")
            return GRStatus(f"uuid-{self.index}", (me,), None, GtidSet(), True)
        g = self.w.group_of(self.index)
        members: tuple[GroupMember, ...] = ()
        if g is not None:
            members = tuple(
                GroupMember(
                    f"uuid-{i}",
                    f"198.18.50.{10 + i}",
                    3306,
                    "ONLINE" if i in g.alive_in_view else "UNREACHABLE",
                    "PRIMARY" if i == g.primary else "SECONDARY",
                )
                for i in g.view
            )
        return GRStatus(f"uuid-{self.index}", members, None, GtidSet(), self.index != (g.primary if g else 0))

    def stop(self, timeout: float = 60.0) -> str:
        self.w.log.append(f"stop n{self.index}")
        self.w.crash(self.index)
        return "stopped"

    def leave_group(self, timeout: float = 60.0) -> None:
        self.w.log.append(f"leave n{self.index}")
        self.w.error.discard(self.index)
        g = self.w.group_of(self.index)
        if g is not None:
            g.alive_in_view.discard(self.index)
            g.view.remove(self.index)
            self.w.groups = [x for x in self.w.groups if x.alive_in_view]

    def start_group(self, *, bootstrap: bool) -> None:
        self.w.log.append(f"{'bootstrap' if bootstrap else 'join'} n{self.index}")
        if bootstrap:
            assert self.w.group_of(self.index) is None
            self.w.groups.append(Group([self.index], self.index, {self.index}))
            return
        assert self.index not in self.w.error and self.w.group_of(self.index) is None
        if self.index in self.w.clone:  # cloned: mysqld restarted, Group Replication off
            self.w.clone.discard(self.index)
            self.w.restarts[self.index] += 1
            return
        target = next(g for g in self.w.groups if 2 * len(g.alive_in_view) > len(g.view))
        assert self.cfg.address not in {f"198.18.50.{10 + i}" for i in target.view}, "same uuid still in view"
        target.view.append(self.index)
        target.alive_in_view.add(self.index)

    def wait_state(self, want: str, timeout: float, *, size: int | None = None) -> GRStatus:
        st = self.status()
        assert st is not None and st.state == want, (self.index, st)
        return st

    def start_health_agent(self) -> None:
        pass

    def error_log_size(self) -> int:
        return 0

    def error_log_since(self, offset: int) -> str:
        return "Distributed recovery will transfer data using: Incremental recovery from a group donor"

    def executed(self) -> GtidSet:
        k = self.w.executed[self.index]
        return GtidSet.parse(f"{UUID}:1-{k}") if k else GtidSet()


def make(n: int = 3) -> tuple[World, GRGroup]:
    w = World(n)
    members = [FakeMember(w, i) for i in range(1, n + 1)]
    for m in members:
        m.start()
    w.groups = [Group(list(range(1, n + 1)), 1, set(range(1, n + 1)))]
    w.log.clear()
    return w, GRGroup(cast(list[GRNode], members), clock=FakeClock())


def one_group_of_all(w: World) -> bool:
    return len(w.groups) == 1 and sorted(w.groups[0].alive_in_view) == list(range(1, w.n + 1))


def test_a_join_that_ends_in_a_clone_starts_group_replication_again_and_says_so() -> None:
    """MySQL restarts itself at the end of a clone (its supervisor starts it again) with Group
    Replication off: the join goes on with a second START, and the line names the clone."""
    w, g = make()
    g.member(3).kill()
    w.clone.add(3)
    line = g.rejoin(g.member(3))
    assert line.startswith("n3 rejoined by clone from 198.18.50.11:3306 (212.0 MiB in 43.2 s), then ")
    assert w.log.count("join n3") == 2 and w.restarts[3] == 1
    assert one_group_of_all(w)


def test_heal_after_one_kill_rejoins_it() -> None:
    w, g = make()
    g.member(3).kill()
    out = g.heal()
    assert out == ["n3 rejoined by incremental recovery in 0.0 s"]
    assert w.log == ["start n3", "join n3"]
    assert one_group_of_all(w) and w.primaries_with_quorum() == [1]


def test_heal_after_losing_the_majority_reboots_the_group_from_the_most_advanced() -> None:
    w, g = make()
    w.executed.update({1: 50, 2: 50, 3: 60})
    g.member(1).kill()
    g.member(2).kill()
    assert w.primaries_with_quorum() == []  # n3 alone in a view of 3: no quorum
    out = g.heal()
    assert out[:2] == [
        "no member is in a group with a majority: rebooting the group",
        "n3 stopped (its group had no majority)",
    ]
    assert w.log[:4] == ["stop n3", "start n1", "start n2", "start n3"]
    assert [x for x in w.log if x.startswith(("bootstrap", "join"))] == ["bootstrap n3", "join n1", "join n2"]
    assert one_group_of_all(w) and w.primaries_with_quorum() == [3]


def test_heal_of_a_partition_never_leaves_two_primaries() -> None:
    """n1, n2 and n3 each cut off alone (no side has a majority): the heal restarts every
    member's mysqld before bootstrapping one group."""
    w, g = make()
    w.groups = [Group([1, 2, 3], 1, {1}), Group([1, 2, 3], 2, {2}), Group([1, 2, 3], 3, {3})]
    out = g.heal()
    assert out[0] == "no member is in a group with a majority: rebooting the group"
    assert [x for x in w.log if x.startswith("stop")] == ["stop n1", "stop n2", "stop n3"]
    assert [x for x in w.log if x.startswith("bootstrap")] == ["bootstrap n1"]
    assert one_group_of_all(w) and len(w.primaries_with_quorum()) == 1


def test_cold_start_after_all_crashed_bootstraps_the_most_advanced() -> None:
    w, g = make()
    w.executed.update({1: 100, 2: 120, 3: 90})
    for m in g.members:
        m.kill()
    out = g.cold_start()
    assert out[:3] == ["n1 has 100 transactions", "n2 has 120 transactions", "n3 has 90 transactions"]
    assert out[3] == "n2 has the most transactions; bootstrapped the group from it"
    assert [x for x in w.log if x.startswith(("bootstrap", "join"))] == ["bootstrap n2", "join n1", "join n3"]
    assert one_group_of_all(w) and w.primaries_with_quorum() == [2]


def test_cold_start_refuses_diverged_histories(monkeypatch: pytest.MonkeyPatch) -> None:
    w, g = make()
    for m in g.members:
        m.kill()
    other = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    sets = {1: f"{UUID}:1-100", 2: f"{UUID}:1-90,{other}:1-5", 3: f"{UUID}:1-50"}
    monkeypatch.setattr(FakeMember, "executed", lambda self: GtidSet.parse(sets[self.index]))
    with pytest.raises(ComponentError) as info:
        g.cold_start()
    assert str(info.value).startswith(
        f"the members' histories diverged (n2 has {other}:1-5, which n1 lacks); refusing to pick a winner"
    )
    assert not any(x.startswith("bootstrap") for x in w.log)


def test_rejoin_without_a_majority_says_what_to_do() -> None:
    w, g = make()
    for m in g.members:
        m.kill()
    with pytest.raises(ClusterStateError) as info:
        g.rejoin(g.member(2))
    assert "run `clusterbench start` to reboot the group" in str(info.value)
    assert w.log == []


def test_join_kind_from_the_error_log() -> None:
    assert join_kind(
        "... Distributed recovery will transfer data using: Incremental recovery from a group donor"
    ) == ("incremental")
    assert (
        join_kind("... Distributed recovery will transfer data using: Cloning from a remote group donor.")
        == "clone"
    )
    assert join_kind("nothing to see") == "none"


# ---------------------------------------------------------------- recover: the end of network faults


def test_recover_waits_for_a_member_that_merges_back_by_itself() -> None:
    """n3 cut off before its suspicion timed out: when the link is back it is the same
    incarnation again, ONLINE in the group, without a rejoin."""
    w, g = make()
    w.groups = [Group([1, 2, 3], 1, {1, 2}), Group([1, 2, 3], 1, {3})]
    clock = g.clock
    assert isinstance(clock, FakeClock)
    clock.at(clock.now() + 2, lambda: setattr(w, "groups", [Group([1, 2, 3], 1, {1, 2, 3})]))
    assert g.recover([3]) == []
    assert w.log == [] and one_group_of_all(w)
    assert 2 <= clock.elapsed < 3


def test_recover_rejoins_an_expelled_member_in_error_at_once() -> None:
    w, g = make()
    w.groups = [Group([1, 2], 1, {1, 2})]
    w.error = {3}
    assert g.recover([3]) == ["n3 rejoined by incremental recovery in 0.0 s (ERROR after the fault)"]
    assert w.log == ["leave n3", "join n3"]
    assert one_group_of_all(w) and w.primaries_with_quorum() == [1]


def test_recover_rejoins_an_old_primary_left_in_a_minority_view_and_never_two_primaries() -> None:
    """The primary n1 was cut off long enough to be expelled; the majority elected n2. n1 still
    calls itself an ONLINE PRIMARY in its minority view (no quorum): after the merge window it
    leaves that view and joins as a secondary."""
    w, g = make()
    w.groups = [Group([2, 3], 2, {2, 3}), Group([1, 2, 3], 1, {1})]
    assert w.primaries_with_quorum() == [2]
    out = g.recover([1])
    assert out == [
        "n1 rejoined by incremental recovery in 0.0 s (ONLINE outside the group 15 s after the fault)"
    ]
    assert w.log == ["leave n1", "join n1"]
    assert one_group_of_all(w) and w.primaries_with_quorum() == [2]


def test_recover_without_a_majority_anywhere_reboots_the_group() -> None:
    w, g = make()
    w.groups = [Group([1, 2, 3], 1, {1}), Group([1, 2, 3], 2, {2}), Group([1, 2, 3], 3, {3})]
    out = g.recover([2, 3])
    assert out[0] == "no member is in a group with a majority: rebooting the group"
    assert one_group_of_all(w) and len(w.primaries_with_quorum()) == 1


def test_heal_of_named_members_leaves_a_member_stopped_on_purpose_stopped() -> None:
    """An experiment runs 4 of 5 members (n5 stopped): the heal of a kill of n2 brings n2 back
    and leaves n5 alone."""
    w, g = make(5)
    g.member(5).stop()
    g.member(2).kill()
    w.log.clear()
    assert [x.split(" in ")[0] for x in g.heal(indexes=[2])] == ["n2 rejoined by incremental recovery"]
    assert 5 not in w.running and sorted(w.groups[0].alive_in_view) == [1, 2, 3, 4]
