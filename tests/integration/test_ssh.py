"""The ssh provider for real: machines are network namespaces running Debian's sshd (sshlab.py),
reached only over SSH. A 3-node cluster + HAProxy comes up through the provider, takes sysbench
load from this machine, survives a kill -9 with nothing acknowledged lost, and goes down leaving
nothing behind. Bad inventories fail in the up-front check: one line each, exit 2, nothing started."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterbench.checkers.verdict import Result
from clusterbench.cluster import Cluster
from clusterbench.hosts import process
from clusterbench.hosts.local import NetnsHost
from clusterbench.hosts.ssh import KnownHosts, SshHost, SshTarget
from clusterbench.scenario.drill import Drill
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.store import Store
from clusterbench.workloads import SysbenchRunner, build_shim
from tests.integration.conftest import DRILL_RATE, galera
from tests.integration.sshlab import SshLab, lab_available

pytestmark = pytest.mark.integration

NAME = "cbssh1"
FAST_EVS = {"evs_suspect_timeout": 2.0, "evs_inactive_timeout": 4.0, "evs_keepalive_period": 0.5}


@pytest.fixture(scope="module")
def lab(cb_home: Path) -> Iterator[SshLab]:
    reason = lab_available()
    if reason:
        pytest.skip(reason)
    # h1-h4 carry the cluster, h5-h7 the bad inventories (which must not see its ports in use).
    lab = SshLab(count=7)
    try:
        lab.start()
        yield lab
    finally:
        extra = lab.stop()
    assert extra == [], f"processes left in the lab's namespaces: {extra}"


def toml_value(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)  # TOML basic strings, numbers, booleans and arrays read the same


def write_topology(path: Path, data: dict[str, Any], hosts: list[dict[str, Any]]) -> Path:
    lines = []
    for section, values in data.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
    for h in hosts:
        lines.append("[[hosts]]")
        lines += [f"{k} = {toml_value(v)}" for k, v in h.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def base_dir(home: Path) -> Path:
    return home / "remote"


def inventory(lab: SshLab) -> list[dict[str, Any]]:
    k = str(lab.key)
    hosts = [{"name": f"h{i}", "address": lab.address(i), "key": k, "roles": ["db"]} for i in (1, 2, 3)]
    hosts.append({"name": "h4", "address": lab.address(4), "key": k, "roles": ["balancer", "client"]})
    return hosts


def spare_inventory(lab: SshLab) -> list[dict[str, Any]]:
    """Three db hosts h5-h7 (h7 also a client), for topologies with balancer.kind = 'none'."""
    k = str(lab.key)
    hosts = [{"name": f"h{i}", "address": lab.address(i), "key": k, "roles": ["db"]} for i in (5, 6, 7)]
    hosts[2]["roles"] = ["db", "client"]
    return hosts


NO_LB = {"balancer": {"kind": "none"}}


def topology_data(name: str, home: Path, **extra: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "cluster": {"name": name},
        "provider": {"kind": "ssh", "base_dir": str(base_dir(home)), "connect_timeout": 3},
        "mariadb": dict(FAST_EVS),
    }
    for k, v in extra.items():
        data.setdefault(k, {}).update(v)
    return data


def cli(home: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLUSTERBENCH_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "clusterbench", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def remote_processes(home: Path, name: str) -> list[str]:
    """Live processes whose command line names the cluster's remote files (the lab shares /proc)."""
    marker = f"{base_dir(home)}/{name}/"
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or process.state(int(pid)) in (None, "Z", "X"):
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            found.append(f"{pid} {cmd[:100]}")
    return found


@pytest.fixture(scope="module")
def ssh_cluster(lab: SshLab, cb_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    f = write_topology(
        tmp_path_factory.mktemp("ssh") / "ssh.toml", topology_data(NAME, cb_home), inventory(lab)
    )
    t0 = time.monotonic()
    r = cli(cb_home, "up", "-f", str(f))
    up_seconds = time.monotonic() - t0
    print(f"ssh up of 3 nodes + HAProxy: {up_seconds:.1f} s\n{r.stdout}")
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        c = Cluster.load(NAME, home=cb_home)
        yield c
        c.close()
    finally:
        d = cli(cb_home, "down", "-n", NAME)
        assert d.returncode == 0, d.stderr
    assert remote_processes(cb_home, NAME) == []
    assert not (base_dir(cb_home) / NAME).exists()
    assert not (cb_home / "clusters" / NAME).exists()


def test_ssh_host_runs_commands_files_daemons_and_streams(lab: SshLab, tmp_path: Path) -> None:
    h = SshHost(SshTarget("h4", lab.address(4), key=lab.key), known_hosts=KnownHosts(tmp_path / "kh"))
    try:
        assert h.run(["ip", "-o", "-4", "addr", "show", "dev", "eth0"]).stdout.count(lab.address(4)) == 1
        d = lab.dir / "hostfiles"
        h.mkdir(d / "sub", owner="mysql", mode=0o750)
        assert (os.stat(d / "sub").st_mode & 0o777) == 0o750
        h.put_file(d / "sub" / "secret", "x=1\n", mode=0o600, owner="mysql")
        assert h.read_file(d / "sub" / "secret") == "x=1\n" and h.read_file(d / "none") is None
        assert (os.stat(d / "sub" / "secret").st_mode & 0o777) == 0o600 and h.file_size(
            d / "sub" / "secret"
        ) == 4
        proc = h.spawn(["sleep", "60"], log=d / "sleep.log")
        assert h.alive(proc)
        # A start time that does not match is somebody else's process: never signalled.
        assert not h.signal(type(proc)(proc.pid, proc.start_ticks + 1), signal.SIGKILL) and h.alive(proc)
        assert h.signal(proc, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while h.alive(proc) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not h.alive(proc)
        p = h.popen(["sh", "-c", 'echo "$CB_X"; echo err >&2; exit 3'], env={"CB_X": "hello"})
        assert p.stdout is not None and p.stderr is not None
        assert (p.stdout.read(), p.stderr.read(), p.wait(10)) == (b"hello\n", b"err\n", 3)
        p = h.popen(["sleep", "60"])
        p.kill()
        p.wait(10)
        assert process.state(p.pid) in (None, "Z", "X")  # the remote process is gone, not just the channel
    finally:
        h.close()


def test_up_status_load_and_logs_over_ssh(ssh_cluster: Cluster, cb_home: Path) -> None:
    st = cli(cb_home, "status", "-n", NAME)
    assert st.returncode == 0, st.stderr
    assert st.stdout.count("Synced") == 3 and st.stdout.count(" UP ") >= 3, st.stdout
    assert "fault left in place" not in st.stderr
    r = cli(
        cb_home, "run", "-n", NAME, "-w", "oltp_read_write", "--threads", "2", "--time", "5",
        "--tables", "2", "--table-size", "1000",
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    lg = cli(cb_home, "logs", "2", "-n", NAME, "-l", "200")
    assert lg.returncode == 0 and "Synchronized with group, ready for connections" in lg.stdout
    # Node files live on the node's machine under the provider's base dir, state stays local.
    assert ssh_cluster.node(2).dir == base_dir(cb_home) / NAME / "n2"
    assert (cb_home / "clusters" / NAME / "state.json").exists()
    assert ssh_cluster.client_hosts()[0].name == "h4"


def remote_probes(home: Path, name: str) -> list[str]:
    return [p for p in remote_processes(home, name) if "telemetry probe" in p or "python3 -c" in p]


# alone: all four probes must be seen running at one moment of a 10 s run (3 seen with other tests beside it)
@pytest.mark.alone
def test_telemetry_over_ssh_one_probe_per_machine_that_dies_with_its_connection(
    ssh_cluster: Cluster, lab: SshLab, cb_home: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results.db"
    small = ["--tables", "2", "--table-size", "1000", "--results", str(results)]
    r = cli(cb_home, "run", "-n", NAME, "-w", "oltp_read_write", "--threads", "2", "--time", "5", *small)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bottleneck: " in r.stdout and "| cpu " in r.stdout, r.stdout
    with Store.open(results) as st:
        run = st.list_runs()[-1]
        trial = st.trials(run.id)[-1]
        tel = st.provenance(run.id, trial.id)["telemetry"]
        # one probe per machine, streaming over the connection clusterbench already holds
        assert sorted(tel["sites"]) == ["host:h1", "host:h2", "host:h3", "host:h4"] and tel["problems"] == []
        have = {(x["source"], x["metric"]) for x in st.telemetry(trial.id)}
        for want in (("n1", "cpu_util"), ("n3", "net_tx_mbit"), ("n2", "recv_queue"), ("lb1", "cpu_cores"),
                     ("lb1/n2", "sessions"), ("host:h1", "host_cpu_busy")):  # fmt: skip
            assert want in have, want
        assert st.bottleneck(trial.id) is not None
    assert remote_probes(cb_home, NAME) == []
    # Killed outright: nothing stops the probes but their channels closing under them.
    env = {**os.environ, "CLUSTERBENCH_HOME": str(cb_home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "clusterbench", "run", "-n", NAME, "-w", "oltp_read_only", "--threads", "1",
         "--time", "10", "--no-prepare", *small],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(remote_probes(cb_home, NAME)) < 4:
            time.sleep(0.1)
        assert len(remote_probes(cb_home, NAME)) == 4, remote_processes(cb_home, NAME)
        time.sleep(1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline and remote_probes(cb_home, NAME):
            time.sleep(0.1)
        assert remote_probes(cb_home, NAME) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the killed run's remote sysbench ends with its --time; let the next test start on a quiet cluster
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and sysbench_to(lab.address(4)):
        time.sleep(0.2)


def sysbench_to(address: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or process.state(int(pid)) in (None, "Z", "X"):
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith("sysbench") and f"--mysql-host={address}" in cmd:
            found.append(pid)
    return found


def test_kill_node_under_load_over_ssh_loses_no_acknowledged_write(ssh_cluster: Cluster) -> None:
    spec = ScenarioSpec.model_validate(
        {
            "name": "kill n2 over ssh",
            "load": {
                "workload": "oltp_read_write",
                "threads": 2,
                "time": 18,
                "rate": DRILL_RATE,
                "tables": 2,
                "table_size": 1000,
            },
            "verify": {"ledger_clients": 1},
            "fault": [{"kind": "kill-node", "target": "node:2", "at": 4, "for": 5}],
        }
    )
    faults = spec.planned(3, 1, "test")
    sysbench = SysbenchRunner(shim=build_shim(ssh_cluster.home / "lib"))
    drill = Drill(ssh_cluster, spec, ssh_cluster.home / "results.db", sysbench)
    out = drill.run("test", faults)
    v = {x.checker: x.result for x in out.verdicts}
    assert v["ledger"] is Result.PASS and v["convergence"] is Result.PASS, out
    st = ssh_cluster.status()
    assert all(n.health is not None and n.health.ready and n.health.size == 3 for n in st.nodes)


# ---------------------------------------------------------------- bad input: the up-front check


def expect_refused(home: Path, f: Path, name: str, *needles: str) -> str:
    r = cli(home, "up", "-f", str(f), timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    for n in needles:
        assert sum(n in ln for ln in lines) == 1, r.stderr
    assert not (home / "clusters" / name / "state.json").exists()
    assert not (base_dir(home) / name).exists()
    assert remote_processes(home, name) == []
    return r.stderr


def test_wrong_key_and_unreachable_host_are_one_line_each(lab: SshLab, cb_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    hosts = spare_inventory(lab)
    hosts[1]["key"] = str(other)
    hosts[2]["address"] = "198.18.214.99"  # in the lab's subnet, nobody there
    f = write_topology(tmp_path / "bad.toml", topology_data("cbssh2", cb_home, **NO_LB), hosts)
    err = expect_refused(
        cb_home,
        f,
        "cbssh2",
        "host h6 (root@198.18.214.26:22): authentication failed",
        "host h7 (root@198.18.214.99:22): unreachable",
    )
    assert "h5" not in err


def test_port_in_use_on_a_remote_host(lab: SshLab, cb_home: Path, tmp_path: Path) -> None:
    ns = NetnsHost(lab.hosts[4].netns)
    listener = ns.spawn(
        ["socat", "TCP-LISTEN:4567,reuseaddr,fork", "SYSTEM:true"], log=tmp_path / "socat.log"
    )
    try:
        deadline = time.monotonic() + 5
        while ":4567 " not in ns.run(["ss", "-ltnH"]).stdout and time.monotonic() < deadline:
            time.sleep(0.05)
        f = write_topology(
            tmp_path / "port.toml", topology_data("cbssh3", cb_home, **NO_LB), spare_inventory(lab)
        )
        expect_refused(cb_home, f, "cbssh3", "host h5 (198.18.214.25): port(s) already in use: 4567")
    finally:
        ns.signal(listener, signal.SIGTERM)


def test_two_db_nodes_on_one_host(lab: SshLab, cb_home: Path, tmp_path: Path) -> None:
    hosts = spare_inventory(lab)
    hosts[2]["address"] = lab.address(5)
    f = write_topology(tmp_path / "two.toml", topology_data("cbssh4", cb_home, **NO_LB), hosts)
    expect_refused(
        cb_home, f, "cbssh4", "hosts h5 and h7 are one machine: 2 db nodes there would share ports"
    )


def test_missing_package_without_provision(
    lab: SshLab,
    cb_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from clusterbench.cli.main import main
    from clusterbench.providers import ssh_check

    monkeypatch.setenv("CLUSTERBENCH_HOME", str(cb_home))
    monkeypatch.setitem(ssh_check.PACKAGES, "client", ("sysbench", "cbssh-no-such-package"))
    f = write_topology(tmp_path / "pkg.toml", topology_data("cbssh5", cb_home, **NO_LB), spare_inventory(lab))
    assert main(["up", "-f", str(f)]) == 2
    err = capfd.readouterr().err
    assert (
        "host h7 (198.18.214.27): missing packages cbssh-no-such-package; run `clusterbench provision" in err
    )
    assert err.count("missing packages") == 1
    assert not (base_dir(cb_home) / "cbssh5").exists()


def test_provision_on_hosts_that_have_everything_installs_nothing(
    lab: SshLab, cb_home: Path, tmp_path: Path
) -> None:
    f = write_topology(
        tmp_path / "prov.toml", topology_data("cbssh6", cb_home, **NO_LB), spare_inventory(lab)
    )
    r = cli(cb_home, "provision", "-f", str(f), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("nothing to install") == 3, r.stdout


def test_local_client_namespaces(cb_home: Path) -> None:
    """[clients] hosts = K on the local provider: K namespaces on the bridge that reach the nodes."""
    from tests.integration.conftest import leftovers, make_topology

    topo = make_topology(
        "cbssh7", "198.18.215.0/24", nodes=1, clients={"hosts": 2}, balancer={"kind": "none"}
    )
    c = Cluster(topo, home=cb_home)
    c.up()
    try:
        hosts = c.client_hosts()
        assert [h.name for h in hosts] == ["cb-cbssh7-c1", "cb-cbssh7-c2"]
        creds = c.credentials()
        p = hosts[1].popen(
            ["mariadb", "-h", topo.node_address(1), "-u", creds.app_user, "-N", "-e", "SELECT 1"],
            env={"MYSQL_PWD": creds.app_password},
        )
        assert p.stdout is not None
        assert p.wait(30) == 0 and p.stdout.read() == b"1\n"
        addr = hosts[1].run(["ip", "-o", "-4", "addr", "show", "dev", "eth0"]).stdout
        assert "198.18.215.32/24" in addr
    finally:
        c.down()
    assert leftovers("cbssh7") == []


def wait_for(what: str, fn: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not fn():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_isolate_and_throttle_over_ssh_heal_and_unavailable_faults_refuse(ssh_cluster: Cluster) -> None:
    from clusterbench.errors import PreflightError
    from clusterbench.faults import leftovers
    from clusterbench.faults.kinds import make_action
    from clusterbench.faults.spec import FaultSpec, plan

    def size_seen_by_n1() -> int:
        st = galera(ssh_cluster.node(1)).status()
        return st.cluster_size if st is not None and st.primary else 0

    specs = [
        FaultSpec.model_validate({"kind": "isolate-node", "target": "node:3", "at": 0, "for": 5}),
        FaultSpec.model_validate(
            {"kind": "throttle-link", "target": "node:2", "at": 0, "for": 5, "rate": "1mbit"}
        ),
    ]
    isolate, throttle = (make_action(ssh_cluster, f) for f in plan(specs, 3, 1, 10))
    try:
        isolate.apply()
        throttle.apply()
        # n3 reaches nobody, yet we still reach its machine over SSH (the rule keeps port 22).
        wait_for("n1 to see 2 members", lambda: size_seen_by_n1() == 2)
        assert ssh_cluster.node(3).alive()
        qd = ssh_cluster.host("n2").run(["tc", "qdisc", "show", "dev", "eth0"]).stdout
        assert "tbf" in qd and "1Mbit" in qd
        assert {(x.node, x.what) for x in leftovers.find(ssh_cluster)} == {(3, "partition"), (2, "shaping")}
    finally:
        isolate.heal()
        throttle.heal()
    assert leftovers.find(ssh_cluster) == []
    wait_for("n3 to rejoin", lambda: size_seen_by_n1() == 3)
    wait_for("n3 Synced", lambda: (st := galera(ssh_cluster.node(3)).status()) is not None and st.synced)

    def one(**kw: Any) -> Any:
        return plan([FaultSpec.model_validate({"target": "node:1", "at": 0, "for": 1, **kw})], 3, 1, 10)[0]

    cpu = [one(kind="throttle-cpu", cpu_quota=0.1)]
    with pytest.raises(PreflightError, match="throttle-cpu is not available with the ssh provider"):
        make_action(ssh_cluster, cpu[0])
    # delay-link on the node's own machine: netem where its kernel has it, else the delay line
    delay = make_action(ssh_cluster, one(kind="delay-link", delay="20ms"))
    assert {link.mech.delay for link in delay.links.values()} <= {"netem", "nfqueue"}  # type: ignore[attr-defined]


def test_failed_up_over_ssh_copies_logs_back_and_leaves_the_machines_clean(
    lab: SshLab, cb_home: Path, tmp_path: Path
) -> None:
    # n2 has a server option mariadbd does not know: it exits at start while the others wait.
    data = topology_data("cbssh10", cb_home, **NO_LB)
    f = write_topology(tmp_path / "fail.toml", data, spare_inventory(lab))
    f.write_text(f.read_text() + "[[node]]\nindex = 2\n[node.mariadb.extra]\nno_such_option = 1\n")
    r = cli(cb_home, "up", "-f", str(f))
    failed = re.search(r"node (n2) exited while joining", r.stderr)
    assert r.returncode == 2 and failed is not None and "Traceback" not in r.stderr, r.stderr
    assert "no_such_option" in r.stderr, r.stderr
    logs = cb_home / "clusters" / "cbssh10" / "remote-logs"
    assert (logs / failed.group(1) / "error.log").exists() and (logs / "n1" / "error.log").exists()
    assert remote_processes(cb_home, "cbssh10") == []
    assert not (base_dir(cb_home) / "cbssh10").exists()


def test_down_with_the_topology_file_cleans_up_when_state_is_lost(
    lab: SshLab, cb_home: Path, tmp_path: Path
) -> None:
    name = "cbssh11"
    f = write_topology(tmp_path / "lost.toml", topology_data(name, cb_home, **NO_LB), spare_inventory(lab))
    role_dir = base_dir(cb_home) / name / "n2"
    role_dir.mkdir(parents=True)
    (role_dir / "data").mkdir()
    # A process of ours whose state was lost: its command line names our role directory.
    ns = NetnsHost(lab.hosts[5].netns)
    stray = ns.spawn(["sh", "-c", "sleep 300", f"{role_dir}/stray"], log=tmp_path / "stray.log")
    other = ns.spawn(["sleep", "300"], log=tmp_path / "other.log")  # not ours: must survive
    try:
        r = cli(cb_home, "down", "-f", str(f))
        assert r.returncode == 0, r.stderr
        assert "n2: stopped 2 leftover processes" in r.stdout  # the shell and its sleep
        assert not ns.alive(stray) and ns.alive(other)
        assert not (base_dir(cb_home) / name).exists()
    finally:
        ns.signal(other, signal.SIGKILL)
        ns.signal(stray, signal.SIGKILL)


def test_keepalived_pair_over_ssh_moves_the_vip_when_the_active_haproxy_dies(
    lab: SshLab, cb_home: Path, tmp_path: Path
) -> None:
    # Two machines each carry a db node and a balancer (HAProxy on 6033, off the node ports), the
    # third a db node and the load client; the VIP is an unused address of the lab's subnet.
    name = "cbssh12"
    vip = str(lab.network[200])
    data = topology_data(name, cb_home, balancer={"count": 2, "vip": vip, "port": 6033})
    hosts = spare_inventory(lab)
    hosts[0]["roles"] = ["db", "balancer"]
    hosts[1]["roles"] = ["db", "balancer"]
    f = write_topology(tmp_path / "pair.toml", data, hosts)
    r = cli(cb_home, "up", "-f", str(f))
    try:
        assert r.returncode == 0, r.stderr
        assert f"keepalived: VIP {vip}:6033 on lb1" in r.stdout, r.stdout
        r = cli(cb_home, "fault", "kill-balancer", "--target", "balancer", "--at", "5", "--for", "5",
                "--time", "16", "--threads", "2", "--load-rate", str(DRILL_RATE), "-n", name)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr  # every verdict PASS, availability included
        assert "haproxy lb1 killed (it held the VIP)" in r.stdout, r.stdout
        # nopreempt: the VIP stays on lb2, where keepalived moved it, after lb1 is back
        c = Cluster.load(name, home=cb_home)
        try:
            assert c.vip_holders() == ["lb2"]
        finally:
            c.close()
    finally:
        d = cli(cb_home, "down", "-n", name)
    assert d.returncode == 0, d.stderr
    assert remote_processes(cb_home, name) == []
    assert not (base_dir(cb_home) / name).exists()


def test_group_replication_over_ssh_provision_up_rejoin_and_down(
    lab: SshLab, cb_home: Path, tmp_path: Path
) -> None:
    """Group Replication members chrooted into the MySQL rootfs on machines reached over SSH.
    `provision` first copies this machine's rootfs to provider.rootfs on the hosts (the lab's
    machines share this file system: one path, so one host copies, the others find it), a second
    provision reuses it, and the members run from that copy."""
    import shutil
    import socket

    from clusterbench.engines.group_replication import rootfs

    bad = rootfs.problem(rootfs.rootfs_dir())
    if bad:
        pytest.skip(f"Group Replication tests skipped: {bad}")
    name = "cbssh13"
    there = tmp_path / "remote-rootfs" / "mysql"
    data: dict[str, Any] = {
        "cluster": {"name": name},
        "provider": {
            "kind": "ssh", "base_dir": str(base_dir(cb_home)), "connect_timeout": 3, "rootfs": str(there),
        },
        "engine": {"kind": "group_replication"},
        "mysql": {"member_expel_timeout": 0},
        **NO_LB,
    }  # fmt: skip
    # One db host provisions first (three at once would race for the one shared path).
    hosts = spare_inventory(lab)
    first = write_topology(tmp_path / "gr1.toml", {**data, "cluster": {"name": name, "nodes": 1}}, hosts[2:])
    try:
        t0 = time.monotonic()
        p = cli(cb_home, "provision", "-f", str(first), timeout=300)
        print(f"provision (copy of the rootfs): {time.monotonic() - t0:.1f} s\n{p.stdout}")
        assert p.returncode == 0, p.stdout + p.stderr
        here = rootfs.read_info(rootfs.rootfs_dir())
        assert here is not None
        assert f"copied the MySQL root file system (MySQL {here.mysql_version}" in p.stdout
        stamp = json.loads(rootfs.info_path(there).read_text())
        assert stamp["path"] == str(there) and stamp["copied_from"] == socket.gethostname()
        assert rootfs.problem(there) is None
        f = write_topology(tmp_path / "gr.toml", data, hosts)
        p = cli(cb_home, "provision", "-f", str(f), timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        assert p.stdout.count(f"runs from the MySQL root file system already at {there}") == 3, p.stdout
        _group_replication_over_ssh(cb_home, f, name, there)
    finally:
        shutil.rmtree(there.parent, ignore_errors=True)


def _group_replication_over_ssh(cb_home: Path, f: Path, name: str, there: Path) -> None:
    import socket

    t0 = time.monotonic()
    r = cli(cb_home, "up", "-f", str(f), timeout=300)
    print(f"ssh up of 3 Group Replication members: {time.monotonic() - t0:.1f} s\n{r.stdout}")
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        c = Cluster.load(name, home=cb_home)
        views = sorted((v.index, v.health.state, v.health.role) for v in c.status().nodes if v.health)
        assert views == [(1, "ONLINE", "PRIMARY"), (2, "ONLINE", "SECONDARY"), (3, "ONLINE", "SECONDARY")]
        # Each member runs from the copy, and says so in its provenance.
        st = c.node(2).engine_status()
        assert st["rootfs"] == str(there), st
        assert st["mysqld_source"] == f"rootfs copied from {socket.gethostname()}", st
        primary = c.node(1)
        primary.query("CREATE TABLE sbtest.overssh (id INT PRIMARY KEY)")
        primary.query("INSERT INTO sbtest.overssh VALUES (1), (2)")
        assert c.node_kill(3) == "n3 killed"
        primary.query("INSERT INTO sbtest.overssh VALUES (3)")
        out = c.node_start(3)
        assert out.startswith("n3 rejoined"), out
        n3 = c.node(3)
        n3.wait_ready(60, expect_size=3)
        with n3.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION group_replication_consistency='BEFORE'")
            cur.execute("SELECT COUNT(*) FROM sbtest.overssh")
            assert cur.fetchone() == (3,)
        c.close()
    finally:
        d = cli(cb_home, "down", "-n", name)
        assert d.returncode == 0, d.stderr
    assert remote_processes(cb_home, name) == []
    assert not (base_dir(cb_home) / name).exists()
