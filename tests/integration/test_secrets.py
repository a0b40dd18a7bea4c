"""No password on any command line: while a real run loads the session cluster (prepare, sysbench,
HAProxy's health checks running the mariadb client), every process's /proc/PID/cmdline is read
over and over; none may contain any of the cluster's passwords."""

from __future__ import annotations

import ipaddress
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterbench.cluster import Cluster

pytestmark = pytest.mark.integration


def cmdlines() -> dict[int, str]:
    out: dict[int, str] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            out[int(pid)] = (
                Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
        except OSError:
            continue
    return out


def test_no_password_on_any_command_line_during_a_run(cluster: Cluster, cb_home: Path) -> None:
    c = cluster.credentials()
    secrets = {"app": c.app_password, "admin": c.admin_password, "monitor": c.mon_password}
    env = {**os.environ, "CLUSTERBENCH_HOME": str(cb_home), "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, "-m", "clusterbench", "run", "-n", cluster.topology.name, "-w", "oltp_read_write",
            "--time", "6", "--tables", "2", "--table-size", "1000", "--threads", "2", "--cleanup",
            "--results", str(cb_home / "secrets.db")]  # fmt: skip
    net = ipaddress.ip_network(str(cluster.topology.cluster.subnet))

    def ours(line: str) -> bool:
        host = re.search(r"--mysql-host=([0-9.]+)", line)
        return host is not None and ipaddress.ip_address(host.group(1)) in net

    run = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    leaks: list[str] = []
    scans = 0
    sysbench_seen: set[str] = set()
    checks_seen = 0
    try:
        while run.poll() is None:
            for pid, line in cmdlines().items():
                for what, pw in secrets.items():
                    if pw in line:
                        leaks.append(f"{what} password in PID {pid}: {line[:60]}...")
                # not `sysbench --version`, nor another test's sysbench (the test files run side by side)
                if line.startswith("sysbench ") and "--db-driver=mysql" in line and ours(line):
                    sysbench_seen.add(line.split()[-1])
                    # sysbench cuts its own `--config-file=PATH` argument at the '=' (a NUL written
                    # into argv) once it has read the file: either form is the option file.
                    assert re.search(r"--config-file[= ]\S*/secrets/cb-sysbench-", line), line
                if line.startswith("/usr/bin/mariadb --defaults-extra-file="):
                    checks_seen += 1
            scans += 1
            time.sleep(0.02)
        err = run.stderr.read().decode() if run.stderr else ""
        assert run.returncode == 0, err
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()
    print(
        f"{scans} scans of every process's command line; sysbench seen: {sorted(sysbench_seen)}; "
        f"{checks_seen} health-check clients seen"
    )
    assert leaks == []
    assert scans > 50
    # the scans did see sysbench at work (prepare and cleanup last a moment: seen most of the time)
    assert "run" in sysbench_seen
    # no option file with a password is left behind (they live in <home>/secrets while sysbench runs)
    assert list((cb_home / "secrets").glob("cb-sysbench-*.cnf")) == []
