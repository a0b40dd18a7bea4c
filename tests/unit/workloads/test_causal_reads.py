from __future__ import annotations

import pymysql  # type: ignore[import-untyped, unused-ignore]
import pytest

from clusterbench.workloads.runner import causal_reads


class Cursor:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.sql: list[str] = []

    def execute(self, sql: str) -> None:
        self.sql.append(sql)
        if self.error is not None:
            raise self.error


def test_sets_each_engines_causal_read() -> None:
    cur = Cursor()
    causal_reads(cur)
    # Galera's, then Group Replication's; a server that does not know one skips it (1193).
    assert cur.sql == ["SET SESSION wsrep_sync_wait=1", "SET SESSION group_replication_consistency='BEFORE'"]


def test_server_without_the_variable_is_left_alone() -> None:
    # every statement fails with 1193 (the server knows neither variable): each is still tried,
    # none of the errors escapes
    cur = Cursor(pymysql.err.OperationalError(1193, "Unknown system variable 'wsrep_sync_wait'"))
    causal_reads(cur)
    assert cur.sql == ["SET SESSION wsrep_sync_wait=1", "SET SESSION group_replication_consistency='BEFORE'"]


def test_other_errors_are_raised() -> None:
    cur = Cursor(pymysql.err.OperationalError(1045, "Access denied"))
    with pytest.raises(pymysql.err.OperationalError) as err:
        causal_reads(cur)
    assert err.value.args[0] == 1045 and cur.sql == ["SET SESSION wsrep_sync_wait=1"]  # stopped at the first
