"""What every verification workload shares, as Jepsen's workloads pair a client with its checker:
clients that each run one recorded operation after another (at `rate` per second, or back to back
at 0), a table of the trial's own that `setup` creates and `drop` removes, what each node holds
after heal (`read_all`, in the engine's causal session), and `verdicts`: the workload's own
checker over its history and that final state. The ledger, bank, counter, stale-read and
list-append workloads are subclasses; the checkers stay pure functions in clusterbench.checkers.
The availability prober shares only the first part (`TableClients`): its own table and clients.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, Generic, TypedDict, TypeVar, Unpack

from clusterbench.checkers.verdict import Verdict
from clusterbench.engines.base import DbNode
from clusterbench.history.ops import History, Op, Timebase
from clusterbench.spec.endpoint import Endpoint
from clusterbench.verify.client import ClientPool, Connector, Pacer, default_connector
from clusterbench.verify.sessions import SessionOps

T = TypeVar("T")


class ClientOptions(TypedDict, total=False):
    """The keyword options every verification client takes besides its own; left out, each takes
    its class's default (TableClients)."""

    client_base: int  # the first client id (CLIENT_BASE): give concurrent clients disjoint bases
    schema: str  # the table's database ("sbtest")
    table: str  # the table's name (DEFAULT_TABLE): each trial gives tables of its own
    connector: Connector  # how clients connect (default_connector; a test passes fakes)


def endpoints_of(endpoints: Sequence[Endpoint], who: str) -> list[Endpoint]:
    """The entry points `who`'s clients connect through: at least one."""
    if not endpoints:
        raise ValueError(f"{who} needs at least one endpoint")
    return list(endpoints)


class TableClients:
    """Client threads (`clients`: their ids from `client_base` on; each runs `_loop`) that record
    their operations in the history under `NAME`, over a table of the trial's own that `setup`
    creates and `drop` removes."""

    NAME: ClassVar[str]
    DEFAULT_TABLE: ClassVar[str]
    CLIENT_BASE: ClassVar[int] = 0

    def __init__(self, history: History, timebase: Timebase, **options: Unpack[ClientOptions]) -> None:
        self.history = history
        self.tb = timebase
        self.table = f"{options.get('schema', 'sbtest')}.{options.get('table', self.DEFAULT_TABLE)}"
        self.client_base = options.get("client_base", self.CLIENT_BASE)
        self.clients: list[int] = []
        self.pool = ClientPool(self.NAME)

    # ---- schema: a table of the trial's own --------------------------------------------------

    def create(self, cur: Any) -> None:
        """CREATE TABLE (fails if it exists: another run's rows are not ours) and its first rows."""
        raise NotImplementedError

    def setup(self, admin: DbNode) -> None:
        with admin.connect(5.0, read_timeout=60) as conn, conn.cursor() as cur:
            self.create(cur)
            conn.commit()

    def drop(self, admin: DbNode) -> None:
        with admin.connect(5.0, read_timeout=60) as conn, conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {self.table}")

    # ---- running --------------------------------------------------------------------------

    def start(self) -> None:
        self.pool.start(self.clients, self._loop)

    def stop(self) -> list[str]:
        """Bounded (about 2 x (connect + read timeout)); returns clients still stuck, if any."""
        return self.pool.stop()

    def ops(self) -> list[Op]:
        return self.history.ops(self.NAME)

    def _loop(self, client: int, stop: threading.Event) -> None:
        raise NotImplementedError


class Workload(TableClients, Generic[T]):
    """`T`: what one node holds after heal, as `read_node` returns it."""

    # the kind of operation that counts as one of the workload's own (the trial checker compares
    # how many it recorded outside the faults with its rate); None: every operation
    COUNTED: ClassVar[str | None] = None

    def __init__(
        self,
        history: History,
        timebase: Timebase,
        *,
        rate: float,
        seed: int | None = None,
        statements: tuple[str, ...] = (),
        **options: Unpack[ClientOptions],
    ) -> None:
        super().__init__(history, timebase, **options)
        self.rate = rate
        self.seed = seed
        connector = options.get("connector", default_connector)
        self.ops_runner = SessionOps(self.NAME, history, timebase, connector, statements)

    @property
    def connector(self) -> Connector:
        """How clients connect (replaceable, e.g. by a test, between operations)."""
        return self.ops_runner.connector

    @connector.setter
    def connector(self, c: Connector) -> None:
        self.ops_runner.connector = c

    def ticks(self, client: int, stop: threading.Event) -> Iterator[random.Random]:
        """One client's schedule: yields (its own seeded random source) at each operation's time,
        until `stop`."""
        rng = random.Random(None if self.seed is None else self.seed * 1000 + client)
        pacer = Pacer(self.rate, self.tb.clock.now) if self.rate > 0 else None
        while not stop.wait(pacer.delay() if pacer is not None else 0):
            yield rng

    def per_second(self) -> float:
        """Operations expected per second (a client running back to back: at least one)."""
        return len(self.clients) * (self.rate if self.rate > 0 else 1.0)

    def recorded(self, outside: Any) -> int:
        """The workload's own operations that started where `outside(t)` holds."""
        return sum(1 for o in self.ops() if (self.COUNTED in (None, o.kind)) and outside(o.t_start))

    # ---- after heal -----------------------------------------------------------------------

    def read_node(self, node: DbNode) -> T:
        raise NotImplementedError

    @staticmethod
    def causal_rows(node: DbNode, sql: str) -> list[tuple[Any, ...]]:
        """Rows of `sql` on one node, after the engine's causal wait; raises if unreadable."""
        with node.connect(2.0, read_timeout=60) as conn, conn.cursor() as cur:
            for stmt in node.session.causal:
                cur.execute(stmt)
            cur.execute(sql)
            return list(cur.fetchall())

    def read_all(self, nodes: Sequence[DbNode]) -> dict[str, T | str]:
        """Per node: what it holds, or the error text when it could not be read."""
        out: dict[str, T | str] = {}
        for n in nodes:
            try:
                out[n.name] = self.read_node(n)
            except Exception as exc:  # noqa: BLE001 - an unreadable node makes the verdict UNKNOWN
                out[n.name] = f"{type(exc).__name__}: {exc}"
        return out

    def verdicts(self, nodes: Sequence[DbNode]) -> list[Verdict]:
        """The workload's checker(s) over its history and every node's state now (after heal)."""
        raise NotImplementedError
