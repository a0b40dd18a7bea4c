"""A MariaDB Galera node as a real process on a host."""

from __future__ import annotations

import logging
from collections.abc import Callable

from clusterbench.engines.base import WEB_PRIVILEGES, Credentials, NodeHealth, SessionSql
from clusterbench.engines.galera.config import NodeConfig, render_clustercheck, render_my_cnf
from clusterbench.engines.galera.status import (
    GraState,
    WsrepStatus,
    classify_join,
    parse_donor,
    parse_grastate,
    parse_recovered_position,
    parse_wsrep_status,
    render_grastate,
)
from clusterbench.engines.server import ServerNode, render_client_cnf, sql_quote
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import ProcessRef

log = logging.getLogger(__name__)


def account_sql(c: Credentials, database: str = "sbtest", replace: bool = False) -> list[str]:
    """Statements that create the cluster's accounts; one per line (bootstrap mode needs that).
    `replace`: over accounts of the same names with other passwords (a datadir template's)."""
    out = [f"CREATE DATABASE IF NOT EXISTS {database};"]
    accounts = [
        (c.admin_user, c.admin_password, "ALL PRIVILEGES", " WITH GRANT OPTION"),
        (c.app_user, c.app_password, "ALL PRIVILEGES", ""),
        (c.mon_user, c.mon_password, "USAGE, PROCESS, REPLICATION CLIENT", ""),
    ]
    for host in ("localhost", "%"):
        for user, password, privileges, grant_option in accounts:
            who = f"{sql_quote(user)}@{sql_quote(host)}"
            out += [
                f"CREATE {'OR REPLACE ' if replace else ''}USER {who} IDENTIFIED BY {sql_quote(password)};",
                f"GRANT {privileges} ON *.* TO {who}{grant_option};",
            ]
        if c.web_password:
            who = f"{sql_quote(c.web_user)}@{sql_quote(host)}"
            out += [
                f"CREATE {'OR REPLACE ' if replace else ''}USER {who} "
                f"IDENTIFIED BY {sql_quote(c.web_password)};",
                f"GRANT {WEB_PRIVILEGES} ON {database}.* TO {who};",
            ]
    return out


WSREP_SQL = "SHOW GLOBAL STATUS LIKE 'wsrep_%'"

# wsrep_sync_wait: 0 never waits (monitoring must not block on a node that lost quorum); 1 makes
# a read wait until every write-set the cluster committed before it has been applied here.
# Documented (MariaDB's Galera docs, 2026): a distributed variant of snapshot isolation, so write
# skew (G2-item) is allowed; lost updates (P4) across nodes without SELECT ... FOR UPDATE; stale
# reads with wsrep_sync_wait=0. Within a node, InnoDB's REPEATABLE READ as everywhere (SessionSql).
GALERA_SESSION = SessionSql(
    monitor=("SET SESSION wsrep_sync_wait=0",),
    causal=("SET SESSION wsrep_sync_wait=1",),
    default=("SET SESSION wsrep_sync_wait=0",),
    unreplicated=("SET SESSION wsrep_on=OFF",),
)


def health_of(st: WsrepStatus) -> NodeHealth:
    """A Galera node's wsrep status in the engine-neutral words of NodeHealth (pure)."""
    return NodeHealth(
        state=st.state_comment or str(st.state),
        in_quorum=st.primary,
        ready=st.synced,
        writable=st.synced,
        size=st.cluster_size,
        group_id=st.cluster_state_uuid,
        view_seq=st.cluster_conf_id,
        position=str(st.last_committed),
        progress=st.last_committed,
        role="",
        members=st.incoming_addresses,
        flow_control=st.flow_control_paused,
    )


# Galera's figures for telemetry (engines/base.py METRICS): wsrep status → (neutral name, factor).
GALERA_METRIC_STATUS: dict[str, tuple[str, float]] = {
    # a counter of nanoseconds (wsrep_flow_control_paused is a fraction since the last FLUSH STATUS,
    # which another session's FLUSH would reset)
    "wsrep_flow_control_paused_ns": ("flow_control_paused_s", 1e-9),
    "wsrep_flow_control_sent": ("flow_control_sent", 1.0),
    "wsrep_local_recv_queue": ("recv_queue", 1.0),
    "wsrep_local_send_queue": ("send_queue", 1.0),
    "wsrep_local_cert_failures": ("cert_failures", 1.0),
    "wsrep_replicated_bytes": ("replicated_bytes", 1.0),
    "wsrep_received_bytes": ("received_bytes", 1.0),
    "wsrep_replicated": ("replicated_trx", 1.0),
}


class GaleraNode(ServerNode[NodeConfig]):
    session = GALERA_SESSION
    metric_status = GALERA_METRIC_STATUS

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
        self.host.put_file(self.cfg.health_script, render_clustercheck(self.cfg), mode=0o700)

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
        Bootstrap mode skips the grant tables; FLUSH PRIVILEGES loads them so CREATE USER works.
        When it fails, the error says why from the server's error log (its stderr holds only what
        came before the log opened: a warning about open files, not "unknown variable")."""
        offset = self.error_log_size()
        try:
            self.host.run(
                ["mariadbd", f"--defaults-file={self.cfg.cnf_path}", "--bootstrap", "--wsrep-on=OFF"],
                input="FLUSH PRIVILEGES;\n" + "\n".join(statements) + "\n",
                timeout=120,
            )
        except ComponentError as exc:
            errors = [ln.strip() for ln in self.error_log_since(offset).splitlines() if "[ERROR]" in ln]
            why = " | ".join(errors[-3:]) if errors else str(exc)
            raise ComponentError(
                f"node {self.name}: mariadbd in bootstrap mode (its datadir prepared offline) failed; "
                f"errors from {self.error_log}: {why}"
            ) from exc

    def server_version(self) -> str:
        return self.host.run(["mariadbd", "--version"], timeout=30).stdout.strip()

    def grastate(self) -> GraState | None:
        text = self.host.read_file(self.cfg.datadir / "grastate.dat")
        return parse_grastate(text) if text else None

    def set_grastate(self, g: GraState) -> None:
        self.host.put_file(self.cfg.datadir / "grastate.dat", render_grastate(g), mode=0o660, owner="mysql")

    # --- process ---

    def start(
        self, *, bootstrap: bool = False, start_position: str | None = None, donor: str | None = None
    ) -> ProcessRef:
        if self.alive():
            assert self.proc is not None
            return self.proc
        argv = [*self.clock_env(), "mariadbd", f"--defaults-file={self.cfg.cnf_path}"]
        if bootstrap:
            argv.append("--wsrep-new-cluster")
        if start_position:
            argv.append(f"--wsrep-start-position={start_position}")
        if donor:
            argv.append(f"--wsrep-sst-donor={donor}")
        return self.spawn(argv)

    def recover_position(self) -> str | None:
        """After a crash, read the last committed position from InnoDB so the restart gets IST
        instead of a full SST (RECIPES §2, G3)."""
        rlog = self.cfg.dir / "recover.log"
        self.host.remove(rlog)
        self.stop_strays()
        self.host.run(
            ["mariadbd", f"--defaults-file={self.cfg.cnf_path}", "--wsrep-recover", f"--log-error={rlog}"],
            timeout=120,
            check=False,
        )
        return parse_recovered_position(self.host.read_file(rlog) or "")

    # --- status ---

    def status(self) -> WsrepStatus | None:
        """wsrep status, or None when the node does not answer."""
        rows = self.monitor_rows(WSREP_SQL)
        return None if rows is None else parse_wsrep_status(rows)

    def health(self) -> NodeHealth | None:
        st = self.status()
        return None if st is None else health_of(st)

    def engine_status(self) -> dict[str, str]:
        """Every wsrep status variable (for provenance); {} when the node does not answer."""
        return dict(self.monitor_rows(WSREP_SQL, timeout=2.0) or [])

    def desync(self, on: bool) -> None:
        self.query(f"SET GLOBAL wsrep_desync={'ON' if on else 'OFF'}")

    def desynced(self) -> bool:
        rows = self.query("SHOW GLOBAL VARIABLES LIKE 'wsrep_desync'", timeout=1.0)
        return bool(rows) and str(rows[0][1]).upper() == "ON"

    def wait_synced(
        self, timeout: float, expect_size: int | None = None, give_up: Callable[[], str | None] | None = None
    ) -> NodeHealth:
        return self.wait_ready(timeout, expect_size, give_up)

    def wait_in_view(self, size: int, timeout: float, joiner: GaleraNode | None = None) -> None:
        """Wait until this node sees a Primary view of at least `size` members; fail at once if
        the `joiner` we wait for has died."""
        deadline = self.clock.now() + timeout
        while self.clock.now() < deadline:
            if joiner is not None and not joiner.alive():
                raise ComponentError(
                    f"node {joiner.name} exited while joining; errors from {joiner.error_log} since its "
                    f"start: {joiner.error_log_tail()}"
                )
            st = self.status()
            if st is not None and st.primary and st.cluster_size >= size:
                return
            self.clock.sleep(0.05)
        raise ComponentError(f"node {self.name} did not see {size} members in {timeout:g} s")

    def join_kind_since(self, offset: int) -> str:
        return classify_join(self.error_log_since(offset))

    def donor_since(self, offset: int) -> str | None:
        """The node name Galera chose as this joiner's state-transfer donor, from the log."""
        return parse_donor(self.error_log_since(offset))
