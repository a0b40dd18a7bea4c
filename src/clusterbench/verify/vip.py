"""VIP monitor: who holds a keepalived pair's virtual IP, sampled every `interval` seconds beside
the load (each sample asks every balancer's interface), for checkers.vip. A change of holders is
also handed to `on_change` as it happens, so a killed run keeps when its VIP moved."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from clusterbench.checkers.vip import VipSample
from clusterbench.history.ops import Timebase

log = logging.getLogger(__name__)

Holders = Callable[[], list[str]]
OnChange = Callable[[VipSample], None]


class VipMonitor:
    def __init__(
        self,
        holders: Holders,
        timebase: Timebase,
        *,
        interval: float = 0.5,
        on_change: OnChange | None = None,
    ) -> None:
        self.holders = holders
        self.tb = timebase
        self.interval = interval
        self.on_change = on_change
        self._samples: list[VipSample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stopped_t: float | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="vip-monitor", daemon=True)
        self._thread.start()

    def poll(self) -> VipSample:
        wall, t = self.tb.stamp()
        try:
            got = tuple(sorted(self.holders()))
        except Exception as exc:  # noqa: BLE001 - a failed look is a sample without an answer
            log.warning("who holds the VIP: %s", exc)
            return VipSample(t, wall, (), answered=False)
        return VipSample(t, wall, got)

    def _loop(self) -> None:
        last: tuple[str, ...] | None = None
        while True:
            s = self.poll()
            with self._lock:
                self._samples.append(s)
            if s.answered and s.holders != last:
                last = s.holders
                if self.on_change is not None:
                    try:
                        self.on_change(s)
                    except Exception:  # noqa: BLE001 - recording must not stop the sampling
                        log.exception("recording a VIP change")
            if self._stop.wait(self.interval):
                return

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.stopped_t = self.tb.t()

    def samples(self) -> list[VipSample]:
        with self._lock:
            return sorted(self._samples, key=lambda s: s.t)
