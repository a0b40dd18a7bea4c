"""The web application's two tables, as SQL (pure): `cbweb_items`, the rows /read and /mixed
select by id, and `cbweb_writes`, where /write and /mixed insert one uniquely identified row per
acknowledged request. Prepared once per dataset like sysbench's tables (workloads/http.py)."""

from __future__ import annotations

ITEMS_TABLE = "cbweb_items"
WRITES_TABLE = "cbweb_writes"
WEB_TABLES: tuple[str, ...] = (ITEMS_TABLE, WRITES_TABLE)
# rows per INSERT when filling the read table
INSERT_BATCH = 1000

CREATE_ITEMS = (
    f"CREATE TABLE {ITEMS_TABLE} ("
    "id INT NOT NULL PRIMARY KEY, "
    "k INT NOT NULL, "
    "v VARCHAR(64) NOT NULL"
    ") ENGINE=InnoDB"
)
# id: what the request or the load generator named the write (<attack>-<seq>), at most 64
# characters of [A-Za-z0-9._-]; node: the web node that wrote it
CREATE_WRITES = (
    f"CREATE TABLE {WRITES_TABLE} ("
    "id VARCHAR(64) NOT NULL PRIMARY KEY, "
    "node VARCHAR(16) NOT NULL, "
    "payload CHAR(32) NOT NULL, "
    "created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)"
    ") ENGINE=InnoDB"
)


def create_statements() -> list[str]:
    return [CREATE_ITEMS, CREATE_WRITES]


def item_inserts(rows: int, batch: int = INSERT_BATCH) -> list[str]:
    """INSERTs filling the read table with ids 1..rows (k and v derived from the id, so a read's
    answer can be checked)."""
    if rows < 1:
        raise ValueError("the read table needs at least one row")
    out = []
    for start in range(1, rows + 1, batch):
        ids = range(start, min(start + batch, rows + 1))
        out.append(f"INSERT INTO {ITEMS_TABLE} (id, k, v) VALUES " + ", ".join(
            f"({i}, {item_k(i, rows)}, 'item-{i}')" for i in ids))  # fmt: skip
    return out


def item_k(i: int, rows: int) -> int:
    """The k column of row i: a fixed permutation-like spread over 1..rows."""
    return (i * 7919) % rows + 1


def drop_statements() -> list[str]:
    return [f"DROP TABLE IF EXISTS {t}" for t in WEB_TABLES]


def acknowledged_rows_query(count: int) -> str:
    """SELECT of which of `count` ids (bound as %s parameters, PyMySQL style) the writes table
    has: what a lost-write check asks every node after the load."""
    if count < 1:
        raise ValueError("give at least one id")
    return f"SELECT id FROM {WRITES_TABLE} WHERE id IN ({', '.join(['%s'] * count)})"
