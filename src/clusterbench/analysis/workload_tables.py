"""Tables of the workloads whose unit is not a transaction, read from the store alone. Pure.

access_* (the access-method microbenchmark): one event reads `access_rows` rows, so microseconds
per access = event latency / rows, and accesses per second = events per second x rows. The
percentiles are the merged histogram's (never averaged), divided the same way.

mysqlslap: one event is one run of all its queries (mariadb-slap's "seconds to run all queries").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.store import Store
from clusterbench.workloads.sysbench import ACCESS_TESTS, SLAP_TEST, access_rows

ACCESS_HEADER = ["trial", "method", "row bytes", "rows/access", "accesses/s", "µs/access avg", "µs p50",
                 "µs p95"]  # fmt: skip
ACCESS_NOTE = (
    "µs/access = latency of one access ÷ the rows it read (each access checks it got exactly these "
    "rows); accesses/s = rows read per second, all threads. access_noop (SELECT 1) is the client's "
    "and the network's own cost per round trip: what a serial access costs beyond it is the server's."
)
SLAP_HEADER = ["trial", "concurrency", "runs", "queries", "queries/s", "avg s/run", "min s/run", "max s/run"]
SLAP_NOTE = (
    "mysqlslap (mariadb-slap): each run sends every client's queries once, with `concurrency` "
    "clients at a time; s/run is mariadb-slap's own \"seconds to run all queries\"; runs repeat "
    "until the trial's time is up."
)


@dataclass(frozen=True)
class AccessRow:
    trial: int
    test: str
    row_size: int
    rows: int
    accesses_per_s: float
    us_avg: float
    us_p50: float | None
    us_p95: float | None


def _per_row(ms: Any, rows: int) -> float | None:
    return None if ms is None else float(ms) * 1000.0 / rows


def access_results(store: Store, run_id: int) -> list[AccessRow]:
    out = []
    for tr in store.trials(run_id):
        if tr.workload not in ACCESS_TESTS:
            continue
        s = store.summary(tr.id)
        if s is None:
            continue
        p = tr.params
        rows = access_rows(tr.workload, int(p.get("batch", 32)), int(p.get("table_size", 10000)))
        out.append(
            AccessRow(
                trial=tr.seq, test=tr.workload, row_size=int(p.get("row_size", 20)), rows=rows,
                accesses_per_s=float(s["tps"]) * rows, us_avg=float(s["lat_avg"]) * 1000.0 / rows,
                us_p50=_per_row(s["p50"], rows), us_p95=_per_row(s["p95"], rows),
            )
        )  # fmt: skip
    return out


def _f(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def access_table(store: Store, run_id: int) -> list[list[str]]:
    return [
        [str(r.trial), r.test.removeprefix("access_"), str(r.row_size), str(r.rows), _f(r.accesses_per_s, 0),
         _f(r.us_avg), _f(r.us_p50), _f(r.us_p95)]
        for r in access_results(store, run_id)
    ]  # fmt: skip


def slap_table(store: Store, run_id: int) -> list[list[str]]:
    out = []
    for tr in store.trials(run_id):
        if tr.workload != SLAP_TEST:
            continue
        s = store.summary(tr.id)
        if s is None:
            continue
        queries = round(float(s["qps_other"]) * float(s["duration"]))
        out.append([
            str(tr.seq), str(s["threads"]), str(s["events"]), f"{queries:,}", _f(float(s["qps_other"]), 0),
            _f(float(s["lat_avg"]) / 1000.0, 3), _f(float(s["lat_min"]) / 1000.0, 3),
            _f(float(s["lat_max"]) / 1000.0, 3),
        ])  # fmt: skip
    return out
