"""Which database engine a topology runs, and the server settings of MySQL Group Replication.

`[engine] kind` picks Galera (MariaDB, settings in `[mariadb]`) or Group Replication (MySQL,
settings in `[mysql]`). A setting of one engine given to the other is refused with the field
named, never ignored: a wsrep knob under Group Replication would otherwise do nothing silently.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SIZE_PATTERN = r"^[0-9]+[KMG]?$"

# Keys that only mean something to Galera / MariaDB's wsrep, and to Group Replication.
GALERA_ONLY_PREFIXES = ("wsrep_", "wsrep-", "evs_", "gcache", "sst_", "innodb_log_file_size")
# mysqld options clusterbench sets itself (paths, addresses, identity, plugins).
OWN_KEYS = ("plugin_load", "plugin-load", "datadir", "socket", "bind", "port", "server_id", "server-id")
GR_ONLY_PREFIXES = ("group_replication_", "group-replication-", "loose-group_replication_")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EngineSettings(_Strict):
    """`[engine]`: galera (default) or group_replication; `mode` is Group Replication's."""

    kind: Literal["galera", "group_replication"] = "galera"
    # single-primary: one member takes writes (the others are read-only secondaries) and a new
    # primary is elected when it fails; multi-primary: every member takes writes, conflicts are
    # certified and the loser rolls back. Unset = single-primary for GR; Galera has no modes.
    mode: Literal["single-primary", "multi-primary"] | None = None

    @model_validator(mode="after")
    def _mode(self) -> EngineSettings:
        if self.kind == "galera" and self.mode is not None:
            raise ValueError(
                "engine.mode is for kind = 'group_replication' (Galera nodes all take writes); remove it"
            )
        return self

    @property
    def single_primary(self) -> bool:
        return self.mode != "multi-primary"

    @property
    def has_primary(self) -> bool:
        """One node takes the writes (Group Replication in single-primary mode); member 1 is
        the primary right after `up`."""
        return self.kind == "group_replication" and self.single_primary


class MySQLSettings(_Strict):
    """`[mysql]`: server settings of Group Replication members. Defaults are small so that 9
    members fit in memory on one machine, and durable against a process crash like the Galera
    defaults (a kill -9 loses nothing acknowledged; a power cut may)."""

    innodb_buffer_pool_size: str = Field("64M", pattern=SIZE_PATTERN)
    innodb_redo_log_capacity: str = Field("64M", pattern=SIZE_PATTERN)
    # 2 = write at commit, flush once a second; with sync_binlog = 0 the binlog is left to the OS.
    innodb_flush_log_at_trx_commit: Literal[0, 1, 2] = 2
    sync_binlog: int = Field(0, ge=0, le=1_000_000)
    max_connections: int = Field(300, ge=10, le=10000)
    # Applier threads for transactions certified by the group (MySQL's default is 4).
    replica_parallel_workers: int = Field(4, ge=0, le=1024)
    # Group Replication's failure handling (seconds). member_expel_timeout: how long a suspected
    # member may stay unreachable before the majority expels it (MySQL's default 5).
    member_expel_timeout: int = Field(5, ge=0, le=3600)
    # How long a member in a minority waits before leaving the group; 0 = forever (the default).
    unreachable_majority_timeout: int = Field(0, ge=0, le=31536000)
    # How often an expelled member tries to rejoin by itself (MySQL's default 3, 5 min apart).
    autorejoin_tries: int = Field(3, ge=0, le=2016)
    exit_state_action: Literal["READ_ONLY", "OFFLINE_MODE", "ABORT_SERVER"] = "READ_ONLY"
    consistency: Literal["EVENTUAL", "BEFORE_ON_PRIMARY_FAILOVER", "BEFORE", "AFTER", "BEFORE_AND_AFTER"] = (
        "BEFORE_ON_PRIMARY_FAILOVER"
    )
    flow_control_mode: Literal["QUOTA", "DISABLED"] = "QUOTA"
    # Further mysqld options, rendered as key=value into [mysqld] (group_replication_* with the
    # loose- prefix, so that `mysqld --initialize`, which runs without the plugin, accepts them).
    extra: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _no_galera_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if isinstance(key, str) and key.startswith(GALERA_ONLY_PREFIXES):
                    raise ValueError(
                        f"mysql.{key} is a Galera setting; Group Replication has no wsrep/evs/gcache/SST "
                        "(put it under [mariadb] with engine.kind = 'galera', or remove it)"
                    )
        return data

    @field_validator("extra")
    @classmethod
    def _extra(cls, v: dict[str, str | int | float | bool]) -> dict[str, str | int | float | bool]:
        for key in v:
            if key.startswith(GALERA_ONLY_PREFIXES):
                raise ValueError(
                    f"mysql.extra.{key} is a Galera setting; Group Replication would not know it "
                    "(use [mariadb] with engine.kind = 'galera', or remove it)"
                )
            if key.startswith(OWN_KEYS):
                raise ValueError(f"mysql.extra.{key} is set by clusterbench itself; remove it")
        return v


def galera_key_error(key: str) -> str | None:
    """A Group Replication setting given to Galera ([mariadb] or its extra): the message, or None."""
    if key.startswith(GR_ONLY_PREFIXES):
        return (
            f"{key} is a Group Replication setting; Galera would not know it "
            "(use [mysql] with engine.kind = 'group_replication', or remove it)"
        )
    return None


def _refuse_changed(section: dict[str, Any], defaults: dict[str, Any], message: str) -> None:
    """ValueError(`message` naming the key) for the first key of `section` that is not its default."""
    for key, value in section.items():
        if key in defaults and value == defaults[key]:
            continue
        raise ValueError(message.format(key=key))


def check_sections(data: dict[str, Any], mariadb_defaults: dict[str, Any]) -> None:
    """Refuse server settings in the section of the other engine, naming the field. A section
    that only restates the defaults passes (a topology saved in state.json carries both)."""
    engine = data.get("engine")
    kind = engine.get("kind", "galera") if isinstance(engine, dict) else "galera"
    mariadb = data.get("mariadb")
    mysql = data.get("mysql")
    if kind == "group_replication" and isinstance(mariadb, dict):
        _refuse_changed(
            mariadb,
            mariadb_defaults,
            "mariadb.{key} is a Galera (MariaDB) setting but engine.kind = 'group_replication'; "
            "put server settings under [mysql] or remove it",
        )
    if kind == "galera" and isinstance(mysql, dict):
        _refuse_changed(
            mysql,
            MySQLSettings().model_dump(mode="json"),
            "mysql.{key} is a Group Replication (MySQL) setting but engine.kind is 'galera'; "
            "set engine.kind = 'group_replication' or put Galera settings under [mariadb]",
        )
    if isinstance(mariadb, dict):
        keys = list(mariadb)
        extra = mariadb.get("extra")
        if isinstance(extra, dict):
            keys += [f"extra.{k}" for k in extra]
        for key in keys:
            bad = galera_key_error(key.removeprefix("extra."))
            if bad is not None:
                raise ValueError(f"mariadb.{bad}")
