"""CPU limits through cgroup v1 (this kernel's v2 hierarchy has no cpu controller, RECIPES G13)."""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterbench.errors import PreflightError

CFS_PERIOD_US = 100_000
# how long removing a group waits for just-killed processes to leave it
BUSY_WAIT_S = 5.0


@dataclass(frozen=True)
class CgroupV1:
    root: Path = Path("/sys/fs/cgroup")

    def available(self) -> bool:
        return (self.root / "cpu" / "cpu.cfs_quota_us").exists()

    def _dir(self, controller: str, name: str) -> Path:
        return self.root / controller / name

    def writes(self, name: str, cpu_quota: float | None, cpuset: str | None) -> list[tuple[Path, str]]:
        """The file writes that set the limits (pure; the order matters for cpuset)."""
        out: list[tuple[Path, str]] = []
        if cpu_quota is not None:
            d = self._dir("cpu", name)
            out += [
                (d / "cpu.cfs_period_us", str(CFS_PERIOD_US)),
                (d / "cpu.cfs_quota_us", str(int(cpu_quota * CFS_PERIOD_US))),
            ]
        if cpuset is not None:
            # A v1 cpuset group needs cpus and mems set, and so does each parent we create.
            parent = self._dir("cpuset", name).parent
            top = self.root / "cpuset"
            out += [
                (parent / "cpuset.cpus", _read(top / "cpuset.cpus")),
                (parent / "cpuset.mems", _read(top / "cpuset.mems")),
                (self._dir("cpuset", name) / "cpuset.cpus", cpuset),
                (self._dir("cpuset", name) / "cpuset.mems", _read(top / "cpuset.mems")),
            ]
        return out

    def create(self, name: str, cpu_quota: float | None, cpuset: str | None) -> list[Path]:
        if (cpu_quota is not None or cpuset is not None) and not self.available():
            raise PreflightError(
                f"cgroup v1 cpu controller not found under {self.root}; "
                "remove cpu_quota/cpuset from the topology"
            )
        made: list[Path] = []
        for controller, wanted in (("cpu", cpu_quota), ("cpuset", cpuset)):
            if wanted is None:
                continue
            d = self._dir(controller, name)
            _mkdir(d)
            made.append(d)
        for path, value in self.writes(name, cpu_quota, cpuset):
            try:
                path.write_text(value)
            except OSError as exc:
                raise PreflightError(f"cannot write {value!r} to {path}: {exc.strerror}") from None
        return made

    def attach(self, name: str, pid: int) -> None:
        for controller in ("cpu", "cpuset"):
            procs = self._dir(controller, name) / "cgroup.procs"
            if procs.exists():
                # Moves the whole thread group (all of mariadbd's threads).
                procs.write_text(str(pid))

    def procs_files(self, name: str) -> list[Path]:
        """The cgroup.procs files of group `name`, one per controller it has."""
        files = [self._dir(c, name) / "cgroup.procs" for c in ("cpu", "cpuset")]
        return [f for f in files if f.exists()]

    def existing(self, prefix: str) -> list[Path]:
        """Groups of ours whose leaf name starts with `prefix` (e.g. 'lab-')."""
        out: list[Path] = []
        for controller in ("cpu", "cpuset"):
            d = self.root / controller / "clusterbench"
            if d.is_dir():
                out += sorted(p for p in d.iterdir() if p.is_dir() and p.name.startswith(prefix))
        return out

    def remove_parents_if_empty(self) -> None:
        """Remove our top-level `clusterbench` groups once no cluster uses them."""
        for controller in ("cpu", "cpuset"):
            d = self.root / controller / "clusterbench"
            if d.is_dir() and not any(p.is_dir() for p in d.iterdir()):
                with contextlib.suppress(OSError):
                    os.rmdir(d)

    def remove(self, path: Path, wait: float = BUSY_WAIT_S) -> None:
        """Remove a group; one whose processes were just killed may stay busy while the kernel
        finishes their exit (a big mysqld's memory), so EBUSY is retried for up to `wait` s."""
        deadline = time.monotonic() + wait
        while True:
            try:
                os.rmdir(path)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                if time.monotonic() >= deadline:
                    raise PreflightError(f"cgroup {path} still has processes; stop them first") from None
                time.sleep(0.1)


# sh -c: write the shell's own PID into each file named before `--`, then exec the command (which
# keeps that PID); a write that fails stops it there.
_ENTER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 1; shift; done; shift; exec "$@"'


def enter_cgroup_argv(procs_files: Sequence[Path], argv: Sequence[str] = ()) -> list[str]:
    """`argv` started inside the groups whose cgroup.procs files are given: it enters them before
    it execs, so whatever it forks at start (nginx's and php-fpm's workers) is born there, which
    an attach() after the spawn would miss. Without files: `argv` as it is. Pure."""
    if not procs_files:
        return list(argv)
    return ["sh", "-c", _ENTER, "sh", *(str(f) for f in procs_files), "--", *argv]


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return "0"


def _mkdir(d: Path, tries: int = 3) -> None:
    """Make group `d` and its parent. Another cluster's `down` may remove the shared parent, once
    empty, between the two mkdirs (two clusters brought up and down side by side): then again."""
    for attempt in range(tries):
        try:
            d.mkdir(parents=True, exist_ok=True)
            return
        except FileNotFoundError:
            if attempt == tries - 1:
                raise
