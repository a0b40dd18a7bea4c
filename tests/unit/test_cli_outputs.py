"""What people read and script after the numbers exist (issue 24): verdicts in every output."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from clusterbench.cli.main import main
from clusterbench.store import Store
from clusterbench.workloads.parse import parse_output

DATA = Path(__file__).parent / "workloads" / "data"

PATH = {"process": "balancer", "first_error_after": 0.4, "unavailable": 23.0, "errors": 230, "ops": 600,
        "errors_by_code": {"2013": 12, "none": 218}, "max_latency": 5.1}  # fmt: skip
AVAILABILITY = {
    "checker": "availability", "result": "FAIL", "summary": "writes stopped for 23.0 s (budget 10 s)",
    "evidence": {"faults": [{"fault": {"name": "kill-node 2"}, "paths": [PATH],
                             "tps_recovered_after": 24.5}]},
    "documented_limitation": False,
}  # fmt: skip
LEDGER = {"checker": "ledger", "result": "PASS", "summary": "1200 acknowledged inserts, none lost",
          "evidence": {"acknowledged": 1200, "lost": []}}  # fmt: skip


def make_drill(path: Path, *, engine: str = "galera") -> int:
    """A stored `fault` run of one trial: its load and two verdicts, one PASS and one FAIL."""
    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), threads=2)
    with Store.open(path) as s:
        run = s.create_run("fault", name="kill-node", command_line="clusterbench fault kill-node --node 2")
        s.set_provenance(run, "topology", {"cluster": {"name": "lab"}, "engine": {"kind": engine}})
        trial = s.add_trial(run, 1, "oltp_point_select", {"threads": 2})
        for sample in p.samples:
            s.add_sample(trial, sample)
        assert p.summary is not None
        s.add_summary(trial, p.summary)
        s.add_verdict(run, LEDGER, trial_id=trial)
        s.add_verdict(run, AVAILABILITY, trial_id=trial)
        s.finish_trial(trial, "completed")
        s.finish_run(run, "completed")
    return run


def out_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_show_json_and_export_json_of_a_drill_carry_its_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    run = make_drill(db)
    tps = 52256 / 2.0039366780000001
    summary = parse_output((DATA / "oltp_point_select.out").read_text().splitlines()).summary
    assert summary is not None and summary.hist is not None
    p95 = summary.hist.percentile(95)
    show = ["results", "show", str(run), "--json"]
    export = ["results", "export", str(run), "--format", "json"]
    for argv in (show, export):
        data = json.loads(out_of(capsys, *argv, "--results", str(db)))
        assert data["format_version"] == 2
        v = data["verdicts"]
        assert (v["result"], v["passed"], v["total"]) == ("FAIL", 1, 2)
        assert [(c["trial"], c["checker"], c["result"]) for c in v["checks"]] == [
            (1, "ledger", "PASS"), (1, "availability", "FAIL")
        ]  # fmt: skip
        assert v["checks"][1]["evidence"] == AVAILABILITY["evidence"]
        head = data["run"] if argv[1] == "show" else data
        assert (head["engine"], head["cluster"], head["kind"]) == ("galera", "lab", "fault")
        assert head["verdict"] == "FAIL"
        assert head["outcome"] == f"{tps:,.0f} tps, p95 {p95:.3g} ms, 1/2 PASS, 1 FAIL"
    exported = json.loads(out_of(capsys, *export, "--results", str(db)))
    assert [v["checker"] for v in exported["trials"][0]["verdicts"]] == ["ledger", "availability"]


def test_show_prints_the_outcome_and_the_verdicts_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    run = make_drill(db, engine="group_replication")
    out = out_of(capsys, "results", "show", str(run), "--results", str(db))
    lines = out.splitlines()
    assert lines[2].strip().startswith("MySQL Group Replication, cluster lab: ")
    assert lines[3].strip() == "environment: one machine (network namespaces)"
    assert "verdicts: FAIL (1/2 PASS, 1 FAIL)" in out
    assert out.index("writes stopped for 23.0 s") < out.index("summary: throughput")
    # and the evidence people ask for first: the outage each entry point saw
    row = next(ln.split() for ln in lines if ln.strip().startswith("kill-node 2"))
    assert row[:6] == ["kill-node", "2", "balancer", "0.40", "23.00", "230/600"]
    assert row[-2:] == ["5.10", "24.50"] and "2013:12," in row


def make_bench(s: Store, *, threads: int, tps: float, kind: str = "run", engine: str = "galera") -> int:
    """A stored run of 10 one-second samples at about `tps` (±1 %), with its load's provenance."""
    from clusterbench.workloads.parse import Sample, Summary

    run = s.create_run(kind, name="rw", command_line="clusterbench run -w oltp_read_write")
    s.set_provenance(run, "topology", {"cluster": {"name": "lab", "nodes": 3}, "engine": {"kind": engine}})
    s.set_provenance(run, "workload", {"kind": kind, "tests": ["oltp_read_write"], "clients": 1,
                                       "options": {"threads": threads, "time": 10, "tables": 4}})  # fmt: skip
    t = s.add_trial(run, 1, "oltp_read_write", {"threads": threads})
    events = [round(tps * (1 + (0.01 if i % 2 else -0.01))) for i in range(10)]
    for i, e in enumerate(events, 1):
        s.add_sample(t, Sample(t=float(i), interval=1.0, threads=threads, events=e, reads=0, writes=0,
                               other=0, errors=0, reconnects=0, percentile=95, lat_pct_ms=None))  # fmt: skip
    s.add_summary(t, Summary(duration=10.0, threads=threads, events=sum(events), reads=0, writes=0, other=0,
                             errors=0, reconnects=0, lat_min_ms=1.0, lat_avg_ms=2.0, lat_max_ms=3.0,
                             percentile=95, lat_pct_ms=2.5))  # fmt: skip
    s.finish_trial(t, "completed")
    s.finish_run(run, "completed")
    return run


def test_compare_lists_differences_and_refuses_another_workload_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    with Store.open(db) as s:
        a = make_bench(s, threads=4, tps=1000)
        b = make_bench(s, threads=2, tps=540, engine="group_replication")
    assert main(["compare", str(a), str(b), "--results", str(db)]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"run {b} (run, group_replication, cluster lab) against run {a} (run, galera, cluster lab): "
        "differences",
        "  engine: galera → group_replication",
        "  load.threads: 4 → 2 (defines the workload)",
    ]
    assert err == (
        f"error: runs {a} and {b} differ in what defines the workload (load.threads: 4 → 2), so their "
        "numbers are not comparable; give --force to compare them anyway\n"
    )
    data = json.loads(out_of(capsys, "compare", str(a), str(b), "--force", "--json", "--results", str(db)))
    assert data["differences"] == [
        {"field": "engine", "a": "galera", "b": "group_replication", "defines_workload": False},
        {"field": "load.threads", "a": 4, "b": 2, "defines_workload": True},
    ]
    [row] = data["tests"]
    assert row["verdict"] == "slower" and row["tps_change"] == pytest.approx(5400 / 10000 - 1)


def test_fail_on_regression_gates_ci(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    with Store.open(db) as s:
        a = make_bench(s, threads=4, tps=1000)
        b = make_bench(s, threads=4, tps=900)  # 10 % slower, significantly
    base = ["compare", str(a), str(b), "--results", str(db)]
    assert main([*base, "--fail-on-regression", "15"]) == 0
    capsys.readouterr()
    assert main([*base, "--fail-on-regression", "5"]) == 1
    out, err = capsys.readouterr()
    assert f"run {b} (run, galera, cluster lab) against run {a} (run, galera, cluster lab): no diff" in out
    assert err == "error: significant regression beyond 5 %: oltp_read_write -10.0%\n"
    assert main(base) == 0  # without the gate a regression is a finding, not a failure


def test_compare_numbers_are_never_cut_at_80_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterbench.cli import console

    db = tmp_path / "r.db"
    with Store.open(db) as s:
        a = make_bench(s, threads=4, tps=171_803)
        b = make_bench(s, threads=4, tps=92_774)
    monkeypatch.setattr(console.out, "_width", 80)
    assert main(["compare", str(a), str(b), "--results", str(db)]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and "-46.0%" in out and "171,803.00" in out


def test_show_numbers_are_never_cut_at_80_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterbench.cli import console

    db = tmp_path / "r.db"
    with Store.open(db) as s:
        run = make_bench(s, threads=4, tps=171_803)
    monkeypatch.setattr(console.out, "_width", 80)
    out = out_of(capsys, "results", "show", str(run), "--results", str(db))
    assert "171,803.00" in out and "…" not in out


def test_a_group_replication_run_records_mysql_not_the_hosts_mariadb(tmp_path: Path) -> None:
    from clusterbench.trial.recorder import Recorder

    with Store.open(tmp_path / "r.db") as s:
        run = s.create_run("run", name="gr")
        rec = Recorder(s)
        host = {"clusterbench": "0.1.0", "mariadb": "mariadbd  Ver 10.11.19-MariaDB"}
        rec.run_facts(run, {"versions": host})
        rec.merge_versions(run, {"mysql_server": "9.7.4-2"})
        assert s.provenance(run)["versions"] == {"clusterbench": "0.1.0", "mysql_server": "9.7.4-2"}


def promtool(text: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("promtool")
    if exe is None:
        pytest.skip("promtool is missing: `make setup-test` installs Debian's prometheus package")
    return subprocess.run([exe, "check", "metrics"], input=text, capture_output=True, text=True, check=False)


def test_openmetrics_export_passes_promtool_and_holds_the_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    run = make_drill(db)
    with Store.open(db) as s:
        [tr] = s.trials(run)
        s.add_telemetry(tr.id, [(1.0, 1e9, "n1", "cpu_cores", 0.5), (2.0, 1e9 + 1, "n1", "cpu_cores", 0.75)])
        s.set_bottleneck(tr.id, {"resource": "cpu of n1", "utilization": 0.97, "summary": "cpu of n1 97 %"})
    text = out_of(capsys, "results", "export", str(run), "--format", "openmetrics", "--results", str(db))
    r = promtool(text)
    assert r.returncode == 0, r.stdout + r.stderr
    assert text.endswith("# EOF\n")
    lines = text.splitlines()
    lb = f'run="{run}",trial="1",workload="oltp_point_select"'
    assert f"clusterbench_transactions_per_second{{{lb}}} {52256 / 2.0039366780000001!r}" in lines
    assert f"clusterbench_latency_seconds_count{{{lb}}} 52256.0" in lines
    assert f'clusterbench_check_result{{{lb},checker="availability",result="FAIL"}} 1.0' in lines
    assert f'clusterbench_check_result{{{lb},checker="availability",result="PASS"}} 0.0' in lines
    assert f'clusterbench_run_verdict{{run="{run}",result="FAIL"}} 1.0' in lines
    assert f'clusterbench_telemetry_value{{{lb},source="n1",metric="cpu_cores",unit="CPUs"}} 0.75' in lines
    assert f'clusterbench_bottleneck_utilization_ratio{{{lb},resource="cpu of n1"}} 0.97' in lines
    assert "# UNIT clusterbench_latency_seconds seconds" in lines


def test_live_endpoint_serves_this_processes_runs_to_promtool(tmp_path: Path) -> None:
    """Scraped in-process while 'the run' is written: only runs this process created since the
    endpoint started, on 127.0.0.1 only."""
    import urllib.error
    import urllib.request

    from clusterbench.telemetry.endpoint import HOST, MetricsEndpoint

    db = tmp_path / "r.db"
    old = make_drill(db)  # before the endpoint: not this command's run
    with MetricsEndpoint(db, 0) as ep:
        url = f"http://{HOST}:{ep.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as resp:
            first = resp.read().decode()
            assert resp.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
        assert first == "# EOF\n"
        with Store.open(db) as s:
            run = make_bench(s, threads=4, tps=1000)
        assert run != old
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://{HOST}:{ep.port}/other", timeout=5)
    assert f'run="{run}"' in text and f'run="{old}"' not in text
    lb = f'run="{run}",trial="1",workload="oltp_read_write"'
    assert f"clusterbench_last_second_transactions_per_second{{{lb}}}" in text
    r = promtool(text)
    assert r.returncode == 0, r.stdout + r.stderr


def test_metrics_port_in_use_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        rc = main(["scenario", str(Path(__file__).parents[2] / "examples" / "scenarios" / "kill-node.toml"),
                   "--metrics-port", str(port), "--results", str(tmp_path / "r.db")])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"error: --metrics-port {port}: cannot listen on 127.0.0.1:{port} (")
    assert err.endswith("); choose another port\n")


def test_junit_has_a_case_per_verdict_fail_is_failure_unknown_is_error(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    from clusterbench.cli.common import junit_report

    db = tmp_path / "r.db"
    make_drill(db)  # before: not this command's
    out = tmp_path / "junit.xml"
    with junit_report(out, db):
        run = make_drill(db)
        with Store.open(db) as s:
            [tr] = s.trials(run)
            s.add_verdict(run, {"checker": "trial", "result": "UNKNOWN", "summary": "the load died",
                                "evidence": {"load": "failed"}}, trial_id=tr.id)  # fmt: skip
    root = ET.fromstring(out.read_text())
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    [suite] = root.findall("testsuite")
    assert suite.get("name") == f"run {run}: fault kill-node"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["ledger", "availability", "trial"]
    assert cases["ledger"].find("failure") is None and cases["ledger"].find("error") is None
    fail = cases["availability"].find("failure")
    assert fail is not None and fail.get("message") == AVAILABILITY["summary"]
    err = cases["trial"].find("error")
    assert err is not None and err.get("type") == "UNKNOWN"
    assert json.loads(err.text or "") == {"load": "failed"}
    assert cases["trial"].get("classname") == "fault.kill-node.trial 1 (oltp_point_select)"


def test_junit_into_a_missing_directory_is_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scen = Path(__file__).parents[2] / "examples" / "scenarios" / "kill-node.toml"
    bad = tmp_path / "no" / "j.xml"
    rc = main(["scenario", str(scen), "--junit", str(bad), "--results", str(tmp_path / "r.db")])
    assert (rc, capsys.readouterr().err) == (
        2, f"error: --junit {bad}: no directory {bad.parent}; give a file in one that exists\n"
    )


@pytest.mark.parametrize(("argv", "said"), [
    (["results", "export", "1", "-o", "a.csv", "--output", "b.csv"], "-o and --output are the same option"),
    (["results", "export", "1", "--format", "csv", "--format=summary"], "--format is given twice"),
    (["plan", "x.toml", "-p", "quick", "-p", "full"], "-p is given twice"),
    (["status", "-n", "a", "-n", "b"], "-n is given twice"),
    (["compare", "1", "2", "--test", "welch", "--test", "mwu"], "--test is given twice"),
])  # fmt: skip
def test_an_option_given_twice_is_refused(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == f"error: {said}; give it once\n"


def test_options_that_collect_may_repeat_and_the_name_may_go_before_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from clusterbench.cli.main import repeated_option

    assert repeated_option(["results", "list", "--tag", "a=1", "--tag", "b=2"]) is None
    assert repeated_option(["-n", "a", "status", "-n", "b"]) is None  # the command's own wins
    assert repeated_option(["results", "export", "1", "--", "-o", "-o"]) is None


def test_a_failed_trial_line_shows_no_markup(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a terminal (a CI log, a pipe): the line of a trial whose load failed is plain text."""
    from clusterbench.cli.live import LiveView
    from clusterbench.workloads.results import RunResult

    view = LiveView(clients=1, per_sample_lines=False)
    res = RunResult(test="oltp_read_write", clients=[], samples=[], summary=None, exit_code=1,
                    stderr_tail=["FATAL: [mysql] error 1146 [x]"], killed=False)  # fmt: skip
    with view:
        view.trial_finished(1, "oltp_read_write", res, "failed")
    out = capsys.readouterr().out
    assert "[red]" not in out and "[/]" not in out
    assert out.startswith("   1 oltp_read_write        failed: ")


def test_show_completion_prints_the_shell_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--show-completion", "zsh"]) == 0
    assert capsys.readouterr().out.startswith("#compdef clusterbench\n")
    assert main(["--show-completion", "fish"]) == 0
    assert "complete --command clusterbench" in capsys.readouterr().out
    assert main(["--show-completion", "tcsh"]) == 2
    assert capsys.readouterr().err == (
        "error: --show-completion tcsh: no such shell; use one of bash, zsh, fish, powershell, pwsh\n"
    )


def test_up_takes_a_name_as_every_command_does(capsys: pytest.CaptureFixture[str]) -> None:
    from clusterbench.cli.operate import named
    from clusterbench.spec.topology import load_topology

    vip = Path(__file__).parents[2] / "examples" / "topologies" / "3-nodes-vip.toml"
    topo = named(load_topology(vip), "lab7")
    assert (topo.name, topo.cluster.nodes, topo.balancer.count) == ("lab7", 3, 2)
    assert main(["up", "-n", "Bad_Name"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --name: cluster.name: 'Bad_Name' must be 1-8 characters")
    assert err.count("\n") == 1


def test_suite_help_says_which_workloads_it_takes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["suite", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "sysbench tests, tpcc, access_* or mysqlslap" in out


def test_runs_are_first_class_list_filters_baseline_and_delete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    drill = make_drill(db, engine="group_replication")
    with Store.open(db) as s:
        bench = make_bench(s, threads=4, tps=900)
        s.add_tags(bench, ["env=lab", "nightly"])
        s.conn.execute("UPDATE runs SET started_at = '2020-01-01T00:00:00.000+00:00' WHERE id = ?", (drill,))
    r = ["--results", str(db)]

    def ids(*argv: str) -> list[int]:
        return [x["id"] for x in json.loads(out_of(capsys, "results", "list", "--json", *argv, *r))]

    assert ids() == [drill, bench]
    assert ids("--engine", "group_replication") == [drill] and ids("--engine", "galera") == [bench]
    assert ids("--kind", "fault") == [drill]
    assert ids("--tag", "env=lab") == [bench] and ids("--tag", "env") == [bench]
    assert ids("--tag", "env=prod") == [] and ids("--tag", "env", "--tag", "nightly") == [bench]
    assert ids("--since", "2021-01-01") == [bench] and ids("--since", "3d") == [bench]
    listed = json.loads(out_of(capsys, "results", "list", "--json", *r))
    tps = sum(round(900 * (1 + (0.01 if i % 2 else -0.01))) for i in range(10)) / 10
    assert listed[1]["outcome"] == f"{tps:.1f} tps, p95 2.5 ms"
    assert (listed[0]["engine"], listed[0]["cluster"]) == ("group_replication", "lab")
    assert listed[0]["verdict"] == "FAIL"
    # the baseline: marked, shown, and a name for compare
    assert out_of(capsys, "results", "baseline", str(bench), *r) == f"baseline: run {bench}\n"
    listed = json.loads(out_of(capsys, "results", "list", "--json", *r))
    assert [x["baseline"] for x in listed] == [False, True]
    assert f" {bench}* " in out_of(capsys, "results", "list", *r)
    with Store.open(db) as s:
        other = make_bench(s, threads=4, tps=900)
    data = json.loads(out_of(capsys, "compare", "baseline", str(other), "--json", *r))
    assert (data["run_a"], data["run_b"]) == (bench, other)
    assert main(["results", "delete", str(other), *r]) == 0
    capsys.readouterr()
    assert main(["results", "delete", str(drill), *r]) == 0
    assert capsys.readouterr().out == f"deleted run {drill} (fault kill-node, 1 trial(s))\n"
    assert ids() == [bench]
    with Store.open(db) as s:
        assert s.conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 0  # went with it
    assert main(["results", "list", "--since", "yesterday", *r]) == 2
    assert "error: --since 'yesterday': give a date or time" in capsys.readouterr().err


def _gr_snapshot(node: int, primary: bool) -> dict[str, str]:
    return {"version": "9.7.4-2", "group_replication_local_address": f"198.18.0.{10 + node}:33061",
            "read_only": "OFF" if primary else "ON", "super_read_only": "OFF" if primary else "ON",
            "init_file": f"/var/lib/cb/n{node}/init.sql", "innodb_flush_log_at_trx_commit": "2"}  # fmt: skip


def test_group_replication_members_differing_by_design_are_no_finding(tmp_path: Path) -> None:
    """Issue 24: every GR report said the servers 'did not all run as the topology says', flagging
    variables that differ by design; the engine names them, a real difference still shows."""
    from clusterbench.analysis.variables import variable_report

    with Store.open(tmp_path / "r.db") as s:
        run = s.create_run("run", name="gr")
        s.set_provenance(run, "topology", {"engine": {"kind": "group_replication"},
                                           "mysql": {"innodb_flush_log_at_trx_commit": 2}})  # fmt: skip
        t = s.add_trial(run, 1, "oltp_read_write", {})
        snap = {f"n{i}": _gr_snapshot(i, i == 1) for i in (1, 2, 3)}
        s.set_provenance(run, "server_variables@start", snap, trial_id=t)
        assert [r.name for r in variable_report(s, run).findings] == []
        snap["n3"]["innodb_flush_log_at_trx_commit"] = "1"  # changed by hand: a finding
        s.set_provenance(run, "server_variables@end", snap, trial_id=t)
        assert [r.name for r in variable_report(s, run).findings] == ["innodb_flush_log_at_trx_commit"]


def test_the_endpoint_flag_says_what_it_does_and_old_state_still_loads() -> None:
    from clusterbench.spec.endpoint import Endpoint
    from clusterbench.trial.spec import endpoint_provenance

    old = {"name": "x", "addresses": [{"host": "h", "port": 3306}], "user": "u", "password": "p",
           "galera": False}  # as stored by earlier versions
    e = Endpoint.model_validate(old)
    assert e.auto_inc_off is False
    prov = endpoint_provenance(e)
    assert prov["auto_inc_off"] is False and "galera" not in prov


def test_the_report_opens_with_the_outcome_and_the_environment(tmp_path: Path) -> None:
    from clusterbench.analysis.document import build_report

    db = tmp_path / "r.db"
    run = make_drill(db)
    with Store.open(db) as s:
        [tr] = s.trials(run)
        s.set_bottleneck(tr.id, {"resource": "host_cpu", "source": "host", "utilization": 0.97,
                                 "summary": "this machine's CPUs (shared by the nodes, balancer and clients) "
                                 "were nearest their limit: 97 %"})  # fmt: skip
        s.set_provenance(run, "cpu", "Intel Xeon x 2")
        rep = build_report(s, run)
    facts = dict(rep.facts)
    assert list(facts)[:4] == ["run", "engine", "outcome", "environment"]
    assert facts["engine"] == "MariaDB Galera, cluster lab"
    assert facts["outcome"].endswith("1/2 PASS, 1 FAIL: FAIL")
    assert facts["environment"] == (
        "one machine (network namespaces), Intel Xeon x 2; every trial was limited by this machine's shared "
        "CPUs, not by the cluster"
    )
    titles = rep.section_titles
    assert titles[:3] == ["Verdicts", "Availability", "Summary"]


def test_fault_and_stall_labels_never_share_a_row() -> None:
    from clusterbench.analysis.plots import Window, label_rows

    ws = [Window("kill-node n2", 10, 25), Window("stall", 11, 12), Window("stall", 13, 14),
          Window("x", 40, 41)]
    assert label_rows(ws, 5.0) == [0, 1, 2, 0]


def test_the_json_export_follows_its_shipped_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from importlib.resources import files

    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(files("clusterbench").joinpath("schemas/run.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    db = tmp_path / "r.db"
    run = make_drill(db)
    with Store.open(db) as s:
        bench = make_bench(s, threads=4, tps=900)
    validator = jsonschema.Draft202012Validator(schema)
    for r in (run, bench):
        argv = ["results", "export", str(r), "--format", "json", "--results", str(db)]
        data = json.loads(out_of(capsys, *argv))
        errors = sorted(validator.iter_errors(data), key=str)
        assert errors == [], [e.message for e in errors[:3]]
    data["trials"][0]["samples"][0].pop("t_s")  # and it does check: a sample without its time fails
    assert not validator.is_valid(data)


def test_a_suite_gets_one_histogram_figure_a_drill_one_per_trial(tmp_path: Path) -> None:
    from clusterbench.analysis.histograms import EACH_UP_TO, histogram_section, stored_histogram

    db = tmp_path / "r.db"
    run = make_drill(db)
    with Store.open(db) as s:
        [tr] = s.trials(run)
        h = stored_histogram(s, tr.id)
        summary = parse_output((DATA / "oltp_point_select.out").read_text().splitlines()).summary
        assert summary is not None and summary.hist is not None
        assert h == summary.hist  # read back bucket for bucket from the stored rows
        sec = histogram_section(s, [tr])
        assert sec is not None
        assert [f.title for f in sec.figures] == ["trial 1 (oltp_point_select): 52,256 transactions"]
        sec = histogram_section(s, [tr] * (EACH_UP_TO + 1))
        assert sec is not None and len(sec.figures) == 1 and sec.figures[0].title.startswith("7 trials")


def test_a_resumed_experiment_run_is_this_commands_run(tmp_path: Path) -> None:
    """`experiment run` again resumes the run of the same plan: the live endpoint and --junit count
    it as this command's, though it was created before."""
    import os
    import time

    from clusterbench.telemetry.endpoint import mark, own_runs
    from clusterbench.trial.recorder import Recorder

    with Store.open(tmp_path / "r.db") as s:
        old = s.create_run("experiment", name="grid")
        other = s.create_run("experiment", name="untouched")
        s.finish_run(old, "interrupted")
        time.sleep(0.002)  # the store's clock has milliseconds
        since = mark(s)
        assert own_runs(s, since, os.getpid()) == []
        Recorder(s).reopen_run(old, "clusterbench experiment run grid.toml")
        new = s.create_run("run", name="new")
        assert own_runs(s, since, os.getpid()) == [old, new] and other not in own_runs(s, since, os.getpid())



def test_compare_refuses_a_clean_run_against_a_drill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    drill = make_drill(db)
    with Store.open(db) as s:
        s.set_provenance(drill, "fault_schedule", {"faults": [{"kind": "kill-node", "at": 20.0}]})
        bench = make_bench(s, threads=4, tps=900)
    assert main(["compare", str(bench), str(drill), "--results", str(db)]) == 2
    out, err = capsys.readouterr()
    assert "  faults: none → kill-node at 20.0 s (defines the workload)" in out
    assert "  run.kind: benchmark → drill (defines the workload)" in out
    assert err.startswith(f"error: runs {bench} and {drill} differ in what defines the workload (")
