"""vegeta's per-request results (`vegeta encode -to json`, one JSON object per line), turned into
per-second samples, exact totals and the list of acknowledged writes. Pure.

vegeta's pacer sends request n (its `seq`, from 0) at (n + 1) / R s after the attack began, at
R requests per second whatever the server's latency (open loop: workers are added while
responses are slow, unless -max-workers caps them). So second k of the load holds exactly the
requests with seq // R == k, and it is complete once R of them came back (or at the end): the
samples are taken by when a request was due, not by when it returned. Each request's latency is
vegeta's own (from sending to the end of the response body).

Every count here is exact. Latency percentiles of one client's second are computed from the raw
latencies (the same rank rule as sysbench's histogram); the histogram that goes with each sample
(sysbench's bucket scheme, 1.8 % wide) is what several clients are merged with, never averaged.
A `Tally` of one set of results holds everything `vegeta report -type=json` reports except its
percentiles (a t-digest estimate there) with the same arithmetic, so the two can be compared.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from clusterbench.errors import WorkloadError
from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram
from clusterbench.workloads.parse import Sample, Summary

NS = 1_000_000_000
_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_timestamp_ns(text: str) -> int:
    """Go's RFC 3339 time with nanoseconds ('2026-11-28T13:45:01.123456789+01:00') as epoch ns,
    exactly (datetime keeps only microseconds)."""
    m = _TS.match(text)
    if m is None:
        raise WorkloadError(f"vegeta result timestamp {text!r} is not RFC 3339; is this vegeta 12's JSON?")
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    whole = datetime.fromisoformat(m.group(1) + zone)
    return (whole - _EPOCH) // timedelta(seconds=1) * NS + int((m.group(2) or "").ljust(9, "0"))


@dataclass(frozen=True)
class VegetaResult:
    """One request as vegeta recorded it."""

    attack: str
    seq: int
    code: int  # 0: no response (connection refused, timeout...)
    timestamp_ns: int  # when it was sent, epoch ns
    latency_ns: int
    bytes_out: int
    bytes_in: int
    error: str
    body: bytes

    @property
    def success(self) -> bool:
        """vegeta's own rule: a status from 200 to 399."""
        return 200 <= self.code < 400

    def answer(self) -> dict[str, Any]:
        """The application's JSON answer ({} when the body is not one)."""
        try:
            data = json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            return {}
        return data if isinstance(data, dict) else {}


def parse_result(line: str) -> VegetaResult | None:
    """One line of `vegeta encode -to json`; None for a blank line."""
    line = line.strip()
    if not line:
        return None
    try:
        d = json.loads(line)
        return VegetaResult(
            attack=str(d.get("attack") or ""), seq=int(d["seq"]), code=int(d["code"]),
            timestamp_ns=parse_timestamp_ns(str(d["timestamp"])), latency_ns=int(d["latency"]),
            bytes_out=int(d.get("bytes_out") or 0), bytes_in=int(d.get("bytes_in") or 0),
            error=str(d.get("error") or ""), body=base64.b64decode(d.get("body") or ""),
        )  # fmt: skip
    except (ValueError, KeyError, TypeError) as exc:
        raise WorkloadError(
            f"vegeta printed a result clusterbench cannot read ({exc}): {line[:120]}"
        ) from None


def rank_value(sorted_values: Sequence[int], pct: float) -> int | None:
    """The value at sysbench's rank for `pct` (the first reaching floor(n * pct / 100 + 0.5))."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = min(max(math.floor(n * pct / 100 + 0.5), 1), n)
    return sorted_values[rank - 1]


def latency_histogram(latencies_ns: Iterable[int]) -> LatencyHistogram:
    """Latencies in sysbench's bucket scheme (what samples of every workload are merged with)."""
    s = DEFAULT_SCHEME
    counts: dict[int, int] = {}
    for ns in latencies_ns:
        ms = max(ns / 1e6, 0.001)
        i = min(max(math.floor((math.log(ms) - s.deduct) * s.mult + 0.5), 0), s.size - 1)
        counts[i] = counts.get(i, 0) + 1
    return LatencyHistogram(s, counts)


def go_seconds(ns: int) -> float:
    """Go's time.Duration.Seconds(), to the last bit."""
    sec, rest = divmod(abs(ns), NS)
    value = float(sec) + float(rest) / 1e9
    return -value if ns < 0 else value


def _rfc3339(ns: int | None) -> str | None:
    if ns is None:
        return None
    whole = _EPOCH + timedelta(seconds=ns // NS)
    frac = f"{ns % NS:09d}".rstrip("0")
    return whole.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


@dataclass
class Tally:
    """Exact figures of a set of results: what `vegeta report -type=json` says of them (but its
    t-digest percentiles), and the application's reads and acknowledged writes."""

    requests: int = 0
    successes: int = 0
    codes: Counter[int] = field(default_factory=Counter)
    latency_total_ns: int = 0
    latency_min_ns: int = 0  # vegeta's rule: the smallest non-zero latency
    latency_max_ns: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    earliest_ns: int | None = None
    latest_ns: int | None = None
    end_ns: int | None = None
    errors: list[str] = field(default_factory=list)  # distinct, in order of first appearance
    reads: int = 0  # point selects of the answered pages
    writes: int = 0  # acknowledged writes (200 with an id)
    latencies_ns: list[int] = field(default_factory=list, repr=False)

    def add(self, r: VegetaResult, reads: int = 0, writes: int = 0) -> None:
        self.requests += 1
        self.codes[r.code] += 1
        self.successes += r.success
        self.latency_total_ns += r.latency_ns
        self.latency_max_ns = max(self.latency_max_ns, r.latency_ns)
        if r.latency_ns < self.latency_min_ns or self.latency_min_ns == 0:
            self.latency_min_ns = r.latency_ns
        self.latencies_ns.append(r.latency_ns)
        self.bytes_in += r.bytes_in
        self.bytes_out += r.bytes_out
        self.earliest_ns = _pick(min, self.earliest_ns, r.timestamp_ns)
        self.latest_ns = _pick(max, self.latest_ns, r.timestamp_ns)
        self.end_ns = _pick(max, self.end_ns, r.timestamp_ns + r.latency_ns)
        if r.error and r.error not in self.errors:
            self.errors.append(r.error)
        self.reads += reads
        self.writes += writes

    def merged(self, other: Tally) -> Tally:
        out = Tally()
        for t in (self, other):
            out.requests += t.requests
            out.successes += t.successes
            out.codes.update(t.codes)
            out.latency_total_ns += t.latency_total_ns
            out.latency_max_ns = max(out.latency_max_ns, t.latency_max_ns)
            if t.latency_min_ns and (out.latency_min_ns == 0 or t.latency_min_ns < out.latency_min_ns):
                out.latency_min_ns = t.latency_min_ns
            out.latencies_ns += t.latencies_ns
            out.bytes_in += t.bytes_in
            out.bytes_out += t.bytes_out
            out.earliest_ns = _pick(min, out.earliest_ns, t.earliest_ns)
            out.latest_ns = _pick(max, out.latest_ns, t.latest_ns)
            out.end_ns = _pick(max, out.end_ns, t.end_ns)
            out.errors += [e for e in t.errors if e not in out.errors]
            out.reads += t.reads
            out.writes += t.writes
        return out

    @property
    def failures(self) -> int:
        return self.requests - self.successes

    def percentile_ms(self, pct: float) -> float | None:
        v = rank_value(sorted(self.latencies_ns), pct)
        return None if v is None else v / 1e6

    def histogram(self) -> LatencyHistogram:
        return latency_histogram(self.latencies_ns)

    def report(self) -> dict[str, Any]:
        """The keys of `vegeta report -type=json` with vegeta's arithmetic (durations in ns);
        the percentiles are exact here, where vegeta estimates them."""
        n = self.requests
        duration = (self.latest_ns or 0) - (self.earliest_ns or 0)
        wait = (self.end_ns or 0) - (self.latest_ns or 0)
        rate, throughput = float(n), float(self.successes)
        if duration > 0:
            rate /= go_seconds(duration)
            throughput /= go_seconds(duration + wait)
        lat: dict[str, Any] = {
            "total": self.latency_total_ns, "mean": int(float(self.latency_total_ns) / float(n)) if n else 0,
            "min": self.latency_min_ns, "max": self.latency_max_ns,
        }  # fmt: skip
        for key, p in (("50th", 50.0), ("90th", 90.0), ("95th", 95.0), ("99th", 99.0)):
            lat[key] = rank_value(sorted(self.latencies_ns), p) or 0
        return {
            "latencies": lat,
            "bytes_in": {"total": self.bytes_in, "mean": float(self.bytes_in) / float(n) if n else 0.0},
            "bytes_out": {"total": self.bytes_out, "mean": float(self.bytes_out) / float(n) if n else 0.0},
            "earliest": _rfc3339(self.earliest_ns), "latest": _rfc3339(self.latest_ns),
            "end": _rfc3339(self.end_ns), "duration": duration, "wait": wait, "requests": n, "rate": rate,
            "throughput": throughput, "success": float(self.successes) / float(n) if n else 0.0,
            "status_codes": {str(c): k for c, k in sorted(self.codes.items())}, "errors": list(self.errors),
        }  # fmt: skip


def _pick(fn: Any, a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else fn(a, b)


def merge_tallies(tallies: Iterable[Tally]) -> Tally:
    out = Tally()
    for t in tallies:
        out = out.merged(t)
    return out


def tally_summary(t: Tally, duration: float, percentile: float, clients: int = 1) -> Summary:
    """A Summary as every workload stores it: events are the successful requests, errors the
    others; latency (min, mean, max, the percentile, the histogram) is over every request, as
    vegeta reports it: a client that waited 10 s for a 503 waited 10 s."""
    return Summary(
        duration=duration, threads=0, events=t.successes, reads=t.reads, writes=t.writes, other=0,
        errors=t.failures, reconnects=0, lat_min_ms=t.latency_min_ns / 1e6,
        lat_avg_ms=(t.latency_total_ns / t.requests / 1e6) if t.requests else 0.0,
        lat_max_ms=t.latency_max_ns / 1e6, percentile=percentile, lat_pct_ms=t.percentile_ms(percentile),
        hist=t.histogram(), clients=clients,
    )  # fmt: skip


@dataclass(frozen=True)
class HttpSecond:
    """One second of one client's load (or of all clients: client -1), by status code."""

    client: int
    t: float  # the second's end, s since the load began (as a Sample's t)
    requests: int
    successes: int
    codes: dict[str, int]
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None

    @staticmethod
    def of(client: int, t: float, tally: Tally) -> HttpSecond:
        return HttpSecond(
            client=client, t=t, requests=tally.requests, successes=tally.successes,
            codes={str(c): k for c, k in sorted(tally.codes.items())}, p50_ms=tally.percentile_ms(50),
            p95_ms=tally.percentile_ms(95), p99_ms=tally.percentile_ms(99),
            max_ms=tally.latency_max_ns / 1e6 if tally.requests else None,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class VegetaStream:
    """The results of one vegeta process as they arrive: `feed` each line, get back the samples
    of the seconds it completed (warm-up seconds go to `warmup_samples`); `finish` closes the
    rest. `write_page`: a 200 carries the id of an acknowledged write."""

    def __init__(self, *, client: int, rate: int, warmup: int, percentile: float, page: str) -> None:
        if rate < 1:
            raise ValueError("vegeta's rate per client must be at least 1 request/s")
        self.client = client
        self.rate = rate
        self.warmup = warmup
        self.percentile = percentile
        self.page = page
        self.samples: list[Sample] = []
        self.warmup_samples: list[Sample] = []
        self.seconds: list[HttpSecond] = []  # measured seconds
        self.tallies: list[Tally] = []  # measured seconds, for the totals
        self.acknowledged: list[str] = []  # every 200's write id, warm-up included
        self.results = 0
        self._open: dict[int, Tally] = {}
        self._next = 0
        self._offsets: tuple[int, int] | None = None  # min, max of (sent - due)

    def feed(self, line: str) -> list[Sample]:
        r = parse_result(line)
        if r is None:
            return []
        self.results += 1
        reads = writes = 0
        if r.code == 200:
            answer = r.answer()
            ack = answer.get("id") if self.page in ("write", "mixed") else None
            if isinstance(ack, str) and ack:
                self.acknowledged.append(ack)
                writes = 1
            reads = 1 if self.page == "read" else int(answer.get("reads") or 0)
        self._open.setdefault(r.seq // self.rate, Tally()).add(r, reads, writes)
        offset = r.timestamp_ns - (r.seq + 1) * NS // self.rate
        lo, hi = self._offsets or (offset, offset)
        self._offsets = (min(lo, offset), max(hi, offset))
        return self._flush(final=False)

    def finish(self) -> list[Sample]:
        return self._flush(final=True)

    @property
    def began_ns(self) -> int | None:
        """When the attack began (epoch ns): the send time of the request least behind its
        schedule, minus its place in the schedule."""
        return self._offsets[0] if self._offsets else None

    @property
    def schedule_lag_ms(self) -> float | None:
        """How far the latest request was sent behind its schedule, relative to the earliest
        (ms): a generator short of CPU sends late, and that delay is hidden from every latency."""
        return (self._offsets[1] - self._offsets[0]) / 1e6 if self._offsets else None

    def _flush(self, *, final: bool) -> list[Sample]:
        out: list[Sample] = []
        while self._next in self._open and (final or self._open[self._next].requests >= self.rate):
            out += self._close(self._next)
            self._next += 1
        if final:
            for k in sorted(self._open):  # after a gap (seconds in which nothing came back)
                out += self._close(k)
        return out

    def _close(self, k: int) -> list[Sample]:
        tally = self._open.pop(k)
        began = self.began_ns or 0
        s = Sample(
            t=float(k + 1), interval=1.0, threads=0, events=tally.successes, reads=tally.reads,
            writes=tally.writes, other=0, errors=tally.failures, reconnects=0, percentile=self.percentile,
            lat_pct_ms=tally.percentile_ms(self.percentile), client=self.client, hist=tally.histogram(),
            wall=(began + (k + 1) * NS) / NS,
        )  # fmt: skip
        if k < self.warmup:
            self.warmup_samples.append(s)
            return []
        self.samples.append(s)
        self.seconds.append(HttpSecond.of(self.client, s.t, tally))
        self.tallies.append(tally)
        return [s]

    def total(self) -> Tally:
        """The measured seconds' results together."""
        return merge_tallies(self.tallies)


def combine_seconds(streams: Sequence[VegetaStream]) -> list[HttpSecond]:
    """Per measured second, every client's results together (client -1): counts added, the
    percentiles of all their latencies."""
    by_t: dict[float, list[Tally]] = {}
    for st in streams:
        for sec, tally in zip(st.seconds, st.tallies, strict=True):
            by_t.setdefault(sec.t, []).append(tally)
    return [HttpSecond.of(-1, t, merge_tallies(by_t[t])) for t in sorted(by_t)]


@dataclass
class HttpDetails:
    """What an HTTP load adds to its RunResult: the page, the rate asked, each client's seconds
    by status code, the measured totals (per client and merged) and every acknowledged write."""

    page: str
    rate: int
    urls: list[str]
    seconds: list[HttpSecond]  # per client
    combined: list[HttpSecond]  # per second, all clients together (client -1), exact
    totals: Tally
    client_totals: list[Tally]
    acknowledged: list[str]  # write ids answered 200, warm-up included: each must be on every node
    schedule_lag_ms: list[float | None]  # per client (VegetaStream.schedule_lag_ms)

    def to_json(self) -> dict[str, Any]:
        """For the trial's provenance (the acknowledged ids are the checker's, not stored here)."""
        return {
            "page": self.page, "rate": self.rate, "urls": self.urls, "report": self.totals.report(),
            "acknowledged": len(self.acknowledged), "schedule_lag_ms": self.schedule_lag_ms,
            "seconds": [s.to_json() for s in self.combined],
        }  # fmt: skip
