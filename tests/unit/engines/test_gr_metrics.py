"""Group Replication's telemetry figures (GRNode.metrics) through a scripted server connection:
the neutral names of engines/base.py METRICS from SHOW GLOBAL STATUS (InnoDB's and Gr_*), this
member's row of replication_group_member_stats and InnoDB's history length."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.engines import server as server_mod
from clusterbench.engines.base import METRICS, Credentials
from clusterbench.engines.group_replication.node import (
    FLOW_CONTROL_COMPONENT,
    GR_MEMBER_STATS,
    GRNode,
    member_metrics,
)
from tests.unit.engines.test_gr_config import member
from tests.unit.fakes import FakeClock, FakeHost

CREDS = Credentials("cbadmin", "adm", "bench", "app", "cbmon", "mon", "cbrepl", "rpl")


class Server:
    """What the scripted mysqld answers, and every statement it was sent."""

    def __init__(self) -> None:
        self.status: dict[str, Any] = {
            "Innodb_buffer_pool_reads": "120",
            "Innodb_row_lock_waits": "7",
            "Innodb_data_fsyncs": "300",
            "Innodb_data_reads": "500",
            "Innodb_data_writes": "900",
            "Gr_data_messages_sent_bytes_sum": "4096",
            "Gr_consensus_bytes_received_sum": "8192",
            "Gr_flow_control_throttle_time_sum": "2500000",
        }
        self.stats: tuple[Any, ...] | None = (3, 1, 2, 40)
        self.history: tuple[Any, ...] | None = (17,)
        self.components: list[str] = []
        self.sent: list[str] = []


class Cursor:
    def __init__(self, server: Server) -> None:
        self.s = server
        self.rows: list[tuple[Any, ...]] = []

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, stmt: str, args: Any = None) -> None:
        self.s.sent.append(stmt)
        if stmt.startswith("SHOW GLOBAL STATUS"):
            self.rows = [(k, v) for k, v in self.s.status.items() if f"'{k.lower()}'" in stmt]
        elif "replication_group_member_stats" in stmt:
            self.rows = [self.s.stats] if self.s.stats is not None else []
        elif "INNODB_METRICS" in stmt:
            self.rows = [self.s.history] if self.s.history is not None else []
        elif "mysql.component" in stmt:
            self.rows = [(int(args[0] in self.s.components),)]
        elif stmt.startswith("INSTALL COMPONENT"):
            self.s.components.append(stmt.split("'")[1])
            self.rows = []
        else:
            self.rows = []

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None


class Conn:
    def __init__(self, server: Server) -> None:
        self.s = server

    def cursor(self) -> Cursor:
        return Cursor(self.s)

    def close(self) -> None:
        pass


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[GRNode, Server]:
    server = Server()
    monkeypatch.setattr(server_mod.pymysql, "connect", lambda **kw: Conn(server))
    n = GRNode(member(d=tmp_path / "n2"), FakeHost("cb-grlab-n2"), tmp_path / "rootfs", (999, 999), CREDS,
               clock=FakeClock())  # fmt: skip
    return n, server


def test_metrics_are_in_neutral_names_from_status_member_stats_and_innodb_metrics(
    node: tuple[GRNode, Server],
) -> None:
    n, server = node
    got = n.metrics()
    assert got == {
        "innodb_buffer_pool_reads": 120.0,
        "row_lock_waits": 7.0,
        "fsyncs": 300.0,
        "data_reads": 500.0,
        "data_writes": 900.0,
        "replicated_bytes": 4096.0,
        "received_bytes": 8192.0,
        "flow_control_paused_s": 2.5,  # 2 500 000 microseconds throttled
        "recv_queue": 3.0,
        "cert_queue": 1.0,
        "cert_failures": 2.0,
        "replicated_trx": 40.0,
        "history_length": 17.0,
    }
    assert set(got) <= set(METRICS)
    # this member's own row only, and the monitoring session's statements first
    assert any("MEMBER_ID = @@GLOBAL.server_uuid" in s for s in server.sent)
    assert server.sent[0] == "SET SESSION group_replication_consistency='EVENTUAL'"


def test_a_member_outside_a_group_and_no_component_leave_their_figures_out(
    node: tuple[GRNode, Server],
) -> None:
    n, server = node
    server.stats = None  # OFFLINE: no row of its own in replication_group_member_stats
    del server.status["Gr_flow_control_throttle_time_sum"]  # the component is not installed
    got = n.metrics()
    assert got is not None
    for missing in ("recv_queue", "cert_queue", "cert_failures", "replicated_trx", "flow_control_paused_s"):
        assert missing not in got
    assert got["history_length"] == 17.0 and got["replicated_bytes"] == 4096.0


def test_member_metrics_keeps_column_order_and_skips_nulls() -> None:
    assert list(GR_MEMBER_STATS.values()) == ["recv_queue", "cert_queue", "cert_failures", "replicated_trx"]
    assert member_metrics((0, None, 5, 9), None) == {
        "recv_queue": 0.0,
        "cert_failures": 5.0,
        "replicated_trx": 9.0,
    }
    assert member_metrics(None, (None,)) == {}


def test_the_flow_control_component_is_installed_once_and_unlogged(node: tuple[GRNode, Server]) -> None:
    n, server = node
    assert n.install_metrics_component() is True
    assert server.components == [FLOW_CONTROL_COMPONENT]
    i = server.sent.index(f"INSTALL COMPONENT '{FLOW_CONTROL_COMPONENT}'")
    assert server.sent[i - 1] == "SET SESSION sql_log_bin=0"  # no GTID: members' executed sets stay equal
    assert n.install_metrics_component() is True
    assert server.components == [FLOW_CONTROL_COMPONENT]  # already there: not installed twice


@pytest.mark.parametrize(
    ("consistency", "stale_documented"),
    [("EVENTUAL", True), ("BEFORE_ON_PRIMARY_FAILOVER", True), ("BEFORE", False), ("AFTER", False),
     ("BEFORE_AND_AFTER", False)],
)  # fmt: skip
def test_a_node_documents_default_stale_reads_only_below_before(
    consistency: str, stale_documented: bool, tmp_path: Path
) -> None:
    from clusterbench.engines.group_replication.node import GR_SESSION
    from clusterbench.spec.engine import MySQLSettings

    cfg = member(MySQLSettings(consistency=consistency), d=tmp_path / "n2")
    n = GRNode(cfg, FakeHost("cb-grlab-n2"), tmp_path / "rootfs", (999, 999), CREDS)
    assert ("stale-read" in n.session.documented_default) is stale_documented
    # The statements stay the engine's; the causal session never documents a stale read.
    assert (n.session.default, n.session.causal) == (GR_SESSION.default, GR_SESSION.causal)
    assert "stale-read" not in n.session.documented_causal
