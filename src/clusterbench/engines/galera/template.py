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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterbench.engines.galera.status import GraState
from clusterbench.hosts.base import Machine

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
