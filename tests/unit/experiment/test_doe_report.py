"""The designed-experiment sections of the experiment report, from a store with synthetic trials."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clusterbench.experiment.design import DesignSpec, expand_design
from clusterbench.experiment.doe_report import designed_parts, effects_csv
from clusterbench.experiment.planner import label
from clusterbench.experiment.report import render_html
from clusterbench.experiment.spec import factor_kinds
from clusterbench.store import Store
from clusterbench.workloads.parse import Summary


def _summary(tps: float, p95: float) -> Summary:
    return Summary(duration=10.0, threads=1, events=int(tps * 10), reads=0, writes=0, other=0, errors=0,
                   reconnects=0, lat_min_ms=1.0, lat_avg_ms=2.0, lat_max_ms=3.0, percentile=95,
                   lat_pct_ms=p95)  # fmt: skip


def test_report_has_effects_anova_pareto_surface_and_aliases(tmp_path: Path) -> None:
    # in the spec's order, as the planner has them: a = nodes, b = wsrep_slave_threads, c = threads
    levels: dict[str, Any] = {
        "nodes": [1, 5], "wsrep_slave_threads": [1, 16], "threads": [4, 64], "clients": [1, 3],
    }  # fmt: skip
    design = DesignSpec(kind="fractional-factorial", resolution=3, center_points=1)
    res = expand_design(levels, design, factor_kinds(), "parts.main")
    with Store.open(tmp_path / "r.db") as st:
        run = st.create_run("experiment", name="x")
        st.set_provenance(run, "experiment", {
            "name": "x", "settings": {"repetitions": 2},
            "parts": {"main": {"factors": levels, "design": design.model_dump(mode="json")}}, "trials": [],
        })  # fmt: skip
        seq = 0
        for p in res.points:
            d: dict[str, Any] = dict(p)
            for rep in (1, 2):
                seq += 1
                lab = label(p)
                tid = st.add_trial(run, seq, "oltp_read_write", {
                    "key": f"main|{lab}|rep{rep}", "index": seq, "part": "main", "point_label": lab,
                    "point_key": f"main|{lab}", "point": d, "rep": rep,
                })  # fmt: skip
                tps = 200 + 30 * (d["nodes"] == 1) - 10 * (d["threads"] == 64) + rep
                st.add_summary(tid, _summary(tps, 5.0 + d["nodes"]))
                st.finish_trial(tid, "completed")
        parts = designed_parts(st, run)
        page = render_html(st, run)
        csv_text = effects_csv(st, run)
    assert len(parts) == 1 and parts[0].tps is not None
    eff = {e.term: e.effect for e in parts[0].tps.effects}
    assert round(eff["nodes"]) == -30 and round(eff["threads"]) == -10
    assert "Designed experiment: part main" in page
    assert "Alias structure" in page and "nodes = wsrep_slave_threads×clients" in page
    assert "ANOVA (type II)" in page and "Pareto chart of tps effects" in page
    assert "fitted tps over the two strongest factors" in page
    assert csv_text is not None
    rows = [ln.split(",") for ln in csv_text.splitlines()]
    assert rows[0][:4] == ["part", "design", "response", "term"]
    nodes = next(r for r in rows if r[2] == "tps" and r[3] == "nodes")
    assert round(float(nodes[4])) == -30 and nodes[9] == "1"


def test_a_full_grid_run_has_no_design_section(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as st:
        run = st.create_run("experiment", name="x")
        st.set_provenance(run, "experiment", {"parts": {"main": {"factors": {"nodes": [1, 3]}}}})
        assert designed_parts(st, run) == [] and effects_csv(st, run) is None
