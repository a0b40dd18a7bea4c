"""Load clients (sysbench) a command started on a cluster, recorded by PID + start time.

A clusterbench that is SIGKILLed cannot stop its sysbench processes: they are reparented to PID 1
and keep writing through the balancer for up to their --time. So every load client is recorded
when it starts, in `<home>/locks/<cluster>.load.json`, with the host it runs on and the PID and
start time of the clusterbench that owns it, and removed when it ends. `status` shows them; the
next command that takes the cluster's lock, `heal` and `down` stop the ones whose owner is gone
(`down` stops every one). A PID is only signalled while its start time still matches.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from clusterbench.hosts import process
from clusterbench.hosts.base import ProcessRef
from clusterbench.lock import RecordedProcess, locks_dir, recorded_ids


@dataclass(frozen=True)
class LoadClient(RecordedProcess):
    host: str  # the client host's name ("local" for this machine's root namespace)
    remote: bool  # a machine of its own (over ssh), not this machine's PID space
    owner_pid: int
    owner_start: int
    since: float
    what: str = "sysbench"

    @staticmethod
    def from_json(d: dict[str, object]) -> LoadClient:
        return LoadClient(
            *recorded_ids(d),
            host=str(d["host"]),
            remote=bool(d.get("remote", False)),
            owner_pid=int(str(d["owner_pid"])),
            owner_start=int(str(d["owner_start"])),
            since=float(str(d.get("since", 0.0))),
            what=str(d.get("what", "sysbench")),
        )

    @property
    def ref(self) -> ProcessRef:
        return ProcessRef(self.pid, self.start_ticks)

    def describe(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.since))
        return f"{self.what} PID {self.pid} on {self.host} (since {when})"


class SignalHost(Protocol):
    def alive(self, proc: ProcessRef) -> bool: ...

    def signal(self, proc: ProcessRef, sig: int) -> bool: ...


class _Local:
    """This machine's PID space (the root namespace and the local provider's namespaces)."""

    def alive(self, proc: ProcessRef) -> bool:
        return process.is_alive(proc.pid, proc.start_ticks)

    def signal(self, proc: ProcessRef, sig: int) -> bool:
        return process.send(proc.pid, proc.start_ticks, sig)


LOCAL = _Local()


class LoadClients:
    """The record of one cluster's load clients. Thread-safe within a process; one writer at a
    time across processes is guaranteed by the cluster lock."""

    def __init__(self, home: Path, name: str, *, owner: ProcessRef | None = None) -> None:
        self.home = home
        self.name = name
        self._lock = threading.Lock()
        if owner is None:
            me = os.getpid()
            owner = ProcessRef(me, process.start_ticks(me) or 0)
        self.owner = owner

    @property
    def path(self) -> Path:
        return locks_dir(self.home) / f"{self.name}.load.json"

    def records(self) -> list[LoadClient]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []
        out = []
        for d in data if isinstance(data, list) else []:
            with contextlib.suppress(KeyError, ValueError, TypeError):
                out.append(LoadClient.from_json(d))
        return out

    def _write(self, recs: Sequence[LoadClient]) -> None:
        if not recs:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps([r.to_json() for r in recs], indent=1, sort_keys=True) + "\n")
        os.replace(tmp, self.path)

    # ---- the runner's side ---------------------------------------------------------------

    def started(self, host: str, ref: ProcessRef, *, remote: bool = False, what: str = "sysbench") -> None:
        rec = LoadClient(ref.pid, ref.start_ticks, host, remote, self.owner.pid, self.owner.start_ticks,
                         time.time(), what)  # fmt: skip
        with self._lock:
            recs = [r for r in self.records() if not (r.host == host and r.pid == ref.pid)]
            self._write([*recs, rec])

    def ended(self, host: str, ref: ProcessRef) -> None:
        with self._lock:
            self._write([r for r in self.records() if not (r.host == host and r.pid == ref.pid)])

    # ---- everybody else's ------------------------------------------------------------------

    def owner_alive(self, r: LoadClient) -> bool:
        return process.is_alive(r.owner_pid, r.owner_start)

    def orphans(self) -> list[LoadClient]:
        """Load clients whose clusterbench is gone."""
        return [r for r in self.records() if not self.owner_alive(r)]

    def stop(
        self,
        recs: Sequence[LoadClient],
        hosts: Callable[[LoadClient], SignalHost | None] | None = None,
        *,
        timeout: float = 5.0,
    ) -> list[str]:
        """SIGTERM, then SIGKILL after `timeout`, each recorded client still running (by PID +
        start time); forget every one handled. Returns one line per client."""
        lines: list[str] = []
        done: list[LoadClient] = []
        live: list[tuple[LoadClient, SignalHost]] = []
        for r in recs:
            host = LOCAL if not r.remote else (hosts(r) if hosts is not None else None)
            if host is None:
                lines.append(f"cannot reach {r.host} to stop {r.describe()}; stop it there by hand")
                continue
            done.append(r)
            try:
                if host.alive(r.ref):
                    host.signal(r.ref, signal.SIGTERM)
                    live.append((r, host))
            except Exception as exc:  # noqa: BLE001 - one unreachable host must not stop the others
                lines.append(f"cannot stop {r.describe()}: {exc}")
        deadline = time.monotonic() + timeout
        for r, host in live:
            while time.monotonic() < deadline and _alive(host, r):
                time.sleep(0.05)
            if _alive(host, r):
                host.signal(r.ref, signal.SIGKILL)
                lines.append(f"stopped {r.describe()} (SIGKILL)")
            else:
                lines.append(f"stopped {r.describe()}")
        with self._lock:
            gone = {(r.host, r.pid) for r in done}
            self._write([r for r in self.records() if (r.host, r.pid) not in gone])
        return lines


def _alive(host: SignalHost, r: LoadClient) -> bool:
    try:
        return host.alive(r.ref)
    except Exception:  # noqa: BLE001 - an unreachable host: assume it is gone for the wait
        return False
