"""workloads/vegeta.py: vegeta's JSON results into per-second samples, exact totals and the
acknowledged writes. Two fixtures, both checked against `vegeta report -type=json` (vegeta
12.13.0): a real capture (data/vegeta_health_50rps.jsonl: 50 requests/s for 3 s at a web node's
/health with no database behind it, every answer a 503), and a synthetic two-client write load
made below (most writes answered 200 with their id, every 7th a 503, every 11th a timeout) whose
lines were handed to vegeta report to get data/vegeta_synth_*.report.json."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import WorkloadError
from clusterbench.workloads.histogram import merge_all
from clusterbench.workloads.parse import combine_samples
from clusterbench.workloads.vegeta import (
    HttpDetails,
    Tally,
    VegetaStream,
    combine_seconds,
    go_seconds,
    latency_histogram,
    merge_tallies,
    parse_result,
    parse_timestamp_ns,
    rank_value,
    tally_summary,
)

DATA = Path(__file__).parent / "data"

# --- the synthetic write load (its lines were given to vegeta report once) ---

BEGIN = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)
RATE = 10
SECONDS = 3


def _line(client: int, seq: int) -> tuple[int, str]:
    attack = f"cbabc123c{client}"
    sent_ns = (seq + 1) * 1_000_000_000 // RATE + client * 1_337 + (seq * 7919) % 900_000
    latency = 2_000_000 + (seq * 104_729 + client * 15_485_863) % 40_000_000
    if seq % 11 == 5:
        code, body, latency = 0, b"", 2_500_000_000
        err = 'Get "http://198.18.0.6/write": context deadline exceeded'
    elif seq % 7 == 3:
        code, err = 503, "503 Service Unavailable"
        body = b'{"ok":false,"error":"query","errno":1213,"message":"Deadlock","node":"w2"}\n'
    else:
        code, err = 200, ""
        answer = {"page": "write", "id": f"{attack}-{seq}", "ok": True, "node": f"w{seq % 3 + 1}"}
        body = json.dumps(answer).encode()
    ts = BEGIN + timedelta(microseconds=sent_ns // 1000)
    frac = f"{ts.microsecond:06d}{sent_ns % 1000:03d}".rstrip("0")
    stamp = ts.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"
    d = {
        "attack": attack, "seq": seq, "code": code, "timestamp": stamp, "latency": latency, "bytes_out": 0,
        "bytes_in": len(body), "error": err, "body": base64.b64encode(body).decode(), "method": "GET",
        "url": "http://198.18.0.6/write", "headers": None,
    }  # fmt: skip
    return sent_ns + latency, json.dumps(d, separators=(",", ":"))


def client_lines(client: int) -> list[str]:
    """One client's results in the order they completed."""
    done = [_line(client, seq) for seq in range(RATE * SECONDS)]
    return [line for _, line in sorted(done)]


def expected_acks(client: int) -> list[str]:
    return [f"cbabc123c{client}-{seq}" for seq in range(RATE * SECONDS) if seq % 11 != 5 and seq % 7 != 3]


# --- helpers ---


def report_of(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def feed_all(stream: VegetaStream, lines: list[str]) -> list[Any]:
    out = []
    for line in lines:
        out += stream.feed(line)
    return out + stream.finish()


def assert_same_as_vegeta(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Every figure of vegeta's report but its percentiles (t-digest estimates there) is equal."""
    for key in ("requests", "status_codes", "success", "duration", "wait", "rate", "throughput", "errors",
                "bytes_in", "bytes_out"):  # fmt: skip
        assert ours[key] == theirs[key], key
    for key in ("total", "mean", "min", "max"):
        assert ours["latencies"][key] == theirs["latencies"][key], key
    for key in ("earliest", "latest", "end"):
        assert parse_timestamp_ns(ours[key]) == parse_timestamp_ns(theirs[key]), key


HEALTH = (DATA / "vegeta_health_50rps.jsonl").read_text().splitlines()


# --- parsing ---


def test_timestamps_keep_nanoseconds_and_zones() -> None:
    assert parse_timestamp_ns("1970-01-01T00:00:01.000000001Z") == 1_000_000_001
    assert parse_timestamp_ns("1970-01-01T01:00:02.5+01:00") == 2_500_000_000
    assert parse_timestamp_ns("2026-11-28T13:58:43Z") == parse_timestamp_ns("2026-11-28T14:58:43.000+01:00")
    with pytest.raises(WorkloadError, match="is not RFC 3339"):
        parse_timestamp_ns("28/11/2026")


def test_parse_result_of_the_real_capture() -> None:
    r = parse_result(HEALTH[0])
    assert r is not None
    assert (r.attack, r.seq, r.code, r.latency_ns, r.bytes_in) == ("cbsmoke", 0, 503, 5234002, 87)
    assert not r.success
    assert r.answer() == {"ok": False, "error": "connect", "errno": 2002, "message": "Connection refused",
                          "node": "w1"}  # fmt: skip
    assert parse_result("  \n") is None
    with pytest.raises(WorkloadError, match="cannot read"):
        parse_result('{"seq": "x"}')


def test_rank_rule_and_go_seconds() -> None:
    values = list(range(1, 101))
    assert rank_value(values, 50) == 50
    assert rank_value(values, 95) == 95
    assert rank_value(values, 99.9) == 100
    assert rank_value([7], 1) == 7
    assert rank_value([], 50) is None
    # Go adds whole seconds and the rest (not ns / 1e9): the last bit differs, and vegeta's rate with it
    assert go_seconds(2_979_721_281) == 2.0 + 979_721_281 / 1e9 != 2_979_721_281 / 1e9
    assert go_seconds(-1_500_000_000) == -1.5


# --- the real capture: 50/s for 3 s, every answer a 503 ---


def test_capture_gives_three_complete_seconds_of_fifty() -> None:
    st = VegetaStream(client=0, rate=50, warmup=0, percentile=95.0, page="read")
    samples = feed_all(st, HEALTH)
    assert [s.t for s in samples] == [1.0, 2.0, 3.0]
    assert [(s.events, s.errors, s.interval, s.client) for s in samples] == [(0, 50, 1.0, 0)] * 3
    assert [sec.codes for sec in st.seconds] == [{"503": 50}] * 3
    assert st.acknowledged == []
    # each second's histogram holds exactly its requests; the exact percentile is one of them
    for s, sec in zip(samples, st.seconds, strict=True):
        assert s.hist is not None and s.hist.total == 50
        assert s.lat_pct_ms == sec.p95_ms
    assert st.schedule_lag_ms is not None and st.schedule_lag_ms < 50


def test_capture_totals_equal_vegetas_report() -> None:
    st = VegetaStream(client=0, rate=50, warmup=0, percentile=95.0, page="read")
    feed_all(st, HEALTH)
    theirs = report_of("vegeta_health_50rps.report.json")
    assert_same_as_vegeta(st.total().report(), theirs)
    # and the per-second figures add up to the same totals
    assert sum(sec.requests for sec in st.seconds) == theirs["requests"]
    assert sum(sec.codes["503"] for sec in st.seconds) == theirs["status_codes"]["503"]
    assert max(sec.max_ms or 0 for sec in st.seconds) == theirs["latencies"]["max"] / 1e6


def test_exact_percentiles_are_near_vegetas_estimates() -> None:
    st = VegetaStream(client=0, rate=50, warmup=0, percentile=95.0, page="read")
    feed_all(st, HEALTH)
    ours, theirs = st.total().report()["latencies"], report_of("vegeta_health_50rps.report.json")["latencies"]
    for key in ("50th", "95th", "99th"):
        assert ours[key] == pytest.approx(theirs[key], rel=0.05), key


def test_summary_counts_successes_as_events_and_every_request_in_latency() -> None:
    st = VegetaStream(client=0, rate=50, warmup=0, percentile=95.0, page="read")
    feed_all(st, HEALTH)
    s = tally_summary(st.total(), 3.0, 95.0)
    assert (s.events, s.errors, s.tps, s.duration) == (0, 150, 0.0, 3.0)
    assert s.lat_max_ms == 10.172388
    assert s.lat_avg_ms == pytest.approx(188268994 / 150 / 1e6)
    assert s.hist is not None and s.hist.total == 150


# --- the synthetic write load: two clients, out-of-order completions ---


def streams(warmup: int = 0) -> list[VegetaStream]:
    out = []
    for c in (0, 1):
        st = VegetaStream(client=c, rate=RATE, warmup=warmup, percentile=99.0, page="write")
        feed_all(st, client_lines(c))
        out.append(st)
    return out


def test_seconds_are_emitted_once_complete_while_streaming() -> None:
    st = VegetaStream(client=0, rate=RATE, warmup=0, percentile=99.0, page="write")
    lines = client_lines(0)
    emitted_at = []
    for n, line in enumerate(lines, 1):
        for s in st.feed(line):
            emitted_at.append((s.t, n))
    rest = st.finish()
    # second 1 is out before the last result of the run arrives; all three come in order
    assert [t for t, _ in emitted_at] + [s.t for s in rest] == [1.0, 2.0, 3.0]
    assert emitted_at and emitted_at[0][1] < len(lines)
    assert [sec.requests for sec in st.seconds] == [RATE] * SECONDS


def test_acknowledged_writes_are_exactly_the_200s() -> None:
    a, b = streams()
    assert sorted(a.acknowledged) == sorted(expected_acks(0))
    assert sorted(b.acknowledged) == sorted(expected_acks(1))
    assert sum(s.writes for s in a.samples) == len(expected_acks(0))
    assert sum(s.events for s in a.samples) == len(expected_acks(0))


def test_one_clients_totals_equal_vegetas_report() -> None:
    a, _ = streams()
    assert_same_as_vegeta(a.total().report(), report_of("vegeta_synth_c0.report.json"))


def test_two_clients_merge_exactly() -> None:
    a, b = streams()
    theirs = report_of("vegeta_synth_both.report.json")
    merged = merge_tallies([a.total(), b.total()])
    assert_same_as_vegeta(merged.report(), theirs)
    combined = combine_seconds([a, b])
    assert [c.t for c in combined] == [1.0, 2.0, 3.0]
    assert sum(c.requests for c in combined) == theirs["requests"] == 60
    codes: dict[str, int] = {}
    for c in combined:
        for k, v in c.codes.items():
            codes[k] = codes.get(k, 0) + v
    assert codes == theirs["status_codes"]
    # the per-second samples of both clients sum (combine_samples) to histograms of every request
    summed = combine_samples(a.samples + b.samples)
    for s, c in zip(summed, combined, strict=True):
        assert s.hist is not None and s.hist.total == c.requests
        assert s.events + s.errors == c.requests
    assert merge_all(s.hist for s in summed) == merged.histogram()


def test_warm_up_seconds_are_set_apart_but_their_writes_still_count() -> None:
    a, _ = streams(warmup=1)
    assert [s.t for s in a.samples] == [2.0, 3.0]
    assert [s.t for s in a.warmup_samples] == [1.0]
    assert a.total().requests == 2 * RATE
    assert sorted(a.acknowledged) == sorted(expected_acks(0))  # a warm-up write is a write too


def test_a_second_with_nothing_back_is_skipped_and_the_rest_closed_at_the_end() -> None:
    st = VegetaStream(client=0, rate=RATE, warmup=0, percentile=99.0, page="write")
    lines = [ln for ln in client_lines(0) if not 10 <= json.loads(ln)["seq"] < 20]
    samples = feed_all(st, lines)
    assert [s.t for s in samples] == [1.0, 3.0]


def test_mixed_page_counts_its_reads_from_the_answer() -> None:
    body = base64.b64encode(b'{"page":"mixed","reads":4,"id":"x-1","ok":true,"node":"w1"}').decode()
    line = json.dumps({"attack": "x", "seq": 0, "code": 200, "timestamp": "2026-11-28T12:00:00.1Z",
                       "latency": 5_000_000, "bytes_in": 60, "body": body})  # fmt: skip
    st = VegetaStream(client=0, rate=1, warmup=0, percentile=95.0, page="mixed")
    [s] = st.feed(line)
    assert (s.reads, s.writes, s.events) == (4, 1, 1)
    assert st.acknowledged == ["x-1"]


def test_a_read_page_acknowledges_no_write() -> None:
    body = base64.b64encode(b'{"page":"read","row":{"id":3},"id":"not-a-write","ok":true}').decode()
    line = json.dumps({"attack": "x", "seq": 0, "code": 200, "timestamp": "2026-11-28T12:00:00.1Z",
                       "latency": 1_000_000, "body": body})  # fmt: skip
    st = VegetaStream(client=0, rate=1, warmup=0, percentile=95.0, page="read")
    [s] = st.feed(line)
    assert (s.reads, s.writes) == (1, 0)
    assert st.acknowledged == []


def test_histogram_uses_sysbenchs_buckets() -> None:
    h = latency_histogram([1_000_000, 1_000_000, 10_000_000])
    assert h.total == 3
    assert h.percentile(50) == pytest.approx(1.0, rel=0.02)
    assert h.max_ms() == pytest.approx(10.0, rel=0.02)


def test_empty_tally_reports_zeros() -> None:
    rep = Tally().report()
    assert (rep["requests"], rep["rate"], rep["success"], rep["latencies"]["mean"]) == (0, 0.0, 0.0, 0)


def test_details_to_json_has_the_report_and_combined_seconds() -> None:
    a, b = streams()
    d = HttpDetails(page="write", rate=20, urls=["http://198.18.0.6:80"] * 2, seconds=a.seconds + b.seconds,
                    combined=combine_seconds([a, b]), totals=merge_tallies([a.total(), b.total()]),
                    client_totals=[a.total(), b.total()], acknowledged=a.acknowledged + b.acknowledged,
                    schedule_lag_ms=[a.schedule_lag_ms, b.schedule_lag_ms])  # fmt: skip
    j = d.to_json()
    assert j["report"]["requests"] == 60
    assert j["acknowledged"] == len(expected_acks(0)) + len(expected_acks(1))
    assert [s["t"] for s in j["seconds"]] == [1.0, 2.0, 3.0]
    assert all(s["client"] == -1 for s in j["seconds"])
