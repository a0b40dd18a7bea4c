"""Three-valued verdicts with evidence (RELIABILITY principle 5): PASS, FAIL or UNKNOWN.

A checker that crashes or cannot tell (no ok operations, a node unreachable) returns UNKNOWN,
never PASS.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Result(enum.StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class Verdict:
    checker: str
    result: Result
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)
    # A FAIL that matches a documented limitation (e.g. lost updates without FOR UPDATE across
    # nodes) is reported as such, not as a broken promise.
    documented_limitation: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "checker": self.checker,
            "result": str(self.result),
            "summary": self.summary,
            "evidence": self.evidence,
            "documented_limitation": self.documented_limitation,
        }


def combine(verdicts: list[Verdict]) -> Result:
    """FAIL if any broken promise failed, else UNKNOWN if any is unknown (or none ran), else PASS.
    Documented limitations observed do not fail the run."""
    if any(v.result is Result.FAIL and not v.documented_limitation for v in verdicts):
        return Result.FAIL
    if not verdicts or any(v.result is Result.UNKNOWN for v in verdicts):
        return Result.UNKNOWN
    return Result.PASS


# A drill's exit codes (docs/faults.md#exit-codes, README): scripts tell "it failed" (1) from "it
# could not decide" (3) from "you typed it wrong, or it broke" (2). 130: interrupted.
EXIT_CODES = {Result.PASS: 0, Result.FAIL: 1, Result.UNKNOWN: 3}
EXIT_ERROR = 2


def exit_code(result: Result) -> int:
    """0 all PASS, 1 some FAIL, 3 UNKNOWN (2 is bad input or an error, never a verdict)."""
    return EXIT_CODES[result]


def pass_unless(
    name: str, doubts: Iterable[tuple[bool, str]], passed: str, evidence: dict[str, Any]
) -> Verdict:
    """How a checker that found nothing wrong ends: UNKNOWN with the first of `doubts` (`(holds,
    why)`, in order) that holds (the run could not tell), else PASS with `passed`."""
    for holds, why in doubts:
        if holds:
            return Verdict(name, Result.UNKNOWN, why, evidence)
    return Verdict(name, Result.PASS, passed, evidence)


def split_read(final: Mapping[str, T | str]) -> tuple[dict[str, T], dict[str, str]]:
    """Per-node state read after heal, split into (what was read, the nodes' errors)."""
    readable = {n: v for n, v in final.items() if not isinstance(v, str)}
    unreadable = {n: v for n, v in final.items() if isinstance(v, str)}
    return readable, unreadable


def read_doubts(
    what: str, readable: Mapping[str, Any], unreadable: Mapping[str, str]
) -> list[tuple[bool, str]]:
    """The doubts (for `pass_unless`) of a checker that compares every node's state after heal."""
    return [
        (bool(unreadable), f"could not read {what} on {', '.join(sorted(unreadable))}"),
        (not readable, "no node was read"),
    ]


def guarded(name: str, fn: Callable[[], Verdict]) -> Verdict:
    """A checker that crashes gives UNKNOWN, never PASS."""
    try:
        v = fn()
        assert isinstance(v, Verdict)
        return v
    except Exception as exc:  # noqa: BLE001
        log.exception("checker %s", name)
        return Verdict(name, Result.UNKNOWN, f"checker crashed: {type(exc).__name__}: {exc}")
