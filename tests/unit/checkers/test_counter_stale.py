"""Counter (lost update) and stale-read checkers on hand-built histories: they FAIL when they
should, say documented limitation only where the engine documents it, never count an unknown
outcome as lost, and say UNKNOWN when the history proves nothing."""

from __future__ import annotations

import json

from clusterbench.checkers.counter import check_counter
from clusterbench.checkers.stale_read import check_stale_reads
from clusterbench.checkers.verdict import Result
from clusterbench.history.ops import Op, Outcome

OK, FAIL, UNK = Outcome.OK, Outcome.FAIL, Outcome.UNKNOWN
DOC = ("lost-update", "internal", "stale-read")


def inc(key: str, outcome: Outcome, t: float = 0.0) -> Op:
    return Op("counter", 1, "node:1", "x", "incr", key, None, 0, 0, t, t + 0.01, outcome)


def incs(key: str, ok: int, unknown: int = 0, fail: int = 0) -> list[Op]:
    return [inc(key, OK)] * ok + [inc(key, UNK)] * unknown + [inc(key, FAIL)] * fail


RMW, FU, INC = "read-modify-write/1", "for-update/1", "increment/1"


def test_counter_pass_within_bounds_either_way_of_unknowns() -> None:
    ops = incs(FU, ok=10, unknown=3, fail=4)
    for value in (10, 11, 13):
        v = check_counter(ops, {"n1": {FU: value}, "n2": {FU: value}}, mode="for-update", documented=DOC)
        assert v.result is Result.PASS, (value, v.summary)
    assert v.evidence["increments"] == {"ok": 10, "unknown": 3, "fail": 4}


def test_counter_lost_increments_documented_only_for_read_modify_write() -> None:
    # The hand measurement: 12,509 acknowledged, value 8,752.
    ops = incs(RMW, ok=12509)
    v = check_counter(ops, {"n1": {RMW: 8752}, "n2": {RMW: 8752}}, mode="read-modify-write", documented=DOC)
    assert v.result is Result.FAIL and v.documented_limitation
    assert v.evidence["lost"] == 3757 and v.evidence["lost_fraction"] == round(3757 / 12509, 4)
    assert "12509 acknowledged increments, value 8752: 3757 lost" in v.summary
    # Without the engine documenting lost updates it is a broken promise.
    assert not check_counter(ops, {"n1": {RMW: 8752}}, mode="read-modify-write").documented_limitation
    # With FOR UPDATE or a server-side increment, a loss is never documented.
    for mode, key in (("for-update", FU), ("increment", INC)):
        v = check_counter(incs(key, ok=9185), {"n1": {key: 9184}}, mode=mode, documented=DOC)
        assert v.result is Result.FAIL and not v.documented_limitation and v.evidence["lost"] == 1


def test_counter_excess_and_divergence_are_broken_promises() -> None:
    v = check_counter(
        incs(RMW, ok=5, unknown=1, fail=2), {"n1": {RMW: 7}}, mode="read-modify-write", documented=DOC
    )
    assert v.result is Result.FAIL and not v.documented_limitation and v.evidence["excess"] == 1
    v = check_counter(incs(INC, ok=5), {"n1": {INC: 5}, "n2": {INC: 6}}, mode="increment")
    assert v.result is Result.FAIL and "nodes disagree" in v.summary


def test_counter_unknown_without_evidence() -> None:
    assert (
        check_counter(incs(INC, ok=0, unknown=3), {"n1": {INC: 2}}, mode="increment").result is Result.UNKNOWN
    )
    v = check_counter(incs(INC, ok=3), {"n1": "OperationalError: down"}, mode="increment")
    assert v.result is Result.UNKNOWN and "n1" in v.summary
    # Only this mode's counters are judged.
    v = check_counter(incs(INC, ok=3) + incs(RMW, ok=9), {"n1": {INC: 3, RMW: 1}}, mode="increment")
    assert v.result is Result.PASS and list(v.evidence["keys"]) == [INC]


# ---- stale reads -------------------------------------------------------------------------------


def write(key: str, version: int, t: float, outcome: Outcome = OK) -> Op:
    return Op("stale-read", 1, "node:1", "x", "write", key, str(version), 0, 0, t, t + 0.01, outcome)


def read(key: str, seen: int | None, expect: int, t: float, outcome: Outcome = OK) -> Op:
    value = json.dumps({"seen": seen, "expect": expect, "pair": "node:1>node:2"}) if outcome is OK else None
    return Op("stale-read", 1, "node:2", "y", "read", key, value, 0, 0, t, t + 0.005, outcome)


def probe_history(session: str, stale_at: set[int], n: int = 20) -> list[Op]:
    key = f"{session}/node:1>node:2"
    ops = []
    for v in range(1, n + 1):
        t = v * 0.1
        ops.append(write(key, v, t))
        ops.append(read(key, v - 1 if v in stale_at else v, v, t + 0.012))
    return ops


def test_stale_reads_rate_and_staleness() -> None:
    ops = probe_history("default", {3, 7})
    v = check_stale_reads(
        ops, session="default", statements=["SET SESSION wsrep_sync_wait=0"], documented=DOC
    )
    assert v.result is Result.FAIL and v.documented_limitation
    assert (v.evidence["reads"], v.evidence["stale"], v.evidence["rate"]) == (20, 2, 0.1)
    assert v.evidence["staleness_versions"] == {"max": 1, "median": 1}
    assert (
        v.evidence["staleness_ms"]["max"] == 2.0
    )  # read began 12 ms after the write began, 2 ms after its ack
    assert v.summary.startswith("2 of 20 reads stale (10.0 %) in the default (SET SESSION wsrep_sync_wait=0)")


def test_stale_read_in_the_causal_session_is_a_broken_promise() -> None:
    ops = probe_history("causal", {5}) + probe_history("default", set())
    v = check_stale_reads(ops, session="causal", documented=DOC)
    assert v.result is Result.FAIL and not v.documented_limitation and v.evidence["stale"] == 1
    d = check_stale_reads(ops, session="default", documented=DOC)
    assert (
        d.result is Result.PASS
        and d.summary == "no stale read: not observed in 20 reads in the default session"
    )


def test_failed_and_unknown_operations_never_make_a_stale_read() -> None:
    key = "causal/node:1>node:2"
    ops = [
        write(key, 1, 0.1),
        read(key, 1, 1, 0.2),
        write(key, 2, 0.3, UNK),  # maybe committed: a read seeing 1 or 2 is fine
        read(key, 2, 1, 0.4),
        read(key, None, 1, 0.5, FAIL),
        write(key, 3, 0.6, FAIL),
    ]
    v = check_stale_reads(ops, session="causal")
    assert v.result is Result.PASS and v.evidence["reads"] == 2
    assert check_stale_reads([write(key, 1, 0.1)], session="causal").result is Result.UNKNOWN
