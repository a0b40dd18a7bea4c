"""The web tier's front balancer: the HAProxy component in HTTP mode over the web nodes, each
checked with GET /health, on fe1 (and fe2 with keepalived and a VIP of its own, exactly as the
database balancer pair). Pure: configurations from the topology; the HAProxy and Keepalived
components run them."""

from __future__ import annotations

import math
from pathlib import Path

from clusterbench.components.haproxy.config import WEB_ROUTES, HAProxyConfig
from clusterbench.components.keepalived.config import KeepalivedConfig
from clusterbench.components.web.config import NGINX_GRACE_S
from clusterbench.spec.topology import Topology

FRONT_PREFIX = "fe"
# HAProxy waits this much longer for a web node than nginx waits for php-fpm
FRONT_GRACE_S = 5


def front_role(index: int) -> str:
    return f"{FRONT_PREFIX}{index}"


def web_role(index: int) -> str:
    return f"w{index}"


def front_servers(t: Topology) -> tuple[tuple[str, str], ...]:
    return tuple((web_role(i), t.web_address(i)) for i in t.web.indexes())


def front_haproxy_config(t: Topology, index: int, dir: Path) -> HAProxyConfig:
    """HAProxy fe<index> over every web node: HTTP mode, a request at a time balanced, GET
    /health on each web node's own port, the front VIP (if a pair) accepted on the wildcard."""
    if index not in t.web.front_indexes():
        raise ValueError(f"front balancer {index} does not exist in this topology")
    w = t.web
    timeout = math.ceil(w.fpm.request_timeout) + NGINX_GRACE_S + FRONT_GRACE_S
    return HAProxyConfig(
        cluster_name=t.name, address=t.front_address(index), dir=dir, settings=w.front,
        servers=front_servers(t), check_port=w.port, vip=t.front_vip_address(), routes=WEB_ROUTES,
        mode="http", server_port=w.port, http_timeout_s=timeout,
    )  # fmt: skip


def front_keepalived_config(
    t: Topology, index: int, dir: Path, *, prefixlen: int, interface: str = "eth0"
) -> KeepalivedConfig:
    """keepalived on fe<index> of the front pair: unicast VRRP with the other front balancer,
    moving the front VIP; alive while this namespace's front HAProxy takes connections."""
    vip = t.front_vip_address()
    if vip is None:
        raise ValueError("the web front has no VIP; set [web.front] count = 2")
    peer = 2 if index == 1 else 1
    return KeepalivedConfig(
        cluster_name=t.name, index=index, dir=dir, src_ip=t.front_address(index),
        peer_ip=t.front_address(peer), vip=vip, prefixlen=prefixlen,
        haproxy_socket=HAProxyConfig.stats_socket_in(dir), advert_int=t.web.front.advert_int,
        interface=interface, role_prefix=FRONT_PREFIX,
    )  # fmt: skip
