"""engines/group_replication/config.py: my.cnf with the recipe's settings and traps, the HAProxy
health check (run for real with a stand-in client), account and start statements."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from clusterbench.engines.group_replication.config import (
    RECOVERY_PRIVILEGES,
    Account,
    MemberConfig,
    account_sql,
    render_client_cnf,
    render_healthcheck,
    render_my_cnf,
    start_sql,
)
from clusterbench.spec.engine import MySQLSettings

DIR = Path("/var/lib/clusterbench/clusters/grlab/n2")
PEERS = ("198.18.50.11", "198.18.50.12", "198.18.50.13")
GROUP = "6f1c3a2e-0c4b-4d8e-9a51-7f00d1b2c3e4"


def member(settings: MySQLSettings | None = None, *, single: bool = True, d: Path = DIR) -> MemberConfig:
    return MemberConfig(
        cluster_name="grlab",
        index=2,
        address="198.18.50.12",
        peers=PEERS,
        dir=d,
        group_name=GROUP,
        allowlist=("198.18.50.0/24",),
        settings=settings or MySQLSettings(),
        single_primary=single,
    )


def options(text: str) -> dict[str, str]:
    """key -> value of the [mysqld] section (last one wins, as in mysqld)."""
    out: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[mysqld]" and line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k] = v
    return out


def test_my_cnf_paths_are_inside_the_chroot_mount() -> None:
    o = options(render_my_cnf(member()))
    assert o["datadir"] == "/cb/data"
    assert o["socket"] == "/cb/mysqld.sock"
    assert o["log-error"] == "/cb/error.log"
    assert o["tmpdir"] == "/cb/tmp"
    # The default /var/lib/mysql-files is missing in the rootfs: mysqld would not start.
    assert o["secure_file_priv"] == "/cb/files"
    assert o["user"] == "mysql"


def test_my_cnf_identity_and_group_settings() -> None:
    o = options(render_my_cnf(member()))
    assert (o["server_id"], o["bind-address"], o["report_host"], o["port"]) == (
        "2",
        "198.18.50.12",
        "198.18.50.12",
        "3306",
    )
    assert (o["gtid_mode"], o["enforce_gtid_consistency"], o["mysqlx"]) == ("ON", "ON", "OFF")
    assert o["performance_schema"] == "ON"
    assert o["plugin_load_add"] == "mysql_clone.so"  # and group_replication.so before it
    assert "plugin_load_add=group_replication.so\nplugin_load_add=mysql_clone.so\n" in render_my_cnf(member())
    # Every group_replication_* option has the loose- prefix (mysqld --initialize runs without the plugin).
    text = render_my_cnf(member())
    assert "\ngroup_replication" not in text
    assert o["loose-group_replication_group_name"] == f'"{GROUP}"'
    assert o["loose-group_replication_local_address"] == '"198.18.50.12:33061"'
    assert (
        o["loose-group_replication_group_seeds"]
        == '"198.18.50.11:33061,198.18.50.12:33061,198.18.50.13:33061"'
    )
    assert o["loose-group_replication_ip_allowlist"] == '"198.18.50.0/24"'
    assert o["loose-group_replication_start_on_boot"] == "OFF"
    assert o["loose-group_replication_bootstrap_group"] == "OFF"
    assert o["loose-group_replication_recovery_get_public_key"] == "ON"


def test_single_and_multi_primary() -> None:
    single = options(render_my_cnf(member()))
    assert single["loose-group_replication_single_primary_mode"] == "ON"
    assert single["loose-group_replication_enforce_update_everywhere_checks"] == "OFF"
    multi = options(render_my_cnf(member(single=False)))
    assert multi["loose-group_replication_single_primary_mode"] == "OFF"
    assert multi["loose-group_replication_enforce_update_everywhere_checks"] == "ON"


def test_settings_and_extra_options() -> None:
    s = MySQLSettings(
        innodb_buffer_pool_size="256M",
        member_expel_timeout=1,
        consistency="AFTER",
        extra={"group_replication_paxos_single_leader": True, "binlog_row_image": "MINIMAL"},
    )
    o = options(render_my_cnf(member(s)))
    assert o["innodb_buffer_pool_size"] == "256M"
    assert o["loose-group_replication_member_expel_timeout"] == "1"
    assert o["loose-group_replication_consistency"] == "AFTER"
    assert o["loose-group_replication_paxos_single_leader"] == "ON"
    assert o["binlog_row_image"] == "MINIMAL"


def test_paths_on_the_host_and_inside() -> None:
    m = member()
    assert m.cnf_path == DIR / "my.cnf" and m.cnf_inside == Path("/cb/my.cnf")
    assert m.socket == DIR / "mysqld.sock"
    assert m.subdirs == (DIR, DIR / "data", DIR / "tmp", DIR / "files")


def test_client_cnf_quotes_the_password() -> None:
    assert render_client_cnf("cbmon", 'p#w"x', DIR / "mysqld.sock") == (
        f'[client]\nuser=cbmon\npassword="p#w\\"x"\nsocket={DIR}/mysqld.sock\n'
    )


def test_accounts_and_start_statements() -> None:
    sql = account_sql(
        [Account("cbrepl", "it's", RECOVERY_PRIVILEGES)],
        [("cbmon", "SELECT", "performance_schema.*")],
        "sbtest",
    )
    assert sql[0] == "CREATE DATABASE IF NOT EXISTS sbtest;"
    assert "CREATE USER 'cbrepl'@'%' IDENTIFIED BY 'it''s';" in sql
    assert "GRANT REPLICATION SLAVE, CONNECTION_ADMIN, BACKUP_ADMIN ON *.* TO 'cbrepl'@'%';" in sql
    assert sql[-1] == "GRANT SELECT ON performance_schema.* TO 'cbmon'@'%';"
    assert start_sql("cbrepl", "pw", bootstrap=False) == [
        "START GROUP_REPLICATION USER='cbrepl', PASSWORD='pw'"
    ]
    boot = start_sql("cbrepl", "pw", bootstrap=True)
    assert boot[0] == "SET GLOBAL group_replication_bootstrap_group=ON"
    assert boot[-1] == "SET GLOBAL group_replication_bootstrap_group=OFF"


# ---------------------------------------------------------------- the health check, run for real

FAKE_CLIENT = """#!/bin/sh
# Stands in for the mariadb client: prints the canned -N -B row, or fails like a dead server.
[ -n "$FAKE_FAIL" ] && exit 1
printf '%s\\t%s\\t%s\\t%s\\t%s\\n' "$STATE" "$ROLE" "$RO" "$REACH" "$TOTAL"
"""


def check(tmp_path: Path, path: str, env: dict[str, str], *, single: bool = True) -> tuple[str, str]:
    sh = shutil.which("sh")
    if sh is None:
        pytest.skip("no /bin/sh")
    client = tmp_path / "fake-client"
    client.write_text(FAKE_CLIENT)
    client.chmod(0o755)
    script = tmp_path / "healthcheck.sh"
    script.write_text(render_healthcheck(member(single=single, d=tmp_path), client=str(client)))
    request = f"GET {path} HTTP/1.0\r\n\r\n".encode()
    cp = subprocess.run([sh, str(script)], input=request, capture_output=True, env=env, timeout=10)
    assert cp.returncode == 0, cp.stderr
    head, _, body = cp.stdout.decode().partition("\r\n\r\n")
    assert head.endswith(f"Content-Length: {len(body)}")
    return head.splitlines()[0], body.strip()


ONLINE_PRIMARY = {"STATE": "ONLINE", "ROLE": "PRIMARY", "RO": "0", "REACH": "3", "TOTAL": "3"}
ONLINE_SECONDARY = {"STATE": "ONLINE", "ROLE": "SECONDARY", "RO": "1", "REACH": "3", "TOTAL": "3"}


def test_write_check_passes_only_a_writable_online_primary(tmp_path: Path) -> None:
    assert check(tmp_path, "/write", ONLINE_PRIMARY) == ("HTTP/1.1 200 OK", "ONLINE PRIMARY")
    status, body = check(tmp_path, "/write", ONLINE_SECONDARY)
    assert status == "HTTP/1.1 503 Service Unavailable"
    assert body == "not ready for /write: state=ONLINE role=SECONDARY super_read_only=1 reachable=3/3"
    # A primary still read-only (it is applying its backlog after an election) is not writable yet.
    assert check(tmp_path, "/write", {**ONLINE_PRIMARY, "RO": "1"})[0].endswith("503 Service Unavailable")
    assert check(tmp_path, "/", ONLINE_PRIMARY)[0] == "HTTP/1.1 200 OK"


def test_read_check_passes_online_secondaries(tmp_path: Path) -> None:
    assert check(tmp_path, "/read", ONLINE_SECONDARY) == ("HTTP/1.1 200 OK", "ONLINE SECONDARY")
    assert check(tmp_path, "/read", ONLINE_PRIMARY)[0].endswith("503 Service Unavailable")
    assert check(tmp_path, "/read", {**ONLINE_SECONDARY, "STATE": "RECOVERING"})[0].endswith(
        "503 Service Unavailable"
    )
    # Multi-primary: every member is a PRIMARY, and the read endpoint takes them all.
    assert check(tmp_path, "/read", ONLINE_PRIMARY, single=False)[0] == "HTTP/1.1 200 OK"


def test_a_member_cut_off_in_a_minority_fails_both_checks(tmp_path: Path) -> None:
    cut = {**ONLINE_PRIMARY, "REACH": "1", "TOTAL": "3"}
    status, body = check(tmp_path, "/write", cut)
    assert status.endswith("503 Service Unavailable") and body.endswith("reachable=1/3")
    assert check(tmp_path, "/read", {**ONLINE_SECONDARY, "REACH": "2", "TOTAL": "4"})[0].endswith(
        "503 Service Unavailable"
    )
    assert check(tmp_path, "/read", {**ONLINE_SECONDARY, "REACH": "3", "TOTAL": "5"})[0] == "HTTP/1.1 200 OK"


def test_a_dead_server_fails_the_check(tmp_path: Path) -> None:
    status, body = check(tmp_path, "/write", {"FAKE_FAIL": "1"})
    assert status.endswith("503 Service Unavailable")
    assert body == "not ready for /write: state=down role=none super_read_only=1 reachable=0/0"


def test_the_check_connects_without_tls_on_the_unix_socket(tmp_path: Path) -> None:
    """MySQL offers TLS on its socket too: with it, each check cost 40 ms of CPU (the client loads
    the system's CA store) instead of 8, six checks a second per group."""
    text = render_healthcheck(member(d=tmp_path), client="/usr/bin/mariadb")
    client = f"/usr/bin/mariadb --defaults-extra-file={tmp_path}/mon.cnf --skip-ssl --connect-timeout=1 "
    assert client in text
