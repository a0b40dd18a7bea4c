"""Hosts reached over SSH (paramiko): the same Host protocol as hosts/local.py, on another machine.

One SSH connection per host, opened on first use and reused: every command is a new channel on
that connection (a paramiko Transport multiplexes channels and is safe to use from several
threads; opening the connection itself is guarded by a lock). A user other than root runs every
command through `sudo -n`, which fails at once instead of asking for a password.

Files go through `sh -c` with the content on stdin rather than SFTP: SFTP runs as the login user
and cannot write root's files when we need sudo, and one code path for both cases is easier to
keep right.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shlex
import signal as _signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

import paramiko

from clusterbench.errors import ComponentError, PreflightError
from clusterbench.hosts import process
from clusterbench.hosts.base import CommandResult, ProcessRef

cmdlog = logging.getLogger("clusterbench.cmd")

CONNECT_TIMEOUT = 10.0
PARALLEL = 16

# Same trick as LocalHost's _SPAWN (setsid, stdin closed, output to the log), plus the new
# process's /proc stat line in the same round trip. The child exists as soon as `&` returns, and
# it stays visible in /proc (as a zombie at worst) until this shell exits, so the stat is there.
_SPAWN = 'setsid "$@" >>"$CB_LOG" 2>&1 </dev/null & p=$!; echo "$p"; cat /proc/$p/stat'

# Signal a PID only if its start time is still the one we recorded: a reused PID is never hit.
# Exit 3: gone, a zombie, or someone else's process now.
_SIGNAL = (
    's=$(cat /proc/$1/stat 2>/dev/null) || exit 3; pid=$1; want=$2; sig=$3; s=${s##*") "}; set -- $s; '
    'case "$1" in Z|X) exit 3;; esac; [ "${20}" = "$want" ] || exit 3; kill -"$sig" "$pid"'
)

_PUT = (
    'set -e; p=$1; mode=$2; owner=$3; mkdir -p "$(dirname "$p")"; t="$p.cbtmp"; '
    # umask first: a secret is never readable by others, not even between cat and chmod.
    'umask 077; cat >"$t"; chmod "$mode" "$t"; if [ -n "$owner" ]; then chown "$owner:" "$t"; fi; '
    'mv -f "$t" "$p"'
)
_MKDIR = 'set -e; mkdir -p "$1"; chmod "$2" "$1"; if [ -n "$3" ]; then chown "$3:" "$1"; fi'


@dataclass(frozen=True)
class SshTarget:
    """Where a host is and how to log in."""

    name: str
    address: str
    user: str = "root"
    port: int = 22
    key: Path | None = None

    @property
    def where(self) -> str:
        return f"{self.user}@{self.address}:{self.port}"


class SshConnectError(PreflightError):
    """Connecting failed; `kind` is unreachable, auth, hostkey or key."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class KnownHosts:
    """Host keys for our connections, shared by every host of a run.

    `accept-new` records an unknown key in `path` and refuses a changed one (what
    `ssh -o StrictHostKeyChecking=accept-new` does); `strict` accepts only keys already in
    `path` or in ~/.ssh/known_hosts."""

    def __init__(self, path: Path | None, mode: str = "accept-new") -> None:
        self.path = path
        self.mode = mode
        self._lock = threading.Lock()
        self.keys = paramiko.HostKeys()
        user_file = Path.home() / ".ssh" / "known_hosts"
        for f in (user_file, path):
            if f is not None and f.exists():
                with contextlib.suppress(OSError, paramiko.SSHException):
                    self.keys.load(str(f))

    def check(self, hostname: str, key: paramiko.PKey) -> None:
        with self._lock:
            known = self.keys.lookup(hostname)
            if known is not None and key.get_name() in known:
                if known[key.get_name()] != key:
                    raise SshConnectError(
                        f"the host key of {hostname} has changed since it was recorded; if the machine "
                        f"was reinstalled, remove its line from {self.path or '~/.ssh/known_hosts'}",
                        "hostkey",
                    )
                return
            if self.mode == "strict":
                raise SshConnectError(
                    f"{hostname} is not in known_hosts and provider.host_keys = 'strict'; add its key "
                    "(ssh-keyscan) or use host_keys = 'accept-new'",
                    "hostkey",
                )
            self.keys.add(hostname, key.get_name(), key)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a") as f:
                    f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


def _host_id(address: str, port: int) -> str:
    return address if port == 22 else f"[{address}]:{port}"


class SshHost:
    """Runs commands, daemons and files on another machine over one SSH connection."""

    remote = True

    def __init__(
        self,
        target: SshTarget,
        *,
        known_hosts: KnownHosts | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.target = target
        self.name = target.name
        self.known_hosts = known_hosts or KnownHosts(None)
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._transport: paramiko.Transport | None = None

    @property
    def sudo(self) -> bool:
        return self.target.user != "root"

    # ------------------------------------------------------------------ connection

    def connect(self) -> paramiko.Transport:
        with self._lock:
            if self._transport is not None and self._transport.is_active():
                return self._transport
            self._transport = self._open()
            return self._transport

    def _open(self) -> paramiko.Transport:
        t = self.target
        where = f"host {t.name} ({t.where})"
        if t.key is not None and not t.key.exists():
            raise SshConnectError(f"{where}: key file {t.key} does not exist; fix [[hosts]] key", "key")
        try:
            sock = socket.create_connection((t.address, t.port), timeout=self.connect_timeout)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            if isinstance(exc, TimeoutError):
                reason = f"no answer in {self.connect_timeout:g} s"
            raise SshConnectError(
                f"{where}: unreachable ({reason}); "
                "check [[hosts]] address and port, and that sshd runs there",
                "unreachable",
            ) from None
        # Each command is a few small packets each way; without NODELAY, Nagle and delayed ACKs
        # add ~40 ms to every channel open (measured).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport = paramiko.Transport(sock)
        transport.banner_timeout = self.connect_timeout
        transport.auth_timeout = self.connect_timeout
        try:
            transport.start_client(timeout=self.connect_timeout)
            self.known_hosts.check(_host_id(t.address, t.port), transport.get_remote_server_key())
            self._authenticate(transport)
        except SshConnectError:
            transport.close()
            raise
        except paramiko.AuthenticationException:
            transport.close()
            key = f"key {t.key}" if t.key else "the default keys and agent"
            raise SshConnectError(
                f"{where}: authentication failed for user {t.user} with {key}; "
                "fix [[hosts]] user/key or add the public key to the user's authorized_keys",
                "auth",
            ) from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            transport.close()
            raise SshConnectError(
                f"{where}: SSH handshake failed ({exc or type(exc).__name__}); is it an SSH server?",
                "unreachable",
            ) from None
        transport.set_keepalive(15)
        return transport

    def _authenticate(self, transport: paramiko.Transport) -> None:
        t = self.target
        keys: list[paramiko.PKey] = []
        if t.key is not None:
            try:
                keys.append(paramiko.PKey.from_path(t.key))
            except (paramiko.SSHException, OSError, ValueError) as exc:
                raise SshConnectError(
                    f"host {t.name}: cannot load key {t.key} ({exc}); use an unencrypted key file",
                    "key",
                ) from None
        else:
            with contextlib.suppress(paramiko.SSHException):
                keys += list(paramiko.Agent().get_keys())
            for name in ("id_ed25519", "id_ecdsa", "id_rsa"):
                f = Path.home() / ".ssh" / name
                if f.exists():
                    with contextlib.suppress(paramiko.SSHException, OSError, ValueError):
                        keys.append(paramiko.PKey.from_path(f))
        for k in keys:
            try:
                transport.auth_publickey(t.user, k)
            except paramiko.AuthenticationException:
                continue
            if transport.is_authenticated():
                return
        raise paramiko.AuthenticationException("no key accepted")

    def close(self) -> None:
        with self._lock:
            if self._transport is not None:
                self._transport.close()
                self._transport = None

    # ------------------------------------------------------------------ commands

    def command_line(self, argv: Sequence[str], env: dict[str, str] | None = None, sudo: bool = True) -> str:
        words = list(argv)
        if env:
            words = ["env", *(f"{k}={v}" for k, v in sorted(env.items())), *words]
        if sudo and self.sudo:
            words = ["sudo", "-n", "--", *words]
        return shlex.join(words)

    def _channel(self) -> paramiko.Channel:
        """A new session channel on the (re)used connection; one line when the machine is gone."""
        transport = self.connect()
        try:
            return transport.open_session(timeout=self.connect_timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self.close()
            raise ComponentError(
                f"[{self.name}] SSH channel failed ({exc}); is {self.target.address} up?"
            ) from None

    def _exec(self, command: str, input: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
        chan = self._channel()
        deadline = time.monotonic() + timeout
        out: list[bytes] = []
        err: list[bytes] = []
        try:
            chan.settimeout(timeout)
            chan.exec_command(command)
            if input:
                chan.sendall(input)
            chan.shutdown_write()
            chan.settimeout(0.0)
            # The channel's fileno wakes select() on data, not on the exit status, so poll with
            # a short wait that grows: most of our commands take a few ms.
            wait = 0.001
            while True:
                got = False
                while chan.recv_ready():
                    out.append(chan.recv(65536))
                    got = True
                while chan.recv_stderr_ready():
                    err.append(chan.recv_stderr(65536))
                    got = True
                if chan.exit_status_ready() and chan.eof_received and not got:
                    break
                if time.monotonic() > deadline:
                    raise ComponentError(f"[{self.name}] `{command}` did not finish in {timeout:g} s")
                if not got:
                    select.select([chan], [], [], wait)
                    wait = min(wait * 2, 0.05)
            return chan.recv_exit_status(), b"".join(out), b"".join(err)
        except TimeoutError:
            raise ComponentError(f"[{self.name}] `{command}` did not finish in {timeout:g} s") from None
        finally:
            chan.close()

    def stream_in(self, argv: list[str], source: IO[bytes], *, timeout: float) -> CommandResult:
        """Run `argv` there with its stdin fed from `source` until EOF, chunk by chunk (a tar
        stream of hundreds of MiB never sits in memory); stdout and stderr come back whole."""
        command = self.command_line(argv)
        cmdlog.debug("[%s] %s < stream", self.name, command)
        chan = self._channel()
        out: list[bytes] = []
        err: list[bytes] = []

        def drain() -> None:
            while chan.recv_ready():
                out.append(chan.recv(65536))
            while chan.recv_stderr_ready():
                err.append(chan.recv_stderr(65536))

        deadline = time.monotonic() + timeout
        try:
            chan.settimeout(timeout)
            chan.exec_command(command)
            while not chan.exit_status_ready():  # else the far side gave up: stop sending
                block = source.read(1 << 20)
                if not block:
                    break
                try:
                    chan.sendall(block)
                except OSError:  # closed by a command that exited early: its status says why
                    break
                drain()
                if time.monotonic() > deadline:
                    raise ComponentError(f"[{self.name}] `{argv[0]}` did not finish in {timeout:g} s")
            with contextlib.suppress(OSError):
                chan.shutdown_write()
            while not (chan.exit_status_ready() and chan.eof_received):
                drain()
                if time.monotonic() > deadline:
                    raise ComponentError(f"[{self.name}] `{argv[0]}` did not finish in {timeout:g} s")
                select.select([chan], [], [], 0.05)
            drain()
            return CommandResult(
                tuple(argv), chan.recv_exit_status(), b"".join(out).decode(errors="replace"),
                b"".join(err).decode(errors="replace"),
            )  # fmt: skip
        except (TimeoutError, OSError) as exc:
            raise ComponentError(f"[{self.name}] streaming into `{argv[0]}` failed: {exc}") from None
        finally:
            chan.close()

    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> CommandResult:
        return self._run(argv, input=input, timeout=timeout, check=check)

    def _run(
        self,
        argv: list[str],
        *,
        input: str | None = None,
        timeout: float = 60.0,
        check: bool = True,
        sudo: bool = True,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        command = self.command_line(argv, env, sudo)
        cmdlog.debug("[%s] %s", self.name, command)
        rc, out, err = self._exec(command, input.encode() if input is not None else None, timeout)
        res = CommandResult(tuple(argv), rc, out.decode(errors="replace"), err.decode(errors="replace"))
        if check and not res.ok:
            if rc == 127:
                raise ComponentError(
                    f"[{self.name}] {argv[0]}: command not found; "
                    "run `clusterbench provision` for this topology"
                )
            raise ComponentError(f"[{self.name}] `{shlex.join(argv)}` failed (exit {rc}): {res.tail()}")
        return res

    def shell(
        self, script: str, *args: str, input: str | None = None, timeout: float = 60.0
    ) -> CommandResult:
        """A small sh script with positional arguments (never interpolated into the script)."""
        return self._run(["sh", "-c", script, "sh", *args], input=input, timeout=timeout, check=False)

    # ------------------------------------------------------------------ daemons

    def spawn(self, argv: list[str], *, log: Path) -> ProcessRef:
        cmdlog.debug("[%s] spawn %s >> %s", self.name, shlex.join(argv), log)
        res = self._run(["sh", "-c", _SPAWN, "sh", *argv], env={"CB_LOG": str(log)}, timeout=30)
        lines = res.stdout.splitlines()
        fields = process.stat_fields(lines[1]) if len(lines) >= 2 else None
        if not lines or not lines[0].strip().isdigit() or fields is None or len(fields) < 20:
            raise ComponentError(f"[{self.name}] `{argv[0]}` did not start: {res.tail()}; see {log}")
        return ProcessRef(int(lines[0].strip()), int(fields[19]))

    def proc_state(self, pid: int) -> tuple[str, int] | None:
        """(state, start ticks) of a remote PID, or None when it does not exist."""
        res = self._run(["cat", f"/proc/{pid}/stat"], check=False, sudo=False, timeout=15)
        fields = process.stat_fields(res.stdout) if res.ok else None
        if fields is None or len(fields) < 20:
            return None
        return fields[0], int(fields[19])

    def alive(self, proc: ProcessRef) -> bool:
        st = self.proc_state(proc.pid)
        return st is not None and st[0] not in ("Z", "X") and st[1] == proc.start_ticks

    def signal(self, proc: ProcessRef, sig: int) -> bool:
        res = self.shell(_SIGNAL, str(proc.pid), str(proc.start_ticks), str(int(sig)), timeout=15)
        return res.ok

    # ------------------------------------------------------------------ files

    def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None:
        res = self.shell(_PUT, str(path), f"{mode:o}", owner or "", input=content)
        if not res.ok:
            raise ComponentError(f"[{self.name}] cannot write {path}: {res.tail()}")

    def read_file(self, path: Path) -> str | None:
        res = self.shell('[ -e "$1" ] || exit 3; cat "$1"', str(path), timeout=60)
        if res.returncode == 3:
            return None
        if not res.ok:
            raise ComponentError(f"[{self.name}] cannot read {path}: {res.tail()}")
        return res.stdout

    def mkdir(self, path: Path, *, owner: str | None = None, mode: int = 0o755) -> None:
        res = self.shell(_MKDIR, str(path), f"{mode:o}", owner or "")
        if not res.ok:
            raise ComponentError(f"[{self.name}] cannot create {path}: {res.tail()}")

    def exists(self, path: Path) -> bool:
        return self.shell('[ -e "$1" ]', str(path)).ok

    def remove(self, path: Path) -> None:
        self.shell('rm -f "$1"', str(path))

    def remove_tree(self, path: Path) -> None:
        self.shell('rm -rf "$1"', str(path), timeout=120)

    def file_size(self, path: Path) -> int:
        res = self.shell('stat -c %s "$1" 2>/dev/null || echo 0', str(path))
        out = res.stdout.strip()
        return int(out) if out.isdigit() else 0

    # ------------------------------------------------------------------ streaming processes

    def popen(
        self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> SshProcess:
        """A foreground process whose stdout/stderr stream back (a load client).

        Not a pty: a pty would merge stderr into stdout, and the runner reads them apart. Without
        a pty, closing the channel does not stop the remote process, so the command first prints
        its shell's PID and stat line and then execs the program (same PID): kill() signals that
        PID, checked against its start time, like every other signal we send."""
        script = 'echo "$$ $(cat /proc/$$/stat)"; ' + ('cd "$CB_CWD" && ' if cwd is not None else "")
        script += 'exec "$@"'
        full_env = dict(env or {})
        if cwd is not None:
            full_env["CB_CWD"] = str(cwd)
        command = self.command_line(["sh", "-c", script, "sh", *argv], full_env)
        cmdlog.debug("[%s] popen %s", self.name, command)
        chan = self.connect().open_session(timeout=self.connect_timeout)
        chan.exec_command(command)
        chan.shutdown_write()
        return SshProcess(self, chan, argv[0])


class SshProcess:
    """A remote process behind an exec channel, with real pipes for stdout and stderr.

    A thread copies the channel's two streams into two OS pipes, so callers can select() on them
    like on subprocess.Popen's (paramiko's own file objects have no usable file descriptor)."""

    def __init__(self, host: SshHost, chan: paramiko.Channel, what: str, timeout: float = 15.0) -> None:
        self.host = host
        self.chan = chan
        self.returncode: int | None = None
        first = b""
        deadline = time.monotonic() + timeout
        chan.settimeout(timeout)
        while not first.endswith(b"\n"):
            b = chan.recv(1)
            if not b or time.monotonic() > deadline:
                err = chan.recv_stderr(4096).decode(errors="replace").strip()
                chan.close()
                raise ComponentError(f"[{host.name}] `{what}` did not start: {err or 'no output'}")
            first += b
        pid_s, _, stat = first.decode().strip().partition(" ")
        fields = process.stat_fields(stat)
        if not pid_s.isdigit() or fields is None or len(fields) < 20:
            chan.close()
            raise ComponentError(f"[{host.name}] `{what}` did not start: {first!r}")
        self.pid = int(pid_s)
        self.ref = ProcessRef(self.pid, int(fields[19]))
        r_out, self._w_out = os.pipe()
        r_err, self._w_err = os.pipe()
        self.stdout: IO[bytes] | None = open(r_out, "rb", buffering=0)  # noqa: SIM115 - closed by the reader
        self.stderr: IO[bytes] | None = open(r_err, "rb", buffering=0)  # noqa: SIM115
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"ssh-{host.name}-{self.pid}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        chan = self.chan
        chan.settimeout(0.0)
        try:
            while True:
                got = False
                while chan.recv_ready():
                    _write_all(self._w_out, chan.recv(65536))
                    got = True
                while chan.recv_stderr_ready():
                    _write_all(self._w_err, chan.recv_stderr(65536))
                    got = True
                if chan.exit_status_ready() and (chan.eof_received or chan.closed) and not got:
                    break
                if chan.closed and not got:
                    break
                if not got:
                    select.select([chan], [], [], 0.1)
            self.returncode = chan.recv_exit_status()
        except OSError:
            self.returncode = -1
        finally:
            for fd in (self._w_out, self._w_err):
                with contextlib.suppress(OSError):
                    os.close(fd)
            chan.close()
            self._done.set()

    def poll(self) -> int | None:
        return self.returncode if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(f"remote pid {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if not self._done.is_set():
            self.host.signal(self.ref, _signal.SIGKILL)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            # The reader made the pipe non-blocking on its end only; ours blocks, but be safe.
            time.sleep(0.01)
            continue
        view = view[n:]


def copy_tree(
    src: SshHost,
    src_dir: Path,
    dests: Sequence[tuple[SshHost, Path]],
    *,
    owner: str,
    excludes: Sequence[str] = (),
    timeout: float = 600.0,
) -> int:
    """Copy a directory tree from one host to others through this machine: tar on the source,
    gzip'd (InnoDB's preallocated files are mostly zeros), fanned out to a tar on every
    destination. Files end up owned by `owner` there (user ids differ between machines).
    Returns the bytes that crossed the wire once."""
    ex = [f"--exclude={e}" for e in excludes]
    reader = src.connect().open_session(timeout=src.connect_timeout)
    reader.exec_command(src.command_line(["tar", "-C", str(src_dir), *ex, "-czf", "-", "."]))
    writers = []
    for host, d in dests:
        script = 'set -e; mkdir -p "$1"; tar -C "$1" --no-same-owner -xzf -; chown -R "$2:" "$1"'
        w = host.connect().open_session(timeout=host.connect_timeout)
        w.settimeout(timeout)  # a stalled destination must not block sendall forever
        w.exec_command(host.command_line(["sh", "-c", script, "sh", str(d), owner]))
        writers.append((host, w))
    total = 0
    deadline = time.monotonic() + timeout
    try:
        reader.settimeout(timeout)
        while True:
            chunk = reader.recv(1 << 20)
            if not chunk:
                break
            total += len(chunk)
            for _, w in writers:
                w.sendall(chunk)
            if time.monotonic() > deadline:
                raise ComponentError(f"copying {src_dir} from {src.name} took longer than {timeout:g} s")
        for _, w in writers:
            w.shutdown_write()
        problems = []
        if _exit_status(reader, deadline) != 0:
            problems.append(f"{src.name}: tar -c failed: {reader.recv_stderr(4096).decode(errors='replace')}")
        for host, w in writers:
            if _exit_status(w, deadline) != 0:
                problems.append(f"{host.name}: tar -x failed: {w.recv_stderr(4096).decode(errors='replace')}")
        if problems:
            raise ComponentError(f"copying {src_dir}: {'; '.join(p.strip() for p in problems)}")
    except TimeoutError:
        raise ComponentError(f"copying {src_dir} from {src.name} took longer than {timeout:g} s") from None
    finally:
        reader.close()
        for _, w in writers:
            w.close()
    return total


def _exit_status(chan: paramiko.Channel, deadline: float) -> int:
    """The channel's exit status, waiting at most until `deadline` (time.monotonic())."""
    if not chan.status_event.wait(max(0.0, deadline - time.monotonic())):
        raise ComponentError("a remote command did not report its exit status in time")
    return chan.recv_exit_status()


T = TypeVar("T")
R = TypeVar("R")


def on_hosts(
    items: Sequence[T], fn: Callable[[T], R], *, workers: int = PARALLEL
) -> list[tuple[T, R | Exception]]:
    """Call `fn` for every item in parallel (at most `workers` at once) and return each result
    or the exception it raised, in the order of `items`. Every remote call underneath has its
    own timeout, so this returns in bounded time."""
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        futures = [pool.submit(fn, it) for it in items]
        out: list[tuple[T, R | Exception]] = []
        for it, fut in zip(items, futures, strict=True):
            try:
                out.append((it, fut.result()))
            except Exception as exc:  # noqa: BLE001 - handed back to the caller, per host
                out.append((it, exc))
        return out
