"""One command per cluster, and no sysbench left behind by a killed clusterbench: the real CLI as
separate processes against the session cluster."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterbench.cluster import Cluster
from clusterbench.hosts import process
from clusterbench.loadclients import LoadClients
from clusterbench.lock import ClusterLock

from .conftest import DRILL_RATE

pytestmark = pytest.mark.integration


def cli(home: Path, *argv: str) -> list[str]:
    return [sys.executable, "-m", "clusterbench", *argv]


def env_for(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CLUSTERBENCH_HOME": str(home),
        "COLUMNS": "250",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }


def wait_for(pred: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def test_second_command_refused_and_killed_runs_sysbench_is_stopped(cluster: Cluster, cb_home: Path) -> None:
    name = cluster.topology.name
    env = env_for(cb_home)
    first = subprocess.Popen(
        cli(cb_home, "run", "-n", name, "-w", "oltp_read_only", "--time", "60", "--tables", "1",
            "--table-size", "1000", "--threads", "2", "--rate", str(DRILL_RATE)),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    lc = LoadClients(cb_home, name)
    try:
        wait_for(
            lambda: any(r.what == "sysbench oltp_read_only" for r in lc.records()), 60, "sysbench to run"
        )
        holder = ClusterLock(cb_home, name).holder()
        assert holder is not None and holder.pid == first.pid

        # a second loader, a node operation and a drill are refused at once, in one line, exit 2
        for argv in (
            ["run", "-n", name, "-w", "oltp_point_select", "--time", "5"],
            ["node", "kill", "2", "-n", name],
            ["fault", "kill-node", "--node", "2", "--at", "2", "--for", "2", "--time", "10", "-n", name],
            ["down", "-n", name],
        ):
            t0 = time.monotonic()
            res = subprocess.run(cli(cb_home, *argv), env=env, capture_output=True, text=True, timeout=60)
            took = time.monotonic() - t0
            assert res.returncode == 2, (argv, res.stdout, res.stderr)
            lines = res.stderr.splitlines()
            assert len(lines) == 1, res.stderr
            assert lines[0].startswith(f"error: cluster '{name}' is in use by `clusterbench run -n {name} -w "
                                       f"oltp_read_only"), lines[0]  # fmt: skip
            assert f"(PID {first.pid}, since " in lines[0]
            print(f"refused {argv[0]} {argv[1]} in {took:.2f} s")
        assert cluster.node(2).alive()  # the refused `node kill` did nothing

        # status stays allowed and names the holder and its load client
        st = subprocess.run(
            cli(cb_home, "status", "-n", name), env=env, capture_output=True, text=True, timeout=60
        )
        assert st.returncode == 0, st.stderr
        assert f"in use by `clusterbench run -n {name}" in st.stdout
        assert "load client: sysbench oltp_read_only PID" in st.stdout

        # SIGKILL the holder: its sysbench keeps running (reparented), on record
        [rec] = [r for r in lc.records() if r.what == "sysbench oltp_read_only"]
        first.send_signal(signal.SIGKILL)
        first.wait()
        time.sleep(1.0)
        assert process.is_alive(rec.pid, rec.start_ticks), "sysbench died with its clusterbench"
        st = subprocess.run(
            cli(cb_home, "status", "-n", name), env=env, capture_output=True, text=True, timeout=60
        )
        assert f"sysbench oltp_read_only PID {rec.pid} on local" in st.stderr
        assert "left running by a clusterbench that no longer runs" in st.stderr
        assert "in use by" not in st.stdout  # a dead holder holds nothing

        # heal takes the lock over and stops it
        t0 = time.monotonic()
        h = subprocess.run(
            cli(cb_home, "heal", "-n", name), env=env, capture_output=True, text=True, timeout=60
        )
        assert h.returncode == 0, h.stderr
        assert "no longer runs; taken over" in h.stderr
        assert f"stopped sysbench oltp_read_only PID {rec.pid} on local" in h.stderr
        assert not process.is_alive(rec.pid, rec.start_ticks)
        print(f"heal stopped the orphaned sysbench in {time.monotonic() - t0:.2f} s")
        assert lc.records() == []
        assert ClusterLock(cb_home, name).holder() is None
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        for r in lc.records():
            process.send(r.pid, r.start_ticks, signal.SIGKILL)
