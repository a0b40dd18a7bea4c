from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from clusterbench.errors import InputError
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.workloads.sysbench import (
    KNOWN_TESTS,
    SYSBENCH_TESTS,
    PrepareGroup,
    SysbenchOptions,
    build_command,
    client_databases,
    expected_tables,
    group_tests,
    needed_schemas,
    report_script,
)


def ep(*addrs: tuple[str, int], **kw: object) -> Endpoint:
    fields: dict[str, object] = {"tls_dir": None, "auto_inc_off": True, "password": "pw", **kw}
    return Endpoint(
        name="t",
        addresses=tuple(Address(host=h, port=p) for h, p in addrs),
        user="sb",
        **fields,
    )


ONE = ep(("198.18.0.11", 3306))
CONN = [
    "--db-driver=mysql",
    "--mysql-host=198.18.0.11",
    "--mysql-port=3306",
    "--mysql-user=sb",
    "--mysql-db=sbtest",
    "--mysql-ssl=off",
    "--mysql-compression=off",
    "--tables=4",
    "--table-size=10000",
    "--threads=4",
    "--db-ps-mode=auto",
    "--auto_inc=off",
]


def test_run_argv_env_exact() -> None:
    opts = SysbenchOptions(test="oltp_read_write")
    cmd = build_command(opts, ONE, "run", shim=Path("/x/sbfix.so"))
    assert cmd.argv == (
        "sysbench",
        str(report_script()),
        *CONN,
        "--time=10",
        "--report-interval=1",
        "--rate=0",
        "--rand-type=special",
        "--percentile=95",
        "--mysql-ignore-errors=1213,1020,1205,2013,2006,2011,2055,1047,1053,1927,4031,1180,3101,1290",
        "run",
    )
    assert cmd.env == {"CLUSTERBENCH_SB_TEST": "oltp_read_write", "LD_PRELOAD": "/x/sbfix.so"}
    assert cmd.cwd is None
    # the password never goes on the command line (every user can read /proc/PID/cmdline)
    assert not any("pw" in a.split("=", 1)[-1] for a in cmd.argv if a.startswith("--mysql"))
    assert cmd.secrets == (("mysql-password", "pw"),)
    assert cmd.config_text() == "mysql-password=pw\n"
    with_file = cmd.with_config_file(Path("/tmp/x.cnf"))
    assert with_file.argv == ("sysbench", "--config-file=/tmp/x.cnf", *cmd.argv[1:])
    assert with_file.secrets == () and with_file.env == cmd.env
    assert report_script().name == "cb_report.lua" and report_script().exists()


def test_prepare_and_cleanup_use_group_test_without_wrapper_or_shim() -> None:
    opts = SysbenchOptions(test="select_random_points", prepare_extra=("--create_secondary=off",))
    prep = build_command(opts, ONE, "prepare", database="sbtest2")
    assert prep.argv == (
        "sysbench",
        "oltp_read_write",
        *[a if a != "--mysql-db=sbtest" else "--mysql-db=sbtest2" for a in CONN],
        "--create_secondary=off",
        "prepare",
    )
    assert prep.env == {}
    clean = build_command(SysbenchOptions(test="bulk_insert"), ONE, "cleanup")
    assert clean.argv == ("sysbench", "bulk_insert", *CONN, "cleanup")


def test_warmup_extends_time_and_sets_checkpoint() -> None:
    opts = SysbenchOptions(test="oltp_point_select", time=30, warmup=5, rate=100, ignore_errors="all")
    argv = build_command(opts, ONE, "run").argv
    assert argv[argv.index("--time=35") :] == (
        "--time=35",
        "--report-interval=1",
        "--rate=100",
        "--rand-type=special",
        "--percentile=95",
        "--mysql-ignore-errors=all",
        "--report-checkpoints=5",
        "run",
    )


def test_multi_host_same_port_and_same_host_multi_port() -> None:
    hosts = build_command(SysbenchOptions(test="oltp_insert"), ep(("a", 3306), ("b", 3306)), "run").argv
    assert "--mysql-host=a,b" in hosts and "--mysql-port=3306" in hosts
    ports = build_command(SysbenchOptions(test="oltp_insert"), ep(("a", 3306), ("a", 3307)), "run").argv
    assert "--mysql-host=a" in ports and "--mysql-port=3306,3307" in ports


def test_multi_host_multi_port_is_refused() -> None:
    with pytest.raises(InputError, match="mixes several hosts and several ports"):
        build_command(SysbenchOptions(test="oltp_insert"), ep(("a", 3306), ("b", 3307)), "run")


def test_tls_compression_and_non_galera() -> None:
    e = ep(("h", 3306), tls=True, tls_dir=Path("/certs"), auto_inc_off=False)
    cmd = build_command(SysbenchOptions(test="oltp_read_only", compression=True), e, "run")
    assert cmd.cwd == Path("/certs")
    assert "--mysql-ssl=on" in cmd.argv and "--mysql-compression=on" in cmd.argv
    assert "--auto_inc=off" not in cmd.argv
    off = build_command(SysbenchOptions(test="oltp_read_only", tls=False), e, "run")
    assert off.cwd is None and "--mysql-ssl=off" in off.argv


def test_tls_without_dir_is_input_error() -> None:
    with pytest.raises(InputError, match="has no tls_dir"):
        build_command(SysbenchOptions(test="oltp_read_only", tls=True), ONE, "run")


def test_unknown_test_lists_known_ones() -> None:
    with pytest.raises(InputError) as exc:
        SysbenchOptions(test="oltp_nonsense")
    assert str(exc.value) == "unknown sysbench test 'oltp_nonsense'; known tests: " + ", ".join(KNOWN_TESTS)


def test_bounds_are_validated() -> None:
    for bad in ({"threads": 0}, {"time": 0}, {"warmup": -1}, {"rand_type": "zipf"}, {"extra": ("x",)}):
        with pytest.raises(ValidationError):
            SysbenchOptions(test="oltp_read_write", **bad)


def test_group_tests_order_and_bulk_separate() -> None:
    groups = group_tests(
        ["bulk_insert", "oltp_read_write", "select_random_points", "bulk_insert", "oltp_point_select"]
    )
    assert groups == [
        PrepareGroup("bulk_insert", ("bulk_insert",), "bulk_insert"),
        PrepareGroup(
            "oltp", ("oltp_read_write", "select_random_points", "oltp_point_select"), "oltp_read_write"
        ),
        PrepareGroup("bulk_insert", ("bulk_insert",), "bulk_insert"),
    ]
    assert len(SYSBENCH_TESTS) == 11
    assert [g.name for g in group_tests(list(SYSBENCH_TESTS))] == ["bulk_insert", "oltp"]
    names = [g.name for g in group_tests(list(KNOWN_TESTS))]
    assert names == ["bulk_insert", "oltp", "access", "mysqlslap", "tpcc", "http"]


def test_schemas_and_tables() -> None:
    assert client_databases(ONE, 3, separate_schemas=True) == ["sbtest1", "sbtest2", "sbtest3"]
    assert client_databases(ONE, 2, separate_schemas=False) == ["sbtest", "sbtest"]
    assert needed_schemas(ONE, 2, separate_schemas=False) == ["sbtest"]
    opts = SysbenchOptions(test="bulk_insert", threads=2, tables=5)
    assert expected_tables(opts, "bulk_insert") == ["sbtest1", "sbtest2"]
    assert expected_tables(opts, "oltp") == ["sbtest1", "sbtest2", "sbtest3", "sbtest4", "sbtest5"]
    with pytest.raises(InputError):
        client_databases(ONE, 0, separate_schemas=False)


def test_every_command_keeps_the_password_off_its_argv() -> None:
    for command in ("prepare", "run", "cleanup"):
        cmd = build_command(
            SysbenchOptions(test="oltp_insert"), ep(("a", 3306), password="s3cr#t x"), command
        )
        assert not any("s3cr#t" in a for a in cmd.argv), command
        assert cmd.secrets == (("mysql-password", "s3cr#t x"),)


def test_empty_password_needs_no_option_file() -> None:
    cmd = build_command(SysbenchOptions(test="oltp_insert"), ep(("a", 3306), password=""), "run")
    assert cmd.secrets == () and cmd.config_text() == ""


@pytest.mark.parametrize("bad", [" pw", "pw ", "p\nw", "p\rw"])
def test_password_sysbench_cannot_read_from_a_file_is_refused(bad: str) -> None:
    with pytest.raises(InputError, match=r"begins or ends with white space or holds a line break"):
        build_command(SysbenchOptions(test="oltp_insert"), ep(("a", 3306), password=bad), "run")


def test_socket_endpoint_connects_through_localhost_and_the_socket() -> None:
    sock = ONE.model_copy(update={"socket": Path("/var/lib/cb/n2/mysqld.sock")})
    argv = build_command(SysbenchOptions(test="access_pk", table_size=100), sock, "run").argv
    assert argv[2:7] == (
        "--db-driver=mysql",
        "--mysql-host=localhost",
        "--mysql-socket=/var/lib/cb/n2/mysqld.sock",
        "--mysql-user=sb",
        "--mysql-db=sbtest",
    )
    assert not any(a.startswith("--mysql-port") for a in argv)
