"""A list-append history exported to EDN (verify/edn.py) and read back gives the same verdict:
every conformance history, seeded random serial histories, and a synthetic anomalous one."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from clusterbench.checkers.list_append import check_list_append
from clusterbench.history.txn import Txn
from clusterbench.verify.edn import list_append_edn

from .edn_reader import parse, read_list_append
from .list_append_cases import CASES, Case, history
from .test_list_append import _serial_random_history

sys.path.insert(0, str(Path(__file__).parents[3] / "benchmarks"))
import anomaly_checkers  # noqa: E402

GALERA_DEFAULT = ("lost-update", "internal", "stale-read", "G2-item")


def signature(txns: list[Txn], documented: tuple[str, ...] = ()) -> dict[str, Any]:
    v = check_list_append(txns, documented=documented)
    ev = v.evidence
    return {
        "result": v.result,
        "documented_limitation": v.documented_limitation,
        "counts": {k: s["count"] for k, s in ev["anomalies"].items()},
        "strongest": ev["strongest_models"],
        "broken": ev["broken"],
        "documented_seen": ev["documented_seen"],
        "outcomes": ev["outcomes"],
    }


def round_trip(txns: list[Txn]) -> list[Txn]:
    return read_list_append(list_append_edn(txns))


@pytest.mark.parametrize("c", CASES, ids=[f"{c.cls}: {c.name}" for c in CASES])
def test_conformance_histories_round_trip(c: Case) -> None:
    txns = history(c.specs)
    back = round_trip(txns)
    assert len(back) == len(txns)
    assert signature(back, GALERA_DEFAULT) == signature(txns, GALERA_DEFAULT)


@pytest.mark.parametrize("seed", range(5))
def test_random_serial_histories_round_trip(seed: int) -> None:
    txns = _serial_random_history(seed)
    assert signature(round_trip(txns)) == signature(txns)


def test_anomalous_history_round_trips_with_the_same_counts() -> None:
    txns = anomaly_checkers.list_append_history(1500, keys=4, stale=0.2, seed=7)
    before = signature(txns, GALERA_DEFAULT)
    assert before["result"].value == "FAIL" and before["counts"]["G-single"] > 0
    assert signature(round_trip(txns), GALERA_DEFAULT) == before


def test_reader_reads_the_printer() -> None:
    assert parse('{:a [1 -2 3.5 nil true] :b "x \\"y\\"", :c {:d :e}}') == {
        ":a": [1, -2, 3.5, None, True],
        ":b": 'x "y"',
        ":c": {":d": ":e"},
    }
