"""`clusterbench provision`: install what each inventory host needs for its roles, with apt-get,
then the engine's own step on each db host (Engine.prepare_host: Group Replication's mysqld).

Only missing packages are installed, on the hosts that need them, all hosts in parallel. Like
scripts/setup.sh, a policy-rc.d that exits 101 keeps the packages' maintainer scripts from
starting mariadb, haproxy or keepalived (mariadb would take port 3306); a policy already on the
machine is left alone, and nothing else is stopped or disabled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clusterbench.engines import make_engine
from clusterbench.errors import PreflightError
from clusterbench.hosts.ssh import SshHost, on_hosts
from clusterbench.providers.ssh_check import HostFacts, packages_for, probe
from clusterbench.spec.topology import InventoryHost, Topology

APT_TIMEOUT = 1200.0

# $@: the packages. Runs as root (through sudo -n for other users).
INSTALL_SCRIPT = r"""
set -e
made=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  made=1
fi
trap '[ -n "$made" ] && rm -f /usr/sbin/policy-rc.d' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "$@" >/dev/null
"""


@dataclass(frozen=True)
class Outcome:
    host: str
    installed: tuple[str, ...]
    error: str | None = None
    prepared: str | None = None  # the engine's own step on a db host (Engine.prepare_host)

    def line(self) -> str:
        if self.error:
            return self.error
        if not self.installed:
            return f"host {self.host}: nothing to install"
        return f"host {self.host}: installed {', '.join(self.installed)}"

    def lines(self) -> list[str]:
        return [self.line()] + ([self.prepared] if self.prepared and not self.error else [])


def provision_host(
    t: Topology, h: InventoryHost, host: SshHost, probe_fn: Callable[[SshHost, list[str]], HostFacts] = probe
) -> Outcome:
    want = packages_for(t, h)
    facts = probe_fn(host, want)
    where = f"host {h.name} ({h.address})"
    if facts.uid != 0 and facts.sudo is not True:
        return Outcome(
            h.name, (), f"{where}: user {h.user} is not root and `sudo -n` needs a password; cannot install"
        )
    if facts.os not in ("debian", "ubuntu") and "debian" not in facts.os_like.split():
        return Outcome(h.name, (), f"{where}: {facts.pretty} is not Debian or Ubuntu; install by hand")
    missing = tuple(facts.missing)
    if missing:
        res = host.run(["sh", "-c", INSTALL_SCRIPT, "sh", *missing], timeout=APT_TIMEOUT, check=False)
        if not res.ok:
            why = f"apt-get failed (exit {res.returncode}): {res.tail(2)}"
            return Outcome(h.name, (), f"{where}: {why}; run it there by hand")
    prepared = None
    if "db" in h.roles:
        try:
            prepared = make_engine(t).prepare_host(host, where)
        except PreflightError as exc:
            return Outcome(h.name, missing, str(exc))
    return Outcome(h.name, missing, prepared=prepared)


def provision(t: Topology, hosts: dict[str, SshHost]) -> list[Outcome]:
    results = on_hosts(list(t.hosts), lambda h: provision_host(t, h, hosts[h.name]))
    out = []
    for h, r in results:
        if isinstance(r, Exception):
            msg = str(r)
            line = msg if msg.startswith(f"host {h.name}") else f"host {h.name}: {msg}"
            out.append(Outcome(h.name, (), line))
        else:
            out.append(r)
    return out
