"""The ssh provider: attaches to existing machines listed in the topology's [[hosts]].

It never creates or destroys machines, bridges or namespaces. Node N runs on the N-th host with
role db, balancer lbK on the K-th host with role balancer; their files live on that machine under
`<base_dir>/<cluster>/<role>`. state.json and the secrets stay in the local cluster directory.
"""

from __future__ import annotations

import contextlib
import re
import threading
from pathlib import Path

from clusterbench.clock import SystemClock
from clusterbench.errors import ClusterStateError
from clusterbench.hosts.base import ProcessRef, terminate
from clusterbench.hosts.ssh import KnownHosts, SshHost, SshTarget, on_hosts
from clusterbench.spec.topology import InventoryHost, Topology

_ROLE_RE = re.compile(r"^(n|lb)([0-9]+)$")


def known_hosts_path(home: Path) -> Path:
    return home / "known_hosts"


def target_of(h: InventoryHost) -> SshTarget:
    key = Path(h.key).expanduser() if h.key else None
    return SshTarget(name=h.name, address=h.address, user=h.user, port=h.port, key=key)


class SshProvider:
    """Hosts of one topology over SSH; one connection per machine, shared by its roles."""

    kind = "ssh"

    def __init__(self, topology: Topology, home: Path) -> None:
        self.topology = topology
        self.known = KnownHosts(known_hosts_path(home), topology.provider.host_keys)
        self._hosts: dict[str, SshHost] = {}
        self._lock = threading.Lock()
        self._interfaces: dict[str, str] = {}

    def inventory(self, role: str) -> InventoryHost:
        """The inventory entry of a role: n<i> or lb<k>."""
        t = self.topology
        m = _ROLE_RE.match(role)
        if m is None:
            raise ClusterStateError(f"no host plays role {role}")
        kind, k = m.group(1), int(m.group(2))
        pool = t.db_hosts() if kind == "n" else t.balancer_hosts()
        if not 1 <= k <= len(pool):
            raise ClusterStateError(f"no host plays role {role} in [[hosts]]")
        return pool[k - 1]

    def host_of(self, h: InventoryHost) -> SshHost:
        with self._lock:
            found = self._hosts.get(h.name)
            if found is None:
                timeout = self.topology.provider.connect_timeout
                found = SshHost(target_of(h), known_hosts=self.known, connect_timeout=timeout)
                self._hosts[h.name] = found
            return found

    def host(self, role: str) -> SshHost:
        return self.host_of(self.inventory(role))

    def all_hosts(self) -> list[SshHost]:
        return [self.host_of(h) for h in self.topology.hosts]

    def client_hosts(self) -> list[SshHost]:
        return [self.host_of(h) for h in self.topology.client_hosts()]

    def cluster_dir(self, h: InventoryHost) -> Path:
        return Path(h.base_dir or self.topology.provider.base_dir) / self.topology.name

    def role_dir(self, role: str) -> Path:
        return self.cluster_dir(self.inventory(role)) / role

    def roles(self) -> list[str]:
        t = self.topology
        return [f"n{i}" for i in t.node_indexes()] + [f"lb{k}" for k in t.balancer_indexes()]

    def interface(self, role: str) -> str:
        """The interface a role's host reaches its peers on: the inventory's `interface`, or the
        one `ip route get <peer>` names."""
        h = self.inventory(role)
        if h.interface:
            return h.interface
        with self._lock:
            if h.name in self._interfaces:
                return self._interfaces[h.name]
        peers = [x.address for x in self.topology.hosts if x.address != h.address]
        found = route_interface(self.host_of(h), peers[0] if peers else h.address)
        with self._lock:
            self._interfaces[h.name] = found
        return found

    def prepare(self) -> list[str]:
        """Create each role's directory (parents world-traversable: mariadbd runs as mysql)."""
        done = []
        for role in self.roles():
            host = self.host(role)
            host.mkdir(self.role_dir(role).parent, mode=0o755)
            host.mkdir(self.role_dir(role), mode=0o755)
            done.append(f"{host.name}:{self.role_dir(role)}")
        return done

    def collect_logs(self, dest: Path) -> list[str]:
        """Copy each role's logs into the local cluster directory (dest/<role>/)."""
        out = []
        for role in self.roles():
            host = self.host(role)
            d = self.role_dir(role)
            for name in ("error.log", "stdout.log", "clustercheck.log", "haproxy.log", "keepalived.log"):
                with contextlib.suppress(Exception):
                    text = host.read_file(d / name)
                    if text is None:
                        continue
                    (dest / role).mkdir(parents=True, exist_ok=True)
                    (dest / role / name).write_text(text)
                    out.append(f"{role}/{name}")
        return out

    def kill_leftovers(self) -> list[str]:
        """Processes whose command line names one of our role directories are ours (an SST
        helper, a daemon whose state was lost), and so are their descendants: stop them, by PID and
        start time. Nothing else on the machine is touched."""
        out: list[str] = []

        def one(role: str) -> list[str]:
            host = self.host(role)
            d = str(self.role_dir(role)) + "/"
            # The directory is matched here, not in the remote script: the script's own command
            # line (and sudo's) would otherwise match too.
            listing = host.shell(_LIST_PROCS, timeout=30).stdout
            refs = []
            for pid in ours_and_descendants(listing, d):
                st = host.proc_state(pid)
                if st is not None and st[0] not in ("Z", "X"):
                    refs.append(ProcessRef(pid, st[1]))
            for ref in refs:
                terminate(host, ref, SystemClock(), 10)
            return [f"{role}: stopped {len(refs)} leftover processes"] if refs else []

        for _, res in on_hosts(self.roles(), one):
            if isinstance(res, list):
                out += res
        return out

    def remove_files(self) -> list[str]:
        out = []
        dirs: dict[str, tuple[SshHost, Path]] = {}
        for role in self.roles():
            host = self.host(role)
            host.remove_tree(self.role_dir(role))
            out.append(f"{host.name}:{self.role_dir(role)}")
            dirs[f"{host.name}:{self.role_dir(role).parent}"] = (host, self.role_dir(role).parent)
        for host, d in dirs.values():
            # Only when empty: another cluster's roles may share the machine and the parent.
            host.shell('rmdir "$1" 2>/dev/null; true', str(d))
        return out

    def close(self) -> None:
        with self._lock:
            hosts = list(self._hosts.values())
        for h in hosts:
            h.close()


# Every process as "PID<TAB>PPID<TAB>command line".
_LIST_PROCS = (
    'for f in /proc/[0-9]*; do printf "%s\\t%s\\t" "${f#/proc/}" '
    '"$(sed -n "s/^PPid:[[:space:]]*//p" "$f/status" 2>/dev/null)"; '
    'tr "\\0" " " <"$f/cmdline" 2>/dev/null; echo; done'
)


def ours_and_descendants(listing: str, marker: str) -> list[int]:
    """PIDs whose command line contains `marker` (one of our role directories), and their
    descendants (a shell's sleep, an SST script's rsync): all started by our daemons (pure)."""
    children: dict[int, list[int]] = {}
    found: list[int] = []
    for line in listing.splitlines():
        parts = line.split("\t", 2)
        if len(parts) < 3 or not parts[0].isdigit():
            continue
        pid = int(parts[0])
        if parts[1].isdigit():
            children.setdefault(int(parts[1]), []).append(pid)
        if marker in parts[2]:
            found.append(pid)
    out: list[int] = []
    todo = list(found)
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.append(pid)
        todo += children.get(pid, [])
    return sorted(out)


def route_interface(host: SshHost, peer: str) -> str:
    res = host.run(["ip", "-o", "route", "get", peer], check=False)
    m = re.search(r"\bdev (\S+)", res.stdout)
    if m is None:
        raise ClusterStateError(
            f"host {host.name}: cannot tell which interface reaches {peer} ({res.tail() or 'no route'}); "
            "set interface in its [[hosts]] entry"
        )
    return m.group(1)
