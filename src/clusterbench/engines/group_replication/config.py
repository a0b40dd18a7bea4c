"""Pure rendering of a Group Replication member's files: my.cnf, the HAProxy health check, the
account statements. Paths in my.cnf are the chrooted mysqld's (under NODE_MOUNT); the node's
directory on the host is bind-mounted there when the member starts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusterbench.components.templates import package_templates
from clusterbench.engines.group_replication.rootfs import NODE_MOUNT
from clusterbench.engines.paths import NodePaths
from clusterbench.spec.engine import MySQLSettings

GCS_PORT = 33061
CLIENT = "/usr/bin/mariadb"  # the health check runs on the host, outside the rootfs

_env = package_templates("clusterbench.engines.group_replication")


@dataclass(frozen=True)
class MemberConfig(NodePaths):
    cluster_name: str
    index: int
    address: str
    peers: tuple[str, ...]  # every member's address, this one included
    dir: Path  # the node directory on the host
    group_name: str  # a UUID, one per cluster
    allowlist: tuple[str, ...]  # networks or addresses XCom admits, e.g. ("198.18.50.0/24",)
    settings: MySQLSettings
    single_primary: bool = True

    @property
    def node_name(self) -> str:
        return f"n{self.index}"

    @property
    def server_id(self) -> int:
        return self.index

    # Host-side paths: engines/paths.py (the health script has a name of its own here).
    @property
    def health_script(self) -> Path:
        return self.dir / "healthcheck.sh"

    @property
    def subdirs(self) -> tuple[Path, ...]:
        """Directories mysqld writes to (its error log, socket and pid file go in the node
        directory itself), owned by the rootfs's mysql user."""
        return (self.dir, self.dir / "data", self.dir / "tmp", self.dir / "files")

    # The same files as the chrooted mysqld sees them.
    @staticmethod
    def inside(host_path: Path, node_dir: Path) -> Path:
        return NODE_MOUNT / host_path.relative_to(node_dir)

    @property
    def cnf_inside(self) -> Path:
        return self.inside(self.cnf_path, self.dir)

    @property
    def local_address(self) -> str:
        return f"{self.address}:{GCS_PORT}"


def render_my_cnf(cfg: MemberConfig) -> str:
    extra = sorted((_loose(k), _value(v)) for k, v in cfg.settings.extra.items())
    return _env.get_template("my.cnf.j2").render(
        cluster_name=cfg.cluster_name,
        node_name=cfg.node_name,
        mount=str(NODE_MOUNT),
        address=cfg.address,
        server_id=cfg.server_id,
        group_name=cfg.group_name,
        gcs_port=GCS_PORT,
        seeds=[f"{p}:{GCS_PORT}" for p in cfg.peers],
        allowlist=list(cfg.allowlist),
        single_primary=cfg.single_primary,
        s=cfg.settings,
        extra=extra,
    )


def render_healthcheck(cfg: MemberConfig, client: str = CLIENT) -> str:
    return _env.get_template("healthcheck.sh.j2").render(
        client=client,
        mon_cnf=str(cfg.mon_cnf),
        node_name=cfg.node_name,
        cluster_name=cfg.cluster_name,
        single_primary=cfg.single_primary,
    )


def _option_quote(value: str) -> str:
    """Quote a value for an option file, where an unquoted '#' starts a comment."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_client_cnf(user: str, password: str, socket: Path) -> str:
    return f"[client]\nuser={user}\npassword={_option_quote(password)}\nsocket={socket}\n"


def sql_quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class Account:
    user: str
    password: str
    privileges: str  # "ALL PRIVILEGES", "REPLICATION SLAVE, ..."
    grant_option: bool = False
    on: str = "*.*"


def account_sql(
    accounts: list[Account], extra_grants: list[tuple[str, str, str]], database: str
) -> list[str]:
    """Statements that create the cluster's accounts, run by `mysqld --initialize --init-file`
    (no binary log then, so they carry no GTID and every seeded copy starts with the same,
    empty, executed set). `extra_grants`: (user, privileges, on) granted besides."""
    out = [f"CREATE DATABASE IF NOT EXISTS {database};"]
    for a in accounts:
        for host in ("localhost", "%"):
            who = f"{sql_quote(a.user)}@{sql_quote(host)}"
            grant = " WITH GRANT OPTION" if a.grant_option else ""
            out += [
                f"CREATE USER {who} IDENTIFIED BY {sql_quote(a.password)};",
                f"GRANT {a.privileges} ON {a.on} TO {who}{grant};",
            ]
    for user, privileges, on in extra_grants:
        for host in ("localhost", "%"):
            out.append(f"GRANT {privileges} ON {on} TO {sql_quote(user)}@{sql_quote(host)};")
    return out


# The recovery account: distributed recovery (binlog from a donor) and clone (BACKUP_ADMIN on
# the donor). Its credentials are given at START GROUP_REPLICATION, never stored in the datadir.
RECOVERY_PRIVILEGES = "REPLICATION SLAVE, CONNECTION_ADMIN, BACKUP_ADMIN"
MONITOR_PRIVILEGES = "USAGE, PROCESS, REPLICATION CLIENT"


def start_sql(user: str, password: str, *, bootstrap: bool) -> list[str]:
    """Start Group Replication on a member: bootstrap a new group, or join the existing one."""
    start = f"START GROUP_REPLICATION USER={sql_quote(user)}, PASSWORD={sql_quote(password)}"
    if not bootstrap:
        return [start]
    return [
        "SET GLOBAL group_replication_bootstrap_group=ON",
        start,
        "SET GLOBAL group_replication_bootstrap_group=OFF",
    ]


def _loose(key: str) -> str:
    return f"loose-{key}" if key.startswith("group_replication_") else key


def _value(v: str | int | float | bool) -> str:
    if isinstance(v, bool):
        return "ON" if v else "OFF"
    return str(v)
