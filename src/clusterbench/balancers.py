"""The balancers of a cluster: HAProxy on lb1 (and lb2), keepalived and the VIP of a pair, their
persisted processes, bring-up, kill and restart (mixed into Cluster)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterbench.clock import Clock
from clusterbench.components.daemon import deploy
from clusterbench.components.haproxy.component import HAProxy
from clusterbench.components.haproxy.config import HAProxyConfig
from clusterbench.components.haproxy.status import BackendServer
from clusterbench.components.keepalived.component import Keepalived
from clusterbench.components.keepalived.config import KeepalivedConfig
from clusterbench.errors import ClusterStateError, ComponentError
from clusterbench.hosts.base import Machine, ProcessRef
from clusterbench.spec.topology import Topology

BALANCER_ROLE = "lb1"
BACKENDS_TIMEOUT = 30.0

Report = Any


def balancer_role(index: int) -> str:
    return f"lb{index}"


def stored_proc(st: dict[str, Any], key: str) -> ProcessRef | None:
    """The process recorded under `key` in a role's state entry ("proc" for its HAProxy,
    "keepalived"...); None when none is."""
    return ProcessRef.from_json(st[key]) if st.get(key) else None


@dataclass
class BalancerView:
    """One HAProxy as `status` shows it (a database balancer lbN or a web front feN) and what it
    sees of its servers."""

    index: int
    role: str
    address: str  # "ip:port" of this HAProxy itself
    alive: bool
    backends: list[BackendServer] = field(default_factory=list)
    keepalived_alive: bool | None = None  # None: no keepalived (a single HAProxy)
    holds_vip: bool = False


def balancer_view(h: HAProxy, keepalived: Callable[[int], Keepalived | None], port: int) -> BalancerView:
    """HAProxy `h` now, with the keepalived beside it (`keepalived(index)`: None without a pair);
    clients reach it on `port`."""
    role = h.cfg.dir.name
    index = int(role[2:])
    ka = keepalived(index)
    return BalancerView(index, role, f"{h.cfg.address}:{port}", h.alive(), h.servers(),
                        ka.alive() if ka else None, bool(ka and ka.holds_vip()))  # fmt: skip


def ready_backup(ka: Keepalived | None, record: Callable[[Keepalived], None]) -> None:
    """After its HAProxy started again: keepalived beside it started too if it is not running
    (and recorded), then waited for until out of FAULT. Only once its check passed `rise` times
    can it take the VIP over, so a fault right after this one sees a ready backup."""
    if ka is None:
        return
    if not ka.alive():
        ka.start()
        record(ka)
    c = ka.cfg
    ka.wait_ready(c.check_rise * c.check_interval + 3 * c.advert_int + 5)


def wait_holder(
    holders: Callable[[], list[str]], clock: Clock, timeout: float, *, not_on: str | None = None,
    poll: float = 0.05,
) -> tuple[str | None, list[str]]:
    """Poll `holders` (who has a VIP now) until exactly one (other than `not_on`) has it:
    (that one, []), or (None, who had it last) after `timeout`."""
    deadline = clock.now() + timeout
    while True:
        seen = holders()
        if len(seen) == 1 and seen[0] != not_on:
            return seen[0], []
        if clock.now() >= deadline:
            return None, seen
        clock.sleep(poll)


class BalancerOps:
    """What Cluster knows of its balancers; it provides the state, hosts and engine used here."""

    state: dict[str, Any]
    clock: Clock
    provider: Any
    engine: Any
    topology: Topology
    host: Callable[[str], Machine]
    role_dir: Callable[[str], Path]
    interface: Callable[[str], str]
    save: Callable[[], None]

    def _check_balancer_index(self, index: int) -> None:
        t = self.topology
        if index not in t.balancer_indexes():
            have = f"lb1-lb{t.balancer.count}" if t.balancer.count > 1 else "lb1 only"
            raise ClusterStateError(
                f"balancer {index} does not exist; cluster '{t.name}' has "
                + (have if t.balancer.kind == "haproxy" else "no balancer")
            )

    def _balancers_state(self) -> dict[str, Any]:
        """For writing: state["balancers"][role] = {"proc": HAProxy, "keepalived": keepalived}."""
        legacy = self.state.pop("balancer", None)  # lb1, as written before balancer pairs existed
        out: dict[str, Any] = self.state.setdefault("balancers", {})
        if legacy and BALANCER_ROLE not in out:
            out[BALANCER_ROLE] = legacy
        return out

    def _balancer_state(self, role: str) -> dict[str, Any]:
        st = self.state.get("balancers", {}).get(role)
        if st is None and role == BALANCER_ROLE:
            st = self.state.get("balancer")
        return st or {}

    def haproxy(self, index: int = 1) -> HAProxy | None:
        """HAProxy `index` (lb1 by default); None when the cluster has no balancer."""
        t = self.topology
        if t.balancer.kind != "haproxy":
            return None
        self._check_balancer_index(index)
        role = balancer_role(index)
        cfg = HAProxyConfig(
            cluster_name=t.name,
            address=t.balancer_address(index),
            dir=self.role_dir(role),
            settings=t.balancer,
            servers=tuple((f"n{i}", t.node_address(i)) for i in t.node_indexes()),
            vip=t.vip_address(),
            routes=self.engine.routes(),
        )
        proc = stored_proc(self._balancer_state(role), "proc")
        return HAProxy(cfg, self.host(role), proc=proc, clock=self.clock)

    def haproxies(self) -> list[HAProxy]:
        """Every HAProxy: [lb1] or [lb1, lb2]; [] without a balancer."""
        out = []
        for k in self.topology.balancer_indexes():
            h = self.haproxy(k)
            assert h is not None
            out.append(h)
        return out

    def keepalived(self, index: int) -> Keepalived | None:
        """keepalived on balancer `index` of a pair; None when there is no VIP."""
        t = self.topology
        vip = t.vip_address()
        if vip is None:
            return None
        self._check_balancer_index(index)
        role = balancer_role(index)
        peer = 2 if index == 1 else 1
        cfg = KeepalivedConfig(
            cluster_name=t.name,
            index=index,
            dir=self.role_dir(role),
            src_ip=t.balancer_address(index),
            peer_ip=t.balancer_address(peer),
            vip=vip,
            prefixlen=self.provider.vip_prefixlen(),
            haproxy_socket=HAProxyConfig.stats_socket_in(self.role_dir(role)),
            advert_int=t.balancer.advert_int,
            interface=self.interface(role),
        )
        proc = stored_proc(self._balancer_state(role), "keepalived")
        return Keepalived(cfg, self.host(role), proc=proc, clock=self.clock)

    def keepaliveds(self) -> list[Keepalived]:
        out = [self.keepalived(k) for k in self.topology.balancer_indexes()]
        return [ka for ka in out if ka is not None]

    def _record_balancer(self, h: HAProxy) -> None:
        entry = self._balancers_state().setdefault(h.cfg.dir.name, {})
        entry["proc"] = h.proc.to_json() if h.proc else None
        self.save()

    def _record_keepalived(self, ka: Keepalived) -> None:
        entry = self._balancers_state().setdefault(ka.cfg.role, {})
        entry["keepalived"] = ka.proc.to_json() if ka.proc else None
        self.save()

    # ------------------------------------------------------------------ endpoints

    def _backend_names(self) -> list[str]:
        return [f"n{i}" for i in self.topology.node_indexes()]

    def _up_balancer(self, report: Report) -> None:
        t = self.topology
        port = t.balancer.port
        hs = self.haproxies()
        for h in hs:
            h.write_files()
            h.validate()
            h.start()
            self._record_balancer(h)
        # keepalived after HAProxy: its track script would otherwise fail and hold it in FAULT.
        kas = self.keepaliveds()
        deploy(kas, self._record_keepalived)
        for h in hs:
            h.wait_all_up(self._backend_names(), timeout=BACKENDS_TIMEOUT)
            report(f"haproxy {h.cfg.dir.name} UP on {h.cfg.address}:{port}")
        if kas:
            holder = self.wait_vip(timeout=3 * t.balancer.advert_int + 10)
            report(f"keepalived: VIP {t.vip_address()}:{port} on {holder}")

    # ------------------------------------------------------------------ balancers

    def vip_holders(self) -> list[str]:
        """Roles of the balancers that have the VIP on their interface now (['lb1'], say)."""
        return [ka.cfg.role for ka in self.keepaliveds() if ka.holds_vip()]

    def vip_holder(self) -> str | None:
        """The one balancer holding the VIP ('lb1' or 'lb2'); None when none or both hold it
        (no VIP, a takeover in progress, or a split brain: see vip_holders())."""
        holders = self.vip_holders()
        return holders[0] if len(holders) == 1 else None

    def wait_vip(self, timeout: float, *, not_on: str | None = None, poll: float = 0.05) -> str:
        """Wait until exactly one balancer (other than `not_on`) holds the VIP; return its role."""
        if self.topology.vip_address() is None:
            raise ClusterStateError(f"cluster '{self.topology.name}' has no VIP")
        holder, holders = wait_holder(self.vip_holders, self.clock, timeout, not_on=not_on, poll=poll)
        if holder is not None:
            return holder
        seen = ", ".join(holders) if holders else "no balancer"
        logs = ", ".join(str(ka.cfg.log_path) for ka in self.keepaliveds())
        raise ComponentError(
            f"the VIP {self.topology.vip_address()} is not on exactly one balancer"
            + (f" other than {not_on}" if not_on else "")
            + f" after {timeout:g} s ({seen} holds it); see {logs}"
        )

    def balancer_kill(self, index: int = 1) -> str:
        """kill -9 HAProxy on balancer `index` (a crash). With a pair, keepalived's track script
        notices within about a second and the peer takes the VIP."""
        h = self.haproxy(index)
        if h is None:
            raise ClusterStateError("this cluster has no balancer")
        held = self.topology.vip_address() is not None and balancer_role(index) in self.vip_holders()
        what = h.kill()
        self._record_balancer(h)
        return f"haproxy {balancer_role(index)} {what}" + (" (it held the VIP)" if held else "")

    def balancer_start(self, index: int = 1, timeout: float = BACKENDS_TIMEOUT) -> str:
        """Start HAProxy on balancer `index` again and wait until it sees every node UP. With a
        pair the VIP stays where it is (nopreempt); this also waits until keepalived there is
        out of FAULT, i.e. a ready backup again (~2 s: its check's `rise`)."""
        h = self.haproxy(index)
        if h is None:
            raise ClusterStateError("this cluster has no balancer")
        role = balancer_role(index)
        if h.alive():
            return f"haproxy {role} already running"
        t0 = time.monotonic()
        h.start()
        self._record_balancer(h)
        h.wait_all_up(self._backend_names(), timeout=timeout)
        ready_backup(self.keepalived(index), self._record_keepalived)
        return f"haproxy {role} UP in {time.monotonic() - t0:.1f} s"

    # ------------------------------------------------------------------ down
