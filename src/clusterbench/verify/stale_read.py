"""Stale-read probe (C5, checkers.stale_read): write on node A, and as soon as the COMMIT is
acknowledged, read on node B.

One client per (writer, reader) pair and session kind. The client owns one row; it writes
version 1, 2, 3, ... on A (`UPDATE ... SET v = <version>`), and after each acknowledged write reads
the row on B through a connection set up with the session's statements (the engine's `default`
or `causal` session, from its SessionSql). Each read is its own transaction, so it takes a fresh
snapshot. The read op records the version seen and the last acknowledged one."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from clusterbench.engines.base import DbNode, SessionSql
from clusterbench.spec.endpoint import Endpoint
from clusterbench.verify.client import ClientPool, Connection, Connector, Pacer, default_connector, safe_close
from clusterbench.verify.history import History, Op, Timebase
from clusterbench.verify.sessions import SESSION_KINDS, SessionOps, statements

TABLE = "cb_stale"
WORKLOAD = "stale-read"


def ring_pairs(endpoints: Sequence[Endpoint]) -> list[tuple[Endpoint, Endpoint]]:
    """Node i writes, node i+1 reads (the last reads the first's writes): every node both roles."""
    n = len(endpoints)
    if n < 2:
        raise ValueError("the stale-read probe needs at least 2 nodes")
    return (
        [(endpoints[i], endpoints[(i + 1) % n]) for i in range(n)]
        if n > 2
        else [(endpoints[0], endpoints[1])]
    )


class StaleReadProbe:
    def __init__(
        self,
        pairs: Sequence[tuple[Endpoint, Endpoint]],
        history: History,
        timebase: Timebase,
        *,
        session: SessionSql | None,
        sessions: Sequence[str] = SESSION_KINDS,
        rate: float = 50.0,
        client_base: int = 3000,
        schema: str = "sbtest",
        table: str = TABLE,
        connector: Connector = default_connector,
    ) -> None:
        if not pairs:
            raise ValueError("the stale-read probe needs at least one (writer, reader) pair")
        for s in sessions:
            statements(session, s)  # validates the kind
        self.history = history
        self.tb = timebase
        self.rate = rate
        self.table = f"{schema}.{table}"
        self.session = session
        # (client, session kind, writer, reader)
        self.assignments: list[tuple[int, str, Endpoint, Endpoint]] = []
        cid = client_base
        for kind in sessions:
            for w, r in pairs:
                self.assignments.append((cid, kind, w, r))
                cid += 1
        self.clients = [a[0] for a in self.assignments]
        # The writer uses the engine's default session, the reader the session under test.
        self.writer_ops = SessionOps(WORKLOAD, history, timebase, connector, statements(session, "default"))
        self.reader_ops = {
            k: SessionOps(WORKLOAD, history, timebase, connector, statements(session, k)) for k in sessions
        }
        self.pool = ClientPool(WORKLOAD)

    @staticmethod
    def key(kind: str, writer: Endpoint, reader: Endpoint) -> str:
        return f"{kind}/{writer.name}>{reader.name}"

    def keys(self) -> list[str]:
        return [self.key(k, w, r) for _, k, w, r in self.assignments]

    def setup(self, admin: DbNode) -> None:
        with admin.connect(5.0, read_timeout=60) as conn, conn.cursor() as cur:
            cur.execute(
                f"CREATE TABLE {self.table} (name VARCHAR(128) NOT NULL PRIMARY KEY, "
                "v BIGINT NOT NULL) ENGINE=InnoDB"
            )
            cur.executemany(f"INSERT INTO {self.table} (name, v) VALUES (%s, 0)", [(k,) for k in self.keys()])

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
        _, kind, writer, reader = next(a for a in self.assignments if a[0] == client)
        key = self.key(kind, writer, reader)
        pacer = Pacer(self.rate, self.tb.clock.now) if self.rate > 0 else None
        wconn: Connection | None = None
        rconn: Connection | None = None
        version = 0
        acked = 0
        while not stop.wait(pacer.delay() if pacer is not None else 0):
            version += 1
            wconn, acked, rconn = self.step(client, kind, key, writer, reader, version, acked, wconn, rconn)
        safe_close(wconn)
        safe_close(rconn)

    def step(
        self,
        client: int,
        kind: str,
        key: str,
        writer: Endpoint,
        reader: Endpoint,
        version: int,
        acked: int,
        wconn: Connection | None,
        rconn: Connection | None,
    ) -> tuple[Connection | None, int, Connection | None]:
        """Write `version`; if acknowledged, read on the reader at once. Returns the connections
        and the last acknowledged version."""
        t = self.table

        def write(cur: Any) -> None:
            cur.execute(f"UPDATE {t} SET v = %s WHERE name = %s", (version, key))

        wconn, res, _ = self.writer_ops.run(
            client, writer, writer.addresses[0], wconn, "write", key, write, lambda _v, _ok: str(version)
        )
        if not res.ok:
            return wconn, acked, rconn
        acked = version

        def read(cur: Any) -> int | None:
            cur.execute(f"SELECT v FROM {t} WHERE name = %s", (key,))
            row = cur.fetchone()
            return None if row is None else int(row[0])

        pair = f"{writer.name}>{reader.name}"
        rconn, _, _ = self.reader_ops[kind].run(
            client,
            reader,
            reader.addresses[0],
            rconn,
            "read",
            key,
            read,
            lambda seen, ok: json.dumps({"seen": seen, "expect": acked, "pair": pair, "session": kind})
            if ok
            else None,
            read_only=True,
        )
        return wconn, acked, rconn
