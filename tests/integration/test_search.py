"""A [search] end to end on real servers: 5 trials chosen by the optimizer over nodes x threads,
interrupted after two, resumed from the store (the stored trials are recorded into a new
optimizer), finished with a confirmed winner; every step an ordinary stored trial; the report
has the search sections; nothing left running."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.cli.common import sysbench_runner
from clusterbench.experiment.load import experiment_from_data
from clusterbench.experiment.planner import TrialSpec, expand
from clusterbench.experiment.report import write_experiment_report
from clusterbench.experiment.runner import ExperimentInterrupted, ExperimentListener
from clusterbench.experiment.search_run import SearchRunner, stored_steps
from clusterbench.spec.topology import parse_toml
from clusterbench.store import Store
from clusterbench.workloads import RunResult

from .conftest import leftovers

SPEC = """
[experiment]
name = "itest-search"

[topology.cluster]
name = "doeit"
subnet = "198.18.35.0/24"

[topology.mariadb]
evs_suspect_timeout = 2.0
evs_inactive_timeout = 4.0
evs_keepalive_period = 0.5

[workload]
tests = ["oltp_read_write"]
tables = 2
table_size = 1000
duration = 2
warmup = 0

[search]
knobs = { nodes = [1, 2], threads = { levels = [1, 4] } }
budget = 5
startup = 2
confirm = 2
contenders = 1
seed = 4
"""


class StopAfter(ExperimentListener):
    def __init__(self, n: int) -> None:
        self.n = n
        self.finished: list[str] = []

    def trial_finished(self, t: TrialSpec, result: RunResult, status: str, wall: float) -> None:
        self.finished.append(t.key)
        if len(self.finished) == self.n:
            raise KeyboardInterrupt


@pytest.mark.integration
def test_search_runs_resumes_and_reports(cb_home: Path, tmp_path: Path) -> None:
    exp = experiment_from_data(parse_toml(SPEC, "s.toml"), "s.toml")
    plan = expand(exp)
    try:
        with Store.open(tmp_path / "results.db") as store:
            first = StopAfter(2)
            with pytest.raises(ExperimentInterrupted):
                SearchRunner(plan, store, sysbench_runner(), home=cb_home, listener=first).run()
            assert leftovers("doeit") == []
            run_id = store.list_runs()[-1].id
            assert len(stored_steps(store, run_id)) == 2

            second = StopAfter(99)
            out = SearchRunner(plan, store, sysbench_runner(), home=cb_home, listener=second).run()
            assert out.run_id == run_id and out.status == "completed"
            assert out.skipped == 2 and out.ran == 3
            steps = stored_steps(store, run_id)
            assert len(steps) == 5 and all(s.values is not None and s.values["tps"] > 0 for s in steps)
            trials = [tr for tr in store.trials(run_id) if tr.status == "completed"]
            assert {tr.params["part"] for tr in trials} == {"search"}
            for tr in trials:  # the node count asked for is the one that ran
                prov = store.provenance(run_id, tr.id)
                assert prov["engine_status@start"]["n1"]["wsrep_cluster_size"] == str(tr.params["nodes"])
            result = [e["detail"] for e in store.events(run_id) if e["kind"] == "search_result"][-1]
            w = result["winner"]
            assert w is not None and w["n"] >= 2 and w["median"] > 0 and result["trials"] == 5
            page = write_experiment_report(store, run_id, tmp_path / "rep")[0].read_text()
            assert "<h2>Search</h2>" in page and w["label"] in page
    finally:
        from clusterbench.cluster import Cluster

        Cluster(exp.topology, home=cb_home).down()
    assert leftovers("doeit") == []
