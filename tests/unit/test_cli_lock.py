"""Every command that loads or changes a cluster refuses, in one line and with exit 2, while another
live command holds the cluster's lock; nothing is started. A `sleep` stands in for the holder."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterbench import lock
from clusterbench.cli.main import main
from clusterbench.cluster import generate_credentials
from clusterbench.hosts import process
from clusterbench.lock import ClusterLock, Holder
from clusterbench.providers import preflight

HOLDER = "clusterbench scenario examples/scenarios/kill-node.toml"


@pytest.fixture
def home(
    cli_home: Path, lab_state: Callable[[dict[str, Any]], Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 0)
    d = lab_state({"cluster": {"subnet": "198.18.221.0/24"}})
    (d / "secrets.json").write_text(json.dumps(generate_credentials().to_json()))
    yield cli_home
    lock.release_all()


@pytest.fixture
def holder(home: Path) -> Iterator[subprocess.Popen[bytes]]:
    p = subprocess.Popen(["sleep", "60"])
    ticks = process.start_ticks(p.pid)
    assert ticks is not None
    (home / "locks").mkdir(parents=True, exist_ok=True)
    (home / "locks" / "lab.json").write_text(
        json.dumps(Holder(p.pid, ticks, HOLDER, time.time() - 6).to_json())
    )
    yield p
    p.kill()
    p.wait()


def scenario_file(tmp_path: Path) -> Path:
    f = tmp_path / "s.toml"
    f.write_text(
        'name = "s"\n[load]\ntime = 20\n[[fault]]\nkind = "kill-node"\ntarget = "node:2"\nat = 5\nfor = 5\n'
    )
    return f


def experiment_file(tmp_path: Path) -> Path:
    f = tmp_path / "e.toml"
    f.write_text(
        '[experiment]\nname = "e"\n[topology.cluster]\nname = "lab"\nsubnet = "198.18.221.0/24"\n'
        '[workload]\ntests = ["oltp_read_write"]\nduration = 5\n[parts.p.factors]\nthreads = [1]\n'
    )
    return f


def topology_file(tmp_path: Path) -> Path:
    f = tmp_path / "t.toml"
    f.write_text('[cluster]\nname = "lab"\nsubnet = "198.18.221.0/24"\n')
    return f


COMMANDS = {
    "run": ["run", "-w", "oltp_read_write", "--time", "5"],
    "suite": ["suite", "--time", "1"],
    "fault": ["fault", "kill-node", "--node", "2", "--at", "5", "--for", "5", "--time", "20"],
    "heal": ["heal"],
    "start": ["start"],
    "stop": ["stop"],
    "node stop": ["node", "stop", "2"],
    "node kill": ["node", "kill", "2"],
    "node start": ["node", "start", "2"],
    "node restart": ["node", "restart", "2"],
}


@pytest.mark.parametrize("what", sorted(COMMANDS))
def test_command_refused_while_another_holds_the_cluster(
    what: str, home: Path, holder: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    t0 = time.monotonic()
    rc = main([*COMMANDS[what], "-n", "lab"])
    took = time.monotonic() - t0
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: cluster 'lab' is in use by `{HOLDER}` (PID {holder.pid}, since "), err
    assert took < 5
    if (home / "results.db").exists():  # opened (checked writable) first, but no run was started
        from clusterbench.store import Store

        with Store.open(home / "results.db") as store:
            assert store.list_runs() == []
    # the holder still holds it
    h = ClusterLock(home, "lab").holder()
    assert h is not None and h.pid == holder.pid


@pytest.mark.parametrize("kind", ["scenario", "up", "experiment"])
def test_file_commands_refused_while_another_holds_the_cluster(
    kind: str, tmp_path: Path, home: Path, holder: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = {
        "scenario": ["scenario", str(scenario_file(tmp_path)), "-n", "lab"],
        "up": ["up", "-f", str(topology_file(tmp_path))],
        "experiment": ["experiment", "run", str(experiment_file(tmp_path))],
    }[kind]
    rc = main(argv)
    _, err = capsys.readouterr()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: cluster 'lab' is in use by `{HOLDER}` (PID {holder.pid}"), err


def test_down_refuses_a_live_holder_and_names_force(
    home: Path, holder: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["down", "-n", "lab"])
    _, err = capsys.readouterr()
    assert rc == 2
    assert len(err.splitlines()) == 1
    assert f"(PID {holder.pid}" in err and "`clusterbench down -n lab --force` takes it down anyway" in err
    assert (home / "clusters" / "lab" / "state.json").exists()


def test_down_after_the_holder_died_goes_ahead(
    home: Path,
    holder: subprocess.Popen[bytes],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    holder.kill()
    holder.wait()
    from clusterbench.cluster import Cluster

    monkeypatch.setattr(Cluster, "down", lambda self, report, keep_files: ["n1 stopped"])
    rc = main(["down", "-n", "lab"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "no longer runs; taken over" in err
    assert "cluster lab: down" in out
    assert not (home / "locks" / "lab.json").exists()  # released at the end of the command


def test_down_force_goes_ahead_while_the_holder_lives(
    home: Path,
    holder: subprocess.Popen[bytes],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from clusterbench.cluster import Cluster

    monkeypatch.setattr(Cluster, "down", lambda self, report, keep_files: ["n1 stopped"])
    rc = main(["down", "-n", "lab", "--force"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert f"taking cluster 'lab' over from `{HOLDER}` (PID {holder.pid}" in err
    assert holder.poll() is None  # never killed by us


def test_read_only_commands_are_not_refused(
    tmp_path: Path, home: Path, holder: subprocess.Popen[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["results", "list"]) == 2  # no store yet: its own error, not the lock's
    _, err = capsys.readouterr()
    assert "in use" not in err
    assert main(["logs", "1", "-n", "lab"]) == 0
    capsys.readouterr()
    assert main(["plan", str(experiment_file(tmp_path))]) == 0
    out, err = capsys.readouterr()
    assert "in use" not in err


def test_a_free_cluster_is_locked_while_the_command_runs_and_released_after(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from clusterbench.cluster import Cluster

    seen: list[Holder | None] = []

    def fake_node_kill(self: Cluster, index: int) -> str:
        seen.append(ClusterLock(home, "lab").holder())
        return f"n{index} killed"

    monkeypatch.setattr(Cluster, "node_kill", fake_node_kill)
    assert main(["node", "kill", "2", "-n", "lab"]) == 0
    [h] = seen
    assert h is not None and h.command == "clusterbench node kill 2 -n lab"
    assert ClusterLock(home, "lab").holder() is None
