"""sysbench through clusterbench against a real standalone mariadbd (no Galera). Needs root.

Starts its own server as user mysql on CB_IT_ADDR (default 127.0.0.77):3306 with a temp datadir,
and stops it by PID at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pymysql  # type: ignore[import-untyped, unused-ignore]
import pytest

from clusterbench.errors import WorkloadError
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.workloads import (
    SYSBENCH_TESTS,
    Sample,
    SysbenchOptions,
    SysbenchRunner,
    build_shim,
    group_tests,
)

pytestmark = pytest.mark.integration

ADDR = os.environ.get("CB_IT_ADDR", "127.0.0.77")
NEEDED = ("mariadbd", "mariadb-install-db", "sysbench", "gcc")


@pytest.fixture(scope="module")
def server() -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root to run mariadbd as user mysql")
    missing = [b for b in NEEDED if shutil.which(b) is None]
    if missing or not Path("/usr/include/mariadb/mysql.h").exists():
        pytest.skip(f"missing {', '.join(missing) or 'libmariadb-dev'}; run `make setup`")
    # not under pytest's tmp dir: that is 0700 root and mariadbd runs as mysql
    d = Path(tempfile.mkdtemp(prefix="cb-it-mariadb-"))
    (d / "data").mkdir()
    (d / "tmp").mkdir()
    cnf = d / "my.cnf"
    cnf.write_text(
        f"[mysqld]\nuser=mysql\ndatadir={d}/data\ntmpdir={d}/tmp\nsocket={d}/mysqld.sock\n"
        f"pid-file={d}/mysqld.pid\nlog-error={d}/error.log\nbind-address={ADDR}\nport=3306\n"
        "skip-name-resolve\ninnodb_buffer_pool_size=128M\ninnodb_log_file_size=48M\n"
        "innodb_flush_log_at_trx_commit=2\nmax_connections=200\nperformance_schema=OFF\n"
    )
    shutil.chown(d, "mysql", "mysql")
    for p in d.rglob("*"):
        shutil.chown(p, "mysql", "mysql")
    os.chmod(d, 0o755)
    install = subprocess.run(
        ["mariadb-install-db", f"--defaults-file={cnf}", "--user=mysql"], capture_output=True, text=True
    )
    if install.returncode != 0:
        shutil.rmtree(d, ignore_errors=True)
        pytest.fail(f"mariadb-install-db failed: {install.stderr.strip()[-300:]}")
    proc = subprocess.Popen(
        ["mariadbd", f"--defaults-file={cnf}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        sock = d / "mysqld.sock"
        for _ in range(100):
            if proc.poll() is not None:
                pytest.fail(f"mariadbd exited: {(d / 'error.log').read_text()[-500:]}")
            try:
                conn = pymysql.connect(unix_socket=str(sock), user="root")
                break
            except pymysql.err.MySQLError:
                time.sleep(0.1)
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE sbtest")
            cur.execute("CREATE USER 'sbtest'@'%' IDENTIFIED BY 'sbpass'")
            cur.execute("GRANT ALL ON *.* TO 'sbtest'@'%'")
        conn.close()
        yield d
    finally:
        proc.send_signal(signal.SIGTERM)  # our own mariadbd, by PID
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)


# seconds per test of the eleven: per-second samples from the first report on
SUITE_TIME = 2


@pytest.fixture(scope="module")
def endpoint(server: Path) -> Endpoint:
    return Endpoint(
        name="standalone",
        addresses=(Address(host=ADDR, port=3306),),
        user="sbtest",
        password="sbpass",
        tls_dir=None,
        auto_inc_off=False,
    )


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory, server: Path) -> SysbenchRunner:
    return SysbenchRunner(shim=build_shim(tmp_path_factory.mktemp("shim")), grace=20)


def check_samples(samples: list[Sample], seconds: int) -> None:
    # one sample per second; the report due at the very end races sysbench's exit, and what it did
    # not report is the tail, a sample of its own (in the last second when that was reported)
    seen = sorted({round(s.t) for s in samples})
    assert len(seen) in (seconds - 1, seconds, seconds + 1) and seen == list(range(1, len(seen) + 1))
    for s in samples:
        if s.interval < 0.5 and s.hist is None:
            continue  # a short tail without a histogram of its own
        assert s.tps > 0
        assert s.lat_min_ms is not None and s.lat_avg_ms is not None and s.lat_max_ms is not None
        assert s.lat_min_ms <= s.lat_avg_ms <= s.lat_max_ms


def test_all_eleven_tests(runner: SysbenchRunner, endpoint: Endpoint) -> None:
    ran = []
    for group in group_tests(list(SYSBENCH_TESTS)):
        base = SysbenchOptions(test=group.tests[0], tables=1, table_size=5000, threads=2, time=SUITE_TIME)
        runner.prepare(base, endpoint)
        try:
            for test in group.tests:
                got: list[Sample] = []
                res = runner.run(base.model_copy(update={"test": test}), endpoint, on_sample=got.append)
                assert res.ok, res.failure()
                check_samples(got, SUITE_TIME)
                assert res.summary is not None and res.summary.events > 0
                s = res.summary
                assert s.lat_min_ms <= s.lat_avg_ms <= s.lat_max_ms
                assert s.hist is not None and s.hist.total == s.events
                ran.append(test)
        finally:
            runner.cleanup(base, endpoint)
    assert sorted(ran) == sorted(SYSBENCH_TESTS)


@pytest.mark.parametrize("rate", [0, 150])
def test_a_warm_up_until_steady_is_cut_exactly_on_real_reports(
    runner: SysbenchRunner, endpoint: Endpoint, rate: int
) -> None:
    """sysbench runs warm-up + time without a checkpoint; whatever MSER cuts (none, one or two
    seconds), the samples kept add up to the summary, whose histogram holds exactly its events,
    and the summary covers the run less the cut."""
    opts = SysbenchOptions(test="oltp_read_only", tables=1, table_size=5000, threads=2, time=4, warmup=2,
                           warmup_until="steady", rate=rate)  # fmt: skip
    runner.prepare(opts, endpoint)
    try:
        got: list[Sample] = []
        res = runner.run(opts, endpoint, on_sample=got.append)
        assert res.ok, res.failure()
        argv = res.clients[0].command.argv
        assert "--time=6" in argv and not any(a.startswith("--report-checkpoints") for a in argv)
        c = res.clients[0]
        cut = len(c.warmup_samples)
        assert cut <= 2 and res.warmup_cut == (c.warmup_samples[-1].t if cut else 0.0)
        assert sorted(s.t for s in got) == sorted(s.t for s in res.samples)
        s = res.summary
        assert s is not None and sum(x.events for x in res.samples) == s.events > 0
        assert s.hist is not None
        if cut:
            # an interval's histogram and counters can differ by the few transactions that end
            # while its report is taken (5 of 4,833 seen on a loaded machine)
            assert abs(s.hist.total - s.events) <= 0.01 * s.events
        else:
            assert s.hist.total == s.events
        assert s.lat_min_ms <= s.lat_avg_ms <= s.lat_max_ms
        assert s.duration == pytest.approx(6.0 - res.warmup_cut, abs=0.3)
        print("rate", rate, "cut", cut, "s; tps", round(s.tps, 1))
    finally:
        runner.cleanup(opts, endpoint)


def _kill_sessions(server: Path, after: float) -> None:
    time.sleep(after)
    conn = pymysql.connect(unix_socket=str(server / "mysqld.sock"), user="root")
    with conn.cursor() as cur:
        cur.execute("SELECT id FROM information_schema.processlist WHERE user = 'sbtest'")
        for (sid,) in cur.fetchall():
            with contextlib.suppress(pymysql.err.MySQLError):  # the session may be gone already
                cur.execute(f"KILL {int(sid)}")
    conn.close()


def test_run_survives_killed_connections(runner: SysbenchRunner, endpoint: Endpoint, server: Path) -> None:
    opts = SysbenchOptions(test="oltp_read_write", tables=2, table_size=5000, threads=4, time=4)
    runner.prepare(opts, endpoint)
    try:
        killer = threading.Thread(target=_kill_sessions, args=(server, 1.5))
        killer.start()
        res = runner.run(opts, endpoint)
        killer.join()
        assert res.exit_code == 0, res.failure()
        assert res.summary is not None and res.summary.reconnects >= 1
        assert sum(s.reconnects for s in res.samples) == res.summary.reconnects
    finally:
        runner.cleanup(opts, endpoint)


def test_prepare_trap_is_detected(runner: SysbenchRunner, endpoint: Endpoint) -> None:
    bad = endpoint.model_copy(update={"password": "wrong"})
    opts = SysbenchOptions(test="oltp_read_write", tables=2, table_size=100, threads=2)
    # the preflight connect fails fast with the server's error
    with pytest.raises(WorkloadError, match=r"Access denied for user 'sbtest'.*\(error 1045\)"):
        runner.prepare(opts, bad)
    # and without it, sysbench's prepare exits 0 with --threads=2; the FATAL is still caught
    trap = SysbenchRunner(sysbench_bin=runner.sysbench_bin)
    trap.check_endpoint = lambda *a, **k: None  # type: ignore[method-assign]
    trap.existing_tables = lambda *a, **k: set()  # type: ignore[method-assign]
    with pytest.raises(
        WorkloadError, match=r"failed: FATAL: .*Access denied|failed: FATAL: unable to connect"
    ):
        trap.prepare(opts, bad)
