"""The access-method microbenchmark and mysqlslap as workloads, as real `clusterbench` processes
against the session's 3-node Galera cluster; every check reads the results store they wrote."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from clusterbench.analysis.document import render_markdown
from clusterbench.analysis.workload_tables import access_results
from clusterbench.cluster import Cluster
from clusterbench.store import Store
from clusterbench.workloads import SysbenchOptions, SysbenchRunner

pytestmark = pytest.mark.integration


def cb(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run(
        ["clusterbench", *args], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


def test_access_methods_per_row_and_batched_is_cheaper(cluster: Cluster, tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    res = cb("suite", "-n", cluster.topology.name, "-w", "access_pk,access_pk_batch,access_range,access_noop",
             "--target", "node:1", "--threads", "1", "--time", "3", "--table-size", "2000",
             "--results", str(db))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "access methods (µs per row read)" in res.stdout
    print(res.stdout)
    res2 = cb("run", "-n", cluster.topology.name, "-w", "access_uk_batch", "--row-size", "2048",
              "--target", "node:1", "--threads", "1", "--time", "2", "--table-size", "2000", "--cleanup",
              "--results", str(db))  # fmt: skip
    assert res2.returncode == 0, res2.stderr
    with Store.open(db) as store:
        runs = store.list_runs()
        rows = {r.test: r for r in access_results(store, runs[0].id)}
        big = access_results(store, runs[1].id)
        md = render_markdown(store, runs[0].id)
    assert set(rows) == {"access_pk", "access_pk_batch", "access_range", "access_noop"}
    assert [(r.rows, r.row_size) for r in rows.values()] == [(1, 20), (32, 20), (32, 20), (1, 20)]
    for r in [*rows.values(), *big]:
        assert r.us_avg > 0 and r.accesses_per_s > 0 and r.us_p95 is not None and r.us_p95 > 0, r
    # a batch of 32 costs one round trip: per row it is far cheaper than 32 serial reads
    assert rows["access_pk_batch"].us_avg < rows["access_pk"].us_avg / 2
    assert rows["access_pk_batch"].accesses_per_s > rows["access_pk"].accesses_per_s
    assert [(r.test, r.rows, r.row_size) for r in big] == [("access_uk_batch", 32, 2048)]
    assert "## Access methods" in md and "| pk_batch | 20 | 32 |" in md


def _slap_cmdlines(stop: threading.Event, seen: list[str]) -> None:
    while not stop.is_set():
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                if cmd.startswith("mariadb-slap "):
                    seen.append(cmd)
        stop.wait(0.05)


def test_mysqlslap_counts_queries_and_keeps_the_password_off_the_command_line(
    cluster: Cluster, tmp_path: Path
) -> None:
    db = tmp_path / "results.db"
    seen: list[str] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_slap_cmdlines, args=(stop, seen), daemon=True)
    watcher.start()
    try:
        # one node: through the balancer, Galera's certification conflicts (1213) between nodes end
        # mariadb-slap's run, which does not retry (docs/workloads.md#mysqlslap)
        res = cb("run", "-n", cluster.topology.name, "-w", "mysqlslap", "--threads", "4", "--time", "3",
                 "--slap-queries", "50", "--target", "node:1", "--results", str(db))  # fmt: skip
    finally:
        stop.set()
        watcher.join()
    assert res.returncode == 0, res.stderr
    assert "mysqlslap (seconds per run of all queries)" in res.stdout
    print(res.stdout)
    password = cluster.credentials().app_password
    assert seen and all(password not in c and "--password" not in c for c in seen)
    assert all("--defaults-extra-file=" in c and "--concurrency=4" in c for c in seen)
    with Store.open(db) as store:
        trial = store.trials(store.list_runs()[0].id)[0]
        s = store.summary(trial.id)
        samples = store.samples(trial.id)
    assert s is not None and s["events"] >= 1 and s["threads"] == 4
    # every run: 4 clients x 50 queries, counted by mariadb-slap itself
    assert round(s["qps_other"] * s["duration"]) == 200 * s["events"]
    assert len(samples) == s["events"]
    assert 0 < s["lat_min"] <= s["lat_avg"] <= s["lat_max"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-w", "mysqlslap", "--clients", "2"], "--clients 2: mysqlslap runs as one client process"),
        (["-w", "mysqlslap", "--slap-load-type", "heavy"], "--slap-load-type: Input should be"),
        (["-w", "access_pk_batch", "--batch", "0"], "--batch: Input should be greater than or equal to 1"),
        (["-w", "access_pk", "--target", "socket:9"], "--target socket:9: no such node; use socket:N"),
    ],
)
def test_bad_settings_are_refused_in_one_line(cluster: Cluster, args: list[str], message: str) -> None:
    res = cb("run", "-n", cluster.topology.name, "--time", "2", *args)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and message in res.stderr, res.stderr


@pytest.mark.parametrize("engine", ["galera", "group_replication"])
def test_access_over_the_nodes_unix_socket_from_the_nodes_host(
    request: pytest.FixtureRequest, engine: str
) -> None:
    """interconnect = socket: sysbench runs on node 1's own host and reaches the server through the
    socket the engine names (for Group Replication, the chrooted mysqld's socket outside the
    rootfs); the server sees every one of its sessions come from 'localhost', none over TCP."""
    c: Cluster = request.getfixturevalue("cluster" if engine == "galera" else "gr_cluster")
    node = c.node(1)
    tcp = c.endpoint("node:1")
    sock = tcp.model_copy(update={"name": "node:1 socket", "socket": node.socket})
    opts = SysbenchOptions(test="access_pk", table_size=200, threads=1, time=2, batch=8)
    runner = SysbenchRunner()
    seen: set[str] = set()
    stop = threading.Event()
    sql = f"SELECT host FROM information_schema.processlist WHERE user = '{tcp.user}'"

    def watch() -> None:
        while not stop.is_set():
            seen.update(str(h).split(":")[0] for (h,) in node.query(sql))
            stop.wait(0.1)

    runner.prepare(opts, tcp)
    watcher = threading.Thread(target=watch, daemon=True)
    try:
        watcher.start()
        result = runner.run(opts, sock, hosts=[node.host])
    finally:
        stop.set()
        watcher.join()
        runner.cleanup(opts, tcp)
    assert result.ok, result.failure()
    assert result.summary is not None and result.summary.events > 100
    assert [cl.host for cl in result.clients] == [node.host.name]
    assert "--mysql-socket=" + str(node.socket) in result.clients[0].command.argv
    assert seen == {"localhost"}, seen


def test_run_with_target_socket_runs_on_the_nodes_host(cluster: Cluster, tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    res = cb("run", "-n", cluster.topology.name, "-w", "access_noop", "--target", "socket:2",
             "--threads", "1", "--time", "2", "--table-size", "200", "--cleanup",
             "--results", str(db))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"socket:2 ({cluster.node(2).socket})" in res.stdout
    with Store.open(db) as store:
        trial = store.trials(store.list_runs()[0].id)[0]
        s = store.summary(trial.id)
        sql = "SELECT host FROM trial_clients WHERE trial_id = ?"
        hosts = [r[0] for r in store.conn.execute(sql, (trial.id,))]
    assert s is not None and s["events"] > 100
    assert hosts == [cluster.node(2).host.name]


def test_a_scenario_runs_an_access_load_with_its_batch_and_row_size(cluster: Cluster, tmp_path: Path) -> None:
    """[load] batch and row_size of a scenario file reach the drill's load: the stored options, and
    the access table's rows per access and row bytes, read from what sysbench did."""
    db = tmp_path / "results.db"
    f = tmp_path / "access.toml"
    f.write_text(
        'name = "access load"\n[load]\nworkload = "access_pk_batch"\nthreads = 1\nduration = 4\n'
        'target = "node:1"\ntable_size = 500\nbatch = 8\nrow_size = 512\n'
        "[verify]\nledger_clients = 0\nprober = false\n"
    )
    res = cb("scenario", str(f), "-n", cluster.topology.name, "--results", str(db), "--no-telemetry")
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    with Store.open(db) as store:
        run_id = store.list_runs()[0].id
        trial = store.trials(run_id)[0]
        rows = access_results(store, run_id)
        s = store.summary(trial.id)
    assert (trial.workload, trial.params["batch"], trial.params["row_size"]) == ("access_pk_batch", 8, 512)
    assert [(r.test, r.rows, r.row_size) for r in rows] == [("access_pk_batch", 8, 512)]
    assert s is not None and s["events"] > 50 and rows[0].us_avg > 0
