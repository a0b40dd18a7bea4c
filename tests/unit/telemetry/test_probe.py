"""The telemetry probe against a fake /proc and /sys tree, and its lifetime as a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusterbench.telemetry import probe
from clusterbench.telemetry.sampler import probe_source

STAT = (
    "4242 (mariadbd worker) S 1 4242 4242 0 -1 4194560 5000 0 0 0 "
    "{utime} {stime} 0 0 20 0 40 0 {start} 2000000000 30000 18446744073709551615 "
    "0 0 0 0 0 0 0 4096 0 0 0 0 17 1"
)


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def fake_tree(root: Path, *, utime: int = 300, stime: int = 100, rx: int = 1000, tx: int = 2000) -> None:
    write(root, "/proc/stat", "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n")
    write(root, "/proc/4242/stat", STAT.format(utime=utime, stime=stime, start=777))
    write(root, "/proc/4242/statm", "500000 25600 1000 100 0 40000 0\n")
    write(root, "/proc/4242/io", "rchar: 99999\nwchar: 88888\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\n"
                                 "write_bytes: 8192\ncancelled_write_bytes: 0\n")  # fmt: skip
    write(root, "/proc/4242/cgroup", "12:cpuset:/clusterbench/te-n1\n4:cpu:/clusterbench/te-n1\n"
                                     "3:cpuacct:/\n0::/\n")  # fmt: skip
    cg = "/sys/fs/cgroup/cpu/clusterbench/te-n1"
    write(root, f"{cg}/cpu.cfs_quota_us", "50000\n")
    write(root, f"{cg}/cpu.cfs_period_us", "100000\n")
    write(root, f"{cg}/cpu.stat", "nr_periods 200\nnr_throttled 50\nthrottled_time 123456789\n")
    write(root, "/proc/net/dev",
          "Inter-|   Receive                                                |  Transmit\n"
          " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"  # noqa: E501
          f"cb-te-n1: {rx} 10 0 0 0 0 0 0 {tx} 20 0 0 0 0 0 0\n"
          "    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n")  # fmt: skip
    write(root, "/proc/diskstats", "   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
          " 254       0 vda 100 5 800 20 200 9 1600 30 0 500 60 0 0 0 0 0 0\n")  # fmt: skip


def spec(**kw: object) -> dict[str, object]:
    role = {
        "role": "n1",
        "pid": 4242,
        "start": 777,
        "netdev": "cb-te-n1",
        "flip": True,
        "pidfile": "/n1/mysqld.pid",
    }
    role.update(kw)
    return {"interval": 1.0, "roles": [role]}


def test_parsers_of_each_file() -> None:
    assert probe.host_cpu("cpu  100 0 50 800 50 0 0 0 0 0\n") == [150, 1000]
    assert probe.pid_stat(STAT.format(utime=3, stime=4, start=9)) == ("S", 7, 9)
    assert probe.pid_stat("garbage") is None
    assert probe.pid_io("read_bytes: 5\nwrite_bytes: 6\n") == [5, 6]
    assert probe.statm_rss_kib("10 256 0", 4096) == 1024
    assert probe.cgroup_paths("4:cpu,cpuacct:/a\n0::/b\n") == {"cpu": "/a", "cpuacct": "/a", "": "/b"}
    assert probe.cpu_stat("nr_periods 4\nnr_throttled 1\nthrottled_usec 10\n") == [4, 1, 10000]
    assert probe.quota_v1("-1", "100000") is None and probe.quota_v1("25000", "100000") == 0.25
    assert probe.quota_v2("max 100000") is None and probe.quota_v2("150000 100000") == 1.5
    stat = (
        "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,status\n"
        "galera,n1,0,0,3,4,,9,0,0,0,0,,1,2,UP\n"
        "galera,n2,2,0,0,4,,9,0,0,0,0,,5,0,DOWN\n"
        "galera,BACKEND,0,0,3,4,,9,0,0,0,0,,0,0,UP\n"
    )
    assert probe.show_stat(stat) == [["n1", 3, 0, 1, 2, 1], ["n2", 0, 2, 5, 0, 0]]


def test_a_sample_of_a_fake_tree(tmp_path: Path) -> None:
    fake_tree(tmp_path)
    p = probe.Probe({**spec(datadir="/data"), "root": str(tmp_path)})
    p.devices.add("vda")  # hello() finds it by the datadir's device number; the fake tree has none
    line = p.sample()
    assert line["cpu"] == [150, 1000]
    assert line["disks"] == {"vda": [100, 800, 200, 1600, 500]}  # only the data's device
    r = line["r"]["n1"]
    assert r["pid"] == 4242 and r["cpu"] == 400
    assert r["rss"] == 25600 * os.sysconf("SC_PAGE_SIZE") // 1024
    assert r["io"] == [4096, 8192]
    assert r["quota"] == 0.5 and r["thr"] == [200, 50, 123456789]
    # the host side of a veth: what it received, the node sent
    assert r["net"] == [2000, 20, 1000, 10]


def test_the_block_io_limits_on_a_watched_device_are_read_each_sample(tmp_path: Path) -> None:
    fake_tree(tmp_path)
    p = probe.Probe({**spec(datadir="/data"), "root": str(tmp_path)})
    p.devices.add("vda")
    p.devnums["vda"] = "254:0"
    assert p.sample()["dlim"] == {}  # no blkio hierarchy, or no limit: nothing
    blkio = "/sys/fs/cgroup/blkio"
    write(tmp_path, f"{blkio}/blkio.throttle.write_bps_device", "7:0 5\n254:0 1048576\n")
    write(tmp_path, f"{blkio}/blkio.throttle.read_iops_device", "254:0 300\n")
    assert p.sample()["dlim"] == {"vda": [0, 1048576, 300, 0]}
    assert probe.throttle_limits("7:0 5\ngarbage\n254:0 9\n") == {"7:0": 5, "254:0": 9}


def test_a_restarted_process_is_followed_through_its_pid_file(tmp_path: Path) -> None:
    fake_tree(tmp_path)
    p = probe.Probe({**spec(), "root": str(tmp_path)})
    assert p.sample()["r"]["n1"]["pid"] == 4242
    (tmp_path / "proc/4242/stat").unlink()  # killed
    write(tmp_path, "/proc/5151/stat", STAT.format(utime=1, stime=1, start=999).replace("4242", "5151", 1))
    write(tmp_path, "/n1/mysqld.pid", "5151\n")
    assert p.sample()["r"]["n1"]["pid"] == 5151
    (tmp_path / "proc/5151/stat").unlink()  # gone, and the pid file names nobody alive
    assert "pid" not in p.sample()["r"]["n1"]


def test_a_pid_reused_by_another_process_is_not_the_server(tmp_path: Path) -> None:
    fake_tree(tmp_path)
    p = probe.Probe({**spec(pidfile=None, start=1), "root": str(tmp_path)})  # its start time differs
    assert "pid" not in p.sample()["r"]["n1"]


def proc_stat(pid: int, ppid: int, utime: int, stime: int, reaped: int = 0, start: int = 50) -> str:
    return (
        f"{pid} (php-fpm: pool web) S {ppid} {pid} {pid} 0 -1 4194560 5000 0 0 0 {utime} {stime} {reaped} 0 "
        f"20 0 1 0 {start} 2000000 300 18446744073709551615 0 0 0 0 0 0 0 4096 0 0 0 0 17 1"
    )


def web_tree(root: Path, *, worker_utime: int = 30) -> None:
    """php-fpm 100 (children 101, 102), nginx 200 (worker 201), and a stranger 300."""
    write(root, "/proc/stat", "cpu  100 0 50 800 50 0 0 0 0 0\n")
    for pid, ppid, utime, reaped in ((100, 1, 5, 7), (101, 100, worker_utime, 0), (102, 100, 20, 0),
                                     (200, 1, 2, 0), (201, 200, 40, 0), (300, 1, 1000, 0)):  # fmt: skip
        write(root, f"/proc/{pid}/stat", proc_stat(pid, ppid, utime, 1, reaped))
        write(root, f"/proc/{pid}/statm", "100 10 0 0 0 0 0\n")
        write(root, f"/proc/{pid}/io", "read_bytes: 1\nwrite_bytes: 2\n")
    write(root, "/w1/php-fpm.pid", "100\n")
    write(root, "/w1/nginx.pid", "200\n")


def test_a_web_node_is_its_masters_and_every_worker_below_them(tmp_path: Path) -> None:
    web_tree(tmp_path)
    role = {"role": "w1", "pid": 100, "start": 50, "pidfile": "/w1/php-fpm.pid", "tree": ["/w1/nginx.pid"]}
    p = probe.Probe({"interval": 1.0, "roles": [role], "root": str(tmp_path)})
    r = p.sample()["r"]["w1"]
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    # 5 processes (not the stranger): their utime + stime, and the children php-fpm reaped (7)
    assert (r["pid"], r["roots"]) == (100, [100, 200])
    assert r["cpu"] == (5 + 1 + 7) + (30 + 1) + (20 + 1) + (2 + 1) + (40 + 1)
    assert (r["rss"], r["io"]) == (5 * 10 * page_kib, [5, 10])
    # nginx killed (its pid file stays): the role is php-fpm's tree alone, and says so
    (tmp_path / "proc/200/stat").unlink()
    (tmp_path / "proc/201/stat").unlink()
    r = p.sample()["r"]["w1"]
    assert r["roots"] == [100] and r["cpu"] == 13 + 31 + 21
    assert probe.descendants({1: [2, 3], 2: [4], 4: [2]}, [1]) == [1, 2, 3, 4]  # a loop ends


def run_probe(spec_: dict[str, object], **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", probe_source(), json.dumps(spec_)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kw,
    )  # type: ignore[call-overload]


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        st = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
        if ") Z" in st:
            return True
        time.sleep(0.05)
    return False


def test_the_real_probe_says_hello_then_streams_and_stops_at_until() -> None:
    me = Path("/proc/self/stat").read_text()
    start = int(me[me.rindex(")") + 2 :].split()[19])
    proc = run_probe(
        {"interval": 0.2, "until": 0.7, "roles": [{"role": "n1", "pid": os.getpid(), "start": start}]}
    )
    out, _ = proc.communicate(timeout=10)
    lines = [json.loads(x) for x in out.splitlines()]
    assert "hello" in lines[0] and lines[0]["hello"]["tck"] > 0
    assert 3 <= len(lines) - 1 <= 6, lines
    assert all(ln["r"]["n1"]["pid"] == os.getpid() for ln in lines[1:])
    assert proc.returncode == 0


def test_the_probe_exits_when_its_reader_goes_away() -> None:
    proc = run_probe({"interval": 0.1, "until": 60, "roles": []})
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # the run that read it died: the next line's write fails
    assert proc.wait(timeout=5) == 0


def test_the_probe_exits_when_its_parent_dies() -> None:
    """The parent is killed (as a killed run or a dropped ssh session would be); the probe, whose
    stdout a grandchild still holds, notices the new parent within an interval and exits."""
    script = (
        "import subprocess, sys, json; "
        f"p = subprocess.Popen([sys.executable, '-c', {probe_source()!r}, "
        "json.dumps({'interval': 0.2, 'until': 60, 'roles': []})], stdout=open('/dev/null', 'w')); "
        "print(p.pid, flush=True); import time; time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        time.sleep(0.3)
        assert not gone_within(child, 0.1)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert gone_within(child, 3.0)
    finally:
        if not gone_within(child, 0.0):
            os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("root_quota", [("max 100000", None), ("50000 100000", 0.5)])
def test_cgroup_v2_quota(tmp_path: Path, root_quota: tuple[str, float | None]) -> None:
    fake_tree(tmp_path)
    write(tmp_path, "/proc/4242/cgroup", "0::/system.slice/mariadb.service\n")
    write(tmp_path, "/sys/fs/cgroup/system.slice/mariadb.service/cpu.max", root_quota[0])
    write(tmp_path, "/sys/fs/cgroup/system.slice/mariadb.service/cpu.stat",
          "usage_usec 5\nnr_periods 10\nnr_throttled 2\nthrottled_usec 7\n")  # fmt: skip
    r = probe.Probe({**spec(), "root": str(tmp_path)}).sample()["r"]["n1"]
    assert r["quota"] == root_quota[1]
    assert r["thr"] == [10, 2, 7000]
