"""Operation histories: one record per client operation, with a three-valued outcome.

The outcome rules are RELIABILITY's table. An operation that may or may not have committed is
`unknown`, never `fail`: a checker may then neither count it as lost nor as failed.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Generic, TypeVar

import pymysql

from clusterbench.clock import Clock, SystemClock

log = logging.getLogger(__name__)


class Outcome(enum.StrEnum):
    OK = "ok"
    FAIL = "fail"
    UNKNOWN = "unknown"


class Phase(enum.StrEnum):
    """Where in the operation the error happened."""

    CONNECT = "connect"  # no transaction was sent
    STATEMENT = "statement"  # a statement before COMMIT
    COMMIT = "commit"
    READ = "read"  # a read-only operation: nothing can be committed either way


# Definite aborts: the server rolled the transaction back (RELIABILITY, outcome table).
# 3101: Group Replication rolled the COMMIT back (its write set lost certification, which every
# member decides alike). Measured on a 3-member multi-primary group: 3,778 `v = v + 1` and
# FOR UPDATE increments that ended in 3101 left every member's counter exactly at the
# acknowledged count, i.e. none of them committed.
DEFINITE_ABORT = frozenset({1213, 1020, 1205, 3101})
# "WSREP has not yet prepared node for application use": definite only before COMMIT.
WSREP_NOT_READY = 1047
# Client-side connection errors: 2003 can't connect, 2006 gone away, 2013 lost, 2055 lost (SSL/other).
CONNECTION_ERRORS = frozenset({2002, 2003, 2006, 2013, 2055})


def error_code(exc: BaseException) -> int | None:
    """The MySQL error number of a PyMySQL exception, None for others (timeouts, OSError)."""
    if isinstance(exc, pymysql.err.MySQLError) and exc.args and isinstance(exc.args[0], int):
        return exc.args[0] or None
    return None


def error_message(exc: BaseException) -> str:
    if isinstance(exc, pymysql.err.MySQLError) and len(exc.args) >= 2:
        return str(exc.args[1])[:300]
    return f"{type(exc).__name__}: {exc}"[:300]


def classify_code(code: int | None, phase: Phase) -> Outcome:
    """The outcome of an operation that failed with MySQL error `code` (None: no server error
    number, e.g. a client-side timeout or a reset socket) during `phase`.

    - connect: nothing was sent, so nothing can have committed → fail.
    - read: a read changes nothing → fail (the read simply has no result).
    - before COMMIT: 1213/1020/1205/1047 → fail (server rolled back); any other server error
      (code < 2000, e.g. 1062) → fail (the statement was refused); a lost connection or a
      timeout → unknown (RELIABILITY's table is conservative here: without COMMIT the server
      rolls back, but we do not rely on it).
    - on COMMIT: 1213/1020/1205, and 3101 (Group Replication: certification failed) → fail;
      anything else (1047 "not connected to Primary", 2013,
      2006, timeouts) → unknown.
    """
    if phase in (Phase.CONNECT, Phase.READ):
        return Outcome.FAIL
    if code in DEFINITE_ABORT:
        return Outcome.FAIL
    if phase is Phase.STATEMENT:
        if code == WSREP_NOT_READY or (code is not None and 0 < code < 2000):
            return Outcome.FAIL
        return Outcome.UNKNOWN
    return Outcome.UNKNOWN


def classify(exc: BaseException, phase: Phase) -> tuple[Outcome, int | None, str]:
    code = error_code(exc)
    return classify_code(code, phase), code, error_message(exc)


@dataclass(frozen=True)
class Op:
    """One operation of a verification client.

    `t_start`/`t_end` are monotonic seconds since the trial's start; `wall_start`/`wall_end` are
    time.time(). `key` is workload-specific: 'client:seq' for the ledger, 'from>to' for a bank
    transfer, None for reads and probes. `value` is the written value or the read result (JSON).
    """

    workload: str  # 'ledger' | 'bank' | 'probe'
    client: int
    process: str  # the entry point: 'balancer', 'node:N', 'vip', ...
    address: str
    kind: str  # 'insert' | 'transfer' | 'read' | 'probe'
    key: str | None
    value: str | None
    wall_start: float
    wall_end: float
    t_start: float
    t_end: float
    outcome: Outcome
    error_code: int | None = None
    error: str | None = None

    @property
    def latency(self) -> float:
        return self.t_end - self.t_start

    def to_row(self) -> dict[str, Any]:
        d = asdict(self)
        d["outcome"] = str(self.outcome)
        return d

    @staticmethod
    def from_row(row: dict[str, Any]) -> Op:
        fields = {k: row[k] for k in Op.__dataclass_fields__ if k in row}
        fields["outcome"] = Outcome(row["outcome"])
        return Op(**fields)


class Timebase:
    """Trial time: monotonic seconds since the trial started, plus the wall clock."""

    def __init__(
        self,
        clock: Clock | None = None,
        wall: Callable[[], float] = time.time,
        t0: float | None = None,
    ) -> None:
        self.clock = clock or SystemClock()
        self.wall = wall
        self.t0 = self.clock.now() if t0 is None else t0

    def t(self) -> float:
        return self.clock.now() - self.t0

    def stamp(self) -> tuple[float, float]:
        """(wall, trial time) now."""
        return self.wall(), self.t()


T = TypeVar("T")


class BatchWriter(Generic[T]):
    """Hands records to `flush` in batches from its own thread at most `interval` seconds apart,
    so that a killed run keeps its history up to the last second. A flush that raises keeps its
    batch for the next attempt (and logs)."""

    def __init__(self, flush: Callable[[list[T]], None], interval: float = 0.5, name: str = "writer") -> None:
        if interval > 1.0:
            raise ValueError("the history must be written at least once a second")
        self._flush = flush
        self.interval = interval
        self._pending: list[T] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.name = name
        self.written = 0
        self.failures = 0

    def put(self, record: T) -> None:
        with self._lock:
            self._pending.append(record)

    def flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            self._flush(batch)
            self.written += len(batch)
        except Exception as exc:  # noqa: BLE001 - keep the batch, try again next time
            self.failures += 1
            log.warning("%s: could not write %d records (%s); will retry", self.name, len(batch), exc)
            with self._lock:
                self._pending[:0] = batch

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()
        self.flush()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        else:
            self.flush()


OpSink = Callable[[list[Op]], None]


class History:
    """A thread-safe list of operations; each one is also queued for the sink (the store)."""

    def __init__(self, sink: OpSink | None = None, interval: float = 0.5) -> None:
        self._ops: list[Op] = []
        self._lock = threading.Lock()
        self.writer: BatchWriter[Op] | None = (
            BatchWriter(sink, interval, name="history-writer") if sink is not None else None
        )

    def start(self) -> None:
        if self.writer is not None:
            self.writer.start()

    def stop(self) -> None:
        if self.writer is not None:
            self.writer.stop()

    def add(self, op: Op) -> None:
        with self._lock:
            self._ops.append(op)
        if self.writer is not None:
            self.writer.put(op)

    def ops(self, workload: str | None = None) -> list[Op]:
        with self._lock:
            return [o for o in self._ops if workload is None or o.workload == workload]

    def __len__(self) -> int:
        with self._lock:
            return len(self._ops)
