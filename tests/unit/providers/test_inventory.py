"""The ssh provider's inventory in the topology file: roles → nodes and balancers, and every
problem named by its field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterbench.errors import InputError
from clusterbench.providers.ssh import SshProvider
from clusterbench.spec.topology import Topology, load_topology, topology_from_data


def host(name: str, address: str, *roles: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "address": address, "roles": list(roles), **extra}


def ssh(*hosts: dict[str, Any], **sections: dict[str, Any]) -> dict[str, Any]:
    return {"provider": {"kind": "ssh"}, "hosts": list(hosts), **sections}


def error(data: dict[str, Any]) -> str:
    with pytest.raises(InputError) as info:
        topology_from_data(data, "t.toml")
    return str(info.value)


THREE = (host("db1", "10.0.0.11", "db"), host("db2", "10.0.0.12", "db"), host("db3", "10.0.0.13", "db"))


def test_node_n_is_the_nth_db_host_and_lb_k_the_kth_balancer() -> None:
    t = topology_from_data(
        ssh(host("lb", "10.0.0.2", "balancer", "client"), *THREE, host("gen", "10.0.0.50", "client")), "t"
    )
    assert t.remote and t.cluster.nodes == 3
    assert [t.node_address(i) for i in t.node_indexes()] == ["10.0.0.11", "10.0.0.12", "10.0.0.13"]
    assert t.balancer_address(1) == "10.0.0.2" and t.client_address() == "10.0.0.2"
    assert [h.name for h in t.client_hosts()] == ["lb", "gen"]


def test_a_pair_needs_an_explicit_vip_over_ssh() -> None:
    data = ssh(host("lb1", "10.0.0.2", "balancer"), host("lb2", "10.0.0.4", "balancer"), *THREE)
    data["balancer"] = {"count": 2}
    assert "balancer.vip must be an address" in error(data)
    data["balancer"] = {"count": 2, "vip": "10.0.0.12"}
    assert error(data).endswith("balancer.vip 10.0.0.12 is already the address of a host in [[hosts]]")
    data["balancer"] = {"count": 2, "vip": "10.0.0.100"}
    assert topology_from_data(data, "t").vip_address() == "10.0.0.100"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            ssh(host("db1", "10.0.0.11", "db")),
            "hosts: no host has role 'balancer'; add one or set balancer.kind",
        ),
        (ssh(host("lb", "10.0.0.2", "balancer")), "hosts: no host has role 'db'"),
        (
            {"hosts": [host("db1", "10.0.0.11", "db")]},
            "hosts: [[hosts]] needs provider.kind = 'ssh'",
        ),
        (
            ssh(*THREE, cluster={"nodes": 5}, balancer={"kind": "none"}),
            "cluster.nodes = 5 but 3 hosts have role 'db'",
        ),
        (
            ssh(*THREE, host("db1", "10.0.0.9", "balancer")),
            "hosts: name 'db1' is given twice",
        ),
        (
            ssh(*THREE, balancer={"kind": "none"}, resources={"cpu_quota": 0.5}),
            "limits (cpu_quota, cpuset, bandwidth) are for the local provider",
        ),
        (
            ssh(*THREE, balancer={"kind": "none"}, clients={"hosts": 2}),
            "clients.hosts is for the local provider",
        ),
    ],
)
def test_inventory_problems_name_the_field(data: dict[str, Any], message: str) -> None:
    assert message in error(data)


def test_bad_host_fields_are_listed_with_their_path() -> None:
    msg = error(
        ssh(
            host("db1", "db1.example", "db", port=0, base_dir="rel", interface="a very long name"),
            host("lb", "10.0.0.2", "balancer", "db", "db"),
        )
    )
    lines = msg.splitlines()
    assert (
        "t.toml: hosts[0].address: 'db1.example' is not an IPv4 address like 10.0.0.11 (got 'db1.example')"
        in lines
    )
    assert any(ln.startswith("t.toml: hosts[0].port:") for ln in lines)
    assert any(ln.startswith("t.toml: hosts[0].base_dir: 'rel' must be an absolute path") for ln in lines)
    assert any(ln.startswith("t.toml: hosts[0].interface:") for ln in lines)
    assert any(ln.startswith("t.toml: hosts[1].roles: a role is listed twice") for ln in lines)


def test_unknown_host_key_lists_the_known_ones(tmp_path: Path) -> None:
    p = tmp_path / "t.toml"
    p.write_text(
        '[provider]\nkind = "ssh"\n[[hosts]]\nname = "a"\naddress = "10.0.0.1"\n'
        'roles = ["db"]\npasswd = "x"\n'
    )
    with pytest.raises(InputError) as info:
        load_topology(p)
    assert str(info.value) == (
        f"{p}: unknown key 'hosts[0].passwd' "
        "(known keys: address, base_dir, interface, key, name, port, roles, user)"
    )


def test_state_round_trip_keeps_the_inventory() -> None:
    t = topology_from_data(ssh(*THREE, host("lb", "10.0.0.2", "balancer")), "t")
    again = Topology.model_validate(t.model_dump(mode="json"))
    assert again == t


def test_role_directories_follow_base_dirs(tmp_path: Path) -> None:
    t = topology_from_data(
        ssh(
            host("db1", "10.0.0.11", "db", "balancer", base_dir="/data/cb"),
            host("db2", "10.0.0.12", "db"),
            cluster={"name": "prod"},
            balancer={"port": 6033},
        ),
        "t",
    )
    p = SshProvider(t, tmp_path)
    assert p.role_dir("n1") == Path("/data/cb/prod/n1")
    assert p.role_dir("lb1") == Path("/data/cb/prod/lb1")
    assert p.role_dir("n2") == Path("/var/lib/clusterbench/remote/prod/n2")
    # db and balancer on one machine share its connection.
    assert p.host("n1") is p.host("lb1") and p.host("n2") is not p.host("n1")
    assert p.roles() == ["n1", "n2", "lb1"]


def test_local_client_namespaces_sit_after_the_nodes() -> None:
    t = topology_from_data({"cluster": {"subnet": "198.18.7.0/26"}, "clients": {"hosts": 16}}, "t")
    assert t.client_indexes() == list(range(1, 17))
    assert t.client_host_address(1) == "198.18.7.31" and t.client_host_address(16) == "198.18.7.46"
    assert "clients.hosts" in error({"clients": {"hosts": 17}})
