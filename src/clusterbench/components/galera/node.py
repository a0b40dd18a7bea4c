"""A MariaDB Galera node as a real process on a host."""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql

from clusterbench.clock import Clock, SystemClock
from clusterbench.components.galera.config import (
    NodeConfig,
    render_client_cnf,
    render_clustercheck,
    render_my_cnf,
)
from clusterbench.components.galera.status import (
    GraState,
    WsrepStatus,
    classify_join,
    parse_grastate,
    parse_recovered_position,
    parse_wsrep_status,
    render_grastate,
)
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import Machine, ProcessRef, terminate, wait_dead

log = logging.getLogger(__name__)

CLUSTERCHECK_PORT = 9200


@dataclass(frozen=True)
class Credentials:
    """Per-cluster accounts, generated at `up`. Only ever printed masked."""

    admin_user: str
    admin_password: str
    app_user: str
    app_password: str
    mon_user: str
    mon_password: str

    def to_json(self) -> dict[str, str]:
        return dict(self.__dict__)

    @staticmethod
    def from_json(d: dict[str, str]) -> Credentials:
        return Credentials(**d)


def _sql_quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


def account_sql(c: Credentials, database: str = "sbtest") -> list[str]:
    """Statements that create the cluster's accounts; one per line (bootstrap mode needs that)."""
    out = [f"CREATE DATABASE IF NOT EXISTS {database};"]
    accounts = [
        (c.admin_user, c.admin_password, "ALL PRIVILEGES", " WITH GRANT OPTION"),
        (c.app_user, c.app_password, "ALL PRIVILEGES", ""),
        (c.mon_user, c.mon_password, "USAGE, PROCESS, REPLICATION CLIENT", ""),
    ]
    for host in ("localhost", "%"):
        for user, password, privileges, grant_option in accounts:
            who = f"{_sql_quote(user)}@{_sql_quote(host)}"
            out += [
                f"CREATE USER {who} IDENTIFIED BY {_sql_quote(password)};",
                f"GRANT {privileges} ON *.* TO {who}{grant_option};",
            ]
    return out


class GaleraNode:
    def __init__(
        self,
        cfg: NodeConfig,
        host: Machine,
        creds: Credentials,
        proc: ProcessRef | None = None,
        check_proc: ProcessRef | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.cfg = cfg
        self.host = host
        self.creds = creds
        self.proc = proc
        self.check_proc = check_proc
        self.clock = clock or SystemClock()

    @property
    def index(self) -> int:
        return self.cfg.index

    @property
    def name(self) -> str:
        return self.cfg.node_name

    # --- files ---

    def write_files(self) -> None:
        d = self.cfg.dir
        # Owned by mysql: mariadbd runs as mysql (rsync SST fails as root, RECIPES G1).
        for sub in (d, d / "data", d / "tmp"):
            self.host.mkdir(sub, owner="mysql", mode=0o755)
        self.host.put_file(self.cfg.cnf_path, render_my_cnf(self.cfg), mode=0o644)
        self.host.put_file(
            self.cfg.mon_cnf,
            render_client_cnf(self.creds.mon_user, self.creds.mon_password, self.cfg.socket),
            mode=0o600,
        )
        self.host.put_file(self.admin_cnf, self.admin_cnf_text(), mode=0o600)
        self.host.put_file(self.cfg.clustercheck_path, render_clustercheck(self.cfg), mode=0o700)

    @property
    def admin_cnf(self) -> Path:
        return self.cfg.dir / "admin.cnf"

    def admin_cnf_text(self) -> str:
        return render_client_cnf(self.creds.admin_user, self.creds.admin_password, self.cfg.socket)

    def install_db(self) -> None:
        self.host.run(
            [
                "mariadb-install-db",
                f"--defaults-file={self.cfg.cnf_path}",
                "--user=mysql",
                "--skip-test-db",
                "--auth-root-authentication-method=socket",
            ],
            timeout=120,
        )

    def run_bootstrap_sql(self, statements: list[str]) -> None:
        """Run SQL in mariadbd's bootstrap mode (no network, no wsrep), one statement per line.
        Bootstrap mode skips the grant tables; FLUSH PRIVILEGES loads them so CREATE USER works."""
        self.host.run(
            ["mariadbd", f"--defaults-file={self.cfg.cnf_path}", "--bootstrap", "--wsrep-on=OFF"],
            input="FLUSH PRIVILEGES;\n" + "\n".join(statements) + "\n",
            timeout=120,
        )

    def grastate(self) -> GraState | None:
        text = self.host.read_file(self.cfg.datadir / "grastate.dat")
        return parse_grastate(text) if text else None

    def set_grastate(self, g: GraState) -> None:
        self.host.put_file(self.cfg.datadir / "grastate.dat", render_grastate(g), mode=0o660, owner="mysql")

    def error_log_size(self) -> int:
        return self.host.file_size(self.cfg.error_log)

    def error_log_since(self, offset: int) -> str:
        text = self.host.read_file(self.cfg.error_log) or ""
        return text[offset:] if offset <= len(text) else text

    def error_log_tail(self, lines: int = 8) -> str:
        text = self.host.read_file(self.cfg.error_log) or ""
        wanted = [ln for ln in text.splitlines() if "[ERROR]" in ln or "WSREP_SST: [ERROR]" in ln]
        pick = wanted[-lines:] if wanted else text.splitlines()[-lines:]
        return " | ".join(ln.strip() for ln in pick)

    # --- process ---

    def alive(self) -> bool:
        return self.proc is not None and self.host.alive(self.proc)

    def start(self, *, bootstrap: bool = False, start_position: str | None = None) -> ProcessRef:
        if self.alive():
            assert self.proc is not None
            return self.proc
        argv = ["mariadbd", f"--defaults-file={self.cfg.cnf_path}"]
        if bootstrap:
            argv.append("--wsrep-new-cluster")
        if start_position:
            argv.append(f"--wsrep-start-position={start_position}")
        self.proc = self.host.spawn(argv, log=self.cfg.dir / "stdout.log")
        return self.proc

    def recover_position(self) -> str | None:
        """After a crash, read the last committed position from InnoDB so the restart gets IST
        instead of a full SST (RECIPES §2, G3)."""
        rlog = self.cfg.dir / "recover.log"
        self.host.remove(rlog)
        self.host.run(
            ["mariadbd", f"--defaults-file={self.cfg.cnf_path}", "--wsrep-recover", f"--log-error={rlog}"],
            timeout=120,
            check=False,
        )
        return parse_recovered_position(self.host.read_file(rlog) or "")

    def stop(self, timeout: float = 60.0) -> str:
        """SIGTERM, wait, SIGKILL after `timeout`. Returns what happened. SIGCONT first: a paused
        (SIGSTOPped) mariadbd would not act on SIGTERM until continued."""
        return terminate(self.host, self.proc, self.clock, timeout, cont=True)

    def kill(self) -> str:
        if not self.alive():
            return "not running"
        assert self.proc is not None
        self.host.signal(self.proc, signal.SIGKILL)
        self._wait_dead(10)
        return "killed"

    def pause(self) -> None:
        if self.proc is not None:
            self.host.signal(self.proc, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            self.host.signal(self.proc, signal.SIGCONT)

    def _wait_dead(self, timeout: float) -> bool:
        return self.proc is None or wait_dead(self.host, self.proc, self.clock, timeout)

    # --- health check agent (socat + script, inside the node's namespace) ---

    def check_alive(self) -> bool:
        return self.check_proc is not None and self.host.alive(self.check_proc)

    def start_clustercheck(self) -> ProcessRef:
        if self.check_alive():
            assert self.check_proc is not None
            return self.check_proc
        self.check_proc = self.host.spawn(
            [
                "socat",
                f"TCP-LISTEN:{CLUSTERCHECK_PORT},bind={self.cfg.address},fork,reuseaddr",
                f"EXEC:{self.cfg.clustercheck_path}",
            ],
            log=self.cfg.dir / "clustercheck.log",
        )
        return self.check_proc

    def stop_clustercheck(self) -> None:
        if self.check_proc is not None and self.host.alive(self.check_proc):
            self.host.signal(self.check_proc, signal.SIGTERM)

    # --- SQL ---

    @contextmanager
    def connect(self, timeout: float = 2.0, **kw: Any) -> Iterator[pymysql.connections.Connection]:
        # The unix socket is on this machine's filesystem only for local hosts; a remote node is
        # reached over TCP, as the admin account exists for '%' too.
        where: dict[str, Any] = (
            {"host": self.cfg.address, "port": 3306}
            if self.host.remote
            else {"unix_socket": str(self.cfg.socket)}
        )
        conn = pymysql.connect(
            **where,
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

    def status(self) -> WsrepStatus | None:
        """wsrep status, or None when the node does not answer."""
        if not self.alive():
            return None
        try:
            with self.connect(1.0) as conn, conn.cursor() as cur:
                # Never block on a node that lost quorum (RELIABILITY: monitoring sessions).
                cur.execute("SET SESSION wsrep_sync_wait=0")
                cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep_%'")
                return parse_wsrep_status([(str(r[0]), str(r[1])) for r in cur.fetchall()])
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] == 1045:
                raise ComponentError(
                    f"node {self.name} refuses the admin account ({exc.args[1]}); the cluster's credentials "
                    "do not match its data: recreate it with `clusterbench down` and `clusterbench up`"
                ) from None
            return None
        except pymysql.MySQLError:
            return None

    def wait_synced(self, timeout: float, expect_size: int | None = None) -> WsrepStatus:
        deadline = self.clock.now() + timeout
        last: WsrepStatus | None = None
        while self.clock.now() < deadline:
            if not self.alive():
                raise ComponentError(
                    f"node {self.name} exited while joining; last errors from {self.cfg.error_log}: "
                    f"{self.error_log_tail()}"
                )
            last = self.status()
            if last is not None and last.synced and (expect_size is None or last.cluster_size >= expect_size):
                return last
            self.clock.sleep(0.05)
        where = f"state {last.state_comment}, size {last.cluster_size}" if last else "not answering"
        raise ComponentError(
            f"node {self.name} not Synced after {timeout:g} s ({where}); see {self.cfg.error_log}: "
            f"{self.error_log_tail(3)}"
        )

    def wait_in_view(self, size: int, timeout: float, joiner: GaleraNode | None = None) -> None:
        """Wait until this node sees a Primary view of at least `size` members; fail at once if
        the `joiner` we wait for has died."""
        deadline = self.clock.now() + timeout
        while self.clock.now() < deadline:
            if joiner is not None and not joiner.alive():
                raise ComponentError(
                    f"node {joiner.name} exited while joining; last errors from {joiner.cfg.error_log}: "
                    f"{joiner.error_log_tail()}"
                )
            st = self.status()
            if st is not None and st.primary and st.cluster_size >= size:
                return
            self.clock.sleep(0.05)
        raise ComponentError(f"node {self.name} did not see {size} members in {timeout:g} s")

    def join_kind_since(self, offset: int) -> str:
        return classify_join(self.error_log_since(offset))
