"""The anomaly workloads' clients over scripted connections: the SQL each mode sends, the session
statements from the engine's SessionSql, what each operation records and how its outcome is
classified; the list-append key pool."""

from __future__ import annotations

import json
import random

import pymysql

from clusterbench.engines.base import SessionSql
from clusterbench.history.ops import History, Outcome, Timebase
from clusterbench.history.txn import decode
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.verify.counter import CounterWorkload
from clusterbench.verify.list_append import KeyPool, ListAppendWorkload
from clusterbench.verify.stale_read import StaleReadProbe, ring_pairs
from tests.unit.verify.fakes_verify import FakeConn, StepClock

SESSION = SessionSql(monitor=("SET m",), causal=("SET causal",), default=("SET default",))
EPS = [
    Endpoint(name=f"node:{i}", addresses=(Address(host=f"10.0.0.{i}"),), user="u", password="p")
    for i in (1, 2)
]


def lost(code: int = 2013) -> pymysql.err.OperationalError:
    return pymysql.err.OperationalError(code, "Lost connection to server during query")


def test_counter_modes_send_their_sql_and_record_outcomes() -> None:
    conns: list[FakeConn] = []

    def connector(e: Endpoint, a: Address) -> FakeConn:
        conns.append(FakeConn(results=[[], [(41,)], []]))  # SET default; SELECT v -> 41; UPDATE
        return conns[-1]

    h = History()
    w = CounterWorkload(EPS, h, Timebase(StepClock()), session=SESSION, connector=connector)
    c = w.increment(2000, "read-modify-write", "read-modify-write/1", EPS[0], None)
    assert c is conns[0]
    sqls = [s for s, _ in conns[0].executed]
    assert sqls[0] == "SET default"
    assert (
        sqls[1].startswith("SELECT v FROM sbtest.cb_counter WHERE name = %s") and "FOR UPDATE" not in sqls[1]
    )
    assert conns[0].executed[2] == (
        "UPDATE sbtest.cb_counter SET v = %s WHERE name = %s",
        (42, "read-modify-write/1"),
    )
    (op,) = h.ops()
    assert (op.kind, op.key, op.value, op.outcome, op.process) == (
        "incr",
        "read-modify-write/1",
        "42",
        Outcome.OK,
        "node:1",
    )

    conn = FakeConn(results=[[(7,)], []])
    w.increment(2001, "for-update", "for-update/1", EPS[1], conn)
    assert conn.executed[0][0].endswith("FOR UPDATE")
    conn = FakeConn()
    w.increment(2002, "increment", "increment/1", EPS[1], conn)
    assert conn.executed == [("UPDATE sbtest.cb_counter SET v = v + 1 WHERE name = %s", ("increment/1",))]
    # A lost connection on COMMIT: unknown, and the connection is dropped.
    bad = FakeConn(fail_on_commit=lost())
    assert w.increment(2002, "increment", "increment/1", EPS[0], bad) is None
    assert h.ops()[-1].outcome is Outcome.UNKNOWN and bad.closed
    # A certification failure: definitely not committed.
    bad = FakeConn(fail_on_commit=pymysql.err.OperationalError(1213, "Deadlock"))
    w.increment(2002, "increment", "increment/1", EPS[0], bad)
    assert h.ops()[-1].outcome is Outcome.FAIL


def test_stale_probe_writes_then_reads_in_the_session_under_test() -> None:
    writer = FakeConn(results=[[], []])
    reader = FakeConn(results=[[], [(4,)]])
    conns = iter([writer, reader])
    h = History()
    p = StaleReadProbe(ring_pairs(EPS), h, Timebase(StepClock()), session=SESSION, sessions=["causal"],
                       connector=lambda e, a: next(conns))  # fmt: skip
    key = p.key("causal", EPS[0], EPS[1])
    assert key == "causal/node:1>node:2"
    w, acked, r = p.step(3000, "causal", key, EPS[0], EPS[1], 5, 4, None, None)
    assert (w, acked, r) == (writer, 5, reader)
    assert [s for s, _ in writer.executed] == [
        "SET default",
        "UPDATE sbtest.cb_stale SET v = %s WHERE name = %s",
    ]
    assert [s for s, _ in reader.executed] == ["SET causal", "SELECT v FROM sbtest.cb_stale WHERE name = %s"]
    write, read = h.ops()
    assert (write.kind, write.value, write.process) == ("write", "5", "node:1")
    assert read.kind == "read" and read.process == "node:2"
    assert json.loads(read.value or "") == {
        "seen": 4,
        "expect": 5,
        "pair": "node:1>node:2",
        "session": "causal",
    }
    # A failed write is not followed by a read, and the last acknowledged version stays.
    bad = FakeConn(fail_on_commit=lost())
    w, acked, r = p.step(3000, "causal", key, EPS[0], EPS[1], 6, 5, bad, reader)
    assert (w, acked, r) == (None, 5, reader) and len(h.ops()) == 3


def test_list_append_transaction_records_what_it_read() -> None:
    conn = FakeConn(results=[[], [("1,5",)], []])  # SET; SELECT -> "1,5"; INSERT
    h = History()
    w = ListAppendWorkload(EPS, h, Timebase(StepClock()), session=SESSION, session_kind="causal",
                           connector=lambda e, a: conn, seed=3)  # fmt: skip
    from clusterbench.history.txn import MicroOp

    w.transact(4000, EPS[0], None, [MicroOp("r", 2, None), MicroOp("append", 2, 9)])
    assert conn.executed[0][0] == "SET causal"
    assert conn.executed[2] == (
        "INSERT INTO sbtest.cb_append (k, v) VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = CONCAT(v, ',', %s)",
        (2, "9", "9"),
    )
    (op,) = h.ops()
    assert op.kind == "txn" and op.outcome is Outcome.OK
    assert [m.to_json() for m in decode(op.value)] == [["r", 2, [1, 5]], ["append", 2, 9]]
    # Not ok: the reads are recorded unknown.
    bad = FakeConn(results=[[(None,)]], fail_on_commit=lost())
    w.transact(4000, EPS[0], bad, [MicroOp("r", 3, None), MicroOp("append", 3, 10)])
    assert [m.to_json() for m in decode(h.ops()[-1].value)] == [["r", 3, None], ["append", 3, 10]]
    assert h.ops()[-1].outcome is Outcome.UNKNOWN


def test_key_pool_rotates_keys_and_never_reuses_values() -> None:
    pool = KeyPool(2, 3, random.Random(1))
    appends = [pool.append_to() for _ in range(12)]
    values = [v for _, v in appends]
    assert values == list(range(1, 13))
    per_key: dict[int, int] = {}
    for k, _ in appends:
        per_key[k] = per_key.get(k, 0) + 1
    assert all(n <= 3 for n in per_key.values())
    assert len(per_key) >= 4 and set(pool.all_keys()) >= set(per_key)
    assert len(pool.active) == 2
