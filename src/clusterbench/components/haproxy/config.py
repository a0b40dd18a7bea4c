"""Pure rendering of haproxy.cfg."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clusterbench.components.templates import package_templates
from clusterbench.spec.topology import BalancerSettings

_env = package_templates("clusterbench.components.haproxy")


@dataclass(frozen=True)
class Route:
    """One listener of the balancer: clients connect to `port + port_offset`; a node gets traffic
    while its health agent answers 200 to GET `check_path`. The engine says which routes it has
    (Galera: one, every Synced node; Group Replication: write to the PRIMARY, read over the
    SECONDARYs)."""

    name: str
    port_offset: int
    check_path: str
    comment: str
    balance: str | None = None  # None: the topology's [balancer] algorithm


GALERA_ROUTES = (
    Route(
        "galera",
        0,
        "/",
        "HTTP clustercheck on each node: 200 only when Synced + Primary + ready "
        "(not mysql-check, RECIPES G6).",
    ),
)


# The web tier's front balancer: HTTP mode over the web nodes (components/web/front.py).
WEB_ROUTES = (
    Route(
        "web",
        0,
        "/health",
        "GET /health on each web node: 200 only when its application reaches the database.",
    ),
)


@dataclass(frozen=True)
class HAProxyConfig:
    cluster_name: str
    address: str
    dir: Path
    settings: BalancerSettings
    servers: tuple[tuple[str, str], ...]  # (name, address)
    check_port: int = 9200
    vip: str | None = None  # set on each HAProxy of a keepalived pair
    routes: tuple[Route, ...] = GALERA_ROUTES
    # tcp: the database balancer (MySQL protocol to port 3306); http: the web front, which
    # balances each request and checks the servers on their own port (check_port = server_port)
    mode: Literal["tcp", "http"] = "tcp"
    server_port: int = 3306
    # http mode: how long a client may take to send a request and a server to answer it (s)
    http_timeout_s: int = 60

    @property
    def cfg_path(self) -> Path:
        return self.dir / "haproxy.cfg"

    @property
    def stats_socket(self) -> Path:
        return self.stats_socket_in(self.dir)

    @staticmethod
    def stats_socket_in(dir: Path) -> Path:
        return dir / "stats.sock"

    @property
    def pid_path(self) -> Path:
        return self.dir / "haproxy.pid"


def render_haproxy_cfg(cfg: HAProxyConfig) -> str:
    return _env.get_template("haproxy.cfg.j2").render(
        cluster_name=cfg.cluster_name,
        dir=str(cfg.dir),
        address=cfg.address,
        b=cfg.settings,
        servers=list(cfg.servers),
        check_port=cfg.check_port,
        vip=cfg.vip,
        routes=list(cfg.routes),
        mode=cfg.mode,
        server_port=cfg.server_port,
        http_timeout=cfg.http_timeout_s,
    )
