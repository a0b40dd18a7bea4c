"""The web tier's part of a trial's checks: each fault's HTTP outage (from the per-second HTTP
figures of the load) and whether every acknowledged write is on every running node
(checkers/http.py), for the trials whose load is an HTTP test."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterbench.checkers.http import HttpOutage, check_acknowledged, http_outages
from clusterbench.checkers.verdict import Result, Verdict
from clusterbench.verify.http_writes import read_acknowledged
from clusterbench.workloads import RunResult

WRITE_PAGES = ("write", "mixed")


def outages(result: RunResult | None, windows: Sequence[tuple[str, float, float]],
            load_wall: float | None) -> list[HttpOutage]:  # fmt: skip
    """Each fault's HTTP outage; [] without an HTTP load or faults. `load_wall`: the wall clock
    (s) at the trial's time 0, which places the load's seconds (it began at result.start_ns)."""
    if result is None or result.http is None or not windows:
        return []
    offset = result.start_ns / 1e9 - load_wall if result.start_ns and load_wall is not None else 0.0
    return http_outages(result.http.combined, windows, offset)


def acknowledged_verdict(cluster: Any, result: RunResult, nodes: int | None) -> Verdict | None:
    """Every write answered 200 is a row on each of the trial's running nodes (1..nodes, every
    node by default); None when the load wrote nothing through the web tier."""
    http = result.http
    if http is None or http.page not in WRITE_PAGES or cluster is None:
        return None
    running = cluster.nodes()[: nodes or None]
    try:
        present = read_acknowledged(running, http.acknowledged) if http.acknowledged else {}
    except Exception as exc:  # noqa: BLE001 - a checker that cannot tell says UNKNOWN, never PASS
        return Verdict("acknowledged-writes", Result.UNKNOWN, f"could not read the nodes: {exc}")
    return check_acknowledged(http.acknowledged, present)
