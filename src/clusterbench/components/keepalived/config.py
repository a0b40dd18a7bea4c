"""Pure rendering of keepalived.conf for one HAProxy of a balancer pair (unicast VRRP)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from clusterbench.components.templates import package_templates

_env = package_templates("clusterbench.components.keepalived")

SOCAT = "/usr/bin/socat"
# lb1 wins the first election; with nopreempt the priorities matter only then.
PRIORITIES = {1: 150, 2: 100}


def virtual_router_id(cluster_name: str) -> int:
    """1-255, derived from the cluster name, so two clusters never share a VRRP router id by
    default. (They could not disturb each other anyway: each has its own bridge and the
    adverts are unicast to the peer, but distinct ids keep captures and logs unambiguous.)"""
    return zlib.crc32(cluster_name.encode()) % 255 + 1


def format_interval(seconds: float) -> str:
    """keepalived's advert_int: '1' for whole seconds, '0.5' for fractions."""
    return f"{seconds:g}"


@dataclass(frozen=True)
class KeepalivedConfig:
    cluster_name: str
    index: int  # 1 (lb1) or 2 (lb2)
    dir: Path
    src_ip: str
    peer_ip: str
    vip: str
    prefixlen: int
    haproxy_socket: Path  # this namespace's HAProxy stats socket, watched by the track script
    advert_int: float = 1.0
    interface: str = "eth0"
    check_interval: int = 1
    check_timeout: int = 1
    check_fall: int = 1
    check_rise: int = 2
    # "lb" for the database balancers (lb1, lb2), "fe" for the web tier's front pair (fe1, fe2):
    # each pair is a VRRP instance of its own, with a router id of its own
    role_prefix: str = "lb"

    @property
    def role(self) -> str:
        return f"{self.role_prefix}{self.index}"

    @property
    def pair_name(self) -> str:
        """The pair's name: the cluster's for the database balancers, <cluster>-fe for the front."""
        return self.cluster_name if self.role_prefix == "lb" else f"{self.cluster_name}-{self.role_prefix}"

    @property
    def priority(self) -> int:
        return PRIORITIES[self.index]

    @property
    def vrid(self) -> int:
        return virtual_router_id(self.pair_name)

    @property
    def vrrp_version(self) -> int:
        return 2 if float(self.advert_int).is_integer() else 3

    @property
    def check_command(self) -> str:
        # keepalived execs the script string split on spaces (no shell): connect, send nothing,
        # exit 0; socat exits 1 when the connection is refused or the socket is missing.
        return f"{SOCAT} -u OPEN:/dev/null UNIX-CONNECT:{self.haproxy_socket}"

    @property
    def cfg_path(self) -> Path:
        return self.dir / "keepalived.conf"

    @property
    def log_path(self) -> Path:
        return self.dir / "keepalived.log"

    @property
    def pid_path(self) -> Path:
        return self.dir / "keepalived.pid"

    @property
    def vrrp_pid_path(self) -> Path:
        return self.dir / "keepalived-vrrp.pid"

    @property
    def checkers_pid_path(self) -> Path:
        return self.dir / "keepalived-checkers.pid"


def render_keepalived_conf(cfg: KeepalivedConfig) -> str:
    if " " in str(cfg.haproxy_socket):
        raise ValueError(f"{cfg.haproxy_socket}: keepalived scripts cannot take paths with spaces")
    return _env.get_template("keepalived.conf.j2").render(
        cfg=cfg,
        router_id=f"cb-{cfg.cluster_name}-{cfg.role}",
        instance=f"VI_{cfg.pair_name.replace('-', '_')}",
        advert_int=format_interval(cfg.advert_int),
    )
