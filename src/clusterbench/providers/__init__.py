"""Providers make the hosts of a topology: `local` (network namespaces on this machine) or `ssh`
(existing machines). Both offer the same methods; see providers/local.py."""

from __future__ import annotations

from pathlib import Path

from clusterbench.clock import Clock
from clusterbench.providers.local import LocalProvider
from clusterbench.providers.ssh import SshProvider
from clusterbench.spec.topology import Topology

Provider = LocalProvider | SshProvider


def make_provider(topology: Topology, home: Path, cluster_dir: Path, clock: Clock) -> Provider:
    if topology.remote:
        return SshProvider(topology, home, cluster_dir)
    return LocalProvider(topology, cluster_dir, clock)
