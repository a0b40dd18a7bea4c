"""Transactions of the list-append workload as data: micro-operations, their JSON form in the
history (the `value` of an op row), and parsing them back. Shared by the workload
(verify.list_append), the dependency-graph checker (checkers.list_append) and the EDN export
(checkers.edn), so the three agree on one encoding.

A transaction is a list of micro-operations `[f, key, value]`:
- `["append", k, v]`: append the unique integer v to the list stored under key k;
- `["r", k, [v1, v2, ...]]`: a read of key k that returned that list (an empty list when the key
  has no row yet); `["r", k, null]` when the result is not known (the transaction did not
  complete with ok).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from clusterbench.history.ops import Op, Outcome

WORKLOAD = "list-append"
FINAL_CLIENT_BASE = 900_000  # client ids of the final reads (one per node), after heal

Fn = Literal["append", "r"]


@dataclass(frozen=True, slots=True)
class MicroOp:
    f: Fn
    key: int
    # append: the element; r: the list read, or None when unknown
    value: int | tuple[int, ...] | None

    def to_json(self) -> list[Any]:
        v = list(self.value) if isinstance(self.value, tuple) else self.value
        return [self.f, self.key, v]

    @staticmethod
    def from_json(item: list[Any]) -> MicroOp:
        f, k, v = item
        if f == "append":
            return MicroOp("append", int(k), int(v))
        if f == "r":
            return MicroOp("r", int(k), None if v is None else tuple(int(x) for x in v))
        raise ValueError(f"unknown micro-operation {f!r}")


def encode(mops: list[MicroOp]) -> str:
    return json.dumps([m.to_json() for m in mops], separators=(",", ":"))


def decode(text: str | None) -> tuple[MicroOp, ...]:
    if not text:
        return ()
    return tuple(MicroOp.from_json(x) for x in json.loads(text))


@dataclass(frozen=True, slots=True)
class Txn:
    """One list-append transaction of the history with its outcome.

    `final` marks the read of every key on one node after heal (a causal read): it helps infer
    the version order and shows acknowledged appends that are missing."""

    id: int
    client: int
    process: str
    outcome: Outcome
    mops: tuple[MicroOp, ...]
    t_start: float
    t_end: float
    final: bool = False
    error: str | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    def appends(self, key: int | None = None) -> list[int]:
        return [
            int(m.value)  # type: ignore[arg-type]
            for m in self.mops
            if m.f == "append" and (key is None or m.key == key)
        ]

    def describe(self) -> dict[str, Any]:
        return {
            "txn": self.id,
            "client": self.client,
            "process": self.process,
            "outcome": str(self.outcome),
            "ops": [m.to_json() for m in self.mops],
            "t_start": round(self.t_start, 4),
            "t_end": round(self.t_end, 4),
        }


def parse_list(text: str | None) -> tuple[int, ...]:
    """A stored list as the database holds it: comma-separated integers ('' or NULL: empty)."""
    if not text:
        return ()
    return tuple(int(x) for x in text.split(","))


def txns_from_ops(ops: list[Op]) -> list[Txn]:
    """The list-append transactions of a history, numbered in order of their start."""
    rows = sorted((o for o in ops if o.workload == WORKLOAD), key=lambda o: (o.t_start, o.t_end, o.client))
    out = []
    for i, o in enumerate(rows):
        out.append(
            Txn(
                id=i,
                client=o.client,
                process=o.process,
                outcome=o.outcome,
                mops=decode(o.value),
                t_start=o.t_start,
                t_end=o.t_end,
                final=o.kind == "final-read",
                error=o.error,
            )
        )
    return out
