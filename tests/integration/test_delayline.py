"""The delay line on this kernel, with no database: two scratch namespaces (cbdlt-a, cbdlt-b) on
a bridge of their own. 50 ms added to a's link raises the measured RTT by 50 ms +- 10 %, heal
brings it back, 30 % loss drops a share within a binomial bound of 30 %, a killed delay line lets
packets through (fail-open), and nothing of ours is left afterwards."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterbench.faults.delayline import LinkImpairment, measure_rtt, preflight, require
from clusterbench.faults.delayline_lab import ScratchLink, leftovers, scratch_link
from clusterbench.faults.delayline_plan import DELAYLINE_BIN, impairment
from clusterbench.hosts.base import ProcessRef

PREFIX = "cbdlt"

pytestmark = pytest.mark.integration


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, iptables)"
    for tool in ("ip", "iptables", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is missing; run `make setup`"
    if not DELAYLINE_BIN.exists():
        return f"{DELAYLINE_BIN} is not built; run scripts/build-tools.sh"
    return None


@pytest.fixture()
def link(tmp_path: Path) -> Iterator[ScratchLink]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    with scratch_link(PREFIX, "198.18.250") as lk:
        yield lk
    assert leftovers(PREFIX) == []


def _fault(lk: ScratchLink, tmp: Path, imp_args: dict[str, object]) -> LinkImpairment:
    imp = impairment(**imp_args)  # type: ignore[arg-type]
    mech = require(preflight(lk.a, imp, [lk.addr_b]))
    return LinkImpairment(
        lk.a, imp, [lk.addr_b], workdir=tmp, mechanism=mech, probe_addr=lk.addr_b, probe_count=20, seed=1
    )


def _line_pids() -> list[int]:
    """Delay lines running from our work dirs (pytest's tmp paths)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            ours = b"--status" in cmd and b"pytest" in b" ".join(cmd)
            if cmd and cmd[0] == str(DELAYLINE_BIN).encode() and ours:
                out.append(int(entry))
    return out


def test_50ms_raises_the_rtt_by_50ms_and_heal_brings_it_back(link: ScratchLink, tmp_path: Path) -> None:
    f = _fault(link, tmp_path, {"delay": "50ms"})
    assert f.mech.delay == "nfqueue"  # this kernel has no netem
    applied = f.apply()
    base, during = applied["rtt_ms"]["base"], applied["rtt_ms"]["during"]
    added = during["p50"] - base["p50"]
    assert 45.0 <= added <= 55.0, applied
    assert during["lost"] == 0
    healed = f.heal()
    assert healed["delay_line"] == "stopped"
    assert 24.0 <= healed["achieved_hold_ms"]["p50"] <= 27.5, healed
    assert healed["rtt_ms_after"]["p50"] < base["p50"] + 2.0, healed
    assert _line_pids() == []
    rules = link.a.run(["iptables", "-w", "-S"]).stdout
    assert "CBDL" not in rules and "NFQUEUE" not in rules
    assert "netem" not in link.a.run(["tc", "qdisc", "show", "dev", "eth0"]).stdout


# alone: round-trip percentiles against the asked jitter (a p95 of 20 ms for 15 ms seen on a busy machine)
@pytest.mark.alone
def test_jitter_stays_within_its_range(link: ScratchLink, tmp_path: Path) -> None:
    f = _fault(link, tmp_path, {"delay": "10ms", "jitter": "5ms"})
    base = measure_rtt(link.a, link.addr_b, count=10)
    f.apply()
    try:
        rtt = measure_rtt(link.a, link.addr_b, count=40, interval_ms=5)
    finally:
        f.heal()
    assert base.p50 is not None and rtt.p5 is not None and rtt.p95 is not None
    # 10 +- 5 ms added: every round trip between 5 and 15 ms above the base (1.5 ms of slack
    # for the timer and the machine's load).
    assert rtt.p5 - base.p50 >= 5.0 - 1.5, rtt
    assert rtt.p95 - base.p50 <= 15.0 + 1.5, rtt


_RECEIVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("0.0.0.0", 9999)); s.settimeout(1.5)
print("ready", flush=True)
n = 0
try:
    while True:
        s.recv(64); n += 1; s.settimeout(0.5)
except socket.timeout:
    pass
print(n, flush=True)
"""

# Errors counted: a lost packet must look sent to the sender, as on a real link.
_SENDER = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
errors = 0
for i in range(int(sys.argv[2])):
    try:
        s.sendto(b"x", (sys.argv[1], 9999))
    except OSError:
        errors += 1
    if i % 50 == 0:
        time.sleep(0.002)
print(errors)
"""


def _udp_delivered(lk: ScratchLink, n: int) -> int:
    rx = subprocess.Popen(
        ["ip", "netns", "exec", lk.b.netns, "python3", "-c", _RECEIVER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert rx.stdout is not None and rx.stdout.readline().strip() == "ready"
        sent = lk.a.run(["python3", "-c", _SENDER, lk.addr_b, str(n)], timeout=60)
        assert sent.stdout.strip() == "0", "the sender was told of lost packets"
        out, _ = rx.communicate(timeout=30)
        return int(out.strip())
    finally:
        if rx.poll() is None:
            rx.kill()


def test_30_percent_loss_within_a_binomial_bound(link: ScratchLink, tmp_path: Path) -> None:
    n, p = 3000, 0.30
    f = _fault(link, tmp_path, {"loss": 30.0})
    assert f.mech.delay == "none" and f.mech.loss == "iptables-statistic"
    f.apply()
    try:
        delivered = _udp_delivered(link, n)
    finally:
        healed = f.heal()
    bound = 5 * math.sqrt(n * p * (1 - p))  # five standard deviations: a false alarm in 3.5 million
    assert abs((n - delivered) - n * p) <= bound, (delivered, healed)
    out = healed["achieved_loss"]["out"]
    assert out["packets"] >= n
    assert abs(out["dropped"] - out["packets"] * p) <= 5 * math.sqrt(out["packets"] * p * (1 - p))
    assert _udp_delivered(link, 500) == 500  # healed: nothing lost


# alone: every ping must get through once the line is killed (one of nine lost, twice, on a busy machine)
@pytest.mark.alone
def test_a_killed_delay_line_lets_packets_through(link: ScratchLink, tmp_path: Path) -> None:
    f = _fault(link, tmp_path, {"delay": "50ms"})
    applied = f.apply()
    base = applied["rtt_ms"]["base"]["p50"]
    assert f.proc is not None
    proc: ProcessRef = f.proc
    assert link.a.signal(proc, 9)
    rtt = measure_rtt(link.a, link.addr_b, count=10)
    assert rtt.lost == 0 and rtt.p50 is not None and rtt.p50 < base + 2.0, rtt  # --queue-bypass: fail-open
    healed = f.heal()
    assert healed["delay_line"] == "died during the fault"
    assert _line_pids() == []
