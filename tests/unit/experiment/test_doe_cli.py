"""The command line of designs and searches: plan shows them; bad input is one line, exit 2,
before anything starts (also for `experiment run`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "experiments"


@pytest.fixture(autouse=True)
def isolated(cli_home: Path) -> Path:
    return cli_home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_plan_of_the_screening_example_shows_the_design_and_aliases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run(capsys, "plan", str(EXAMPLES / "screening.toml"), "--profile", "quick")
    assert rc == 0 and err == ""
    assert (
        "fractional-factorial (resolution 3, 2 centre point(s)): 10 design run(s) on 9 distinct point(s)"
        in out
    )
    assert "nodes = cpu_quota×threads = wsrep_slave_threads×clients" in out


def test_plan_of_the_search_example_shows_knobs_and_the_random_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run(capsys, "plan", str(EXAMPLES / "find-optimum.toml"), "--profile", "quick")
    assert rc == 0 and err == ""
    assert "objective: max tps; subject to p95 <= 100; budget 30 trial(s)" in out
    assert "the random start (fixed by the seed; largest node count first):" in out
    assert "  1  nodes=5 " in out


SEARCH = """
[experiment]
name = "bad"
[topology.cluster]
name = "doebad"
subnet = "198.18.36.0/24"
[search]
knobs = {knobs}
{extra}
"""


@pytest.mark.parametrize(
    ("knobs", "extra", "msg"),
    [
        ("{ nodez = [1, 3] }", "", "search.knobs.nodez: not a factor; knobs are factors: engine, nodes, web"),
        ("{ nodes = [3, 3] }", "", "search.knobs.nodes: empty range [3, 3]: low must be below high"),
        ("{ nodes = [1, 3] }", "budget = 0", "search.budget: Input should be greater than or equal to 1"),
        ("{ nodes = [1, 3] }", 'constraints = ["p99.9 <= 5"]', "search.constraints[0]: 'p99.9 <= 5' is not"),
        ("{ nodes = [1, 3] }", 'constraints = ["lag <= 5"]', "search.constraints[0]: unknown metric 'lag'"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", [["plan"], ["experiment", "run"]])
def test_bad_search_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, knobs: str, extra: str, msg: str, command: list[str]
) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(SEARCH.format(knobs=knobs, extra=extra))
    rc, out, err = run(capsys, *command, str(f))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and msg in err and err.startswith("error: ")
