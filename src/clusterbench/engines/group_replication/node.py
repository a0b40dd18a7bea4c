"""A MySQL Group Replication member as a real process on a host.

mysqld runs chrooted into the MySQL root file system (rootfs.py). Its node directory on the host
is bind-mounted at NODE_MOUNT inside the rootfs, in a mount namespace of the member's own
(`unshare --mount --propagation private`), so the mount goes away with the process and no two
members (or clusters) ever see each other's files. Every step execs the next (unshare, sh,
chroot, mysqld), so the PID we record is mysqld's own.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import pymysql.cursors

from clusterbench.clock import Clock, SystemClock
from clusterbench.engines.group_replication.config import (
    MemberConfig,
    render_client_cnf,
    render_healthcheck,
    render_my_cnf,
    start_sql,
)
from clusterbench.engines.group_replication.rootfs import MYSQLD, NODE_MOUNT
from clusterbench.engines.group_replication.status import GRStatus, GtidSet, parse_status
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import Machine, ProcessRef, terminate, wait_dead

log = logging.getLogger(__name__)

HEALTHCHECK_PORT = 9200
# A join that cannot reach the group waits ~120 s inside START GROUP_REPLICATION before it fails
# (RECIPES §11); we bound it ourselves and read the error log for the reason.
START_GR_TIMEOUT = 60.0

# Mount the node directory at NODE_MOUNT in a private mount namespace, then chroot and exec.
_CHROOT_SH = 'd=$1; r=$2; shift 2; mount --bind "$d" "$r{mount}" && exec chroot "$r" "$@"'


@dataclass(frozen=True)
class GRCredentials:
    admin_user: str
    admin_password: str
    mon_user: str
    mon_password: str
    repl_user: str
    repl_password: str


def chroot_argv(rootfs: Path, node_dir: Path, argv: list[str]) -> list[str]:
    """`argv` (paths as seen inside the rootfs) run chrooted with `node_dir` at NODE_MOUNT."""
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        _CHROOT_SH.format(mount=NODE_MOUNT),
        "sh",
        str(node_dir),
        str(rootfs),
        *argv,
    ]


class GRMember:
    def __init__(
        self,
        cfg: MemberConfig,
        host: Machine,
        rootfs: Path,
        creds: GRCredentials,
        owner: tuple[int, int],
        proc: ProcessRef | None = None,
        check_proc: ProcessRef | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.cfg = cfg
        self.host = host
        self.rootfs = rootfs
        self.creds = creds
        self.owner = owner  # uid, gid of the rootfs's mysql user
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

    def _chown(self, *paths: Path) -> None:
        uid, gid = self.owner
        self.host.run(["chown", f"{uid}:{gid}", *map(str, paths)])

    def write_files(self) -> None:
        for sub in self.cfg.subdirs:
            self.host.mkdir(sub, mode=0o755 if sub == self.cfg.dir else 0o750)
        self._chown(*self.cfg.subdirs)
        self.host.put_file(self.cfg.cnf_path, render_my_cnf(self.cfg), mode=0o644)
        c = self.creds
        self.host.put_file(
            self.cfg.mon_cnf, render_client_cnf(c.mon_user, c.mon_password, self.cfg.socket), mode=0o600
        )
        self.host.put_file(
            self.cfg.admin_cnf, render_client_cnf(c.admin_user, c.admin_password, self.cfg.socket), mode=0o600
        )
        self.host.put_file(self.cfg.healthcheck_path, render_healthcheck(self.cfg), mode=0o700)

    def mysqld_argv(self, *args: str) -> list[str]:
        return chroot_argv(
            self.rootfs, self.cfg.dir, [MYSQLD, f"--defaults-file={self.cfg.cnf_inside}", *args]
        )

    def initialize(self, statements: list[str]) -> None:
        """`mysqld --initialize-insecure` with the account statements as its init file. The init
        file holds passwords: readable by mysqld only, removed afterwards."""
        init = self.cfg.dir / "init.sql"
        self.host.put_file(init, "\n".join(statements) + "\n", mode=0o600)
        self._chown(init)
        try:
            res = self.host.run(
                self.mysqld_argv("--initialize-insecure", f"--init-file={NODE_MOUNT / 'init.sql'}"),
                timeout=180,
                check=False,
            )
        finally:
            self.host.remove(init)
        if not res.ok:
            said = self.error_log_tail(3) if self.error_log_size() else res.tail(3)
            raise ComponentError(
                f"mysqld --initialize failed for {self.name} (exit {res.returncode}); "
                f"see {self.cfg.error_log}: {said}"
            )

    def error_log_size(self) -> int:
        return self.host.file_size(self.cfg.error_log)

    def error_log_since(self, offset: int) -> str:
        text = self.host.read_file(self.cfg.error_log) or ""
        return text[offset:] if offset <= len(text) else text

    def error_log_tail(self, lines: int = 8) -> str:
        text = self.host.read_file(self.cfg.error_log) or ""
        wanted = [ln for ln in text.splitlines() if "[ERROR]" in ln]
        pick = wanted[-lines:] if wanted else text.splitlines()[-lines:]
        return " | ".join(ln.strip() for ln in pick)

    # --- process ---

    def alive(self) -> bool:
        return self.proc is not None and self.host.alive(self.proc)

    def remove_stale_lock(self) -> None:
        """mysqld refuses to start while its socket's lock file names a live PID, and a killed
        mysqld may linger as a zombie here (PID 1 of this kind of machine does not reap orphans):
        "Another process with pid N is using unix socket file". Its process is ours and gone, so
        the lock is stale."""
        if not self.alive():
            for name in ("mysqld.sock.lock", "mysqld.sock", "mysqld.pid"):
                self.host.remove(self.cfg.dir / name)

    def start(self) -> ProcessRef:
        """Start mysqld (Group Replication stays off: start_on_boot=OFF; see start_group)."""
        if self.alive():
            assert self.proc is not None
            return self.proc
        self.remove_stale_lock()
        self.proc = self.host.spawn(self.mysqld_argv(), log=self.cfg.dir / "stdout.log")
        return self.proc

    def wait_ready(self, timeout: float) -> None:
        """Until mysqld answers SQL on its socket."""
        deadline = self.clock.now() + timeout
        while self.clock.now() < deadline:
            if not self.alive():
                raise ComponentError(
                    f"mysqld of {self.name} exited while starting; "
                    f"see {self.cfg.error_log}: {self.error_log_tail(3)}"
                )
            try:
                self.query("SELECT 1", timeout=1.0)
                return
            except pymysql.MySQLError:
                self.clock.sleep(0.05)
        raise ComponentError(
            f"mysqld of {self.name} did not answer in {timeout:g} s; see {self.cfg.error_log}"
        )

    def stop(self, timeout: float = 60.0) -> str:
        """SIGTERM (mysqld leaves the group on its way down), SIGKILL after `timeout`."""
        return terminate(self.host, self.proc, self.clock, timeout, cont=True)

    def kill(self) -> str:
        if not self.alive():
            return "not running"
        assert self.proc is not None
        self.host.signal(self.proc, signal.SIGKILL)
        if not wait_dead(self.host, self.proc, self.clock, 10):
            return "kill sent; still running"
        return "killed"

    def pause(self) -> None:
        if self.proc is not None:
            self.host.signal(self.proc, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            self.host.signal(self.proc, signal.SIGCONT)

    # --- health check agent ---

    def check_alive(self) -> bool:
        return self.check_proc is not None and self.host.alive(self.check_proc)

    def start_healthcheck(self) -> ProcessRef:
        if self.check_alive():
            assert self.check_proc is not None
            return self.check_proc
        self.check_proc = self.host.spawn(
            [
                "socat",
                f"TCP-LISTEN:{HEALTHCHECK_PORT},bind={self.cfg.address},fork,reuseaddr",
                f"EXEC:{self.cfg.healthcheck_path}",
            ],
            log=self.cfg.dir / "healthcheck.log",
        )
        return self.check_proc

    def stop_healthcheck(self) -> None:
        if self.check_proc is not None and self.host.alive(self.check_proc):
            self.host.signal(self.check_proc, signal.SIGTERM)

    # --- SQL ---

    @contextmanager
    def connect(self, timeout: float = 2.0, **kw: Any) -> Iterator[pymysql.connections.Connection]:
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

    def query(self, sql: str, timeout: float = 2.0, read_timeout: float = 10) -> list[tuple[Any, ...]]:
        with self.connect(timeout, read_timeout=read_timeout) as conn, conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def start_group(self, *, bootstrap: bool, timeout: float = START_GR_TIMEOUT) -> None:
        """START GROUP_REPLICATION (after bootstrap_group=ON for the first member of a new group).
        A member that cannot reach the group would wait ~120 s inside the statement: bounded."""
        offset = self.error_log_size()
        try:
            with self.connect(read_timeout=timeout) as conn, conn.cursor() as cur:
                for stmt in start_sql(self.creds.repl_user, self.creds.repl_password, bootstrap=bootstrap):
                    cur.execute(stmt)
        except pymysql.MySQLError as exc:
            if bootstrap:
                # Never leave bootstrap_group ON: a later START on this member would fork a group.
                with contextlib.suppress(pymysql.MySQLError):
                    self.query("SET GLOBAL group_replication_bootstrap_group=OFF")
            gcs = [ln.strip() for ln in self.error_log_since(offset).splitlines() if "[ERROR]" in ln]
            raise ComponentError(
                f"{self.name}: START GROUP_REPLICATION failed ({exc}); "
                + (gcs[-1] if gcs else f"see {self.cfg.error_log}")
            ) from None

    def leave_group(self) -> None:
        self.query("STOP GROUP_REPLICATION", read_timeout=60)

    def force_members(self, addresses: str, timeout: float = 60.0) -> None:
        """SET group_replication_force_members: the membership this member's group takes on,
        without the majority it lost ('' clears it once the group runs again)."""
        with self.connect(read_timeout=timeout) as conn, conn.cursor() as cur:
            cur.execute("SET GLOBAL group_replication_force_members=%s", (addresses,))

    def status(self) -> GRStatus | None:
        """This member's view of its group, or None when mysqld does not answer."""
        if not self.alive():
            return None
        try:
            with self.connect(1.0, cursorclass=pymysql.cursors.DictCursor) as conn, conn.cursor() as cur:
                cur.execute(
                    "SELECT @@GLOBAL.server_uuid AS u, @@GLOBAL.gtid_executed AS g, "
                    "@@GLOBAL.super_read_only AS ro, @@GLOBAL.group_replication_group_name AS n"
                )
                head: dict[str, Any] = dict(cur.fetchone() or {})
                cur.execute("SELECT * FROM performance_schema.replication_group_members")
                members: list[dict[str, Any]] = list(cur.fetchall())  # type: ignore[arg-type]
                cur.execute("SELECT * FROM performance_schema.replication_group_member_stats")
                stats: list[dict[str, Any]] = list(cur.fetchall())  # type: ignore[arg-type]
        except pymysql.MySQLError:
            return None
        return parse_status(
            str(head.get("u", "")),
            members,
            stats,
            str(head.get("g") or ""),
            head.get("ro"),
            str(head.get("n") or ""),
        )

    def executed(self) -> GtidSet:
        """What this member has: executed GTIDs plus those received into the group applier's relay
        log and not yet applied (both count when choosing who reboots a group)."""
        rows = self.query(
            "SELECT @@GLOBAL.gtid_executed, (SELECT RECEIVED_TRANSACTION_SET FROM "
            "performance_schema.replication_connection_status WHERE CHANNEL_NAME='group_replication_applier')"
        )
        executed = GtidSet.parse(str(rows[0][0] or ""))
        received = GtidSet.parse(str(rows[0][1] or "")) if rows and rows[0][1] else GtidSet()
        return executed | received

    def wait_state(self, want: str, timeout: float, *, size: int | None = None) -> GRStatus:
        """Until this member is in state `want` (ONLINE) in a view of at least `size` members."""
        deadline = self.clock.now() + timeout
        last: GRStatus | None = None
        while self.clock.now() < deadline:
            if not self.alive():
                raise ComponentError(
                    f"mysqld of {self.name} exited; see {self.cfg.error_log}: {self.error_log_tail(3)}"
                )
            last = self.status()
            if last is not None and last.state == want and (size is None or last.size >= size):
                return last
            self.clock.sleep(0.05)
        seen = f"state {last.state}, {last.size} members" if last else "not answering"
        raise ComponentError(
            f"{self.name} not {want} after {timeout:g} s ({seen}); "
            f"see {self.cfg.error_log}: {self.error_log_tail(3)}"
        )
