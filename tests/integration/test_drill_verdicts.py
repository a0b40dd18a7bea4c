"""A drill's verdict is PASS only when its trial ran as planned, and it never touches another
run's verification tables: the real CLI against the session cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterbench.cluster import Cluster
from clusterbench.loadclients import LoadClients
from clusterbench.store import Store

from .conftest import DRILL_RATE

pytestmark = pytest.mark.integration


def env_for(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CLUSTERBENCH_HOME": str(home),
        "COLUMNS": "250",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


def test_drill_whose_load_dies_is_not_pass_and_other_runs_tables_survive(
    cluster: Cluster, cb_home: Path, tmp_path: Path
) -> None:
    name = cluster.topology.name
    n1 = cluster.node(1)
    # Another run's ledger (a killed drill's, or the shared table of older versions): not ours.
    n1.query(
        "CREATE TABLE IF NOT EXISTS sbtest.cb_ledger "
        "(client INT, seq INT, v VARCHAR(64), PRIMARY KEY (client, seq))"
    )
    n1.query("REPLACE INTO sbtest.cb_ledger VALUES (999, 1, 'someone else')")
    db = tmp_path / "r.db"
    env = env_for(cb_home)
    drill = subprocess.Popen(
        [sys.executable, "-m", "clusterbench", "fault", "kill-node", "--node", "3", "--at", "9", "--for", "3",
         "--time", "16", "--threads", "2", "--load-rate", str(DRILL_RATE), "--ledger-clients", "1",
         "--results", str(db), "-n", name],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        lc = LoadClients(cb_home, name)
        deadline = time.monotonic() + 90
        while not any(r.what == "sysbench oltp_read_write" for r in lc.records()):
            assert time.monotonic() < deadline and drill.poll() is None, "the drill's load never started"
            time.sleep(0.1)
        time.sleep(2)
        # By hand, as a user would while the drill runs (`sql` is not locked): the load dies (1146).
        sql = subprocess.run(
            [sys.executable, "-m", "clusterbench", "sql", "1", "-e", "DROP TABLE sbtest.sbtest1", "-n", name],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert sql.returncode == 0, sql.stderr
        out, err = drill.communicate(timeout=300)
    finally:
        if drill.poll() is None:
            drill.kill()
            drill.wait()
    print(out)
    assert drill.returncode == 3, (out, err)  # UNKNOWN: could not decide (2 is bad input)
    assert "overall: UNKNOWN" in out
    trial_line = next(
        ln for ln in out.splitlines() if ln.strip().startswith("│ trial") or ln.strip().startswith("trial")
    )
    assert "UNKNOWN" in trial_line, trial_line
    assert cluster.node(3).alive()  # the fault was never applied
    with Store.open(db) as s:
        run = s.list_runs()[-1]
        got = {v["checker"]: (v["result"], v["summary"]) for v in s.verdicts(run.id)}
        result, summary = got["trial"]
        assert result == "UNKNOWN"
        assert summary.startswith(
            "not as planned: the load failed: oltp_read_write: sysbench oltp_read_write failed"
        )
        assert "kill-node n3 was never applied (planned at 9 s)" in summary, summary
        tables = next(e["detail"] for e in s.events(run.id) if e["kind"] == "verification_tables")
    # Its own ledger table was used and dropped; the other run's table and row are untouched.
    assert tables["ledger"].startswith("cb_ledger_t")
    left = {
        r[0] for r in n1.query("SELECT table_name FROM information_schema.tables WHERE table_schema='sbtest'")
    }
    assert tables["ledger"] not in left and tables["probe"] not in left
    assert n1.query("SELECT v FROM sbtest.cb_ledger WHERE client = 999") == [("someone else",)]
    n1.query("DROP TABLE sbtest.cb_ledger")
