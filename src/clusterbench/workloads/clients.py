"""Load client processes: how they are spawned and tracked by PID, the option files that keep
their passwords off the command line, and the sampler of their CPU use while they run."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import selectors
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from clusterbench.hosts import process
from clusterbench.hosts.base import Popen, ProcessRef
from clusterbench.workloads.placement import REMOTE_DIR, ClientHost, CpuReading, stage_files
from clusterbench.workloads.sysbench import SysbenchCommand

log = logging.getLogger(__name__)


# A load client's process: the same shape every host's popen() returns.
Process = Popen


Spawn = Callable[[SysbenchCommand], Process]


class ClientTracker(Protocol):
    """Where started load clients are recorded by PID + start time, so that a clusterbench that
    is killed leaves a record the next command can act on (loadclients.LoadClients)."""

    def started(
        self, host: str, ref: ProcessRef, *, remote: bool = False, what: str = "sysbench"
    ) -> None: ...

    def ended(self, host: str, ref: ProcessRef) -> None: ...


def process_ref(p: Process) -> ProcessRef | None:
    """PID + start time of a started client: an ssh process knows its remote one; a local one
    is read from /proc (`ip netns exec` and the start script exec, so the PID is sysbench's)."""
    ref = getattr(p, "ref", None)
    if isinstance(ref, ProcessRef):
        return ref
    ticks = process.start_ticks(p.pid)
    return ProcessRef(p.pid, ticks) if ticks is not None else None


Connect = Callable[..., Any]
CpuProbe = Callable[[ClientHost, int], CpuReading | None]


def _spawn(cmd: SysbenchCommand) -> Process:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(cmd.env)
    return subprocess.Popen(  # noqa: S603 - argv built by build_command
        list(cmd.argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(cmd.cwd) if cmd.cwd is not None else None,
    )


OPTION_FILE_PREFIX = "cb-sysbench-"


def stale_option_files(directory: Path) -> list[Path]:
    """Option files left in `directory` by processes that no longer run (a SIGKILLed clusterbench
    cannot remove its own): `cb-sysbench-<pid>-*.cnf` whose PID is gone."""
    out = []
    for f in directory.glob(f"{OPTION_FILE_PREFIX}*-*.cnf"):
        pid = f.name[len(OPTION_FILE_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and process.state(int(pid)) in (None, "Z", "X"):
            out.append(f)
    return out


class OptionFiles:
    """sysbench option files holding a command's secrets (the password): one per host and content,
    created with mode 0600 (root's only), read by sysbench through --config-file, removed when the
    command ends. On a client machine of its own the file is written there (REMOTE_DIR)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._made: dict[tuple[int | None, str], tuple[ClientHost | None, Path]] = {}

    def apply(self, cmd: SysbenchCommand, host: ClientHost | None = None) -> SysbenchCommand:
        text = cmd.config_text()
        if not text:
            return cmd
        remote = host is not None and bool(getattr(host, "remote", False))
        key = (id(host) if remote else None, text)
        if key not in self._made:
            if remote:
                assert host is not None
                path = REMOTE_DIR / f"cb-sysbench-{secrets.token_hex(8)}.cnf"
                stage_files(host, [(path, text, 0o600)])
                self._made[key] = (host, path)
            else:
                # named after this process, so that the files of a killed one can be found
                prefix = f"{OPTION_FILE_PREFIX}{os.getpid()}-"
                fd, name = tempfile.mkstemp(prefix=prefix, suffix=".cnf", dir=self.directory)
                with os.fdopen(fd, "w") as f:  # mkstemp: mode 0600
                    f.write(text)
                self._made[key] = (None, Path(name))
        return cmd.with_config_file(self._made[key][1])

    def paths(self) -> list[Path]:
        return [p for _, p in self._made.values()]

    def remove(self) -> None:
        for host, path in self._made.values():
            try:
                if host is None:
                    path.unlink(missing_ok=True)
                else:
                    rm = getattr(host, "remove", None)
                    if rm is not None:
                        rm(path)
            except Exception:  # noqa: BLE001 - a file left behind is root's only; say so in the log
                log.warning("could not remove the option file %s on %s", path, host.name if host else "here")
        self._made.clear()


class CpuSampler:
    """Reads each client's CPU use on its host, right after it starts and then every `interval` s,
    from a thread of its own (a reading over ssh can take a few hundred ms)."""

    def __init__(self, probe: CpuProbe, hosts: Sequence[ClientHost], interval: float) -> None:
        self.probe = probe
        self.hosts = hosts
        self.interval = interval
        self.readings: list[list[CpuReading]] = [[] for _ in hosts]
        self.offsets: list[list[float]] = [[] for _ in hosts]
        self._pids: dict[int, int] = {}
        self._gone: set[int] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, client: int, pid: int) -> None:
        with self._lock:
            self._pids[client] = pid
        self._wake.set()

    def start(self) -> None:
        if self.interval > 0:
            self._thread = threading.Thread(target=self._loop, name="client-cpu", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        due: dict[int, float] = {}
        while not self._stop.is_set():
            with self._lock:
                pids = dict(self._pids)
            now = time.monotonic()
            for client, pid in pids.items():
                if client in self._gone or due.get(client, 0.0) > now:
                    continue
                before = time.time()
                try:
                    reading = self.probe(self.hosts[client], pid)
                except Exception as exc:  # noqa: BLE001 - a failed reading must not stop the run
                    log.warning("client %d: CPU reading failed: %s", client, exc)
                    reading = None
                if reading is not None:
                    # the host's clock was read between `before` and now (the round trip bounds the error)
                    self.offsets[client].append(reading.wall - (before + time.time()) / 2)
                    if reading.proc_ticks is None and self.readings[client]:
                        self._gone.add(client)  # it has exited; later readings would say nothing
                    self.readings[client].append(reading)
                due[client] = time.monotonic() + self.interval
            self._wake.wait(min([max(0.05, d - time.monotonic()) for d in due.values()] or [self.interval]))
            self._wake.clear()


def track(
    tracker: ClientTracker | None, started: Sequence[tuple[str, bool, Process]], what: str
) -> list[tuple[str, ProcessRef]]:
    """Record started clients with the tracker (if any); returns what to forget afterwards."""
    out: list[tuple[str, ProcessRef]] = []
    if tracker is None:
        return out
    for host, remote, p in started:
        try:
            ref = process_ref(p)
            if ref is not None:
                tracker.started(host, ref, remote=remote, what=what)
                out.append((host, ref))
        except Exception:  # noqa: BLE001 - a record that cannot be written must not stop the load
            log.exception("recording load client %s on %s", p.pid, host)
    return out


def untrack(tracker: ClientTracker | None, tracked: Sequence[tuple[str, ProcessRef]]) -> None:
    if tracker is None:
        return
    for host, ref in tracked:
        try:
            tracker.ended(host, ref)
        except Exception:  # noqa: BLE001
            log.exception("forgetting load client %s on %s", ref.pid, host)


def kill_running(procs: Sequence[Process], killed: list[bool], why: str) -> None:
    for i, p in enumerate(procs):
        if p.poll() is None:
            log.warning("sysbench pid %d %s; killing it", p.pid, why)
            p.kill()
            killed[i] = True


def pump(
    procs: Sequence[Process],
    limit: float,
    on_out: Callable[[int, str], None],
    on_err: Callable[[int, str], None],
    *,
    monotonic: Callable[[], float],
    poll_interval: float,
    stop: Callable[[], str | None] | None = None,
) -> tuple[list[int | None], list[bool]]:
    """Read all pipes line by line until every process exits or the deadline passes. `stop`, asked
    at every poll, names a reason to end them now (the cluster they load is down)."""
    deadline = monotonic() + limit
    sel = selectors.DefaultSelector()
    buffers: dict[tuple[int, str], bytes] = {}
    for i, p in enumerate(procs):
        for name, stream in (("out", p.stdout), ("err", p.stderr)):
            if stream is not None:
                os.set_blocking(stream.fileno(), False)
                sel.register(stream, selectors.EVENT_READ, (i, name))
                buffers[(i, name)] = b""
    killed = [False] * len(procs)

    def deliver(i: int, name: str, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace")
        (on_out if name == "out" else on_err)(i, line)

    finished = False
    try:
        while sel.get_map():
            now = monotonic()
            if now >= deadline:
                kill_running(procs, killed, "overran its time limit")
                deadline = float("inf")
            why = stop() if stop is not None and deadline != float("inf") else None
            if why:
                kill_running(procs, killed, f"was stopped: {why}")
                deadline = float("inf")
            timeout = min(poll_interval, max(0.0, deadline - now))
            for key, _ in sel.select(timeout):
                i, name = key.data
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    rest = buffers.pop((i, name))
                    if rest:
                        deliver(i, name, rest)
                    continue
                data = buffers[(i, name)] + chunk
                *lines, buffers[(i, name)] = data.split(b"\n")
                for raw in lines:
                    deliver(i, name, raw + b"\n")
        # all pipes are closed: the processes are exiting; give them until the deadline
        for p in procs:
            while p.poll() is None and monotonic() < deadline:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=poll_interval)
        kill_running(procs, killed, "overran its time limit")
        finished = True
    finally:
        sel.close()
        if not finished:
            # interrupted (Ctrl-C or an error in a callback): stop what we started, by PID
            kill_running(procs, killed, "was interrupted")
        for p in procs:
            p.wait()
        for p in procs:
            for stream in (p.stdout, p.stderr):
                if stream is not None:
                    stream.close()
    return [p.poll() for p in procs], killed
