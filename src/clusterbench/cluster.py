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

from clusterbench.clock import Clock, SystemClock
from clusterbench.components.haproxy.component import HAProxy
from clusterbench.components.haproxy.config import HAProxyConfig
from clusterbench.components.haproxy.status import BackendServer
from clusterbench.components.keepalived.component import Keepalived
from clusterbench.components.keepalived.config import KeepalivedConfig
from clusterbench.engines import make_engine
from clusterbench.engines.base import Credentials, DbNode, NodeHealth
from clusterbench.errors import ClusterbenchError, ClusterStateError, ComponentError
from clusterbench.hosts.base import Machine, ProcessRef
from clusterbench.hosts.local import LocalHost
from clusterbench.providers import make_provider
from clusterbench.providers.datadirfs import DiskSpace, disk_space
from clusterbench.providers.naming import Names
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.spec.topology import Topology
from clusterbench.telemetry.sites import ProbeSite, Watch

log = logging.getLogger(__name__)

DEFAULT_HOME = Path("/var/lib/clusterbench")
BALANCER_ROLE = "lb1"
JOIN_TIMEOUT = 180.0
BACKENDS_TIMEOUT = 30.0
# The one limit of settling (after a heal, before a drill, after a node change): the nodes back as
# ready members and the balancers seeing them. A rejoin by full state transfer (a Group
# Replication clone, an SST) is the slow case it has to cover.
SETTLE_TIMEOUT = 240.0


def balancer_role(index: int) -> str:
    return f"lb{index}"


def home_dir() -> Path:
    return Path(os.environ.get("CLUSTERBENCH_HOME", str(DEFAULT_HOME)))


def clusters_dir(home: Path) -> Path:
    return home / "clusters"


def known_clusters(home: Path) -> list[str]:
    d = clusters_dir(home)
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if (p / "state.json").exists())


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
    )


@dataclass
class NodeView:
    index: int
    address: str
    alive: bool
    health: NodeHealth | None
    disk: DiskSpace | None = None  # the file system of its datadir


@dataclass
class BalancerView:
    index: int
    role: str
    address: str  # "ip:port" of this HAProxy itself
    alive: bool
    backends: list[BackendServer] = field(default_factory=list)
    keepalived_alive: bool | None = None  # None: no keepalived (a single HAProxy)
    holds_vip: bool = False


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


Report = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


class Cluster:
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
        server and every HAProxy, by PID, followed through their pid files across restarts."""
        watches = []
        for n in self.nodes():
            p = n.proc
            watches.append(Watch(n.name, p.pid if p else None, p.start_ticks if p else None,
                                 pidfile=n.pid_file, datadir=n.datadir))  # fmt: skip
        for k, h in zip(self.topology.balancer_indexes(), self.haproxies(), strict=True):
            p = h.proc
            watches.append(Watch(balancer_role(k), p.pid if p else None, p.start_ticks if p else None,
                                 pidfile=h.cfg.pid_path, stats_socket=h.cfg.stats_socket))  # fmt: skip
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
        return self.engine.make_node(
            index,
            self.host(self.names.node_role(index)),
            self.node_dir(index),
            self.credentials(),
            proc,
            check,
            self.clock,
        )

    def nodes(self) -> list[DbNode]:
        return [self.node(i) for i in self.topology.node_indexes()]

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

    def _check_balancer_index(self, index: int) -> None:
        t = self.topology
        if index not in t.balancer_indexes():
            have = f"lb1-lb{t.balancer.count}" if t.balancer.count > 1 else "lb1 only"
            raise ClusterStateError(
                f"balancer {index} does not exist; cluster '{t.name}' has "
                + (have if t.balancer.kind == "haproxy" else "no balancer")
            )

    def _balancers_state(self) -> dict[str, Any]:
        """For writing: state["balancers"][role] = {"proc": HAProxy, "keepalived": keepalived}."""
        legacy = self.state.pop("balancer", None)  # lb1, as written before balancer pairs existed
        out: dict[str, Any] = self.state.setdefault("balancers", {})
        if legacy and BALANCER_ROLE not in out:
            out[BALANCER_ROLE] = legacy
        return out

    def _balancer_state(self, role: str) -> dict[str, Any]:
        st = self.state.get("balancers", {}).get(role)
        if st is None and role == BALANCER_ROLE:
            st = self.state.get("balancer")
        return st or {}

    def haproxy(self, index: int = 1) -> HAProxy | None:
        """HAProxy `index` (lb1 by default); None when the cluster has no balancer."""
        t = self.topology
        if t.balancer.kind != "haproxy":
            return None
        self._check_balancer_index(index)
        role = balancer_role(index)
        cfg = HAProxyConfig(
            cluster_name=t.name,
            address=t.balancer_address(index),
            dir=self.role_dir(role),
            settings=t.balancer,
            servers=tuple((f"n{i}", t.node_address(i)) for i in t.node_indexes()),
            vip=t.vip_address(),
            routes=self.engine.routes(),
        )
        st = self._balancer_state(role)
        proc = ProcessRef.from_json(st["proc"]) if st.get("proc") else None
        return HAProxy(cfg, self.host(role), proc=proc, clock=self.clock)

    def haproxies(self) -> list[HAProxy]:
        """Every HAProxy: [lb1] or [lb1, lb2]; [] without a balancer."""
        out = []
        for k in self.topology.balancer_indexes():
            h = self.haproxy(k)
            assert h is not None
            out.append(h)
        return out

    def keepalived(self, index: int) -> Keepalived | None:
        """keepalived on balancer `index` of a pair; None when there is no VIP."""
        t = self.topology
        vip = t.vip_address()
        if vip is None:
            return None
        self._check_balancer_index(index)
        role = balancer_role(index)
        peer = 2 if index == 1 else 1
        cfg = KeepalivedConfig(
            cluster_name=t.name,
            index=index,
            dir=self.role_dir(role),
            src_ip=t.balancer_address(index),
            peer_ip=t.balancer_address(peer),
            vip=vip,
            prefixlen=self.provider.vip_prefixlen(),
            haproxy_socket=HAProxyConfig.stats_socket_in(self.role_dir(role)),
            advert_int=t.balancer.advert_int,
            interface=self.interface(role),
        )
        st = self._balancer_state(role)
        proc = ProcessRef.from_json(st["keepalived"]) if st.get("keepalived") else None
        return Keepalived(cfg, self.host(role), proc=proc, clock=self.clock)

    def keepaliveds(self) -> list[Keepalived]:
        out = []
        for k in self.topology.balancer_indexes():
            ka = self.keepalived(k)
            if ka is not None:
                out.append(ka)
        return out

    def _record_balancer(self, h: HAProxy) -> None:
        entry = self._balancers_state().setdefault(h.cfg.dir.name, {})
        entry["proc"] = h.proc.to_json() if h.proc else None
        self.save()

    def _record_keepalived(self, ka: Keepalived) -> None:
        entry = self._balancers_state().setdefault(ka.cfg.role, {})
        entry["keepalived"] = ka.proc.to_json() if ka.proc else None
        self.save()

    # ------------------------------------------------------------------ endpoints

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
            timings["nodes_synced"] = time.monotonic() - t0
            self._up_balancer(report)
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
        """Nodes with `datadir_size` get a file system of their own for their datadir (what the
        disk-full fault fills); `down` unmounts it."""
        for i in self.topology.node_indexes():
            size = self.topology.node_datadir_size(i)
            if size:
                self.provider.make_datadir_fs(self.names.node_role(i), self.node(i).datadir, size)
                report(f"n{i}: datadir on a file system of its own ({size}, tmpfs)")

    def _backend_names(self) -> list[str]:
        return [f"n{i}" for i in self.topology.node_indexes()]

    def _up_balancer(self, report: Report) -> None:
        t = self.topology
        port = t.balancer.port
        hs = self.haproxies()
        for h in hs:
            h.write_files()
            h.validate()
            h.start()
            self._record_balancer(h)
        # keepalived after HAProxy: its track script would otherwise fail and hold it in FAULT.
        kas = self.keepaliveds()
        for ka in kas:
            ka.write_files()
            ka.validate()
        for ka in kas:
            ka.start()
            self._record_keepalived(ka)
        for h in hs:
            h.wait_all_up(self._backend_names(), timeout=BACKENDS_TIMEOUT)
            report(f"haproxy {h.cfg.dir.name} UP on {h.cfg.address}:{port}")
        if kas:
            holder = self.wait_vip(timeout=3 * t.balancer.advert_int + 10)
            report(f"keepalived: VIP {t.vip_address()}:{port} on {holder}")

    # ------------------------------------------------------------------ balancers

    def vip_holders(self) -> list[str]:
        """Roles of the balancers that have the VIP on their interface now (['lb1'], say)."""
        return [ka.cfg.role for ka in self.keepaliveds() if ka.holds_vip()]

    def vip_holder(self) -> str | None:
        """The one balancer holding the VIP ('lb1' or 'lb2'); None when none or both hold it
        (no VIP, a takeover in progress, or a split brain: see vip_holders())."""
        holders = self.vip_holders()
        return holders[0] if len(holders) == 1 else None

    def wait_vip(self, timeout: float, *, not_on: str | None = None, poll: float = 0.05) -> str:
        """Wait until exactly one balancer (other than `not_on`) holds the VIP; return its role."""
        if self.topology.vip_address() is None:
            raise ClusterStateError(f"cluster '{self.topology.name}' has no VIP")
        deadline = self.clock.now() + timeout
        holders: list[str] = []
        while True:
            holders = self.vip_holders()
            if len(holders) == 1 and holders[0] != not_on:
                return holders[0]
            if self.clock.now() >= deadline:
                break
            self.clock.sleep(poll)
        seen = ", ".join(holders) if holders else "no balancer"
        logs = ", ".join(str(ka.cfg.log_path) for ka in self.keepaliveds())
        raise ComponentError(
            f"the VIP {self.topology.vip_address()} is not on exactly one balancer"
            + (f" other than {not_on}" if not_on else "")
            + f" after {timeout:g} s ({seen} holds it); see {logs}"
        )

    def balancer_kill(self, index: int = 1) -> str:
        """kill -9 HAProxy on balancer `index` (a crash). With a pair, keepalived's track script
        notices within about a second and the peer takes the VIP."""
        h = self.haproxy(index)
        if h is None:
            raise ClusterStateError("this cluster has no balancer")
        held = self.topology.vip_address() is not None and balancer_role(index) in self.vip_holders()
        what = h.kill()
        self._record_balancer(h)
        return f"haproxy {balancer_role(index)} {what}" + (" (it held the VIP)" if held else "")

    def balancer_start(self, index: int = 1, timeout: float = BACKENDS_TIMEOUT) -> str:
        """Start HAProxy on balancer `index` again and wait until it sees every node UP. With a
        pair the VIP stays where it is (nopreempt); this also waits until keepalived there is
        out of FAULT, i.e. a ready backup again (~2 s: its check's `rise`)."""
        h = self.haproxy(index)
        if h is None:
            raise ClusterStateError("this cluster has no balancer")
        role = balancer_role(index)
        if h.alive():
            return f"haproxy {role} already running"
        t0 = time.monotonic()
        h.start()
        self._record_balancer(h)
        h.wait_all_up(self._backend_names(), timeout=timeout)
        ka = self.keepalived(index)
        if ka is not None:
            if not ka.alive():
                ka.start()
                self._record_keepalived(ka)
            # Out of FAULT once its check passes `rise` times: only then can it take the VIP
            # over, so a fault right after this one sees a ready backup.
            c = ka.cfg
            ka.wait_ready(c.check_rise * c.check_interval + 3 * c.advert_int + 5)
        return f"haproxy {role} UP in {time.monotonic() - t0:.1f} s"

    # ------------------------------------------------------------------ down

    def down(
        self, report: Report = _quiet, keep_files: bool = False, keep_remote: bool | None = None
    ) -> list[str]:
        """Stop everything we started and remove namespaces, links and cgroups (local) or our
        files on the machines (ssh). Idempotent. `keep_files` keeps the local cluster directory
        and, over ssh, copies the remote logs into it; `keep_remote` (default: keep_files) keeps
        the files on the machines too."""
        done: list[str] = []
        if self.state:
            for ka in self.keepaliveds():
                what = ka.stop()
                if what != "not running":
                    done.append(f"keepalived {ka.cfg.role} {what}")
            for h in self.haproxies():
                what = h.stop()
                if what != "not running":
                    done.append(f"haproxy {h.cfg.dir.name} {what}")
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
        # The engine's fastest stop that loses nothing still wanted (the datadirs go next unless
        # kept): Galera's graceful stop one node at a time, Group Replication's SIGKILL at once.
        done += self.engine.stop_for_teardown(nodes, keep_data=keep_files)
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
        balancers: list[BalancerView] = []
        for h in self.haproxies():
            k = int(h.cfg.dir.name[2:])
            ka = self.keepalived(k)
            balancers.append(
                BalancerView(
                    index=k,
                    role=h.cfg.dir.name,
                    address=f"{h.cfg.address}:{t.balancer.port}",
                    alive=h.alive(),
                    backends=h.servers(),
                    keepalived_alive=ka.alive() if ka else None,
                    holds_vip=bool(ka and ka.holds_vip()),
                )
            )
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
        )

    # ------------------------------------------------------------------ node operations

    def node_stop(self, index: int) -> str:
        n = self.node(index)
        what = n.stop()
        self.recorded(n)
        return f"n{index} {what}"

    def node_kill(self, index: int) -> str:
        n = self.node(index)
        what = n.kill()
        self.recorded(n)
        return f"n{index} {what}"

    def node_start(self, index: int, timeout: float = JOIN_TIMEOUT) -> str:
        """Start one node: it rejoins the running ones, or bootstraps when none runs and the
        engine's rules allow this node to."""
        n = self.node(index)  # validates the index
        # What an earlier server process of this node left running (a killed donor's SST script
        # and its rsync) would block the start: stopped first, and said (issue 15, item 8).
        stopped = [] if n.alive() else n.stop_strays()
        msg = self.engine.start_node(self, index, timeout)
        if stopped:
            names = ", ".join(sorted(set(stopped)))
            msg += f" (first stopped {len(stopped)} process(es) its earlier server left running: {names})"
        return msg

    def restart_nodes(self, indexes: Sequence[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        """The heal of kill and stop faults: the engine brings the nodes back whatever the
        survivors' state (quorum kept, quorum lost, nobody left)."""
        return self.engine.restart_nodes(self, indexes, timeout)

    def recover(self, indexes: Sequence[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        """The end of the heal of network, pause and throttle faults: nodes that do not come
        back as ready members by themselves are brought back the engine's way (a Group
        Replication member expelled meanwhile rejoins)."""
        return self.engine.recover(self, indexes, timeout)

    def primary(self) -> int | None:
        """The node that takes the writes where one node does (Group Replication's single
        primary, as the members with quorum report it); None where every node writes or
        none is writable now."""
        if self.engine.every_node_writes:
            return None
        for n in self.nodes():
            h = n.health()
            if h is not None and h.writable and h.role == "PRIMARY":
                return n.index
        return None

    def admin_node(self) -> DbNode | None:
        """The node the tool's own DDL and verification setup go to: one that takes writes now
        (a single-primary group's primary wherever it is, after any failover; any ready Galera
        node), else the first running one; None when no node runs. A drill or a prepare must
        start from whatever state the previous one left, never assume node 1 is writable."""
        alive = [n for n in self.nodes() if n.alive()]
        for n in alive:
            h = n.health()
            if h is not None and h.writable:
                return n
        return alive[0] if alive else None

    def settle(self, running: int | None = None, timeout: float = SETTLE_TIMEOUT) -> list[str]:
        """Until nodes 1..running (every node by default) are ready members of one view of that
        size and every running balancer sees them UP: after a fault is healed, before a drill (it
        must not inherit an earlier fault's aftermath) and after node changes. Nodes that are not
        running are started (rejoin, or the engine's cold start), running ones that do not come
        back by themselves are brought back the engine's way (a Group Replication member expelled
        by a fault), and nodes beyond `running` that a cold start brought back are stopped again,
        last first. Returns what happened, one line each; ComponentError past `timeout`."""
        size = running or self.topology.cluster.nodes
        t0 = time.monotonic()

        def left() -> float:
            return max(1.0, timeout - (time.monotonic() - t0))

        beyond = range(self.topology.cluster.nodes, size, -1)
        notes = [self.node_stop(i) for i in beyond if self.node(i).alive()]
        for i in range(1, size + 1):
            if not self.node(i).alive():
                notes.append(f"n{i} was not running; starting it")
                notes.append(self.node_start(i))
        unready = [i for i in range(1, size + 1) if not _ready(self.node(i))]
        if unready:
            notes += self.recover(unready)
        for i in range(1, size + 1):
            self.node(i).wait_ready(left(), expect_size=size)
        notes.append(f"all {size} nodes ready in one view {time.monotonic() - t0:.1f} s after heal")
        # Clients come through the balancers: settled means they see every node UP again too
        # (HAProxy needs `rise` good checks after a node returns).
        backends = [f"n{i}" for i in range(1, size + 1)]
        running_balancers = [h for h in self.haproxies() if h.alive()]
        for h in running_balancers:
            h.wait_all_up(backends, timeout=max(5.0, left()))
        if running_balancers:
            notes.append(f"balancers see every node UP {time.monotonic() - t0:.1f} s after heal")
        return notes

    def node_restart(self, index: int) -> str:
        stopped = self.node_stop(index)
        return f"{stopped}; {self.node_start(index)}"

    def start_all(self, report: Report = _quiet) -> list[str]:
        """Cold start from the most advanced node, then the balancers that are not running."""
        out = self.engine.start_all(self, report)
        for h in self.haproxies():
            if not h.alive():
                h.start()
                self._record_balancer(h)
        for ka in self.keepaliveds():
            if not ka.alive():
                ka.start()
                self._record_keepalived(ka)
        return out

    def stop_all(self) -> list[str]:
        """Graceful stop of every node, in the engine's order."""
        return [self.node_stop(n.index) for n in self.engine.stop_order(self.nodes())]


def _ready(n: DbNode) -> bool:
    h = n.health()
    return h is not None and h.ready
