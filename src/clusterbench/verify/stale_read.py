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
from typing import Any, Unpack

from clusterbench.checkers.stale_read import WORKLOAD, check_stale_reads
from clusterbench.checkers.verdict import Verdict, guarded
from clusterbench.engines.base import DbNode, SessionSql
from clusterbench.history.ops import History, Timebase
from clusterbench.spec.endpoint import Endpoint
from clusterbench.verify.client import Connection, safe_close
from clusterbench.verify.sessions import SESSION_KINDS, SessionOps, documented, statements
from clusterbench.verify.workload import ClientOptions, Workload

TABLE = "cb_stale"


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


class StaleReadProbe(Workload[None]):
    NAME = WORKLOAD
    DEFAULT_TABLE = TABLE
    CLIENT_BASE = 3000
    COUNTED = "write"

    def __init__(
        self,
        pairs: Sequence[tuple[Endpoint, Endpoint]],
        history: History,
        timebase: Timebase,
        *,
        session: SessionSql | None,
        sessions: Sequence[str] = SESSION_KINDS,
        rate: float = 50.0,
        **options: Unpack[ClientOptions],
    ) -> None:
        if not pairs:
            raise ValueError("the stale-read probe needs at least one (writer, reader) pair")
        for s in sessions:
            statements(session, s)  # validates the kind
        super().__init__(history, timebase, rate=rate, **options)
        self.session = session
        self.sessions = list(sessions)
        # (client, session kind, writer, reader)
        self.assignments: list[tuple[int, str, Endpoint, Endpoint]] = []
        cid = self.client_base
        for kind in sessions:
            for w, r in pairs:
                self.assignments.append((cid, kind, w, r))
                cid += 1
        self.clients = [a[0] for a in self.assignments]
        # The writer uses the engine's default session, the reader the session under test.
        connector = self.connector
        self.writer_ops = SessionOps(WORKLOAD, history, timebase, connector, statements(session, "default"))
        self.reader_ops = {
            k: SessionOps(WORKLOAD, history, timebase, connector, statements(session, k)) for k in sessions
        }

    @staticmethod
    def key(kind: str, writer: Endpoint, reader: Endpoint) -> str:
        return f"{kind}/{writer.name}>{reader.name}"

    def keys(self) -> list[str]:
        return [self.key(k, w, r) for _, k, w, r in self.assignments]

    def create(self, cur: Any) -> None:
        cur.execute(f"CREATE TABLE {self.table} (name VARCHAR(128) NOT NULL PRIMARY KEY, v BIGINT NOT NULL) "
                    "ENGINE=InnoDB")  # fmt: skip
        cur.executemany(f"INSERT INTO {self.table} (name, v) VALUES (%s, 0)", [(k,) for k in self.keys()])

    def _loop(self, client: int, stop: threading.Event) -> None:
        _, kind, writer, reader = next(a for a in self.assignments if a[0] == client)
        key = self.key(kind, writer, reader)
        wconn: Connection | None = None
        rconn: Connection | None = None
        acked = 0
        for version, _ in enumerate(self.ticks(client, stop), start=1):
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
            client,
            writer,
            wconn,
            "write",
            key,
            write,
            lambda _v, _ok: str(version),
            address=writer.addresses[0],
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
            rconn,
            "read",
            key,
            read,
            lambda seen, ok: json.dumps({"seen": seen, "expect": acked, "pair": pair, "session": kind})
            if ok
            else None,
            read_only=True,
            address=reader.addresses[0],
        )
        return wconn, acked, rconn

    def verdicts(self, nodes: Sequence[DbNode]) -> list[Verdict]:
        """One verdict per session kind, from the history alone."""
        return [
            guarded(f"stale-read:{kind}", lambda k=kind: check_stale_reads(  # type: ignore[misc]
                self.ops(), session=k, statements=statements(self.session, k),
                documented=documented(self.session, k)))
            for kind in self.sessions
        ]  # fmt: skip
