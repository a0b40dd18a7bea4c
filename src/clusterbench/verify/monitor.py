"""Split-brain monitor (C6): one thread per node polls its wsrep status (wsrep_sync_wait=0, so a
node without quorum answers instead of blocking) and records samples for checkers.split_brain."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from clusterbench.checkers.split_brain import MonitorSample
from clusterbench.components.galera.node import GaleraNode
from clusterbench.components.galera.status import parse_wsrep_status
from clusterbench.verify.history import BatchWriter, Timebase

SampleSink = Callable[[list[MonitorSample]], None]


def poll_node(node: GaleraNode, tb: Timebase) -> MonitorSample:
    """One sample; `answered=False` when the node is down or does not answer within ~1-2 s."""
    wall, t = tb.stamp()
    if not node.alive():
        return MonitorSample(t, wall, node.name, False)
    try:
        with node.connect(1.0, read_timeout=2) as conn, conn.cursor() as cur:
            # Never block on a node that lost quorum (RELIABILITY: monitoring sessions).
            cur.execute("SET SESSION wsrep_sync_wait=0")
            cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep_%'")
            rows = [(str(r[0]), "" if r[1] is None else str(r[1])) for r in cur.fetchall()]
    except Exception:  # noqa: BLE001 - any failure is "did not answer"
        return MonitorSample(t, wall, node.name, False)
    st = parse_wsrep_status(rows)
    members = {k.lower(): v for k, v in rows}.get("wsrep_incoming_addresses", "")
    return MonitorSample(
        t=t,
        wall=wall,
        node=node.name,
        answered=True,
        cluster_status=st.cluster_status,
        size=st.cluster_size,
        conf_id=st.cluster_conf_id,
        state_uuid=st.cluster_state_uuid,
        local_state=st.state_comment,
        ready=st.ready,
        last_committed=st.last_committed,
        members=members,
    )


class SplitBrainMonitor:
    def __init__(
        self,
        nodes: Sequence[GaleraNode],
        timebase: Timebase,
        *,
        interval: float = 0.5,
        sink: SampleSink | None = None,
        poll: Callable[[GaleraNode, Timebase], MonitorSample] = poll_node,
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

    def _loop(self, node: GaleraNode) -> None:
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
