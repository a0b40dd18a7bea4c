"""checkers/http.py: acknowledged writes against what each node has (with its negative controls: a
lost write, an unreadable node), and each fault's HTTP outage from per-second figures."""

from __future__ import annotations

from clusterbench.checkers.http import HttpOutage, check_acknowledged, http_outages
from clusterbench.checkers.verdict import Result, Verdict
from clusterbench.workloads.vegeta import HttpSecond

ACKED = ["cbab12c0-0", "cbab12c0-1", "cbab12c1-0", "cbab12c0-1"]  # a retried id counts once
ALL = {"cbab12c0-0", "cbab12c0-1", "cbab12c1-0", "cbab12c1-5"}  # c1-5: committed, answer lost: fine


def test_every_acknowledged_write_on_every_node_passes() -> None:
    v = check_acknowledged(ACKED, {"n1": ALL, "n2": ALL, "n3": ALL})
    assert v == Verdict("acknowledged-writes", Result.PASS,
                        "all 3 acknowledged writes are rows on every node (n1, n2, n3)",
                        {"acknowledged": 3, "nodes": ["n1", "n2", "n3"], "unread": [], "missing_counts": {},
                         "missing": {}})  # fmt: skip


def test_negative_control_a_write_missing_on_one_node_fails_naming_it() -> None:
    lacking = ALL - {"cbab12c0-1"}
    v = check_acknowledged(ACKED, {"n1": ALL, "n2": lacking, "n3": ALL})
    assert v.result is Result.FAIL
    assert v.summary == "acknowledged writes lost: of 3 answered 200, n2 lacks 1 (e.g. cbab12c0-1 on n2)"
    assert v.evidence["missing"] == {"n2": ["cbab12c0-1"]} and v.evidence["missing_counts"] == {"n2": 1}
    # lost everywhere, and an unreadable node besides: still a FAIL (a definite loss on n1)
    v = check_acknowledged(ACKED, {"n1": set(), "n2": None})
    assert v.result is Result.FAIL and v.evidence["unread"] == ["n2"]
    assert v.summary == "acknowledged writes lost: of 3 answered 200, n1 lacks 3 (e.g. cbab12c0-0 on n1)"


def test_negative_control_an_unreadable_node_or_nothing_acknowledged_is_unknown() -> None:
    v = check_acknowledged(ACKED, {"n1": ALL, "n2": None})
    assert (v.result, v.summary) == (Result.UNKNOWN, "3 acknowledged writes; could not read n2")
    v = check_acknowledged([], {"n1": ALL})
    assert (v.result, v.summary) == (
        Result.UNKNOWN, "no write was acknowledged (no 200 on a write page): nothing to check")  # fmt: skip
    assert check_acknowledged(ACKED, {}).result is Result.UNKNOWN


def second(t: float, requests: int, codes: dict[str, int], p99: float = 5.0) -> HttpSecond:
    ok = sum(n for c, n in codes.items() if 200 <= int(c) < 400)
    return HttpSecond(-1, t, requests, ok, codes, 1.0, 2.0, p99, p99)


def test_outage_of_each_fault_from_the_seconds_around_it() -> None:
    seconds = [
        second(1, 100, {"200": 100}),
        second(2, 100, {"200": 100}),
        second(3, 100, {"200": 70, "0": 30}, p99=2000),  # due in (2, 3]: the fault began at 2.4
        second(4, 100, {"200": 95, "502": 5}),
        second(5, 100, {"200": 100}),
        second(6, 100, {"200": 100}),
        second(7, 100, {"200": 100}),
        second(8, 100, {"200": 99, "503": 1}),  # after the second fault began
        second(9, 100, {"200": 100}),
    ]
    # the load began 0.5 s into the trial: second t ends at trial time t + 0.5
    got = http_outages(seconds, [("kill-balancer fe1", 1.9, 4.0), ("kill-node w2", 7.2, 8.0)], offset=0.5)
    assert got[0] == HttpOutage("kill-balancer fe1", 1.9, 4.0, 600, 35, {"0": 30, "502": 5}, 2.5, 4.5, 2,
                                2000)  # fmt: skip
    assert got[0].seconds == 2.0
    assert got[0].line() == (
        "kill-balancer fe1: HTTP errors from 2.5 to 4.5 s (2 s window, 2 s with errors), 35 of 600 "
        "requests failed (0: 30, 502: 5; code 0 = no answer)"
    )
    # from one second before the second fault: the seconds ending after 6.2 s (t = 6..9)
    assert got[1] == HttpOutage("kill-node w2", 7.2, 8.0, 400, 1, {"503": 1}, 7.5, 8.5, 1, 5.0)
    calm = http_outages(seconds[:2], [("pause-node w1", 0.0, 1.0)])
    assert calm[0].failed == 0 and calm[0].seconds == 0.0
    assert calm[0].line() == "pause-node w1: no HTTP error (200 requests around it)"
    assert calm[0].to_json()["seconds"] == 0.0
