"""What an experiment trial records about its servers: each node's variables and its engine's own
status, and at the run level the server versions only the servers know."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from clusterbench.experiment.planner import Plan
from clusterbench.experiment.runner import ExperimentRunner
from clusterbench.runner.provenance import VARIABLES_SQL
from clusterbench.store import Store
from clusterbench.trial.recorder import TrialRecord
from clusterbench.workloads import SysbenchRunner


class Member:
    def __init__(self, index: int, up: bool = True) -> None:
        self.index, self.up = index, up

    def alive(self) -> bool:
        return self.up

    def query(self, sql: str, timeout: float = 2.0) -> list[tuple[str, str]]:
        assert sql == VARIABLES_SQL
        return [("version", "9.7.4-2"), ("group_replication_single_primary_mode", "ON")]

    def engine_status(self) -> dict[str, str]:
        return {"member_state": "ONLINE", "rootfs_package": "mysql-server-core 9.7.4-2"}


class Group:
    def node(self, i: int) -> Member:
        return Member(i, up=i != 3)


def test_a_group_replication_trial_records_each_members_status_and_the_mysql_version(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.db")
    run_id = store.create_run("experiment", name="t")
    store.set_provenance(run_id, "versions", {"sysbench": "sysbench 1.0.20"})
    trial_id = store.add_trial(run_id, 1, "oltp_read_write", {})
    runner = ExperimentRunner(
        cast(Plan, None), store, cast(SysbenchRunner, None), home=tmp_path, facts=lambda: {}, telemetry=False
    )
    runner.cluster = cast(Any, Group())
    runner.running = 3
    record = TrialRecord(runner.recorder, run_id, trial_id)
    record.snapshot("start", runner._servers(None))
    per_trial = store.provenance(run_id, trial_id)
    assert per_trial["engine_status@start"] == {
        "n1": {"member_state": "ONLINE", "rootfs_package": "mysql-server-core 9.7.4-2"},
        "n2": {"member_state": "ONLINE", "rootfs_package": "mysql-server-core 9.7.4-2"},
    }
    assert per_trial["server_errors@start"] == {"n3": "ConnectionError: node is not running"}
    assert store.provenance(run_id)["versions"] == {"sysbench": "sysbench 1.0.20", "mysql_server": "9.7.4-2"}
    record.snapshot("end", runner._servers(None))  # the end of a trial changes no run-level version
    assert store.provenance(run_id)["versions"] == {"sysbench": "sysbench 1.0.20", "mysql_server": "9.7.4-2"}
