"""A datadir made once and copied for every local bring-up after it: what sandbox tools do with
pre-extracted servers. The first bring-up of a given server build and settings initialises node
1, bootstraps it once and stops it cleanly (as every bring-up did), and keeps a copy of that
datadir with its position (cluster UUID and seqno) under `<home>/templates/`. A later bring-up
copies it to every node, marks node 1 safe to bootstrap, starts it, and sets its own accounts'
passwords on it (replicated to the joiners as they join by IST): no initialisation, no first
start and stop. Clusters made from one template share its cluster UUID (isolated all the same:
each listens on its own addresses).

The key is the server's `--version` and the topology's server settings, so a new MariaDB build or
other settings (a redo log size) make a new template. A template is written to a temporary
directory and renamed into place, so a bring-up killed while making one leaves none.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterbench.engines.base import Report, Site
from clusterbench.engines.galera.node import GaleraNode, account_sql
from clusterbench.engines.galera.status import GraState
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


def prepare_first(
    site: Site, topology: Topology, nodes: list[GaleraNode], report: Report, start: Start
) -> None:
    """Node 1 up and Synced, and every joiner's datadir ready to join by IST: from the template
    when there is one, else node 1 initialised, bootstrapped once and stopped (and, locally, kept
    as the template)."""
    first = nodes[0]
    root = site.template_root
    key = ""
    if root is not None:
        key = template_key(first.server_version(), topology.node_settings(1).model_dump())
        made = Template.find(root, key)
        if made is not None:
            from_template(made, nodes, report)
            start(first, bootstrap=True)
            first.wait_synced(60)
            return
    first.install_db()
    first.run_bootstrap_sql(account_sql(first.creds))
    # With provider.seed = "sst" joiners start empty and each takes a full SST from a donor,
    # machine to machine (for a controller far from the machines).
    if not topology.remote or topology.provider.seed == "copy":
        state = seed(site, first, nodes[1:], report, start)
        if root is not None:
            Template.save(first.host, first.datadir, root, key, state)
    start(first, bootstrap=True)
    first.wait_synced(60)


def from_template(made: Template, nodes: list[GaleraNode], report: Report) -> None:
    """Every node gets the template and this cluster's accounts (the template's have another
    cluster's passwords), written offline on each at once: the account tables are Aria, so the
    nodes' InnoDB and their replication position stay the template's, and node 1's bootstrap
    leaves the joiners an IST of nothing."""
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
