"""Ledger workload (C1, Jepsen's set): clients insert rows with globally unique keys
(client, seq) and record each insert's outcome. After heal, every node's ledger is read back
and compared with the history by checkers.ledger."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from clusterbench.engines.base import DbNode
from clusterbench.spec.endpoint import Endpoint
from clusterbench.verify.client import (
    ClientPool,
    Connection,
    Connector,
    Pacer,
    address_for,
    default_connector,
    process_name,
    run_transaction,
    safe_close,
)
from clusterbench.verify.history import History, Op, Outcome, Phase, Timebase, classify

TABLE = "cb_ledger"
WORKLOAD = "ledger"

Key = tuple[int, int]


def ledger_key(client: int, seq: int) -> str:
    return f"{client}:{seq}"


def parse_key(key: str) -> Key:
    c, s = key.split(":")
    return int(c), int(s)


class LedgerWorkload:
    """`clients` threads, client i connecting through endpoints[i % len(endpoints)], each inserting
    one row per transaction at `rate` per second, autocommit off with an explicit COMMIT.

    Client ids are `client_base + i`: give concurrent ledgers disjoint bases."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        history: History,
        timebase: Timebase,
        *,
        clients: int = 3,
        rate: float = 20.0,
        client_base: int = 0,
        schema: str = "sbtest",
        table: str = TABLE,
        connector: Connector = default_connector,
    ) -> None:
        if not endpoints:
            raise ValueError("the ledger needs at least one endpoint")
        self.endpoints = list(endpoints)
        self.history = history
        self.tb = timebase
        self.clients = [client_base + i for i in range(clients)]
        self.rate = rate
        self.table = f"{schema}.{table}"
        self.connector = connector
        self.pool = ClientPool(WORKLOAD)

    # ---- schema ---------------------------------------------------------------------------

    def setup(self, admin: DbNode) -> None:
        """Create an empty ledger. A scenario gives every trial a table of its own (rows of another
        run would count as phantoms, and its table is not ours to drop): CREATE fails if it exists."""
        with admin.connect(5.0, read_timeout=60) as conn, conn.cursor() as cur:
            cur.execute(
                f"CREATE TABLE {self.table} (client INT NOT NULL, seq INT NOT NULL, "
                "v VARCHAR(64) NOT NULL, PRIMARY KEY (client, seq)) ENGINE=InnoDB"
            )

    def drop(self, admin: DbNode) -> None:
        with admin.connect(5.0, read_timeout=60) as conn, conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self.table}")

    # ---- running --------------------------------------------------------------------------

    def start(self) -> None:
        self.pool.start(self.clients, self._loop)

    def stop(self) -> list[str]:
        """Bounded (≈ 2 × (connect + read timeout)); returns clients still stuck, if any."""
        return self.pool.stop()

    def ops(self) -> list[Op]:
        return self.history.ops(WORKLOAD)

    def _loop(self, client: int, stop: threading.Event) -> None:
        endpoint = self.endpoints[(client - self.clients[0]) % len(self.endpoints)]
        pacer = Pacer(self.rate, self.tb.clock.now)
        conn: Connection | None = None
        seq = 0
        while not stop.wait(pacer.delay()):
            seq += 1
            conn = self.insert(client, seq, endpoint, conn)
        safe_close(conn)

    def insert(self, client: int, seq: int, endpoint: Endpoint, conn: Connection | None) -> Connection | None:
        """One insert with its op recorded; returns the connection to reuse (None after an error)."""
        address = address_for(endpoint, client)
        key = ledger_key(client, seq)
        value = f"{client}-{seq}"
        wall0, t0 = self.tb.stamp()

        def record(outcome: Outcome, code: int | None = None, error: str | None = None) -> None:
            wall1, t1 = self.tb.stamp()
            self.history.add(
                Op(WORKLOAD, client, process_name(endpoint, address), address.host, "insert", key, value,
                   wall0, wall1, t0, t1, outcome, code, error)
            )  # fmt: skip

        if conn is None:
            try:
                conn = self.connector(endpoint, address)
            except Exception as exc:  # noqa: BLE001 - a refused connection is a failed op
                outcome, code, msg = classify(exc, Phase.CONNECT)
                record(outcome, code, msg)
                return None
        res = run_transaction(
            conn,
            lambda cur: cur.execute(
                f"INSERT INTO {self.table} (client, seq, v) VALUES (%s, %s, %s)", (client, seq, value)
            ),
        )
        record(res.outcome, res.error_code, res.error)
        if not res.ok:
            safe_close(conn)
            return None
        return conn

    # ---- reading back ---------------------------------------------------------------------

    def read_node(self, node: DbNode) -> set[Key]:
        """Every key on one node, after a causal wait (the engine's causal session); raises if unreadable."""
        with node.connect(2.0, read_timeout=60) as conn, conn.cursor() as cur:
            for stmt in node.session.causal:
                cur.execute(stmt)
            cur.execute(f"SELECT client, seq FROM {self.table}")
            return {(int(r[0]), int(r[1])) for r in cur.fetchall()}

    def read_all(self, nodes: Sequence[DbNode]) -> dict[str, set[Key] | str]:
        """Per node: its keys, or the error text when it could not be read."""
        out: dict[str, set[Key] | str] = {}
        for n in nodes:
            try:
                out[n.name] = self.read_node(n)
            except Exception as exc:  # noqa: BLE001 - an unreadable node makes the verdict UNKNOWN
                out[n.name] = f"{type(exc).__name__}: {exc}"
        return out
