"""Power loss on a real Galera cluster whose datadirs sit on the power-loss layer (cb-faultfs):
what a coordinated power cut loses with innodb_flush_log_at_trx_commit = 0 against 1, named by
the ledger and counted independently, and the negative control that the layer alone (a plain
kill with it in place) loses nothing."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterbench.checkers.ledger import check_ledger
from clusterbench.checkers.verdict import Result
from clusterbench.cluster import Cluster
from clusterbench.datadir_layers import layer_of
from clusterbench.faults.kinds import make_action
from clusterbench.faults.spec import FaultSpec, plan
from clusterbench.history.ops import History, Timebase
from clusterbench.verify.ledger import LedgerWorkload

from .conftest import acknowledged_missing, make_topology, running

pytestmark = pytest.mark.integration

NAME = "cbpl"
CAUSAL = "SET SESSION wsrep_sync_wait = 1"


@pytest.fixture(scope="module")
def layered(cb_home: Path) -> Iterator[Cluster]:
    if not Path("/dev/fuse").exists():
        pytest.skip("no /dev/fuse on this machine")
    subnet = "198.18.232.0/24"
    topo = make_topology(
        NAME, subnet, cluster={"name": NAME, "nodes": 3, "subnet": subnet, "datadir_layer": "faultfs"}
    )
    with running(topo, cb_home) as c:
        yield c


def drill(c: Cluster, kind: str, flush: int, table: str) -> tuple[Any, set[Any], set[Any], dict[str, Any]]:
    """Ledger inserts through the balancer at the given flush setting, the fault on every node
    after 3 s, the heal; the ledger's verdict, the acknowledged keys, those missing anywhere."""
    for n in c.nodes():
        n.query(f"SET GLOBAL innodb_flush_log_at_trx_commit = {flush}")
    ledger = LedgerWorkload([c.endpoint("balancer")], History(), Timebase(), clients=4, rate=100, table=table)
    admin = c.admin_node()
    assert admin is not None
    ledger.setup(admin)
    (fault,) = plan([FaultSpec.model_validate({"kind": kind, "target": "all", "at": 0, "for": 1})], 3, 1, 10)
    action = make_action(c, fault)
    try:
        ledger.start()
        time.sleep(3)
        applied = action.apply()
        time.sleep(0.5)
        ledger.stop()
        healed = action.heal()
        verdict = check_ledger(ledger.ops(), ledger.read_all(c.nodes()))
        ok_keys, missing = acknowledged_missing(c, ledger.ops(), table, CAUSAL)
        return verdict, ok_keys, missing, {"applied": applied, "healed": healed}
    finally:
        with contextlib.suppress(Exception):
            ledger.stop()
        action.heal()
        c.settle()
        with contextlib.suppress(Exception):
            ledger.drop(c.admin_node() or c.node(1))


def test_a_coordinated_power_loss_at_flush_0_loses_what_the_ledger_names_and_at_flush_1_nothing(
    layered: Cluster,
) -> None:
    c = layered
    # flush=0: the last second of commits is in the server's log buffer, lost by any kill; the
    # ledger names exactly what an independent count of rows misses
    verdict, ok_keys, missing, detail = drill(c, "power-loss", 0, "cb_ledger_pl0")
    print("flush=0:", verdict.summary, detail["applied"].get("summary"))
    assert len(ok_keys) > 200
    if missing:
        assert verdict.result is Result.FAIL, verdict.summary
        assert verdict.evidence["lost"]["count"] == len(missing)
    else:
        assert verdict.result is Result.PASS, verdict.summary
    # flush=2: every commit is written to the file (the page cache keeps it through a kill) and
    # fsynced once a second: what only a power cut loses, and the layer shows it dropped
    verdict2, ok2, missing2, detail2 = drill(c, "power-loss", 2, "cb_ledger_pl2")
    print("flush=2:", verdict2.summary, detail2["applied"].get("summary"))
    assert len(ok2) > 200
    assert any(v > 0 for v in detail2["applied"]["unsynced_bytes"].values()), detail2  # the layer dropped
    if missing2:
        assert verdict2.result is Result.FAIL and verdict2.evidence["lost"]["count"] == len(missing2)
    else:
        assert verdict2.result is Result.PASS, verdict2.summary
    assert missing or missing2, "neither relaxed setting lost anything in a coordinated power cut"
    verdict1, ok1, missing1, detail1 = drill(c, "power-loss", 1, "cb_ledger_pl1")
    print("flush=1:", verdict1.summary, detail1["applied"].get("summary"))
    assert len(ok1) > 200 and missing1 == set(), sorted(missing1)[:5]
    assert verdict1.result is Result.PASS, verdict1.summary


def test_a_kill_with_the_layer_in_place_loses_nothing_a_plain_kill_would_not(layered: Cluster) -> None:
    """The negative control: the layer alone changes no verdict (flush=2 survives a process crash,
    and the layer drops nothing on a kill)."""
    c = layered
    before = {i: layer_of(c, i).status().drops for i in c.topology.node_indexes()}
    verdict, ok_keys, missing, detail = drill(c, "coordinated-crash", 2, "cb_ledger_plk")
    assert len(ok_keys) > 200 and missing == set() and verdict.result is Result.PASS, verdict.summary
    assert {i: layer_of(c, i).status().drops for i in c.topology.node_indexes()} == before  # nothing dropped
