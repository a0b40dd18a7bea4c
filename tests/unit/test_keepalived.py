"""components/keepalived: golden keepalived.conf, the VIP query on captured `ip -j addr` output,
and the process lifecycle with fakes."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from clusterbench.components.haproxy.config import HAProxyConfig, render_haproxy_cfg
from clusterbench.components.keepalived.component import Keepalived, addresses, last_vrrp_state
from clusterbench.components.keepalived.config import (
    KeepalivedConfig,
    render_keepalived_conf,
    virtual_router_id,
)
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import ProcessRef
from clusterbench.spec.topology import BalancerSettings
from tests.unit.fakes import FakeClock, FakeHost, result

DATA = Path(__file__).parent / "data"
DIR = Path("/var/lib/clusterbench/clusters/lab")
SOCAT_CONNECT = "/usr/bin/socat -u OPEN:/dev/null UNIX-CONNECT:"


def cfg(index: int = 1, advert_int: float = 1.0, d: Path = DIR) -> KeepalivedConfig:
    own, peer = ("198.18.0.2", "198.18.0.4") if index == 1 else ("198.18.0.4", "198.18.0.2")
    return KeepalivedConfig(
        cluster_name="lab",
        index=index,
        dir=d / f"lb{index}",
        src_ip=own,
        peer_ip=peer,
        vip="198.18.0.3",
        prefixlen=24,
        haproxy_socket=d / f"lb{index}" / "stats.sock",
        advert_int=advert_int,
    )


GOLDEN_LB1 = """\
# Rendered by clusterbench for cluster lab (lb1). Do not edit: `clusterbench up` rewrites it.
global_defs {
    router_id cb-lab-lb1
    # The track script runs as root; keepalived only allows that when the script and every
    # directory above it are writable by root alone (socat in /usr/bin is).
    enable_script_security
    script_user root
    # After a split brain (both MASTER while they could not hear each other), the one that loses
    # the next election first sends an advert of its own; hearing that lower priority, the winner
    # sends gratuitous ARPs again. Without it, clients whose ARP entry last named the loser keep
    # sending to it after it dropped the VIP (tens of seconds, until the entry goes stale).
    vrrp_higher_prio_send_advert
}

# Alive when this namespace's HAProxy accepts a connection on its stats socket. A killed
# HAProxy leaves the socket file behind but refuses connections, so the check fails at once.
vrrp_script chk_haproxy {
    script "/usr/bin/socat -u OPEN:/dev/null UNIX-CONNECT:/var/lib/clusterbench/clusters/lab/lb1/stats.sock"
    interval 1
    timeout 1
    fall 1
    rise 2
}

vrrp_instance VI_lab {
    # Both start as BACKUP with nopreempt: the higher priority (lb1) wins the first election,
    # and a recovered master does not take the VIP back (that would be a second outage).
    state BACKUP
    nopreempt
    interface eth0
    virtual_router_id 175
    priority 150
    advert_int 1
    # Unicast VRRP: adverts go straight to the peer over the bridge.
    unicast_src_ip 198.18.0.2
    unicast_peer {
        198.18.0.4
    }
    virtual_ipaddress {
        198.18.0.3/24 dev eth0
    }
    # No weight: a failing check puts this instance in FAULT, which releases the VIP.
    track_script {
        chk_haproxy
    }
}
"""


def test_keepalived_conf_golden_lb1() -> None:
    assert render_keepalived_conf(cfg(1)) == GOLDEN_LB1


def test_lb2_differs_only_in_role_priority_addresses_and_socket() -> None:
    one = render_keepalived_conf(cfg(1)).splitlines()
    two = render_keepalived_conf(cfg(2)).splitlines()
    diff = [(a.strip(), b.strip()) for a, b in zip(one, two, strict=True) if a != b]
    assert diff == [
        (
            "# Rendered by clusterbench for cluster lab (lb1). Do not edit: `clusterbench up` rewrites it.",
            "# Rendered by clusterbench for cluster lab (lb2). Do not edit: `clusterbench up` rewrites it.",
        ),
        ("router_id cb-lab-lb1", "router_id cb-lab-lb2"),
        (f'script "{SOCAT_CONNECT}{DIR}/lb1/stats.sock"', f'script "{SOCAT_CONNECT}{DIR}/lb2/stats.sock"'),
        ("priority 150", "priority 100"),
        ("unicast_src_ip 198.18.0.2", "unicast_src_ip 198.18.0.4"),
        ("198.18.0.4", "198.18.0.2"),
    ]


def test_fractional_advert_int_uses_vrrp_v3() -> None:
    text = render_keepalived_conf(cfg(1, advert_int=0.5))
    assert "    vrrp_version 3\n" in text
    assert "    advert_int 0.5\n" in text
    assert cfg(1, advert_int=0.5).vrrp_version == 3
    whole = render_keepalived_conf(cfg(1, advert_int=2.0))
    assert "vrrp_version" not in whole
    assert "    advert_int 2\n" in whole


def test_never_preempts_and_never_uses_multicast_or_notify() -> None:
    for k in (1, 2):
        text = render_keepalived_conf(cfg(k))
        assert "    state BACKUP\n    nopreempt\n" in text
        assert "state MASTER" not in text
        assert "notify" not in text
        assert "vrrp_strict" not in text  # incompatible with unicast peers


def test_virtual_router_id_per_cluster() -> None:
    assert virtual_router_id("lab") == 175
    ids = {virtual_router_id(n) for n in ("lab", "cbit", "cbvip", "five", "wl", "vip", "a", "b")}
    assert len(ids) == 8
    assert all(1 <= i <= 255 for i in ids)
    assert virtual_router_id("lab") == virtual_router_id("lab")


def test_socket_path_with_space_is_refused() -> None:
    with pytest.raises(ValueError, match="paths with spaces"):
        render_keepalived_conf(cfg(1, d=Path("/my home/clusters")))


def test_config_paths() -> None:
    c = cfg(2)
    d = DIR / "lb2"
    assert (c.role, c.priority, c.cfg_path, c.log_path) == (
        "lb2",
        100,
        d / "keepalived.conf",
        d / "keepalived.log",
    )
    assert (c.pid_path, c.vrrp_pid_path, c.checkers_pid_path) == (
        d / "keepalived.pid",
        d / "keepalived-vrrp.pid",
        d / "keepalived-checkers.pid",
    )


# ---------------------------------------------------------------- HAProxy in a pair


def test_haproxy_of_a_pair_binds_the_wildcard() -> None:
    servers = (("n1", "198.18.0.11"),)
    single = render_haproxy_cfg(HAProxyConfig("lab", "198.18.0.4", DIR, BalancerSettings(), servers))
    paired = render_haproxy_cfg(
        HAProxyConfig("lab", "198.18.0.4", DIR, BalancerSettings(count=2), servers, vip="198.18.0.3")
    )
    assert "    bind 198.18.0.4:3306\n" in single and "bind :" not in single
    assert "    bind :3306\n" in paired and "bind 198.18.0.4" not in paired
    # Everything but the bind block is the same.
    rest = [ln for ln in paired.splitlines() if not ln.lstrip().startswith(("#", "bind"))]
    assert rest == [ln for ln in single.splitlines() if not ln.lstrip().startswith(("#", "bind"))]


# ---------------------------------------------------------------- who holds the VIP


def test_addresses_of_captured_ip_addr() -> None:
    text = (DATA / "ip_addr_vip_lb2.json").read_text()
    assert addresses(text) == {"198.18.0.4", "198.18.0.3"}
    assert addresses(text, "eth0") == {"198.18.0.4", "198.18.0.3"}
    assert addresses(text, "eth1") == set()
    assert addresses("") == set()
    assert addresses("[]") == set()


def test_holds_vip() -> None:
    host = FakeHost()
    ka = Keepalived(cfg(2), host, clock=FakeClock())
    argv = ("ip", "-j", "-4", "addr", "show", "dev", "eth0")
    host.responses[argv] = (DATA / "ip_addr_vip_lb2.json").read_text()
    assert ka.holds_vip() is True
    host.responses[argv] = (
        '[{"ifname":"eth0","addr_info":[{"family":"inet","local":"198.18.0.4","prefixlen":24}]}]'
    )
    assert ka.holds_vip() is False
    host.responder = lambda a: result(a, "", returncode=1, stderr="Cannot open network namespace")
    assert ka.holds_vip() is False


# ---------------------------------------------------------------- lifecycle with fakes


def test_start_argv_and_waits_for_the_vrrp_child(tmp_path: Path) -> None:
    host = FakeHost()
    clock = FakeClock()
    c = cfg(1, d=tmp_path)
    c.dir.mkdir(parents=True)
    c.pid_path.write_text("1\n")  # a stale one from an earlier run is removed first
    ka = Keepalived(c, host, clock=clock)

    def child_started() -> None:
        c.vrrp_pid_path.write_text("2\n")

    clock.at(clock.now() + 0.2, child_started)
    proc = ka.start()
    (sp,) = host.spawned
    assert sp.argv == [
        "keepalived",
        "-n",
        "-l",
        "-D",
        "-f",
        str(c.cfg_path),
        "-p",
        str(c.pid_path),
        "-r",
        str(c.vrrp_pid_path),
        "-c",
        str(c.checkers_pid_path),
    ]
    assert sp.log == c.log_path
    assert proc == sp.proc and ka.alive()
    assert not c.pid_path.exists()
    assert 0.2 <= clock.elapsed < 0.5
    assert ka.start() == proc  # already running: no second process
    assert len(host.spawned) == 1


def test_start_reports_an_early_exit(tmp_path: Path) -> None:
    host = FakeHost()
    c = cfg(1, d=tmp_path)
    ka = Keepalived(c, host, clock=FakeClock())
    host.files[c.log_path] = "Starting Keepalived\nKeepalived_vrrp exited\nStopped Keepalived\n"
    real_spawn = host.spawn

    def dies(argv: list[str], *, log: Path) -> ProcessRef:
        p = real_spawn(argv, log=log)
        host.live.discard(p.pid)
        return p

    host.spawn = dies  # type: ignore[method-assign]
    with pytest.raises(ComponentError) as info:
        ka.start()
    assert str(info.value) == (
        "keepalived on lb1 exited at start: Starting Keepalived | Keepalived_vrrp exited | Stopped Keepalived"
    )


def test_start_times_out_without_vrrp_child(tmp_path: Path) -> None:
    clock = FakeClock()
    ka = Keepalived(cfg(2, d=tmp_path), FakeHost(), clock=clock)
    with pytest.raises(ComponentError) as info:
        ka.start(timeout=3)
    assert str(info.value) == "keepalived on lb2 did not start its VRRP process in 3 s"
    assert clock.elapsed >= 3


def test_stop_sigterm_then_sigkill() -> None:
    host = FakeHost(die_on=(signal.SIGKILL,))
    clock = FakeClock()
    proc = ProcessRef(4242, 1)
    host.live.add(proc.pid)
    ka = Keepalived(cfg(), host, proc=proc, clock=clock)
    assert ka.stop(timeout=5) == "killed after timeout"
    assert host.signal_numbers() == [signal.SIGTERM, signal.SIGKILL]
    assert ka.stop() == "not running"


def test_stop_obeys_sigterm() -> None:
    host = FakeHost(die_on=(signal.SIGTERM, signal.SIGKILL))
    proc = ProcessRef(4242, 1)
    host.live.add(proc.pid)
    ka = Keepalived(cfg(), host, proc=proc, clock=FakeClock())
    assert ka.stop() == "stopped"
    assert host.signal_numbers() == [signal.SIGTERM]


def test_write_files_and_validate(tmp_path: Path) -> None:
    host = FakeHost()
    c = cfg(1, d=tmp_path)
    ka = Keepalived(c, host, clock=FakeClock())
    ka.write_files()
    assert host.files[c.cfg_path] == render_keepalived_conf(c)
    assert host.modes[c.cfg_path] == 0o644
    ka.validate()
    assert host.runs == [["keepalived", "-t", "-f", str(c.cfg_path)]]
    host.responder = lambda a: result(a, "", returncode=1, stderr="Unknown keyword 'bogus'")
    with pytest.raises(ComponentError) as info:
        ka.validate()
    assert str(info.value) == f"keepalived rejects {c.cfg_path}: Unknown keyword 'bogus'"


# ---------------------------------------------------------------- VRRP state from the log

# From a real run (tests/integration/test_keepalived.py): lb1's HAProxy killed and restarted.
LOG = """\
Sun Nov 22 07:01:55 2026: (VI_kavip) Entering BACKUP STATE (init)
Sun Nov 22 07:01:58 2026: (VI_kavip) Receive advertisement timeout
Sun Nov 22 07:01:58 2026: (VI_kavip) Entering MASTER STATE
Sun Nov 22 07:02:00 2026: Script `chk_haproxy` now returning 1
Sun Nov 22 07:02:00 2026: VRRP_Script(chk_haproxy) failed (exited with status 1)
Sun Nov 22 07:02:00 2026: (VI_kavip) Entering FAULT STATE
Sun Nov 22 07:02:00 2026: (VI_kavip) sent 0 priority
Sun Nov 22 07:02:00 2026: (VI_kavip) removing VIPs.
Sun Nov 22 07:02:01 2026: Script `chk_haproxy` now returning 0
Sun Nov 22 07:02:02 2026: VRRP_Script(chk_haproxy) succeeded
Sun Nov 22 07:02:02 2026: (VI_kavip) Entering BACKUP STATE
"""


def test_last_vrrp_state() -> None:
    lines = LOG.splitlines(keepends=True)
    assert last_vrrp_state(LOG) == "BACKUP"
    assert last_vrrp_state("".join(lines[:8])) == "FAULT"
    assert last_vrrp_state("".join(lines[:3])) == "MASTER"
    assert last_vrrp_state(lines[0]) == "BACKUP"
    assert last_vrrp_state("Starting Keepalived v2.2.7\n") is None
    assert last_vrrp_state("") is None


def test_wait_ready_leaves_fault(tmp_path: Path) -> None:
    host = FakeHost()
    clock = FakeClock()
    c = cfg(1, d=tmp_path)
    host.live.add(7)
    ka = Keepalived(c, host, proc=ProcessRef(7, 1), clock=clock)
    lines = LOG.splitlines(keepends=True)
    host.files[c.log_path] = "".join(lines[:8])
    assert ka.vrrp_state() == "FAULT"
    clock.at(clock.now() + 2, lambda: host.files.update({c.log_path: LOG}))
    assert ka.wait_ready(5) == "BACKUP"
    assert 2 <= clock.elapsed < 2.2


def test_wait_ready_times_out_in_fault(tmp_path: Path) -> None:
    host = FakeHost()
    clock = FakeClock()
    c = cfg(2, d=tmp_path)
    host.live.add(7)
    ka = Keepalived(c, host, proc=ProcessRef(7, 1), clock=clock)
    host.files[c.log_path] = "(VI_lab) Entering FAULT STATE\n"
    with pytest.raises(ComponentError) as info:
        ka.wait_ready(3)
    assert str(info.value) == (
        f"keepalived on lb2 is FAULT after 3 s, not MASTER or BACKUP; see {c.log_path}"
    )
    host.live.clear()
    assert ka.vrrp_state() is None
