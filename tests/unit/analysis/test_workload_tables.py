"""Access-method and mysqlslap tables in the run report and the experiment report, from a store
filled by hand: µs per access = latency ÷ rows read, accesses/s = events/s × rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.analysis.document import render_markdown
from clusterbench.analysis.workload_tables import access_results, access_table, slap_table
from clusterbench.experiment.report import access_section
from clusterbench.experiment.results import point_stats
from clusterbench.store import Store
from clusterbench.workloads.parse import Summary
from clusterbench.workloads.slap import run_histogram


def summary(events: int, lat_avg_ms: float, *, duration: float = 10.0, threads: int = 1, other: int = 0,
            lat_min_ms: float | None = None, lat_max_ms: float | None = None) -> Summary:  # fmt: skip
    hist = run_histogram([lat_avg_ms / 1000.0] * events)
    return Summary(duration=duration, threads=threads, events=events, reads=events, writes=0, other=other,
                   errors=0, reconnects=0, lat_min_ms=lat_min_ms or lat_avg_ms, lat_avg_ms=lat_avg_ms,
                   lat_max_ms=lat_max_ms or lat_avg_ms, percentile=95, lat_pct_ms=lat_avg_ms,
                   hist=hist)  # fmt: skip


def test_run_report_divides_latency_by_rows(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as st:
        run = st.create_run("suite", name="suite")
        params = {"batch": 32, "row_size": 2048, "table_size": 1000}
        for seq, (test, events, ms) in enumerate([("access_pk", 1000, 0.1), ("access_pk_batch", 500, 0.64),
                                                  ("access_scan", 10, 5.0)], start=1):  # fmt: skip
            tid = st.add_trial(run, seq, test, params)
            st.add_summary(tid, summary(events, ms))
            st.finish_trial(tid, "completed")
        tid = st.add_trial(run, 4, "mysqlslap", {})
        st.add_summary(tid, summary(20, 18.0, duration=4.0, threads=4, other=4000, lat_min_ms=9.0,
                                    lat_max_ms=32.0))  # fmt: skip
        st.finish_trial(tid, "completed")
        rows = access_results(st, run)
        cells = access_table(st, run)
        slap = slap_table(st, run)
        md = render_markdown(st, run)
    assert [(r.test, r.rows, r.row_size) for r in rows] == [
        ("access_pk", 1, 2048), ("access_pk_batch", 32, 2048), ("access_scan", 1000, 2048)
    ]  # fmt: skip
    assert [round(r.us_avg, 3) for r in rows] == [100.0, 20.0, 5.0]
    assert [round(r.accesses_per_s) for r in rows] == [100, 1600, 1000]
    assert rows[1].us_p95 == pytest.approx(20.0, rel=0.02)
    assert cells[1][:6] == ["2", "pk_batch", "2048", "32", "1,600", "20.00"]
    assert slap == [["4", "4", "20", "4,000", "1,000", "0.018", "0.009", "0.032"]]
    assert "## Access methods" in md and "## mysqlslap" in md and "| 2 | pk_batch | 2048 | 32 |" in md


def test_experiment_report_has_medians_and_the_batched_to_serial_ratio(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as st:
        run = st.create_run("experiment", name="am")
        st.set_provenance(run, "experiment", {"parts": {"main": {"factors": {
            "row_size": [20], "workload": ["access_pk", "access_pk_batch"]}}}})  # fmt: skip
        seq = 0
        for test, ms_list in (("access_pk", [0.10, 0.12, 0.11]), ("access_pk_batch", [0.32, 0.33, 0.31])):
            for rep, ms in enumerate(ms_list, start=1):
                seq += 1
                label = f"row_size=20 workload={test}"
                tid = st.add_trial(run, seq, test, {
                    "key": f"main|{label}|rep{rep}", "index": seq, "part": "main", "point_label": label,
                    "point_key": f"main|{label}", "point": {"row_size": 20, "workload": test}, "rep": rep,
                    "test": test, "row_size": 20, "batch": 32, "table_size": 1000,
                })  # fmt: skip
                st.add_summary(tid, summary(1000, ms))
                st.finish_trial(tid, "completed")
        sec = access_section(st, run, point_stats(st, run))
    assert sec is not None
    main, ratio = sec.tables
    assert [r[2:6] for r in main.rows] == [["pk", "20", "1", "3"], ["pk_batch", "20", "32", "3"]]
    assert main.rows[0][6].startswith("110.00 [") and main.rows[1][6].startswith("10.00 [")
    assert ratio.rows == [["main", "—", "pk_batch", "20", "32", "0.091"]]


def test_experiment_report_pivots_access_method_by_interconnect(tmp_path: Path) -> None:
    ics = ["socket", "tcp", "haproxy", "shaped"]
    with Store.open(tmp_path / "r.db") as st:
        run = st.create_run("experiment", name="am")
        st.set_provenance(run, "experiment", {"parts": {"main": {"factors": {
            "interconnect": ics, "workload": ["access_pk", "access_pk_batch", "access_noop"]}}}})  # fmt: skip
        seq = 0
        for k, ic in enumerate(ics):
            for test, ms in (("access_pk", 0.05 * (k + 1)), ("access_pk_batch", 0.32 * (k + 1)),
                             ("access_noop", 0.04 * (k + 1))):  # fmt: skip
                seq += 1
                label = f"interconnect={ic} workload={test}"
                tid = st.add_trial(run, seq, test, {
                    "key": f"main|{label}|rep1", "index": seq, "part": "main", "point_label": label,
                    "point_key": f"main|{label}", "point": {"interconnect": ic, "workload": test}, "rep": 1,
                    "test": test, "row_size": 20, "batch": 32, "table_size": 1000, "interconnect": ic,
                })  # fmt: skip
                st.add_summary(tid, summary(1000, ms))
                st.finish_trial(tid, "completed")
        sec = access_section(st, run, point_stats(st, run))
    assert sec is not None
    pivot = sec.tables[-1]
    assert pivot.header == ["µs/access (main, 20-byte rows, batch 32)", "socket", "tcp", "haproxy", "shaped"]
    assert pivot.rows == [
        ["pk", "50.00", "100.00", "150.00", "200.00"],
        ["pk_batch", "10.00", "20.00", "30.00", "40.00"],
        ["noop", "40.00", "80.00", "120.00", "160.00"],
        ["pk_batch ÷ pk", "0.200", "0.200", "0.200", "0.200"],
    ]
    assert any("socket = the node's Unix socket" in p for p in sec.paragraphs)


def test_auto_repetition_cells_say_n_and_use_the_convergence_statistic(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as st:
        run = st.create_run("experiment", name="am")
        st.set_provenance(run, "experiment", {
            "settings": {"repetitions": "auto", "ci_statistic": "mean", "ci_tolerance": 0.05},
            "parts": {"main": {"factors": {"interconnect": ["tcp"], "workload": ["access_pk"]}}},
        })  # fmt: skip
        for rep, ms in enumerate([0.10, 0.10, 0.13], start=1):
            label = "interconnect=tcp workload=access_pk"
            tid = st.add_trial(run, rep, "access_pk", {
                "key": f"main|{label}|rep{rep}", "index": rep, "part": "main", "point_label": label,
                "point_key": f"main|{label}", "point": {"interconnect": "tcp", "workload": "access_pk"},
                "rep": rep, "test": "access_pk", "row_size": 20, "batch": 32, "table_size": 1000,
                "interconnect": "tcp",
            })  # fmt: skip
            st.add_summary(tid, summary(1000, ms))
            st.finish_trial(tid, "completed")
        sec = access_section(st, run, point_stats(st, run))
    assert sec is not None
    # mean 110 µs; t-interval of (100, 100, 130) is far wider than 5 %: not converged after 3
    assert sec.tables[-1].rows == [["pk", "110.00 (3, not converged)"]]
    assert sec.tables[0].header[-1] == "converged" and sec.tables[0].rows[0][-1].startswith("no, ±")
