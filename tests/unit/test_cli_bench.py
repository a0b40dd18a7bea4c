"""CLI of run / suite / report / results without a cluster: bad input, and reading a store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterbench.cli.main import main
from clusterbench.store import Store
from clusterbench.workloads import parse_output

DATA = Path(__file__).parent / "workloads" / "data"


@pytest.fixture(autouse=True)
def home(cli_home: Path) -> Path:
    return cli_home


def one_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "nope"], "unknown sysbench test 'nope'; known tests: bulk_insert, oltp_delete"),
        (["-w", "oltp_read_write", "--threads", "0"], "Invalid value for '--threads': 0 is not in the range"),
        (["-w", "oltp_read_write", "--time", "0"], "Invalid value for '--duration' / '--time' / '-t': 0 is"),
        (["-w", "oltp_read_write", "--rand-type", "zipf"], "--rand-type: Input should be"),
        (["-w", "oltp_read_write", "--host", "h", "--target", "node:1"], "leave out --target and --name"),
        (["-w", "oltp_read_write", "--host", "h", "--password-env", "CB_NO_SUCH_VAR"], "CB_NO_SUCH_VAR"),
        (["-w", "oltp_read_write", "-n", "nosuch"], "cluster 'nosuch' is not up"),
        (
            ["-w", "oltp_read_write", "--host", "h", "--client-hosts", "2"],
            "--client-hosts 2 needs a clusterbench cluster's client hosts; leave it out with --host",
        ),
        (
            ["-w", "oltp_read_write", "--host", "h", "--client-hosts", "some"],
            "--client-hosts must be auto, local or a number of client hosts, got 'some'",
        ),
        (["-w", "oltp_read_write", "--clients", "0"], "Invalid value for '--clients': 0 is not in the range"),
        (["-w", "oltp_read_write", "--host", "h", "--target", "each-node"], "leave out --target and --name"),
        (["-w", "tpcc", "--customers", "5"], "Invalid value for '--customers': 5 is not in the range 10<="),
        (["-w", "tpcc", "--items", "100001"], "Invalid value for '--items': 100001 is not in the range"),
        (["-w", "oltp_read_write", "--warmup-until", "soon"],
         "--warmup-until: Input should be 'time' or 'steady' (got 'soon')"),
        (["-w", "mysqlslap", "--warmup", "1", "--warmup-until", "steady"],
         "a warm-up until steady needs sysbench's per-second latency histograms, which mysqlslap does not"),
        (["-w", "oltp_read_write", "--warmup-until", "steady"], "and warmup is 0; give --warmup N (e.g. 5)"),
    ],
)
def test_run_bad_input_is_one_line_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CB_NO_SUCH_VAR", raising=False)
    assert main(["run", *args]) == 2
    assert message in one_error(capsys)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "-w", "tpcc", "--mix", "new_order=45,payment=43,order_status=4,delivery=4,stock_levl=4"],
         "error: --mix: unknown transaction 'stock_levl'; known: new_order, payment, order_status, delivery, "
         "stock_level"),
        (["run", "-w", "tpcc", "--mix", "new_order=45,payment=40,order_status=4,delivery=4,stock_level=4"],
         "error: --mix: the weights sum to 97, not 100; make them add up to 100 (a transaction left out "
         "weighs 0)"),
        (["run", "-w", "tpcc", "--mix", "new_order=60,payment=-4,order_status=40,delivery=4"],
         "error: --mix: payment=-4 is negative; weights are whole percentages from 0 to 100"),
        (["suite", "-w", "oltp_insert,mysqlslap", "--warmup", "2", "--warmup-until", "steady"],
         "error: --warmup-until: a warm-up until steady needs sysbench's per-second latency histograms, "
         "which mysqlslap does not give; use a fixed warm-up (--warmup-until time, warmup_until = \"time\")"),
        (["suite", "-w", "oltp_insert,tpcc", "--mix", "new_order"],
         "error: --mix: 'new_order' is not NAME=WEIGHT; give e.g. new_order=45,payment=43,order_status=4,"
         "delivery=4,stock_level=4"),
        (["run", "-w", "oltp_read_write", "--mix", "new_order=100"],
         "error: --mix is the tpcc transaction mix; leave it out, or run -w tpcc"),
        (["run", "-w", "tpcc", "--warehouses", "0"],
         "error: Invalid value for '--warehouses': 0 is not in the range x>=1. "
         "(see `clusterbench run --help`)"),
    ],
)
def test_tpcc_bad_input_is_one_line_exit_2_and_starts_nothing(
    args: list[str], message: str, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*args, "-n", "tpxnone"]) == 2
    assert one_error(capsys) == message
    assert not (home / "results.db").exists()  # refused before the store, a cluster or sysbench


def test_results_path_not_writable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "file"
    f.write_text("")
    assert main(["run", "-w", "oltp_insert", "--results", str(f / "r.db")]) == 2
    assert one_error(capsys) == (
        f"error: cannot write the results store {f}/r.db ({f} is not a directory); "
        "choose a writable path with --results"
    )


def test_suite_bad_tests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "--tests", "oltp_insert,nope"]) == 2
    assert "unknown sysbench test 'nope'" in one_error(capsys)


def test_results_without_store(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["results", "list"]) == 2
    assert one_error(capsys) == (
        f"error: no results store at {home}/results.db; run `clusterbench run` or `suite` first, "
        "or give --results"
    )


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), warmup=0, threads=2)
    with Store.open(path) as s:
        cmd = "clusterbench run -w oltp_point_select"
        run = s.create_run("run", name="oltp_point_select", command_line=cmd)
        trial = s.add_trial(run, 1, "oltp_point_select", {"threads": 2})
        for sample in p.samples:
            s.add_sample(trial, sample)
        assert p.summary is not None
        s.add_summary(trial, p.summary)
        s.finish_trial(trial, "completed")
        s.set_provenance(run, "versions", {"sysbench": "sysbench 1.0.20"})
        s.finish_run(run, "completed")
    return path


def test_results_list_show_export(stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["results", "list", "--results", str(stored)]) == 0
    out = capsys.readouterr().out
    assert "oltp_point_select" in out and "completed" in out

    assert main(["results", "show", "last", "--results", str(stored)]) == 0
    out = capsys.readouterr().out
    assert "run 1 run oltp_point_select: completed" in out
    assert 'versions: {"sysbench": "sysbench 1.0.20"}' in out
    assert "reconnects" in out

    assert main(["results", "export", "1", "--format", "csv", "--results", str(stored)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run_id,trial_seq,workload,client,t_s,")
    assert len(lines) == 3 and lines[1].startswith("1,1,oltp_point_select,0,1.")

    target = tmp_path / "run.json"
    argv = ["results", "export", "last", "--format", "json", "-o", str(target), "--results", str(stored)]
    assert main(argv) == 0
    data = json.loads(target.read_text())
    assert data["run"]["status"] == "completed" and len(data["trials"][0]["samples"]) == 2

    assert main(["results", "export", "1", "--format", "xml", "--results", str(stored)]) == 2
    assert one_error(capsys) == (
        "error: --format must be one of csv, summary, json, edn, telemetry, openmetrics, got 'xml'"
    )
    assert main(["results", "show", "7", "--results", str(stored)]) == 2
    assert "no run 7 in the store" in one_error(capsys)


def test_report_writes_both_files(stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "rep"
    assert main(["report", "last", "--out", str(out_dir), "--results", str(stored)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"markdown: {out_dir}/report-1.md",
        f"html:     {out_dir}/report-1.html",
    ]
    assert "| oltp_point_select |" in (out_dir / "report-1.md").read_text()
    assert "<svg" in (out_dir / "report-1.html").read_text()


def test_live_view_adds_up_clients_per_second(capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses

    from clusterbench.cli.live import LiveView, sample_line

    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), warmup=0, threads=2)
    first = p.samples[0]
    other = dataclasses.replace(first, client=1)
    view = LiveView(clients=2, per_sample_lines=True)
    with view:
        view.sample(1, first)
        assert capsys.readouterr().out == ""  # waits for the second client of that second
        view.sample(1, other)
    line = capsys.readouterr().out.strip()
    assert line.startswith("[   1 s] tps")
    assert f"tps {2 * first.tps:>9.2f}" in line
    assert sample_line(first).startswith(f"tps {first.tps:>9.2f}  p95 ")


def test_live_view_does_not_show_a_kept_warm_up_second_late(capsys: pytest.CaptureFixture[str]) -> None:
    """Until steady, the warm-up seconds found steady reach the listener after the others: the
    store keeps them, the live view has moved on."""
    import dataclasses

    from clusterbench.cli.live import LiveView

    p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), warmup=0, threads=2)
    first = p.samples[0]
    view = LiveView(clients=1, per_sample_lines=True)
    with view:
        view.sample(1, dataclasses.replace(first, t=4.0))
        view.sample(1, dataclasses.replace(first, t=5.0))
        view.sample(1, dataclasses.replace(first, t=1.0))
        view.sample(2, dataclasses.replace(first, t=1.0))  # the next trial starts over
    shown = [ln.split("]")[0].strip() for ln in capsys.readouterr().out.splitlines() if "tps" in ln]
    assert shown == ["[   4 s", "[   5 s", "[   1 s"]


def test_results_show_prints_clients_fairness_and_the_saturation_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.db"
    with Store.open(path) as s:
        run = s.create_run("run", name="oltp_point_select")
        trial = s.add_trial(run, 1, "oltp_point_select", {"threads": 2})
        for c in (0, 1):
            p = parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), threads=2, client=c)
            assert p.summary is not None
            s.add_summary(trial, p.summary, client=c)
            s.add_trial_client(trial, {"client": c, "host": f"cb-lab-c{c + 1}", "database": f"sbtest{c + 1}",
                                       "rate_asked": 50000.0, "rate_achieved": p.summary.tps,
                                       "flags": ["rate_not_achieved"] if c else []})  # fmt: skip
        s.set_provenance(run, "clients", {"start_skew_s": 0.03, "launch_skew_s": 0.002, "fairness_tps": {
            "n": 2, "min": 1.0, "max": 1.0, "mean": 1.0, "cv": 0.0, "jain": 1.0, "spread": 0.0}},
            trial_id=trial)  # fmt: skip
        s.add_event(run, "client_saturated", {"client": 1, "warnings": ["client 1 on cb-lab-c2: reached"]},
                    trial_id=trial)  # fmt: skip
        s.finish_trial(trial, "completed")
        s.finish_run(run, "completed")
    assert main(["results", "show", "last", "--results", str(path)]) == 0
    out = capsys.readouterr().out
    assert "clients of trial 1 (oltp_point_select)" in out
    assert "cb-lab-c1" in out and "sbtest2" in out and "rate_not_achieved" in out
    assert "Clients started measuring within 30 ms of each other (sysbench exec'd within 2 ms)" in out
    assert "Jain's index 1.000" in out
    assert (
        "warning: load not as asked (a client was saturated or its --rate was not reached); the cluster's"
        in out
    )
    assert "trial 1: client 1 on cb-lab-c2: reached" in out
