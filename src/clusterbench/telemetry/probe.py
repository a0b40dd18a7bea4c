"""The per-host telemetry probe: one long-lived process per host that reads the kernel's counters
for the server processes, links and disks of that host once per interval and writes one JSON line
each time.

It runs where the servers run, as `python3 -c <this file's source> <spec as JSON>`, locally and on a
remote machine over ssh alike, so it imports nothing but the standard library and nothing of
clusterbench. It reads counters only (CPU ticks, bytes, packets, operations); the controller turns
two consecutive lines into rates. Everything it reads is a file under /proc or /sys, plus HAProxy's
stats socket: no command is started per interval.

It never outlives the run that started it:
- its stdout is a pipe to that run (directly, or through the ssh channel): when the run dies the
  pipe closes and the next line's write fails (EPIPE), so it exits within one interval;
- it exits when its parent process changes (the run, or the ssh session, is gone);
- it exits at `until` seconds after its start whatever happens (the trial's length plus a margin).

The spec:
    {"interval": 1.0, "until": 3600, "root": "/",
     "roles": [{"role": "n1", "pid": 1234, "start": 56789, "pidfile": "/x/n1/mysqld.pid",
                "netdev": "cb-lab-n1", "flip": true, "datadir": "/x/n1/data",
                "stats": "/x/lb1/stats.sock"},
               {"role": "w1", "pid": 2345, "start": 67890, "pidfile": "/x/w1/php-fpm.pid",
                "tree": ["/x/w1/nginx.pid"]}]}
`tree`: pid files of more processes of the role; the role's CPU, memory and I/O are then those
of its process, these, and every process below them (a web node's masters and their workers),
and its sample names them all ("roots").
`flip`: the device is the far end of the role's link (the host side of a local veth), so what it
receives is what the role sent. `speed`: report the device's speed (a real NIC's, the link's limit
where no other is configured). `root` prefixes every path (unit tests give a fake tree).

The first line is {"hello": {...}} with the host's constants (clock ticks, CPUs, page size, each
role's disk device and link speed); then one line per interval:
    {"w": wall s, "m": monotonic s, "self": the probe's own CPU ticks, "cpu": [busy, total ticks],
     "disks": {"vda": [reads, read sectors, writes, write sectors, busy ms]} (the roles' data's),
     "dlim": {"loop0": [read B/s, write B/s, read ops/s, write ops/s]} (block I/O limits, 0 = none),
     "r": {"n1": {"pid", "cpu" ticks, "rss" KiB, "io": [read bytes, write bytes],
                  "quota": CPUs or null, "aff": CPUs allowed, "thr": [periods, throttled, ns],
                  "net": [rx bytes, rx packets, tx bytes, tx packets] as the role sees them,
                  "hap": [[backend, sessions, queue, connection errors, response errors, up]]}}}
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any

SECTOR = 512


def read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except (OSError, ValueError):
        return None


# ---- parsers (pure) -------------------------------------------------------------------------------


def host_cpu(text: str | None) -> list[int] | None:
    """[busy, total] clock ticks of all CPUs from /proc/stat's first line. Busy is everything but
    idle and iowait; guest time is already inside user time, so it is not added twice."""
    if not text:
        return None
    first = text.split("\n", 1)[0].split()
    if not first or first[0] != "cpu":
        return None
    vals = [int(x) for x in first[1:9]]  # user nice system idle iowait irq softirq steal
    vals += [0] * (8 - len(vals))
    total = sum(vals)
    return [total - vals[3] - vals[4], total]


def pid_stat(text: str | None) -> tuple[str, int, int] | None:
    """(state, utime + stime ticks, start ticks) from /proc/PID/stat; the command name may hold
    spaces and parentheses, so fields are counted after its last ')'."""
    if not text or ")" not in text:
        return None
    f = text[text.rindex(")") + 2 :].split()
    if len(f) < 20:
        return None
    return f[0], int(f[11]) + int(f[12]), int(f[19])


def pid_family(text: str | None) -> tuple[int, int] | None:
    """(parent PID, cutime + cstime: the ticks of its children it has reaped) from /proc/PID/stat."""
    if not text or ")" not in text:
        return None
    f = text[text.rindex(")") + 2 :].split()
    if len(f) < 20:
        return None
    return int(f[1]), int(f[13]) + int(f[14])


def descendants(children: dict[int, list[int]], roots: list[int]) -> list[int]:
    """The roots and every process below them, each once, roots first."""
    out: list[int] = []
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop(0)
        if pid in seen:
            continue
        seen.add(pid)
        out.append(pid)
        todo += children.get(pid, [])
    return out


def pid_io(text: str | None) -> list[int] | None:
    """[read_bytes, write_bytes] of /proc/PID/io: bytes the process made the storage layer fetch
    and send (not socket traffic, which rchar/wchar would include)."""
    if not text:
        return None
    got: dict[str, int] = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        if k in ("read_bytes", "write_bytes"):
            got[k] = int(v)
    if len(got) < 2:
        return None
    return [got["read_bytes"], got["write_bytes"]]


def statm_rss_kib(text: str | None, page: int) -> int | None:
    """Resident set size in KiB from /proc/PID/statm (its second field is in pages)."""
    if not text:
        return None
    parts = text.split()
    return int(parts[1]) * page // 1024 if len(parts) > 1 else None


def net_dev(text: str | None) -> dict[str, list[int]]:
    """/proc/net/dev: per device [rx bytes, rx packets, tx bytes, tx packets]."""
    out: dict[str, list[int]] = {}
    for line in (text or "").splitlines()[2:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        v = rest.split()
        if len(v) >= 10:
            out[name.strip()] = [int(v[0]), int(v[1]), int(v[8]), int(v[9])]
    return out


def diskstats(text: str | None) -> dict[tuple[int, int], tuple[str, list[int]]]:
    """/proc/diskstats: per (major, minor) the name and [reads, read sectors, writes, write
    sectors, milliseconds the device was busy]."""
    out: dict[tuple[int, int], tuple[str, list[int]]] = {}
    for line in (text or "").splitlines():
        v = line.split()
        if len(v) < 14:
            continue
        out[(int(v[0]), int(v[1]))] = (v[2], [int(v[3]), int(v[5]), int(v[7]), int(v[9]), int(v[12])])
    return out


BLKIO = "/sys/fs/cgroup/blkio"
LIMIT_KINDS = ("read_bps", "write_bps", "read_iops", "write_iops")


def throttle_limits(text: str | None) -> dict[str, int]:
    """A blkio.throttle.*_device file: 'major:minor limit' per line -> device number -> limit."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        v = line.split()
        if len(v) == 2 and v[1].isdigit():
            out[v[0]] = int(v[1])
    return out


def cgroup_paths(text: str | None) -> dict[str, str]:
    """/proc/PID/cgroup: controller → path ('' is the cgroup v2 unified path)."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for ctl in parts[1].split(",") if parts[1] else [""]:
            out[ctl] = parts[2]
    return out


def cpu_stat(text: str | None) -> list[int] | None:
    """[periods, throttled periods, throttled ns] from a cgroup's cpu.stat (v1: throttled_time in
    ns; v2: throttled_usec)."""
    if not text:
        return None
    d: dict[str, int] = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if v.strip().lstrip("-").isdigit():
            d[k] = int(v)
    if "nr_periods" not in d:
        return None
    ns = d.get("throttled_time", d.get("throttled_usec", 0) * 1000)
    return [d["nr_periods"], d.get("nr_throttled", 0), ns]


def quota_v1(quota: str | None, period: str | None) -> float | None:
    """CPUs allowed by cfs_quota_us / cfs_period_us; None when unlimited (-1)."""
    try:
        q, p = int((quota or "").strip()), int((period or "").strip())
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def quota_v2(cpu_max: str | None) -> float | None:
    """CPUs allowed by cpu.max ("max 100000" is unlimited)."""
    parts = (cpu_max or "").split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        q, p = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def show_stat(text: str) -> list[list[Any]]:
    """HAProxy `show stat` CSV → per backend server [name, current sessions, queue, connection
    errors, response errors, 1 if UP else 0]."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        return []
    head = lines[0][2:].split(",")
    idx = {k: i for i, k in enumerate(head)}
    need = ("svname", "scur", "qcur", "econ", "eresp", "status")
    if any(k not in idx for k in need):
        return []
    out: list[list[Any]] = []
    for line in lines[1:]:
        v = line.split(",")
        if len(v) < len(head):
            continue
        name = v[idx["svname"]]
        if name in ("FRONTEND", "BACKEND", ""):
            continue

        def num(k: str, v: list[str] = v) -> int:
            x = v[idx[k]]
            return int(x) if x.isdigit() else 0

        out.append([name, num("scur"), num("qcur"), num("econ"), num("eresp"),
                    1 if v[idx["status"]].startswith("UP") else 0])  # fmt: skip
    return out


# ---- the probe ----------------------------------------------------------------------------------


def haproxy_rows(path: str, timeout: float = 0.5) -> list[list[Any]] | None:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(b"show stat\n")
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
    except OSError:
        return None
    return show_stat(b"".join(chunks).decode(errors="replace"))


class Probe:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.root = spec.get("root", "/").rstrip("/")
        self.interval = float(spec.get("interval", 1.0))
        self.roles: list[dict[str, Any]] = list(spec.get("roles", []))
        self.tck = os.sysconf("SC_CLK_TCK")
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.ncpu = os.cpu_count() or 1
        self.pids: dict[str, tuple[int, int] | None] = {}
        for r in self.roles:
            pid, start = r.get("pid"), r.get("start")
            self.pids[r["role"]] = (int(pid), int(start)) if pid and start is not None else None
        self.cg: dict[int, tuple[str | None, str | None, str | None]] = {}
        self.devices: set[str] = set()  # the block devices the roles' data is on (from hello())
        self.devnums: dict[str, str] = {}  # their major:minor, for the block I/O limits on them

    def p(self, path: str) -> str:
        return self.root + path

    def hello(self) -> dict[str, Any]:
        disks = diskstats(read(self.p("/proc/diskstats")))
        roles: dict[str, Any] = {}
        for r in self.roles:
            info: dict[str, Any] = {}
            if r.get("datadir"):
                info["disk"] = self.device_of(r["datadir"], disks)
                if info["disk"]:
                    self.devices.add(info["disk"])
                    num = next(f"{a}:{b}" for (a, b), (name, _) in disks.items() if name == info["disk"])
                    self.devnums[info["disk"]] = num
            if r.get("netdev"):
                info["netdev"] = r["netdev"]
                if r.get("speed"):  # a real NIC's speed; a veth's "10000" is no limit
                    speed = (read(self.p(f"/sys/class/net/{r['netdev']}/speed")) or "").strip()
                    info["mbit"] = int(speed) if speed.isdigit() and int(speed) > 0 else None
            roles[r["role"]] = info
        return {"tck": self.tck, "ncpu": self.ncpu, "page": self.page, "pid": os.getpid(),
                "interval": self.interval, "roles": roles}  # fmt: skip

    def disk_limits(self) -> dict[str, list[int]]:
        """Per watched device with a block I/O limit (cgroup v1 blkio, root group: what the
        throttle-disk fault sets), [read B/s, write B/s, read ops/s, write ops/s], 0 = none."""
        if not self.devnums:
            return {}
        rows = [throttle_limits(read(self.p(f"{BLKIO}/blkio.throttle.{k}_device"))) for k in LIMIT_KINDS]
        out = {}
        for name, num in self.devnums.items():
            lim = [r.get(num, 0) for r in rows]
            if any(lim):
                out[name] = lim
        return out

    def device_of(self, path: str, disks: dict[tuple[int, int], tuple[str, list[int]]]) -> str | None:
        """The block device a directory is on (its major:minor in /proc/diskstats)."""
        try:
            st = os.stat(self.p(path))
        except OSError:
            return None
        found = disks.get((os.major(st.st_dev), os.minor(st.st_dev)))
        return found[0] if found else None

    def current_pid(self, r: dict[str, Any]) -> tuple[int, int] | None:
        """The role's process: the one we were given while it lives, else the one its pid file
        names now (a node restarted by a fault)."""
        known = self.pids.get(r["role"])
        if known is not None:
            st = pid_stat(read(self.p(f"/proc/{known[0]}/stat")))
            if st is not None and st[0] not in ("Z", "X") and st[2] == known[1]:
                return known
        text = (read(self.p(r["pidfile"])) or "").strip() if r.get("pidfile") else ""
        if text.isdigit():
            st = pid_stat(read(self.p(f"/proc/{text}/stat")))
            if st is not None and st[0] not in ("Z", "X"):
                self.pids[r["role"]] = (int(text), st[2])
                return self.pids[r["role"]]
        self.pids[r["role"]] = None
        return None

    def cgroup_of(self, pid: int) -> tuple[str | None, str | None, str | None]:
        """(quota file, period file or None for v2's cpu.max, cpu.stat) of the process's CPU cgroup."""
        if pid in self.cg:
            return self.cg[pid]
        paths = cgroup_paths(read(self.p(f"/proc/{pid}/cgroup")))
        found: tuple[str | None, str | None, str | None] = (None, None, None)
        if "cpu" in paths:
            d = self.p(f"/sys/fs/cgroup/cpu{paths['cpu'].rstrip('/')}")
            if not os.path.exists(d + "/cpu.cfs_quota_us"):
                d = self.p(f"/sys/fs/cgroup/cpu,cpuacct{paths['cpu'].rstrip('/')}")
            found = (d + "/cpu.cfs_quota_us", d + "/cpu.cfs_period_us", d + "/cpu.stat")
        elif "" in paths:
            d = self.p(f"/sys/fs/cgroup{paths[''].rstrip('/')}")
            found = (d + "/cpu.max", None, d + "/cpu.stat")
        self.cg[pid] = found
        return found

    def live(self, pid: int) -> bool:
        st = pid_stat(read(self.p(f"/proc/{pid}/stat")))
        return st is not None and st[0] not in ("Z", "X")

    def roots(self, r: dict[str, Any]) -> list[int]:
        """The role's own process (current_pid) and the live ones its `tree` pid files name."""
        cur = self.current_pid(r)
        out = [cur[0]] if cur is not None else []
        for pf in r.get("tree") or []:
            text = (read(self.p(pf)) or "").strip()
            if text.isdigit() and int(text) not in out and self.live(int(text)):
                out.append(int(text))
        return out

    def children(self) -> dict[int, list[int]]:
        """Parent PID -> its children, from every /proc/PID/stat."""
        out: dict[int, list[int]] = {}
        try:
            entries = os.listdir(self.p("/proc"))
        except OSError:
            return out
        for e in entries:
            if e.isdigit():
                fam = pid_family(read(self.p(f"/proc/{e}/stat")))
                if fam is not None:
                    out.setdefault(fam[0], []).append(int(e))
        return out

    def tree_sample(self, roots: list[int], children: dict[int, list[int]]) -> dict[str, Any]:
        """CPU ticks, RSS and I/O of the roots and everything below them (the ticks of workers
        they reaped included, so the sum only grows while the roots live)."""
        cpu = rss = 0
        io = [0, 0]
        for pid in descendants(children, roots):
            st = pid_stat(read(self.p(f"/proc/{pid}/stat")))
            if st is None or st[0] in ("Z", "X"):
                continue
            cpu += st[1]
            if pid in roots:
                fam = pid_family(read(self.p(f"/proc/{pid}/stat")))
                cpu += fam[1] if fam else 0
            rss += statm_rss_kib(read(self.p(f"/proc/{pid}/statm")), self.page) or 0
            got = pid_io(read(self.p(f"/proc/{pid}/io")))
            if got:
                io = [io[0] + got[0], io[1] + got[1]]
        return {"pid": roots[0], "roots": roots, "cpu": cpu, "rss": rss, "io": io}

    def role_sample(
        self, r: dict[str, Any], nets: dict[str, list[int]], children: dict[int, list[int]] | None = None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        roots = self.roots(r) if r.get("tree") else []
        cur = self.current_pid(r) if not roots else (roots[0], 0)
        if roots:
            out.update(self.tree_sample(roots, children if children is not None else self.children()))
        elif cur is not None:
            pid = cur[0]
            st = pid_stat(read(self.p(f"/proc/{pid}/stat")))
            if st is not None:
                out["pid"] = pid
                out["cpu"] = st[1]
                out["rss"] = statm_rss_kib(read(self.p(f"/proc/{pid}/statm")), self.page)
                out["io"] = pid_io(read(self.p(f"/proc/{pid}/io")))
        if "pid" in out:
            pid = int(out["pid"])
            qf, pf, sf = self.cgroup_of(pid)
            if qf is not None:
                out["quota"] = quota_v1(read(qf), read(pf)) if pf else quota_v2(read(qf))
                out["thr"] = cpu_stat(read(sf)) if sf else None
            try:
                out["aff"] = len(os.sched_getaffinity(pid)) if self.root == "" else self.ncpu
            except OSError:
                out["aff"] = self.ncpu
        dev = r.get("netdev")
        if dev and dev in nets:
            rx_b, rx_p, tx_b, tx_p = nets[dev]
            out["net"] = [tx_b, tx_p, rx_b, rx_p] if r.get("flip") else [rx_b, rx_p, tx_b, tx_p]
        if r.get("stats"):
            out["hap"] = haproxy_rows(self.p(r["stats"]))
        return out

    def sample(self) -> dict[str, Any]:
        nets = net_dev(read(self.p("/proc/net/dev")))
        disks = diskstats(read(self.p("/proc/diskstats")))
        me = pid_stat(read(self.p("/proc/self/stat")) if self.root == "" else None)
        # one walk of the process list per interval, for every role that counts its workers
        children = self.children() if any(r.get("tree") for r in self.roles) else None
        line: dict[str, Any] = {
            "w": time.time(),
            "m": time.monotonic(),
            "self": me[1] if me else None,
            "cpu": host_cpu(read(self.p("/proc/stat"))),
            "disks": {name: v for name, v in disks.values() if name in self.devices},
            "dlim": self.disk_limits(),
            "r": {r["role"]: self.role_sample(r, nets, children) for r in self.roles},
        }
        return line


def emit(obj: dict[str, Any]) -> bool:
    """Write one line; False when the reader is gone (the pipe or the ssh channel closed)."""
    try:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1]) if len(argv) > 1 else {}
    probe = Probe(spec)
    until = time.monotonic() + float(spec.get("until", 3600))
    parent = os.getppid()
    if not emit({"hello": probe.hello()}):
        return 0
    nxt = time.monotonic()
    while True:
        if not emit(probe.sample()):
            return 0
        nxt += probe.interval
        now = time.monotonic()
        if now >= until or os.getppid() != parent:
            return 0
        if nxt < now:  # we fell behind (a stopped machine): do not burst to catch up
            nxt = now + probe.interval
        time.sleep(nxt - now)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        sys.exit(0)
