"""The list-append dependency-graph checker on hand-built histories: each anomaly class makes it
FAIL with the right name and the cycle's transactions; valid histories PASS; transactions of
unknown outcome never turn a valid history into a FAIL."""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

import pytest

from clusterbench.checkers.list_append import analyze, check_list_append
from clusterbench.checkers.verdict import Result
from clusterbench.history.ops import Op, Outcome
from clusterbench.history.txn import MicroOp, Txn, decode, encode, txns_from_ops
from clusterbench.verify.edn import list_append_edn

OK, FAIL, UNK = Outcome.OK, Outcome.FAIL, Outcome.UNKNOWN


def a(k: int, v: int) -> MicroOp:
    return MicroOp("append", k, v)


def r(k: int, *vals: int | None) -> MicroOp:
    if vals == (None,):
        return MicroOp("r", k, None)
    return MicroOp("r", k, tuple(v for v in vals if v is not None))


class H:
    """A history builder: each transaction gets the next id and a time slot."""

    def __init__(self) -> None:
        self.txns: list[Txn] = []

    def t(
        self,
        *mops: MicroOp,
        outcome: Outcome = OK,
        client: int | None = None,
        start: float | None = None,
        end: float | None = None,
        final: bool = False,
    ) -> int:
        # By default every transaction overlaps every other (no real-time order between them) and
        # runs in a client of its own (no session order).
        i = len(self.txns)
        client = i if client is None else client
        s = i * 0.001 if start is None else start
        e = 100.0 if end is None else end
        if outcome is not OK:
            mops = tuple(MicroOp("r", m.key, None) if m.f == "r" else m for m in mops)
        self.txns.append(Txn(i, client, f"node:{client + 1}", outcome, tuple(mops), s, e, final=final))
        return i


def cycle_txns(v: Any, cls: str) -> set[int]:
    ex = v.evidence["anomalies"][cls]["examples"][0]
    return {t["txn"] for t in ex["txns"]}


# ---- valid histories ---------------------------------------------------------------------------


def test_serial_history_passes_strict_serializable() -> None:
    h = H()
    h.t(r(1), a(1, 1))
    h.t(r(1, 1), a(1, 2), a(2, 10))
    h.t(r(1, 1, 2), r(2, 10))
    v = check_list_append(h.txns)
    assert v.result is Result.PASS, v.summary
    assert v.evidence["strongest_level"] == "strict-serializable"
    assert v.evidence["graph"]["edges"] == {"ww": 1, "wr": 3, "rw": 0, "process": 0, "realtime": 0}
    assert "no anomaly: consistent with strict-serializable" in v.summary


def test_no_reads_is_unknown_not_pass() -> None:
    h = H()
    h.t(a(1, 1))
    h.t(a(1, 2), outcome=UNK)
    assert check_list_append(h.txns).result is Result.UNKNOWN
    assert check_list_append([]).result is Result.UNKNOWN


def test_concurrent_write_skew_free_history_with_overlap_passes() -> None:
    # Two overlapping transactions on different keys, each seen by a later reader.
    h = H()
    h.t(a(1, 1), start=0, end=2)
    h.t(a(2, 2), start=1, end=3)
    h.t(r(1, 1), r(2, 2), start=4, end=5)
    assert check_list_append(h.txns).result is Result.PASS


# ---- each anomaly class ------------------------------------------------------------------------


def test_g0_write_cycle() -> None:
    # T0 and T1 both append to keys 1 and 2, in opposite orders.
    h = H()
    t0 = h.t(a(1, 1), a(2, 2))
    t1 = h.t(a(1, 3), a(2, 4))
    h.t(r(1, 1, 3), r(2, 4, 2))
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL and not v.documented_limitation
    assert "G0" in v.evidence["anomalies"]
    assert cycle_txns(v, "G0") == {t0, t1}
    ex = v.evidence["anomalies"]["G0"]["examples"][0]
    assert ex["length"] == 2 and all("-ww(" in step for step in ex["cycle"])
    assert v.evidence["strongest_level"] == "none"


def test_g1a_aborted_read() -> None:
    h = H()
    w = h.t(a(1, 1), outcome=FAIL)
    rd = h.t(r(1, 1))
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL
    ex = v.evidence["anomalies"]["G1a"]["examples"][0]
    assert ex["writer"]["txn"] == w and ex["reader"]["txn"] == rd and ex["value"] == 1
    # G1a rules out read committed and everything stronger; real time shows nothing here
    assert v.evidence["strongest_level"] == "strong-read-uncommitted"


def test_g1b_intermediate_read() -> None:
    h = H()
    w = h.t(a(1, 1), a(1, 2))
    rd = h.t(r(1, 1))
    h.t(r(1, 1, 2))
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL
    ex = v.evidence["anomalies"]["G1b"]["examples"][0]
    assert (ex["writer"]["txn"], ex["reader"]["txn"], ex["read"]) == (w, rd, [1])


def test_g1c_circular_information_flow() -> None:
    # T0 appends x and reads y's element from T1; T1 appends y and reads x's element from T0.
    h = H()
    t0 = h.t(a(1, 1), r(2, 2))
    t1 = h.t(a(2, 2), r(1, 1))
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL
    assert cycle_txns(v, "G1c") == {t0, t1}
    assert "G0" not in v.evidence["anomalies"]
    ex = v.evidence["anomalies"]["G1c"]["examples"][0]
    assert sorted(s.split(" ")[1][:3] for s in ex["cycle"]) == ["-wr", "-wr"]


def test_g_single_read_skew() -> None:
    # T1 writes x and y; T0 read x before T1 and y after it: exactly one anti-dependency.
    h = H()
    h.t(a(1, 1), a(2, 1))
    t1 = h.t(a(1, 2), a(2, 2))
    t0 = h.t(r(1, 1), r(2, 1, 2))
    h.t(r(1, 1, 2), r(2, 1, 2))
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL and not v.documented_limitation
    assert cycle_txns(v, "G-single") == {t0, t1}
    ex = v.evidence["anomalies"]["G-single"]["examples"][0]
    assert sum("-rw(" in s for s in ex["cycle"]) == 1 and ex["p4"] is False
    assert "G2-item" not in v.evidence["anomalies"]
    assert v.evidence["strongest_level"] == "strong-read-committed"


def test_g2_item_write_skew() -> None:
    # T0 reads x, appends y; T1 reads y, appends x; neither sees the other: two anti-dependencies.
    h = H()
    t0 = h.t(r(1), a(2, 1))
    t1 = h.t(r(2), a(1, 1))
    h.t(r(1, 1), r(2, 1))
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL
    assert set(v.evidence["anomalies"]) == {"G2-item"}
    assert cycle_txns(v, "G2-item") == {t0, t1}
    ex = v.evidence["anomalies"]["G2-item"]["examples"][0]
    assert sum("-rw(" in s for s in ex["cycle"]) == 2
    assert v.evidence["strongest_level"] == "strong-snapshot-isolation"
    # Snapshot isolation allows write skew: documented where the engine says so.
    d = check_list_append(h.txns, documented={"G2-item"})
    assert d.result is Result.FAIL and d.documented_limitation
    assert d.evidence["documented_seen"] == ["G2-item"] and d.evidence["broken"] == []


def test_lost_update_p4_is_g_single_marked_p4() -> None:
    # Both read [1]; T1 appends 2, T2 appends 3 although it never saw 2.
    h = H()
    h.t(a(1, 1))
    t1 = h.t(r(1, 1), a(1, 2))
    t2 = h.t(r(1, 1), a(1, 3))
    h.t(r(1, 1, 2, 3), final=True)
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL
    assert set(v.evidence["anomalies"]) == {"G-single", "lost-update"}
    ex = v.evidence["anomalies"]["G-single"]["examples"][0]
    assert ex["p4"] is True and cycle_txns(v, "G-single") == {t1, t2}
    lu = v.evidence["anomalies"]["lost-update"]["examples"][0]
    assert ([t["txn"] for t in lu["txns"]], lu["key"], lu["read"]) == ([t1, t2], 1, [1])
    assert not v.documented_limitation
    # Galera documents P4 without FOR UPDATE: then the G-single cycles it explains are documented too.
    d = check_list_append(h.txns, documented={"lost-update"})
    assert d.documented_limitation
    assert d.evidence["documented_seen"] == ["G-single", "lost-update"]
    assert "documented limitation seen: G-single, lost-update" in d.summary


def test_g_single_not_explained_by_p4_stays_a_broken_promise_even_with_p4_documented() -> None:
    h = H()
    h.t(a(1, 1), a(2, 1))
    h.t(a(1, 2), a(2, 2))
    h.t(r(1, 1), r(2, 1, 2))
    h.t(r(1, 1, 2), final=True)
    v = check_list_append(h.txns, documented={"lost-update"})
    assert v.result is Result.FAIL and not v.documented_limitation
    assert v.evidence["broken"] == ["G-single"]


def test_stale_read_after_acknowledged_append() -> None:
    h = H()
    w = h.t(a(1, 1), start=0.0, end=1.0)
    rd = h.t(r(1), start=1.25, end=1.5)  # began 250 ms after the append was acknowledged
    h.t(r(1, 1), start=2.0, end=2.5)
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL
    ex = v.evidence["anomalies"]["stale-read"]["examples"][0]
    assert (ex["reader"]["txn"], ex["writer"]["txn"], ex["missed"]) == (rd, w, 1)
    assert ex["acknowledged_before_read_ms"] == 250.0
    assert v.evidence["strongest_models"] == ["strong-session-serializable", "strong-read-committed"]
    assert check_list_append(h.txns, documented={"stale-read"}).documented_limitation


def test_concurrent_read_that_misses_an_append_is_not_stale() -> None:
    h = H()
    h.t(a(1, 1), start=0.0, end=1.0)
    h.t(r(1), start=0.5, end=1.5)  # overlapped the append: may serialize before it
    h.t(r(1, 1), start=2.0, end=2.5)
    assert check_list_append(h.txns).result is Result.PASS


def test_internal_inconsistency() -> None:
    h = H()
    h.t(a(1, 1))
    h.t(r(1, 1), a(1, 2), r(1, 1, 5))  # its own append should end the second read
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL and "internal" in v.evidence["anomalies"]


def test_incompatible_order_duplicates_and_phantoms() -> None:
    h = H()
    h.t(a(1, 1))
    h.t(a(1, 2))
    h.t(r(1, 1, 2))
    h.t(r(1, 2, 1))
    h.t(r(2, 7))  # nobody appended 7
    h.t(r(3, 9, 9))
    h.t(a(3, 9))
    v = check_list_append(h.txns)
    found = set(v.evidence["anomalies"])
    assert {"incompatible-order", "phantom-value", "duplicate-elements"} <= found
    assert v.evidence["strongest_level"] == "none"


def test_lost_append_missing_from_a_final_read() -> None:
    h = H()
    h.t(a(1, 1))
    h.t(a(1, 2))
    h.t(r(1, 1), final=True, client=100)
    h.t(r(1, 1, 2), final=True, client=101)
    v = check_list_append(h.txns)
    assert v.result is Result.FAIL and not v.documented_limitation
    ex = v.evidence["anomalies"]["lost-append"]["examples"][0]
    assert (ex["key"], ex["value"], ex["missing_on"]) == (1, 2, ["node:101"])


# ---- unknown outcomes never make a false FAIL ---------------------------------------------------


def test_unknown_append_absent_or_present_is_fine() -> None:
    for seen in (False, True):
        h = H()
        h.t(a(1, 1))
        h.t(a(1, 2), outcome=UNK)
        h.t(r(1, 1, 2) if seen else r(1, 1), final=True)
        v = check_list_append(h.txns)
        assert v.result is Result.PASS, (seen, v.summary)


def test_failed_append_absent_is_fine_and_reads_of_non_ok_txns_are_ignored() -> None:
    h = H()
    h.t(a(1, 1))
    h.t(a(1, 2), r(1, None), outcome=FAIL)
    h.t(r(1, None), outcome=UNK)
    h.t(r(1, 1), final=True)
    assert check_list_append(h.txns).result is Result.PASS


def _serial_random_history(seed: int, n: int = 150, keys: int = 4) -> list[Txn]:
    """A history executed one transaction at a time against a model, with random outcomes of
    failed (not applied) and unknown (applied or not) transactions."""
    rng = random.Random(seed)
    state: dict[int, list[int]] = {}
    values = itertools.count(1)
    txns = []
    t = 0.0
    for i in range(n):
        outcome = rng.choices([OK, FAIL, UNK], [0.8, 0.1, 0.1])[0]
        applied = outcome is OK or (outcome is UNK and rng.random() < 0.5)
        scratch = {k: list(v) for k, v in state.items()}
        mops = []
        for _ in range(rng.randint(1, 4)):
            k = rng.randint(1, keys)
            if rng.random() < 0.5:
                mops.append(MicroOp("r", k, tuple(scratch.get(k, [])) if outcome is OK else None))
            else:
                v = next(values)
                scratch.setdefault(k, []).append(v)
                mops.append(MicroOp("append", k, v))
        if applied:
            state = scratch
        txns.append(Txn(i, rng.randint(0, 3), "p", outcome, tuple(mops), t, t + 0.01))
        t += 0.02
    finals = tuple(MicroOp("r", k, tuple(state.get(k, []))) for k in range(1, keys + 1))
    txns.append(Txn(n, 99, "final:n1", OK, finals, t, t + 0.01, final=True))
    return txns


@pytest.mark.parametrize("seed", range(25))
def test_random_serial_histories_with_unknowns_pass(seed: int) -> None:
    v = check_list_append(_serial_random_history(seed))
    assert v.result in (Result.PASS, Result.UNKNOWN), v.summary
    assert v.result is Result.PASS


# ---- encoding and export -------------------------------------------------------------------------


def test_ops_round_trip_and_edn_export() -> None:
    mops = [a(3, 17), r(2, 1, 5), r(4)]
    assert list(decode(encode(mops))) == mops
    ops = [
        Op("list-append", 7, "node:1", "198.18.70.11", "txn", None, encode(mops), 0, 0, 0.5, 0.75, OK),
        Op(
            "list-append",
            8,
            "node:2",
            "198.18.70.12",
            "txn",
            None,
            encode([a(3, 18), r(3, None)]),
            0,
            0,
            0.6,
            3.6,
            UNK,
            2013,
            "Lost connection",
        ),  # fmt: skip
        Op("list-append", 8, "node:2", "198.18.70.12", "txn", None, encode([a(3, 19)]), 0, 0, 4.0, 4.1, FAIL),
        Op("ledger", 1, "balancer", "x", "insert", "1:1", "v", 0, 0, 0.1, 0.2, OK),
    ]
    txns = txns_from_ops(ops)
    assert [t.client for t in txns] == [7, 8, 8]
    text = list_append_edn(txns)
    lines = text.splitlines()
    assert len(lines) == 6
    assert lines[0] == (
        "{:type :invoke, :f :txn, :value [[:append 3 17] [:r 2 nil] [:r 4 nil]], :process 0, "
        ":time 500000000, :index 0}"
    )
    assert "{:type :ok, :f :txn, :value [[:append 3 17] [:r 2 [1 5]] [:r 4 []]], :process 0" in text
    info = next(line for line in lines if ":type :info" in line)
    assert ":value [[:append 3 18] [:r 3 nil]], :process 1" in info and ':error "Lost connection"' in info
    # After :info the client is a new process (Jepsen's convention).
    last = lines[-1]
    assert ":type :fail" in last and ":process 3" in last
    assert [int(re.search(r":index (\d+)", line).group(1)) for line in lines] == list(range(6))  # type: ignore[union-attr]


def test_analysis_counts_outcomes_and_keys() -> None:
    h = H()
    h.t(a(1, 1), a(2, 2))
    h.t(a(1, 3), outcome=FAIL)
    h.t(r(1, 1), outcome=UNK)
    an = analyze(h.txns)
    assert an.outcomes == {"ok": 1, "fail": 1, "unknown": 1}
    assert an.keys == 2


def test_g_single_of_a_write_onto_a_newer_row_is_marked_p4() -> None:
    # Seen on Galera: T1 (node 3) read key 7 empty and appended to key 5 after T0 (node 1), which
    # appended to 5 and 7. T1's snapshot missed T0, its write landed after T0's: InnoDB's
    # REPEATABLE READ and Galera let it commit; snapshot isolation would have aborted it.
    h = H()
    t0 = h.t(a(5, 134), a(7, 135))
    t1 = h.t(r(7), a(5, 140))
    h.t(r(5, 134, 140), r(7, 135), final=True)
    v = check_list_append(h.txns, documented={"lost-update"})
    assert cycle_txns(v, "G-single") == {t0, t1}
    assert v.evidence["anomalies"]["G-single"]["examples"][0]["p4"] is True
    assert "lost-update" not in v.evidence["anomalies"]  # not the same-key P4 ...
    assert v.documented_limitation  # ... but the same lost-update behaviour


def test_longer_g2_item_cycle_of_three() -> None:
    h = H()
    ts = [h.t(r(1), a(2, 1)), h.t(r(2), a(3, 1)), h.t(r(3), a(1, 1))]
    h.t(r(1, 1), r(2, 1), r(3, 1), final=True)
    v = check_list_append(h.txns)
    assert set(v.evidence["anomalies"]) == {"G2-item"}
    ex = v.evidence["anomalies"]["G2-item"]["examples"][0]
    assert ex["length"] == 3 and {t["txn"] for t in ex["txns"]} == set(ts)


def test_g_single_returning_by_ww_through_a_third_writer_is_p4() -> None:
    # T0 read key 1 before T1's append; T2 saw T1 (wr on key 1) and appended key 2 before T0 did:
    # T2 depends on T1, so T2 is not in T0's snapshot either, yet T0 wrote after it.
    h = H()
    t0 = h.t(r(1), a(2, 20))
    t1 = h.t(a(1, 10))
    t2 = h.t(r(1, 10), a(2, 19))
    h.t(r(1, 10), r(2, 19, 20), final=True)
    v = check_list_append(h.txns, documented={"lost-update"})
    ex = v.evidence["anomalies"]["G-single"]["examples"][0]
    assert {t["txn"] for t in ex["txns"]} == {t0, t1, t2} and ex["cycle"][-1].startswith(f"T{t2} -ww(2)->")
    assert ex["p4"] is True and v.documented_limitation
    assert v.evidence["anomalies"]["G-single"]["p4"] == 1
