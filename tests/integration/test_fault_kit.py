"""The fault kit on a real Galera cluster whose datadirs are on loop devices of their own and whose
servers run under libfaketime: a slow disk under one node during TPC-C (the device is held to the
rate asked, the load stalls, the verdict names that node's disk; the heal removes the limit), and a
clock jump plus drift on two nodes (measured as asked, bumped back, verdicts unchanged); `down`
detaches the devices."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterbench.checkers.verdict import Result
from clusterbench.cluster import Cluster
from clusterbench.faults import leftovers as fault_leftovers
from clusterbench.faults.diskthrottle import datadir_device, limits_on, machine
from clusterbench.scenario.drill import Drill
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.store import Store
from clusterbench.workloads import SysbenchRunner, build_shim

from .conftest import make_topology, running

pytestmark = pytest.mark.integration

NAME = "cbdt"


@pytest.fixture(scope="module")
def looped(cb_home: Path) -> Iterator[Cluster]:
    subnet = "198.18.234.0/24"
    own = {"name": NAME, "nodes": 3, "subnet": subnet, "datadir_fs": "loop", "clock": "faketime"}
    with running(make_topology(NAME, subnet, cluster=own), cb_home) as c:
        yield c


def test_each_node_has_a_block_device_of_its_own(looped: Cluster) -> None:
    devices = {i: datadir_device(looped, i) for i in (1, 2, 3)}
    assert all(d is not None and d.startswith("7:") for d in devices.values()), devices
    assert len(set(devices.values())) == 3


# alone: per-second disk rates while held (a late sample on a busy machine read 5.02 MiB/s)
@pytest.mark.alone
def test_a_throttled_disk_under_tpcc_stalls_the_load_and_is_named(looped: Cluster) -> None:
    spec = ScenarioSpec.model_validate({
        "name": "slow disk n2",
        "load": {"workload": "tpcc", "threads": 8, "time": 22},
        "verify": {"ledger_clients": 1},
        "fault": [{"kind": "throttle-disk", "target": "node:2", "at": 2, "for": 18, "rate": "1MB/s"}],
    })  # fmt: skip
    faults = spec.planned(3, 1, "test")
    sysbench = SysbenchRunner(shim=build_shim(looped.home / "lib"))
    db = looped.home / "disk.db"
    out = Drill(looped, spec, db, sysbench).run("test", faults)
    verdicts = {v.checker: v.result for v in out.verdicts}
    assert verdicts["ledger"] is Result.PASS and verdicts["convergence"] is Result.PASS, out.verdicts
    assert verdicts.get("faults", Result.PASS) is Result.PASS, out.verdicts  # present when one failed
    store = Store.open(db)
    assert out.run_id is not None and out.trial_id is not None
    applied = [e["detail"] for e in store.events(out.run_id) if e["kind"] == "fault"]
    assert any("held to 1 MB/s" in str(d.get("summary", "")) for d in applied), applied
    # the probe saw n2's device at about the limit while it was held (1 MB/s = 0.95 MiB/s)
    rows = [r for r in store.telemetry(out.trial_id, "disk_limit_mib_s") if r["source"].startswith("n2/")]
    assert rows and abs(rows[0]["value"] - 0.954) < 0.01
    def n2(metric: str) -> list[float]:
        assert out.trial_id is not None
        return [r["value"] for r in store.telemetry(out.trial_id, metric) if r["source"].startswith("n2/")]

    held = n2("disk_read_mib_s")[5:18] + n2("disk_write_mib_s")[5:18]  # held from 2 s to 20 s
    assert 0.5 < max(held) < 5, held
    # the load stalled, and the verdict names n2's disk (as the bottleneck, or as the cause of the
    # flow control that held the others back)
    stalls = store.provenance(out.run_id, out.trial_id)["stalls"]
    assert stalls["count"] >= 3, stalls
    neck = store.bottleneck(out.trial_id)
    assert neck is not None and "disk n2/loop" in neck["summary"], neck
    # healed: no limit left, nothing for leftovers to find
    dev = datadir_device(looped, 2)
    assert dev is not None and limits_on(machine(looped, 2), dev) == {}
    assert fault_leftovers.find(looped) == []



def test_a_clock_jump_and_drift_are_measured_as_asked_and_bumped_back(looped: Cluster) -> None:
    spec = ScenarioSpec.model_validate({
        "name": "clock skew n2 n3",
        "load": {"workload": "oltp_read_write", "threads": 2, "time": 20, "tables": 2, "table_size": 2000},
        "verify": {"ledger_clients": 1},
        "fault": [{"kind": "clock-skew", "target": "node:2,3", "at": 3, "for": 12, "offset": "-90s",
                   "drift": "+50ms/s"}],
    })  # fmt: skip
    sysbench = SysbenchRunner(shim=build_shim(looped.home / "lib"))
    db = looped.home / "clock.db"
    out = Drill(looped, spec, db, sysbench).run("test", spec.planned(3, 1, "test"))
    verdicts = {v.checker: v.result for v in out.verdicts}
    assert all(r is Result.PASS for r in verdicts.values()), [(v.checker, v.summary) for v in out.verdicts]
    store = Store.open(db)
    assert out.run_id is not None
    details = [e["detail"] for e in store.events(out.run_id) if e["kind"] == "fault"]
    applied = next(d for d in details if d.get("phase") == "applied")
    ended = next(d for d in details if d.get("phase") == "end")
    # -90 s, plus up to a few seconds of drift at 50 ms/s before the servers showed it
    assert all(-90.1 < s < -89.5 for s in applied["measured_s"].values()), applied
    assert all(abs(s) < 0.1 for s in ended["measured_s"].values()), ended
    # n1 kept real time
    from clusterbench.faults.clock import measured_skew

    skew = measured_skew(looped.node(1))
    assert skew is not None and abs(skew) < 0.1
    assert fault_leftovers.find(looped) == []
