"""Every run has verification tables of its own: setting one up never drops or reuses a table that
may be another run's, and each trial's names differ."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from clusterbench.history.ops import History, Timebase
from clusterbench.scenario.verification import run_tables
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.verify.bank import BankWorkload
from clusterbench.verify.ledger import LedgerWorkload
from clusterbench.verify.probe import AvailabilityProber
from tests.unit.verify.fakes_verify import FakeConn

EP = Endpoint(name="balancer", addresses=(Address(host="198.18.0.2", port=3306),), user="u", password="p")


class FakeAdmin:
    def __init__(self) -> None:
        self.conn = FakeConn()

    @contextmanager
    def connect(self, timeout: float = 2.0, **kw: Any) -> Iterator[FakeConn]:
        yield self.conn

    def statements(self) -> list[str]:
        return [sql for sql, _ in self.conn.executed]


def test_each_trial_gets_tables_of_its_own() -> None:
    a, b, c = run_tables(7), run_tables(7), run_tables(8)
    assert set(a) == {"ledger", "bank", "probe"}
    assert a["ledger"].startswith("cb_ledger_t7_") and a["probe"].startswith("cb_probe_t7_")
    assert a != b  # the same trial id in another store: still other tables
    assert not set(a.values()) & set(b.values()) and not set(a.values()) & set(c.values())
    assert run_tables(7, "abc") == {
        "ledger": "cb_ledger_t7_abc",
        "bank": "cb_bank_t7_abc",
        "probe": "cb_probe_t7_abc",
    }


def test_setup_creates_its_own_table_and_drops_nothing() -> None:
    names = run_tables(3, "f00")
    admin = FakeAdmin()
    h, tb = History(), Timebase()
    LedgerWorkload([EP], h, tb, table=names["ledger"]).setup(admin)  # type: ignore[arg-type]
    BankWorkload([EP], h, tb, table=names["bank"]).setup(admin)  # type: ignore[arg-type]
    AvailabilityProber([EP], h, tb, table=names["probe"]).setup(admin)  # type: ignore[arg-type]
    stmts = admin.statements()
    assert not [s for s in stmts if "DROP" in s.upper()]
    created = [s.split("(")[0].strip() for s in stmts if s.startswith("CREATE TABLE")]
    assert created == [
        "CREATE TABLE sbtest.cb_ledger_t3_f00",
        "CREATE TABLE sbtest.cb_bank_t3_f00",
        "CREATE TABLE sbtest.cb_probe_t3_f00",
    ]  # not IF NOT EXISTS: a table that exists is never reused
