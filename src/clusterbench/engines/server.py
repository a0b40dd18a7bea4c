"""What every engine's database server has in common: a detached process on a host that we signal
by PID + start time, an error log, an admin connection, and an HTTP health agent (socat running
a check script per request) that the balancer asks. Engines subclass `ServerNode` and add their
own files, start arguments and status."""

from __future__ import annotations

import contextlib
import json
import signal
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import pymysql

from clusterbench.clock import Clock, SystemClock
from clusterbench.engines import fakeclock
from clusterbench.engines.base import Credentials, NodeHealth, SessionSql
from clusterbench.engines.paths import NodePaths
from clusterbench.errors import ComponentError
from clusterbench.hosts import procs
from clusterbench.hosts.base import Machine, ProcessRef, terminate, wait_dead

HEALTH_PORT = 9200

# The supervisor a server runs under when its engine asks for a restart by exit code (MySQL's
# RESTART, which a clone ends with): mysqld only exits with 16 to be started again when
# MYSQLD_PARENT_PID names its parent, as mysqld_safe and systemd set it; otherwise it refuses
# ("Error 3707 Restart server failed (mysqld is not managed by supervisor process)"). $1 is the
# file the supervisor writes each server's PID to; the server's command follows. Any other exit,
# and SIGKILL, end the supervisor with the server's code. An --init-file runs at the first start
# only: the file is removed once the server answers, and a restart after a clone finds the
# donor's accounts in place.
RESTART_EXIT = 16
SUPERVISE = (
    "child=$1; shift; "
    'while :; do MYSQLD_PARENT_PID=$$ "$@" & c=$!; echo "$c" > "$child"; wait "$c"; rc=$?; '
    f'[ "$rc" -eq {RESTART_EXIT} ] || exit "$rc"; '
    'echo "clusterbench: the server asked for a restart (exit 16); starting it again" >&2; '
    'for a do shift; case "$a" in --init-file=*) ;; *) set -- "$@" "$a";; esac; done; done'
)

# InnoDB's figures for telemetry, the same status variables in MariaDB and MySQL: status variable →
# neutral name (engines/base.py METRICS). MySQL has no Innodb_history_list_length: its engines read
# information_schema.INNODB_METRICS' trx_rseg_history_len in `extra_metrics` instead.
INNODB_METRIC_STATUS: dict[str, str] = {
    "innodb_buffer_pool_reads": "innodb_buffer_pool_reads",
    "innodb_row_lock_waits": "row_lock_waits",
    "innodb_history_list_length": "history_length",
    "innodb_data_fsyncs": "fsyncs",
    "innodb_data_reads": "data_reads",
    "innodb_data_writes": "data_writes",
}
# After a node did not answer, telemetry asks it again only this many seconds later (a connect
# attempt to a dead or partitioned node takes up to its timeout).
METRICS_RETRY_S = 2.0


def sql_quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


def option_quote(value: str) -> str:
    """Quote a value for a MySQL/MariaDB option file, where an unquoted '#' starts a comment."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_client_cnf(user: str, password: str, socket: Path | None = None, host: str | None = None) -> str:
    """A [client] option file: how every client of ours gets a password without putting it on a
    command line (`--defaults-extra-file`), mode 0600."""
    lines = ["[client]", f"user={user}", f"password={option_quote(password)}"]
    if socket is not None:
        lines.append(f"socket={socket}")
    if host is not None:
        lines.append(f"host={host}")
    return "\n".join(lines) + "\n"


class ServerConfig(Protocol):
    """What ServerNode reads of an engine's node configuration."""

    @property
    def index(self) -> int: ...

    @property
    def address(self) -> str: ...

    @property
    def dir(self) -> Path: ...


C = TypeVar("C", bound=ServerConfig)


class ServerNode(NodePaths, ABC, Generic[C]):
    """A database server process of some engine on one host, configured by `cfg`.

    Subclasses set `session` and implement write_files, the start argv, health() and
    engine_status(); everything here is the same for every engine."""

    session: SessionSql
    # Run under the restart supervisor (SUPERVISE): the engine's server asks for restarts.
    supervised = False
    # Started under libfaketime, its wall clock shiftable (engines/fakeclock.py).
    fake_clock = False

    def __init__(
        self,
        cfg: C,
        host: Machine,
        creds: Credentials,
        proc: ProcessRef | None = None,
        check_proc: ProcessRef | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.cfg = cfg
        self.index = cfg.index
        self.host = host
        self.creds = creds
        self.proc = proc
        self.check_proc = check_proc
        self.clock = clock or SystemClock()
        # Where this process's part of the error log begins: failures quote only lines written
        # since this start, never an earlier attempt's (issue 15, item 9).
        self.log_offset: int | None = None
        # telemetry's monitoring connection, kept open between metrics() calls
        self._metrics_conn: pymysql.connections.Connection | None = None
        self._metrics_failed_at: float | None = None

    # --- identity and paths (NodePaths: socket, error_log, health script under dir) ---

    @property
    def name(self) -> str:
        return f"n{self.index}"

    @property
    def address(self) -> str:
        return self.cfg.address

    @property
    def dir(self) -> Path:
        return self.cfg.dir

    # --- error log ---

    def error_log_size(self) -> int:
        return self.host.file_size(self.error_log)

    def error_log_since(self, offset: int) -> str:
        """The error log from byte `offset` (a size from error_log_size) on; all of it when the
        log is shorter than that (it was replaced)."""
        text = self.host.read_file(self.error_log) or ""
        # The offset counts bytes and the text characters: a non-ASCII character before it would
        # shift a character index into this start's first lines.
        raw = text.encode()
        return raw[offset:].decode(errors="replace") if offset <= len(raw) else text

    def error_log_tail(self, lines: int = 8) -> str:
        """The last error lines of this start (or of the whole log when we did not start it)."""
        text = (
            self.error_log_since(self.log_offset)
            if self.log_offset is not None
            else (self.host.read_file(self.error_log) or "")
        )
        wanted = [ln for ln in text.splitlines() if "[ERROR]" in ln]
        pick = wanted[-lines:] if wanted else text.splitlines()[-lines:]
        return " | ".join(ln.strip() for ln in pick)

    # --- process ---

    def alive(self) -> bool:
        if self.proc is not None and self.host.alive(self.proc):
            return True
        return self.supervised and self._follow()

    @property
    def supervisor_file(self) -> Path:
        return self.dir / "supervisor.json"

    @property
    def child_file(self) -> Path:
        return self.dir / "server.pid"

    def supervisor(self) -> ProcessRef | None:
        """The running supervisor of this node's server, if there is one."""
        text = self.host.read_file(self.supervisor_file) if self.supervised else None
        try:
            ref = ProcessRef.from_json(json.loads(text)) if text else None
        except (ValueError, KeyError):
            return None
        return ref if ref is not None and self.host.alive(ref) else None

    def _follow(self) -> bool:
        """The server the supervisor runs now (started again after it asked for a restart): adopt
        it as this node's process. False when there is none running."""
        if self.supervisor() is None:
            return False
        text = (self.host.read_file(self.child_file) or "").strip()
        st = self.host.proc_state(int(text)) if text.isdigit() else None
        if st is None or st[0] in ("Z", "X"):
            return False
        self.proc = ProcessRef(int(text), st[1])
        return True

    def restarting(self) -> bool:
        """The supervisor is starting the server again (between its exit and the next start)."""
        return self.supervisor() is not None and not self.alive()

    # --- the wall clock it sees (clock-skew) ---

    @property
    def clock_file(self) -> Path:
        return self.dir / fakeclock.CLOCK_FILE

    @property
    def clock_file_inside(self) -> Path:
        """The clock file as the server sees it (a chrooted server: inside its root)."""
        return self.clock_file

    def clock_env(self) -> list[str]:
        """The prefix of a server start under libfaketime, [] without the setting."""
        return fakeclock.clock_env(self.clock_file_inside) if self.fake_clock else []

    def spawn(self, argv: list[str]) -> ProcessRef:
        """Start the server detached, after stopping what an earlier process of this node left
        running (issue 15, item 8: a killed donor's SST script blocks the next start). A
        supervised server runs under SUPERVISE, and its own PID is this node's process."""
        self.stop_strays()
        self.log_offset = self.error_log_size()
        if self.fake_clock and not self.host.exists(self.clock_file):
            self.host.put_file(self.clock_file, fakeclock.offset_text(0.0), mode=0o644)
        if not self.supervised:
            self.proc = self.host.spawn(argv, log=self.dir / "stdout.log")
            return self.proc
        self.host.remove(self.child_file)
        sup = self.host.spawn(
            ["sh", "-c", SUPERVISE, "sh", str(self.child_file), *argv], log=self.dir / "stdout.log"
        )
        self.host.put_file(self.supervisor_file, json.dumps(sup.to_json()))
        deadline = self.clock.now() + 10
        while not self._follow():
            if not self.host.alive(sup) or self.clock.now() > deadline:
                raise ComponentError(
                    f"{self.name}: the server did not start under its supervisor; see {self.error_log}"
                )
            self.clock.sleep(0.01)
        assert self.proc is not None
        return self.proc

    def stop_strays(self) -> list[str]:
        """Processes naming this node's directory that are neither the server nor the health
        agent we track: an earlier process's helpers. Only call while the server is down."""
        if self.alive():
            return []
        keep = [p.pid for p in (self.check_proc,) if p is not None and self.host.alive(p)]
        return procs.stop_strays(self.host, f"{self.dir}/", keep, self.clock)

    def stop(self, timeout: float = 60.0) -> str:
        """SIGTERM, wait, SIGKILL after `timeout`. SIGCONT first: a paused (SIGSTOPped) server
        would not act on SIGTERM until continued. Its supervisor ends with it."""
        self.alive()  # a supervised server may have been started again since we knew its PID
        out = terminate(self.host, self.proc, self.clock, timeout, cont=True)
        sup = self.supervisor()
        if sup is not None:
            terminate(self.host, sup, self.clock, 5.0)
        return out

    def kill(self, wait: bool = True) -> str:
        """SIGKILL; with `wait`, until the process is gone (≤ 10 s). Several nodes killed at once:
        kill(wait=False) each, then wait_dead(). A supervisor is killed first, so that nothing
        starts the server again."""
        running = self.alive()  # first: a supervised server may have been started again
        sup = self.supervisor()
        if sup is not None:
            self.host.signal(sup, signal.SIGKILL)
        if not running:
            return "not running"
        assert self.proc is not None
        self.host.signal(self.proc, signal.SIGKILL)
        if wait:
            self._wait_dead(10)
        return "killed"

    def wait_dead(self, timeout: float = 10.0) -> bool:
        return self._wait_dead(timeout)

    def pause(self) -> None:
        if self.proc is not None:
            self.host.signal(self.proc, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            self.host.signal(self.proc, signal.SIGCONT)

    def _wait_dead(self, timeout: float) -> bool:
        return self.proc is None or wait_dead(self.host, self.proc, self.clock, timeout)

    # --- health agent (socat + script, on the node's host) ---

    def health_agent_alive(self) -> bool:
        return self.check_proc is not None and self.host.alive(self.check_proc)

    def start_health_agent(self) -> ProcessRef:
        if self.health_agent_alive():
            assert self.check_proc is not None
            return self.check_proc
        self.check_proc = self.host.spawn(
            [
                "socat",
                f"TCP-LISTEN:{HEALTH_PORT},bind={self.address},fork,reuseaddr",
                f"EXEC:{self.health_script}",
            ],
            log=self.dir / "clustercheck.log",
        )
        return self.check_proc

    def stop_health_agent(self) -> None:
        if self.check_proc is not None and self.host.alive(self.check_proc):
            self.host.signal(self.check_proc, signal.SIGTERM)

    # --- SQL ---

    def _where(self) -> dict[str, Any]:
        # The unix socket is on this machine's filesystem only for local hosts; a remote node is
        # reached over TCP, as the admin account exists for '%' too.
        return {"host": self.address, "port": 3306} if self.host.remote else {"unix_socket": str(self.socket)}

    @contextmanager
    def connect(self, timeout: float = 2.0, **kw: Any) -> Iterator[pymysql.connections.Connection]:
        conn = pymysql.connect(
            **self._where(),
            user=self.creds.admin_user,
            password=self.creds.admin_password,
            connect_timeout=timeout,
            read_timeout=kw.pop("read_timeout", 10),
            write_timeout=10,
            autocommit=True,
            **kw,
        )
        try:
            yield conn
        finally:
            conn.close()

    def query(self, sql: str, timeout: float = 2.0) -> list[tuple[Any, ...]]:
        with self.connect(timeout) as conn, conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    @contextmanager
    def monitor_cursor(self, timeout: float, **kw: Any) -> Iterator[Any]:
        """A cursor of a monitoring session (never blocks on a node without quorum). A refused
        admin account raises ComponentError: the cluster's credentials do not match its data."""
        try:
            with self.connect(timeout, **kw) as conn, conn.cursor() as cur:
                for stmt in self.session.monitor:
                    cur.execute(stmt)
                yield cur
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] == 1045:
                raise ComponentError(
                    f"node {self.name} refuses the admin account ({exc.args[1]}); the cluster's credentials "
                    "do not match its data: recreate it with `clusterbench down` and `clusterbench up`"
                ) from None
            raise

    def monitor_rows(self, sql: str, timeout: float = 1.0) -> list[tuple[str, str]] | None:
        """Name/value rows read in a monitoring session; None when the node is down or does not
        answer. A refused admin account is an error (monitor_cursor)."""
        if not self.alive():
            return None
        try:
            with self.monitor_cursor(timeout) as cur:
                cur.execute(sql)
                return [(str(r[0]), "" if r[1] is None else str(r[1])) for r in cur.fetchall()]
        except pymysql.MySQLError:
            return None

    # --- telemetry ---

    # The engine's own status variables for telemetry: lower-case status name → (neutral name of
    # engines/base.py METRICS, factor). Engines set it; figures that are not status variables come
    # from `extra_metrics`.
    metric_status: dict[str, tuple[str, float]] = {}

    def extra_metrics(self, cur: Any) -> dict[str, float]:
        """Figures read with other statements than SHOW GLOBAL STATUS (GR: performance_schema's
        replication_group_member_stats, MySQL's history length). {} here."""
        return {}

    def metrics(self) -> dict[str, float] | None:
        """InnoDB's figures and the engine's (`metric_status`, `extra_metrics`) in the neutral
        names of METRICS, through one monitoring connection kept open between calls; None when the
        node does not answer (asked again after METRICS_RETRY_S)."""
        now = self.clock.now()
        if self._metrics_conn is None:
            if self._metrics_failed_at is not None and now - self._metrics_failed_at < METRICS_RETRY_S:
                return None
            try:
                conn = pymysql.connect(**self._where(), user=self.creds.admin_user,
                                       password=self.creds.admin_password, connect_timeout=1,
                                       read_timeout=2, write_timeout=2, autocommit=True)  # fmt: skip
                with conn.cursor() as cur:
                    for stmt in self.session.monitor:
                        cur.execute(stmt)
            except pymysql.MySQLError:
                self._metrics_failed_at = now
                return None
            self._metrics_conn = conn
        wanted = {**{k: (v, 1.0) for k, v in INNODB_METRIC_STATUS.items()}, **self.metric_status}
        names = ",".join(sql_quote(k) for k in sorted(wanted))
        try:
            with self._metrics_conn.cursor() as cur:
                cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")
                out: dict[str, float] = {}
                for name, value in cur.fetchall():
                    key, factor = wanted.get(str(name).lower(), ("", 1.0))
                    number = _number(value)
                    if key and number is not None:
                        out[key] = number * factor
                out.update(self.extra_metrics(cur))
            return out
        except pymysql.MySQLError:
            self.close_metrics()
            self._metrics_failed_at = now
            return None

    def close_metrics(self) -> None:
        conn, self._metrics_conn = self._metrics_conn, None
        if conn is not None:
            # closing a broken connection may fail; it is gone either way
            with contextlib.suppress(Exception):
                conn.close()

    @abstractmethod
    def health(self) -> NodeHealth | None:
        """How the node sees itself and its group; None when it does not answer."""

    def wait_ready(
        self,
        timeout: float,
        expect_size: int | None = None,
        give_up: Callable[[], str | None] | None = None,
    ) -> NodeHealth:
        """Wait until the node is a ready member (of a view of at least `expect_size`); fail at
        once, quoting this start's errors, if the process dies, or when `give_up` (asked every
        GIVE_UP_EVERY s) names a reason the wait cannot succeed."""
        deadline = self.clock.now() + timeout
        ask_at = self.clock.now() + GIVE_UP_EVERY
        last: NodeHealth | None = None
        while self.clock.now() < deadline:
            if not self.alive():
                raise ComponentError(
                    f"node {self.name} exited while joining; errors from {self.error_log} since its start: "
                    f"{self.error_log_tail()}"
                )
            if give_up is not None and self.clock.now() >= ask_at:
                ask_at = self.clock.now() + GIVE_UP_EVERY
                why = give_up()
                if why:
                    raise GaveUp(f"node {self.name} {why}; errors from {self.error_log} since its start: "
                                 f"{self.error_log_tail(3)}")  # fmt: skip
            last = self.health()
            if last is not None and last.ready and (expect_size is None or last.size >= expect_size):
                return last
            self.clock.sleep(0.05)
        where = f"state {last.state}, {last.size} members" if last else "not answering"
        raise ComponentError(
            f"node {self.name} not ready after {timeout:g} s ({where}); see {self.error_log}: "
            f"{self.error_log_tail(3)}"
        )


# How often wait_ready asks its give_up callback (it may read logs and ask other nodes).
GIVE_UP_EVERY = 2.0


class GaveUp(ComponentError):
    """wait_ready stopped waiting early: the process runs but cannot become ready."""


def _number(value: Any) -> float | None:
    """A status value as a number: ON/OFF and true/false as 1/0, None when it is no number."""
    text = str(value).strip().lower()
    if text in ("on", "true"):
        return 1.0
    if text in ("off", "false"):
        return 0.0
    try:
        return float(text)
    except ValueError:
        return None
