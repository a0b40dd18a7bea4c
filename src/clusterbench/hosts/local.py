"""Hosts on this machine: the root network namespace, and a named network namespace."""

from __future__ import annotations

import logging
import os
import pwd
import shlex
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from clusterbench.errors import ComponentError
from clusterbench.hosts import process
from clusterbench.hosts.base import CommandResult, ProcessRef

cmdlog = logging.getLogger("clusterbench.cmd")

# Starts a daemon detached from us: its own session (Ctrl-C in our terminal does not reach it),
# stdin closed, output appended to its log, and its PID printed. `ip netns exec` and `setsid`
# both exec, so the printed PID is the daemon's own.
_SPAWN = 'setsid "$@" >>"$CB_LOG" 2>&1 </dev/null & echo $!'


class RootNamespace:
    """This machine's root network namespace: commands run as they are; `name` for messages."""

    remote = False

    def __init__(self, name: str = "local") -> None:
        self.name = name

    def wrap(self, argv: list[str]) -> list[str]:
        return list(argv)


class LocalHost(RootNamespace):
    """Runs commands directly, in the root network namespace."""

    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> CommandResult:
        full = self.wrap(argv)
        cmdlog.debug("[%s] %s", self.name, shlex.join(full))
        try:
            cp = subprocess.run(full, input=input, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise ComponentError(f"{full[0]}: command not found; run `make setup` to install it") from None
        except subprocess.TimeoutExpired:
            raise ComponentError(
                f"[{self.name}] `{shlex.join(argv)}` did not finish in {timeout:g} s"
            ) from None
        res = CommandResult(tuple(full), cp.returncode, cp.stdout, cp.stderr)
        if check and not res.ok:
            raise ComponentError(
                f"[{self.name}] `{shlex.join(argv)}` failed (exit {res.returncode}): {res.tail()}"
            )
        return res

    def spawn(self, argv: list[str], *, log: Path) -> ProcessRef:
        full = self.wrap(argv)
        cmdlog.debug("[%s] spawn %s >> %s", self.name, shlex.join(full), log)
        cp = subprocess.run(
            ["sh", "-c", _SPAWN, "sh", *full],
            capture_output=True,
            text=True,
            env={"CB_LOG": str(log), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            timeout=10,
        )
        pid = int(cp.stdout.strip())
        # /proc/PID appears at fork; the start time is fixed from then on.
        for _ in range(50):
            ticks = process.start_ticks(pid)
            if ticks is not None:
                return ProcessRef(pid, ticks)
            time.sleep(0.01)
        raise ComponentError(f"[{self.name}] `{argv[0]}` exited at once; see {log}")

    def alive(self, proc: ProcessRef) -> bool:
        return process.is_alive(proc.pid, proc.start_ticks)

    def process_listing(self, proc: Path = Path("/proc")) -> str:
        """Every process of this machine as hosts.procs.LIST_PROCS prints them (PID, parent PID,
        stat line, command line; tab-separated, a line each), read from /proc here. A network
        namespace shares this machine's process table."""
        lines = []
        for d in proc.iterdir():
            if not d.name.isdigit():
                continue
            try:
                status = (d / "status").read_text(errors="replace")
                stat = (d / "stat").read_text(errors="replace").replace("\t", " ").strip()
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:  # gone meanwhile
                continue
            ppid = next((ln[5:].strip() for ln in status.splitlines() if ln.startswith("PPid:")), "")
            lines.append(f"{d.name}\t{ppid}\t{stat}\t{cmd}")
        return "\n".join(lines) + "\n"

    def proc_state(self, pid: int) -> tuple[str, int] | None:
        """(state, start ticks) of a PID, or None when it does not exist."""
        st, ticks = process.state(pid), process.start_ticks(pid)
        return None if st is None or ticks is None else (st, ticks)

    def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        # Create with the final mode so a secret is never readable by others, even briefly.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as f:
            f.write(content)
        os.chmod(tmp, mode)
        if owner is not None:
            pw = pwd.getpwnam(owner)
            os.chown(tmp, pw.pw_uid, pw.pw_gid)
        os.replace(tmp, path)

    def read_file(self, path: Path) -> str | None:
        try:
            return path.read_text(errors="replace")
        except FileNotFoundError:
            return None

    def signal(self, proc: ProcessRef, sig: int) -> bool:
        return process.send(proc.pid, proc.start_ticks, sig)

    def mkdir(self, path: Path, *, owner: str | None = None, mode: int = 0o755) -> None:
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, mode)
        if owner is not None:
            pw = pwd.getpwnam(owner)
            os.chown(path, pw.pw_uid, pw.pw_gid)

    def exists(self, path: Path) -> bool:
        return path.exists()

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def file_size(self, path: Path) -> int:
        try:
            return path.stat().st_size
        except FileNotFoundError:
            return 0

    def popen(
        self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.Popen[bytes]:
        """A streaming foreground process (a load client) in this host's namespace."""
        full = self.wrap(argv)
        cmdlog.debug("[%s] popen %s", self.name, shlex.join(full))
        merged = dict(os.environ)
        merged.update(env or {})
        return subprocess.Popen(  # noqa: S603 - argv lists built by typed objects
            full,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=merged,
            cwd=str(cwd) if cwd is not None else None,
        )


class NetnsHost(LocalHost):
    """Runs commands inside a network namespace. Files live on the shared filesystem."""

    def __init__(self, netns: str, outer: Sequence[str] = ()) -> None:
        super().__init__(name=netns)
        self.netns = netns
        # what runs before entering the namespace: a cgroup entry (providers.cgroups.enter_cgroup_argv),
        # which must happen out here, since `ip netns exec` mounts a /sys of its own without the
        # cgroup hierarchies. The command then starts under those limits and so do its children.
        self.outer = list(outer)

    def wrap(self, argv: list[str]) -> list[str]:
        return [*self.outer, "ip", "netns", "exec", self.netns, *argv]
