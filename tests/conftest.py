"""Test-session settings shared by the unit and integration tests."""

from __future__ import annotations

import pytest

# `make test` runs the test files on several workers (pytest-xdist, one file per worker at a time).
# A worker takes the next file as it frees up, in collection order, so the files that take longest
# (measured: `pytest --durations=0`, summed per file) go first and the short ones fill in at the end.
# The Makefile passes --no-loadscope-reorder: without it pytest-xdist orders the files by how many
# tests they hold, and the long integration files, which hold few, started last (one ran alone for
# the last 2 minutes of a CI run while the other workers idled).
LONGEST_FIRST = (
    "integration/test_rebuild.py",
    "integration/test_ssh.py",
    "integration/test_group_replication.py",
    "integration/test_fault_groups.py",
    "integration/test_faults.py",
    "integration/test_power_loss.py",
    "integration/test_web_tier.py",
    "integration/test_cluster.py",
    "integration/test_tpcc.py",
    "integration/test_experiment.py",
    "integration/test_anomalies.py",
    "integration/test_keepalived.py",
    "integration/test_access_slap.py",
    "integration/test_verify.py",
    "integration/test_workload_standalone.py",
    "integration/test_distributed_load.py",
    "integration/test_disk_full.py",
    "integration/test_faultfs.py",
    "integration/test_cluster_lock.py",
    "integration/test_fault_kit.py",
    "integration/test_search.py",
)


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    for i, name in enumerate(LONGEST_FIRST):
        if path.endswith(name):
            return i
    return len(LONGEST_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: the order within a file, and of the other files, is kept
