"""Split-brain monitor (C6): one thread per node polls its health in a monitoring session (one that
never blocks on a node without quorum) and records samples for checkers.split_brain."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from clusterbench.checkers.split_brain import MonitorSample
from clusterbench.engines.base import DbNode
from clusterbench.history.ops import BatchWriter, Timebase

SampleSink = Callable[[list[MonitorSample]], None]


def poll_node(node: DbNode, tb: Timebase) -> MonitorSample:
    """One sample; `answered=False` when the node is down or does not answer within ~1-2 s."""
    wall, t = tb.stamp()
    try:
        h = node.health()
    except Exception:  # noqa: BLE001 - any failure is "did not answer"
        h = None
    if h is None:
        return MonitorSample(t, wall, node.name, False)
    return MonitorSample(
        t=t,
        wall=wall,
        node=node.name,
        answered=True,
        cluster_status=h.quorum_word,
        size=h.size,
        conf_id=h.view_seq,
        state_uuid=h.group_id,
        local_state=h.state,
        ready=h.ready,
        last_committed=h.progress,
        members=h.members,
        writable=h.writable,
        role=h.role,
    )


class SplitBrainMonitor:
    def __init__(
        self,
        nodes: Sequence[DbNode],
        timebase: Timebase,
        *,
        interval: float = 0.5,
        sink: SampleSink | None = None,
        poll: Callable[[DbNode, Timebase], MonitorSample] = poll_node,
    ) -> None:
        self.nodes = list(nodes)
        self.tb = timebase
        self.interval = interval
        self.poll = poll
        self._samples: list[MonitorSample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.writer: BatchWriter[MonitorSample] | None = (
            BatchWriter(sink, 0.5, name="monitor-writer") if sink is not None else None
        )

    def start(self) -> None:
        if self._threads:
            raise RuntimeError("monitor already started")
        self._stop.clear()
        if self.writer is not None:
            self.writer.start()
        for n in self.nodes:
            t = threading.Thread(target=self._loop, args=(n,), name=f"monitor-{n.name}", daemon=True)
            self._threads.append(t)
            t.start()

    def _loop(self, node: DbNode) -> None:
        while True:
            self.record(self.poll(node, self.tb))
            if self._stop.wait(self.interval):
                return

    def record(self, s: MonitorSample) -> None:
        with self._lock:
            self._samples.append(s)
        if self.writer is not None:
            self.writer.put(s)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout)
        self._threads = []
        if self.writer is not None:
            self.writer.stop()

    def samples(self) -> list[MonitorSample]:
        with self._lock:
            return sorted(self._samples, key=lambda s: (s.t, s.node))
