"""The web tier's part of a topology's address plan (pure, mixed into Topology): where each web
node, front balancer and the front VIP are, where HTTP clients go and where the web nodes reach
the database.

Web node w at .20+w (between the nodes and the clients), the front HAProxy pair fe1 .5 and fe2 .7
with its VIP .6 between them, as lb1/VIP/lb2 are .2/.3/.4; a colocated web node has its database
node's address."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from clusterbench.spec.balancer import BalancerSettings
from clusterbench.spec.resources import Resources
from clusterbench.spec.web import WebSettings

WEB_OFFSET = 20
FRONT_OFFSETS = (5, 7)  # fe1, fe2
FRONT_VIP_OFFSET = 6


class WebPlan:
    """Topology's web-tier methods; Topology provides what is declared here."""

    if TYPE_CHECKING:  # Topology's own fields and methods (declared for the type checker only)
        web: WebSettings
        balancer: BalancerSettings

        @property
        def network(self) -> ipaddress.IPv4Network: ...

        def node_address(self, index: int) -> str: ...

        def node_resources(self, index: int) -> Resources: ...

        def client_address(self) -> str | None: ...

    def web_address(self, index: int) -> str:
        """Web node w<index>'s address (.20+index); colocated, its database node's."""
        if self.web.layout == "colocated":
            return self.node_address(index)
        return str(self.network[WEB_OFFSET + index])

    def web_host_role(self, index: int) -> str:
        """The role whose host web node w<index> runs on: its own (w<index>), or colocated
        database node n<index>'s."""
        return f"n{index}" if self.web.layout == "colocated" else f"w{index}"

    def web_resources(self, index: int) -> Resources:
        """The limits web node w<index> runs under: its own, or colocated its host's."""
        if self.web.layout == "colocated":
            return self.node_resources(index)
        return self.web.node_resources(index)

    def front_address(self, index: int = 1) -> str:
        """The own address of front HAProxy fe<index> (fe1 .5, fe2 .7)."""
        return str(self.network[FRONT_OFFSETS[index - 1]])

    def front_vip_address(self) -> str | None:
        """The web front pair's virtual IP, or None with one (or no) front HAProxy."""
        f = self.web.front
        if self.web.nodes == 0 or not f.paired:
            return None
        return f.vip if isinstance(f.vip, str) else str(self.network[FRONT_VIP_OFFSET])

    def web_urls(self) -> list[str]:
        """Where HTTP clients send their requests: the front VIP, else fe1, else (front kind
        'none') each web node; [] without a web tier."""
        w = self.web
        if w.nodes == 0:
            return []
        if w.front.kind == "none":
            return [f"http://{self.web_address(i)}:{w.port}" for i in w.indexes()]
        return [f"http://{self.front_vip_address() or self.front_address()}:{w.front.port}"]

    def web_database_address(self) -> tuple[str, int]:
        """Where the web nodes' application connects: the database balancer (its VIP or lb1)."""
        addr = self.client_address()
        if addr is None:
            raise ValueError("the web tier needs balancer.kind = 'haproxy'")
        return addr, self.balancer.port
