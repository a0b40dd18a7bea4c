"""One command at a time per cluster: a lock held by PID + process start time.

Everything that loads or changes a cluster (up, down, start, stop, node operations, run, suite,
scenario, fault, heal, experiment run) takes the cluster's lock for as long as the command runs;
a second such command on the same cluster refuses in one line that names the holder. Read-only
commands (status, results, report, plan, logs) never take it.

The lock is a small JSON file `<home>/locks/<cluster>.json` naming the holder: PID, the start
time of that PID (clock ticks since boot, from /proc/PID/stat), the command line and when it
took the lock. A holder that no longer runs (killed, crashed, or its PID reused by another
process with another start time) holds nothing: the next command takes the lock over. Reading
and replacing the file happen under a short `flock` on `<home>/locks/.guard`, so two commands
that start together cannot both win. Taking a lock this process already holds is a no-op.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from clusterbench.errors import ClusterStateError
from clusterbench.hosts import process

PROC = process.PROC


def locks_dir(home: Path) -> Path:
    return home / "locks"


class ClusterBusy(ClusterStateError):
    """Another live command holds the cluster's lock."""


@dataclass(frozen=True)
class RecordedProcess:
    """A process named in a JSON file under locks/ (a lock's holder, a load client) by its PID
    and start time (clock ticks since boot): the same PID with another start time is another
    process. Subclasses add what else the file says about it."""

    pid: int
    start_ticks: int

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def recorded_ids(d: dict[str, object]) -> tuple[int, int]:
    """(pid, start_ticks) of a RecordedProcess's JSON: the first two arguments of its class."""
    return int(str(d["pid"])), int(str(d["start_ticks"]))


@dataclass(frozen=True)
class Holder(RecordedProcess):
    command: str
    since: float  # epoch seconds when it took the lock

    @staticmethod
    def from_json(d: dict[str, object]) -> Holder:
        command, since = str(d.get("command", "")), float(str(d.get("since", 0.0)))
        return Holder(*recorded_ids(d), command=command, since=since)

    def describe(self, now: float | None = None) -> str:
        """`clusterbench scenario x.toml` (PID 1234, since 12:01:02, 35 s ago)"""
        now = time.time() if now is None else now
        age = max(0.0, now - self.since)
        ago = f"{age:.0f} s" if age < 120 else f"{age / 60:.0f} min"
        when = time.strftime("%H:%M:%S", time.localtime(self.since))
        return f"`{self.command or '?'}` (PID {self.pid}, since {when}, {ago} ago)"


@dataclass(eq=False)
class ClusterLock:
    """The lock of cluster `name` under `home`, taken and released for process `pid`."""

    home: Path
    name: str
    _: KW_ONLY
    proc_root: Path = PROC
    now: Callable[[], float] = time.time
    pid: int = field(default_factory=os.getpid)

    @property
    def path(self) -> Path:
        return locks_dir(self.home) / f"{self.name}.json"

    def _me(self, command: str) -> Holder:
        ticks = process.start_ticks(self.pid, self.proc_root)
        if ticks is None:
            raise ClusterStateError(f"cannot read the start time of PID {self.pid} in {self.proc_root}")
        return Holder(self.pid, ticks, command, self.now())

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        d = locks_dir(self.home)
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(d / ".guard", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def recorded(self) -> Holder | None:
        """Whoever the file names, alive or not."""
        try:
            return Holder.from_json(json.loads(self.path.read_text()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # unreadable: nobody can be shown to hold it

    def alive(self, h: Holder) -> bool:
        return process.is_alive(h.pid, h.start_ticks, self.proc_root)

    def holder(self) -> Holder | None:
        """The live holder, or None when the cluster is free (or its holder is gone)."""
        h = self.recorded()
        return h if h is not None and self.alive(h) else None

    def mine(self, h: Holder | None) -> bool:
        if h is None or h.pid != self.pid:
            return False
        return process.start_ticks(self.pid, self.proc_root) == h.start_ticks

    def acquire(self, command: str, *, force: bool = False, hint: str = "") -> Holder | None:
        """Take the lock. Returns the holder it replaced when that one was gone (or forced away),
        None otherwise. Raises ClusterBusy when a live command holds it (unless `force`)."""
        with self._guard():
            h = self.recorded()
            if self.mine(h):
                return None
            if h is not None and self.alive(h) and not force:
                raise ClusterBusy(busy_message(self.name, h, self.now(), hint))
            me = self._me(command)
            tmp = self.path.with_name(self.path.name + f".{self.pid}.tmp")
            tmp.write_text(json.dumps(me.to_json(), sort_keys=True) + "\n")
            os.replace(tmp, self.path)
            return h

    def release(self) -> None:
        """Remove the lock if this process holds it (a forced takeover may have replaced us)."""
        with self._guard():
            if self.mine(self.recorded()):
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()


def busy_message(name: str, h: Holder, now: float, hint: str = "") -> str:
    return (
        f"cluster '{name}' is in use by {h.describe(now)}; wait until it ends or stop it "
        f"(Ctrl-C there, or `kill {h.pid}`)"
        + (f"; {hint}" if hint else "")
        + "; status, results and report work meanwhile"
    )


# ---- the locks this process holds (the CLI takes them; main() releases them at its end) --------

_held: dict[tuple[str, str], ClusterLock] = {}


def take(
    home: Path,
    name: str,
    command: str,
    *,
    force: bool = False,
    hint: str = "",
    report: Callable[[str], None] | None = None,
) -> ClusterLock:
    """Take cluster `name`'s lock for the rest of this process (or until release_all)."""
    key = (str(home), name)
    if key in _held:
        return _held[key]
    lk = ClusterLock(home, name)
    try:
        replaced = lk.acquire(command, force=force, hint=hint)
    except OSError as exc:
        raise ClusterStateError(
            f"cannot take the lock of cluster '{name}' in {locks_dir(home)} ({exc}); "
            "run it as root or point CLUSTERBENCH_HOME at a writable directory"
        ) from None
    _held[key] = lk
    if replaced is not None and report is not None:
        if lk.alive(replaced):
            report(f"taking cluster '{name}' over from {replaced.describe()} (--force)")
        else:
            report(f"cluster '{name}' was locked by {replaced.describe()}, which no longer runs; taken over")
    return lk


def holder(home: Path, name: str) -> Holder | None:
    """The live holder of cluster `name`'s lock, if any (for status)."""
    return ClusterLock(home, name).holder()


def release_all() -> None:
    for lk in list(_held.values()):
        with contextlib.suppress(OSError):
            lk.release()
    _held.clear()
