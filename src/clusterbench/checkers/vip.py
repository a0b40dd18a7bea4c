"""The balancers' split brain: a keepalived pair must never have its VIP on both balancers at once
(clients that reach either one see two entry points, and ARP caches flip between them). From the
monitor's samples of who holds the VIP, FAIL while two hold it, with when and how long (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clusterbench.checkers.verdict import Result, Verdict

NAME = "vip"


@dataclass(frozen=True)
class VipSample:
    t: float  # seconds after the trial started
    wall: float
    holders: tuple[str, ...]  # roles holding the VIP, e.g. ("lb1",); () when none could be read
    answered: bool = True  # False: the balancers could not be asked


def spans(samples: Sequence[VipSample], pred: Any, end: float | None = None) -> list[tuple[float, float]]:
    """[start, end) periods where pred(sample) held: from the first sample where it held to the
    first later sample where it did not (or `end`, or the last sample)."""
    out: list[tuple[float, float]] = []
    start: float | None = None
    for s in samples:
        if not s.answered:
            continue
        if pred(s):
            if start is None:
                start = s.t
        elif start is not None:
            out.append((start, s.t))
            start = None
    if start is not None:
        last = end if end is not None else max(s.t for s in samples)
        out.append((start, max(start, last)))
    return out


def check_vip(samples: Sequence[VipSample], end: float | None = None, name: str = NAME) -> Verdict:
    """`end`: when sampling stopped (a split that lasts to the end lasts until then); `name`: the
    verdict's ("vip" for the database balancers' pair, "front-vip" for the web tier's front)."""
    answered = [s for s in sorted(samples, key=lambda s: s.t) if s.answered]
    if not answered:
        return Verdict(name, Result.UNKNOWN, "no sample of who holds the VIP", {"samples": len(samples)})
    double = spans(answered, lambda s: len(s.holders) > 1, end)
    none = spans(answered, lambda s: not s.holders, end)
    moves: list[dict[str, Any]] = []
    prev: tuple[str, ...] | None = None
    for s in answered:
        if s.holders != prev:
            moves.append({"t": round(s.t, 2), "holders": list(s.holders)})
            prev = s.holders
    held_twice = sum(b - a for a, b in double)
    evidence: dict[str, Any] = {
        "samples": len(answered),
        "held_by_two": [{"from": round(a, 2), "to": round(b, 2), "s": round(b - a, 2)} for a, b in double],
        "held_by_two_s": round(held_twice, 2),
        "held_by_none": [{"from": round(a, 2), "to": round(b, 2), "s": round(b - a, 2)} for a, b in none],
        "changes": moves,
    }
    if double:
        first, last = double[0], double[-1]
        who = sorted({h for s in answered if len(s.holders) > 1 for h in s.holders})
        return Verdict(
            name,
            Result.FAIL,
            f"the VIP was held by {' and '.join(who)} at once for {held_twice:.1f} s "
            f"(from {first[0]:.1f} s to {last[1]:.1f} s, {len(double)} period(s)): "
            "a split brain of the balancers",
            evidence,
        )
    path = " -> ".join("+".join(m["holders"]) or "none" for m in moves)
    gaps = sum(b - a for a, b in none)
    return Verdict(
        name,
        Result.PASS,
        f"never held by two balancers ({len(answered)} samples; {path}"
        + (f"; held by none for {gaps:.1f} s" if gaps else "")
        + ")",
        evidence,
    )
