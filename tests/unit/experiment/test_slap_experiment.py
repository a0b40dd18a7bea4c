"""mysqlslap settings in experiment files: slap_load_type, slap_queries, slap_query and slap_engine
are [workload] keys (the first, second and fourth also factors), checked like the --slap-* flags;
the plan shows them, and they reach mariadb-slap's argv and the stored trial. Fakes for the
cluster and the mariadb-slap process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from clusterbench.cli.plan import plan_record, settings_lines
from clusterbench.errors import InputError
from clusterbench.experiment.load import experiment_from_data
from clusterbench.experiment.planner import expand
from clusterbench.experiment.report import build_experiment_report
from clusterbench.experiment.runner import ExperimentRunner
from clusterbench.experiment.spec import Experiment
from clusterbench.spec.endpoint import Endpoint
from clusterbench.spec.topology import parse_toml
from clusterbench.store import Store
from clusterbench.workloads.placement import ClientHost
from clusterbench.workloads.runner import SysbenchRunner
from clusterbench.workloads.slap import SlapOutcome, SlapRunner
from tests.unit.experiment.test_tpcc_experiment import Cluster, Notes
from tests.unit.runner.test_bench_tpcc import DB
from tests.unit.workloads.test_slap import OUTPUT, FakeClock

BASE = """
[experiment]
name = "sl"
repetitions = 1

[topology.cluster]
name = "slx1"
subnet = "198.18.231.0/24"
nodes = 3

[workload]
workload = "mysqlslap"
target = "node:1"
threads = 4
duration = 2
slap_queries = 50
slap_engine = "Aria"

[factors]
slap_load_type = ["read", "write"]
"""


def exp(text: str = BASE) -> Experiment:
    return experiment_from_data(parse_toml(text, "x.toml"), "x.toml")


def test_settings_and_factors_reach_every_trial_and_the_plan() -> None:
    plan = expand(exp())
    got = [(t.point_label, t.slap_load_type, t.slap_queries, t.slap_query, t.slap_engine)
           for t in plan.trials]  # fmt: skip
    assert got == [
        ("slap_load_type=read", "read", 50, None, "Aria"),
        ("slap_load_type=write", "write", 50, None, "Aria"),
    ]
    # the trial description (and so the plan id) carries the settings off mysqlslap's defaults
    d = plan.trials[0].describe()
    assert (d["slap_load_type"], d["slap_queries"], d["slap_engine"]) == ("read", 50, "Aria")
    assert "slap_query" not in d
    # `plan`: one line per part for what is not in the point; `plan --json`: every trial's settings
    assert settings_lines(plan) == ["part main, mysqlslap: slap_queries=50, slap_engine='Aria'"]
    trials = plan_record(plan, set())["trials"]
    assert [t["settings"] for t in trials] == [
        {"slap_load_type": "read", "slap_queries": 50, "slap_engine": "Aria"},
        {"slap_load_type": "write", "slap_queries": 50, "slap_engine": "Aria"},
    ]


def test_defaults_keep_earlier_plan_ids_and_a_query_replaces_the_generated_load() -> None:
    plain = BASE.replace("slap_queries = 50\n", "").replace('slap_engine = "Aria"\n', "")
    plain = plain.replace('slap_load_type = ["read", "write"]', "threads = [4]")
    (t,) = expand(exp(plain)).trials
    assert (t.slap_load_type, t.slap_queries, t.slap_query, t.slap_engine) == ("mixed", 100, None, "InnoDB")
    assert not any(k.startswith("slap_") for k in t.describe())  # as before these keys existed
    sql = plain.replace('target = "node:1"', 'target = "node:1"\nslap_query = "SELECT 1"\nslap_queries = 7')
    (q,) = expand(exp(sql)).trials
    assert q.describe()["slap_query"] == "SELECT 1" and q.describe()["slap_queries"] == 7
    assert q.test_settings() == {"slap_query": "SELECT 1", "slap_queries": 7}


def test_a_factor_of_queries_and_engines_in_a_part() -> None:
    text = BASE + '[parts.sizes.factors]\nslap_queries = [10, 200]\nslap_engine = ["InnoDB", "MyISAM"]\n'
    plan = expand(exp(text))
    sizes = [(t.slap_queries, t.slap_engine, t.slap_load_type) for t in plan.trials if t.part == "sizes"]
    assert sizes == [(10, "InnoDB", "mixed"), (10, "MyISAM", "mixed"), (200, "InnoDB", "mixed"),
                     (200, "MyISAM", "mixed")]  # fmt: skip
    assert "part sizes, mysqlslap: slap_load_type='mixed'" in settings_lines(plan)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("slap_queries = 50", "slap_queries = 0"),
            "x.toml: workload.slap_queries: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            ('slap_engine = "Aria"', 'slap_engine = "Aria; DROP"'),
            "x.toml: workload.slap_engine: not a storage engine name; give one like InnoDB "
            "(a letter, then letters, digits or _) (got 'Aria; DROP')",
        ),
        (
            ('"read", "write"]', '"read", "random"]'),
            "x.toml: factors.slap_load_type[1]: Input should be 'mixed', 'read', 'write', 'key' or 'update' "
            "(got 'random')",
        ),
        (
            ('slap_load_type = ["read", "write"]', "slap_queries = [5, 0]"),
            "x.toml: factors.slap_queries: levels must be at least 1 (got 0)",
        ),
        (
            ('slap_load_type = ["read", "write"]', 'slap_engine = ["InnoDB", "1x"]'),
            "x.toml: factors.slap_engine: not a storage engine name; give one like InnoDB "
            "(a letter, then letters, digits or _) (got '1x')",
        ),
        (
            ("slap_queries = 50", 'slap_queries = 50\nslap_query = """SELECT 1;\nSELECT 2"""'),
            "x.toml: workload.slap_query: give the SQL on one line (separate statements with ';') "
            "(got 'SELECT 1;\\nSELECT 2')",
        ),
        (
            ("slap_queries = 50", 'slap_queries = 50\nslap_query = "SELECT 1"'),
            "x.toml: parts.main: workload.slap_query replaces the auto-generated load, so factor "
            "slap_load_type does nothing; remove one of them",
        ),
        (
            ('workload = "mysqlslap"\n', 'workload = "oltp_read_only"\n'),
            "x.toml: parts.main: workload.slap_queries is a mysqlslap setting and no trial runs mysqlslap; "
            'remove it or add workload = "mysqlslap"',
        ),
    ],
)
def test_bad_settings_are_one_line_naming_the_field(change: tuple[str, str], message: str) -> None:
    with pytest.raises(InputError) as ei:
        exp(BASE.replace(*change))
    assert str(ei.value) == message


def test_slap_factors_need_a_mysqlslap_trial() -> None:
    text = (BASE.replace('workload = "mysqlslap"\n', 'workload = "oltp_read_only"\n')
            .replace("slap_queries = 50\n", "").replace('slap_engine = "Aria"\n', ""))  # fmt: skip
    with pytest.raises(InputError) as ei:
        exp(text)
    assert str(ei.value) == (
        "x.toml: parts.main: factor slap_load_type is a mysqlslap setting and no trial runs mysqlslap; "
        'add workload = "mysqlslap" or remove the factor'
    )
    # beside another test in the factor workload, they apply to its mysqlslap trials
    mixed = text.replace("[factors]", '[factors]\nworkload = ["oltp_read_only", "mysqlslap"]')
    assert {t.test for t in expand(exp(mixed)).trials} == {"oltp_read_only", "mysqlslap"}


class NoServers(SysbenchRunner):
    """The real runner (mysqlslap through SlapRunner) without the up-front connection check."""

    def check_endpoint(self, endpoint: Endpoint, databases: Sequence[str] | None = None,
                       tls: bool | None = None) -> None:  # fmt: skip
        pass


def test_the_runner_passes_them_to_mariadb_slap_and_stores_them_with_the_trial(tmp_path: Path) -> None:
    plan = expand(exp())
    clock = FakeClock()
    argvs: list[list[str]] = []

    def spawn(host: ClientHost, argv: list[str], timeout: float) -> SlapOutcome:
        argvs.append(argv)
        clock.now += 0.5
        return SlapOutcome(0, OUTPUT, [])

    sb = NoServers(shim=None, slap=SlapRunner(spawn=spawn, monotonic=clock, secrets_dir=tmp_path))
    store = Store.open(tmp_path / "r.db")
    run_id = store.create_run("experiment", name="sl")
    db = DB()
    notes = Notes()
    runner = ExperimentRunner(plan, store, sb, home=tmp_path, listener=notes, facts=dict, telemetry=False,
                              connect=db.connect)  # fmt: skip
    runner.cluster = Cluster(plan.trials[0].topology)  # type: ignore[assignment]
    runner.running = 3
    statuses = [runner._trial(run_id, i, t) for i, t in enumerate(plan.trials, 1)]
    assert statuses == ["completed", "completed"]
    assert len(argvs) == 8  # 2 s of 0.5-s runs per trial
    for argv, load_type in ((argvs[0], "read"), (argvs[-1], "write")):
        assert f"--auto-generate-sql-load-type={load_type}" in argv
        assert "--engine=Aria" in argv and "--number-of-queries=200" in argv  # 50 per client x 4
        assert "--concurrency=4" in argv
    trials = store.trials(run_id)
    keys = ("slap_load_type", "slap_queries", "slap_query", "slap_engine")
    got = [{k: tr.params["options"][k] for k in keys} for tr in trials]
    assert got == [
        {"slap_load_type": "read", "slap_queries": 50, "slap_query": None, "slap_engine": "Aria"},
        {"slap_load_type": "write", "slap_queries": 50, "slap_query": None, "slap_engine": "Aria"},
    ]
    assert [tr.params["slap_load_type"] for tr in trials] == ["read", "write"]  # the trial's description
    assert all(tr.params["slap_queries"] == 50 for tr in trials)
    # nothing is prepared for mysqlslap, and the progress line says so (it said "4 x 10000 rows")
    assert "mysqlslap: nothing to prepare (mariadb-slap makes its own schema cbslap)" in notes.lines
    assert not any(ln.startswith("preparing") for ln in notes.lines)
    # the experiment report's mysqlslap section: 4 measured runs of 200 queries in 2 s per trial
    store.add_tags(run_id, ["env=lab"])  # labels of their own (store schema 5): in the header
    assert ("tags", "env=lab") in build_experiment_report(store, run_id).facts
    sec = next(x for x in build_experiment_report(store, run_id).sections if x.key == "mysqlslap")
    assert [r[:9] for r in sec.tables[0].rows] == [
        ["main", "slap_load_type=read", "read (Aria)", "50", "4", "1", "400 [400, 400]", "0.018", "2.0"],
        ["main", "slap_load_type=write", "write (Aria)", "50", "4", "1", "400 [400, 400]", "0.018", "2.0"],
    ]


SEARCH = """
[experiment]
name = "ss"
[topology.cluster]
name = "slx2"
subnet = "198.18.231.0/24"
[workload]
workload = "{test}"
target = "node:1"
duration = 3
[search]
knobs = {{ threads = [1, 16], slap_load_type = {{ choices = ["read", "write"] }} }}
budget = 4
"""


def test_a_search_tunes_the_load_type_and_refuses_it_without_mysqlslap() -> None:
    from clusterbench.experiment.search_run import make_trial, search_setup

    e = exp(SEARCH.format(test="mysqlslap"))
    t = make_trial(e, search_setup(e), {"threads": 4, "slap_load_type": "write"}, 1, 1)
    assert (t.test, t.threads, t.slap_load_type, t.slap_queries) == ("mysqlslap", 4, "write", 100)
    with pytest.raises(InputError) as ei:
        exp(SEARCH.format(test="oltp_read_only"))
    assert str(ei.value) == (
        "x.toml: factor slap_load_type is a mysqlslap setting and no trial runs mysqlslap; "
        'add workload = "mysqlslap" or remove the factor'
    )
