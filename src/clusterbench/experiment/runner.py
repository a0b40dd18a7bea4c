"""Runs a Plan: builds each group's cluster once, changes node counts and server variables at
runtime, prepares each data set once per cluster, runs the trials into one stored run.

Resumable: the run is found again by the plan's id; trials already completed are skipped, the
others (interrupted, failed, never started) run. Every cluster is torn down at the end, also on
failure or Ctrl-C. The wall time is split into phases so the share spent not measuring (bring-up,
prepare, node changes, warm-up, trial overhead, teardown) can be printed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pymysql  # type: ignore[import-untyped, unused-ignore]

from clusterbench.checkers.availability import tps_recovery
from clusterbench.cluster import Cluster
from clusterbench.errors import ClusterbenchError, ComponentError, WorkloadError
from clusterbench.experiment import tls as tlsmod
from clusterbench.experiment.convergence import Convergence, converge, needs_more, trial_value, value_name
from clusterbench.experiment.planner import Plan, TrialSpec, _group_key
from clusterbench.faults.nemesis import Nemesis
from clusterbench.runner.bench import (
    DROP_LOCK_WAIT,
    admin_connect,
    check_tpcc,
    ddl,
    drop_tables,
    tpcc_figures,
    tpcc_size,
    trial_stalls,
)
from clusterbench.runner.provenance import ServerSnapshot, host_facts, snapshot_nodes
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.store import Store, record_run_result
from clusterbench.store.store import process_start_ticks
from clusterbench.telemetry.recorder import TrialTelemetry
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.workloads import RunResult, Sample, SysbenchOptions, SysbenchRunner, tpcc
from clusterbench.workloads.slap import SLAP_SCHEMA
from clusterbench.workloads.sysbench import (
    ACCESS_GROUP,
    BULK_GROUP,
    SLAP_GROUP,
    TPCC,
    TPCC_TABLES,
    expected_tables,
    prepare_group,
    prepare_test,
)

KIND = "experiment"
NODE_SETTLE_TIMEOUT = 60.0
SETTLE_TIMEOUT = 120.0  # after a trial's faults are healed


class ExperimentInterrupted(ClusterbenchError):
    exit_code = 130


class ExperimentListener:
    """Progress of an experiment run; override what you show."""

    def started(self, run_id: int, plan: Plan, done: set[str], resumed: bool) -> None: ...

    def phase(self, message: str) -> None: ...

    def trial_started(self, t: TrialSpec, opts: SysbenchOptions) -> None: ...

    def sample(self, t: TrialSpec, sample: Sample) -> None: ...

    def trial_finished(self, t: TrialSpec, result: RunResult, status: str, wall: float) -> None: ...

    def telemetry(self, t: TrialSpec, line: str) -> None:
        """The servers' latest figures in one line (after a sample, while telemetry runs)."""

    def bottleneck(self, t: TrialSpec, verdict: Bottleneck) -> None:
        """The trial's bottleneck verdict (before trial_finished)."""

    def note(self, t: TrialSpec | None, line: str) -> None:
        """A finding to show: a tpcc load, TPC-C figures, a consistency verdict, stalls (after
        trial_finished; `t` is None for a load)."""


@dataclass
class Ledger:
    """Wall time by phase; 'measuring' is the measured part of the trials."""

    monotonic: Callable[[], float] = time.monotonic
    phases: dict[str, float] = field(default_factory=dict)
    t0: float = 0.0

    def start(self) -> None:
        self.t0 = self.monotonic()

    def add(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + max(0.0, seconds)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = self.monotonic()
        try:
            yield
        finally:
            self.add(name, self.monotonic() - t)

    @property
    def wall(self) -> float:
        return self.monotonic() - self.t0

    @property
    def measuring(self) -> float:
        return self.phases.get("measuring", 0.0)

    def not_measuring_share(self) -> float:
        w = self.wall
        return 0.0 if w <= 0 else 1.0 - self.measuring / w

    def summary(self) -> dict[str, float]:
        out = {k: round(v, 2) for k, v in sorted(self.phases.items(), key=lambda kv: -kv[1])}
        out["other"] = round(max(0.0, self.wall - sum(self.phases.values())), 2)
        return out


@dataclass
class ExperimentOutcome:
    run_id: int
    status: str
    ran: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)


def group_signature(t: TrialSpec) -> str:
    return hashlib.sha256(_group_key(t.topology).encode()).hexdigest()[:12]


# ---- finding and reopening a run ------------------------------------------------------------------


def find_run(store: Store, plan: Plan) -> int | None:
    """The newest experiment run of this plan (same trials), if any."""
    rows = store.conn.execute(
        "SELECT r.id FROM runs r JOIN provenance p ON p.run_id = r.id AND p.trial_id IS NULL "
        "AND p.key = 'experiment' WHERE r.kind = ? ORDER BY r.id DESC",
        (KIND,),
    ).fetchall()
    for r in rows:
        prov = store.provenance(r[0]).get("experiment") or {}
        if prov.get("plan_id") == plan.id:
            return int(r[0])
    return None


def done_trials(store: Store, run_id: int) -> dict[str, int]:
    """Trial key → trial id of the latest completed trial of each key."""
    out: dict[str, int] = {}
    for tr in store.trials(run_id):
        key = tr.params.get("key")
        if key and tr.status == "completed":
            out[key] = tr.id
    return out


def reopen_run(store: Store, run_id: int, command_line: str) -> None:
    pid = os.getpid()
    store.conn.execute(
        "UPDATE runs SET status = 'running', ended_at = NULL, owner_pid = ?, owner_start = ? WHERE id = ?",
        (pid, process_start_ticks(pid), run_id),
    )
    store.add_event(run_id, "resume", {"command_line": command_line})


# ---- the runner ---------------------------------------------------------------------------------


class ExperimentRunner:
    def __init__(
        self,
        plan: Plan,
        store: Store,
        sysbench: SysbenchRunner,
        *,
        home: Path,
        listener: ExperimentListener | None = None,
        command_line: str = "",
        tags: Sequence[str] = (),
        notes: str | None = None,
        facts: Callable[[], dict[str, Any]] = host_facts,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        telemetry: bool = True,
        connect: Callable[..., Any] | None = None,
    ) -> None:
        self.telemetry = telemetry
        # the tool's own sessions (tpcc: data size, consistency checks); pymysql by default
        self.connect = connect
        self.plan = plan
        self.store = store
        self.sysbench = sysbench
        self.home = home
        self.lis = listener or ExperimentListener()
        self.command_line = command_line
        self.tags = list(tags)  # stored with the run as soon as it exists (created or resumed)
        self.notes = notes
        self.facts = facts
        self.sleep = sleep
        self.ledger = Ledger(monotonic=monotonic)
        self.cluster: Cluster | None = None
        self.running = 0
        # (database, prepare group, *dataset) -> the tables that prepare made
        self.prepared: dict[tuple[object, ...], frozenset[str]] = {}
        self.certs: Path | None = None
        self.client_hosts: list[Any] = []
        self._extra_index = 0  # run-order positions of repetitions added by repetitions = "auto"
        self._attempts: dict[str, int] = {}
        self._told: set[str] = set()

    # ---- the run ------------------------------------------------------------------------------

    def run(self, *, fresh: bool = False) -> ExperimentOutcome:
        self.ledger.start()
        run_id = None if fresh else find_run(self.store, self.plan)
        resumed = run_id is not None
        if run_id is None:
            exp = self.plan.experiment
            run_id = self.store.create_run(
                KIND,
                name=f"{exp.name}" + (f" ({exp.profile})" if exp.profile else ""),
                command_line=self.command_line,
                tags=self.tags,
                notes=self.notes or "",
            )
            self.store.set_provenance(run_id, "experiment", self._experiment_provenance())
            self.store.set_provenance(run_id, "topology", exp.topology.model_dump(mode="json"))
            for k, v in self.facts().items():
                self.store.set_provenance(run_id, k, v)
        else:
            reopen_run(self.store, run_id, self.command_line)
            if self.tags:
                self.store.add_tags(run_id, self.tags)
            if self.notes is not None:
                self.store.set_notes(run_id, self.notes)
        out = ExperimentOutcome(run_id=run_id, status="running", ledger=self.ledger)
        done = done_trials(self.store, run_id)
        out.skipped = sum(1 for t in self.plan.trials if t.key in done)
        self.lis.started(run_id, self.plan, set(done), resumed)
        seq = int(
            self.store.conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM trials WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
        )
        try:
            self._run_trials(run_id, out, done, seq)
        except BaseException as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            status = "interrupted" if interrupted else "failed"
            self.store.conn.execute(
                "UPDATE trials SET status = ?, ended_at = datetime('now') "
                "WHERE run_id = ? AND status = 'running'",
                (status, run_id),
            )
            self.store.add_event(
                run_id,
                status,
                {"reason": "interrupted" if interrupted else str(exc), "phases": self.ledger.summary()},
            )
            self.store.finish_run(run_id, status)  # type: ignore[arg-type]
            out.status = status
            if interrupted:
                raise ExperimentInterrupted(
                    f"interrupted: run {run_id} keeps its finished trials; run the same command again "
                    "to continue where it stopped"
                ) from None
            raise
        out.status = "failed" if out.failed else "completed"
        self.store.add_event(
            run_id,
            "wall_time",
            {
                "phases": self.ledger.summary(),
                "wall": round(self.ledger.wall, 2),
                "not_measuring_share": round(self.ledger.not_measuring_share(), 4),
            },
        )
        self.store.finish_run(run_id, out.status)  # type: ignore[arg-type]
        return out

    def _run_trials(self, run_id: int, out: ExperimentOutcome, done: dict[str, int], seq: int) -> None:
        """The trials not done yet, one cluster per group (a search overrides this). With
        repetitions = "auto", a point gets more repetitions until it converges: right after its
        planned ones (blocked order), or in rounds over the group's points at the group's end
        (interleaved)."""
        settings = self.plan.experiment.settings
        last_rep = {t.point_key: t.rep for t in self.plan.trials}  # planned ones, per point
        self._extra_index = len(self.plan.trials)
        for members in self.plan.groups():
            todo = [t for t in members if t.key not in done]
            if not todo and not settings.auto:
                continue
            try:
                for t in members:
                    if t.key not in done:
                        self._ensure_up(t)
                        seq = self._count(run_id, t, out, seq)
                    blocked = settings.repetition_order == "blocked"
                    if settings.auto and blocked and t.rep == last_rep[t.point_key]:
                        while (more := self._next_repetition(run_id, t)) is not None:
                            self._ensure_up(more)
                            seq = self._count(run_id, more, out, seq)
                if settings.auto and settings.repetition_order == "interleaved":
                    firsts = list({t.point_key: t for t in members if t.rep == 1}.values())
                    while wanted := [m for m in (self._next_repetition(run_id, t) for t in firsts) if m]:
                        for more in wanted:
                            self._ensure_up(more)
                            seq = self._count(run_id, more, out, seq)
            finally:
                self._teardown()

    def _ensure_up(self, t: TrialSpec) -> None:
        if self.cluster is None:
            self._bring_up(t)

    def _count(self, run_id: int, t: TrialSpec, out: ExperimentOutcome, seq: int) -> int:
        seq += 1
        status = self._trial(run_id, seq, t)
        out.ran += 1
        if status != "completed":
            out.failed.append(t.key)
        return seq

    def point_convergence(self, rows: list[dict[str, Any]], test: str) -> Convergence:
        """How far a point's completed repetitions (its stored trial rows) are from the
        experiment's CI target."""
        s = self.plan.experiment.settings
        values = [v for r in rows if (v := trial_value(test, r.get("summary"))) is not None]
        return converge(values, s.ci_statistic, s.ci_tolerance)

    def _next_repetition(self, run_id: int, t: TrialSpec) -> TrialSpec | None:
        """One more repetition of t's point while its CI is too wide and the cap not reached;
        None (and a line saying how it ended, once) when it is done."""
        s = self.plan.experiment.settings
        rows = [r for r in trial_rows(self.store, run_id) if r.get("point_key") == t.point_key]
        c = self.point_convergence(rows, t.test)
        reps = [int(r["rep"]) for r in rows]
        attempts = self._attempts.setdefault(t.point_key, 0)
        # a failed repetition is retried at most max_repetitions times in all: no endless loop
        if needs_more(c, s.max_repetitions) and attempts < s.max_repetitions:
            self._attempts[t.point_key] = attempts + 1
            self._extra_index += 1
            return replace(t, rep=max(reps + [t.rep]) + 1, index=self._extra_index)
        if t.point_key not in self._told:
            self._told.add(t.point_key)
            self.lis.phase(f"{t.point_label}: {c.text()} of {value_name(t.test)}")
        return None

    def _extra_params(self, t: TrialSpec) -> dict[str, Any]:
        """More params stored with each trial (a search adds why the trial ran)."""
        return {}

    def _experiment_provenance(self) -> dict[str, Any]:
        exp = self.plan.experiment
        return {
            "name": exp.name,
            "profile": exp.profile,
            "source": exp.source,
            "plan_id": self.plan.id,
            "settings": exp.settings.model_dump(mode="json"),
            "parts": {
                name: {
                    "workload": wl.model_dump(mode="json"),
                    "factors": lv,
                    "design": exp.design(name).model_dump(mode="json"),
                    **_design_facts(self.plan, name),
                }
                for name, (wl, lv) in exp.parts.items()
            },
            "trials": [t.key for t in self.plan.trials],
        }

    # ---- cluster lifecycle --------------------------------------------------------------------

    def _bring_up(self, t: TrialSpec) -> None:
        topo = t.topology
        if any(tr.tls for tr in self.plan.trials):
            with self.ledger.phase("bring-up"):
                self.certs = tlsmod.ensure_certs(self.home / "experiments" / "tls")
        self.lis.phase(f"bringing up {topo.cluster.nodes} node(s) for group {t.group}" + _res(t))
        with self.ledger.phase("bring-up"):
            c = Cluster(topo, home=self.home)
            self.cluster = c
            c.up(report=self.lis.phase)
        self.running = topo.cluster.nodes
        self.prepared = {}
        self.client_hosts = list(c.client_hosts())

    def _teardown(self) -> None:
        c = self.cluster
        if c is None:
            return
        with self.ledger.phase("teardown"):
            c.down()
        self.cluster = None
        self.lis.phase("cluster taken down")

    def _set_nodes(self, want: int) -> None:
        c = self.cluster
        assert c is not None
        if want == self.running:
            return
        with self.ledger.phase("node changes"):
            h = c.haproxy()
            if want < self.running:
                for i in range(self.running, want, -1):
                    if h is not None:
                        for route in c.engine.routes():
                            _haproxy_cmd(h, f"set server {route.name}/n{i} state maint")
                    c.node_stop(i)
                    # One leave at a time: a node that leaves while the previous view change is
                    # still in progress can hang in shutdown and the survivors lose quorum
                    # (seen with 9 -> 1). Wait until node 1 is Synced at the new size.
                    _wait_size(c, i - 1, NODE_SETTLE_TIMEOUT)
                self.lis.phase(f"stopped nodes {want + 1}-{self.running}: {want} running")
            else:
                for i in range(self.running + 1, want + 1):
                    msg = c.node_start(i)
                    if h is not None:
                        for route in c.engine.routes():
                            _haproxy_cmd(h, f"set server {route.name}/n{i} state ready")
                    self.lis.phase(msg)
                if h is not None:
                    h.wait_all_up([f"n{i}" for i in range(1, want + 1)], timeout=NODE_SETTLE_TIMEOUT)
            self.running = want

    def _set_resources(self, t: TrialSpec) -> None:
        """Put every node under this trial's CPU and link limits, on the running cluster.

        The cluster's topology becomes the trial's, so anything that restarts a node (a fault's
        heal, settling) or restores a limit after a throttle fault uses these limits too."""
        c = self.cluster
        assert c is not None
        if t.topology == c.topology:
            return
        with self.ledger.phase("node changes"):
            before = c.topology
            c.topology = t.topology
            changed = []
            for i in c.topology.node_indexes():
                want, had = t.topology.node_resources(i), before.node_resources(i)
                if want == had:
                    continue
                changed.append(i)
                n = c.node(i)
                pid = n.proc.pid if n.proc is not None and n.alive() else None
                c.provider.set_limits(c.names.node_role(i), want, had, pid)
            if changed:
                r = t.topology.resources
                self.lis.phase(
                    f"limits now cpu_quota={r.cpu_quota or 'none'} cpuset={r.cpuset or 'all'} "
                    f"bandwidth={r.bandwidth or 'none'} on n{', n'.join(map(str, changed))}"
                )

    def _set_server(self, t: TrialSpec) -> None:
        c = self.cluster
        assert c is not None
        if not t.server:
            return
        sql = "SET GLOBAL " + ", ".join(f"{k} = {int(v)}" for k, v in t.server)
        for i in range(1, self.running + 1):
            c.node(i).query(sql, timeout=10)

    def _endpoint(self, t: TrialSpec, database: str = "sbtest") -> Endpoint:
        c = self.cluster
        assert c is not None
        if t.target == "all-nodes":
            ep = c.endpoint("node:1", database=database)
            ep = ep.model_copy(
                update={
                    "name": "all-nodes",
                    "addresses": tuple(
                        Address(host=c.topology.node_address(i)) for i in range(1, self.running + 1)
                    ),
                }
            )
        else:
            ep = c.endpoint(t.target, database=database)
        if t.interconnect == "socket":
            node = c.node(int(t.target[5:]))
            ep = ep.model_copy(update={"name": f"{t.target} socket", "socket": node.socket})
        if t.tls and self.certs is not None:
            ep = ep.model_copy(update={"tls": True, "tls_dir": self.certs})
        return ep

    def _client_hosts(self, t: TrialSpec) -> list[Any] | None:
        """Where the trial's clients run: the target node's own host for interconnect = socket,
        else the topology's client machines ([clients] hosts locally, role client over ssh),
        round-robin; None: this machine."""
        c = self.cluster
        assert c is not None
        if t.interconnect == "socket":
            return [c.node(int(t.target[5:])).host]
        return (self.client_hosts[: t.client_hosts] if t.client_hosts else self.client_hosts) or None

    # ---- data ---------------------------------------------------------------------------------

    def _drop_tables(self, db: str, names: Sequence[str]) -> None:
        """Drop the tables a prepare is about to make in `db` (through node 1), as `run` does;
        what was prepared with any of them is forgotten, every other table stays."""
        if not names:
            return
        conn, ep = self._admin(db)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SET SESSION lock_wait_timeout = {DROP_LOCK_WAIT}")
                ddl(cur, f"CREATE DATABASE IF NOT EXISTS `{db}`", ep.user)
                drop_tables(cur, db, names, ep.user)
        except pymysql.err.MySQLError as e:
            raise WorkloadError(
                f"cannot drop the tables left in {db} on {ep.name}: {e.args[-1] if e.args else e}; "
                f"see `SHOW PROCESSLIST` on {ep.name}"
            ) from None
        finally:
            conn.close()
        gone = set(names)
        self.prepared = {k: v for k, v in self.prepared.items() if k[0] != db or not (v & gone)}

    def _ensure_data(self, t: TrialSpec, opts: SysbenchOptions, run_id: int = 0) -> None:
        c = self.cluster
        assert c is not None
        ds = t.dataset()
        group = prepare_group(t.test)
        tables = expected_tables(opts, group)
        for db in t.databases():
            if ds is not None and (db, group, *ds) in self.prepared:
                continue
            if group == TPCC:
                with self.ledger.phase("prepare"):
                    self._load_tpcc(run_id, t, opts, db)
                self.prepared[(db, group, *(ds or ()))] = frozenset(tables)
                continue
            with self.ledger.phase("prepare"):
                self._drop_tables(db, tables)
                what = "bulk_insert tables" if ds is None else f"{t.tables} x {t.table_size} rows"
                if prepare_group(t.test) == ACCESS_GROUP:
                    what = f"{t.table_size} rows of about {t.row_size} bytes"
                if group == SLAP_GROUP:  # nothing of ours: say so instead of a table count
                    where = (f"mariadb-slap makes its own schema {SLAP_SCHEMA}" if t.slap_query is None
                             else f"slap_query runs in {db} as it is")  # fmt: skip
                    self.lis.phase(f"mysqlslap: nothing to prepare ({where})")
                else:
                    self.lis.phase(f"preparing {what} in {db}")
                base = opts.model_copy(update={"tls": False, "compression": False, "rate": 0})
                if ds is not None:
                    base = base.model_copy(update={"test": prepare_test(prepare_group(t.test))})
                self.sysbench.prepare(base, c.endpoint(self._writer(), database=db), databases=[db])
                if ds is not None:
                    self.prepared[(db, group, *ds)] = frozenset(tables)

    def _writer(self) -> str:
        """The target of the tool's own DDL and loads: a node that takes writes now (node 1 until
        a fault moved a single primary elsewhere)."""
        c = self.cluster
        assert c is not None
        node = c.admin_node()
        return f"node:{node.index if node is not None else 1}"

    def _admin(self, db: str) -> tuple[Any, Endpoint]:
        """A session on the writable node for the tool's own statements, and its endpoint."""
        c = self.cluster
        assert c is not None
        ep = c.endpoint(self._writer(), database=db)
        return admin_connect(self.connect or pymysql.connect, ep, self.sysbench.connect_timeout), ep

    def _load_tpcc(self, run_id: int, t: TrialSpec, opts: SysbenchOptions, db: str) -> None:
        """Load the tpcc tables at the trial's warehouses into `db` (through node 1), record the
        load (rows, seconds, bytes per warehouse, data/buffer-pool ratio) in the run's provenance
        and check the twelve conditions; a FAIL stops the experiment."""
        c = self.cluster
        assert c is not None
        self._drop_tables(db, TPCC_TABLES)
        self.lis.phase(f"loading tpcc: {t.warehouses} warehouse(s), {t.threads} thread(s) in {db}")
        base = opts.model_copy(update={"tls": False, "compression": False, "rate": 0, "test": TPCC})
        done: list[str] = []

        def progress(line: str) -> None:
            if line.startswith("CBLOAD warehouse "):
                done.append(line)
                self.lis.phase(f"  {line.removeprefix('CBLOAD ')} ({len(done)} of {t.warehouses})")

        t0 = self.ledger.monotonic()
        ep = c.endpoint(self._writer(), database=db)
        outputs = self.sysbench.prepare(base, ep, databases=[db], on_line=progress)
        seconds = round(self.ledger.monotonic() - t0, 3)
        rows = sum(tpcc.load_rows(o.stdout) for o in outputs)
        conn, ep = self._admin(db)
        load: dict[str, Any] = {
            "group": t.group, "nodes": self.running, "database": db, "warehouses": t.warehouses,
            "threads": t.threads, "seconds": seconds, "rows": rows,
            "rows_per_s": round(rows / seconds, 1) if seconds > 0 else None,
            **tpcc_size(conn, ep, db, t.warehouses),
        }  # fmt: skip
        self.lis.note(None, tpcc.load_line(load))
        conn, ep = self._admin(db)
        report = check_tpcc(conn, ep, db, "load")
        load["consistency"] = report.summary_line()
        self.lis.note(None, report.summary_line())
        loads = list(self.store.provenance(run_id).get("tpcc_load") or [])
        self.store.set_provenance(run_id, "tpcc_load", [*loads, load])
        if report.failed:
            raise ComponentError(f"{db} after the tpcc load: {report.summary_line()}")

    def _tpcc_after(self, run_id: int, trial_id: int, t: TrialSpec, opts: SysbenchOptions,
                    result: RunResult) -> tuple[list[str], str | None]:  # fmt: skip
        """A trial's stalls (any test), and for tpcc its figures and the consistency check of
        every database it wrote: the lines to show, and a failure naming the condition."""
        notes: list[str] = []
        failure = None
        stalls = trial_stalls(result)
        self.store.set_provenance(run_id, "stalls", stalls.to_json(), trial_id=trial_id)
        if stalls.count or t.test == TPCC:  # the study's point: shown for every tpcc trial
            notes.append(tpcc.stall_line(stalls))
        if t.test != TPCC:
            return notes, None
        figures = tpcc_figures(result, opts)
        if figures is not None:
            self.store.set_provenance(run_id, "tpcc", figures, trial_id=trial_id)
            notes += tpcc.figure_lines(figures)
        for db in t.databases():
            conn, ep = self._admin(db)
            report = check_tpcc(conn, ep, db, "run")
            self.store.set_provenance(run_id, f"tpcc_consistency:{db}", report.to_json(), trial_id=trial_id)
            notes.append(report.summary_line())
            if report.failed and failure is None:
                failure = report.summary_line()
        return notes, failure

    # ---- one trial ----------------------------------------------------------------------------

    def _rate(self, run_id: int, t: TrialSpec) -> int:
        if t.rate_of_max is None:
            return t.rate
        sig = group_signature(t)
        per_point: dict[str, list[float]] = {}
        for tr in self.store.trials(run_id):
            p = tr.params
            if (
                tr.status == "completed"
                and p.get("group_sig") == sig
                and p.get("test") == t.test
                and p.get("nodes") == t.nodes
                # tpcc: the same scale and mix (another load is another maximum)
                and p.get("warehouses") == t.describe().get("warehouses")
                and p.get("mix") == t.describe().get("mix")
                and not p.get("rate")
                and p.get("rate_of_max") is None
            ):
                s = self.store.summary(tr.id)
                if s is not None:
                    per_point.setdefault(p["point_key"], []).append(float(s["tps"]))
        if not per_point:
            raise ComponentError(
                f"{t.key}: rate_of_max needs an unlimited-rate trial of {t.test} on {t.nodes} node(s) "
                "earlier in the experiment; add one (e.g. a threads sweep) to the same cluster"
            )
        best = max(statistics.median(v) for v in per_point.values())
        return max(1, round(best * t.rate_of_max))

    def _snapshot(self, run_id: int, trial_id: int, when: str) -> None:
        c = self.cluster
        assert c is not None
        # The running nodes, each with its engine's own status (Galera's wsrep_%; Group
        # Replication's member state and the MySQL build its rootfs holds).
        snap: ServerSnapshot = snapshot_nodes([c.node(i) for i in range(1, self.running + 1)])
        self.store.set_provenance(run_id, f"server_variables@{when}", snap.variables, trial_id=trial_id)
        self.store.set_provenance(run_id, f"engine_status@{when}", snap.engine_status, trial_id=trial_id)
        if snap.errors:
            self.store.set_provenance(run_id, f"server_errors@{when}", snap.errors, trial_id=trial_id)
        if when == "start":
            # What only the servers know (the MySQL or MariaDB build, the Galera provider), at the
            # run level too, beside the binaries of this machine; an engine factor adds the other's.
            versions = dict(self.store.provenance(run_id).get("versions") or {})
            merged = {**versions, **snap.versions()}
            if merged != versions:
                self.store.set_provenance(run_id, "versions", merged)

    def _trial(self, run_id: int, seq: int, t: TrialSpec) -> str:
        t_begin = self.ledger.monotonic()
        self._set_nodes(t.nodes)
        self._set_resources(t)
        overhead_from = self.ledger.monotonic()
        opts = SysbenchOptions(
            test=t.test,
            tables=t.tables,
            table_size=t.table_size,
            threads=t.threads,
            time=t.duration,
            warmup=t.warmup,
            rate=0,
            rand_type=t.rand_type,
            tls=t.tls,
            compression=t.compression,
            batch=t.batch,
            row_size=t.row_size,
            warehouses=t.warehouses,
            mix=t.mix,
            slap_load_type=t.slap_load_type,
            slap_queries=t.slap_queries,
            slap_query=t.slap_query,
            slap_engine=t.slap_engine,
        )
        self._ensure_data(t, opts, run_id)
        rate = self._rate(run_id, t)
        opts = opts.model_copy(update={"rate": rate})
        overhead_from = self.ledger.monotonic()
        self._set_server(t)
        params = {
            **t.describe(),
            "key": t.key,
            "point_key": t.point_key,
            "point_label": t.point_label,
            "index": t.index,
            "group": t.group,
            "group_sig": group_signature(t),
            "effective_rate": rate,
            "options": opts.model_dump(mode="json"),
            **self._extra_params(t),
        }
        trial_id = self.store.add_trial(run_id, seq, t.test, params)
        self._snapshot(run_id, trial_id, "start")
        self.lis.trial_started(t, opts)
        endpoint = self._endpoint(t)

        rec = TrialTelemetry(self.cluster, self.store, run_id, trial_id, warmup=t.warmup,
                             total_time=opts.total_time, enabled=self.telemetry)  # fmt: skip

        def on_sample(s: Sample) -> None:
            self.store.add_sample(trial_id, s)
            self.lis.sample(t, s)
            line = rec.live_line()
            if line:
                self.lis.telemetry(t, line)

        nemesis = self._nemesis(run_id, trial_id, t)
        fault_time = 0.0  # healing and settling: its own phase, not trial overhead
        t_load = self.ledger.monotonic()
        if nemesis is not None:
            nemesis.start(time.monotonic())
        try:
            with rec:
                result = self.sysbench.run(
                    opts,
                    endpoint,
                    clients=t.clients,
                    separate_schemas=t.separate_schemas,
                    on_sample=on_sample,
                    preflight=False,
                    hosts=self._client_hosts(t),
                )
        finally:
            load = self.ledger.monotonic() - t_load
            measured = min(float(t.duration), max(0.0, load - t.warmup))
            self.ledger.add("warm-up", min(float(t.warmup), load))
            self.ledger.add("measuring", measured)
            if nemesis is not None:
                f0 = self.ledger.monotonic()
                with self.ledger.phase("faults"):
                    nemesis.heal_all()
                fault_time += self.ledger.monotonic() - f0
        record_run_result(self.store, trial_id, result)
        self.lis.bottleneck(t, rec.conclude(result, duration=float(t.duration)))
        if nemesis is not None:
            f0 = self.ledger.monotonic()
            with self.ledger.phase("faults"):
                self._after_faults(run_id, trial_id, t, nemesis, result)
            fault_time += self.ledger.monotonic() - f0
        self._snapshot(run_id, trial_id, "end")
        c0 = self.ledger.monotonic()
        with self.ledger.phase("checks"):
            notes, check_failure = self._tpcc_after(run_id, trial_id, t, opts, result)
        check_time = self.ledger.monotonic() - c0
        failure = result.failure() or check_failure
        status = "completed" if result.ok and check_failure is None else "failed"
        if failure:
            self.store.add_event(
                run_id,
                "trial_failed",
                {"key": t.key, "reason": failure, "stderr": result.stderr_tail[-5:]},
                trial_id=trial_id,
            )
        self.store.finish_trial(trial_id, status)  # type: ignore[arg-type]
        if t.test == BULK_GROUP:
            with self.ledger.phase("prepare"):
                for db in t.databases():
                    self._drop_tables(db, expected_tables(opts, BULK_GROUP))
        now = self.ledger.monotonic()
        # Everything of the trial that is neither warm-up, measuring nor faults: SET GLOBAL,
        # snapshots, storing, and sysbench's own start (the clients' common start lead,
        # connecting) and exit, which are inside `load` but measure nothing.
        warm = min(float(t.warmup), load)
        self.ledger.add("trial overhead", (now - overhead_from) - warm - measured - fault_time - check_time)
        self.lis.trial_finished(t, result, status, now - t_begin)
        for line in notes:
            self.lis.note(t, line)
        if t.cooldown:
            with self.ledger.phase("cool-down"):
                self.sleep(t.cooldown)
        return status

    # ---- faults inside a trial -------------------------------------------------------------------

    def _nemesis(self, run_id: int, trial_id: int, t: TrialSpec) -> Nemesis | None:
        if not t.faults:
            return None
        c = self.cluster
        assert c is not None
        planned = t.planned_faults(primary=c.primary())
        # The nemesis thread writes its events through its own connection (sqlite3 connections
        # are not shared across threads); a few events per fault, so one connection per event.
        path = Path(self.store.conn.execute("PRAGMA database_list").fetchone()[2])

        def sink(kind: str, detail: dict[str, Any], at: float) -> None:
            with Store.open(path) as st:
                st.add_event(run_id, kind, detail, trial_id=trial_id, t=round(at, 3))
            self.lis.phase(f"{at:6.1f} s  {detail.get('fault')}: {detail.get('phase')}")

        return Nemesis(c, planned, sink)

    def _after_faults(
        self, run_id: int, trial_id: int, t: TrialSpec, nemesis: Nemesis, result: RunResult
    ) -> None:
        """Record what each fault did to the load, then settle the cluster for the next trial."""
        per_second: dict[int, float] = {}
        errors: dict[int, int] = {}
        for s in result.samples:
            k = round(s.t)
            per_second[k] = per_second.get(k, 0.0) + s.tps
            errors[k] = errors.get(k, 0) + s.errors
        tps = sorted((float(k), v) for k, v in per_second.items())
        for label, start, end in nemesis.windows():
            base, back = tps_recovery(tps, start, baseline_window=max(1.0, start))
            # Errors belong to the fault until tps has recovered (clients often fail only when
            # the healed nodes come back), or to the end of the trial when it never did.
            until = start + back if back is not None else float("inf")
            in_window = sum(v for k, v in errors.items() if start <= k <= max(until, end + 1))
            self.store.add_event(
                run_id,
                "fault_effect",
                {
                    "fault": label,
                    "start": round(start, 2),
                    "end": round(end, 2),
                    "tps_before": None if base is None else round(base, 1),
                    "tps_recovered_after_s": None if back is None else round(back, 2),
                    "errors_until_recovered": in_window,
                },
                trial_id=trial_id,
            )
        for err in nemesis.errors():
            self.store.add_event(run_id, "fault_error", {"error": err}, trial_id=trial_id)
        self._settle(t)

    def _settle(self, t: TrialSpec) -> None:
        """Every node this trial ran with is back, Synced, in one Primary component of that size,
        and the balancers see them UP: the next trial must not inherit a fault's aftermath."""
        c = self.cluster
        assert c is not None
        # A cold start after a fault killed every node starts the whole cluster: nodes this
        # trial did not run are stopped again, one at a time, last first.
        for i in range(c.topology.cluster.nodes, t.nodes, -1):
            if c.node(i).alive():
                self.lis.phase(c.node_stop(i))
        for i in range(1, t.nodes + 1):
            if not c.node(i).alive():
                self.lis.phase(c.node_start(i))
        unready = [i for i in range(1, t.nodes + 1) if not _ready(c.node(i))]
        for line in c.recover(unready) if unready else []:
            self.lis.phase(line)
        for i in range(1, t.nodes + 1):
            c.node(i).wait_ready(SETTLE_TIMEOUT, expect_size=t.nodes)
        names = [f"n{i}" for i in range(1, t.nodes + 1)]
        for h in c.haproxies():
            if h.alive():
                h.wait_all_up(names, timeout=SETTLE_TIMEOUT)


def _design_facts(plan: Plan, part: str) -> dict[str, Any]:
    """What the planner said about a designed part (aliases, notes), for the report."""
    res = plan.designs.get(part)
    return {} if res is None else {"aliases": res.aliases, "design_notes": res.notes}


def _wait_size(c: Cluster, size: int, timeout: float) -> None:
    """Until node 1 is a ready member of a Primary component of exactly `size` members."""
    n1 = c.node(1)
    deadline = time.monotonic() + timeout
    h = None
    while time.monotonic() < deadline:
        h = n1.health()
        if h is not None and h.in_quorum and h.ready and h.size == size:
            return
        time.sleep(0.05)
    seen = f"{h.quorum_word} {h.state}, size {h.size}" if h else "not answering"
    raise ComponentError(
        f"node n1 is not ready in a Primary component of {size} after {timeout:g} s ({seen})"
    )


def _ready(n: Any) -> bool:
    h = n.health()
    return h is not None and h.ready


def _haproxy_cmd(h: Any, cmd: str) -> None:
    with contextlib.suppress(OSError):
        h.command(cmd)


def _res(t: TrialSpec) -> str:
    r = t.topology.resources
    parts = [
        f"{k}={v}"
        for k, v in (("cpu_quota", r.cpu_quota), ("cpuset", r.cpuset), ("bandwidth", r.bandwidth))
        if v
    ]
    return f" ({', '.join(parts)})" if parts else ""


def trial_rows(store: Store, run_id: int) -> list[dict[str, Any]]:
    """The latest completed trial of every key: params plus its all-clients summary."""
    latest = done_trials(store, run_id)
    by_id = {tr.id: tr for tr in store.trials(run_id)}
    out = []
    for key, tid in latest.items():
        tr = by_id[tid]
        s = store.summary(tid)
        out.append({"trial_id": tid, "seq": tr.seq, "key": key, **tr.params, "summary": s})
    out.sort(key=lambda r: r.get("index", 0))
    return out


def plan_json(plan: Plan) -> str:
    return json.dumps([t.describe() | {"key": t.key, "group": t.group} for t in plan.trials], indent=1)
