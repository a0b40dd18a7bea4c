"""The access-method microbenchmark (lua/cb_access.lua) as sysbench tests: names, groups, argv,
rows per event, and refusals. The script itself runs against real servers in integration tests."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import ValidationError

from clusterbench.errors import InputError
from clusterbench.runner.bench import make_options
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.workloads.sysbench import (
    ACCESS_TESTS,
    PrepareGroup,
    SysbenchOptions,
    access_rows,
    access_script,
    build_command,
    expected_tables,
    group_tests,
    prepare_group,
    report_script,
)

EP = Endpoint(name="t", addresses=(Address(host="198.18.0.11", port=3306),), user="sb", password="pw",
              auto_inc_off=False)  # fmt: skip


def test_every_method_is_a_test_of_the_access_group() -> None:
    assert ACCESS_TESTS == (
        "access_pk", "access_pk_batch", "access_uk", "access_uk_batch", "access_eq", "access_range",
        "access_scan", "access_noop",
    )  # fmt: skip
    assert {prepare_group(t) for t in ACCESS_TESTS} == {"access"}
    assert group_tests(["access_pk", "oltp_read_only", "access_range"]) == [
        PrepareGroup("access", ("access_pk", "access_range"), "access_pk"),
        PrepareGroup("oltp", ("oltp_read_only",), "oltp_read_write"),
    ]
    assert access_script().read_text().startswith("-- clusterbench access-method microbenchmark")


def test_rows_per_event() -> None:
    assert [access_rows(t, 32, 10000) for t in ACCESS_TESTS] == [1, 32, 1, 32, 32, 32, 10000, 1]
    assert access_rows("access_pk_batch", 8, 100) == 8


def test_one_table_per_row_size() -> None:
    assert expected_tables(SysbenchOptions(test="access_pk", row_size=2048), "access") == ["sbtest2048"]
    assert expected_tables(SysbenchOptions(test="access_eq"), "access") == ["sbtest20"]


def test_run_argv_and_env() -> None:
    opts = SysbenchOptions(test="access_uk_batch", threads=1, time=5, batch=16, row_size=2048, table_size=500)
    cmd = build_command(opts, EP, "run")
    assert cmd.argv[:2] == ("sysbench", str(report_script()))
    assert cmd.env == {"CLUSTERBENCH_SB_TEST": "access_uk_batch", "CLUSTERBENCH_SB_MODULE": "cb_access"}
    assert cmd.argv[-10:] == (
        "--access-batch=16", "--access-row-size=2048", "--access-method=uk_batch", "--time=5",
        "--report-interval=1", "--rate=0", "--rand-type=special", "--percentile=95",
        "--mysql-ignore-errors=1213,1020,1205,2013,2006,2011,2055,1047,1053,1927,4031,1180,3101,1290", "run",
    )  # fmt: skip
    assert "--table-size=500" in cmd.argv and "--auto_inc=off" not in cmd.argv
    assert cmd.secrets == (("mysql-password", "pw"),)


def test_prepare_and_cleanup_run_the_script_itself() -> None:
    opts = SysbenchOptions(test="access_range", row_size=2048)
    commands: tuple[Literal["prepare", "cleanup"], ...] = ("prepare", "cleanup")
    for command in commands:
        cmd = build_command(opts, EP, command)
        assert cmd.argv[:2] == ("sysbench", str(access_script()))
        assert cmd.argv[-3:] == ("--access-batch=32", "--access-row-size=2048", command)
        assert cmd.env == {}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"batch": 0}, "--batch: Input should be greater than or equal to 1 (got 0)"),
        ({"row_size": 8}, "--row-size: Input should be greater than or equal to 16 (got 8)"),
        (
            {"batch": 64, "table_size": 50},
            "batch 64 is more than table_size 50; lower batch or raise table_size",
        ),
    ],
)
def test_bad_settings_are_one_line(fields: dict[str, int], message: str) -> None:
    with pytest.raises(InputError) as exc:
        make_options(test="access_pk_batch", **fields)
    assert str(exc.value) == message


def test_batch_above_table_size_only_matters_for_access_tests() -> None:
    assert SysbenchOptions(test="oltp_read_only", batch=64, table_size=50).batch == 64
    with pytest.raises(ValidationError):
        SysbenchOptions(test="access_eq", batch=64, table_size=50)
