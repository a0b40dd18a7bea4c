"""MariaDB Galera as an engine: the lifecycle of a whole cluster of GaleraNodes.

Bring-up: node 1 is initialised and bootstrapped once, stopped cleanly so InnoDB and grastate.dat
hold the same position, and every other node gets a copy of that datadir. Locally, the first
bring-up of a server build and its settings keeps that datadir as a template (template.py) and
later ones copy it to every node instead. With one position on every node, all start together and
restore one Primary component from the gvwstate.dat each is given, with no bootstrap and no state
transfer (1.7 s for three nodes here, against 6 s for a bootstrap and two joins by IST).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import cast

from clusterbench.components.haproxy.config import GALERA_ROUTES, Route
from clusterbench.engines.base import (
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
from clusterbench.engines.galera.config import GALERA_PROVIDER, NodeConfig
from clusterbench.engines.galera.node import GaleraNode
from clusterbench.engines.galera.status import GraState
from clusterbench.engines.galera.template import prepare_datadirs, start_together
from clusterbench.engines.server import HEALTH_PORT, GaveUp
from clusterbench.errors import ClusterStateError, ComponentError
from clusterbench.spec.topology import Topology

JOIN_TIMEOUT = 180.0


def _galera(n: DbNode) -> GaleraNode:
    """The Galera engine only ever makes GaleraNodes (the cast is for the type checker)."""
    return cast(GaleraNode, n)


class GaleraEngine:
    kind = "galera"
    label = "MariaDB Galera"
    # wsrep_node_name, wsrep_node_address ... (the general per-node names are analysis/variables.py's)
    per_node_variables: frozenset[str] = frozenset(
        {"wsrep_node_name", "wsrep_node_address", "wsrep_node_incoming_address", "wsrep_sst_receive_address"}
    )

    def __init__(self, topology: Topology) -> None:
        self.topology = topology

    # ------------------------------------------------------------------ nodes

    def node_config(self, index: int, dir: Path) -> NodeConfig:
        t = self.topology
        return NodeConfig(**node_place(t, index, dir), settings=t.node_settings(index))

    def make_node(self, site: NodeSite) -> GaleraNode:
        return GaleraNode(self.node_config(site.index, site.dir), site.host, site.creds, proc=site.proc,
                          check_proc=site.check_proc, clock=site.clock)  # fmt: skip

    def required(self) -> dict[str, str]:
        need = {
            "mariadbd": "Debian package mariadb-server",
            "mariadb-install-db": "Debian package mariadb-server",
            "mariadb": "Debian package mariadb-client",
            "rsync": "Debian package rsync",
            GALERA_PROVIDER: "Debian package galera-4",
        }
        if self.topology.mariadb.sst_method == "mariabackup":
            need["mariabackup"] = "Debian package mariadb-backup"
        if self.topology.cluster.clock == "faketime":
            need[str(LIBFAKETIME)] = "Debian package faketime"
        return need

    def host_packages(self) -> tuple[str, ...]:
        # The server, Galera, the SST tools (rsync, socat for mariabackup, ss from iproute2 which
        # the SST scripts call).
        extra = ("mariadb-backup",) if self.topology.mariadb.sst_method == "mariabackup" else ()
        return ("mariadb-server", "mariadb-client", "galera-4", "rsync", "socat", "iproute2", *extra)

    def prepare_host(self, host: ProvisionHost, where: str) -> str | None:
        return None  # the packages (host_packages) are all a Galera node needs

    def ports(self) -> tuple[int, ...]:
        return (3306, 4444, 4567, 4568, HEALTH_PORT)  # mysql, SST, group communication, IST, clustercheck

    def routes(self) -> tuple[Route, ...]:
        return GALERA_ROUTES

    def stop_order(self, nodes: Sequence[DbNode]) -> list[DbNode]:
        # Reverse order: the last one to stop (n1) is the one grastate marks safe to bootstrap,
        # so a later cold start begins there.
        return list(reversed(nodes))

    @property
    def every_node_writes(self) -> bool:
        return True

    def recover(self, site: Site, indexes: Sequence[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        # A Galera node cut off, paused or throttled rejoins the Primary component by itself once
        # it hears the others again (evicted ones too); settling waits for it to be Synced.
        return []

    def stop_for_teardown(self, nodes: Sequence[DbNode], keep_data: bool) -> list[str]:
        # When the datadirs are deleted next, nothing in them is wanted: every mysqld is SIGKILLed
        # at once (a graceful stop takes ~1.1 s a node, 9.5 s for nine). When they are kept, one
        # at a time, in stop order: a node that leaves alone is gone in ~1 s, while nodes leaving
        # together wait out evs.suspect_timeout for each other (5 s by default).
        if not keep_data:
            return kill_all(nodes)
        out = []
        for n in self.stop_order(nodes):
            what = n.stop(timeout=30)
            if what != "not running":
                out.append(f"n{n.index} {what}")
        return out

    # ------------------------------------------------------------------ bring-up

    def bring_up(self, site: Site, report: Report) -> None:
        t0 = time.monotonic()
        nodes = [_galera(n) for n in site.nodes()]
        for n in nodes:
            n.write_files()
        state = prepare_datadirs(site, self.topology, nodes, report,
                                 lambda n, **kw: self._start(site, n, **kw))
        if state is not None and len(nodes) > 1:
            start_together(nodes, state, report, lambda n: self._start(site, n), JOIN_TIMEOUT)
        else:
            self._bootstrap_and_join(site, nodes, report)
        report(f"{len(nodes)} nodes Synced ({time.monotonic() - t0:.1f} s)")
        for n in nodes:
            n.start_health_agent()
            site.recorded(n)

    def _bootstrap_and_join(self, site: Site, nodes: list[GaleraNode], report: Report) -> None:
        """Node 1 bootstrapped, then each joiner started as soon as the previous one is in the view
        (started all at once they make Galera retry the view for several seconds): the way when
        the joiners start empty and take an SST."""
        first = nodes[0]
        self._start(site, first, bootstrap=True)
        first.wait_synced(60)
        report("n1 bootstrapped")
        for k, n in enumerate(nodes[1:], start=2):
            self._start(site, n)
            first.wait_in_view(k, JOIN_TIMEOUT, joiner=n)
        for n in nodes[1:]:
            n.wait_synced(JOIN_TIMEOUT, expect_size=len(nodes))

    def _start(
        self,
        site: Site,
        n: GaleraNode,
        *,
        bootstrap: bool = False,
        start_position: str | None = None,
        donor: str | None = None,
    ) -> None:
        n.start(bootstrap=bootstrap, start_position=start_position, donor=donor)
        site.started(n)

    # ------------------------------------------------------------------ one node

    def start_node(self, site: Site, index: int, timeout: float = JOIN_TIMEOUT) -> str:
        """Start one node. If others run, it rejoins (IST when the gap is in their gcache); if
        none runs, it may only bootstrap when grastate says it is safe to."""
        n = _galera(site.node(index))
        if n.alive():
            return f"n{index} already running"
        others = [o for o in site.nodes() if o.index != index and o.alive()]
        if not others:
            g = n.grastate()
            if g is None or not g.safe_to_bootstrap:
                raise ClusterStateError(
                    f"no node of '{self.topology.name}' is running and n{index} is not safe to bootstrap; "
                    "run `clusterbench start` to cold-start from the most advanced node"
                )
            self._start(site, n, bootstrap=True)
            n.wait_synced(timeout)
            n.start_health_agent()
            site.recorded(n)
            return f"n{index} bootstrapped a new Primary component"
        return self._rejoin(site, n, timeout)

    def rebuild_node(self, site: Site, index: int, timeout: float = JOIN_TIMEOUT) -> str:
        """Stop the node, wipe its datadir and start it empty: it rejoins by a full SST from a
        donor the group chooses."""
        n = _galera(site.node(index))
        if not any(o.alive() for o in site.nodes() if o.index != index):
            raise ClusterStateError(
                f"no other node of '{self.topology.name}' runs, so n{index} has no donor to rebuild from; "
                "start the cluster first (`clusterbench start`)"
            )
        t0 = time.monotonic()
        n.stop()
        n.stop_health_agent()
        wipe_datadir(n)
        site.recorded(n)
        line = self._rejoin(site, n, timeout).removeprefix(f"n{index} ")
        return f"n{index} rebuilt from an empty datadir: {line} ({time.monotonic() - t0:.1f} s in all)"

    def _rejoin(self, site: Site, n: GaleraNode, timeout: float, recovered: str | None = None) -> str:
        """Start `n` into the running cluster; `recovered`: its position, when it was read from
        this datadir already (else read here after a crash)."""
        position = recovered
        g = n.grastate()
        if position is None and g is not None and g.crashed:
            position = n.recover_position()
        t0 = time.monotonic()
        # Never --wsrep-new-cluster on a rejoin: that would fork a second cluster.
        self._start(site, n, start_position=position)
        offset = n.log_offset or 0
        retried = ""

        def stranded() -> str | None:
            # Seen after kill -9 of the donor mid-SST: the joiner runs on outside any component
            # ('Sending JOIN failed: -103', Initialized, 0 members) until the timeout.
            donor = n.donor_since(offset)
            if donor is None or any(o.name == donor and o.alive() for o in site.nodes()):
                return None
            h = n.health()
            if h is not None and h.in_quorum:
                return None
            return f"lost its donor {donor} during the state transfer and is outside the cluster"

        try:
            n.wait_synced(timeout, give_up=stranded)
        except ComponentError as first_error:
            # Galera aborts a joiner whose donor dies during the transfer instead of choosing
            # another donor, or leaves it stranded (stopped here): either way, try once more,
            # from a donor other than the one that failed, if one is left.
            if isinstance(first_error, GaveUp):
                n.kill(wait=False)
                if not n.wait_dead(30):
                    raise ComponentError(f"{first_error}; not retried: it outlived SIGKILL by 30 s") from None
            if n.alive():
                raise
            failed = n.donor_since(offset)
            running = [o for o in site.nodes() if o.index != n.index and o.name != failed and o.alive()]
            # Only a node in a Primary component can be a donor: the donor's death may have taken
            # the survivors' quorum with it (the joiner had counted as a member).
            restored = ""
            if failed is not None and running and isinstance(first_error, GaveUp):
                restored = self._restore_primary_of_survivors(site, running)
            others = [o.name for o in running if (h := o.health()) is not None and h.in_quorum]
            if failed is None or not others:
                names = ", ".join(o.name for o in running) or "none"
                why = (
                    "no donor was named in its log"
                    if failed is None
                    else f"no other node is in a Primary component ({names} running); "
                    f"start {failed} again first, then this node"
                )
                raise ComponentError(f"{first_error}; not retried: {why}") from None
            g = n.grastate()
            position = n.recover_position() if g is not None and g.crashed else None
            self._start(site, n, start_position=position, donor=others[0])
            offset = n.log_offset or 0
            try:
                n.wait_synced(timeout)
            except ComponentError as second:
                raise ComponentError(
                    f"{first_error}; a second attempt with donor {others[0]} failed too: {second}"
                ) from None
            retried = (
                f" (its donor {failed} failed during the transfer;{restored} retried with donor {others[0]})"
            )
        n.start_health_agent()
        site.recorded(n)
        kind = n.join_kind_since(offset)
        how = f" after recovering {position}" if position else ""
        return f"n{n.index} rejoined by {kind}{how} in {time.monotonic() - t0:.1f} s{retried}"

    def _restore_primary_of_survivors(self, site: Site, running: Sequence[DbNode]) -> str:
        """After a donor died mid-transfer and its stranded joiner was killed, the one or two nodes
        left may have lost Primary: the dead donor and the joiner had counted as members of the
        3-member view. Every member outside the survivors is then a stopped process (checked here,
        not guessed from the network), so no other component can exist: re-forming Primary on the
        most advanced survivor (pc.bootstrap, Galera's documented recovery) picks no winner. Done
        only when every survivor sees exactly the survivors, in one component."""
        if self._survivors_primary(site):
            return ""
        names = {o.name for o in running}
        deadline = site.clock.now() + self.topology.mariadb.evs_inactive_timeout + 10
        while True:
            views = [o.health() for o in running]
            settled = all(h is not None and not h.in_quorum and h.size == len(running) for h in views)
            if settled or site.clock.now() >= deadline:
                break
            site.clock.sleep(0.5)
        if not settled or any(o.alive() for o in site.nodes() if o.name not in names):
            return ""
        best = max(running, key=lambda o: (h.progress if (h := o.health()) is not None else -1))
        best.query("SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'")
        _galera(best).wait_synced(30)
        return (
            f" the survivors had lost Primary with it ({', '.join(sorted(names))}; every other member "
            f"stopped), re-formed on {best.name};"
        )

    # ------------------------------------------------------------------ heal and cold start

    def restart_nodes(self, site: Site, indexes: Sequence[int], timeout: float = JOIN_TIMEOUT) -> list[str]:
        """Restart killed or stopped nodes (the heal of kill and stop faults).

        - No node runs any more (kill all): a cold start from the safe or most advanced node.
        - A Primary component survives: rejoin one by one (each by IST when its gcache gap allows).
        - Survivors lost quorum (non-Primary): start every killed node at once. Galera re-forms the
          Primary component by itself (pc.recovery, gvwstate.dat) once every member of the last
          Primary view is back; started one at a time, the first would wait for the others forever.
          We never bootstrap a live non-Primary cluster: that would be the tool picking a winner.
        """
        nodes = site.nodes()
        if not any(n.alive() for n in nodes):
            return self.start_all(site, lambda _: None)
        if self._survivors_primary(site):
            return [self.start_node(site, i, timeout) for i in indexes]
        out = []
        started = []
        for i in indexes:
            n = _galera(site.node(i))
            if n.alive():
                continue
            g = n.grastate()
            pos = n.recover_position() if g is not None and g.crashed else None
            self._start(site, n, start_position=pos)
            started.append(n)
            out.append(f"n{i} started" + (f" after recovering {pos}" if pos else ""))
        t0 = time.monotonic()
        # The component re-forms from the members of the last Primary view: the survivors and the
        # nodes started here. A node stopped on purpose before the fault (an experiment running
        # fewer nodes than the cluster has) left that view and is not waited for.
        members = [_galera(n) for n in site.nodes() if n.alive()]
        for n in members:
            n.wait_synced(timeout, expect_size=len(members))
        took = time.monotonic() - t0
        out.append(f"Primary component re-formed by itself with {len(members)} nodes in {took:.1f} s")
        for n in started:
            n.start_health_agent()
            site.recorded(n)
        return out

    def _survivors_primary(self, site: Site) -> bool:
        """Do the running nodes form a Primary component of their own?

        Right after a crash the survivors still report the old view (dead members included, still
        Primary) until evs.suspect_timeout has passed: wait until their view counts only live
        members, or they have lost Primary, bounded by evs.inactive_timeout."""
        alive = [n for n in site.nodes() if n.alive()]
        deadline = site.clock.now() + self.topology.mariadb.evs_inactive_timeout + 10
        while True:
            views = [n.health() for n in alive]
            if any(h is not None and h.in_quorum and h.size <= len(alive) for h in views):
                return True
            if all(h is None or not h.in_quorum for h in views) or site.clock.now() >= deadline:
                return False
            site.clock.sleep(0.2)

    def start_all(self, site: Site, report: Report) -> list[str]:
        """Cold start: bootstrap from the node that is safe to (or the most advanced one after a
        crash of all), then join the others one by one."""
        nodes = [_galera(n) for n in site.nodes()]
        if any(n.alive() for n in nodes):
            running = [n for n in nodes if n.alive()]
            return [self.start_node(site, n.index) for n in nodes if not n.alive()] or [
                f"all {len(running)} nodes already running"
            ]
        out: list[str] = []
        positions: dict[int, str | None] = {}
        states = {n.index: n.grastate() for n in nodes}
        chosen = next((i for i, g in states.items() if g is not None and g.safe_to_bootstrap), None)
        if chosen is None:
            # Every node crashed: recover positions and bootstrap from the highest seqno. Its
            # grastate gets the recovered uuid:seqno (not seqno -1), so the cluster's history goes
            # on from there: same cluster UUID, seqnos continuing, and the others can rejoin by IST
            # where the bootstrap node's gcache covers their gap (issue 15, item 4).
            # Each node's recovery is an InnoDB start on its own datadir, so they run at once: the
            # wait is the slowest node's, not the sum (three small nodes after a coordinated crash:
            # 0.44 s for all three; a large redo log to apply makes each take longer).
            with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
                found = pool.map(lambda n: n.recover_position(), nodes)
                positions = dict(zip((n.index for n in nodes), found, strict=True))
            best: tuple[int, str, int] | None = None
            for n in nodes:
                pos = positions[n.index]
                if pos is None:
                    continue
                uuid, seqno = pos.rsplit(":", 1)
                out.append(f"n{n.index} recovered position {pos}")
                report(out[-1])
                if best is None or int(seqno) > best[2]:
                    best = (n.index, uuid, int(seqno))
            if best is None:
                raise ComponentError("no node could recover its position; see the nodes' recover.log")
            chosen = best[0]
            _galera(site.node(chosen)).set_grastate(GraState(best[1], best[2], safe_to_bootstrap=True))
            out.append(f"n{chosen} has the highest seqno ({best[2]}); bootstrapping from {best[1]}:{best[2]}")
            report(out[-1])
        first = _galera(site.node(chosen))
        self._start(site, first, bootstrap=True)
        first.wait_synced(JOIN_TIMEOUT)
        first.start_health_agent()
        site.recorded(first)
        out.append(f"n{chosen} bootstrapped")
        report(out[-1])
        for n in nodes:
            if n.index != chosen:
                # the position recovered above: a second recovery would read the same one
                joiner = _galera(site.node(n.index))
                out.append(self._rejoin(site, joiner, JOIN_TIMEOUT, positions.get(n.index)))
                report(out[-1])
        return out
