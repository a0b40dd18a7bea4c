"""How the web tier of a topology is described to people (pure): `up`'s banner and endpoint rows,
`check`'s topology line. Nothing here starts or imports a component, so commands that only read
files stay light."""

from __future__ import annotations

from clusterbench.spec.topology import Topology


def web_banner(t: Topology) -> str:
    """What `up` says of the web tier: ' + 3 web nodes + 2 front HAProxy with keepalived (VIP)';
    '' without one."""
    w = t.web
    if not w.nodes:
        return ""
    where = " on the database nodes' hosts" if w.layout == "colocated" else ""
    fronts = len(w.front_indexes())
    front = {0: "", 1: " + front HAProxy", 2: " + 2 front HAProxy with keepalived (VIP)"}[fronts]
    return f" + {w.nodes} web node{'s' if w.nodes > 1 else ''}{where}{front}"


def web_endpoints(t: Topology, vip_holder: str | None) -> list[tuple[str, str, str]]:
    """The web tier's rows of `up`'s endpoint table: (target, address, via)."""
    w = t.web
    if not w.nodes:
        return []
    vip = t.front_vip_address()
    rows = []
    if vip is not None:
        via = f"front keepalived VIP, now on {vip_holder}" if vip_holder else "front keepalived VIP"
        rows.append(("http", f"http://{vip}:{w.front.port}", via))
        port = w.front.port
        rows += [("", f"http://{t.front_address(k)}:{port}", f"fe{k} itself") for k in w.front_indexes()]
    elif w.front_indexes():
        rows.append(("http", f"http://{t.front_address()}:{w.front.port}", "front HAProxy fe1"))
    rows += [("", f"http://{t.web_address(i)}:{w.port}", f"web node w{i}") for i in w.indexes()]
    return rows
