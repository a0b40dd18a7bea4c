"""Provenance: what a run ran on, so that every number can be traced back from the store alone.

Host facts (versions, kernel, CPU, memory) come from commands and /proc; the parsers are pure.
Server snapshots (SHOW GLOBAL VARIABLES and the engine's own status: Galera's wsrep_% status
variables) come from a `ServerProbe`: every node of a cluster through the engine's node objects,
or every address of an endpoint given by host and port (whose engine is not known: its wsrep_%
status is asked for, which a server without Galera answers with nothing).
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pymysql  # type: ignore[import-untyped, unused-ignore]

from clusterbench.spec.endpoint import Endpoint

log = logging.getLogger(__name__)

VARIABLES_SQL = "SHOW GLOBAL VARIABLES"
WSREP_STATUS_SQL = "SHOW GLOBAL STATUS LIKE 'wsrep_%'"

# (key, argv): the first line of each command's output is the version string.
VERSION_COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mariadb", ("mariadbd", "--version")),
    ("haproxy", ("haproxy", "-v")),
    ("sysbench", ("sysbench", "--version")),
)

RunCommand = Callable[[Sequence[str]], str | None]
ReadText = Callable[[Path], str | None]


def _run_command(argv: Sequence[str]) -> str | None:
    """stdout (or stderr) of a short command, None when it cannot run."""
    log.info("running: %s", " ".join(argv))
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("%s: %s", argv[0], exc)
        return None
    return proc.stdout or proc.stderr


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def first_line(text: str | None) -> str | None:
    if not text:
        return None
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def cpu_model(cpuinfo: str | None) -> str | None:
    """'model name' of /proc/cpuinfo (the first CPU's), with the count of logical CPUs."""
    if not cpuinfo:
        return None
    models = [ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln.startswith("model name")]
    if not models:
        return None
    return f"{models[0]} x {len(models)}"


def mem_total(meminfo: str | None) -> str | None:
    """MemTotal of /proc/meminfo as 'N MiB'."""
    if not meminfo:
        return None
    for ln in meminfo.splitlines():
        if ln.startswith("MemTotal:"):
            parts = ln.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return f"{int(parts[1]) // 1024} MiB"
    return None


def host_facts(run: RunCommand = _run_command, read: ReadText = _read_text) -> dict[str, Any]:
    """Versions of the local binaries, kernel, CPU model and memory of the machine clusterbench runs on."""
    from clusterbench import __version__

    versions: dict[str, str | None] = {"clusterbench": __version__}
    versions.update({key: first_line(run(argv)) for key, argv in VERSION_COMMANDS})
    return {
        "versions": versions,
        "kernel": first_line(run(("uname", "-r"))),
        "cpu": cpu_model(read(Path("/proc/cpuinfo"))),
        "memory": mem_total(read(Path("/proc/meminfo"))),
    }


@dataclass(frozen=True)
class ServerSnapshot:
    """One moment of every server: per server name, its variables and its engine's status (or an
    error)."""

    variables: dict[str, dict[str, str]]
    engine_status: dict[str, dict[str, str]]
    errors: dict[str, str]

    def provider_version(self) -> str | None:
        for status in self.engine_status.values():
            v = status.get("wsrep_provider_version")
            if v:
                return v
        for variables in self.variables.values():
            v = variables.get("wsrep_provider_version")
            if v:
                return v
        return None

    def server_version(self) -> str | None:
        return next((v["version"] for v in self.variables.values() if v.get("version")), None)

    def versions(self) -> dict[str, str]:
        """The versions only the servers know, under names that say which server it is:
        MariaDB's version says so ("10.11.19-MariaDB-..."), MySQL's does not ("9.7.4-2")."""
        out: dict[str, str] = {}
        provider = self.provider_version()
        if provider:
            out["galera"] = provider
        server = self.server_version()
        if server:
            out["mariadb_server" if "mariadb" in server.lower() else "mysql_server"] = server
        return out


class ServerProbe(Protocol):
    def snapshot(self) -> ServerSnapshot: ...


Query = Callable[[str], Sequence[Sequence[Any]]]


def _rows(rows: Sequence[Sequence[Any]]) -> dict[str, str]:
    return {str(r[0]): "" if r[1] is None else str(r[1]) for r in rows}


def snapshot_servers(queries: dict[str, Query]) -> ServerSnapshot:
    """Ask every server for its variables and wsrep status; a server that does not answer is noted."""
    variables: dict[str, dict[str, str]] = {}
    status: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    for name, query in queries.items():
        try:
            variables[name] = _rows(query(VARIABLES_SQL))
            status[name] = _rows(query(WSREP_STATUS_SQL))
        except Exception as exc:  # noqa: BLE001 - a dead node is a fact to record, not a failure
            errors[name] = f"{type(exc).__name__}: {exc}"
    return ServerSnapshot(variables, status, errors)


class ClusterProbe:
    """Every node of a cluster, through the engine's node objects (the admin account)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster

    def snapshot(self) -> ServerSnapshot:
        return snapshot_nodes(self.cluster.nodes())


def _node_snapshot(node: Any) -> tuple[dict[str, str], dict[str, str]] | str:
    """One node's variables and engine status, or why it could not tell them."""
    try:
        if not node.alive():
            raise ConnectionError("node is not running")
        return _rows(node.query(VARIABLES_SQL, timeout=2.0)), node.engine_status()
    except Exception as exc:  # noqa: BLE001 - a dead node is a fact to record, not a failure
        return f"{type(exc).__name__}: {exc}"


def snapshot_nodes(nodes: Sequence[Any]) -> ServerSnapshot:
    """Every node's variables and its engine's own status (DbNode.engine_status), asked of all
    nodes at once: an experiment takes two snapshots a trial, and nine nodes one after another
    cost a few tenths of a second each time."""
    variables: dict[str, dict[str, str]] = {}
    status: dict[str, dict[str, str]] = {}
    errors: dict[str, str] = {}
    if not nodes:
        return ServerSnapshot(variables, status, errors)
    with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="snapshot") as pool:
        answers = list(pool.map(_node_snapshot, nodes))
    for node, got in zip(nodes, answers, strict=True):
        name = f"n{node.index}"
        if isinstance(got, str):
            errors[name] = got
        else:
            variables[name], status[name] = got
    return ServerSnapshot(variables, status, errors)


class EndpointProbe:
    """Every address of an endpoint, with the endpoint's own account."""

    def __init__(self, endpoint: Endpoint, connect: Callable[..., Any] = pymysql.connect) -> None:
        self.endpoint = endpoint
        self.connect = connect

    def snapshot(self) -> ServerSnapshot:
        queries: dict[str, Query] = {}
        for addr in self.endpoint.addresses:

            def query(sql: str, host: str = addr.host, port: int = addr.port) -> Sequence[Sequence[Any]]:
                conn = self.connect(
                    host=host,
                    port=port,
                    user=self.endpoint.user,
                    password=self.endpoint.password,
                    connect_timeout=2,
                    read_timeout=10,
                )
                try:
                    with conn.cursor() as cur:
                        cur.execute(sql)
                        return list(cur.fetchall())
                finally:
                    conn.close()

            queries[f"{addr.host}:{addr.port}"] = query
        return snapshot_servers(queries)
