"""Failover studies: the detection settings as factors (a cluster per level, in its engine's
section, refused on the other engine) and the report's failover times per point."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.errors import InputError
from clusterbench.experiment.failover_report import failover_rows, failover_section
from clusterbench.experiment.load import experiment_from_data, load_experiment
from clusterbench.experiment.planner import expand
from clusterbench.spec.topology import parse_toml
from clusterbench.store import Store

EXAMPLE = Path(__file__).parents[3] / "examples" / "experiments" / "failover-times.toml"


def test_each_detection_level_is_a_cluster_with_the_setting_in_its_engines_section() -> None:
    plan = expand(load_experiment(EXAMPLE, "quick"))
    by_point = {t.point_label: t for t in plan.trials}
    g = by_point["engine=galera evs_suspect_timeout=1.5"]
    assert g.topology.mariadb.evs_suspect_timeout == 1.5 and g.topology.engine.kind == "galera"
    gr = by_point["engine=group_replication member_expel_timeout=0"]
    assert gr.topology.mysql.member_expel_timeout == 0 and gr.topology.engine.kind == "group_replication"
    assert len({t.group for t in plan.trials}) == 6  # every level its own cluster
    assert all(t.failover_figures and t.faults for t in plan.trials)
    assert plan.trials[0].describe()["failover_figures"] is True


def test_a_detection_factor_of_the_other_engine_is_refused_in_one_line() -> None:
    head = '[experiment]\nname = "x"\n[topology.cluster]\nname = "x"\n[workload]\nduration = 5\n'
    text = head + "[factors]\nengine = ['galera']\nmember_expel_timeout = [1, 2]\n"
    with pytest.raises(InputError) as e:
        expand(experiment_from_data(parse_toml(text, "x.toml"), "x.toml"))
    assert "factor member_expel_timeout is a setting of engine group_replication, not of galera" in str(
        e.value
    )
    bad = head + "[factors]\nevs_suspect_timeout = [1.5]\n"
    with pytest.raises(InputError) as e:  # Galera refuses a keepalive above a third of the timeout
        expand(experiment_from_data(parse_toml(bad, "x.toml"), "x.toml"))
    assert "evs_suspect_timeout = 1.5" in str(e.value) and "evs_keepalive_period" in str(e.value)


def test_the_report_gives_each_points_median_failover_times(tmp_path: Path) -> None:
    st = Store.open(tmp_path / "r.db")
    run = st.create_run("experiment")
    times: dict[str, list[tuple[float, float, float | None, float]]] = {
        "a=1": [(2.1, 3.0, None, 3.4), (1.9, 2.6, None, 3.0), (2.5, 3.2, None, 3.8)],
        "a=2": [(5.0, 6.0, 7.5, 8.0)],
    }
    seq = 0
    for label, figures in times.items():
        for sus, view, prim, ok in figures:
            seq += 1
            tid = st.add_trial(run, seq, "oltp_read_write", {"part": "p", "point_label": label})
            detail = {"suspected_after": sus, "view_shrunk_after": view, "new_primary_after": prim,
                      "writes_ok_after": ok, "victim_was_primary": prim is not None}  # fmt: skip
            st.add_event(run, "failover", detail, trial_id=tid)
            st.finish_trial(tid, "completed")
    failed = st.add_trial(run, 9, "oltp_read_write", {"part": "p", "point_label": "a=1"})
    st.add_event(run, "failover", {"suspected_after": 99.0}, trial_id=failed)
    st.finish_trial(failed, "failed")  # a failed trial's figures are not counted
    rows = failover_rows(st, run)
    assert [(r["point"], r["n"], r["suspected_after"], r["view_shrunk_after"], r["new_primary_after"],
             r["writes_ok_after"], r["primary_killed"]) for r in rows] == [
        ("a=1", 3, 2.1, 3.0, None, 3.4, 0),
        ("a=2", 1, 5.0, 6.0, 7.5, 8.0, 1),
    ]  # fmt: skip
    sec = failover_section(st, run)
    assert sec is not None and sec.tables[0].rows[0][3:] == ["2.10", "3.00", "—", "3.40", "0"]
