"""The values and the control channel of cb-faultfs (tools/faultfs), the FUSE layer for power loss
and disk faults: what is sent (DiskFaults), what comes back (LayerStatus, Dropped), and how a
request reaches the layer's control socket (one JSON object per line each way). Pure except for
the channels; see providers/faultfs.py for the layer's lifecycle and docs/faultfs.md for what it
models."""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from clusterbench.errors import ComponentError, InputError
from clusterbench.hosts.base import Machine

DELAY_OPS = ("read", "write", "fsync", "all")
ERROR_OPS = ("write", "fsync")
ERRNOS = ("EIO", "ENOSPC")
NEW_FILES = ("empty", "remove")


@dataclass(frozen=True)
class DiskFaults:
    """Disk faults for a window: every operation of a `delay_ops` kind waits `delay_ms` more (plus
    up to `jitter_ms`, uniformly), and each `error_ops` operation fails with `error` with
    `probability` instead of running. `seconds` ends the window in the layer itself (None: until
    cleared), so faults never outlive a controller that died."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    delay_ops: tuple[str, ...] = ()
    error: str | None = None
    error_ops: tuple[str, ...] = ()
    probability: float = 1.0
    seconds: float | None = None

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise InputError(f"disk faults: {problem}")

    def _problem(self) -> str | None:
        if self.delay_ms < 0 or self.jitter_ms < 0:
            return "delay_ms and jitter_ms must not be negative"
        if bad := [o for o in self.delay_ops if o not in DELAY_OPS]:
            return f"delay_ops {bad} not among {', '.join(DELAY_OPS)}"
        if (self.delay_ms or self.jitter_ms) and not self.delay_ops:
            return f"a delay needs delay_ops ({', '.join(DELAY_OPS)})"
        if self.error is not None and self.error not in ERRNOS:
            return f"error {self.error!r} is not one of {', '.join(ERRNOS)}"
        if bad := [o for o in self.error_ops if o not in ERROR_OPS]:
            return f"error_ops {bad} not among {', '.join(ERROR_OPS)}"
        if self.error is not None and not self.error_ops:
            return f"an error needs error_ops ({', '.join(ERROR_OPS)})"
        if not 0 < self.probability <= 1:
            return f"probability must be within (0, 1] (got {self.probability:g})"
        if self.seconds is not None and self.seconds <= 0:
            return f"seconds must be positive (got {self.seconds:g})"
        if not (self.delay_ms or self.jitter_ms or self.error):
            return "nothing to inject: give delay_ms or error"
        return None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.delay_ms or self.jitter_ms:
            out.update(delay_ms=self.delay_ms, jitter_ms=self.jitter_ms, delay_ops=list(self.delay_ops))
        if self.error:
            out.update(error=self.error, error_ops=list(self.error_ops), probability=self.probability)
        if self.seconds is not None:
            out["seconds"] = self.seconds
        return out

    def text(self) -> str:
        parts = []
        if self.delay_ms or self.jitter_ms:
            jitter = f" (+0-{self.jitter_ms:g} ms)" if self.jitter_ms else ""
            parts.append(f"+{self.delay_ms:g} ms{jitter} per {'/'.join(self.delay_ops)}")
        if self.error:
            share = "" if self.probability == 1 else f" {self.probability:.0%} of"
            parts.append(f"{self.error} on{share} {'/'.join(self.error_ops)}")
        window = f" for {self.seconds:g} s" if self.seconds is not None else ""
        return ", ".join(parts) + window


@dataclass(frozen=True)
class DroppedFile:
    path: str  # relative to the layer's mount point
    unsynced_bytes: int  # written since the file's last sync
    reverted_bytes: int  # synced content written back over later writes
    size_before: int
    size_after: int
    removed: bool = False
    error: str = ""


@dataclass(frozen=True)
class Dropped:
    """What a power loss took: every file with something un-synced, as of its last sync again."""

    files: tuple[DroppedFile, ...] = ()
    refused: int = 0  # operations held at the cut and answered EIO afterwards

    @property
    def unsynced_bytes(self) -> int:
        return sum(f.unsynced_bytes for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    @property
    def errors(self) -> list[str]:
        return [f"{f.path}: {f.error}" for f in self.files if f.error]

    def text(self) -> str:
        if not self.files:
            return "nothing un-synced to lose"
        removed = f", {self.removed} new file(s) removed" if self.removed else ""
        return f"lost {self.unsynced_bytes} un-synced bytes in {len(self.files)} file(s){removed}"

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Dropped:
        files = tuple(
            DroppedFile(
                path=str(f["path"]),
                unsynced_bytes=int(f.get("unsynced_bytes", 0)),
                reverted_bytes=int(f.get("reverted_bytes", 0)),
                size_before=int(f.get("size_before", 0)),
                size_after=int(f.get("size_after", 0)),
                removed=bool(f.get("removed", False)),
                error=str(f.get("error", "")),
            )
            for f in data.get("files") or []
        )
        return Dropped(files=files)


@dataclass(frozen=True)
class LayerStatus:
    frozen: bool
    drops: int  # power losses so far
    in_flight: int
    unsynced_files: int
    unsynced_bytes: int
    created_files: int  # created since their last sync
    undo_bytes: int  # pre-images held in the layer's memory
    ops: dict[str, int] = field(default_factory=dict)  # served, by kind: read, write, fsync, other
    delayed: int = 0
    errors_injected: int = 0
    refused: int = 0
    faults: dict[str, Any] | None = None

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> LayerStatus:
        gate, files = data.get("gate") or {}, data.get("files") or {}
        return LayerStatus(
            frozen=bool(gate.get("frozen", False)),
            drops=int(gate.get("drops", 0)),
            in_flight=int(gate.get("in_flight", 0)),
            unsynced_files=int(files.get("unsynced_files", 0)),
            unsynced_bytes=int(files.get("unsynced_bytes", 0)),
            created_files=int(files.get("created_files", 0)),
            undo_bytes=int(files.get("undo_bytes", 0)),
            ops={str(k): int(v) for k, v in (gate.get("ops") or {}).items()},
            delayed=int(gate.get("delayed", 0)),
            errors_injected=int(gate.get("errors_injected", 0)),
            refused=int(gate.get("refused", 0)),
            faults=gate.get("faults"),
        )

    def text(self) -> str:
        state = "frozen" if self.frozen else "running"
        faults = f"; faults {json.dumps(self.faults, sort_keys=True)}" if self.faults else ""
        return (
            f"{state}; {self.unsynced_bytes} un-synced bytes in {self.unsynced_files} file(s) "
            f"({self.created_files} new); {sum(self.ops.values())} operations served{faults}"
        )


class Channel(Protocol):
    """Sends one request to a layer's control socket and returns its answer (any answer: `ok`
    false included); raises ComponentError when the layer cannot be reached."""

    def request(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]: ...


def _decode(line: str, where: str) -> dict[str, Any]:
    try:
        answer = json.loads(line)
    except ValueError:
        raise ComponentError(f"cb-faultfs at {where} answered {line[:80]!r}, not JSON") from None
    if not isinstance(answer, dict):
        raise ComponentError(f"cb-faultfs at {where} answered {line[:80]!r}, not an object")
    return answer


class SocketChannel:
    """The socket on this machine's file system, reached directly."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def request(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        data = (json.dumps(message) + "\n").encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(str(self.path))
                s.sendall(data)
                buf = b""
                while not buf.endswith(b"\n"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
        except OSError as e:
            raise ComponentError(
                f"cb-faultfs control socket {self.path}: {e.strerror or e}; is the layer running?"
            ) from None
        return _decode(buf.decode(errors="replace"), str(self.path))


class HostChannel:
    """The socket on another machine, reached with socat over the host's command channel."""

    def __init__(self, host: Machine, path: Path) -> None:
        self.host, self.path = host, path

    def request(self, message: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        argv = ["socat", "-t", f"{timeout:g}", "-T", f"{timeout:g}", "-", f"UNIX-CONNECT:{self.path}"]
        res = self.host.run(argv, input=json.dumps(message) + "\n", timeout=timeout + 10, check=False)
        if not res.ok:
            raise ComponentError(
                f"[{self.host.name}] cb-faultfs control socket {self.path}: {res.tail(1)}; is it running?"
            )
        return _decode(res.stdout.strip().splitlines()[-1] if res.stdout.strip() else "", str(self.path))


def channel_for(host: Machine, path: Path) -> Channel:
    return HostChannel(host, path) if host.remote else SocketChannel(path)
