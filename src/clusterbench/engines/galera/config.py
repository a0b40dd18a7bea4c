"""Pure rendering of a Galera node's files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clusterbench.components.templates import package_templates
from clusterbench.engines.paths import NodePaths
from clusterbench.spec.topology import MariaDBSettings

GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"
MARIADB_CLIENT = "/usr/bin/mariadb"

_env = package_templates("clusterbench.engines.galera")


def _seconds(v: float) -> str:
    """ISO 8601 duration as Galera wants it: PT1.5S."""
    return f"PT{v:g}S"


def provider_options(s: MariaDBSettings, address: str) -> str:
    opts = [
        f"gmcast.listen_addr=tcp://{address}:4567",
        f"ist.recv_addr={address}:4568",
        f"gcache.size={s.gcache_size}",
        f"evs.keepalive_period={_seconds(s.evs_keepalive_period)}",
        f"evs.inactive_check_period={_seconds(s.evs_inactive_check_period)}",
        f"evs.suspect_timeout={_seconds(s.evs_suspect_timeout)}",
        f"evs.inactive_timeout={_seconds(s.evs_inactive_timeout)}",
    ]
    return ";".join(opts)


@dataclass(frozen=True)
class NodeConfig(NodePaths):
    cluster_name: str
    index: int
    address: str
    peers: tuple[str, ...]
    dir: Path
    settings: MariaDBSettings

    @property
    def node_name(self) -> str:
        return f"n{self.index}"



def render_my_cnf(cfg: NodeConfig) -> str:
    extra = sorted((k, _value(v)) for k, v in cfg.settings.extra.items())
    return _env.get_template("my.cnf.j2").render(
        cluster_name=cfg.cluster_name,
        node_name=cfg.node_name,
        dir=str(cfg.dir),
        address=cfg.address,
        peers=[f"{p}:4567" for p in cfg.peers],
        provider=GALERA_PROVIDER,
        provider_options=provider_options(cfg.settings, cfg.address),
        s=cfg.settings,
        extra=extra,
    )


def render_clustercheck(cfg: NodeConfig) -> str:
    return _env.get_template("clustercheck.sh.j2").render(client=MARIADB_CLIENT, mon_cnf=str(cfg.mon_cnf))


def _value(v: str | int | float | bool) -> str:
    if isinstance(v, bool):
        return "ON" if v else "OFF"
    return str(v)
