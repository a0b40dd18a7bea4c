"""components/web/front.py: the front HAProxy (HTTP mode, GET /health per web node) and its
keepalived pair, from the topology; haproxy -c on the rendered file when HAProxy is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from clusterbench.components.haproxy.config import render_haproxy_cfg
from clusterbench.components.keepalived.config import KeepalivedConfig, render_keepalived_conf
from clusterbench.components.web.front import front_haproxy_config, front_keepalived_config, front_role
from clusterbench.spec.topology import Topology, topology_from_data

DIR = Path("/var/lib/clusterbench/clusters/lab/fe1")


def topo(**web: object) -> Topology:
    return topology_from_data({"balancer": {"count": 2}, "web": {"nodes": 3, **web}}, "t.toml")


GOLDEN_FRONT = """\
# Rendered by clusterbench for cluster lab. Do not edit: `clusterbench up` rewrites it.
global
    maxconn 4096
    pidfile /var/lib/clusterbench/clusters/lab/fe1/haproxy.pid
    stats socket /var/lib/clusterbench/clusters/lab/fe1/stats.sock mode 600 level admin
    stats timeout 10s

defaults
    mode http
    maxconn 4096
    timeout connect 2s
    timeout client 40s
    timeout server 40s
    timeout http-request 10s
    timeout http-keep-alive 10s
    # Tell the web nodes who asked (X-Forwarded-For).
    option forwardfor
    # A request whose connection to a web node failed (nothing was sent) is retried on another one.
    option redispatch
    timeout check 2s

listen web
    bind 198.18.0.5:80
    balance roundrobin
    # GET /health on each web node: 200 only when its application reaches the database.
    option httpchk
    http-check send meth GET uri /health
    http-check expect status 200
    # Cut sessions on a node as soon as it is marked down, so clients reconnect to a healthy one.
    default-server port 80 inter 1000ms fastinter 100ms fall 2 rise 2 on-marked-down shutdown-sessions
    server w1 198.18.0.21:80 check
    server w2 198.18.0.22:80 check
    server w3 198.18.0.23:80 check
"""


def test_single_front_golden() -> None:
    assert front_role(1) == "fe1"
    assert render_haproxy_cfg(front_haproxy_config(topo(), 1, DIR)) == GOLDEN_FRONT


def test_front_pair_binds_the_wildcard_and_follows_the_settings() -> None:
    t = topo(port=8080, front={"count": 2, "port": 8000, "algorithm": "leastconn", "fall": 3},
             fpm={"request_timeout": 60})  # fmt: skip
    text = render_haproxy_cfg(front_haproxy_config(t, 2, DIR))
    lines = [ln.strip() for ln in text.splitlines()]
    assert "bind :8000" in lines
    assert "# 198.18.0.6 as soon as keepalived moves it here, and on its own 198.18.0.7 all along. A" in lines
    assert "balance leastconn" in lines
    assert "timeout server 70s" in lines  # php-fpm's 60 s + nginx's and HAProxy's grace
    default = "default-server port 8080 inter 1000ms fastinter 100ms fall 3 rise 2 on-marked-down"
    default += " shutdown-sessions"
    assert default in lines
    assert "server w3 198.18.0.23:8080 check" in lines
    with pytest.raises(ValueError, match="front balancer 2 does not exist"):
        front_haproxy_config(topo(), 2, DIR)


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed")
@pytest.mark.parametrize("front", [{}, {"count": 2}])
def test_haproxy_accepts_the_front_config(tmp_path: Path, front: dict[str, object]) -> None:
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(render_haproxy_cfg(front_haproxy_config(topo(front=front), 1, tmp_path)))
    res = subprocess.run(["haproxy", "-c", "-q", "-f", str(cfg)], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr


def test_front_keepalived_is_a_pair_of_its_own() -> None:
    t = topo(front={"count": 2, "advert_int": 0.5})
    k = front_keepalived_config(t, 1, DIR, prefixlen=24, interface="eth0")
    got = (k.role, k.src_ip, k.peer_ip, k.vip, k.priority)
    assert got == ("fe1", "198.18.0.5", "198.18.0.7", "198.18.0.6", 150)
    assert k.haproxy_socket == DIR / "stats.sock"
    db = KeepalivedConfig("lab", 1, DIR, "198.18.0.2", "198.18.0.4", "198.18.0.3", 24, DIR / "stats.sock")
    assert k.vrid != db.vrid  # its own VRRP router id: two pairs on one bridge
    text = render_keepalived_conf(k)
    assert "vrrp_instance VI_lab_fe {" in text
    assert "router_id cb-lab-fe1" in text
    assert "198.18.0.6/24 dev eth0" in text
    assert "vrrp_version 3" in text
    # the database pair's file is as it was
    assert "vrrp_instance VI_lab {" in render_keepalived_conf(db)
    with pytest.raises(ValueError, match=r"no VIP; set \[web.front\] count = 2"):
        front_keepalived_config(topo(), 1, DIR, prefixlen=24)
