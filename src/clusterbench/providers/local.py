"""The local provider: every host of a topology is a network namespace on this machine, on a
bridge the provider creates, with no default route; limits are tbf qdiscs and cgroup v1 groups.

A provider makes hosts and owns what happens to them below the database: their network links
(isolate, shape, netem), CPU limits, copying a directory from one host to others, and the
teardown of everything it made. `Cluster` and the fault actions call these methods and never ask
which provider they have.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clusterbench.clock import Clock
from clusterbench.hosts import process
from clusterbench.hosts.base import Machine, ProcessRef, terminate
from clusterbench.hosts.local import LocalHost, NetnsHost
from clusterbench.providers import datadirfs, preflight
from clusterbench.providers.cgroups import CFS_PERIOD_US, CgroupV1, enter_cgroup_argv
from clusterbench.providers.naming import Names
from clusterbench.providers.network import HostPlan, down_plan, shape_plan, up_plan
from clusterbench.spec.topology import Resources, Topology
from clusterbench.telemetry.sites import PROBE_MARKER, ProbeSite, RoleProbe, Watch, rate_bps

Report = Callable[[str], None]


class LocalProvider:
    kind = "local"
    remote = False

    def __init__(self, topology: Topology, cluster_dir: Path, clock: Clock) -> None:
        self.topology = topology
        self.names = Names(topology.name)
        self.dir = cluster_dir
        self.clock = clock
        self.local = LocalHost()
        self.cgroups = CgroupV1()

    # ------------------------------------------------------------------ hosts

    def host(self, role: str) -> Machine:
        """Where role n<i>, lb<k> or c<k> runs: its namespace."""
        return NetnsHost(self.names.netns(role))

    def role_dir(self, role: str) -> Path:
        return self.dir / role

    def client_hosts(self) -> list[Machine]:
        """The client namespaces of `[clients] hosts = K`; [] when there are none (load runs here)."""
        return [NetnsHost(self.names.netns(f"c{k}")) for k in self.topology.client_indexes()]

    def interface(self, role: str) -> str:
        return "eth0"

    def vip_prefixlen(self) -> int:
        return self.topology.network.prefixlen

    def close(self) -> None:
        pass

    def probe_sites(self, watches: Sequence[Watch]) -> list[ProbeSite]:
        """One telemetry probe for the whole machine, in the root namespace: every process, the
        host side of every role's veth (what it receives, the role sent) with the topology's
        bandwidth as the link's limit, and this machine's CPU, which the roles and the load
        clients share."""
        roles = [
            RoleProbe(w, self.names.veth(w.role), flip=True, link_limit_bps=rate_bps(self._bandwidth(w.role)))
            for w in watches
        ]
        return [ProbeSite("host", self.local, roles, shared=True)]

    # ------------------------------------------------------------------ up

    def check_up(self, home: Path, engine_needs: dict[str, str]) -> None:
        preflight.check_up(self.topology, home, self.local, engine_needs)

    def host_plans(self) -> list[HostPlan]:
        t = self.topology
        plans = [
            HostPlan(self.names.node_role(i), t.node_address(i), t.node_resources(i).bandwidth)
            for i in t.node_indexes()
        ]
        for k in t.balancer_indexes():
            plans.append(HostPlan(f"lb{k}", t.balancer_address(k)))
        for k in t.client_indexes():
            plans.append(HostPlan(f"c{k}", t.client_host_address(k)))
        for i in t.web.indexes():
            if t.web_host_role(i) == f"w{i}":  # colocated ones run in their database node's host
                plans.append(HostPlan(f"w{i}", t.web_address(i), t.web_resources(i).bandwidth))
        for k in t.web.front_indexes():
            plans.append(HostPlan(f"fe{k}", t.front_address(k)))
        return plans

    def resources(self, role: str) -> Resources:
        """The limits the topology gives a role's host: node n<i>'s, web node w<i>'s (its own
        host's), none for the others (balancers, clients)."""
        t = self.topology
        if role[:1] in ("n", "w") and role[1:].isdigit():
            i = int(role[1:])
            return t.node_resources(i) if role[0] == "n" else t.web.node_resources(i)
        return Resources()

    def limited_roles(self) -> list[str]:
        """Roles with a CPU limit of their own (a cgroup)."""
        t = self.topology
        roles = [self.names.node_role(i) for i in t.node_indexes()]
        roles += [f"w{i}" for i in t.web.indexes() if t.web_host_role(i) == f"w{i}"]
        return [r for r in roles if self.resources(r).cpus() is not None]

    def limited_host(self, role: str) -> Machine:
        """The host of `role`, whose commands start under its limits (its cgroups, entered before
        the namespace), so that a server's workers are born there too: the web nodes'."""
        entry = enter_cgroup_argv(self.cgroups.procs_files(self.names.cgroup(role)))
        return NetnsHost(self.names.netns(role), outer=entry)

    def create(self, report: Report) -> dict[str, Any]:
        """Bridge, namespaces, veths, shaping, cgroups. Returns what to persist in state.json."""
        t = self.topology
        hosts = self.host_plans()
        bridge = f"{t.bridge_address()}/{t.network.prefixlen}"
        for argv in up_plan(self.names, bridge, hosts, t.network.prefixlen):
            self.local.run(argv)
        for role in self.limited_roles():
            r = self.resources(role)
            self.cgroups.create(self.names.cgroup(role), r.cpu_quota, r.cpuset)
        report(
            f"network: bridge {self.names.bridge} {t.bridge_address()}/{t.network.prefixlen}, "
            f"{len(hosts)} namespaces"
        )
        return {"netns": [self.names.netns(h.role) for h in hosts], "bridge": self.names.bridge}

    def attach(self, role: str, pid: int) -> None:
        """Put a node's server process under its topology limits (cgroup), if it has any."""
        if role in self.limited_roles():
            self.cgroups.attach(self.names.cgroup(role), pid)

    def copy_dir(
        self,
        src: tuple[str, Path],
        dests: Sequence[tuple[str, Path]],
        excludes: Sequence[str],
        report: Report,
    ) -> None:
        """Copy a directory between hosts: one filesystem here, so rsync it."""
        for _, path in dests:
            self.local.run(["rsync", "-a", *(f"--exclude={e}" for e in excludes), f"{src[1]}/", f"{path}/"])

    def make_datadir_fs(self, role: str, path: Path, size: str, fs: str = "tmpfs") -> None:
        """A file system of `size` for a node's datadir (tmpfs, or ext4 on a loop device), mounted in
        this machine's root namespace."""
        datadirfs.make(self.local, path, size, datadirfs.source_name(self.topology.name, role), fs)

    def root_host(self) -> LocalHost:
        """This machine in its root namespaces: where file systems under node directories are
        mounted (a mount inside `ip netns exec` ends with the command)."""
        return self.local

    def machine_of(self, role: str) -> LocalHost:
        """Where a role's mounts, block devices and cgroups are managed: this machine, in its root
        namespaces (a node's namespace host sees a /sys of its own, without the cgroup tree)."""
        return self.local

    def release_datadir_fs(self) -> list[str]:
        """Unmount every file system under the cluster's directory (ours: see datadirfs)."""
        return datadirfs.release(self.local, self.dir)

    # ------------------------------------------------------------------ links and CPU (faults)

    def isolate(self, role: str) -> None:
        """Cut a host off from everybody: its link down (host side of the veth)."""
        self.local.run(["ip", "link", "set", self.names.veth(role), "down"])

    def reconnect(self, role: str) -> None:
        self.local.run(["ip", "link", "set", self.names.veth(role), "up"], check=False)

    def shape(self, role: str, rate: str) -> None:
        """tbf at `rate` on both directions of a host's link."""
        for argv in shape_plan(self.names, role, rate):
            self.local.run(argv)

    def restore_link(self, role: str) -> str:
        """Back to the topology's shaping (tbf at its bandwidth, or none); returns what it is now."""
        configured = self._bandwidth(role)
        if configured:
            # `tc qdisc replace` swaps whatever root qdisc is there for the configured one.
            self.shape(role, configured)
            return configured
        self.local.run(["tc", "qdisc", "del", "dev", self.names.veth(role), "root"], check=False)
        self.host(role).run(["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
        return "unlimited"

    def cpu_limit_problem(self) -> str | None:
        """Why CPU limits cannot be changed on this provider (None: they can)."""
        return None

    def limit_cpu(self, role: str, quota: float, pid: int | None) -> None:
        group = self.names.cgroup(role)
        self.cgroups.create(group, quota, None)
        if pid is not None:
            self.cgroups.attach(group, pid)

    def quota_file(self, role: str) -> Path:
        return self.cgroups.root / "cpu" / self.names.cgroup(role) / "cpu.cfs_quota_us"

    def _wanted_quota_us(self, role: str) -> int:
        want = self.resources(role).cpu_quota
        return int(want * CFS_PERIOD_US) if want else -1

    def restore_cpu(self, role: str) -> float | None:
        """Back to the topology's CPU quota; returns it (None: unlimited)."""
        path = self.quota_file(role)
        if path.exists():
            path.write_text(str(self._wanted_quota_us(role)))
        us = self._wanted_quota_us(role)
        return us / CFS_PERIOD_US if us > 0 else None

    def set_limits(self, role: str, want: Resources, had: Resources, pid: int | None) -> None:
        """Change a node's limits from `had` to `want` while it runs (an experiment's trial with
        other limits). The topology must already be the one with `want`."""
        group = self.names.cgroup(role)
        if want.cpu_quota is not None or want.cpuset is not None:
            self.cgroups.create(group, want.cpu_quota, want.cpuset)
            if pid is not None:
                self.cgroups.attach(group, pid)
        if want.cpu_quota is None:
            self.restore_cpu(role)  # -1: unlimited, if the group exists
        if want.cpuset is None and had.cpuset is not None:
            cpus = (self.cgroups.root / "cpuset" / "cpuset.cpus").read_text().strip()
            self.cgroups.create(group, None, cpus)
        if want.bandwidth != had.bandwidth:
            self.restore_link(role)  # tbf at the new bandwidth, or none

    def fault_leftovers(self, role: str) -> list[str]:
        """What a killed run may have left on a node's link and CPU: link-down, netem, shaping
        (tbf the topology does not have), cpu-quota (not the topology's)."""
        out = []
        shown = self.local.run(["ip", "-j", "link", "show", "dev", self.names.veth(role)], check=False)
        links = json.loads(shown.stdout or "[]") if shown.ok else []
        if links and "UP" not in links[0].get("flags", []):
            out.append("link-down")
        out += _qdisc_leftovers(self.local, self.names.veth(role), self._bandwidth(role))
        path = self.quota_file(role)
        if path.exists() and int(path.read_text().strip()) != self._wanted_quota_us(role):
            out.append("cpu-quota")
        return out

    def _bandwidth(self, role: str) -> str | None:
        return self.resources(role).bandwidth

    # ------------------------------------------------------------------ down

    def teardown(self, keep_files: bool, keep_remote: bool) -> list[str]:
        """Stop what still runs in our namespaces (and a telemetry probe a killed run left, which
        runs in the root namespace), remove cgroups, veths, namespaces, bridge."""
        done = self._kill_namespace_leftovers() + self._kill_probes()
        done += self.release_datadir_fs()  # after the processes that had files open there
        for cg in self.cgroups.existing(f"{self.topology.name}-"):
            self.cgroups.remove(cg)
            done.append(f"cgroup {cg} removed")
        self.cgroups.remove_parents_if_empty()
        netns, links = preflight.leftovers(self.names, self.local)
        for argv in down_plan(self.names, netns, links):
            self.local.run(argv, check=False)
        if netns or links:
            done.append(f"removed {len(netns)} namespaces and {len(links)} links")
        return done

    def _kill_probes(self) -> list[str]:
        """Telemetry probes watching this cluster (they exit by themselves within a second of
        their run's end; this is for one that has not yet): found in /proc directly, which is
        much faster here than a shell listing."""
        mine = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
                cmd = raw.replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            ticks = process.start_ticks(int(entry))
            if PROBE_MARKER in cmd and f"{self.dir}/" in cmd and ticks is not None:
                mine.append(ProcessRef(int(entry), ticks))
        for ref in mine:
            terminate(self.local, ref, self.clock, 5.0)
        return [f"stopped {len(mine)} telemetry probe(s) left by a killed run"] if mine else []

    def _kill_namespace_leftovers(self) -> list[str]:
        """Processes still inside our namespaces (SST helpers, a lost daemon) are ours: stop them."""
        done: list[str] = []
        netns, _ = preflight.leftovers(self.names, self.local)
        pids: list[int] = []
        for ns in netns:
            res = self.local.run(["ip", "netns", "pids", ns], check=False)
            pids += [int(p) for p in res.stdout.split() if p.isdigit()]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            live = [p for p in pids if _alive_pid(p)]
            for p in live:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, sig)
            if live:
                done.append(f"sent {sig.name} to {len(live)} leftover processes in the namespaces")
                deadline = self.clock.now() + 10
                while self.clock.now() < deadline and any(_alive_pid(p) for p in live):
                    self.clock.sleep(0.05)
        return done


def _qdisc_leftovers(host: Machine, dev: str, configured: str | None) -> list[str]:
    shown = host.run(["tc", "-j", "qdisc", "show", "dev", dev], check=False)
    kinds = {q.get("kind") for q in (json.loads(shown.stdout or "[]") if shown.ok else [])}
    if "netem" in kinds:
        return ["netem"]
    if "tbf" in kinds and not configured:
        return ["shaping"]
    return []


def _alive_pid(pid: int) -> bool:
    """A process in our namespaces we hold no start time for: alive unless gone or a zombie."""
    return process.state(pid) not in (None, "Z", "X")
