"""Lost-update counter workload (checkers.counter): clients on every entry point increment a few
counters, each increment one transaction, in one of three modes:

- `read-modify-write`: `SELECT v`, then `UPDATE ... SET v = <what was read + 1>`: a concurrent
  increment committed between the two is silently overwritten (P4), on one InnoDB server at
  REPEATABLE READ and across Galera nodes alike;
- `for-update`: the same with `SELECT ... FOR UPDATE` (locks locally; a remote write-set that
  touches the row aborts us): no increment may be lost;
- `increment`: `UPDATE ... SET v = v + 1`, computed by the server: no increment may be lost.

Each mode has its own counters (`<mode>/<k>` rows of one table), so the modes run side by side.
After heal every node's values are read in a causal session."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Unpack

from clusterbench.checkers.counter import WORKLOAD, check_counter
from clusterbench.checkers.verdict import Verdict, guarded
from clusterbench.engines.base import DbNode, SessionSql
from clusterbench.history.ops import History, Timebase
from clusterbench.spec.endpoint import Endpoint
from clusterbench.verify.client import Connection, safe_close
from clusterbench.verify.sessions import documented, statements
from clusterbench.verify.workload import ClientOptions, Workload, endpoints_of

TABLE = "cb_counter"
MODES: tuple[str, ...] = ("read-modify-write", "for-update", "increment")


def counter_key(mode: str, k: int) -> str:
    return f"{mode}/{k}"


class CounterWorkload(Workload[dict[str, int]]):
    """For every mode, `clients_per_endpoint` clients on each endpoint; each increments a random
    counter of its mode at `rate` per second (0: back to back). Client ids are `client_base + i`."""

    NAME = WORKLOAD
    DEFAULT_TABLE = TABLE
    CLIENT_BASE = 2000
    COUNTED = "incr"

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        history: History,
        timebase: Timebase,
        *,
        modes: Sequence[str] = MODES,
        keys: int = 1,
        clients_per_endpoint: int = 1,
        rate: float = 0.0,
        think_time: float = 0.0,
        session: SessionSql | None = None,
        session_kind: str = "default",
        seed: int | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        endpoints = endpoints_of(endpoints, "the counter workload")
        if keys < 1:
            raise ValueError("the counter workload needs at least 1 key")
        bad = [m for m in modes if m not in MODES]
        if bad or not modes:
            raise ValueError(f"unknown counter mode(s) {bad}; known: {', '.join(MODES)}")
        stmts = statements(session, session_kind)
        super().__init__(history, timebase, rate=rate, seed=seed, statements=stmts, **options)
        self.endpoints = endpoints
        self.modes = list(modes)
        self.keys = keys
        self.think_time = think_time
        self.session = session
        self.session_kind = session_kind
        # (client id, mode, endpoint)
        self.assignments: list[tuple[int, str, Endpoint]] = []
        cid = self.client_base
        for mode in self.modes:
            for e in self.endpoints:
                for _ in range(clients_per_endpoint):
                    self.assignments.append((cid, mode, e))
                    cid += 1
        self.clients = [a[0] for a in self.assignments]

    def all_keys(self, mode: str | None = None) -> list[str]:
        return [counter_key(m, k) for m in self.modes if mode in (None, m) for k in range(1, self.keys + 1)]

    def create(self, cur: Any) -> None:
        cur.execute(f"CREATE TABLE {self.table} (name VARCHAR(64) NOT NULL PRIMARY KEY, v BIGINT NOT NULL) "
                    "ENGINE=InnoDB")  # fmt: skip
        cur.executemany(f"INSERT INTO {self.table} (name, v) VALUES (%s, 0)", [(k,) for k in self.all_keys()])

    def _loop(self, client: int, stop: threading.Event) -> None:
        _, mode, endpoint = next(a for a in self.assignments if a[0] == client)
        conn: Connection | None = None
        for rng in self.ticks(client, stop):
            conn = self.increment(client, mode, counter_key(mode, rng.randint(1, self.keys)), endpoint, conn)
        safe_close(conn)

    def increment(
        self, client: int, mode: str, key: str, endpoint: Endpoint, conn: Connection | None
    ) -> Connection | None:
        """One increment with its op recorded (value: the value written, when the client knows it)."""
        t = self.table

        def body(cur: Any) -> int | None:
            if mode == "increment":
                cur.execute(f"UPDATE {t} SET v = v + 1 WHERE name = %s", (key,))
                return None
            lock = " FOR UPDATE" if mode == "for-update" else ""
            cur.execute(f"SELECT v FROM {t} WHERE name = %s{lock}", (key,))
            row = cur.fetchone()
            if row is None:
                raise LookupError(f"counter {key} has no row")
            if self.think_time > 0:
                threading.Event().wait(self.think_time)
            new = int(row[0]) + 1
            cur.execute(f"UPDATE {t} SET v = %s WHERE name = %s", (new, key))
            return new

        conn, _, _ = self.ops_runner.run(
            client, endpoint, conn, "incr", key, body, lambda v, ok: None if v is None else str(v)
        )
        return conn

    def read_node(self, node: DbNode) -> dict[str, int]:
        return {str(r[0]): int(r[1]) for r in self.causal_rows(node, f"SELECT name, v FROM {self.table}")}

    def verdicts(self, nodes: Sequence[DbNode]) -> list[Verdict]:
        """One verdict per mode, over every node's values now."""
        final = self.read_all(nodes)
        doc = documented(self.session, self.session_kind)
        return [
            guarded(f"counter:{mode}", lambda m=mode: check_counter(  # type: ignore[misc]
                self.ops(), final, mode=m, keys=self.all_keys(m), documented=doc))
            for mode in self.modes
        ]  # fmt: skip
