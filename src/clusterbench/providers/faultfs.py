"""A directory on cb-faultfs (tools/faultfs): a pass-through FUSE layer over a source directory that
remembers what was not fsynced, so that a power loss can lose exactly that, and that injects disk
faults (added latency, EIO/ENOSPC) for a window. Off unless asked for: nothing here runs unless a
caller makes a FaultFS and starts it.

    layer = FaultFS(host, source=node_dir / "data.faultfs", mount=node_dir / "data")
    layer.start(owner="mysql")                       # mounted; the server's datadir is `mount`
    dropped = layer.power_loss(lambda: host.signal(proc, signal.SIGKILL))
    layer.set_faults(DiskFaults(delay_ms=50, delay_ops=("fsync",), seconds=30))
    layer.stop()                                     # unmounted, the daemon gone

The layer is mounted from the host's root mount namespace (locally: this machine's, not inside
`ip netns exec`, whose private mount namespace ends with the command); servers started later in a
node's network namespace see it, as they see the datadir tmpfs of providers/datadirfs.py.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from clusterbench.clock import Clock, SystemClock
from clusterbench.errors import ComponentError, InputError, PreflightError
from clusterbench.hosts.base import Machine, ProcessRef, sigkill, terminate
from clusterbench.providers.datadirfs import _unescape
from clusterbench.providers.faultfs_proto import (
    NEW_FILES,
    Channel,
    DiskFaults,
    Dropped,
    LayerStatus,
    channel_for,
)

log = logging.getLogger(__name__)

FS_TYPE = "fuse.cbfaultfs"  # what /proc/self/mountinfo shows for a layer
BINARY = "cb-faultfs"
DEFAULT_BIN_DIR = Path("/var/lib/clusterbench/bin")
DEV_FUSE = Path("/dev/fuse")


def binary_path() -> Path:
    """Where scripts/build-tools.sh puts cb-faultfs: /var/lib/clusterbench/bin, or $CLUSTERBENCH_BIN
    (not under CLUSTERBENCH_HOME: every home on the machine shares one build)."""
    return Path(os.environ.get("CLUSTERBENCH_BIN", str(DEFAULT_BIN_DIR))) / BINARY


def preflight(host: Machine, binary: Path | None = None) -> None:
    """Raises PreflightError, in one line, when `host` cannot run the layer."""
    binary = binary or binary_path()
    if not host.exists(DEV_FUSE):
        raise PreflightError(
            f"[{host.name}] {DEV_FUSE} is missing: this kernel has no FUSE, so power loss and disk "
            "faults cannot run here; use a kernel with FUSE (CONFIG_FUSE_FS)"
        )
    if not host.exists(binary):
        raise PreflightError(
            f"[{host.name}] {binary} is missing: the power-loss and disk-fault layer is not built; "
            "run `make setup` (scripts/build-tools.sh builds it with Go)"
        )
    uid = host.run(["id", "-u"], check=False).stdout.strip()
    if uid != "0":
        raise PreflightError(
            f"[{host.name}] mounting the power-loss layer needs root (uid {uid or '?'}); run as root"
        )


def layer_mounts(mountinfo: str, under: Path | None = None) -> list[Path]:
    """Mount points of cb-faultfs layers in a /proc/self/mountinfo text, optionally only those at or
    below `under`, deepest first (pure)."""
    found = set()
    prefix = str(under).rstrip("/") + "/" if under is not None else ""
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if " - " not in line or len(fields) < 5:
            continue
        fstype = line.split(" - ", 1)[1].split(" ")[0]
        point = _unescape(fields[4])
        if fstype != FS_TYPE:
            continue
        if under is None or point == str(under) or point.startswith(prefix):
            found.add(Path(point))
    return sorted(found, key=lambda p: (-len(p.parts), str(p)))


def release_all(host: Machine, root: Path) -> list[str]:
    """Unmount every layer at or below `root` (lazily if busy): its daemon then exits by itself.
    For a teardown that lost track of the layers (a killed run, lost state)."""
    done = []
    for point in layer_mounts(host.read_file(Path("/proc/self/mountinfo")) or "", root):
        if not host.run(["umount", str(point)], check=False).ok:
            host.run(["umount", "-l", str(point)], check=False)
        done.append(f"unmounted power-loss layer {point}")
    return done


class FaultFS:
    """One layer: `source` holds the files, `mount` shows them. The control socket and the log sit
    beside the mount point unless given."""

    def __init__(
        self,
        host: Machine,
        source: Path,
        mount: Path,
        *,
        control: Path | None = None,
        log_path: Path | None = None,
        binary: Path | None = None,
        proc: ProcessRef | None = None,
        clock: Clock | None = None,
        channel: Channel | None = None,
    ) -> None:
        self.host = host
        self.source, self.mount = source, mount
        self.control = control or mount.parent / f".{mount.name}.faultfs.sock"
        self.log_path = log_path or mount.parent / f"{mount.name}.faultfs.log"
        self.binary = binary or binary_path()
        self.proc = proc  # the daemon, once started (persist it with ProcessRef.to_json)
        self.clock = clock or SystemClock()
        self.channel = channel or channel_for(host, self.control)

    @property
    def what(self) -> str:
        """How messages name the layer: `[host] cb-faultfs at MOUNT`."""
        return f"[{self.host.name}] cb-faultfs at {self.mount}"

    def argv(self) -> list[str]:
        paths = {"-source": self.source, "-mount": self.mount, "-control": self.control}
        return [str(self.binary), *(x for flag, path in paths.items() for x in (flag, str(path)))]

    def start(self, *, owner: str | None = None, timeout: float = 15.0) -> ProcessRef:
        """Mount the layer (the directories are made, owned by `owner`) and wait until it answers."""
        preflight(self.host, self.binary)
        if self.mounted():
            raise ComponentError(f"{self.what}: already mounted; stop it first")
        if len(str(self.control).encode()) > 107:
            raise InputError(f"control socket path {self.control} is over 107 bytes; give a shorter control=")
        self.host.mkdir(self.source, owner=owner)
        self.host.mkdir(self.mount, owner=owner)
        self.proc = self.host.spawn(self.argv(), log=self.log_path)
        try:
            self.wait_ready(timeout)
        except ComponentError:
            self.stop(timeout=5)  # a daemon that hangs must not stay, nor its mount
            raise
        log.info("power-loss layer %s over %s (pid %d)", self.mount, self.source, self.proc.pid)
        return self.proc

    def wait_ready(self, timeout: float) -> None:
        """Until the file system is mounted and the control socket answers; ComponentError (with the
        daemon's last log lines) if the daemon exits or `timeout` passes first."""
        deadline = self.clock.now() + timeout
        while True:
            if self.proc is not None and not self.host.alive(self.proc):
                raise ComponentError(f"{self.what}: the daemon exited: {self._log_tail()}")
            if self.mounted():
                try:
                    self.status()
                    return
                except ComponentError:
                    pass
            if self.clock.now() >= deadline:
                raise ComponentError(f"{self.what}: not ready after {timeout:g} s: {self._log_tail()}")
            self.clock.sleep(0.05)

    def _log_tail(self) -> str:
        text = (self.host.read_file(self.log_path) or "").strip().splitlines()
        return " | ".join(text[-3:]) or f"no output in {self.log_path}"

    def mounted(self) -> bool:
        info = self.host.read_file(Path("/proc/self/mountinfo")) or ""
        return self.mount in layer_mounts(info, self.mount)

    def _call(self, message: Mapping[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        answer = self.channel.request(message, timeout)
        if answer.get("ok") is not True:
            raise ComponentError(f"{self.what}: {message.get('op')}: {answer.get('error', answer)}")
        return answer

    def status(self) -> LayerStatus:
        return LayerStatus.from_json(self._call({"op": "status"}))

    def freeze(self, timeout: float = 30.0) -> None:
        """From now on no file operation completes (as at the instant of a power cut); waits up to
        `timeout` for those in flight. Still frozen when it raises: thaw releases it."""
        self._call({"op": "freeze", "timeout_s": timeout}, timeout=timeout + 10)

    def drop(self, new_files: str = "empty") -> Dropped:
        """Frozen only: every file back to its last sync. A file created since its last sync whose
        name was never made durable is emptied (`empty`) or removed (`remove`)."""
        if new_files not in NEW_FILES:
            raise InputError(f"new_files must be one of {', '.join(NEW_FILES)} (got {new_files!r})")
        return Dropped.from_json(self._call({"op": "drop", "new_files": new_files}, timeout=120))

    def thaw(self) -> int:
        """Operations run again; returns how many held ones were refused (EIO) because of a drop."""
        return int(self._call({"op": "thaw"}).get("refused", 0))

    def power_loss(
        self, kill: Callable[[], object], *, new_files: str = "empty", freeze_timeout: float = 30.0
    ) -> Dropped:
        """freeze -> kill -> drop -> thaw: the victim dies and its un-synced writes are gone, as on a
        real power cut. `kill` must only send the signal, not wait for the death: a thread of the
        victim held in the layer (writing back its dirty mmap pages at exit) ends only at the thaw.
        Wait for it afterwards. Thaws even when the freeze, `kill` or the drop fails."""
        if new_files not in NEW_FILES:
            raise InputError(f"new_files must be one of {', '.join(NEW_FILES)} (got {new_files!r})")
        try:
            self.freeze(freeze_timeout)
            kill()
            dropped = self.drop(new_files)
        finally:
            refused = self.thaw()
        if dropped.errors:
            log.warning("power loss at %s: %s", self.mount, "; ".join(dropped.errors))
        return replace(dropped, refused=refused)

    def set_faults(self, faults: DiskFaults) -> None:
        """Replaces the faults in force."""
        self._call({"op": "set_faults", "faults": faults.to_json()})

    def clear_faults(self) -> None:
        self._call({"op": "clear_faults"})

    def sync(self) -> int:
        """Every file durable as it is now (what sync(1) does on a disk); returns how many files
        had something to make durable. Refused while frozen."""
        return int(self._call({"op": "sync"}).get("synced", 0))

    def stop(self, timeout: float = 15.0, *, discard: bool = False) -> str:
        """SIGTERM the daemon (it thaws and unmounts), SIGKILL after `timeout`; unmount what is left
        (lazily if busy). Returns what happened. `discard`: the files are deleted next, so the
        daemon is SIGKILLed at once; what the kernel still held for it is dropped with the
        connection (a SIGTERM would first write it all through the daemon: on a busy machine that
        took the 8 s the daemon allows itself, per layer)."""
        what = "not running"
        if self.proc is not None and not discard:
            what = terminate(self.host, self.proc, self.clock, timeout)
        elif self.proc is not None and self.host.alive(self.proc):
            what = "killed" if sigkill(self.host, self.proc, self.clock) else "still running after SIGKILL"
        if self.mounted():
            if not self.host.run(["umount", str(self.mount)], check=False).ok:
                self.host.run(["umount", "-l", str(self.mount)], check=False)
            what += f"; unmounted {self.mount}"
        self.proc = None
        return what
