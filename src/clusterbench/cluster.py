"""A cluster: components over hosts, with persisted state so every command can find it again.

State lives in `<home>/clusters/<name>/state.json` and is written after every step, so a killed
`up` can be torn down by `down`, which also finds leftovers by name prefix when state is lost.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterbench.balancers import BalancerOps, BalancerView, balancer_role, balancer_view
from clusterbench.clock import Clock, SystemClock
from clusterbench.components.daemon import stop_each
from clusterbench.components.haproxy.status import BackendServer
from clusterbench.datadir_layers import layer_source, layered, make_durable, start_layers, stop_layers
from clusterbench.engines import make_engine
from clusterbench.engines.base import Credentials, DbNode, NodeHealth, NodeSite
from clusterbench.errors import ClusterbenchError, ClusterStateError
from clusterbench.hosts.base import Machine, ProcessRef
from clusterbench.hosts.local import LocalHost
from clusterbench.lifecycle import NodeOps
from clusterbench.paths import clusters_dir, home_dir
from clusterbench.paths import known_clusters as known_clusters  # re-exported for the commands
from clusterbench.providers import make_provider
from clusterbench.providers.datadirfs import DiskSpace, disk_space
from clusterbench.providers.naming import Names
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.spec.topology import Topology
from clusterbench.telemetry.sites import ProbeSite, Watch
from clusterbench.webtier import WebOps, WebTierStatus

log = logging.getLogger(__name__)

def generate_credentials() -> Credentials:
    def pw() -> str:
        return secrets.token_urlsafe(15)

    return Credentials(
        admin_user="cbadmin",
        admin_password=pw(),
        app_user="bench",
        app_password=pw(),
        mon_user="cbmon",
        mon_password=pw(),
        repl_user="cbrepl",
        repl_password=pw(),
        web_user="cbweb",
        web_password=pw(),
    )


@dataclass
class NodeView:
    index: int
    address: str
    alive: bool
    health: NodeHealth | None
    disk: DiskSpace | None = None  # the file system of its datadir


@dataclass
class ClusterStatus:
    name: str
    nodes: list[NodeView]
    # lb1, as before balancer pairs existed; `balancers` has every HAProxy.
    balancer_address: str | None
    balancer_alive: bool
    backends: list[BackendServer] = field(default_factory=list)
    balancers: list[BalancerView] = field(default_factory=list)
    vip: str | None = None  # "ip:port" of a keepalived pair
    vip_holders: list[str] = field(default_factory=list)  # roles; exactly one when healthy
    web: WebTierStatus | None = None  # the web nodes and front balancers ([web] nodes > 0)


Report = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


class Cluster(BalancerOps, WebOps, NodeOps):
    """Provider hosts, engine nodes and balancers of one cluster, with persisted state.

    It knows neither which engine nor which provider it has: the engine (`engines/`) runs the
    database's lifecycle through the `Site` methods below, the provider (`providers/`) makes the
    hosts and owns their links, limits and teardown."""

    def __init__(self, topology: Topology, home: Path | None = None, clock: Clock | None = None) -> None:
        self._topology = topology
        self.home = home or home_dir()
        self.clock = clock or SystemClock()
        self.names = Names(topology.name)
        self.dir = clusters_dir(self.home) / topology.name
        self.state: dict[str, Any] = {}
        self.creds: Credentials | None = None
        # This machine's own files (state.json, secrets).
        self.local = LocalHost()
        self.provider = make_provider(topology, self.home, self.dir, self.clock)
        self.engine = make_engine(topology)

    @property
    def topology(self) -> Topology:
        return self._topology

    @topology.setter
    def topology(self, t: Topology) -> None:
        """An experiment's trial may change limits: the provider and engine follow."""
        self._topology = t
        self.provider.topology = t
        self.engine.topology = t

    # ------------------------------------------------------------------ hosts

    @property
    def remote(self) -> bool:
        return self.provider.remote

    def host(self, role: str) -> Machine:
        """Where role n<i>, lb<k> or c<k> runs."""
        return self.provider.host(role)

    def role_dir(self, role: str) -> Path:
        """A role's files: the local cluster directory, or `<base_dir>/<cluster>/<role>` remotely."""
        return self.provider.role_dir(role)

    def client_hosts(self) -> list[Machine]:
        """Hosts that run load clients: the local client namespaces (`[clients] hosts = K`) or the
        inventory's hosts with role client; [] when there are none (load then runs here)."""
        return list(self.provider.client_hosts())

    def interface(self, role: str) -> str:
        """The interface a role's host reaches its peers on (eth0 inside a local namespace)."""
        return self.provider.interface(role)

    def close(self) -> None:
        """Close SSH connections (nothing to do locally)."""
        self.provider.close()

    def probe_sites(self) -> list[ProbeSite]:
        """Where telemetry probes run and what they watch (the provider decides): every node's
        server, every HAProxy (both levels) and every web node (nginx and php-fpm with their
        workers), by PID, followed through their pid files across restarts."""
        watches = []
        layers = layered(self)
        for n in self.nodes():
            p = n.proc
            data = layer_source(n.datadir) if n.index in layers else n.datadir  # the layer's disk
            watches.append(Watch(n.name, p.pid if p else None, p.start_ticks if p else None,
                                 pidfile=n.pid_file, datadir=data))  # fmt: skip
        for k, h in zip(self.topology.balancer_indexes(), self.haproxies(), strict=True):
            p = h.proc
            watches.append(Watch(balancer_role(k), p.pid if p else None, p.start_ticks if p else None,
                                 pidfile=h.cfg.pid_path, stats_socket=h.cfg.stats_socket))  # fmt: skip
        watches += self.web_watches()
        return self.provider.probe_sites(watches)

    # ------------------------------------------------------------------ state

    @property
    def state_path(self) -> Path:
        return self.dir / "state.json"

    @property
    def secrets_path(self) -> Path:
        return self.dir / "secrets.json"

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.local.put_file(self.state_path, json.dumps(self.state, indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, name: str, home: Path | None = None, clock: Clock | None = None) -> Cluster:
        home = home or home_dir()
        path = clusters_dir(home) / name / "state.json"
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            raise ClusterStateError(f"cluster '{name}' is not up; start it with `clusterbench up`") from None
        except (OSError, ValueError) as exc:
            raise ClusterStateError(
                f"{path} is unreadable ({exc}); run `clusterbench down -n {name}`"
            ) from None
        topo = Topology.model_validate(state["topology"])
        c = cls(topo, home, clock)
        c.state = state
        try:
            c.creds = Credentials.from_json(json.loads(c.secrets_path.read_text()))
        except (OSError, ValueError, TypeError):
            c.creds = None
        return c

    def credentials(self) -> Credentials:
        if self.creds is None:
            raise ClusterStateError(f"credentials of cluster '{self.topology.name}' are missing; recreate it")
        return self.creds

    # ------------------------------------------------------------------ nodes (the engine's Site)

    def node_dir(self, index: int) -> Path:
        return self.role_dir(f"n{index}")

    def node(self, index: int) -> DbNode:
        if index not in self.topology.node_indexes():
            raise ClusterStateError(
                f"node {index} does not exist; cluster '{self.topology.name}' "
                f"has nodes 1-{self.topology.cluster.nodes}"
            )
        st = self.state.get("nodes", {}).get(str(index), {})
        proc = ProcessRef.from_json(st["proc"]) if st.get("proc") else None
        check = ProcessRef.from_json(st["check"]) if st.get("check") else None
        host = self.host(self.names.node_role(index))
        site = NodeSite(index, host, self.node_dir(index), self.credentials(), proc, check, self.clock)
        node = self.engine.make_node(site)
        node.fake_clock = self.topology.cluster.clock == "faketime"
        return node

    def nodes(self) -> list[DbNode]:
        return [self.node(i) for i in self.topology.node_indexes()]

    @property
    def template_root(self) -> Path | None:
        return None if self.topology.remote else self.home / "templates"

    def started(self, node: DbNode) -> None:
        """The engine (re)started a node's server: limits first, then the record of its PID."""
        if node.proc is not None:
            self.provider.attach(self.names.node_role(node.index), node.proc.pid)
        self.recorded(node)

    def recorded(self, node: DbNode) -> None:
        entry = self.state.setdefault("nodes", {}).setdefault(str(node.index), {})
        entry["proc"] = node.proc.to_json() if node.proc else None
        entry["check"] = node.check_proc.to_json() if node.check_proc else None
        self.save()

    def copy_datadir(
        self, source: DbNode, targets: Sequence[DbNode], excludes: Sequence[str], report: Report
    ) -> None:
        self.provider.copy_dir(
            (self.names.node_role(source.index), source.datadir),
            [(self.names.node_role(t.index), t.datadir) for t in targets],
            excludes,
            report,
        )

    def endpoint(self, target: str = "balancer", database: str = "sbtest") -> Endpoint:
        """'balancer', 'vip', 'node:N' or 'all-nodes' → an Endpoint with the app credentials.

        'balancer' is the VIP of a keepalived pair, else lb1's address; 'vip' needs a pair."""
        c = self.credentials()
        t = self.topology
        client = t.client_address()
        if target == "balancer":
            if client is None:
                raise ClusterStateError("this cluster has no balancer; use --target node:N or all-nodes")
            addrs: tuple[Address, ...] = (Address(host=client, port=t.balancer.port),)
        elif target in ("balancer-read", "read"):
            read = [r for r in self.engine.routes() if r.name == "read"]
            if client is None or not read:
                raise ClusterStateError(
                    f"this cluster has no read endpoint ({self.engine.label} sends every client the same "
                    "way); use --target balancer"
                )
            addrs = (Address(host=client, port=t.balancer.port + read[0].port_offset),)
        elif target == "vip":
            vip = t.vip_address()
            if vip is None:
                raise ClusterStateError(
                    "this cluster has no VIP (it needs [balancer] count = 2); use --target balancer"
                )
            addrs = (Address(host=vip, port=t.balancer.port),)
        elif target == "all-nodes":
            addrs = tuple(Address(host=t.node_address(i)) for i in t.node_indexes())
        elif target.startswith("node:") and target[5:].isdigit():
            i = int(target[5:])
            self.node(i)  # validates the index
            addrs = (Address(host=t.node_address(i)),)
        else:
            vip = "vip, " if t.vip_address() else ""
            raise ClusterStateError(f"unknown target '{target}'; use balancer, {vip}node:N or all-nodes")
        return Endpoint(
            name=target, addresses=addrs, user=c.app_user, password=c.app_password, database=database
        )

    # ------------------------------------------------------------------ up

    def up(self, report: Report = _quiet, checked: Callable[[], None] | None = None) -> dict[str, float]:
        """Bring the cluster up. On any failure or interrupt, tear down what was started.
        `checked` is called once the preflight passed, before anything starts (the CLI's banner:
        a refused `up` prints its one line and nothing else)."""
        timings: dict[str, float] = {}
        t0 = time.monotonic()
        self.provider.check_up(self.home, self.engine.required())
        if checked is not None:
            checked()
        # A failed earlier `up` keeps its files (logs) for reading; a new one starts from nothing.
        if self.dir.exists():
            self.provider.release_datadir_fs()  # a datadir file system left mounted there
            shutil.rmtree(self.dir)
        self.creds = generate_credentials()
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o755)
        self.local.put_file(self.secrets_path, json.dumps(self.creds.to_json()) + "\n", mode=0o600)
        self.state = {
            "name": self.topology.name,
            "topology": self.topology.model_dump(mode="json"),
            "engine": self.engine.kind,
            "phase": "creating",
            "created_at": time.time(),
            "nodes": {},
        }
        self.save()
        try:
            network = self.provider.create(report)
            if network:
                self.state["network"] = network
                self.save()
            timings["network"] = time.monotonic() - t0
            self._datadir_filesystems(report)
            self.engine.bring_up(self, report)
            make_durable(self, report)
            timings["nodes_synced"] = time.monotonic() - t0
            self._up_balancer(report)
            timings["balancers"] = time.monotonic() - t0
            if self.topology.web.nodes:
                self._up_web(report)
                timings["web"] = time.monotonic() - t0
            timings["total"] = time.monotonic() - t0
            self.state["phase"] = "up"
            self.state["up_seconds"] = round(timings["total"], 2)
            self.save()
            return timings
        except BaseException:
            report(f"bring-up failed; tearing down what was started (logs kept in {self.dir})")
            try:
                # Logs stay readable here; over ssh they are copied back and the machines are
                # left as they were.
                self.down(report=_quiet, keep_files=True, keep_remote=False)
            except Exception as exc:  # noqa: BLE001 - the original error matters more
                log.warning("teardown after failed up: %s", exc)
            raise

    def _datadir_filesystems(self, report: Report) -> None:
        """Nodes with `datadir_fs` tmpfs or loop (or a `datadir_size`) get a file system of their
        own for their datadir (what disk-full fills and throttle-disk slows); `down` unmounts it.
        Nodes with the power-loss layer get it at their datadir (over that file system, when they
        have one)."""
        start_layers(self, report)
        layers = layered(self)
        for i in self.topology.node_indexes():
            size = self.topology.node_datadir_size(i)
            if size and i not in layers:
                fs = self.topology.node_datadir_fs(i)
                self.provider.make_datadir_fs(self.names.node_role(i), self.node(i).datadir, size, fs)
                kind = "ext4 on a loop device" if fs == "loop" else fs
                report(f"n{i}: datadir on a file system of its own ({size}, {kind})")

    def down(
        self, report: Report = _quiet, keep_files: bool = False, keep_remote: bool | None = None
    ) -> list[str]:
        """Stop everything we started and remove namespaces, links and cgroups (local) or our
        files on the machines (ssh). Idempotent. `keep_files` keeps the local cluster directory
        and, over ssh, copies the remote logs into it; `keep_remote` (default: keep_files) keeps
        the files on the machines too."""
        done: list[str] = self._down_web()
        if self.state:
            done += stop_each(self.keepaliveds(), lambda ka: f"keepalived {ka.cfg.role}")
            done += stop_each(self.haproxies(), lambda h: f"haproxy {h.cfg.dir.name}")
        try:
            nodes = self.nodes() if self.state and self.creds is not None else []
        except ClusterbenchError as exc:
            # The engine can no longer describe its nodes (e.g. Group Replication's rootfs was
            # removed or CLUSTERBENCH_ROOTFS points elsewhere): the provider's teardown below still
            # stops every process in the cluster's namespaces or directories, and removes them.
            done.append(f"nodes not stopped one by one ({exc}); the teardown stops what runs")
            nodes = []
        for n in nodes:
            n.stop_health_agent()
        # The engine's fastest stop that loses nothing still wanted: SIGKILL at once when the
        # datadirs go next; with them kept, Galera's graceful stops one at a time, Group
        # Replication's all together.
        done += self.engine.stop_for_teardown(nodes, keep_data=keep_files)
        if self.state and self.topology.provider.kind == "local":
            done += stop_layers(self, discard=not keep_files)
        done += self.provider.teardown(keep_files, keep_files if keep_remote is None else keep_remote)
        if not keep_files and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        elif self.state_path.exists():
            self.state_path.unlink()
        for line in done:
            report(line)
        return done

    # ------------------------------------------------------------------ status

    def status(self) -> ClusterStatus:
        t = self.topology
        views = []
        for n in self.nodes():
            views.append(NodeView(n.index, n.address, n.alive(), n.health(), disk_space(n.host, n.datadir)))
        balancers = [balancer_view(h, self.keepalived, t.balancer.port) for h in self.haproxies()]
        lb1 = balancers[0] if balancers else None
        vip = t.vip_address()
        return ClusterStatus(
            name=t.name,
            nodes=views,
            balancer_address=lb1.address if lb1 else None,
            balancer_alive=bool(lb1 and lb1.alive),
            backends=lb1.backends if lb1 else [],
            balancers=balancers,
            vip=f"{vip}:{t.balancer.port}" if vip else None,
            vip_holders=[b.role for b in balancers if b.holds_vip],
            web=self.web_status(),
        )

    # ------------------------------------------------------------------ node operations
