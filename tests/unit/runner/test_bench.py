from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pymysql
import pytest

from clusterbench.errors import InputError, WorkloadError
from clusterbench.runner import BenchListener, BenchPlan, BenchRunner, make_options, parse_tests, resolve_run
from clusterbench.runner.provenance import ServerSnapshot
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.store import Store
from clusterbench.trial.data import DataSets
from clusterbench.workloads import (
    KNOWN_TESTS,
    ClientRun,
    CommandOutput,
    RunResult,
    Sample,
    SysbenchCommand,
    SysbenchOptions,
    SysbenchRunner,
    parse_output,
)
from clusterbench.workloads.placement import ClientHost

DATA = Path(__file__).parents[1] / "workloads" / "data"
EP = Endpoint(
    name="balancer", addresses=(Address(host="198.18.9.2"),), user="bench", password="pw", tls_dir=None
)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "r.db", clock=Clock())


def recorded() -> Any:
    return parse_output((DATA / "oltp_point_select.out").read_text().splitlines(), warmup=0, threads=2)


class FakeSysbench(SysbenchRunner):
    """Records calls; `run` replays a recorded sysbench output (or raises what `fail_with` says)."""

    def __init__(self, *, tables: set[str] | None = None, exit_code: int = 0) -> None:
        super().__init__(shim=None)
        self.calls: list[tuple[str, str, tuple[str, ...]]] = []
        self.tables = tables if tables is not None else set()
        self.exit_code = exit_code
        self.interrupt_after: int | None = None

    def check_endpoint(
        self, endpoint: Endpoint, databases: Sequence[str] | None = None, tls: bool | None = None
    ) -> None:
        self.calls.append(("check", endpoint.name, tuple(databases or ())))

    def existing_tables(self, endpoint: Endpoint, database: str, tls: bool) -> set[str]:
        return set(self.tables)

    def prepare(self, opts: SysbenchOptions, endpoint: Endpoint, **kw: Any) -> list[CommandOutput]:
        self.calls.append(("prepare", opts.test, tuple(kw.get("databases") or ())))
        return []

    def cleanup(self, opts: SysbenchOptions, endpoint: Endpoint, **kw: Any) -> list[CommandOutput]:
        self.calls.append(("cleanup", opts.test, tuple(kw.get("databases") or ())))
        return []

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
        self.calls.append(("run", opts.test, (str(opts.threads), str(opts.time))))
        self.hosts = hosts
        self.endpoints = endpoints
        parsed = recorded()
        for i, s in enumerate(parsed.samples):
            if self.interrupt_after is not None and i == self.interrupt_after:
                raise KeyboardInterrupt
            assert on_sample is not None
            on_sample(s)
        cr = ClientRun(client=0, database="sbtest", command=SysbenchCommand(argv=("sysbench",)))
        cr.returncode, cr.samples, cr.summary = self.exit_code, parsed.samples, parsed.summary
        return RunResult(
            test=opts.test,
            clients=[cr],
            samples=parsed.samples,
            summary=parsed.summary if self.exit_code == 0 else None,
            exit_code=self.exit_code,
            stderr_tail=["boom"] if self.exit_code else [],
            killed=False,
        )


class FakeCursor:
    def __init__(self, log: list[str], tables: list[str]) -> None:
        self.log = log
        self.tables = tables
        self.asked: tuple[str, ...] | None = None

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str, args: Any = None) -> None:
        self.log.append(sql if args is None else f"{sql} {args}")
        self.asked = args[1:] if args is not None and "table_name IN (" in sql else None

    def fetchall(self) -> list[tuple[str]]:
        # as the server: a listing of named tables returns those that exist
        return [(t,) for t in self.tables if self.asked is None or t in self.asked]


class FakeConn:
    def __init__(self, log: list[str], tables: list[str]) -> None:
        self.log, self.tables = log, tables

    def cursor(self) -> FakeCursor:
        return FakeCursor(self.log, self.tables)

    def close(self) -> None:
        self.log.append("close")


class Probe:
    def __init__(self) -> None:
        self.n = 0

    def snapshot(self) -> ServerSnapshot:
        self.n += 1
        return ServerSnapshot(
            variables={"n1": {"version": "10.11.19-MariaDB", "max_connections": "200"}},
            engine_status={
                "n1": {"wsrep_provider_version": "26.4.23", "wsrep_local_state_comment": "Synced"}
            },
            errors={} if self.n % 2 else {"n3": "ConnectionError: node is not running"},
        )


class Recorder(BenchListener):
    def __init__(self) -> None:
        self.events: list[str] = []

    def run_created(self, run_id: int) -> None:
        self.events.append(f"run {run_id}")

    def phase(self, message: str) -> None:
        self.events.append(f"phase {message}")

    def trial_started(self, seq: int, test: str, options: SysbenchOptions) -> None:
        self.events.append(f"start {seq} {test}")

    def sample(self, seq: int, sample: Sample) -> None:
        self.events.append(f"sample {seq} {round(sample.t)}")

    def trial_finished(self, seq: int, test: str, result: RunResult, status: str) -> None:
        self.events.append(f"end {seq} {test} {status}")


FACTS = {"versions": {"sysbench": "sysbench 1.0.20"}, "kernel": "6.1.0", "cpu": "X x 2", "memory": "1 MiB"}


def bench(fake: FakeSysbench, sql: list[str], leftover: list[str] | None = None) -> BenchRunner:
    return BenchRunner(
        fake,
        Probe(),
        facts=lambda: dict(FACTS),
        connect=lambda **kw: FakeConn(sql, leftover or []),
        monotonic=iter(range(100)).__next__,
    )


def plan(*tests: str, **kw: Any) -> BenchPlan:
    opts = make_options(test=tests[0], threads=2, time=3, tables=2, table_size=100)
    return BenchPlan(kind=kw.pop("kind", "run"), tests=tests, options=opts, endpoint=EP, **kw)


def test_make_options_errors_name_the_flag() -> None:
    with pytest.raises(InputError, match="known tests: bulk_insert"):
        make_options(test="nope")
    with pytest.raises(InputError) as e:
        make_options(test="oltp_insert", threads=0)
    assert str(e.value) == "--threads: Input should be greater than 0 (got 0)"
    with pytest.raises(InputError, match="^--rand-type: "):
        make_options(test="oltp_insert", rand_type="zipf")


def test_plan_validation() -> None:
    with pytest.raises(InputError, match="unknown sysbench test 'x'"):
        plan("oltp_insert", "x")
    with pytest.raises(InputError, match="--clients must be at least 1, got 0"):
        plan("oltp_insert", clients=0)
    assert plan("oltp_insert", clients=2, separate_schemas=True).databases == ["sbtest1", "sbtest2"]


def test_parse_tests() -> None:
    assert parse_tests(None, KNOWN_TESTS) == KNOWN_TESTS
    assert parse_tests(" oltp_insert, bulk_insert ,", KNOWN_TESTS) == ("oltp_insert", "bulk_insert")
    with pytest.raises(InputError, match="--workload is empty"):
        parse_tests(" , ", KNOWN_TESTS)
    with pytest.raises(InputError, match="unknown sysbench test 'oltp'"):
        parse_tests("oltp", KNOWN_TESTS)


def test_resolve_run(store: Store) -> None:
    with pytest.raises(InputError, match="holds no runs yet"):
        resolve_run(store, "last")
    a = store.create_run("run")
    b = store.create_run("suite")
    assert resolve_run(store, "last") == b
    assert resolve_run(store, str(a)) == a
    with pytest.raises(InputError, match="number, 'last' or 'baseline', got 'x'"):
        resolve_run(store, "x")
    with pytest.raises(InputError, match="no run 99"):
        resolve_run(store, "99")


def test_check_creates_schemas_then_logs_in_everywhere() -> None:
    fake, sql = FakeSysbench(), list[str]()
    bench(fake, sql).check(plan("oltp_insert", clients=2, separate_schemas=True))
    create = "CREATE DATABASE IF NOT EXISTS"
    wait = "SET SESSION lock_wait_timeout = 10"  # bounded: a stale session may hold the schema's lock
    assert sql == [wait, f"{create} `sbtest1`", f"{create} `sbtest2`", "close"]
    assert fake.calls == [("check", "balancer", ("sbtest1", "sbtest2"))]


def test_run_stores_samples_summary_provenance_and_events(store: Store) -> None:
    fake, sql, rec = FakeSysbench(), list[str](), Recorder()
    out = bench(fake, sql, leftover=["sbtest1", "sbtest7"]).execute(plan("oltp_point_select"), store, rec)
    assert out.status == "completed"
    assert store.get_run(out.run_id).status == "completed"
    [trial] = store.trials(out.run_id)
    assert (trial.seq, trial.workload, trial.status) == (1, "oltp_point_select", "completed")
    assert (trial.params["threads"], trial.params["clients"], trial.params["endpoint"]) == (2, 1, "balancer")
    n = len(recorded().samples)
    assert n > 0 and len(store.samples(trial.id)) == n == len(out.trials[0].samples)
    summary = store.summary(trial.id)
    assert summary is not None and summary["tps"] == pytest.approx(recorded().summary.tps)
    # the tables the prepare makes (2) are dropped where an earlier run left them; sbtest7 is
    # not one of them and stays
    assert [s for s in sql if s.startswith("DROP")] == ["DROP TABLE IF EXISTS `sbtest`.`sbtest1`"]
    assert fake.calls == [
        ("prepare", "oltp_read_write", ("sbtest",)),  # the group's prepare test: tables with rows
        ("run", "oltp_point_select", ("2", "3")),
    ]
    prov = store.provenance(out.run_id)
    assert prov["versions"] == {
        "sysbench": "sysbench 1.0.20",
        "galera": "26.4.23",
        "mariadb_server": "10.11.19-MariaDB",
    }
    assert prov["endpoint"] == {
        "name": "balancer", "addresses": ["198.18.9.2:3306"], "user": "bench", "database": "sbtest",
        "tls": False, "auto_inc_off": True,
    }  # fmt: skip
    assert prov["workload"]["tests"] == ["oltp_point_select"] and prov["workload"]["options"]["tables"] == 2
    assert "password" not in str(prov)
    per_trial = store.provenance(out.run_id, trial.id)
    assert sorted(per_trial) == [
        "clients",
        "engine_status@end",
        "engine_status@start",
        "server_errors@end",
        "server_variables@end",
        "server_variables@start",
        "stalls",
    ]
    assert per_trial["engine_status@start"]["n1"]["wsrep_local_state_comment"] == "Synced"
    assert [e["kind"] for e in store.events(out.run_id)] == ["drop_tables", "prepare"]
    assert rec.events[:4] == [
        f"run {out.run_id}",
        "phase dropped 1 sysbench table(s) left in sbtest by an earlier run",
        "phase preparing oltp: 2 table(s) x 100 rows in sbtest",
        "start 1 oltp_point_select",
    ]
    assert rec.events[4:-1] == [f"sample 1 {i}" for i in range(1, n + 1)]
    assert rec.events[-1] == "end 1 oltp_point_select completed"


def test_suite_prepares_once_per_group_and_cleans_up(store: Store) -> None:
    fake = FakeSysbench()
    p = plan("bulk_insert", "oltp_point_select", "oltp_delete", kind="suite", cleanup=True)
    out = bench(fake, []).execute(p, store)
    assert [c[:2] for c in fake.calls] == [
        ("prepare", "bulk_insert"),
        ("run", "bulk_insert"),
        ("cleanup", "bulk_insert"),
        ("prepare", "oltp_read_write"),
        ("run", "oltp_point_select"),
        ("run", "oltp_delete"),
        ("cleanup", "oltp_point_select"),
    ]
    assert [(t.seq, t.workload, t.status) for t in store.trials(out.run_id)] == [
        (1, "bulk_insert", "completed"),
        (2, "oltp_point_select", "completed"),
        (3, "oltp_delete", "completed"),
    ]
    assert store.get_run(out.run_id).kind == "suite"


def test_no_prepare_needs_the_tables() -> None:
    fake = FakeSysbench(tables={"sbtest1"})
    message = (
        "--no-prepare, but tables sbtest2 are missing in sbtest; run without --no-prepare to create them"
    )
    # `check` says so before the run exists (run, fault and scenario call it first) ...
    with pytest.raises(WorkloadError) as e:
        bench(fake, []).check(plan("oltp_insert", prepare=False))
    assert str(e.value) == message
    # ... and `execute` on its own too
    with pytest.raises(WorkloadError) as e:
        bench(fake, []).execute(plan("oltp_insert", prepare=False), Store.open(Path(":memory:")))
    assert str(e.value) == message
    fake = FakeSysbench(tables={"sbtest1", "sbtest2"})
    store = Store.open(Path(":memory:"))
    out = bench(fake, []).execute(plan("oltp_insert", prepare=False), store)
    assert out.status == "completed" and [c[0] for c in fake.calls] == ["run"]


def test_interrupt_keeps_samples_and_marks_run_and_trial(store: Store) -> None:
    fake = FakeSysbench()
    fake.interrupt_after = 1
    with pytest.raises(KeyboardInterrupt):
        bench(fake, []).execute(plan("oltp_point_select"), store)
    [run] = store.list_runs()
    assert run.status == "interrupted" and run.ended_at is not None
    [trial] = store.trials(run.id)
    assert trial.status == "interrupted"
    assert len(store.samples(trial.id)) == 1
    assert store.events(run.id)[-1]["kind"] == "interrupted"


def test_failed_trial_fails_the_run_and_says_why(store: Store) -> None:
    fake = FakeSysbench(exit_code=1)
    out = bench(fake, []).execute(plan("oltp_point_select"), store)
    assert out.status == "failed" and store.get_run(out.run_id).status == "failed"
    assert out.failures == [
        "oltp_point_select: sysbench oltp_point_select exited with 1 and no summary; it said: boom"
    ]
    ev = store.events(out.run_id)[-1]
    assert ev["kind"] == "trial_failed" and ev["detail"]["stderr"] == ["boom"]


class TwoClientSysbench(FakeSysbench):
    """Two clients on two hosts; client 1 missed its --rate."""

    def run(self, opts: SysbenchOptions, endpoint: Endpoint, **kw: Any) -> RunResult:
        from clusterbench.workloads.parse import merge_summaries

        self.hosts = kw.get("hosts")
        parsed = recorded()
        clients = []
        for i in range(2):
            cr = ClientRun(
                client=i, database=f"sbtest{i + 1}", command=SysbenchCommand(argv=("sysbench",)),
                host=f"h{i + 1}", pid=100 + i, started_ns=10**18 + i * 1000, rate_asked=50000.0,
            )  # fmt: skip
            cr.returncode, cr.samples, cr.summary = 0, parsed.samples, parsed.summary
            cr.flags = ["rate_not_achieved"] if i == 1 else []
            clients.append(cr)
        return RunResult(test=opts.test, clients=clients, samples=parsed.samples * 2,
                         summary=merge_summaries([parsed.summary] * 2), exit_code=0, stderr_tail=[],
                         killed=False, start_ns=10**18, start_skew=0.01, launch_skew=0.000001)  # fmt: skip


def test_clients_hosts_skew_fairness_and_saturation_are_recorded(store: Store) -> None:
    from clusterbench.workloads.placement import LocalClientHost

    fake = TwoClientSysbench()
    hosts = (LocalClientHost("h1"), LocalClientHost("h2"))
    p = plan("oltp_point_select", clients=2, separate_schemas=True, client_hosts=hosts)
    out = bench(fake, []).execute(p, store)
    assert out.status == "completed" and fake.hosts == hosts
    [t] = store.trials(out.run_id)
    assert t.params["client_hosts"] == ["h1", "h2"]
    assert store.provenance(out.run_id)["workload"]["client_hosts"] == ["h1", "h2"]
    info = store.provenance(out.run_id, t.id)["clients"]
    assert info["start_skew_s"] == 0.01 and [c["host"] for c in info["clients"]] == ["h1", "h2"]
    assert info["interval_wall_spread_max_s"] is None  # the recorded output predates the wall clock
    assert info["fairness_tps"]["jain"] == pytest.approx(1.0) and info["fairness_tps"]["n"] == 2
    rows = store.trial_clients(t.id)
    assert [(r["client"], r["host"], r["database"], r["flags"]) for r in rows] == [
        (0, "h1", "sbtest1", []), (1, "h2", "sbtest2", ["rate_not_achieved"])]  # fmt: skip
    assert rows[1]["rate_achieved"] == pytest.approx(26076.67, abs=0.01)
    [ev] = [e for e in store.events(out.run_id) if e["kind"] == "client_saturated"]
    assert ev["detail"]["client"] == 1 and ev["detail"]["flags"] == ["rate_not_achieved"]
    assert ev["detail"]["warnings"] == [
        "client 1 on h2: reached 26076.7 tps of the 50000 asked with --rate (52%); less load than asked "
        "was applied, and latencies include the time events queued in sysbench"
    ]


def test_choose_client_hosts() -> None:
    from clusterbench.runner.bench import choose_client_hosts, default_clients
    from clusterbench.workloads.placement import LocalClientHost

    hosts = [LocalClientHost("c1"), LocalClientHost("c2"), LocalClientHost("c3")]
    assert choose_client_hosts("auto", hosts) == hosts and choose_client_hosts("auto", []) == []
    assert choose_client_hosts("local", hosts) == []
    assert choose_client_hosts("2", hosts) == hosts[:2]
    with pytest.raises(InputError) as e:
        choose_client_hosts("4", hosts)
    assert str(e.value) == (
        "--client-hosts 4: the cluster has 3 client host(s); add them with `[clients] hosts = K` in the "
        "topology (or hosts with role client over ssh) and run `up` again"
    )
    with pytest.raises(InputError, match=r"got '0'"):
        choose_client_hosts("0", hosts)
    assert (
        default_clients(None, hosts) == 3
        and default_clients(None, []) == 1
        and default_clients(5, hosts) == 5
    )
    assert default_clients(None, hosts[:1], [EP, EP, EP, EP]) == 4  # one per node with --target each-node


def test_each_node_targets_reach_the_runner_and_the_record(store: Store) -> None:
    n1 = EP.model_copy(update={"name": "node:1"})
    n2 = EP.model_copy(update={"name": "node:2"})
    fake = FakeSysbench()
    p = plan("oltp_point_select", clients=2, client_endpoints=(n1, n2))
    out = bench(fake, []).execute(p, store)
    assert out.status == "completed" and fake.endpoints == (n1, n2)
    [t] = store.trials(out.run_id)
    assert t.params["client_targets"] == ["node:1", "node:2"]
    assert store.provenance(out.run_id)["workload"]["client_targets"] == ["node:1", "node:2"]


def test_tags_and_notes_are_stored_when_the_run_is_created(store: Store) -> None:
    """A drill or run killed at any moment keeps its --tag and --notes: they go in with the run."""
    seen: list[tuple[list[str], str]] = []

    class Watch(BenchListener):
        def run_created(self, run_id: int) -> None:
            seen.append((store.tags(run_id), store.get_run(run_id).notes))

    fake = FakeSysbench()
    fake.interrupt_after = 1
    with pytest.raises(KeyboardInterrupt):
        labelled = plan("oltp_point_select", tags=("drill", "v1"), notes="n3 by hand")
        bench(fake, []).execute(labelled, store, Watch())
    [run] = store.list_runs()
    assert seen == [(["drill", "v1"], "n3 by hand")]
    assert run.status == "interrupted" and store.tags(run.id) == ["drill", "v1"] and run.notes == "n3 by hand"
    # without labels: none stored
    out = bench(FakeSysbench(), []).execute(plan("oltp_point_select"), store)
    assert store.tags(out.run_id) == [] and store.get_run(out.run_id).notes == ""


def test_a_drill_gives_its_labels_to_the_run_it_creates(tmp_path: Path) -> None:
    from clusterbench.scenario.drill import Drill
    from clusterbench.scenario.spec import ScenarioSpec
    from clusterbench.spec.topology import Topology
    from clusterbench.trial.recorder import Recorder as StoreRecorder

    class OneEndpoint:
        topology = Topology()

        def endpoint(self, target: str) -> Endpoint:
            return EP

        def client_hosts(self) -> list[Any]:
            return []

        def model_dump(self) -> dict[str, Any]:
            return {}

    e = Drill(OneEndpoint(), ScenarioSpec(), tmp_path / "r.db", FakeSysbench(),  # type: ignore[arg-type]
              tags=["drill", "soak"], notes="after the upgrade", facts=dict)  # fmt: skip
    with Store.open(tmp_path / "r.db") as st:
        run_id = e._create_run(StoreRecorder(st), "clusterbench scenario x.toml", [])
        run = st.get_run(run_id)
        assert st.tags(run_id) == ["drill", "soak"]
        assert run.notes == "after the upgrade" and run.kind == "scenario"


class LockedCursor(FakeCursor):
    """The first DROP waits out lock_wait_timeout (an earlier run's session holds the table's
    metadata lock); the stale-session query names session 42 (or none)."""

    def __init__(self, log: list[str], tables: list[str], stale: list[int]) -> None:
        super().__init__(log, tables)
        self.stale = stale
        self.rows: list[tuple[Any]] = []

    def execute(self, sql: str, args: Any = None) -> None:
        super().execute(sql, args)
        if sql.startswith("SELECT table_name"):
            self.rows = [(t,) for t in self.tables]
        elif sql.startswith("SELECT p.ID"):
            self.rows = [(i,) for i in self.stale]
        elif sql.startswith("DROP") and not any(s.startswith("KILL") for s in self.log):
            raise pymysql.err.OperationalError(1205, "Lock wait timeout exceeded; try restarting transaction")

    def fetchall(self) -> list[tuple[Any]]:
        return self.rows


def test_a_prepare_drops_only_its_own_tables_and_mysqlslap_none(store: Store) -> None:
    from clusterbench.runner import make_options
    from clusterbench.workloads.sysbench import expected_tables

    log: list[str] = []
    there = ["sbtest1", "sbtest4", "sbtest20", "orders"]
    runner = DataSets(FakeSysbench(), lambda **kw: FakeConn(log, there))
    slap = expected_tables(make_options(test="mysqlslap"), "mysqlslap")
    assert runner.drop(EP, "sbtest", slap) == [] and log == []  # not even a connection
    access = expected_tables(make_options(test="access_pk", row_size=20), "access")
    assert runner.drop(EP, "sbtest", access) == ["sbtest20"]  # the oltp tables stay
    oltp = expected_tables(make_options(test="oltp_read_write", tables=2), "oltp")
    assert runner.drop(EP, "sbtest", oltp) == ["sbtest1"]  # sbtest4 is not one of its 2
    assert [s for s in log if s.startswith("DROP")] == [
        "DROP TABLE IF EXISTS `sbtest`.`sbtest20`", "DROP TABLE IF EXISTS `sbtest`.`sbtest1`",
    ]  # fmt: skip


def test_a_drop_blocked_by_a_stale_session_kills_it_once_else_one_line(store: Store) -> None:
    from clusterbench.trial.data import STALE_SESSIONS_SQL

    log: list[str] = []
    conn = FakeConn(log, ["sbtest1"])
    conn.cursor = lambda: LockedCursor(log, ["sbtest1"], [42])  # type: ignore[method-assign]
    runner = DataSets(FakeSysbench(), lambda **kw: conn)
    assert runner.drop(EP, "sbtest", ["sbtest1", "sbtest2"]) == ["sbtest1"]
    assert log[log.index("SET SESSION lock_wait_timeout = 10") :] == [
        "SET SESSION lock_wait_timeout = 10",
        "DROP TABLE IF EXISTS `sbtest`.`sbtest1`",
        f"{STALE_SESSIONS_SQL} ('{EP.user}',)",
        "KILL 42",
        "DROP TABLE IF EXISTS `sbtest`.`sbtest1`",
        "close",
    ]
    # Nothing to kill: one line, no traceback.
    log.clear()
    conn.cursor = lambda: LockedCursor(log, ["sbtest1"], [])  # type: ignore[method-assign]
    with pytest.raises(WorkloadError) as e:
        runner.drop(EP, "sbtest", ["sbtest1", "sbtest2"])
    assert str(e.value) == (
        "cannot drop the sysbench tables left in sbtest: Lock wait timeout exceeded; try restarting "
        "transaction; see `SHOW PROCESSLIST` through the balancer endpoint"
    )


def test_the_prepare_line_says_what_access_and_mysqlslap_prepare(store: Store) -> None:
    rec = Recorder()
    opts = make_options(test="access_pk_batch", threads=1, time=3, table_size=100, batch=8, row_size=512)
    access = BenchPlan(kind="run", tests=("access_pk_batch",), options=opts, endpoint=EP)
    bench(FakeSysbench(), []).execute(access, store, rec)
    assert "phase preparing access: sbtest512, 100 rows of about 512 bytes in sbtest" in rec.events
    rec = Recorder()
    opts = make_options(test="mysqlslap", threads=1, time=3)
    slap = BenchPlan(kind="run", tests=("mysqlslap",), options=opts, endpoint=EP)
    bench(FakeSysbench(), []).execute(slap, store, rec)
    assert "phase mysqlslap: nothing to prepare (mariadb-slap makes its own schema cbslap)" in rec.events
    assert not any(e.startswith("phase preparing") for e in rec.events)  # was "4 table(s) x 10000 rows"


class DurableProbe(Probe):
    """A MariaDB whose flush setting changes after the first trial."""

    def snapshot(self) -> ServerSnapshot:
        self.n += 1
        flush = "2" if self.n <= 2 else "1"
        variables = {"version": "10.11.19-MariaDB", "sync_binlog": "0"}
        variables["innodb_flush_log_at_trx_commit"] = flush
        return ServerSnapshot(variables={"n1": variables}, engine_status={"n1": {}}, errors={})


def test_the_durability_in_effect_is_shown_once_and_again_when_it_changes(store: Store) -> None:
    rec = Recorder()
    runner = BenchRunner(
        FakeSysbench(), DurableProbe(), facts=lambda: dict(FACTS),
        connect=lambda **kw: FakeConn([], []), monotonic=iter(range(100)).__next__,
    )  # fmt: skip
    runner.execute(plan("oltp_point_select", "oltp_delete", "oltp_insert", kind="suite"), store, rec)
    shown = [e for e in rec.events if e.startswith("phase durability")]
    assert shown == [
        "phase durability: innodb_flush_log_at_trx_commit = 2 (the server's default is 1); "
        "sync_binlog = 0 (the server's default)",
        "phase durability: innodb_flush_log_at_trx_commit = 1 (the server's default); "
        "sync_binlog = 0 (the server's default)",
    ]
