"""A MySQL Group Replication member as a real process on a host.

mysqld runs chrooted into the MySQL root file system (rootfs.py). Its node directory on the host
is bind-mounted at NODE_MOUNT inside the rootfs, in a mount namespace of the member's own
(`unshare --mount --propagation private`), so the mount goes away with the process and no two
members (or clusters) ever see each other's files. Every step execs the next (unshare, sh,
chroot, mysqld), so the PID we record is mysqld's own.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import pymysql
import pymysql.cursors

from clusterbench.clock import Clock
from clusterbench.engines import fakeclock
from clusterbench.engines.base import Credentials, NodeHealth, SessionSql
from clusterbench.engines.group_replication import remote
from clusterbench.engines.group_replication.config import (
    MemberConfig,
    render_client_cnf,
    render_healthcheck,
    render_my_cnf,
    start_sql,
)
from clusterbench.engines.group_replication.rootfs import MYSQLD, NODE_MOUNT, rootfs_provenance
from clusterbench.engines.group_replication.status import GRStatus, GtidSet, parse_status
from clusterbench.engines.server import ServerNode, sql_quote
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import Machine, ProcessRef

# A join that cannot reach the group waits ~120 s inside START GROUP_REPLICATION before it fails
# (RECIPES §11); we bound it ourselves and quote the error log's reason.
START_GR_TIMEOUT = 60.0

# Monitoring sessions never wait for a new primary's backlog (consistency BEFORE_ON_PRIMARY_FAILOVER
# would hold them); causal reads wait until every transaction committed before them is applied.
GR_SESSION = SessionSql(
    monitor=("SET SESSION group_replication_consistency='EVENTUAL'",),
    causal=("SET SESSION group_replication_consistency='BEFORE'",),
    default=(),
    # Not in the binary log, so never sent to the group (and no GTID: positions stay equal).
    unreplicated=("SET SESSION sql_log_bin=0",),
)

# Levels whose default session promises what the causal one does: BEFORE makes every read wait
# for what the group ordered before it, AFTER makes every write wait until all members applied it.
NO_STALE_LEVELS = frozenset({"BEFORE", "AFTER", "BEFORE_AND_AFTER"})


def gr_session(consistency: str) -> SessionSql:
    """GR's sessions for a group whose default group_replication_consistency is `consistency`
    (the topology's [mysql] consistency): with BEFORE, AFTER or BEFORE_AND_AFTER a stale read in
    the default session breaks a promise instead of being documented."""
    if consistency in NO_STALE_LEVELS:
        return dataclasses.replace(GR_SESSION, documented_default=GR_SESSION.documented_causal)
    return GR_SESSION


# Group Replication's figures for telemetry (engines/base.py METRICS), as status variables: name →
# (neutral name, factor). The Gr_flow_control_* variables exist only while the flow-control
# statistics component is installed (install_metrics_component); its throttle time is in
# microseconds, summed over the sessions that waited.
GR_METRIC_STATUS: dict[str, tuple[str, float]] = {
    "gr_data_messages_sent_bytes_sum": ("replicated_bytes", 1.0),
    "gr_consensus_bytes_received_sum": ("received_bytes", 1.0),
    "gr_flow_control_throttle_time_sum": ("flow_control_paused_s", 1e-6),
}
# ... and from this member's row of performance_schema.replication_group_member_stats: column →
# neutral name.
GR_MEMBER_STATS: dict[str, str] = {
    "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": "recv_queue",
    "COUNT_TRANSACTIONS_IN_QUEUE": "cert_queue",
    "COUNT_CONFLICTS_DETECTED": "cert_failures",
    "COUNT_TRANSACTIONS_LOCAL_PROPOSED": "replicated_trx",
}
# MySQL has no Innodb_history_list_length status variable; InnoDB's metrics table has it (enabled
# by default).
HISTORY_SQL = "SELECT `COUNT` FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'"
MEMBER_STATS_SQL = (
    f"SELECT {', '.join(GR_MEMBER_STATS)} FROM performance_schema.replication_group_member_stats "
    "WHERE MEMBER_ID = @@GLOBAL.server_uuid"
)
FLOW_CONTROL_COMPONENT = "file://component_group_replication_flow_control_stats"


def member_metrics(
    stats_row: tuple[Any, ...] | None, history_row: tuple[Any, ...] | None
) -> dict[str, float]:
    """The neutral figures from this member's stats row (columns in GR_MEMBER_STATS's order) and
    the history length row; a member outside any group has no stats row and gives none of them."""
    out: dict[str, float] = {}
    if stats_row is not None:
        for name, value in zip(GR_MEMBER_STATS.values(), stats_row, strict=False):
            if value is not None:
                out[name] = float(value)
    if history_row is not None and history_row[0] is not None:
        out["history_length"] = float(history_row[0])
    return out


# Mount the node directory at NODE_MOUNT in a private mount namespace, then chroot and exec.
# Recursively (--rbind): a datadir on a file system of its own ([[node]] datadir_size, a tmpfs
# mounted at <node dir>/data) must come along, or mysqld sees the empty directory under it.
_CHROOT_SH = 'd=$1; r=$2; shift 2; mount --rbind "$d" "$r{mount}" && exec chroot "$r" "$@"'


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


def view_counter(view_id: str) -> int:
    """'17324612345678901:7' -> 7 (the view's sequence within the group's incarnation)."""
    try:
        return int(view_id.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        return -1


def health_of(st: GRStatus, single_primary: bool) -> NodeHealth:
    ready = st.online and st.has_quorum
    writable = ready and not st.super_read_only and (st.role == "PRIMARY" or not single_primary)
    return NodeHealth(
        state=st.state,
        in_quorum=st.has_quorum,
        ready=ready,
        writable=writable,
        size=st.size,
        group_id=f"{st.group_name}:{st.view_id.rsplit(':', 1)[0]}" if st.view_id else st.group_name,
        view_seq=view_counter(st.view_id),
        position=str(st.gtid_executed),
        progress=st.gtid_executed.count(),
        role=st.role if single_primary else "",
        members=",".join(m.host for m in st.members if m.state == "ONLINE"),
        flow_control=0.0,
    )


class GRNode(ServerNode[MemberConfig]):
    session = GR_SESSION
    metric_status = GR_METRIC_STATUS
    # A clone ends with mysqld restarting itself (RESTART): it needs a supervisor to start it again.
    supervised = True

    def __init__(
        self,
        cfg: MemberConfig,
        host: Machine,
        rootfs: Path,
        owner: tuple[int, int],
        creds: Credentials,
        proc: ProcessRef | None = None,
        check_proc: ProcessRef | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(cfg, host, creds, proc=proc, check_proc=check_proc, clock=clock)
        self.session = gr_session(cfg.settings.consistency)
        self.rootfs = rootfs
        self.owner = owner  # uid, gid of the rootfs's mysql user

    @property
    def health_script(self) -> Path:
        return self.cfg.health_script

    # --- files ---

    def _chown(self, *paths: Path) -> None:
        uid, gid = self.owner
        self.host.run(["chown", f"{uid}:{gid}", *map(str, paths)])

    @property
    def clock_file_inside(self) -> Path:
        return NODE_MOUNT / fakeclock.CLOCK_FILE

    def write_files(self) -> None:
        for sub in self.cfg.subdirs:
            self.host.mkdir(sub, mode=0o755 if sub == self.cfg.dir else 0o750)
        self._chown(*self.cfg.subdirs)
        if self.fake_clock and self.rootfs != Path("/"):  # the host's libfaketime, inside the rootfs too
            inside = self.rootfs / fakeclock.LIBFAKETIME.relative_to("/")
            self.host.run(["mkdir", "-p", str(inside.parent)])
            self.host.run(["cp", "-f", str(fakeclock.LIBFAKETIME), str(inside)])
        self.host.put_file(self.cfg.cnf_path, render_my_cnf(self.cfg), mode=0o644)
        c = self.creds
        self.host.put_file(
            self.cfg.mon_cnf, render_client_cnf(c.mon_user, c.mon_password, self.cfg.socket), mode=0o600
        )
        self.host.put_file(
            self.admin_cnf, render_client_cnf(c.admin_user, c.admin_password, self.cfg.socket), mode=0o600
        )
        self.host.put_file(self.cfg.health_script, render_healthcheck(self.cfg), mode=0o700)

    def mysqld_argv(self, *args: str) -> list[str]:
        # The last option names the node directory on the host: mysqld's own command line then
        # carries it, so leftovers and strays are found by it like every other daemon of ours
        # (the chroot hides the path otherwise). mysqld ignores an unknown loose- option.
        return chroot_argv(
            self.rootfs,
            self.cfg.dir,
            [
                *self.clock_env(),
                MYSQLD,
                f"--defaults-file={self.cfg.cnf_inside}",
                *args,
                f"--loose-clusterbench-dir={self.cfg.dir}/",
            ],
        )

    def initialize(self, statements: list[str]) -> None:
        """`mysqld --initialize-insecure` with the account statements as its init file (no binary
        log then: the accounts carry no GTID, so every copy starts with the same, empty, executed
        set). The init file holds passwords: readable by mysqld only, removed afterwards."""
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
                f"see {self.error_log}: {said}"
            )

    # --- process ---

    def remove_stale_lock(self) -> None:
        """mysqld refuses to start while its socket's lock file names a live PID, and a killed
        mysqld may linger as a zombie here (PID 1 of this kind of machine does not reap orphans):
        "Another process with pid N is using unix socket file". Its process is ours and gone, so
        the lock is stale."""
        if not self.alive():
            for name in ("mysqld.sock.lock", "mysqld.sock", "mysqld.pid"):
                self.host.remove(self.cfg.dir / name)

    def start(self, init_statements: list[str] | None = None) -> ProcessRef:
        """Start mysqld; Group Replication stays off (start_on_boot=OFF) until start_group.
        `init_statements` run once at this start (before clients can connect), not logged: how a
        member seeded from the template gets the cluster's accounts. Call forget_init() once
        mysqld answers (the file holds passwords)."""
        if self.alive():
            assert self.proc is not None
            return self.proc
        self.remove_stale_lock()
        args: list[str] = []
        if init_statements is not None:
            init = self.cfg.dir / "init.sql"
            body = ["SET SQL_LOG_BIN=0;", *init_statements]
            self.host.put_file(init, "\n".join(body) + "\n", mode=0o600)
            self._chown(init)
            args.append(f"--init-file={NODE_MOUNT / 'init.sql'}")
        return self.spawn(self.mysqld_argv(*args))

    def forget_init(self) -> None:
        self.host.remove(self.cfg.dir / "init.sql")

    def seed_from(self, template: Path) -> None:
        """Fill the (empty) datadir with a copy of an initialized one, keeping owners; without its
        auto.cnf, so this member makes a server UUID of its own at its first start."""
        self.host.run(["cp", "-a", f"{template}/.", f"{self.datadir}/"], timeout=120)
        self.host.remove(self.datadir / "auto.cnf")

    def wait_sql(self, timeout: float) -> None:
        """Until mysqld answers SQL on its socket."""
        deadline = self.clock.now() + timeout
        while self.clock.now() < deadline:
            if not self.alive():
                raise ComponentError(
                    f"mysqld of {self.name} exited while starting; "
                    f"see {self.error_log}: {self.error_log_tail(3)}"
                )
            try:
                self.query("SELECT 1", timeout=1.0)
                return
            except pymysql.MySQLError:
                self.clock.sleep(0.05)
        raise ComponentError(f"mysqld of {self.name} did not answer in {timeout:g} s; see {self.error_log}")

    # --- telemetry ---

    def extra_metrics(self, cur: Any) -> dict[str, float]:
        cur.execute(MEMBER_STATS_SQL)
        stats = cur.fetchone()
        cur.execute(HISTORY_SQL)
        return member_metrics(stats, cur.fetchone())

    def install_metrics_component(self) -> bool:
        """Install the flow-control statistics component (Gr_flow_control_* status variables; in
        Community from MySQL 9.7) unlogged, so no member's executed set changes; it is kept in the
        datadir (mysql.component) and loaded at every later start, and a clone copies it. False
        when this server has no such component (telemetry then has no GR flow-control figure)."""
        try:
            with self.connect(5.0) as conn, conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM mysql.component WHERE component_urn = %s",
                            (FLOW_CONTROL_COMPONENT,))  # fmt: skip
                row = cur.fetchone()
                if row and int(row[0]):
                    return True
                cur.execute("SET SESSION sql_log_bin=0")
                cur.execute(f"INSTALL COMPONENT {sql_quote(FLOW_CONTROL_COMPONENT)}")
                return True
        except pymysql.MySQLError:
            return False

    # --- Group Replication ---

    def start_group(self, *, bootstrap: bool, timeout: float = START_GR_TIMEOUT) -> None:
        """START GROUP_REPLICATION (after bootstrap_group=ON for the first member of a new group),
        bounded: a member that cannot reach the group would wait ~120 s inside the statement."""
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
            errors = [ln.strip() for ln in self.error_log_since(offset).splitlines() if "[ERROR]" in ln]
            raise ComponentError(
                f"{self.name}: START GROUP_REPLICATION failed ({exc}); "
                + (errors[-1] if errors else f"see {self.error_log}")
            ) from None

    def stop(self, timeout: float = 60.0) -> str:
        """Graceful stop: super_read_only first, then SIGTERM (SIGKILL after `timeout`).

        mysqld's own SIGTERM path leaves the group about 3 s before it closes the client
        sessions; a session whose COMMIT is then waiting for certification waits for a message that
        can no longer come, and the plugin's stop holds the shutdown until it gives up on them:
        measured 51 s (58 s from SIGTERM to exit) under 4 sysbench writers on the primary, with
        group_replication_components_stop_timeout at 300 s or at 5 s alike. Setting
        super_read_only while the member is still in the group waits for the COMMITs in flight
        (they certify normally) and refuses new writes (1290), so nothing is waiting when the
        member leaves: the same stop took 7.6 s. This is also what STOP GROUP_REPLICATION does
        first, and it makes the health check report the member not writable at once."""
        if self.alive():
            with (
                contextlib.suppress(pymysql.MySQLError, OSError),
                self.connect(2.0, read_timeout=min(timeout, 20)) as conn,
                conn.cursor() as cur,
            ):
                cur.execute("SET GLOBAL super_read_only = ON")
        return super().stop(timeout)

    def leave_group(self, timeout: float = 60.0) -> None:
        with self.connect(read_timeout=timeout) as conn, conn.cursor() as cur:
            cur.execute("STOP GROUP_REPLICATION")

    def online_count(self) -> int:
        """How many members this member's view has ONLINE (0 when it does not answer): the one
        table that answers while a START GROUP_REPLICATION runs here."""
        if not self.alive():
            return 0
        try:
            rows = self.query(
                "SELECT COUNT(*) FROM performance_schema.replication_group_members "
                "WHERE MEMBER_STATE = 'ONLINE'",
                timeout=1.0,
            )
        except pymysql.MySQLError:
            return 0
        return int(rows[0][0]) if rows else 0

    def status(self) -> GRStatus | None:
        """This member's view of its group, or None when mysqld does not answer."""
        if not self.alive():
            return None
        try:
            with self.monitor_cursor(1.0, cursorclass=pymysql.cursors.DictCursor) as cur:
                cur.execute(
                    "SELECT @@GLOBAL.server_uuid AS u, @@GLOBAL.gtid_executed AS g, "
                    "@@GLOBAL.super_read_only AS ro, @@GLOBAL.group_replication_group_name AS n"
                )
                head: dict[str, Any] = dict(cur.fetchone() or {})
                cur.execute("SELECT * FROM performance_schema.replication_group_members")
                members: list[dict[str, Any]] = list(cur.fetchall())
                cur.execute("SELECT * FROM performance_schema.replication_group_member_stats")
                stats: list[dict[str, Any]] = list(cur.fetchall())
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

    def health(self) -> NodeHealth | None:
        st = self.status()
        return None if st is None else health_of(st, self.cfg.single_primary)

    def engine_status(self) -> dict[str, str]:
        st = self.status()
        if st is None:
            return {}
        out = {
            "member_state": st.state,
            "member_role": st.role,
            "view_id": st.view_id,
            "members": ",".join(f"{m.host}={m.state}/{m.role}" for m in st.members),
            "gtid_executed": str(st.gtid_executed),
            "super_read_only": "ON" if st.super_read_only else "OFF",
            "certification_queue": str(st.certification_queue),
            "applier_queue": str(st.applier_queue),
        }
        me = st.me
        if me is not None and me.version:
            out["member_version"] = me.version
        try:
            (row,) = self.query("SELECT @@version, @@version_comment", timeout=1.0)
            out["version"] = f"{row[0]} ({row[1]})"  # e.g. 9.7.4-2 ((Debian)): unstable changes daily
        except (pymysql.MySQLError, ValueError):
            pass
        if self.host.remote:
            out.update(remote.provenance(self.rootfs, self.host.read_file))
        else:
            out.update(rootfs_provenance(self.rootfs))
        return out

    def executed(self) -> GtidSet:
        """Executed GTIDs plus those received into the group applier's relay log and not yet
        applied: both count when choosing who reboots a group."""
        rows = self.query(
            "SELECT @@GLOBAL.gtid_executed, (SELECT RECEIVED_TRANSACTION_SET FROM "
            "performance_schema.replication_connection_status WHERE CHANNEL_NAME='group_replication_applier')"
        )
        executed = GtidSet.parse(str(rows[0][0] or ""))
        return executed | GtidSet.parse(str(rows[0][1] or "")) if rows[0][1] else executed

    def wait_state(self, want: str, timeout: float, *, size: int | None = None) -> GRStatus:
        """Until this member is in state `want` (ONLINE) in a view of at least `size` members."""
        deadline = self.clock.now() + timeout
        last: GRStatus | None = None
        while self.clock.now() < deadline:
            if not self.alive():
                raise ComponentError(
                    f"mysqld of {self.name} exited; see {self.error_log}: {self.error_log_tail(3)}"
                )
            last = self.status()
            if last is not None and last.state == want and (size is None or last.size >= size):
                return last
            self.clock.sleep(0.05)
        seen = f"state {last.state}, {last.size} members" if last else "not answering"
        raise ComponentError(
            f"{self.name} not {want} after {timeout:g} s ({seen}); "
            f"see {self.error_log}: {self.error_log_tail(3)}"
        )

    def join_log_since(self, offset: int) -> str:
        return self.error_log_since(offset)
