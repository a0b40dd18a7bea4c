"""check_list_append's verdict, summary and evidence fields pinned exactly for each way it ends:
PASS, FAIL with a broken promise beside a documented class, FAIL wholly documented, UNKNOWN with
nothing to check, UNKNOWN for a history it cannot check (duplicate appends)."""

from __future__ import annotations

from clusterbench.checkers.list_append import check_list_append
from clusterbench.checkers.verdict import Result
from tests.unit.checkers.test_list_append import FAIL, H, a, r
from tests.unit.checkers.test_list_append_evidence import read_skew

EVIDENCE_FIELDS = [
    "anomalies", "broken", "documented", "documented_seen", "graph", "keys", "not", "not_searched",
    "outcomes", "search_truncated", "strongest_level", "strongest_models", "txns",
]  # fmt: skip


def g_single_and_g1c() -> H:
    """A read skew on keys 1-2 (one rw edge: G-single) and a circular flow on keys 3-4 (G1c)."""
    h = read_skew()
    h.t(a(3, 1), r(4, 2))
    h.t(a(4, 2), r(3, 1))
    return h


def test_pass_names_its_counts_and_the_strongest_model() -> None:
    h = H()
    h.t(r(1), a(1, 1))
    h.t(r(1, 1), a(1, 2), a(2, 10))
    h.t(r(1, 1, 2), r(2, 10))
    v = check_list_append(h.txns, label="x")
    assert (v.checker, v.result, v.documented_limitation) == ("list-append:x", Result.PASS, False)
    assert v.summary == ("3 ok transactions (0 failed, 0 unknown), 4 dependencies, no anomaly: "
                         "consistent with strict-serializable")  # fmt: skip
    ev = v.evidence
    assert sorted(ev) == EVIDENCE_FIELDS
    assert (ev["txns"], ev["keys"], ev["outcomes"]) == (3, 2, {"ok": 3, "fail": 0, "unknown": 0})
    assert ev["graph"] == {"txns": 3, "edges": {"ww": 1, "wr": 3, "rw": 0, "process": 0, "realtime": 0}}
    assert (ev["not"], ev["documented"], ev["broken"], ev["documented_seen"]) == ([], [], [], [])
    assert (ev["search_truncated"], ev["not_searched"], ev["anomalies"]) == (False, {}, {})


def test_a_broken_promise_beside_a_documented_class() -> None:
    v = check_list_append(g_single_and_g1c().txns, documented=["G2-item", "G-single", "G-single"])
    assert v.checker == "list-append" and v.result is Result.FAIL and not v.documented_limitation
    assert v.summary == (
        "G1c x1, G-single x1; consistent with strong-read-uncommitted at best; promise broken: G1c; "
        "documented limitation seen: G-single"
    )
    ev = v.evidence
    assert ev["documented"] == ["G-single", "G2-item"]  # sorted, once each
    assert (ev["broken"], ev["documented_seen"], ev["not"]) == (["G1c"], ["G-single"], ["read-committed"])
    assert sorted(ev["anomalies"]) == ["G-single", "G1c"]


def test_every_class_documented_is_a_documented_limitation() -> None:
    v = check_list_append(g_single_and_g1c().txns, documented=["G1c", "G-single"])
    assert v.result is Result.FAIL and v.documented_limitation
    assert v.summary == (
        "G1c x1, G-single x1; consistent with strong-read-uncommitted at best; "
        "documented limitation seen: G1c, G-single"
    )
    assert v.evidence["broken"] == []


def test_ok_transactions_without_a_read_are_nothing_to_check() -> None:
    h = H()
    h.t(a(1, 1))
    h.t(a(1, 2), outcome=FAIL)
    v = check_list_append(h.txns)
    assert v.result is Result.UNKNOWN
    assert v.summary == "no ok transaction with a read among 2: nothing to check"


def test_duplicate_appends_are_refused_with_the_reason() -> None:
    h = H()
    h.t(a(1, 1))
    h.t(a(1, 1))
    h.t(r(1, 1))
    v = check_list_append(h.txns)
    assert v.result is Result.UNKNOWN and not v.documented_limitation
    assert v.summary == (
        "cannot check this history: T0 and T1 both appended 1 to key 1: list-append needs every "
        "appended value to be unique per key"
    )
    assert v.evidence["not"] == [] and v.evidence["strongest_level"] == "not checked"


def test_lost_appends_named_in_key_and_value_order_with_every_node_that_lacks_them() -> None:
    h = H()
    h.t(a(2, 5))
    h.t(a(1, 1), a(1, 2))
    h.t(a(3, 7))
    h.t(r(1, 1), r(2), final=True, client=100)  # lacks 2 and 5; never read key 3
    h.t(r(1, 1, 2), r(2), final=True, client=101)  # lacks 5
    h.t(r(1), r(2), r(3), final=True, client=102, outcome=FAIL)  # failed: shows nothing
    v = check_list_append(h.txns)
    lost = v.evidence["anomalies"]["lost-append"]
    assert lost["count"] == 2
    got = [(e["key"], e["value"], e["missing_on"], e["txn"]["txn"]) for e in lost["examples"]]
    assert got == [(1, 2, ["node:101"], 1), (2, 5, ["node:101", "node:102"], 0)]
    assert lost["examples"][1]["why"] == (
        "T0 appended 5 to key 2 (acknowledged); the final read on node:101, node:102 lacks it"
    )


def test_an_aborted_or_phantom_element_is_charged_to_the_read_that_shows_it_not_to_a_shorter_one() -> None:
    # T1 read [1], a prefix that stops just before the failed append 2 (or the phantom 9); only
    # T3 (T2) read past it.
    h = H()
    h.t(a(1, 1))
    h.t(r(1, 1))
    h.t(a(1, 2), outcome=FAIL)
    h.t(r(1, 1, 2))
    g1a = check_list_append(h.txns).evidence["anomalies"]["G1a"]
    assert g1a["count"] == 1 and g1a["examples"][0]["reader"]["txn"] == 3
    assert g1a["examples"][0]["why"] == "T3 read 2 in key 1, appended by T2, which failed"
    h = H()
    h.t(a(1, 1))
    h.t(r(1, 1))
    h.t(r(1, 1, 9))
    ph = check_list_append(h.txns).evidence["anomalies"]["phantom-value"]
    assert ph["count"] == 1 and ph["examples"][0]["read_by"] == [2]


def test_a_read_that_began_the_instant_an_append_was_acknowledged_is_not_stale() -> None:
    # Real time orders only what ended strictly before another began.
    summaries = {}
    for start in (1.0, 1.001):
        h = H()
        h.t(a(1, 1), start=0, end=1.0)
        h.t(r(1), start=start, end=2.0)
        h.t(r(1, 1), final=True)
        summaries[start] = check_list_append(h.txns).summary
    assert summaries[1.0].endswith("no anomaly: consistent with strict-serializable")
    assert summaries[1.001].startswith("stale-read x1;")
