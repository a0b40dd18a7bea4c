"""The per-cluster lock (clusterbench.lock) and the load-client record (clusterbench.loadclients),
with real processes of this machine standing in for the holders: a `sleep` is a live holder,
an exited child a dead one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterbench import lock
from clusterbench.hosts import process
from clusterbench.hosts.base import ProcessRef
from clusterbench.loadclients import LoadClients
from clusterbench.lock import ClusterBusy, ClusterLock, Holder


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen(["sleep", "60"])
    yield p
    if p.poll() is None:
        p.kill()
    p.wait()


def ref_of(p: subprocess.Popen[bytes]) -> ProcessRef:
    ticks = process.start_ticks(p.pid)
    assert ticks is not None
    return ProcessRef(p.pid, ticks)


def dead_ref() -> ProcessRef:
    """PID + start time of a process that has exited (and been reaped)."""
    p = subprocess.Popen(["sleep", "0"])
    ref = ref_of(p)
    p.wait()
    return ref


def write_holder(home: Path, name: str, ref: ProcessRef, command: str, since: float) -> None:
    d = home / "locks"
    d.mkdir(parents=True, exist_ok=True)
    h = Holder(ref.pid, ref.start_ticks, command, since)
    (d / f"{name}.json").write_text(json.dumps(h.to_json()))


@pytest.fixture(autouse=True)
def no_held_locks() -> Iterator[None]:
    yield
    lock.release_all()


def test_free_cluster_is_taken_and_released(tmp_path: Path) -> None:
    lk = ClusterLock(tmp_path, "lab")
    assert lk.acquire("clusterbench run -w oltp_read_write") is None
    h = lk.holder()
    assert h is not None and h.pid == os.getpid() and h.command == "clusterbench run -w oltp_read_write"
    assert h.start_ticks == process.start_ticks(os.getpid())
    assert lk.acquire("again") is None  # this process holds it already: no-op
    lk.release()
    assert not lk.path.exists()
    assert lk.holder() is None


def test_live_holder_refuses_in_one_line_naming_it(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    since = time.time() - 35
    write_holder(tmp_path, "lab", ref_of(sleeper), "clusterbench scenario kill-node.toml", since)
    with pytest.raises(ClusterBusy) as info:
        ClusterLock(tmp_path, "lab").acquire("clusterbench run -w oltp_read_write")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(
        "cluster 'lab' is in use by `clusterbench scenario kill-node.toml` "
        f"(PID {sleeper.pid}, since {time.strftime('%H:%M:%S', time.localtime(since))}, 35 s ago); "
    )
    assert f"`kill {sleeper.pid}`" in msg
    assert info.value.exit_code == 2
    # the holder's record is untouched
    assert ClusterLock(tmp_path, "lab").holder() == Holder(
        sleeper.pid, ref_of(sleeper).start_ticks, "clusterbench scenario kill-node.toml", since
    )


def test_dead_holder_is_taken_over(tmp_path: Path) -> None:
    gone = dead_ref()
    write_holder(tmp_path, "lab", gone, "clusterbench scenario x.toml", time.time() - 5)
    lk = ClusterLock(tmp_path, "lab")
    assert lk.holder() is None
    replaced = lk.acquire("clusterbench run")
    assert replaced is not None and replaced.pid == gone.pid
    h = lk.holder()
    assert h is not None and h.pid == os.getpid()


def test_reused_pid_with_another_start_time_holds_nothing(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    ref = ref_of(sleeper)
    write_holder(tmp_path, "lab", ProcessRef(ref.pid, ref.start_ticks - 1), "old", time.time())
    assert ClusterLock(tmp_path, "lab").acquire("clusterbench run") is not None


def test_zombie_holder_is_dead(tmp_path: Path) -> None:
    p = subprocess.Popen(["sleep", "0"])
    ref = ref_of(p)
    deadline = time.monotonic() + 5
    while process.state(p.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert process.state(p.pid) == "Z"
        write_holder(tmp_path, "lab", ref, "zombie", time.time())
        assert ClusterLock(tmp_path, "lab").holder() is None
    finally:
        p.wait()


def test_force_takes_a_live_holders_lock_and_its_release_leaves_ours(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    write_holder(tmp_path, "lab", ref_of(sleeper), "clusterbench run", time.time())
    mine = ClusterLock(tmp_path, "lab")
    replaced = mine.acquire("clusterbench down --force", force=True)
    assert replaced is not None and replaced.pid == sleeper.pid
    ClusterLock(tmp_path, "lab", pid=sleeper.pid).release()  # the old holder ends later
    h = mine.holder()
    assert h is not None and h.pid == os.getpid()


def test_clusters_are_locked_separately(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    write_holder(tmp_path, "lab", ref_of(sleeper), "clusterbench run", time.time())
    assert ClusterLock(tmp_path, "other").acquire("clusterbench run") is None


def test_two_processes_racing_for_a_free_lock_one_wins(tmp_path: Path) -> None:
    # Every racer starts, says it is ready, waits for `go`, races, reports, and stays alive (the
    # winner holding the lock) until `done`: a slow start on a loaded machine changes nothing.
    code = (
        "import sys, time; from pathlib import Path; from clusterbench.lock import ClusterLock, ClusterBusy\n"
        "d = Path(sys.argv[1]); (d / f'ready{sys.argv[2]}').touch()\n"
        "while not (d / 'go').exists(): time.sleep(0.005)\n"
        "try:\n"
        "    ClusterLock(d / 'home', 'lab').acquire('racer'); print('won', flush=True)\n"
        "except ClusterBusy:\n"
        "    print('busy', flush=True)\n"
        "while not (d / 'done').exists(): time.sleep(0.01)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(i)], stdout=subprocess.PIPE, env=env)
        for i in range(4)
    ]
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("ready*"))) < 4:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        (tmp_path / "go").touch()
        outs = []
        for p in procs:
            assert p.stdout is not None
            outs.append(p.stdout.readline().decode().strip())
    finally:
        (tmp_path / "done").touch()
        for p in procs:
            p.wait(timeout=30)
    assert sorted(outs) == ["busy", "busy", "busy", "won"]


def test_take_is_held_until_release_all(tmp_path: Path) -> None:
    lines: list[str] = []
    lock.take(tmp_path, "lab", "clusterbench up", report=lines.append)
    assert lock.holder(tmp_path, "lab") is not None
    lock.take(tmp_path, "lab", "clusterbench up")  # reentrant
    lock.release_all()
    assert lock.holder(tmp_path, "lab") is None
    assert lines == []


def test_take_reports_a_dead_holder_taken_over(tmp_path: Path) -> None:
    write_holder(tmp_path, "lab", dead_ref(), "clusterbench scenario x.toml", time.time())
    lines: list[str] = []
    lock.take(tmp_path, "lab", "clusterbench heal", report=lines.append)
    assert len(lines) == 1
    assert "`clusterbench scenario x.toml`" in lines[0] and "no longer runs; taken over" in lines[0]


# ---------------------------------------------------------------- load clients


def test_load_clients_are_recorded_and_forgotten(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    lc = LoadClients(tmp_path, "lab")
    ref = ref_of(sleeper)
    lc.started("local", ref, what="sysbench oltp_read_write")
    [rec] = lc.records()
    assert (rec.pid, rec.start_ticks, rec.host, rec.owner_pid) == (
        ref.pid,
        ref.start_ticks,
        "local",
        os.getpid(),
    )
    assert lc.orphans() == []  # its owner (this process) runs
    lc.ended("local", ref)
    assert lc.records() == []
    assert not lc.path.exists()


def test_orphaned_load_client_is_stopped(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    lc = LoadClients(tmp_path, "lab", owner=dead_ref())  # a clusterbench that was SIGKILLed
    lc.started("local", ref_of(sleeper))
    assert [r.pid for r in LoadClients(tmp_path, "lab").orphans()] == [sleeper.pid]
    lines = LoadClients(tmp_path, "lab").stop(LoadClients(tmp_path, "lab").orphans())
    assert len(lines) == 1 and lines[0].startswith(f"stopped sysbench PID {sleeper.pid} on local")
    assert sleeper.wait(timeout=5) == -15
    assert LoadClients(tmp_path, "lab").records() == []


def test_stop_never_signals_a_reused_pid(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    ref = ref_of(sleeper)
    lc = LoadClients(tmp_path, "lab", owner=dead_ref())
    lc.started("local", ProcessRef(ref.pid, ref.start_ticks + 1))  # "another" process with this PID
    lc.stop(lc.orphans())
    assert sleeper.poll() is None
    assert lc.records() == []


def test_guard_claim_stops_orphans_of_a_killed_run(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterbench.cli import guard

    monkeypatch.setenv("CLUSTERBENCH_HOME", str(tmp_path))
    LoadClients(tmp_path, "lab", owner=dead_ref()).started("local", ref_of(sleeper))
    guard.claim("lab")
    assert sleeper.wait(timeout=5) == -15
    assert LoadClients(tmp_path, "lab").records() == []


def test_option_files_of_a_killed_clusterbench_are_removed(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterbench.cli import guard

    monkeypatch.setenv("CLUSTERBENCH_HOME", str(tmp_path))
    d = tmp_path / "secrets"
    d.mkdir()
    gone = dead_ref().pid
    stale = d / f"cb-sysbench-{gone}-abc.cnf"
    live = d / f"cb-sysbench-{sleeper.pid}-def.cnf"
    other = d / "not-ours.txt"
    for f in (stale, live, other):
        f.write_text("mysql-password=x\n")
    guard.claim("lab")
    assert not stale.exists() and live.exists() and other.exists()
