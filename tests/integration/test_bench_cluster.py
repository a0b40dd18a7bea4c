"""`clusterbench run / suite / report / results` against the session's real 3-node cluster 'cbit'.

Every command runs as a real `clusterbench` process (CLUSTERBENCH_HOME is the session's temp home),
and every check reads the results store it wrote. The node-kill test heals the cluster (all 3
Synced, HAProxy sees every backend UP) before it returns.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from clusterbench.cluster import Cluster
from clusterbench.store import Store
from clusterbench.workloads import SYSBENCH_TESTS

# `alone`: what the tests so marked assert (per-second series, a summary under CPU burners) needs the
# machine's CPUs to the test only; `make test` runs them after the others, one at a time. The rest
# (signals, a bad endpoint, the live metrics) run their loads at a fixed rate beside other tests.
pytestmark = pytest.mark.integration
# transactions per second of the loads that only need to be running
RATE = "50"

SUITE_TIME = 2
SMALL = ["--tables", "1", "--table-size", "2000"]


def cb(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run(
        ["clusterbench", *args], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )


def sysbench_on(subnet_prefix: str) -> list[str]:
    """Live sysbench processes that talk to the given subnet (only this file's commands do)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmd.startswith("sysbench") and f"--mysql-host={subnet_prefix}" in cmd:
            found.append(f"{pid} {cmd[:80]}")
    return found


def prefix(cluster: Cluster) -> str:
    return cluster.topology.balancer_address().rsplit(".", 1)[0] + "."


def check_samples(samples: list[dict[str, Any]], seconds: int, extra: int = 0) -> None:
    # about one sample per second; the report due at the very end races sysbench's exit, and what
    # it did not report is the tail, a sample of its own (in the last second when that was reported)
    seconds_seen = sorted({round(s["t"]) for s in samples})
    assert seconds - 1 <= len(seconds_seen) <= seconds + extra, samples
    assert seconds_seen == list(range(1, len(seconds_seen) + 1))
    for s in samples:
        assert s["tps"] > 0 or s["interval"] < 0.5, s
        if s["interval"] < 0.5 and s["lat_min"] is None:
            continue  # a tail without events of its own
        assert s["lat_min"] is not None and s["lat_avg"] is not None and s["lat_max"] is not None
        assert s["lat_min"] <= s["lat_avg"] <= s["lat_max"], s


@pytest.fixture(scope="module")
def suite_store(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "results.db"
    res = cb("suite", "-n", cluster.topology.name, "--time", str(SUITE_TIME), "--threads", "2", *SMALL,
             "--results", str(path))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "select_random_ranges" in res.stdout and "reconnects" in res.stdout
    return path


@pytest.mark.alone
def test_all_eleven_tests_through_the_balancer(suite_store: Path, cluster: Cluster) -> None:
    with Store.open(suite_store) as store:
        [run] = store.list_runs()
        assert (run.kind, run.status) == ("suite", "completed")
        trials = store.trials(run.id)
        assert [t.workload for t in trials] == list(SYSBENCH_TESTS)
        for t in trials:
            assert t.status == "completed", t
            assert t.params["endpoint"] == "balancer" and t.params["threads"] == 2
            # bulk_insert sends its last buffered INSERT after --time: one more report may come
            check_samples(store.samples(t.id), SUITE_TIME, extra=1 if t.workload == "bulk_insert" else 0)
            s = store.summary(t.id)
            assert s is not None and s["tps"] > 0 and s["events"] > 0
            assert s["lat_min"] <= s["lat_avg"] <= s["lat_max"]
            if t.workload != "bulk_insert":  # bulk_insert's events are buffered rows, latency ~0
                assert s["p95"] is not None and s["lat_min"] <= s["p95"] <= s["lat_max"]
            prov = store.provenance(run.id, t.id)
            assert set(prov["engine_status@start"]) == {"n1", "n2", "n3"}
            assert prov["server_variables@end"]["n1"]["wsrep_on"] == "ON"
        prov = store.provenance(run.id)
        assert set(prov["versions"]) >= {"mariadb", "galera", "haproxy", "sysbench"}
        assert prov["versions"]["sysbench"].startswith("sysbench 1.0")
        assert prov["kernel"] and prov["cpu"] and prov["memory"]
        assert prov["topology"]["cluster"]["name"] == cluster.topology.name
        # each prepare group was prepared once and cleaned up; the session cluster may hold sysbench
        # tables an earlier test's run left (a killed one), which the suite drops first
        kinds = [e["kind"] for e in store.events(run.id)]
        assert kinds in (["prepare", "cleanup"] * 2, ["drop_tables"] + ["prepare", "cleanup"] * 2)


def wait_healthy(cluster: Cluster, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        st = cluster.status()
        synced = [n.health is not None and n.health.ready and n.health.size == 3 for n in st.nodes]
        up = [b.up for b in st.backends]
        if all(synced) and len(synced) == 3 and all(up) and len(up) == 3:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"cluster not healthy: {st}")
        time.sleep(0.5)


@pytest.mark.alone
def test_run_survives_a_node_kill_with_reconnects(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    seconds = 9
    killed: list[str] = []

    def kill_later() -> None:
        # kill once the run is measuring: the store then holds a sample
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists():
                with Store.open(path) as s:
                    if s.conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0] >= 3:
                        break
            time.sleep(0.2)
        killed.append(cluster.node_kill(3))

    t = threading.Thread(target=kill_later)
    t.start()
    try:
        res = cb("run", "-n", cluster.topology.name, "-w", "oltp_read_write", "--threads", "4",
                 "--time", str(seconds), *SMALL, "--results", str(path))  # fmt: skip
    finally:
        t.join()
        cluster.node_start(3)
        wait_healthy(cluster)
    assert killed and "n3" in killed[0]
    assert res.returncode == 0, res.stderr
    with Store.open(path) as store:
        [run] = store.list_runs()
        assert run.status == "completed"
        [trial] = store.trials(run.id)
        samples = store.samples(trial.id)
        # per second one report, the tail after the last one in its second (or the next)
        assert seconds - 1 <= len({round(s["t"]) for s in samples}) <= seconds + 1
        assert sum(s["reconnects"] for s in samples) > 0
        s = store.summary(trial.id)
        assert s is not None and s["reconnects"] > 0 and s["tps"] > 0
        # n3 was dead when the trial ended: recorded, not fatal
        assert "n3" in store.provenance(run.id, trial.id)["server_errors@end"]
    assert sysbench_on(prefix(cluster)) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_run_keeps_its_samples(cluster: Cluster, tmp_path: Path, sig: signal.Signals) -> None:
    path = tmp_path / "results.db"
    proc = subprocess.Popen(
        ["clusterbench", "run", "-n", cluster.topology.name, "-w", "oltp_point_select", "--time", "60",
         "--rate", RATE, *SMALL, "--results", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if path.exists():
                with Store.open(path) as s:
                    if s.conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0] >= 3:
                        break
            time.sleep(0.2)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "marked interrupted and keeps its" in lines[0], err
    with Store.open(path) as store:
        [run] = store.list_runs()
        assert run.status == "interrupted" and run.ended_at is not None
        [trial] = store.trials(run.id)
        assert trial.status == "interrupted"
        assert len(store.samples(trial.id)) >= 3
    assert sysbench_on(prefix(cluster)) == []


def chromium(*args: str, user_dir: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("chromium is missing; run `make setup-test`")
    argv = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={user_dir}", *args]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.alone
def test_report_renders_in_headless_chromium(suite_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    res = cb("report", "last", "--out", str(out), "--results", str(suite_store))
    assert res.returncode == 0, res.stderr
    md, page = out / "report-1.md", out / "report-1.html"
    assert res.stdout.splitlines() == [f"markdown: {md}", f"html:     {page}"]
    text = md.read_text()
    assert all(f"| {t} |" in text for t in SYSBENCH_TESTS)

    png = tmp_path / "shot.png"
    shot = chromium("--enable-logging=stderr", "--v=0", f"--screenshot={png}", "--window-size=1200,2000",
                    f"file://{page}", user_dir=tmp_path / "profile1")  # fmt: skip
    assert png.exists() and png.stat().st_size > 10_000, shot.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = [ln for ln in shot.stderr.splitlines() if "Uncaught" in ln or "ERROR:CONSOLE" in ln]
    assert bad == []

    dom = chromium("--dump-dom", f"file://{page}", user_dir=tmp_path / "profile2")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<table>" in dom.stdout and "select_random_points" in dom.stdout
    # inline SVG, no script: the overview, and per trial tps plus latency on a linear and a log scale
    html = page.read_text()
    # and under each trial's, its servers' telemetry on the same axis: CPU and the links for every
    # test, flow control and the disk where they show something
    svgs = re.findall(r"<svg.*?</svg>", html, re.S)
    titles = ("CPU, % of each", "link, Mbit/s", "replication paused", "disk busy", "replication lag",
              "certification conflicts")  # fmt: skip
    panels = [s for s in svgs if any(t in s for t in titles)]
    cpu, link = (sum(t in s for s in panels) for t in ("CPU, % of each", "link, Mbit/s"))
    assert cpu == link == len(SYSBENCH_TESTS)
    # and one figure of every trial's latency distribution (more than six trials: one figure)
    assert "<script" not in html
    assert len(svgs) == 1 + 3 * len(SYSBENCH_TESTS) + len(panels) + 1
    assert page.stat().st_size < 1_500_000
    # the same sections in both formats, real numbers from the store in both
    assert re.findall(r"(?m)^## (.+)$", text) == [
        h.replace("&#39;", "'") for h in re.findall(r"<h2>(.*?)</h2>", html)
    ]
    with Store.open(suite_store) as store:
        tps = store.summary(store.trials(1)[0].id)["tps"]  # type: ignore[index]
    assert f"{tps:,.2f}" in text and f"{tps:,.2f}" in html
    assert "## Server variables as run" in text and "| wsrep_slave_threads |" in text


@pytest.mark.alone
def test_results_export_and_show(suite_store: Path) -> None:
    res = cb("results", "export", "last", "--format", "csv", "--results", str(suite_store))
    assert res.returncode == 0, res.stderr
    rows = res.stdout.splitlines()
    assert rows[0].startswith("run_id,trial_seq,workload")
    assert len(rows) - 1 >= len(SYSBENCH_TESTS) * (SUITE_TIME - 1)
    res = cb("results", "show", "last", "--results", str(suite_store))
    assert res.returncode == 0 and "galera" in res.stdout
    res = cb("results", "export", "last", "--format", "summary", "--results", str(suite_store))
    assert res.returncode == 0, res.stderr
    summary = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [r["test"] for r in summary] == list(SYSBENCH_TESTS) and all(float(r["tps"]) > 0 for r in summary)
    res = cb("results", "show", "last", "--json", "--results", str(suite_store))
    data = json.loads(res.stdout)
    assert [r["test"] for r in data["summary"]] == list(SYSBENCH_TESTS)
    nodes = data["server_variables"]["nodes"]
    assert nodes == [f"n{i}" for i in range(1, len(nodes) + 1)] and data["server_variables"]["rows"]


def test_bad_endpoint_fails_fast_in_one_line(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    lb = cluster.topology.balancer_address()
    t0 = time.monotonic()
    res = cb("run", "-w", "oltp_read_write", "--host", lb, "--port", "3399", "--time", "5",
             "--results", str(path))  # fmt: skip
    assert res.returncode == 2
    [line] = res.stderr.strip().splitlines()
    assert (
        line.startswith(f"error: cannot connect to sbtest@{lb}:3399: Can't connect")
        and "(error 2003)" in line
    )

    env_var = "CB_IT_WRONG_PASSWORD"
    os.environ[env_var] = "not-the-password"
    try:
        res = cb("run", "-w", "oltp_read_write", "--host", lb, "--user", cluster.credentials().app_user,
                 "--password-env", env_var, "--time", "5", "--results", str(path))  # fmt: skip
    finally:
        del os.environ[env_var]
    assert res.returncode == 2
    [line] = res.stderr.strip().splitlines()
    assert "Access denied for user 'bench'" in line and "(error 1045)" in line
    assert time.monotonic() - t0 < 30
    # nothing was stored, nothing runs
    with Store.open(path) as store:
        assert store.list_runs() == []
    assert sysbench_on(prefix(cluster)) == []

    res = cb("run", "-w", "oltp_read_write", "-n", cluster.topology.name, "--threads", "-1")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.alone
def test_series_adds_up_to_the_summary_under_cpu_load(cluster: Cluster, tmp_path: Path) -> None:
    """Two CPU burners beside a warm-up + 5-s run: sysbench's reports come late and its last
    interval is never reported; the stored per-second events of every trial (the tail after the
    last report included) add up to the summary's within 0.1 %."""
    burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
    try:
        db = tmp_path / "r.db"
        r = cb("suite", "-n", cluster.topology.name, "-w", "oltp_read_write,oltp_point_select",
               "--duration", "5", "--warmup", "2", "--threads", "8", *SMALL, "--results", str(db),
               "--no-telemetry")  # fmt: skip
        assert r.returncode == 0, r.stderr
    finally:
        for b in burners:
            b.kill()
            b.wait()
    store = Store.open(db)
    run = store.list_runs()[-1].id
    for tr in store.trials(run):
        summary = store.summary(tr.id)
        assert summary is not None
        events = sum(s["events"] for s in store.samples(tr.id))
        assert abs(events - summary["events"]) <= 0.001 * summary["events"], (tr.workload, events, summary)
        seconds = sum(s["interval"] for s in store.samples(tr.id))
        assert seconds == pytest.approx(summary["duration"], abs=0.05)


def test_the_live_metrics_endpoint_serves_the_run_while_it_runs(cluster: Cluster, tmp_path: Path) -> None:
    """--metrics-port 0: the command says where it serves; scraped during the run, the text has the
    run's trial with its last second and the servers' telemetry, and promtool accepts it."""
    import urllib.request

    env = {**os.environ, "COLUMNS": "160"}
    proc = subprocess.Popen(
        ["clusterbench", "run", "-w", "oltp_point_select", "--duration", "8", "--threads", "2",
         "--rate", RATE, *SMALL, "-n", cluster.topology.name, "--results", str(tmp_path / "r.db"),
         "--metrics-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    url = next(ln.split()[1] for ln in proc.stdout if ln.strip().startswith("metrics: http://127.0.0.1:"))
    text = ""
    deadline = time.monotonic() + 60
    while "clusterbench_last_second_transactions_per_second" not in text and time.monotonic() < deadline:
        time.sleep(1)
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "clusterbench_last_second_transactions_per_second{" in text
    assert "clusterbench_telemetry_value{" in text
    promtool = shutil.which("promtool")
    if promtool is not None:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
