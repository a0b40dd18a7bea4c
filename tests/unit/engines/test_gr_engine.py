"""engines/group_replication/engine.py and node.py's pure parts: NodeHealth from the group's view,
routes, the group name, the allowlist, the chroot command line, the accounts."""

from __future__ import annotations

from pathlib import Path

from clusterbench.engines import make_engine
from clusterbench.engines.base import Credentials
from clusterbench.engines.group_replication.engine import GroupReplicationEngine, accounts
from clusterbench.engines.group_replication.node import chroot_argv, health_of, view_counter
from clusterbench.engines.group_replication.status import GroupMember, GRStatus, GtidSet
from clusterbench.spec.topology import Topology

GROUP = "6f1c3a2e-0c4b-4d8e-9a51-7f00d1b2c3e4"
CREDS = Credentials("cbadmin", "adm", "bench", "app", "cbmon", "mon", "cbrepl", "rpl")


def topo(**extra: object) -> Topology:
    data: dict[str, object] = {
        "cluster": {"name": "grlab", "subnet": "198.18.50.0/24"},
        "engine": {"kind": "group_replication"},
    }
    data.update(extra)
    return Topology.model_validate(data)


def status(
    role: str = "PRIMARY", states: tuple[str, ...] = ("ONLINE", "ONLINE", "ONLINE"), ro: bool = False
) -> GRStatus:
    members = tuple(
        GroupMember(f"u{i}", f"198.18.50.{11 + i}", 3306, st, role if i == 0 else "SECONDARY")
        for i, st in enumerate(states)
    )
    return GRStatus("u0", members, None, GtidSet.parse(f"{GROUP}:1-7"), ro, GROUP)


def test_make_engine_picks_group_replication() -> None:
    e = make_engine(topo())
    assert isinstance(e, GroupReplicationEngine)
    assert (e.kind, e.label) == ("group_replication", "MySQL Group Replication")


def test_health_of_an_online_primary() -> None:
    h = health_of(status(), single_primary=True)
    assert (h.state, h.in_quorum, h.ready, h.writable, h.role, h.size) == (
        "ONLINE",
        True,
        True,
        True,
        "PRIMARY",
        3,
    )
    assert (h.position, h.progress) == (f"{GROUP}:1-7", 7)
    assert h.members == "198.18.50.11,198.18.50.12,198.18.50.13"


def test_health_of_a_secondary_and_of_a_primary_still_read_only() -> None:
    assert not health_of(status("SECONDARY", ro=True), single_primary=True).writable
    assert not health_of(status(ro=True), single_primary=True).writable


def test_health_without_a_majority() -> None:
    h = health_of(status(states=("ONLINE", "UNREACHABLE", "UNREACHABLE")), single_primary=True)
    assert (h.state, h.in_quorum, h.ready, h.writable) == ("ONLINE", False, False, False)
    assert h.members == "198.18.50.11"


def test_multi_primary_has_no_roles_and_every_ready_member_writes() -> None:
    h = health_of(status("PRIMARY"), single_primary=False)
    assert (h.role, h.writable) == ("", True)


def test_view_counter() -> None:
    assert view_counter("17955123266929474:5") == 5
    assert view_counter("") == -1


def test_routes_single_and_multi_primary() -> None:
    write, read = make_engine(topo()).routes()
    assert (write.name, write.port_offset, write.check_path, write.balance) == ("write", 0, "/write", "first")
    assert (read.name, read.port_offset, read.check_path, read.balance) == ("read", 1, "/read", None)
    write, _ = make_engine(topo(engine={"kind": "group_replication", "mode": "multi-primary"})).routes()
    assert write.balance is None  # the topology's algorithm: every member takes writes


def test_group_name_is_a_uuid_per_cluster_incarnation() -> None:
    e = GroupReplicationEngine(topo(), root=Path("/nonexistent"))
    a = e.group_name(CREDS)
    assert a == e.group_name(CREDS) and len(a) == 36
    other = Credentials("cbadmin", "another", "bench", "app", "cbmon", "mon", "cbrepl", "rpl")
    assert e.group_name(other) != a


def test_allowlist_is_the_subnet_locally() -> None:
    e = GroupReplicationEngine(topo(), root=Path("/nonexistent"))
    assert e.allowlist() == ("198.18.50.0/24",)
    cfg = e.member_config(2, Path("/d/n2"), CREDS)
    assert (cfg.address, cfg.peers, cfg.single_primary) == (
        "198.18.50.12",
        ("198.18.50.11", "198.18.50.12", "198.18.50.13"),
        True,
    )


def test_required_names_the_rootfs_and_how_to_build_it() -> None:
    need = GroupReplicationEngine(topo(), root=Path("/r/mysql")).required()
    assert need["/r/mysql/usr/sbin/mysqld"].endswith("`make setup` or `clusterbench rootfs build`")


def test_chroot_command_line() -> None:
    argv = chroot_argv(Path("/r"), Path("/h/n1"), ["/usr/sbin/mysqld", "--defaults-file=/cb/my.cnf"])
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert argv[4:6] == ["sh", "-c"]
    assert argv[6] == 'd=$1; r=$2; shift 2; mount --rbind "$d" "$r/cb" && exec chroot "$r" "$@"'
    assert argv[7:] == ["sh", "/h/n1", "/r", "/usr/sbin/mysqld", "--defaults-file=/cb/my.cnf"]


def test_accounts_lock_root_and_make_the_recovery_account() -> None:
    sql = accounts(CREDS)
    assert "CREATE USER 'cbrepl'@'%' IDENTIFIED BY 'rpl';" in sql
    assert "GRANT SELECT ON performance_schema.* TO 'cbmon'@'%';" in sql
    assert sql[-1] == "ALTER USER 'root'@'localhost' ACCOUNT LOCK;"


def test_accounts_make_the_web_account_on_the_schema_only() -> None:
    with_web = Credentials("cbadmin", "adm", "bench", "app", "cbmon", "mon", "cbrepl", "rpl", "cbweb", "web")
    web = [s for s in accounts(with_web) if "cbweb" in s]
    assert web == [
        "CREATE USER 'cbweb'@'localhost' IDENTIFIED BY 'web';",
        "GRANT SELECT, INSERT ON sbtest.* TO 'cbweb'@'localhost';",
        "CREATE USER 'cbweb'@'%' IDENTIFIED BY 'web';",
        "GRANT SELECT, INSERT ON sbtest.* TO 'cbweb'@'%';",
    ]
    assert not [s for s in accounts(CREDS) if "cbweb" in s]
