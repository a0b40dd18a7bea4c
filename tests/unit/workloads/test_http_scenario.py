"""The HTTP tests in scenario files: [load] workload = "http_*" (or "http", the mixed page) with its
rate and http_* settings reaches the drill's options and its web front; refused in one line without
a rate or with an HTTP setting on another test. A fake cluster: nothing runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.unit.workloads.test_access_scenario import FakeCluster, write

from clusterbench.cli.main import main
from clusterbench.scenario.drill import Drill
from clusterbench.scenario.spec import load_scenario
from clusterbench.spec.topology import Topology
from clusterbench.workloads.runner import SysbenchRunner

HTTP = """name = "front killed under HTTP load"
[load]
workload = "http"
duration = 30
rate = 200
http_timeout = 3
http_max_workers = 50
"""


def test_http_settings_reach_the_drills_load_and_its_front(tmp_path: Path) -> None:
    spec, _ = load_scenario(write(tmp_path, HTTP))
    cluster: Any = FakeCluster()
    cluster.topology = Topology.model_validate({"web": {"nodes": 2, "front": {"count": 2}}})
    load = Drill(cluster, spec, tmp_path / "r.db", SysbenchRunner(shim=None)).load()
    o = load.options
    assert (o.test, o.rate, o.http_timeout, o.http_max_workers, o.http_keepalive) == (
        "http_mixed", 200, 3.0, 50, True)  # fmt: skip
    assert load.web_urls == ("http://198.18.0.6:80",)
    assert spec.load.how() == "http_mixed at 200 requests/s for 30 s through the web front"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("rate = 200\n", ""),
         "s.toml: load: rate: http_mixed sends requests at a fixed rate whatever the latency; give rate = R "
         "(requests per second) above 0"),
        (('workload = "http"', 'workload = "oltp_read_only"'),
         "s.toml: load: http_timeout is a setting of the HTTP tests and workload oltp_read_only is not one; "
         'remove it, or set workload = "http_mixed" (or http_read, http_write)'),
        (("http_timeout = 3", "http_timeout = 0"),
         "s.toml: load.http_timeout: Input should be greater than 0 (got 0)"),
    ],
)  # fmt: skip
def test_bad_http_settings_are_one_line_exit_2(
    change: tuple[str, str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, HTTP.replace(*change))
    assert main(["check", str(f)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / message}\n"
