"""Telemetry of one trial, from the start of its load to its verdict: what the bench, scenario and
experiment runners call around `SysbenchRunner.run`.

    rec = TrialTelemetry(cluster, record, warmup=..., total_time=...)   # record: trial.recorder
    with rec:                       # probes and readers start; stopped in `finally`, also on Ctrl-C
        result = sysbench.run(..., on_sample=...)   # rec.live_line() for the live view meanwhile
    verdict = rec.conclude(result)  # telemetry on the samples' time axis, the bottleneck stored

Figures are stored as they arrive (a killed run keeps them), through a connection of the writer
thread's own. Until the clients' measurement start is known, a point's `t` is counted from when
the load was due to start after its warm-up; `conclude` moves every point onto the samples' axis.
Without a cluster (an endpoint given by --host) no server is sampled, and the verdict can only
say whether the load client was saturated.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from clusterbench.telemetry.live import live_line
from clusterbench.telemetry.sampler import Row, Telemetry, TelemetrySource
from clusterbench.telemetry.verdict import NO_SERVERS, Bottleneck, ClientFacts, candidates, decide
from clusterbench.workloads.merge import client_start_walls

log = logging.getLogger(__name__)

# How long a probe may live past the trial's planned end before it exits by itself.
PROBE_MARGIN_S = 300.0


def client_facts(result: Any) -> list[ClientFacts]:
    """The saturation detection's findings per client of a workloads RunResult."""
    out = []
    for c in result.clients:
        cpu = c.cpu
        demand = None
        if cpu is not None:
            demand = cpu.demand_frac if cpu.demand_frac is not None else cpu.proc_frac
        cores = cpu.proc_cores if cpu is not None else None
        out.append(ClientFacts(c.client, c.host, tuple(c.flags), demand, tuple(c.warnings()), cores))
    return out


def measured_window(samples: Sequence[Any], warmup: float, duration: float | None) -> tuple[float, float]:
    """The measured seconds on the samples' axis (which counts from the clients' start, warm-up
    included): from the start of the first measured interval to the end of the last one; without
    samples, the warm-up and the duration asked for."""
    if samples:
        first = min(samples, key=lambda s: s.t)
        return first.t - first.interval, max(s.t for s in samples)
    return warmup, warmup + (duration or 0.0)


def series_of(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in rows:
        out.setdefault((r["source"], r["metric"]), []).append((r["t"], r["value"]))
    return out


class TrialSink(Protocol):
    """Where a trial's telemetry goes (trial.recorder.TrialRecord): any thread may write."""

    def telemetry(self, rows: list[tuple[float, float, str, str, float]]) -> None: ...

    def shift_telemetry(self, origin: float) -> None: ...

    def telemetry_rows(self) -> list[dict[str, Any]]: ...

    def bottleneck(self, verdict: dict[str, Any]) -> None: ...

    def provenance(self, key: str, value: Any) -> None: ...

    def event(self, kind: str, detail: dict[str, Any], t: float | None = None) -> None: ...

    def release(self) -> None:
        """The calling thread is done writing: its connection may close."""


class TrialTelemetry:
    def __init__(
        self,
        source: TelemetrySource | None,
        record: TrialSink,
        *,
        warmup: float = 0.0,
        total_time: float = 60.0,
        interval: float = 1.0,
        enabled: bool = True,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.source = source if enabled else None
        self.record = record
        self.warmup = warmup
        self.interval = interval
        self.total_time = total_time
        self.enabled = enabled
        self.wall = wall
        self.origin = 0.0
        self.telemetry: Telemetry | None = None
        self._lock = threading.Lock()
        self.started_wall: float | None = None
        self.stopped_wall: float | None = None

    # ---- during the load ----------------------------------------------------------------------

    def _sink(self, rows: list[Row]) -> None:
        # called from the telemetry's writer thread (the record writes through its own connection)
        with self._lock:
            origin = self.origin
        self.record.telemetry([(w - origin, w, s, m, v) for w, s, m, v in rows])

    def _close_writer(self) -> None:
        self.record.release()

    def start(self) -> None:
        self.started_wall = self.wall()
        # the clients start shortly after this (workloads.placement.start_lead); their samples
        # count seconds from then (warm-up included), and so does telemetry: a first guess here,
        # which conclude() replaces with the clients' real start
        self.origin = self.started_wall + 0.5
        if self.source is None:
            return
        self.telemetry = Telemetry(
            self.source,
            self._sink,
            interval=self.interval,
            until=self.total_time + PROBE_MARGIN_S,
            sink_done=self._close_writer,
        )
        self.telemetry.start()

    def stop(self) -> None:
        if self.telemetry is not None:
            self.telemetry.stop()
        if self.stopped_wall is None:
            self.stopped_wall = self.wall()

    def __enter__(self) -> TrialTelemetry:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def live_line(self, nodes: Sequence[str] = ()) -> str:
        """The latest figures in one line for the live view ('' before the first ones)."""
        if self.telemetry is None:
            return ""
        return live_line(self.telemetry.latest())

    # ---- after the load -----------------------------------------------------------------------

    def conclude(self, result: Any, duration: float | None = None) -> Bottleneck:
        """Move the figures onto the samples' axis, decide and store the bottleneck, record what
        the telemetry itself cost. Call after stop() (the `with` block)."""
        self.stop()
        starts = client_start_walls(result.samples)
        if starts:
            offsets = {c.client: (c.clock_offset or 0.0) for c in result.clients}
            self.origin = min(w - offsets.get(c, 0.0) for c, w in starts.items())
            self.record.shift_telemetry(self.origin)
        start, end = measured_window(result.samples, self.warmup, duration)
        tel = self.telemetry
        shared = [n for n in (tel.sites if tel else []) if n == "host"]
        cands = candidates(series_of(self.record.telemetry_rows()), start, end, client_facts(result), shared)
        why = (
            "telemetry was off" if not self.enabled
            else NO_SERVERS if self.source is None
            else "no telemetry probe ran (see the telemetry_problem events)"
        )  # fmt: skip
        verdict = decide(cands, have_servers=tel is not None and bool(tel.sites), no_servers=why)
        self.record.bottleneck(verdict.to_json())
        if tel is not None:
            seconds = (self.stopped_wall or self.wall()) - (self.started_wall or self.wall())
            info: dict[str, Any] = {
                "interval_s": self.interval,
                "seconds": round(seconds, 3),
                **tel.overhead(),
            }
            self.record.provenance("telemetry", info)
        for line in tel.problems if tel else []:
            self.record.event("telemetry_problem", {"problem": line})
        return verdict
