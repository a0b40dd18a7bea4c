"""Bank workload (C3, Jepsen's bank): accounts with a fixed total; clients on different nodes
transfer between random accounts and read all balances.

A transfer reads both balances, then writes the new values computed by the client. With
`for_update=True` the read is `SELECT ... FOR UPDATE`: the rows are locked locally and a remote
write-set that touches them brute-force aborts us, so the total holds. With `for_update=False`
a write-set applied between our read and our write is silently overwritten (a lost update, P4):
the total drifts. That is a documented Galera limitation, not a broken promise."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any, Unpack

from clusterbench.checkers.bank import WORKLOAD, check_bank
from clusterbench.checkers.verdict import Verdict, guarded
from clusterbench.engines.base import DbNode
from clusterbench.history.ops import History, Timebase
from clusterbench.spec.endpoint import Endpoint
from clusterbench.verify.client import Connection, safe_close
from clusterbench.verify.workload import ClientOptions, Workload, endpoints_of

TABLE = "cb_bank"


class BankWorkload(Workload[dict[str, int]]):
    NAME = WORKLOAD
    DEFAULT_TABLE = TABLE

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
        seed: int | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        endpoints = endpoints_of(endpoints, "the bank")
        if accounts < 2:
            raise ValueError("the bank needs at least 2 accounts")
        super().__init__(history, timebase, rate=rate, seed=seed, **options)
        self.endpoints = endpoints
        self.accounts = list(range(1, accounts + 1))
        self.initial_balance = initial_balance
        self.total = accounts * initial_balance
        self.clients = [self.client_base + i for i in range(clients)]
        self.read_fraction = read_fraction
        self.max_amount = max_amount
        self.for_update = for_update
        # Seconds between the read and the write of a transfer: widens the lost-update window.
        self.think_time = think_time

    @property
    def params(self) -> dict[str, Any]:
        """What the checker needs to know about this bank."""
        return {"accounts": self.accounts, "total": self.total, "for_update": self.for_update}

    def create(self, cur: Any) -> None:
        """The accounts, in a table of this trial's own."""
        cur.execute(f"CREATE TABLE {self.table} (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL) "
                    "ENGINE=InnoDB")  # fmt: skip
        cur.executemany(
            f"INSERT INTO {self.table} (id, balance) VALUES (%s, %s)",
            [(a, self.initial_balance) for a in self.accounts],
        )

    def _loop(self, client: int, stop: threading.Event) -> None:
        endpoint = self.endpoints[(client - self.clients[0]) % len(self.endpoints)]
        conn: Connection | None = None
        for rng in self.ticks(client, stop):
            if rng.random() < self.read_fraction:
                conn = self.read(client, endpoint, conn)
            else:
                a, b = rng.sample(self.accounts, 2)
                conn = self.transfer(client, endpoint, conn, a, b, rng.randint(1, self.max_amount))
        safe_close(conn)

    def read(self, client: int, endpoint: Endpoint, conn: Connection | None) -> Connection | None:
        def body(cur: Any) -> dict[str, int]:
            cur.execute(f"SELECT id, balance FROM {self.table}")
            return {str(r[0]): int(r[1]) for r in cur.fetchall()}

        conn, _, _ = self.ops_runner.run(
            client, endpoint, conn, "read", None, body,
            lambda v, ok: json.dumps(v, sort_keys=True) if ok else None, read_only=True,
        )  # fmt: skip
        return conn

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

        conn, _, _ = self.ops_runner.run(
            client, endpoint, conn, "transfer", f"{src}>{dst}", body, lambda v, ok: str(v) if ok else None
        )
        return conn

    def read_node(self, node: DbNode) -> dict[str, int]:
        return {str(r[0]): int(r[1]) for r in self.causal_rows(node, f"SELECT id, balance FROM {self.table}")}

    def verdicts(self, nodes: Sequence[DbNode]) -> list[Verdict]:
        return [guarded("bank", lambda: check_bank(
            self.ops(), self.read_all(nodes), accounts=self.accounts, total=self.total,
            for_update=self.for_update,
        ))]  # fmt: skip
