from __future__ import annotations

import math
from pathlib import Path

import pytest

from clusterbench.errors import WorkloadError
from clusterbench.workloads.histogram import DEFAULT_SCHEME, HistogramScheme, LatencyHistogram
from clusterbench.workloads.parse import (
    OutputParser,
    combine_samples,
    decode_line,
    merge_summaries,
    parse_output,
)

DATA = Path(__file__).parent / "data"


def lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines(keepends=True)


def test_warmup_run_drops_warmup_sample_and_summary_covers_measured_part() -> None:
    p = parse_output(lines("oltp_read_write_warmup1.out"), warmup=1, threads=2)
    assert [s.t for s in p.warmup_samples] == [1.0]
    # the report 0.3 ms after the checkpoint is warm-up; its one write after the checkpoint goes
    # into the next sample, and the 5 ms after the last report are the tail: the series adds up
    assert [(s.t, s.events, s.reads, s.writes, s.other, s.errors, s.reconnects) for s in p.samples] == [
        (2.0, 983, 13763, 3930 + 1, 1966, 0, 0),
        (3.0, 967, 13538, 3868, 1934, 0, 0),
        (3.005, 2, 4, 8, 2, 0, 0),
    ]
    assert p.samples[0].interval == pytest.approx(0.998623892 + (1.000462321 - 1.000146813))
    assert p.samples[2].interval == pytest.approx(3.005 - 3.0)
    # the percentile from the interval histogram equals sysbench's own, bit for bit
    assert [s.lat_pct_ms for s in p.samples[:2]] == [s.pct(95) for s in p.samples[:2]]
    assert p.samples[0].lat_pct_ms == pytest.approx(2.4328719830078365)
    s = p.summary
    assert s is not None
    assert (s.events, s.reads, s.writes, s.other, s.errors, s.reconnects, s.threads) == (
        1952,
        27305,
        7807,
        3902,
        0,
        0,
        2,
    )
    assert s.duration == pytest.approx(2.004271706)
    assert (s.lat_min_ms, s.lat_avg_ms, s.lat_max_ms) == pytest.approx((1.369715, 2.049533, 6.072788))
    assert s.lat_pct_ms == pytest.approx(2.522083905881136)
    assert s.pct(95) == s.lat_pct_ms
    assert s.percentiles() == pytest.approx(
        {50.0: 1.9600972296738333, 95.0: 2.522083905881136, 99.0: 3.3641993334103386, 99.9: 5.090317458567895}
    )
    assert s.tps == pytest.approx(973.92, abs=0.01)


def test_point_select_qps_and_histogram_total() -> None:
    p = parse_output(lines("oltp_point_select.out"), threads=2)
    assert [(s.t, s.events) for s in p.samples] == [(1.0, 28062), (2.001, 24194)]
    first = p.samples[0]
    assert first.qps_read == pytest.approx(28062 / first.interval)
    assert first.qps_write == 0.0
    assert first.lat_min_ms is not None and first.lat_avg_ms is not None and first.lat_max_ms is not None
    assert first.lat_min_ms <= first.lat_avg_ms <= first.lat_max_ms
    assert p.summary is not None and p.summary.hist is not None
    assert p.summary.hist.total == p.summary.events == 52256
    assert p.other_lines[0] == "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)"


def test_reconnects_are_counted() -> None:
    p = parse_output(lines("oltp_read_write_reconnect.out"), threads=4)
    assert [s.reconnects for s in p.samples] == [0, 4, 0, 0]
    assert p.summary is not None and p.summary.reconnects == 4 and p.summary.errors == 0


def test_bulk_insert_rows_are_events() -> None:
    p = parse_output(lines("bulk_insert.out"), threads=2)
    assert [s.events for s in p.samples] == [486500, 491490, 2]
    assert p.summary is not None and p.summary.events == 977992


def test_interval_with_no_events_has_no_percentile() -> None:
    line = (
        'CBJSON {"type":"interval","time_total":5.0,"time_interval":1.0,"threads":4,"events":0,"reads":0,'
        '"writes":0,"other":0,"errors":0,"reconnects":0,"percentile":95,"latency_pct_ms":0.001,'
        '"hist_scheme":null,"hist":null}\n'
    )
    parser = OutputParser()
    [s] = parser.feed(line)
    assert s.lat_pct_ms is None and s.tps == 0.0 and s.hist is None


def test_incomplete_interval_histogram_is_dropped() -> None:
    line = (
        'CBJSON {"type":"interval","time_total":1.0,"time_interval":1.0,"threads":2,"events":847,"reads":0,'
        '"writes":0,"other":0,"errors":0,"reconnects":0,"percentile":95,"latency_pct_ms":1.9,'
        '"hist_scheme":{"size":1024,"deduct":-6.9,"mult":55.5},"hist":[[420,1]]}'
    )
    [s] = OutputParser().feed(line)
    assert s.hist is None and s.lat_pct_ms is None and s.events == 847


def test_malformed_report_line() -> None:
    assert decode_line("FATAL: something\n") is None
    with pytest.raises(WorkloadError, match="malformed sysbench report line"):
        decode_line("CBJSON {not json")


def test_histogram_percentile_rule_and_merge() -> None:
    scheme = HistogramScheme(size=10, deduct=0.0, mult=1.0)
    h = LatencyHistogram.from_pairs(scheme, [[1, 50], [2, 45], [3, 4], [4, 1]])
    assert h.total == 100
    assert h.percentile(50) == math.exp(1)
    assert h.percentile(95) == math.exp(2)
    assert h.percentile(99) == math.exp(3)
    assert h.percentile(99.9) == math.exp(4)
    assert h.min_ms() == math.exp(1) and h.max_ms() == math.exp(4)
    m = h.merge(LatencyHistogram.from_pairs(scheme, [[4, 100]]))
    assert m.total == 200 and m.percentile(47) == math.exp(2) and m.percentile(50) == math.exp(4)
    assert LatencyHistogram.from_json(m.to_json()) == m
    with pytest.raises(WorkloadError):
        h.merge(LatencyHistogram(DEFAULT_SCHEME, {1: 1}))
    assert DEFAULT_SCHEME.value_ms(0) == pytest.approx(0.001)
    assert DEFAULT_SCHEME.value_ms(1023) == pytest.approx(100000)


def test_merge_two_clients() -> None:
    a = parse_output(lines("oltp_read_write_warmup1.out"), warmup=1, threads=2, client=0)
    b = parse_output(lines("oltp_read_write_reconnect.out"), threads=4, client=1)
    assert a.summary is not None and b.summary is not None
    m = merge_summaries([a.summary, b.summary])
    assert m is not None
    assert (m.events, m.threads, m.reconnects, m.clients) == (1952 + 1970, 6, 4, 2)
    assert m.hist is not None and m.hist.total == 1951 + 1970
    assert m.lat_min_ms == pytest.approx(1.369715) and m.lat_max_ms == pytest.approx(22.067291)
    combined = combine_samples(a.samples + b.samples)
    assert [(s.t, s.events) for s in combined] == [(1.0, 648), (2.0, 983 + 630), (3.0, 967 + 688 + 2 + 4)]


def _line(kind: str, t: float, interval: float, events: int, *, hist: int | None = -1) -> str:
    """A report line as cb_report.lua prints it: reads 10, writes 4 and other 2 per event, `hist`
    events (default: all) in histogram bucket 400."""
    n = events if hist == -1 else hist
    scheme = '{"size":1024,"deduct":-6.9,"mult":55.5}'
    h = f',"hist_scheme":{scheme},"hist":[[400,{n}]]' if n is not None else ""
    return (
        f'CBJSON {{"type":"{kind}","time_total":{t},"time_interval":{interval},"threads":8,'
        f'"events":{events},"reads":{10 * events},"writes":{4 * events},"other":{2 * events},'
        f'"errors":0,"reconnects":0,"percentile":95,"latency_pct_ms":1.0{h}}}'
    )


def test_series_adds_up_to_the_summary_under_load() -> None:
    """A 5-s trial after a 2-s warm-up on a loaded machine: the checkpoint is 0.35 s late and its
    line comes after the next report's; the report due at 6 s comes at 6.6 s, and the one due at
    7 s never comes (the workers stopped first). 1000 events a second throughout."""
    out = [
        _line("interval", 1.0, 1.0, 1000),
        _line("interval", 2.0, 1.0, 1000),
        # 650 of them after the checkpoint at 2.35, whose histogram took the 350 before it
        _line("interval", 3.0, 1.0, 1000, hist=650),
        _line("checkpoint", 2.35, 2.35, 2350, hist=None),
        _line("interval", 4.0, 1.0, 1000),
        _line("interval", 5.0, 1.0, 1000),
        _line("interval", 6.6, 1.6, 1600),
        'CBJSON {"type":"histogram","tid":0,"count":4650,"hist_scheme":{"size":1024,"deduct":-6.9,'
        '"mult":55.5},"hist":[[400,4650]]}',
        _line("summary", 7.002, 4.652, 4650, hist=None),
    ]
    p = OutputParser(warmup=2, threads=8)
    fed = [s for ln in out for s in p.feed(ln)]
    fed += p.finish()
    r = p.result()
    assert [(s.t, s.events, s.reads, s.writes) for s in fed] == [
        (3.0, 650, 6500, 2600),
        (4.0, 1000, 10000, 4000),
        (5.0, 1000, 10000, 4000),
        (6.6, 1600, 16000, 6400),
        (7.002, 400, 4000, 1600),
    ]
    assert fed == r.samples and [s.t for s in r.warmup_samples] == [1.0, 2.0]
    assert r.summary is not None and sum(s.events for s in r.samples) == r.summary.events == 4650
    assert sum(s.interval for s in r.samples) == pytest.approx(7.002 - 2.35)
    assert [s.interval for s in r.samples] == pytest.approx([0.65, 1.0, 1.0, 1.6, 0.402])
    tail = r.samples[-1]
    assert tail.hist is not None and tail.hist.total == 400 and tail.tps == pytest.approx(400 / 0.402)
    assert p.finish() == []  # once


def test_without_a_checkpoint_held_reports_are_placed_by_time() -> None:
    """No checkpoint line ever came (sysbench died at the end of the warm-up)."""
    p = OutputParser(warmup=1)
    assert p.feed(_line("interval", 1.0, 1.0, 10)) == [] and p.feed(_line("interval", 2.0, 1.0, 10)) == []
    assert [s.t for s in p.finish()] == [2.0]
    assert [s.t for s in p.warmup_samples] == [1.0]


def test_histogram_minus() -> None:
    scheme = HistogramScheme(size=10, deduct=0.0, mult=1.0)
    a = LatencyHistogram.from_pairs(scheme, [[1, 5], [2, 3]])
    assert a.minus(LatencyHistogram.from_pairs(scheme, [[1, 5], [2, 1]])) == LatencyHistogram(scheme, {2: 2})
    assert a.minus(LatencyHistogram.from_pairs(scheme, [[3, 1]])) is None
    assert a.minus(None) is a
