"""Which acknowledged writes of the web tier's load each node has (for checkers.http): read as the
admin in the engine's causal session (the node first applies everything its cluster committed
before the read), in batches of ids."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pymysql

from clusterbench.components.web.schema import WEB_SCHEMA, acknowledged_rows_query
from clusterbench.engines.base import DbNode

log = logging.getLogger(__name__)

BATCH = 500
READ_TIMEOUT = 60.0


def rows_present(node: DbNode, ids: Sequence[str], batch: int = BATCH) -> set[str]:
    """The ids of `ids` that are rows of the writes table on `node`."""
    found: set[str] = set()
    with node.connect(5.0, read_timeout=READ_TIMEOUT, database=WEB_SCHEMA) as conn, conn.cursor() as cur:
        for stmt in node.session.causal:
            cur.execute(stmt)
        for i in range(0, len(ids), batch):
            chunk = list(ids[i : i + batch])
            cur.execute(acknowledged_rows_query(len(chunk)), chunk)
            found |= {str(row[0]) for row in cur.fetchall()}
    return found


def read_acknowledged(nodes: Sequence[DbNode], ids: Sequence[str]) -> dict[str, set[str] | None]:
    """Per node (n1...) the acknowledged ids it has; None for a node that could not be read."""
    wanted = list(dict.fromkeys(ids))
    out: dict[str, set[str] | None] = {}
    for n in nodes:
        try:
            out[n.name] = rows_present(n, wanted)
        except (pymysql.MySQLError, OSError) as exc:
            log.warning("reading the acknowledged writes on %s: %s", n.name, exc)
            out[n.name] = None
    return out
