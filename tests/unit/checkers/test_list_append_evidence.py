"""The evidence of each cycle written out exactly (checkers/append/explain.py): every edge's
type, keys and the sentence that justifies it, the cycle rotated to its first rw edge, and the P4
mark. Each expected text was checked by hand against the history above it."""

from __future__ import annotations

from typing import Any

from clusterbench.checkers.list_append import check_list_append
from tests.unit.checkers.test_list_append import H, a, r


def example(h: H, cls: str) -> dict[str, Any]:
    v = check_list_append(h.txns)
    ex: dict[str, Any] = v.evidence["anomalies"][cls]["examples"][0]
    return ex


def steps(ex: dict[str, Any]) -> list[tuple[int, int, str, list[int], str]]:
    return [(s["from"], s["to"], s["type"], s["keys"], s["why"]) for s in ex["steps"]]


def test_g0_two_ww_edges_with_every_key_of_an_edge() -> None:
    h = H()
    h.t(a(1, 1), a(2, 2), a(3, 5))
    h.t(a(1, 3), a(2, 4), a(3, 6))
    h.t(r(1, 1, 3), r(2, 4, 2), r(3, 5, 6))
    ex = example(h, "G0")
    assert ex["cycle"] == ["T0 -ww(1,3)-> T1", "T1 -ww(2)-> T0"]
    assert steps(ex) == [
        (0, 1, "ww", [1, 3], "T1 appended 3 after T0's 1 to key 1"),
        (1, 0, "ww", [2], "T0 appended 2 after T1's 4 to key 2"),
    ]
    assert ex["length"] == 2 and "p4" not in ex


def test_g1c_two_wr_edges() -> None:
    h = H()
    h.t(a(1, 1), r(2, 2))
    h.t(a(2, 2), r(1, 1))
    ex = example(h, "G1c")
    assert ex["cycle"] == ["T0 -wr(1)-> T1", "T1 -wr(2)-> T0"]
    assert steps(ex) == [
        (0, 1, "wr", [1], "T1 read key 1 as [1], ending with T0's append of 1"),
        (1, 0, "wr", [2], "T0 read key 2 as [2], ending with T1's append of 2"),
    ]


def read_skew(v: int = 2, key_2_first: bool = False) -> H:
    """T1 appends 2 to key 1 and v to key 2; T2 reads key 1 before T1 and key 2 after it (one
    rw edge)."""
    h = H()
    h.t(a(1, 1), a(2, 1))
    h.t(*((a(2, v), a(1, 2)) if key_2_first else (a(1, 2), a(2, v))))
    h.t(r(1, 1), r(2, 1, v))
    h.t(r(1, 1, 2), r(2, 1, v))
    return h


def test_g_single_read_skew_starts_at_its_rw_edge_and_is_not_p4() -> None:
    ex = example(read_skew(), "G-single")
    assert ex["cycle"] == ["T2 -rw(1)-> T1", "T1 -wr(2)-> T2"]
    assert steps(ex) == [
        (2, 1, "rw", [1], "T2 read key 1 as [1], without T1's append of 2"),
        (1, 2, "wr", [2], "T2 read key 2 as [1, 2], ending with T1's append of 2"),
    ]
    assert ex["p4"] is False
    assert [t["txn"] for t in ex["txns"]] == [2, 1]


def test_g_single_returning_by_ww_over_an_unread_append_is_p4() -> None:
    # T0 read key 1 empty and appended 2; T1 appended 1; the final read shows only [1], so 2 is
    # placed after it: T1's 1, then T0's 2 although T0 never saw 1.
    h = H()
    h.t(r(1), a(1, 2))
    h.t(a(1, 1))
    h.t(r(1, 1))
    ex = example(h, "G-single")
    assert steps(ex) == [
        (0, 1, "rw", [1], "T0 read key 1 as [], without T1's append of 1"),
        (1, 0, "ww", [1], "T0 appended 2 after T1's 1 to key 1"),
    ]
    assert ex["p4"] is True


def test_a_process_edge_says_which_session() -> None:
    h = H()
    h.t(a(1, 1), client=0)
    h.t(r(1), client=0)
    h.t(r(1, 1))
    ex = example(h, "G-single-process")
    assert ex["cycle"] == ["T1 -rw(1)-> T0", "T0 -process-> T1"]
    assert steps(ex) == [
        (1, 0, "rw", [1], "T1 read key 1 as [], without T0's append of 1"),
        (0, 1, "process", [], "T0 and then T1 ran in one session of client 0"),
    ]


def test_a_realtime_edge_gives_both_times() -> None:
    h = H()
    h.t(a(1, 1), start=0, end=1)
    h.t(a(2, 1), start=2, end=3)
    h.t(r(2, 1), r(1))
    h.t(r(1, 1))
    ex = example(h, "G-single-realtime")
    assert ex["cycle"] == ["T2 -rw(1)-> T0", "T0 -realtime-> T1", "T1 -wr(2)-> T2"]
    assert steps(ex) == [
        (2, 0, "rw", [1], "T2 read key 1 as [], without T0's append of 1"),
        (0, 1, "realtime", [], "T0 was acknowledged at 1.000 s, before T1 began at 2.000 s"),
        (1, 2, "wr", [2], "T2 read key 2 as [1], ending with T1's append of 1"),
    ]
    assert ex["length"] == 3


def test_an_edge_is_explained_by_the_writers_append_to_that_key_not_to_another() -> None:
    # T1 appends 7 to key 2 before it appends 2 to key 1: the rw edge on key 1 names 2
    assert [s[4] for s in steps(example(read_skew(7, key_2_first=True), "G-single"))] == [
        "T2 read key 1 as [1], without T1's append of 2",
        "T2 read key 2 as [1, 7], ending with T1's append of 7",
    ]
    # T0 appends 5 to key 1 and 7 to key 2; T1 appends 7 to key 1; T2's read of key 1 ends with
    # T1's 7, so T0 -wr-> T2 is explained by key 2 alone
    h = H()
    h.t(a(1, 5), a(2, 7), r(3, 1))
    h.t(a(1, 7))
    h.t(r(1, 7), r(2, 7), a(3, 1))
    assert steps(example(h, "G1c")) == [
        (0, 2, "wr", [2], "T2 read key 2 as [7], ending with T0's append of 7"),
        (2, 0, "wr", [3], "T0 read key 3 as [1], ending with T2's append of 1"),
    ]
