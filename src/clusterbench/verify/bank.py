"""Bank workload (C3, Jepsen's bank): accounts with a fixed total; clients on different nodes
transfer between random accounts and read all balances.

A transfer reads both balances, then writes the new values computed by the client. With
`for_update=True` the read is `SELECT ... FOR UPDATE`: the rows are locked locally and a remote
write-set that touches them brute-force aborts us, so the total holds. With `for_update=False`
a write-set applied between our read and our write is silently overwritten (a lost update, P4):
the total drifts. That is a documented Galera limitation, not a broken promise."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Sequence
from typing import Any

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

TABLE = "cb_bank"
WORKLOAD = "bank"


class BankWorkload:
    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        history: History,
        timebase: Timebase,
        *,
        accounts: int = 5,
        initial_balance: int = 100,
        clients: int = 3,
        rate: float = 20.0,
        read_fraction: float = 0.2,
        max_amount: int = 5,
        for_update: bool = True,
        think_time: float = 0.0,
        client_base: int = 0,
        schema: str = "sbtest",
        table: str = TABLE,
        connector: Connector = default_connector,
        seed: int | None = None,
    ) -> None:
        if not endpoints:
            raise ValueError("the bank needs at least one endpoint")
        if accounts < 2:
            raise ValueError("the bank needs at least 2 accounts")
        self.endpoints = list(endpoints)
        self.history = history
        self.tb = timebase
        self.accounts = list(range(1, accounts + 1))
        self.initial_balance = initial_balance
        self.total = accounts * initial_balance
        self.clients = [client_base + i for i in range(clients)]
        self.rate = rate
        self.read_fraction = read_fraction
        self.max_amount = max_amount
        self.for_update = for_update
        # Seconds between the read and the write of a transfer: widens the lost-update window.
        self.think_time = think_time
        self.table = f"{schema}.{table}"
        self.connector = connector
        self.seed = seed
        self.pool = ClientPool(WORKLOAD)

    @property
    def params(self) -> dict[str, Any]:
        """What the checker needs to know about this bank."""
        return {"accounts": self.accounts, "total": self.total, "for_update": self.for_update}

    def setup(self, admin: DbNode) -> None:
        """Create the accounts in a table of this trial's own (CREATE fails if it exists)."""
        with admin.connect(5.0, read_timeout=60) as conn, conn.cursor() as cur:
            cur.execute(
                f"CREATE TABLE {self.table} (id INT NOT NULL PRIMARY KEY, "
                "balance BIGINT NOT NULL) ENGINE=InnoDB"
            )
            cur.executemany(
                f"INSERT INTO {self.table} (id, balance) VALUES (%s, %s)",
                [(a, self.initial_balance) for a in self.accounts],
            )

    def drop(self, admin: DbNode) -> None:
        with admin.connect(5.0, read_timeout=60) as conn, conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self.table}")

    def start(self) -> None:
        self.pool.start(self.clients, self._loop)

    def stop(self) -> list[str]:
        return self.pool.stop()

    def ops(self) -> list[Op]:
        return self.history.ops(WORKLOAD)

    def _loop(self, client: int, stop: threading.Event) -> None:
        endpoint = self.endpoints[(client - self.clients[0]) % len(self.endpoints)]
        rng = random.Random(None if self.seed is None else self.seed * 1000 + client)
        pacer = Pacer(self.rate, self.tb.clock.now)
        conn: Connection | None = None
        while not stop.wait(pacer.delay()):
            if rng.random() < self.read_fraction:
                conn = self.read(client, endpoint, conn)
            else:
                a, b = rng.sample(self.accounts, 2)
                conn = self.transfer(client, endpoint, conn, a, b, rng.randint(1, self.max_amount))
        safe_close(conn)

    def _op(
        self,
        client: int,
        endpoint: Endpoint,
        conn: Connection | None,
        kind: str,
        key: str | None,
        body: Any,
        value_of: Any,
    ) -> Connection | None:
        address = address_for(endpoint, client)
        wall0, t0 = self.tb.stamp()

        def record(
            outcome: Outcome, value: str | None, code: int | None = None, err: str | None = None
        ) -> None:
            wall1, t1 = self.tb.stamp()
            self.history.add(
                Op(WORKLOAD, client, process_name(endpoint, address), address.host, kind, key, value,
                   wall0, wall1, t0, t1, outcome, code, err)
            )  # fmt: skip

        if conn is None:
            try:
                conn = self.connector(endpoint, address)
            except Exception as exc:  # noqa: BLE001 - a refused connection is a failed op
                outcome, code, msg = classify(exc, Phase.CONNECT)
                record(outcome, None, code, msg)
                return None
        res = run_transaction(conn, body, read_only=(kind == "read"))
        record(res.outcome, value_of(res.value) if res.ok else None, res.error_code, res.error)
        if not res.ok:
            safe_close(conn)
            return None
        return conn

    def read(self, client: int, endpoint: Endpoint, conn: Connection | None) -> Connection | None:
        def body(cur: Any) -> dict[str, int]:
            cur.execute(f"SELECT id, balance FROM {self.table}")
            return {str(r[0]): int(r[1]) for r in cur.fetchall()}

        return self._op(client, endpoint, conn, "read", None, body, lambda v: json.dumps(v, sort_keys=True))

    def transfer(
        self, client: int, endpoint: Endpoint, conn: Connection | None, src: int, dst: int, amount: int
    ) -> Connection | None:
        lock = " FOR UPDATE" if self.for_update else ""

        def body(cur: Any) -> int:
            cur.execute(f"SELECT id, balance FROM {self.table} WHERE id IN (%s, %s){lock}", (src, dst))
            bal = {int(r[0]): int(r[1]) for r in cur.fetchall()}
            if bal.get(src, 0) < amount or dst not in bal:
                return 0
            if self.think_time > 0:
                threading.Event().wait(self.think_time)
            # Client-computed values (read-modify-write), so an overwritten update changes the total.
            cur.execute(f"UPDATE {self.table} SET balance = %s WHERE id = %s", (bal[src] - amount, src))
            cur.execute(f"UPDATE {self.table} SET balance = %s WHERE id = %s", (bal[dst] + amount, dst))
            return amount

        return self._op(client, endpoint, conn, "transfer", f"{src}>{dst}", body, str)

    def read_node(self, node: DbNode) -> dict[str, int]:
        with node.connect(2.0, read_timeout=60) as conn, conn.cursor() as cur:
            for stmt in node.session.causal:
                cur.execute(stmt)
            cur.execute(f"SELECT id, balance FROM {self.table}")
            return {str(r[0]): int(r[1]) for r in cur.fetchall()}

    def read_all(self, nodes: Sequence[DbNode]) -> dict[str, dict[str, int] | str]:
        out: dict[str, dict[str, int] | str] = {}
        for n in nodes:
            try:
                out[n.name] = self.read_node(n)
            except Exception as exc:  # noqa: BLE001 - an unreadable node makes the verdict UNKNOWN
                out[n.name] = f"{type(exc).__name__}: {exc}"
        return out
