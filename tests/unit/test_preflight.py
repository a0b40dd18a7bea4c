"""providers/preflight.py with a fake host answering `ip -j` from output captured on a real machine
(two clusters up: 'wl' on 198.18.220.0/24 and 'bench' on 198.18.230.0/24)."""

from __future__ import annotations

import ipaddress
import pwd
from collections.abc import Callable
from pathlib import Path

import pytest

from clusterbench.engines.galera import engine as galera_engine
from clusterbench.engines.galera.engine import GaleraEngine
from clusterbench.errors import ClusterStateError, PreflightError
from clusterbench.hosts.base import CommandResult
from clusterbench.providers import preflight
from clusterbench.providers.naming import Names
from clusterbench.spec.topology import Topology
from tests.unit.fakes import FakeHost, result

DATA = Path(__file__).parent / "data"
ROUTES = ["ip", "-j", "-4", "route", "show", "table", "all"]
ADDRS = ["ip", "-j", "-4", "addr", "show"]
NETNS = ["ip", "-j", "netns", "list"]
LINKS = ["ip", "-j", "link", "show"]


def real_host() -> FakeHost:
    h = FakeHost("local")
    h.responses = {
        tuple(ROUTES): (DATA / "ip_route_all.json").read_text(),
        tuple(ADDRS): (DATA / "ip_addr.json").read_text(),
        tuple(NETNS): (DATA / "ip_netns.json").read_text(),
        tuple(LINKS): (DATA / "ip_link.json").read_text(),
    }
    return h


def net(s: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(s)


# ---------------------------------------------------------------- overlapping networks


def test_free_subnet_has_no_overlap() -> None:
    h = real_host()
    assert preflight.overlapping_networks(net("198.18.210.0/24"), h) == []
    assert h.runs == [ROUTES, ADDRS]


def test_overlap_with_another_clusters_bridge_listed_once() -> None:
    # found as a route and as an address on the bridge: reported once
    assert preflight.overlapping_networks(net("198.18.220.0/24"), real_host()) == [
        "198.18.220.0/24 dev cb-wl-br"
    ]


def test_wider_subnet_overlaps_both_clusters() -> None:
    assert preflight.overlapping_networks(net("198.18.0.0/16"), real_host()) == [
        "198.18.220.0/24 dev cb-wl-br",
        "198.18.230.0/24 dev cb-bench-br",
    ]


def test_narrower_subnet_inside_the_uplink() -> None:
    assert preflight.overlapping_networks(net("192.0.2.64/26"), real_host()) == ["192.0.2.0/24 dev eth0"]


def test_local_routes_are_ignored_but_addresses_count() -> None:
    # 127.0.0.0/8 exists only as a `local` route (skipped) and as lo's address (reported)
    assert preflight.overlapping_networks(net("127.0.0.0/24"), real_host()) == ["127.0.0.0/8 dev lo"]


def test_no_output_means_no_overlap() -> None:
    h = FakeHost()
    assert preflight.overlapping_networks(net("198.18.0.0/24"), h) == []


def test_unparseable_route_destinations_are_skipped() -> None:
    h = FakeHost()
    h.responses = {
        tuple(ROUTES): '[{"dst":"default","dev":"eth0"},{"dst":"","dev":"x"},{"dst":"bogus","dev":"y"},'
        '{"dst":"198.18.0.0/25","dev":"tun0"}]',
    }
    assert preflight.overlapping_networks(net("198.18.0.0/24"), h) == ["198.18.0.0/25 dev tun0"]


# ---------------------------------------------------------------- leftovers


def test_leftovers_of_one_cluster() -> None:
    h = real_host()
    netns, links = preflight.leftovers(Names("wl"), h)
    assert netns == ["cb-wl-lb1", "cb-wl-n3", "cb-wl-n1", "cb-wl-n2"]
    assert links == ["cb-wl-br", "cb-wl-n1", "cb-wl-n2", "cb-wl-n3", "cb-wl-lb1"]
    assert h.runs == [NETNS, LINKS]


def test_leftovers_of_the_other_cluster() -> None:
    netns, links = preflight.leftovers(Names("bench"), real_host())
    assert sorted(netns) == ["cb-bench-lb1", "cb-bench-n1", "cb-bench-n2", "cb-bench-n3"]
    assert links == ["cb-bench-br", "cb-bench-n1", "cb-bench-n2", "cb-bench-n3", "cb-bench-lb1"]


@pytest.mark.parametrize("name", ["lab", "w", "wl2", "benc"])
def test_no_leftovers_for_other_names(name: str) -> None:
    assert preflight.leftovers(Names(name), real_host()) == ([], [])


def test_leftovers_with_no_namespaces_at_all() -> None:
    # `ip -j netns list` prints nothing when there are none
    assert preflight.leftovers(Names("lab"), FakeHost()) == ([], [])


# ---------------------------------------------------------------- root and binaries


def test_require_root_as_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 1000)
    with pytest.raises(PreflightError) as info:
        preflight.require_root()
    assert str(info.value) == (
        "needs root to create network namespaces, bridges and cgroups; "
        "run it as root (e.g. sudo clusterbench ...)"
    )


def test_require_root_as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 0)
    preflight.require_root()


@pytest.fixture
def galera_lib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    lib = tmp_path / "libgalera_smm.so"
    lib.write_text("")
    monkeypatch.setattr(galera_engine, "GALERA_PROVIDER", str(lib))
    return lib


def needs(t: Topology) -> dict[str, str]:
    """What the topology's engine needs besides the common tools."""
    return GaleraEngine(t).required()


def missing(t: Topology) -> list[str]:
    return preflight.missing_binaries(t, needs(t))


def _which(missing: set[str], calls: list[tuple[str, str | None]]) -> Callable[..., str | None]:
    def which(name: str, mode: int = 0, path: str | None = None) -> str | None:
        calls.append((name, path))
        return None if name in missing else f"/usr/bin/{name}"

    return which


def test_nothing_missing(monkeypatch: pytest.MonkeyPatch, galera_lib: Path) -> None:
    calls: list[tuple[str, str | None]] = []
    monkeypatch.setattr(preflight.shutil, "which", _which(set(), calls))
    assert missing(Topology()) == []
    assert [c[0] for c in calls] == [
        "socat",
        "ip",
        "tc",
        "ss",
        "haproxy",
        "mariadbd",
        "mariadb-install-db",
        "mariadb",
        "rsync",
    ]
    assert {c[1] for c in calls} == {"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


def test_missing_binaries_name_their_packages(monkeypatch: pytest.MonkeyPatch, galera_lib: Path) -> None:
    monkeypatch.setattr(preflight.shutil, "which", _which({"socat", "haproxy", "tc"}, []))
    assert missing(Topology()) == [
        "socat (Debian package socat)",
        "tc (Debian package iproute2)",
        "haproxy (Debian package haproxy)",
    ]


def test_haproxy_not_needed_without_balancer(monkeypatch: pytest.MonkeyPatch, galera_lib: Path) -> None:
    monkeypatch.setattr(preflight.shutil, "which", _which({"haproxy"}, []))
    t = Topology.model_validate({"balancer": {"kind": "none"}})
    assert missing(t) == []


def test_mariabackup_needed_for_mariabackup_sst(monkeypatch: pytest.MonkeyPatch, galera_lib: Path) -> None:
    monkeypatch.setattr(preflight.shutil, "which", _which({"mariabackup"}, []))
    assert missing(Topology()) == []
    t = Topology.model_validate({"mariadb": {"sst_method": "mariabackup"}})
    assert missing(t) == ["mariabackup (Debian package mariadb-backup)"]


def test_missing_galera_library(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(preflight.shutil, "which", _which(set(), []))
    monkeypatch.setattr(galera_engine, "GALERA_PROVIDER", str(tmp_path / "nope.so"))
    assert missing(Topology()) == [f"{tmp_path / 'nope.so'} (Debian package galera-4)"]


# ---------------------------------------------------------------- check_up


@pytest.fixture
def ready_machine(monkeypatch: pytest.MonkeyPatch, galera_lib: Path) -> None:
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 0)
    monkeypatch.setattr(preflight.shutil, "which", _which(set(), []))
    monkeypatch.setattr(preflight.pwd, "getpwnam", lambda name: pwd.struct_passwd(
        ("mysql", "x", 101, 101, "", "/nonexistent", "/bin/false")))  # fmt: skip


def _topo(name: str, subnet: str) -> Topology:
    return Topology.model_validate({"cluster": {"name": name, "subnet": subnet}})


def test_check_up_passes(ready_machine: None, tmp_path: Path) -> None:
    h = real_host()
    preflight.check_up(_topo("ut", "198.18.210.0/24"), tmp_path, h, needs(Topology()))
    assert h.runs == [NETNS, LINKS, ROUTES, ADDRS]


def test_check_up_not_root_runs_nothing(
    ready_machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 1000)
    h = real_host()
    with pytest.raises(PreflightError):
        preflight.check_up(_topo("ut", "198.18.210.0/24"), tmp_path, h, needs(Topology()))
    assert h.runs == []


def test_check_up_missing_binaries(
    ready_machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(preflight.shutil, "which", _which({"rsync"}, []))
    with pytest.raises(PreflightError) as info:
        preflight.check_up(_topo("ut", "198.18.210.0/24"), tmp_path, real_host(), needs(Topology()))
    assert str(info.value) == "missing rsync (Debian package rsync); run `make setup` to install them"


def test_check_up_an_item_with_its_own_next_step_is_not_told_make_setup_again(
    ready_machine: None, tmp_path: Path
) -> None:
    root = tmp_path / "no-rootfs"
    how = "the MySQL root file system: `clusterbench rootfs build`"
    own = {**needs(Topology()), f"{root}/usr/sbin/mysqld": how}
    with pytest.raises(PreflightError) as info:
        preflight.check_up(_topo("ut", "198.18.210.0/24"), tmp_path, real_host(), own)
    assert str(info.value) == f"missing {root}/usr/sbin/mysqld ({how})"


def test_check_up_no_mysql_user(ready_machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def nouser(name: str) -> pwd.struct_passwd:
        raise KeyError(name)

    monkeypatch.setattr(preflight.pwd, "getpwnam", nouser)
    with pytest.raises(PreflightError) as info:
        preflight.check_up(_topo("ut", "198.18.210.0/24"), tmp_path, real_host(), needs(Topology()))
    assert str(info.value) == "system user 'mysql' does not exist; run `make setup` (package mariadb-server)"


def test_check_up_already_up(ready_machine: None, tmp_path: Path) -> None:
    state = tmp_path / "clusters" / "ut" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text("{}")
    with pytest.raises(ClusterStateError) as info:
        preflight.check_up(_topo("ut", "198.18.210.0/24"), tmp_path, real_host(), needs(Topology()))
    assert str(info.value) == (
        "cluster 'ut' is already up (or was left by a killed run); "
        "see `clusterbench status -n ut` or remove it with `clusterbench down -n ut`"
    )


def test_check_up_leftovers(ready_machine: None, tmp_path: Path) -> None:
    with pytest.raises(ClusterStateError) as info:
        preflight.check_up(_topo("wl", "198.18.210.0/24"), tmp_path, real_host(), needs(Topology()))
    assert str(info.value) == (
        "leftovers of cluster 'wl' found (cb-wl-lb1, cb-wl-n3, cb-wl-n1, cb-wl-n2, cb-wl-br, cb-wl-n1, "
        "cb-wl-n2, cb-wl-n3, cb-wl-lb1); remove them with `clusterbench down -n wl`"
    )


def test_check_up_overlap(ready_machine: None, tmp_path: Path) -> None:
    with pytest.raises(PreflightError) as info:
        preflight.check_up(_topo("ut", "198.18.230.0/24"), tmp_path, real_host(), needs(Topology()))
    assert str(info.value) == (
        "cluster.subnet 198.18.230.0/24 overlaps 198.18.230.0/24 dev cb-bench-br; choose a free range, "
        "e.g. 198.18.<N>.0/24, in the topology file"
    )


def test_result_helper_is_a_command_result() -> None:
    assert result(["x"], "out") == CommandResult(("x",), 0, "out", "")


def test_web_tier_needs_nginx_php_and_curl(
    monkeypatch: pytest.MonkeyPatch, galera_lib: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr(preflight.shutil, "which", _which({"nginx", "php-fpm8.2", "curl"}, []))
    mysqli = str(tmp_path / "mysqli.ini")
    needs = {**preflight.WEB_NEEDS, mysqli: "Debian package php8.2-mysql"}
    monkeypatch.setattr(preflight, "WEB_NEEDS", needs)
    monkeypatch.delitem(preflight.WEB_NEEDS, "/etc/php/8.2/mods-available/mysqli.ini")
    assert missing(Topology()) == []
    assert missing(Topology.model_validate({"web": {"nodes": 2}})) == [
        "nginx (Debian package nginx)",
        "php-fpm8.2 (Debian package php8.2-fpm)",
        "curl (Debian package curl)",
        f"{mysqli} (Debian package php8.2-mysql)",
    ]
