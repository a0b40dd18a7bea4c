"""VIP monitor: who holds a keepalived pair's virtual IP, sampled every `interval` seconds beside
the load (each sample asks every balancer's interface), for checkers.vip. A change of holders is
also handed to `on_change` as it happens, so a killed run keeps when its VIP moved."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from clusterbench.checkers.vip import VipSample
from clusterbench.history.ops import Timebase

log = logging.getLogger(__name__)

Holders = Callable[[], list[str]]
OnChange = Callable[[VipSample], None]


@dataclass(eq=False)
class VipMonitor:
    """Samples `holders` every `interval` seconds on a thread of its own, between start and stop."""

    holders: Holders
    timebase: Timebase
    _: KW_ONLY
    interval: float = 0.5
    on_change: OnChange | None = None
    _samples: list[VipSample] = field(init=False, default_factory=list)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _stop: threading.Event = field(init=False, default_factory=threading.Event)
    _thread: threading.Thread | None = field(init=False, default=None)
    stopped_t: float | None = field(init=False, default=None)

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="vip-monitor", daemon=True)
        self._thread.start()

    def poll(self) -> VipSample:
        wall, t = self.timebase.stamp()
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
        self.stopped_t = self.timebase.t()

    def samples(self) -> list[VipSample]:
        with self._lock:
            return sorted(self._samples, key=lambda s: s.t)
