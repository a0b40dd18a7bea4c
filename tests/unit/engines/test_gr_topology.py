"""spec/engine.py through load_topology: [engine], [mysql], and settings of the other engine
refused with the field named."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterbench.errors import InputError
from clusterbench.spec.engine import EngineSettings, MySQLSettings
from clusterbench.spec.topology import Topology, load_topology


def load(tmp_path: Path, text: str) -> Topology:
    p = tmp_path / "t.toml"
    p.write_text(text)
    return load_topology(p)


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(InputError) as info:
        load(tmp_path, text)
    return str(info.value)


def test_default_engine_is_galera_without_mode() -> None:
    t = Topology()
    assert t.engine == EngineSettings(kind="galera", mode=None)
    assert t.mysql == MySQLSettings()


def test_group_replication_with_mysql_settings(tmp_path: Path) -> None:
    t = load(
        tmp_path,
        """
[cluster]
nodes = 5
[engine]
kind = "group_replication"
mode = "multi-primary"
[mysql]
member_expel_timeout = 2
innodb_buffer_pool_size = "128M"
extra = { group_replication_paxos_single_leader = true, binlog_row_image = "MINIMAL" }
""",
    )
    assert (t.engine.kind, t.engine.mode, t.engine.single_primary) == (
        "group_replication",
        "multi-primary",
        False,
    )
    assert t.mysql.member_expel_timeout == 2
    assert t.mysql.innodb_buffer_pool_size == "128M"
    assert t.mysql.extra == {"group_replication_paxos_single_leader": True, "binlog_row_image": "MINIMAL"}
    assert t.cluster.nodes == 5


def test_group_replication_defaults_to_single_primary(tmp_path: Path) -> None:
    t = load(tmp_path, '[engine]\nkind = "group_replication"\n')
    assert t.engine.mode is None and t.engine.single_primary


def test_unknown_engine_is_refused(tmp_path: Path) -> None:
    msg = error(tmp_path, '[engine]\nkind = "ndb"\n')
    assert msg.startswith(
        f"{tmp_path / 't.toml'}: engine.kind: Input should be 'galera' or 'group_replication'"
    )
    assert "'ndb'" in msg


def test_mode_under_galera_is_refused(tmp_path: Path) -> None:
    msg = error(tmp_path, '[engine]\nmode = "multi-primary"\n')
    assert "engine: engine.mode is for kind = 'group_replication'" in msg


def test_wsrep_setting_under_mysql_names_the_field(tmp_path: Path) -> None:
    msg = error(tmp_path, '[engine]\nkind = "group_replication"\n[mysql]\nwsrep_slave_threads = 4\n')
    assert "mysql.wsrep_slave_threads is a Galera setting" in msg
    msg = error(tmp_path, '[engine]\nkind = "group_replication"\n[mysql]\nextra = { wsrep_debug = 1 }\n')
    assert "mysql.extra.wsrep_debug is a Galera setting" in msg
    msg = error(tmp_path, '[engine]\nkind = "group_replication"\n[mysql]\nevs_suspect_timeout = 2.0\n')
    assert "mysql.evs_suspect_timeout is a Galera setting" in msg


def test_mariadb_section_under_group_replication_names_the_field(tmp_path: Path) -> None:
    msg = error(tmp_path, '[engine]\nkind = "group_replication"\n[mariadb]\nwsrep_slave_threads = 4\n')
    assert (
        "mariadb.wsrep_slave_threads is a Galera (MariaDB) setting but engine.kind = 'group_replication'"
        in msg
    )
    assert "[mysql]" in msg


def test_mysql_section_under_galera_names_the_field(tmp_path: Path) -> None:
    msg = error(tmp_path, "[mysql]\nmember_expel_timeout = 3\n")
    assert (
        "mysql.member_expel_timeout is a Group Replication (MySQL) setting but engine.kind is 'galera'" in msg
    )


def test_group_replication_setting_under_mariadb_extra_is_refused(tmp_path: Path) -> None:
    msg = error(tmp_path, "[mariadb]\nextra = { group_replication_consistency = 'AFTER' }\n")
    assert "group_replication_consistency is a Group Replication setting; Galera would not know it" in msg


def test_settings_clusterbench_owns_are_refused(tmp_path: Path) -> None:
    msg = error(tmp_path, '[engine]\nkind = "group_replication"\n[mysql]\nextra = { datadir = "/x" }\n')
    assert "mysql.extra.datadir is set by clusterbench itself" in msg


def test_more_than_nine_members_is_refused(tmp_path: Path) -> None:
    msg = error(tmp_path, '[cluster]\nnodes = 10\n[engine]\nkind = "group_replication"\n')
    assert "cluster.nodes: Input should be less than or equal to 9" in msg


def test_bad_values_in_mysql(tmp_path: Path) -> None:
    msg = error(tmp_path, '[engine]\nkind = "group_replication"\n[mysql]\nexit_state_action = "PANIC"\n')
    assert "mysql.exit_state_action: Input should be 'READ_ONLY', 'OFFLINE_MODE' or 'ABORT_SERVER'" in msg


def test_state_round_trip_keeps_both_sections() -> None:
    """state.json stores the whole model (both sections, defaults included): it must load again."""
    for data in (
        {"engine": {"kind": "group_replication"}, "mysql": {"member_expel_timeout": 1}},
        {"mariadb": {"wsrep_slave_threads": 4}},
    ):
        t = Topology.model_validate(data)
        assert Topology.model_validate(t.model_dump(mode="json")) == t
