"""Each checker's whole verdict (result, summary, evidence) on one small input, written out by
hand: what a report shows is pinned, not only PASS/FAIL. Times carry three decimals so that a
rounding to another precision shows."""

from __future__ import annotations

import json
from typing import Any

from clusterbench.checkers import Result, check_bank, check_ledger
from clusterbench.checkers.vip import VipSample, check_vip, spans
from clusterbench.history.ops import Op, Outcome
from tests.unit.verify.fakes_verify import op

OK, F, U = Outcome.OK, Outcome.FAIL, Outcome.UNKNOWN


# ---- vip ------------------------------------------------------------------------------------------


def vs(t: float, *holders: str, answered: bool = True) -> VipSample:
    return VipSample(t, 1e9 + t, tuple(holders), answered)


def test_vip_evidence_in_full() -> None:
    samples = [
        vs(0.004, "lb1"),
        vs(1.004, "lb1", "lb2"),
        vs(2.508, "lb2"),
        vs(3.004),
        vs(4.008, "lb1"),
        vs(4.5, answered=False),
    ]
    v = check_vip(samples, end=5.0)
    assert v.to_json() == {
        "checker": "vip",
        "result": "FAIL",
        "summary": "the VIP was held by lb1 and lb2 at once for 1.5 s (from 1.0 s to 2.5 s, 1 period(s)): "
        "a split brain of the balancers",
        "evidence": {
            "samples": 5,
            "held_by_two": [{"from": 1.0, "to": 2.51, "s": 1.5}],
            "held_by_two_s": 1.5,
            "held_by_none": [{"from": 3.0, "to": 4.01, "s": 1.0}],
            "changes": [
                {"t": 0.0, "holders": ["lb1"]},
                {"t": 1.0, "holders": ["lb1", "lb2"]},
                {"t": 2.51, "holders": ["lb2"]},
                {"t": 3.0, "holders": []},
                {"t": 4.01, "holders": ["lb1"]},
            ],
        },
        "documented_limitation": False,
    }
    ok = check_vip([vs(0.0, "lb1"), vs(1.0), vs(2.25, "lb2")], end=3.0)
    assert ok.summary == "never held by two balancers (3 samples; lb1 -> none -> lb2; held by none for 1.2 s)"
    assert check_vip([vs(0.0, "lb1")]).summary == "never held by two balancers (1 samples; lb1)"
    empty = check_vip([vs(1.0, answered=False)])
    assert empty.to_json() == {
        "checker": "vip",
        "result": "UNKNOWN",
        "summary": "no sample of who holds the VIP",
        "evidence": {"samples": 1},
        "documented_limitation": False,
    }


def test_vip_spans() -> None:
    both = lambda s: len(s.holders) > 1  # noqa: E731
    held = lambda s: bool(s.holders)  # noqa: E731
    # an unanswered sample neither ends nor starts a period
    assert spans([vs(0.0, "a"), vs(1.0, answered=False), vs(2.0)], held) == [(0.0, 2.0)]
    # a period still open at the end lasts until `end`, else until the last sample
    assert spans([vs(0.0, "a", "b"), vs(3.0, "a", "b")], both) == [(0.0, 3.0)]
    assert spans([vs(0.0, "a", "b"), vs(3.0, "a", "b")], both, end=5.0) == [(0.0, 5.0)]
    assert spans([vs(0.0), vs(1.0, "a", "b"), vs(2.0, "a")], both) == [(1.0, 2.0)]


# ---- bank -----------------------------------------------------------------------------------------


def _bank_read(t: float, balances: dict[str, int], process: str = "node:1", client: int = 3) -> Op:
    return op(
        None,
        OK,
        t - 0.01,
        t,
        workload="bank",
        kind="read",
        value=json.dumps(balances),
        process=process,
        client=client,
    )


def test_bank_evidence_in_full() -> None:
    accounts = [1, 2, 10]
    ops = [
        op("1>2", OK, workload="bank", kind="transfer", value="5"),
        op("1>2", U, workload="bank", kind="transfer", value="5"),
        op("2>1", F, workload="bank", kind="transfer", value="5"),
        _bank_read(1.2345, {"1": 300}),  # 2 and 10 missing: sorted as numbers
        _bank_read(2.0004, {"1": 100, "2": 100, "10": 100, "9": 0, "11": 0}, process="balancer", client=4),
        _bank_read(3.0, {"1": 100, "2": 100, "10": 100}),
    ]
    final: dict[str, dict[str, int] | str] = {"n2": "timeout", "n1": {"1": 101, "2": 100, "10": 100}}
    v = check_bank(ops, final, accounts=accounts, total=300, for_update=False)
    assert v.to_json() == {
        "checker": "bank",
        "result": "FAIL",
        "summary": "2 of 3 ok reads violate the invariant; final balances wrong on n1 "
        "(documented limitation: transfers without SELECT ... FOR UPDATE lose updates)",
        "evidence": {
            "total": 300,
            "accounts": 3,
            "for_update": False,
            "reads_ok": 3,
            "transfers": {"ok": 1, "fail": 1, "unknown": 1},
            "bad_reads": {
                "count": 2,
                "examples": [
                    {
                        "t": 1.234,
                        "process": "node:1",
                        "client": 3,
                        "problems": ["missing accounts ['2', '10']"],
                    },
                    {
                        "t": 2.0,
                        "process": "balancer",
                        "client": 4,
                        "problems": ["unexpected accounts ['9', '11']"],
                    },
                ],
            },
            "final": {"n1": {"1": 101, "2": 100, "10": 100}, "n2": "timeout"},
            "bad_final": {"n1": ["total 301 != 300"]},
            "unreadable_nodes": {"n2": "timeout"},
        },
        "documented_limitation": True,
    }
    # the default is FOR UPDATE: a violation is a promise broken
    assert check_bank(ops, final, accounts=accounts, total=300).documented_limitation is False
    good = {"1": 100, "2": 100, "10": 100}
    unread: dict[str, dict[str, int] | str] = {"n1": good, "n2": "down", "n3": "refused"}
    unk = check_bank(ops[:1], unread, accounts=accounts, total=300)
    assert (unk.result, unk.summary) == (Result.UNKNOWN, "could not read balances on n2, n3")
    assert unk.evidence["unreadable_nodes"] == {"n2": "down", "n3": "refused"}
    assert check_bank(ops[:1], {}, accounts=accounts, total=300).summary == "no final read"
    empty_read = [ops[0], op(None, OK, 1.0, workload="bank", kind="read", value=None)]
    assert (
        check_bank(empty_read, {"n1": good}, accounts=accounts, total=300).evidence["bad_reads"]["count"] == 1
    )


# ---- ledger ---------------------------------------------------------------------------------------


def test_ledger_evidence_in_full() -> None:
    ops = [op("1:1", OK), op("1:2", OK), op("1:3", F, code=1213), op("1:4", U, code=2013), op("1:5", U)]
    per_node: dict[str, set[tuple[int, int]] | str] = {
        "n1": {(1, 1), (1, 2), (1, 4), (9, 9)},
        "n2": {(1, 1), (1, 3)},
        "n3": "Lost connection",
    }
    v = check_ledger(ops, per_node)
    assert v.result is Result.FAIL
    assert v.summary == "1 acknowledged inserts lost; 1 phantom rows; 1 failed inserts present"
    assert v.evidence == {
        "ops": {"ok": 2, "fail": 1, "unknown": 2},
        "rows_per_node": {"n1": 4, "n2": 2},
        "unknown_present": 1,
        "unknown_absent": 1,
        "lost": {"count": 1, "examples": [{"key": "1:2", "nodes": ["n2"]}]},
        "phantom": {"count": 1, "examples": ["9:9"]},
        "fail_but_present": {"count": 1, "examples": ["1:3"]},
        "unreadable_nodes": {"n3": "Lost connection"},
    }

    ok = check_ledger(ops[:2], {"n1": {(1, 1), (1, 2)}, "n2": {(1, 1), (1, 2)}})
    assert (ok.result, ok.summary) == (
        Result.PASS,
        "all 2 acknowledged inserts on all 2 nodes; no phantom; 0 failed and 0 unknown",
    )
    down = check_ledger(ops[:2], {"n2": "refused", "n1": "down"})
    assert (down.result, down.summary) == (Result.UNKNOWN, "could not read the ledger on n1, n2")
    assert check_ledger(ops[:2], {}).summary == "no node was read"
    assert check_ledger(ops[2:3], {"n1": set()}).summary == "no acknowledged insert among 1 attempts"


# ---- stale-read -----------------------------------------------------------------------------------


def _sr(kind: str, key: str, value: str | None, t0: float, t1: float, outcome: Outcome = OK) -> Op:
    return Op("stale-read", 1, "node:x", "h", kind, key, value, 0, 0, t0, t1, outcome)


def _seen(seen: int, expect: int | None, pair: str) -> str:
    return json.dumps({"seen": seen, "expect": expect, "pair": pair})


def test_stale_read_evidence_in_full() -> None:
    from clusterbench.checkers.stale_read import check_stale_reads

    a, b = "default/node:1>node:2", "default/node:2>node:3"
    ops = [
        _sr("write", a, "1", 0.10, 0.11),
        _sr("read", a, _seen(1, 1, "node:1>node:2"), 0.1123, 0.12),
        _sr("write", a, "2", 0.20, 0.21),
        _sr("write", a, "3", 0.30, 0.31),
        _sr("read", a, _seen(1, 3, "node:1>node:2"), 0.31234, 0.32),  # 2 behind; missed v2 (ack 0.21)
        _sr("write", b, "1", 1.00, 1.01),
        _sr("read", b, _seen(0, 1, "node:2>node:3"), 1.0179, 1.02),
        _sr("write", b, "2", 1.1, 1.11, F),
        _sr("write", b, "3", 1.2, 1.21, U),
        _sr("read", b, _seen(3, None, "node:2>node:3"), 1.3, 1.31),  # no expectation: not checked
        _sr("read", "causal/node:1>node:2", _seen(0, 1, "node:1>node:2"), 2.0, 2.01),  # another session
    ]
    v = check_stale_reads(
        ops, session="default", statements=["SET SESSION wsrep_sync_wait=0"], documented=("stale-read",)
    )
    assert v.to_json() == {
        "checker": "stale-read:default",
        "result": "FAIL",
        "summary": "2 of 3 reads stale (66.7 %) in the default (SET SESSION wsrep_sync_wait=0) session; "
        "up to 102.3 ms and 2 versions behind (documented limitation)",
        "evidence": {
            "session": "default",
            "statements": ["SET SESSION wsrep_sync_wait=0"],
            "reads": 3,
            "stale": 2,
            "rate": 0.6667,
            "by_pair": {"node:1>node:2": {"reads": 2, "stale": 1}, "node:2>node:3": {"reads": 1, "stale": 1}},
            "writes": {"ok": 4, "fail": 1, "unknown": 1},
            "examples": [
                {
                    "pair": "node:1>node:2",
                    "t": 0.3123,
                    "expected": 3,
                    "seen": 1,
                    "ms_since_missed_ack": 102.34,
                },
                {"pair": "node:2>node:3", "t": 1.0179, "expected": 1, "seen": 0, "ms_since_missed_ack": 7.9},
            ],
            "staleness_versions": {"max": 2, "median": 1.5},
            "staleness_ms": {"median": 55.12, "p99": 102.34, "max": 102.34},
        },
        "documented_limitation": True,
    }
    none = check_stale_reads(ops[:1], session="default")
    assert none.to_json() == {
        "checker": "stale-read:default",
        "result": "UNKNOWN",
        "summary": "no read after an acknowledged write in the default session",
        "evidence": {
            "session": "default",
            "statements": [],
            "reads": 0,
            "stale": 0,
            "rate": None,
            "by_pair": {},
            "writes": {"ok": 1, "fail": 0, "unknown": 0},
            "examples": [],
        },
        "documented_limitation": False,
    }
    # a stale read whose missed version was never acknowledged has no milliseconds
    lone = [_sr("read", a, _seen(0, 2, "node:1>node:2"), 0.5, 0.6)]
    e = check_stale_reads(lone, session="default").evidence
    assert e["examples"][0]["ms_since_missed_ack"] is None and "staleness_ms" not in e
    # a read without a pair is counted under its process
    anon = [_sr("read", a, json.dumps({"seen": 1, "expect": 1}), 0.5, 0.6)]
    assert check_stale_reads(anon, session="default").evidence["by_pair"] == {
        "node:x": {"reads": 1, "stale": 0}
    }


# ---- split brain ----------------------------------------------------------------------------------


def test_split_brain_evidence_in_full() -> None:
    from clusterbench.checkers import MonitorSample, check_split_brain

    samples = [
        MonitorSample(0.5678, 1e9, "n3", True, "Primary", 1, 1, "u-2", "Synced", True, 10, "c:1"),
        MonitorSample(0.1234, 1e9, "n1", True, "Primary", 2, 4, "u-1", "Synced", True, 10, "a:1, b:1"),
        MonitorSample(0.9, 1e9, "n2", False),
    ]
    v = check_split_brain(samples, 3)
    two = [
        [{"uuid": "u-1", "conf_id": 4, "size": 2, "nodes": ["n1"], "members": ["a:1", "b:1"]}],
        [{"uuid": "u-2", "conf_id": 1, "size": 1, "nodes": ["n3"], "members": ["c:1"]}],
    ]
    assert v.to_json() == {
        "checker": "split-brain",
        "result": "FAIL",
        "summary": "2 components with quorum (sizes sum 3 of 3) at t=0.568 s; 2 samples in violation",
        "evidence": {
            "samples": 3,
            "answered": 2,
            "nodes": ["n1", "n2", "n3"],
            "max_primary_components": 2,
            "violations": {
                "count": 2,
                "examples": [
                    {"t": 0.568, "components": two, "size_sum": 3},
                    {"t": 0.9, "components": two, "size_sum": 3},
                ],
            },
            "primary_views": [
                {"uuid": "u-2", "conf_id": 1, "size": 1},
                {"uuid": "u-1", "conf_id": 4, "size": 2},
            ],
        },
        "documented_limitation": False,
    }
    none = check_split_brain([MonitorSample(0.1, 1e9, "n1", False)], 3)
    assert none.to_json() == {
        "checker": "split-brain",
        "result": "UNKNOWN",
        "summary": "no monitor sample answered",
        "evidence": {
            "samples": 1,
            "answered": 0,
            "nodes": ["n1"],
            "max_primary_components": 0,
            "violations": {"count": 0, "examples": []},
        },
        "documented_limitation": False,
    }
    # Galera's AUTO placeholders say nothing about membership: one history, sizes within N
    auto = [
        MonitorSample(0.0, 1e9, "n1", True, "Primary", 2, 4, "u-1", members="AUTO, a:1"),
        MonitorSample(0.0, 1e9, "n2", True, "Primary", 1, 5, "u-1", members="b:1"),
    ]
    assert check_split_brain(auto, 3).result is Result.PASS
    assert MonitorSample(0.0, 0.0, "n1", True, members=" , ").member_set() is None


# ---- convergence ----------------------------------------------------------------------------------


def test_convergence_evidence_in_full() -> None:
    import hashlib

    from clusterbench.checkers import ConvergenceSnapshot, NodeState, check_convergence

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    base: dict[str, Any] = {
        "answered": True,
        "local_state": "Synced",
        "cluster_status": "Primary",
        "ready": True,
        "size": 3,
        "conf_id": 5,
        "state_uuid": "u-1",
        "last_committed": 100,
        "position": "100",
        "tables": {"sbtest.t": (10, 1)},
    }
    good, bad = "col a int\nindex k (a)", "col a int\nindex j (b)"
    n1 = NodeState("n1", **base, definitions={"sbtest.t": good})
    n2 = NodeState("n2", **base, definitions={"sbtest.t": bad})
    n3 = NodeState("n3", **base, definitions={"sbtest.t": good})
    v = check_convergence(
        ConvergenceSnapshot([n1, n2, n3], True, polls=4, attempts=2, waited=1.2367, note="n"), 3
    )
    node_json = {
        "answered": True,
        "error": None,
        "state": "Synced",
        "status": "Primary",
        "ready": True,
        "size": 3,
        "conf_id": 5,
        "state_uuid": "u-1",
        "last_committed": 100,
        "position": "100",
        "tables": {"sbtest.t": {"rows": 10, "checksum": 1}},
    }
    assert v.to_json() == {
        "checker": "convergence",
        "result": "FAIL",
        "summary": "table definitions differ between nodes: "
        "sbtest.t (n2 lacks index k (a), n2 has index j (b))",
        "evidence": {
            "stable": True,
            "polls": 4,
            "attempts": 2,
            "waited_s": 1.24,
            "note": "n",
            "nodes": {
                "n1": {**node_json, "definitions": {"sbtest.t": digest(good)}},
                "n2": {**node_json, "definitions": {"sbtest.t": digest(bad)}},
                "n3": {**node_json, "definitions": {"sbtest.t": digest(good)}},
            },
            "mismatched_tables": {},
            "mismatched_definitions": {
                "sbtest.t": {
                    "digests": {"n1": digest(good), "n2": digest(bad), "n3": digest(good)},
                    "differences": {"n2": ["lacks index k (a)", "has index j (b)"]},
                }
            },
        },
        "documented_limitation": False,
    }
    down = NodeState("n3", False, "no answer")
    failed = NodeState("n2", True, "checksum failed", "Synced", "Primary", True, 3, 5, "u-1")
    u = check_convergence(ConvergenceSnapshot([n1, failed, down], True), 3)
    assert (u.result, u.summary) == (Result.UNKNOWN, "could not read n2 (checksum failed), n3 (no answer)")
    assert u.evidence["nodes"]["n3"] == {
        "answered": False,
        "error": "no answer",
        "state": "",
        "status": "",
        "ready": False,
        "size": 0,
        "conf_id": -1,
        "state_uuid": "",
        "last_committed": -1,
        "position": "",
        "tables": {},
        "definitions": {},
    }
    empty = check_convergence(ConvergenceSnapshot([], True), 3)
    assert empty.to_json() == {
        "checker": "convergence",
        "result": "UNKNOWN",
        "summary": "no node state collected",
        "evidence": {"stable": True, "polls": 0, "attempts": 1, "waited_s": 0.0, "nodes": {}},
        "documented_limitation": False,
    }
    ok = check_convergence(ConvergenceSnapshot([n1, n3], True), 3)
    assert (
        ok.summary == "2 nodes ready in one view with quorum of 3, at position 100, 1 tables identical "
        "in data and definition"
    )
    unsettled = check_convergence(ConvergenceSnapshot([n1, n3], False, waited=2.25), 3)
    assert unsettled.summary == "the replication position did not settle in 2.2 s"


# ---- availability ---------------------------------------------------------------------------------


def test_availability_evidence_in_full() -> None:
    from clusterbench.checkers import FaultWindow, availability, availability_verdict
    from clusterbench.checkers.availability import tps_recovery

    def probe(
        t0: float, t1: float, outcome: Outcome, process: str = "balancer", code: int | None = None
    ) -> Op:
        return op(None, outcome, t0, t1, workload="probe", kind="probe", process=process, code=code)

    ops = [
        probe(9.5, 9.6, OK),
        probe(10.2, 10.3, F, code=2003),
        probe(10.4, 10.45, U),
        probe(10.6, 10.7, OK),
        probe(20.5, 21.7, OK, process="node:1"),
    ]
    tps = [(5.0, 100.0), (8.0, 100.0), (9.9, 90.0), (10.0, 100.0), (11.0, 50.0), (12.0, 96.0), (13.0, 100.0)]
    figs = availability(
        ops, [FaultWindow("pause", 20.0, 22.0), FaultWindow("kill", 10.0, 14.0)], tps, baseline_window=5.0
    )
    v = availability_verdict(figs, max_unavailable=1.0)
    assert v.to_json() == {
        "checker": "availability",
        "result": "PASS",
        "summary": "every path recovered; longest window 0.50 s (kill/balancer)",
        "evidence": {
            "max_unavailable": 1.0,
            "faults": [
                {
                    "fault": {"name": "kill", "start": 10.0, "end": 14.0},
                    "tps_baseline": 100.0,
                    "tps_recovered_after": 2.0,
                    "paths": [
                        {
                            "process": "balancer",
                            "ops": 3,
                            "errors": 2,
                            "first_error_after": 0.3,
                            "unavailable_from": 10.2,
                            "unavailable_until": 10.7,
                            "unavailable": 0.5,
                            "recovered": True,
                            "errors_by_code": {"2003": 1, "none": 1},
                            "max_latency": 0.1,
                            "max_ok_latency": 0.1,
                        }
                    ],
                },
                {
                    "fault": {"name": "pause", "start": 20.0, "end": 22.0},
                    "tps_baseline": None,
                    "tps_recovered_after": None,
                    "paths": [
                        {
                            "process": "node:1",
                            "ops": 1,
                            "errors": 0,
                            "first_error_after": None,
                            "unavailable_from": None,
                            "unavailable_until": None,
                            "unavailable": 0.0,
                            "recovered": True,
                            "errors_by_code": {},
                            "max_latency": 1.2,
                            "max_ok_latency": 1.2,
                        }
                    ],
                },
            ],
        },
        "documented_limitation": False,
    }
    assert availability_verdict([]).to_json() == {
        "checker": "availability",
        "result": "UNKNOWN",
        "summary": "no probe operations during the faults",
        "evidence": {"faults": [], "max_unavailable": None},
        "documented_limitation": False,
    }
    stuck = availability(
        [probe(10.2, 10.3, F), probe(10.3, 10.4, F, process="node:2")], [FaultWindow("kill", 10.0, 14.0)]
    )
    s = availability_verdict(stuck, max_unavailable=0.1)
    assert s.summary == "never recovered: kill/balancer, kill/node:2"
    # the baseline is the window before the fault, its first second in and the fault's own out
    assert tps_recovery([(5.0, 100.0), (10.0, 10.0), (11.0, 96.0)], 10.0, 5.0) == (100.0, 1.0)
    assert tps_recovery([(4.9, 0.0), (5.0, 100.0), (10.0, 99.0)], 10.0, 5.0) == (100.0, 0.0)
    assert tps_recovery([(5.0, 100.0), (10.0, 50.0)], 10.0, 5.0) == (100.0, None)
    assert tps_recovery([(10.0, 50.0)], 10.0) == (None, None)


# ---- counter --------------------------------------------------------------------------------------


def test_counter_evidence_in_full() -> None:
    from clusterbench.checkers.counter import check_counter, mode_of

    def incs(key: str, outcome: Outcome, n: int) -> list[Op]:
        return [Op("counter", 1, "node:1", "x", "incr", key, None, 0, 0, 0.0, 0.01, outcome)] * n

    r = "read-modify-write"
    ops = [
        *incs(f"{r}/1", OK, 5),
        *incs(f"{r}/1", U, 1),
        *incs(f"{r}/1", F, 1),
        *incs(f"{r}/2", OK, 3),
        *incs(f"{r}/3", OK, 2),
        *incs(f"{r}/4", OK, 1),
        *incs(f"{r}/5", F, 1),
        *incs("increment/1", OK, 4),
    ]
    final: dict[str, dict[str, int] | str] = {
        "n1": {f"{r}/1": 3, f"{r}/2": 3, f"{r}/4": 0, f"{r}/5": 2, "increment/1": 4},
        "n2": {f"{r}/1": 4, f"{r}/2": 3, f"{r}/3": 2, f"{r}/4": 0, f"{r}/5": 2},
        "n3": "down",
    }
    v = check_counter(ops, final, mode=r, documented=("lost-update",))
    assert v.to_json() == {
        "checker": "counter:read-modify-write",
        "result": "FAIL",
        "summary": f"{r}/1: nodes disagree (n1=3, n2=4); {r}/1: 5 acknowledged increments, value 3: 2 lost; "
        f"{r}/3: no row on n1; {r}/4: 1 acknowledged increments, value 0: 1 lost; ... 1 more",
        "evidence": {
            "mode": r,
            "keys": {
                f"{r}/1": {
                    "ok": 5,
                    "unknown": 1,
                    "fail": 1,
                    "final": {"n1": 3, "n2": 4},
                    "diverged": True,
                    "lost": 2,
                    "excess": 0,
                },
                f"{r}/2": {
                    "ok": 3,
                    "unknown": 0,
                    "fail": 0,
                    "final": {"n1": 3, "n2": 3},
                    "lost": 0,
                    "excess": 0,
                },
                f"{r}/3": {
                    "ok": 2,
                    "unknown": 0,
                    "fail": 0,
                    "final": {"n1": None, "n2": 2},
                    "lost": 0,
                    "excess": 0,
                },
                f"{r}/4": {
                    "ok": 1,
                    "unknown": 0,
                    "fail": 0,
                    "final": {"n1": 0, "n2": 0},
                    "lost": 1,
                    "excess": 0,
                },
                f"{r}/5": {
                    "ok": 0,
                    "unknown": 0,
                    "fail": 1,
                    "final": {"n1": 2, "n2": 2},
                    "lost": 0,
                    "excess": 2,
                },
            },
            "increments": {"ok": 11, "unknown": 1, "fail": 2},
            "lost": 3,
            "excess": 2,
            "unreadable_nodes": {"n3": "down"},
            "lost_fraction": 0.2727,
        },
        "documented_limitation": False,  # divergence and excess are never documented
    }
    assert mode_of(f"{r}/a/b") == r
    only = [*incs(f"{r}/1", OK, 2)]
    d = check_counter(only, {"n1": {f"{r}/1": 1}}, mode=r, documented=("lost-update",))
    assert d.documented_limitation and d.summary.endswith(
        "(documented limitation: read-modify-write without a lock loses updates)"
    )
    missing_row = check_counter(only, {"n1": {}}, mode=r, documented=("lost-update",))
    assert (missing_row.result, missing_row.documented_limitation) == (Result.FAIL, False)
    assert check_counter(only, {}, mode=r).summary == "no node was read"
    assert (
        check_counter(only, {"n2": "x", "n1": "y"}, mode=r).summary == "could not read the counters on n1, n2"
    )
    none_ok = [*incs(f"{r}/1", U, 1), *incs(f"{r}/1", F, 1)]
    assert check_counter(none_ok, {"n1": {f"{r}/1": 0}}, mode=r).summary == (
        "no acknowledged increment among 2 attempts"
    )
    ok = check_counter(only, {"n1": {f"{r}/1": 2}}, mode=r, keys=[f"{r}/1"])
    assert (
        ok.summary
        == "2 acknowledged increments on 1 counter(s), every node's value within [ok, ok + unknown]; "
        "none lost"
    )
