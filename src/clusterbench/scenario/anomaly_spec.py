"""`[anomalies]` in a scenario file (pure models, validated up front): which anomaly checkers
run beside the load and how: the lost-update counter, the stale-read probe, list-append
transactions."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from clusterbench.verify.counter import MODES

CHECKERS: tuple[str, ...] = ("counter", "stale-read", "list-append")
Session = Literal["default", "causal"]
CounterMode = Literal["read-modify-write", "for-update", "increment"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CounterSpec(_Strict):
    modes: list[CounterMode] = Field(default_factory=lambda: list(MODES), min_length=1)  # type: ignore[arg-type]
    keys: int = Field(1, ge=1, le=1000, description="counters per mode")
    clients_per_node: int = Field(1, ge=1, le=32)
    rate: float = Field(0.0, ge=0, le=10000, description="increments per second per client; 0: back to back")
    session: Session = "default"


class StaleReadSpec(_Strict):
    sessions: list[Session] = Field(default_factory=lambda: ["default", "causal"], min_length=1)  # type: ignore[arg-type]
    rate: float = Field(
        50.0, ge=0, le=10000, description="write+read steps per second per pair; 0: back to back"
    )


class ListAppendSpec(_Strict):
    keys: int = Field(8, ge=1, le=100000, description="lists in use at a time")
    clients_per_node: int = Field(1, ge=1, le=32)
    rate: float = Field(
        20.0, ge=0, le=10000, description="transactions per second per client; 0: back to back"
    )
    max_ops: int = Field(4, ge=1, le=64, description="reads and appends per transaction, at most")
    appends_per_key: int = Field(
        32, ge=0, le=100000, description="a key is replaced after this many appends; 0: never"
    )
    reads: Literal["plain", "for-update"] = "plain"
    session: Session = "default"


class AnomalySpec(_Strict):
    """`[anomalies]` in a scenario file: which anomaly checkers run, and how."""

    checkers: list[str] = Field(default_factory=lambda: list(CHECKERS), min_length=1)
    counter: CounterSpec = Field(default_factory=CounterSpec)
    stale_read: StaleReadSpec = Field(default_factory=StaleReadSpec)
    list_append: ListAppendSpec = Field(default_factory=ListAppendSpec)

    @field_validator("checkers")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if c not in CHECKERS]
        if bad:
            raise ValueError(f"unknown checker {bad[0]!r}; known: {', '.join(CHECKERS)}")
        return list(dict.fromkeys(v))
