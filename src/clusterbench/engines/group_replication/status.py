"""Pure parsing of Group Replication state: performance_schema.replication_group_members and
replication_group_member_stats rows, and GTID sets, into typed values. No I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# MEMBER_STATE values (MySQL 8.0 and later).
ONLINE = "ONLINE"
RECOVERING = "RECOVERING"
OFFLINE = "OFFLINE"
ERROR = "ERROR"
UNREACHABLE = "UNREACHABLE"
PRIMARY = "PRIMARY"
SECONDARY = "SECONDARY"

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_TAG = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")


class GtidParseError(ValueError):
    pass


@dataclass(frozen=True)
class GtidSet:
    """A set of GTIDs: source (a server UUID, or 'uuid:tag' for MySQL 8.3+ tagged GTIDs) ->
    sorted, merged, inclusive intervals of transaction numbers."""

    intervals: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    @staticmethod
    def parse(text: str | None) -> GtidSet:
        """'uuid:1-5:7,\\nuuid2:1-3' or with tags 'uuid:1-3:tag:1-2'; '' is the empty set."""
        out: dict[str, list[tuple[int, int]]] = {}
        for part in (text or "").replace("\n", "").split(","):
            part = part.strip()
            if not part:
                continue
            items = part.split(":")
            uuid = items[0].strip().lower()
            if not _UUID.match(uuid):
                raise GtidParseError(f"'{items[0]}' is not a server UUID in GTID set {text!r}")
            source = uuid
            for item in items[1:]:
                item = item.strip()
                if item and item[0].isdigit():
                    lo, _, hi = item.partition("-")
                    try:
                        a, b = int(lo), int(hi or lo)
                    except ValueError:
                        raise GtidParseError(f"'{item}' is not an interval in GTID set {text!r}") from None
                    if a < 1 or b < a:
                        raise GtidParseError(f"'{item}' is not an interval in GTID set {text!r}")
                    out.setdefault(source, []).append((a, b))
                elif _TAG.match(item):
                    source = f"{uuid}:{item.lower()}"
                else:
                    raise GtidParseError(f"'{item}' is neither an interval nor a tag in GTID set {text!r}")
        return GtidSet({k: _merge(v) for k, v in out.items() if v})

    def count(self) -> int:
        return sum(b - a + 1 for ivs in self.intervals.values() for a, b in ivs)

    def __len__(self) -> int:
        return self.count()

    def __bool__(self) -> bool:
        return bool(self.intervals)

    def __str__(self) -> str:
        """MySQL's own format: sources sorted, intervals as a-b or a."""
        parts = []
        for source in sorted(self.intervals):
            ivs = ":".join(f"{a}-{b}" if b > a else f"{a}" for a, b in self.intervals[source])
            parts.append(f"{source}:{ivs}")
        return ",".join(parts)

    def union(self, other: GtidSet) -> GtidSet:
        keys = set(self.intervals) | set(other.intervals)
        return GtidSet({k: _merge([*self.intervals.get(k, ()), *other.intervals.get(k, ())]) for k in keys})

    def __or__(self, other: GtidSet) -> GtidSet:
        return self.union(other)

    def issubset(self, other: GtidSet) -> bool:
        for source, ivs in self.intervals.items():
            theirs = other.intervals.get(source, ())
            for a, b in ivs:
                if not any(c <= a and b <= d for c, d in theirs):
                    return False
        return True

    def __le__(self, other: GtidSet) -> bool:
        return self.issubset(other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return dict(self.intervals) == dict(other.intervals)

    def __hash__(self) -> int:
        return hash(str(self))

    def difference(self, other: GtidSet) -> GtidSet:
        """The GTIDs in this set and not in `other`."""
        out: dict[str, list[tuple[int, int]]] = {}
        for source, ivs in self.intervals.items():
            theirs = other.intervals.get(source, ())
            for a, b in ivs:
                pieces = [(a, b)]
                for c, d in theirs:
                    nxt = []
                    for x, y in pieces:
                        if d < x or c > y:
                            nxt.append((x, y))
                            continue
                        if x < c:
                            nxt.append((x, c - 1))
                        if d < y:
                            nxt.append((d + 1, y))
                    pieces = nxt
                out.setdefault(source, []).extend(pieces)
        return GtidSet({k: _merge(v) for k, v in out.items() if v})

    def __sub__(self, other: GtidSet) -> GtidSet:
        return self.difference(other)


def _merge(ivs: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ivs):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


@dataclass(frozen=True)
class GroupMember:
    """One row of performance_schema.replication_group_members, as one member sees it."""

    member_id: str
    host: str
    port: int
    state: str  # ONLINE, RECOVERING, OFFLINE, ERROR, UNREACHABLE
    role: str  # PRIMARY, SECONDARY, or '' when not in a group
    version: str = ""

    @property
    def online(self) -> bool:
        return self.state == ONLINE

    @property
    def primary(self) -> bool:
        return self.state == ONLINE and self.role == PRIMARY


@dataclass(frozen=True)
class MemberStats:
    """One row of performance_schema.replication_group_member_stats."""

    member_id: str
    view_id: str
    certification_queue: int  # COUNT_TRANSACTIONS_IN_QUEUE: waiting for conflict detection
    applier_queue: int  # COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE: certified, not yet applied
    checked: int
    conflicts: int
    remote_applied: int
    local_proposed: int
    local_rollback: int


def _text(v: Any) -> str:
    if v is None:
        return ""
    return v.decode() if isinstance(v, bytes) else str(v)


def _row(row: Mapping[str, Any]) -> dict[str, str]:
    return {str(k).upper(): _text(v) for k, v in row.items()}


def _int(v: str | None, default: int = 0) -> int:
    if not v:
        return default
    try:
        return int(v)
    except ValueError:
        return default


def parse_members(rows: Iterable[Mapping[str, Any]]) -> list[GroupMember]:
    """Rows of `SELECT * FROM performance_schema.replication_group_members` as dicts (column
    name -> value). A server whose Group Replication never started shows one row with an empty
    MEMBER_ID... or its own id, state OFFLINE and no role: kept as is."""
    return [_member(_row(raw)) for raw in rows]


def _member(r: dict[str, str]) -> GroupMember:
    return GroupMember(
        member_id=r.get("MEMBER_ID", ""),
        host=r.get("MEMBER_HOST", ""),
        port=_int(r.get("MEMBER_PORT")),
        state=r.get("MEMBER_STATE", "").upper(),
        role=r.get("MEMBER_ROLE", "").upper(),
        version=r.get("MEMBER_VERSION", ""),
    )


def parse_member_stats(rows: Iterable[Mapping[str, Any]]) -> list[MemberStats]:
    return [_member_stats(_row(raw)) for raw in rows]


def _member_stats(r: dict[str, str]) -> MemberStats:
    return MemberStats(
        member_id=r.get("MEMBER_ID", ""),
        view_id=r.get("VIEW_ID", ""),
        certification_queue=_int(r.get("COUNT_TRANSACTIONS_IN_QUEUE")),
        applier_queue=_int(r.get("COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE")),
        checked=_int(r.get("COUNT_TRANSACTIONS_CHECKED")),
        conflicts=_int(r.get("COUNT_CONFLICTS_DETECTED")),
        remote_applied=_int(r.get("COUNT_TRANSACTIONS_REMOTE_APPLIED")),
        local_proposed=_int(r.get("COUNT_TRANSACTIONS_LOCAL_PROPOSED")),
        local_rollback=_int(r.get("COUNT_TRANSACTIONS_LOCAL_ROLLBACK")),
    )


@dataclass(frozen=True)
class GRStatus:
    """What one member says about itself and its group."""

    server_uuid: str
    members: tuple[GroupMember, ...]
    stats: MemberStats | None  # this member's own row; None outside a group
    gtid_executed: GtidSet
    super_read_only: bool
    group_name: str = ""

    @property
    def me(self) -> GroupMember | None:
        return next((m for m in self.members if m.member_id == self.server_uuid), None)

    @property
    def state(self) -> str:
        """This member's MEMBER_STATE; OFFLINE when it is in no group."""
        me = self.me
        return me.state if me is not None and me.state else OFFLINE

    @property
    def role(self) -> str:
        me = self.me
        return me.role if me is not None and me.state in (ONLINE, RECOVERING) else ""

    @property
    def online(self) -> bool:
        return self.state == ONLINE

    @property
    def in_group(self) -> bool:
        return self.state in (ONLINE, RECOVERING)

    @property
    def view_id(self) -> str:
        return self.stats.view_id if self.stats is not None else ""

    @property
    def size(self) -> int:
        """Members in this member's view (UNREACHABLE ones included until they are expelled)."""
        return len(self.members) if self.in_group else 0

    @property
    def reachable(self) -> int:
        return sum(1 for m in self.members if m.state != UNREACHABLE) if self.in_group else 0

    @property
    def has_quorum(self) -> bool:
        """A majority of this view is reachable from here: the group can commit. A member cut off
        in a minority still says ONLINE about itself; its peers turn UNREACHABLE."""
        return self.in_group and 2 * self.reachable > self.size

    @property
    def primaries(self) -> tuple[GroupMember, ...]:
        return tuple(m for m in self.members if m.primary)

    @property
    def writable(self) -> bool:
        """This member accepts writes now: ONLINE, PRIMARY, not read-only, with quorum."""
        return self.online and self.role == PRIMARY and not self.super_read_only and self.has_quorum

    @property
    def certification_queue(self) -> int:
        return self.stats.certification_queue if self.stats is not None else 0

    @property
    def applier_queue(self) -> int:
        return self.stats.applier_queue if self.stats is not None else 0


def parse_status(
    server_uuid: str,
    member_rows: Iterable[Mapping[str, Any]],
    stats_rows: Iterable[Mapping[str, Any]],
    gtid_executed: str,
    super_read_only: Any,
    group_name: str = "",
) -> GRStatus:
    members = tuple(m for m in parse_members(member_rows) if m.member_id or m.state)
    stats = [s for s in parse_member_stats(stats_rows) if s.member_id == server_uuid]
    return GRStatus(
        server_uuid=server_uuid,
        members=members,
        stats=stats[0] if stats else None,
        gtid_executed=GtidSet.parse(gtid_executed),
        super_read_only=str(super_read_only).upper() in ("1", "ON", "TRUE"),
        group_name=group_name or "",
    )


def most_advanced(sets: Mapping[int, GtidSet]) -> tuple[int | None, list[int]]:
    """For a cold start: the member whose executed set contains every other member's, and the
    members whose sets are not contained in it (diverged: they hold transactions the chosen
    member lacks). With no superset, pick the largest and report the rest as diverged."""
    if not sets:
        return None, []
    best = min(sets, key=lambda i: (-sets[i].count(), i))
    return best, [j for j in sorted(sets) if j != best and not sets[j].issubset(sets[best])]
