"""A Group Replication group: bring-up, rejoin, cold start and heal over its members.

The rules (never two primaries):
- A member joins only a group that has a majority; with none, a member is never started on its
  own: `cold_start` reboots the group.
- A group is only bootstrapped when no member is in any group: from the member with the most
  executed (and received) GTIDs, and only if its set contains every other member's; diverged
  members are reported, never silently overwritten.
- After a lost majority the group is rebooted: every member still in the blocked group is
  restarted (Group Replication off), then the cold start above. (Forcing the survivors'
  membership with group_replication_force_members worked by hand on a surviving secondary, but
  on a surviving primary the statement was still waiting after 60 s: not used.)
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pymysql

from clusterbench.clock import Clock, SystemClock
from clusterbench.engines.group_replication.node import GRNode
from clusterbench.engines.group_replication.status import (
    ERROR,
    OFFLINE,
    ONLINE,
    RECOVERING,
    GRStatus,
    GtidSet,
    most_advanced,
)
from clusterbench.errors import ClusterStateError, ComponentError

log = logging.getLogger(__name__)

Report = Callable[[str], None]
Seed = Callable[[GRNode, list[GRNode]], None]
Hook = Callable[[GRNode], None]
READY_TIMEOUT = 120.0
JOIN_TIMEOUT = 180.0
# Bound for a member leaving its group (STOP GROUP_REPLICATION, or mysqld's shutdown) when the
# group may never deliver the view it waits for.
LEAVE_TIMEOUT = 20.0
# mysqld's shutdown in a group without a majority waits for a view that never comes (seen: still
# running after 20 s): SIGTERM, then SIGKILL after this. Its commits are durable either way.
BLOCKED_STOP_TIMEOUT = 5.0
# After a network fault heals, how long a member may take to merge back into the group by
# itself before it is rejoined (one whose suspicion had not timed out is back within ~2 s; one
# that was expelled turns ERROR as soon as it hears the group).
MERGE_SECONDS = 15.0


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Membership:
    """The group as the members that answer see it."""

    statuses: dict[int, GRStatus | None]  # member index -> its own view (None: not answering)

    def majority_view(self) -> tuple[int, GRStatus] | None:
        """A member ONLINE in a view with a reachable majority (the group that can commit)."""
        for i, st in sorted(self.statuses.items()):
            if st is not None and st.online and st.has_quorum:
                return i, st
        return None

    def primaries(self) -> set[str]:
        """Addresses of ONLINE primaries that some member with a majority reports."""
        out: set[str] = set()
        for st in self.statuses.values():
            if st is not None and st.has_quorum:
                out |= {m.host for m in st.primaries}
        return out


def join_kind(log_text: str) -> str:
    """'clone' when the member was provisioned by a clone, 'incremental' when it recovered from
    a donor's binary log, 'none' when neither shows in its error log."""
    low = log_text.lower()
    if "cloning from" in low or "transfer data using: clone" in low or "clone: " in low:
        return "clone"
    if "incremental recovery" in low or "transfer data using: incremental" in low:
        return "incremental"
    return "none"


@dataclass(frozen=True)
class CloneRun:
    """A clone as the recipient's performance_schema.clone_status / clone_progress tell it."""

    state: str
    source: str
    seconds: float | None
    bytes: int
    error: str = ""

    @property
    def failed(self) -> bool:
        return self.state.lower() == "failed"

    def line(self) -> str:
        if self.failed:
            return f"the clone from {self.source} failed: {self.error}"
        took = f" in {self.seconds:.1f} s" if self.seconds is not None else ""
        return f"clone from {self.source} ({self.bytes / 2**20:.1f} MiB{took})"


def clone_run(m: GRNode) -> CloneRun | None:
    """The member's last clone (None when it was never cloned into)."""
    try:
        rows = m.query(
            "SELECT STATE, SOURCE, TIMESTAMPDIFF(MICROSECOND, BEGIN_TIME, END_TIME) / 1e6, ERROR_MESSAGE, "
            "(SELECT COALESCE(SUM(DATA), 0) FROM performance_schema.clone_progress) "
            "FROM performance_schema.clone_status",
            timeout=5.0,
        )
    except pymysql.MySQLError:
        return None
    if not rows:
        return None
    state, source, seconds, error, data = rows[0]
    return CloneRun(str(state), str(source), float(seconds) if seconds is not None else None, int(data or 0),
                    str(error or ""))  # fmt: skip


def clone_donor(log_text: str) -> str:
    """The donor a clone was taken from, as the recipient's error log names it ('' if none)."""
    for line in reversed(log_text.splitlines()):
        low = line.lower()
        if "clone" in low and ("donor" in low or "from" in low):
            m = re.search(r"(\d{1,3}(?:\.\d{1,3}){3}:\d+)", line)
            if m:
                return m.group(1)
    return ""


class GRGroup:
    def __init__(
        self,
        members: list[GRNode],
        clock: Clock | None = None,
        started: Hook | None = None,
        recorded: Hook | None = None,
    ) -> None:
        self.members = members
        self.clock = clock or SystemClock()
        self.started = started or (lambda m: None)  # a mysqld was (re)started: limits, PID
        self.record = recorded or (lambda m: None)  # persist a member's processes

    def member(self, index: int) -> GRNode:
        return next(m for m in self.members if m.index == index)

    def membership(self) -> Membership:
        return Membership({m.index: m.status() for m in self.members})

    # ------------------------------------------------------------------ bring-up

    def bring_up(
        self, statements: list[str], seed: Seed | None, report: Report = _quiet, template: Path | None = None
    ) -> dict[str, float]:
        """Give every member the same initialized datadir, start every mysqld, bootstrap the group
        on member 1 and join the others one after another.

        With `template` (an initialized datadir on this machine), every member starts from a copy
        and gets the accounts (`statements`) at its first start, unlogged. Else member 1 runs
        `mysqld --initialize` with them and `seed` copies its datadir to the others (None: each
        initializes its own). Either way every member starts with the same, empty, executed
        GTID set, so a join recovers only the view changes."""
        t0 = time.monotonic()
        timings: dict[str, float] = {}
        first, rest = self.members[0], self.members[1:]
        for m in self.members:
            m.write_files()
        init: list[str] | None = None
        if template is not None:
            for m in self.members:
                m.seed_from(template)
            init = statements
        else:
            first.initialize(statements)
            timings["initialize"] = time.monotonic() - t0
            if seed is not None:
                seed(first, rest)
            else:
                for m in rest:
                    m.initialize(statements)
        timings["seed"] = time.monotonic() - t0
        try:
            for m in self.members:
                m.start(init)
                self.started(m)
            # member 1 bootstraps the group as soon as it answers, while the others still start
            first.wait_sql(READY_TIMEOUT)
            first.install_metrics_component()
            with ThreadPoolExecutor(max_workers=len(self.members)) as pool:
                starts = [self._start_in_turn(pool, first, 1)]
                timings["bootstrap"] = time.monotonic() - t0
                report(f"n{first.index} bootstrapped the group ({timings['bootstrap']:.1f} s)")
                for size, m in enumerate(rest, start=2):
                    m.wait_sql(READY_TIMEOUT)
                    m.install_metrics_component()
                    starts.append(self._start_in_turn(pool, m, size))
                    report(f"n{m.index} ONLINE ({time.monotonic() - t0:.1f} s)")
                for f in starts:
                    f.result()  # each START's own error, if one failed
        finally:
            for m in self.members:
                m.forget_init()
        for m in self.members:
            m.wait_state(ONLINE, JOIN_TIMEOUT, size=len(self.members))
        timings["online"] = time.monotonic() - t0
        for m in self.members:
            m.start_health_agent()
            self.record(m)
        return timings

    def _start_in_turn(self, pool: ThreadPoolExecutor, m: GRNode, size: int) -> Future[None]:
        """START GROUP_REPLICATION on `m` (the bootstrap when it is the first member), returning
        as soon as the first member's view has `size` members ONLINE. The statement itself
        returns about 1 s after that, so the next member starts meanwhile; starting every joiner at
        once instead makes the group retry the joins (measured: 7 s more for two). The view is
        read from performance_schema.replication_group_members alone: a member's statistics
        table waits for its START."""
        started = pool.submit(m.start_group, bootstrap=size == 1)
        view = self.members[0]
        deadline = self.clock.now() + JOIN_TIMEOUT
        while not started.done():
            if view.online_count() >= size:
                return started
            if not m.alive() or self.clock.now() > deadline:
                break
            self.clock.sleep(0.05)
        if started.done():
            started.result()
        m.wait_state(ONLINE, JOIN_TIMEOUT, size=size)
        return started

    # ------------------------------------------------------------------ one member

    def rejoin(self, m: GRNode, timeout: float = JOIN_TIMEOUT) -> str:
        """Start a stopped or killed member and join it to the group that has a majority; an
        expelled member (ERROR, OFFLINE) leaves its old group state first."""
        t0 = self.clock.now()
        majority = Membership({o.index: o.status() for o in self.members if o is not m}).majority_view()
        if majority is None:
            raise ClusterStateError(
                f"no member is ONLINE in a group with a majority, so n{m.index} has nothing to join; "
                "run `clusterbench start` to reboot the group from the member with the most transactions"
            )
        if not m.alive():
            m.start()
            self.started(m)
            m.wait_sql(READY_TIMEOUT)
        st = m.status()
        if st is not None and st.online and st.has_quorum:
            m.start_health_agent()
            self.record(m)
            return f"n{m.index} already ONLINE"
        if st is not None and st.state != "OFFLINE":
            # ERROR after an expel, or a minority view that never healed: leave it first; a member
            # that cannot leave in time is restarted (Group Replication is off after a start).
            try:
                m.leave_group(timeout=LEAVE_TIMEOUT)
            except (pymysql.MySQLError, OSError):
                m.stop(timeout=LEAVE_TIMEOUT)
                m.start()
                self.started(m)
                m.wait_sql(READY_TIMEOUT)
        # The group refuses a second member with the same server_uuid: wait until the old
        # incarnation (killed, still UNREACHABLE in the view) has been expelled.
        self._wait_expelled(m, self._settle_seconds() + 10)
        offset = m.error_log_size()
        clone = self.join(m, timeout)
        m.start_health_agent()
        self.record(m)
        if clone is not None:
            took = self.clock.now() - t0
            return f"n{m.index} rejoined by {clone.line()}, then incremental recovery, in {took:.1f} s"
        kind = join_kind(m.error_log_since(offset))
        how = f" by {kind} recovery" if kind != "none" else ""
        return f"n{m.index} rejoined{how} in {self.clock.now() - t0:.1f} s"

    def join(self, m: GRNode, timeout: float) -> CloneRun | None:
        """START GROUP_REPLICATION on a running member and wait until it is ONLINE. When the group
        provisions it by a clone, mysqld restarts itself at the clone's end (its supervisor starts
        it again) with Group Replication off: it is started again here, and the member recovers
        the rest incrementally. Returns the clone, if there was one."""
        deadline = self.clock.now() + timeout
        assert m.proc is not None
        pid = m.proc.pid
        m.start_group(bootstrap=False)
        clone: CloneRun | None = None
        while self.clock.now() < deadline:
            if not m.alive():
                if m.restarting():  # the clone is done and mysqld is starting again
                    self.clock.sleep(0.2)
                    continue
                raise ComponentError(self._exit_line(m))
            if m.proc is not None and m.proc.pid != pid:  # restarted after a clone
                pid = m.proc.pid
                self.started(m)
                m.wait_sql(READY_TIMEOUT)
                clone = clone_run(m)
                if clone is not None and clone.failed:
                    raise ComponentError(f"n{m.index}: {clone.line()}; see {m.error_log}")
                m.start_group(bootstrap=False)
                continue
            st = m.status()
            if st is not None and st.state == ONLINE and st.has_quorum:
                return clone
            if st is not None and st.state == ERROR:
                raise ComponentError(self._exit_line(m, "went to ERROR while joining"))
            self.clock.sleep(0.1)
        raise ComponentError(
            f"n{m.index} not ONLINE after {timeout:g} s; see {m.error_log}: {m.error_log_tail(3)}"
        )

    @staticmethod
    def _exit_line(m: GRNode, what: str = "exited while joining") -> str:
        """Why a join failed, with the clone's donor and error when a clone was under way."""
        tail = m.error_log_tail(3)
        donor = clone_donor(m.error_log_since(m.log_offset or 0))
        via = f" during a clone from {donor}" if donor else ""
        return f"mysqld of n{m.index} {what}{via}; see {m.error_log}: {tail}"

    # ------------------------------------------------------------------ whole group

    def cold_start(self, report: Report = _quiet) -> list[str]:
        """Reboot the group after a complete outage (or when no member has a majority): start
        every mysqld, bootstrap from the member with the most executed GTIDs, join the others."""
        out: list[str] = []
        majority = self.membership().majority_view()
        if majority is not None:
            out += [self.rejoin(m) for m in self.members if not self._in_view(m, majority[1])]
            return out or [f"all {len(self.members)} members already ONLINE"]
        # Nobody has a majority: what is left of any old group goes before positions are compared.
        # A member blocked in a minority does not reliably leave (STOP GROUP_REPLICATION and
        # group_replication_force_members wait for a view it cannot get; seen: still waiting
        # after 60 s): its mysqld is restarted instead, and Group Replication stays off at start.
        for m in self.members:
            st = m.status() if m.alive() else None
            if m.alive() and (st is None or st.state != "OFFLINE"):
                out.append(f"n{m.index} {m.stop(timeout=BLOCKED_STOP_TIMEOUT)} (its group had no majority)")
                report(out[-1])
        for m in self.members:
            if not m.alive():
                m.start()
                self.started(m)
        for m in self.members:
            m.wait_sql(READY_TIMEOUT)
        sets: dict[int, GtidSet] = {m.index: m.executed() for m in self.members}
        for i, s in sorted(sets.items()):
            out.append(f"n{i} has {s.count()} transactions")
        best, diverged = most_advanced(sets)
        assert best is not None
        if diverged:
            extra = "; ".join(f"n{j} has {sets[j] - sets[best]}" for j in diverged)
            raise ComponentError(
                f"the members' histories diverged ({extra}, which n{best} lacks); refusing to pick a winner: "
                "inspect them (`clusterbench sql N`), or recreate the cluster"
            )
        first = self.member(best)
        first.start_group(bootstrap=True)
        first.wait_state(ONLINE, 60)
        first.start_health_agent()
        self.record(first)
        out.append(f"n{best} has the most transactions; bootstrapped the group from it")
        report(out[-1])
        for m in self.members:
            if m is not first:
                out.append(self.rejoin(m))
                report(out[-1])
        return out

    def heal(self, report: Report = _quiet, indexes: Sequence[int] | None = None) -> list[str]:
        """Bring members back into one group with a majority (the heal of kill and stop faults):
        the given ones (default: all) and every running member outside the majority rejoin; with
        no majority, reboot the group from the member with the most transactions (never two
        primaries: every member of the blocked group is restarted first). A member stopped on
        purpose and not named stays stopped."""
        out: list[str] = []
        if not any(m.alive() for m in self.members):
            return self.cold_start(report)
        majority = self._wait_majority(self._settle_seconds())
        if majority is None:
            out.append("no member is in a group with a majority: rebooting the group")
            report(out[-1])
            return out + self.cold_start(report)
        _, view = majority
        wanted = set(indexes) if indexes is not None else {m.index for m in self.members}
        for m in self.members:
            if (m.index in wanted or m.alive()) and not self._in_view(m, view):
                out.append(self.rejoin(m))
                report(out[-1])
        return out

    def recover(
        self, indexes: Sequence[int], report: Report = _quiet, timeout: float = JOIN_TIMEOUT
    ) -> list[str]:
        """The end of a network, pause or throttle fault on these members. One whose suspicion
        had not timed out when its link came back merges back by itself, as the same incarnation
        (within a second or two). One the majority expelled meanwhile learns it when it hears
        the group again and goes to ERROR (super_read_only); its automatic rejoin attempts are
        minutes apart, so it rejoins now. One still ONLINE in a minority view after MERGE_SECONDS
        (it never heard of its expel) rejoins too. A member RECOVERING (catching up after a
        rejoin) is waited for. With no majority anywhere after MERGE_SECONDS, the group is
        rebooted (heal(): never two primaries)."""
        out: list[str] = []
        t0 = self.clock.now()
        pending = sorted(set(indexes))
        while pending:
            now = self.clock.now()
            merged = now - t0 >= MERGE_SECONDS
            ms = self.membership()
            majority = ms.majority_view()
            if majority is None:
                if merged:
                    return out + self.heal(report, indexes=pending)
                self.clock.sleep(0.2)
                continue
            view = majority[1]
            still = []
            for i in pending:
                m = self.member(i)
                st = ms.statuses.get(i)
                if st is not None and st.online and st.has_quorum and self._in_view(m, view):
                    continue
                recovering = st is not None and st.state == RECOVERING and now - t0 < timeout
                if not m.alive():
                    why = "not running"
                elif st is not None and st.state in (ERROR, OFFLINE):
                    why = f"{st.state} after the fault"
                elif merged and not recovering:
                    where = "not answering" if st is None else f"{st.state} outside the group"
                    why = f"{where} {MERGE_SECONDS:g} s after the fault"
                else:
                    still.append(i)
                    continue
                out.append(f"{self.rejoin(m, timeout)} ({why})")
                report(out[-1])
            pending = still
            if pending:
                self.clock.sleep(0.2)
        return out

    def _settle_seconds(self) -> float:
        """How long a healed partition may take to merge back by itself: expel timeout plus the
        suspicion period (~5 s) and some slack."""
        s = self.members[0].cfg.settings
        return float(s.member_expel_timeout) + 10.0

    def _wait_expelled(self, m: GRNode, timeout: float) -> None:
        deadline = self.clock.now() + timeout
        while self.clock.now() < deadline:
            found = Membership({o.index: o.status() for o in self.members if o is not m}).majority_view()
            if found is None or not any(x.host == m.cfg.address for x in found[1].members):
                return
            self.clock.sleep(0.1)

    def _wait_majority(self, timeout: float) -> tuple[int, GRStatus] | None:
        deadline = self.clock.now() + timeout
        while True:
            found = self.membership().majority_view()
            if found is not None or self.clock.now() >= deadline:
                return found
            self.clock.sleep(0.2)

    @staticmethod
    def _in_view(m: GRNode, view: GRStatus) -> bool:
        return any(x.host == m.cfg.address and x.state == ONLINE for x in view.members) and m.alive()
