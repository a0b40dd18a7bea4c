"""What every verification client shares: connecting to an entry point, running one transaction
with its outcome classified, pacing, and a pool of client threads with a bounded stop."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import pymysql

from clusterbench.history.ops import Outcome, Phase, classify
from clusterbench.spec.endpoint import Address, Endpoint

log = logging.getLogger(__name__)

# Short timeouts: a verification client must notice a dead or stalled node quickly; a COMMIT
# that outlives the read timeout is recorded as unknown.
CONNECT_TIMEOUT = 1.0
RW_TIMEOUT = 3.0


class Connection(Protocol):
    def cursor(self) -> Any: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def close(self) -> None: ...


Connector = Callable[[Endpoint, Address], Connection]


def connect(
    endpoint: Endpoint,
    address: Address,
    *,
    connect_timeout: float = CONNECT_TIMEOUT,
    rw_timeout: float = RW_TIMEOUT,
) -> pymysql.connections.Connection:
    """A new app connection with autocommit off, so that the COMMIT is what gets classified."""
    return pymysql.connect(
        host=address.host,
        port=address.port,
        user=endpoint.user,
        password=endpoint.password,
        database=endpoint.database,
        autocommit=False,
        connect_timeout=connect_timeout,
        read_timeout=rw_timeout,
        write_timeout=rw_timeout,
    )


def default_connector(endpoint: Endpoint, address: Address) -> Connection:
    return connect(endpoint, address)


T = TypeVar("T")


@dataclass
class TxnResult(Generic[T]):
    outcome: Outcome
    value: T | None = None
    error_code: int | None = None
    error: str | None = None
    phase: Phase | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


def run_transaction(conn: Connection, body: Callable[[Any], T], *, read_only: bool = False) -> TxnResult[T]:
    """Run `body(cursor)` then COMMIT; classify an error by where it happened (history.classify).

    After an error the caller must drop the connection (its state is unknown)."""
    phase = Phase.READ if read_only else Phase.STATEMENT
    try:
        with conn.cursor() as cur:
            value = body(cur)
        if not read_only:
            phase = Phase.COMMIT
        conn.commit()
        return TxnResult(Outcome.OK, value)
    except Exception as exc:  # noqa: BLE001 - every error is an outcome here
        outcome, code, msg = classify(exc, phase)
        return TxnResult(outcome, None, code, msg, phase)


def safe_close(conn: Connection | None) -> None:
    if conn is None:
        return
    # Closing a broken connection may raise; it is gone either way.
    with contextlib.suppress(Exception):
        conn.close()


def address_for(endpoint: Endpoint, client: int) -> Address:
    """A client's address inside a multi-address endpoint (all-nodes): spread clients over them."""
    return endpoint.addresses[client % len(endpoint.addresses)]


def process_name(endpoint: Endpoint, address: Address) -> str:
    """The entry point an operation went through, as histories and reports name it."""
    if len(endpoint.addresses) == 1:
        return endpoint.name
    return f"{endpoint.name}/{address.host}"


class Pacer:
    """Fixed-rate ticks that never burst to catch up after a slow operation."""

    def __init__(self, rate: float, now: Callable[[], float]) -> None:
        if rate <= 0:
            raise ValueError("rate must be > 0")
        self.period = 1.0 / rate
        self.now = now
        self.next = now()

    def delay(self) -> float:
        """Seconds to wait before the next operation; advances the schedule."""
        t = self.now()
        at = max(self.next, t)
        self.next = at + self.period
        return at - t


class ClientPool:
    """Threads running `loop(client_id, stop_event)`; stop() is bounded (threads are daemons, so a
    client stuck in a socket call past its timeouts cannot hold the process)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self, clients: Sequence[int], loop: Callable[[int, threading.Event], None]) -> None:
        if self.threads:
            raise RuntimeError(f"{self.name} already started")
        self.stop_event.clear()
        for c in clients:
            t = threading.Thread(target=self._guard, args=(loop, c), name=f"{self.name}-{c}", daemon=True)
            self.threads.append(t)
            t.start()

    def _guard(self, loop: Callable[[int, threading.Event], None], c: int) -> None:
        try:
            loop(c, self.stop_event)
        except Exception:  # noqa: BLE001 - a crashed client must not go unnoticed
            log.exception("%s client %d crashed", self.name, c)

    def stop(self, timeout: float = 2 * (CONNECT_TIMEOUT + RW_TIMEOUT)) -> list[str]:
        """Signal and join; returns the names of threads still running after `timeout`."""
        self.stop_event.set()
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in self.threads if t.is_alive()]
        self.threads = []
        return stuck

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self.threads)
