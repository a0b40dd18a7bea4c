"""clock-skew: the target servers' wall clocks jump by `offset` and/or drift by `drift` per second
for the fault's window; the heal bumps them back to the real time. Through libfaketime
(engines/fakeclock.py): only on a cluster brought up with `cluster.clock = "faketime"`. The fault's
row gives each server's skew as measured (its NOW(6) against this machine's clock) beside the one
asked, once the servers have read the new offset and again after the heal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pymysql

from clusterbench.cluster import Cluster
from clusterbench.engines.base import DbNode
from clusterbench.engines.fakeclock import REREAD_S, offset_text
from clusterbench.errors import PreflightError
from clusterbench.faults.base import FaultAction
from clusterbench.faults.spec import PlannedFault

# a drift is written this often (libfaketime reads it again at most once a second)
DRIFT_STEP_S = 0.5
# how long the servers get to show a new offset (REREAD_S and libfaketime's own check)
SEEN_WITHIN_S = 3 * REREAD_S + 2


def set_offset(node: DbNode, seconds: float) -> None:
    """Shift a server's wall clock by `seconds` from the real one (0: back to it)."""
    node.host.put_file(node.clock_file, offset_text(seconds), mode=0o644)


def measured_skew(node: DbNode) -> float | None:
    """The server's NOW(6) against this machine's clock read around the statement, on a connection
    made first (None: no answer)."""
    try:
        with node.connect(timeout=2.0) as conn, conn.cursor() as cur:
            t0 = time.time()
            cur.execute("SELECT UNIX_TIMESTAMP(NOW(6))")
            t1 = time.time()
            row = cur.fetchone()
    except pymysql.MySQLError:
        return None
    return None if row is None else float(row[0]) - (t0 + t1) / 2


def skew_text(seconds: float | None) -> str:
    return "no answer" if seconds is None else f"{seconds:+.3f} s"


class ClockSkew(FaultAction):
    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        if cluster.topology.cluster.clock != "faketime":
            raise PreflightError(
                "clock-skew shifts the wall clock of servers started under libfaketime; set "
                'cluster.clock = "faketime" in the topology and bring the cluster up again'
            )
        self.offset = float(fault.params.get("offset_s", 0.0))
        self.drift = float(fault.params.get("drift_s_per_s", 0.0))
        self._stop = threading.Event()
        self._drifter: threading.Thread | None = None

    def _write(self, seconds: float) -> None:
        for i in self.fault.nodes:
            set_offset(self.cluster.node(i), seconds)

    def _measure(self, expected: Callable[[], float]) -> dict[str, float | None]:
        """Each server's skew once it shows the offset written (libfaketime reads the file again
        within about two seconds here), or as it stands after SEEN_WITHIN_S."""
        out: dict[str, float | None] = {}
        deadline = time.monotonic() + SEEN_WITHIN_S
        for i in self.fault.nodes:
            node = self.cluster.node(i)
            while True:
                got = measured_skew(node)
                near = got is not None and abs(got - expected()) < 0.25 + 2 * abs(self.drift)
                if near or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            out[f"n{i}"] = got
        return out

    def _drift_loop(self, t0: float) -> None:
        while not self._stop.wait(DRIFT_STEP_S):
            self._write(self.offset + self.drift * (time.monotonic() - t0))

    def _apply(self) -> dict[str, Any]:
        self._stop.clear()
        t0 = time.monotonic()
        self._write(self.offset)
        if self.drift:
            self._drifter = threading.Thread(target=self._drift_loop, args=(t0,), daemon=True, name="drift")
            self._drifter.start()
        measured = self._measure(lambda: self.offset + self.drift * (time.monotonic() - t0))
        asked = [f"{self.offset:+g} s"] if self.offset or not self.drift else []
        if self.drift:
            asked.append(f"drifting {self.drift * 1000:+g} ms/s")
        seen = ", ".join(f"{n} {skew_text(v)}" for n, v in measured.items())
        return {
            "measured_s": measured,
            "summary": f"wall clock of {', '.join(measured)} {' and '.join(asked)}; measured {seen}",
        }

    def _heal(self) -> dict[str, Any]:
        self._stop.set()
        if self._drifter is not None:
            self._drifter.join(timeout=5)
            self._drifter = None
        self._write(0.0)
        measured = self._measure(lambda: 0.0)
        return {"measured_s": measured, "back": ", ".join(f"{n} {skew_text(v)}" for n, v in measured.items())}
