"""Whether the cluster under a load is still there: a run whose every node went down must end at
its planned time, keep what it measured, and say so, instead of letting its clients retry their
connections until the hard limit and then blaming the credentials."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

# After the planned end, how long the clients may still take when the cluster is down.
DOWN_GRACE_S = 3.0


@dataclass(eq=False)
class ClusterWatch:
    """Polls the cluster's servers (processes, not SQL) once a second while a load runs."""

    cluster: Any
    planned_s: float
    _: KW_ONLY
    interval: float = 1.0
    monotonic: Callable[[], float] = time.monotonic
    t0: float = field(init=False, default=0.0)
    down_since: float | None = field(init=False, default=None)  # seconds after the load started
    _stop: threading.Event = field(init=False, default_factory=threading.Event)
    _thread: threading.Thread | None = field(init=False, default=None)

    def any_alive(self) -> bool:
        try:
            return any(n.alive() for n in self.cluster.nodes())
        except Exception:  # noqa: BLE001 - a node that cannot be asked counts as alive: never stop on it
            return True

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            now = self.monotonic() - self.t0
            if self.any_alive():
                self.down_since = None
            elif self.down_since is None:
                self.down_since = round(now, 1)

    def __enter__(self) -> ClusterWatch:
        self.t0 = self.monotonic()
        self._thread = threading.Thread(target=self._poll, name="cluster-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def stop_reason(self) -> str | None:
        """Past the planned end with every node down: why the load should end now."""
        if self.down_since is None or self.monotonic() - self.t0 < self.planned_s + DOWN_GRACE_S:
            return None
        return self.line()

    def line(self) -> str | None:
        if self.down_since is None:
            return None
        return f"every node of the cluster is down since {self.down_since:.1f} s"

    def down_now(self) -> str | None:
        """After the load: a line when no node runs now, else None."""
        if self.any_alive():
            return None
        return self.line() or "every node of the cluster is down"
