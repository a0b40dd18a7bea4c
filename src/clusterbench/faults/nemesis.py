"""The nemesis: applies a planned schedule in a thread, records every start and end as an event,
and heals whatever is still active when the trial ends, fails or is interrupted."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from clusterbench.cluster import Cluster
from clusterbench.faults.actions import Action
from clusterbench.faults.kinds import make_action
from clusterbench.faults.spec import PlannedFault

log = logging.getLogger(__name__)

EventSink = Callable[[str, dict[str, Any], float], None]


@dataclass
class FaultRecord:
    fault: PlannedFault
    started: float | None = None  # seconds after the trial start
    ended: float | None = None
    apply_detail: dict[str, Any] = field(default_factory=dict)
    heal_detail: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


class Nemesis:
    def __init__(
        self,
        cluster: Cluster,
        faults: list[PlannedFault],
        sink: EventSink,
        action_factory: Callable[[Cluster, PlannedFault], Action] = make_action,
    ) -> None:
        self.cluster = cluster
        self.faults = faults
        self.sink = sink
        self.records = [FaultRecord(f) for f in faults]
        self._actions = [action_factory(cluster, f) for f in faults]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def start(self, t0: float) -> None:
        """`t0` is the trial's start on time.monotonic()."""
        self._t0 = t0
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._thread.start()

    def _now(self) -> float:
        return time.monotonic() - self._t0

    def _wait_until(self, t: float) -> bool:
        """Sleep until trial time t; False if stopped first."""
        while not self._stop.is_set():
            left = t - self._now()
            if left <= 0:
                return True
            self._stop.wait(min(left, 0.05))
        return False

    def _timeline(self) -> list[tuple[float, int, str]]:
        steps: list[tuple[float, int, str]] = []
        for k, f in enumerate(self.faults):
            steps.append((f.at, k, "apply"))
            if f.until is not None:
                steps.append((f.until, k, "heal"))
        return sorted(steps)

    def _run(self) -> None:
        for t, k, what in self._timeline():
            if not self._wait_until(t):
                return
            if what == "apply":
                self._apply(k)
            else:
                self._heal(k)

    def _apply(self, k: int) -> None:
        rec, action = self.records[k], self._actions[k]
        with self._lock:
            rec.started = self._now()
            self.sink(
                "fault", {"fault": rec.fault.label(), "index": rec.fault.index, "phase": "start"}, rec.started
            )
            try:
                rec.apply_detail = action.apply()
            except Exception as exc:  # noqa: BLE001 - recorded; the trial's verdict becomes UNKNOWN
                rec.error = f"apply failed: {exc}"
                log.exception("fault %s", rec.fault.label())
            if rec.fault.until is None:
                rec.ended = self._now()
            self.sink(
                "fault",
                {
                    "fault": rec.fault.label(),
                    "index": rec.fault.index,
                    "phase": "applied",
                    **rec.apply_detail,
                    **({"error": rec.error} if rec.error else {}),
                },
                self._now(),
            )

    def _heal(self, k: int) -> None:
        rec, action = self.records[k], self._actions[k]
        with self._lock:
            if rec.ended is not None and rec.fault.until is not None:
                return
            t = self._now()
            try:
                rec.heal_detail = action.heal()
            except Exception as exc:  # noqa: BLE001 - recorded; the trial's verdict becomes UNKNOWN
                rec.error = (rec.error + "; " if rec.error else "") + f"heal failed: {exc}"
                log.exception("heal %s", rec.fault.label())
            rec.ended = t
            self.sink(
                "fault",
                {
                    "fault": rec.fault.label(),
                    "index": rec.fault.index,
                    "phase": "end",
                    "healed_in_s": round(self._now() - t, 2),
                    **rec.heal_detail,
                    **({"error": rec.error} if rec.error else {}),
                },
                t,
            )

    def heal_all(self) -> None:
        """Stop the schedule and heal every fault that was applied and not yet healed."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            # An apply in progress (e.g. a rolling restart) finishes first; it is bounded.
            self._thread.join(timeout=300)
        for k, rec in enumerate(self.records):
            if rec.started is not None and (rec.ended is None or self._actions[k].active):
                rec.ended = None
                self._heal(k)

    def windows(self) -> list[tuple[str, float, float]]:
        """(label, start, end) of every fault that ran, for shading plots and availability."""
        return [
            (r.fault.label(), r.started, r.ended if r.ended is not None else r.started)
            for r in self.records
            if r.started is not None
        ]

    def errors(self) -> list[str]:
        return [f"{r.fault.label()}: {r.error}" for r in self.records if r.error]
