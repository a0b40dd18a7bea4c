"""`engine` as an experiment factor: one file, both engines, each from the same base topology with
its own server section (pure: planner and spec only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import InputError
from clusterbench.experiment.load import experiment_from_data, load_experiment
from clusterbench.experiment.planner import expand
from clusterbench.experiment.spec import factor_kinds, for_engine

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "experiments"


def data(**extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "experiment": {"name": "e", "repetitions": 1},
        "topology": {
            "cluster": {"name": "gxt", "subnet": "198.18.104.0/24"},
            "mariadb": {"wsrep_slave_threads": 8},
            "mysql": {"member_expel_timeout": 1},
        },
        "workload": {"duration": 5},
        "factors": {"engine": ["galera", "group_replication"], "threads": [1, 4]},
    }
    d.update(extra)
    return d


def test_each_engine_gets_its_own_cluster_with_its_own_section() -> None:
    exp = experiment_from_data(data(), "e.toml")
    plan = expand(exp)
    kinds = [(t.group, t.topology.engine.kind, t.point_label) for t in plan.trials]
    assert kinds == [
        (1, "galera", "engine=galera threads=1"),
        (1, "galera", "engine=galera threads=4"),
        (2, "group_replication", "engine=group_replication threads=1"),
        (2, "group_replication", "engine=group_replication threads=4"),
    ]
    galera, gr = plan.trials[0].topology, plan.trials[2].topology
    assert galera.mariadb.wsrep_slave_threads == 8
    assert gr.mysql.member_expel_timeout == 1 and gr.engine.single_primary


def test_engine_is_a_categorical_knob_of_the_optimizer() -> None:
    assert factor_kinds()["engine"] == "categorical"
    d = data()
    del d["factors"]
    d["search"] = {"knobs": {"engine": ["galera", "group_replication"], "threads": [1, 64]}, "budget": 4}
    exp = experiment_from_data(d, "e.toml")
    assert sorted(exp.engine_topologies) == ["galera", "group_replication"]


def test_the_other_engines_section_is_left_out() -> None:
    topo = {"engine": {"mode": "multi-primary"}, "mariadb": {"x": 1}, "mysql": {"y": 2}}
    assert for_engine(topo, "galera") == {"engine": {"kind": "galera"}, "mariadb": {"x": 1}}
    assert for_engine(topo, "group_replication") == {
        "engine": {"mode": "multi-primary", "kind": "group_replication"},
        "mysql": {"y": 2},
    }


def test_a_galera_only_server_factor_on_a_gr_point_is_refused_naming_it() -> None:
    d = data(factors={"engine": ["galera", "group_replication"], "wsrep_slave_threads": [1, 4]})
    with pytest.raises(InputError) as info:
        expand(experiment_from_data(d, "e.toml"))
    msg = str(info.value)
    assert "factor wsrep_slave_threads is not a setting of engine group_replication" in msg
    assert len(msg.splitlines()) == 1


def test_an_unknown_engine_level_is_refused_in_one_line() -> None:
    with pytest.raises(InputError) as info:
        experiment_from_data(data(factors={"engine": ["galera", "mysql"]}), "e.toml")
    assert len(str(info.value).splitlines()) == 1 and "factors.engine" in str(info.value)


@pytest.mark.parametrize("name", ["gr-three-vs-five.toml", "galera-vs-group-replication.toml"])
def test_the_shipped_engine_examples_plan(name: str) -> None:
    for profile in (None, "quick"):
        plan = expand(load_experiment(EXAMPLES / name, profile))
        assert plan.trials and all(t.topology.cluster.nodes in (3, 5) for t in plan.trials)
        sustained = [t for t in plan.trials if t.part == "sustained"]
        assert sustained and all(t.rate_of_max == 0.75 for t in sustained)
