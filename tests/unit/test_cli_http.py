"""CLI of the HTTP tests and the web tier's faults without a cluster: bad input is one line, exit 2,
before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.cli.main import main
from tests.unit.test_cli_bench import one_error


@pytest.fixture(autouse=True)
def home(cli_home: Path) -> Path:
    return cli_home


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "-w", "http_write"],
         "error: --rate: http_write sends requests at a fixed rate whatever the latency; give --rate R "
         "(requests per second, all clients together) above 0"),
        (["run", "-w", "http", "--rate", "50", "--http-timeout", "0"],
         "error: --http-timeout: Input should be greater than 0 (got 0.0)"),
        (["fault", "kill-balancer", "--target", "front", "-w", "http_write"],
         "error: --load-rate: -w http_write sends requests at a fixed rate whatever the latency; give "
         "--load-rate R (requests per second)"),
        (["fault", "kill-node", "--target", "web:0"],
         "error: fault: target: 'web:0' is not a target; use node:N (or node:1,2), random, one, "
         "majority, minority, all, primary, balancer, lb:N, web:N (a web node), front or fe:N (a front "
         "balancer) (got 'web:0')"),
    ],
)  # fmt: skip
def test_bad_http_input_is_one_line_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert one_error(capsys) == message
