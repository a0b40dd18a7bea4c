"""What HAProxy and keepalived have in common: one configuration file and one detached process on
a host, tracked by PID + start time."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from clusterbench.clock import Clock, SystemClock
from clusterbench.hosts.base import Machine, ProcessRef, terminate


class DaemonConfig(Protocol):
    @property
    def dir(self) -> Path: ...

    @property
    def cfg_path(self) -> Path: ...


C = TypeVar("C", bound=DaemonConfig)


class Deployable(Protocol):
    def write_files(self) -> None: ...

    def validate(self) -> None: ...

    def start(self) -> object: ...


D = TypeVar("D", bound=Deployable)


class Stoppable(Protocol):
    def stop(self) -> str: ...


S = TypeVar("S", bound=Stoppable)


def deploy(items: Sequence[D], started: Callable[[D], None]) -> None:
    """Write and validate every item's files before any starts, then start each in turn and hand
    it to `started` (to record it)."""
    for x in items:
        x.write_files()
        x.validate()
    for x in items:
        x.start()
        started(x)


def stop_each(items: Iterable[S], label: Callable[[S], str]) -> list[str]:
    """Stop every item in turn; one line '<label> <what stop did>' per item that was running."""
    done = []
    for x in items:
        what = x.stop()
        if what != "not running":
            done.append(f"{label(x)} {what}")
    return done


@dataclasses.dataclass(eq=False)
class Daemon(Generic[C]):
    """A component's process on `host`, configured by `cfg`; `proc` once it runs."""

    cfg: C
    host: Machine
    proc: ProcessRef | None = None
    clock: Clock = dataclasses.field(default_factory=SystemClock)

    def __post_init__(self) -> None:
        # an explicit clock=None is the system clock, as before
        self.clock = self.clock or SystemClock()

    def render(self) -> str:
        """The configuration file's text."""
        raise NotImplementedError

    def write_files(self) -> None:
        self.host.mkdir(self.cfg.dir)
        # Root's and not writable by others: keepalived's names a script that runs as root.
        self.host.put_file(self.cfg.cfg_path, self.render(), mode=0o644)

    def alive(self) -> bool:
        return self.proc is not None and self.host.alive(self.proc)

    def stop(self, timeout: float = 10.0) -> str:
        return terminate(self.host, self.proc, self.clock, timeout)
