"""What a telemetry probe watches, as data: the cluster says which processes its roles run
(`Watch`), the provider says where a probe runs for them and what their links are (`ProbeSite`).
Pure: nothing here touches a host."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterbench.hosts.base import Host

# Words of the probe's first line, so on the command line of every probe (`python3 -c <source>`):
# how `down` recognizes one that a killed run left (it also names the cluster's files).
PROBE_MARKER = "per-host telemetry probe"


@dataclass(frozen=True)
class Watch:
    """One role's server process, as the cluster knows it (paths are on the role's host)."""

    role: str  # n1, lb1
    pid: int | None
    start_ticks: int | None
    pidfile: Path | None = None  # followed when the process is restarted during the trial
    datadir: Path | None = None  # its disk device is watched
    stats_socket: Path | None = None  # HAProxy's: per-backend sessions, queue, errors, UP/DOWN
    # pid files of more processes that are the role too (a web node: nginx beside php-fpm); with
    # it, the role's CPU, memory and I/O are those of these processes and all their workers
    tree: tuple[Path, ...] = ()


@dataclass(frozen=True)
class RoleProbe:
    """A role as one probe watches it: its process, and its link as that host sees it."""

    watch: Watch
    netdev: str | None = None  # the device carrying the role's traffic, as named on the probe's host
    flip: bool = False  # the device is the far end of the link: what it receives, the role sent
    link_limit_bps: float | None = None  # the configured limit (tbf) of the link
    speed_is_limit: bool = False  # without one, the device's speed is the limit (a real NIC's)

    def spec(self) -> dict[str, Any]:
        w = self.watch
        return {
            "role": w.role,
            "pid": w.pid,
            "start": w.start_ticks,
            "pidfile": str(w.pidfile) if w.pidfile else None,
            "datadir": str(w.datadir) if w.datadir else None,
            "stats": str(w.stats_socket) if w.stats_socket else None,
            "tree": [str(p) for p in w.tree] if w.tree else None,
            "netdev": self.netdev,
            "flip": self.flip,
            "speed": self.speed_is_limit,
        }


@dataclass
class ProbeSite:
    """One probe process: the host it runs on and the roles it watches there.

    `name` names the host's own figures (its CPU, its disks): "host" for this machine, "host:<name>"
    for an inventory machine. `shared` is True when the roles share the machine with the load
    clients and each other (the local provider): its CPU is then the machine's, not a node's."""

    name: str
    host: Host
    roles: list[RoleProbe] = field(default_factory=list)
    shared: bool = False

    def spec(self, interval: float, until: float) -> dict[str, Any]:
        return {"interval": interval, "until": until, "roles": [r.spec() for r in self.roles]}

    def limits(self) -> dict[str, float]:
        """role → link limit in bit/s, where one is configured."""
        return {r.watch.role: r.link_limit_bps for r in self.roles if r.link_limit_bps}


UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bit": 1.0, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "bps": 8.0}


def rate_bps(rate: str | None) -> float | None:
    """A tc rate ("10mbit", "1gbit", "500kbit") in bit/s; None when not given or not understood."""
    if not rate:
        return None
    text = rate.strip().lower()
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            try:
                return float(text[: -len(unit)]) * UNITS[unit]
            except ValueError:
                return None
    try:
        return float(text) * 8.0  # tc: a bare number is bytes per second
    except ValueError:
        return None
