"""The durability settings the servers ran with, beside the server's own default when they differ:
what decides whether an acknowledged commit survives a crash of the machine (innodb_flush_log_at_
trx_commit: 1 writes and flushes the redo log at each commit, 2 writes it and flushes about once a
second, 0 does both about once a second; sync_binlog: N > 0 flushes the binary log every N
commit groups, 0 leaves it to the operating system).

clusterbench's topologies default to innodb_flush_log_at_trx_commit = 2 (a replicated commit is on
the other members; common for Galera), while MariaDB and MySQL ship with 1: a number compared with
production must say so. The values come from the servers' own variables as stored at a trial's
start (`server_variables@start`), the defaults from the server family its version names, so an
existing endpoint is covered like a cluster of ours. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

VARIABLES: tuple[str, ...] = ("innodb_flush_log_at_trx_commit", "sync_binlog")

# The shipped defaults (MariaDB 10.11 and MySQL 8.0 and later, documented in their system-variable
# references): MariaDB leaves the binary log to the OS, MySQL flushes it at each commit group.
SERVER_DEFAULTS: dict[str, dict[str, str]] = {
    "MariaDB": {"innodb_flush_log_at_trx_commit": "1", "sync_binlog": "0"},
    "MySQL": {"innodb_flush_log_at_trx_commit": "1", "sync_binlog": "1"},
}


def family(version: str | None) -> str | None:
    """The server family a `version` variable names ('10.11.19-MariaDB-0+deb12u1' -> MariaDB,
    '9.7.4-2' -> MySQL); None when no version is known."""
    if not version:
        return None
    return "MariaDB" if "mariadb" in version.lower() else "MySQL"


@dataclass(frozen=True)
class Setting:
    name: str
    values: dict[str, str]  # node -> value, every node that answered
    default: str | None  # the server's shipped default, when the family is known

    @property
    def value(self) -> str:
        """The value, or 'a on n1, b on n2' when the nodes differ."""
        distinct = sorted(set(self.values.values()))
        if len(distinct) == 1:
            return distinct[0]
        return ", ".join(f"{v} on {n}" for n, v in sorted(self.values.items()))

    @property
    def changed(self) -> bool:
        return self.default is not None and any(v != self.default for v in self.values.values())

    def text(self) -> str:
        if self.default is None:
            return f"{self.name} = {self.value}"
        if not self.changed:
            return f"{self.name} = {self.value} (the server's default)"
        return f"{self.name} = {self.value} (the server's default is {self.default})"


@dataclass(frozen=True)
class Durability:
    server: str | None  # MariaDB, MySQL or None
    settings: tuple[Setting, ...]

    @property
    def known(self) -> bool:
        return bool(self.settings)

    def line(self) -> str:
        """One line for a summary or a report's head; '' when no server answered."""
        if not self.settings:
            return ""
        return "durability: " + "; ".join(s.text() for s in self.settings)


def durability(variables: Mapping[str, Mapping[str, str]] | None) -> Durability:
    """From node -> server variables (a trial's `server_variables@start`)."""
    variables = variables or {}
    versions = [v.get("version") for v in variables.values() if v.get("version")]
    server = family(versions[0]) if versions else None
    defaults = SERVER_DEFAULTS.get(server or "", {})
    settings = []
    for name in VARIABLES:
        values = {node: v[name] for node, v in variables.items() if name in v}
        if values:
            settings.append(Setting(name, values, defaults.get(name)))
    return Durability(server, tuple(settings))
