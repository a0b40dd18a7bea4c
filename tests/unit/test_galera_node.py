"""engines/galera/node.py with a FakeHost (records argv, holds files) and a FakeClock (no sleeps)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clusterbench.engines import server as server_mod
from clusterbench.engines.galera.config import NodeConfig
from clusterbench.engines.galera.node import Credentials, GaleraNode, account_sql, health_of
from clusterbench.engines.galera.status import GraState, WsrepStatus, render_grastate
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import ProcessRef
from clusterbench.hosts.procs import LIST_PROCS
from clusterbench.spec.topology import MariaDBSettings
from tests.unit.fakes import FakeClock, FakeHost

DATA = Path(__file__).parent / "data"
UUID = "3664e239-e640-11f1-8093-aa394a74bc52"
CREDS = Credentials("cbadmin", "adm-pw", "bench", "app-pw", "cbmon", "mon-pw")


class ScriptedNode(GaleraNode):
    """A node whose `status()` answers from `script` when one is set (instead of connecting)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.script: Callable[[], WsrepStatus | None] | None = None

    def status(self) -> WsrepStatus | None:
        return self.script() if self.script is not None else super().status()


def make(
    tmp_path: Path, *, die_on: tuple[int, ...] = (signal.SIGKILL,)
) -> tuple[ScriptedNode, FakeHost, FakeClock]:
    cfg = NodeConfig(
        cluster_name="lab",
        index=2,
        address="198.18.0.12",
        peers=("198.18.0.11", "198.18.0.12", "198.18.0.13"),
        dir=tmp_path / "n2",
        settings=MariaDBSettings(),
    )
    host = FakeHost("cb-lab-n2", die_on=die_on)
    clock = FakeClock()
    return ScriptedNode(cfg, host, CREDS, clock=clock), host, clock


def running(n: GaleraNode, host: FakeHost) -> ProcessRef:
    proc = ProcessRef(5555, 123456)
    host.live.add(proc.pid)
    n.proc = proc
    return proc


def wsrep(
    state: int, comment: str, size: int = 3, status: str = "Primary", ready: bool = True
) -> WsrepStatus:
    return WsrepStatus(state, comment, size, status, ready, True, 10, 0.0, UUID, 9)


# ---------------------------------------------------------------- accounts


def test_account_sql_golden() -> None:
    assert account_sql(CREDS) == [
        "CREATE DATABASE IF NOT EXISTS sbtest;",
        "CREATE USER 'cbadmin'@'localhost' IDENTIFIED BY 'adm-pw';",
        "GRANT ALL PRIVILEGES ON *.* TO 'cbadmin'@'localhost' WITH GRANT OPTION;",
        "CREATE USER 'bench'@'localhost' IDENTIFIED BY 'app-pw';",
        "GRANT ALL PRIVILEGES ON *.* TO 'bench'@'localhost';",
        "CREATE USER 'cbmon'@'localhost' IDENTIFIED BY 'mon-pw';",
        "GRANT USAGE, PROCESS, REPLICATION CLIENT ON *.* TO 'cbmon'@'localhost';",
        "CREATE USER 'cbadmin'@'%' IDENTIFIED BY 'adm-pw';",
        "GRANT ALL PRIVILEGES ON *.* TO 'cbadmin'@'%' WITH GRANT OPTION;",
        "CREATE USER 'bench'@'%' IDENTIFIED BY 'app-pw';",
        "GRANT ALL PRIVILEGES ON *.* TO 'bench'@'%';",
        "CREATE USER 'cbmon'@'%' IDENTIFIED BY 'mon-pw';",
        "GRANT USAGE, PROCESS, REPLICATION CLIENT ON *.* TO 'cbmon'@'%';",
    ]


def test_account_sql_quotes_quote_and_backslash() -> None:
    c = Credentials("adm", "it's\\here", "o'brien", "x", "m", "y")
    sql = account_sql(c, database="bench")
    assert sql[0] == "CREATE DATABASE IF NOT EXISTS bench;"
    assert sql[1] == "CREATE USER 'adm'@'localhost' IDENTIFIED BY 'it''s\\\\here';"
    assert sql[3] == "CREATE USER 'o''brien'@'localhost' IDENTIFIED BY 'x';"
    assert sql[4] == "GRANT ALL PRIVILEGES ON *.* TO 'o''brien'@'localhost';"
    assert all("\n" not in s for s in sql)  # bootstrap mode reads one statement per line


def test_credentials_round_trip() -> None:
    assert Credentials.from_json(CREDS.to_json()) == CREDS
    assert CREDS.to_json() == {
        "admin_user": "cbadmin",
        "admin_password": "adm-pw",
        "app_user": "bench",
        "app_password": "app-pw",
        "mon_user": "cbmon",
        "mon_password": "mon-pw",
        "repl_user": "cbrepl",
        "repl_password": "",
        "web_user": "cbweb",
        "web_password": "",
    }
    # Secrets written before the recovery and web accounts existed still load.
    old = {k: v for k, v in CREDS.to_json().items() if not k.startswith(("repl_", "web_"))}
    assert Credentials.from_json(old) == CREDS


def test_account_sql_web_account_reads_and_inserts_in_the_schema_only() -> None:
    c = Credentials("cbadmin", "adm-pw", "bench", "app-pw", "cbmon", "mon-pw", web_password="web-pw")
    sql = account_sql(c)
    web = [s for s in sql if "cbweb" in s]
    assert web == [
        "CREATE USER 'cbweb'@'localhost' IDENTIFIED BY 'web-pw';",
        "GRANT SELECT, INSERT ON sbtest.* TO 'cbweb'@'localhost';",
        "CREATE USER 'cbweb'@'%' IDENTIFIED BY 'web-pw';",
        "GRANT SELECT, INSERT ON sbtest.* TO 'cbweb'@'%';",
    ]
    # secrets without a web password (a cluster made before the web tier): no such account
    assert not [s for s in account_sql(CREDS) if "cbweb" in s]
    # over a datadir template's accounts (another cluster's passwords): replaced
    assert [s for s in account_sql(c, replace=True) if "cbweb" in s][0] == (
        "CREATE OR REPLACE USER 'cbweb'@'localhost' IDENTIFIED BY 'web-pw';")  # fmt: skip


# ---------------------------------------------------------------- start


def test_start_plain(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    proc = n.start()
    assert [s.argv for s in host.spawned] == [["mariadbd", f"--defaults-file={tmp_path}/n2/my.cnf"]]
    assert host.spawned[0].log == tmp_path / "n2" / "stdout.log"
    assert n.proc == proc
    assert n.alive() is True


def test_start_bootstrap(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    n.start(bootstrap=True)
    assert host.spawned[0].argv == [
        "mariadbd",
        f"--defaults-file={tmp_path}/n2/my.cnf",
        "--wsrep-new-cluster",
    ]


def test_start_at_position(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    n.start(start_position=f"{UUID}:4")
    assert host.spawned[0].argv == [
        "mariadbd",
        f"--defaults-file={tmp_path}/n2/my.cnf",
        f"--wsrep-start-position={UUID}:4",
    ]


def test_start_when_running_does_nothing(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    proc = running(n, host)
    assert n.start(bootstrap=True) == proc
    assert host.spawned == []


# ---------------------------------------------------------------- stop / kill / pause


def test_stop_sigterm_obeyed(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)
    proc = running(n, host)
    clock.at(clock.now() + 3, lambda: host.live.discard(proc.pid))  # shuts down after 3 s
    assert n.stop(timeout=60) == "stopped"
    # SIGCONT first: a paused (SIGSTOPped) node would not act on SIGTERM.
    assert host.signal_numbers() == [signal.SIGCONT, signal.SIGTERM]
    assert 3 <= clock.elapsed < 3.1


def test_stop_sigkill_after_timeout(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)  # ignores SIGTERM, dies on SIGKILL
    running(n, host)
    assert n.stop(timeout=60) == "killed after timeout"
    assert host.signal_numbers() == [signal.SIGCONT, signal.SIGTERM, signal.SIGKILL]
    assert 60 <= clock.elapsed < 60.1
    assert n.alive() is False


def test_stop_not_running(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)
    assert n.stop() == "not running"
    n.proc = ProcessRef(1, 1)  # recorded but dead
    assert n.stop() == "not running"
    assert host.signals == []
    assert clock.elapsed == 0


def test_kill(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    running(n, host)
    assert n.kill() == "killed"
    assert host.signal_numbers() == [signal.SIGKILL]
    assert n.kill() == "not running"


def test_pause_and_resume(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    running(n, host)
    n.pause()
    n.resume()
    assert host.signal_numbers() == [signal.SIGSTOP, signal.SIGCONT]


# ---------------------------------------------------------------- one-shot commands


def test_install_db_argv(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    n.install_db()
    assert host.runs == [
        [
            "mariadb-install-db",
            f"--defaults-file={tmp_path}/n2/my.cnf",
            "--user=mysql",
            "--skip-test-db",
            "--auth-root-authentication-method=socket",
        ]
    ]


def test_bootstrap_sql_argv_and_input(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    n.run_bootstrap_sql(["CREATE DATABASE a;", "CREATE DATABASE b;"])
    assert host.runs == [
        ["mariadbd", f"--defaults-file={tmp_path}/n2/my.cnf", "--bootstrap", "--wsrep-on=OFF"]
    ]
    assert host.inputs == ["FLUSH PRIVILEGES;\nCREATE DATABASE a;\nCREATE DATABASE b;\n"]


def test_a_failed_bootstrap_names_the_error_log_errors_not_the_stderr_warning(tmp_path: Path) -> None:
    """An unknown option in a node's settings, met when its datadir is prepared offline (from a
    template): mariadbd's stderr holds only a warning from before its log opened; the error says
    what the log says (seen in CI: "failed (exit 7): [Warning] Could not increase ... open_files")."""
    n, host, _ = make(tmp_path)
    warning = "2026-11-29 10:12:22 0 [Warning] Could not increase number of max_open_files to more than 20000"

    def fail(argv: list[str]) -> Any:
        host.files[n.error_log] = (
            "2026-11-29 10:12:22 0 [Note] Starting MariaDB as process 77\n"
            "2026-11-29 10:12:22 0 [ERROR] mariadbd: unknown variable 'no_such_option=1'\n"
            "2026-11-29 10:12:22 0 [ERROR] Aborting\n"
        )
        raise ComponentError(f"[cb-lab-n2] `mariadbd ...` failed (exit 7): {warning}")

    host.responder = fail
    with pytest.raises(ComponentError) as caught:
        n.run_bootstrap_sql(["CREATE DATABASE a;"])
    msg = str(caught.value)
    assert msg.startswith("node n2: mariadbd in bootstrap mode (its datadir prepared offline) failed; ")
    assert "[ERROR] mariadbd: unknown variable 'no_such_option=1' | " in msg
    assert msg.endswith("[ERROR] Aborting")
    assert "max_open_files" not in msg and "[Note]" not in msg


def test_recover_position_from_real_log(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    rlog = tmp_path / "n2" / "recover.log"
    host.files[rlog] = (DATA / "wsrep_recover.log").read_text()
    assert n.recover_position() == f"{UUID}:4"
    # An earlier process's helpers (an SST script) are looked for first: recovery must not run beside them.
    assert host.runs == [
        ["sh", "-c", LIST_PROCS],
        ["mariadbd", f"--defaults-file={tmp_path}/n2/my.cnf", "--wsrep-recover", f"--log-error={rlog}"],
    ]


def test_recover_position_none(tmp_path: Path) -> None:
    n, _, _ = make(tmp_path)
    assert n.recover_position() is None


def test_grastate_read_and_write(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    assert n.grastate() is None
    g = GraState(UUID, 6, True)
    n.set_grastate(g)
    path = tmp_path / "n2" / "data" / "grastate.dat"
    assert host.files[path] == render_grastate(g)
    assert host.modes[path] == 0o660
    assert n.grastate() == g


def test_clustercheck_agent_argv(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    n.start_health_agent()
    assert host.spawned[0].argv == [
        "socat",
        "TCP-LISTEN:9200,bind=198.18.0.12,fork,reuseaddr",
        f"EXEC:{tmp_path}/n2/clustercheck.sh",
    ]
    assert host.spawned[0].log == tmp_path / "n2" / "clustercheck.log"
    n.start_health_agent()
    assert len(host.spawned) == 1  # already running
    n.stop_health_agent()
    assert host.signal_numbers() == [signal.SIGTERM]


def test_admin_cnf(tmp_path: Path) -> None:
    n, _, _ = make(tmp_path)
    assert n.admin_cnf == tmp_path / "n2" / "admin.cnf"
    assert (
        n.admin_cnf_text() == f'[client]\nuser=cbadmin\npassword="adm-pw"\nsocket={tmp_path}/n2/mysqld.sock\n'
    )


# ---------------------------------------------------------------- error log and joins

SST_FAILURE_LOG = """\
2026-11-22  6:50:01 0 [Note] WSREP: Running: 'wsrep_sst_rsync --role 'joiner' --address '198.18.0.12:4444'
WSREP_SST: [INFO] rsync SST started on joiner (20261122 06:50:01.100)
WSREP_SST: [ERROR] rsync daemon port '4444' has been taken (20261122 06:50:31.200)
2026-11-22  6:50:31 0 [ERROR] WSREP: Failed to read 'ready <addr>' from: wsrep_sst_rsync --role 'joiner'
2026-11-22  6:50:31 0 [ERROR] WSREP: SST failed: 1 (Operation not permitted)
2026-11-22  6:50:31 0 [Note] WSREP: Closing send monitor...
"""


def test_error_log_tail_prefers_error_lines(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    host.files[n.cfg.error_log] = SST_FAILURE_LOG
    assert n.error_log_tail() == (
        "WSREP_SST: [ERROR] rsync daemon port '4444' has been taken (20261122 06:50:31.200) | "
        "2026-11-22  6:50:31 0 [ERROR] WSREP: Failed to read 'ready <addr>' from: "
        "wsrep_sst_rsync --role 'joiner' | "
        "2026-11-22  6:50:31 0 [ERROR] WSREP: SST failed: 1 (Operation not permitted)"
    )
    assert (
        n.error_log_tail(1) == "2026-11-22  6:50:31 0 [ERROR] WSREP: SST failed: 1 (Operation not permitted)"
    )


def test_error_log_tail_without_errors_gives_last_lines(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    host.files[n.cfg.error_log] = "a\nb\nc\nd\n"
    assert n.error_log_tail(2) == "c | d"
    host.files.clear()
    assert n.error_log_tail() == ""


def test_error_log_since(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    host.files[n.cfg.error_log] = "old line\nnew line\n"
    assert n.error_log_since(9) == "new line\n"
    assert n.error_log_since(10_000) == "old line\nnew line\n"  # rotated/truncated: whole log
    assert n.error_log_size() == 0  # the real file does not exist


def test_join_kind_since_on_real_logs(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    ist = (DATA / "join_ist.log").read_text()
    sst = (DATA / "join_sst.log").read_text()
    host.files[n.cfg.error_log] = ist + sst
    assert n.join_kind_since(0) == "SST"
    assert n.join_kind_since(len(ist)) == "SST"
    host.files[n.cfg.error_log] = sst + ist
    assert n.join_kind_since(len(sst)) == "IST"


# ---------------------------------------------------------------- waiting


def test_wait_synced_raises_with_error_tail_when_process_dies(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)
    proc = running(n, host)
    host.files[n.cfg.error_log] = SST_FAILURE_LOG
    states = iter([wsrep(1, "Joining"), wsrep(1, "Joining")])
    n.script = lambda: next(states, None)
    clock.at(clock.now() + 0.1, lambda: host.live.discard(proc.pid))
    with pytest.raises(ComponentError) as info:
        n.wait_synced(180)
    assert str(info.value) == (
        f"node n2 exited while joining; errors from {tmp_path}/n2/error.log since its start: "
        "WSREP_SST: [ERROR] rsync daemon port '4444' has been taken (20261122 06:50:31.200) | "
        "2026-11-22  6:50:31 0 [ERROR] WSREP: Failed to read 'ready <addr>' from: "
        "wsrep_sst_rsync --role 'joiner' | "
        "2026-11-22  6:50:31 0 [ERROR] WSREP: SST failed: 1 (Operation not permitted)"
    )
    assert clock.elapsed < 1


def test_wait_synced_dead_from_the_start(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)
    n.proc = ProcessRef(5555, 1)  # recorded, not alive
    host.files[n.cfg.error_log] = "2026-11-22  6:50:31 0 [ERROR] Aborting\n"
    with pytest.raises(
        ComponentError, match=r"^node n2 exited while joining; .*: 2026-11-22  6:50:31 0 \[ERROR\] Aborting$"
    ):
        n.wait_synced(60)
    assert clock.sleeps == []


def test_wait_synced_returns_synced_status(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)
    running(n, host)
    seq = iter(
        [None, wsrep(1, "Joining"), wsrep(2, "Joined"), wsrep(4, "Synced", size=2), wsrep(4, "Synced")]
    )
    n.script = lambda: next(seq)
    assert n.wait_synced(60, expect_size=3) == health_of(wsrep(4, "Synced"))
    assert clock.sleeps == [0.05] * 4


def test_wait_synced_timeout_names_state(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)
    running(n, host)
    host.files[n.cfg.error_log] = "one\ntwo\nthree\nfour\n"
    n.script = lambda: wsrep(2, "Donor/Desynced")
    with pytest.raises(ComponentError) as info:
        n.wait_synced(5)
    assert str(info.value) == (
        f"node n2 not ready after 5 s (state Donor/Desynced, 3 members); see {tmp_path}/n2/error.log: "
        "two | three | four"
    )
    assert 5 <= clock.elapsed < 5.1


def test_wait_synced_timeout_not_answering(tmp_path: Path) -> None:
    n, host, _ = make(tmp_path)
    running(n, host)
    n.script = lambda: None
    with pytest.raises(ComponentError, match=r"^node n2 not ready after 2\.5 s \(not answering\); see "):
        n.wait_synced(2.5)


def test_wait_in_view(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)
    running(n, host)
    seq = iter(
        [
            wsrep(4, "Synced", size=1),
            wsrep(4, "Synced", size=2, status="non-Primary"),
            wsrep(4, "Synced", size=2),
        ]
    )
    n.script = lambda: next(seq)
    n.wait_in_view(2, 10)
    assert clock.sleeps == [0.05, 0.05]
    n.script = lambda: wsrep(4, "Synced", size=1)
    with pytest.raises(ComponentError) as info:
        n.wait_in_view(3, 10)
    assert str(info.value) == "node n2 did not see 3 members in 10 s"


def test_status_is_none_when_not_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n, _, _ = make(tmp_path)

    def no_connect(*a: object, **kw: object) -> None:
        raise AssertionError("must not connect to a node that is not running")

    monkeypatch.setattr(server_mod.pymysql, "connect", no_connect)
    assert n.status() is None


class _Cursor:
    def __init__(self, log: list[str], rows: list[tuple[str, str]]) -> None:
        self.log = log
        self.rows = rows

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *a: object) -> None:
        pass

    def execute(self, sql: str) -> None:
        self.log.append(sql)

    def fetchall(self) -> list[tuple[str, str]]:
        return self.rows


class _Conn:
    def __init__(self, log: list[str], rows: list[tuple[str, str]]) -> None:
        self.log = log
        self.rows = rows
        self.closed = False

    def cursor(self) -> _Cursor:
        return _Cursor(self.log, self.rows)

    def close(self) -> None:
        self.closed = True


def test_status_reads_show_status_without_blocking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n, host, _ = make(tmp_path)
    running(n, host)
    rows = [
        tuple(line.split("\t", 1)) for line in (DATA / "wsrep_status_synced.tsv").read_text().splitlines()
    ]
    log: list[str] = []
    conns: list[_Conn] = []
    kwargs: list[dict[str, object]] = []

    def connect(**kw: object) -> _Conn:
        kwargs.append(kw)
        conns.append(_Conn(log, rows))  # type: ignore[arg-type]
        return conns[-1]

    monkeypatch.setattr(server_mod.pymysql, "connect", connect)
    st = n.status()
    assert st is not None and st.synced and st.cluster_size == 3
    assert log == ["SET SESSION wsrep_sync_wait=0", "SHOW GLOBAL STATUS LIKE 'wsrep_%'"]
    assert conns[0].closed is True
    assert kwargs[0]["unix_socket"] == f"{tmp_path}/n2/mysqld.sock"
    assert (kwargs[0]["user"], kwargs[0]["password"], kwargs[0]["connect_timeout"]) == (
        "cbadmin",
        "adm-pw",
        1.0,
    )


def test_status_access_denied_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n, host, _ = make(tmp_path)
    running(n, host)

    def denied(**kw: object) -> None:
        raise server_mod.pymysql.err.OperationalError(1045, "Access denied for user 'cbadmin'@'localhost'")

    monkeypatch.setattr(server_mod.pymysql, "connect", denied)
    with pytest.raises(ComponentError) as info:
        n.status()
    assert str(info.value) == (
        "node n2 refuses the admin account (Access denied for user 'cbadmin'@'localhost'); the cluster's "
        "credentials do not match its data: recreate it with `clusterbench down` and `clusterbench up`"
    )


def test_status_connection_refused_is_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n, host, _ = make(tmp_path)
    running(n, host)

    def refused(**kw: object) -> None:
        raise server_mod.pymysql.err.OperationalError(2002, "Can't connect to local server through socket")

    monkeypatch.setattr(server_mod.pymysql, "connect", refused)
    assert n.status() is None


# ---------------------------------------------------------------- issue 15: strays and this start's log


def test_start_stops_strays_of_an_earlier_process_first(tmp_path: Path) -> None:
    """A killed donor's SST script (reparented to PID 1, naming the node's directory) would block
    the next start with 'previous SST script still running': it is stopped before mariadbd starts;
    the health agent we track, and processes of other nodes, are not touched."""
    n, host, _ = make(tmp_path)
    n.check_proc = ProcessRef(700, 7000)
    host.live |= {700, 701, 800, 900}
    d = f"{tmp_path}/n2"

    def stat(pid: int) -> str:
        return f"{pid} (x) S " + " ".join(["0"] * 18) + f" {pid * 10} 0"

    listing = "\n".join(
        [
            f"700\t1\t{stat(700)}\tsocat TCP-LISTEN:9200 EXEC:{d}/clustercheck.sh",
            f"701\t700\t{stat(701)}\tsh {d}/clustercheck.sh",
            f"800\t1\t{stat(800)}\tbash /usr/bin/wsrep_sst_rsync --role donor --datadir {d}/data/",
            f"900\t1\t{stat(900)}\tbash /usr/bin/wsrep_sst_rsync --role donor --datadir {d}0/data/",
        ]
    )
    host.responses[("sh", "-c", LIST_PROCS)] = listing
    host.die_on = (signal.SIGTERM, signal.SIGKILL)
    n.start()
    assert [(s.proc.pid, s.sig) for s in host.signals] == [(800, signal.SIGCONT), (800, signal.SIGTERM)]
    assert host.signals[0].proc == ProcessRef(800, 8000)  # by PID and start time
    assert host.spawned[-1].argv[0] == "mariadbd"


def test_failure_quotes_only_errors_of_this_start(tmp_path: Path) -> None:
    n, host, clock = make(tmp_path)
    old = "2026-11-20  1:00:00 0 [ERROR] WSREP: an earlier attempt failed\n"
    host.files[n.cfg.error_log] = old
    monkey_size = len(old)
    host.file_size = lambda path: monkey_size  # type: ignore[method-assign]
    proc = n.start()
    host.files[n.cfg.error_log] = old + "2026-11-24  8:00:00 0 [ERROR] Aborting\n"
    host.live.discard(proc.pid)
    with pytest.raises(ComponentError) as info:
        n.wait_synced(10)
    assert str(info.value).endswith("since its start: 2026-11-24  8:00:00 0 [ERROR] Aborting")
    assert "earlier attempt" not in str(info.value)
    assert clock.sleeps == []


def test_this_starts_log_begins_at_the_byte_size_before_it_despite_non_ascii(tmp_path: Path) -> None:
    """The offset is the log's size in bytes before the start (what stat gives): a non-ASCII
    character in an earlier attempt's lines must not shift where this start's lines begin."""
    n, host, _ = make(tmp_path)
    old = "2026-11-20  1:00:00 0 [ERROR] WSREP: donor ‘n1’ (état: Donor/Desynced) failed\n"
    host.file_size = lambda path: len(old.encode())  # type: ignore[method-assign]
    host.files[n.cfg.error_log] = old
    proc = n.start()
    new = "2026-11-24  8:00:00 0 [ERROR] Aborting\n"
    host.files[n.cfg.error_log] = old + new
    assert n.error_log_since(n.log_offset or 0) == new
    host.live.discard(proc.pid)
    with pytest.raises(ComponentError) as info:
        n.wait_synced(10)
    assert str(info.value).endswith("since its start: 2026-11-24  8:00:00 0 [ERROR] Aborting")
    # a log shorter than the offset was replaced: all of it is this start's
    host.files[n.cfg.error_log] = new
    assert n.error_log_since(len(old.encode())) == new
