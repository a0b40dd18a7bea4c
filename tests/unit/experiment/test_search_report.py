"""A search run as the runner stores it (trials, search_step and search_result events), read back:
the steps for resuming, and the report's search sections."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from clusterbench.experiment.report import render_html
from clusterbench.experiment.search import Optimizer, SearchSpec, setup
from clusterbench.experiment.search_report import nearest_grid, search_data
from clusterbench.experiment.search_run import stored_steps
from clusterbench.store import Store
from clusterbench.workloads.parse import Summary

KNOBS: dict[str, Any] = {"nodes": [1, 5], "threads": {"levels": [2, 4, 8, 16, 32, 64]}}


def _summary(tps: float) -> Summary:
    return Summary(
        duration=10.0,
        threads=1,
        events=int(tps * 10),
        reads=0,
        writes=0,
        other=0,
        errors=0,
        reconnects=0,
        lat_min_ms=1.0,
        lat_avg_ms=2.0,
        lat_max_ms=3.0,
        percentile=95,
        lat_pct_ms=4.0,
    )


def fill(st: Store) -> tuple[int, Optimizer]:
    s = setup(SearchSpec(knobs=KNOBS, budget=16, seed=2))
    run = st.create_run("experiment", name="s")
    st.set_provenance(
        run,
        "experiment",
        {
            "name": "s",
            "settings": {},
            "parts": {},
            "trials": [],
            "search": {
                **s.spec.model_dump(mode="json"),
                "knob_grid": {k.name: k.grid() for k in s.knobs},
                "knob_order": [k.name for k in s.knobs],
            },
        },
    )
    opt = Optimizer(s)
    rng = random.Random(1)
    counts: dict[str, int] = {}
    while (step := opt.next()) is not None:
        tps = 300.0 - 20 * (int(step.config["nodes"]) - 3) ** 2 - 3 * abs(int(step.config["threads"]) - 16)
        tps += rng.gauss(0, 3)
        lab = s.label(step.config)
        counts[lab] = counts.get(lab, 0) + 1
        tid = st.add_trial(
            run,
            step.number,
            "oltp_read_write",
            {
                "key": f"search|{lab}|rep{counts[lab]}",
                "index": step.number,
                "part": "search",
                "point_label": lab,
                "point_key": f"search|{lab}",
                "point": step.config,
                "rep": counts[lab],
                "search_phase": step.phase,
            },
        )
        st.add_summary(tid, _summary(tps))
        st.finish_trial(tid, "completed")
        rec = opt.record(step, {"tps": tps, "p95": 4.0})
        st.add_event(
            run,
            "search_step",
            {
                "number": rec.number,
                "phase": rec.phase,
                "config": rec.label,
                "score": rec.score,
                "incumbent": rec.incumbent,
                "incumbent_score": rec.incumbent_score,
            },
        )
    w = opt.winner()
    assert w is not None
    st.add_event(
        run,
        "search_result",
        {
            "trials": opt.used,
            "stopped_by": opt.stopped_by,
            "winner": {
                "config": w.config,
                "label": w.label,
                "median": w.score.median,
                "low": w.score.low,
                "high": w.score.high,
                "coverage": w.score.coverage,
                "n": w.n,
                "found_at": w.found_at,
                "confirmed": w.confirmed,
                "runner_up": w.runner_up,
                "p_vs_runner_up": w.p_vs_runner_up,
            },
        },
    )
    return run, opt


def test_stored_steps_give_back_what_the_optimizer_recorded(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as st:
        run, opt = fill(st)
        steps = stored_steps(st, run)
    assert [s.config for s in steps] == [r.config for r in opt.records]
    assert [s.phase for s in steps] == [r.phase for r in opt.records]
    assert all(
        s.values is not None and abs(s.values["tps"] - (r.score or 0)) < 0.2
        for s, r in zip(steps, opt.records, strict=True)
    )


def test_report_has_progress_explored_points_and_the_winner_against_the_grid(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as st:
        run, opt = fill(st)
        d = search_data(st, run)
        page = render_html(st, run)
    assert d is not None and d["metric"] == "tps" and len(d["steps"]) == opt.used
    w = opt.winner()
    assert w is not None
    assert "<h2>Search</h2>" in page and "<h3>Winner</h3>" in page
    assert f"{w.label}: tps median {w.score.median:,.1f}" in page
    assert "best so far" in page and "explored configurations" in page
    assert "The winner and the nearest grid configurations" in page
    assert "measured nearby" in page and "<script" not in page


def test_nearest_grid_snaps_and_lists_the_neighbours() -> None:
    grid = {"nodes": [1, 2, 3, 4, 5], "threads": [2, 4, 8, 16, 32, 64]}
    got = nearest_grid({"nodes": 3, "threads": 20}, grid)
    assert got[0] == {"nodes": 3, "threads": 16}
    assert {"nodes": 2, "threads": 16} in got and {"nodes": 3, "threads": 32} in got and len(got) == 5
