"""Experiments of the web tier: web_nodes and web_layout as factors (a cluster per level), the HTTP
tests' settings through to the trial, and what such a file must say (one line each)."""

from __future__ import annotations

import pytest

from clusterbench.errors import InputError
from clusterbench.experiment.load import experiment_from_data
from clusterbench.experiment.planner import expand
from clusterbench.experiment.spec import Experiment
from clusterbench.spec.topology import parse_toml

WEB = """
[experiment]
name = "web"
repetitions = 1

[topology.cluster]
name = "cbexp"
nodes = 3
subnet = "198.18.206.0/24"

[topology.web]
nodes = 1

[workload]
workload = "http_write"
rate = 100
duration = 5
http_timeout = 4
http_keepalive = false

[factors]
web_nodes = [1, 3]
nodes = [3, 1]
"""


def exp(text: str = WEB) -> Experiment:
    return experiment_from_data(parse_toml(text, "x.toml"), "x.toml", None)


def test_each_web_node_count_is_a_cluster_and_the_database_shrinks_inside_it() -> None:
    plan = expand(exp())
    got = [(t.group, t.topology.web.nodes, t.topology.cluster.nodes, t.nodes) for t in plan.trials]
    assert got == [(1, 1, 3, 3), (1, 1, 3, 1), (2, 3, 3, 3), (2, 3, 3, 1)]
    t = plan.trials[0]
    assert (t.test, t.rate, t.http_timeout, t.http_max_workers, t.http_keepalive) == (
        "http_write", 100, 4.0, 0, False)  # fmt: skip
    assert t.describe()["http_keepalive"] is False and t.test_settings() == {
        "http_timeout": 4.0, "http_max_workers": 0, "http_keepalive": False}  # fmt: skip
    assert t.dataset() == (1, 10000)


def test_layout_is_a_factor_and_colocated_points_need_their_database_nodes() -> None:
    factors = 'web_nodes = [1, 2]\nweb_layout = ["separate", "colocated"]'
    text = WEB.replace("web_nodes = [1, 3]\nnodes = [3, 1]", factors)
    plan = expand(exp(text))
    layouts = [(t.topology.web.nodes, t.topology.web.layout) for t in plan.trials]
    assert layouts == [(1, "separate"), (1, "colocated"), (2, "separate"), (2, "colocated")]
    assert len({t.group for t in plan.trials}) == 4
    bad = WEB.replace("nodes = [3, 1]", 'nodes = [3, 1]\nweb_layout = ["colocated"]')
    with pytest.raises(InputError) as info:
        expand(exp(bad))
    assert str(info.value) == (
        "the point nodes=1 web_nodes=3 web_layout=colocated: 3 colocated web nodes need as many database "
        "nodes running, and the point runs 1; leave that combination out (parts) or use web_layout = "
        "separate there"
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("rate = 100\n", "",
         "x.toml: parts.main: http_write sends requests at a fixed rate whatever the latency; give "
         "workload.rate (requests per second) or factor rate levels above 0"),
        ("web_nodes = [1, 3]", "web_nodes = [0, 3]",
         "x.toml: parts.main: http_write loads the web tier and factor web_nodes has 0; set "
         "topology.web.nodes = 1..9 (or web_nodes levels from 1)"),
        ('workload = "http_write"', 'workload = "oltp_read_only"',
         "x.toml: parts.main: workload.http_timeout is a setting of the HTTP tests and no trial runs one; "
         'remove it or add workload = "http_mixed" (or http_read, http_write)'),
        ("web_nodes = [1, 3]", "web_nodes = [1, 10]",
         "x.toml: factors.web_nodes: web node counts must be 0-9 (got 10)"),
    ],
)  # fmt: skip
def test_what_an_http_experiment_must_say(old: str, new: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        expand(exp(WEB.replace(old, new)))
    assert str(info.value) == message


def test_http_is_the_mixed_page_in_experiment_files() -> None:
    plan = expand(exp(WEB.replace('workload = "http_write"', 'workload = "http"')))
    assert {t.test for t in plan.trials} == {"http_mixed"}
