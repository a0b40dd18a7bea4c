"""Ledger workload (C1, Jepsen's set): clients insert rows with globally unique keys
(client, seq) and record each insert's outcome. After heal, every node's ledger is read back
and compared with the history by checkers.ledger."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Unpack

from clusterbench.checkers.ledger import WORKLOAD, Key, check_ledger, ledger_key
from clusterbench.checkers.verdict import Verdict, guarded
from clusterbench.engines.base import DbNode
from clusterbench.history.ops import History, Timebase
from clusterbench.spec.endpoint import Endpoint
from clusterbench.verify.client import Connection, safe_close
from clusterbench.verify.workload import ClientOptions, Workload, endpoints_of

TABLE = "cb_ledger"


class LedgerWorkload(Workload[set[Key]]):
    """`clients` threads, client i connecting through endpoints[i % len(endpoints)], each inserting
    one row per transaction at `rate` per second, autocommit off with an explicit COMMIT.

    Client ids are `client_base + i`: give concurrent ledgers disjoint bases."""

    NAME = WORKLOAD
    DEFAULT_TABLE = TABLE

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        history: History,
        timebase: Timebase,
        *,
        clients: int = 3,
        rate: float = 20.0,
        **options: Unpack[ClientOptions],
    ) -> None:
        super().__init__(history, timebase, rate=rate, **options)
        self.endpoints = endpoints_of(endpoints, "the ledger")
        self.clients = [self.client_base + i for i in range(clients)]

    def create(self, cur: object) -> None:
        cur.execute(  # type: ignore[attr-defined]
            f"CREATE TABLE {self.table} (client INT NOT NULL, seq INT NOT NULL, "
            "v VARCHAR(64) NOT NULL, PRIMARY KEY (client, seq)) ENGINE=InnoDB"
        )

    def _loop(self, client: int, stop: threading.Event) -> None:
        endpoint = self.endpoints[(client - self.clients[0]) % len(self.endpoints)]
        conn: Connection | None = None
        for seq, _ in enumerate(self.ticks(client, stop), start=1):
            conn = self.insert(client, seq, endpoint, conn)
        safe_close(conn)

    def insert(self, client: int, seq: int, endpoint: Endpoint, conn: Connection | None) -> Connection | None:
        """One insert with its op recorded; returns the connection to reuse (None after an error)."""
        value = f"{client}-{seq}"
        conn, _, _ = self.ops_runner.run(
            client, endpoint, conn, "insert", ledger_key(client, seq),
            lambda cur: cur.execute(
                f"INSERT INTO {self.table} (client, seq, v) VALUES (%s, %s, %s)", (client, seq, value)
            ),
            lambda _v, _ok: value,
        )  # fmt: skip
        return conn

    def read_node(self, node: DbNode) -> set[Key]:
        """Every key on one node, after a causal wait (the engine's causal session)."""
        rows = self.causal_rows(node, f"SELECT client, seq FROM {self.table}")
        return {(int(r[0]), int(r[1])) for r in rows}

    def verdicts(self, nodes: Sequence[DbNode]) -> list[Verdict]:
        return [guarded("ledger", lambda: check_ledger(self.ops(), self.read_all(nodes)))]
