"""Parse the JSON lines the Lua report hook (lua/cb_report.lua) prints. Pure.

Line kinds (each prefixed with ``CBJSON ``):
  interval    one per --report-interval: counters for the interval, sysbench's percentile,
              the interval's latency histogram
  checkpoint  the cumulative report at the end of the warm-up (its reset starts the measurement)
  histogram   a worker's snapshot of the cumulative histogram as it finishes; the largest is final
  summary     the final cumulative report (covers the measured part only when warmup > 0)
Anything else sysbench prints (banner, FATAL lines, ...) is not a report line.

The per-second series adds up to the summary. sysbench 1.0.20 never reports the interval between
its last intermediate report and the end (the reporting thread is cancelled when the workers
stop; under CPU load it is often more than a second late, so a 5-s trial lost up to 28 % of its
events), and the report that straddles the warm-up checkpoint holds events of both sides. Every
counter is monotonic and read whole at each report, so both are cut exactly: an interval's part
after the checkpoint is what its cumulative range has beyond the checkpoint's counters, and the
rest of the summary after the last report is one more sample (`tail`), timed from the summary's
own clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from clusterbench.errors import WorkloadError
from clusterbench.workloads.histogram import HistogramScheme, LatencyHistogram, merge_all

PREFIX = "CBJSON "
# the monotonic counters of every report line, in this order
COUNTERS: tuple[str, ...] = ("events", "reads", "writes", "other", "errors", "reconnects")
EXTRA_PERCENTILES: tuple[float, ...] = (50.0, 95.0, 99.0, 99.9)


@dataclass(frozen=True)
class Sample:
    """One interval of one client process. Counts are for the interval; rates are per second."""

    t: float  # seconds since the start of the run (warm-up included), as sysbench reports it
    interval: float
    threads: int
    events: int
    reads: int
    writes: int
    other: int
    errors: int
    reconnects: int
    percentile: float
    lat_pct_ms: float | None  # sysbench's own value for `percentile`; None when no event completed
    client: int = 0
    hist: LatencyHistogram | None = field(default=None, compare=False, repr=False)
    # Wall clock (epoch seconds) when sysbench reported the interval; wall - t is when the
    # client's own clock started, which is how clients' intervals are checked for alignment.
    wall: float | None = field(default=None, compare=False)
    # Set on a sum of several clients: (tps, qps read, qps write, qps other) added up per client.
    # Each client divides by its own interval (1.0011 s here, 1.0009 s there), so events / one
    # interval would not equal the sum of the clients' rates.
    rates: tuple[float, float, float, float] | None = field(default=None, compare=False, repr=False)
    # A test's own cumulative counters at this report (cb_extra_json() in the Lua test, e.g.
    # cb_tpcc's per-transaction-type counts), since the start of the run, warm-up included.
    extra: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def _rate(self, k: int, count: int) -> float:
        if self.rates is not None:
            return self.rates[k]
        return count / self.interval if self.interval > 0 else 0.0

    @property
    def tps(self) -> float:
        return self._rate(0, self.events)

    @property
    def qps_read(self) -> float:
        return self._rate(1, self.reads)

    @property
    def qps_write(self) -> float:
        return self._rate(2, self.writes)

    @property
    def qps_other(self) -> float:
        return self._rate(3, self.other)

    @property
    def qps(self) -> float:
        return self.qps_read + self.qps_write + self.qps_other

    def pct(self, p: float) -> float | None:
        """Percentile from the interval histogram (exact sysbench rule), None if unknown."""
        return self.hist.percentile(p) if self.hist is not None else None

    @property
    def lat_min_ms(self) -> float | None:
        """From the histogram: the lowest non-empty bucket (within 1.8 %)."""
        return self.hist.min_ms() if self.hist is not None else None

    @property
    def lat_avg_ms(self) -> float | None:
        return self.hist.mean_ms() if self.hist is not None else None

    @property
    def lat_max_ms(self) -> float | None:
        return self.hist.max_ms() if self.hist is not None else None


@dataclass(frozen=True)
class Summary:
    """The final cumulative report of one client process, or the merge of several."""

    duration: float
    threads: int
    events: int
    reads: int
    writes: int
    other: int
    errors: int
    reconnects: int
    lat_min_ms: float
    lat_avg_ms: float
    lat_max_ms: float
    percentile: float
    lat_pct_ms: float | None
    hist: LatencyHistogram | None = field(default=None, compare=False, repr=False)
    clients: int = 1
    # the test's own cumulative counters at the end (see Sample.extra); None when merged
    extra: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def tps(self) -> float:
        return self.events / self.duration if self.duration > 0 else 0.0

    @property
    def qps_read(self) -> float:
        return self.reads / self.duration if self.duration > 0 else 0.0

    @property
    def qps_write(self) -> float:
        return self.writes / self.duration if self.duration > 0 else 0.0

    @property
    def qps_other(self) -> float:
        return self.other / self.duration if self.duration > 0 else 0.0

    @property
    def qps(self) -> float:
        return self.qps_read + self.qps_write + self.qps_other

    @property
    def errors_per_s(self) -> float:
        return self.errors / self.duration if self.duration > 0 else 0.0

    @property
    def reconnects_per_s(self) -> float:
        return self.reconnects / self.duration if self.duration > 0 else 0.0

    def pct(self, p: float) -> float | None:
        if self.hist is not None and self.hist.total > 0:
            return self.hist.percentile(p)
        if p == self.percentile:
            return self.lat_pct_ms
        return None

    def percentiles(self) -> dict[float, float | None]:
        return {p: self.pct(p) for p in EXTRA_PERCENTILES}


@dataclass
class ParsedOutput:
    samples: list[Sample]
    summary: Summary | None
    warmup_samples: list[Sample]
    other_lines: list[str]
    # the test's own counters at the warm-up checkpoint (subtract them from the summary's)
    checkpoint_extra: dict[str, Any] | None = None


def _int(d: dict[str, Any], key: str) -> int:
    return int(round(float(d.get(key) or 0)))


def _scheme(d: dict[str, Any]) -> HistogramScheme | None:
    s = d.get("hist_scheme")
    if not isinstance(s, dict):
        return None
    return HistogramScheme(int(s["size"]), float(s["deduct"]), float(s["mult"]))


def _hist(d: dict[str, Any]) -> LatencyHistogram | None:
    scheme = _scheme(d)
    pairs = d.get("hist")
    if scheme is None or not isinstance(pairs, list):
        return None
    return LatencyHistogram.from_pairs(scheme, pairs)


def decode_line(line: str) -> dict[str, Any] | None:
    """The JSON object of a report line, or None for any other line."""
    line = line.rstrip("\r\n")
    if not line.startswith(PREFIX):
        return None
    try:
        obj = json.loads(line[len(PREFIX) :])
    except json.JSONDecodeError as e:
        raise WorkloadError(
            f"malformed sysbench report line ({e.msg} at column {e.colno}); "
            "check that the run used clusterbench's cb_report.lua"
        ) from e
    if not isinstance(obj, dict) or "type" not in obj:
        raise WorkloadError("sysbench report line without a type; check cb_report.lua")
    return obj


def counts_of(obj: dict[str, Any]) -> tuple[int, ...]:
    return tuple(_int(obj, k) for k in COUNTERS)


def _checked(s: Sample) -> Sample:
    """Without its histogram (and sysbench's percentile) when that holds fewer than half the
    interval's events: they were aggregated elsewhere first (the warm-up checkpoint merges the
    pending histogram slots), so neither describes the interval."""
    if s.hist is not None and s.events >= 10 and s.hist.total < s.events / 2:
        return replace(s, hist=None, lat_pct_ms=None)
    return s


def sample_from(obj: dict[str, Any], client: int = 0) -> Sample:
    return _checked(_raw_sample(obj, client))


def _raw_sample(obj: dict[str, Any], client: int = 0) -> Sample:
    events = _int(obj, "events")
    lat = obj.get("latency_pct_ms")
    hist = _hist(obj)
    return Sample(
        t=round(float(obj["time_total"]), 3),
        interval=float(obj["time_interval"]),
        threads=_int(obj, "threads"),
        events=events,
        reads=_int(obj, "reads"),
        writes=_int(obj, "writes"),
        other=_int(obj, "other"),
        errors=_int(obj, "errors"),
        reconnects=_int(obj, "reconnects"),
        percentile=float(obj.get("percentile") or 0),
        lat_pct_ms=float(lat) if lat is not None and events > 0 else None,
        client=client,
        hist=hist,
        wall=float(obj["wall"]) if obj.get("wall") is not None else None,
        extra=_extra(obj),
    )


def _extra(obj: dict[str, Any]) -> dict[str, Any] | None:
    extra = obj.get("extra")
    return extra if isinstance(extra, dict) else None


def summary_from(obj: dict[str, Any], threads: int, hist: LatencyHistogram | None) -> Summary:
    events = _int(obj, "events")
    lat = obj.get("latency_pct_ms")
    return Summary(
        duration=float(obj["time_interval"]),
        threads=threads,
        events=events,
        reads=_int(obj, "reads"),
        writes=_int(obj, "writes"),
        other=_int(obj, "other"),
        errors=_int(obj, "errors"),
        reconnects=_int(obj, "reconnects"),
        lat_min_ms=float(obj.get("latency_min_ms") or 0.0),
        lat_avg_ms=float(obj.get("latency_avg_ms") or 0.0),
        lat_max_ms=float(obj.get("latency_max_ms") or 0.0),
        percentile=float(obj.get("percentile") or 0),
        lat_pct_ms=float(lat) if lat is not None and events > 0 else None,
        hist=hist,
        extra=_extra(obj),
    )


def is_warmup(t: float, warmup: float, interval: float) -> bool:
    """A sample is warm-up when its interval ends at or before the warm-up boundary (+10 % slack)."""
    return warmup > 0 and t <= warmup + 0.1 * interval


class OutputParser:
    """Incremental parser: feed lines as they arrive, get measured samples back; `finish()` at the
    end adds what no report covered (the tail after the last report) and gives the summary."""

    def __init__(self, *, client: int = 0, warmup: float = 0.0, threads: int = 0) -> None:
        self.client = client
        self.warmup = warmup
        self.threads = threads
        self.samples: list[Sample] = []
        self.warmup_samples: list[Sample] = []
        self.other_lines: list[str] = []
        self._summary_obj: dict[str, Any] | None = None
        self._final_hist: LatencyHistogram | None = None
        self.checkpoint_extra: dict[str, Any] | None = None
        # counters summed over every interval report so far, and the checkpoint's (time, counters)
        self._cum: tuple[int, ...] = (0,) * len(COUNTERS)
        self._checkpoint: tuple[float, tuple[int, ...]] | None = None
        # reports that came before the checkpoint line could tell which side of it they are on
        self._pending: list[tuple[Sample, tuple[int, ...], float]] = []
        self._carry: Sample | None = None  # a sliver measured after the checkpoint, for the next sample
        self._finished = False

    def feed(self, line: str) -> list[Sample]:
        """The measured samples this line makes known (none, one, or those held for the checkpoint)."""
        obj = decode_line(line)
        if obj is None:
            stripped = line.rstrip("\r\n")
            if stripped:
                self.other_lines.append(stripped)
            return []
        kind = obj["type"]
        if kind == "interval":
            s = _raw_sample(obj, self.client)
            before = self._cum
            self._cum = tuple(a + b for a, b in zip(before, counts_of(obj), strict=True))
            t = float(obj["time_total"])  # unrounded: a report may follow the checkpoint by 0.3 ms
            if self.warmup > 0 and self._checkpoint is None:
                self._pending.append((s, before, t))
                return []
            return self._place(s, before, t)
        if kind == "histogram":
            h = _hist(obj)
            if h is not None and (self._final_hist is None or h.total >= self._final_hist.total):
                self._final_hist = h
        elif kind == "summary":
            self._summary_obj = obj
        elif kind == "checkpoint":
            self.checkpoint_extra = _extra(obj)
            self._checkpoint = (float(obj["time_total"]), counts_of(obj))
            return self._release()
        return []

    def _release(self) -> list[Sample]:
        held, self._pending = self._pending, []
        return [m for s, before, t in held for m in self._place(s, before, t)]

    def _place(self, s: Sample, before: tuple[int, ...], t: float) -> list[Sample]:
        """A report as warm-up or measured; one that straddles the checkpoint keeps its part after it."""
        if self._checkpoint is None:
            if is_warmup(s.t, self.warmup, s.interval):
                self.warmup_samples.append(s)
                return []
            return self._measured(s)
        at, base = self._checkpoint
        if t <= at:
            self.warmup_samples.append(s)
            return []
        if any(b < c for b, c in zip(before, base, strict=True)):
            after = [b + n for b, n in zip(before, (getattr(s, k) for k in COUNTERS), strict=True)]
            post = [max(0, a - max(b, c)) for a, b, c in zip(after, before, base, strict=True)]
            part = replace(s, interval=min(s.interval, t - at), **dict(zip(COUNTERS, post, strict=True)))
            if part.interval < s.interval / 2:
                # a report just after the checkpoint: it is warm-up, its few measured moments go
                # into the next report's (or the tail's) interval instead of a sample of their own
                self.warmup_samples.append(s)
                self._carry = part
                return []
            s = part
        return self._measured(s)

    def _measured(self, s: Sample) -> list[Sample]:
        c, self._carry = self._carry, None
        if c is not None:
            s = replace(
                s, interval=s.interval + c.interval, hist=merge_exact([s.hist, c.hist]),
                **{k: getattr(s, k) + getattr(c, k) for k in COUNTERS},
            )  # fmt: skip
        s = _checked(s)
        self.samples.append(s)
        return [s]

    def finish(self) -> list[Sample]:
        """At the end of the output: reports still held (no checkpoint came) placed by their time,
        then the tail, the part of the summary after the last report; returns the samples added."""
        if self._finished:
            return []
        self._finished = True
        out = self._release()
        tail = self._tail()
        if tail is not None:
            self.samples.append(tail)
            out.append(tail)
        return out

    def _tail(self) -> Sample | None:
        obj = self._summary_obj
        if obj is None:
            return None
        seen = [sum(getattr(s, k) for s in self.samples) for k in COUNTERS]
        rest = [max(0, c - n) for c, n in zip(counts_of(obj), seen, strict=True)]
        start = self.samples[-1].t if self.samples else (self._checkpoint or (0.0, ()))[0]
        end = round(float(obj["time_total"]), 3)
        if not any(rest) and end - start < self._interval() / 2:
            return None  # the workers' last moments, with nothing done in them
        hist = None
        if self._final_hist is not None and all(s.hist is not None for s in self.samples):
            hist = self._final_hist.minus(merge_all(s.hist for s in self.samples))
            if hist is not None and hist.total == 0:
                hist = None  # no latency of its own to tell
        pct = float(obj.get("percentile") or 0)
        counts = dict(zip(COUNTERS, rest, strict=True))
        return Sample(
            t=end, interval=max(end - start, 0.001), threads=self.threads or self._threads_seen(),
            percentile=pct, lat_pct_ms=hist.percentile(pct) if hist is not None and rest[0] else None,
            client=self.client, hist=hist, extra=_extra(obj), **counts,
        )  # fmt: skip

    def _interval(self) -> float:
        return self.samples[-1].interval if self.samples else 1.0

    def _threads_seen(self) -> int:
        return max((s.threads for s in self.samples), default=0)

    def summary(self) -> Summary | None:
        if self._summary_obj is None:
            return None
        hist = self._final_hist
        if hist is None:
            hist = merge_all(s.hist for s in self.samples)
        threads = self.threads or self._threads_seen()
        return summary_from(self._summary_obj, threads, hist)

    def result(self) -> ParsedOutput:
        self.finish()
        return ParsedOutput(
            self.samples, self.summary(), self.warmup_samples, self.other_lines, self.checkpoint_extra
        )


def parse_output(
    lines: Iterable[str], *, client: int = 0, warmup: float = 0.0, threads: int = 0
) -> ParsedOutput:
    p = OutputParser(client=client, warmup=warmup, threads=threads)
    for line in lines:
        p.feed(line)
    return p.result()


def merge_summaries(summaries: list[Summary]) -> Summary | None:
    """Several concurrent client processes as one: counts add up, latency histograms merge.

    Duration is the longest client's; min/max are extremes; avg is event-weighted.
    """
    if not summaries:
        return None
    if len(summaries) == 1:
        return summaries[0]
    events = sum(s.events for s in summaries)
    hist = merge_exact(s.hist for s in summaries)
    pct = summaries[0].percentile
    return Summary(
        duration=max(s.duration for s in summaries),
        threads=sum(s.threads for s in summaries),
        events=events,
        reads=sum(s.reads for s in summaries),
        writes=sum(s.writes for s in summaries),
        other=sum(s.other for s in summaries),
        errors=sum(s.errors for s in summaries),
        reconnects=sum(s.reconnects for s in summaries),
        lat_min_ms=min(s.lat_min_ms for s in summaries),
        lat_avg_ms=(sum(s.lat_avg_ms * s.events for s in summaries) / events) if events else 0.0,
        lat_max_ms=max(s.lat_max_ms for s in summaries),
        percentile=pct,
        lat_pct_ms=hist.percentile(pct) if hist is not None else None,
        hist=hist,
        clients=sum(s.clients for s in summaries),
    )


def merge_exact(hists: Iterable[LatencyHistogram | None]) -> LatencyHistogram | None:
    """The sum of every histogram, or None when one of them is missing.

    A percentile of the clients that happen to have a histogram is not the percentile of the
    combined load (the missing client may be the slow one), so no answer beats a wrong one.
    """
    items = list(hists)
    if not items or any(h is None for h in items):
        return None
    return merge_all(items)


def interval_key(s: Sample) -> int:
    """Which report interval a sample belongs to: clients that start together report their k-th
    interval at t ~ k * interval on their own clocks, so the rounded t is the shared index."""
    return round(s.t)


def combine_samples(samples: Iterable[Sample]) -> list[Sample]:
    """Per-interval totals across client processes (client=-1), in interval order.

    Counts and per-client rates add up; latency comes from the sum of the interval histograms,
    and is None when any client's interval has no histogram. Never an average of percentiles.
    """
    by_t: dict[int, list[Sample]] = {}
    for s in samples:
        by_t.setdefault(interval_key(s), []).append(s)
    return [combine_group(float(t), by_t[t]) for t in sorted(by_t)]


def _rate_of(s: Sample, k: int) -> float:
    """A sample's k-th rate: tps, qps read, qps write, qps other."""
    return (s.tps, s.qps_read, s.qps_write, s.qps_other)[k]


def combine_group(t: float, group: Sequence[Sample]) -> Sample:
    """One interval's samples as one sample at `t`: the clients' rates add up. A client with
    several samples in the interval (mysqlslap reports each run, a fraction of a second) counts
    once, at its rate over those samples' time together: its runs follow each other, they do not
    run side by side."""
    hist = merge_exact(s.hist for s in group)
    pct = group[0].percentile
    events = sum(s.events for s in group)
    walls = [s.wall for s in group if s.wall is not None]
    by_client: dict[int, list[Sample]] = {}
    for s in group:
        by_client.setdefault(s.client, []).append(s)
    rates = [0.0, 0.0, 0.0, 0.0]
    spans, threads = [], 0
    for own in by_client.values():
        span = sum(s.interval for s in own)
        spans.append(span)
        threads += max(s.threads for s in own)
        for k in range(4):
            if len(own) == 1:
                rates[k] += _rate_of(own[0], k)
            elif span > 0:
                rates[k] += sum(_rate_of(s, k) * s.interval for s in own) / span
    return Sample(
        t=t,
        interval=max(spans),
        threads=threads,
        events=events,
        reads=sum(s.reads for s in group),
        writes=sum(s.writes for s in group),
        other=sum(s.other for s in group),
        errors=sum(s.errors for s in group),
        reconnects=sum(s.reconnects for s in group),
        percentile=pct,
        lat_pct_ms=hist.percentile(pct) if hist is not None and events else None,
        client=-1,
        hist=hist,
        wall=max(walls) if len(walls) == len(group) else None,
        rates=(rates[0], rates[1], rates[2], rates[3]),
    )
