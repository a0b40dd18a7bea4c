"""The experiment report as one description rendered twice: the Markdown and the HTML carry the same
sections, tables and values, for a grid with faults and saturated clients, a designed experiment and
a search; the HTML is one self-contained page (inline SVG, no script, nothing fetched) and small."""

from __future__ import annotations

import html
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from clusterbench.analysis.document import Report, render_html_report, render_markdown_report
from clusterbench.experiment.design import DesignSpec, expand_design
from clusterbench.experiment.planner import label
from clusterbench.experiment.report import build_experiment_report, write_experiment_report
from clusterbench.experiment.spec import factor_kinds
from clusterbench.store import Store
from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram
from clusterbench.workloads.parse import Sample, Summary
from tests.unit.experiment.test_search_report import fill as fill_search

LEVELS: dict[str, list[Any]] = {"nodes": [1, 3], "threads": [1, 4, 16]}


def _hist(rng: random.Random, center_ms: float) -> LatencyHistogram:
    counts: dict[int, int] = {}
    for _ in range(60):
        v = max(0.002, rng.lognormvariate(math.log(center_ms), 0.3))
        i = round((math.log(v) - DEFAULT_SCHEME.deduct) * DEFAULT_SCHEME.mult)
        counts[i] = counts.get(i, 0) + 1
    return LatencyHistogram(DEFAULT_SCHEME, counts)


def add_trial(st: Store, run: int, seq: int, part: str, point: dict[str, Any], rep: int, tps: float,
              rng: random.Random, seconds: int = 5) -> int:  # fmt: skip
    """A completed trial as the experiment runner stores it: params, per-second samples with their
    histograms, and the all-clients summary with its histogram."""
    lab = label(point.items())
    tid = st.add_trial(run, seq, "oltp_read_write", {
        "key": f"{part}|{lab}|rep{rep}", "index": seq, "part": part, "point_label": lab,
        "point_key": f"{part}|{lab}", "point": point, "rep": rep, "nodes": point.get("nodes", 3),
        "test": "oltp_read_write", "threads": point.get("threads", 4), "clients": 1, "effective_rate": 0,
    })  # fmt: skip
    total = LatencyHistogram(DEFAULT_SCHEME, {})
    events = 0
    for t in range(2, 2 + seconds):
        n = int(tps * rng.uniform(0.9, 1.1))
        h = _hist(rng, 1000.0 / tps * point.get("threads", 4))
        total = total.merge(h)
        events += n
        st.add_sample(tid, Sample(t=float(t), interval=1.0, threads=4, events=n, reads=n * 10, writes=n * 4,
                                  other=n * 2, errors=0, reconnects=0, percentile=95.0,
                                  lat_pct_ms=h.percentile(95), hist=h))  # fmt: skip
    st.add_summary(tid, Summary(duration=float(seconds), threads=4, events=events, reads=events * 10,
                                writes=events * 4, other=events * 2, errors=seconds, reconnects=0,
                                lat_min_ms=total.min_ms() or 0.0, lat_avg_ms=total.mean_ms() or 0.0,
                                lat_max_ms=total.max_ms() or 0.0, percentile=95.0,
                                lat_pct_ms=total.percentile(95), hist=total))  # fmt: skip
    st.finish_trial(tid, "completed")
    return tid


def grid_store(path: Path) -> tuple[Store, int]:
    """nodes 1, 3 x threads 1, 4, 16, two repetitions; a kill-node fault in one trial, a saturated
    client in another, the wall-time account."""
    rng = random.Random(7)
    st = Store.open(path)
    run = st.create_run("experiment", name="g", command_line="clusterbench experiment run g.toml")
    keys = [f"main|{label([('nodes', n), ('threads', t)])}|rep{r}" for n in (1, 3) for t in (1, 4, 16)
            for r in (1, 2)]  # fmt: skip
    st.set_provenance(run, "experiment", {
        "name": "g", "source": "g.toml", "profile": None, "trials": keys,
        "settings": {"repetitions": 2, "baseline": {"nodes": 1}, "cv_warn": 0.1,
                     "description": "a small grid"},
        "parts": {"main": {"factors": LEVELS, "design": {"kind": "full-grid"}}},
    })  # fmt: skip
    st.set_provenance(run, "versions", {"sysbench": "sysbench 1.0.20"})
    seq = 0
    for nodes in (3, 1):
        for threads in LEVELS["threads"]:
            for rep in (1, 2):
                seq += 1
                tps = 400.0 / nodes + 10 * threads + 30 * rep
                tid = add_trial(st, run, seq, "main", {"nodes": nodes, "threads": threads}, rep, tps, rng)
                if seq == 3:
                    st.add_event(run, "fault", {"fault": "kill-node n2", "index": 0, "phase": "start"},
                                 trial_id=tid, t=3.0)  # fmt: skip
                    st.add_event(run, "fault", {"fault": "kill-node n2", "index": 0, "phase": "end"},
                                 trial_id=tid, t=5.0)  # fmt: skip
                    effect = {"fault": "kill-node n2", "start": 3.0, "end": 5.0, "tps_before": 512.5,
                              "tps_recovered_after_s": 2.5, "errors_until_recovered": 17}  # fmt: skip
                    st.add_event(run, "fault_effect", effect, trial_id=tid)
                if seq == 5:
                    st.add_event(run, "client_saturated", {"client": 0, "host": "local", "flags": ["cpu"],
                                 "warnings": ["client 0 on local: sysbench used 1.9 of 2 CPUs"]},
                                 trial_id=tid)  # fmt: skip
    phases = {"measuring": 60.0, "bring-up": 25.0, "warm-up": 15.0}
    st.add_event(run, "wall_time", {"wall": 100.0, "not_measuring_share": 0.4, "phases": phases})
    st.finish_run(run, "completed")
    return st, run


def design_store(path: Path) -> tuple[Store, int]:
    """A resolution III fraction over four factors with a centre point, two repetitions."""
    levels: dict[str, Any] = {
        "nodes": [1, 5],
        "wsrep_slave_threads": [1, 16],
        "threads": [4, 64],
        "clients": [1, 3],
    }
    design = DesignSpec(kind="fractional-factorial", resolution=3, center_points=1)
    res = expand_design(levels, design, factor_kinds(), "parts.main")
    rng = random.Random(3)
    st = Store.open(path)
    run = st.create_run("experiment", name="d")
    st.set_provenance(run, "experiment", {
        "name": "d", "settings": {"repetitions": 2}, "trials": [],
        "parts": {"main": {"factors": levels, "design": design.model_dump(mode="json")}},
    })  # fmt: skip
    seq = 0
    for p in res.points:
        point: dict[str, Any] = dict(p)
        for rep in (1, 2):
            seq += 1
            tps = 200 + 30 * (point["nodes"] == 1) - 10 * (point["threads"] == 64) + rep
            add_trial(st, run, seq, "main", point, rep, tps, rng, seconds=3)
    st.finish_run(run, "completed")
    return st, run


def _md_sections(md: str, level: int = 2) -> list[str]:
    return re.findall(rf"(?m)^{'#' * level} (.+)$", md)


def _html_sections(page: str, level: int = 2) -> list[str]:
    return [html.unescape(t) for t in re.findall(rf"<h{level}>(.*?)</h{level}>", page)]


def assert_same_in_both(rep: Report) -> tuple[str, str]:
    md, page = render_markdown_report(rep), render_html_report(rep)
    assert _md_sections(md) == _html_sections(page) == rep.section_titles
    assert _md_sections(md, 3) == _html_sections(page, 3) == [s.title for s in rep.sections if s.level == 3]
    text = html.unescape(re.sub(r"<wbr>", "", page))
    for lab, value in rep.facts:
        assert f"- {lab}: " in md and value in md and value in text
    for w in rep.warnings:
        assert w in md and w in text
    for sec in rep.sections:
        for p in [*sec.intro, *sec.paragraphs, *sec.warnings, *sec.bullets]:
            assert p in md and p in text, p
        for t in sec.tables:
            assert t.rows, t.header
            for h in t.header:
                assert h in md and h in text, h
            for row in t.rows:
                for c in row:
                    assert c.replace("|", "\\|") in md and c in text, c
    return md, page


def assert_self_contained(page: str) -> None:
    assert "<script" not in page.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?https?:", page, re.I)
    # the only URLs are the SVG namespaces
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) <= {
        "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
    }  # fmt: skip


def test_a_grid_has_the_same_sections_and_values_in_markdown_and_html(tmp_path: Path) -> None:
    st, run = grid_store(tmp_path / "r.db")
    with st:
        rep = build_experiment_report(st, run)
        md, page = assert_same_in_both(rep)
    assert rep.section_titles == ["Experiment", "Part main", "Faults inside trials", "Client saturation",
                                  "Per-second series", "Wall time", "Provenance"]  # fmt: skip
    assert rep.warnings == [
        "in 1 trial(s) of 1 point(s) a load client was the bottleneck (its CPU, or the asked rate was not "
        "reached), so their numbers are the client's limit, not the cluster's; see 'Client saturation'. "
        "Use more client hosts ([clients] hosts) or fewer threads per client."
    ]
    part = rep.sections[1]
    points = part.tables[0]
    assert points.header[:4] == ["nodes", "threads", "n", "tps median"]
    assert points.header[-1] == "tps vs baseline"
    # the baseline (nodes=1, the same threads) of nodes=3 threads=1: (163.3 - 430) / 430 roughly
    row = {(r[0], r[1]): r for r in points.rows}
    assert row[("1", "1")][-1] == "+0.0%" and row[("3", "1")][-1].startswith("-")
    assert row[("1", "1")][2] == "2" and points.header[4] == "tps CI (50% coverage)"
    assert re.fullmatch(r"[\d,.]+ – [\d,.]+", row[("1", "1")][4])
    # tps against each factor, p95 against each factor (with a log variant), the change chart
    figures = [f for f in part.figures if f.svg]
    assert [f.kind for f in figures] == ["", "latency", "", "latency", ""]
    assert all(f.alt_svg and f.alt_svg != f.svg for f in figures if f.kind == "latency")
    assert "main: tps and p95 against nodes" in page and "main: tps and p95 against threads" in page
    faults = rep.sections[2].tables[0]
    assert faults.rows == [
        ["#3", "nodes=3 threads=4", "1", "kill-node n2", "3.0", "5.0", "512.5", "2.5", "17"]
    ]
    series = rep.sections[4]
    assert len(series.tables[0].rows) == 12 and series.tables[0].rows[0][:4] == [
        "#1",
        "nodes=3 threads=1",
        "1",
        "5",
    ]
    assert "Plots: in the HTML report beside this file." in md
    assert 'id="logscale"' in page and page.count('id="logscale"') == 1
    # the fault window is shaded in the per-second panels (the only red fill of that page section)
    series_page = re.search(r'<section id="series">.*?</section>', page, re.S)
    assert series_page is not None and "fill: #d62728; fill-opacity: 0.12" in series_page.group()
    assert_self_contained(page)
    assert len(page) < 300_000, len(page)


def test_a_design_and_a_search_have_the_same_sections_and_values_in_both(tmp_path: Path) -> None:
    st, run = design_store(tmp_path / "d.db")
    with st:
        rep = build_experiment_report(st, run)
        md, page = assert_same_in_both(rep)
    assert "Designed experiment: part main" in rep.section_titles
    assert [s.title for s in rep.sections if s.level == 3] == ["main: tps effects", "main: p95 ms effects"]
    effects = next(s for s in rep.sections if s.key == "design-main-tps").tables[0]
    assert effects.caption == "tps: effects" and "nodes" in [r[0] for r in effects.rows]
    assert "nodes = wsrep_slave_threads×clients" in md and "nodes = wsrep_slave_threads×clients" in page
    assert "main: Pareto chart of tps effects" in page and "fitted tps over the two strongest factors" in page
    assert_self_contained(page)
    with Store.open(tmp_path / "s.db") as st:
        run, _ = fill_search(st)
        rep = build_experiment_report(st, run)
        md, page = assert_same_in_both(rep)
    assert rep.section_titles == ["Experiment", "Part search", "Search", "Per-second series", "Provenance"]
    assert [s.title for s in rep.sections if s.level == 3] == ["Winner", "Explored configurations"]
    assert (
        "best so far against trial number" in page
        and "explored configurations (parallel coordinates)" in page
    )
    assert_self_contained(page)


def test_the_report_files(tmp_path: Path) -> None:
    st, run = grid_store(tmp_path / "r.db")
    with st:
        paths = write_experiment_report(st, run, tmp_path / "out", log_latency=True)
    assert [p.name for p in paths] == [
        f"experiment-{run}.html", f"experiment-{run}.md", f"experiment-{run}-points.csv",
        f"experiment-{run}-trials.csv",
    ]  # fmt: skip
    assert 'id="logscale" checked>' in paths[0].read_text()
    assert len(paths[2].read_text().splitlines()) == 7 and len(paths[3].read_text().splitlines()) == 13


@pytest.mark.parametrize("log", [False, True])
def test_small_multiples_put_every_panel_on_one_scale(log: bool) -> None:
    from clusterbench.analysis import multiples, plots

    panels = [
        plots.Multiple(f"p{i}", [plots.Trace("rep 1", [1, 2, 3], [10.0 * (i + 1), None, 5.0])],
                       [plots.Window("kill", 1.5, 2.5)] if i == 0 else [])
        for i in range(8)
    ]  # fmt: skip
    lin, lg = multiples.multiples_latency_svgs(panels, title="p95", ylabel="ms")
    svg = lg if log else lin
    assert svg.count("<text") >= 8 and all(f">p{i}<" in svg for i in range(8))
    assert len(svg) < 20_000, len(svg)
    assert (lg != lin) and ("log scale" in lg)


@pytest.mark.parametrize(
    "bad",
    ['<script src="plotly.min.js"></script>', "<script>Plotly.react()</script>",
     '<img src="https://cdn.example/x.png">', "<style>@import url(//fonts.example/css);</style>"],
)  # fmt: skip
def test_the_self_contained_check_can_fail(bad: str) -> None:
    with pytest.raises(AssertionError):
        assert_self_contained(f"<html><body>{bad}</body></html>")
