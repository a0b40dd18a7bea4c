"""The database balancer's settings (`[balancer]`): HAProxy, alone or as a keepalived pair with a
virtual IP. Pure. The web tier's front balancers (`[web.front]`) are the same model with their
own defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from clusterbench.spec.fields import is_ipv4
from clusterbench.spec.resources import Strict

# lb1 and lb2: one HAProxy, or a keepalived pair
MAX_BALANCERS = 2


class BalancerSettings(Strict):
    """HAProxy in front of the nodes, with a health check that sees Galera state.

    The check is an HTTP clustercheck per node (Synced and Primary and wsrep_ready), never
    `option mysql-check`, which answers OK for a donor or a non-Primary node (RECIPES G6).
    """

    kind: Literal["haproxy", "none"] = "haproxy"
    algorithm: Literal["leastconn", "roundrobin", "first"] = "leastconn"
    port: int = Field(3306, ge=1, le=65535)
    check_interval_ms: int = Field(1000, ge=100, le=60000)
    # HAProxy's fastinter: the check interval while a node's state is changing (after one failed
    # check of an UP node, after one good check of a DOWN one, and at start, where HAProxy spreads
    # the first checks over this interval instead of check_interval_ms). Set it equal to
    # check_interval_ms for HAProxy's own default.
    fast_check_interval_ms: int = Field(100, ge=10, le=60000)
    fall: int = Field(2, ge=1, le=10)
    rise: int = Field(2, ge=1, le=10)
    maxconn: int = Field(4096, ge=16, le=100000)
    # Two HAProxies (lb1, lb2) share a virtual IP through keepalived (unicast VRRP). `vip` is
    # unset/true for the default address (subnet host .3) or an address in the subnet; a pair
    # always has one, a single HAProxy never does (there is nothing to fail over to).
    count: int = Field(1, ge=1, le=MAX_BALANCERS)
    vip: bool | str | None = None
    # VRRP advertisement interval in seconds. The backup takes over ~3 x advert_int after the
    # master goes silent; a whole number uses VRRPv2, a fraction (down to 0.1) VRRPv3.
    advert_int: float = Field(1.0, ge=0.1, le=40)

    @field_validator("vip", mode="before")
    @classmethod
    def _vip(cls, v: object) -> object:
        if v is not None and not isinstance(v, bool | str):
            raise ValueError("must be true, false or an address like 198.18.0.3")
        if isinstance(v, str) and not is_ipv4(v):
            raise ValueError(f"'{v}' is not an IPv4 address like 198.18.0.3 (or use true)")
        return v

    @field_validator("advert_int")
    @classmethod
    def _advert_int(cls, v: float) -> float:
        # VRRPv3 counts in centiseconds; keepalived would silently round anything finer.
        if abs(v * 100 - round(v * 100)) > 1e-9:
            raise ValueError(f"{v:g} has more than two decimals; keepalived counts in 1/100 s")
        return v

    @property
    def paired(self) -> bool:
        return self.kind == "haproxy" and self.count == 2


def pair_problem(b: BalancerSettings, where: str) -> str | None:
    """What is wrong with a balancer's count and VIP (`where`: its section, e.g. 'balancer'), as
    one line; None when they fit together. Addresses are checked against the topology's plan."""
    if b.kind == "none" and (b.count != 1 or b.vip not in (None, False)):
        return f"{where}.count and {where}.vip need {where}.kind = 'haproxy'"
    if b.count == 1 and b.vip not in (None, False):
        return f"{where}.vip needs {where}.count = 2 (keepalived moves the VIP between two HAProxies)"
    if b.count == 2 and b.vip is False:
        return f"{where}.count = 2 needs a VIP; remove vip = false or set vip = true"
    return None
