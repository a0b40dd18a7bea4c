"""Merging several clients' load: known histograms give known merged percentiles, and averaging
the clients' percentiles gives a different, wrong number for the same data."""

from __future__ import annotations

import math

import pytest

from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram
from clusterbench.workloads.merge import client_start_walls, fairness, merge_intervals, start_skew
from clusterbench.workloads.parse import Sample, Summary, combine_samples, merge_summaries

# sysbench 1.0.20's scheme, written out here rather than taken from the code under test
MULT = 1023 / (math.log(100000) - math.log(0.001))


def v(i: int) -> float:
    return math.exp(i / MULT + math.log(0.001))


def hist(pairs: dict[int, int]) -> LatencyHistogram:
    return LatencyHistogram.from_pairs(DEFAULT_SCHEME, list(pairs.items()))


# client A: 100 fast events; client B: 90 medium and 10 very slow ones
A = {400: 100}
B = {500: 90, 700: 10}


def nearest_rank(pairs: list[dict[int, int]], pct: float) -> float:
    """Independent oracle: every event's latency in one sorted list, the nearest-rank percentile."""
    values = sorted(v(i) for p in pairs for i, c in p.items() for _ in range(c))
    return values[math.ceil(len(values) * pct / 100) - 1]


def sample(
    client: int, t: float, interval: float, h: dict[int, int] | None, events: int, **kw: float
) -> Sample:
    return Sample(
        t=t, interval=interval, threads=2, events=events, reads=int(kw.get("reads", 0)), writes=0,
        other=0, errors=int(kw.get("errors", 0)), reconnects=int(kw.get("reconnects", 0)), percentile=95,
        lat_pct_ms=None, client=client, hist=hist(h) if h is not None else None, wall=kw.get("wall"),
    )  # fmt: skip


def test_known_histograms_give_known_merged_percentiles() -> None:
    merged = hist(A).merge(hist(B))
    assert merged.total == 200
    assert merged.percentile(50) == pytest.approx(v(400), rel=1e-12)
    assert merged.percentile(95) == pytest.approx(v(500), rel=1e-12)
    assert merged.percentile(99) == pytest.approx(v(700), rel=1e-12)
    for p in (50, 95, 99):
        assert merged.percentile(p) == pytest.approx(nearest_rank([A, B], p), rel=1e-12)


def test_averaging_per_client_percentiles_gives_a_different_wrong_answer() -> None:
    p95_a, p95_b = hist(A).percentile(95), hist(B).percentile(95)
    assert p95_a is not None and p95_b is not None
    assert (p95_a, p95_b) == (pytest.approx(v(400)), pytest.approx(v(700)))
    averaged = (p95_a + p95_b) / 2
    true_p95 = nearest_rank([A, B], 95)
    # 1.34 ms and 298 ms average to ~150 ms; the combined load's p95 is 8.1 ms
    assert round(p95_a, 2) == 1.34 and round(p95_b, 0) == 298
    assert round(averaged, 0) == 150 and round(true_p95, 2) == 8.13
    assert averaged > 18 * true_p95
    assert hist(A).merge(hist(B)).percentile(95) == pytest.approx(true_p95)


def test_per_interval_sum_is_exact() -> None:
    # each client divides by its own interval, so the sum of rates is not events / one interval
    a = sample(0, 1.0003, 1.0011, A, 100, reads=1000, errors=2, reconnects=1, wall=1000.0)
    b = sample(1, 0.9998, 1.0009, B, 100, reads=500, errors=3, wall=1000.02)
    [m] = combine_samples([a, b])
    assert m.client == -1 and m.t == 1.0 and m.events == 200 and m.threads == 4
    assert m.tps == a.tps + b.tps
    assert m.tps != pytest.approx(200 / 1.0011, rel=1e-6)
    assert m.qps_read == a.qps_read + b.qps_read
    assert (m.errors, m.reconnects) == (5, 1)
    assert m.pct(95) == pytest.approx(v(500)) and m.lat_pct_ms == pytest.approx(v(500))
    assert m.pct(99) == pytest.approx(v(700))
    assert m.wall == 1000.02


def test_one_clients_runs_within_a_second_count_once_at_their_rate_together() -> None:
    # mysqlslap reports each run (0.08 s here): twelve runs of client 0 between t = 0.5 and 1.5
    # are 12 / 0.96 = 12.5 runs/s, not twelve rates of 12.5 added up (150); a second client with
    # one 0.5 s run of 1 event adds its 2 runs/s
    runs = [sample(0, 0.5 + 0.08 * i, 0.08, A, 1, reads=10) for i in range(1, 13)]
    other = sample(1, 1.2, 0.5, B, 1, reads=4)
    [m] = combine_samples([*runs, other])
    assert m.events == 13 and m.threads == 4
    assert m.tps == pytest.approx(12 / 0.96 + 2.0)
    assert m.qps_read == pytest.approx(120 / 0.96 + 8.0)
    assert m.interval == pytest.approx(0.96)
    # a client with one sample per interval (sysbench) is unchanged: rates add up across clients
    [alone] = combine_samples([runs[0]])
    assert alone.tps == pytest.approx(1 / 0.08)


def test_missing_histogram_gives_no_percentile_rather_than_a_partial_one() -> None:
    a = sample(0, 1.0, 1.0, A, 100)
    b = sample(1, 1.0, 1.0, None, 100)
    [m] = combine_samples([a, b])
    assert m.events == 200 and m.hist is None and m.pct(95) is None and m.lat_pct_ms is None


def summary(h: dict[int, int] | None, events: int, duration: float = 10.0) -> Summary:
    return Summary(
        duration=duration, threads=2, events=events, reads=0, writes=0, other=0, errors=1, reconnects=0,
        lat_min_ms=0.1, lat_avg_ms=1.0, lat_max_ms=300.0, percentile=95, lat_pct_ms=None,
        hist=hist(h) if h is not None else None,
    )  # fmt: skip


def test_merged_summary_percentiles_come_from_the_summed_histogram() -> None:
    m = merge_summaries([summary(A, 100), summary(B, 100)])
    assert m is not None and m.clients == 2 and m.events == 200 and m.errors == 2
    assert m.pct(95) == pytest.approx(v(500)) and m.lat_pct_ms == pytest.approx(v(500))
    assert m.percentiles()[50.0] == pytest.approx(v(400))
    assert m.percentiles()[99.0] == pytest.approx(v(700))
    partial = merge_summaries([summary(A, 100), summary(None, 100)])
    assert partial is not None and partial.hist is None and partial.lat_pct_ms is None


def test_merge_intervals_marks_intervals_some_client_did_not_report() -> None:
    ss = [
        sample(0, 1.0, 1.0, A, 100, wall=100.0),
        sample(1, 1.01, 1.0, B, 100, wall=100.03),
        sample(0, 2.0, 1.0, A, 100, wall=101.0),
        sample(1, 2.01, 1.0, B, 100, wall=101.03),
        sample(0, 3.0, 1.0, A, 100, wall=102.0),
    ]
    m = merge_intervals(ss, clients=[0, 1])
    got = [(x.index, x.clients, x.complete) for x in m]
    assert got == [(1, (0, 1), True), (2, (0, 1), True), (3, (0,), False)]
    assert m[0].wall_spread == pytest.approx(0.03)
    assert m[0].sample.tps == 200.0 and m[2].sample.tps == 100.0


def test_start_skew_from_wall_clocks() -> None:
    ss = [
        sample(0, 1.0, 1.0, A, 1, wall=100.0),
        sample(0, 2.0, 1.0, A, 1, wall=101.0),
        sample(0, 3.0, 1.0, A, 1, wall=102.9),  # one late report does not move the start
        sample(1, 1.0, 1.0, A, 1, wall=100.25),
        sample(1, 2.0, 1.0, A, 1, wall=101.25),
    ]
    assert client_start_walls(ss) == {0: pytest.approx(99.0), 1: pytest.approx(99.25)}
    assert start_skew(ss) == pytest.approx(0.25)
    assert start_skew(ss[:3]) is None


def test_fairness() -> None:
    f = fairness([100.0, 300.0])
    assert f is not None
    assert (f.min, f.max, f.mean) == (100.0, 300.0, 200.0)
    assert f.cv == pytest.approx(0.5) and f.jain == pytest.approx(0.8) and f.spread == pytest.approx(1.0)
    even = fairness([50.0, 50.0, 50.0])
    assert even is not None and even.cv == 0.0 and even.jain == pytest.approx(1.0)
    assert fairness([]) is None


def test_interval_line_carries_the_wall_clock() -> None:
    from clusterbench.workloads.parse import decode_line, sample_from

    line = (
        'CBJSON {"type":"interval","time_total":1.0002950779999999,"time_interval":1.0012041030000001,'
        '"threads":1,"events":209217,"reads":0,"writes":0,"other":0,"errors":0,"reconnects":0,'
        '"percentile":95,"latency_pct_ms":0.0013338966739233039,"wall":1795337228.057557565}'
    )
    obj = decode_line(line)
    assert obj is not None
    s = sample_from(obj, client=1)
    assert s.wall == pytest.approx(1795337228.0575576) and s.client == 1


def test_start_skew_puts_other_machines_on_our_clock() -> None:
    # client 1's machine runs 2 s ahead: it reports (and waited for the start) on that clock
    ss = [sample(0, 1.0, 1.0, A, 1, wall=101.0), sample(1, 1.0, 1.0, A, 1, wall=103.05)]
    assert start_skew(ss) == pytest.approx(2.05)
    assert start_skew(ss, {1: 2.0}) == pytest.approx(0.05)


def test_merged_average_latency_is_weighted_by_events() -> None:
    fast = Summary(duration=10.0, threads=1, events=100, reads=0, writes=0, other=0, errors=0, reconnects=0,
                   lat_min_ms=0.5, lat_avg_ms=1.0, lat_max_ms=2.0, percentile=95, lat_pct_ms=None,
                   hist=hist(A))  # fmt: skip
    slow = Summary(duration=12.0, threads=3, events=300, reads=0, writes=0, other=0, errors=0, reconnects=0,
                   lat_min_ms=4.0, lat_avg_ms=10.0, lat_max_ms=40.0, percentile=95, lat_pct_ms=None,
                   hist=hist(B))  # fmt: skip
    m = merge_summaries([fast, slow])
    assert m is not None
    # (100 * 1.0 + 300 * 10.0) / 400 = 7.75, not the plain mean 5.5
    assert m.lat_avg_ms == pytest.approx(7.75)
    assert (m.lat_min_ms, m.lat_max_ms, m.duration, m.threads, m.events) == (0.5, 40.0, 12.0, 4, 400)
    none = Summary(duration=1.0, threads=1, events=0, reads=0, writes=0, other=0, errors=0, reconnects=0,
                   lat_min_ms=0.0, lat_avg_ms=0.0, lat_max_ms=0.0, percentile=95, lat_pct_ms=None,
                   hist=hist({}))  # fmt: skip
    both_idle = merge_summaries([none, none])
    assert both_idle is not None and both_idle.lat_avg_ms == 0.0


def test_fairness_in_full() -> None:
    f = fairness([1.0, 2.0, 3.0])
    assert f is not None
    # mean 2; population sd sqrt(2/3); Jain (1+2+3)^2 / (3 * (1+4+9)) = 36/42
    assert f.to_json() == {
        "n": 3, "min": 1.0, "max": 3.0, "mean": 2.0, "cv": pytest.approx((2 / 3) ** 0.5 / 2),
        "jain": pytest.approx(36 / 42), "spread": 1.0,
    }  # fmt: skip
    idle = fairness([0.0, 0.0])
    assert idle is not None and (idle.cv, idle.jain, idle.spread) == (0.0, 1.0, 0.0)
    assert fairness([]) is None
