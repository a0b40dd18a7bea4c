"""spec/topology.py: defaults, the address plan, resources, warnings, and one-line field-named errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.errors import InputError
from clusterbench.spec.topology import (
    BalancerSettings,
    ClusterSettings,
    MariaDBSettings,
    Resources,
    Topology,
    load_topology,
)

MARIADB_KEYS = ", ".join(sorted(MariaDBSettings.model_fields))


def write(tmp_path: Path, text: str, name: str = "topo.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_topology(path)
    return str(info.value)


# ---------------------------------------------------------------- defaults


def test_default_topology_values() -> None:
    t = load_topology(None)
    assert t == Topology()
    assert t.cluster == ClusterSettings(name="lab", nodes=3, subnet="198.18.0.0/24")
    assert t.resources == Resources(cpu_quota=None, cpuset=None, bandwidth=None)
    assert t.node == []
    m = t.mariadb
    assert (m.innodb_buffer_pool_size, m.innodb_log_file_size, m.gcache_size) == ("64M", "32M", "64M")
    assert (m.innodb_flush_log_at_trx_commit, m.wsrep_slave_threads, m.max_connections) == (2, 2, 300)
    assert m.sst_method == "rsync"
    assert (m.evs_suspect_timeout, m.evs_inactive_timeout) == (5.0, 15.0)
    assert (m.evs_keepalive_period, m.evs_inactive_check_period) == (1.0, 0.5)
    assert m.extra == {}
    assert t.balancer == BalancerSettings(
        kind="haproxy", algorithm="leastconn", port=3306, check_interval_ms=1000, fall=2, rise=2, maxconn=4096
    )
    assert t.balancer.fast_check_interval_ms == 100
    assert t.name == "lab"
    assert t.node_indexes() == [1, 2, 3]
    assert t.warnings() == []


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert load_topology(write(tmp_path, "")) == Topology()


def test_full_file_is_read(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        """
[cluster]
name = "east1"
nodes = 5
subnet = "10.77.0.0/16"

[mariadb]
sst_method = "mariabackup"
evs_suspect_timeout = 1.5
evs_inactive_timeout = 3
evs_keepalive_period = 0.3

[mariadb.extra]
wsrep_debug = true
sync_binlog = 1
character_set_server = "utf8mb4"

[balancer]
algorithm = "roundrobin"
port = 6033
""",
    )
    t = load_topology(p)
    assert t.name == "east1"
    assert t.cluster.nodes == 5
    assert t.mariadb.sst_method == "mariabackup"
    assert (t.mariadb.evs_suspect_timeout, t.mariadb.evs_inactive_timeout) == (1.5, 3.0)
    assert t.mariadb.extra == {"wsrep_debug": True, "sync_binlog": 1, "character_set_server": "utf8mb4"}
    # booleans stay booleans (they render as ON/OFF), ints stay ints
    assert type(t.mariadb.extra["wsrep_debug"]) is bool
    assert type(t.mariadb.extra["sync_binlog"]) is int
    assert (t.balancer.algorithm, t.balancer.port) == ("roundrobin", 6033)


# ---------------------------------------------------------------- address plan


def test_address_plan_default_subnet() -> None:
    t = Topology()
    assert t.bridge_address() == "198.18.0.1"
    assert t.balancer_address() == "198.18.0.2"
    assert [t.node_address(i) for i in t.node_indexes()] == ["198.18.0.11", "198.18.0.12", "198.18.0.13"]
    assert str(t.network) == "198.18.0.0/24"


def test_address_plan_nine_nodes_in_a_26() -> None:
    t = Topology.model_validate({"cluster": {"nodes": 9, "subnet": "198.18.7.64/26"}})
    assert t.bridge_address() == "198.18.7.65"
    assert t.balancer_address() == "198.18.7.66"
    assert t.node_address(1) == "198.18.7.75"
    assert t.node_address(9) == "198.18.7.83"
    assert t.node_indexes() == list(range(1, 10))
    assert t.network.prefixlen == 26


def test_address_plan_larger_subnet() -> None:
    t = Topology.model_validate({"cluster": {"subnet": "10.20.0.0/16"}})
    assert (t.bridge_address(), t.balancer_address(), t.node_address(3)) == (
        "10.20.0.1",
        "10.20.0.2",
        "10.20.0.13",
    )


# ---------------------------------------------------------------- resources


def test_node_resources_merge_overrides(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        """
[cluster]
nodes = 3

[resources]
cpu_quota = 0.5
bandwidth = "10mbit"

[[node]]
index = 2
cpu_quota = 1.5
cpuset = "1"

[[node]]
index = 3
bandwidth = "1gbit"
""",
    )
    t = load_topology(p)
    assert t.node_resources(1) == Resources(cpu_quota=0.5, cpuset=None, bandwidth="10mbit")
    assert t.node_resources(2) == Resources(cpu_quota=1.5, cpuset="1", bandwidth="10mbit")
    assert t.node_resources(3) == Resources(cpu_quota=0.5, cpuset=None, bandwidth="1gbit")


def test_node_resources_without_base() -> None:
    t = Topology.model_validate({"node": [{"index": 1, "cpuset": "0-1,3"}]})
    assert t.node_resources(1) == Resources(cpuset="0-1,3")
    assert t.node_resources(2) == Resources()


@pytest.mark.parametrize("cpuset", ["0", "0-1", "0,1", "0-3,6,8-9"])
def test_valid_cpusets(cpuset: str) -> None:
    assert Resources(cpuset=cpuset).cpuset == cpuset


@pytest.mark.parametrize("rate", ["100mbit", "512kbit", "1gbit", "2.5mbit", "9600bit"])
def test_valid_rates(rate: str) -> None:
    assert Resources(bandwidth=rate).bandwidth == rate


# ---------------------------------------------------------------- warnings


def test_warning_two_nodes() -> None:
    t = Topology.model_validate({"cluster": {"nodes": 2}})
    assert t.warnings() == [
        "cluster.nodes = 2: losing either node loses quorum (the survivor goes non-Primary); "
        "Galera's quorum docs recommend 3 nodes or 2 plus garbd"
    ]


@pytest.mark.parametrize("n", [4, 6, 8])
def test_warning_even_count(n: int) -> None:
    t = Topology.model_validate({"cluster": {"nodes": n}})
    assert t.warnings() == [
        f"cluster.nodes = {n} is even: a split into two halves leaves no Primary component; "
        "Galera's quorum docs recommend an odd number of nodes"
    ]


@pytest.mark.parametrize("n", [1, 3, 5, 7, 9])
def test_no_warning_for_odd_counts(n: int) -> None:
    assert Topology.model_validate({"cluster": {"nodes": n}}).warnings() == []


# ---------------------------------------------------------------- errors: file and TOML


def test_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "nope.toml"
    assert error_of(p) == f"{p}: no such topology file; see examples/topologies/ for ready-made ones"


def test_unreadable_file(tmp_path: Path) -> None:
    p = tmp_path / "adir.toml"
    p.mkdir()
    assert error_of(p) == f"{p}: is a directory, not a topology file; give the file"


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nname = "a"\nnodes = = 3\n')
    assert error_of(p) == f"{p}:3: invalid TOML: Invalid value; fix the syntax and try again"


def test_duplicate_toml_key_names_line(tmp_path: Path) -> None:
    p = write(tmp_path, "[cluster]\nnodes = 3\n\nnodes = 5\n")
    msg = error_of(p)
    assert msg.startswith(f"{p}:4: invalid TOML: ")
    assert msg.endswith("; fix the syntax and try again")
    assert "\n" not in msg
    assert "(at line" not in msg


def test_unclosed_table_header(tmp_path: Path) -> None:
    p = write(tmp_path, "\n\n[cluster\nnodes = 3\n")
    msg = error_of(p)
    assert msg.startswith(f"{p}:3: invalid TOML: ")
    assert "\n" not in msg


# ---------------------------------------------------------------- errors: unknown keys


def test_unknown_top_level_key(tmp_path: Path) -> None:
    p = write(tmp_path, "foo = 1\n")
    known = "balancer, clients, cluster, engine, hosts, mariadb, mysql, node, provider, resources, web"
    assert error_of(p) == f"{p}: unknown key 'foo' (known keys: {known})"


def test_unknown_cluster_key(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nnmae = "x"\n')
    known = "clock, datadir_fs, datadir_layer, name, nodes, subnet"
    assert error_of(p) == f"{p}: unknown key 'cluster.nmae' (known keys: {known})"


def test_unknown_mariadb_key(tmp_path: Path) -> None:
    p = write(tmp_path, "[mariadb]\nbogus = 1\n")
    assert error_of(p) == f"{p}: unknown key 'mariadb.bogus' (known keys: {MARIADB_KEYS})"


def test_unknown_key_in_node_list(tmp_path: Path) -> None:
    p = write(tmp_path, "[cluster]\nnodes = 3\n[[node]]\nindex = 1\ncpu = 1\n")
    assert error_of(p) == (
        f"{p}: unknown key 'node[0].cpu' (known keys: bandwidth, cpu_quota, cpuset, datadir_fs, "
        "datadir_layer, datadir_size, index, mariadb, mysql)"
    )


def test_unknown_balancer_key(tmp_path: Path) -> None:
    p = write(tmp_path, "[balancer]\nchecks = 1\n")
    known = ", ".join(sorted(BalancerSettings.model_fields))
    assert {"algorithm", "check_interval_ms", "fall", "kind", "maxconn", "port", "rise"} <= set(
        BalancerSettings.model_fields
    )
    assert error_of(p) == f"{p}: unknown key 'balancer.checks' (known keys: {known})"


def test_unknown_resources_key(tmp_path: Path) -> None:
    p = write(tmp_path, "[resources]\nmemory = 1\n")
    assert error_of(p) == f"{p}: unknown key 'resources.memory' (known keys: bandwidth, cpu_quota, cpuset)"


def test_two_problems_give_two_lines(tmp_path: Path) -> None:
    p = write(tmp_path, '[balancer]\nkind = "nginx"\nport = 0\n')
    assert error_of(p).splitlines() == [
        f"{p}: balancer.kind: Input should be 'haproxy' or 'none' (got 'nginx')",
        f"{p}: balancer.port: Input should be greater than or equal to 1 (got 0)",
    ]


# ---------------------------------------------------------------- errors: values


def test_nodes_zero(tmp_path: Path) -> None:
    p = write(tmp_path, "[cluster]\nnodes = 0\n")
    assert error_of(p) == f"{p}: cluster.nodes: Input should be greater than or equal to 1 (got 0)"


def test_nodes_ten(tmp_path: Path) -> None:
    p = write(tmp_path, "[cluster]\nnodes = 10\n")
    assert error_of(p) == f"{p}: cluster.nodes: Input should be less than or equal to 9 (got 10)"


def test_nodes_not_a_number(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nnodes = "three"\n')
    assert error_of(p) == (
        f"{p}: cluster.nodes: Input should be a valid integer, "
        "unable to parse string as an integer (got 'three')"
    )


NAME_RULE = (
    "must be 1-8 characters, lowercase letters and digits, starting with a letter "
    "(it prefixes interface names, which Linux limits to 15 characters)"
)


@pytest.mark.parametrize("name", ["Lab", "lab-1", "1lab", "abcdefghi", "", "la b"])
def test_bad_cluster_name(tmp_path: Path, name: str) -> None:
    p = write(tmp_path, f'[cluster]\nname = "{name}"\n')
    assert error_of(p) == f"{p}: cluster.name: '{name}' {NAME_RULE} (got '{name}')"


@pytest.mark.parametrize("name", ["a", "lab", "abcdefgh", "n2x9"])
def test_good_cluster_name(name: str) -> None:
    assert ClusterSettings(name=name).name == name


def test_subnet_with_host_bits(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nsubnet = "198.18.0.1/24"\n')
    assert error_of(p) == (
        f"{p}: cluster.subnet: '198.18.0.1/24' is not an IPv4 network like 198.18.0.0/24 "
        "(198.18.0.1/24 has host bits set) (got '198.18.0.1/24')"
    )


def test_subnet_not_an_address(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nsubnet = "nope"\n')
    assert error_of(p) == (
        f"{p}: cluster.subnet: 'nope' is not an IPv4 network like 198.18.0.0/24 "
        "(Expected 4 octets in 'nope') (got 'nope')"
    )


def test_subnet_ipv6_rejected(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nsubnet = "fd00::/64"\n')
    msg = error_of(p)
    assert msg.startswith(f"{p}: cluster.subnet: 'fd00::/64' is not an IPv4 network like 198.18.0.0/24 (")
    assert "\n" not in msg


def test_subnet_too_small(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nsubnet = "198.18.0.0/27"\n')
    assert error_of(p) == (
        f"{p}: cluster.subnet: '198.18.0.0/27' is too small; use a /26 or larger "
        "(nodes use host numbers 11-19) (got '198.18.0.0/27')"
    )


def test_subnet_26_is_enough() -> None:
    assert ClusterSettings(subnet="198.18.0.0/26").subnet == "198.18.0.0/26"


@pytest.mark.parametrize("field", ["innodb_buffer_pool_size", "innodb_log_file_size", "gcache_size"])
def test_bad_size(tmp_path: Path, field: str) -> None:
    p = write(tmp_path, f'[mariadb]\n{field} = "64MB"\n')
    assert error_of(p) == f"{p}: mariadb.{field}: '64MB' is not a size like '64M' or '1G' (got '64MB')"


def test_bad_rate(tmp_path: Path) -> None:
    p = write(tmp_path, '[resources]\nbandwidth = "10mbps"\n')
    assert error_of(p) == (
        f"{p}: resources.bandwidth: '10mbps' is not a rate like '100mbit', '512kbit' or '1gbit' "
        "(got '10mbps')"
    )


def test_bad_rate_in_node_override(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nnodes = 3\n[[node]]\nindex = 2\nbandwidth = "fast"\n')
    assert error_of(p) == (
        f"{p}: node[0].bandwidth: 'fast' is not a rate like '100mbit', '512kbit' or '1gbit' (got 'fast')"
    )


@pytest.mark.parametrize("cpuset", ["0-", "a", "0,,1", "-1", "0 1"])
def test_bad_cpuset(tmp_path: Path, cpuset: str) -> None:
    p = write(tmp_path, f'[resources]\ncpuset = "{cpuset}"\n')
    assert error_of(p) == (
        f"{p}: resources.cpuset: '{cpuset}' is not a CPU list like '0' or '0-1' or '0,1' (got '{cpuset}')"
    )


def test_cpu_quota_zero(tmp_path: Path) -> None:
    p = write(tmp_path, "[resources]\ncpu_quota = 0\n")
    assert error_of(p) == f"{p}: resources.cpu_quota: Input should be greater than 0 (got 0)"


def test_bad_sst_method(tmp_path: Path) -> None:
    p = write(tmp_path, '[mariadb]\nsst_method = "xtrabackup"\n')
    assert (
        error_of(p) == f"{p}: mariadb.sst_method: Input should be 'rsync' or 'mariabackup' (got 'xtrabackup')"
    )


def test_evs_inactive_below_suspect(tmp_path: Path) -> None:
    p = write(tmp_path, "[mariadb]\nevs_suspect_timeout = 5\nevs_inactive_timeout = 3\n")
    assert error_of(p) == (
        f"{p}: mariadb: evs_inactive_timeout must be >= evs_suspect_timeout (Galera refuses otherwise)"
    )


def test_evs_keepalive_too_large(tmp_path: Path) -> None:
    p = write(
        tmp_path, "[mariadb]\nevs_suspect_timeout = 1\nevs_inactive_timeout = 3\nevs_keepalive_period = 2\n"
    )
    msg = error_of(p)
    assert msg.startswith(f"{p}: mariadb: evs_keepalive_period must be ")
    assert "\n" not in msg


def test_evs_valid_fast_detection() -> None:
    m = MariaDBSettings(evs_suspect_timeout=1.5, evs_inactive_timeout=3, evs_keepalive_period=0.3)
    assert (m.evs_suspect_timeout, m.evs_inactive_timeout, m.evs_keepalive_period) == (1.5, 3.0, 0.3)


def test_node_index_larger_than_nodes(tmp_path: Path) -> None:
    p = write(tmp_path, "[cluster]\nnodes = 3\n[[node]]\nindex = 4\ncpu_quota = 1\n")
    assert error_of(p) == f"{p}: (top level): node.index 4 is larger than cluster.nodes (3)"


def test_node_index_given_twice(tmp_path: Path) -> None:
    p = write(tmp_path, "[cluster]\nnodes = 3\n[[node]]\nindex = 2\n[[node]]\nindex = 2\n")
    assert error_of(p) == f"{p}: (top level): node.index 2 is given twice"


def test_node_index_zero(tmp_path: Path) -> None:
    p = write(tmp_path, "[[node]]\nindex = 0\n")
    assert error_of(p) == f"{p}: node[0].index: Input should be greater than or equal to 1 (got 0)"


def test_node_index_missing(tmp_path: Path) -> None:
    p = write(tmp_path, "[[node]]\ncpu_quota = 1\n")
    assert error_of(p) == f"{p}: node[0].index: Field required"


def test_every_error_is_one_line_per_problem(tmp_path: Path) -> None:
    p = write(tmp_path, '[cluster]\nname = "X"\nnodes = 0\n')
    lines = error_of(p).splitlines()
    assert len(lines) == 2
    assert all(ln.startswith(f"{p}: cluster.") for ln in lines)
