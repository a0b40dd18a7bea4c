"""The cluster lock and the load-client record, as the commands use them (see clusterbench.lock and
clusterbench.loadclients). Every command that loads or changes a cluster calls `claim` first."""

from __future__ import annotations

from collections.abc import Callable

from clusterbench import lock
from clusterbench.cli import console, invocation
from clusterbench.cli.common import resolve_name
from clusterbench.cluster import Cluster
from clusterbench.loadclients import LoadClient, LoadClients, SignalHost
from clusterbench.paths import home_dir


def command_line() -> str:
    return invocation.command_line()


def claim(name: str, *, force: bool = False, hint: str = "") -> None:
    """Take cluster `name`'s lock for this command (ClusterBusy, exit 2, naming the holder, when
    another live command has it), then stop load clients a killed clusterbench left running."""
    lock.take(home_dir(), name, command_line(), force=force, hint=hint, report=console.warn)
    stop_load_clients(name)
    remove_stale_option_files()


def remove_stale_option_files() -> None:
    """sysbench option files (passwords) a killed clusterbench could not remove."""
    from clusterbench.workloads.clients import stale_option_files

    d = home_dir() / "secrets"
    for f in stale_option_files(d) if d.is_dir() else []:
        f.unlink(missing_ok=True)


def load_claimed(name: str | None) -> Cluster:
    """The cluster, with its lock taken for this command (for commands that change it)."""
    resolved = resolve_name(name)
    cluster = Cluster.load(resolved)
    claim(resolved)
    return cluster


def _remote_hosts(name: str) -> Callable[[LoadClient], SignalHost | None]:
    cache: dict[str, SignalHost] = {}

    def find(r: LoadClient) -> SignalHost | None:
        if not cache:
            try:
                for h in Cluster.load(name).client_hosts():
                    cache[h.name] = h
            except Exception:  # noqa: BLE001 - no state: those machines cannot be reached
                return None
        return cache.get(r.host)

    return find


def stop_load_clients(name: str, *, everything: bool = False) -> list[str]:
    """Stop the load clients of cluster `name` whose clusterbench is gone (every one with
    `everything`, for `down`); print and return a line for each."""
    lc = LoadClients(home_dir(), name)
    recs = lc.records() if everything else lc.orphans()
    if not recs:
        return []
    lines = lc.stop(recs, _remote_hosts(name))
    for line in lines:
        console.warn(f"cluster '{name}': {line}" + ("" if everything else " (left by a killed clusterbench)"))
    return lines
