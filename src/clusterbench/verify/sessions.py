"""Session kinds of the anomaly workloads, with the statements taken from the engine's SessionSql
(engines.base): `default` is the engine's default session (stale reads possible), `causal` the
one whose reads see every write acknowledged before them. Workloads never name an engine's
variables themselves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from clusterbench.engines.base import SessionSql
from clusterbench.history.ops import History, Op, Phase, Timebase, classify
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.verify.client import (
    Connection,
    Connector,
    TxnResult,
    address_for,
    process_name,
    run_transaction,
    safe_close,
)

T = TypeVar("T")

SessionKind = Literal["default", "causal"]
SESSION_KINDS: tuple[str, ...] = ("default", "causal")


def statements(session: SessionSql | None, kind: str) -> tuple[str, ...]:
    if session is None:
        return ()
    if kind == "causal":
        return session.causal
    if kind == "default":
        return session.default
    raise ValueError(f"unknown session kind {kind!r}; use default or causal")


def documented(session: SessionSql | None, kind: str) -> tuple[str, ...]:
    """Anomalies the engine documents as possible in that session."""
    if session is None:
        return ()
    return session.documented_causal if kind == "causal" else session.documented_default


def open_session(
    connector: Connector, endpoint: Endpoint, address: Address, stmts: tuple[str, ...]
) -> Connection:
    """A new connection with the session statements run (raises like the connector)."""
    conn = connector(endpoint, address)
    try:
        with conn.cursor() as cur:
            for s in stmts:
                cur.execute(s)
    except BaseException:
        safe_close(conn)
        raise
    return conn


@dataclass(eq=False)
class SessionOps:
    """Runs one recorded operation of a workload through a session connection: connects (with the
    session's statements) when needed, runs the transaction, records the op with its outcome, and
    drops the connection after an error. One instance per workload; connections belong to the
    calling client thread."""

    workload: str
    history: History
    timebase: Timebase
    connector: Connector
    stmts: tuple[str, ...]

    def run(
        self,
        client: int,
        endpoint: Endpoint,
        conn: Connection | None,
        kind: str,
        key: str | None,
        body: Callable[[Any], T],
        value_of: Callable[[T | None, bool], str | None],
        *,
        read_only: bool = False,
        address: Address | None = None,
    ) -> tuple[Connection | None, TxnResult[T], Op]:
        """`value_of(result, ok)`: the op's recorded value (called with None when it failed).
        `address`: where in `endpoint` to connect (default: the client's own, `address_for`)."""
        if address is None:
            address = address_for(endpoint, client)
        wall0, t0 = self.timebase.stamp()
        if conn is None:
            try:
                conn = open_session(self.connector, endpoint, address, self.stmts)
            except Exception as exc:  # noqa: BLE001 - a refused connection is a failed op
                outcome, code, msg = classify(exc, Phase.CONNECT)
                res: TxnResult[T] = TxnResult(outcome, None, code, msg, Phase.CONNECT)
                return None, res, self._record(client, endpoint, address, kind, key, value_of(None, False),
                                               wall0, t0, res)  # fmt: skip
        res = run_transaction(conn, body, read_only=read_only)
        op = self._record(client, endpoint, address, kind, key, value_of(res.value, res.ok), wall0, t0, res)
        if not res.ok:
            safe_close(conn)
            conn = None
        return conn, res, op

    def _record(
        self,
        client: int,
        endpoint: Endpoint,
        address: Address,
        kind: str,
        key: str | None,
        value: str | None,
        wall0: float,
        t0: float,
        res: TxnResult[Any],
    ) -> Op:
        wall1, t1 = self.timebase.stamp()
        op = Op(self.workload, client, process_name(endpoint, address), address.host, kind, key, value,
                wall0, wall1, t0, t1, res.outcome, res.error_code, res.error)  # fmt: skip
        self.history.add(op)
        return op
