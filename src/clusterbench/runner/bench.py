"""Benchmark runs: sysbench tests as the trials of one stored run.

`BenchPlan` says what to run (tests, options, endpoint, clients); `execute` runs it and stores it:
fresh tables once per prepare group, one trial per test, every sample committed as it arrives,
summaries and histograms at the end of each trial, provenance for the run and for each trial.
Nothing here prints: progress goes to a `BenchListener`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pymysql  # type: ignore[import-untyped, unused-ignore]
from pydantic import ValidationError

from clusterbench.errors import ClusterbenchError, InputError, WorkloadError
from clusterbench.runner.provenance import ServerProbe, ServerSnapshot, host_facts
from clusterbench.spec.endpoint import Endpoint
from clusterbench.store import Store, record_run_result
from clusterbench.telemetry.recorder import TrialTelemetry
from clusterbench.telemetry.sampler import TelemetrySource
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.workloads import (
    RunResult,
    Sample,
    SysbenchOptions,
    SysbenchRunner,
    client_databases,
    group_tests,
    needed_schemas,
    tpcc,
)
from clusterbench.workloads.parse import combine_samples
from clusterbench.workloads.placement import ClientHost
from clusterbench.workloads.runner import causal_reads
from clusterbench.workloads.slap import check_slap
from clusterbench.workloads.sysbench import (
    ACCESS_GROUP,
    SLAP_GROUP,
    SLAP_TEST,
    TPCC,
    TPCC_TABLES,
    check_known_tests,
    expected_tables,
    prepare_group,
    use_tls,
)
from clusterbench.workloads.tpcc_check import CheckReport, cursor_query
from clusterbench.workloads.tpcc_check import check as tpcc_check

log = logging.getLogger(__name__)

Kind = Literal["run", "suite", "scenario"]


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
        + ",".join(["%s"] * len(names)) + ")",
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


class BenchInterrupted(ClusterbenchError):
    """Ctrl-C or SIGTERM stopped a run; what it measured is stored and marked interrupted."""

    exit_code = 130


class TrialsFailed(ClusterbenchError):
    """The run finished, but at least one trial failed (its reason is stored as an event)."""

    exit_code = 1


def make_options(**fields: Any) -> SysbenchOptions:
    """SysbenchOptions from user input; a bad value becomes one InputError line naming the option."""
    if "test" in fields:
        check_known_tests([fields["test"]])
    try:
        return SysbenchOptions(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        if not err["loc"]:  # a check across options (batch against table_size)
            raise InputError(str(err["msg"]).removeprefix("Value error, ")) from None
        name = "--" + "-".join(str(p) for p in err["loc"]).replace("_", "-")
        name = {"--time": "--duration"}.get(name, name)  # the flag's name, not SysbenchOptions'

        msg = str(err["msg"]).removeprefix("Value error, ")  # a validator's own words
        raise InputError(f"{name}: {msg} (got {err.get('input')!r})") from None


@dataclass(frozen=True)
class BenchPlan:
    """What to run. `options.test` is replaced by each test in turn."""

    kind: Kind
    tests: tuple[str, ...]
    options: SysbenchOptions
    endpoint: Endpoint
    clients: int = 1
    separate_schemas: bool = False
    prepare: bool = True
    cleanup: bool = False
    name: str = ""
    command_line: str = ""
    topology: dict[str, Any] | None = None
    # where the clients run, round-robin; empty: this machine
    client_hosts: tuple[ClientHost, ...] = ()
    # what each client loads, round-robin (e.g. one node each); empty: `endpoint` for all.
    # `endpoint` still serves the schema checks, prepare and cleanup.
    client_endpoints: tuple[Endpoint, ...] = ()
    # --tag and --notes: stored with the run when it is created, so an interrupted run has them
    tags: tuple[str, ...] = ()
    notes: str = ""
    # tpcc: check the twelve consistency conditions right after each trial (a FAIL fails it).
    # False: the caller checks later through `tpcc_consistency` (a drill, once its faults are healed
    # and the cluster has settled, where the result is a verdict of its own).
    consistency_after_trial: bool = True

    def __post_init__(self) -> None:
        if not self.tests:
            raise InputError("no test to run; name at least one sysbench test")
        check_known_tests(self.tests)
        if self.clients < 1:
            raise InputError(f"--clients must be at least 1, got {self.clients}")
        if SLAP_TEST in self.tests:
            check_slap(self.trial_options(SLAP_TEST), self.endpoint, self.clients)
            if len(self.client_endpoints) > 1:
                raise InputError("--target: mysqlslap connects to one address; use balancer or node:N")

    def trial_options(self, test: str) -> SysbenchOptions:
        return self.options.model_copy(update={"test": test})

    @property
    def databases(self) -> list[str]:
        return client_databases(self.endpoint, self.clients, self.separate_schemas)

    def workload_provenance(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "tests": list(self.tests),
            "options": self.options.model_dump(mode="json", exclude={"test"}),
            "clients": self.clients,
            "separate_schemas": self.separate_schemas,
            "client_hosts": [h.name for h in self.client_hosts],
            "client_targets": [e.name for e in self.client_endpoints],
            "prepare": self.prepare,
            "cleanup": self.cleanup,
        }

    def endpoint_provenance(self) -> dict[str, Any]:
        e = self.endpoint
        return {
            "name": e.name,
            "addresses": [f"{a.host}:{a.port}" for a in e.addresses],
            "user": e.user,
            "database": e.database,
            "tls": e.tls,
            "galera": e.galera,
        }


class BenchListener:
    """Progress of a bench run. Every method is optional: override what you show."""

    def run_created(self, run_id: int) -> None:
        """The run is in the store (from here on, an interrupt leaves it marked interrupted)."""

    def phase(self, message: str) -> None:
        """A step outside the measurement: preparing, cleaning up, taking snapshots."""

    def trial_started(self, seq: int, test: str, options: SysbenchOptions) -> None:
        """A trial starts; `options.total_time` seconds of load follow."""

    def sample(self, seq: int, sample: Sample) -> None:
        """One measured sample of one client, as it arrives (already stored)."""

    def telemetry(self, seq: int, line: str) -> None:
        """The servers' latest figures in one line (after a sample, while telemetry runs)."""

    def bottleneck(self, seq: int, verdict: Bottleneck) -> None:
        """The trial's bottleneck verdict (before trial_finished)."""

    def trial_finished(self, seq: int, test: str, result: RunResult, status: str) -> None:
        """A trial ended (status 'completed' or 'failed')."""

    def note(self, line: str) -> None:
        """A finding to show: TPC-C figures, its consistency verdict, stalls (after trial_finished)."""


@dataclass
class TrialOutcome:
    seq: int
    trial_id: int
    test: str
    status: str
    samples: int = 0
    failure: str | None = None


@dataclass
class BenchOutcome:
    run_id: int
    status: str
    trials: list[TrialOutcome] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        return [f"{t.test}: {t.failure}" for t in self.trials if t.failure]


Connect = Callable[..., Any]


class BenchRunner:
    """Runs a BenchPlan against an endpoint and records it in a Store."""

    def __init__(
        self,
        sysbench: SysbenchRunner,
        probe: ServerProbe | None = None,
        *,
        facts: Callable[[], dict[str, Any]] = host_facts,
        connect: Connect = pymysql.connect,
        monotonic: Callable[[], float] = time.monotonic,
        telemetry: TelemetrySource | None = None,
        telemetry_on: bool = True,
    ) -> None:
        self.sysbench = sysbench
        self.probe = probe
        # the cluster whose servers are sampled every second beside the load (None: an endpoint)
        self.telemetry = telemetry
        self.telemetry_on = telemetry_on
        self.facts = facts
        self.connect = connect
        self.monotonic = monotonic

    # ---- before the run ------------------------------------------------------------------

    def _admin_connect(self, endpoint: Endpoint) -> Any:
        return admin_connect(self.connect, endpoint, self.sysbench.connect_timeout)

    def check(self, plan: BenchPlan) -> None:
        """Fail fast: reach every address, create the schemas the clients need, log in to each."""
        schemas = needed_schemas(plan.endpoint, plan.clients, plan.separate_schemas)
        conn = self._admin_connect(plan.endpoint)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SET SESSION lock_wait_timeout = {DROP_LOCK_WAIT}")
                for db in schemas:
                    ddl(cur, f"CREATE DATABASE IF NOT EXISTS `{db}`", plan.endpoint.user)
        except pymysql.err.MySQLError as e:
            raise WorkloadError(
                f"cannot create schema(s) {', '.join(schemas)}: {e.args[-1] if e.args else e}; "
                "create them first or grant CREATE to the user"
            ) from e
        finally:
            conn.close()
        self.sysbench.check_endpoint(plan.endpoint, plan.databases, use_tls(plan.options, plan.endpoint))
        for ep in plan.client_endpoints:
            self.sysbench.check_endpoint(ep, plan.databases, use_tls(plan.options, ep))
        if not plan.prepare:  # before the run exists: a missing table starts nothing
            for group in group_tests(plan.tests):
                self._check_tables(plan, plan.trial_options(group.tests[0]))

    def _check_tables(self, plan: BenchPlan, base: SysbenchOptions) -> None:
        """--no-prepare: the tables of `base`'s prepare group must be in every database."""
        group = prepare_group(base.test)
        want = expected_tables(base, group)
        for db in dict.fromkeys(plan.databases):
            present = self.sysbench.existing_tables(plan.endpoint, db, use_tls(base, plan.endpoint))
            missing = [t for t in want if t not in present]
            if missing:
                raise WorkloadError(
                    f"--no-prepare, but tables {', '.join(missing)} are missing in {db}; "
                    "run without --no-prepare to create them"
                )

    def _drop_tables(self, endpoint: Endpoint, database: str, names: Sequence[str]) -> list[str]:
        """Drop the tables a prepare is about to make, where an earlier run left them."""
        if not names:
            return []
        conn = self._admin_connect(endpoint)
        try:
            with conn.cursor() as cur:
                if endpoint.galera:
                    causal_reads(cur)
                return drop_tables(cur, database, names, endpoint.user)
        except pymysql.err.MySQLError as e:
            raise WorkloadError(
                f"cannot drop the sysbench tables left in {database}: {e.args[-1] if e.args else e}; "
                f"see `SHOW PROCESSLIST` through the {endpoint.name} endpoint"
            ) from None
        finally:
            conn.close()

    # ---- the run -------------------------------------------------------------------------

    def execute(self, plan: BenchPlan, store: Store, listener: BenchListener | None = None) -> BenchOutcome:
        """Run every test of the plan as a trial of one new run. Call `check` first.

        Ctrl-C / SIGTERM (KeyboardInterrupt): sysbench is stopped by the workload runner, the
        current trial and the run are marked interrupted (their samples stay), and the exception
        goes on to the caller.
        """
        lis = listener or BenchListener()
        run_id = store.create_run(
            plan.kind, name=plan.name, command_line=plan.command_line, tags=plan.tags, notes=plan.notes
        )
        outcome = BenchOutcome(run_id=run_id, status="running")
        lis.run_created(run_id)
        try:
            self._run_provenance(plan, store, run_id)
            seq = 0
            for group in group_tests(plan.tests):
                base = plan.trial_options(group.tests[0])
                self._prepare(plan, base, store, run_id, lis)
                for test in group.tests:
                    seq += 1
                    self._trial(plan, store, run_id, seq, test, lis, outcome)
                if plan.cleanup:
                    lis.phase(f"cleaning up the {group.name} tables")
                    self.sysbench.cleanup(base, plan.endpoint, databases=plan.databases)
                    store.add_event(run_id, "cleanup", {"group": group.name})
        except BaseException as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            status = "interrupted" if interrupted else "failed"
            for t in outcome.trials:
                if t.status == "running":
                    store.finish_trial(t.trial_id, status)  # type: ignore[arg-type]
                    t.status = status
            store.add_event(run_id, status, {"reason": "interrupted" if interrupted else str(exc)})
            store.finish_run(run_id, status)  # type: ignore[arg-type]
            outcome.status = status
            raise
        outcome.status = "failed" if any(t.status != "completed" for t in outcome.trials) else "completed"
        store.finish_run(run_id, outcome.status)  # type: ignore[arg-type]
        return outcome

    def _run_provenance(self, plan: BenchPlan, store: Store, run_id: int) -> None:
        store.set_provenance(run_id, "workload", plan.workload_provenance())
        store.set_provenance(run_id, "endpoint", plan.endpoint_provenance())
        if plan.topology is not None:
            store.set_provenance(run_id, "topology", plan.topology)
        facts = self.facts()
        for key, value in facts.items():
            store.set_provenance(run_id, key, value)

    def _snapshot(self, store: Store, run_id: int, trial_id: int, when: str) -> ServerSnapshot | None:
        if self.probe is None:
            return None
        snap = self.probe.snapshot()
        store.set_provenance(run_id, f"server_variables@{when}", snap.variables, trial_id=trial_id)
        store.set_provenance(run_id, f"engine_status@{when}", snap.engine_status, trial_id=trial_id)
        if snap.errors:
            store.set_provenance(run_id, f"server_errors@{when}", snap.errors, trial_id=trial_id)
        if when == "start":
            # versions that only the servers know, recorded at the run level once
            versions = dict(store.provenance(run_id).get("versions") or {})
            changed = False
            for key, value in snap.versions().items():
                if versions.get(key) != value:
                    versions[key] = value
                    changed = True
            if changed:
                store.set_provenance(run_id, "versions", versions)
        return snap

    def _prepare(
        self, plan: BenchPlan, base: SysbenchOptions, store: Store, run_id: int, lis: BenchListener
    ) -> None:
        group = prepare_group(base.test)
        dbs = list(dict.fromkeys(plan.databases))
        if not plan.prepare:
            self._check_tables(plan, base)
            store.add_event(run_id, "prepare", {"group": group, "skipped": True})
            return
        for db in dbs:
            dropped = self._drop_tables(plan.endpoint, db, expected_tables(base, group))
            if dropped:
                lis.phase(f"dropped {len(dropped)} sysbench table(s) left in {db} by an earlier run")
                store.add_event(run_id, "drop_tables", {"database": db, "tables": dropped})
        if group == TPCC:
            where = ", ".join(dbs)
            lis.phase(f"loading tpcc: {base.warehouses} warehouse(s), {base.threads} thread(s) in {where}")
        elif group == ACCESS_GROUP:  # one table of its own, not `tables` of them
            lis.phase(f"preparing access: sbtest{base.row_size}, {base.table_size} rows of about "
                      f"{base.row_size} bytes in {', '.join(dbs)}")  # fmt: skip
        elif group == SLAP_GROUP:
            lis.phase("mysqlslap: nothing to prepare (mariadb-slap makes its own tables)")
        else:
            lis.phase(
                f"preparing {group}: {base.tables if group != 'bulk_insert' else base.threads} table(s)"
                + (f" x {base.table_size} rows" if group != "bulk_insert" else "")
                + f" in {', '.join(dbs)}"
            )
        t0 = self.monotonic()
        done: list[str] = []

        def progress(line: str) -> None:
            # the tpcc loader prints one line per loaded warehouse
            if line.startswith("CBLOAD warehouse "):
                done.append(line)
                lis.phase(f"  {line.removeprefix('CBLOAD ')} ({len(done)} of {base.warehouses * len(dbs)})")

        outputs = self.sysbench.prepare(
            base, plan.endpoint, databases=dbs, on_line=progress if group == TPCC else None
        )
        seconds = round(self.monotonic() - t0, 3)
        store.add_event(run_id, "prepare", {"group": group, "seconds": seconds})
        if group == TPCC:
            rows = sum(tpcc.load_rows(o.stdout) for o in outputs)
            load = {"warehouses": base.warehouses, "threads": base.threads, "seconds": seconds, "rows": rows,
                    "rows_per_s": round(rows / seconds, 1) if seconds > 0 else None,
                    **self._tpcc_size(plan.endpoint, dbs[0], base.warehouses)}  # fmt: skip
            store.set_provenance(run_id, "tpcc_load", load)
            lis.note(tpcc.load_line(load))
            for db in dbs:
                report = self._tpcc_check(plan.endpoint, db, "load")
                store.set_provenance(run_id, f"tpcc_consistency@load:{db}", report.to_json())
                lis.note(report.summary_line())
                if report.failed:
                    raise WorkloadError(f"{db}: {report.summary_line()}")

    def _tpcc_size(self, endpoint: Endpoint, database: str, warehouses: int) -> dict[str, Any]:
        return tpcc_size(self._admin_connect(endpoint), endpoint, database, warehouses)

    def _tpcc_check(self, endpoint: Endpoint, database: str, when: str) -> CheckReport:
        return check_tpcc(self._admin_connect(endpoint), endpoint, database, when)

    def tpcc_consistency(
        self, plan: BenchPlan, store: Store, run_id: int, trial_id: int
    ) -> list[tuple[str, CheckReport]]:
        """The twelve conditions on every database the trial's clients wrote, after the trial
        (condition 11 load-only), each stored as the trial's `tpcc_consistency:DB`. Raises
        WorkloadError when a check cannot run."""
        out = []
        for db in dict.fromkeys(plan.databases):
            report = self._tpcc_check(plan.endpoint, db, "run")
            store.set_provenance(run_id, f"tpcc_consistency:{db}", report.to_json(), trial_id=trial_id)
            out.append((db, report))
        return out

    def _trial(
        self,
        plan: BenchPlan,
        store: Store,
        run_id: int,
        seq: int,
        test: str,
        lis: BenchListener,
        outcome: BenchOutcome,
    ) -> TrialOutcome:
        opts = plan.trial_options(test)
        params = {
            **opts.model_dump(mode="json"),
            "clients": plan.clients,
            "separate_schemas": plan.separate_schemas,
            "endpoint": plan.endpoint.name,
        }
        if plan.client_hosts:
            params["client_hosts"] = [h.name for h in plan.client_hosts]
        if plan.client_endpoints:
            params["client_targets"] = [e.name for e in plan.client_endpoints]
        trial_id = store.add_trial(run_id, seq, test, params)
        out = TrialOutcome(seq=seq, trial_id=trial_id, test=test, status="running")
        outcome.trials.append(out)
        self._snapshot(store, run_id, trial_id, "start")
        lis.trial_started(seq, test, opts)

        rec = TrialTelemetry(self.telemetry, store, run_id, trial_id, warmup=opts.warmup,
                             total_time=opts.total_time, enabled=self.telemetry_on)  # fmt: skip

        def on_sample(s: Sample) -> None:
            store.add_sample(trial_id, s)
            out.samples += 1
            lis.sample(seq, s)
            line = rec.live_line()
            if line:
                lis.telemetry(seq, line)

        with rec:
            result = self.sysbench.run(
                opts,
                plan.endpoint,
                clients=plan.clients,
                separate_schemas=plan.separate_schemas,
                on_sample=on_sample,
                preflight=False,
                hosts=plan.client_hosts or None,
                endpoints=plan.client_endpoints or None,
            )
        record_run_result(store, trial_id, result)
        lis.bottleneck(seq, rec.conclude(result))
        self._snapshot(store, run_id, trial_id, "end")
        out.failure = result.failure()
        notes: list[str] = []
        stalls = trial_stalls(result)
        store.set_provenance(run_id, "stalls", stalls.to_json(), trial_id=trial_id)
        if stalls.count:
            notes.append(tpcc.stall_line(stalls))
        if test == TPCC:
            figures = tpcc_figures(result, opts)
            if figures is not None:
                store.set_provenance(run_id, "tpcc", figures, trial_id=trial_id)
                notes += tpcc.figure_lines(figures)
            for _, report in (
                self.tpcc_consistency(plan, store, run_id, trial_id) if plan.consistency_after_trial else []
            ):
                notes.append(report.summary_line())
                if report.failed and out.failure is None:
                    out.failure = report.summary_line()
        out.status = "completed" if result.ok and out.failure is None else "failed"
        if out.failure:
            store.add_event(
                run_id,
                "trial_failed",
                {"test": test, "reason": out.failure, "stderr": result.stderr_tail[-5:]},
                trial_id=trial_id,
            )
        store.finish_trial(trial_id, out.status)  # type: ignore[arg-type]
        lis.trial_finished(seq, test, result, out.status)
        for line in notes:
            lis.note(line)
        return out


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


def trial_stalls(result: RunResult) -> tpcc.Stalls:
    """The stall detector over a trial's per-interval tps, all clients summed."""
    return tpcc.detect_stalls((s.t, s.tps) for s in combine_samples(result.samples))


def tpcc_figures(result: RunResult, opts: SysbenchOptions) -> dict[str, Any] | None:
    """tpmC, tpm and the per-type figures of a tpcc trial (None without the script's counters), with
    the mix asked (`mix`, as new_order=45,payment=43,...)."""
    figures = tpcc.summarize(
        [tpcc.TpccClient(c.samples, c.warmup_samples, c.checkpoint_extra,
                         c.summary.extra if c.summary is not None else None) for c in result.clients],
        result.summary.duration if result.summary is not None else float(opts.time),
    )  # fmt: skip
    if figures is not None:
        figures["mix"] = tpcc.mix_text(opts.mix)
    return figures


def tpcc_size(conn: Any, endpoint: Endpoint, database: str, warehouses: int) -> dict[str, Any]:
    """Data size per warehouse and its ratio to the buffer pool (IO-bound or not), over an open
    connection (closed here); {} when it cannot be read."""
    try:
        with conn.cursor() as cur:
            if endpoint.galera:
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
            if endpoint.galera:
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


CLIENT_HOSTS_HELP = "auto, local or a number of client hosts"


def choose_client_hosts(
    spec: str, available: Sequence[ClientHost], *, external: bool = False
) -> list[ClientHost]:
    """The hosts the clients run on, from --client-hosts.

    auto: the cluster's client hosts when it has any (its topology put them there to carry the
    load), else this machine; local: this machine; N: the first N client hosts. [] means this
    machine.
    """
    spec = spec.strip().lower()
    if spec == "local":
        return []
    if spec == "auto":
        return list(available)
    if not spec.isdigit() or int(spec) < 1:
        raise InputError(f"--client-hosts must be {CLIENT_HOSTS_HELP}, got {spec!r}")
    if external:
        raise InputError(
            f"--client-hosts {spec} needs a clusterbench cluster's client hosts; leave it out with --host"
        )
    n = int(spec)
    if n > len(available):
        raise InputError(
            f"--client-hosts {n}: the cluster has {len(available)} client host(s); add them with "
            "`[clients] hosts = K` in the topology (or hosts with role client over ssh) and run `up` again"
        )
    return list(available[:n])


def default_clients(
    clients: int | None, hosts: Sequence[ClientHost], endpoints: Sequence[Endpoint] = ()
) -> int:
    """--clients, or one client per client host or per target, whichever is more (at least one)."""
    if clients is not None:
        return clients
    return max(1, len(hosts), len(endpoints))


def resolve_run(store: Store, ref: str) -> int:
    """A run id, or 'last' for the newest run."""
    if ref == "last":
        runs = store.list_runs()
        if not runs:
            raise InputError("the store holds no runs yet; start one with `clusterbench run` or `suite`")
        return runs[-1].id
    if not ref.isdigit():
        raise InputError(
            f"run must be a number or 'last', got {ref!r}; `clusterbench results list` lists the runs"
        )
    run_id = int(ref)
    store.get_run(run_id)
    return run_id


def parse_tests(text: str | None, default: Sequence[str]) -> tuple[str, ...]:
    """'a,b , c' → ('a', 'b', 'c'), checked against the known tests."""
    if text is None:
        return tuple(default)
    tests = tuple(t.strip() for t in text.split(",") if t.strip())
    if not tests:
        raise InputError("--workload is empty; give a comma-separated list of sysbench tests")
    check_known_tests(tests)
    return tests
