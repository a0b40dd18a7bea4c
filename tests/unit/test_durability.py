"""The durability line: the values the servers reported, the server family's shipped default
beside them, nodes that differ named."""

from pathlib import Path

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


def test_a_runs_line_names_the_trials_when_their_settings_differ(tmp_path: Path) -> None:
    from clusterbench.analysis.outcome import durability_line
    from clusterbench.store import Store

    st = Store.open(tmp_path / "r.db")
    run = st.create_run("experiment", name="flush")
    for seq, flush in ((1, "2"), (2, "1"), (3, "2")):
        t = st.add_trial(run, seq, "oltp_read_write", {})
        variables = {"version": MARIADB, "innodb_flush_log_at_trx_commit": flush, "sync_binlog": "0"}
        st.set_provenance(run, "server_variables@start", {"n1": variables}, trial_id=t)
    assert durability_line(st, run) == (
        "trials 1, 3: innodb_flush_log_at_trx_commit = 2 (the server's default is 1); "
        "sync_binlog = 0 (the server's default); "
        "trials 2: innodb_flush_log_at_trx_commit = 1 (the server's default); "
        "sync_binlog = 0 (the server's default)"
    )
    one = st.create_run("run")
    t = st.add_trial(one, 1, "oltp_read_write", {})
    mysql = {"n1": {"version": MYSQL, "sync_binlog": "1"}}
    st.set_provenance(one, "server_variables@start", mysql, trial_id=t)
    assert durability_line(st, one) == "sync_binlog = 1 (the server's default)"
    assert durability_line(st, st.create_run("run")) == ""
