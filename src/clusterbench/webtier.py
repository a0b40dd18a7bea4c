"""The web tier of a cluster (`[web] nodes = W`): the web nodes (nginx + php-fpm + clusterbench's
application) and the front HAProxy over them (fe1, or the fe1/fe2 keepalived pair with a VIP of
its own), their persisted processes, bring-up after the database's balancers, status, the
operations faults use, and teardown (mixed into Cluster).

The web nodes reach the database through the database balancer (its VIP, else lb1) with an
account of their own (Credentials.web_user: SELECT and INSERT on the cluster's schema)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterbench.balancers import (
    BACKENDS_TIMEOUT,
    BalancerView,
    balancer_view,
    ready_backup,
    stored_proc,
    wait_holder,
)
from clusterbench.clock import Clock
from clusterbench.components.daemon import deploy, stop_each
from clusterbench.components.haproxy.component import HAProxy
from clusterbench.components.keepalived.component import Keepalived
from clusterbench.components.web.component import WebNode
from clusterbench.components.web.config import WebDatabase, WebNodeConfig
from clusterbench.components.web.front import (
    front_haproxy_config,
    front_keepalived_config,
    front_role,
    web_role,
)
from clusterbench.components.web.schema import WEB_SCHEMA
from clusterbench.components.web.status import FpmStatus, NginxStatus
from clusterbench.engines.base import Credentials
from clusterbench.errors import ClusterStateError, ComponentError
from clusterbench.hosts.base import Machine, ProcessRef
from clusterbench.spec.topology import Topology
from clusterbench.telemetry.sites import Watch

Report = Callable[[str], None]


@dataclass
class WebView:
    """One web node as `status` shows it."""

    index: int
    role: str  # w1
    host: str  # the role whose host it runs on: w1, or n1 when colocated
    url: str
    nginx_alive: bool
    fpm_alive: bool
    health: int | None  # HTTP status of its /health (None: nothing answered)
    pool: FpmStatus | None = None
    nginx: NginxStatus | None = None


@dataclass
class WebTierStatus:
    nodes: list[WebView]
    fronts: list[BalancerView]  # fe1 (and fe2) and what they see of the web nodes
    urls: list[str]  # where HTTP clients go
    vip: str | None = None  # "ip:port" of the front pair's VIP
    vip_holders: list[str] = field(default_factory=list)


class WebOps:
    """What Cluster knows of its web tier; it provides the state, hosts and provider used here."""

    state: dict[str, Any]
    clock: Clock
    provider: Any
    topology: Topology
    creds: Credentials | None
    host: Callable[[str], Machine]
    role_dir: Callable[[str], Path]
    interface: Callable[[str], str]
    save: Callable[[], None]

    # ------------------------------------------------------------------ web nodes

    def _check_web_index(self, index: int) -> None:
        n = self.topology.web.nodes
        if index not in self.topology.web.indexes():
            have = f"web nodes w1-w{n}" if n > 1 else ("web node w1 only" if n else "no web tier")
            raise ClusterStateError(
                f"web node {index} does not exist; cluster '{self.topology.name}' has {have}"
            )

    def _web_database(self) -> WebDatabase:
        host, port = self.topology.web_database_address()
        c = self.creds
        # Without the secrets (a teardown after they were lost) the node can still be stopped.
        user, password = (c.web_user, c.web_password) if c is not None else ("cbweb", "")
        return WebDatabase(host, port, user, password, WEB_SCHEMA)

    def web_node(self, index: int) -> WebNode:
        self._check_web_index(index)
        t = self.topology
        role = web_role(index)
        cfg = WebNodeConfig(
            cluster_name=t.name, index=index, address=t.web_address(index), dir=self.role_dir(role),
            settings=t.web, database=self._web_database(), cpus=t.web_resources(index).cpus(),
        )  # fmt: skip
        st = self.state.get("web", {}).get(role, {})
        refs = {k: stored_proc(st, k) for k in ("nginx", "fpm")}
        host_role = t.web_host_role(index)
        # the node's limits: its own, or (colocated) its database node's host's
        host = self.provider.limited_host(host_role)
        return WebNode(cfg, host, nginx=refs["nginx"], fpm=refs["fpm"], clock=self.clock)

    def web_nodes(self) -> list[WebNode]:
        return [self.web_node(i) for i in self.topology.web.indexes()]

    def _record_web(self, w: WebNode) -> None:
        self.state.setdefault("web", {})[w.name] = w.refs()
        self.save()

    # ------------------------------------------------------------------ the front balancer(s)

    def _check_front_index(self, index: int) -> None:
        have = self.topology.web.front_indexes()
        if index not in have:
            what = f"fe1-fe{len(have)}" if len(have) > 1 else ("fe1 only" if have else "no front balancer")
            raise ClusterStateError(
                f"front balancer {index} does not exist; cluster '{self.topology.name}' has {what}"
            )

    def _front_state(self, role: str) -> dict[str, Any]:
        return dict(self.state.get("fronts", {}).get(role) or {})

    def front(self, index: int = 1) -> HAProxy:
        self._check_front_index(index)
        role = front_role(index)
        cfg = front_haproxy_config(self.topology, index, self.role_dir(role))
        proc = stored_proc(self._front_state(role), "proc")
        return HAProxy(cfg, self.host(role), proc=proc, clock=self.clock)

    def fronts(self) -> list[HAProxy]:
        return [self.front(k) for k in self.topology.web.front_indexes()]

    def front_keepalived(self, index: int) -> Keepalived | None:
        """keepalived on fe<index> of the front pair; None without a front VIP."""
        if self.topology.front_vip_address() is None:
            return None
        self._check_front_index(index)
        role = front_role(index)
        cfg = front_keepalived_config(
            self.topology, index, self.role_dir(role), prefixlen=self.provider.vip_prefixlen(),
            interface=self.interface(role),
        )  # fmt: skip
        proc = stored_proc(self._front_state(role), "keepalived")
        return Keepalived(cfg, self.host(role), proc=proc, clock=self.clock)

    def front_keepaliveds(self) -> list[Keepalived]:
        out = [self.front_keepalived(k) for k in self.topology.web.front_indexes()]
        return [ka for ka in out if ka is not None]

    def _record_front(self, role: str, key: str, proc: ProcessRef | None) -> None:
        self.state.setdefault("fronts", {}).setdefault(role, {})[key] = proc.to_json() if proc else None
        self.save()

    def web_backend_names(self) -> list[str]:
        return [web_role(i) for i in self.topology.web.indexes()]

    # ------------------------------------------------------------------ up and down

    def _up_web(self, report: Report) -> None:
        """The web nodes, then the front HAProxy(s) and their keepalived pair; returns when every
        front sees every web node UP (their /health reached the database) and, with a pair,
        exactly one holds the front VIP."""

        def started(w: WebNode) -> None:
            self._record_web(w)
            on = self.topology.web_host_role(w.cfg.index)
            where = "" if on == w.name else f" on {on}'s host"
            report(f"web node {w.name} started{where}: {w.cfg.url}, php-fpm {w.cfg.children} children, "
                   f"nginx {w.cfg.nginx_workers} worker(s)")  # fmt: skip

        deploy(self.web_nodes(), started)
        hs = self.fronts()
        for h in hs:
            h.write_files()
            h.validate()
            h.start()
            self._record_front(h.cfg.dir.name, "proc", h.proc)
        kas = self.front_keepaliveds()
        # after the HAProxies: their track script would hold them in FAULT
        deploy(kas, lambda ka: self._record_front(ka.cfg.role, "keepalived", ka.proc))
        for h in hs:
            h.wait_all_up(self.web_backend_names(), timeout=BACKENDS_TIMEOUT)
            report(f"front haproxy {h.cfg.dir.name} UP on {h.cfg.address}:{self.topology.web.front.port}, "
                   f"every web node UP")  # fmt: skip
        if kas:
            holder = self.wait_front_vip(timeout=3 * self.topology.web.front.advert_int + 10)
            vip = f"{self.topology.front_vip_address()}:{self.topology.web.front.port}"
            report(f"front keepalived: VIP {vip} on {holder}")

    def _down_web(self) -> list[str]:
        """Stop the front pair's keepalived (it drops the VIP), the front HAProxies, then the web
        nodes; one line per process that was running."""
        if not self.state or not self.topology.web.nodes:
            return []
        done = stop_each(self.front_keepaliveds(), lambda ka: f"keepalived {ka.cfg.role}")
        done += stop_each(self.fronts(), lambda h: f"front haproxy {h.cfg.dir.name}")
        return done + stop_each(self.web_nodes(), lambda w: f"web node {w.name}")

    # ------------------------------------------------------------------ status

    def web_status(self) -> WebTierStatus | None:
        t = self.topology
        if not t.web.nodes:
            return None
        nodes = []
        for w in self.web_nodes():
            st = w.status()
            health = w.health() if st.nginx_up else None
            nodes.append(WebView(w.cfg.index, w.name, t.web_host_role(w.cfg.index), w.cfg.url, st.nginx_up,
                                 st.fpm_up, health, st.fpm, st.nginx))  # fmt: skip
        fronts = [balancer_view(h, self.front_keepalived, t.web.front.port) for h in self.fronts()]
        vip = t.front_vip_address()
        return WebTierStatus(nodes, fronts, t.web_urls(), f"{vip}:{t.web.front.port}" if vip else None,
                             [f.role for f in fronts if f.holds_vip])  # fmt: skip

    def web_watches(self) -> list[Watch]:
        """What telemetry watches of the tier: each web node as php-fpm and nginx with all their
        workers, each front HAProxy with its view of the web nodes."""
        out = []
        for w in self.web_nodes():
            p = w.fpm or w.nginx
            out.append(Watch(w.name, p.pid if p else None, p.start_ticks if p else None,
                             pidfile=w.cfg.fpm_pid, tree=(w.cfg.nginx_pid,)))  # fmt: skip
        for h in self.fronts():
            p = h.proc
            out.append(Watch(h.cfg.dir.name, p.pid if p else None, p.start_ticks if p else None,
                             pidfile=h.cfg.pid_path, stats_socket=h.cfg.stats_socket))  # fmt: skip
        return out

    # ------------------------------------------------------------------ operations (faults)

    def web_kill(self, index: int) -> str:
        """SIGKILL to the web node's nginx and php-fpm, masters and workers: it dies at once."""
        return self._web_act(index, lambda w: w.kill())

    def web_stop(self, index: int) -> str:
        return self._web_act(index, lambda w: w.stop())

    def _web_act(self, index: int, act: Callable[[WebNode], str]) -> str:
        """`act` (a stop, a kill) on web node `index`, whose processes are recorded right after."""
        w = self.web_node(index)
        what = act(w)
        self._record_web(w)
        return f"web node {w.name} {what}"

    def web_pause(self, index: int) -> str:
        return f"web node w{index} {self.web_node(index).pause()}"

    def web_resume(self, index: int) -> str:
        return f"web node w{index} {self.web_node(index).resume()}"

    def web_start(self, index: int, timeout: float = BACKENDS_TIMEOUT) -> str:
        """Start a web node again (what a killed one left is stopped first) and wait until every
        running front balancer sees it UP."""
        w = self.web_node(index)
        t0 = time.monotonic()
        if w.alive():
            return f"web node {w.name} already running"
        w.start()
        self._record_web(w)
        for h in self.fronts():
            if h.alive():
                h.wait_all_up([w.name], timeout=timeout)
        return f"web node {w.name} UP in {time.monotonic() - t0:.1f} s"

    def front_kill(self, index: int) -> str:
        """kill -9 of front HAProxy fe<index>; with a pair its keepalived gives the VIP up."""
        h = self.front(index)
        held = front_role(index) in self.front_vip_holders()
        what = h.kill()
        self._record_front(h.cfg.dir.name, "proc", h.proc)
        return f"front haproxy {h.cfg.dir.name} {what}" + (" (it held the front VIP)" if held else "")

    def front_start(self, index: int, timeout: float = BACKENDS_TIMEOUT) -> str:
        """Start front HAProxy fe<index> again, wait until it sees every web node UP and, with a
        pair, until its keepalived is a ready backup (the VIP stays where it is: nopreempt)."""
        h = self.front(index)
        role = front_role(index)
        if h.alive():
            return f"front haproxy {role} already running"
        t0 = time.monotonic()
        h.start()
        self._record_front(role, "proc", h.proc)
        h.wait_all_up(self.web_backend_names(), timeout=timeout)
        ready_backup(self.front_keepalived(index), lambda ka: self._record_front(role, "keepalived", ka.proc))
        return f"front haproxy {role} UP in {time.monotonic() - t0:.1f} s"

    def front_vip_holders(self) -> list[str]:
        """Roles of the front balancers holding the front VIP now (['fe1'], say)."""
        return [ka.cfg.role for ka in self.front_keepaliveds() if ka.holds_vip()]

    def front_vip_holder(self) -> str | None:
        holders = self.front_vip_holders()
        return holders[0] if len(holders) == 1 else None

    def wait_front_vip(self, timeout: float, *, not_on: str | None = None, poll: float = 0.05) -> str:
        """Wait until exactly one front balancer (other than `not_on`) holds the front VIP."""
        vip = self.topology.front_vip_address()
        if vip is None:
            raise ClusterStateError(
                f"cluster '{self.topology.name}' has no front VIP; it needs [web.front] count = 2"
            )
        holder, seen = wait_holder(self.front_vip_holders, self.clock, timeout, not_on=not_on, poll=poll)
        if holder is not None:
            return holder
        logs = ", ".join(str(ka.cfg.log_path) for ka in self.front_keepaliveds())
        raise ComponentError(
            f"the front VIP {vip} is not on exactly one front balancer"
            + (f" other than {not_on}" if not_on else "")
            + f" after {timeout:g} s ({', '.join(seen) or 'none'} holds it); see {logs}"
        )

    def settle_web(self, timeout: float) -> list[str]:
        """Every web node running and every running front balancer seeing them all UP: the end of
        settling, after a fault (a web node a heal could not start is started here)."""
        if not self.topology.web.nodes:
            return []
        t0 = time.monotonic()
        notes = [self.web_start(w.cfg.index, timeout) for w in self.web_nodes() if not w.alive()]
        running = [h for h in self.fronts() if h.alive()]
        for h in running:
            h.wait_all_up(self.web_backend_names(), timeout=max(5.0, timeout - (time.monotonic() - t0)))
        if running:
            notes.append(f"front balancers see every web node UP {time.monotonic() - t0:.1f} s later")
        return notes
