"""The experiment report's sections of particular workloads: access methods, mysqlslap, the
interconnect tables and TPC-C (split from experiment/report.py)."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from clusterbench.analysis.sections import Section, Table
from clusterbench.analysis.stats import median_ci
from clusterbench.analysis.workload_tables import ACCESS_NOTE
from clusterbench.experiment.report_text import converged_text, level_text
from clusterbench.experiment.report_text import num_text as _f
from clusterbench.experiment.results import (
    PointStats,
)
from clusterbench.experiment.runner import trial_rows
from clusterbench.experiment.spec import INTERCONNECTS
from clusterbench.store import Store
from clusterbench.workloads.sysbench import ACCESS_TESTS, SLAP_TEST, TPCC, access_rows


def _points_running(
    store: Store, run_id: int, points: Sequence[PointStats], tests: Collection[str]
) -> Iterator[tuple[PointStats, list[dict[str, Any]]]]:
    """The points whose trials ran one of `tests`, each with its trials' rows (trial_rows)."""
    rows_by_trial = {r["trial_id"]: r for r in trial_rows(store, run_id)}
    for p in points:
        trs = [rows_by_trial[t] for t in p.trial_ids if t in rows_by_trial]
        if trs and trs[0].get("test") in tests:
            yield p, trs


def access_section(store: Store, run_id: int, points: Sequence[PointStats]) -> Section | None:
    """µs per access of the access-method points (median over repetitions, with its CI; p95 from
    the repetitions' merged histogram), and batched ÷ serial per row size."""
    auto = any(p.convergence is not None for p in points)
    table: list[list[str]] = []
    medians: dict[tuple[str, str, str, int, int], float] = {}
    # (part, other factors, row bytes, batch) → method → interconnect → median µs/access
    by_ic: dict[tuple[str, str, int, int], dict[str, dict[str, float]]] = {}
    reps: dict[tuple[str, str, int, int, str, str], str] = {}  # repetitions = "auto": " (7)"
    for p, trs in _points_running(store, run_id, points, ACCESS_TESTS):
        first = trs[0]
        test, size, batch = str(first["test"]), int(first.get("row_size", 20)), int(first.get("batch", 32))
        n_rows = access_rows(test, batch, int(first.get("table_size", 10000)))
        us = [float(r["summary"]["lat_avg"]) * 1000.0 / n_rows for r in trs if r.get("summary")]
        acc = [float(r["summary"]["tps"]) * n_rows for r in trs if r.get("summary")]
        if not us:
            continue
        ci = median_ci(us)
        pooled = p.p95_pooled * 1000.0 / n_rows if p.p95_pooled is not None else None
        others = " ".join(f"{k}={level_text(v)}" for k, v in p.point.items()
                          if k not in ("workload", "row_size", "batch"))  # fmt: skip
        medians[(p.part, others, test, size, batch)] = ci.median
        ic = str(first.get("interconnect") or "")
        if ic:
            rest = " ".join(f"{k}={level_text(v)}" for k, v in p.point.items()
                            if k not in ("workload", "row_size", "batch", "interconnect"))  # fmt: skip
            # the statistic the repetitions converged on: the median, or the mean when asked for
            mean = p.convergence is not None and p.convergence.statistic == "mean"
            center = statistics.fmean(us) if mean else ci.median
            by_ic.setdefault((p.part, rest, size, batch), {}).setdefault(test, {})[ic] = center
            if p.convergence is not None:
                reps[(p.part, rest, size, batch, test, ic)] = (
                    f" ({p.convergence.n}{'' if p.convergence.converged else ', not converged'})"
                )
        table.append([p.part, others or "—", test.removeprefix("access_"), str(size), str(n_rows),
                      str(len(us)), f"{ci.median:,.2f} [{ci.low:,.2f}, {ci.high:,.2f}]", _f(pooled, ",.2f"),
                      _f(statistics.median(acc), ",.0f")]
                     + ([converged_text(p)] if auto else []))  # fmt: skip
    if not table:
        return None
    head = ["part", "point", "method", "row bytes", "rows/access", "n", "µs/access median [95 % CI]",
            "µs p95 pooled", "accesses/s"] + (["converged"] if auto else [])  # fmt: skip
    align = ["l"] * 3 + ["r"] * 6 + (["l"] if auto else [])
    sec = Section("access-methods", "Access methods", tables=[Table(head, table, align)])
    ratios = []
    for (part, others, test, size, batch), batched in medians.items():
        serial = medians.get((part, others, test.removesuffix("_batch"), size, batch))
        if test.endswith("_batch") and serial:
            ratios.append([part, others or "—", test.removeprefix("access_"), str(size), str(batch),
                           f"{batched / serial:.3f}"])  # fmt: skip
    if ratios:
        ratio_head = ["part", "point", "method", "row bytes", "batch", "batched ÷ serial µs/access"]
        sec.tables.append(Table(ratio_head, ratios, ["l", "l", "l", "r", "r", "r"]))
    sec.tables += interconnect_tables(by_ic, reps)
    sec.paragraphs.append(ACCESS_NOTE)
    if by_ic:
        sec.paragraphs.append(INTERCONNECT_NOTE)
    return sec


def slap_section(store: Store, run_id: int, points: Sequence[PointStats]) -> Section | None:
    """The mysqlslap points: what each ran (load type and engine, or the user's SQL), queries/s
    (median over repetitions, with its CI), seconds per run of all clients' queries and runs/s."""
    table: list[list[str]] = []
    for p, trs in _points_running(store, run_id, points, (SLAP_TEST,)):
        done = [r for r in trs if r.get("summary")]
        if not done:
            continue
        o = done[0].get("options") or {}
        sql = o.get("slap_query")
        load = f"SQL: {sql[:40]}{'…' if len(sql) > 40 else ''}" if sql else \
            f"{o.get('slap_load_type', 'mixed')} ({o.get('slap_engine', 'InnoDB')})"
        qps = median_ci([float(r["summary"]["qps_other"]) for r in done])
        per_run = statistics.median(float(r["summary"]["lat_avg"]) / 1000.0 for r in done)
        runs = statistics.median(float(r["summary"]["tps"]) for r in done)
        others = " ".join(f"{k}={level_text(v)}" for k, v in p.point.items() if k != "workload")
        table.append([p.part, others or "—", load, str(o.get("slap_queries", "")), str(o.get("threads", "")),
                      str(len(done)), f"{qps.median:,.0f} [{qps.low:,.0f}, {qps.high:,.0f}]",
                      f"{per_run:.3f}", f"{runs:,.1f}"])  # fmt: skip
    if not table:
        return None
    head = ["part", "point", "load (engine)", "queries/client", "clients", "n", "queries/s median [95 % CI]",
            "s/run median", "runs/s"]  # fmt: skip
    sec = Section("mysqlslap", "mysqlslap", tables=[Table(head, table, ["l", "l", "l"] + ["r"] * 6)])
    sec.paragraphs.append(
        "One mariadb-slap run = every client (its concurrency, the threads setting) sending its queries "
        "once; the trial repeats runs until its time is up. queries/s counts all clients' queries; "
        "s/run is mariadb-slap's own average seconds to run them; runs/s is runs per measured second. "
        "Elsewhere in this report a mysqlslap trial's tps is its runs per second (a run is one event), "
        "not queries: compare mysqlslap points by this table."
    )
    return sec


INTERCONNECT_NOTE = (
    "By interconnect: socket = the node's Unix socket, the client on the node's own host; tcp = TCP to "
    "the node over the bridge; haproxy = TCP through the balancer to a node; shaped = TCP to the node "
    "with every node's link limited by tbf (workload.shaped_bandwidth). Each cell is the median µs per "
    "access over the point's repetitions (the mean with ci_statistic = \"mean\"). The noop row "
    "(SELECT 1) is the client's own cost plus that interconnect's round trip; a serial access minus it "
    "is the server's share."
)


def interconnect_tables(
    by_ic: dict[tuple[str, str, int, int], dict[str, dict[str, float]]],
    reps: dict[tuple[str, str, int, int, str, str], str] | None = None,
) -> list[Table]:
    """The study's shape: access method × interconnect, µs per access (median over repetitions),
    one table per part, other factors, row size and batch; then batched ÷ serial per interconnect.
    With repetitions = "auto" a cell also says how many repetitions it took, and when it did not
    converge: "99.67 (8, not converged)"."""
    reps = reps or {}
    out: list[Table] = []
    order = {t: i for i, t in enumerate(ACCESS_TESTS)}
    for (part, rest, size, batch), methods in by_ic.items():
        ics = [ic for ic in INTERCONNECTS if any(ic in v for v in methods.values())]
        where = f"{part}{' ' + rest if rest else ''}, {size}-byte rows, batch {batch}"
        rows = []
        for test in sorted(methods, key=lambda t: order.get(t, len(order))):
            cells = methods[test]
            shown = [_f(cells.get(ic), ",.2f") + reps.get((part, rest, size, batch, test, ic), "")
                     for ic in ics]  # fmt: skip
            rows.append([test.removeprefix("access_"), *shown])
        for test in sorted(methods, key=lambda t: order.get(t, len(order))):
            serial = methods.get(test.removesuffix("_batch"), {})
            if not test.endswith("_batch") or not serial:
                continue
            ratio = [
                f"{methods[test][ic] / serial[ic]:.3f}" if ic in methods[test] and serial.get(ic) else "—"
                for ic in ics
            ]
            method = test.removeprefix("access_")
            rows.append([f"{method} ÷ {method.removesuffix('_batch')}", *ratio])
        head = [f"µs/access ({where})", *ics]
        out.append(Table(head, rows, ["l"] + ["r"] * len(ics)))
    return out
def tpcc_section(store: Store, run_id: int, points: Sequence[PointStats]) -> Section | None:
    """The tpcc points: tpmC (median over repetitions, with its CI), tpm, each type's p95 (median
    over repetitions), retries per second, the stall detector's counts and the consistency verdicts;
    before them the loads (rows/s, bytes per warehouse, data/buffer-pool ratio)."""
    from clusterbench.workloads.tpcc import TYPES, load_line

    table: list[list[str]] = []
    for p, trs in _points_running(store, run_id, points, (TPCC,)):
        figs, stalls, verdicts = [], [], []
        for r in trs:
            prov = store.provenance(run_id, r["trial_id"])
            if prov.get("tpcc"):
                figs.append(prov["tpcc"])
            if prov.get("stalls"):
                stalls.append(prov["stalls"])
            verdicts += [v["verdict"] for k, v in prov.items() if k.startswith("tpcc_consistency:")]
        if not figs:
            continue
        ci = median_ci([float(f["tpmC"]) for f in figs])
        p95 = []
        for ty in TYPES:
            vals = [f["types"][ty]["p95_ms"] for f in figs if f["types"][ty].get("p95_ms") is not None]
            p95.append(_f(statistics.median(vals), ",.1f") if vals else "—")
        retries = statistics.median(f["retries"] / max(1e-9, float(f["duration_s"])) for f in figs)
        others = " ".join(f"{k}={level_text(v)}" for k, v in p.point.items() if k != "workload")
        passed = sum(1 for v in verdicts if v == "PASS")
        tpmc = f"{ci.median:,.0f} [{ci.low:,.0f}, {ci.high:,.0f}]"
        table.append([p.part, others or "—", str(len(figs)), tpmc,
                      _f(statistics.median(float(f["tpm"]) for f in figs), ",.0f"), *p95, _f(retries, ",.1f"),
                      " ".join(str(x["count"]) for x in stalls) or "—",
                      _f(max((float(x["longest"]) for x in stalls), default=0.0), "g"),
                      f"{passed}/{len(verdicts)} PASS" if verdicts else "—"])  # fmt: skip
    if not table:
        return None
    head = ["part", "point", "n", "tpmC median [95 % CI]", "tpm", *[f"p95 ms {t}" for t in TYPES],
            "retries/s", "stalls per rep", "longest stall", "consistency"]  # fmt: skip
    sec = Section("tpcc", "TPC-C", tables=[Table(head, table, ["l", "l"] + ["r"] * (len(head) - 2))])
    for load in store.provenance(run_id).get("tpcc_load") or []:
        sec.intro.append(f"Group {load.get('group')}, {load.get('nodes')} node(s): {load_line(load)}; "
                         f"{load.get('consistency', '')}.")  # fmt: skip
    sec.paragraphs.append(
        "tpmC: New-Order transactions per minute (rolled-back ones included); tpm: all five types. p95 per "
        "type: the median over repetitions of each trial's p95 (the script's own histograms). A stall is "
        "a second under 10 % of the trial's median tps; 'stalls per rep' gives the count of each "
        "repetition. Consistency: the twelve TPC-C conditions after each trial (condition 11 holds only "
        "right after a load and is reported as load-only)."
    )
    return sec


