"""mysqlslap (mariadb-slap) as a workload: output parsing, argv, option file, refusals, and the
runner's loop over one-iteration runs with a fake process."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.errors import InputError, WorkloadError
from clusterbench.runner.bench import BenchPlan, make_options
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.workloads.parse import Sample
from clusterbench.workloads.placement import ClientHost
from clusterbench.workloads.slap import (
    SlapOutcome,
    SlapRunner,
    build_slap_argv,
    check_slap,
    option_file_text,
    parse_slap_output,
    run_histogram,
)
from clusterbench.workloads.sysbench import SysbenchOptions

OUTPUT = """Benchmark
\tRunning for engine innodb
\tAverage number of seconds to run all queries: 0.018 seconds
\tMinimum number of seconds to run all queries: 0.009 seconds
\tMaximum number of seconds to run all queries: 0.032 seconds
\tNumber of clients running queries: 4
\tAverage number of queries per client: 50

""".splitlines()

EP = Endpoint(name="balancer", addresses=(Address(host="198.18.0.10", port=3306),), user="sb", password="pw")
TWO = Endpoint(
    name="all-nodes",
    addresses=(Address(host="198.18.0.11", port=3306), Address(host="198.18.0.12", port=3306)),
    user="sb",
    password="pw",
)


def test_parse_benchmark_block() -> None:
    rep = parse_slap_output(OUTPUT)
    assert (rep.avg_s, rep.min_s, rep.max_s) == (0.018, 0.009, 0.032)
    assert (rep.clients, rep.queries_per_client) == (4, 50)
    assert rep.queries == 200


def test_parse_refuses_other_output() -> None:
    with pytest.raises(WorkloadError, match="printed no avg_s, min_s, max_s, clients, queries_per_client"):
        parse_slap_output(["mariadb-slap: Error when connecting to server: 1045 Access denied"])


def test_argv_auto_generated_with_password_in_an_option_file() -> None:
    opts = SysbenchOptions(test="mysqlslap", threads=8, slap_queries=25, slap_load_type="read")
    argv = build_slap_argv(opts, EP, option_file=Path("/h/secrets/cb-sysbench-1-x.cnf"))
    assert argv == [
        "mariadb-slap", "--defaults-extra-file=/h/secrets/cb-sysbench-1-x.cnf", "--host=198.18.0.10",
        "--port=3306", "--protocol=TCP", "--user=sb", "--concurrency=8", "--iterations=1",
        "--number-of-queries=200", "--auto-generate-sql", "--auto-generate-sql-load-type=read",
        "--engine=InnoDB", "--create-schema=cbslap",
    ]  # fmt: skip
    assert not any("pw" in a for a in argv)


def test_argv_user_query_keeps_the_schema() -> None:
    opts = SysbenchOptions(test="mysqlslap", threads=2, slap_query="SELECT 1", compression=True)
    argv = build_slap_argv(opts, EP)
    assert argv[-4:] == ["--query=SELECT 1", "--create-schema=sbtest", "--no-drop", "--compress"]


def test_option_file_quotes_the_password() -> None:
    ep = Endpoint(name="x", addresses=EP.addresses, user="sb", password='a"b\\c')
    assert option_file_text(ep) == '[client]\npassword="a\\"b\\\\c"\n'
    assert option_file_text(Endpoint(name="x", addresses=EP.addresses, user="sb", password="")) == ""
    with pytest.raises(InputError, match="line break"):
        option_file_text(Endpoint(name="x", addresses=EP.addresses, user="sb", password="a\nb"))


@pytest.mark.parametrize(
    ("fields", "endpoint", "clients", "message"),
    [
        ({}, EP, 2, "--clients 2: mysqlslap runs as one client process; set its concurrency with --threads"),
        ({}, TWO, 1, "endpoint 'all-nodes' has 2 addresses; mysqlslap connects to one"),
        ({"rate": 10}, EP, 1, "--rate: mysqlslap has no rate limit; leave --rate at 0"),
        ({"slap_query": "SELECT 1\nSELECT 2"}, EP, 1, "--slap-query: give the SQL on one line"),
    ],
)
def test_refusals(fields: dict[str, object], endpoint: Endpoint, clients: int, message: str) -> None:
    with pytest.raises(InputError) as exc:
        check_slap(SysbenchOptions.model_validate({"test": "mysqlslap", **fields}), endpoint, clients)
    assert str(exc.value).startswith(message)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"slap_load_type": "heavy"}, "--slap-load-type: Input should be 'mixed', 'read', 'write', 'key' or"),
        ({"slap_queries": 0}, "--slap-queries: Input should be greater than or equal to 1 (got 0)"),
        (
            {"slap_engine": "x; DROP"},
            "--slap-engine: not a storage engine name; give one like InnoDB (a letter, then "
            "letters, digits or _) (got 'x; DROP')",
        ),
    ],
)
def test_bad_options_are_one_line(fields: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as exc:
        make_options(test="mysqlslap", **fields)
    assert str(exc.value).startswith(message)


def test_bench_plan_refuses_several_clients_before_anything_runs() -> None:
    with pytest.raises(InputError, match="--clients 3: mysqlslap runs as one client process"):
        BenchPlan(kind="run", tests=("mysqlslap",), options=SysbenchOptions(test="mysqlslap"), endpoint=EP,
                  clients=3)  # fmt: skip


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_runner_repeats_runs_until_the_time_is_up(tmp_path: Path) -> None:
    clock = FakeClock()
    seen: list[tuple[list[str], str]] = []

    def spawn(host: ClientHost, argv: list[str], timeout: float) -> SlapOutcome:
        opt = next(a for a in argv if a.startswith("--defaults-extra-file="))
        seen.append((argv, Path(opt.split("=", 1)[1]).read_text()))
        clock.now += 0.5
        return SlapOutcome(0, OUTPUT, [])

    runner = SlapRunner(spawn=spawn, monotonic=clock, wall=lambda: 1.7e9, secrets_dir=tmp_path)
    got: list[Sample] = []
    res = runner.run(SysbenchOptions(test="mysqlslap", threads=4, time=2, warmup=1), EP, on_sample=got.append)
    # 1 s of warm-up (2 runs, not kept), then 2 s of measured runs
    assert len(seen) == 6 and len(got) == 4 == len(res.samples)
    assert seen[0][1] == '[client]\npassword="pw"\n'
    assert list(tmp_path.iterdir()) == []  # the option file is gone
    assert [s.t for s in got] == [1.5, 2.0, 2.5, 3.0]
    assert all(s.events == 1 and s.other == 200 and s.lat_pct_ms == 18.0 for s in got)
    s = res.summary
    assert s is not None and res.ok and res.failure() is None
    assert (s.events, s.other, s.lat_min_ms, s.lat_max_ms) == (4, 800, 9.0, 32.0)
    assert s.lat_avg_ms == pytest.approx(18.0) and s.duration == pytest.approx(2.0)
    assert s.qps == pytest.approx(400.0)
    assert "pw" not in " ".join(res.clients[0].command.argv)


def test_runner_reports_the_failure_line() -> None:
    clock = FakeClock()

    def spawn(host: ClientHost, argv: list[str], timeout: float) -> SlapOutcome:
        clock.now += 0.1
        return SlapOutcome(1, [], ["mariadb-slap: Error when connecting to server: 2002 Can't connect"])

    res = SlapRunner(spawn=spawn, monotonic=clock).run(SysbenchOptions(test="mysqlslap", time=5), EP)
    assert not res.ok and res.summary is None
    assert res.failure() == (
        "mysqlslap failed: mariadb-slap: Error when connecting to server: 2002 Can't connect"
    )


def test_run_histogram_percentiles() -> None:
    h = run_histogram([0.010, 0.020, 0.030])
    assert h.total == 3
    assert h.percentile(50) == pytest.approx(20.0, rel=0.02)


def test_exit_0_without_a_benchmark_block_fails_the_trial_with_its_own_line() -> None:
    # what mariadb-slap 10.11 did through HAProxy over 3 Galera nodes: the error, then exit 0
    clock = FakeClock()
    said = "mariadb-slap: Cannot run query INSERT INTO t1 VALUES (1,'x') ERROR : Deadlock found when trying"

    def spawn(host: ClientHost, argv: list[str], timeout: float) -> SlapOutcome:
        clock.now += 0.1
        return SlapOutcome(0, [], [said])

    res = SlapRunner(spawn=spawn, monotonic=clock).run(SysbenchOptions(test="mysqlslap", time=5), EP)
    assert not res.ok and res.exit_code == 1
    assert res.failure() == (
        f"mysqlslap failed: {said} (mariadb-slap does not retry conflicts: use --target node:N or a read "
        "load type)"
    )


def test_argv_over_the_servers_unix_socket() -> None:
    sock = EP.model_copy(update={"socket": Path("/var/lib/cb/n1/mysqld.sock")})
    argv = build_slap_argv(SysbenchOptions(test="mysqlslap", threads=1), sock)
    assert argv[1:4] == ["--socket=/var/lib/cb/n1/mysqld.sock", "--protocol=SOCKET", "--user=sb"]
    assert not any(a.startswith(("--host", "--port")) for a in argv)
