"""The engine interface: what every database engine of a cluster offers, in engine-neutral terms.

An engine (MariaDB Galera, MySQL Group Replication) is two things:

- `DbNode`: one database server on one host. Its lifecycle (write files, start, stop, kill,
  pause), its SQL (an admin connection), its health agent for the balancer, and a typed view of
  how it sees itself and its group (`NodeHealth`).
- `Engine`: the lifecycle of a whole cluster of such nodes: bring it up from nothing, start one
  node (rejoin or bootstrap), heal after kills, cold start after a complete outage.

`Cluster` orchestrates provider hosts, engine nodes and balancers through these two protocols and
knows neither which engine nor which provider it has. Checkers, faults, telemetry and workloads
read `NodeHealth` and the session SQL below, never `wsrep_*` or `performance_schema` rows. A
capability only one engine has (Galera's desync) is an optional protocol the caller asks for
with isinstance, not an `if kind == ...`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, TypedDict, runtime_checkable

import pymysql

from clusterbench.clock import Clock
from clusterbench.components.haproxy.config import Route
from clusterbench.hosts.base import CommandResult, Machine, ProcessRef
from clusterbench.spec.topology import Topology

Report = Callable[[str], None]


class NodePlace(TypedDict):
    """Where node `index` of a cluster is: the fields both engines' node configurations start with."""

    cluster_name: str
    index: int
    address: str
    peers: tuple[str, ...]  # every node's address, this one's included
    dir: Path  # the node directory on its host


def node_place(t: Topology, index: int, dir: Path) -> NodePlace:
    peers = tuple(t.node_address(i) for i in t.node_indexes())
    return NodePlace(cluster_name=t.name, index=index, address=t.node_address(index), peers=peers, dir=dir)


@dataclass(frozen=True)
class Credentials:
    """Per-cluster accounts, generated at `up`. Only ever printed masked."""

    admin_user: str
    admin_password: str
    app_user: str
    app_password: str
    mon_user: str
    mon_password: str
    # Group Replication's recovery account (distributed recovery and clone between members);
    # its password is given at START GROUP_REPLICATION, never stored in a datadir. Empty in
    # secrets written before it existed (Galera has no use for it).
    repl_user: str = "cbrepl"
    repl_password: str = ""
    # The web tier's application (components/web): it reads and inserts rows of its own tables in
    # the cluster's schema and nothing else. Empty in secrets written before it existed.
    web_user: str = "cbweb"
    web_password: str = ""

    def to_json(self) -> dict[str, str]:
        return dict(self.__dict__)

    @staticmethod
    def from_json(d: dict[str, str]) -> Credentials:
        return Credentials(**d)


# What the web application's account may do, on the cluster's schema only.
WEB_PRIVILEGES = "SELECT, INSERT"


@dataclass(frozen=True)
class NodeHealth:
    """How one answering node sees itself and its group, in words every engine can fill.

    - `state`: the engine's own word for the member state (Galera: Synced, Donor/Desynced,
      Joiner...; Group Replication: ONLINE, RECOVERING, ERROR...), for people to read.
    - `in_quorum`: a member of the component or group that has quorum (Galera: Primary).
    - `ready`: a full member serving the cluster's data now (Galera: Synced in the Primary
      component with wsrep_ready; GR: ONLINE in a majority view).
    - `writable`: accepts writes now (Galera: ready; GR: ready and PRIMARY, or multi-primary).
    - `role`: PRIMARY or SECONDARY where the engine has roles, "" where every member writes.
    - `group_id` + `view_seq`: which view of which cluster history the node is in (Galera:
      cluster_state_uuid and conf_id; GR: group name + view timestamp, and the view counter).
    - `position`: the exact replication position, equal on converged nodes (Galera: the seqno;
      GR: gtid_executed); `progress`: a count that grows with every commit (seqno; GTIDs).
    - `members`: addresses of the view's members, comma-separated ("" when unknown).
    - `flow_control`: fraction of time paused by flow control (0 when the engine has none).
    """

    state: str
    in_quorum: bool
    ready: bool
    writable: bool
    size: int
    group_id: str = ""
    view_seq: int = -1
    position: str = ""
    progress: int = -1
    role: str = ""
    members: str = ""
    flow_control: float = 0.0

    @property
    def quorum_word(self) -> str:
        """'Primary' or 'non-Primary' (the words Galera and the split-brain checker use)."""
        return "Primary" if self.in_quorum else "non-Primary"


@dataclass(frozen=True)
class MetricInfo:
    """One engine figure of `DbNode.metrics()`. A counter only grows (telemetry turns it into a
    rate per second, stored as `stored`); a gauge is stored as it is read."""

    kind: str  # "counter" or "gauge"
    stored: str  # the name it is stored and plotted under (a counter's rate, a gauge itself)
    unit: str  # of the stored value
    meaning: str
    scale: float = 1.0  # stored = rate (or value) x scale (bytes/s → KiB/s)


# The engine figures telemetry samples every second, in engine-neutral names. `DbNode.metrics()`
# returns those its engine has (a name an engine lacks is left out, never faked as 0):
#
# | name | Galera (wsrep_*) | Group Replication (performance_schema, Gr_* status) |
# |---|---|---|
# | flow_control_paused_s | flow_control_paused_ns / 1e9 | Gr_flow_control_throttle_time_sum / 1e6 |
# | flow_control_sent | flow_control_sent | (none) |
# | recv_queue | local_recv_queue | COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE |
# | send_queue | local_send_queue | (none) |
# | cert_queue | (none) | COUNT_TRANSACTIONS_IN_QUEUE |
# | cert_failures | local_cert_failures | COUNT_CONFLICTS_DETECTED |
# | replicated_bytes | replicated_bytes | Gr_data_messages_sent_bytes_sum |
# | received_bytes | received_bytes | Gr_consensus_bytes_received_sum |
# | replicated_trx | replicated | COUNT_TRANSACTIONS_LOCAL_PROPOSED |
#
# (GR's from performance_schema.replication_group_member_stats of its own member; its history
# length from information_schema.INNODB_METRICS trx_rseg_history_len: MySQL has no
# Innodb_history_list_length.)
#
# and from InnoDB, the same for both (ServerNode): innodb_buffer_pool_reads, row_lock_waits,
# history_length, fsyncs, data_reads, data_writes.
METRICS: dict[str, MetricInfo] = {
    "flow_control_paused_s": MetricInfo(
        "counter", "flow_control_paused", "fraction",
        "share of the time replication was paused by flow control (Galera: this node waited for a "
        "slow member; GR: writers were throttled)"),
    "flow_control_sent": MetricInfo(
        "counter", "flow_control_sent_s", "1/s",
        "flow-control pause requests this node sent (its applier lags)"),
    "recv_queue": MetricInfo(
        "gauge", "recv_queue", "transactions", "received from the group, waiting to be applied here"),
    "send_queue": MetricInfo("gauge", "send_queue", "transactions", "waiting to be sent to the group"),
    "cert_queue": MetricInfo("gauge", "cert_queue", "transactions", "waiting for certification"),
    "cert_failures": MetricInfo(
        "counter", "cert_failures_s", "1/s", "local transactions that failed certification (rolled back)"),
    "replicated_bytes": MetricInfo(
        "counter", "replicated_kib_s", "KiB/s", "write-sets this node sent to the group", 1 / 1024),
    "received_bytes": MetricInfo(
        "counter", "received_kib_s", "KiB/s", "write-sets this node received", 1 / 1024),
    "replicated_trx": MetricInfo("counter", "replicated_trx_s", "1/s", "transactions this node replicated"),
    "innodb_buffer_pool_reads": MetricInfo(
        "counter", "buffer_pool_reads_s", "1/s",
        "InnoDB page reads the buffer pool could not serve (from disk)"),
    "row_lock_waits": MetricInfo("counter", "row_lock_waits_s", "1/s", "InnoDB row lock waits"),
    "history_length": MetricInfo(
        "gauge", "history_length", "undo logs", "InnoDB history list length (purge lag)"),
    "fsyncs": MetricInfo("counter", "fsyncs_s", "1/s", "fsync() calls InnoDB made"),
    "data_reads": MetricInfo("counter", "data_reads_s", "1/s", "InnoDB data file reads"),
    "data_writes": MetricInfo("counter", "data_writes_s", "1/s", "InnoDB data file writes"),
}  # fmt: skip


# What InnoDB's REPEATABLE READ allows (SessionSql's documentation says why).
INNODB_RR: tuple[str, ...] = ("lost-update", "internal", "G-single", "G-nonadjacent", "G2-item")
# Reads under FOR UPDATE lock the newest rows, as the writes do: what they rule out of INNODB_RR.
LOCKING_READS_RULE_OUT: frozenset[str] = frozenset({"lost-update", "internal", "G-single", "G-nonadjacent"})


@dataclass(frozen=True)
class SessionSql:
    """Statements that set up a session's consistency, per engine.

    `monitor`: never block on a node that lost quorum (health checks, status, monitors).
    `causal`: a read that sees every write acknowledged anywhere in the cluster before it
    (verification reads, convergence). `default`: the engine's default (stale reads possible).

    `documented_default` / `documented_causal`: the anomaly classes (names of
    checkers.list_append.ANOMALIES) the engine's documentation says are possible in that session;
    the anomaly checkers report them as "documented limitation seen", anything else they find as
    "promise broken". The defaults hold for any InnoDB server at REPEATABLE READ (MySQL's manual:
    consistent reads see a snapshot, DML works on the newest committed rows, only SERIALIZABLE or
    locking reads serialize): a plain read followed by a write may lose a concurrent update
    (lost-update, and the `internal` reads of a transaction that saw its own update applied to a
    newer row), two transactions may each write what the other read (write skew, G2-item), and
    the default session may read stale data. A transaction that reads some keys from its snapshot
    and others after its own writes (which read the newest rows) sees two states at once: Jepsen's
    MySQL 8.0.34 analysis (2023) found Repeatable Read violating Monotonic Atomic View and so
    snapshot isolation (G-single even without a lost update; MariaDB behaves the same, its
    discussion list), which is why G-single and G-nonadjacent are listed: the promise that stands
    is read committed's (G0, G1a, G1b, G1c never), and a lost or duplicated append."""

    monitor: tuple[str, ...]
    causal: tuple[str, ...]
    default: tuple[str, ...]
    documented_default: tuple[str, ...] = INNODB_RR + ("stale-read",)
    documented_causal: tuple[str, ...] = INNODB_RR
    # After these, the session's writes stay on its node (not replicated): how the negative
    # controls of the convergence and ledger checkers make one node diverge on purpose
    # (Galera: wsrep_on=OFF; Group Replication: sql_log_bin=0, on a node that takes writes).
    unreplicated: tuple[str, ...] = ()


class ProvisionHost(Protocol):
    """What `prepare_host` needs from a machine: commands, and a command fed a byte stream."""

    def run(
        self, argv: list[str], *, input: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> CommandResult: ...

    def stream_in(self, argv: list[str], source: IO[bytes], *, timeout: float) -> CommandResult: ...


class DbNode(Protocol):
    """One database server of an engine, on one host."""

    index: int
    host: Machine
    proc: ProcessRef | None
    check_proc: ProcessRef | None
    session: SessionSql

    @property
    def name(self) -> str: ...

    @property
    def address(self) -> str: ...

    @property
    def dir(self) -> Path: ...

    @property
    def datadir(self) -> Path: ...

    @property
    def error_log(self) -> Path: ...

    @property
    def socket(self) -> Path:
        """The server's Unix socket as a process on the node's host sees it (a chrooted server's
        socket at its path outside the root file system), for clients on that host."""

    @property
    def admin_cnf(self) -> Path:
        """A [client] option file (mode 0600, on the node's host) for the admin account."""

    def write_files(self) -> None: ...

    def alive(self) -> bool: ...

    def stop(self, timeout: float = 60.0) -> str: ...

    def kill(self, wait: bool = True) -> str:
        """SIGKILL; with `wait`, until the process is gone."""

    def wait_dead(self, timeout: float = 10.0) -> bool: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def connect(
        self, timeout: float = 2.0, **kw: Any
    ) -> AbstractContextManager[pymysql.connections.Connection]: ...

    def query(self, sql: str, timeout: float = 2.0) -> list[tuple[Any, ...]]: ...

    def health(self) -> NodeHealth | None: ...

    def start_health_agent(self) -> ProcessRef: ...

    def stop_health_agent(self) -> None: ...

    def health_agent_alive(self) -> bool: ...

    def error_log_size(self) -> int: ...

    def error_log_tail(self, lines: int = 8) -> str: ...

    def engine_status(self) -> dict[str, str]:
        """The engine's own status variables, for provenance ({} when the node does not answer)."""

    def wait_ready(self, timeout: float, expect_size: int | None = None) -> NodeHealth: ...

    def stop_strays(self) -> list[str]: ...

    @property
    def pid_file(self) -> Path:
        """Where the server writes its PID (on its host): telemetry follows a restarted server there."""

    def metrics(self) -> dict[str, float] | None:
        """The engine's figures for telemetry, in the neutral names of `METRICS` (counters as
        they stand, gauges now); only the names this engine has. None when the node does not
        answer. Called once a second from one telemetry thread: it keeps one monitoring
        connection open between calls (`close_metrics` closes it) and must never block on a
        node without quorum (use the `monitor` session)."""

    def close_metrics(self) -> None: ...

    # started under libfaketime (engines/fakeclock.py; topology cluster.clock = "faketime"), its
    # wall clock's offset in `clock_file` on its host
    fake_clock: bool

    @property
    def clock_file(self) -> Path: ...


@runtime_checkable
class Desyncable(Protocol):
    """A node that can leave flow control on purpose (Galera's wsrep_desync)."""

    def desync(self, on: bool) -> None: ...

    def desynced(self) -> bool: ...


class Site(Protocol):
    """What an engine's cluster lifecycle needs from the cluster it runs in: the topology, the
    nodes as objects, a clock, and callbacks that keep the cluster's persisted state and the
    provider's limits in step with the processes the engine starts."""

    topology: Topology
    clock: Clock

    @property
    def template_root(self) -> Path | None:
        """Where datadir templates are kept (engines/galera/template.py); None where the nodes
        are not on this machine."""

    def node(self, index: int) -> DbNode: ...

    def nodes(self) -> list[DbNode]: ...

    def started(self, node: DbNode) -> None:
        """A node's server process was (re)started: attach its resource limits, persist its PID."""

    def recorded(self, node: DbNode) -> None:
        """Persist a node's processes (server, health agent)."""

    def copy_datadir(
        self, source: DbNode, targets: Sequence[DbNode], excludes: Sequence[str], report: Report
    ) -> None:
        """Give every target a copy of the source's datadir (owned by mysql), host to host."""


@dataclass(frozen=True)
class NodeSite:
    """Where node `index` of a cluster lives and what it runs as: its host and directory, the
    cluster's credentials, its server and health-agent processes once started, the clock."""

    index: int
    host: Machine
    dir: Path
    creds: Credentials
    proc: ProcessRef | None = None
    check_proc: ProcessRef | None = None
    clock: Clock | None = None


class Engine(Protocol):
    """The lifecycle of a whole cluster of one engine."""

    kind: str
    label: str  # for people: "MariaDB Galera", "MySQL Group Replication"
    topology: Topology
    # server variables that differ between this engine's nodes by design (a member's own address,
    # a secondary's read_only): never a finding of the "server variables as run" report
    per_node_variables: frozenset[str]

    def make_node(self, site: NodeSite) -> DbNode: ...

    def required(self) -> dict[str, str]:
        """What must exist on a db host: a path or binary name -> how to get it (one line)."""

    def host_packages(self) -> tuple[str, ...]:
        """Debian packages a db host reached over ssh needs for this engine (the ssh preflight
        asks for them, `provision` installs them)."""

    def ports(self) -> tuple[int, ...]:
        """TCP ports a node listens on (the ssh preflight refuses a host where one is taken)."""

    def prepare_host(self, host: ProvisionHost, where: str) -> str | None:
        """`provision`, on a db host reached over ssh, after its packages: whatever else the
        engine's server needs there (Galera: nothing, None; Group Replication: the host's own
        mysqld with Group Replication, else the MySQL root file system copied or built there).
        Returns one line saying what it did; raises PreflightError, one line naming the host
        (`where`) and the next step."""

    def bring_up(self, site: Site, report: Report) -> None:
        """From empty node directories to every node a ready member (files written, data
        initialized, accounts made, group bootstrapped, the others joined, health agents up)."""

    def start_node(self, site: Site, index: int, timeout: float) -> str:
        """Start one stopped or crashed node: rejoin the running ones, or bootstrap when none runs
        and the engine's rules allow this node to. Returns what happened."""

    def rebuild_node(self, site: Site, index: int, timeout: float) -> str:
        """Wipe a node's data and let it rejoin by a full state transfer from the running ones
        (Galera: SST; Group Replication: clone), as after a disk loss. Returns what happened."""

    def restart_nodes(self, site: Site, indexes: Sequence[int], timeout: float) -> list[str]:
        """The heal of kill and stop faults: bring the given nodes back, whatever the survivors'
        state (quorum kept, quorum lost, nobody left)."""

    def start_all(self, site: Site, report: Report) -> list[str]:
        """Cold start after every node stopped or crashed, from the most advanced node."""

    def stop_order(self, nodes: Sequence[DbNode]) -> list[DbNode]:
        """The order of a graceful stop of every node."""

    def routes(self) -> tuple[Route, ...]:
        """The balancer's listeners for this engine, the first being the one `balancer` means
        (Galera: one over every ready node; Group Replication: write to the primary, then read)."""

    @property
    def every_node_writes(self) -> bool:
        """Every ready node takes writes (Galera; Group Replication in multi-primary mode). False
        when one node does (single-primary): writers then go through the write endpoint."""

    def recover(self, site: Site, indexes: Sequence[int], timeout: float) -> list[str]:
        """After a network, pause or throttle fault on these (running) nodes was healed: wait for
        them to come back as ready members by themselves, and bring back those that will not
        (Galera rejoins by itself: nothing to do; a Group Replication member that was expelled
        stays out of the group, in ERROR, and rejoins here; with no majority left anywhere the
        group is rebooted, never leaving two primaries). Returns what happened."""

    def stop_for_teardown(self, nodes: Sequence[DbNode], keep_data: bool) -> list[str]:
        """Stop every node for `down`: the fastest way that loses nothing still wanted. Without
        `keep_data` the datadirs are deleted right after, so an engine whose graceful stop is
        slow may SIGKILL; with it, nodes stop gracefully. Returns one line per node stopped."""


def kill_all(nodes: Sequence[DbNode]) -> list[str]:
    """SIGKILL every running node at once, then wait until each is gone: the teardown's stop when
    the datadirs are deleted right after (nothing in them is wanted any more)."""
    running = [n for n in nodes if n.alive()]
    what = [n.kill(wait=False) for n in running]
    for n in running:
        n.wait_dead()
    return [f"n{n.index} {w}" for n, w in zip(running, what, strict=True)]


def nodes_by_index(nodes: Sequence[DbNode]) -> dict[int, DbNode]:
    return {n.index: n for n in nodes}


def wipe_datadir(node: DbNode) -> None:
    """Remove everything in a stopped node's datadir, keeping the directory (and a file system or
    layer mounted there)."""
    d = str(node.datadir)
    node.host.run(["find", d, "-mindepth", "1", "-delete"], timeout=300)


def alive_nodes(nodes: Sequence[DbNode]) -> Iterator[DbNode]:
    return (n for n in nodes if n.alive())
