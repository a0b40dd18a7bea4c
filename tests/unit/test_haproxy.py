"""components/haproxy: golden haproxy.cfg, `show stat` parsing of a real capture, stop/wait logic."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from clusterbench.components.haproxy.component import HAProxy
from clusterbench.components.haproxy.config import HAProxyConfig, render_haproxy_cfg
from clusterbench.components.haproxy.status import BackendServer, parse_show_stat
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import ProcessRef
from clusterbench.spec.topology import BalancerSettings
from tests.unit.fakes import FakeClock, FakeHost

DATA = Path(__file__).parent / "data"
DIR = Path("/var/lib/clusterbench/clusters/lab/lb1")
SERVERS = (("n1", "198.18.0.11"), ("n2", "198.18.0.12"), ("n3", "198.18.0.13"))


def cfg(
    settings: BalancerSettings | None = None, servers: tuple[tuple[str, str], ...] = SERVERS
) -> HAProxyConfig:
    return HAProxyConfig("lab", "198.18.0.2", DIR, settings or BalancerSettings(), servers)


GOLDEN_CFG = """\
# Rendered by clusterbench for cluster lab. Do not edit: `clusterbench up` rewrites it.
global
    maxconn 4096
    pidfile /var/lib/clusterbench/clusters/lab/lb1/haproxy.pid
    stats socket /var/lib/clusterbench/clusters/lab/lb1/stats.sock mode 600 level admin
    stats timeout 10s

defaults
    mode tcp
    maxconn 4096
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout check 2s

listen galera
    bind 198.18.0.2:3306
    balance leastconn
    # HTTP clustercheck on each node: 200 only when Synced + Primary + ready (not mysql-check, RECIPES G6).
    option httpchk
    http-check send meth GET uri /
    http-check expect status 200
    # Cut sessions on a node as soon as it is marked down, so clients reconnect to a healthy one.
    default-server port 9200 inter 1000ms fastinter 100ms fall 2 rise 2 on-marked-down shutdown-sessions
    server n1 198.18.0.11:3306 check
    server n2 198.18.0.12:3306 check
    server n3 198.18.0.13:3306 check
"""


def test_haproxy_cfg_golden() -> None:
    assert render_haproxy_cfg(cfg()) == GOLDEN_CFG


def test_haproxy_cfg_never_uses_mysql_check() -> None:
    text = render_haproxy_cfg(cfg())
    assert "option mysql-check" not in text
    assert "\n    option httpchk\n" in text
    assert "\n    http-check expect status 200\n" in text
    assert "on-marked-down shutdown-sessions" in text


def test_haproxy_cfg_settings_and_one_server_per_node() -> None:
    b = BalancerSettings(
        algorithm="roundrobin", port=6033, check_interval_ms=250, fast_check_interval_ms=50, fall=1, rise=3,
        maxconn=100,
    )
    servers = tuple((f"n{i}", f"10.0.0.{10 + i}") for i in range(1, 10))
    text = render_haproxy_cfg(HAProxyConfig("big", "10.0.0.2", Path("/h"), b, servers, check_port=9201))
    lines = text.splitlines()
    assert [ln for ln in lines if ln.startswith("    server ")] == [
        f"    server n{i} 10.0.0.{10 + i}:3306 check" for i in range(1, 10)
    ]
    assert "    bind 10.0.0.2:6033" in lines
    assert "    balance roundrobin" in lines
    default = (
        "    default-server port 9201 inter 250ms fastinter 50ms fall 1 rise 3"
        " on-marked-down shutdown-sessions"
    )
    assert default in lines
    assert lines.count("    maxconn 100") == 2
    assert "    stats socket /h/stats.sock mode 600 level admin" in lines
    assert (
        lines[0] == "# Rendered by clusterbench for cluster big. Do not edit: `clusterbench up` rewrites it."
    )


def test_config_paths() -> None:
    c = cfg()
    assert (c.cfg_path, c.stats_socket, c.pid_path) == (
        DIR / "haproxy.cfg",
        DIR / "stats.sock",
        DIR / "haproxy.pid",
    )
    assert c.check_port == 9200


# ---------------------------------------------------------------- show stat


def test_parse_real_show_stat_with_a_node_down() -> None:
    text = (DATA / "show_stat_n2_down.csv").read_text()
    assert parse_show_stat(text) == [
        BackendServer("galera", "n1", "UP", 0, 0, "L7OK", 8),
        BackendServer("galera", "n2", "DOWN", 0, 0, "L7STS", 3),
        BackendServer("galera", "n3", "UP", 0, 0, "L7OK", 8),
    ]
    assert [s.up for s in parse_show_stat(text)] == [True, False, True]


def test_parse_show_stat_sessions_and_transitional_status() -> None:
    real = (DATA / "show_stat_n2_down.csv").read_text().splitlines()
    header = real[0]
    cols = header[2:].split(",")
    row = dict.fromkeys(cols, "")
    row.update(
        pxname="galera",
        svname="n1",
        status="UP 1/2",
        scur="7",
        stot="1234",
        check_status="L7OK",
        lastchg="42",
    )
    text = "\n".join([header, ",".join(row[c] for c in cols), ""])
    (s,) = parse_show_stat(text)
    assert s == BackendServer("galera", "n1", "UP 1/2", 7, 1234, "L7OK", 42)
    assert s.up is False


@pytest.mark.parametrize(
    "text", ["", "\n", "Unknown command. Please enter one of the following commands only :\n"]
)
def test_parse_show_stat_not_a_stat_table(text: str) -> None:
    assert parse_show_stat(text) == []


def test_parse_show_stat_skips_frontend_and_backend() -> None:
    text = (DATA / "show_stat_n2_down.csv").read_text()
    assert "FRONTEND" in text and "BACKEND" in text
    assert {s.name for s in parse_show_stat(text)} == {"n1", "n2", "n3"}


# ---------------------------------------------------------------- process handling with fakes


def test_stop_sigterm_then_sigkill_after_timeout() -> None:
    host = FakeHost(die_on=(signal.SIGKILL,))
    clock = FakeClock()
    proc = ProcessRef(4242, 1)
    host.live.add(proc.pid)
    h = HAProxy(cfg(), host, proc=proc, clock=clock)
    assert h.stop(timeout=10) == "killed after timeout"
    assert host.signal_numbers() == [signal.SIGTERM, signal.SIGKILL]
    assert clock.elapsed >= 10
    assert h.alive() is False


def test_stop_obeys_sigterm() -> None:
    host = FakeHost(die_on=(signal.SIGTERM, signal.SIGKILL))
    proc = ProcessRef(4242, 1)
    host.live.add(proc.pid)
    h = HAProxy(cfg(), host, proc=proc, clock=FakeClock())
    assert h.stop() == "stopped"
    assert host.signal_numbers() == [signal.SIGTERM]
    assert h.stop() == "not running"
    assert h.kill() == "not running"


def test_kill_sends_sigkill() -> None:
    host = FakeHost()
    proc = ProcessRef(4242, 1)
    host.live.add(proc.pid)
    h = HAProxy(cfg(), host, proc=proc, clock=FakeClock())
    assert h.kill() == "killed"
    assert host.signal_numbers() == [signal.SIGKILL]


def test_validate_and_write_files(tmp_path: Path) -> None:
    host = FakeHost()
    c = HAProxyConfig("lab", "198.18.0.2", tmp_path / "lb1", BalancerSettings(), SERVERS)
    h = HAProxy(c, host, clock=FakeClock())
    h.write_files()
    h.validate()
    assert host.files[c.cfg_path] == render_haproxy_cfg(c)
    assert host.runs == [["haproxy", "-c", "-q", "-f", str(tmp_path / "lb1" / "haproxy.cfg")]]


def test_wait_all_up_times_out_with_what_it_saw(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    h = HAProxy(cfg(), FakeHost(), clock=clock)
    seen = [
        BackendServer("galera", "n1", "UP", 0, 0, "L7OK", 1),
        BackendServer("galera", "n2", "DOWN", 0, 0, "L7STS", 1),
    ]
    monkeypatch.setattr(h, "servers", lambda: seen)
    with pytest.raises(ComponentError) as info:
        h.wait_all_up(["n1", "n2"], timeout=3)
    assert str(info.value) == "haproxy does not see every node UP after 3 s: n1=UP, n2=DOWN"
    assert clock.elapsed >= 3


def test_wait_all_up_returns_when_all_up(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    h = HAProxy(cfg(), FakeHost(), clock=clock)
    monkeypatch.setattr(
        h, "servers", lambda: [BackendServer("galera", n, "UP", 0, 0, "L7OK", 1) for n in ("n1", "n2")]
    )
    h.wait_all_up(["n1", "n2"], timeout=3)
    assert clock.sleeps == []
