"""Where load clients run, and how they start together.

A client host is anything with a `name` and a `popen(argv, env, cwd)` that returns a streaming
process (`runner.Process`): this machine, one of the local provider's namespaces, or a machine
reached over ssh (hosts/). Clients go to hosts round-robin.

Common start: every client is launched as `sh -c START_SCRIPT` that sleeps until one absolute
wall-clock instant and then execs sysbench, so processes launched one after another (over ssh,
hundreds of ms apart) still begin their measured run together. The script prints
`CBSTART <pid> <epoch ns>` right before the exec; the PID is sysbench's own (exec keeps it), which
is what the CPU sampler reads on that host.
"""

from __future__ import annotations

import hashlib
import logging
import os
import selectors
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from clusterbench.errors import ClusterbenchError, WorkloadError
from clusterbench.hosts.base import Popen as Process
from clusterbench.hosts.local import RootNamespace
from clusterbench.workloads.shim import shim_compile_argv, shim_source

log = logging.getLogger(__name__)

# POSIX sh: $1 = start instant in epoch ns; the rest is the command. `date +%N` is GNU (and
# busybox with FEATURE_DATE_NANO); where it is missing the digits test fails and the client starts
# at once, which then shows as start skew rather than as a hang.
START_SCRIPT = (
    "t=$1; shift; now=$(date +%s%N); "
    'case "$now" in *[!0-9]*|"") now=$t;; esac; '
    "d=$((t - now)); "
    'if [ "$d" -gt 0 ]; then sleep "$((d / 1000000000)).$(printf %09d $((d % 1000000000)))"; fi; '
    'echo "CBSTART $$ $(date +%s%N)"; '
    'exec "$@"'
)
START_MARK = "CBSTART "

# Reads one process's CPU counters, its allowed CPUs and the host's counters in one short
# command, so that it works the same through `ip netns exec` and over ssh. The counters are read
# with shell builtins between two `date`s, and `wall` is their midpoint: on a loaded host the
# forks around them can take hundreds of ms, which would otherwise skew every rate.
CPU_PROBE_SCRIPT = (
    "p=$1; w0=$(date +%s%N); "
    '{ read -r st <"/proc/$p/stat"; } 2>/dev/null || st=; '
    # per thread: ns on a CPU, ns runnable but waiting for one (CONFIG_SCHED_INFO)
    "r=0; w=0; for f in /proc/$p/task/*/schedstat; do "
    '{ read -r a b c <"$f"; } 2>/dev/null && r=$((r + a)) && w=$((w + b)); done; '
    "read -r hl </proc/stat; w1=$(date +%s%N); "
    'echo "stat $st"; echo "sched $r $w"; echo "host $hl"; echo "wall $(((w0 + w1) / 2))"; '
    "echo \"allowed $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$p/status 2>/dev/null)\"; "
    'echo "cores $(nproc --all)"; echo "tck $(getconf CLK_TCK)"'
)


class ClientHost(Protocol):
    """A place a load client runs. hosts.LocalHost, NetnsHost and SshHost satisfy it."""

    name: str

    def popen(
        self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> Process: ...


def _clean_env(env: dict[str, str] | None) -> dict[str, str]:
    merged = dict(os.environ)
    # a preload meant for us (e.g. a sanitizer) must not reach sysbench; the shim is set explicitly
    merged.pop("LD_PRELOAD", None)
    merged.update(env or {})
    return merged


class LocalClientHost(RootNamespace):
    """This machine's root namespace."""

    def popen(
        self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(  # noqa: S603 - argv lists built by typed objects
            self.wrap(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_clean_env(env),
            cwd=str(cwd) if cwd is not None else None,
        )


class NetnsClientHost(LocalClientHost):
    """A network namespace on this machine (`ip netns exec` execs, so the PID is the command's)."""

    def __init__(self, netns: str, name: str | None = None) -> None:
        super().__init__(name or netns)
        self.netns = netns

    def wrap(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]


# Where a client machine of its own gets the files sysbench reads (the report hook, TLS files).
REMOTE_DIR = Path("/var/tmp/clusterbench")
TLS_FILES = (("cacert.pem", 0o644), ("client-cert.pem", 0o644), ("client-key.pem", 0o600))


@runtime_checkable
class _PutFile(Protocol):
    def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None: ...


def stage_files(host: ClientHost, files: Sequence[tuple[Path, str, int]]) -> None:
    """Write (path, content, mode) files on a client host that has `put_file` (hosts.SshHost)."""
    if not isinstance(host, _PutFile):
        raise WorkloadError(
            f"client host {host.name} is a machine of its own but cannot receive files; "
            "give it put_file or install clusterbench's files there"
        )
    for path, content, mode in files:
        host.put_file(path, content, mode=mode)


@runtime_checkable
class _Run(Protocol):
    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> Any: ...


@dataclass(frozen=True)
class Staged:
    """Where a client host finds the report hook and the TLS files (None: where they are here)."""

    script: Path | None = None
    tls_dir: Path | None = None
    shim: Path | None = None  # the reconnect shim built on that host; None: none there

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """A command's environment as it must read on that host: the shim at its path there, or
        no LD_PRELOAD at all (the loader would only print a warning for a missing file)."""
        if self.script is None or "LD_PRELOAD" not in env:
            return dict(env)
        out = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
        if self.shim is not None:
            out["LD_PRELOAD"] = str(self.shim)
        return out

    def apply(
        self, argv: Sequence[str], cwd: Path | None, local_script: Path
    ) -> tuple[list[str], Path | None]:
        """A command's argv and cwd as they must read on that host."""
        if self.script is None:
            return list(argv), cwd
        out = [str(self.script) if a == str(local_script) else a for a in argv]
        return out, self.tls_dir if cwd is not None else None


def stage(host: ClientHost, cwd: Path | None, local_script: Path, *, shim: bool = False) -> Staged:
    """Put what sysbench reads on `host`, once per host and run.

    A host that shares this machine's filesystem (`remote` False) needs nothing. A machine of its
    own gets the report hook, and the TLS files when the run uses them (sysbench loads them from
    its working directory), under REMOTE_DIR. With `shim`, the reconnect shim's C source is copied
    and compiled there (a binary from here could mismatch that machine's libmariadb), unless a
    build of the same source is already there: without it sysbench 1.0.20 may crash on a lost
    connection (akopytov/sysbench#527). The client role's packages include gcc and
    libmariadb-dev for this; when the build fails the run goes on without the shim and says so.
    """
    if not getattr(host, "remote", False):
        return Staged()
    script = REMOTE_DIR / local_script.name
    files: list[tuple[Path, str, int]] = [(script, local_script.read_text(), 0o644)]
    # tests of our own (cb_access.lua) are loaded by the hook from its own folder
    files += [
        (REMOTE_DIR / f.name, f.read_text(), 0o644)
        for f in sorted(local_script.parent.glob("*.lua"))
        if f.name != local_script.name
    ]
    tls = None
    if cwd is not None:
        tls = REMOTE_DIR / "tls"
        files += [(tls / name, (cwd / name).read_text(), mode) for name, mode in TLS_FILES]
    built = None
    if shim:
        source = shim_source().read_text()
        tag = hashlib.sha256(source.encode()).hexdigest()[:12]
        src = REMOTE_DIR / f"sbfix-{tag}.c"
        out = REMOTE_DIR / f"sbfix-{tag}.so"
        files.append((src, source, 0o644))
        stage_files(host, files)
        built = _build_remote_shim(host, src, out)
    else:
        stage_files(host, files)
    return Staged(script, tls, built)


def _build_remote_shim(host: ClientHost, src: Path, out: Path) -> Path | None:
    if not isinstance(host, _Run):
        return None
    # Compile to a temporary name and rename, so a half-written .so is never preloaded.
    cc = shlex.join(shim_compile_argv(src, Path(f"{out}.tmp")))
    dst = shlex.quote(str(out))
    script = f"[ -s {dst} ] || {{ {cc} && mv {dst}.tmp {dst}; }}"
    res = host.run(["sh", "-c", script], timeout=120, check=False)
    if getattr(res, "returncode", 1) != 0:
        tail = getattr(res, "tail", lambda: "")()
        log.warning(
            "client host %s: could not build the sysbench reconnect shim (%s); sysbench there may "
            "crash when a connection is lost; `clusterbench provision` installs gcc and libmariadb-dev",
            host.name,
            tail,
        )
        return None
    return out


def stage_command(
    host: ClientHost, argv: Sequence[str], cwd: Path | None, local_script: Path
) -> tuple[list[str], Path | None]:
    """argv and cwd of one sysbench run for `host`, after staging its files there."""
    return stage(host, cwd, local_script).apply(argv, cwd, local_script)


def assign_round_robin(clients: int, hosts: Sequence[ClientHost]) -> list[ClientHost]:
    """Client i runs on hosts[i % len(hosts)]."""
    if not hosts:
        raise WorkloadError("no client hosts to run the load on; give at least one")
    return [hosts[i % len(hosts)] for i in range(clients)]


def start_lead(hosts: Sequence[ClientHost], clients: int) -> float:
    """How far in the future the common start goes: room to launch every client first.

    A launch through `ip netns exec` takes ~10-20 ms here; an ssh channel ~100-300 ms. One client
    has nobody to wait for. The lead is time no client measures (an experiment pays it every
    trial), so a local one is short: a client launched late starts at once and says when
    (CBSTART), and its samples count from its own start.
    """
    if clients <= 1:
        return 0.0
    if any(getattr(h, "remote", False) for h in hosts):
        return 1.0 + 0.4 * clients
    return max(0.05, 0.02 * clients)


def start_at_argv(argv: Sequence[str], start_ns: int) -> list[str]:
    """argv wrapped so that it execs at `start_ns` (epoch ns) on its host's clock."""
    return ["sh", "-c", START_SCRIPT, "sh", str(start_ns), *argv]


def parse_start_line(line: str) -> tuple[int, int] | None:
    """(pid, epoch ns) from a CBSTART line, None for any other line."""
    if not line.startswith(START_MARK):
        return None
    parts = line[len(START_MARK) :].split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


@dataclass(frozen=True)
class CpuReading:
    """One look at a client process and its host, from CPU_PROBE_SCRIPT's output."""

    wall: float  # epoch s on the client host
    proc_ticks: int | None  # utime + stime of the process (None: it is gone)
    start_ticks: int | None  # the process's start time, to notice a reused PID
    allowed: int | None  # CPUs the process may run on (affinity), None if unknown
    host_busy: int  # /proc/stat jiffies: all but idle and iowait
    host_total: int
    cores: int
    tck: int
    # sums over the process's threads of /proc/PID/task/*/schedstat: ns running, ns waiting for
    # a CPU while runnable; None where the kernel has no schedstat
    run_ns: int | None = None
    wait_ns: int | None = None


def parse_cpu_list(text: str) -> int | None:
    """Number of CPUs in a list like '0-3,6'."""
    n = 0
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        n += (int(hi) - int(lo) + 1) if hi else 1
    return n or None


def parse_cpu_probe(text: str) -> CpuReading | None:
    """CPU_PROBE_SCRIPT's output as a reading; None when the host part is unreadable."""
    lines: dict[str, str] = {}
    for raw in text.splitlines():
        key, _, rest = raw.partition(" ")
        lines[key] = rest.strip()
    try:
        host = lines["host"].split()
        wall = int(lines["wall"]) / 1e9
        cores = int(lines["cores"])
        tck = int(lines["tck"])
    except (KeyError, ValueError):
        return None
    if not host or host[0] != "cpu" or len(host) < 5:
        return None
    jiffies = [int(x) for x in host[1:9] if x.isdigit()]
    idle = jiffies[3] + (jiffies[4] if len(jiffies) > 4 else 0)
    total = sum(jiffies)
    proc_ticks = start = None
    stat = lines.get("stat", "")
    if ")" in stat:
        fields = stat[stat.rindex(")") + 2 :].split()
        # a zombie (exited, not yet reaped by its launcher) keeps frozen counters: it is gone
        if len(fields) > 19 and fields[0] not in ("Z", "X"):
            proc_ticks = int(fields[11]) + int(fields[12])
            start = int(fields[19])
    run_ns = wait_ns = None
    sched = lines.get("sched", "").split()
    if proc_ticks is not None and len(sched) == 2 and all(x.isdigit() for x in sched):
        run_ns, wait_ns = int(sched[0]), int(sched[1])
    return CpuReading(
        run_ns=run_ns,
        wait_ns=wait_ns,
        wall=wall,
        proc_ticks=proc_ticks,
        start_ticks=start,
        allowed=parse_cpu_list(lines.get("allowed", "")),
        host_busy=total - idle,
        host_total=total,
        cores=cores,
        tck=tck,
    )


def read_output(proc: Process, timeout: float, monotonic: Callable[[], float] = time.monotonic) -> str | None:
    """All of a short command's stdout, or None if it does not finish within `timeout` (then it
    is killed)."""
    if proc.stdout is None:
        return None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    chunks: list[bytes] = []
    deadline = monotonic() + timeout
    try:
        while True:
            left = deadline - monotonic()
            if left <= 0:
                proc.kill()
                proc.wait()
                return None
            if not sel.select(left):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=max(0.1, deadline - monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    finally:
        sel.close()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return b"".join(chunks).decode("utf-8", "replace")


def probe_cpu(host: ClientHost, pid: int, timeout: float = 5.0) -> CpuReading | None:
    """A CPU reading of process `pid` on `host`, through a short command run there."""
    argv = ["sh", "-c", CPU_PROBE_SCRIPT, "sh", str(pid)]
    try:
        proc = host.popen(argv)
    except (OSError, ClusterbenchError) as exc:
        log.warning("[%s] cannot read CPU use: %s", host.name, exc)
        return None
    text = read_output(proc, timeout)
    if text is None:
        log.warning("[%s] CPU probe `%s` took over %g s", host.name, shlex.join(argv[:2]), timeout)
        return None
    return parse_cpu_probe(text)
