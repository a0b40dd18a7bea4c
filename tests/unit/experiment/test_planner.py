"""Planner: golden trial lists, ordering that keeps rebuilds rare, profiles, validation errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.errors import InputError
from clusterbench.experiment.load import experiment_from_data, load_experiment
from clusterbench.experiment.planner import CostModel, expand
from clusterbench.experiment.spec import Experiment
from clusterbench.spec.topology import parse_toml

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "experiments"

SMALL = """
[experiment]
name = "t"
repetitions = 2

[topology.cluster]
name = "cbexp"
subnet = "198.18.206.0/24"

[workload]
duration = 3
warmup = 1

[factors]
nodes = [2, 1]
threads = [1, 4]

[profiles.quick]
experiment = { repetitions = 1 }
factors = { threads = [8] }
"""


def exp(text: str = SMALL, profile: str | None = None) -> Experiment:
    return experiment_from_data(parse_toml(text, "x.toml"), "x.toml", profile)


def test_golden_trial_list_and_order() -> None:
    plan = expand(exp())
    got = [(t.index, t.group, t.topology.cluster.nodes, t.nodes, t.threads, t.rep) for t in plan.trials]
    # one cluster sized for 2 nodes; descending node count (the cluster only shrinks);
    # repetitions back to back
    assert got == [
        (1, 1, 2, 2, 1, 1),
        (2, 1, 2, 2, 1, 2),
        (3, 1, 2, 2, 4, 1),
        (4, 1, 2, 2, 4, 2),
        (5, 1, 2, 1, 1, 1),
        (6, 1, 2, 1, 1, 2),
        (7, 1, 2, 1, 4, 1),
        (8, 1, 2, 1, 4, 2),
    ]
    assert [t.key for t in plan.trials[:2]] == ["main|nodes=2 threads=1|rep1", "main|nodes=2 threads=1|rep2"]
    assert all(t.test == "oltp_read_write" and t.duration == 3 and t.warmup == 1 for t in plan.trials)


def test_profile_selection() -> None:
    plan = expand(exp(profile="quick"))
    assert [(t.nodes, t.threads, t.rep) for t in plan.trials] == [(2, 8, 1), (1, 8, 1)]
    assert plan.experiment.profile == "quick"
    assert plan.id != expand(exp()).id


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"no profile 'fast' \(profiles in the file: quick\)"):
        exp(profile="fast")


def test_resource_factors_are_set_at_runtime_and_never_split_the_cluster() -> None:
    text = SMALL.replace("threads = [1, 4]", "cpu_quota = [1.0, 0.5]\nwsrep_slave_threads = [1, 4]")
    plan = expand(exp(text))
    assert len(plan.groups()) == 1
    # descending nodes, then server variables (every trial sets them explicitly), then grid order;
    # each trial keeps its own cpu_quota in a topology sized for the group's largest node count
    got = [
        (t.nodes, t.topology.resources.cpu_quota, dict(t.server)["wsrep_slave_threads"]) for t in plan.trials
    ]
    assert got == [
        (2, 1.0, 1), (2, 1.0, 1), (2, 0.5, 1), (2, 0.5, 1),
        (2, 1.0, 4), (2, 1.0, 4), (2, 0.5, 4), (2, 0.5, 4),
        (1, 1.0, 1), (1, 1.0, 1), (1, 0.5, 1), (1, 0.5, 1),
        (1, 1.0, 4), (1, 1.0, 4), (1, 0.5, 4), (1, 0.5, 4),
    ]  # fmt: skip
    assert {t.topology.cluster.nodes for t in plan.trials} == {2}


def test_a_different_base_server_setting_is_a_new_cluster() -> None:
    from clusterbench.experiment.planner import _build_key, sized

    base = exp().topology
    other = base.model_copy(update={"mariadb": base.mariadb.model_copy(update={"gcache_size": "256M"})})
    limited = base.model_copy(update={"resources": base.resources.model_copy(update={"cpu_quota": 0.5})})
    assert _build_key(base) != _build_key(other)
    assert _build_key(base) == _build_key(limited) == _build_key(sized(limited, 5))


def test_parts_share_a_cluster_and_rate_of_max_runs_last() -> None:
    text = """
[experiment]
name = "t"
repetitions = 1
[topology.cluster]
name = "cbexp"
[parts.sweep.factors]
nodes = [3, 5]
threads = [1, 8]
[parts.sustained]
factors = { nodes = [3, 5] }
workload = { rate_of_max = 0.75 }
"""
    plan = expand(exp(text))
    assert len(plan.groups()) == 1
    assert [(t.part, t.nodes, t.threads, t.rate_text()) for t in plan.trials] == [
        # descending nodes; each node count's rate_of_max trial right after the sweep it needs
        ("sweep", 5, 1, "max"),
        ("sweep", 5, 8, "max"),
        ("sustained", 5, 4, "75% of max"),
        ("sweep", 3, 1, "max"),
        ("sweep", 3, 8, "max"),
        ("sustained", 3, 4, "75% of max"),
    ]
    assert {t.topology.cluster.nodes for t in plan.trials} == {5}


def test_tls_adds_certificates_without_splitting() -> None:
    text = SMALL.replace("threads = [1, 4]", "tls = [false, true]")
    plan = expand(exp(text), {"ssl_ca": "/x/cacert.pem"})
    assert len(plan.groups()) == 1
    assert all(t.topology.mariadb.extra == {"ssl_ca": "/x/cacert.pem"} for t in plan.trials)
    assert [t.tls for t in plan.trials[:4]] == [False, False, True, True]


def test_estimate_counts_each_step_once() -> None:
    plan = expand(exp())
    c = CostModel()
    est = plan.estimate(c)
    assert est.phases["measuring"] == 8 * 3
    assert est.phases["warm-up"] == 8 * 1
    assert est.phases["bring-up"] == pytest.approx(c.up_base + 2 * c.up_per_node)
    # the cluster starts at 2 nodes and shrinks once (2 -> 1) in the middle; nothing starts
    assert est.phases["node changes"] == pytest.approx(c.node_stop + c.balancer_settle)
    assert est.phases["prepare"] == pytest.approx(c.prepare_base + 4 * 10000 / c.prepare_rows_per_s)
    done = {t.key for t in plan.trials}
    assert plan.estimate(c, done).total == 0


def test_separate_schemas_prepare_each_once() -> None:
    text = SMALL.replace("threads = [1, 4]", "clients = [1, 2]").replace(
        "warmup = 1", "warmup = 1\nseparate_schemas = true"
    )
    plan = expand(exp(text))
    assert plan.trials[0].databases() == ["sbtest1"]
    assert [t.databases() for t in plan.trials if t.clients == 2][0] == ["sbtest1", "sbtest2"]
    est = plan.estimate()
    c = CostModel()
    assert est.phases["prepare"] == pytest.approx(2 * (c.prepare_base + 40000 / c.prepare_rows_per_s))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("nodes = [2, 1]", "nodes = [2, 12]"), "x.toml: factors.nodes: node counts must be 1-9 (got 12)"),
        (("threads = [1, 4]", "thread = [1, 4]"), "x.toml: unknown key 'factors.thread'"),
        (
            ("duration = 3", "duration = 0"),
            "x.toml: workload.duration: Input should be greater than or equal to 1",
        ),
        (
            ("repetitions = 2", "repetitions = 'x'"),
            "x.toml: experiment.repetitions: repetitions must be a number 1-100 or \"auto\" (got 'x')",
        ),
        (("threads = [1, 4]", "threads = []"), "x.toml: factors.threads: needs at least one level"),
        (("threads = [1, 4]", "workload = ['oltp_nope']"), "x.toml: factors.workload: unknown sysbench test"),
        (('name = "cbexp"', 'name = "Bad"'), "x.toml: topology.cluster.name: 'Bad' must be 1-8 characters"),
    ],
)
def test_validation_errors_name_the_field(change: tuple[str, str], message: str) -> None:
    with pytest.raises(InputError) as ei:
        exp(SMALL.replace(*change))
    assert message in str(ei.value)


def test_profile_errors_name_the_profile() -> None:
    with pytest.raises(
        InputError, match=r"x.toml \(profile quick\): factors.threads: levels must be at least 1"
    ):
        exp(SMALL.replace("threads = [8]", "threads = [0]"), "quick")
    with pytest.raises(InputError, match=r"unknown key 'profiles.quick.factor'"):
        exp(SMALL.replace("factors = { threads = [8] }", "factor = { threads = [8] }"), "quick")


def test_baseline_must_be_a_level() -> None:
    with pytest.raises(InputError, match=r"experiment.baseline.nodes: 7 is not a level"):
        exp(SMALL.replace("repetitions = 2", "repetitions = 2\nbaseline = { nodes = 7 }"))


def test_no_factors() -> None:
    with pytest.raises(InputError, match="no factors"):
        exp(SMALL.split("[factors]")[0])


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
@pytest.mark.parametrize("profile", ["quick", "full"])
def test_shipped_experiments_plan(path: Path, profile: str) -> None:
    plan = expand(load_experiment(path, profile))
    if plan.experiment.search is not None:  # a search: its trials are chosen as it runs
        from clusterbench.experiment.search_run import estimate, preview

        assert preview(plan.experiment)
        if profile == "quick":
            total = estimate(plan.experiment).total
            assert total <= 15 * 60, f"{path.name} quick is estimated at {total:.0f} s"
        return
    assert plan.trials
    assert len({t.key for t in plan.trials}) == len(plan.trials)
    est = plan.estimate()
    if profile == "quick":
        assert est.total <= 15 * 60, f"{path.name} quick is estimated at {est.total:.0f} s"


FAULTY = """
[experiment]
name = "f"
repetitions = 2
[topology.cluster]
name = "cbexp"
nodes = 3
[workload]
duration = 20
warmup = 2
[[workload.faults]]
kind = "kill-node"
target = "one"
at = 8
for = 4
[factors]
nodes = [3]
"""


def test_faults_are_planned_per_trial_reproducibly() -> None:
    plan = expand(exp(FAULTY))
    assert [len(t.faults) for t in plan.trials] == [1, 1]
    first = [t.planned_faults() for t in plan.trials]
    again = [t.planned_faults() for t in expand(exp(FAULTY)).trials]
    assert [[(f.kind, f.nodes, f.at, f.until) for f in fs] for fs in first] == [
        [(f.kind, f.nodes, f.at, f.until) for f in fs] for fs in again
    ]
    (f,) = first[0]
    assert (f.kind, len(f.nodes), f.at, f.until) == ("kill-node", 1, 8.0, 12.0)
    assert f.nodes[0] in (1, 2, 3)
    assert plan.trials[0].describe()["faults"] == [
        {"kind": "kill-node", "target": "one", "at": 8.0, "for": 4.0}
    ]


def test_a_part_can_run_without_the_base_faults() -> None:
    text = FAULTY.replace(
        "[factors]\nnodes = [3]",
        "[parts.a.factors]\nnodes = [3]\n[parts.b]\nfactors = { nodes = [3] }\nworkload = { faults = [] }",
    )
    plan = expand(exp(text))
    assert {(t.part, len(t.faults)) for t in plan.trials} == {("a", 1), ("b", 0)}


def test_a_fault_that_outlasts_the_trial_is_refused_naming_the_part() -> None:
    text = FAULTY.replace("at = 8", "at = 20")
    with pytest.raises(InputError, match=r"parts\.main\.workload\.faults \(nodes=3\): fault 1 \(kill-node\): "
                       r"it would heal at 24 s, after the load ends \(22 s\)"):
        expand(exp(text))


def test_a_fault_target_beyond_the_running_nodes_is_refused() -> None:
    text = FAULTY.replace('target = "one"', 'target = "minority"').replace("nodes = [3]", "nodes = [3, 1]")
    with pytest.raises(InputError, match=r"\(nodes=1\): fault 1 \(kill-node\): target minority: a 1-node"):
        expand(exp(text))


def test_an_unknown_fault_field_names_it() -> None:
    text = FAULTY.replace("for = 4", "for = 4\nseconds = 3")
    with pytest.raises(InputError, match=r"unknown key 'workload\.faults\[0\]\.seconds'"):
        exp(text)


def test_interleaved_repetitions_run_every_point_once_per_round() -> None:
    text = SMALL.replace('repetitions = 2', 'repetitions = 2\nrepetition_order = "interleaved"')
    plan = expand(exp(text))
    got = [(t.rep, t.nodes, t.threads) for t in plan.trials]
    assert got == [
        (1, 2, 1), (1, 2, 4), (1, 1, 1), (1, 1, 4),
        (2, 2, 1), (2, 2, 4), (2, 1, 1), (2, 1, 4),
    ]  # fmt: skip
    est = plan.estimate(CostModel())
    c = CostModel()
    # shrinks 2 -> 1 in each round, grows back 1 -> 2 once between them
    shrink, grow = c.node_stop + c.balancer_settle, c.node_start + c.balancer_settle
    assert est.phases["node changes"] == pytest.approx(2 * shrink + grow)


def test_unknown_repetition_order_is_refused() -> None:
    with pytest.raises(InputError, match=r"experiment\.repetition_order"):
        exp(SMALL.replace('repetitions = 2', 'repetitions = 2\nrepetition_order = "random"'))


def test_plan_id_changes_with_any_setting_but_not_with_the_order() -> None:
    base = expand(exp()).id
    assert expand(exp()).id == base
    assert expand(exp(SMALL.replace("duration = 3", "duration = 4"))).id != base
    assert expand(exp(SMALL.replace('name = "cbexp"', 'name = "cbexp"\nnodes = 2'))).id == base
    tweaked = SMALL.replace("[workload]", "[topology.mariadb]\ngcache_size = \"256M\"\n\n[workload]")
    assert expand(exp(tweaked)).id != base
    interleaved = SMALL.replace("repetitions = 2", 'repetitions = 2\nrepetition_order = "interleaved"')
    assert expand(exp(interleaved)).id == base


ACCESS = """
[experiment]
name = "am"
repetitions = 1
[topology.cluster]
name = "cbexp"
nodes = 3
[workload]
table_size = 1000
duration = 3
[factors]
row_size = [20, 2048]
workload = ["access_pk", "access_pk_batch"]
"""


ACCESS_FACTORS = 'row_size = [20, 2048]\nworkload = ["access_pk", "access_pk_batch"]'


def test_access_methods_sweep_method_and_row_size_and_prepare_once_per_size() -> None:
    plan = expand(exp(ACCESS))
    got = [(t.test, t.row_size, t.batch, t.dataset()) for t in plan.trials]
    assert got == [
        ("access_pk", 20, 32, (1, 1000, 20, 32)),
        ("access_pk_batch", 20, 32, (1, 1000, 20, 32)),
        ("access_pk", 2048, 32, (1, 1000, 2048, 32)),
        ("access_pk_batch", 2048, 32, (1, 1000, 2048, 32)),
    ]
    assert plan.trials[0].describe()["row_size"] == 20 and plan.trials[0].describe()["batch"] == 32
    c = CostModel()
    prepare = plan.estimate(c).phases["prepare"]
    assert prepare == pytest.approx(2 * (c.prepare_base + 1000 / c.prepare_rows_per_s))
    # other tests keep their trial descriptions (and so their plan ids)
    assert "row_size" not in expand(exp()).trials[0].describe()


def test_batch_and_row_size_without_an_access_trial_are_refused_naming_the_key() -> None:
    oltp = ACCESS.replace(ACCESS_FACTORS, "threads = [1, 2]")
    for change, named in (("duration = 3\nbatch = 8", "workload.batch"), ("duration = 3\nrow_size = 512",
                          "workload.row_size"), ("threads = [1, 2]", None)):  # fmt: skip
        text = oltp.replace("duration = 3", change) if named else oltp + "row_size = [20, 512]\n"
        with pytest.raises(InputError) as info:
            expand(exp(text))
        what = named or "factor row_size"
        assert str(info.value) == (
            f"x.toml: parts.main: {what} is a setting of the access_* tests and no trial runs one; "
            'remove it or add workload = "access_pk" (or another access_* test)'
        )
    assert len(expand(exp(oltp)).trials) == 2  # the same file without them


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("table_size = 1000", "table_size = 10\nbatch = 32"), "x.toml: parts.main: batch 32 is more than"),
        (("row_size = [20, 2048]", "row_size = [8]"), "x.toml: factors.row_size: row sizes must be 16-16384"),
        (
            ('workload = ["access_pk", "access_pk_batch"]', 'workload = ["mysqlslap"]\nclients = [1, 2]'),
            "x.toml: parts.main: mysqlslap runs as one client process; set clients = 1, vary threads",
        ),
        (
            ("duration = 3", 'duration = 3\ntarget = "all-nodes"\nworkload = "mysqlslap"'),
            "mysqlslap connects to one address",
        ),
    ],
)
def test_own_workloads_are_checked_when_loading(change: tuple[str, str], message: str) -> None:
    text = ACCESS.replace(*change)
    if "workload = \"mysqlslap\"" in text:
        text = text.replace('workload = ["access_pk", "access_pk_batch"]\n', "")
    with pytest.raises(InputError) as ei:
        exp(text)
    assert message in str(ei.value)


def test_mysqlslap_prepares_nothing() -> None:
    text = ACCESS.replace(ACCESS_FACTORS, 'workload = ["mysqlslap"]')
    plan = expand(exp(text))
    assert {t.dataset() for t in plan.trials} == {()}
    assert plan.estimate().phases.get("prepare", 0) == pytest.approx(CostModel().prepare_base)


INTERCONNECT = ACCESS.replace(
    'row_size = [20, 2048]\nworkload = ["access_pk", "access_pk_batch"]',
    'interconnect = ["socket", "tcp", "haproxy", "shaped"]\nworkload = ["access_pk", "access_noop"]',
).replace("duration = 3", 'duration = 3\ntarget = "node:2"\nshaped_bandwidth = "10mbit"')


def test_interconnect_decides_target_and_shapes_only_its_trials() -> None:
    plan = expand(exp(INTERCONNECT))
    got = [(t.interconnect, t.test, t.target, t.topology.resources.bandwidth) for t in plan.trials]
    assert got == [
        ("socket", "access_pk", "node:2", None),
        ("socket", "access_noop", "node:2", None),
        ("tcp", "access_pk", "node:2", None),
        ("tcp", "access_noop", "node:2", None),
        ("haproxy", "access_pk", "balancer", None),
        ("haproxy", "access_noop", "balancer", None),
        ("shaped", "access_pk", "node:2", "10mbit"),
        ("shaped", "access_noop", "node:2", "10mbit"),
    ]
    assert len(plan.groups()) == 1  # shaping is a runtime limit: one cluster for all of them
    assert plan.trials[0].describe()["interconnect"] == "socket"
    assert "interconnect" not in expand(exp(ACCESS)).trials[0].describe()  # plan ids of others unchanged


def test_interconnect_without_a_node_target_reaches_node_1_and_a_bandwidth_factor_wins() -> None:
    text = INTERCONNECT.replace('target = "node:2"\n', "").replace(
        'interconnect = ["socket", "tcp", "haproxy", "shaped"]',
        'interconnect = ["shaped"]\nbandwidth = ["1gbit"]',
    )
    plan = expand(exp(text))
    assert {(t.target, t.topology.resources.bandwidth) for t in plan.trials} == {("node:1", "1gbit")}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ('"shaped"]', '"fast"]'),
            "x.toml: factors.interconnect[3]: Input should be 'socket', 'tcp', 'haproxy' or 'shaped' "
            "(got 'fast')",
        ),
        (
            ('"10mbit"', '"fast"'),
            "x.toml: workload.shaped_bandwidth: 'fast' is not a rate like '100mbit' (got 'fast')",
        ),
        (
            ("[factors]", '[factors]\ntarget = ["node:1"]'),
            "x.toml: parts.main.factors.target: the factor "
            "interconnect decides the target; remove one of them",
        ),
        (
            ("[workload]", '[topology.balancer]\nkind = "none"\n[workload]'),
            "x.toml: parts.main: interconnect haproxy needs a balancer; "
            "set topology.balancer.kind = 'haproxy'",
        ),
    ],
)
def test_bad_interconnects_are_refused_naming_the_field(change: tuple[str, str], message: str) -> None:
    with pytest.raises(InputError) as ei:
        exp(INTERCONNECT.replace(*change))
    assert message in str(ei.value)
    assert len(str(ei.value).splitlines()) == 1
