"""An experiment's failover times against its factors: for every point whose trials stored failover
figures (`failover_figures = true` with kill-node faults), the median over its repetitions of when
the victim was suspected, when a view without it was installed, when a new primary was elected
(where the victim was one) and when writes succeeded again through the prober's path, each counted
from the fault's start. What a failover study of detection settings reads."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from clusterbench.analysis.sections import Section, Table, table_section
from clusterbench.store import Store

FIGURES = (
    ("suspected_after", "suspected"),
    ("view_shrunk_after", "view without it"),
    ("new_primary_after", "new primary"),
    ("writes_ok_after", "writes ok again"),
)


def failover_rows(store: Store, run_id: int) -> list[dict[str, Any]]:
    """One row per point (part, point label): its trials' failover figures, medians and counts."""
    points: dict[tuple[str, str], list[dict[str, Any]]] = {}
    by_trial = {tr.id: tr for tr in store.trials(run_id)}
    for e in store.events(run_id):
        tr = by_trial.get(int(e.get("trial_id") or -1))
        if e["kind"] != "failover" or tr is None or tr.status != "completed":
            continue
        point = (str(tr.params.get("part", "")), str(tr.params.get("point_label", "")))
        points.setdefault(point, []).append(e["detail"])
    rows = []
    for (part, label), figures in sorted(points.items()):
        row: dict[str, Any] = {"part": part, "point": label, "n": len(figures)}
        for name, _ in FIGURES:
            row[name] = _median([f.get(name) for f in figures])
        row["primary_killed"] = sum(1 for f in figures if f.get("victim_was_primary"))
        rows.append(row)
    return rows


def _median(values: Sequence[Any]) -> float | None:
    xs = [float(v) for v in values if v is not None]
    return round(statistics.median(xs), 2) if xs else None


def _cell(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def failover_section(store: Store, run_id: int) -> Section | None:
    head = ["part", "point", "n", *[name for _, name in FIGURES], "primary killed"]
    table = [
        [r["part"], r["point"], str(r["n"]), *[_cell(r[k]) for k, _ in FIGURES], str(r["primary_killed"])]
        for r in failover_rows(store, run_id)
    ]
    return table_section(
        "failover", "Failover times",
        "Per point, the median over its repetitions of seconds from each node fault's start until the "
        "survivors suspected the victim, installed a view without it, elected a new primary (only where "
        "the victim was the primary) and acknowledged a write again through the prober's path (a fresh "
        "connection and an insert every 100 ms). From the split-brain monitor's samples (every 0.5 s) "
        "and the prober's writes; n counts the faults.",
        Table(head, table, ["l", "l", "r", "r", "r", "r", "r", "r"]),
    )  # fmt: skip
