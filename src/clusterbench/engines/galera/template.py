"""A datadir made once and copied for every local bring-up after it: what sandbox tools do with
pre-extracted servers. The first bring-up of a given server build and settings initialises node
1, bootstraps it once and stops it cleanly (as every bring-up did), and keeps a copy of that
datadir with its position (cluster UUID and seqno) under `<home>/templates/`. A later bring-up
copies it to every node and writes its own accounts' passwords into each copy offline: no
initialisation, no first start and stop. Every node then holds one position, so the engine starts
them together (engine.py). Clusters made from one template share its cluster UUID (isolated all
the same: each listens on its own addresses).

The key is the server's `--version` and the topology's server settings, so a new MariaDB build or
other settings (a redo log size) make a new template. A template is written to a temporary
directory and renamed into place, so a bring-up killed while making one leaves none.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterbench.engines.base import Report, Site
from clusterbench.engines.galera.node import GaleraNode, account_sql
from clusterbench.engines.galera.status import GraState, render_gvwstate
from clusterbench.errors import ComponentError
from clusterbench.hosts.base import Machine
from clusterbench.spec.topology import Topology

META = "template.json"


def template_key(version: str, settings: dict[str, Any]) -> str:
    """Which template a bring-up can use: the server build and the settings (pure)."""
    text = json.dumps({"version": version.strip(), "settings": settings}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Template:
    path: Path  # the datadir copy
    uuid: str
    seqno: int

    @staticmethod
    def find(root: Path, key: str) -> Template | None:
        meta = root / f"galera-{key}" / META
        try:
            data = json.loads(meta.read_text())
            return Template(meta.parent / "data", str(data["uuid"]), int(data["seqno"]))
        except (OSError, ValueError, KeyError):
            return None

    @staticmethod
    def save(host: Machine, datadir: Path, root: Path, key: str, state: GraState) -> Template:
        """Keep a copy of a cleanly stopped node's datadir (without its gcache and pid files)."""
        final = root / f"galera-{key}"
        tmp = root / f".galera-{key}.{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "data").mkdir(parents=True)
        host.run(["cp", "-a", f"{datadir}/.", f"{tmp / 'data'}/"], timeout=300)
        for name in ("galera.cache", "mysqld.pid", "grastate.dat", "gvwstate.dat"):
            (tmp / "data" / name).unlink(missing_ok=True)
        (tmp / META).write_text(json.dumps({"uuid": state.uuid, "seqno": state.seqno}) + "\n")
        try:
            tmp.rename(final)
        except OSError:  # another bring-up made it meanwhile: theirs is as good
            shutil.rmtree(tmp, ignore_errors=True)
        return Template.find(root, key) or Template(final / "data", state.uuid, state.seqno)

    def copy_to(self, host: Machine, datadir: Path) -> None:
        """Fill an empty datadir with the template (owners kept: mysql)."""
        host.run(["cp", "-a", f"{self.path}/.", f"{datadir}/"], timeout=300)


Start = Callable[..., None]  # the engine's start of a node: start(node, bootstrap=...)


def prepare_datadirs(
    site: Site, topology: Topology, nodes: list[GaleraNode], report: Report, start: Start
) -> GraState | None:
    """Every node's datadir ready: from the template when there is one, else node 1 initialised,
    bootstrapped once and stopped, and (unless joiners are to take a full SST) copied to the
    others, and locally kept as the template. Returns the position every node now holds (all
    stopped, so they can start together), or None when only node 1 has a datadir (the joiners
    start empty and take an SST)."""
    first = nodes[0]
    root = site.template_root
    key = ""
    if root is not None:
        key = template_key(first.server_version(), topology.node_settings(1).model_dump())
        made = Template.find(root, key)
        if made is not None:
            from_template(made, nodes, report)
            return GraState(made.uuid, made.seqno, safe_to_bootstrap=False)
    first.install_db()
    first.run_bootstrap_sql(account_sql(first.creds))
    # With provider.seed = "sst" joiners start empty and each takes a full SST from a donor,
    # machine to machine (for a controller far from the machines).
    if topology.remote and topology.provider.seed != "copy":
        return None
    state = seed(site, first, nodes[1:], report, start)
    if root is not None:
        Template.save(first.host, first.datadir, root, key, state)
    return state


def from_template(made: Template, nodes: list[GaleraNode], report: Report) -> None:
    """Every node gets the template and this cluster's accounts (the template's have another
    cluster's passwords), written offline on each at once: the account tables are Aria, so the
    nodes' InnoDB and their replication position stay the template's: one position on every
    node, so they can start together with no state transfer."""
    first = nodes[0]

    def prepare(n: GaleraNode) -> None:
        made.copy_to(n.host, n.datadir)
        n.set_grastate(GraState(made.uuid, made.seqno, safe_to_bootstrap=n is first))
        n.run_bootstrap_sql(account_sql(n.creds, replace=True))

    with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        list(pool.map(prepare, nodes))
    report(f"datadirs copied from the template {made.path.parent.name}")


def seed(site: Site, first: GaleraNode, joiners: list[GaleraNode], report: Report, start: Start) -> GraState:
    """Bootstrap node 1 once and stop it cleanly so InnoDB and grastate.dat both hold the same
    uuid:seqno, then give every other node a copy. InnoDB's own wsrep position wins over
    grastate.dat, so a copy of a never-started datadir would still need an SST."""
    start(first, bootstrap=True)
    first.wait_synced(60)
    first.stop(timeout=60)
    state = first.grastate()
    if state is None or state.seqno < 0:
        raise ComponentError(f"node n1 did not record its position at shutdown; see {first.error_log}")
    if joiners:
        site.copy_datadir(first, joiners, ["galera.cache", "*.pid"], report)
    for n in joiners:
        n.set_grastate(GraState(state.uuid, state.seqno, safe_to_bootstrap=False))
    return state


def start_together(
    nodes: list[GaleraNode], state: GraState, report: Report, start: Start, timeout: float
) -> None:
    """Nodes that all hold one position, started at once. Each is given the same Primary view
    (gvwstate.dat) naming them all; Galera restores that component as soon as every member is
    connected (pc.recovery), with no bootstrap, and finds no one behind, so no state transfer.
    A node that exits fails the wait at once, quoting its errors."""
    ids = sorted(str(uuid.uuid4()) for _ in nodes)  # sorted: n1 is local index 0, n2 1, ...
    for n, me in zip(nodes, ids, strict=True):
        n.set_grastate(GraState(state.uuid, state.seqno, safe_to_bootstrap=False))
        n.host.put_file(n.datadir / "gvwstate.dat", render_gvwstate(me, ids), mode=0o660, owner="mysql")
    for n in nodes:
        start(n)

    def exited() -> str | None:
        # raised from here, so the error names the node that exited and quotes its own log
        for o in nodes:
            if not o.alive():
                raise ComponentError(
                    f"node {o.name} exited while joining; errors from {o.error_log} since its start: "
                    f"{o.error_log_tail()}"
                )
        return None

    for n in nodes:
        n.wait_synced(timeout, expect_size=len(nodes), give_up=exited)
    at = f"{state.uuid}:{state.seqno}"
    report(f"{len(nodes)} nodes started together at {at}: one Primary component, no state transfer")
