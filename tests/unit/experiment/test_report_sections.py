"""Experiment report sections built from events: faults inside trials and client saturation."""

from __future__ import annotations

from pathlib import Path

from clusterbench.experiment.report import (
    client_findings,
    client_section,
    fault_effects,
    fault_section,
)
from clusterbench.store import Store


def _trial(st: Store, run: int, seq: int, index: int, point: str) -> int:
    tid = st.add_trial(
        run, seq, "oltp_read_write",
        {"key": f"main|{point}|rep1", "index": index, "part": "main", "point_label": point, "rep": 1},
    )  # fmt: skip
    st.finish_trial(tid, "completed")
    return tid


def test_saturated_clients_and_fault_effects_are_reported_per_trial(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as st:
        run = st.create_run("experiment", name="x")
        t1 = _trial(st, run, 1, 1, "threads=64")
        t2 = _trial(st, run, 2, 2, "threads=1")
        st.add_event(
            run, "client_saturated",
            {"client": 1, "host": "cb-x-c2", "flags": ["cpu"], "warnings": ["client CPU 97 % of 1 core"]},
            trial_id=t1,
        )  # fmt: skip
        st.add_event(run, "fault_effect", {"fault": "kill-node n2", "start": 20.0, "end": 30.0,
                                           "tps_before": 150.0, "tps_recovered_after_s": None,
                                           "errors_until_recovered": 12}, trial_id=t2)  # fmt: skip
        clients = client_findings(st, run)
        faults = fault_effects(st, run)
    assert clients == [{"index": 1, "part": "main", "point": "threads=64", "rep": 1, "client": 1,
                        "host": "cb-x-c2", "warnings": ["client CPU 97 % of 1 core"]}]  # fmt: skip
    sec = client_section(clients, several_parts=False)
    assert sec is not None and "a floor for the cluster's capacity" in sec.intro[0]
    assert sec.tables[0].rows == [["#1", "threads=64", "1", "1", "cb-x-c2", "client CPU 97 % of 1 core"]]
    assert [f["point"] for f in faults] == ["threads=1"]
    table = fault_section(faults)
    assert table is not None
    assert table.tables[0].rows == [
        ["#2", "main: threads=1", "1", "kill-node n2", "20.0", "30.0", "150.0", "not recovered", "12"]
    ]
    assert client_section([]) is None and fault_section([]) is None


def test_points_are_listed_in_the_files_level_order_not_the_run_order(tmp_path: Path) -> None:
    from clusterbench.experiment.results import point_stats
    from clusterbench.workloads.parse import Summary

    with Store.open(tmp_path / "r.db") as st:
        run = st.create_run("experiment", name="x")
        levels = {"nodes": [1, 3, 9], "workload": ["oltp_write_only", "bulk_insert"]}
        st.set_provenance(run, "experiment", {
            "parts": {"main": {"factors": levels}},
            "trials": ["main|nodes=9 workload=oltp_write_only|rep1"],
        })  # fmt: skip
        seq = 0
        for nodes in (9, 3, 1):  # run order: descending nodes
            for test in ("bulk_insert", "oltp_write_only"):
                seq += 1
                label = f"nodes={nodes} workload={test}"
                tid = st.add_trial(run, seq, test, {
                    "key": f"main|{label}|rep1", "index": seq, "part": "main", "point_label": label,
                    "point_key": f"main|{label}", "point": {"nodes": nodes, "workload": test}, "rep": 1,
                })  # fmt: skip
                st.add_summary(tid, Summary(duration=10.0, threads=1, events=100 * seq, reads=0, writes=0,
                                            other=0, errors=0, reconnects=0, lat_min_ms=1.0, lat_avg_ms=2.0,
                                            lat_max_ms=3.0, percentile=95, lat_pct_ms=2.5))  # fmt: skip
                st.finish_trial(tid, "completed")
        labels = [p.label for p in point_stats(st, run)]
    assert labels == [
        "nodes=1 workload=oltp_write_only", "nodes=1 workload=bulk_insert",
        "nodes=3 workload=oltp_write_only", "nodes=3 workload=bulk_insert",
        "nodes=9 workload=oltp_write_only", "nodes=9 workload=bulk_insert",
    ]  # fmt: skip
