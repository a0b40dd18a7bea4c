"""From counters to per-second figures (pure): two consecutive probe lines of one host, or two
readings of one node's engine figures, become the points telemetry stores.

A point is (source, metric, value): the source is a role (n2, lb1), a HAProxy backend as one
balancer sees it (lb1/n2), a machine ("host", "host:db1") or one of its disks ("host/vda").
Every stored metric and its unit is listed in METRIC_UNITS (docs/telemetry.md says what each means).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterbench.engines.base import METRICS

Point = tuple[str, str, float]  # (source, metric, value)

# Stored name → unit, for the export, the docs and the plots.
METRIC_UNITS: dict[str, str] = {
    "cpu_cores": "CPUs",
    "cpu_limit_cores": "CPUs",
    "cpu_quota_cores": "CPUs",
    "cpu_util": "fraction",
    "cpu_throttled": "fraction",
    "rss_mib": "MiB",
    "io_read_mib_s": "MiB/s",
    "io_write_mib_s": "MiB/s",
    "net_rx_mbit": "Mbit/s",
    "net_tx_mbit": "Mbit/s",
    "net_rx_pps": "packets/s",
    "net_tx_pps": "packets/s",
    "net_limit_mbit": "Mbit/s",
    "net_util": "fraction",
    "sessions": "sessions",
    "queue": "requests",
    "conn_errors_s": "1/s",
    "resp_errors_s": "1/s",
    "up": "1 up, 0 down",
    "host_cpu_busy": "fraction",
    "host_cpus": "CPUs",
    "probe_cpu_cores": "CPUs",
    "disk_util": "fraction",
    "disk_read_iops": "1/s",
    "disk_write_iops": "1/s",
    "disk_read_mib_s": "MiB/s",
    "disk_write_mib_s": "MiB/s",
    "disk_limit_mib_s": "MiB/s",
    "disk_limit_iops": "1/s",
    **{m.stored: m.unit for m in METRICS.values()},
}

MIB = 1024 * 1024
SECTOR = 512


@dataclass(frozen=True)
class Hello:
    """A probe's first line: the host's constants."""

    tck: int
    ncpu: int
    roles: Mapping[str, Mapping[str, Any]]  # role → {"disk": name, "mbit": speed}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Hello:
        return Hello(int(d.get("tck") or 100), int(d.get("ncpu") or 1), d.get("roles") or {})

    def disks(self) -> set[str]:
        return {str(r["disk"]) for r in self.roles.values() if r.get("disk")}

    def disk_source(self, site: str, dev: str) -> str:
        """What a disk's figures are stored under: 'n2/loop0' for a device only n2's data is on (a
        datadir file system of its own), else '<site>/<device>' ('host/vda', shared)."""
        owners = [role for role, r in self.roles.items() if r.get("disk") == dev]
        return f"{owners[0]}/{dev}" if len(owners) == 1 else f"{site}/{dev}"


def _delta(a: Any, b: Any) -> float | None:
    """b - a for two counters, None when either is missing or the counter went back (a restart)."""
    if a is None or b is None:
        return None
    d = float(b) - float(a)
    return d if d >= 0 else None


def _role_points(
    role: str, a: Mapping[str, Any], b: Mapping[str, Any], dt: float, hello: Hello, limit_bps: float | None
) -> list[Point]:
    out: list[Point] = []
    # the same processes in both lines (a web node's: all its masters), so the counters compare
    same = a.get("pid") is not None and a.get("pid") == b.get("pid") and a.get("roots") == b.get("roots")
    if b.get("pid") is not None:
        quota = b.get("quota")
        limit = float(quota) if quota else float(min(b.get("aff") or hello.ncpu, hello.ncpu))
        out.append((role, "cpu_limit_cores", limit))
        if quota:
            out.append((role, "cpu_quota_cores", float(quota)))
        if same:
            d = _delta(a.get("cpu"), b.get("cpu"))
            if d is not None:
                cores = d / hello.tck / dt
                out += [(role, "cpu_cores", cores), (role, "cpu_util", cores / limit if limit else 0.0)]
            ta, tb = a.get("thr"), b.get("thr")
            if quota and ta and tb:
                periods = _delta(ta[0], tb[0])
                throttled = _delta(ta[1], tb[1])
                if periods and throttled is not None:
                    out.append((role, "cpu_throttled", throttled / periods))
            ia, ib = a.get("io"), b.get("io")
            if ia and ib:
                for k, name in ((0, "io_read_mib_s"), (1, "io_write_mib_s")):
                    d = _delta(ia[k], ib[k])
                    if d is not None:
                        out.append((role, name, d / MIB / dt))
        if b.get("rss") is not None:
            out.append((role, "rss_mib", float(b["rss"]) / 1024))
    na, nb = a.get("net"), b.get("net")
    if na and nb:
        rates = [_delta(x, y) for x, y in zip(na, nb, strict=False)]
        if None not in rates:
            rx_b, rx_p, tx_b, tx_p = (float(r) / dt for r in rates)  # type: ignore[arg-type]
            rx, tx = rx_b * 8 / 1e6, tx_b * 8 / 1e6
            out += [(role, "net_rx_mbit", rx), (role, "net_tx_mbit", tx),
                    (role, "net_rx_pps", rx_p), (role, "net_tx_pps", tx_p)]  # fmt: skip
            speed = hello.roles.get(role, {}).get("mbit")
            bps = limit_bps or (float(speed) * 1e6 if speed else None)
            if bps:
                out += [(role, "net_limit_mbit", bps / 1e6), (role, "net_util", max(rx, tx) * 1e6 / bps)]
    hap_a = {r[0]: r for r in a.get("hap") or []}
    for row in b.get("hap") or []:
        src = f"{role}/{row[0]}"
        out += [(src, "sessions", float(row[1])), (src, "queue", float(row[2])), (src, "up", float(row[5]))]
        prev = hap_a.get(row[0])
        if prev is not None:
            for k, name in ((3, "conn_errors_s"), (4, "resp_errors_s")):
                d = _delta(prev[k], row[k])
                if d is not None:
                    out.append((src, name, d / dt))
    return out


def _disk_points(src: str, d: list[float], dt: float, limits: list[int] | None) -> list[Point]:
    """One device's second: its busy share, operations and throughput. Under a block I/O limit
    (throttle-disk) the device is as busy as its use of that limit: held bios do not count as
    busy time, so a throttled disk would otherwise look idle."""
    reads, rsect, writes, wsect, busy_ms = d
    rates = (rsect * SECTOR / dt, wsect * SECTOR / dt, reads / dt, writes / dt)
    util = busy_ms / 1000 / dt
    out: list[Point] = []
    if limits and any(limits):
        util = max([util] + [r / lim for r, lim in zip(rates, limits, strict=False) if lim])
        if limits[1]:
            out.append((src, "disk_limit_mib_s", limits[1] / MIB))
        if limits[3]:
            out.append((src, "disk_limit_iops", float(limits[3])))
    return [
        (src, "disk_util", min(1.0, util)),
        (src, "disk_read_iops", rates[2]),
        (src, "disk_write_iops", rates[3]),
        (src, "disk_read_mib_s", rates[0] / MIB),
        (src, "disk_write_mib_s", rates[1] / MIB),
        *out,
    ]


def probe_points(
    site: str, hello: Hello, a: Mapping[str, Any], b: Mapping[str, Any], limits: Mapping[str, float]
) -> list[Point]:
    """The per-second figures between two probe lines of one host (site: its source name)."""
    dt = float(b["m"]) - float(a["m"])
    if dt <= 0.05:
        return []
    out: list[Point] = [(site, "host_cpus", float(hello.ncpu))]
    ca, cb = a.get("cpu"), b.get("cpu")
    if ca and cb:
        busy, total = _delta(ca[0], cb[0]), _delta(ca[1], cb[1])
        if busy is not None and total:
            out.append((site, "host_cpu_busy", busy / total))
    me = _delta(a.get("self"), b.get("self"))
    if me is not None:
        out.append((site, "probe_cpu_cores", me / hello.tck / dt))
    wanted = hello.disks()
    da, db = a.get("disks") or {}, b.get("disks") or {}
    for dev in sorted(wanted):
        if dev not in da or dev not in db:
            continue
        d = [_delta(x, y) for x, y in zip(da[dev], db[dev], strict=False)]
        if None in d:
            continue
        lim = (b.get("dlim") or {}).get(dev)
        out += _disk_points(hello.disk_source(site, dev), [float(x) for x in d], dt, lim)  # type: ignore[arg-type]
    ra, rb = a.get("r") or {}, b.get("r") or {}
    for role in sorted(rb):
        out += _role_points(role, ra.get(role) or {}, rb[role], dt, hello, limits.get(role))
    return out


def engine_points(
    node: str, a: Mapping[str, float] | None, b: Mapping[str, float] | None, dt: float
) -> list[Point]:
    """The per-second figures between two readings of one node's DbNode.metrics()."""
    if b is None:
        return []
    out: list[Point] = []
    for name, value in sorted(b.items()):
        info = METRICS.get(name)
        if info is None:
            continue
        if info.kind == "gauge":
            out.append((node, info.stored, value * info.scale))
        elif a is not None and dt > 0.05:
            d = _delta(a.get(name), value)
            if d is not None:
                out.append((node, info.stored, d / dt * info.scale))
    return out
