"""Failover figures: how long a cluster took to route around a node it lost, from the split-brain
monitor's samples (every node's health every 0.5 s, in a monitoring session) and the prober's
writes through the balancer. Pure; engine-neutral (NodeHealth's words only).

Per fault that takes nodes away (kill, stop, pause, isolate), with t = 0 at the fault's start:

- `suspected_after`: the first sample in which a surviving member of the quorum no longer lists a
  victim among its view's ready members (Group Replication: the victim turned UNREACHABLE, ~5 s;
  Galera: the victim left the view, so this equals `view_shrunk_after`).
- `view_shrunk_after`: the first sample in which a surviving member of the quorum is in a view
  smaller than before the fault (Group Replication: the victim expelled; Galera: evicted).
- `new_primary_after`: only when a victim was the primary (the engine has roles and the victim
  was writable as PRIMARY just before the fault): the first sample in which another node is a
  writable PRIMARY with quorum. None when there is none before the next fault (or the end).
- `writes_ok_after`: through the first prober path (the balancer): the end of the first ok write
  after the last failed one (the availability checker's window end); 0 when no write failed.
- `primary`: the node elected, `victims`: the fault's nodes.

The monitor's resolution is its interval (0.5 s): the times are those of the first sample that
showed the change, at most one interval after it happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from clusterbench.checkers.availability import path_figures
from clusterbench.checkers.split_brain import MonitorSample
from clusterbench.history.ops import Op

# Faults after which the survivors must route around the victims.
FAILOVER_KINDS = ("kill-node", "stop-node", "pause-node", "isolate-node")


@dataclass(frozen=True)
class FailoverFault:
    label: str
    kind: str
    start: float
    end: float
    victims: tuple[str, ...]  # node names, "n2"
    addresses: tuple[str, ...]  # their addresses as the views list them


@dataclass(frozen=True)
class FailoverFigures:
    fault: str
    victims: tuple[str, ...]
    victim_was_primary: bool
    suspected_after: float | None
    view_shrunk_after: float | None
    new_primary_after: float | None
    primary: str | None
    writes_ok_after: float | None
    writes_path: str | None
    healed_at: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One sentence for people."""

        def s(x: float | None) -> str:
            return "-" if x is None else f"{x:.1f} s"

        parts = [f"{self.fault}:"]
        if self.victim_was_primary:
            parts.append(
                f"new primary {self.primary} after {s(self.new_primary_after)}"
                if self.new_primary_after is not None
                else "no new primary"
            )
        parts.append(f"view without {','.join(self.victims)} after {s(self.view_shrunk_after)}")
        if self.writes_path is not None:
            parts.append(
                f"writes through {self.writes_path} again after {s(self.writes_ok_after)}"
                if self.writes_ok_after
                else f"writes through {self.writes_path} never failed"
            )
        return " ".join(parts[:1]) + " " + "; ".join(parts[1:])


def _members(s: MonitorSample) -> set[str]:
    return {p.strip() for p in s.members.split(",") if p.strip()}


def failover_figures(
    samples: Sequence[MonitorSample], faults: Sequence[FailoverFault], ops: Sequence[Op], path: str | None
) -> list[FailoverFigures]:
    ordered = sorted(samples, key=lambda s: (s.t, s.node))
    starts = sorted(f.start for f in faults)
    out = []
    for f in faults:
        if f.kind not in FAILOVER_KINDS:
            continue
        # Writes count for this fault until the next one starts (as in the availability figures).
        until = next((t for t in starts if t > f.start), float("inf"))
        before: dict[str, MonitorSample] = {}
        for s in ordered:
            if s.t < f.start and s.answered:
                before[s.node] = s
        was_primary = any(
            before[v].writable and before[v].role == "PRIMARY" for v in f.victims if v in before
        )
        sizes = [s.size for n, s in before.items() if n not in f.victims and s.primary]
        size_before = max(sizes) if sizes else None
        suspected = shrunk = elected = None
        primary = None
        for s in ordered:
            if s.t < f.start or s.t >= until or s.node in f.victims or not s.answered or not s.primary:
                continue
            dt = round(s.t - f.start, 3)
            members = _members(s)
            if suspected is None and members and not (members & set(f.addresses)):
                suspected = dt
            if shrunk is None and size_before is not None and s.size < size_before:
                shrunk = dt
            if was_primary and elected is None and s.writable and s.role == "PRIMARY":
                elected, primary = dt, s.node
        writes_ok: float | None = None
        if path is not None:
            scope = [o for o in ops if o.process == path and o.t_end >= f.start and o.t_start < until]
            if scope:
                fig = path_figures(path, scope, f.start, until)
                if fig.errors == 0:
                    writes_ok = 0.0
                elif fig.unavailable_until is not None:
                    writes_ok = round(fig.unavailable_until - f.start, 3)
        out.append(
            FailoverFigures(
                fault=f.label,
                victims=f.victims,
                victim_was_primary=was_primary,
                suspected_after=suspected,
                view_shrunk_after=shrunk,
                new_primary_after=elected,
                primary=primary,
                writes_ok_after=writes_ok,
                writes_path=path,
                healed_at=round(f.end - f.start, 3),
            )
        )
    return out
