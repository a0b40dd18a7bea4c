"""The access-method settings in scenario files: [load] batch and row_size, with the names and
meanings of experiment files and of --batch / --row-size, reach the scenario's sysbench options
(and so its argv and its stored trial); refused in one line where the load is not an access_* test.
A fake cluster: nothing runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.cli.main import main
from clusterbench.scenario.drill import Drill
from clusterbench.scenario.spec import ScenarioSpec, load_scenario
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.spec.topology import Topology
from clusterbench.workloads.runner import SysbenchRunner
from clusterbench.workloads.sysbench import SysbenchOptions, build_command, expected_tables, prepare_group

ACCESS = """name = "access under a kill"
[load]
workload = "access_pk_batch"
threads = 1
duration = 20
table_size = 2000
batch = 64
row_size = 512
"""


class FakeCluster:
    def __init__(self) -> None:
        self.topology = Topology()

    def endpoint(self, target: str, database: str = "sbtest") -> Endpoint:
        return Endpoint(name=target, addresses=(Address(host="198.18.231.100"),), user="u", password="p",
                        database=database)  # fmt: skip

    def client_hosts(self) -> list[object]:
        return []


def write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "s.toml"
    f.write_text(text)
    return f


def options_of(spec: ScenarioSpec, tmp_path: Path) -> SysbenchOptions:
    cluster: Any = FakeCluster()
    drill = Drill(cluster, spec, tmp_path / "r.db", SysbenchRunner(shim=None))
    return drill.load().options


def test_batch_and_row_size_reach_the_scenarios_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, _ = load_scenario(write(tmp_path, ACCESS))
    assert (spec.load.batch, spec.load.row_size) == (64, 512)
    opts = options_of(spec, tmp_path)
    assert (opts.test, opts.batch, opts.row_size, opts.table_size) == ("access_pk_batch", 64, 512, 2000)
    assert expected_tables(opts, prepare_group(opts.test)) == ["sbtest512"]
    argv = build_command(opts, FakeCluster().endpoint("balancer"), "run").argv
    assert "--access-batch=64" in argv and "--access-row-size=512" in argv
    # the stored trial parameters are the options' dump (runner/bench.py)
    assert opts.model_dump(mode="json")["batch"] == 64 and opts.model_dump(mode="json")["row_size"] == 512
    assert main(["check", str(tmp_path / "s.toml")]) == 0
    assert "load: access_pk_batch (batch 64, rows of about 512 bytes) x1 threads" in capsys.readouterr().out
    # without them: the same defaults as experiment files and the flags
    plain = ACCESS.replace("batch = 64\n", "").replace("row_size = 512\n", "")
    spec, _ = load_scenario(write(tmp_path, plain))
    opts = options_of(spec, tmp_path)
    assert (opts.batch, opts.row_size) == (32, 20)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("access_pk_batch", "oltp_read_only"),
            "s.toml: load: batch and row_size are settings of the access_* tests and workload oltp_read_only "
            'is not one; remove them, or set workload = "access_pk" (or another access_* test)',
        ),
        (
            ('workload = "access_pk_batch"', 'workload = "tpcc"\nwarehouses = 1'),
            "s.toml: load: batch and row_size are settings of the access_* tests and workload "
            'tpcc is not one; remove them, or set workload = "access_pk" (or another access_* test)',
        ),
        (
            ('"access_pk_batch"\nthreads = 1', '"mysqlslap"\nthreads = 1'),
            "s.toml: load: batch and row_size are settings of the access_* tests and workload mysqlslap "
            'is not one; remove them, or set workload = "access_pk" (or another access_* test)',
        ),
        (
            ("batch = 64", "batch = 0"),
            "s.toml: load.batch: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            ("row_size = 512", "row_size = 8"),
            "s.toml: load.row_size: Input should be greater than or equal to 16 (got 8)",
        ),
        (
            ("table_size = 2000", "table_size = 50"),
            "s.toml: load: batch 64 is more than table_size 50; lower batch or raise table_size",
        ),
    ],
)
def test_bad_access_settings_are_one_line_exit_2(
    change: tuple[str, str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, ACCESS.replace(*change))
    for argv in (["check", str(f)], ["scenario", str(f)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == f"error: {tmp_path / message}\n", argv


def test_one_access_setting_on_another_test_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, ACCESS.replace("access_pk_batch", "oltp_read_only").replace("batch = 64\n", ""))
    assert main(["check", str(f)]) == 2
    assert capsys.readouterr().err == (
        f"error: {f}: load: row_size is a setting of the access_* tests and workload oltp_read_only is not "
        'one; remove it, or set workload = "access_pk" (or another access_* test)\n'
    )
