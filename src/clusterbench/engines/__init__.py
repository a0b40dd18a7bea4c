"""Database engines behind one interface (engines/base.py): MariaDB Galera; MySQL Group
Replication's pieces live in engines/group_replication/.

The registry's names (engines/registry.py) are imported when first used (clusterbench.lazy): a
light module of the package (fakeclock, a fault's parser needs it) loads no engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterbench.lazy import lazy_names

if TYPE_CHECKING:
    from clusterbench.engines.registry import ENGINES, SESSIONS, make_engine, per_node_variables

_WHERE = {name: "clusterbench.engines.registry" for name in ("ENGINES", "SESSIONS", "make_engine",
                                                             "per_node_variables")}  # fmt: skip

__all__ = ["ENGINES", "SESSIONS", "make_engine", "per_node_variables"]

__getattr__ = lazy_names(__name__, _WHERE, globals())
