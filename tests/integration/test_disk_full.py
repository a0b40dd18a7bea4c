"""A node whose datadir file system is full: a replicated DDL fails there silently, `status` shows
the free space and warns, and the disk-full drill reports the missing index as divergence. Its own
cluster (trdisk, node 3 on a 256 MiB tmpfs of its own), always torn down; nothing stays mounted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterbench.cluster import Cluster
from clusterbench.faults import leftovers as fault_leftovers
from clusterbench.providers import datadirfs
from clusterbench.store import Store

from .conftest import DRILL_RATE, leftovers, make_topology, running

pytestmark = pytest.mark.integration

NAME = "trdisk"
SUBNET = "198.18.21.0/24"


def mounted_under(root: Path) -> list[Path]:
    return datadirfs.mounts_under(Path("/proc/self/mountinfo").read_text(), root)


@pytest.fixture(scope="module")
def disk_cluster(cb_home: Path) -> Iterator[Cluster]:
    topo = make_topology(NAME, SUBNET, node=[{"index": 3, "datadir_size": "256M"}])
    with running(topo, cb_home) as c:
        yield c
    assert mounted_under(c.dir) == []


def test_a_failed_up_unmounts_the_datadir_file_system(cb_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topo = make_topology("trfail", "198.18.22.0/24", node=[{"index": 2, "datadir_size": "200M"}])
    c = Cluster(topo, home=cb_home)
    seen: list[Path] = []

    def boom(cluster: Cluster, report: object) -> None:
        seen.extend(mounted_under(cluster.dir))
        raise RuntimeError("bring-up failed on purpose")

    monkeypatch.setattr(c.engine, "bring_up", boom)
    with pytest.raises(RuntimeError, match="on purpose"):
        c.up()
    assert seen == [c.node(2).datadir]  # it was mounted...
    assert mounted_under(c.dir) == []  # ...and the failed up removed it
    assert leftovers("trfail") == []


def test_disk_full_drill_reports_the_missing_index_as_divergence(
    disk_cluster: Cluster, cb_home: Path, tmp_path: Path
) -> None:
    c = disk_cluster
    n3 = c.node(3)
    before = datadirfs.disk_space(n3.host, n3.datadir)
    assert before is not None and before.mount == str(n3.datadir) and before.total == 256 << 20
    scenario = tmp_path / "disk-full.toml"
    example = Path(__file__).parents[2] / "examples" / "scenarios" / "disk-full.toml"
    # the example drill, on this cluster: its schedule, not its topology line; its reads at a fixed
    # rate, not in a closed loop that starved the drill's own prober on a busy machine (23 probes
    # of about 50 outside the faults: the trial UNKNOWN, not as planned)
    lines = example.read_text().splitlines()
    lines = [f"{ln}\nrate = {DRILL_RATE}" if ln.startswith("duration = ") else ln for ln in lines]
    scenario.write_text("\n".join(ln for ln in lines if not ln.startswith("topology")))
    env = {**os.environ, "CLUSTERBENCH_HOME": str(cb_home), "COLUMNS": "250"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    cmd = [sys.executable, "-m", "clusterbench"]
    db = tmp_path / "r.db"
    drill = subprocess.Popen([*cmd, "scenario", str(scenario), "-n", NAME, "--results", str(db)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            d = datadirfs.disk_space(n3.host, n3.datadir)
            if d is not None and d.free < (1 << 20):
                break
            assert time.monotonic() < deadline and drill.poll() is None, "n3's datadir never filled"
            time.sleep(0.2)
        st = subprocess.run([*cmd, "status", "-n", NAME], env=env, capture_output=True, text=True, timeout=60)
        assert st.returncode == 0, st.stderr
        assert "0 B of 256.0 MiB (0%)" in st.stdout
        assert f"n3: its datadir file system ({n3.datadir}) is nearly full" in st.stderr
        assert "(the command using the cluster heals it)" in st.stderr
        out, err = drill.communicate(timeout=300)
    finally:
        if drill.poll() is None:
            drill.kill()
            drill.wait()
    print(out)
    assert drill.returncode == 1, (out, err)
    with Store.open(db) as s:
        run = s.list_runs()[-1]
        got = {v["checker"]: v for v in s.verdicts(run.id)}
        conv = got["convergence"]
        print(f"convergence: {conv['summary']}")
        assert conv["result"] == "FAIL"
        want = "table definitions differ between nodes: sbtest.sbtest1 (n3 lacks index cb_drill_c non-unique"
        assert want in conv["summary"]
        assert conv["evidence"]["mismatched_tables"] == {}  # the data is equal everywhere
        assert got["trial"]["result"] == "PASS", got["trial"]["summary"]
        assert got["split-brain"]["result"] == "PASS"
        ev = [e["detail"] for e in s.events(run.id) if e["kind"] == "fault"]
        filled = next(d for d in ev if d.get("phase") == "applied" and d["fault"] == "disk-full n3")
        assert filled["filled"] == {"n3": "0 B free"}
        ddl = next(d for d in ev if d.get("phase") == "applied" and d["fault"] == "sql n1")
        assert ddl["statement"].startswith("CREATE INDEX cb_drill_c") and "error" not in ddl
    # n3 stayed a member all along, without the index; the others have it
    h = n3.health()
    assert h is not None and h.ready
    assert [r[2] for r in n3.query("SHOW INDEX FROM sbtest.sbtest1")].count("cb_drill_c") == 0
    assert [r[2] for r in c.node(1).query("SHOW INDEX FROM sbtest.sbtest1")].count("cb_drill_c") == 1
    log = n3.host.read_file(n3.error_log) or ""
    assert "No space left on device" in log and "Ignoring error" in log
    after = datadirfs.disk_space(n3.host, n3.datadir)
    assert after is not None and after.free > 64 << 20  # freed by the heal
    assert fault_leftovers.find(c) == []
