from __future__ import annotations

from pathlib import Path

import pymysql
import pytest

from clusterbench.checkers.split_brain import MonitorSample
from clusterbench.checkers.verdict import Result, Verdict
from clusterbench.history.ops import (
    BatchWriter,
    History,
    Op,
    Outcome,
    Phase,
    Timebase,
    classify,
    classify_code,
)
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.store import Store
from clusterbench.trial.recorder import Recorder, TrialRecord
from clusterbench.verify.client import Pacer, run_transaction
from clusterbench.verify.ledger import LedgerWorkload
from clusterbench.verify.persist import (
    load_monitor_samples,
    load_ops,
)
from clusterbench.verify.probe import AvailabilityProber
from tests.unit.verify.fakes_verify import FakeConn, StepClock, op

F, U = Outcome.FAIL, Outcome.UNKNOWN


@pytest.mark.parametrize(
    ("code", "phase", "expected"),
    [
        (1213, Phase.STATEMENT, F),
        (1020, Phase.STATEMENT, F),
        (1205, Phase.STATEMENT, F),
        (1047, Phase.STATEMENT, F),
        (1062, Phase.STATEMENT, F),
        (2013, Phase.STATEMENT, U),
        (2006, Phase.STATEMENT, U),
        (None, Phase.STATEMENT, U),
        (1213, Phase.COMMIT, F),
        (1020, Phase.COMMIT, F),
        (1205, Phase.COMMIT, F),
        (3101, Phase.COMMIT, F),  # Group Replication: the write set lost certification
        (1180, Phase.COMMIT, U),
        (1047, Phase.COMMIT, U),
        (1062, Phase.COMMIT, U),
        (2013, Phase.COMMIT, U),
        (2006, Phase.COMMIT, U),
        (None, Phase.COMMIT, U),
        (2003, Phase.CONNECT, F),
        (2013, Phase.CONNECT, F),
        (None, Phase.CONNECT, F),
        (2013, Phase.READ, F),
        (1047, Phase.READ, F),
    ],
)
def test_outcome_table(code: int | None, phase: Phase, expected: Outcome) -> None:
    assert classify_code(code, phase) is expected


def test_classify_pymysql_and_socket_errors() -> None:
    lost = pymysql.err.OperationalError(2013, "Lost connection to server during query")
    assert classify(lost, Phase.COMMIT) == (U, 2013, "Lost connection to server during query")
    deadlock = pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock")
    assert classify(deadlock, Phase.COMMIT) == (F, 1213, "Deadlock found when trying to get lock")
    assert classify(TimeoutError("timed out"), Phase.COMMIT) == (U, None, "TimeoutError: timed out")
    assert classify(pymysql.err.InterfaceError(0, ""), Phase.COMMIT) == (U, None, "")


def test_run_transaction_classifies_by_phase() -> None:
    ok = FakeConn()
    assert run_transaction(ok, lambda cur: cur.execute("INSERT 1")).outcome is Outcome.OK
    assert ok.commits == 1

    at_commit = FakeConn(fail_on_commit=pymysql.err.OperationalError(2013, "Lost connection"))
    r = run_transaction(at_commit, lambda cur: cur.execute("INSERT 1"))
    assert (r.outcome, r.error_code, r.phase) == (U, 2013, Phase.COMMIT)

    cert = FakeConn(fail_on_commit=pymysql.err.OperationalError(1213, "Deadlock"))
    r = run_transaction(cert, lambda cur: cur.execute("INSERT 1"))
    assert (r.outcome, r.error_code, r.phase) == (F, 1213, Phase.COMMIT)

    not_primary = FakeConn(fail_on_execute=[pymysql.err.OperationalError(1047, "WSREP has not yet prepared")])
    r = run_transaction(not_primary, lambda cur: cur.execute("INSERT 1"))
    assert (r.outcome, r.error_code, r.phase) == (F, 1047, Phase.STATEMENT)

    read = FakeConn(fail_on_execute=[pymysql.err.OperationalError(2013, "Lost")])
    r = run_transaction(read, lambda cur: cur.execute("SELECT 1"), read_only=True)
    assert (r.outcome, r.phase) == (F, Phase.READ)


def test_pacer_keeps_rate_without_bursts() -> None:
    t = [0.0]
    p = Pacer(20.0, lambda: t[0])
    assert p.delay() == 0.0  # first op at once
    t[0] = 0.01
    assert p.delay() == pytest.approx(0.04)  # next at 0.05
    t[0] = 0.5  # a slow op: 9 slots missed
    assert p.delay() == 0.0  # runs now, no catch-up burst
    assert p.delay() == pytest.approx(0.05)


EP = Endpoint(name="balancer", addresses=(Address(host="198.18.0.2"),), user="u", password="p")


def test_ledger_insert_records_exact_op_and_drops_connection_after_error() -> None:
    h = History()
    tb = Timebase(StepClock(100.0, 0.25), wall=iter([5000.0, 5000.5, 5001.0, 5001.5]).__next__)
    conns = [FakeConn(fail_on_commit=pymysql.err.OperationalError(2013, "Lost connection"))]
    led = LedgerWorkload([EP], h, tb, clients=1, connector=lambda e, a: conns.pop(0))
    assert tb.t0 == 100.0
    conn = led.insert(0, 1, EP, None)
    assert conn is None  # dropped after the error
    assert h.ops() == [
        Op("ledger", 0, "balancer", "198.18.0.2", "insert", "0:1", "0-1", 5000.0, 5000.5, 0.25, 0.5,
           U, 2013, "Lost connection")
    ]  # fmt: skip

    def refuse(e: Endpoint, a: Address) -> FakeConn:
        raise pymysql.err.OperationalError(2003, "Can't connect to MySQL server")

    led.connector = refuse
    assert led.insert(0, 2, EP, None) is None
    last = h.ops()[-1]
    assert (last.key, last.outcome, last.error_code, last.t_start, last.t_end) == ("0:2", F, 2003, 0.75, 1.0)


def test_ledger_reuses_a_good_connection() -> None:
    h = History()
    c = FakeConn()
    led = LedgerWorkload([EP], h, Timebase(StepClock()), clients=1, connector=lambda e, a: c)
    assert led.insert(3, 1, EP, None) is c
    assert led.insert(3, 2, EP, c) is c
    assert [o.key for o in h.ops()] == ["3:1", "3:2"] and c.commits == 2
    assert c.executed[1] == (
        "INSERT INTO sbtest.cb_ledger (client, seq, v) VALUES (%s, %s, %s)",
        (3, 2, "3-2"),
    )


def test_probe_op_uses_a_fresh_connection_each_time() -> None:
    h = History()
    made: list[FakeConn] = []

    def connector(e: Endpoint, a: Address) -> FakeConn:
        made.append(FakeConn())
        return made[-1]

    pr = AvailabilityProber([EP], h, Timebase(StepClock()), connector=connector)
    pr.probe(1000, 1, EP, EP.addresses[0])
    pr.probe(1000, 2, EP, EP.addresses[0])
    assert len(made) == 2 and all(c.closed and c.commits == 1 for c in made)
    assert [(o.process, o.kind, o.key, o.outcome) for o in h.ops()] == [
        ("balancer", "probe", "1", Outcome.OK),
        ("balancer", "probe", "2", Outcome.OK),
    ]


def test_batch_writer_keeps_a_failed_batch_for_the_next_flush() -> None:
    got: list[list[int]] = []
    fail = [True]

    def sink(batch: list[int]) -> None:
        if fail[0]:
            fail[0] = False
            raise OSError("disk full")
        got.append(batch)

    w: BatchWriter[int] = BatchWriter(sink, 0.5)
    w.put(1)
    w.put(2)
    w.flush()
    assert (got, w.failures, w.written) == ([], 1, 0)
    w.put(3)
    w.flush()
    assert (got, w.written) == ([[1, 2, 3]], 3)
    with pytest.raises(ValueError, match="at least once a second"):
        BatchWriter(sink, 2.0)


def test_ops_samples_and_verdicts_roundtrip_through_the_store(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "runs.sqlite")
    run = store.create_run("scenario")
    trial = store.add_trial(run, 1, "verify", {})
    ops = [op("0:1", Outcome.OK, 0.5, 0.6), op("0:2", U, 0.7, 3.7, code=2013)]
    TrialRecord(Recorder(store), run, trial).op_sink()(ops)
    assert load_ops(store, trial) == ops
    assert load_ops(store, trial, "probe") == []
    samples = [
        MonitorSample(1.0, 2e9, "n1", True, "Primary", 3, 7, "u-1", "Synced", True, 42, "a:3306,b:3306")
    ]
    TrialRecord(Recorder(store), run, trial).monitor_sink()(samples)
    assert load_monitor_samples(store, trial) == samples
    v = Verdict("ledger", Result.PASS, "fine", {"ops": {"ok": 1}})
    TrialRecord(Recorder(store), run, trial).verdicts([v])
    got = store.verdicts(run, trial)
    assert [(r["checker"], r["result"], r["evidence"], r["documented_limitation"]) for r in got] == [
        ("ledger", "PASS", {"ops": {"ok": 1}}, False)
    ]
    assert store.path == tmp_path / "runs.sqlite"
    store.close()


def test_history_writes_through_its_writer_on_stop(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "runs.sqlite")
    run = store.create_run("scenario")
    trial = store.add_trial(run, 1, "verify", {})
    h = History(sink=TrialRecord(Recorder(store), run, trial).op_sink(), interval=0.5)
    h.start()
    h.add(op("1:1", Outcome.OK))
    h.stop()  # final flush
    assert [o.key for o in load_ops(store, trial)] == ["1:1"]


class _Node:
    def __init__(self, name: str) -> None:
        self.name = name


def test_monitor_polls_every_node_and_writes_samples() -> None:
    from clusterbench.verify.monitor import SplitBrainMonitor

    written: list[MonitorSample] = []

    def poll(n: object, tb: Timebase) -> MonitorSample:
        wall, t = tb.stamp()
        return MonitorSample(
            t, wall, str(getattr(n, "name", "")), True, "Primary", 3, 5, "u-1", "Synced", True
        )

    mon = SplitBrainMonitor(
        [_Node("n1"), _Node("n2")],  # type: ignore[list-item]
        Timebase(StepClock(0.0, 0.0), wall=lambda: 7.0),
        interval=60.0,  # one poll per node before stop() wakes the threads
        sink=written.extend,
        poll=poll,
    )
    mon.start()
    mon.stop()
    assert [(s.node, s.t, s.wall) for s in mon.samples()] == [("n1", 0.0, 7.0), ("n2", 0.0, 7.0)]
    assert sorted(s.node for s in written) == ["n1", "n2"]
