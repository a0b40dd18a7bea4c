from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from clusterbench.analysis.document import render_html, render_markdown, write_report
from clusterbench.analysis.report import summary_rows, table_cells, trial_series
from clusterbench.store import Store
from clusterbench.workloads.parse import merge_summaries, parse_output

DATA = Path(__file__).parents[1] / "workloads" / "data"


def fixed() -> datetime:
    return datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> tuple[Store, int]:
    st = Store.open(tmp_path / "r.sqlite", clock=fixed)
    run = st.create_run("bench", name="demo", command_line="clusterbench bench demo.toml")
    t1 = st.add_trial(run, 1, "oltp_point_select", {})
    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), threads=2)
    for s in p.samples:
        st.add_sample(t1, s)
    assert p.summary is not None
    st.add_summary(t1, p.summary)
    st.finish_trial(t1, "completed")
    # trial 2: two clients
    t2 = st.add_trial(run, 2, "oltp_read_write", {})
    a = parse_output(
        (DATA / "oltp_read_write_warmup1.out").read_text().splitlines(), warmup=1, threads=2, client=0
    )
    b = parse_output((DATA / "oltp_read_write_reconnect.out").read_text().splitlines(), threads=4, client=1)
    for s in a.samples + b.samples:
        st.add_sample(t2, s)
    assert a.summary is not None and b.summary is not None
    merged = merge_summaries([a.summary, b.summary])
    assert merged is not None
    st.add_summary(t2, merged)
    st.finish_trial(t2, "completed")
    st.finish_run(run, "completed")
    return st, run


def test_summary_rows_are_data(store: tuple[Store, int]) -> None:
    st, run = store
    rows = summary_rows(st, run)
    assert [(r.trial, r.workload, r.threads, r.errors, r.reconnects) for r in rows] == [
        (1, "oltp_point_select", 2, 0, 0),
        (2, "oltp_read_write", 6, 0, 4),
    ]
    assert rows[0].tps == pytest.approx(52256 / 2.003936678)
    assert rows[0].p95 == pytest.approx(0.10413466108439286)
    assert rows[0].lat_min == pytest.approx(0.050394) and rows[0].lat_max == pytest.approx(3.554139)
    header, cells = table_cells(rows)
    assert header[:4] == ["trial", "test", "threads", "tps"]
    assert cells[0][:4] == ["1", "oltp_point_select", "2", "26,076.67"]
    assert header[9:12] == ["p95 ms", "p99 ms", "max ms"]  # p99 beside p95
    assert cells[0][9:] == ["0.10", "0.15", "3.55", "0", "0.00", "0"]


def test_series_adds_clients_per_second(store: tuple[Store, int]) -> None:
    st, run = store
    trial2 = st.trials(run)[1].id
    pts = trial_series(st, trial2)
    assert [p.t for p in pts] == [1.0, 2.0, 3.0]
    assert pts[0].reconnects == 0 and pts[1].reconnects == 4
    assert pts[1].p95 is not None and pts[1].lat_avg is not None and pts[1].lat_avg <= pts[1].p95


def test_markdown_exact_head_and_table(store: tuple[Store, int]) -> None:
    st, run = store
    md = render_markdown(st, run)
    assert md.startswith(
        "# Run 1: demo\n\n- run: 1 (bench, demo)\n- engine: external\n- outcome: 2 trials, 1,301-26,077 tps\n"
        "- environment: a server given by --host\n- durability: not known (no server answered)\n"
        "- status: completed\n"
        "- started: 2025-01-02T03:04:05.000+00:00\n- ended: 2025-01-02T03:04:05.000+00:00\n"
        "- command: `clusterbench bench demo.toml`\n\n## Overview\n"
    )
    assert (
        "## Summary\n\nThroughput and errors\n\n"
        "| trial | test | threads | tps | reads/s | writes/s | other/s | errors | errors/s | reconnects |\n"
        "|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        "| 1 | oltp_point_select | 2 | 26,076.67 | 26,076.67 | 0.00 | 0.00 | 0 | 0.00 | 0 |\n"
    ) in md
    assert "| trial | test | min ms | avg ms | p95 ms | p99 ms | max ms |\n" in md
    assert "| 2 | oltp_read_write | 6 |" in md
    assert "Units: tps = transactions per second" in md


def test_html_is_self_contained(store: tuple[Store, int], tmp_path: Path) -> None:
    st, run = store
    page = render_html(st, run)
    # inline SVG, no script and nothing fetched: it works offline and stays small
    assert "<script" not in page and "<link " not in page and " src=" not in page
    assert "plotly" not in page
    # one overview, and per trial a tps panel and the latency panel on a linear and a log scale
    # and per trial its latency histogram
    assert page.count("<svg") == 1 + 2 * 3 + 2
    assert len(page) < 300_000
    md, html_path = write_report(st, run, tmp_path / "out")
    assert md.name == "report-1.md" and html_path.read_text() == page


def test_series_marks_intervals_not_every_client_reported(store: tuple[Store, int]) -> None:
    st, run = store
    trial2 = st.trials(run)[1].id
    per: dict[int, dict[int, list[dict]]] = {0: {}, 1: {}}
    for c in (0, 1):
        for s in st.samples(trial2, client=c):
            per[c].setdefault(round(s["t"]), []).append(s)

    def rate(own: list[dict]) -> float:  # a client's rate over its samples of one second (a tail)
        if len(own) == 1:
            return float(own[0]["tps"])
        return sum(s["events"] for s in own) / sum(s["interval"] for s in own)

    pts = {round(p.t): p for p in trial_series(st, trial2)}
    for t, p in pts.items():
        present = [c for c in (0, 1) if t in per[c]]
        assert p.clients == len(present) and p.complete == (len(present) == 2)
        # the clients' own rates added
        assert p.tps == pytest.approx(sum(rate(per[c][t]) for c in present), rel=1e-12)


def test_clients_fairness_and_saturation_in_the_report(store: tuple[Store, int]) -> None:
    from clusterbench.analysis.report import client_rows

    st, run = store
    t2 = st.trials(run)[1].id
    a = parse_output((DATA / "oltp_read_write_warmup1.out").read_text().splitlines(), warmup=1, threads=2)
    b = parse_output((DATA / "oltp_read_write_reconnect.out").read_text().splitlines(), threads=4, client=1)
    assert a.summary is not None and b.summary is not None
    st.add_summary(t2, a.summary, client=0)
    st.add_summary(t2, b.summary, client=1)
    cpu = {"proc_cores": 1.9, "usable": 2, "proc_frac": 0.95, "host_busy": 0.97}
    st.add_trial_client(t2, {"client": 0, "host": "cb-lab-c1", "database": "sbtest1", "rate_asked": 0,
                             "cpu": cpu, "flags": ["cpu_saturated"]})  # fmt: skip
    st.add_trial_client(t2, {"client": 1, "host": "cb-lab-c2", "database": "sbtest2", "rate_asked": 0,
                             "cpu": None, "flags": []})  # fmt: skip
    st.set_provenance(run, "clients", {"start_skew_s": 0.012, "launch_skew_s": 0.001, "fairness_tps": {
        "n": 2, "min": 100.0, "max": 300.0, "mean": 200.0, "cv": 0.5, "jain": 0.8, "spread": 1.0}},
        trial_id=t2)  # fmt: skip
    warning = "client 0 on cb-lab-c1: sysbench used 1.90 of the 2 CPU(s) it can use (95%)"
    st.add_event(run, "client_saturated", {"client": 0, "warnings": [warning]}, trial_id=t2)
    rows = client_rows(st, t2)
    assert [r[:4] for r in rows] == [["0", "cb-lab-c1", "—", "sbtest1"], ["1", "cb-lab-c2", "—", "sbtest2"]]
    assert rows[0][10:] == ["1.90/2 (95%)", "97%", "cpu_saturated"] and rows[1][10:] == ["—", "—", "—"]
    md = render_markdown(st, run)
    assert (
        "> **Warning:** load not as asked (a client was saturated or its --rate was not reached); the "
        "cluster's limit was not measured: trial 2: client 0 on cb-lab-c1: sysbench used 1.90 of the 2 "
        "CPU(s) it can use (95%)"
    ) in md
    assert "## Clients of trial 2 (oltp_read_write)" in md
    assert "| client | host | target | schema | threads | tps | p95 ms |" in md
    assert "Clients started measuring within 12 ms of each other (sysbench exec'd within 1 ms)" in md
    assert (
        "Fairness of tps across 2 clients: min 100.0, max 300.0, mean 200.0, CV 50.0%, Jain's index 0.800"
        in md
    )
    page = render_html(st, run)
    assert '<div class="warn"><b>Warning:</b> load not as asked' in page and "Clients of trial 2" in page
    assert "client 1" in page  # the per-client tps line's legend


def test_verification_latency_from_merged_hdr_histograms(store: tuple[Store, int]) -> None:
    st, run = store
    t1 = st.trials(run)[0].id
    base = {"process": "balancer", "address": "a", "kind": "insert", "key": None, "value": None,
            "wall_start": 0.0, "wall_end": 0.0, "error_code": None, "error": None}  # fmt: skip
    ops = [{**base, "workload": "ledger", "client": 0, "t_start": 1.0, "t_end": 1.001, "outcome": "ok"}] * 100
    ops += [{**base, "workload": "ledger", "client": 1, "t_start": 1.0, "t_end": 1.010, "outcome": "ok"}] * 90
    ops += [{**base, "workload": "ledger", "client": 1, "t_start": 1.0, "t_end": 1.300, "outcome": "ok"}] * 10
    st.add_ops(t1, ops)
    md = render_markdown(st, run)
    assert "## Verification latency" in md
    assert "| 1 | ledger | 2 | 200 | 200 | 1.00 | 10.01 | 300.03 | 300.03 | 0: 1.00, 1: 300.03 |" in md
    assert "<h2>Verification latency</h2>" in render_html(st, run)


def test_tpcc_figures_consistency_and_stalls_in_the_report(store: tuple[Store, int]) -> None:
    from clusterbench.workloads.tpcc import detect_stalls

    st, run = store
    t1 = st.trials(run)[0].id
    load = {"warehouses": 2, "rows": 1000, "seconds": 2.0, "rows_per_s": 500.0,
            "bytes_per_warehouse": 96 * 2**20, "data_to_buffer_pool": 3.0}  # fmt: skip
    st.set_provenance(run, "tpcc_load", load)
    st.set_provenance(run, "tpcc_consistency@load:sbtest", {"verdict": "PASS", "conditions": []})
    names = ("new_order", "payment", "order_status", "delivery", "stock_level")
    types = {t: {"count": 10, "share_pct": 20.0, "rollbacks": 1 if t == "new_order" else 0, "retries": 2,
                 "mean_ms": 1.5} for t in names}  # fmt: skip
    figures = {"tpmC": 1200.0, "tpm": 6000.0, "retries": 10, "types": types}
    st.set_provenance(run, "tpcc", figures, trial_id=t1)
    st.set_provenance(run, "tpcc_consistency:sbtest", {"verdict": "FAIL", "conditions": [
        {"condition": 9, "title": "D_YTD = sum(H_AMOUNT) for each district", "status": "FAIL"},
        {"condition": 11, "title": "orders minus new orders", "status": "load-only"},
    ]}, trial_id=t1)  # fmt: skip
    stalls = detect_stalls([(1, 100.0), (2, 0.0), (3, 0.0), (4, 100.0), (5, 90.0)])
    st.set_provenance(run, "stalls", stalls.to_json(), trial_id=t1)
    md = render_markdown(st, run)
    assert "## TPC-C\n" in md and "## Stalls\n" in md
    assert "tpcc load: 2 warehouse(s), 1000 rows in 2.0 s (500 rows/s), 96 MiB per warehouse" in md
    assert "Trial 1: tpmC 1,200 (New-Order per minute, rolled-back ones included), tpm 6,000" in md
    assert "Trial 1 consistency (sbtest): FAIL — condition 9 (D_YTD = sum(H_AMOUNT) for each district)" in md
    assert "| 1 | new_order | 10 | 20.0 | 45 | 1 | 2 | 1.50 | — | — |" in md
    assert "| 1 | oltp_point_select | 90.00 | 9.00 | 2 | 2 | 2+1 |" in md
    assert "stall" in render_html(st, run)
