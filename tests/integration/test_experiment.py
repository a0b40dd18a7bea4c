"""A 2 x 2 experiment (nodes x threads) with 2 repetitions end to end on real servers: run,
interrupt after three trials, resume (finished trials are skipped), report, compare."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.cli.common import sysbench_runner
from clusterbench.experiment.load import experiment_from_data
from clusterbench.experiment.planner import TrialSpec, expand
from clusterbench.experiment.report import write_experiment_report
from clusterbench.experiment.results import point_stats
from clusterbench.experiment.runner import ExperimentInterrupted, ExperimentListener, ExperimentRunner
from clusterbench.spec.topology import parse_toml
from clusterbench.store import Store
from clusterbench.workloads import RunResult

from .conftest import leftovers

SPEC = """
[experiment]
name = "itest"
repetitions = 2
baseline = { nodes = 1 }

[topology.cluster]
name = "cbexp"
subnet = "198.18.206.0/24"

[topology.mariadb]
evs_suspect_timeout = 2.0
evs_inactive_timeout = 4.0
evs_keepalive_period = 0.5

[workload]
tests = ["oltp_read_write"]
tables = 2
table_size = 1000
duration = 3
warmup = 1

[factors]
nodes = [1, 2]
threads = [1, 4]
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
def test_experiment_end_to_end_with_resume(cb_home: Path, tmp_path: Path) -> None:
    exp = experiment_from_data(parse_toml(SPEC, "itest.toml"), "itest.toml")
    plan = expand(exp)
    assert len(plan.trials) == 8
    try:
        with Store.open(tmp_path / "results.db") as store:
            first = StopAfter(3)
            with pytest.raises(ExperimentInterrupted):
                ExperimentRunner(plan, store, sysbench_runner(), home=cb_home, listener=first).run()
            assert leftovers("cbexp") == []
            run_id = store.list_runs()[-1].id
            assert store.get_run(run_id).status == "interrupted"

            second = StopAfter(99)
            out = ExperimentRunner(plan, store, sysbench_runner(), home=cb_home, listener=second).run()
            assert out.run_id == run_id and out.status == "completed"
            assert out.skipped == 3 and out.ran == 5
            assert not set(first.finished) & set(second.finished)
            assert 0 < out.ledger.not_measuring_share() < 1
            assert out.ledger.measuring >= 5 * 3 * 0.8

            points = point_stats(store, run_id)
            assert [p.label for p in points] == [
                "nodes=1 threads=1",
                "nodes=1 threads=4",
                "nodes=2 threads=1",
                "nodes=2 threads=4",
            ]
            for p in points:
                assert p.n == 2 and p.tps_ci is not None and p.tps_ci.median > 0
                assert p.p95_pooled is not None and p.p95_pooled > 0
            # the nodes=2 trials really ran on two nodes
            params = [tr.params for tr in store.trials(run_id) if tr.status == "completed"]
            assert {p["nodes"] for p in params} == {1, 2}
            prov = [store.provenance(run_id, tr.id) for tr in store.trials(run_id) if tr.params["nodes"] == 2]
            assert all(p["engine_status@start"]["n1"]["wsrep_cluster_size"] == "2" for p in prov)

            paths = write_experiment_report(store, run_id, tmp_path / "rep")
            page, md = paths[0].read_text(), paths[1].read_text()
            assert "<h2>Per-second series</h2>" in page and "<script" not in page and "<svg" in page
            assert "| 2 | 4 | 2 |" in md  # nodes=2 threads=4: two repetitions
            assert len(paths[2].read_text().splitlines()) == 5

            # a third invocation has nothing left to do
            again = ExperimentRunner(plan, store, sysbench_runner(), home=cb_home).run()
            assert again.ran == 0 and again.skipped == 8
    finally:
        from clusterbench.cluster import Cluster

        Cluster(plan.trials[0].topology, home=cb_home).down()
    assert leftovers("cbexp") == []


FAULT_SPEC = """
[experiment]
name = "itest-fault"
repetitions = 2

[topology.cluster]
name = "cbexpf"
subnet = "198.18.207.0/24"
nodes = 3

[topology.mariadb]
evs_suspect_timeout = 2.0
evs_inactive_timeout = 4.0
evs_keepalive_period = 0.5

[workload]
tests = ["oltp_write_only"]
tables = 2
table_size = 1000
threads = 2
duration = 10
warmup = 1
# writes in flight through the kill, not a closed loop taking the CPUs other test files need
rate = 25

[[workload.faults]]
kind = "kill-node"
target = "node:3"
at = 4
for = 2

[factors]
nodes = [3]
"""


@pytest.mark.integration
def test_experiment_runs_a_fault_schedule_in_every_trial(cb_home: Path, tmp_path: Path) -> None:
    exp = experiment_from_data(parse_toml(FAULT_SPEC, "itestf.toml"), "itestf.toml")
    plan = expand(exp)
    try:
        with Store.open(tmp_path / "results.db") as store:
            out = ExperimentRunner(plan, store, sysbench_runner(), home=cb_home).run()
            assert out.status == "completed" and out.ran == 2
            run_id = out.run_id
            trials = store.trials(run_id)
            events = store.events(run_id)
            for tr in trials:
                phases = [
                    e["detail"]["phase"] for e in events if e["kind"] == "fault" and e["trial_id"] == tr.id
                ]
                assert phases == ["start", "applied", "end"]
                (eff,) = [e for e in events if e["kind"] == "fault_effect" and e["trial_id"] == tr.id]
                d = eff["detail"]
                assert 3.9 <= d["start"] <= 5.0 and d["end"] >= d["start"] + 1.9
                assert d["tps_before"] is not None and d["tps_before"] > 0
                assert isinstance(d["errors_until_recovered"], int) and d["errors_until_recovered"] >= 0
            # the second trial started on a healed cluster: n3 was restarted and Synced at size 3
            second = store.provenance(run_id, trials[1].id)
            assert second["engine_status@start"]["n3"]["wsrep_cluster_size"] == "3"
            assert second["engine_status@start"]["n3"]["wsrep_local_state_comment"] == "Synced"
            page = write_experiment_report(store, run_id, tmp_path / "rep")[0].read_text()
            assert "Faults inside trials" in page and "kill-node" in page
            assert out.ledger.phases.get("faults", 0) > 0
    finally:
        from clusterbench.cluster import Cluster

        Cluster(plan.trials[0].topology, home=cb_home).down()
    assert leftovers("cbexpf") == []


LIMITS_SPEC = """
[experiment]
name = "itest-limits"
repetitions = 1

[topology.cluster]
name = "cbexpl"
subnet = "198.18.208.0/24"
nodes = 1

[topology.clients]
hosts = 2

[workload]
tests = ["oltp_point_select"]
tables = 1
table_size = 1000
clients = 2
duration = 2
warmup = 0

[factors]
cpu_quota = [0.5, 1.5]
bandwidth = ["20mbit", "50mbit"]
"""


class SeeLimits(ExperimentListener):
    """Reads the node's real cgroup quota and tbf rate when each trial starts."""

    def __init__(self, plan_name: str) -> None:
        from clusterbench.providers.naming import Names

        self.names = Names(plan_name)
        self.seen: list[tuple[str, str, str]] = []

    def trial_started(self, t: TrialSpec, opts: object) -> None:
        import subprocess

        role = self.names.node_role(1)
        quota = Path(f"/sys/fs/cgroup/cpu/{self.names.cgroup(role)}/cpu.cfs_quota_us").read_text().strip()
        qdisc = subprocess.run(
            ["tc", "qdisc", "show", "dev", self.names.veth(role)], capture_output=True, text=True, check=True
        ).stdout
        rate = next(w for w in qdisc.split("rate ")[1].split())
        self.seen.append((t.point_label, quota, rate))


@pytest.mark.integration
def test_limits_change_at_runtime_and_clients_use_client_hosts(cb_home: Path, tmp_path: Path) -> None:
    exp = experiment_from_data(parse_toml(LIMITS_SPEC, "itestl.toml"), "itestl.toml")
    plan = expand(exp)
    assert len(plan.groups()) == 1
    view = SeeLimits("cbexpl")
    try:
        with Store.open(tmp_path / "results.db") as store:
            out = ExperimentRunner(plan, store, sysbench_runner(), home=cb_home, listener=view).run()
            assert out.status == "completed" and out.ran == 4
            # the two client processes of every trial ran on the two client namespaces
            for tr in store.trials(out.run_id):
                hosts = [c["host"] for c in store.trial_clients(tr.id)]
                assert hosts == ["cb-cbexpl-c1", "cb-cbexpl-c2"], hosts
    finally:
        from clusterbench.cluster import Cluster

        Cluster(plan.trials[0].topology, home=cb_home).down()
    # one bring-up for all four points, and each trial ran under its own limits
    assert out.ledger.phases.get("bring-up", 0) > 0
    assert sorted(view.seen) == [
        ("cpu_quota=0.5 bandwidth=20mbit", "50000", "20Mbit"),
        ("cpu_quota=0.5 bandwidth=50mbit", "50000", "50Mbit"),
        ("cpu_quota=1.5 bandwidth=20mbit", "150000", "20Mbit"),
        ("cpu_quota=1.5 bandwidth=50mbit", "150000", "50Mbit"),
    ]
    assert leftovers("cbexpl") == []
