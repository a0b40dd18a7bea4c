"""TPC-C figures from cb_tpcc.lua's report lines, its argv, the mix, and the stall detector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterbench.errors import InputError
from clusterbench.runner import make_options
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.workloads import tpcc
from clusterbench.workloads.parse import parse_output
from clusterbench.workloads.sysbench import (
    TPCC_TABLES,
    SysbenchOptions,
    build_command,
    expected_tables,
    group_tests,
    prepare_group,
    report_script,
    tpcc_script,
)

EP = Endpoint(name="balancer", addresses=(Address(host="198.18.9.2", port=3306),), user="bench",
              password="pw", database="sbtest", auto_inc_off=True)  # fmt: skip


def counts(no: int, pay: int, os_: int = 0, dl: int = 0, sl: int = 0, rb: int = 0, rt: int = 0) -> dict:
    return {"tpcc": {
        "new_order": [no, rb, rt, no * 2000], "payment": [pay, 0, 0, pay * 1000],
        "order_status": [os_, 0, 0, 0], "delivery": [dl, 0, 0, 0], "stock_level": [sl, 0, 0, 0],
    }}  # fmt: skip


def line(kind: str, t: float, events: int, extra: dict | None) -> str:
    obj = {"type": kind, "time_total": t, "time_interval": 1.0 if kind == "interval" else t, "threads": 2,
           "events": events, "reads": 0, "writes": 0, "other": 0, "errors": 0, "reconnects": 0,
           "percentile": 95, "latency_pct_ms": 1.0}  # fmt: skip
    if extra is not None:
        obj["extra"] = extra
    return "CBJSON " + json.dumps(obj)


def client(warmup: float, lines: list[str]) -> tpcc.TpccClient:
    p = parse_output(lines, warmup=warmup)
    return tpcc.TpccClient(p.samples, p.warmup_samples, p.checkpoint_extra,
                           p.summary.extra if p.summary is not None else None)  # fmt: skip


def test_tpmc_counts_the_measured_part_only() -> None:
    lines = [
        line("interval", 1.0, 10, counts(4, 6)),  # warm-up
        line("checkpoint", 1.0, 10, counts(5, 6)),  # the reset: counters then
        line("interval", 2.0, 20, counts(14, 16)),
        line("interval", 3.0, 20, counts(23, 27, 1, 1, 0, rb=1, rt=2)),
        line("summary", 2.0, 40, counts(25, 27, 1, 1, 1, rb=1, rt=2)),
    ]
    f = tpcc.summarize([client(1.0, lines)], duration=2.0)
    assert f is not None
    assert f["types"]["new_order"]["count"] == 20 and f["types"]["payment"]["count"] == 21
    assert f["tpmC"] == 600.0  # 20 New-Orders in 2 s
    assert f["transactions"] == 20 + 21 + 1 + 1 + 1
    assert f["tpm"] == 44 * 30.0
    assert f["types"]["new_order"]["rollbacks"] == 1 and f["retries"] == 2
    assert f["types"]["new_order"]["mean_ms"] == 2.0
    # per second: the first measured second is counted from the checkpoint (the measured part)
    assert f["per_second"][0] == {"t": 2, "new_order": 14 - 5, "payment": 16 - 6, "order_status": 0,
                                  "delivery": 0, "stock_level": 0}  # fmt: skip
    assert f["per_second"][1]["new_order"] == 9 and f["per_second"][1]["payment"] == 11


def test_two_clients_add_up_and_no_counters_means_no_figures() -> None:
    a = [line("interval", 1.0, 5, counts(2, 3)), line("summary", 1.0, 5, counts(2, 3))]
    b = [line("interval", 1.0, 7, counts(3, 4)), line("summary", 1.0, 7, counts(3, 4))]
    f = tpcc.summarize([client(0, a), client(0, b)], duration=1.0)
    assert f is not None and f["tpmC"] == 300.0 and f["per_second"] == [
        {"t": 1, "new_order": 5, "payment": 7, "order_status": 0, "delivery": 0, "stock_level": 0}
    ]
    plain = [line("interval", 1.0, 5, None), line("summary", 1.0, 5, None)]
    assert tpcc.summarize([client(0, plain)], duration=1.0) is None


def test_mix_problems_name_the_type_off_the_standard_mix() -> None:
    good = {"types": {t: {"share_pct": tpcc.MIX[t]} for t in tpcc.TYPES}}
    assert tpcc.mix_problems(good) == []
    bad = {"types": {**good["types"], "delivery": {"share_pct": 20.0}}}
    assert tpcc.mix_problems(bad) == ["delivery: 20.0% (standard 4.0%)"]


def test_mix_problems_compare_with_the_mix_asked() -> None:
    shares = [60.0, 40.0, None, None, None]
    got = {"types": {t: {"share_pct": v} for t, v in zip(tpcc.TYPES, shares, strict=True)}}
    assert tpcc.mix_problems(got, mix=(60, 40, 0, 0, 0)) == []
    assert tpcc.mix_problems(got) == [
        "new_order: 60.0% (standard 45.0%)", "order_status: None% (standard 4.0%)",
        "delivery: None% (standard 4.0%)", "stock_level: None% (standard 4.0%)",
    ]  # fmt: skip


def test_a_mix_is_parsed_from_a_string_a_table_or_five_weights() -> None:
    standard = "new_order=45,payment=43,order_status=4,delivery=4,stock_level=4"
    assert tpcc.parse_mix(standard) == (45, 43, 4, 4, 4)
    # any order, spaces allowed, a transaction left out weighs 0
    assert tpcc.parse_mix(" payment = 50 , new_order=50") == (50, 50, 0, 0, 0)
    assert tpcc.parse_mix({"new_order": 40, "payment": 40, "delivery": 20}) == (40, 40, 0, 20, 0)
    assert tpcc.parse_mix([10, 20, 30, 20, 20.0]) == (10, 20, 30, 20, 20)
    assert tpcc.mix_text(None) == standard
    half = "new_order=50,payment=50,order_status=0,delivery=0,stock_level=0"
    assert tpcc.mix_text((50, 50, 0, 0, 0)) == half


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("new_order=45,paymnt=43,order_status=4,delivery=4,stock_level=4",
         "unknown transaction 'paymnt'; known: new_order, payment, order_status, delivery, stock_level"),
        ("new_order=45,payment=43", "the weights sum to 88, not 100; make them add up to 100"),
        ("new_order=103,payment=-3", "payment=-3 is negative; weights are whole percentages from 0 to 100"),
        ("new_order=44.5,payment=55.5", "new_order=44.5 is not a whole percentage"),
        ("new_order=x,payment=100", "new_order=x is not a whole percentage"),
        ("new_order=50,new_order=50", "new_order is given twice; give each transaction once"),
        ("new_order", "'new_order' is not NAME=WEIGHT; give e.g. new_order=45,payment=43,"),
        ("", "'' is not NAME=WEIGHT"),
        ({"new_order": True, "payment": 99}, "new_order=True is not a whole percentage"),
    ],
)
def test_a_bad_mix_says_what_is_wrong(spec: object, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        tpcc.parse_mix(spec)  # type: ignore[arg-type]
    assert message in str(exc.value)


def test_the_mix_goes_to_the_run_and_the_standard_one_is_left_out() -> None:
    run = build_command(SysbenchOptions(test="tpcc", mix=(50, 50, 0, 0, 0)), EP, "run")
    assert "--mix=50,50,0,0,0" in run.argv
    assert not any(a.startswith("--mix") for a in build_command(SysbenchOptions(test="tpcc"), EP, "run").argv)
    with pytest.raises(ValueError, match=r"weights must be 0 or more and sum to 100 \(got 50, 40, 0, 0, 0\)"):
        SysbenchOptions(test="tpcc", mix=(50, 40, 0, 0, 0))


def test_stalls_are_seconds_under_a_tenth_of_the_median() -> None:
    pts = [(1, 100.0), (2, 110.0), (3, 9.0), (4, 0.0), (5, 0.0), (6, 95.0), (7, 105.0), (8, 5.0), (9, 100.0),
           (10, 98.0), (11, 102.0)]  # fmt: skip
    s = tpcc.detect_stalls(pts)
    assert s.median_tps == 98.0 and abs(s.threshold_tps - 9.8) < 1e-9
    assert s.seconds == (3, 4, 5, 8) and s.count == 4
    assert s.runs == ((3, 3), (8, 1)) and s.longest == 3
    assert "4 interval(s)" in tpcc.stall_line(s) and "longest 3" in tpcc.stall_line(s)


def test_an_outage_longer_than_half_the_trial_is_found_against_the_busy_seconds() -> None:
    # seen in a review: kill the GR primary under tpcc, 0 tps from second 6 to 28 (23 of 40 s);
    # the trial's median is then 0, which found no stall at all
    pts = [(float(t), 100.0 if t <= 5 else 0.0 if t <= 28 else 90.0) for t in range(1, 41)]
    s = tpcc.detect_stalls(pts)
    assert (s.count, s.longest, s.runs, s.busy_only) == (23, 23, ((6.0, 23),), True)
    assert s.median_tps == 90.0 and s.threshold_tps == 9.0
    assert s.to_json()["reference"] == "median of the intervals with tps > 0"
    assert "10 % of the median of the intervals with load 90.0" in tpcc.stall_line(s)
    # the usual case keeps the plain median
    assert tpcc.detect_stalls([(1, 50.0), (2, 0.0), (3, 52.0)]).to_json()["reference"] == "median"


def test_no_stalls_in_steady_or_idle_load() -> None:
    assert tpcc.detect_stalls([(1, 50.0), (2, 48.0), (3, 52.0)]).count == 0
    assert tpcc.detect_stalls([(1, 0.0), (2, 0.0)]).count == 0
    assert tpcc.detect_stalls([]).to_json()["count"] == 0


def test_load_rows_read_the_loaders_thread_lines() -> None:
    out = ["CBLOAD warehouse 2: 44982 rows", "CBLOAD thread 1: 47482 rows, 1 warehouse(s) in 2.888 s",
           "CBLOAD thread 0: 47499 rows, 1 warehouse(s) in 3.044 s", "noise"]  # fmt: skip
    assert tpcc.load_rows(out) == 94981


def test_tpcc_argv_uses_its_own_script_and_the_warehouses() -> None:
    opts = SysbenchOptions(test="tpcc", threads=3, warehouses=4)
    prep = build_command(opts, EP, "prepare")
    assert prep.argv[1] == str(tpcc_script()) and Path(prep.argv[1]).name == "cb_tpcc.lua"
    assert "--warehouses=4" in prep.argv and "--threads=3" in prep.argv and prep.argv[-1] == "prepare"
    assert not any(a.startswith(("--tables", "--table-size", "--auto_inc")) for a in prep.argv)
    run = build_command(opts, EP, "run")
    assert run.argv[1] == str(report_script()) and run.env["CLUSTERBENCH_SB_MODULE"] == "cb_tpcc"
    assert tpcc_script().parent == report_script().parent and tpcc_script().is_file()


def test_a_reduced_tpcc_load_passes_customers_and_items_and_the_full_one_neither() -> None:
    full = build_command(SysbenchOptions(test="tpcc"), EP, "prepare").argv
    assert not any(a.startswith(("--customers", "--items")) for a in full)
    small = build_command(SysbenchOptions(test="tpcc", customers=300, items=10000), EP, "prepare").argv
    assert "--customers=300" in small and "--items=10000" in small
    for bad in ({"customers": 9}, {"customers": 3001}, {"items": 99}, {"items": 100001}):
        with pytest.raises(InputError, match=f"^--{next(iter(bad))}: "):
            make_options(test="tpcc", **bad)


def test_tpcc_is_a_prepare_group_of_its_own_with_nine_tables() -> None:
    assert prepare_group("tpcc") == "tpcc"
    assert expected_tables(SysbenchOptions(test="tpcc"), "tpcc") == list(TPCC_TABLES)
    assert len(TPCC_TABLES) == 9
    groups = group_tests(["oltp_read_write", "tpcc", "oltp_insert", "tpcc"])
    assert [(g.name, g.tests) for g in groups] == [
        ("oltp", ("oltp_read_write", "oltp_insert")), ("tpcc", ("tpcc", "tpcc")),
    ]  # fmt: skip


def test_per_type_percentiles_come_from_the_measured_part_of_the_histograms() -> None:
    def with_hist(c: dict, no_hist: list[list[int]]) -> dict:
        return {**c, "tpcc_hist": {"new_order": no_hist, "payment": [[80, 1]]}}

    # bucket b: [2^(b/8), 2^((b+1)/8)) µs; b=80 is 1024..1116 µs, b=120 is 32768..35734 µs
    lines = [
        line("checkpoint", 1.0, 10, with_hist(counts(5, 1), [[80, 5]])),  # warm-up: 5 fast ones
        line("interval", 2.0, 20, with_hist(counts(105, 1), [[80, 95], [120, 10]])),
        line("summary", 1.0, 100, with_hist(counts(105, 1), [[80, 95], [120, 10]])),
    ]
    f = tpcc.summarize([client(1.0, lines)], duration=1.0)
    assert f is not None
    no = f["types"]["new_order"]
    # measured: 90 in bucket 80, 10 in bucket 120
    assert no["p50_ms"] == round(2 ** (81 / 8) / 1000, 3) and no["p95_ms"] == round(2 ** (121 / 8) / 1000, 3)
    assert f["types"]["payment"]["p95_ms"] is None  # no payment measured after the warm-up
    assert tpcc.hist_percentile({}, 95) is None


def test_no_percentiles_when_a_client_has_no_histograms() -> None:
    a = [line("interval", 1.0, 5, counts(2, 3)), line("summary", 1.0, 5, counts(2, 3))]
    f = tpcc.summarize([client(0, a)], duration=1.0)
    assert f is not None and f["types"]["new_order"]["p95_ms"] is None


def test_a_drill_takes_the_mix_and_refuses_a_bad_one_naming_the_field(tmp_path: Path) -> None:
    from clusterbench.errors import InputError
    from clusterbench.scenario.spec import load_scenario

    f = tmp_path / "s.toml"
    f.write_text('[load]\nworkload = "tpcc"\nmix = { new_order = 60, payment = 40 }\n')
    assert load_scenario(f)[0].load.mix == (60, 40, 0, 0, 0)
    f.write_text('[load]\nworkload = "tpcc"\n')
    assert load_scenario(f)[0].load.mix is None
    f.write_text('[load]\nworkload = "tpcc"\nmix = "new_order=60,payment=41"\n')
    with pytest.raises(InputError) as exc:
        load_scenario(f)
    assert "load.mix: the weights sum to 101, not 100; make them add up to 100" in str(exc.value)
    assert len(str(exc.value).splitlines()) == 1
    f.write_text('[load]\nworkload = "oltp_read_write"\nmix = "new_order=100"\n')
    with pytest.raises(InputError) as exc:
        load_scenario(f)
    assert 'load: mix is the tpcc transaction mix; remove it, or set workload = "tpcc"' in str(exc.value)
    assert len(str(exc.value).splitlines()) == 1


def test_a_drill_takes_a_reduced_tpcc_scale_from_its_file_and_from_fault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from typing import Any

    from clusterbench.cli.main import main
    from clusterbench.scenario.drill import Drill
    from clusterbench.scenario.spec import load_scenario
    from clusterbench.spec.topology import Topology
    from clusterbench.workloads.runner import SysbenchRunner

    class Cluster:
        topology = Topology()

        def endpoint(self, target: str, database: str = "sbtest") -> Endpoint:
            return EP

        def client_hosts(self) -> list[Any]:
            return []

    f = tmp_path / "s.toml"
    f.write_text('[load]\nworkload = "tpcc"\nwarehouses = 2\ncustomers = 300\nitems = 10000\n')
    spec, _ = load_scenario(f)
    cluster: Any = Cluster()
    opts = Drill(cluster, spec, tmp_path / "r.db", SysbenchRunner(shim=None)).load().options
    assert (opts.warehouses, opts.customers, opts.items) == (2, 300, 10000)
    argv = set(build_command(opts, EP, "prepare").argv)
    assert {"--customers=300", "--items=10000", "--warehouses=2"} <= argv
    # the scale of another workload: one line naming the keys
    f.write_text('[load]\nworkload = "oltp_read_write"\nitems = 10000\n')
    with pytest.raises(InputError) as exc:
        load_scenario(f)
    assert str(exc.value).endswith('load: items: tpcc\'s load scale; remove, or set workload = "tpcc"')
    f.write_text('[load]\nworkload = "tpcc"\ncustomers = 5\n')
    with pytest.raises(InputError, match="load.customers: Input should be greater than or equal to 10"):
        load_scenario(f)
    # fault takes the same: out of range, or without tpcc, one line and exit 2 before anything starts
    monkeypatch.setenv("CLUSTERBENCH_HOME", str(tmp_path / "home"))
    for args, message in (
        (["-w", "tpcc", "--items", "5"], "Invalid value for '--items': 5 is not in the range 100<=x<=100000"),
        (["--customers", "300"], "--customers and --items are tpcc's load scale; leave them out"),
        (["--mix", "new_order=100"], "--mix is the tpcc transaction mix; leave it out, or run -w tpcc"),
    ):
        assert main(["fault", "kill-node", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


def test_a_second_exactly_at_the_threshold_is_no_stall() -> None:
    # median 100, threshold 10: 10.0 tps is not below it, 9.99 is
    at = [(1, 100.0), (2, 100.0), (3, 10.0), (4, 100.0), (5, 100.0)]
    assert tpcc.detect_stalls(at).count == 0
    below = [(1, 100.0), (2, 100.0), (3, 9.99), (4, 100.0), (5, 100.0)]
    assert tpcc.detect_stalls(below).seconds == (3,)


def test_stalls_apart_by_one_busy_second_are_two_runs() -> None:
    pts = [(1, 100.0), (2, 0.0), (3, 100.0), (4, 0.0), (5, 100.0), (6, 100.0), (7, 100.0)]
    s = tpcc.detect_stalls(pts)
    assert (s.runs, s.longest, s.count) == (((2, 1), (4, 1)), 1, 2)
    together = tpcc.detect_stalls([(1, 100.0), (2, 0.0), (3, 0.0), (4, 100.0), (5, 100.0)])
    assert (together.runs, together.longest) == (((2, 2),), 2)


def test_busy_only_reference_counts_every_slow_second() -> None:
    # the median of all five is 0; of the busy ones (50, 1) it is 25.5, threshold 2.55
    s = tpcc.detect_stalls([(1, 0.0), (2, 0.0), (3, 0.0), (4, 50.0), (5, 1.0)])
    assert (s.busy_only, s.median_tps, s.threshold_tps) == (True, 25.5, pytest.approx(2.55))
    assert (s.seconds, s.runs) == ((1, 2, 3, 5), ((1, 3), (5, 1)))
    assert tpcc.detect_stalls([(1, 8.0), (2, 100.0), (3, 100.0)], fraction=0.05).count == 0
    assert tpcc.detect_stalls([(1, 8.0), (2, 100.0), (3, 100.0)], fraction=0.1).count == 1


def test_stalls_json_rounds_to_three_decimals() -> None:
    s = tpcc.detect_stalls([(1, 10.12345), (2, 10.12345), (3, 0.0)], fraction=0.123456)
    j = s.to_json()
    assert (j["median_tps"], j["threshold_tps"]) == (10.123, 1.25)  # 0.123456 * 10.12345 = 1.24979...
    assert (j["count"], j["longest"], j["seconds"], j["runs"]) == (1, 1, [3], [[3, 1]])
