"""warmup_until in experiment files: checked when the file is read, carried by every planned
trial to the sysbench options it runs with, and part of the plan's identity only when set."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.errors import InputError
from clusterbench.experiment.load import experiment_from_data
from clusterbench.experiment.planner import expand
from clusterbench.experiment.spec import Experiment
from clusterbench.spec.topology import parse_toml

BASE = """
[experiment]
name = "st"
repetitions = 1

[topology.cluster]
name = "stx1"
subnet = "198.18.232.0/24"
nodes = 3

[workload]
workload = "oltp_read_write"
duration = 10
warmup = 3
{extra}

[factors]
threads = [1, 4]
"""


def exp(extra: str = "") -> Experiment:
    return experiment_from_data(parse_toml(BASE.format(extra=extra), "x.toml"), "x.toml")


def test_steady_reaches_every_trial_and_changes_the_plan_id_only_when_set() -> None:
    steady = expand(exp('warmup_until = "steady"'))
    assert [(t.warmup, t.warmup_until) for t in steady.trials] == [(3, "steady"), (3, "steady")]
    assert all(t.describe()["warmup_until"] == "steady" for t in steady.trials)
    fixed = expand(exp())
    assert all(t.warmup_until == "time" and "warmup_until" not in t.describe() for t in fixed.trials)
    assert expand(exp('warmup_until = "time"')).trials[0].describe() == fixed.trials[0].describe()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('warmup_until = "steady"\nwarmup = 0', "ends within the warm-up's seconds, and warmup is 0"),
        ('warmup_until = "steady"\nworkload = "mysqlslap"\ntarget = "node:1"', "mysqlslap does not give"),
    ],
)
def test_steady_is_refused_where_it_cannot_work(extra: str, message: str) -> None:
    text = BASE.format(extra=extra).replace("warmup = 3\n", "", 1 if "warmup = 0" in extra else 0)
    text = text.replace('workload = "oltp_read_write"\n', "", 1 if "mysqlslap" in extra else 0)
    with pytest.raises(InputError, match=message):
        experiment_from_data(parse_toml(text, "x.toml"), "x.toml")


def test_an_unknown_value_names_the_field() -> None:
    with pytest.raises(InputError, match="warmup_until"):
        exp('warmup_until = "soon"')


def test_plan_shows_a_steady_warm_up_as_its_most(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from clusterbench.cli.main import main

    f = tmp_path / "st.toml"
    f.write_text(BASE.format(extra='warmup_until = "steady"'))
    assert main(["plan", str(f)]) == 0
    out = capsys.readouterr().out
    assert "≤3+10" in out
    f.write_text(BASE.format(extra=""))
    assert main(["plan", str(f)]) == 0
    out = capsys.readouterr().out
    assert " 3+10" in out and "≤" not in out
