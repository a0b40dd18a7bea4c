"""Up-front checks of the ssh provider's machines, all hosts in parallel, before anything starts.

One SSH round trip per host gathers the facts (user, sudo, OS, machine identity, missing
packages, listening ports); `problems()` turns facts into one line per problem (pure, unit
tested). Every problem found is reported at once, as a PreflightError (exit 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clusterbench.engines import make_engine
from clusterbench.errors import ClusterStateError, PreflightError
from clusterbench.hosts.base import key_values
from clusterbench.hosts.ssh import SshHost, on_hosts
from clusterbench.spec.topology import InventoryHost, Topology

# Debian packages each role needs. db: the engine's own (Engine.host_packages: Galera's server and
# SST tools; Group Replication's health check client, unshare, rsync) plus iptables for partition
# faults; python3 runs the telemetry probe (telemetry/probe.py) on db and balancer hosts.
PACKAGES: dict[str, tuple[str, ...]] = {
    "db": ("iptables", "python3"),
    "balancer": ("haproxy", "socat", "iproute2", "python3"),
    # gcc and the client headers build sysbench's reconnect shim on the client (workloads.placement)
    "client": ("sysbench", "gcc", "libc6-dev", "libmariadb-dev"),
}

# Facts as key=value lines; never needs root (ss -ltn lists listeners without it).
_PROBE = r"""
echo "uid=$(id -u)"
if [ "$(id -u)" != 0 ]; then if sudo -n true 2>/dev/null; then echo sudo=yes; else echo sudo=no; fi; fi
if [ -r /etc/os-release ]; then . /etc/os-release; fi
echo "os=${ID:-unknown}"; echo "os_like=${ID_LIKE:-}"; echo "pretty=${PRETTY_NAME:-unknown}"
echo "machine=$(cat /etc/machine-id 2>/dev/null)/$(readlink /proc/self/ns/net 2>/dev/null)"
for p in "$@"; do
  case "$p" in
    /*) found=""; rest=$p
        while [ -n "$rest" ]; do one=${rest%%|*}; [ -e "$one" ] && found=1
          case "$rest" in *"|"*) rest=${rest#*|} ;; *) rest="" ;; esac; done
        [ -n "$found" ] || echo "absent=$p" ;;
    *) st="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)"
       case "$st" in *" installed") ;; *) echo "missing=$p";; esac ;;
  esac
done
ss -ltnH 2>/dev/null | awk '{print "listen=" $4}'
echo end=1
"""


@dataclass
class HostFacts:
    uid: int = -1
    sudo: bool | None = None
    os: str = "unknown"
    os_like: str = ""
    pretty: str = "unknown"
    machine: str = ""
    missing: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)  # files the engine needs (absolute paths)
    listening: list[str] = field(default_factory=list)  # local addresses, "0.0.0.0:22"
    complete: bool = False


# probe keys copied as they are, and the repeated ones collected: key -> HostFacts list
_PROBE_TEXT = ("os", "os_like", "pretty", "machine")
_PROBE_LISTS = {"missing": "missing", "absent": "absent", "listen": "listening"}


def parse_probe(text: str) -> HostFacts:
    f = HostFacts()
    for key, value in key_values(text):
        if key == "uid" and value.lstrip("-").isdigit():
            f.uid = int(value)
        elif key == "sudo":
            f.sudo = value == "yes"
        elif key in _PROBE_TEXT:
            setattr(f, key, value)
        elif key in _PROBE_LISTS:
            getattr(f, _PROBE_LISTS[key]).append(value)
        elif key == "end":
            f.complete = True
    return f


def roles_of(t: Topology, h: InventoryHost) -> list[str]:
    """The cluster roles a host plays: n<i>, lb<k>, client."""
    out = [f"n{i}" for i, x in enumerate(t.db_hosts(), start=1) if x is h]
    out += [f"lb{k}" for k, x in enumerate(t.balancer_hosts(), start=1) if x is h]
    if "client" in h.roles:
        out.append("client")
    return out


def packages_for(t: Topology, h: InventoryHost) -> list[str]:
    want: list[str] = []
    for role in h.roles:
        want += PACKAGES[role]
    if "db" in h.roles:
        want += make_engine(t).host_packages()
    if "balancer" in h.roles and t.vip_address() is not None:
        want.append("keepalived")
    return sorted(set(want))


def files_for(t: Topology, h: InventoryHost) -> dict[str, str]:
    """Files a db host must have that no package of its own gives (Group Replication's MySQL root
    file system): path -> how to get it."""
    if "db" not in h.roles:
        return {}
    return {p: how for p, how in make_engine(t).required().items() if p.startswith("/")}


def ports_for(t: Topology, h: InventoryHost) -> list[int]:
    ports: list[int] = []
    if "db" in h.roles:
        ports += make_engine(t).ports()
    if "balancer" in h.roles:
        ports.append(t.balancer.port)
    return sorted(set(ports))


def _split_listen(local: str) -> tuple[str, int] | None:
    addr, sep, port = local.rpartition(":")
    if not sep or not port.isdigit():
        return None
    addr = addr.strip("[]").split("%", 1)[0]
    return addr, int(port)


def busy_ports(listening: list[str], address: str, ports: list[int]) -> list[str]:
    """The wanted ports something already listens on, on the host's address or a wildcard."""
    wanted = set(ports)
    out = []
    for local in listening:
        parsed = _split_listen(local)
        if parsed is None:
            continue
        addr, port = parsed
        if port in wanted and addr in ("0.0.0.0", "*", "::", address, f"::ffff:{address}"):
            out.append(f"{port} ({local})")
    return sorted(set(out))


def problems(t: Topology, facts: dict[str, HostFacts | Exception], check_packages: bool = True) -> list[str]:
    """One line per problem, host by host, then the role placement problems."""
    lines: list[str] = []
    by_machine: dict[str, list[InventoryHost]] = {}
    for h in t.hosts:
        where = f"host {h.name} ({h.address})"
        got = facts.get(h.name)
        if isinstance(got, Exception) or got is None:
            msg = str(got) if got is not None else "not checked"
            lines.append(msg if msg.startswith(f"host {h.name}") else f"{where}: {msg}")
            continue
        if not got.complete:
            lines.append(f"{where}: the check script did not finish; is /bin/sh there a POSIX shell?")
            continue
        if got.uid != 0 and got.sudo is not True:
            lines.append(
                f"{where}: user {h.user} is not root and `sudo -n` needs a password; allow passwordless "
                "sudo for that user or log in as root (hosts.user)"
            )
        if got.os not in ("debian", "ubuntu") and "debian" not in got.os_like.split():
            lines.append(
                f"{where}: {got.pretty} is not Debian or Ubuntu; "
                "clusterbench uses Debian's packages and paths"
            )
        if check_packages and got.missing:
            lines.append(
                f"{where}: missing packages {', '.join(got.missing)}; "
                "run `clusterbench provision -f FILE` to install them"
            )
        files = files_for(t, h)
        for path in got.absent:
            what = path.replace("|", " or ")  # "a|b": one of them would do
            lines.append(f"{where}: missing {what}; {files.get(path, 'install it')} on that host")
        busy = busy_ports(got.listening, h.address, ports_for(t, h))
        if busy:
            lines.append(
                f"{where}: port(s) already in use: {', '.join(busy)}; stop what listens there "
                "or use another machine"
            )
        by_machine.setdefault(got.machine or h.address, []).append(h)
    for same in by_machine.values():
        lines += _placement(t, same)
    return lines


def _placement(t: Topology, same: list[InventoryHost]) -> list[str]:
    """Roles that cannot share one machine (one network stack): two nodes (same ports), two
    balancers (same port and VIP), a node and a balancer on the same port."""
    names = " and ".join(h.name for h in same)
    what = f"hosts {names} are one machine" if len(same) > 1 else f"host {same[0].name}"
    dbs = [h for h in same if "db" in h.roles]
    lbs = [h for h in same if "balancer" in h.roles]
    out = []
    node_ports = make_engine(t).ports()
    if len(dbs) > 1:
        shared = ", ".join(str(p) for p in node_ports if p != node_ports[-1])
        out.append(
            f"{what}: {len(dbs)} db nodes there would share ports {shared} and {node_ports[-1]}; "
            "give each db node its own machine"
        )
    if len(lbs) > 1:
        out.append(f"{what}: both balancers there would share port {t.balancer.port}; use two machines")
    if dbs and lbs and t.balancer.port in node_ports:
        out.append(
            f"{what}: a db node and a balancer there both need port {t.balancer.port}; "
            "set balancer.port to a free port such as 6033"
        )
    return out


def probe(host: SshHost, packages: list[str]) -> HostFacts:
    res = host._run(["sh", "-c", _PROBE, "sh", *packages], check=False, sudo=False, timeout=30)
    return parse_probe(res.stdout)


def gather(t: Topology, hosts: dict[str, SshHost]) -> dict[str, HostFacts | Exception]:
    """Probe every inventory host in parallel; a connection failure is that host's result."""
    items = list(t.hosts)
    results = on_hosts(items, lambda h: probe(hosts[h.name], [*packages_for(t, h), *files_for(t, h)]))
    return {h.name: r for h, r in results}


def check_up(
    t: Topology, home: Path, host_of: Callable[[InventoryHost], SshHost], check_packages: bool = True
) -> None:
    """Raise one PreflightError listing every problem, or return when all hosts are usable.
    `host_of` opens (or reuses) the ssh connection to an inventory host."""
    state = home / "clusters" / t.name / "state.json"
    if state.exists():
        raise ClusterStateError(
            f"cluster '{t.name}' is already up (or was left by a killed run); "
            f"see `clusterbench status -n {t.name}` or remove it with `clusterbench down -n {t.name}`"
        )
    hosts = {h.name: host_of(h) for h in t.hosts}
    lines = problems(t, gather(t, hosts), check_packages)
    if lines:
        raise PreflightError("\n".join(lines))
