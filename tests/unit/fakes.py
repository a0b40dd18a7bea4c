"""Fakes for unit tests: a host that records what it was asked to do, and a clock that never sleeps.

`FakeHost` subclasses `LocalHost` only so that it type-checks where components are annotated with
`LocalHost`; it overrides every method that would touch the machine, so nothing real runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clusterbench.cluster import Cluster
from clusterbench.engines.galera.engine import GaleraEngine
from clusterbench.hosts.base import CommandResult, ProcessRef
from clusterbench.hosts.local import LocalHost
from clusterbench.providers.local import LocalProvider

Responder = Callable[[list[str]], CommandResult]


def result(argv: list[str], stdout: str = "", returncode: int = 0, stderr: str = "") -> CommandResult:
    return CommandResult(tuple(argv), returncode, stdout, stderr)


class FakeClock:
    """`sleep` advances `now`; `at(t, fn)` runs `fn` once the clock reaches `t`."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self.start = start
        self.sleeps: list[float] = []
        self._events: list[tuple[float, Callable[[], None]]] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds
        due = [e for e in self._events if e[0] <= self.t]
        self._events = [e for e in self._events if e[0] > self.t]
        for _, fn in due:
            fn()

    def at(self, t: float, fn: Callable[[], None]) -> None:
        self._events.append((t, fn))

    @property
    def elapsed(self) -> float:
        return self.t - self.start


@dataclass
class Spawned:
    argv: list[str]
    log: Path
    proc: ProcessRef


@dataclass
class Signalled:
    proc: ProcessRef
    sig: int


class FakeHost(LocalHost):
    """Records run/spawn/signal calls; files live in a dict; processes live in a set of PIDs.

    - `responses` maps an argv (as a tuple) to the stdout it returns; `responder` overrides it.
    - `die_on` lists the signals that end a process (SIGKILL by default; add SIGTERM to obey it).
    """

    def __init__(self, name: str = "fake", *, die_on: tuple[int, ...] = (9,)) -> None:
        super().__init__(name=name)
        self.runs: list[list[str]] = []
        self.inputs: list[str | None] = []
        self.spawned: list[Spawned] = []
        self.signals: list[Signalled] = []
        self.files: dict[Path, str] = {}
        self.modes: dict[Path, int] = {}
        self.live: set[int] = set()
        self.responses: dict[tuple[str, ...], str] = {}
        self.responder: Responder | None = None
        self.die_on = die_on
        self._next_pid = 4000

    def wrap(self, argv: list[str]) -> list[str]:
        return list(argv)

    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> CommandResult:
        self.runs.append(list(argv))
        self.inputs.append(input)
        if self.responder is not None:
            return self.responder(list(argv))
        return result(argv, self.responses.get(tuple(argv), ""))

    def spawn(self, argv: list[str], *, log: Path) -> ProcessRef:
        self._next_pid += 1
        proc = ProcessRef(self._next_pid, 777_000 + self._next_pid)
        self.spawned.append(Spawned(list(argv), log, proc))
        self.live.add(proc.pid)
        return proc

    def alive(self, proc: ProcessRef) -> bool:
        return proc.pid in self.live

    def process_listing(self, proc: Path = Path("/proc")) -> str:
        """What the shell listing answers (`responses` or the responder), as a remote host's."""
        from clusterbench.hosts.procs import LIST_PROCS

        return self.run(["sh", "-c", LIST_PROCS], check=False).stdout

    def signal(self, proc: ProcessRef, sig: int) -> bool:
        self.signals.append(Signalled(proc, int(sig)))
        if proc.pid not in self.live:
            return False
        if int(sig) in self.die_on:
            self.live.discard(proc.pid)
        return True

    def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None:
        self.files[path] = content
        self.modes[path] = mode

    def read_file(self, path: Path) -> str | None:
        return self.files.get(path)

    def signal_numbers(self) -> list[int]:
        return [s.sig for s in self.signals]


@dataclass
class Recorder:
    """Collects report lines."""

    lines: list[str] = field(default_factory=list)

    def __call__(self, line: str) -> None:
        self.lines.append(line)


def local_provider(c: Cluster) -> LocalProvider:
    assert isinstance(c.provider, LocalProvider)
    return c.provider


def galera_engine_of(c: Cluster) -> GaleraEngine:
    assert isinstance(c.engine, GaleraEngine)
    return c.engine
