"""Topology: the hosts of one cluster, their roles, resources and server settings.

Pure: loading a file returns a validated `Topology` plus warnings, or raises `InputError` whose
message names the file, the field and what to do. Nothing here touches the machine.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from clusterbench.errors import InputError
from clusterbench.spec.balancer import BalancerSettings, pair_problem
from clusterbench.spec.engine import EngineSettings, MySQLSettings, check_sections, galera_key_error
from clusterbench.spec.fields import checked, is_ipv4
from clusterbench.spec.messages import parse_toml as parse_toml  # re-exported: many readers
from clusterbench.spec.messages import validation_messages as validation_messages
from clusterbench.spec.resources import RATE_RE as RATE_RE  # for the fault and experiment specs
from clusterbench.spec.resources import Resources
from clusterbench.spec.resources import Strict as _Strict
from clusterbench.spec.web import WebSettings
from clusterbench.spec.webplan import WebPlan

MAX_NODES = 9
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,7}$")
SIZE_RE = re.compile(r"^[0-9]+[KMG]?$")

# Host offsets inside the subnet. Fixed so addresses are predictable in docs and reports:
# bridge .1, lb1 .2, the keepalived VIP .3, lb2 .4, node N .10+N. lb1 and the nodes keep the
# addresses they had before balancer pairs existed; the VIP sits next to lb1 so `.3` reads as
# "the balancer" in a pair the way `.2` does with one HAProxy.
BRIDGE_OFFSET = 1
BALANCER_OFFSETS = (2, 4)  # lb1, lb2
BALANCER_OFFSET = BALANCER_OFFSETS[0]
VIP_OFFSET = 3
NODE_OFFSET = 10
# Local client namespaces (`[clients] hosts = K`): client k at .30+k, clear of the nodes (.11-.19)
# and inside the smallest subnet allowed (/26: host numbers up to .62).
CLIENT_OFFSET = 30
MAX_CLIENTS = 16
BALANCER_VIP = "the balancer VIP"
FRONT_VIP = "the web front VIP"
HOST_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,31}$")
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,15}$")
USER_RE = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
ROLES = ("db", "balancer", "client")


# The smallest datadir file system of its own a node may get (system tables, redo log, gcache...).
MIN_DATADIR_BYTES = 192 * 1024 * 1024
# A datadir file system of its own without a datadir_size (a tmpfs uses memory only as filled; a
# loop device's image file is sparse).
DEFAULT_DATADIR_SIZE = {"tmpfs": "1G", "loop": "2G"}


def size_bytes(v: str) -> int:
    """'64M' -> 67108864 (K, M, G are powers of 1024; no suffix: bytes)."""
    unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(v[-1:], 1)
    return int(v[:-1] if unit > 1 else v) * unit


def _room_for_a_datadir(v: str) -> str:
    if size_bytes(v) < MIN_DATADIR_BYTES:
        raise ValueError(
            f"'{v}' is too small for a datadir (system tables, redo log and gcache need room); "
            f"give at least {MIN_DATADIR_BYTES >> 20}M"
        )
    return v


def _absolute(v: str, example: str = "/var/lib/clusterbench/remote") -> str:
    if not v.startswith("/") or "/.." in v or len(v.rstrip("/")) < 2:
        raise ValueError(f"'{v}' must be an absolute path below / like {example}")
    return v.rstrip("/")


ServerSize = Annotated[str, checked(SIZE_RE.match, "is not a size like '64M' or '1G'")]
DatadirSize = Annotated[
    str, checked(SIZE_RE.match, "is not a size like '256M' or '1G'"), AfterValidator(_room_for_a_datadir)
]
RemoteDir = Annotated[str, AfterValidator(_absolute)]
ClusterName = Annotated[
    str,
    checked(
        NAME_RE.match,
        "must be 1-8 characters, lowercase letters and digits, starting with a letter "
        "(it prefixes interface names, which Linux limits to 15 characters)",
    ),
]
HostName = Annotated[
    str, checked(HOST_NAME_RE.match, "must be 1-32 characters: lowercase letters, digits, '.', '_' or '-'")
]
# Galera, HAProxy and keepalived are configured with the address itself: no host names.
HostAddress = Annotated[str, checked(is_ipv4, "is not an IPv4 address like 10.0.0.11")]
UserName = Annotated[str, checked(USER_RE.match, "is not a user name")]
InterfaceName = Annotated[str, checked(IFNAME_RE.match, "is not a network interface name like eth0")]


class NodeOverride(Resources):
    index: int = Field(ge=1, le=MAX_NODES)
    datadir_size: DatadirSize | None = Field(
        None,
        description="give this node's datadir a file system of its own of this size (a tmpfs the "
        "tool mounts at up and removes at down), e.g. '256M': what the disk-full fault fills",
    )
    datadir_layer: Literal["none", "faultfs"] | None = Field(
        None,
        description="'faultfs': this node's datadir sits on the power-loss layer (cluster.datadir_layer "
        "for every node)",
    )
    datadir_fs: Literal["host", "tmpfs", "loop"] | None = Field(
        None,
        description="'loop': this node's datadir on an ext4 file system of its own on a loop device "
        "(a block device of this node's alone: telemetry watches it, throttle-disk slows it), "
        "cluster.datadir_fs for every node; 'tmpfs' is what datadir_size alone gives",
    )
    # This node's own server settings, over the cluster's [mariadb] / [mysql] (a node with a
    # smaller buffer pool, fewer applier threads): validated like those, flagged in reports.
    mariadb: dict[str, Any] | None = None
    mysql: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _size_needs_a_file_system(self) -> NodeOverride:
        if self.datadir_fs == "host" and self.datadir_size:
            raise ValueError(
                f"node {self.index}: datadir_size is the size of a file system of its own; with "
                'datadir_fs = "host" remove it, or set datadir_fs = "tmpfs" or "loop"'
            )
        return self


class MariaDBSettings(_Strict):
    """Server settings. Defaults are small so that 9 nodes fit in memory on one machine."""

    innodb_buffer_pool_size: ServerSize = "64M"
    innodb_log_file_size: ServerSize = "32M"
    # 2 = write at commit, flush once a second: survives a process crash (kill -9), not a power cut.
    innodb_flush_log_at_trx_commit: Literal[0, 1, 2] = 2
    wsrep_slave_threads: int = Field(2, ge=1, le=64)
    gcache_size: ServerSize = "64M"
    max_connections: int = Field(300, ge=10, le=10000)
    sst_method: Literal["rsync", "mariabackup"] = "rsync"
    # Galera failure detection (seconds). Defaults are Galera's; RECIPES §3 shows 1.5/3 halves the stall.
    evs_suspect_timeout: float = Field(5.0, gt=0)
    evs_inactive_timeout: float = Field(15.0, gt=0)
    evs_keepalive_period: float = Field(1.0, gt=0)
    evs_inactive_check_period: float = Field(0.5, gt=0)
    extra: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @field_validator("extra")
    @classmethod
    def _extra(cls, v: dict[str, str | int | float | bool]) -> dict[str, str | int | float | bool]:
        for key in v:
            bad = galera_key_error(key)
            if bad is not None:
                raise ValueError(bad)
        return v

    @model_validator(mode="after")
    def _evs(self) -> MariaDBSettings:
        if self.evs_inactive_timeout < self.evs_suspect_timeout:
            raise ValueError("evs_inactive_timeout must be >= evs_suspect_timeout (Galera refuses otherwise)")
        # Galera rejects a keepalive of a third of the suspect timeout or more at start-up
        # (measured: suspect 2 s -> "evs.keepalive_period ... out of range [PT0.1S,PT0.666667S)").
        if not 0.1 <= self.evs_keepalive_period < self.evs_suspect_timeout / 3:
            raise ValueError(
                f"evs_keepalive_period must be at least 0.1 and below evs_suspect_timeout / 3 "
                f"(= {self.evs_suspect_timeout / 3:.3g}); Galera refuses to start otherwise"
            )
        return self


class ClusterSettings(_Strict):
    name: ClusterName = "lab"
    nodes: int = Field(3, ge=1, le=MAX_NODES)
    subnet: str = "198.18.0.0/24"
    # 'faultfs': every node's datadir on the FUSE layer that can lose what was not fsynced (the
    # power-loss fault) and slow or fail the disk (disk-slow, disk-error); off by default: it
    # costs throughput (docs/faultfs.md)
    datadir_layer: Literal["none", "faultfs"] = "none"
    # Where every node's datadir lives: 'host' (the host's own file system), 'tmpfs' or 'loop' (a
    # file system of its own, of datadir_size; loop: ext4 on a loop device, a block device of the
    # node's alone, what throttle-disk slows). A [[node]]'s datadir_fs wins.
    datadir_fs: Literal["host", "tmpfs", "loop"] = "host"
    # 'faketime': every server starts under libfaketime with a wall clock the clock-skew fault
    # can shift (engines/fakeclock.py); off by default
    clock: Literal["system", "faketime"] = "system"

    @field_validator("subnet")
    @classmethod
    def _subnet(cls, v: str) -> str:
        try:
            net = ipaddress.IPv4Network(v, strict=True)
        except ValueError as exc:
            raise ValueError(f"'{v}' is not an IPv4 network like 198.18.0.0/24 ({exc})") from None
        if net.prefixlen > 26:
            raise ValueError(f"'{v}' is too small; use a /26 or larger (nodes use host numbers 11-19)")
        return v


class ProviderSettings(_Strict):
    """Where the hosts come from: `local` makes namespaces on this machine, `ssh` attaches to the
    machines listed in [[hosts]] (it never creates or destroys them)."""

    kind: Literal["local", "ssh"] = "local"
    # accept-new: record an unknown host key in <home>/known_hosts, refuse a changed one;
    # strict: only keys already in that file or ~/.ssh/known_hosts.
    host_keys: Literal["accept-new", "strict"] = "accept-new"
    # Node and balancer files on the remote machines: <base_dir>/<cluster>/<role>.
    base_dir: RemoteDir = "/var/lib/clusterbench/remote"
    connect_timeout: float = Field(10.0, gt=0, le=120)
    # How joiners get their first datadir at `up`: "copy" streams node 1's seeded datadir through
    # this machine (joiners then need only an IST), "sst" lets each joiner take a full SST from a
    # donor, machine to machine (better when this machine is far from the cluster).
    seed: Literal["copy", "sst"] = "copy"
    # Group Replication: where the MySQL root file system is on the remote machines ("": the same
    # path as on this machine, CLUSTERBENCH_ROOTFS or /var/lib/clusterbench/rootfs/mysql). A host
    # whose own mysqld has Group Replication uses that instead. `provision` fills it.
    rootfs: str = ""

    @field_validator("rootfs")
    @classmethod
    def _rootfs(cls, v: str) -> str:
        return _absolute(v, "/var/lib/clusterbench/rootfs/mysql") if v else v


class InventoryHost(_Strict):
    """One existing machine reached over SSH, with the roles it plays."""

    name: HostName
    address: HostAddress
    user: UserName = "root"
    port: int = Field(22, ge=1, le=65535)
    key: str | None = None
    roles: list[Literal["db", "balancer", "client"]] = Field(min_length=1)
    base_dir: RemoteDir | None = None
    interface: InterfaceName | None = None

    @field_validator("roles")
    @classmethod
    def _roles(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("a role is listed twice; one host runs at most one node and one balancer")
        return v


class ClientSettings(_Strict):
    """Load generators. Locally, `hosts = K` makes K client namespaces cb-<cluster>-c<k> on the
    bridge (client k at subnet host .30+k); over ssh, clients are the [[hosts]] with role client."""

    hosts: int = Field(0, ge=0, le=MAX_CLIENTS)


class Topology(_Strict, WebPlan):
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    engine: EngineSettings = Field(default_factory=EngineSettings)
    resources: Resources = Field(default_factory=Resources)
    node: list[NodeOverride] = Field(default_factory=list)
    # Server settings of the engine: [mariadb] for Galera, [mysql] for Group Replication.
    mariadb: MariaDBSettings = Field(default_factory=MariaDBSettings)
    mysql: MySQLSettings = Field(default_factory=MySQLSettings)
    balancer: BalancerSettings = Field(default_factory=BalancerSettings)
    provider: ProviderSettings = Field(default_factory=ProviderSettings)
    hosts: list[InventoryHost] = Field(default_factory=list)
    clients: ClientSettings = Field(default_factory=ClientSettings)
    web: WebSettings = Field(default_factory=WebSettings)

    @model_validator(mode="before")
    @classmethod
    def _engine_sections(cls, data: Any) -> Any:
        """A Galera setting under Group Replication (or the reverse) is refused, naming it."""
        if isinstance(data, dict):
            check_sections(data, MariaDBSettings().model_dump(mode="json"))
        return data

    @model_validator(mode="before")
    @classmethod
    def _nodes_from_inventory(cls, data: Any) -> Any:
        """Over ssh, cluster.nodes is the number of db hosts unless it is given."""
        if not isinstance(data, dict):
            return data
        provider = data.get("provider")
        hosts = data.get("hosts")
        if not (isinstance(provider, dict) and provider.get("kind") == "ssh" and isinstance(hosts, list)):
            return data
        cluster = data.get("cluster", {})
        if isinstance(cluster, dict) and "nodes" not in cluster:
            dbs = sum(1 for h in hosts if isinstance(h, dict) and "db" in (h.get("roles") or []))
            if 1 <= dbs <= MAX_NODES:
                data = {**data, "cluster": {**cluster, "nodes": dbs}}
        return data

    @model_validator(mode="after")
    def _node_settings(self) -> Topology:
        """A node's own server settings: in the engine's section, valid like the cluster's."""
        section = self.server_section()
        for o in self.node:
            other = "mariadb" if section == "mysql" else "mysql"
            if getattr(o, other):
                raise ValueError(
                    f"node {o.index}: {other} settings but engine.kind = '{self.engine.kind}'; "
                    f"give this node's settings as node.{section}"
                )
            own = getattr(o, section)
            if not own:
                continue
            base = getattr(self, section)
            try:
                type(base).model_validate({**base.model_dump(), **own})
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(x) for x in err["loc"])
                raise ValueError(
                    f"node {o.index}: {section}.{field}: {str(err['msg']).removeprefix('Value error, ')}"
                ) from None
        return self

    @model_validator(mode="after")
    def _inventory(self) -> Topology:
        if self.provider.kind == "local":
            if self.hosts:
                raise ValueError(
                    "hosts: [[hosts]] needs provider.kind = 'ssh' (the local provider makes its own)"
                )
            return self
        if self.clients.hosts:
            raise ValueError(
                "clients.hosts is for the local provider; "
                "over ssh give client machines role 'client' in [[hosts]]"
            )
        layers = [self.cluster.datadir_layer, *(o.datadir_layer or "none" for o in self.node)]
        if any(x != "none" for x in layers):
            raise ValueError(
                "datadir_layer: the power-loss layer is for the local provider (cb-faultfs is built on "
                "this machine only); remove it from an ssh topology"
            )
        limits = ("cpu_quota", "cpuset", "bandwidth")
        if any(getattr(o, k) is not None for o in [self.resources, *self.node] for k in limits):
            raise ValueError(
                "resources / node limits (cpu_quota, cpuset, bandwidth) are for the local provider; "
                "over ssh use throttle-link faults or limit the machines themselves"
            )
        seen: set[str] = set()
        for h in self.hosts:
            if h.name in seen:
                raise ValueError(f"hosts: name '{h.name}' is given twice")
            seen.add(h.name)
        dbs = self.db_hosts()
        if not dbs:
            raise ValueError("hosts: no host has role 'db'; provider.kind = 'ssh' needs at least one")
        if len(dbs) > MAX_NODES:
            raise ValueError(f"hosts: {len(dbs)} hosts have role 'db'; at most {MAX_NODES}")
        if self.cluster.nodes != len(dbs):
            raise ValueError(
                f"cluster.nodes = {self.cluster.nodes} but {len(dbs)} hosts have role 'db'; "
                "remove cluster.nodes (it follows the inventory) or fix the roles"
            )
        lbs = self.balancer_hosts()
        b = self.balancer
        if b.kind == "none" and lbs:
            raise ValueError("hosts: a host has role 'balancer' but balancer.kind = 'none'")
        if b.kind == "haproxy" and len(lbs) != b.count:
            if not lbs:
                raise ValueError(
                    "hosts: no host has role 'balancer'; add one or set balancer.kind = 'none'"
                )
            raise ValueError(
                f"hosts: {len(lbs)} hosts have role 'balancer' but balancer.count = {b.count}; "
                "a keepalived pair is count = 2 with two balancer hosts"
            )
        return self

    @model_validator(mode="after")
    def _overrides(self) -> Topology:
        seen: set[int] = set()
        for o in self.node:
            if o.index > self.cluster.nodes:
                raise ValueError(f"node.index {o.index} is larger than cluster.nodes ({self.cluster.nodes})")
            if o.index in seen:
                raise ValueError(f"node.index {o.index} is given twice")
            seen.add(o.index)
        return self

    @model_validator(mode="after")
    def _balancer_pair(self) -> Topology:
        b = self.balancer
        bad = pair_problem(b, "balancer")
        if bad:
            raise ValueError(bad)
        if self.provider.kind == "ssh":
            if b.count == 2 and not isinstance(b.vip, str):
                raise ValueError(
                    "balancer.vip must be an address (e.g. vip = \"10.0.0.100\") with provider.kind = 'ssh': "
                    "there is no subnet plan to take it from"
                )
            if isinstance(b.vip, str) and b.vip in {h.address for h in self.hosts}:
                raise ValueError(f"balancer.vip {b.vip} is already the address of a host in [[hosts]]")
            return self
        if isinstance(b.vip, str):
            self._check_vip(b.vip, "balancer.vip", BALANCER_VIP)
        return self

    @model_validator(mode="after")
    def _web(self) -> Topology:
        w = self.web
        bad = w.problem()
        if bad:
            raise ValueError(bad)
        if w.nodes == 0:
            return self
        if self.provider.kind == "ssh":
            raise ValueError(
                "web.nodes: the web tier runs in the local provider's namespaces; "
                "set web.nodes = 0 with provider.kind = 'ssh'"
            )
        if self.balancer.kind == "none":
            raise ValueError(
                "web.nodes: the web nodes reach the database through the balancer; "
                "set balancer.kind = 'haproxy' (or web.nodes = 0)"
            )
        if w.layout == "colocated" and w.nodes > self.cluster.nodes:
            raise ValueError(
                f"web.nodes: {w.nodes} colocated web nodes need as many database nodes (cluster.nodes is "
                f"{self.cluster.nodes}); lower web.nodes or use web.layout = 'separate'"
            )
        if isinstance(w.front.vip, str) and w.front.paired:
            self._check_vip(w.front.vip, "web.front.vip", FRONT_VIP)
        return self

    def _check_vip(self, address: str, where: str, own: str) -> None:
        """A VIP given as an address (`own`: what addresses() calls it): a host of the subnet
        that no other host or VIP has."""
        vip = ipaddress.IPv4Address(address)
        net = self.network
        if vip not in net or vip in (net.network_address, net.broadcast_address):
            raise ValueError(f"{where} {vip} is not a host address in cluster.subnet {net}")
        taken = self.addresses(but=own)
        if str(vip) in taken:
            raise ValueError(f"{where} {vip} is already the address of {taken[str(vip)]}")

    def addresses(self, but: str | None = None) -> dict[str, str]:
        """Every address of the local plan and what has it (the bridge, lb1, node 2, web node 1,
        the web front VIP...), without the one called `but`."""
        out = {self.bridge_address(): "the bridge"}
        out.update({self.balancer_address(k): f"lb{k}" for k in self.balancer_indexes()})
        out.update({self.node_address(i): f"node {i}" for i in self.node_indexes()})
        out.update({self.client_host_address(k): f"client c{k}" for k in self.client_indexes()})
        if self.web.layout == "separate":
            out.update({self.web_address(i): f"web node {i}" for i in self.web.indexes()})
        out.update({self.front_address(k): f"fe{k}" for k in self.web.front_indexes()})
        vips = [(self.vip_address(), BALANCER_VIP), (self.front_vip_address(), FRONT_VIP)]
        for a, what in vips:
            if a is not None and what != but:
                out.setdefault(a, what)
        return out

    # --- derived values (pure) ---

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.cluster.subnet)

    def bridge_address(self) -> str:
        return str(self.network[BRIDGE_OFFSET])

    def balancer_indexes(self) -> list[int]:
        """1 (lb1) or 1 and 2 (lb1, lb2); empty without a balancer."""
        if self.balancer.kind == "none":
            return []
        return list(range(1, self.balancer.count + 1))

    def balancer_address(self, index: int = 1) -> str:
        """The own address of HAProxy `index` (lb1 .2, lb2 .4; over ssh the K-th balancer host)."""
        if self.provider.kind == "ssh":
            return self.balancer_hosts()[index - 1].address
        return str(self.network[BALANCER_OFFSETS[index - 1]])

    @property
    def remote(self) -> bool:
        return self.provider.kind == "ssh"

    def db_hosts(self) -> list[InventoryHost]:
        """Inventory hosts with role db, in file order: node N is the N-th."""
        return [h for h in self.hosts if "db" in h.roles]

    def balancer_hosts(self) -> list[InventoryHost]:
        """Inventory hosts with role balancer, in file order: lbK is the K-th."""
        return [h for h in self.hosts if "balancer" in h.roles]

    def client_hosts(self) -> list[InventoryHost]:
        return [h for h in self.hosts if "client" in h.roles]

    def client_indexes(self) -> list[int]:
        """Local client namespaces c1..cK (`[clients] hosts = K`)."""
        return list(range(1, self.clients.hosts + 1))

    def client_host_address(self, index: int) -> str:
        """The address of local client namespace c<index>."""
        return str(self.network[CLIENT_OFFSET + index])

    def vip_address(self) -> str | None:
        """The keepalived virtual IP of a balancer pair, or None with one (or no) HAProxy."""
        b = self.balancer
        if not b.paired:
            return None
        if isinstance(b.vip, str):
            return b.vip
        return str(self.network[VIP_OFFSET])

    def client_address(self) -> str | None:
        """Where clients reach 'the balancer': the VIP of a pair, else lb1; None without one."""
        if self.balancer.kind == "none":
            return None
        return self.vip_address() or self.balancer_address()

    def node_address(self, index: int) -> str:
        if self.provider.kind == "ssh":
            return self.db_hosts()[index - 1].address
        return str(self.network[NODE_OFFSET + index])

    def node_indexes(self) -> list[int]:
        return list(range(1, self.cluster.nodes + 1))

    def node_datadir_fs(self, index: int) -> str:
        """Where node `index`'s datadir lives: 'host', 'tmpfs' or 'loop'. A datadir_size alone
        means a tmpfs."""
        o = next((o for o in self.node if o.index == index), None)
        if o is not None and o.datadir_fs is not None:
            return o.datadir_fs
        if self.cluster.datadir_fs == "host" and o is not None and o.datadir_size:
            return "tmpfs"
        return self.cluster.datadir_fs

    def node_datadir_size(self, index: int) -> str | None:
        """The size of node `index`'s own datadir file system, or None (its host's file system)."""
        fs = self.node_datadir_fs(index)
        if fs == "host":
            return None
        own = next((o.datadir_size for o in self.node if o.index == index), None)
        return own or DEFAULT_DATADIR_SIZE[fs]

    def node_datadir_layer(self, index: int) -> str:
        """'faultfs' when node `index`'s datadir sits on the power-loss layer, else 'none'."""
        own = next((o.datadir_layer for o in self.node if o.index == index), None)
        return own or self.cluster.datadir_layer

    def server_section(self) -> str:
        """The topology's section of server settings for its engine: 'mysql' or 'mariadb'."""
        return "mysql" if self.engine.kind == "group_replication" else "mariadb"

    def node_settings(self, index: int) -> Any:
        """Node `index`'s server settings: the engine's section with the node's own over it."""
        section = self.server_section()
        base = getattr(self, section)
        own = next((getattr(o, section) for o in self.node if o.index == index), None)
        return type(base).model_validate({**base.model_dump(), **own}) if own else base

    def node_overrides(self, index: int) -> dict[str, Any]:
        """The server settings node `index` has of its own (over the cluster's), as given."""
        own = next((getattr(o, self.server_section()) for o in self.node if o.index == index), None)
        return dict(own or {})

    def node_resources(self, index: int) -> Resources:
        base = self.resources
        for o in self.node:
            if o.index == index:
                return base.merged(Resources(cpu_quota=o.cpu_quota, cpuset=o.cpuset, bandwidth=o.bandwidth))
        return base

    def warnings(self) -> list[str]:
        n = self.cluster.nodes
        out: list[str] = []
        if n == 2:
            out.append(
                "cluster.nodes = 2: losing either node loses quorum (the survivor goes non-Primary); "
                "Galera's quorum docs recommend 3 nodes or 2 plus garbd"
            )
        elif n % 2 == 0:
            out.append(
                f"cluster.nodes = {n} is even: a split into two halves leaves no Primary component; "
                "Galera's quorum docs recommend an odd number of nodes"
            )
        return out


def topology_from_data(data: dict[str, Any], source: str) -> Topology:
    try:
        return Topology.model_validate(data)
    except ValidationError as exc:
        raise InputError("\n".join(validation_messages(exc, Topology, source))) from None


def load_topology(path: Path | None) -> Topology:
    """Load a topology file, or the built-in default (3 nodes + HAProxy) when `path` is None."""
    if path is None:
        return Topology()
    from clusterbench.spec.files import read_toml_text, require_kind

    text = read_toml_text(path, "topology", "see examples/topologies/ for ready-made ones")
    data = parse_toml(text, str(path))
    require_kind(data, "topology", path)
    return topology_from_data(data, str(path))
