"""What a list-append verdict waves through and what it never does: documented limitations
cover only classes that rule out no stronger model than the documented ones; the model
hierarchy, with every expected set worked out by hand."""

from __future__ import annotations

import pytest

from clusterbench.checkers.append import models
from clusterbench.checkers.list_append import check_list_append
from clusterbench.checkers.verdict import Result, combine

from .list_append_cases import U, X, Y, Z, a, history, r, t

# A session whose documentation promises snapshot isolation with write skew and stale reads (what
# clusterbench listed for Galera before InnoDB's Repeatable Read was found to break SI itself).
GALERA_DEFAULT = ("lost-update", "internal", "stale-read", "G2-item")
SSS, SRC, SSI = "strong-session-serializable", "strong-read-committed", "strong-snapshot-isolation"

NONADJACENT = history([t(a(X, 1)), t(r(X, 1), r(Y)), t(a(Y, 1)), t(r(Y, 1), r(X))])  # rw wr rw wr
WRITE_SKEW = history([t(r(X), a(Y, 1)), t(r(Y), a(X, 1))])
READ_SKEW = history([t(a(X, 1), a(Y, 1)), t(r(X), r(Y, 1))])  # x's append never read, no final read
P4 = [t(a(X, 1)), t(r(X, 1), a(X, 3)), t(a(X, 2)), t(r(X, 1, 2, 3), final=True)]


@pytest.mark.parametrize("documented", [("G2-item",), GALERA_DEFAULT])
def test_g_nonadjacent_breaks_si_even_with_write_skew_documented(documented: tuple[str, ...]) -> None:
    v = check_list_append(NONADJACENT, documented=documented)
    assert v.result is Result.FAIL and not v.documented_limitation
    assert v.evidence["broken"] == ["G-nonadjacent"] and v.evidence["documented_seen"] == []
    assert v.evidence["not"] == ["snapshot-isolation", "repeatable-read"]
    assert "snapshot-isolation" not in v.evidence["strongest_models"]
    assert "promise broken: G-nonadjacent" in v.summary
    assert combine([v]) is Result.FAIL
    ex = v.evidence["anomalies"]["G-nonadjacent"]["examples"][0]
    assert [s["type"] for s in ex["steps"]] == ["rw", "wr", "rw", "wr"]


def test_innodb_repeatable_read_documents_si_violations_but_never_read_committed_ones() -> None:
    """Both engines' InnoDB at REPEATABLE READ (engines/base.py INNODB_RR, Jepsen MySQL 8.0.34):
    fractured reads (G-single without a lost update) and G-nonadjacent are documented, G1c is not;
    reads under FOR UPDATE take them back (verify/list_append.py)."""
    from clusterbench.engines.base import INNODB_RR, LOCKING_READS_RULE_OUT, SessionSql
    from clusterbench.engines.galera.node import GALERA_SESSION
    from clusterbench.engines.group_replication.node import GR_SESSION

    assert GALERA_SESSION.documented_causal == GR_SESSION.documented_causal == INNODB_RR
    assert set(SessionSql((), (), ()).documented_default) == {*INNODB_RR, "stale-read"}
    for hist, name in ((NONADJACENT, "G-nonadjacent"), (READ_SKEW, "G-single")):
        v = check_list_append(hist, documented=INNODB_RR)
        assert v.result is Result.FAIL and v.documented_limitation, v.summary
        assert v.evidence["documented_seen"] == [name] and combine([v]) is Result.PASS
        locked = check_list_append(hist, documented=set(INNODB_RR) - LOCKING_READS_RULE_OUT)
        assert locked.evidence["broken"] == [name] and combine([locked]) is Result.FAIL
    g1c = history([t(a(X, 1), r(Y, 1)), t(a(Y, 1), r(X, 1))])  # each read the other's append: wr, wr
    v = check_list_append(g1c, documented=INNODB_RR)
    assert v.evidence["broken"] == ["G1c"] and combine([v]) is Result.FAIL


def test_write_skew_alone_is_documented_where_g2_item_is() -> None:
    v = check_list_append(WRITE_SKEW, documented=("G2-item",))
    assert v.result is Result.FAIL and v.documented_limitation
    assert v.evidence["documented_seen"] == ["G2-item"] and v.evidence["broken"] == []
    assert combine([v]) is Result.PASS
    assert check_list_append(WRITE_SKEW).documented_limitation is False


def test_g_single_among_unread_appends_without_final_read_fails() -> None:
    v = check_list_append(READ_SKEW, documented=GALERA_DEFAULT)
    assert v.result is Result.FAIL and not v.documented_limitation
    assert set(v.evidence["anomalies"]) == {"G-single"} and v.evidence["broken"] == ["G-single"]
    ex = v.evidence["anomalies"]["G-single"]["examples"][0]
    assert ex["p4"] is False and [s["type"] for s in ex["steps"]] == ["rw", "wr"]
    assert ex["steps"][0]["why"] == "T1 read key 1 as [], without T0's append of 1"


def test_g_single_is_documented_with_lost_updates_only_when_every_one_is_p4() -> None:
    only_p4 = check_list_append(history(P4), documented=("lost-update",))
    assert only_p4.documented_limitation and only_p4.evidence["documented_seen"] == ["G-single"]
    assert only_p4.evidence["anomalies"]["G-single"]["p4"] == 1
    # the same P4 next to an unrelated read skew on other keys: one G-single is not a lost update
    mixed = history([*P4, t(a(Y, 1), a(Z, 1)), t(r(Y), r(Z, 1))])
    v = check_list_append(mixed, documented=("lost-update",))
    g = v.evidence["anomalies"]["G-single"]
    assert (g["count"], g["p4"]) == (2, 1)
    assert v.evidence["broken"] == ["G-single"] and not v.documented_limitation
    assert g["examples"][0]["p4"] is False  # the one that breaks the promise comes first


def test_g_single_returning_by_wr_is_p4_when_both_appended_one_key_the_missed_one_first() -> None:
    """explain.p4's second rule: the shortest cycle T1 -rw-> T2 -wr-> T1 returns by wr, yet T1's
    append to x landed after T2's (with T3's between them, so no direct ww edge T2 -> T1): two
    concurrent writers of x both committed, a lost update. Without the shared key it is a read skew."""
    t2 = t(a(X, 2), a(Y, 2), a(Z, 2))
    t1 = t(r(Y), r(Z, 2), a(X, 4))
    t3 = t(a(X, 3))
    final = t(r(X, 2, 3, 4), r(Y, 2), r(Z, 2), final=True)
    v = check_list_append(history([t2, t3, t1, final]), documented=("lost-update",))
    g = v.evidence["anomalies"]["G-single"]
    assert g["examples"][0]["p4"] is True and [st["type"] for st in g["examples"][0]["steps"]] == ["rw", "wr"]
    assert g["p4"] == g["count"] and v.documented_limitation and combine([v]) is Result.PASS
    # the same through a third transaction (T2 -wr-> T4 -wr-> T1): the rw edge's target is T2
    t2, t4 = t(a(X, 2), a(Y, 2), a(U, 2)), t(r(U, 2), a(Z, 5))
    t1, t3a, t3b = t(r(Y), r(Z, 5), a(X, 4)), t(a(X, 3)), t(a(X, 6))
    final = t(r(X, 2, 3, 6, 4), r(Y, 2), r(Z, 5), r(U, 2), final=True)
    v3 = check_list_append(history([t2, t4, t3a, t3b, t1, final]), documented=("lost-update",))
    ex3 = v3.evidence["anomalies"]["G-single"]["examples"][0]
    assert [st["type"] for st in ex3["steps"]] == ["rw", "wr", "wr"] and ex3["p4"] is True
    skew = history([t(a(Y, 2), a(Z, 2)), t(r(Y), r(Z, 2), a(X, 4)), t(r(X, 4), r(Y, 2), r(Z, 2), final=True)])
    w = check_list_append(skew, documented=("lost-update",))
    assert w.evidence["anomalies"]["G-single"]["examples"][0]["p4"] is False
    assert w.evidence["broken"] == ["G-single"] and combine([w]) is Result.FAIL


def test_stale_reads_documented_cover_realtime_single_but_not_a_read_from_the_future() -> None:
    chain = history([t(a(X, 1), at=(0, 1)), t(a(Y, 1), at=(2, 3)), t(r(Y, 1), r(X))])
    v = check_list_append(chain, documented=("stale-read",))
    assert set(v.evidence["anomalies"]) == {"G-single-realtime"} and v.documented_limitation
    future = history([t(r(X, 1), at=(0, 1)), t(a(X, 1), at=(2, 3))])  # G1c-realtime
    f = check_list_append(future, documented=("stale-read",))
    assert f.evidence["broken"] == ["G1c-realtime"] and not f.documented_limitation
    write_order = history([t(a(X, 1), at=(0, 1)), t(a(X, 2), at=(2, 3)), t(r(X, 2, 1))])  # G0-realtime
    assert check_list_append(write_order, documented=GALERA_DEFAULT).evidence["broken"] == ["G0-realtime"]


def test_a_documented_class_covers_its_process_and_realtime_variants() -> None:
    skew_rt = history([t(a(Y, 1), at=(0, 1)), t(r(X), at=(2, 3)), t(a(X, 1), r(Y))])
    v = check_list_append(skew_rt, documented=("G2-item",))
    assert set(v.evidence["anomalies"]) == {"G2-item-realtime"} and v.documented_limitation
    skew_session = history([t(a(Y, 1), c=1, at=(0, 1)), t(r(X), c=1, at=(2, 3)), t(a(X, 1), r(Y))])
    assert check_list_append(skew_session, documented=("G2-item",)).documented_limitation
    # a lost update documented does not cover a session that misses its own write
    own = history([t(a(X, 1), c=1, at=(0, 1)), t(a(Y, 1), c=1, at=(2, 3)), t(r(Y, 1), r(X))])
    s = check_list_append(own, documented=GALERA_DEFAULT)
    assert s.evidence["broken"] == ["G-single-process"] and not s.documented_limitation


def test_duplicate_appends_make_the_history_unknown() -> None:
    v = check_list_append(history([t(a(X, 1)), t(a(X, 1)), t(r(X, 1))]))
    assert v.result is Result.UNKNOWN and combine([v]) is Result.UNKNOWN
    assert v.summary == (
        "cannot check this history: T0 and T1 both appended 1 to key 1: "
        "list-append needs every appended value to be unique per key"
    )
    assert v.evidence["strongest_models"] == [] and v.evidence["strongest_level"] == "not checked"


def test_lost_update_evidence_names_its_definition() -> None:
    v = check_list_append(history([t(a(X, 0)), t(r(X, 0), a(X, 1)), t(r(X, 0), a(X, 2))]))
    lu = v.evidence["anomalies"]["lost-update"]
    assert lu["definition"].startswith("lost-update: Elle's definition")
    assert lu["examples"][0]["definition"] == "elle"
    assert [x["txn"] for x in lu["examples"][0]["txns"]] == [1, 2] and lu["examples"][0]["read"] == [0]


# ---- the model hierarchy ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("found", "strongest", "weakest_out"),
    [
        ([], ["strict-serializable"], []),
        (["G0"], [], ["read-uncommitted"]),
        (["G1a"], ["strong-read-uncommitted"], ["read-committed"]),
        (["G-single"], ["strong-read-committed"], ["snapshot-isolation", "repeatable-read"]),
        (["G-nonadjacent"], ["strong-read-committed"], ["snapshot-isolation", "repeatable-read"]),
        (["G2-item"], ["strong-snapshot-isolation"], ["repeatable-read"]),
        (["internal"], ["repeatable-read", "strong-read-committed"], ["snapshot-isolation"]),
        (["G2-item", "internal"], ["strong-read-committed"], ["snapshot-isolation", "repeatable-read"]),
        (["G0-process"], ["serializable"], ["strong-session-read-uncommitted"]),
        (["G1c-process"], ["serializable", "strong-read-uncommitted"], ["strong-session-read-committed"]),
        (["G-single-process"], ["serializable", SRC], ["strong-session-snapshot-isolation"]),
        (["G2-item-process"], ["serializable", "strong-snapshot-isolation"], ["strong-session-serializable"]),
        (["G0-realtime"], ["strong-session-serializable"], ["strong-read-uncommitted"]),
        (["stale-read"], [SSS, SRC], [SSI]),
        (["G2-item-realtime"], [SSS, SSI], ["strict-serializable"]),
        (["duplicate-appends"], ["strict-serializable"], []),  # an input error rules out nothing
    ],
)
def test_strongest_models(found: list[str], strongest: list[str], weakest_out: list[str]) -> None:
    assert models.strongest(found) == strongest
    assert models.weakest_ruled_out(found) == weakest_out


def test_every_model_and_anomaly_is_known_and_the_hierarchy_has_no_cycle() -> None:
    assert set(models.IMPLIES) == set(models.MODELS) and len(models.MODELS) == 13
    for model, weaker in models.IMPLIES.items():
        assert set(weaker) <= set(models.MODELS)
        assert all(models.MODELS.index(w) > models.MODELS.index(model) for w in weaker)
    assert {m for ms in models.FORBIDDEN_BY.values() for m in ms} <= set(models.MODELS)
    assert models.implied("strict-serializable") == frozenset(models.MODELS)
    assert models.ruled_out(["read-uncommitted-nonsense"]) == frozenset()
    assert models.describe(["G0"]) == "none"
    assert models.describe(["stale-read"]) == "strong-session-serializable and strong-read-committed"


def _d(i: int, ops: list[list[object]], outcome: str = "ok") -> dict[str, object]:
    """A transaction of list_append_cases.history as the evidence describes it."""
    return {"txn": i, "client": 100 + i, "process": f"node:{100 + i}", "outcome": outcome, "ops": ops,
            "t_start": round(i * 0.001, 4), "t_end": 1000.0}  # fmt: skip


def test_read_anomalies_evidence_in_full() -> None:
    from .list_append_cases import FAIL

    h = history([
        t(a(X, 1), out=FAIL),  # T0 failed
        t(r(X, 1, 7)),  # T1: the failed 1 and a 7 nobody appended
        t(r(X, 1, 7)),  # T2: the same again: each reported once
        t(a(Y, 1), a(Y, 2)),  # T3
        t(r(Y, 1)),  # T4: T3's intermediate append
        t(r(Y, 2, 1)),  # T5: the longest read of y (the first of length 2)
        t(r(Y, 1, 2)),  # T6: not a prefix of it
    ])  # fmt: skip
    v = check_list_append(h)
    t3 = _d(3, [["append", 2, 1], ["append", 2, 2]])
    assert v.evidence["anomalies"] == {
        "G1a": {"count": 1, "examples": [
            {"key": 1, "value": 1, "writer": _d(0, [["append", 1, 1]], "fail"),
             "reader": _d(1, [["r", 1, [1, 7]]]),
             "why": "T1 read 1 in key 1, appended by T0, which failed"}]},
        "G1b": {"count": 2, "examples": [
            {"key": 2, "read": [1], "writer": t3, "reader": _d(4, [["r", 2, [1]]]),
             "why": "T4 read key 2 ending at 1, an intermediate append of T3"},
            {"key": 2, "read": [2, 1], "writer": t3, "reader": _d(5, [["r", 2, [2, 1]]]),
             "why": "T5 read key 2 ending at 1, an intermediate append of T3"}]},
        "incompatible-order": {"count": 2, "examples": [
            {"key": 2, "read": [1], "longest_read": [2, 1], "txn": _d(4, [["r", 2, [1]]]),
             "why": "T4 read key 2 as [1], not a prefix of [2, 1]"},
            {"key": 2, "read": [1, 2], "longest_read": [2, 1], "txn": _d(6, [["r", 2, [1, 2]]]),
             "why": "T6 read key 2 as [1, 2], not a prefix of [2, 1]"}]},
        "phantom-value": {"count": 1, "examples": [
            {"key": 1, "value": 7, "read_by": [1],
             "why": "T1 read 7 in key 1, which no transaction appended"}]},
    }  # fmt: skip
    assert v.summary == (
        "G1a x1, G1b x2, incompatible-order x2, phantom-value x1; consistent with none at best; "
        "promise broken: G1a, G1b, incompatible-order, phantom-value"
    )


def test_transaction_anomalies_evidence_in_full() -> None:
    from .list_append_cases import FAIL

    h = history([
        t(a(X, 1), out=FAIL),  # T0
        t(a(X, 2)),  # T1: appended right after a failed append
        t(r(X, 1, 2)),  # T2
        t(r(Y, 5), a(Y, 5), r(Y, 5)),  # T3: reads its own later append; then [5] again, not [5, 5]
        t(a(Z, 3), r(Z, 3), r(Z, 3, 9)),  # T4: a phantom 9 in its second read
        t(a(U, 1)), t(r(U, 1), a(U, 2)), t(r(U, 1), a(U, 3)), t(r(U, 1, 2, 3)),  # T5..T8
        t(r(U, 9, 9)),  # T9
        t(a(X, 4), a(X, 4)),  # T10: one value twice: the history is refused
    ])  # fmt: skip
    refused = check_list_append(h)
    assert refused.evidence["anomalies"] == {"duplicate-appends": {"count": 1, "examples": [
        {"key": 1, "value": 4, "txns": [_d(10, [["append", 1, 4], ["append", 1, 4]])] * 2,
         "why": "T10 and T10 both appended 4 to key 1: "
                "list-append needs every appended value to be unique per key"},
    ]}}  # fmt: skip
    v = check_list_append(h[:10])
    ev = v.evidence["anomalies"]
    assert ev["dirty-update"] == {"count": 1, "examples": [
        {"key": 1, "values": [1, 2], "failed": _d(0, [["append", 1, 1]], "fail"),
         "txn": _d(1, [["append", 1, 2]]),
         "why": "T1 appended 2 to key 1 after 1, appended by T0, which failed"}]}  # fmt: skip
    assert ev["future-read"] == {"count": 1, "examples": [
        {"key": 2, "element": 5, "txn": _d(3, [["r", 2, [5]], ["append", 2, 5], ["r", 2, [5]]]),
         "why": "T3 read 5 in key 2 before appending it"}]}  # fmt: skip
    assert [(e["txn"]["txn"], e["key"], e["read"], e["expected"]) for e in ev["internal"]["examples"]] == [
        (3, 2, [5], [5, 5]), (4, 3, [3, 9], [3]),
    ]
    assert ev["internal"]["examples"][1]["why"] == "T4 read key 3 as [3, 9]; its own operations left it [3]"
    assert ev["lost-update"]["examples"] == [
        {"key": 4, "read": [1], "definition": "elle", "txns": [_d(6, [["r", 4, [1]], ["append", 4, 2]]),
                                                                _d(7, [["r", 4, [1]], ["append", 4, 3]])],
         "why": "lost update (Elle: one version read, then appended to, by each): "
                "T6, T7 read key 4 as [1] and "
                "appended to it"}]  # fmt: skip
    assert ev["duplicate-elements"] == {"count": 1, "examples": [
        {"key": 4, "read": [9, 9], "txn": _d(9, [["r", 4, [9, 9]]]),
         "why": "T9 read key 4 as [9, 9], with an element twice"}]}  # fmt: skip


def test_stale_read_and_incompatible_read_evidence() -> None:
    from .list_append_cases import FAIL

    h = history([
        t(a(X, 1), a(Y, 5), at=(0.0, 1.0)),  # T0, acknowledged at 1.0
        t(r(X), at=(1.23456, 1.5)),  # T1 began 234.56 ms later without it
        t(a(Z, 1), out=FAIL),  # T2 failed
        t(a(Z, 2)),  # T3
        t(r(Z, 2, 3, 4)),  # T4: the longest read of z
        t(r(Z, 1, 8)),  # T5: incompatible, with the failed 1 and a phantom 8
        t(a(Z, 3)), t(a(Z, 4)),  # T6, T7
    ])  # fmt: skip
    ev = check_list_append(h).evidence["anomalies"]
    assert ev["stale-read"]["examples"] == [{
        "key": 1, "read": [], "missed": 1, "acknowledged_before_read_ms": 234.6,
        "reader": {"txn": 1, "client": 101, "process": "node:101", "outcome": "ok", "ops": [["r", 1, []]],
                   "t_start": 1.2346, "t_end": 1.5},
        "writer": {"txn": 0, "client": 100, "process": "node:100", "outcome": "ok",
                   "ops": [["append", 1, 1], ["append", 2, 5]], "t_start": 0.0, "t_end": 1.0},
        "why": "T1 (node:101) read key 1 without 1, appended by T0 (node:100) and acknowledged "
               "234.6 ms before the read began",
    }]  # fmt: skip
    assert [(e["key"], e["value"], e["reader"]["txn"]) for e in ev["G1a"]["examples"]] == [(3, 1, 5)]
    assert [(e["key"], e["value"], e["read_by"]) for e in ev["phantom-value"]["examples"]] == [(3, 8, [5])]
    assert [(e["key"], e["read"], e["longest_read"]) for e in ev["incompatible-order"]["examples"]] == [
        (3, [1, 8], [2, 3, 4])
    ]
