"""The TPC-C consistency SQL on crafted SQLite tables: a freshly loaded database passes all twelve
conditions, one change behind the workload's back fails exactly the condition it breaks."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from clusterbench.workloads.tpcc_check import CONDITIONS, check, cursor_query

CUSTOMERS = 10  # per district; orders 1..7 delivered, 8..10 in NEW-ORDER
DISTRICTS = 2

SCHEMA = """
CREATE TABLE warehouse (w_id INT, w_ytd REAL);
CREATE TABLE district (d_w_id INT, d_id INT, d_ytd REAL, d_next_o_id INT);
CREATE TABLE customer (c_w_id INT, c_d_id INT, c_id INT, c_balance REAL, c_ytd_payment REAL);
CREATE TABLE history (h_c_w_id INT, h_c_d_id INT, h_c_id INT, h_w_id INT, h_d_id INT, h_amount REAL);
CREATE TABLE orders (o_w_id INT, o_d_id INT, o_id INT, o_c_id INT, o_carrier_id INT, o_ol_cnt INT);
CREATE TABLE new_order (no_w_id INT, no_d_id INT, no_o_id INT);
CREATE TABLE order_line (ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT, ol_delivery_d TEXT,
                         ol_amount REAL);
"""


def loaded() -> sqlite3.Connection:
    """The state cb_tpcc.lua's prepare leaves (amounts as it writes them)."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    w = 1
    db.execute("INSERT INTO warehouse VALUES (?, ?)", (w, DISTRICTS * CUSTOMERS * 10.0))
    for d in range(1, DISTRICTS + 1):
        db.execute("INSERT INTO district VALUES (?, ?, ?, ?)", (w, d, CUSTOMERS * 10.0, CUSTOMERS + 1))
        for c in range(1, CUSTOMERS + 1):
            db.execute("INSERT INTO customer VALUES (?, ?, ?, -10.0, 10.0)", (w, d, c))
            db.execute("INSERT INTO history VALUES (?, ?, ?, ?, ?, 10.0)", (w, d, c, w, d))
        for o in range(1, CUSTOMERS + 1):
            delivered = o <= CUSTOMERS * 7 // 10
            lines = 5 + o % 3
            db.execute("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)",
                       (w, d, o, CUSTOMERS + 1 - o, 3 if delivered else None, lines))  # fmt: skip
            for n in range(1, lines + 1):
                db.execute("INSERT INTO order_line VALUES (?, ?, ?, ?, ?, ?)",
                           (w, d, o, n, "2026-01-01" if delivered else None,
                            0.0 if delivered else 12.5))  # fmt: skip
            if not delivered:
                db.execute("INSERT INTO new_order VALUES (?, ?, ?)", (w, d, o))
    return db


@pytest.fixture
def db() -> Iterator[sqlite3.Connection]:
    conn = loaded()
    yield conn
    conn.close()


def failed(db: sqlite3.Connection, when: str = "load") -> list[int]:
    return [r.number for r in check(cursor_query(db.cursor()), when=when).failed]


def test_a_fresh_load_passes_all_twelve(db: sqlite3.Connection) -> None:
    report = check(cursor_query(db.cursor()), when="load")
    assert [r.number for r in report.results] == list(range(1, 13))
    assert report.verdict == "PASS"
    assert all(r.status == "PASS" for r in report.results)


def new_order_tx(db: sqlite3.Connection, d: int, c: int, amounts: list[float]) -> None:
    o = db.execute("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = ?", (d,)).fetchone()[0]
    db.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = ?", (d,))
    db.execute("INSERT INTO orders VALUES (1, ?, ?, ?, NULL, ?)", (d, o, c, len(amounts)))
    db.execute("INSERT INTO new_order VALUES (1, ?, ?)", (d, o))
    for n, a in enumerate(amounts, 1):
        db.execute("INSERT INTO order_line VALUES (1, ?, ?, ?, NULL, ?)", (d, o, n, a))


def payment_tx(db: sqlite3.Connection, d: int, c: int, amount: float) -> None:
    db.execute("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = 1", (amount,))
    db.execute("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = 1 AND d_id = ?", (amount, d))
    db.execute("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ? "
               "WHERE c_w_id = 1 AND c_d_id = ? AND c_id = ?", (amount, amount, d, c))  # fmt: skip
    db.execute("INSERT INTO history VALUES (1, ?, ?, 1, ?, ?)", (d, c, d, amount))


def delivery_tx(db: sqlite3.Connection, d: int) -> None:
    o = db.execute("SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = 1 AND no_d_id = ?", (d,)).fetchone()[0]
    db.execute("DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = ? AND no_o_id = ?", (d, o))
    c = db.execute(
        "SELECT o_c_id FROM orders WHERE o_w_id = 1 AND o_d_id = ? AND o_id = ?", (d, o)
    ).fetchone()[0]
    db.execute("UPDATE orders SET o_carrier_id = 4 WHERE o_w_id = 1 AND o_d_id = ? AND o_id = ?", (d, o))
    db.execute("UPDATE order_line SET ol_delivery_d = 'now' "
               "WHERE ol_w_id = 1 AND ol_d_id = ? AND ol_o_id = ?",
               (d, o))  # fmt: skip
    total = db.execute("SELECT SUM(ol_amount) FROM order_line "
                       "WHERE ol_w_id = 1 AND ol_d_id = ? AND ol_o_id = ?",
                       (d, o)).fetchone()[0]  # fmt: skip
    db.execute("UPDATE customer SET c_balance = c_balance + ? WHERE c_w_id = 1 AND c_d_id = ? AND c_id = ?",
               (total, d, c))  # fmt: skip


def test_the_workloads_own_transactions_keep_every_condition_but_the_load_only_one(
    db: sqlite3.Connection,
) -> None:
    new_order_tx(db, 1, 3, [10.0, 20.5, 7.25])
    payment_tx(db, 2, 5, 123.45)
    delivery_tx(db, 1)
    delivery_tx(db, 2)
    after_run = check(cursor_query(db.cursor()), when="run")
    assert after_run.verdict == "PASS"
    statuses = {r.number: r.status for r in after_run.results}
    assert statuses[11] == "load-only"
    assert all(s == "PASS" for n, s in statuses.items() if n != 11)
    assert "load-only" in after_run.summary_line()
    # the same state judged as "right after loading" fails condition 11 only
    assert failed(db, "load") == [11]


# one change behind the workload's back per condition, and the conditions it must break
TAMPER: list[tuple[str, list[int]]] = [
    ("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_id = 1", [1, 9]),
    ("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_id = 2", [2]),
    ("DELETE FROM new_order WHERE no_d_id = 1 AND no_o_id = 9", [3, 5, 11]),
    ("DELETE FROM order_line WHERE ol_d_id = 2 AND ol_o_id = 2 AND ol_number = 1", [4, 6]),
    ("UPDATE orders SET o_carrier_id = 1 WHERE o_d_id = 1 AND o_id = 10", [5, 7]),
    ("UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_d_id = 1 AND o_id = 3", [4, 6]),
    (
        "UPDATE order_line SET ol_o_id = 3, ol_number = 99 "
        "WHERE ol_d_id = 2 AND ol_o_id = 2 AND ol_number = 1",
        [6],
    ),
    ("UPDATE order_line SET ol_delivery_d = NULL WHERE ol_d_id = 1 AND ol_o_id = 2 AND ol_number = 2", [7]),
    ("UPDATE warehouse SET w_ytd = w_ytd + 1", [1, 8]),
    ("UPDATE history SET h_amount = 11 WHERE h_c_id = 4 AND h_c_d_id = 2", [8, 9, 10]),
    ("UPDATE customer SET c_balance = c_balance - 5 WHERE c_d_id = 1 AND c_id = 7", [10, 12]),
    ("INSERT INTO orders VALUES (1, 2, 11, 1, 5, 0)", [2, 6, 11]),
    ("UPDATE customer SET c_ytd_payment = 11 WHERE c_d_id = 2 AND c_id = 2", [12]),
]


@pytest.mark.parametrize(("sql", "broken"), TAMPER, ids=[f"c{b[0]}" for _, b in TAMPER])
def test_a_row_changed_behind_the_workloads_back_fails_its_condition(
    db: sqlite3.Connection, sql: str, broken: list[int]
) -> None:
    db.execute(sql)
    assert failed(db) == broken
    report = check(cursor_query(db.cursor()), when="load")
    assert report.verdict == "FAIL"
    first = next(c for c in CONDITIONS if c.number == broken[0])
    assert f"condition {first.number} ({first.title})" in report.summary_line()
    bad = next(r for r in report.results if r.number == broken[0])
    assert bad.violations >= 1 and bad.example is not None
    assert bad.line().startswith(f"condition {broken[0]} (")


def test_every_condition_has_a_negative_control() -> None:
    covered = {n for _, broken in TAMPER for n in broken}
    assert covered == set(range(1, 13))
    # and these are each broken alone by some change
    alone = {b[0] for _, b in TAMPER if len(b) == 1}
    assert alone == {2, 6, 7, 12}


def test_only_runs_the_conditions_asked_for(db: sqlite3.Connection) -> None:
    report = check(cursor_query(db.cursor()), when="load", only=[1, 8])
    assert [r.number for r in report.results] == [1, 8]
