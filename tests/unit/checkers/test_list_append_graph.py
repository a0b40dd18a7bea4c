"""The list-append graph's parts on small inputs worked out by hand: real-time and session edges,
component labels in reverse topological order, the search's bounds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clusterbench.checkers.append import cycles, graph
from clusterbench.checkers.append.graph import PROCESS, REALTIME, RW, WR, WW, EdgeList, Graph
from clusterbench.checkers.list_append import check_list_append
from clusterbench.history.ops import Outcome
from clusterbench.history.txn import MicroOp, Txn

from .list_append_cases import X, a, history, r, t

OK, FAIL, UNK = Outcome.OK, Outcome.FAIL, Outcome.UNKNOWN


def txn(i: int, start: float, end: float, outcome: Outcome = OK, client: int | None = None) -> Txn:
    return Txn(i, i if client is None else client, "p", outcome, (MicroOp("append", 9, i),), start, end)


def edges(e: EdgeList) -> set[tuple[int, int, int]]:
    return set(zip(e.src.tolist(), e.dst.tolist(), e.typ.tolist(), strict=True))


def test_realtime_edges_are_the_transitive_reduction() -> None:
    # A ends before B begins, B before C; D overlaps all three; E begins after C and D ended
    txns = [txn(0, 0, 1), txn(1, 2, 3), txn(2, 4, 5), txn(3, 0.5, 4.5), txn(4, 6, 7)]
    e = EdgeList()
    graph.realtime_edges(txns, [True] * 5, e)
    assert edges(e) == {(0, 1, REALTIME), (1, 2, REALTIME), (2, 4, REALTIME), (3, 4, REALTIME)}


def test_realtime_equal_times_order_nothing_and_unknown_outcomes_never_end() -> None:
    txns = [txn(0, 0, 1), txn(1, 1, 2), txn(2, 0, 0.5, UNK), txn(3, 3, 4), txn(4, 3.5, 3.6, FAIL)]
    e = EdgeList()
    graph.realtime_edges(txns, [True, True, True, True, False], e)
    # 0 ends at 1 when 1 begins: no edge; 2 may commit any time: nothing after it; 4 failed: absent
    assert edges(e) == {(0, 3, REALTIME), (1, 3, REALTIME)}


def test_session_edges_skip_failures_and_end_at_an_unknown_outcome() -> None:
    c = 7
    txns = [txn(0, 0, 1, client=c), txn(1, 2, 3, FAIL, client=c), txn(2, 4, 5, client=c),
            txn(3, 6, 7, UNK, client=c), txn(4, 8, 9, client=c), txn(5, 10, 11, client=c),
            txn(6, 1, 2, client=8)]  # fmt: skip
    e = EdgeList()
    graph.process_edges(txns, e)
    assert edges(e) == {(0, 2, PROCESS), (4, 5, PROCESS)}


def test_edge_list_drops_self_edges_and_counts_types() -> None:
    e = EdgeList()
    for s, d, typ in ((0, 0, WW), (0, 1, WW), (0, 1, RW), (1, 0, WR)):
        e.add(s, d, typ)
    assert len(e.src) == 3 and (e.count(WW), e.count(RW), e.count(WR), e.count(PROCESS)) == (1, 1, 1, 0)
    assert EdgeList().count(WW) == 0


def test_graph_merges_parallel_edges_and_labels_components_sinks_first() -> None:
    e = EdgeList()
    for s, d, typ in ((0, 1, WW), (0, 1, RW), (1, 2, WR), (2, 1, RW), (2, 3, WW)):
        e.add(s, d, typ)
    g = Graph(4, e)
    assert sorted(g.succ(0)) == [(1, WW | RW)] and g.mask(0, 1) == WW | RW and g.mask(1, 0) == 0
    assert sorted(g.succ(3)) == []
    labels, sizes = g.components(WW | WR | RW)
    lab = list(labels)
    assert lab[1] == lab[2] and len({lab[0], lab[1], lab[3]}) == 3
    assert lab[0] > lab[1] > lab[3]  # every edge between components goes from higher to lower
    assert sorted(sizes.tolist()) == [1, 1, 2]
    # only the ww edges: no cycle, four components
    ww_labels, ww_sizes = g.components(WW)
    assert len(set(ww_labels)) == 4 and ww_sizes.tolist() == [1, 1, 1, 1]
    src, dst, masks = g.edges_of(RW)
    assert list(zip(src.tolist(), dst.tolist(), masks.tolist(), strict=True)) == [(0, 1, WW | RW), (2, 1, RW)]


def test_reverse_topological_relabels_a_topological_labeling() -> None:
    # components 0 -> 1 -> 2 labeled in topological order: the edges go from lower to higher
    labels = np.array([0, 1, 2, 2], dtype=np.int64)
    out = graph._reverse_topological(labels, 3, np.array([0, 1]), np.array([1, 2]))
    assert out.tolist() == [2, 1, 0, 0]


def test_the_search_keeps_five_cycles_per_component_and_says_it_stopped() -> None:
    # six transactions read key x empty and append to it, none of the appends read: each pair
    # missed the other (rw both ways), 15 write-skew cycles in one component
    v = check_list_append(history([t(r(X), a(X, i)) for i in range(1, 7)]))
    g2 = v.evidence["anomalies"]["G2-item"]
    assert cycles.CYCLES_PER_SCC == 5 and g2["count"] == 5 and v.evidence["search_truncated"] is True
    two = check_list_append(history([t(r(X), a(X, 1)), t(r(X), a(X, 2))]))
    assert two.evidence["anomalies"]["G2-item"]["count"] == 1 and two.evidence["search_truncated"] is False


def star(n: int, keys_from: int = 10, first: int = 0) -> list[Any]:
    """T0 and each of T1..Tn write two keys of their own in opposite orders: n write cycles
    (G0), each T0 <-> Ti, all in one component through T0 (keys from `keys_from` on)."""
    k = [keys_from + 2 * i for i in range(n)]
    t0 = t(*[m for x in k for m in (a(x, 1), a(x + 1, 2))])
    others = [t(a(x, 3), a(x + 1, 4)) for x in k]
    final = t(*[m for x in k for m in (r(x, 1, 3), r(x + 1, 4, 2))])
    return [t0, *others, final]


@pytest.mark.parametrize(("n", "count", "truncated"), [(1, 1, False), (4, 4, False), (7, 5, True)])
def test_a_cycle_found_again_from_its_other_edge_does_not_count_towards_the_budget(
    n: int, count: int, truncated: bool
) -> None:
    # Each 2-cycle is reached from both of its ww edges; only its first finding counts, so four
    # cycles are all found without the search claiming it stopped early, and seven are cut at five.
    v = check_list_append(history(star(n)))
    assert v.evidence["anomalies"]["G0"]["count"] == count
    assert v.evidence["search_truncated"] is truncated


def test_each_component_has_a_budget_of_its_own() -> None:
    # seven write cycles in one component (cut at five) and three in another (all found)
    v = check_list_append(history(star(7) + star(3, keys_from=100)))
    assert v.evidence["anomalies"]["G0"]["count"] == 8
    assert not [e for e in v.evidence["anomalies"]["G0"]["examples"] if "note" in e]


def test_variants_a_class_found_makes_needless_are_named_as_not_searched() -> None:
    v = check_list_append(history(star(2)))
    assert v.evidence["not_searched"] == {
        f"{f}-{var}": "implied by G0, already found"
        for var in ("process", "realtime")
        for f in ("G0", "G1c", "G-single", "G-nonadjacent", "G2-item")
    }


def test_what_is_documented_decides_which_variants_are_searched() -> None:
    # G0 documented: only its own variants are documented with it; the others are searched
    v = check_list_append(history(star(2)), documented=["G0"])
    assert v.evidence["not_searched"] == {
        "G0-process": "implied by G0, already found", "G0-realtime": "implied by G0, already found"
    }  # fmt: skip


def lost_updates(n: int) -> list[Any]:
    """n keys, each read empty and appended to by one transaction while another appended first:
    n lost updates (G-single, all P4)."""
    return [x for k in range(1, n + 1) for x in (t(r(k), a(k, 2)), t(a(k, 1)), t(r(k, 1)))]


def test_p4_is_counted_over_every_g_single_not_only_the_examples() -> None:
    gs = check_list_append(history(lost_updates(7))).evidence["anomalies"]["G-single"]
    assert (gs["count"], gs["p4"], len(gs["examples"])) == (7, 7, 5)


def test_with_lost_updates_documented_the_g_single_process_variant_is_still_searched() -> None:
    v = check_list_append(history(lost_updates(7)), documented=["lost-update"])
    assert v.evidence["documented_seen"] == ["G-single"] and v.evidence["broken"] == ["G2-item"]
    assert "G-single-process" not in v.evidence["not_searched"]


def test_one_g_single_that_is_not_p4_makes_every_g_single_a_broken_promise() -> None:
    read_skew = [t(a(5, 1), a(6, 1)), t(a(5, 2), a(6, 2)), t(r(5, 1), r(6, 1, 2)), t(r(5, 1, 2), r(6, 1, 2))]
    v = check_list_append(history(lost_updates(1) + read_skew), documented=["lost-update"])
    gs = v.evidence["anomalies"]["G-single"]
    assert (gs["count"], gs["p4"]) == (2, 1)
    assert "G-single" in v.evidence["broken"] and not v.documented_limitation


def test_one_ok_read_is_something_to_check() -> None:
    v = check_list_append(history([t(r(1))]))
    assert v.summary == (
        "1 ok transactions (0 failed, 0 unknown), 0 dependencies, no anomaly: "
        "consistent with strict-serializable"
    )


def test_a_refused_history_still_counts_what_it_holds() -> None:
    v = check_list_append(history([t(a(1, 1)), t(a(1, 1)), t(r(1, 1))]), label="dup")
    ev = v.evidence
    assert v.checker == "list-append:dup"
    assert (ev["txns"], ev["outcomes"], ev["graph"], ev["keys"]) == (
        3, {"ok": 3, "fail": 0, "unknown": 0}, {"txns": 0, "edges": {}}, 1
    )  # fmt: skip
    assert list(ev["anomalies"]) == ["duplicate-appends"]
    assert ev["anomalies"]["duplicate-appends"]["count"] == 1


def test_the_search_stops_at_its_time_budget_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # a write skew with no time left: the search stops and says so; the fallback still finds the class
    monkeypatch.setattr(cycles, "SEARCH_BUDGET_S", -1.0)
    v = check_list_append(history([t(r(X), a(X, 1)), t(r(X), a(X, 2))]))
    assert v.evidence["search_truncated"] is True and v.evidence["anomalies"]["G2-item"]["count"] == 1


def test_more_components_than_examples_found_after_the_time_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # Seven separate write skews with no search time left: the fallback finds one cycle in each;
    # the five shown say they were found after the bound, the other two are counted.
    monkeypatch.setattr(cycles, "SEARCH_BUDGET_S", -1.0)
    txns = [x for k in range(1, 8) for x in (t(r(k), a(k, 1)), t(r(k), a(k, 2)))]
    v = check_list_append(history(txns))
    g2 = v.evidence["anomalies"]["G2-item"]
    assert v.evidence["search_truncated"] is True and g2["count"] == 7
    assert [e["note"] for e in g2["examples"]] == ["found after the search bound"] * 5


def test_the_search_bounds_the_states_of_one_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cycles, "STATES_PER_SEARCH", 0)
    v = check_list_append(history([t(r(X), a(X, 1)), t(r(X), a(X, 2))]))
    assert v.evidence["search_truncated"] is True and v.evidence["anomalies"]["G2-item"]["count"] == 1


@pytest.mark.parametrize(("states", "truncated"), [(1, True), (2, False)])
def test_a_walk_may_expand_exactly_its_state_budget(
    monkeypatch: pytest.MonkeyPatch, states: int, truncated: bool
) -> None:
    # A 2-cycle closes in the walk's first state; a 3-cycle of rw edges (T0 misses T2's append,
    # T2 misses T1's, T1 misses T0's) needs a second state.
    monkeypatch.setattr(cycles, "STATES_PER_SEARCH", states)
    two = check_list_append(history([t(r(X), a(X, 1)), t(r(X), a(X, 2))]))
    assert two.evidence["search_truncated"] is False
    assert [e.get("note") for e in two.evidence["anomalies"]["G2-item"]["examples"]] == [None]
    three = check_list_append(history([t(r(1), a(2, 1)), t(r(2), a(3, 1)), t(r(3), a(1, 1))]))
    assert three.evidence["search_truncated"] is truncated
    assert three.evidence["anomalies"]["G2-item"]["count"] == 1


@pytest.mark.parametrize("edges", [1, 2])
def test_a_component_tries_exactly_its_budget_of_anchor_edges(
    monkeypatch: pytest.MonkeyPatch, edges: int
) -> None:
    # three write cycles through T0: each anchor tried finds one new cycle, then the budget stops
    monkeypatch.setattr(cycles, "EDGES_PER_SCC", edges)
    v = check_list_append(history(star(3)))
    assert v.evidence["anomalies"]["G0"]["count"] == edges
    assert v.evidence["search_truncated"] is True
