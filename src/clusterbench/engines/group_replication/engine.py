"""MySQL Group Replication as an engine: the lifecycle of a whole group of GRNodes.

Bring-up: member 1 is initialized once (`mysqld --initialize` with the accounts in its init file,
so they carry no GTID), every other member gets a copy of that datadir without auto.cnf (each
then makes its own server UUID), every mysqld starts, member 1 bootstraps the group and the others
join. They all start from the same empty executed set, so a join recovers only the view changes.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import cast

from clusterbench.components.haproxy.config import Route
from clusterbench.engines.base import (
    WEB_PRIVILEGES,
    Credentials,
    DbNode,
    NodeSite,
    ProvisionHost,
    Report,
    Site,
    kill_all,
    node_place,
    wipe_datadir,
)
from clusterbench.engines.fakeclock import LIBFAKETIME
from clusterbench.engines.group_replication import remote, rootfs
from clusterbench.engines.group_replication.config import (
    GCS_PORT,
    MONITOR_PRIVILEGES,
    RECOVERY_PRIVILEGES,
    Account,
    MemberConfig,
    account_sql,
)
from clusterbench.engines.group_replication.group import JOIN_TIMEOUT, READY_TIMEOUT, GRGroup, Membership
from clusterbench.engines.group_replication.node import GRNode
from clusterbench.engines.server import HEALTH_PORT
from clusterbench.errors import ClusterStateError, ComponentError, PreflightError
from clusterbench.hosts.base import Machine
from clusterbench.spec.topology import Topology

# Seeded copies leave out the server's identity (auto.cnf: a second member with the same UUID is
# refused by the group) and what belongs to a running process.
SEED_EXCLUDES = ["auto.cnf", "*.pid", "*.sock", "*.sock.lock"]


def _gr(n: DbNode) -> GRNode:
    """The Group Replication engine only ever makes GRNodes (the cast is for the type checker)."""
    return cast(GRNode, n)


def accounts(c: Credentials) -> list[str]:
    """The cluster's accounts for `mysqld --initialize --init-file`; root is locked (the admin
    account does everything, over the socket or TCP)."""
    web = [Account(c.web_user, c.web_password, WEB_PRIVILEGES, on="sbtest.*")] if c.web_password else []
    sql = account_sql(
        [
            Account(c.admin_user, c.admin_password, "ALL PRIVILEGES", grant_option=True),
            Account(c.app_user, c.app_password, "ALL PRIVILEGES"),
            Account(c.mon_user, c.mon_password, MONITOR_PRIVILEGES),
            Account(c.repl_user, c.repl_password, RECOVERY_PRIVILEGES),
            *web,
        ],
        [(c.mon_user, "SELECT", "performance_schema.*")],
        "sbtest",
    )
    return [*sql, "ALTER USER 'root'@'localhost' ACCOUNT LOCK;"]


class GroupReplicationEngine:
    kind = "group_replication"
    label = "MySQL Group Replication"
    # each member's own address, and single-primary's read-only secondaries (set by the plugin);
    # init_file is the member's own bootstrap file
    per_node_variables: frozenset[str] = frozenset(
        {"group_replication_local_address", "read_only", "super_read_only", "init_file", "report_host",
         "admin_address", "mysqlx_bind_address", "mysqlx_socket"}
    )  # fmt: skip

    def __init__(self, topology: Topology, root: Path | None = None) -> None:
        self.topology = topology
        self.rootfs = root or rootfs.rootfs_dir()
        # Over ssh: the rootfs's path on the remote machines, and what each host resolved to
        # (its own mysqld at "/" or that rootfs; remote.resolve), asked once per host.
        self.remote_rootfs = Path(topology.provider.rootfs) if topology.provider.rootfs else self.rootfs
        self._resolved: dict[str, remote.Resolved] = {}

    @property
    def single_primary(self) -> bool:
        return self.topology.engine.single_primary

    def group_name(self, creds: Credentials) -> str:
        """One UUID per cluster incarnation: derived from its name and its generated admin
        password, so it needs no state of its own and a recreated cluster gets a new one."""
        return str(
            uuid.uuid5(uuid.NAMESPACE_URL, f"clusterbench:{self.topology.name}:{creds.admin_password}")
        )

    def allowlist(self) -> tuple[str, ...]:
        """XCom's default allowlist admits private ranges only, not 198.18.0.0/15: list the
        subnet locally, the members' own addresses over ssh."""
        t = self.topology
        if t.remote:
            return tuple(f"{t.node_address(i)}/32" for i in t.node_indexes())
        return (str(t.network),)

    def member_config(self, index: int, dir: Path, creds: Credentials) -> MemberConfig:
        t = self.topology
        return MemberConfig(
            **node_place(t, index, dir),
            group_name=self.group_name(creds),
            allowlist=self.allowlist(),
            settings=t.node_settings(index),
            single_primary=self.single_primary,
        )

    def make_node(self, site: NodeSite) -> GRNode:
        if self.topology.remote:
            root, owner = self.host_root(site.index, site.host)
        else:
            root, ids = self.rootfs, rootfs.uid_gid(self.rootfs)
            if ids is None:
                raise PreflightError(rootfs.problem(self.rootfs) or f"{self.rootfs} has no mysql user")
            owner = ids
        cfg = self.member_config(site.index, site.dir, site.creds)
        return GRNode(cfg, site.host, root, owner, site.creds, proc=site.proc, check_proc=site.check_proc,
                      clock=site.clock)  # fmt: skip

    def host_root(self, index: int, host: Machine) -> tuple[Path, tuple[int, int]]:
        """The root a remote member's mysqld runs from (the host's own "/" or the rootfs there) and
        its mysql user's ids there."""
        address = self.topology.node_address(index)
        got = self._resolved.get(address)
        if got is None or got.owner is None:
            got = remote.resolve(host, self.remote_rootfs)
            if got.owner is None:
                raise PreflightError(
                    f"node {index} ({address}): no MySQL with Group Replication there (neither "
                    f"{remote.OWN_GR_PLUGIN} nor {self.remote_rootfs}); run `clusterbench provision -f FILE`"
                )
            self._resolved[address] = got
        assert got.owner is not None
        return got.root, got.owner

    def prepare_host(self, host: ProvisionHost, where: str) -> str | None:
        return remote.prepare(
            host, where, self.remote_rootfs, self.rootfs, socket.gethostname(), rootfs.host_mirror()
        )

    def required(self) -> dict[str, str]:
        how = "the MySQL root file system for Group Replication: `make setup` or `clusterbench rootfs build`"
        if self.topology.remote:
            # Either the host's own mysqld with Group Replication or the rootfs there (ssh_check's
            # probe reads "a|b" as "one of them").
            either = f"{self.remote_rootfs / rootfs.MYSQLD.lstrip('/')}|{remote.OWN_GR_PLUGIN}"
            how = "run `clusterbench provision -f FILE` for MySQL with Group Replication"
        else:
            either = str(self.rootfs / rootfs.MYSQLD.lstrip("/"))
        need = {
            either: how,
            "mariadb": "Debian package mariadb-client",  # the health check's client
            "unshare": "Debian package util-linux",
            "rsync": "Debian package rsync",
        }
        if self.topology.cluster.clock == "faketime":
            need[str(LIBFAKETIME)] = "Debian package faketime"
        return need

    def host_packages(self) -> tuple[str, ...]:
        # mysqld comes from the rootfs (required()); the host runs the health check's client,
        # unshare and mount (util-linux, mount), rsync for copies and socat for the health agent.
        return ("mariadb-client", "util-linux", "mount", "rsync", "socat", "iproute2")

    def ports(self) -> tuple[int, ...]:
        return (3306, GCS_PORT, HEALTH_PORT)  # mysql, group communication (XCom), health check

    def stop_order(self, nodes: Sequence[DbNode]) -> list[DbNode]:
        # Secondaries first (last index first), the primary last: no election on the way down,
        # and the member that stops last has every transaction a cold start needs.
        def primary_last(n: DbNode) -> tuple[int, int]:
            h = n.health()
            return (1 if h is not None and h.role == "PRIMARY" else 0, -n.index)

        return sorted(nodes, key=primary_last)

    def routes(self) -> tuple[Route, ...]:
        """Writes go to the ONLINE primary (`first`: one server at a time, the one that is UP);
        reads spread over the ONLINE secondaries on the next port. Multi-primary: both spread
        over every ONLINE member."""
        write = Route(
            "write",
            0,
            "/write",
            "200 only for an ONLINE, writable PRIMARY that sees a majority (engines/group_replication).",
            balance="first" if self.single_primary else None,
        )
        read = Route("read", 1, "/read", "200 only for an ONLINE SECONDARY that sees a majority.")
        return (write, read)

    def group(self, site: Site) -> GRGroup:
        return GRGroup(
            [_gr(n) for n in site.nodes()],
            clock=site.clock,
            started=site.started,
            recorded=site.recorded,
        )

    # ------------------------------------------------------------------ lifecycle

    def bring_up(self, site: Site, report: Report) -> None:
        g = self.group(site)
        first = g.members[0]

        def seed(source: GRNode, targets: list[GRNode]) -> None:
            site.copy_datadir(source, targets, SEED_EXCLUDES, report)

        template = None
        if not self.topology.remote:
            # Locally every member starts from a copy of one initialized datadir, made once per
            # MySQL version (saves `mysqld --initialize`, ~5 s, at every up).
            info = rootfs.read_info(self.rootfs)
            version = info.mysql_version if info else (rootfs.mysqld_version(self.rootfs) or "unknown")
            try:
                template = rootfs.ensure_template(self.rootfs, version)
            except rootfs.RootfsBuildError as exc:
                raise ComponentError(str(exc)) from None
        # Over ssh with provider.seed = "sst", every member initializes its own (empty) datadir.
        copy = not self.topology.remote or self.topology.provider.seed == "copy"
        timings = g.bring_up(accounts(first.creds), seed if copy else None, report, template=template)
        report(f"group of {len(g.members)} ONLINE in {timings['online']:.1f} s")

    def start_node(self, site: Site, index: int, timeout: float = JOIN_TIMEOUT) -> str:
        g = self.group(site)
        return g.rejoin(g.member(index), timeout)

    def rebuild_node(self, site: Site, index: int, timeout: float = JOIN_TIMEOUT) -> str:
        """Stop the member, wipe its datadir, give it a fresh one with the cluster's accounts, and
        join it with a clone forced (group_replication_clone_threshold = 1): a full copy from a
        donor the group chooses, as after a disk loss."""
        g = self.group(site)
        m = g.member(index)
        others = {o.index: o.status() for o in g.members if o is not m}
        if Membership(others).majority_view() is None:
            raise ClusterStateError(
                f"no member is ONLINE in a group with a majority, so n{index} has nothing to clone from; "
                "run `clusterbench start` first"
            )
        t0 = time.monotonic()
        m.stop()
        m.stop_health_agent()
        wipe_datadir(m)
        statements = accounts(m.creds)
        template = None
        if not self.topology.remote:
            info = rootfs.read_info(self.rootfs)
            version = info.mysql_version if info else (rootfs.mysqld_version(self.rootfs) or "unknown")
            template = rootfs.ensure_template(self.rootfs, version)
        if template is not None:
            m.seed_from(template)
        else:
            m.initialize(statements)
        m.start(statements if template is not None else None)
        site.started(m)
        try:
            m.wait_sql(READY_TIMEOUT)
        finally:
            m.forget_init()
        m.install_metrics_component()
        m.query("SET GLOBAL group_replication_clone_threshold = 1")
        clone = g.join(m, timeout)
        m.start_health_agent()
        site.recorded(m)
        how = clone.line() if clone is not None else "distributed recovery (no clone was needed)"
        return f"n{index} rebuilt from an empty datadir by {how}, in {time.monotonic() - t0:.1f} s"

    def restart_nodes(self, site: Site, indexes: Sequence[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        """The heal of kill and stop faults: these members (and any running member outside the
        group) back in one group with a majority (group.py: members outside it rejoin; with no
        majority the group is rebooted)."""
        return self.group(site).heal(indexes=indexes)

    def recover(self, site: Site, indexes: Sequence[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        """The end of a network, pause or throttle fault: a member whose suspicion had not timed
        out merges back by itself; one that was expelled (ERROR: its automatic rejoin attempts
        are minutes apart) rejoins now; with no majority anywhere the group is rebooted."""
        return self.group(site).recover(indexes, timeout=timeout)

    @property
    def every_node_writes(self) -> bool:
        return not self.single_primary

    def stop_for_teardown(self, nodes: Sequence[DbNode], keep_data: bool) -> list[str]:
        """A member's graceful stop takes ~6 s (~3 s leaving the group, ~3 s mysqld's shutdown),
        one after another ~19 s for three. When the datadirs are deleted next, nothing is left to
        preserve: every mysqld is SIGKILLed at once. When they are kept (`down --keep-files`, a
        failed `up`), the members stop gracefully, all at the same time."""
        if not keep_data:
            return kill_all(nodes)
        running = [n for n in nodes if n.alive()]
        if not running:
            return []
        with ThreadPoolExecutor(max_workers=len(running)) as pool:
            done = list(pool.map(lambda n: f"n{n.index} {n.stop(timeout=30)}", running))
        return done

    def start_all(self, site: Site, report: Report) -> list[str]:
        return self.group(site).cold_start(report)
