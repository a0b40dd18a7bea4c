"""The report as data, rendered twice: Markdown and HTML carry the same sections and values; a failed
load is summarized from what it measured; the servers' variables are shown as run, with every
difference flagged; a baseline run is compared and drawn beside."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from clusterbench.analysis.compare import compare_runs
from clusterbench.analysis.document import (
    build_report,
    render_html,
    render_html_report,
    render_markdown,
    render_markdown_report,
    write_report,
)
from clusterbench.analysis.report import summary_rows
from clusterbench.analysis.variables import compare, expected_from_topology, normalize
from clusterbench.store import Store
from clusterbench.workloads.parse import parse_output

DATA = Path(__file__).parents[1] / "workloads" / "data"
IGNORE = [1213, 1020, 1205, 2013]


def _vars(slave_threads: str = "2") -> dict[str, str]:
    return {
        "version": "10.11.6-MariaDB-0+deb12u1",
        "wsrep_slave_threads": slave_threads,
        "innodb_buffer_pool_size": "67108864",
        "hostname": "x",
        "wsrep_node_name": "n?",
        "wsrep_provider_options": "base_host = 198.18.40.11; evs.suspect_timeout = PT5S; gcache.size = 64M",
    }


def _suite(st: Store, *, fail_second: bool, n3_threads: str = "8") -> int:
    run = st.create_run("suite", name="suite", command_line="clusterbench suite --duration 2")
    settings = {"wsrep_slave_threads": 2, "innodb_buffer_pool_size": "64M", "evs_suspect_timeout": 5.0}
    st.set_provenance(run, "topology", {"mariadb": {**settings, "gcache_size": "64M"}})
    st.set_provenance(run, "versions", {"sysbench": "sysbench 1.0.20"})
    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), threads=2)
    t1 = st.add_trial(run, 1, "oltp_point_select", {"ignore_errors": IGNORE})
    for s in p.samples:
        st.add_sample(t1, s)
    assert p.summary is not None
    st.add_summary(t1, p.summary)
    st.finish_trial(t1, "completed")
    snap = {"n1": _vars(), "n2": _vars(), "n3": _vars(n3_threads)}
    st.set_provenance(run, "server_variables@start", snap, trial_id=t1)
    st.set_provenance(run, "server_variables@end", snap, trial_id=t1)
    out = (DATA / "oltp_read_write_warmup1.out").read_text().splitlines()
    if fail_second:  # it died before its summary
        out = [ln for ln in out if '"type":"summary"' not in ln]
    a = parse_output(out, warmup=1, threads=2)
    t2 = st.add_trial(run, 2, "oltp_read_write", {"ignore_errors": IGNORE})
    for s in a.samples:
        st.add_sample(t2, s)
    if fail_second:
        st.add_event(run, "trial_failed", {"reason": "sysbench exited 1: FATAL: error 1062"}, trial_id=t2)
        st.finish_trial(t2, "failed")
    else:
        assert a.summary is not None
        st.add_summary(t2, a.summary)
        st.finish_trial(t2, "completed")
    st.finish_run(run, "failed" if fail_second else "completed")
    return run


@pytest.fixture
def st(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "r.sqlite")


def _md_sections(md: str) -> list[str]:
    return re.findall(r"(?m)^## (.+)$", md)


def _html_sections(page: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r"<h2>(.*?)</h2>", page)]


def test_markdown_and_html_have_the_same_sections_and_values(st: Store) -> None:
    run = _suite(st, fail_second=True)
    rep = build_report(st, run)
    md, page = render_markdown_report(rep), render_html_report(rep)
    assert _md_sections(md) == _html_sections(page) == rep.section_titles
    assert rep.section_titles == ["Overview", "Summary", "Per-second series", "Latency histograms",
                                  "Server variables as run", "Provenance", "Events"]  # fmt: skip
    text = html.unescape(page)
    for label, value in rep.facts:  # command line, end time, ...
        assert f"- {label}: " in md and value in md and value in text
    for w in rep.warnings:
        assert w in md and w in text
    for sec in rep.sections:
        for p in [*sec.intro, *sec.paragraphs, *sec.warnings, *sec.bullets]:
            assert p in md and p in text, p
        for t in sec.tables:
            for row in t.rows:
                for c in row:
                    assert c in md and c in text, c


def test_a_failed_load_is_summarized_from_what_it_measured(st: Store) -> None:
    run = _suite(st, fail_second=True)
    rows = summary_rows(st, run)
    assert rows[1].from_samples and rows[1].status == "failed" and rows[1].seconds == 2
    # its events over its measured time: the first report's interval starts at the checkpoint
    seconds = (0.998623892 + 1.000462321 - 1.000146813) + 1.000028351
    assert rows[1].tps == pytest.approx((983 + 967) / seconds)
    assert rows[1].p95 is not None and rows[1].p99 is not None and rows[1].p95 <= rows[1].p99
    md = render_markdown(st, run)
    assert f"| 2 | oltp_read_write (failed, 2 s measured) | 2 | {1950 / seconds:.2f} |" in md
    assert (
        "> **Warning:** trial 2 (oltp_read_write) failed: sysbench exited 1: FATAL: error 1062; its row adds "
        "up the 2 second(s) measured before it stopped."
    ) in md


def test_server_variables_as_run_flag_a_node_changed_by_hand(st: Store) -> None:
    run = _suite(st, fail_second=False)
    md = render_markdown(st, run)
    assert "| wsrep_slave_threads | 2 | 2 | 2 | **8** (!) |" in md
    assert "- **(!)** wsrep_slave_threads: n3 not as the topology's 2; differs between nodes" in md
    assert "> **Warning:** the servers did not all run as the topology says: wsrep_slave_threads" in md
    # sizes and provider options compared as the server prints them: no finding
    assert "| innodb_buffer_pool_size | 64M | 67108864 | 67108864 | 67108864 |" in md
    assert "| wsrep_provider_options:evs.suspect_timeout | 5.0 | PT5S | PT5S | PT5S |" in md
    assert "base_host" not in md and "hostname" not in md  # per-node by design
    page = render_html(st, run)
    assert '<td class="l flag">8 <b>(!)</b></td>' in page


def test_a_value_changed_during_the_run_and_a_quiet_control(st: Store) -> None:
    start = {"n1": _vars(), "n2": _vars()}
    end = {"n1": _vars(), "n2": _vars("8")}
    rep = compare([("trial 1 start", start, {}), ("trial 1 end", end, {"n3": "gone"})],
                  expected_from_topology({"mariadb": {"wsrep_slave_threads": 2}}))  # fmt: skip
    row = next(r for r in rep.rows if r.name == "wsrep_slave_threads")
    assert row.changed == {"n2"} and row.differs_from_topology == {"n2"} and row.odd_nodes == {"n1", "n2"}
    assert rep.unanswered == {"n3": "trial 1 end"}
    from clusterbench.analysis.variables import cell

    assert cell(row, "n2") == "2 → 8 (trial 1 end)"
    # negative control: all as asked, nothing flagged
    quiet = compare(
        [("trial 1 start", start, {})], expected_from_topology({"mariadb": {"wsrep_slave_threads": 2}})
    )
    assert quiet.findings == []


def test_normalize() -> None:
    assert normalize("64M") == normalize("67108864") == "67108864"
    assert normalize("PT5S") == normalize(5.0) == "5"
    assert normalize(True) == normalize("ON") == "ON"
    assert normalize("PT1.5S") == "1.5"


def test_units_errors_and_bulk_insert_are_explained(st: Store) -> None:
    run = _suite(st, fail_second=False)
    tid = st.add_trial(run, 3, "bulk_insert", {"ignore_errors": IGNORE})
    st.finish_trial(tid, "completed")
    md = render_markdown(st, run)
    assert "1213 deadlock (through Galera mostly a certification conflict" in md
    assert "2013 lost connection during a query" in md
    assert "bulk_insert: one event is one row added to a multi-row INSERT" in md
    assert "below the 0.001 ms floor of sysbench's latency histogram" in md


def test_baseline_comparison_and_overlay(st: Store, tmp_path: Path) -> None:
    a = _suite(st, fail_second=False, n3_threads="2")
    b = _suite(st, fail_second=False, n3_threads="2")
    cmp = compare_runs(st, a, b)
    assert [d.test for d in cmp.rows] == ["oltp_point_select", "oltp_read_write"]
    assert all(d.tps_change == 0 and d.verdict == "no significant difference" for d in cmp.rows)
    md, page = write_report(st, b, tmp_path, baseline=a)
    assert md.name == f"report-{b}-vs-{a}.md"
    text = md.read_text()
    assert f"## Compared with run {a}" in text
    assert "| oltp_point_select | 26,076.67 | 26,076.67 | +0.0% |" in text
    assert f"run {a}" in page.read_text() and page.read_text().count("stroke-dasharray") > 0


def test_log_latency_is_the_page_switch(st: Store) -> None:
    run = _suite(st, fail_second=False)
    assert 'id="logscale">' in render_html(st, run)
    assert 'id="logscale" checked>' in render_html(st, run, log_latency=True)


def test_verdicts_are_coloured_in_html_and_plain_in_markdown(st: Store) -> None:
    run = _suite(st, fail_second=False, n3_threads="2")
    st.add_verdict(run, {"checker": "ledger", "result": "FAIL", "summary": "2 acknowledged inserts lost"})
    st.add_verdict(run, {"checker": "split-brain", "result": "PASS", "summary": "one Primary component"})
    assert '<td class="l fail">FAIL</td>' in render_html(st, run)
    assert "| ledger | FAIL | 2 acknowledged inserts lost |" in render_markdown(st, run)
