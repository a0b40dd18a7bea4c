"""Latency of the verification workloads (ledger, bank, probe) from their operation histories.

Each client thread's successful operations go into an HDR histogram of its own (microseconds,
3 significant digits); a workload's percentiles come from the sum of its clients' histograms,
never from an average of per-client percentiles. Operations that failed or whose outcome is
unknown are counted but left out of the percentiles: their time is a timeout or an error path,
not a served request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hdrh.histogram import HdrHistogram  # type: ignore[import-untyped, unused-ignore]

LOWEST_US = 1
HIGHEST_US = 3600 * 1_000_000  # an hour: longer than any operation's read timeout
DIGITS = 3


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def client_histograms(ops: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], HdrHistogram]:
    """(workload, client) → histogram of its ok operations' latencies. `ops` are stored op rows
    (or Op.to_row() dicts): t_start and t_end in seconds."""
    out: dict[tuple[str, int], HdrHistogram] = {}
    for op in ops:
        if op["outcome"] != "ok":
            continue
        key = (str(op["workload"]), int(op["client"]))
        h = out.get(key)
        if h is None:
            h = out[key] = new_histogram()
        us = max(LOWEST_US, min(HIGHEST_US, round((float(op["t_end"]) - float(op["t_start"])) * 1e6)))
        h.record_value(us)
    return out


def merge(hists: Iterable[HdrHistogram]) -> HdrHistogram:
    total = new_histogram()
    for h in hists:
        total.add(h)
    return total


@dataclass(frozen=True)
class WorkloadLatency:
    workload: str
    clients: int
    ops: int
    ok: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    client_p95_ms: dict[int, float]  # each client's own p95, for spread across clients


def _ms(h: HdrHistogram, pct: float) -> float | None:
    return h.get_value_at_percentile(pct) / 1000 if h.get_total_count() else None


def workload_latency(ops: Iterable[Mapping[str, Any]]) -> list[WorkloadLatency]:
    """Per workload: counts, merged percentiles (ms) of ok operations, and each client's p95."""
    rows = list(ops)
    hists = client_histograms(rows)
    out = []
    for wl in sorted({str(o["workload"]) for o in rows}):
        mine = {c: h for (w, c), h in hists.items() if w == wl}
        total = merge(mine.values())
        n = sum(1 for o in rows if o["workload"] == wl)
        out.append(
            WorkloadLatency(
                workload=wl,
                clients=len({int(o["client"]) for o in rows if o["workload"] == wl}),
                ops=n,
                ok=int(total.get_total_count()),
                p50_ms=_ms(total, 50),
                p95_ms=_ms(total, 95),
                p99_ms=_ms(total, 99),
                max_ms=total.get_max_value() / 1000 if total.get_total_count() else None,
                client_p95_ms={c: v for c, h in sorted(mine.items()) if (v := _ms(h, 95)) is not None},
            )
        )
    return out
