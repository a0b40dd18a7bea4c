"""Telemetry in the run report, the export and the experiment's per-point verdict (a real store)."""

from __future__ import annotations

from pathlib import Path

from clusterbench.analysis.document import build_report, render_html, render_markdown
from clusterbench.store import Store
from clusterbench.telemetry.export import telemetry_csv
from clusterbench.telemetry.report import point_bottleneck, point_tier
from clusterbench.telemetry.verdict import candidates, decide
from clusterbench.workloads.parse import parse_output

DATA = Path(__file__).parents[1] / "workloads" / "data"


def stored(tmp_path: Path) -> tuple[Store, int, int]:
    st = Store.open(tmp_path / "r.db")
    run = st.create_run("run", name="oltp_point_select")
    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), threads=2)
    t = st.add_trial(run, 1, "oltp_point_select", {})
    for s in p.samples:
        st.add_sample(t, s)
    assert p.summary is not None
    st.add_summary(t, p.summary)
    st.finish_trial(t, "completed")
    rows = []
    for sec in range(-1, 4):
        at = (float(sec), 1000.0 + sec)
        for n, util in (("n1", 0.97), ("n2", 0.4)):
            figures = {"net_util": util, "net_tx_mbit": 9.7, "net_limit_mbit": 10.0, "cpu_util": 0.3,
                       "cpu_cores": 0.6, "recv_queue": 2.0, "flow_control_paused": 0.1}  # fmt: skip
            rows += [(*at, n, m, v) for m, v in figures.items()]
        rows += [
            (*at, "host", "host_cpu_busy", 0.5),
            (*at, "lb1/n1", "sessions", 2.0),
            (*at, "lb1/n1", "up", 1.0),
        ]
    st.add_telemetry(t, rows)
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for tt, _, src, m, v in rows:
        series.setdefault((src, m), []).append((tt, v))
    st.set_bottleneck(t, decide(candidates(series, 0, 2, [])).to_json())
    return st, run, t


def test_the_report_has_the_verdict_tables_and_plots(tmp_path: Path) -> None:
    st, run, _ = stored(tmp_path)
    rep = build_report(st, run)
    titles = rep.section_titles
    assert titles.index("Bottlenecks") == titles.index("Summary") + 1
    assert titles.index("Server telemetry") == titles.index("Per-second series") + 1
    assert titles.index("Latency histograms") == titles.index("Server telemetry") + 1
    md = render_markdown(st, run)
    assert "| 1 | oltp_point_select | link n1 97% | link of n1 was nearest its limit: 97%" in md
    assert "| n1 | 0.60 | — | 30 |" in md  # CPU cores, no limit figure stored, % of limit
    assert "| lb1/n1 | sessions mean 2.0, max 2 | UP throughout; connection errors/s — |" in md
    page = render_html(st, run)
    # tps, latency (linear and log), then CPU, link, flow control and replication lag on the same
    # axis, and the latency histogram
    assert page.count("<svg") == 8
    assert "link, % of its limit" in page and "replication paused by flow control" in page
    assert "replication lag: transactions received, waiting to be applied" in page


def test_telemetry_export_and_an_experiment_point(tmp_path: Path) -> None:
    st, run, t = stored(tmp_path)
    lines = telemetry_csv(st, run).splitlines()
    assert lines[0] == "run_id,trial_seq,workload,t_s,wall_s,source,metric,unit,value,format_version"
    assert "1,1,oltp_point_select,0.0,1000.0,n1,net_util,fraction,0.97,2" in lines
    assert point_bottleneck(st, [t, t]) == "link n1 97% (2/2)"
    assert point_bottleneck(st, []) == "—"
    assert point_tier(st, [t, t]) == "database node" and point_tier(st, []) == "—"
    st.set_bottleneck(t, {"resource": "cpu", "source": "w2", "utilization": 0.97, "summary": "x"})
    assert point_tier(st, [t]) == "web node"
    st.set_bottleneck(t, {"resource": "none", "source": "", "utilization": None, "summary": "x"})
    assert point_tier(st, [t]) == "—"
