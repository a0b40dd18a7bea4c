"""List-append workload (checkers.list_append, Elle's append test): transactions of a few reads
and appends over small lists, one row per key with the list as comma-separated integers.

- append: `INSERT ... ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', x)` with an integer unique in the
  whole run; a read: `SELECT v` (with `reads = "for-update"`: `SELECT ... FOR UPDATE`).
- Keys rotate: after `appends_per_key` appends a key is retired and a fresh one takes its place,
  so lists stay short and reads cheap over long runs.
- Every transaction is recorded with its outcome; an ok one with what each read returned.
- After heal every node's lists are read in a causal session and recorded as `final-read` ops:
  they fix the version order and show acknowledged appends that went missing.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Sequence
from typing import Any, Unpack

from clusterbench.checkers.list_append import check_list_append
from clusterbench.checkers.verdict import Result, Verdict, guarded
from clusterbench.engines.base import LOCKING_READS_RULE_OUT, DbNode, SessionSql
from clusterbench.history.ops import History, Op, Outcome, Timebase
from clusterbench.history.txn import FINAL_CLIENT_BASE, WORKLOAD, MicroOp, encode, parse_list, txns_from_ops
from clusterbench.spec.endpoint import Endpoint
from clusterbench.verify.client import Connection, safe_close
from clusterbench.verify.sessions import documented, statements
from clusterbench.verify.workload import ClientOptions, Workload, endpoints_of

TABLE = "cb_append"
READS = ("plain", "for-update")


class KeyPool:
    """The keys transactions choose from, shared by all clients: `size` active keys, each retired
    after `appends_per_key` appends (a new key takes its place). Thread-safe."""

    def __init__(self, size: int, appends_per_key: int, rng: random.Random) -> None:
        if size < 1:
            raise ValueError("list-append needs at least 1 key")
        self.size = size
        self.limit = appends_per_key
        self.rng = rng
        self._lock = threading.Lock()
        self.active = list(range(1, size + 1))
        self.next_key = size + 1
        self.appends: dict[int, int] = {}
        self.used: set[int] = set(self.active)
        self._values = itertools.count(1)

    def pick(self) -> int:
        with self._lock:
            return self.rng.choice(self.active)

    def append_to(self) -> tuple[int, int]:
        """(key, a value never used before) for one append."""
        with self._lock:
            k = self.rng.choice(self.active)
            n = self.appends.get(k, 0) + 1
            self.appends[k] = n
            if self.limit and n >= self.limit:
                self.active[self.active.index(k)] = self.next_key
                self.used.add(self.next_key)
                self.next_key += 1
            return k, next(self._values)

    def all_keys(self) -> list[int]:
        with self._lock:
            return sorted(self.used)


class ListAppendWorkload(Workload[None]):
    NAME = WORKLOAD
    DEFAULT_TABLE = TABLE
    CLIENT_BASE = 4000
    COUNTED = "txn"

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        history: History,
        timebase: Timebase,
        *,
        keys: int = 8,
        clients_per_endpoint: int = 1,
        rate: float = 20.0,
        min_ops: int = 1,
        max_ops: int = 4,
        read_fraction: float = 0.5,
        appends_per_key: int = 32,
        reads: str = "plain",
        session: SessionSql | None = None,
        session_kind: str = "default",
        seed: int | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        endpoints = endpoints_of(endpoints, "list-append")
        if not 1 <= min_ops <= max_ops:
            raise ValueError("list-append needs 1 <= min_ops <= max_ops")
        if reads not in READS:
            raise ValueError(f"reads must be one of {', '.join(READS)}")
        stmts = statements(session, session_kind)
        super().__init__(history, timebase, rate=rate, seed=seed, statements=stmts, **options)
        self.endpoints = endpoints
        self.session = session
        self.min_ops = min_ops
        self.max_ops = max_ops
        self.read_fraction = read_fraction
        self.reads = reads
        self.session_kind = session_kind
        self.pool_keys = KeyPool(keys, appends_per_key, random.Random(seed))
        self.assignments: list[tuple[int, Endpoint]] = []
        cid = self.client_base
        for e in self.endpoints:
            for _ in range(clients_per_endpoint):
                self.assignments.append((cid, e))
                cid += 1
        self.clients = [c for c, _ in self.assignments]

    def create(self, cur: Any) -> None:
        cur.execute(f"CREATE TABLE {self.table} (k INT NOT NULL PRIMARY KEY, v MEDIUMTEXT NOT NULL) "
                    "ENGINE=InnoDB")  # fmt: skip

    def generate(self, rng: random.Random) -> list[MicroOp]:
        out = []
        for _ in range(rng.randint(self.min_ops, self.max_ops)):
            if rng.random() < self.read_fraction:
                out.append(MicroOp("r", self.pool_keys.pick(), None))
            else:
                k, v = self.pool_keys.append_to()
                out.append(MicroOp("append", k, v))
        return out

    def _loop(self, client: int, stop: threading.Event) -> None:
        endpoint = next(e for c, e in self.assignments if c == client)
        conn: Connection | None = None
        for rng in self.ticks(client, stop):
            conn = self.transact(client, endpoint, conn, self.generate(rng))
        safe_close(conn)

    def transact(
        self, client: int, endpoint: Endpoint, conn: Connection | None, mops: list[MicroOp]
    ) -> Connection | None:
        t = self.table
        lock = " FOR UPDATE" if self.reads == "for-update" else ""

        def body(cur: Any) -> list[MicroOp]:
            done = []
            for m in mops:
                if m.f == "r":
                    cur.execute(f"SELECT v FROM {t} WHERE k = %s{lock}", (m.key,))
                    row = cur.fetchone()
                    done.append(MicroOp("r", m.key, parse_list(None if row is None else str(row[0]))))
                else:
                    cur.execute(
                        f"INSERT INTO {t} (k, v) VALUES (%s, %s) "
                        "ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', %s)",
                        (m.key, str(m.value), str(m.value)),
                    )
                    done.append(m)
            return done

        conn, _, _ = self.ops_runner.run(
            client,
            endpoint,
            conn,
            "txn",
            None,
            body,
            lambda done, ok: encode(done if ok and done is not None else mops),
            read_only=not any(m.f == "append" for m in mops),
        )
        return conn

    # ---- after heal -----------------------------------------------------------------------

    def final_reads(self, nodes: Sequence[DbNode]) -> dict[str, str]:
        """Read every key used on every node (causal session) and record each node's lists as one
        ok `final-read` op. Returns the nodes that could not be read, with the error."""
        keys = self.pool_keys.all_keys()
        errors: dict[str, str] = {}
        for n in nodes:
            wall0, t0 = self.tb.stamp()
            try:
                lists = {
                    int(r[0]): parse_list(str(r[1]))
                    for r in self.causal_rows(n, f"SELECT k, v FROM {self.table}")
                }
            except Exception as exc:  # noqa: BLE001 - an unreadable node is reported, not fatal
                errors[n.name] = f"{type(exc).__name__}: {exc}"
                continue
            wall1, t1 = self.tb.stamp()
            mops = [MicroOp("r", k, lists.get(k, ())) for k in sorted(set(keys) | set(lists))]
            self.history.add(
                Op(WORKLOAD, FINAL_CLIENT_BASE + n.index, f"final:{n.name}", n.address, "final-read", None,
                   encode(mops), wall0, wall1, t0, t1, Outcome.OK)
            )  # fmt: skip
        return errors

    def verdicts(self, nodes: Sequence[DbNode]) -> list[Verdict]:
        """Every node's lists read as final reads, then the dependency graph's verdict; a node that
        could not be read turns a PASS into UNKNOWN (its lists might have shown an anomaly)."""
        unreadable = self.final_reads(nodes)
        doc = set(documented(self.session, self.session_kind))
        if self.reads == "for-update":
            doc -= LOCKING_READS_RULE_OUT
        label = f"{self.session_kind}/{self.reads}"

        def check() -> Verdict:
            v = check_list_append(txns_from_ops(self.ops()), documented=doc, label=label)
            v.evidence["session_statements"] = list(statements(self.session, self.session_kind))
            if unreadable:
                v.evidence["unreadable_nodes"] = unreadable
                if v.result is Result.PASS:
                    lists = ", ".join(sorted(unreadable))
                    why = f"could not read the lists on {lists}"
                    return Verdict(v.checker, Result.UNKNOWN, why, v.evidence)
            return v

        return [guarded(f"list-append:{label}", check)]
