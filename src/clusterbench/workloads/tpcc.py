"""The TPC-C-like workload's numbers: tpmC, tpm and per-transaction-type counts from the counters
cb_tpcc.lua adds to every report line, and the stall detector. Pure: no process, no server.

The Lua test reports cumulative counters per type, [done, rollbacks, retries, latency sum in µs],
since sysbench started (warm-up included). The measured part of a client is its final counters
minus those at the warm-up checkpoint; one second of a client is its counters minus those of its
previous report.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from clusterbench.workloads.parse import Sample, interval_key

TYPES: tuple[str, ...] = ("new_order", "payment", "order_status", "delivery", "stock_level")
# the standard mix (clause 5.2.3 minimums for the four others, New-Order the rest)
MIX: dict[str, float] = {
    "new_order": 45.0, "payment": 43.0, "order_status": 4.0, "delivery": 4.0, "stock_level": 4.0,
}  # fmt: skip
FIELDS = ("done", "rollbacks", "retries", "latency_us")


MIX_EXAMPLE = "new_order=45,payment=43,order_status=4,delivery=4,stock_level=4"


def parse_mix(spec: str | Mapping[str, Any] | Sequence[Any]) -> tuple[int, ...]:
    """A transaction mix as whole-percent weights in TYPES order, from 'new_order=45,payment=43,...'
    (or a table of the same, or the five weights in order). A type left out weighs 0; the weights
    must sum to 100. Raises ValueError with one line saying what is wrong and what to give instead."""
    if isinstance(spec, str):
        items: list[tuple[str, Any]] = []
        for part in (p.strip() for p in spec.split(",")):
            name, eq, value = part.partition("=")
            if not eq or not name.strip() or not value.strip():
                raise ValueError(f"{part!r} is not NAME=WEIGHT; give e.g. {MIX_EXAMPLE}")
            items.append((name.strip(), value.strip()))
    elif isinstance(spec, Mapping):
        items = [(str(k), v) for k, v in spec.items()]
    elif isinstance(spec, list | tuple) and len(spec) == len(TYPES):  # weights already in order
        items = list(zip(TYPES, spec, strict=True))
    else:
        raise ValueError(f"give the weights as a string like '{MIX_EXAMPLE}' or a table")
    weights: dict[str, int] = {}
    for name, value in items:
        if name not in TYPES:
            raise ValueError(f"unknown transaction '{name}'; known: {', '.join(TYPES)}")
        if name in weights:
            raise ValueError(f"{name} is given twice; give each transaction once")
        try:
            w = float(value)
        except (TypeError, ValueError):
            w = float("nan")
        if isinstance(value, bool) or w != w or w != int(w):
            raise ValueError(f"{name}={value} is not a whole percentage; use whole numbers summing to 100")
        if w < 0:
            raise ValueError(f"{name}={value} is negative; weights are whole percentages from 0 to 100")
        weights[name] = int(w)
    total = sum(weights.values())
    if total != 100:
        raise ValueError(
            f"the weights sum to {total}, not 100; make them add up to 100 (a transaction left out weighs 0)"
        )
    return tuple(weights.get(t, 0) for t in TYPES)


def mix_text(mix: Sequence[int] | None) -> str:
    """'new_order=45,payment=43,...' of a mix (the standard one for None)."""
    weights = list(mix) if mix is not None else [round(MIX[t]) for t in TYPES]
    return ",".join(f"{t}={w}" for t, w in zip(TYPES, weights, strict=True))

Counters = dict[str, list[int]]
X = TypeVar("X")


def counters(extra: Mapping[str, Any] | None) -> Counters | None:
    """The per-type counters of a report line's `extra`, or None when it carries none."""
    if not extra or not isinstance(extra.get("tpcc"), dict):
        return None
    out: Counters = {}
    for t in TYPES:
        raw = extra["tpcc"].get(t) or [0, 0, 0, 0]
        out[t] = [int(x) for x in (list(raw) + [0, 0, 0, 0])[:4]]
    return out


def zero() -> Counters:
    return {t: [0, 0, 0, 0] for t in TYPES}


def minus(a: Counters, b: Counters | None) -> Counters:
    if b is None:
        return {t: list(v) for t, v in a.items()}
    return {t: [x - y for x, y in zip(a[t], b[t], strict=True)] for t in TYPES}


def plus(a: Counters, b: Counters) -> Counters:
    return {t: [x + y for x, y in zip(a[t], b[t], strict=True)] for t in TYPES}


@dataclass(frozen=True)
class TpccClient:
    """What one sysbench client reported: its samples (measured, in order), the counters of its
    last warm-up report, at the warm-up checkpoint and at its final summary."""

    samples: Sequence[Sample]
    warmup_samples: Sequence[Sample] = ()
    checkpoint_extra: Mapping[str, Any] | None = None
    final_extra: Mapping[str, Any] | None = None


# cb_tpcc.lua's per-type latency histograms: bucket b holds [2^(b/8), 2^((b+1)/8)) microseconds
HIST_STEPS_PER_DOUBLING = 8

Hist = dict[int, int]


def hists(extra: Mapping[str, Any] | None) -> dict[str, Hist] | None:
    """The per-type latency histograms of a report line's `extra` (cumulative), or None."""
    if not extra or not isinstance(extra.get("tpcc_hist"), dict):
        return None
    return {t: {int(b): int(c) for b, c in extra["tpcc_hist"].get(t) or []} for t in TYPES}


def hist_minus(a: dict[str, Hist], b: dict[str, Hist] | None) -> dict[str, Hist]:
    if b is None:
        return a
    return {t: {k: v - b[t].get(k, 0) for k, v in a[t].items() if v - b[t].get(k, 0) > 0} for t in TYPES}


def hist_percentile(h: Hist, p: float) -> float | None:
    """The p-th percentile in ms: the upper edge of the bucket where the count reaches p %."""
    total = sum(h.values())
    if total <= 0:
        return None
    want = p / 100.0 * total
    seen = 0
    for b in sorted(h):
        seen += h[b]
        if seen >= want:
            return round(2 ** ((b + 1) / HIST_STEPS_PER_DOUBLING) / 1000.0, 3)
    return None


def _measured(
    c: TpccClient, read: Callable[[Mapping[str, Any] | None], X | None], sub: Callable[[X, X | None], X]
) -> X | None:
    """What `read` finds in the client's reports at the end, less what it found at the end of
    the warm-up (its checkpoint, else its last warm-up sample)."""
    end = read(c.final_extra)
    if end is None and c.samples:
        end = read(c.samples[-1].extra)
    if end is None:
        return None
    base = read(c.checkpoint_extra)
    if base is None and c.warmup_samples:
        base = read(c.warmup_samples[-1].extra)
    return sub(end, base)


def measured_hists(c: TpccClient) -> dict[str, Hist] | None:
    return _measured(c, hists, hist_minus)


def measured_counters(c: TpccClient) -> Counters | None:
    """The client's counters over the measured part (after the warm-up)."""
    return _measured(c, counters, minus)


def per_second(clients: Sequence[TpccClient]) -> list[dict[str, Any]]:
    """Per report interval (all clients summed): t and each type's completed transactions."""
    by_t: dict[int, Counters] = {}
    for c in clients:
        # the first measured report counts from the checkpoint (its part after it is measured)
        prev = counters(c.checkpoint_extra)
        if prev is None and c.warmup_samples:
            prev = counters(c.warmup_samples[-1].extra)
        for s in c.samples:
            cur = counters(s.extra)
            if cur is None:
                continue
            key = interval_key(s)
            by_t[key] = plus(by_t.get(key, zero()), minus(cur, prev))
            prev = cur
    return [{"t": t, **{ty: by_t[t][ty][0] for ty in TYPES}} for t in sorted(by_t)]


def summarize(clients: Sequence[TpccClient], duration: float) -> dict[str, Any] | None:
    """tpmC (New-Order per minute, rolled-back ones included as the spec counts them), total tpm,
    per-type counts, rollbacks, retries and mean latency, the mix seen and per second counts."""
    total = zero()
    merged: dict[str, Hist] | None = {t: {} for t in TYPES}
    for c in clients:
        m = measured_counters(c)
        if m is None:
            return None
        total = plus(total, m)
        h = measured_hists(c)
        if h is None or merged is None:
            merged = None  # a client without histograms: no percentile beats a wrong one
        else:
            for t in TYPES:
                for k, v in h[t].items():
                    merged[t][k] = merged[t].get(k, 0) + v
    done = sum(total[t][0] for t in TYPES)
    minutes = duration / 60.0 if duration > 0 else 0.0
    types = {}
    for t in TYPES:
        n, rb, rt, lat = total[t]
        types[t] = {
            "count": n, "rollbacks": rb, "retries": rt,
            "mean_ms": round(lat / n / 1000.0, 3) if n else None,
            "p50_ms": hist_percentile(merged[t], 50) if merged is not None else None,
            "p95_ms": hist_percentile(merged[t], 95) if merged is not None else None,
            "p99_ms": hist_percentile(merged[t], 99) if merged is not None else None,
            "share_pct": round(100.0 * n / done, 2) if done else None,
        }  # fmt: skip
    return {
        "tpmC": round(total["new_order"][0] / minutes, 1) if minutes else 0.0,
        "tpm": round(done / minutes, 1) if minutes else 0.0,
        "transactions": done,
        "retries": sum(total[t][2] for t in TYPES),
        "duration_s": round(duration, 3),
        "types": types,
        "per_second": per_second(clients),
    }


def mix_problems(
    summary: Mapping[str, Any], tolerance_pp: float = 5.0, mix: Sequence[int] | None = None
) -> list[str]:
    """Types whose share is further than `tolerance_pp` points from the mix asked (standard: None)."""
    out = []
    want_of = MIX if mix is None else dict(zip(TYPES, map(float, mix), strict=True))
    for t, want in want_of.items():
        got = summary["types"][t]["share_pct"]
        if (got is None and want) or (got is not None and abs(got - want) > tolerance_pp):
            out.append(f"{t}: {got}% ({'standard' if mix is None else 'asked'} {want}%)")
    return out


# ---- stall detector ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stalls:
    """Seconds whose throughput fell below `fraction` of the trial's median."""

    median_tps: float  # the reference: the trial's median, or that of its busy intervals (below)
    threshold_tps: float
    seconds: tuple[float, ...]  # t of each stalled sample
    runs: tuple[tuple[float, float], ...]  # (first t, length in samples) of each run of stalls
    busy_only: bool = False  # the median of all intervals was 0: the reference is the busy ones'

    @property
    def count(self) -> int:
        return len(self.seconds)

    @property
    def longest(self) -> float:
        return max((n for _, n in self.runs), default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "median_tps": round(self.median_tps, 3), "threshold_tps": round(self.threshold_tps, 3),
            "count": self.count, "longest": self.longest,
            "seconds": list(self.seconds), "runs": [list(r) for r in self.runs],
            "reference": "median of the intervals with tps > 0" if self.busy_only else "median",
        }  # fmt: skip


def detect_stalls(points: Iterable[tuple[float, float]], fraction: float = 0.10) -> Stalls:
    """(t, tps) per interval in time order (all clients summed) → the stalls.

    A stall is an interval with tps below `fraction` x the median tps of the trial; consecutive
    stalled intervals form one run (its length counts intervals, i.e. seconds at the default
    --report-interval of 1 s). When the load stood still for half the trial or more, the median is
    0 and would hide the very outage: the reference is then the median of the intervals with
    tps > 0 (`busy_only`). A trial with no busy interval at all has no stalls to find.
    """
    pts = sorted(points)
    if not pts:
        return Stalls(0.0, 0.0, (), ())
    med = statistics.median(tps for _, tps in pts)
    busy_only = False
    if med <= 0:
        busy = [tps for _, tps in pts if tps > 0]
        if busy:
            med, busy_only = statistics.median(busy), True
    thr = fraction * med
    stalled = [i for i, (_, tps) in enumerate(pts) if med > 0 and tps < thr]
    runs: list[tuple[float, float]] = []
    prev = -2
    for i in stalled:
        if i == prev + 1:
            start, n = runs[-1]
            runs[-1] = (start, n + 1)
        else:
            runs.append((pts[i][0], 1))
        prev = i
    return Stalls(med, thr, tuple(pts[i][0] for i in stalled), tuple(runs), busy_only)


# ---- lines for people --------------------------------------------------------------------------


def load_rows(lines: Iterable[str]) -> int:
    """Rows written by a prepare, from cb_tpcc.lua's `CBLOAD thread N: R rows, ...` lines."""
    total = 0
    for ln in lines:
        parts = ln.split()
        if len(parts) >= 4 and parts[0] == "CBLOAD" and parts[1] == "thread" and parts[4:5] == ["rows,"]:
            total += int(parts[3])
    return total


def _mib(n: Any) -> str:
    return f"{n / 2**20:.0f} MiB" if isinstance(n, int) else "?"


def load_line(load: Mapping[str, Any]) -> str:
    s = (f"tpcc load: {load['warehouses']} warehouse(s), {load['rows']} rows in {load['seconds']:.1f} s"
         f" ({load['rows_per_s'] or 0:.0f} rows/s)")  # fmt: skip
    if load.get("bytes_per_warehouse") is not None:
        s += f", {_mib(load['bytes_per_warehouse'])} per warehouse"
    if load.get("data_to_buffer_pool") is not None:
        s += f", data/buffer pool {load['data_to_buffer_pool']:.2f}"
    return s


def stall_line(stalls: Stalls) -> str:
    of = "the median of the intervals with load" if stalls.busy_only else "the median"
    return (f"stalls: {stalls.count} interval(s) below {stalls.threshold_tps:.1f} tps (10 % of {of} "
            f"{stalls.median_tps:.1f}), longest {stalls.longest:g} in a row")  # fmt: skip


def figure_lines(f: Mapping[str, Any]) -> list[str]:
    types = f["types"]
    parts = ", ".join(
        f"{t} {types[t]['count']}"
        + (f" ({types[t]['rollbacks']} rolled back)" if types[t]["rollbacks"] else "")
        for t in TYPES
    )
    lines = [f"tpmC {f['tpmC']:.0f}, tpm {f['tpm']:.0f}; {parts}; retries {f['retries']}"]
    if f.get("mix") and f["mix"] != mix_text(None):
        lines.append(f"mix asked: {f['mix']}")
    p95 = [f"{t} {types[t]['p95_ms']:g}" for t in TYPES if types[t].get("p95_ms") is not None]
    if p95:
        lines.append(f"p95 ms per type: {', '.join(p95)}")
    return lines
