"""A cluster: components over hosts, with persisted state so every command can find it again.

State lives in `<home>/clusters/<name>/state.json` and is written after every step, so a killed
`up` can be torn down by `down`, which also finds leftovers by name prefix when state is lost.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterbench.clock import Clock, SystemClock
from clusterbench.components.galera.config import NodeConfig
from clusterbench.components.galera.node import Credentials, GaleraNode, account_sql
from clusterbench.components.galera.status import GraState, WsrepStatus
from clusterbench.components.haproxy.component import HAProxy
from clusterbench.components.haproxy.config import HAProxyConfig
from clusterbench.components.haproxy.status import BackendServer
from clusterbench.components.keepalived.component import Keepalived
from clusterbench.components.keepalived.config import KeepalivedConfig
from clusterbench.errors import ClusterStateError, ComponentError
from clusterbench.hosts import process
from clusterbench.hosts.base import Machine, ProcessRef
from clusterbench.hosts.local import LocalHost, NetnsHost
from clusterbench.hosts.ssh import copy_tree
from clusterbench.providers import preflight
from clusterbench.providers.cgroups import CgroupV1
from clusterbench.providers.naming import Names
from clusterbench.providers.network import HostPlan, down_plan, up_plan
from clusterbench.providers.ssh import SshProvider
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.spec.topology import Topology

log = logging.getLogger(__name__)

DEFAULT_HOME = Path("/var/lib/clusterbench")
BALANCER_ROLE = "lb1"
JOIN_TIMEOUT = 180.0
BACKENDS_TIMEOUT = 30.0


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
    )


@dataclass
class NodeView:
    index: int
    address: str
    alive: bool
    wsrep: WsrepStatus | None


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
    def __init__(self, topology: Topology, home: Path | None = None, clock: Clock | None = None) -> None:
        self.topology = topology
        self.home = home or home_dir()
        self.clock = clock or SystemClock()
        self.names = Names(topology.name)
        self.dir = clusters_dir(self.home) / topology.name
        self.state: dict[str, Any] = {}
        self.creds: Credentials | None = None
        self.cgroups = CgroupV1()
        self.local = LocalHost()
        # Over ssh the hosts are the inventory's machines; locally, namespaces on this machine.
        self.ssh: SshProvider | None = SshProvider(topology, self.home) if topology.remote else None

    # ------------------------------------------------------------------ hosts

    @property
    def remote(self) -> bool:
        return self.ssh is not None

    def host(self, role: str) -> Machine:
        """Where role n<i>, lb<k> or c<k> runs."""
        if self.ssh is not None:
            return self.ssh.host(role)
        return NetnsHost(self.names.netns(role))

    def role_dir(self, role: str) -> Path:
        """A role's files: the local cluster directory, or `<base_dir>/<cluster>/<role>` remotely."""
        if self.ssh is not None:
            return self.ssh.role_dir(role)
        return self.dir / role

    def client_hosts(self) -> list[Machine]:
        """Hosts that run load clients: the local client namespaces (`[clients] hosts = K`) or the
        inventory's hosts with role client; [] when there are none (load then runs here)."""
        if self.ssh is not None:
            return list(self.ssh.client_hosts())
        return [NetnsHost(self.names.netns(f"c{k}")) for k in self.topology.client_indexes()]

    def interface(self, role: str) -> str:
        """The interface a role's host reaches its peers on (eth0 inside a local namespace)."""
        if self.ssh is not None:
            return self.ssh.interface(role)
        return "eth0"

    def close(self) -> None:
        """Close SSH connections (nothing to do locally)."""
        if self.ssh is not None:
            self.ssh.close()

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

    # ------------------------------------------------------------------ components

    def node_dir(self, index: int) -> Path:
        return self.role_dir(f"n{index}")

    def node_config(self, index: int) -> NodeConfig:
        t = self.topology
        return NodeConfig(
            cluster_name=t.name,
            index=index,
            address=t.node_address(index),
            peers=tuple(t.node_address(i) for i in t.node_indexes()),
            dir=self.node_dir(index),
            settings=t.mariadb,
        )

    def node(self, index: int) -> GaleraNode:
        if index not in self.topology.node_indexes():
            raise ClusterStateError(
                f"node {index} does not exist; cluster '{self.topology.name}' "
                f"has nodes 1-{self.topology.cluster.nodes}"
            )
        st = self.state.get("nodes", {}).get(str(index), {})
        proc = ProcessRef.from_json(st["proc"]) if st.get("proc") else None
        check = ProcessRef.from_json(st["check"]) if st.get("check") else None
        return GaleraNode(
            self.node_config(index),
            self.host(self.names.node_role(index)),
            self.credentials(),
            proc=proc,
            check_proc=check,
            clock=self.clock,
        )

    def nodes(self) -> list[GaleraNode]:
        return [self.node(i) for i in self.topology.node_indexes()]

    def _record_node(self, n: GaleraNode) -> None:
        entry = self.state.setdefault("nodes", {}).setdefault(str(n.index), {})
        entry["proc"] = n.proc.to_json() if n.proc else None
        entry["check"] = n.check_proc.to_json() if n.check_proc else None
        self.save()

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
            # Over ssh there is no subnet plan: the VIP is a host address of its own.
            prefixlen=32 if self.remote else t.network.prefixlen,
            haproxy_socket=HAProxyConfig.stats_socket_in(self.role_dir(role)),
            advert_int=t.balancer.advert_int,
            interface=self.interface(role) if self.remote else "eth0",
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

    def _host_plans(self) -> list[HostPlan]:
        t = self.topology
        plans = [
            HostPlan(self.names.node_role(i), t.node_address(i), t.node_resources(i).bandwidth)
            for i in t.node_indexes()
        ]
        for k in t.balancer_indexes():
            plans.append(HostPlan(balancer_role(k), t.balancer_address(k)))
        for k in t.client_indexes():
            plans.append(HostPlan(f"c{k}", t.client_host_address(k)))
        return plans

    def up(self, report: Report = _quiet) -> dict[str, float]:
        """Bring the cluster up. On any failure or interrupt, tear down what was started."""
        timings: dict[str, float] = {}
        t0 = time.monotonic()
        if self.ssh is not None:
            from clusterbench.providers import ssh_check  # noqa: PLC0415 - only the ssh provider needs it

            ssh_check.check_up(self.topology, self.home, self.ssh)
        else:
            preflight.check_up(self.topology, self.home, self.local)
        # A failed earlier `up` keeps its files (logs) for reading; a new one starts from nothing.
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.creds = generate_credentials()
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o755)
        self.local.put_file(self.secrets_path, json.dumps(self.creds.to_json()) + "\n", mode=0o600)
        self.state = {
            "name": self.topology.name,
            "topology": self.topology.model_dump(mode="json"),
            "phase": "creating",
            "created_at": time.time(),
            "nodes": {},
        }
        self.save()
        try:
            if self.ssh is not None:
                # Our role directories only (<base_dir>/<cluster>/<role>): a failed earlier up
                # may have left files there; like the local cluster directory, start from nothing.
                self.ssh.remove_files()
                made = self.ssh.prepare()
                report(f"hosts: {len(self.topology.hosts)} machines over ssh, {len(made)} role directories")
            else:
                self._up_network(report)
            timings["network"] = time.monotonic() - t0
            self._up_nodes(report, timings, t0)
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

    def _up_network(self, report: Report) -> None:
        t = self.topology
        hosts = self._host_plans()
        for argv in up_plan(
            self.names, f"{t.bridge_address()}/{t.network.prefixlen}", hosts, t.network.prefixlen
        ):
            self.local.run(argv)
        self.state["network"] = {
            "netns": [self.names.netns(h.role) for h in hosts],
            "bridge": self.names.bridge,
        }
        self.save()
        for i in t.node_indexes():
            r = t.node_resources(i)
            if r.cpu_quota is not None or r.cpuset is not None:
                self.cgroups.create(self.names.cgroup(self.names.node_role(i)), r.cpu_quota, r.cpuset)
        report(
            f"network: bridge {self.names.bridge} {t.bridge_address()}/{t.network.prefixlen}, "
            f"{len(hosts)} namespaces"
        )

    def _apply_cgroup(self, n: GaleraNode) -> None:
        r = self.topology.node_resources(n.index)
        if (r.cpu_quota is not None or r.cpuset is not None) and n.proc is not None:
            self.cgroups.attach(self.names.cgroup(self.names.node_role(n.index)), n.proc.pid)

    def _start_node(
        self, n: GaleraNode, *, bootstrap: bool = False, start_position: str | None = None
    ) -> None:
        n.start(bootstrap=bootstrap, start_position=start_position)
        self._apply_cgroup(n)
        self._record_node(n)

    def _up_nodes(self, report: Report, timings: dict[str, float], t0: float) -> None:
        nodes = self.nodes()
        for n in nodes:
            n.write_files()
        first = nodes[0]
        first.install_db()
        first.run_bootstrap_sql(account_sql(self.credentials()))
        # With provider.seed = "sst" joiners start empty and each takes a full SST from a donor,
        # machine to machine (for a controller far from the machines).
        if self.ssh is None or self.topology.provider.seed == "copy":
            self._seed(first, nodes[1:], report)
        timings["seed"] = time.monotonic() - t0
        self._start_node(first, bootstrap=True)
        first.wait_synced(60)
        report(f"n1 bootstrapped ({time.monotonic() - t0:.1f} s)")
        # Start joiners one after another, each as soon as the previous one is in the view:
        # starting them all at once makes Galera retry the view for several seconds.
        for k, n in enumerate(nodes[1:], start=2):
            self._start_node(n)
            first.wait_in_view(k, JOIN_TIMEOUT, joiner=n)
        for n in nodes[1:]:
            n.wait_synced(JOIN_TIMEOUT, expect_size=len(nodes))
            report(f"n{n.index} Synced ({time.monotonic() - t0:.1f} s)")
        timings["nodes_synced"] = time.monotonic() - t0
        for n in nodes:
            n.start_clustercheck()
            self._record_node(n)

    def _seed(self, first: GaleraNode, joiners: list[GaleraNode], report: Report) -> None:
        # Seed: bootstrap node 1 once and stop it cleanly so InnoDB and grastate.dat both hold the
        # same uuid:seqno, then give every other node a copy. Joiners then need only an IST of a
        # few cluster-change events instead of a full SST each (InnoDB's own wsrep position wins
        # over grastate.dat, so a copy of a never-started datadir would still need an SST).
        self._start_node(first, bootstrap=True)
        first.wait_synced(60)
        first.stop(timeout=60)
        seed = first.grastate()
        if seed is None or seed.seqno < 0:
            raise ComponentError(
                f"node n1 did not record its position at shutdown; see {first.cfg.error_log}"
            )
        excludes = ["galera.cache", "*.pid"]
        if self.ssh is None:
            for n in joiners:
                self.local.run(
                    ["rsync", "-a", *(f"--exclude={e}" for e in excludes),
                     f"{first.cfg.datadir}/", f"{n.cfg.datadir}/"]
                )  # fmt: skip
        elif joiners:
            # No shared filesystem: one gzip'd tar stream from n1's machine, fanned out through
            # this machine to every joiner's (provider.seed = "copy").
            sent = copy_tree(
                self.ssh.host("n1"),
                first.cfg.datadir,
                [(self.ssh.host(f"n{n.index}"), n.cfg.datadir) for n in joiners],
                owner="mysql",
                excludes=excludes,
            )
            report(f"n1's datadir copied to {len(joiners)} joiners ({sent / 1e6:.1f} MB compressed)")
        for n in joiners:
            n.set_grastate(GraState(seed.uuid, seed.seqno, safe_to_bootstrap=False))

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
        nodes = self.nodes() if self.state and self.creds is not None else []
        for n in nodes:
            n.stop_clustercheck()
        # One at a time, last node first: a node that leaves alone is gone in ~0.1 s, while nodes
        # leaving together wait out evs.suspect_timeout for each other (5 s by default).
        for n in reversed(nodes):
            what = n.stop(timeout=30)
            if what != "not running":
                done.append(f"n{n.index} {what}")
        if self.ssh is not None:
            done += self._down_remote(keep_files, keep_files if keep_remote is None else keep_remote)
        else:
            done += self._down_local()
        if not keep_files and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        elif self.state_path.exists():
            self.state_path.unlink()
        for line in done:
            report(line)
        return done

    def _down_local(self) -> list[str]:
        done = self._kill_namespace_leftovers()
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

    def _down_remote(self, keep_files: bool, keep_remote: bool) -> list[str]:
        """Over ssh: the machines stay as they were before `up`, minus our processes and files
        (never any `ip netns`, link or cgroup cleanup there). With keep_files the remote files
        stay and the logs are copied into the local cluster directory."""
        assert self.ssh is not None
        done = self.ssh.kill_leftovers()
        if keep_files:
            self.dir.mkdir(parents=True, exist_ok=True)
            got = self.ssh.collect_logs(self.dir / "remote-logs")
            if got:
                done.append(f"copied {len(got)} remote logs to {self.dir / 'remote-logs'}")
        if not keep_remote:
            removed = self.ssh.remove_files()
            done.append(f"removed our files on {len({r.split(':')[0] for r in removed})} machine(s)")
        self.ssh.close()
        return done

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

    # ------------------------------------------------------------------ status

    def status(self) -> ClusterStatus:
        t = self.topology
        views = []
        for n in self.nodes():
            views.append(NodeView(n.index, n.cfg.address, n.alive(), n.status()))
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
        self._record_node(n)
        return f"n{index} {what}"

    def node_kill(self, index: int) -> str:
        n = self.node(index)
        what = n.kill()
        self._record_node(n)
        return f"n{index} {what}"

    def node_start(self, index: int, timeout: float = JOIN_TIMEOUT) -> str:
        """Start one node. If others run, it rejoins (IST when the gap is in their gcache);
        if none runs, it may only bootstrap when grastate says it is safe to."""
        n = self.node(index)
        if n.alive():
            return f"n{index} already running"
        others = [o for o in self.nodes() if o.index != index and o.alive()]
        if not others:
            g = n.grastate()
            if g is None or not g.safe_to_bootstrap:
                raise ClusterStateError(
                    f"no node of '{self.topology.name}' is running and n{index} is not safe to bootstrap; "
                    "run `clusterbench start` to cold-start from the most advanced node"
                )
            self._start_node(n, bootstrap=True)
            n.wait_synced(timeout)
            return f"n{index} bootstrapped a new Primary component"
        return self._rejoin(n, timeout)

    def _rejoin(self, n: GaleraNode, timeout: float) -> str:
        position = None
        g = n.grastate()
        if g is not None and g.crashed:
            position = n.recover_position()
        offset = n.error_log_size()
        t0 = time.monotonic()
        # Never --wsrep-new-cluster on a rejoin: that would fork a second cluster.
        self._start_node(n, start_position=position)
        n.wait_synced(timeout)
        n.start_clustercheck()
        self._record_node(n)
        kind = n.join_kind_since(offset)
        how = f" after recovering {position}" if position else ""
        return f"n{n.index} rejoined by {kind}{how} in {time.monotonic() - t0:.1f} s"

    def restart_nodes(self, indexes: tuple[int, ...] | list[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        """Restart killed or stopped nodes (the heal of kill and stop faults).

        - No node runs any more (kill all): a cold start from the safe or most advanced node.
        - A Primary component survives: rejoin one by one (each by IST when its gcache gap allows).
        - Survivors lost quorum (non-Primary): start every killed node at once. Galera re-forms the
          Primary component by itself (pc.recovery, gvwstate.dat) once every member of the last
          Primary view is back; started one at a time, the first would wait for the others forever.
          We never bootstrap a live non-Primary cluster: that would be the tool picking a winner.
        """
        nodes = self.nodes()
        if not any(n.alive() for n in nodes):
            return self.start_all()
        if self._survivors_primary():
            return [self.node_start(i) for i in indexes]
        out = []
        started = []
        for i in indexes:
            n = self.node(i)
            if n.alive():
                continue
            g = n.grastate()
            pos = n.recover_position() if g is not None and g.crashed else None
            self._start_node(n, start_position=pos)
            started.append(n)
            out.append(f"n{i} started" + (f" after recovering {pos}" if pos else ""))
        t0 = time.monotonic()
        # The component re-forms from the members of the last Primary view: the survivors and the
        # nodes started here. A node stopped on purpose before the fault (an experiment running
        # fewer nodes than the cluster has) left that view and is not waited for.
        members = [n for n in self.nodes() if n.alive()]
        for n in members:
            n.wait_synced(timeout, expect_size=len(members))
        took = time.monotonic() - t0
        out.append(f"Primary component re-formed by itself with {len(members)} nodes in {took:.1f} s")
        for n in started:
            n.start_clustercheck()
            self._record_node(n)
        return out

    def _survivors_primary(self) -> bool:
        """Do the running nodes form a Primary component of their own?

        Right after a crash the survivors still report the old view (dead members included, still
        Primary) until evs.suspect_timeout has passed: wait until their view counts only live
        members, or they have lost Primary, bounded by evs.inactive_timeout."""
        alive = [n for n in self.nodes() if n.alive()]
        deadline = self.clock.now() + self.topology.mariadb.evs_inactive_timeout + 10
        while True:
            views = [n.status() for n in alive]
            if any(st is not None and st.primary and st.cluster_size <= len(alive) for st in views):
                return True
            if all(st is None or not st.primary for st in views) or self.clock.now() >= deadline:
                return False
            self.clock.sleep(0.2)

    def node_restart(self, index: int) -> str:
        stopped = self.node_stop(index)
        return f"{stopped}; {self.node_start(index)}"

    def start_all(self, report: Report = _quiet) -> list[str]:
        """Cold start: bootstrap from the node that is safe to (or the most advanced one after a
        crash of all), then join the others one by one."""
        nodes = self.nodes()
        if any(n.alive() for n in nodes):
            running = [n for n in nodes if n.alive()]
            return [self.node_start(n.index) for n in nodes if not n.alive()] or [
                f"all {len(running)} nodes already running"
            ]
        out: list[str] = []
        states = {n.index: n.grastate() for n in nodes}
        chosen = next((i for i, g in states.items() if g is not None and g.safe_to_bootstrap), None)
        if chosen is None:
            # Every node crashed: recover positions and bootstrap from the highest seqno.
            best: tuple[int, int] | None = None
            for n in nodes:
                pos = n.recover_position()
                if pos is None:
                    continue
                seqno = int(pos.rsplit(":", 1)[1])
                out.append(f"n{n.index} recovered position {pos}")
                if best is None or seqno > best[1]:
                    best = (n.index, seqno)
            if best is None:
                raise ComponentError("no node could recover its position; see the nodes' recover.log")
            chosen = best[0]
            g = states[chosen] or GraState(str(uuid.UUID(int=0)), -1, False)
            self.node(chosen).set_grastate(GraState(g.uuid, g.seqno, safe_to_bootstrap=True))
            out.append(f"n{chosen} has the highest seqno ({best[1]}); marked safe to bootstrap")
        first = self.node(chosen)
        self._start_node(first, bootstrap=True)
        first.wait_synced(JOIN_TIMEOUT)
        first.start_clustercheck()
        self._record_node(first)
        out.append(f"n{chosen} bootstrapped")
        report(out[-1])
        for n in nodes:
            if n.index != chosen:
                out.append(self._rejoin(self.node(n.index), JOIN_TIMEOUT))
                report(out[-1])
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
        """Graceful stop of every node in reverse order: the last one to stop (n1) is the one
        grastate marks safe to bootstrap, so a later cold start begins there."""
        return [self.node_stop(n.index) for n in reversed(self.nodes())]


def _alive_pid(pid: int) -> bool:
    """A process in our namespaces we hold no start time for: alive unless gone or a zombie."""
    return process.state(pid) not in (None, "Z", "X")
