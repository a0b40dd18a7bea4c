"""The ssh provider: attaches to existing machines listed in the topology's [[hosts]].

It never creates or destroys machines, bridges or namespaces. Node N runs on the N-th host with
role db, balancer lbK on the K-th host with role balancer; their files live on that machine under
`<base_dir>/<cluster>/<role>`. state.json and the secrets stay in the local cluster directory.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clusterbench.clock import SystemClock
from clusterbench.errors import ClusterStateError
from clusterbench.hosts import procs
from clusterbench.hosts.ssh import KnownHosts, SshHost, SshTarget, copy_tree, on_hosts
from clusterbench.providers import ssh_check
from clusterbench.providers.iptables import isolate_rules, unpartition_rules
from clusterbench.providers.network import tbf_args
from clusterbench.spec.topology import InventoryHost, Resources, Topology
from clusterbench.telemetry.sites import ProbeSite, RoleProbe, Watch

Report = Callable[[str], None]

_ROLE_RE = re.compile(r"^(n|lb)([0-9]+)$")


def known_hosts_path(home: Path) -> Path:
    return home / "known_hosts"


def target_of(h: InventoryHost) -> SshTarget:
    key = Path(h.key).expanduser() if h.key else None
    return SshTarget(name=h.name, address=h.address, user=h.user, port=h.port, key=key)


class SshProvider:
    """Hosts of one topology over SSH; one connection per machine, shared by its roles."""

    kind = "ssh"
    remote = True

    def __init__(self, topology: Topology, home: Path, cluster_dir: Path | None = None) -> None:
        self.topology = topology
        self.home = home
        # The local cluster directory (state, secrets, copied logs); the nodes' files are remote.
        self.dir = cluster_dir or home / "clusters" / topology.name
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

    def vip_prefixlen(self) -> int:
        # No subnet plan over ssh: the VIP is a host address of its own.
        return 32

    def probe_sites(self, watches: Sequence[Watch]) -> list[ProbeSite]:
        """One telemetry probe per machine, over that machine's ssh connection: its roles'
        processes, the interface each role reaches its peers on (its speed, where the kernel
        knows it, is the link's limit) and the machine's own CPU and disks."""
        sites: dict[str, ProbeSite] = {}
        for w in watches:
            h = self.inventory(w.role)
            site = sites.setdefault(h.name, ProbeSite(f"host:{h.name}", self.host_of(h)))
            site.roles.append(RoleProbe(w, netdev=self.interface(w.role), speed_is_limit=True))
        return list(sites.values())

    # ------------------------------------------------------------------ up

    def check_up(self, home: Path, engine_needs: dict[str, str]) -> None:
        ssh_check.check_up(self.topology, home, self.host_of)

    def create(self, report: Report) -> dict[str, Any]:
        # Our role directories only (<base_dir>/<cluster>/<role>): a failed earlier up may have
        # left files there; like the local cluster directory, start from nothing.
        self.remove_files()
        made = self.prepare()
        report(f"hosts: {len(self.topology.hosts)} machines over ssh, {len(made)} role directories")
        return {}

    def attach(self, role: str, pid: int) -> None:
        """No resource limits over ssh (limit the machines themselves)."""

    def limited_host(self, role: str) -> SshHost:
        """The host of `role` (no limits of ours over ssh)."""
        return self.host(role)

    def copy_dir(
        self,
        src: tuple[str, Path],
        dests: Sequence[tuple[str, Path]],
        excludes: Sequence[str],
        report: Report,
    ) -> None:
        """No shared filesystem: one gzip'd tar stream from the source machine, fanned out through
        this machine to every destination's."""
        sent = copy_tree(
            self.host(src[0]),
            src[1],
            [(self.host(role), path) for role, path in dests],
            owner="mysql",
            excludes=list(excludes),
        )
        report(f"{src[0]}'s datadir copied to {len(dests)} hosts ({sent / 1e6:.1f} MB compressed)")

    # ------------------------------------------------------------------ links and CPU (faults)

    def isolate(self, role: str) -> None:
        """The link must stay up over ssh (it carries our session): iptables drops everything but
        loopback and SSH instead."""
        for argv in isolate_rules(self.inventory(role).port):
            self.host(role).run(argv)

    def reconnect(self, role: str) -> None:
        for _, argv in unpartition_rules([0]):
            self.host(role).run(argv, check=False)

    def shape(self, role: str, rate: str) -> None:
        """Egress of the role's interface only: ingress shaping would need an ifb device."""
        self.host(role).run(["tc", "qdisc", "replace", "dev", self.interface(role), "root", *tbf_args(rate)])

    def restore_link(self, role: str) -> str:
        # No shaping in an ssh topology: removing our root qdisc gives the interface back its
        # default one.
        self.host(role).run(["tc", "qdisc", "del", "dev", self.interface(role), "root"], check=False)
        return "unlimited"

    def cpu_limit_problem(self) -> str | None:
        return (
            "throttle-cpu is not available with the ssh provider (it would need cgroups set up on "
            "the remote machines); use pause-node, throttle-link, or limit the machines themselves"
        )

    def limit_cpu(self, role: str, quota: float, pid: int | None) -> None:
        raise ClusterStateError(self.cpu_limit_problem() or "")

    def restore_cpu(self, role: str) -> float | None:
        return None

    def set_limits(self, role: str, want: Resources, had: Resources, pid: int | None) -> None:
        """Topologies over ssh have no limits (the topology refuses them)."""

    def fault_leftovers(self, role: str) -> list[str]:
        """netem or tbf left on the node's interface (no link-down or CPU leftovers over ssh)."""
        from clusterbench.providers.local import _qdisc_leftovers  # noqa: PLC0415

        return _qdisc_leftovers(self.host(role), self.interface(role), None)

    # ------------------------------------------------------------------ down

    def make_datadir_fs(self, role: str, path: Path, size: str, fs: str = "tmpfs") -> None:
        """A file system of `size` for a node's datadir (tmpfs, or ext4 on a loop device), mounted on
        its machine."""
        from clusterbench.providers import datadirfs  # noqa: PLC0415

        datadirfs.make(self.host(role), path, size, datadirfs.source_name(self.topology.name, role), fs)

    def machine_of(self, role: str) -> SshHost:
        """Where a role's mounts, block devices and cgroups are managed: its machine."""
        return self.host(role)

    def release_datadir_fs(self) -> list[str]:
        """Unmount every file system under our role directories on the machines."""
        from clusterbench.providers import datadirfs  # noqa: PLC0415

        done = []
        for role in self.roles():
            if role.startswith("n"):
                done += [f"{self.host(role).name}: {line}"
                         for line in datadirfs.release(self.host(role), self.role_dir(role))]  # fmt: skip
        return done

    def teardown(self, keep_files: bool, keep_remote: bool) -> list[str]:
        """The machines stay as they were before `up`, minus our processes and files (never any
        `ip netns`, link or cgroup cleanup there). With keep_files the logs are copied into the
        local cluster directory first."""
        done = self.kill_leftovers()
        done += self.release_datadir_fs()
        if keep_files:
            self.dir.mkdir(parents=True, exist_ok=True)
            got = self.collect_logs(self.dir / "remote-logs")
            if got:
                done.append(f"copied {len(got)} remote logs to {self.dir / 'remote-logs'}")
        if not keep_remote:
            removed = self.remove_files()
            done.append(f"removed our files on {len({r.split(':')[0] for r in removed})} machine(s)")
        self.close()
        return done

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
            stopped = procs.stop_strays(host, str(self.role_dir(role)) + "/", (), SystemClock())
            return [f"{role}: stopped {len(stopped)} leftover processes"] if stopped else []

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


def route_interface(host: SshHost, peer: str) -> str:
    res = host.run(["ip", "-o", "route", "get", peer], check=False)
    m = re.search(r"\bdev (\S+)", res.stdout)
    if m is None:
        raise ClusterStateError(
            f"host {host.name}: cannot tell which interface reaches {peer} ({res.tail() or 'no route'}); "
            "set interface in its [[hosts]] entry"
        )
    return m.group(1)
