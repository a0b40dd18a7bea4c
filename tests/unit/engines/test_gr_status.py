"""engines/group_replication/status.py over rows recorded from real MySQL 9.7.4 members (three
members in namespaces: steady, after 10 s of sysbench, after a kill -9 of the primary, and the
survivor of a lost majority)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clusterbench.engines.group_replication.status import GRStatus, GtidSet, parse_members, parse_status

DATA = Path(__file__).parent.parent / "data" / "gr"
MEMBERS = "SELECT * FROM performance_schema.replication_group_members"
STATS = "SELECT * FROM performance_schema.replication_group_member_stats"
GROUP = "6f1c3a2e-0c4b-4d8e-9a51-7f00d1b2c3e4"
N1, N2, N3 = (
    "f662ddb9-e7e8-11f1-b5ce-de8215b9698e",
    "fa295664-e7e8-11f1-9c3f-3621fa622a1e",
    "fa28ee0f-e7e8-11f1-9e9c-d22a2b7200fe",
)


def recorded(name: str) -> GRStatus:
    d: dict[str, list[dict[str, Any]]] = json.loads((DATA / f"{name}.json").read_text())
    head = next(v for k, v in d.items() if k.startswith("SELECT @@"))[0]
    return parse_status(head["u"], d[MEMBERS], d[STATS], head["g"], head["ro"], GROUP)


def test_a_steady_secondary() -> None:
    st = recorded("steady_n2")
    assert st.server_uuid == N2
    assert (st.state, st.role, st.online, st.super_read_only) == ("ONLINE", "SECONDARY", True, True)
    assert [(m.host, m.state, m.role) for m in st.members] == [
        ("198.18.50.11", "ONLINE", "PRIMARY"),
        ("198.18.50.13", "ONLINE", "SECONDARY"),
        ("198.18.50.12", "ONLINE", "SECONDARY"),
    ]
    assert st.members[0].version == "9.7.4" and st.members[0].port == 3306
    assert (st.size, st.reachable, st.has_quorum) == (3, 3, True)
    assert [m.host for m in st.primaries] == ["198.18.50.11"]
    assert st.view_id == "17955123266929474:3"
    assert st.gtid_executed == GtidSet()  # the seeded datadirs start with nothing executed
    assert not st.writable


def test_the_primary_after_load() -> None:
    st = recorded("after_load_n1")
    assert (st.state, st.role, st.super_read_only, st.writable) == ("ONLINE", "PRIMARY", False, True)
    assert str(st.gtid_executed) == f"{GROUP}:1-2044"
    assert st.gtid_executed.count() == 2044
    assert st.stats is not None and st.stats.local_proposed == 2044
    assert (st.certification_queue, st.applier_queue) == (0, 0)


def test_after_the_primary_was_killed_a_new_one_is_elected() -> None:
    st = recorded("after_kill_n2")
    assert [(m.host, m.role) for m in st.members] == [
        ("198.18.50.13", "PRIMARY"),
        ("198.18.50.12", "SECONDARY"),
    ]
    assert (st.size, st.has_quorum, st.view_id) == (2, True, "17955123266929474:4")
    # The new primary's writes come from its own block of GTID numbers (assignment block size 1M).
    assert str(st.gtid_executed) == f"{GROUP}:1-2044:1000001"
    assert st.gtid_executed.count() == 2045


def test_a_survivor_of_a_lost_majority_has_no_quorum() -> None:
    st = recorded("minority_n1")
    assert (st.state, st.online) == ("ONLINE", True)  # it calls itself ONLINE...
    assert [(m.host, m.state) for m in st.members] == [
        ("198.18.50.11", "ONLINE"),
        ("198.18.50.13", "UNREACHABLE"),
        ("198.18.50.12", "UNREACHABLE"),
    ]
    assert (st.size, st.reachable, st.has_quorum) == (3, 1, False)  # ...but cannot commit
    # The unreachable primary still holds its role in this view: no primary with quorum here.
    assert [m.host for m in st.members if m.role == "PRIMARY"] == ["198.18.50.13"]
    assert st.primaries == ()  # an UNREACHABLE member is no ONLINE primary
    assert not st.writable


def test_a_server_outside_any_group() -> None:
    """Before START GROUP_REPLICATION (or after STOP), the table has one row: this server,
    OFFLINE, with no role."""
    rows = [
        {
            "CHANNEL_NAME": "group_replication_applier",
            "MEMBER_ID": N1,
            "MEMBER_HOST": "198.18.50.11",
            "MEMBER_PORT": 3306,
            "MEMBER_STATE": "OFFLINE",
            "MEMBER_ROLE": "",
            "MEMBER_VERSION": "",
            "MEMBER_COMMUNICATION_STACK": "XCom",
        }
    ]
    st = parse_status(N1, rows, [], f"{GROUP}:1-10", "1")
    assert (st.state, st.role, st.in_group, st.size, st.has_quorum) == ("OFFLINE", "", False, 0, False)
    assert st.stats is None and st.view_id == ""
    assert parse_status(N1, [], [], "", 0).state == "OFFLINE"


def test_columns_are_read_by_name_in_any_case() -> None:
    (m,) = parse_members(
        [{"member_id": N3, "member_host": "h", "member_port": None, "member_state": "recovering"}]
    )
    assert (m.member_id, m.host, m.port, m.state, m.role) == (N3, "h", 0, "RECOVERING", "")
