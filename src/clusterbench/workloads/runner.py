"""Run sysbench prepare / run / cleanup as real processes and stream their samples.

Every argv is logged (password masked) before it runs. A run is bounded: sysbench's own --time,
then a hard kill of exactly the processes started here (by their PID) after time + grace.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pymysql  # type: ignore[import-untyped, unused-ignore]  # types-PyMySQL is a dev extra

from clusterbench.components.web.schema import WEB_SCHEMA
from clusterbench.engines import SESSIONS
from clusterbench.errors import InputError, WorkloadError
from clusterbench.spec.endpoint import Endpoint
from clusterbench.workloads.clients import (
    ClientTracker,
    Connect,
    CpuProbe,
    CpuSampler,
    OptionFiles,
    Spawn,
    _spawn,
    pump,
    track,
    untrack,
)
from clusterbench.workloads.http import HttpRunner, drop_web_tables, prepare_web_tables
from clusterbench.workloads.measured import MeasuredRun
from clusterbench.workloads.parse import Sample
from clusterbench.workloads.placement import (
    ClientHost,
    LocalClientHost,
    assign_round_robin,
    probe_cpu,
    start_lead,
)
from clusterbench.workloads.results import CommandOutput, RunResult
from clusterbench.workloads.slap import SlapRunner
from clusterbench.workloads.sysbench import (
    HTTP_GROUP,
    HTTP_TESTS,
    SLAP_TEST,
    SysbenchCommand,
    SysbenchOptions,
    build_command,
    client_databases,
    expected_tables,
    prepare_group,
    use_tls,
)

log = logging.getLogger(__name__)

STDERR_TAIL = 40
OTHER_TAIL = 40


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
        http: HttpRunner | None = None,
    ) -> None:
        self.slap = slap  # runs the mysqlslap workload (default: a SlapRunner made per run)
        # runs the HTTP tests against the web tier (None: the cluster has none, they are refused)
        self.http = http
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
                if endpoint.auto_inc_off:
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
            tracked = track(self.tracker, [("local", False, proc)], what=f"sysbench {cmd.argv[-1]}")
            out: list[str] = []
            err: list[str] = []

            def on_out(_i: int, line: str) -> None:
                out.append(line)
                if on_line is not None:
                    on_line(line.rstrip("\n"))

            try:
                rc, killed = pump([proc], timeout, on_out, lambda _i, line: err.append(line),
                                  monotonic=self.monotonic, poll_interval=self.poll_interval)  # fmt: skip
            finally:
                untrack(self.tracker, tracked)
        finally:
            files.remove()
        return CommandOutput(cmd.argv, rc[0], out, err, killed[0])

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
            if group == HTTP_GROUP:
                res = self._prepare_web(opts, endpoint, db, tls)
            else:
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
            if prepare_group(opts.test) == HTTP_GROUP:
                outputs.append(self._cleanup_web(endpoint, db, use_tls(opts, endpoint)))
                continue
            cmd = build_command(opts, endpoint, "cleanup", database=db, sysbench_bin=self.sysbench_bin)
            res = self._run_to_end(cmd, timeout)
            outputs.append(res)
            fatal = _first_fatal(res.stdout + res.stderr)
            if fatal is not None or res.returncode != 0:
                reason = fatal or f"exit code {res.returncode}"
                raise WorkloadError(f"sysbench cleanup on {_endpoint_label(endpoint, db)} failed: {reason}")
        return outputs

    def _prepare_web(self, opts: SysbenchOptions, endpoint: Endpoint, db: str, tls: bool) -> CommandOutput:
        """The web application's tables (HTTP tests): created through the endpoint, like a prepare."""
        addr = endpoint.addresses[0]
        argv = ("clusterbench", "web-prepare", db)
        log.info("preparing the web application's tables in %s", _endpoint_label(endpoint, db))
        try:
            conn = self._connect(endpoint, addr.host, addr.port, db, tls)
            try:
                return CommandOutput(argv, 0, prepare_web_tables(conn, opts.table_size), [])
            finally:
                conn.close()
        except pymysql.err.MySQLError as e:
            return CommandOutput(argv, 1, [], [f"FATAL: {e.args[-1] if e.args else e}"])

    def _cleanup_web(self, endpoint: Endpoint, db: str, tls: bool) -> CommandOutput:
        addr = endpoint.addresses[0]
        argv = ("clusterbench", "web-cleanup", db)
        try:
            conn = self._connect(endpoint, addr.host, addr.port, db, tls)
            try:
                drop_web_tables(conn)
            finally:
                conn.close()
        except pymysql.err.MySQLError as e:
            return CommandOutput(argv, 1, [], [f"FATAL: {e.args[-1] if e.args else e}"])
        return CommandOutput(argv, 0, [], [])

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
        stop: Callable[[], str | None] | None = None,
        web_urls: Sequence[str] = (),
    ) -> RunResult:
        """Run opts.test from `clients` sysbench processes at once; samples go to on_sample as they arrive.
        `stop`, asked while they run, names a reason to end them early (the cluster is down).

        Client i runs on hosts[i % len(hosts)] (default: this machine) against
        endpoints[i % len(endpoints)] (default: `endpoint`), and every client waits
        for one common start instant before it execs sysbench. While they run, each client's CPU
        use is read on its host every `cpu_interval` s. on_sample is called in this thread, one
        measured (post-warm-up) sample at a time.
        """
        if opts.test in HTTP_TESTS:
            return self._run_http(opts, clients=clients, separate_schemas=separate_schemas,
                                  on_sample=on_sample, hosts=hosts, endpoints=endpoints,
                                  web_urls=web_urls)  # fmt: skip
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
        commands = [build_command(opts, targets[i], "run", database=db, sysbench_bin=self.sysbench_bin,
                                  shim=self.shim) for i, db in enumerate(dbs)]  # fmt: skip
        sampler = CpuSampler(self.cpu_probe, placed, self.cpu_interval)
        m = MeasuredRun(opts, placed, commands, dbs, targets, on_sample, sampler)
        files = OptionFiles(self.secrets_dir)
        try:
            staged = m.stage(files)
            start_ns = self.wall_ns() + int(start_lead(placed, clients) * 1e9)
            procs = m.launch(staged, start_ns)
            tracked = track(self.tracker, m.started(procs), what=f"sysbench {opts.test}")
            m.sampler.start()
            try:
                limit = opts.total_time + self.grace + (start_ns - self.wall_ns()) / 1e9
                rcs, killed = pump(procs, limit, m.on_out, m.on_err, monotonic=self.monotonic,
                                   poll_interval=self.poll_interval, stop=stop)  # fmt: skip
            finally:
                m.sampler.stop()
                untrack(self.tracker, tracked)
        finally:
            files.remove()
        return m.result(rcs, killed, start_ns)

    def http_runner(self, web_urls: Sequence[str] = ()) -> HttpRunner | None:
        """What runs the HTTP tests: the one given, else one for the web tier at `web_urls` (the
        trial's Load.web_urls); None without either."""
        if self.http is not None:
            return self.http
        return HttpRunner(web_urls, tracker=self.tracker) if web_urls else None

    def check_load(
        self,
        opts: SysbenchOptions,
        clients: int = 1,
        web_urls: Sequence[str] = (),
        database: str | None = None,
    ) -> None:
        """What can be refused of the load itself before anything starts (the endpoint checks are
        check_endpoint's): an HTTP test needs the web tier, vegeta, a rate each client can send
        and the application's schema. Nothing for the other tests."""
        if opts.test not in HTTP_TESTS:
            return
        http = self.http_runner(web_urls)
        if http is None:
            raise InputError(
                f"-w {opts.test}: this cluster has no web tier; set [web] nodes = 1..9 in the topology"
            )
        if database is not None and database != WEB_SCHEMA:
            raise InputError(
                f"--database {database}: the web application's tables are in {WEB_SCHEMA}; "
                "leave --database out"
            )
        http.check(opts, clients)

    def _run_http(
        self,
        opts: SysbenchOptions,
        *,
        clients: int,
        separate_schemas: bool,
        on_sample: Callable[[Sample], None] | None,
        hosts: Sequence[ClientHost] | None,
        endpoints: Sequence[Endpoint] | None,
        web_urls: Sequence[str] = (),
    ) -> RunResult:
        """An HTTP test: vegeta against the web tier. Its clients talk to the front balancer, not
        to the database, so per-client endpoints and schemas do not apply."""
        self.check_load(opts, clients, web_urls)
        http = self.http_runner(web_urls)
        assert http is not None
        if separate_schemas:
            raise InputError(
                f"--separate-schemas: {opts.test} writes in the web application's one schema; leave it off"
            )
        if endpoints and len(endpoints) > 1:
            raise InputError(
                f"--target: {opts.test} loads the web tier's front; leave --target at the balancer"
            )
        return http.run(opts, clients=clients, on_sample=on_sample, hosts=hosts)

