from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pymysql  # type: ignore[import-untyped, unused-ignore]
import pytest

from clusterbench.errors import PreflightError, WorkloadError
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.workloads.parse import Sample
from clusterbench.workloads.runner import SysbenchRunner
from clusterbench.workloads.shim import build_shim, shim_compile_argv
from clusterbench.workloads.sysbench import SysbenchOptions

DATA = Path(__file__).parent / "data"
EP = Endpoint(
    name="n1",
    addresses=(Address(host="198.18.0.11", port=3306),),
    user="sb",
    password="pw",
    tls_dir=None,
    auto_inc_off=True,
)



class FakeCursor:
    def __init__(self, tables: set[str]) -> None:
        self.tables = tables

    def __enter__(self) -> FakeCursor:
        return self

    def __exit__(self, *a: object) -> None:
        pass

    def execute(self, q: str, args: Any = None) -> None:
        self.q = q

    def fetchall(self) -> list[tuple[str]]:
        return [(t,) for t in sorted(self.tables)]


class FakeConn:
    def __init__(self, tables: set[str]) -> None:
        self.tables = tables

    def cursor(self) -> FakeCursor:
        return FakeCursor(self.tables)

    def close(self) -> None:
        pass


class FakeServer:
    """connect() double: records kwargs; tables appear when `after_prepare` is set."""

    def __init__(self, tables: set[str] | None = None, error: Exception | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.tables: set[str] = tables or set()
        self.error = error

    def __call__(self, **kw: Any) -> FakeConn:
        self.calls.append(kw)
        if self.error is not None:
            raise self.error
        return FakeConn(self.tables)




def test_run_streams_samples_and_sets_ld_preload_only_on_sysbench(
    fake_bin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_read_write_warmup1.out"))
    monkeypatch.setenv("LD_PRELOAD", "/parent/lib.so")
    server = FakeServer()
    runner = SysbenchRunner(sysbench_bin=fake_bin, shim=Path("/x/sbfix.so"), connect=server)
    got: list[Sample] = []
    res = runner.run(
        SysbenchOptions(test="oltp_read_write", threads=2, time=2, warmup=1), EP, on_sample=got.append
    )
    # the tail after the last report reaches the store too, and the samples add up to the summary
    assert [s.t for s in got] == [2.0, 3.0, 3.005]
    assert sum(s.events for s in got) == 1952
    assert res.ok and res.exit_code == 0 and not res.killed
    assert res.summary is not None and res.summary.events == 1952
    assert res.clients[0].stderr_tail[-1] == "LD_PRELOAD=/x/sbfix.so"
    assert server.calls[0]["host"] == "198.18.0.11" and server.calls[0]["connect_timeout"] == 5.0
    assert server.calls[0]["database"] == "sbtest"


def test_two_clients_on_own_schemas(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    server = FakeServer()
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=server)
    got: list[Sample] = []
    res = runner.run(
        SysbenchOptions(test="oltp_point_select", threads=2, time=2),
        EP,
        clients=2,
        separate_schemas=True,
        on_sample=got.append,
    )
    assert sorted((s.client, s.t) for s in got) == [(0, 1.0), (0, 2.001), (1, 1.0), (1, 2.001)]
    assert [c.database for c in res.clients] == ["sbtest1", "sbtest2"]
    assert "--mysql-db=sbtest2" in res.clients[1].command.argv
    assert [c["database"] for c in server.calls] == ["sbtest1", "sbtest2"]
    assert res.summary is not None and res.summary.events == 2 * 52256 and res.summary.clients == 2
    assert res.clients[0].stderr_tail == ["LD_PRELOAD=-"]


def test_overrun_is_killed_by_pid(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    monkeypatch.setenv("FAKE_HANG", "1")
    ticks = iter([0.0] + [1000.0] * 1000)
    runner = SysbenchRunner(
        sysbench_bin=fake_bin, connect=FakeServer(), monotonic=lambda: next(ticks), grace=5
    )
    res = runner.run(SysbenchOptions(test="oltp_point_select", time=2), EP)
    assert res.killed and not res.ok
    assert res.exit_code == -9
    assert res.failure() == "sysbench oltp_point_select overran its time limit and was killed"


def test_crash_without_summary(fake_bin: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = tmp_path / "crash.out"
    out.write_text(
        "FATAL: mysql_stmt_execute() returned error 2013 (Lost connection to server during query)\n"
    )
    monkeypatch.setenv("FAKE_OUT", str(out))
    monkeypatch.setenv("FAKE_RC", "1")
    res = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer()).run(
        SysbenchOptions(test="oltp_insert"), EP
    )
    assert res.exit_code == 1 and res.summary is None
    assert res.failure() == (
        "sysbench oltp_insert failed: FATAL: mysql_stmt_execute() returned error 2013 "
        "(Lost connection to server during query)"
    )


def test_prepare_trap_fatal_with_exit_zero(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "prepare_trap_threads2.out"))
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer())
    with pytest.raises(WorkloadError) as exc:
        runner.prepare(SysbenchOptions(test="oltp_read_write", threads=2), EP)
    assert str(exc.value) == (
        "sysbench prepare of oltp on sb@198.18.0.11:3306/sbtest failed: FATAL: unable to connect to "
        "MySQL server on host '127.0.0.77', port 3306, aborting..."
    )


def test_prepare_exit_zero_but_tables_missing(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "bulk_insert_prepare.out"))
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer())
    with pytest.raises(WorkloadError, match=r"exited 0 but tables are missing: sbtest1, sbtest2;"):
        runner.prepare(SysbenchOptions(test="oltp_read_write", tables=2), EP)


def test_prepare_refuses_leftover_tables(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "bulk_insert_prepare.out"))
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer({"sbtest1", "sbtest2", "sbtest3"}))
    with pytest.raises(WorkloadError) as exc:
        runner.prepare(SysbenchOptions(test="bulk_insert", threads=2), EP)
    assert str(exc.value) == (
        "tables sbtest1, sbtest2 already exist in sb@198.18.0.11:3306/sbtest; "
        "run the cleanup of the previous test group before preparing bulk_insert"
    )


def test_wrong_password_fails_fast_with_server_error(fake_bin: str) -> None:
    err = pymysql.err.OperationalError(1045, "Access denied for user 'sb'@'198.18.0.1' (using password: YES)")
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer(error=err))
    with pytest.raises(WorkloadError) as exc:
        runner.run(SysbenchOptions(test="oltp_read_write"), EP)
    assert str(exc.value) == (
        "cannot connect to sb@198.18.0.11:3306/sbtest: Access denied for user 'sb'@'198.18.0.1' "
        "(using password: YES) (error 1045); check address, user, password, TLS"
    )


def test_tls_preflight_uses_cert_dir(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    server = FakeServer()
    e = EP.model_copy(update={"tls": True, "tls_dir": Path("/certs")})
    SysbenchRunner(sysbench_bin=fake_bin, connect=server).check_endpoint(e)
    assert server.calls[0]["ssl_ca"] == "/certs/cacert.pem"
    assert server.calls[0]["ssl_cert"] == "/certs/client-cert.pem"
    assert server.calls[0]["ssl_key"] == "/certs/client-key.pem"


def test_build_shim_compiles_once(tmp_path: Path) -> None:
    src = tmp_path / "sbfix.c"
    src.write_text("/* c */")
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "mysql.h").write_text("")
    calls: list[list[str]] = []

    def fake_run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        Path(argv[argv.index("-o") + 1]).write_text("so")
        return subprocess.CompletedProcess(argv, 0, "", "")

    out = build_shim(tmp_path / "b", source=src, gcc="gcc", include=inc, run=fake_run)
    assert out == tmp_path / "b" / "sbfix.so" and out.read_text() == "so"
    assert calls == [shim_compile_argv(src, tmp_path / "b" / ".sbfix.so.tmp", "gcc", inc)]
    assert calls[0][:6] == ["gcc", "-O2", "-Wall", "-shared", "-fPIC", f"-I{inc}"]
    build_shim(tmp_path / "b", source=src, gcc="gcc", include=inc, run=fake_run)
    assert len(calls) == 1


def test_build_shim_names_make_setup_when_headers_missing(tmp_path: Path) -> None:
    src = tmp_path / "sbfix.c"
    src.write_text("")
    with pytest.raises(PreflightError, match=r"libmariadb-dev.*run `make setup`"):
        build_shim(tmp_path / "b", source=src, gcc="gcc", include=tmp_path / "nowhere")


def test_a_schema_just_created_elsewhere_is_waited_for(fake_bin: str) -> None:
    """Through a balancer, the next connection may reach a node that has not applied the CREATE
    DATABASE yet: 1049 is retried for a few seconds, any other error is not."""
    answers: list[Exception | None] = [pymysql.err.OperationalError(1049, "Unknown database 'sbtest2'")] * 2
    calls: list[str] = []
    now = [0.0]

    def connect(**kw: object) -> object:
        calls.append(str(kw.get("database")))
        err = answers.pop(0) if answers else None
        if err is not None:
            raise err
        return FakeServer()(**kw)

    def sleep(s: float) -> None:
        now[0] += s

    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=connect, monotonic=lambda: now[0], sleep=sleep)
    runner.check_endpoint(EP, ["sbtest2"])
    assert calls == ["sbtest2"] * 3 and now[0] == pytest.approx(0.2)
    answers[:] = [pymysql.err.OperationalError(1049, "Unknown database 'nope'")] * 100
    with pytest.raises(WorkloadError, match=r"'nope' \(error 1049\); create the database first"):
        runner.check_endpoint(EP, ["nope"])
    assert 5.2 <= now[0] <= 5.31  # gave up once 5 s had passed since the first 1049


class RecordingTracker:
    def __init__(self) -> None:
        self.live: dict[tuple[str, int], int] = {}
        self.events: list[tuple[str, str, int]] = []
        self.state_seen: list[str | None] = []

    def started(self, host: str, ref: Any, *, remote: bool = False, what: str = "sysbench") -> None:
        from clusterbench.hosts import process

        self.live[(host, ref.pid)] = ref.start_ticks
        self.events.append(("started", host, ref.pid))
        # the PID is the running client's own, with its real start time
        assert process.start_ticks(ref.pid) == ref.start_ticks
        self.state_seen.append(process.state(ref.pid))
        assert not remote and what == "sysbench oltp_point_select"

    def ended(self, host: str, ref: Any) -> None:
        del self.live[(host, ref.pid)]
        self.events.append(("ended", host, ref.pid))


def test_load_clients_are_recorded_while_they_run(fake_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    tracker = RecordingTracker()
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer(), tracker=tracker)
    res = runner.run(SysbenchOptions(test="oltp_point_select", threads=2, time=2), EP, clients=2)
    assert res.ok
    pids = sorted(c.pid for c in res.clients if c.pid is not None)
    assert len(pids) == 2
    started = sorted(p for kind, _, p in tracker.events if kind == "started")
    assert started == pids  # the PID sysbench runs as (the start script execs it)
    assert sorted(p for kind, _, p in tracker.events if kind == "ended") == pids
    assert tracker.live == {}
    assert all(st is not None and st not in ("Z", "X") for st in tracker.state_seen)


def test_load_clients_are_forgotten_when_the_run_is_interrupted(
    fake_bin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    monkeypatch.setenv("FAKE_HANG", "1")
    tracker = RecordingTracker()

    def boom(s: Sample) -> None:
        raise KeyboardInterrupt

    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer(), tracker=tracker)
    with pytest.raises(KeyboardInterrupt):
        runner.run(SysbenchOptions(test="oltp_point_select", time=2), EP, on_sample=boom)
    assert [k for k, _, _ in tracker.events] == ["started", "ended"]
    assert tracker.live == {}


def test_password_reaches_sysbench_in_a_private_option_file_only(
    fake_bin: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "oltp_point_select.out"))
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=FakeServer(), secrets_dir=secrets_dir)
    res = runner.run(SysbenchOptions(test="oltp_point_select", threads=2, time=2), EP, clients=2)
    assert res.ok
    for c in res.clients:
        assert "CONFIG mysql-password=pw MODE 0o600" in c.other_tail
    assert list(secrets_dir.iterdir()) == []  # removed when the run ended


def test_prepare_reads_the_password_from_an_option_file_that_is_removed_after(
    fake_bin: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAKE_OUT", str(DATA / "bulk_insert_prepare.out"))
    seen: list[tuple[str, ...]] = []
    real_spawn = SysbenchRunner(sysbench_bin=fake_bin).spawn

    def spawn(cmd: Any) -> Any:
        seen.append(cmd.argv)
        return real_spawn(cmd)

    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    server = FakeServer()
    runner = SysbenchRunner(sysbench_bin=fake_bin, connect=server, spawn=spawn, secrets_dir=secrets_dir)
    with pytest.raises(WorkloadError):  # the fake makes no tables
        runner.prepare(SysbenchOptions(test="oltp_read_write", tables=2), EP)
    [argv] = seen
    assert argv[1].startswith(f"--config-file={secrets_dir}/cb-sysbench-")
    assert not any("pw" in a.split("=", 1)[-1] for a in argv if a.startswith("--mysql"))
    assert list(secrets_dir.iterdir()) == []


class RemoteFiles:
    """A client machine of its own: files it was given, with their modes."""

    name = "c1"
    remote = True

    def __init__(self) -> None:
        self.files: dict[Path, tuple[str, int]] = {}

    def put_file(self, path: Path, content: str, *, mode: int = 0o644, owner: str | None = None) -> None:
        self.files[path] = (content, mode)

    def remove(self, path: Path) -> None:
        del self.files[path]

    def popen(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
        raise AssertionError("not used")


def test_option_file_on_a_client_machine_of_its_own() -> None:
    from clusterbench.workloads.clients import OptionFiles
    from clusterbench.workloads.placement import REMOTE_DIR
    from clusterbench.workloads.sysbench import build_command

    host = RemoteFiles()
    files = OptionFiles()
    cmd = build_command(SysbenchOptions(test="oltp_read_write"), EP, "run")
    a = files.apply(cmd, host)
    b = files.apply(cmd, host)
    assert a.argv == b.argv  # one file per host and content
    [(path, (content, mode))] = host.files.items()
    assert path.parent == REMOTE_DIR and path.name.startswith("cb-sysbench-")
    assert (content, mode) == ("mysql-password=pw\n", 0o600)
    assert a.argv[1] == f"--config-file={path}"
    files.remove()
    assert host.files == {}
