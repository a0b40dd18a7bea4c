"""A scratch link for measuring the delay line without a cluster: two network namespaces on a
bridge of their own, removed again whatever happens (the fidelity benchmark and the delay-line
integration test use it). Needs root. Names start with a prefix the caller picks (cbdl by
convention) and addresses come from a /24 it gives, so nothing of a cluster's is touched."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from clusterbench.hosts.local import NetnsHost


@dataclass(frozen=True)
class ScratchLink:
    a: NetnsHost
    b: NetnsHost
    addr_a: str
    addr_b: str
    bridge: str


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, capture_output=True, timeout=20)


def _up(prefix: str, net24: str) -> ScratchLink:
    bridge = f"{prefix}br"
    _ip("link", "add", bridge, "type", "bridge")
    _ip("link", "set", bridge, "up")
    hosts = []
    for side, octet in (("a", 1), ("b", 2)):
        ns, veth = f"{prefix}-{side}", f"{prefix}-v{side}"
        _ip("netns", "add", ns)
        _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", veth, "master", bridge)
        _ip("link", "set", veth, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "addr", "add", f"{net24}.{octet}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        hosts.append(NetnsHost(ns))
    return ScratchLink(hosts[0], hosts[1], f"{net24}.1", f"{net24}.2", bridge)


def down(prefix: str) -> None:
    """Remove the pair and anything still running in it (idempotent)."""
    for side in ("a", "b"):
        ns = f"{prefix}-{side}"
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False)
        for pid in pids.stdout.split():
            subprocess.run(["kill", "-9", pid], capture_output=True, check=False)
        _ip("link", "del", f"{prefix}-v{side}", check=False)
        _ip("netns", "del", ns, check=False)
    _ip("link", "del", f"{prefix}br", check=False)


def leftovers(prefix: str) -> list[str]:
    """Namespaces and links of ours that still exist."""
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=False).stdout
    found = [w.split()[0] for w in ns.splitlines() if w.startswith(f"{prefix}-")]
    for line in links.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(prefix):
            found.append(name)
    return found


@contextlib.contextmanager
def scratch_link(prefix: str = "cbdl", net24: str = "198.18.250") -> Iterator[ScratchLink]:
    down(prefix)  # a killed earlier run's
    try:
        yield _up(prefix, net24)
    finally:
        down(prefix)
