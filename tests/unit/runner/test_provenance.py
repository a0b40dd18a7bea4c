from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clusterbench import __version__
from clusterbench.runner.provenance import (
    VARIABLES_SQL,
    WSREP_STATUS_SQL,
    ClusterProbe,
    ServerSnapshot,
    cpu_model,
    first_line,
    host_facts,
    mem_total,
    snapshot_servers,
)

CPUINFO = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
MEMINFO = "MemTotal:       24683520 kB\nMemFree:        24000000 kB\n"


def test_parsers() -> None:
    assert first_line("\n  sysbench 1.0.20\nmore\n") == "sysbench 1.0.20"
    assert first_line("") is None
    assert cpu_model(CPUINFO) == "AMD EPYC 7B13 x 2"
    assert cpu_model("flags: x\n") is None
    assert mem_total(MEMINFO) == "24105 MiB"
    assert mem_total(None) is None


def test_host_facts_uses_commands_and_proc() -> None:
    ran: list[tuple[str, ...]] = []
    outputs = {
        "mariadbd": "mariadbd  Ver 10.11.19-MariaDB\n",
        "haproxy": "HAProxy version 2.6.12\nStatus: LTS\n",
        "sysbench": "sysbench 1.0.20\n",
        "uname": "6.1.0\n",
    }

    def run(argv: Sequence[str]) -> str | None:
        ran.append(tuple(argv))
        return outputs.get(argv[0])

    def read(path: Path) -> str | None:
        return {"/proc/cpuinfo": CPUINFO, "/proc/meminfo": MEMINFO}[str(path)]

    assert host_facts(run, read) == {
        "versions": {
            "clusterbench": __version__,
            "mariadb": "mariadbd  Ver 10.11.19-MariaDB",
            "haproxy": "HAProxy version 2.6.12",
            "sysbench": "sysbench 1.0.20",
        },
        "kernel": "6.1.0",
        "cpu": "AMD EPYC 7B13 x 2",
        "memory": "24105 MiB",
    }
    assert ran == [("mariadbd", "--version"), ("haproxy", "-v"), ("sysbench", "--version"), ("uname", "-r")]


def test_snapshot_records_a_dead_server_instead_of_failing() -> None:
    def alive(sql: str) -> Sequence[Sequence[Any]]:
        if sql == VARIABLES_SQL:
            return [("version", "10.11.19-MariaDB"), ("wsrep_on", "ON"), ("sql_mode", None)]
        assert sql == WSREP_STATUS_SQL
        return [("wsrep_provider_version", "26.4.23(r1234)"), ("wsrep_cluster_size", 3)]

    def dead(sql: str) -> Sequence[Sequence[Any]]:
        raise ConnectionError("node is not running")

    snap = snapshot_servers({"n1": alive, "n3": dead})
    assert snap.variables == {"n1": {"version": "10.11.19-MariaDB", "wsrep_on": "ON", "sql_mode": ""}}
    assert snap.engine_status == {
        "n1": {"wsrep_provider_version": "26.4.23(r1234)", "wsrep_cluster_size": "3"}
    }
    assert snap.errors == {"n3": "ConnectionError: node is not running"}
    assert snap.provider_version() == "26.4.23(r1234)"
    assert snap.server_version() == "10.11.19-MariaDB"
    assert ServerSnapshot({}, {}, {}).provider_version() is None


def test_cluster_probe_reads_variables_and_the_engines_own_status() -> None:
    class Node:
        def __init__(self, index: int, up: bool) -> None:
            self.index, self.up = index, up

        def alive(self) -> bool:
            return self.up

        def query(self, sql: str, timeout: float = 2.0) -> list[tuple[str, str]]:
            assert sql == VARIABLES_SQL
            return [("version", "10.11.19-MariaDB")]

        def engine_status(self) -> dict[str, str]:
            return {"wsrep_provider_version": "26.4.23(r1234)"}

    class FakeCluster:
        def nodes(self) -> list[Node]:
            return [Node(1, True), Node(2, False)]

    snap = ClusterProbe(FakeCluster()).snapshot()
    assert snap.variables == {"n1": {"version": "10.11.19-MariaDB"}}
    assert snap.engine_status == {"n1": {"wsrep_provider_version": "26.4.23(r1234)"}}
    assert snap.errors == {"n2": "ConnectionError: node is not running"}


def test_server_versions_are_named_after_the_server_that_reported_them() -> None:
    galera = ServerSnapshot(
        {"n1": {"version": "10.11.19-MariaDB-0+deb12u1"}},
        {"n1": {"wsrep_provider_version": "26.4.23(r1234)"}},
        {},
    )
    assert galera.versions() == {"galera": "26.4.23(r1234)", "mariadb_server": "10.11.19-MariaDB-0+deb12u1"}
    # Group Replication: MySQL's version carries no product name, and there is no wsrep provider.
    gr = ServerSnapshot({"n1": {"version": "9.7.4-2"}}, {"n1": {"member_state": "ONLINE"}}, {})
    assert gr.versions() == {"mysql_server": "9.7.4-2"}
    assert ServerSnapshot({}, {}, {"n1": "ConnectionError: down"}).versions() == {}
