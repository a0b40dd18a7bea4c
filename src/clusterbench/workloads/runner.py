"""Run sysbench prepare / run / cleanup as real processes and stream their samples.

Every argv is logged (password masked) before it runs. A run is bounded: sysbench's own --time,
then a hard kill of exactly the processes started here (by their PID) after time + grace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import selectors
import shlex
import statistics
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pymysql  # type: ignore[import-untyped, unused-ignore]  # types-PyMySQL is a dev extra

from clusterbench.engines import SESSIONS
from clusterbench.errors import InputError, WorkloadError
from clusterbench.hosts import process
from clusterbench.hosts.base import Popen, ProcessRef
from clusterbench.spec.endpoint import Endpoint
from clusterbench.workloads.merge import start_skew
from clusterbench.workloads.parse import OutputParser, Sample, Summary, merge_summaries
from clusterbench.workloads.placement import (
    REMOTE_DIR,
    ClientHost,
    CpuReading,
    LocalClientHost,
    Staged,
    assign_round_robin,
    parse_start_line,
    probe_cpu,
    stage,
    stage_files,
    start_at_argv,
    start_lead,
)
from clusterbench.workloads.saturation import WARNING, ClientCpu, client_flags, cpu_use, describe, num
from clusterbench.workloads.slap import SlapRunner
from clusterbench.workloads.sysbench import (
    SLAP_TEST,
    SysbenchCommand,
    SysbenchOptions,
    build_command,
    client_databases,
    expected_tables,
    prepare_group,
    report_script,
    use_tls,
)

log = logging.getLogger(__name__)

STDERR_TAIL = 40
OTHER_TAIL = 40
# sysbench 1.0.20 aborts with this when --rate generates events faster than its threads finish them
QUEUE_FULL = "The event queue is full"


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


@dataclass
class CommandOutput:
    argv: tuple[str, ...]
    returncode: int | None
    stdout: list[str]
    stderr: list[str]
    killed: bool = False


@dataclass
class ClientRun:
    client: int
    database: str
    command: SysbenchCommand
    returncode: int | None = None
    samples: list[Sample] = field(default_factory=list)
    warmup_samples: list[Sample] = field(default_factory=list)
    summary: Summary | None = None
    checkpoint_extra: dict[str, Any] | None = None  # the test's own counters when the warm-up ended
    stderr_tail: list[str] = field(default_factory=list)
    other_tail: list[str] = field(default_factory=list)
    killed: bool = False
    host: str = "local"
    target: str = ""  # the endpoint it loads (its name: balancer, node:2, ...)
    pid: int | None = None  # sysbench's PID on its host (from the start line)
    started_ns: int | None = None  # when it exec'd sysbench, epoch ns on its host's clock
    cpu_readings: list[CpuReading] = field(default_factory=list)
    cpu: ClientCpu | None = None
    rate_asked: float = 0.0
    own_host: bool = False  # the client host is a machine of its own (not this one's namespaces)
    clock_offset: float | None = None  # its host's clock minus ours (s), measured on a machine of its own
    flags: list[str] = field(default_factory=list)

    @property
    def queue_overflow(self) -> bool:
        """sysbench gave up because the --rate event queue was full (it cannot keep up)."""
        return any(QUEUE_FULL in ln for ln in self.other_tail + self.stderr_tail)

    @property
    def rate_achieved(self) -> float | None:
        """Events per second over the measured time."""
        if self.summary is not None:
            return self.summary.tps
        if self.samples:
            return sum(s.events for s in self.samples) / sum(s.interval for s in self.samples)
        return None

    def warnings(self) -> list[str]:
        return [
            describe(f, client=self.client, host=self.host, cpu=self.cpu, rate_asked=self.rate_asked,
                     rate_achieved=self.rate_achieved)
            for f in self.flags
        ]  # fmt: skip


@dataclass
class RunResult:
    test: str
    clients: list[ClientRun]
    samples: list[Sample]
    summary: Summary | None
    exit_code: int
    stderr_tail: list[str]
    killed: bool
    start_ns: int | None = None  # the common start every client waited for
    start_skew: float | None = None  # s between the first and last client's measurement clock start
    launch_skew: float | None = None  # s between the first and last exec of sysbench

    @property
    def saturated(self) -> bool:
        return any(c.flags for c in self.clients)

    def saturation_warnings(self) -> list[str]:
        """Empty when no client was a bottleneck; else WARNING first, then one line per finding."""
        lines = [w for c in self.clients for w in c.warnings()]
        return [WARNING, *lines] if lines else []

    def placement(self) -> dict[str, Any]:
        """Where each client ran and when it started: for the trial's provenance."""
        return {
            "start_ns": self.start_ns,
            "start_skew_s": self.start_skew,
            "launch_skew_s": self.launch_skew,
            "clients": [
                {"client": c.client, "host": c.host, "target": c.target, "database": c.database, "pid": c.pid,
                 "started_ns": c.started_ns, "clock_offset_s": c.clock_offset}
                for c in self.clients
            ],
        }  # fmt: skip

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.summary is not None and not self.killed

    def failure(self) -> str | None:
        """One line saying why the run is not ok, or None."""
        if self.ok:
            return None
        if self.killed:
            return f"sysbench {self.test} overran its time limit and was killed"
        overflow = next((c for c in self.clients if c.queue_overflow), None)
        if overflow is not None:
            return (
                f"sysbench {self.test} client {overflow.client} on {overflow.host} gave up: --rate "
                f"{num(overflow.rate_asked)} is more than it could serve (its event queue overflowed); "
                "ask for a lower --rate"
            )
        fatal = next((ln for c in self.clients for ln in c.other_tail + c.stderr_tail if "FATAL" in ln), None)
        if fatal:
            return f"sysbench {self.test} failed: {fatal.strip()}"
        if self.test == SLAP_TEST:
            last = self.stderr_tail[-1].strip() if self.stderr_tail else f"exit code {self.exit_code}"
            if "Deadlock found" in last:
                # mariadb-slap gives up on the first 1213; through a balancer over several writable
                # Galera nodes its concurrent writes conflict at certification
                last += " (mariadb-slap does not retry conflicts: use --target node:N or a read load type)"
            return f"mysqlslap failed: {last}"
        if self.exit_code == 139 or self.exit_code == -11:
            return f"sysbench {self.test} crashed (SIGSEGV); is the reconnect shim loaded?"
        return f"sysbench {self.test} exited with {self.exit_code} and no summary"


def causal_reads(cur: Any) -> None:
    """Make this session's reads wait until the node has applied every write the cluster committed.

    Through a balancer, the DDL of a prepare or cleanup may have run on another node, which returns
    before this node applies it, so without this a table list can be stale. The endpoint's engine is
    not known here: every engine's causal statement is tried, and a server that does not know one
    (error 1193: MySQL without Group Replication, MariaDB without Galera) is left as it is.
    """
    for session in SESSIONS:
        for stmt in session.causal:
            try:
                cur.execute(stmt)
            except pymysql.err.MySQLError as e:
                if not e.args or e.args[0] != 1193:  # ER_UNKNOWN_SYSTEM_VARIABLE
                    raise


def _endpoint_label(endpoint: Endpoint, database: str) -> str:
    addrs = ",".join(f"{a.host}:{a.port}" for a in endpoint.addresses)
    return f"{endpoint.user}@{addrs}/{database}"


def _first_fatal(lines: Sequence[str]) -> str | None:
    return next((ln.strip() for ln in lines if "FATAL" in ln), None)


class SysbenchRunner:
    def __init__(
        self,
        *,
        sysbench_bin: str = "sysbench",
        shim: Path | None = None,
        spawn: Spawn = _spawn,
        connect: Connect = pymysql.connect,
        monotonic: Callable[[], float] = time.monotonic,
        grace: float = 30.0,
        connect_timeout: float = 5.0,
        poll_interval: float = 0.2,
        wall_ns: Callable[[], int] = time.time_ns,
        cpu_probe: CpuProbe = probe_cpu,
        cpu_interval: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        tracker: ClientTracker | None = None,
        secrets_dir: Path | None = None,
        slap: SlapRunner | None = None,
    ) -> None:
        self.slap = slap  # runs the mysqlslap workload (default: a SlapRunner made per run)
        self.sleep = sleep
        self.tracker = tracker
        # where option files with passwords go on this machine (default: the system's temp dir)
        self.secrets_dir = secrets_dir
        self.wall_ns = wall_ns
        self.cpu_probe = cpu_probe
        self.cpu_interval = cpu_interval
        self.sysbench_bin = sysbench_bin
        self.shim = shim
        self.spawn = spawn
        self.connect = connect
        self.monotonic = monotonic
        self.grace = grace
        self.connect_timeout = connect_timeout
        self.poll_interval = poll_interval

    # ---- server checks -------------------------------------------------------------------

    def _connect(self, endpoint: Endpoint, host: str, port: int, database: str | None, tls: bool) -> Any:
        kwargs: dict[str, Any] = {
            "host": host,
            "port": port,
            "user": endpoint.user,
            "password": endpoint.password,
            "connect_timeout": self.connect_timeout,
            "read_timeout": max(self.connect_timeout, 30),
        }
        if endpoint.socket is not None:  # the server's socket, on this machine's filesystem
            del kwargs["host"], kwargs["port"]
            kwargs["unix_socket"] = str(endpoint.socket)
        if database is not None:
            kwargs["database"] = database
        if tls and endpoint.tls_dir is not None:
            kwargs.update(
                ssl_ca=str(endpoint.tls_dir / "cacert.pem"),
                ssl_cert=str(endpoint.tls_dir / "client-cert.pem"),
                ssl_key=str(endpoint.tls_dir / "client-key.pem"),
                ssl_verify_identity=False,
            )
        return self.connect(**kwargs)

    def check_endpoint(
        self, endpoint: Endpoint, databases: Sequence[str] | None = None, tls: bool | None = None
    ) -> None:
        """Connect once to every address (and database) with a short timeout; raise the server's error."""
        dbs = list(dict.fromkeys(databases)) if databases else [endpoint.database]
        want_tls = endpoint.tls if tls is None else tls
        for addr in endpoint.addresses:
            for db in dbs:
                try:
                    conn = self._connect_waiting_for_schema(endpoint, addr.host, addr.port, db, want_tls)
                except pymysql.err.MySQLError as e:
                    code, msg = (e.args + (None, None))[:2] if e.args else (None, str(e))
                    hint = (
                        "create the database first" if code == 1049 else "check address, user, password, TLS"
                    )
                    raise WorkloadError(
                        f"cannot connect to {endpoint.user}@{addr.host}:{addr.port}/{db}: "
                        f"{msg} (error {code}); {hint}"
                    ) from e
                conn.close()

    def _connect_waiting_for_schema(
        self, endpoint: Endpoint, host: str, port: int, db: str, tls: bool, wait: float = 5.0
    ) -> Any:
        """Connect; while the server says the database does not exist (1049), retry for up to
        `wait` seconds. A schema just created through a balancer reaches the other nodes a moment
        later (Galera applies DDL in total order after the originating node returned; seen as
        'Unknown database' on a loaded 2-core machine), and the next connection may land there."""
        deadline: float | None = None
        while True:
            try:
                return self._connect(endpoint, host, port, db, tls)
            except pymysql.err.MySQLError as e:
                if not e.args or e.args[0] != 1049:
                    raise
                now = self.monotonic()
                deadline = now + wait if deadline is None else deadline
                if now >= deadline:
                    raise
                self.sleep(0.1)

    def existing_tables(self, endpoint: Endpoint, database: str, tls: bool) -> set[str]:
        addr = endpoint.addresses[0]
        conn = self._connect(endpoint, addr.host, addr.port, database, tls)
        try:
            with conn.cursor() as cur:
                if endpoint.galera:
                    causal_reads(cur)
                cur.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (database,)
                )
                return {str(row[0]) for row in cur.fetchall()}
        finally:
            conn.close()

    # ---- one-shot commands ---------------------------------------------------------------

    def _run_to_end(
        self, cmd: SysbenchCommand, timeout: float, on_line: Callable[[str], None] | None = None
    ) -> CommandOutput:
        log.info("running: %s", shlex.join(cmd.masked_argv()))
        files = OptionFiles(self.secrets_dir)
        try:
            proc = self.spawn(files.apply(cmd))
            tracked = self._track([("local", False, proc)], what=f"sysbench {cmd.argv[-1]}")
            out: list[str] = []
            err: list[str] = []

            def on_out(_i: int, line: str) -> None:
                out.append(line)
                if on_line is not None:
                    on_line(line.rstrip("\n"))

            try:
                rc, killed = self._pump([proc], timeout, on_out, lambda _i, line: err.append(line))
            finally:
                self._untrack(tracked)
        finally:
            files.remove()
        return CommandOutput(cmd.argv, rc[0], out, err, killed[0])

    def _track(self, started: Sequence[tuple[str, bool, Process]], what: str) -> list[tuple[str, ProcessRef]]:
        """Record started clients with the tracker (if any); returns what to forget afterwards."""
        out: list[tuple[str, ProcessRef]] = []
        if self.tracker is None:
            return out
        for host, remote, p in started:
            try:
                ref = process_ref(p)
                if ref is not None:
                    self.tracker.started(host, ref, remote=remote, what=what)
                    out.append((host, ref))
            except Exception:  # noqa: BLE001 - a record that cannot be written must not stop the load
                log.exception("recording load client %s on %s", p.pid, host)
        return out

    def _untrack(self, tracked: Sequence[tuple[str, ProcessRef]]) -> None:
        if self.tracker is None:
            return
        for host, ref in tracked:
            try:
                self.tracker.ended(host, ref)
            except Exception:  # noqa: BLE001
                log.exception("forgetting load client %s on %s", ref.pid, host)

    def prepare(
        self,
        opts: SysbenchOptions,
        endpoint: Endpoint,
        *,
        databases: Sequence[str] | None = None,
        timeout: float = 3600.0,
        on_line: Callable[[str], None] | None = None,
    ) -> list[CommandOutput]:
        """Prepare opts.test's group in each database and check the tables are really there.
        `on_line` sees each line sysbench prints as it prints it (the tpcc loader's progress).

        sysbench 1.0.20's prepare with --threads > 1 exits 0 even when every connection failed
        (RECIPES S2), so the exit code alone proves nothing: look for FATAL and for the tables.
        """
        dbs = list(dict.fromkeys(databases)) if databases else [endpoint.database]
        tls = use_tls(opts, endpoint)
        self.check_endpoint(endpoint, dbs, tls)
        group = prepare_group(opts.test)
        if not expected_tables(opts, group):
            return []  # mysqlslap: nothing to prepare
        outputs = []
        for db in dbs:
            where = _endpoint_label(endpoint, db)
            present = sorted(set(expected_tables(opts, group)) & self.existing_tables(endpoint, db, tls))
            if present:
                # bulk_insert's prepare says CREATE TABLE IF NOT EXISTS and would reuse oltp tables
                # of another shape; oltp's prepare would fail on them. Either way: clean up first.
                raise WorkloadError(
                    f"tables {', '.join(present)} already exist in {where}; run the cleanup of the "
                    f"previous test group before preparing {group}"
                )
            cmd = build_command(opts, endpoint, "prepare", database=db, sysbench_bin=self.sysbench_bin)
            res = self._run_to_end(cmd, timeout, on_line)
            outputs.append(res)
            fatal = _first_fatal(res.stdout + res.stderr)
            if res.killed:
                raise WorkloadError(
                    f"sysbench prepare of {group} on {where} took over {timeout:.0f} s and was killed"
                )
            if fatal is not None:
                raise WorkloadError(f"sysbench prepare of {group} on {where} failed: {fatal}")
            if res.returncode != 0:
                tail = (res.stderr or res.stdout or [f"exit code {res.returncode}"])[-1].strip()
                raise WorkloadError(f"sysbench prepare of {group} on {where} failed: {tail}")
            missing = sorted(set(expected_tables(opts, group)) - self.existing_tables(endpoint, db, tls))
            if missing:
                raise WorkloadError(
                    f"sysbench prepare of {group} on {where} exited 0 but tables are missing: "
                    f"{', '.join(missing)}; look at the server's error log"
                )
        return outputs

    def cleanup(
        self,
        opts: SysbenchOptions,
        endpoint: Endpoint,
        *,
        databases: Sequence[str] | None = None,
        timeout: float = 600.0,
    ) -> list[CommandOutput]:
        dbs = list(dict.fromkeys(databases)) if databases else [endpoint.database]
        outputs: list[CommandOutput] = []
        if not expected_tables(opts, prepare_group(opts.test)):
            return outputs  # mysqlslap drops its own schema
        for db in dbs:
            cmd = build_command(opts, endpoint, "cleanup", database=db, sysbench_bin=self.sysbench_bin)
            res = self._run_to_end(cmd, timeout)
            outputs.append(res)
            fatal = _first_fatal(res.stdout + res.stderr)
            if fatal is not None or res.returncode != 0:
                reason = fatal or f"exit code {res.returncode}"
                raise WorkloadError(f"sysbench cleanup on {_endpoint_label(endpoint, db)} failed: {reason}")
        return outputs

    # ---- the measured run ----------------------------------------------------------------

    def run(
        self,
        opts: SysbenchOptions,
        endpoint: Endpoint,
        *,
        clients: int = 1,
        separate_schemas: bool = False,
        on_sample: Callable[[Sample], None] | None = None,
        preflight: bool = True,
        hosts: Sequence[ClientHost] | None = None,
        endpoints: Sequence[Endpoint] | None = None,
    ) -> RunResult:
        """Run opts.test from `clients` sysbench processes at once; samples go to on_sample as they arrive.

        Client i runs on hosts[i % len(hosts)] (default: this machine) against
        endpoints[i % len(endpoints)] (default: `endpoint`), and every client waits
        for one common start instant before it execs sysbench. While they run, each client's CPU
        use is read on its host every `cpu_interval` s. on_sample is called in this thread, one
        measured (post-warm-up) sample at a time.
        """
        if opts.test == SLAP_TEST:
            if endpoints and len(endpoints) > 1:
                raise InputError("mysqlslap connects to one address; use the balancer or node:N as target")
            slap = self.slap or SlapRunner(secrets_dir=self.secrets_dir, grace=self.grace)
            return slap.run(opts, endpoints[0] if endpoints else endpoint, clients=clients,
                            on_sample=on_sample, hosts=hosts)  # fmt: skip
        placed = assign_round_robin(clients, list(hosts) if hosts else [LocalClientHost()])
        pool = list(endpoints) if endpoints else [endpoint]
        targets = [pool[i % len(pool)] for i in range(clients)]
        dbs = client_databases(endpoint, clients, separate_schemas)
        if preflight:
            for ep in pool:
                mine = [db for db, t in zip(dbs, targets, strict=True) if t is ep]
                if mine:
                    self.check_endpoint(ep, mine, use_tls(opts, ep))
        runs: list[ClientRun] = []
        parsers: list[OutputParser] = []
        stderr_tails: list[deque[str]] = []
        other_tails: list[deque[str]] = []
        for i, db in enumerate(dbs):
            cmd = build_command(
                opts, targets[i], "run", database=db, sysbench_bin=self.sysbench_bin, shim=self.shim
            )
            runs.append(ClientRun(client=i, database=db, command=cmd, host=placed[i].name,
                                  target=targets[i].name, rate_asked=float(opts.rate),
                                  own_host=bool(getattr(placed[i], "remote", False))))  # fmt: skip
            parsers.append(OutputParser(client=i, warmup=opts.warmup, threads=opts.threads))
            stderr_tails.append(deque(maxlen=STDERR_TAIL))
            other_tails.append(deque(maxlen=OTHER_TAIL))

        sampler = _CpuSampler(self.cpu_probe, placed, self.cpu_interval)

        def on_out(i: int, line: str) -> None:
            started = parse_start_line(line)
            if started is not None and runs[i].pid is None:
                runs[i].pid, runs[i].started_ns = started
                sampler.watch(i, started[0])
                return
            sample = parsers[i].feed(line)
            if sample is None:
                if not line.startswith("CBJSON "):
                    other_tails[i].append(line.rstrip("\n"))
            elif on_sample is not None:
                on_sample(sample)

        def on_err(i: int, line: str) -> None:
            stderr_tails[i].append(line.rstrip("\n"))

        # files go to client machines first (once per host), so the lead is all launch time
        script = report_script()
        per_host: dict[int, Staged] = {}
        staged: list[tuple[list[str], Path | None]] = []
        files = OptionFiles(self.secrets_dir)
        try:
            for r, host in zip(runs, placed, strict=True):
                if id(host) not in per_host:
                    per_host[id(host)] = stage(
                        host, r.command.cwd, script, shim="LD_PRELOAD" in r.command.env
                    )
                # the password goes to an option file (mode 0600) on that host, never on the command line
                cmd = files.apply(r.command, host)
                staged.append(per_host[id(host)].apply(cmd.argv, r.command.cwd, script))
        except BaseException:
            files.remove()
            raise
        start_ns = self.wall_ns() + int(start_lead(placed, clients) * 1e9)
        procs: list[Process] = []
        try:
            for r, host, (argv_r, cwd) in zip(runs, placed, staged, strict=True):
                env_note = " ".join(f"{k}={v}" for k, v in sorted(r.command.env.items()))
                log.info("running on %s at %d: %s %s", host.name, start_ns, env_note,
                         shlex.join(r.command.masked_argv()))  # fmt: skip
                env = per_host[id(host)].environment(dict(r.command.env))
                procs.append(host.popen(start_at_argv(argv_r, start_ns), env=env, cwd=cwd))
        except BaseException as exc:
            files.remove()
            for p in procs:
                if p.poll() is None:
                    p.kill()
                p.wait()
                for stream in (p.stdout, p.stderr):
                    if stream is not None:
                        stream.close()
            if isinstance(exc, Exception) and not isinstance(exc, WorkloadError):
                raise WorkloadError(
                    f"cannot start sysbench client {len(procs)} on {placed[len(procs)].name}: {exc}; "
                    "check that the client host is reachable and has sysbench"
                ) from exc
            raise
        tracked = self._track(
            [(h.name, bool(getattr(h, "remote", False)), p) for h, p in zip(placed, procs, strict=True)],
            what=f"sysbench {opts.test}",
        )
        sampler.start()
        try:
            rcs, killed = self._pump(procs, opts.total_time + self.grace + (start_ns - self.wall_ns()) / 1e9,
                                     on_out, on_err)  # fmt: skip
        finally:
            sampler.stop()
            self._untrack(tracked)
            files.remove()

        for i, r in enumerate(runs):
            parsed = parsers[i].result()
            r.returncode = rcs[i]
            r.killed = killed[i]
            r.samples = parsed.samples
            r.warmup_samples = parsed.warmup_samples
            r.summary = parsed.summary
            r.checkpoint_extra = parsed.checkpoint_extra
            r.stderr_tail = list(stderr_tails[i])
            r.other_tail = list(other_tails[i])
            r.cpu_readings = sampler.readings[i]
            if r.own_host and sampler.offsets[i]:
                r.clock_offset = statistics.median(sampler.offsets[i])
            r.cpu = cpu_use(r.cpu_readings, opts.threads)
            seconds = r.summary.duration if r.summary is not None else sum(s.interval for s in r.samples)
            r.flags = client_flags(r.cpu, r.rate_asked, r.rate_achieved, seconds=seconds,
                                   own_host=r.own_host, queue_overflow=r.queue_overflow)  # fmt: skip
        summaries = [r.summary for r in runs if r.summary is not None]
        summary = merge_summaries(summaries) if len(summaries) == len(runs) else None
        exit_code: int = next((rc for rc in rcs if rc is not None and rc != 0), 0)
        if any(rc is None for rc in rcs) and exit_code == 0:
            exit_code = -9
        all_samples = [s for r in runs for s in r.samples]
        # each exec time is on its own host's clock: put it on ours
        launches = [r.started_ns - (r.clock_offset or 0.0) * 1e9 for r in runs if r.started_ns is not None]
        return RunResult(
            test=opts.test,
            clients=runs,
            samples=all_samples,
            summary=summary,
            exit_code=exit_code,
            stderr_tail=[ln for r in runs for ln in r.stderr_tail][-STDERR_TAIL:],
            killed=any(killed),
            start_ns=start_ns,
            start_skew=start_skew(all_samples, {r.client: r.clock_offset or 0.0 for r in runs}),
            launch_skew=(max(launches) - min(launches)) / 1e9 if len(launches) > 1 else None,
        )

    @staticmethod
    def _kill_running(procs: Sequence[Process], killed: list[bool], why: str) -> None:
        for i, p in enumerate(procs):
            if p.poll() is None:
                log.warning("sysbench pid %d %s; killing it", p.pid, why)
                p.kill()
                killed[i] = True

    def _pump(
        self,
        procs: Sequence[Process],
        limit: float,
        on_out: Callable[[int, str], None],
        on_err: Callable[[int, str], None],
    ) -> tuple[list[int | None], list[bool]]:
        """Read all pipes line by line until every process exits or the deadline passes."""
        deadline = self.monotonic() + limit
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
                now = self.monotonic()
                if now >= deadline:
                    self._kill_running(procs, killed, "overran its time limit")
                    deadline = float("inf")
                timeout = min(self.poll_interval, max(0.0, deadline - now))
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
                while p.poll() is None and self.monotonic() < deadline:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        p.wait(timeout=self.poll_interval)
            self._kill_running(procs, killed, "overran its time limit")
            finished = True
        finally:
            sel.close()
            if not finished:
                # interrupted (Ctrl-C or an error in a callback): stop what we started, by PID
                self._kill_running(procs, killed, "was interrupted")
            for p in procs:
                p.wait()
            for p in procs:
                for stream in (p.stdout, p.stderr):
                    if stream is not None:
                        stream.close()
        return [p.poll() for p in procs], killed


class _CpuSampler:
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
