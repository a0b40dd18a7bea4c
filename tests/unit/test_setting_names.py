"""One name per setting (docs/glossary.md): the load is `workload` and the measured seconds
`duration` on the command line, in scenario files and in experiment files; the other names people
use are accepted, and a setting given under two names is refused in one line, exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.cli.main import main
from clusterbench.errors import InputError
from clusterbench.experiment.load import experiment_from_data
from clusterbench.scenario.spec import load_scenario
from clusterbench.spec.aliases import option_conflicts
from clusterbench.spec.topology import parse_toml

BASE = """
[experiment]
name = "x"
repetitions = 1
[topology.cluster]
name = "exnames"
subnet = "198.18.91.0/24"
"""


def experiment(text: str, profile: str | None = None) -> Any:
    return experiment_from_data(parse_toml(BASE + text, "x.toml"), "x.toml", profile)


@pytest.mark.parametrize("key", ["workload", "test", "tests"])
def test_a_scenario_load_takes_workload_or_its_aliases(key: str, tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(f'[load]\n{key} = "oltp_insert"\ntime = 12\n')
    spec = load_scenario(f)[0]
    assert spec.load.workload == "oltp_insert" and spec.load.duration == 12


@pytest.mark.parametrize(
    ("text", "tests"),
    [
        ('[workload]\nworkload = "oltp_insert"\n', ["oltp_insert"]),  # one test, as in a scenario
        ('[workload]\nworkload = ["oltp_insert", "oltp_delete"]\n', ["oltp_insert", "oltp_delete"]),
        ('[workload]\ntests = ["oltp_delete"]\n', ["oltp_delete"]),
        ('[workload]\ntest = "oltp_delete"\n', ["oltp_delete"]),
    ],
)
def test_an_experiment_workload_takes_workload_or_its_aliases(text: str, tests: list[str]) -> None:
    exp = experiment(text + "[factors]\nnodes = [1]\n")
    wl, levels = exp.parts["main"]
    assert wl.tests == tests and levels == {"nodes": [1]}


def test_aliases_merge_across_the_file_its_parts_and_profiles() -> None:
    """`time` in the file and `duration` in a part or profile are one setting, not a conflict."""
    exp = experiment(
        '[workload]\ntests = ["oltp_read_write"]\ntime = 10\n'
        "[factors]\nnodes = [1, 3]\n"
        '[parts.mix]\nfactors = { nodes = [3], tests = ["oltp_read_only", "oltp_write_only"] }\n'
        "workload = { duration = 5 }\n"
        '[profiles.quick]\nworkload = { workload = "oltp_insert", duration = 3 }\n'
        "parts.mix.workload = { time = 2 }\n"
    )
    main_wl, _ = exp.parts["main"]
    mix_wl, mix = exp.parts["mix"]
    assert (main_wl.tests, main_wl.duration, mix_wl.duration) == (["oltp_read_write"], 10, 5)
    assert mix == {"nodes": [3], "workload": ["oltp_read_only", "oltp_write_only"]}
    quick = experiment(
        '[workload]\ntests = ["oltp_read_write"]\ntime = 10\n[factors]\nnodes = [1]\n'
        '[profiles.quick]\nworkload = { workload = "oltp_insert", duration = 3 }\n',
        "quick",
    )
    wl, _ = quick.parts["main"]
    assert (wl.tests, wl.duration) == (["oltp_insert"], 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[workload]\nworkload = "oltp_insert"\ntests = ["oltp_delete"]\n[factors]\nnodes = [1]\n',
         "x.toml: workload: 'workload' and 'tests' are the same setting; give one of them"),
        ('[factors]\nnodes = [1]\nworkload = ["oltp_insert"]\ntest = ["oltp_delete"]\n',
         "x.toml: factors: 'workload' and 'test' are the same setting; give one of them"),
        ("[factors]\nnodes = [1]\n[profiles.quick]\nworkload = { duration = 3, time = 4 }\n",
         "x.toml: profiles.quick.workload: 'duration' and 'time' are the same setting; give one of them"),
        ('[workload]\nworkload = ["oltp_insert", "oltp_delete"]\n[factors]\nworkload = ["oltp_insert"]\n',
         "x.toml: parts.main: several tests in workload.workload and the factor workload; give them one way"),
    ],
)  # fmt: skip
def test_a_setting_under_two_names_is_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        experiment(text, "quick" if "profiles" in text else None)
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "-w", "oltp_insert", "--duration", "5", "--time", "6"],
         "--duration and --time are the same setting; give one of them"),
        (["run", "--workload=oltp_insert", "--tests", "oltp_delete"],
         "--workload and --tests are the same setting; give one of them"),
        (["suite", "-w", "oltp_insert", "--tests", "oltp_delete"],
         "-w and --tests (both --workload) are the same setting; give one of them"),
        (["fault", "kill-node", "--time", "5", "-t", "6"],
         "--time and -t (both --duration) are the same setting; give one of them"),
        (["run", "-w", "oltp_insert", "-t", "5", "-t", "6"], "-t is given twice; give it once"),
    ],
)  # fmt: skip
def test_the_command_line_refuses_a_setting_under_two_names(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {message}"]


def test_one_name_each_is_fine_and_values_are_not_options() -> None:
    assert option_conflicts(["run", "--tests", "oltp_insert", "--time", "5", "--tag", "t"]) is None
    assert option_conflicts(["compare", "1", "2", "--test", "mwu"]) is None  # compare's own --test
    assert option_conflicts(["run", "-w", "x", "--", "--duration", "-t"]) is None


@pytest.mark.parametrize("alias", ["--tests", "-w"])
def test_the_aliases_reach_the_command(alias: str, capsys: pytest.CaptureFixture[str]) -> None:
    # an unknown test is refused by the command itself: the alias got there
    assert main(["suite", alias, "oltp_insert,nope", "--time", "1"]) == 2
    assert "unknown sysbench test 'nope'" in capsys.readouterr().err
