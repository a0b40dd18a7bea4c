"""The durability line: the values the servers reported, the server family's shipped default
beside them, nodes that differ named."""

from clusterbench.durability import durability, family

MARIADB = "10.11.19-MariaDB-0+deb12u1"
MYSQL = "9.7.4-2"


def test_family_from_the_version_variable() -> None:
    assert family(MARIADB) == "MariaDB"
    assert family(MYSQL) == "MySQL"
    assert family("") is None and family(None) is None


def test_clusterbenchs_flush_2_on_mariadb_is_shown_beside_the_servers_default_1() -> None:
    nodes = {
        f"n{i}": {"version": MARIADB, "innodb_flush_log_at_trx_commit": "2", "sync_binlog": "0"}
        for i in (1, 2, 3)
    }
    d = durability(nodes)
    assert d.server == "MariaDB"
    assert d.line() == (
        "durability: innodb_flush_log_at_trx_commit = 2 (the server's default is 1); "
        "sync_binlog = 0 (the server's default)"
    )


def test_mysql_defaults_differ_from_mariadbs_for_the_binary_log() -> None:
    nodes = {"n1": {"version": MYSQL, "innodb_flush_log_at_trx_commit": "1", "sync_binlog": "0"}}
    d = durability(nodes)
    assert [s.changed for s in d.settings] == [False, True]
    assert "sync_binlog = 0 (the server's default is 1)" in d.line()


def test_nodes_that_differ_are_named_and_one_off_default_node_counts_as_changed() -> None:
    nodes = {
        "n1": {"version": MARIADB, "innodb_flush_log_at_trx_commit": "1"},
        "n2": {"version": MARIADB, "innodb_flush_log_at_trx_commit": "0"},
    }
    (s,) = durability(nodes).settings
    assert s.value == "1 on n1, 0 on n2"
    assert s.changed
    assert s.text() == "innodb_flush_log_at_trx_commit = 1 on n1, 0 on n2 (the server's default is 1)"


def test_no_answer_means_no_line_and_no_version_means_no_default_claimed() -> None:
    assert durability(None).line() == ""
    assert durability({}).known is False
    d = durability({"n1": {"innodb_flush_log_at_trx_commit": "2"}})
    assert d.server is None
    assert d.line() == "durability: innodb_flush_log_at_trx_commit = 2"
