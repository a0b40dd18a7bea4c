"""The data a trial's load runs on: schemas, the tables its prepare makes, a TPC-C load and its
consistency checks. One copy for every command (run, suite, drills, experiments, search).

`DataSets` remembers what it prepared on its cluster (database, prepare group and the dataset's
shape): a trial whose dataset is already there runs on it, another prepares afresh. A prepare
first drops exactly the tables it is about to make (`expected_tables`), where an earlier run left
them; every other table of the schema stays.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import pymysql  # type: ignore[import-untyped, unused-ignore]

from clusterbench.errors import WorkloadError
from clusterbench.spec.endpoint import Endpoint
from clusterbench.trial.recorder import Recorder
from clusterbench.workloads import SysbenchOptions, SysbenchRunner, tpcc
from clusterbench.workloads.runner import causal_reads
from clusterbench.workloads.slap import SLAP_SCHEMA
from clusterbench.workloads.sysbench import (
    ACCESS_GROUP,
    BULK_GROUP,
    HTTP_GROUP,
    SLAP_GROUP,
    TPCC,
    TPCC_TABLES,
    expected_tables,
    prepare_group,
    prepare_test,
    use_tls,
)
from clusterbench.workloads.tpcc_check import CheckReport, cursor_query
from clusterbench.workloads.tpcc_check import check as tpcc_check

log = logging.getLogger(__name__)

DROP_LOCK_WAIT = 10  # seconds a prepare's CREATE DATABASE / DROP TABLE waits for a metadata lock
ER_LOCK_WAIT_TIMEOUT = 1205

# Sessions of the load's user that sit idle inside an open transaction: clients of an earlier run
# that are gone while their server session lives on (a balancer keeps both sides of a connection
# until `timeout client`, 1 h, when the client's close never reached it, e.g. after the VIP moved
# back from a balancer during a cut-vrrp fault). Their open transactions hold metadata locks.
STALE_SESSIONS_SQL = (
    "SELECT p.ID FROM information_schema.PROCESSLIST p "
    "JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID "
    "WHERE p.USER = %s AND p.COMMAND = 'Sleep' AND p.ID <> CONNECTION_ID()"
)

Connect = Callable[..., Any]


def ddl(cur: Any, sql: str, user: str) -> None:
    """A statement that needs a metadata lock (session lock_wait_timeout set): when the wait runs
    out, KILL the load user's stale sessions once and try again."""
    try:
        cur.execute(sql)
    except pymysql.err.OperationalError as e:
        if e.args[0] != ER_LOCK_WAIT_TIMEOUT or not kill_stale_sessions(cur, user):
            raise
        cur.execute(sql)


def drop_tables(cur: Any, database: str, names: Sequence[str], user: str) -> list[str]:
    """Drop those of `names` that exist in `database` (the tables a prepare is about to make:
    `expected_tables`; every other table stays, a user's or another test's) and return them.
    Each DROP waits at most DROP_LOCK_WAIT for its metadata lock, which an open transaction holds
    for as long as its session lives (MySQL's default wait is a year), and is tried once more
    after the load user's stale sessions are killed."""
    if not names:
        return []
    cur.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND table_name IN ("
        + ",".join(["%s"] * len(names))
        + ")",
        (database, *names),
    )
    found = {str(r[0]) for r in cur.fetchall()}
    there = [n for n in names if n in found]
    cur.execute(f"SET SESSION lock_wait_timeout = {DROP_LOCK_WAIT}")
    for name in there:
        ddl(cur, f"DROP TABLE IF EXISTS `{database}`.`{name}`", user)
    return there


def kill_stale_sessions(cur: Any, user: str) -> list[int]:
    """KILL the load user's sessions that are idle in an open transaction; returns their ids."""
    cur.execute(STALE_SESSIONS_SQL, (user,))
    ids = [int(r[0]) for r in cur.fetchall()]
    for i in ids:
        with contextlib.suppress(pymysql.err.MySQLError):  # gone meanwhile
            cur.execute(f"KILL {i}")
    if ids:
        log.warning("killed %d stale session(s) of %s holding locks: %s", len(ids), user, ids)
    return ids


def admin_connect(connect: Connect, endpoint: Endpoint, connect_timeout: float) -> Any:
    """An autocommit session on the endpoint's first address, for the tool's own statements."""
    addr = endpoint.addresses[0]
    try:
        return connect(
            host=addr.host,
            port=addr.port,
            user=endpoint.user,
            password=endpoint.password,
            connect_timeout=connect_timeout,
            read_timeout=60,
            autocommit=True,
        )
    except pymysql.err.MySQLError as e:
        code, msg = (e.args + (None, None))[:2] if e.args else (None, str(e))
        raise WorkloadError(
            f"cannot connect to {endpoint.user}@{addr.host}:{addr.port}: {msg} (error {code}); "
            "check address, user, password"
        ) from e


def tpcc_size(conn: Any, endpoint: Endpoint, database: str, warehouses: int) -> dict[str, Any]:
    """Data size per warehouse and its ratio to the buffer pool (IO-bound or not), over an open
    connection (closed here); {} when it cannot be read."""
    try:
        with conn.cursor() as cur:
            if endpoint.auto_inc_off:
                causal_reads(cur)
            # fresh statistics (sampled, local to the node): right after a load they lag behind
            names = ", ".join(f"`{database}`.`{t}`" for t in TPCC_TABLES)
            cur.execute(f"ANALYZE NO_WRITE_TO_BINLOG TABLE {names}")
            cur.fetchall()
            cur.execute(
                "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables "
                "WHERE table_schema = %s AND table_name IN (" + ",".join(["%s"] * len(TPCC_TABLES)) + ")",
                (database, *TPCC_TABLES),
            )
            size = int(cur.fetchone()[0] or 0)
            cur.execute("SELECT @@innodb_buffer_pool_size")
            pool = int(cur.fetchone()[0] or 0)
    except pymysql.err.MySQLError as e:
        log.warning("cannot read the TPC-C data size: %s", e)
        return {}
    finally:
        conn.close()
    return {
        "data_bytes": size,
        "bytes_per_warehouse": size // max(1, warehouses),
        "buffer_pool_bytes": pool,
        "data_to_buffer_pool": round(size / pool, 3) if pool else None,
    }


def check_tpcc(conn: Any, endpoint: Endpoint, database: str, when: str) -> CheckReport:
    """The twelve TPC-C consistency conditions on `database` over an open connection (closed here).
    On Galera the session first waits for every write the cluster committed (causal reads)."""
    try:
        with conn.cursor() as cur:
            if endpoint.auto_inc_off:
                causal_reads(cur)
            cur.execute(f"USE `{database}`")
            # Fresh statistics on the node that answers (they are node-local and sampled): right
            # after a load they lag behind, and the conditions' joins then take the wrong plans
            # (measured: 22 s for the check after a 1-warehouse load, 0.8 s after this 0.02 s).
            cur.execute(f"ANALYZE NO_WRITE_TO_BINLOG TABLE {', '.join(f'`{t}`' for t in TPCC_TABLES)}")
            cur.fetchall()
            return tpcc_check(cursor_query(cur), when=when)
    except pymysql.err.MySQLError as e:
        raise WorkloadError(
            f"the TPC-C consistency check on {database} could not run: {e.args[-1] if e.args else e}; "
            "load the tables first (clusterbench run -w tpcc)"
        ) from e
    finally:
        conn.close()


def dataset_key(opts: SysbenchOptions) -> tuple[object, ...] | None:
    """What a prepare makes, as a key: the oltp tables' count and rows, the access table's rows,
    row size and batch, the tpcc scale, () for mysqlslap (nothing); None for bulk_insert, whose
    trial consumes what it prepared (prepared for every trial)."""
    group = prepare_group(opts.test)
    if group == TPCC:
        return (opts.warehouses, opts.customers, opts.items)
    if group == BULK_GROUP:
        return None
    if group == SLAP_GROUP:
        return ()
    if group == HTTP_GROUP:
        return (opts.table_size,)
    if group == ACCESS_GROUP:
        return (1, opts.table_size, opts.row_size, opts.batch)
    return (opts.tables, opts.table_size)


@dataclass(eq=False)
class DataSets:
    """Prepares, checks and drops the load's tables on one cluster (or endpoint), and remembers
    what is prepared there."""

    sysbench: SysbenchRunner
    connect: Connect = pymysql.connect
    _: KW_ONLY
    phase: Callable[[str], None] = lambda _: None
    note: Callable[[str], None] = lambda _: None
    monotonic: Callable[[], float] = time.monotonic
    # (database, prepare group, *dataset) -> the tables that prepare made
    prepared: dict[tuple[object, ...], frozenset[str]] = field(init=False, default_factory=dict)

    def session(self, endpoint: Endpoint) -> Any:
        return admin_connect(self.connect, endpoint, self.sysbench.connect_timeout)

    def forget(self) -> None:
        """A new cluster: nothing is prepared on it."""
        self.prepared = {}

    # ---- before anything starts --------------------------------------------------------------

    def create_schemas(self, admin: Endpoint, schemas: Sequence[str]) -> None:
        """Fail fast: reach the admin endpoint and create the schemas the clients need."""
        conn = self.session(admin)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SET SESSION lock_wait_timeout = {DROP_LOCK_WAIT}")
                for db in schemas:
                    ddl(cur, f"CREATE DATABASE IF NOT EXISTS `{db}`", admin.user)
        except pymysql.err.MySQLError as e:
            raise WorkloadError(
                f"cannot create schema(s) {', '.join(schemas)}: {e.args[-1] if e.args else e}; "
                "create them first or grant CREATE to the user"
            ) from e
        finally:
            conn.close()

    def check_tables(self, opts: SysbenchOptions, admin: Endpoint, databases: Sequence[str]) -> None:
        """--no-prepare / `prepare = false`: the tables of opts.test's group must be in every
        database, or nothing starts."""
        group = prepare_group(opts.test)
        want = expected_tables(opts, group)
        for db in dict.fromkeys(databases):
            present = self.sysbench.existing_tables(admin, db, use_tls(opts, admin))
            missing = [t for t in want if t not in present]
            if missing:
                raise WorkloadError(
                    f"--no-prepare, but tables {', '.join(missing)} are missing in {db}; "
                    "run without --no-prepare to create them"
                )

    # ---- prepare -----------------------------------------------------------------------------

    def ensure(
        self,
        opts: SysbenchOptions,
        admin: Endpoint,
        databases: Sequence[str],
        rec: Recorder,
        run_id: int,
        labels: dict[str, Any] | None = None,
    ) -> bool:
        """The tables of opts.test in every database: those prepared earlier on this cluster with
        the same shape are kept, the others made afresh, one database at a time. `labels` go with
        a tpcc load's record (an experiment's group and node count). Returns whether anything was
        prepared."""
        group = prepare_group(opts.test)
        key = dataset_key(opts)
        todo = [
            db for db in dict.fromkeys(databases) if key is None or (db, group, *key) not in self.prepared
        ]
        if not todo:
            return False
        tables = expected_tables(opts, group)
        if tables:
            self.create_schemas(admin, todo)
        # The group's own prepare test: oltp_insert's prepare makes empty tables (auto_inc off),
        # which the other oltp tests would then run on.
        base = opts.model_copy(update={"compression": False, "rate": 0, "test": prepare_test(group)})
        for db in todo:
            dropped = self.drop(admin, db, tables)
            if dropped:
                self.phase(f"dropped {len(dropped)} sysbench table(s) left in {db} by an earlier run")
                rec.run_event(run_id, "drop_tables", {"database": db, "tables": dropped})
            self.phase(prepare_line(opts, group, [db]))
            t0 = self.monotonic()
            progress = self._progress(opts, len(todo))
            outputs = self.sysbench.prepare(base, admin, databases=[db], on_line=progress)
            seconds = round(self.monotonic() - t0, 3)
            rec.run_event(run_id, "prepare", {"group": group, "seconds": seconds, "database": db})
            if group == TPCC:
                self._after_tpcc_load(opts, admin, db, outputs, seconds, rec, run_id, labels or {})
            if key is not None:
                self.prepared[(db, group, *key)] = frozenset(tables)
        return True

    def _progress(self, opts: SysbenchOptions, dbs: int) -> Callable[[str], None] | None:
        if opts.test != TPCC:
            return None
        done: list[str] = []

        def progress(line: str) -> None:  # the tpcc loader prints one line per loaded warehouse
            if line.startswith("CBLOAD warehouse "):
                done.append(line)
                self.phase(f"  {line.removeprefix('CBLOAD ')} ({len(done)} of {opts.warehouses * dbs})")

        return progress

    def _after_tpcc_load(
        self,
        opts: SysbenchOptions,
        admin: Endpoint,
        db: str,
        outputs: Sequence[Any],
        seconds: float,
        rec: Recorder,
        run_id: int,
        labels: dict[str, Any],
    ) -> None:
        """A tpcc load's figures (rows, rate, data size against the buffer pool) into the run's
        provenance `tpcc_load` (one entry per load), and the twelve conditions on what it loaded:
        a FAIL stops here."""
        rows = sum(tpcc.load_rows(o.stdout) for o in outputs)
        load: dict[str, Any] = {
            **labels, "database": db, "warehouses": opts.warehouses, "threads": opts.threads,
            "seconds": seconds, "rows": rows, "rows_per_s": round(rows / seconds, 1) if seconds > 0 else None,
            **tpcc_size(self.session(admin), admin, db, opts.warehouses),
        }  # fmt: skip
        self.note(tpcc.load_line(load))
        report = check_tpcc(self.session(admin), admin, db, "load")
        rec.run_provenance(run_id, f"tpcc_consistency@load:{db}", report.to_json())
        load["consistency"] = report.summary_line()
        self.note(report.summary_line())
        loads = list(rec.conn().provenance(run_id).get("tpcc_load") or [])
        rec.run_provenance(run_id, "tpcc_load", [*loads, load])
        if report.failed:
            raise WorkloadError(f"{db}: {report.summary_line()}")

    # ---- drop and clean up -------------------------------------------------------------------

    def drop(self, admin: Endpoint, database: str, names: Sequence[str]) -> list[str]:
        """Drop those of `names` left in `database`; what was prepared with any of them is
        forgotten (a bulk_insert trial consumes the oltp tables it shares)."""
        if not names:
            return []
        conn = self.session(admin)
        try:
            with conn.cursor() as cur:
                if admin.auto_inc_off:
                    causal_reads(cur)
                dropped = drop_tables(cur, database, names, admin.user)
        except pymysql.err.MySQLError as e:
            raise WorkloadError(
                f"cannot drop the sysbench tables left in {database}: {e.args[-1] if e.args else e}; "
                f"see `SHOW PROCESSLIST` through the {admin.name} endpoint"
            ) from None
        finally:
            conn.close()
        gone = set(names)
        self.prepared = {k: v for k, v in self.prepared.items() if k[0] != database or not (v & gone)}
        return dropped

    def cleanup(self, opts: SysbenchOptions, admin: Endpoint, databases: Sequence[str]) -> None:
        """sysbench's own cleanup of opts.test's group (run --cleanup); forgotten afterwards."""
        group = prepare_group(opts.test)
        self.sysbench.cleanup(opts, admin, databases=list(dict.fromkeys(databases)))
        self.prepared = {k: v for k, v in self.prepared.items() if k[1] != group}

    # ---- TPC-C consistency -------------------------------------------------------------------

    def tpcc_consistency(self, admin: Endpoint, databases: Sequence[str]) -> list[tuple[str, CheckReport]]:
        """The twelve conditions on every database a trial's clients wrote (condition 11 is
        load-only); WorkloadError when a check cannot run."""
        return [(db, check_tpcc(self.session(admin), admin, db, "run")) for db in dict.fromkeys(databases)]


def prepare_line(opts: SysbenchOptions, group: str, dbs: Sequence[str]) -> str:
    """What a prepare is about to make, for people."""
    where = ", ".join(dbs)
    if group == TPCC:
        return f"loading tpcc: {opts.warehouses} warehouse(s), {opts.threads} thread(s) in {where}"
    if group == ACCESS_GROUP:  # one table of its own, not `tables` of them
        return (f"preparing access: sbtest{opts.row_size}, {opts.table_size} rows of about "
                f"{opts.row_size} bytes in {where}")  # fmt: skip
    if group == SLAP_GROUP:
        what = (
            f"mariadb-slap makes its own schema {SLAP_SCHEMA}" if opts.slap_query is None
            else f"slap_query runs in {where} as it is"
        )  # fmt: skip
        return f"mysqlslap: nothing to prepare ({what})"
    if group == BULK_GROUP:
        return f"preparing bulk_insert: {opts.threads} table(s) in {where}"
    if group == HTTP_GROUP:
        return (f"preparing the web application's tables: cbweb_items ({opts.table_size} rows) and "
                f"cbweb_writes in {where}")  # fmt: skip
    return f"preparing {group}: {opts.tables} table(s) x {opts.table_size} rows in {where}"
