"""hosts/process.py on a fake /proc tree: a PID counts as ours only while it is alive and still has the
start time recorded when we started it."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from clusterbench.hosts import process

START = 8_745_123


def stat_line(pid: int, comm: str = "mariadbd", state: str = "S", start: int = START) -> str:
    # Fields 3..52 of /proc/PID/stat as Linux 6.x prints them; field 22 (starttime) is the 20th after ')'.
    after = [
        state, "1", str(pid), str(pid), "0", "-1", "4194560", "1804", "0", "0", "0", "13", "9", "0", "0",
        "20", "0", "37", "0", str(start), "1427132416", "27651", "18446744073709551615", "1", "1", "0",
        "0", "0", "0", "0", "4096", "1260", "0", "0", "0", "17", "2", "0", "0", "0", "0", "0", "0", "0",
        "0", "0", "0", "0", "0", "0",
    ]  # fmt: skip
    return f"{pid} ({comm}) {' '.join(after)}\n"


@pytest.fixture
def proc_root(tmp_path: Path) -> Path:
    root = tmp_path / "proc"
    root.mkdir()
    return root


def add(root: Path, pid: int, **kw: object) -> None:
    d = root / str(pid)
    d.mkdir()
    (d / "stat").write_text(stat_line(pid, **kw))  # type: ignore[arg-type]


def test_start_ticks_and_state(proc_root: Path) -> None:
    add(proc_root, 123)
    assert process.start_ticks(123, proc_root) == START
    assert process.state(123, proc_root) == "S"


def test_command_name_with_spaces_and_parentheses(proc_root: Path) -> None:
    add(proc_root, 124, comm="my (odd) proc) x", state="R")
    assert process.start_ticks(124, proc_root) == START
    assert process.state(124, proc_root) == "R"
    assert process.is_alive(124, START, proc_root) is True


def test_missing_pid(proc_root: Path) -> None:
    assert process.start_ticks(999, proc_root) is None
    assert process.state(999, proc_root) is None
    assert process.is_alive(999, START, proc_root) is False


def test_truncated_stat(proc_root: Path) -> None:
    d = proc_root / "55"
    d.mkdir()
    (d / "stat").write_text("55 (x) S 1 55 55 0\n")
    assert process.start_ticks(55, proc_root) is None
    assert process.state(55, proc_root) == "S"
    assert process.is_alive(55, START, proc_root) is False


@pytest.mark.parametrize(
    ("st", "alive"), [("S", True), ("R", True), ("D", True), ("T", True), ("Z", False), ("X", False)]
)
def test_alive_by_state(proc_root: Path, st: str, alive: bool) -> None:
    add(proc_root, 200, state=st)
    assert process.is_alive(200, START, proc_root) is alive


def test_reused_pid_is_dead(proc_root: Path) -> None:
    add(proc_root, 300, start=START + 1)
    assert process.is_alive(300, START, proc_root) is False


@pytest.fixture
def kills(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    sent: list[tuple[int, int]] = []

    def fake_kill(pid: int, sig: int) -> None:
        sent.append((pid, sig))

    monkeypatch.setattr(process.os, "kill", fake_kill)
    return sent


def test_send_to_our_process(proc_root: Path, kills: list[tuple[int, int]]) -> None:
    add(proc_root, 400)
    assert process.send(400, START, signal.SIGTERM, proc_root) is True
    assert kills == [(400, signal.SIGTERM)]


def test_send_to_reused_pid_sends_nothing(proc_root: Path, kills: list[tuple[int, int]]) -> None:
    add(proc_root, 401, start=START + 99)
    assert process.send(401, START, signal.SIGKILL, proc_root) is False
    assert kills == []


def test_send_to_zombie_sends_nothing(proc_root: Path, kills: list[tuple[int, int]]) -> None:
    add(proc_root, 402, state="Z")
    assert process.send(402, START, signal.SIGKILL, proc_root) is False
    assert kills == []


def test_send_to_missing_pid_sends_nothing(proc_root: Path, kills: list[tuple[int, int]]) -> None:
    assert process.send(403, START, signal.SIGKILL, proc_root) is False
    assert kills == []


def test_send_when_process_vanishes_in_between(proc_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add(proc_root, 404)

    def gone(pid: int, sig: int) -> None:
        raise ProcessLookupError(pid)

    monkeypatch.setattr(process.os, "kill", gone)
    assert process.send(404, START, signal.SIGTERM, proc_root) is False


def test_real_proc_self_format() -> None:
    """The parser agrees with the kernel's own /proc/self/stat (read only, nothing is signalled)."""
    import os

    fields = (Path("/proc/self/stat")).read_text()
    assert process.state(os.getpid()) in ("R", "S")
    assert process.start_ticks(os.getpid()) == int(fields[fields.rindex(")") + 2 :].split()[19])
