"""The Host protocol and the values it returns."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 5) -> str:
        text = (self.stderr or self.stdout).strip().splitlines()
        return " | ".join(text[-lines:])


@dataclass(frozen=True)
class ProcessRef:
    """A process we started: its PID plus its start time (clock ticks since boot).

    The start time guards against PID reuse: we only ever signal a PID whose start time still
    matches the one recorded when we started it.
    """

    pid: int
    start_ticks: int

    def to_json(self) -> dict[str, int]:
        return {"pid": self.pid, "start_ticks": self.start_ticks}

    @staticmethod
    def from_json(data: dict[str, int]) -> ProcessRef:
        return ProcessRef(pid=int(data["pid"]), start_ticks=int(data["start_ticks"]))


class Popen(Protocol):
    """A foreground process whose output we stream (a load client): the shape of
    `subprocess.Popen` that workloads/runner.py's `Process` needs. stdout and stderr are real
    pipes (they have a fileno the runner can select on), on every kind of host."""

    pid: int
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


class Host(Protocol):
    """What components need from a place that runs things.

    `remote` is False when the host shares this machine's filesystem (the root namespace and the
    local provider's namespaces): unix sockets and files can then be reached directly."""

    name: str
    remote: bool

    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> CommandResult: ...

    def spawn(self, argv: list[str], *, log: Path) -> ProcessRef: ...

    def alive(self, proc: ProcessRef) -> bool: ...

    def signal(self, proc: ProcessRef, sig: int) -> bool: ...

    def proc_state(self, pid: int) -> tuple[str, int] | None:
        """(state letter, start ticks) of a PID on this host, or None when it does not exist."""

    def popen(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Popen: ...


class FileHost(Protocol):
    """File operations on a host (the local filesystem for namespaces, the remote one over ssh)."""

    def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None: ...

    def read_file(self, path: Path) -> str | None: ...

    def mkdir(self, path: Path, *, owner: str | None = None, mode: int = 0o755) -> None: ...

    def exists(self, path: Path) -> bool: ...

    def remove(self, path: Path) -> None: ...

    def file_size(self, path: Path) -> int: ...


class Machine(Host, FileHost, Protocol):
    """A host with files: what components (galera, haproxy, keepalived) run on."""


class _Signals(Protocol):
    def alive(self, proc: ProcessRef) -> bool: ...

    def signal(self, proc: ProcessRef, sig: int) -> bool: ...


class _Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


def wait_dead(host: _Signals, proc: ProcessRef, clock: _Clock, timeout: float) -> bool:
    deadline = clock.now() + timeout
    while clock.now() < deadline:
        if not host.alive(proc):
            return True
        clock.sleep(0.05)
    return not host.alive(proc)


def sigkill(host: _Signals, proc: ProcessRef, clock: _Clock, timeout: float = 10.0) -> bool:
    """SIGKILL, then wait up to `timeout` until the process is gone; True when it is."""
    host.signal(proc, signal.SIGKILL)
    return wait_dead(host, proc, clock, timeout)


def terminate(
    host: _Signals, proc: ProcessRef | None, clock: _Clock, timeout: float, *, cont: bool = False
) -> str:
    """SIGTERM, wait up to `timeout`, then SIGKILL. `cont` sends SIGCONT first, for a process that
    may be paused (a SIGSTOPped process does not act on SIGTERM). Returns what happened."""
    if proc is None or not host.alive(proc):
        return "not running"
    if cont:
        host.signal(proc, signal.SIGCONT)
    host.signal(proc, signal.SIGTERM)
    if wait_dead(host, proc, clock, timeout):
        return "stopped"
    sigkill(host, proc, clock)
    return "killed after timeout"


def key_values(text: str) -> Iterator[tuple[str, str]]:
    """(key, value) of each `key=value` line a probe script printed; other lines are passed over."""
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            yield key, value
