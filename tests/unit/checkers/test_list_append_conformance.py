"""The conformance suite (list_append_cases.CASES): every case's anomaly set, strongest models
and verdict; at least three cases per class; and each class's cases stop passing when that
class's detection is taken out of the checker (so the suite would notice it missing)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from clusterbench.checkers import list_append
from clusterbench.checkers.append import classes, cycles, observe, reads
from clusterbench.checkers.list_append import check_list_append
from clusterbench.checkers.verdict import Result

from .list_append_cases import CASES, Case, history

CLASSES = (
    *classes.ORDER,
    "G1a",
    "G1b",
    "internal",
    "future-read",
    "dirty-update",
    "duplicate-appends",
    "incompatible-order",
    "lost-update",
    "stale-read",
    "lost-append",
    "duplicate-elements",
    "phantom-value",
)


def outcome(c: Case) -> tuple[Result, set[str], list[str]]:
    v = check_list_append(history(c.specs), documented=c.documented)
    return v.result, set(v.evidence["anomalies"]), v.evidence["strongest_models"]


@pytest.mark.parametrize("c", CASES, ids=[f"{c.cls}: {c.name}" for c in CASES])
def test_case(c: Case) -> None:
    assert outcome(c) == (c.result, set(c.anomalies), c.models)


def test_at_least_fifty_cases_and_three_per_class() -> None:
    per_class = Counter(c.cls for c in CASES)
    assert len(CASES) >= 50
    assert {cls: per_class[cls] for cls in CLASSES if per_class[cls] < 3} == {}
    assert per_class["valid"] >= 3


def _without(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Take one class's detection out of the checker."""

    def nothing(*_: Any, **__: Any) -> None:
        return None

    if name in classes.ORDER:
        rest = tuple(c for c in classes.ORDER if c != name)
        monkeypatch.setattr(classes, "ORDER", rest)
        monkeypatch.setattr(cycles, "ORDER", rest)
        return
    hooks = {
        "G1a": (reads.ReadPass, "_aborted"),
        "G1b": (reads.ReadPass, "_g1b"),
        "incompatible-order": (reads.ReadPass, "_incompatible"),
        "phantom-value": (reads.ReadPass, "_phantom"),
        "stale-read": (reads.ReadPass, "_stale"),
        "internal": (list_append, "internal_reads"),
        "future-read": (list_append, "future_reads"),
        "dirty-update": (list_append, "dirty_updates"),
        "lost-update": (list_append, "lost_updates"),
        "lost-append": (list_append, "lost_appends"),
        "duplicate-appends": (observe, "duplicate_append"),
        "duplicate-elements": (observe, "duplicate_elements"),
    }
    owner, attr = hooks[name]
    monkeypatch.setattr(owner, attr, nothing)


@pytest.mark.parametrize("name", CLASSES)
def test_each_class_cases_fail_without_its_detection(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = [c for c in CASES if c.cls == name]
    _without(name, monkeypatch)
    still = [c.name for c in mine if outcome(c) == (c.result, set(c.anomalies), c.models)]
    assert still == []
