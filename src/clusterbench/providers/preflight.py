"""Checks before anything is started: each failure is one line with the next step."""

from __future__ import annotations

import ipaddress
import json
import os
import pwd
import shutil
from pathlib import Path

from clusterbench.errors import ClusterStateError, PreflightError
from clusterbench.hosts.local import LocalHost
from clusterbench.providers.naming import Names
from clusterbench.spec.topology import Topology

# What every local cluster needs besides its engine: binary -> Debian package.
REQUIRED = {
    "socat": "socat",
    "ip": "iproute2",
    "tc": "iproute2",
    "ss": "iproute2",
}


def require_root() -> None:
    if os.geteuid() != 0:
        raise PreflightError(
            "needs root to create network namespaces, bridges and cgroups; "
            "run it as root (e.g. sudo clusterbench ...)"
        )


def missing_binaries(t: Topology, engine_needs: dict[str, str]) -> list[str]:
    """What is missing on this machine, as 'what (how to get it)'. `engine_needs` is the engine's
    own list (Engine.required()): a binary name or an absolute path -> how to get it."""
    need = {b: f"Debian package {pkg}" for b, pkg in REQUIRED.items()}
    if t.balancer.kind == "haproxy":
        need["haproxy"] = "Debian package haproxy"
    if t.vip_address() is not None or t.front_vip_address() is not None:
        need["keepalived"] = "Debian package keepalived"
    if t.web.nodes:
        need.update(WEB_NEEDS)
    need.update(engine_needs)
    out = []
    for what, how in need.items():
        found = Path(what).exists() if what.startswith("/") else shutil.which(what, path=_PATH) is not None
        if not found:
            out.append(f"{what} ({how})")
    return out


# The web tier (`[web] nodes` > 0): nginx + php-fpm + php's mysqli on every web node, curl for
# their status pages. (vegeta, the HTTP load, is the load runner's own preflight.)
WEB_NEEDS = {
    "nginx": "Debian package nginx",
    "php-fpm8.2": "Debian package php8.2-fpm",
    "/etc/php/8.2/mods-available/mysqli.ini": "Debian package php8.2-mysql",
    "curl": "Debian package curl",
}

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def leftovers(names: Names, host: LocalHost) -> tuple[list[str], list[str]]:
    """Namespaces and links whose names carry this cluster's prefix."""
    ns_out = host.run(["ip", "-j", "netns", "list"], check=False).stdout.strip()
    netns = [e["name"] for e in json.loads(ns_out or "[]") if e.get("name", "").startswith(names.prefix)]
    link_out = host.run(["ip", "-j", "link", "show"], check=False).stdout.strip()
    links = [
        e["ifname"] for e in json.loads(link_out or "[]") if e.get("ifname", "").startswith(names.prefix)
    ]
    return netns, links


def overlapping_networks(subnet: ipaddress.IPv4Network, host: LocalHost) -> list[str]:
    """Routes or addresses on this machine that overlap `subnet`, as 'net dev X'."""
    found: list[str] = []
    out = host.run(["ip", "-j", "-4", "route", "show", "table", "all"], check=False).stdout.strip()
    for r in json.loads(out or "[]"):
        dst = r.get("dst", "")
        if dst in ("", "default") or r.get("type") in ("local", "broadcast"):
            continue
        try:
            net = ipaddress.IPv4Network(dst, strict=False)
        except ValueError:
            continue
        if net.overlaps(subnet):
            found.append(f"{net} dev {r.get('dev', '?')}")
    out = host.run(["ip", "-j", "-4", "addr", "show"], check=False).stdout.strip()
    for link in json.loads(out or "[]"):
        for a in link.get("addr_info", []):
            net = ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False)
            if net.overlaps(subnet):
                entry = f"{net} dev {link.get('ifname', '?')}"
                if entry not in found:
                    found.append(entry)
    return found


def check_up(t: Topology, home: Path, host: LocalHost, engine_needs: dict[str, str]) -> None:
    require_root()
    missing = missing_binaries(t, engine_needs)
    if missing:
        # an item that says its own next step (the engine's rootfs: `clusterbench rootfs build`)
        # is not told to run `make setup` a second time
        hint = "" if all("`" in m for m in missing) else "; run `make setup` to install them"
        raise PreflightError(f"missing {', '.join(missing)}{hint}")
    try:
        pwd.getpwnam("mysql")
    except KeyError:
        raise PreflightError(
            "system user 'mysql' does not exist; run `make setup` (package mariadb-server)"
        ) from None
    names = Names(t.name)
    state = home / "clusters" / t.name / "state.json"
    netns, links = leftovers(names, host)
    if state.exists():
        raise ClusterStateError(
            f"cluster '{t.name}' is already up (or was left by a killed run); "
            f"see `clusterbench status -n {t.name}` or remove it with `clusterbench down -n {t.name}`"
        )
    if netns or links:
        raise ClusterStateError(
            f"leftovers of cluster '{t.name}' found ({', '.join(netns + links)}); "
            f"remove them with `clusterbench down -n {t.name}`"
        )
    overlap = overlapping_networks(t.network, host)
    if overlap:
        raise PreflightError(
            f"cluster.subnet {t.network} overlaps {'; '.join(overlap)}; choose a free range, "
            "e.g. 198.18.<N>.0/24, in the topology file"
        )
