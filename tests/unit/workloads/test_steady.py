"""The warm-up until steady state (warmup_until = "steady"): MSER on the per-second series, and
the cut made exactly on the run's samples and summary (through the runner, with a stand-in for
sysbench that prints a whole run without a checkpoint)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError
from tests.unit.workloads.test_sysbench_runner import EP, FakeServer

from clusterbench.workloads.histogram import LatencyHistogram
from clusterbench.workloads.parse import Sample, parse_output
from clusterbench.workloads.runner import SysbenchRunner
from clusterbench.workloads.steady import cut_summary, mser, steady_cut, steady_line
from clusterbench.workloads.sysbench import SysbenchOptions, build_command

SCHEME = '{"size":1024,"deduct":-6.9,"mult":55.5}'


def _report(kind: str, t: float, interval: float, events: int, buckets: dict[int, int], **more: float) -> str:
    hist = ",".join(f"[{i},{c}]" for i, c in sorted(buckets.items()))
    extra = "".join(f',"{k}":{v}' for k, v in more.items())
    return (
        f'CBJSON {{"type":"{kind}","time_total":{t},"time_interval":{interval},"threads":4,'
        f'"events":{events},"reads":{10 * events},"writes":{4 * events},"other":{2 * events},'
        f'"errors":0,"reconnects":0,"percentile":95,"latency_pct_ms":1.0,"hist_scheme":{SCHEME},'
        f'"hist":[{hist}]{extra}}}'
    )


def _run(first: int, first_bucket: int, seconds: int = 6) -> list[str]:
    """A whole run of `seconds` 1-s reports, the first with `first` events in `first_bucket`, the
    others 1000 events each in bucket 400, then the workers' histogram and the summary (no
    checkpoint: until steady, sysbench's summary covers the whole run)."""
    lines = [_report("interval", 1.0, 1.0, first, {first_bucket: first})]
    lines += [_report("interval", float(k), 1.0, 1000, {400: 1000}) for k in range(2, seconds + 1)]
    total = first + 1000 * (seconds - 1)
    buckets = {400: 1000 * (seconds - 1)}
    buckets[first_bucket] = buckets.get(first_bucket, 0) + first
    hist = ",".join(f"[{i},{c}]" for i, c in sorted(buckets.items()))
    lines.append(
        f'CBJSON {{"type":"histogram","tid":0,"count":{total},"hist_scheme":{SCHEME},"hist":[{hist}]}}'
    )
    lines.append(_report("summary", seconds + 0.001, seconds + 0.001, total, {},
                         latency_min_ms=0.2, latency_avg_ms=1.1, latency_max_ms=40.0))  # fmt: skip
    return lines


def test_mser_keeps_a_flat_start_and_cuts_a_cold_one() -> None:
    assert mser([100, 101, 99, 100, 102, 98], 3) == 0
    assert mser([20, 100, 101, 99, 100, 102, 98], 3) == 1
    assert mser([20, 40, 100, 101, 99, 100, 102, 98], 3) == 2
    # never more than allowed, never more than half the series
    assert mser([20, 40, 100, 101, 99, 100, 102, 98], 1) == 1
    assert mser([10, 20, 30, 40], 4) <= 2


def test_steady_cut_reads_throughput_in_a_closed_loop_and_latency_at_a_fixed_rate() -> None:
    """At a fixed rate a cold start keeps the throughput and shows in the latency only; in a
    closed loop a slow first second is fewer transactions."""
    cold = parse_output(_run(1000, 700)).samples
    assert steady_cut([cold], warmup=2, rate_limited=True) == 1
    assert steady_cut([cold], warmup=2, rate_limited=False) == 0
    slow = parse_output(_run(200, 600)).samples
    assert steady_cut([slow], warmup=2) == 1
    warm = parse_output(_run(1000, 400)).samples
    assert steady_cut([warm], warmup=2) == steady_cut([warm], warmup=2, rate_limited=True) == 0
    # the user's warm-up bounds the cut: with none allowed there is none
    assert steady_cut([slow], warmup=0) == 0
    # at a fixed rate, a later second without a finished transaction (a stall) counts as the
    # slowest second, not as a reason to read the flat throughput instead
    stalled = list(cold)
    assert stalled[4].hist is not None
    stalled[4] = replace(stalled[4], events=0, hist=LatencyHistogram(stalled[4].hist.scheme, {}))
    assert steady_cut([stalled], warmup=2, rate_limited=True) == 1
    # two clients are cut at the same second, on their sum
    assert steady_cut([slow, warm], warmup=2) == 1


def test_cut_summary_is_the_run_less_its_first_intervals() -> None:
    parsed = parse_output(_run(200, 600))
    assert parsed.summary is not None and parsed.summary.events == 5200
    cut = cut_summary(parsed.summary, parsed.samples[:1])
    assert cut is not None
    assert (cut.events, cut.reads, cut.writes, cut.other) == (5000, 50000, 20000, 10000)
    assert cut.duration == pytest.approx(5.001)
    assert cut.hist is not None and cut.hist.counts == {400: 5000}
    assert cut.lat_min_ms == cut.lat_max_ms == cut.lat_pct_ms == cut.hist.percentile(95)
    # nothing to cut: the run's own summary, sysbench's exact figures
    assert cut_summary(parsed.summary, []) is parsed.summary
    # a missing histogram makes the cut unknowable
    bare = Sample(t=1.0, interval=1.0, threads=4, events=200, reads=0, writes=0, other=0, errors=0,
                  reconnects=0, percentile=95, lat_pct_ms=None)  # fmt: skip
    assert cut_summary(parsed.summary, [bare]) is None


def test_until_steady_runs_without_a_checkpoint_and_only_http_and_slap_refuse_it() -> None:
    opts = SysbenchOptions(test="oltp_read_write", time=20, warmup=3, warmup_until="steady")
    argv = build_command(opts, EP, "run").argv
    assert "--time=23" in argv and not any(a.startswith("--report-checkpoints") for a in argv)
    fixed = build_command(opts.model_copy(update={"warmup_until": "time"}), EP, "run").argv
    assert "--report-checkpoints=3" in fixed
    with pytest.raises(ValidationError, match="a warm-up until steady needs sysbench's"):
        SysbenchOptions(test="mysqlslap", warmup=1, warmup_until="steady")
    with pytest.raises(ValidationError, match="warmup_until"):
        SysbenchOptions(test="oltp_read_write", warmup_until="soon")
    with pytest.raises(ValidationError, match="and warmup is 0; give --warmup N"):
        SysbenchOptions(test="oltp_read_write", warmup_until="steady")


@pytest.mark.parametrize(("first", "bucket", "cut"), [(200, 600, 1), (1000, 400, 0)])
def test_runner_cuts_the_cold_start_and_keeps_a_steady_one(
    fake_bin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: int, bucket: int, cut: int
) -> None:
    out = tmp_path / "run.out"
    out.write_text("\n".join(_run(first, bucket)) + "\n")
    monkeypatch.setenv("FAKE_OUT", str(out))
    got: list[Sample] = []
    opts = SysbenchOptions(test="oltp_read_write", threads=4, time=5, warmup=1, warmup_until="steady")
    res = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer()).run(opts, EP, on_sample=got.append)
    assert res.ok and res.warmup_cut == float(cut)
    # what reached the store is what was measured and adds up to the summary; a warm-up second
    # kept in the measurement reaches it once the run has shown it steady, after the others
    assert [s.t for s in got] == [2.0, 3.0, 4.0, 5.0, 6.0] + ([] if cut else [1.0])
    assert res.summary is not None and sum(s.events for s in got) == res.summary.events
    assert [s.t for s in res.clients[0].warmup_samples] == [1.0] * cut
    assert res.placement()["steady_warmup_s"] == float(cut)
    if cut:
        assert res.summary.events == 5000 and res.summary.duration == pytest.approx(5.001)
    else:  # the whole run was steady: sysbench's own summary, all 6 s of it
        assert res.summary.events == 6000 and res.summary.lat_max_ms == 40.0


def test_the_trial_note_says_what_the_warm_up_turned_out_to_be() -> None:
    assert steady_line(3, 0.0) == (
        "warm-up until steady: steady from the first second; all 3 s of it are measured"
    )
    assert steady_line(3, 1.001) == (
        "warm-up until steady: the first 1 s (of up to 3 s) were warm-up; the other 2 s are measured"
    )
    assert steady_line(2, 2.0) == "warm-up until steady: the first 2 s (of up to 2 s) were warm-up"
