"""analysis/variables.py: what the servers ran with against what the topology asked, per node."""

from __future__ import annotations

from clusterbench.analysis.variables import compare, node_expected


def snaps(n3_threads: str) -> list[tuple[str, dict[str, dict[str, str]], dict[str, str]]]:
    nodes = {f"n{i}": {"wsrep_slave_threads": "2", "innodb_buffer_pool_size": "67108864"} for i in (1, 2)}
    nodes["n3"] = {"wsrep_slave_threads": n3_threads, "innodb_buffer_pool_size": "33554432"}
    return [("trial 1 start", nodes, {})]


def test_a_node_with_settings_of_its_own_is_held_against_them_and_the_difference_still_shows() -> None:
    topology = {
        "mariadb": {"wsrep_slave_threads": 2, "innodb_buffer_pool_size": "64M"},
        "node": [{"index": 3, "mariadb": {"wsrep_slave_threads": 1, "innodb_buffer_pool_size": "32M"}}],
    }
    own = node_expected(topology)
    assert own == {"n3": {"wsrep_slave_threads": "1", "innodb_buffer_pool_size": "32M"}}
    cluster = {"wsrep_slave_threads": "2", "innodb_buffer_pool_size": "64M"}
    rows = {r.name: r for r in compare(snaps("1"), cluster, own).rows}
    threads = rows["wsrep_slave_threads"]
    assert threads.differs_from_topology == set()  # n3 runs what it was given
    assert threads.differs_between_nodes and threads.odd_nodes == {"n3"} and threads.flagged
    # n3 running the cluster's value instead of its own is a finding against the topology
    rows = {r.name: r for r in compare(snaps("2"), {"wsrep_slave_threads": "2"}, own).rows}
    assert rows["wsrep_slave_threads"].differs_from_topology == {"n3"}
    # without the node's own settings, the same servers differ from the topology on n3
    rows = {r.name: r for r in compare(snaps("1"), {"wsrep_slave_threads": "2"}).rows}
    assert rows["wsrep_slave_threads"].differs_from_topology == {"n3"}
