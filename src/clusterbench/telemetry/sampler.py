"""Telemetry of a running cluster, every second, beside the load.

- One probe process per host (telemetry/probe.py, started through the host's `popen`: on this
  machine or over the host's ssh connection) streams a line of kernel counters per second: CPU,
  memory, disk and link of each server process and of the host, and HAProxy's backends.
- One thread per node reads the engine's figures (`DbNode.metrics()`) over one kept-open
  monitoring connection.
- Rates are computed here (telemetry/rates.py) and handed to a sink in batches, from one writer
  thread; the latest value of every figure is kept for the live view.

`stop()` kills the probes (by PID and start time, like every process we start) and joins every
thread; it is safe to call more than once and from a `finally`. If this process dies without it,
each probe exits by itself within a second (see probe.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import queue
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from clusterbench.engines.base import DbNode
from clusterbench.hosts.base import Popen
from clusterbench.telemetry import probe as probe_module
from clusterbench.telemetry.rates import Hello, Point, engine_points, probe_points
from clusterbench.telemetry.sites import ProbeSite

log = logging.getLogger(__name__)

# (wall clock on this machine, source, metric, value)
Row = tuple[float, str, str, float]
Sink = Callable[[list[Row]], None]


class TelemetrySource(Protocol):
    """What telemetry needs from a cluster (Cluster has both)."""

    def probe_sites(self) -> list[ProbeSite]: ...

    def nodes(self) -> list[DbNode]: ...


def probe_source() -> str:
    return Path(probe_module.__file__).read_text()


class Telemetry:
    def __init__(
        self,
        source: TelemetrySource,
        sink: Sink,
        *,
        interval: float = 1.0,
        until: float = 3600.0,
        python: str = "python3",
        wall: Callable[[], float] = time.time,
        sink_done: Callable[[], None] | None = None,
    ) -> None:
        self.source = source
        self.sink = sink
        self.sink_done = sink_done  # called last, in the writer thread (it may close a connection)
        self.interval = interval
        self.until = until
        self.python = python
        self.wall = wall
        self._stop = threading.Event()
        self._queue: queue.Queue[list[Row]] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._procs: list[tuple[str, Popen]] = []
        self._lock = threading.Lock()
        self._latest: dict[tuple[str, str], float] = {}
        self.problems: list[str] = []
        self.cpu_s = 0.0  # CPU time of our own telemetry threads
        self.probe_cpu_s: dict[str, float] = {}  # per site: the probe's own CPU time
        self.points = 0
        self.sites: list[str] = []
        self._stopped = False

    # ---- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start a probe per host and a reader per node; a host whose probe cannot start is a
        problem line (`problems`), not a failure: the trial runs without its figures."""
        try:
            sites = self.source.probe_sites()
        except Exception as exc:  # noqa: BLE001 - telemetry must never stop the load
            sites = []
            self._problem(f"telemetry: cannot tell what to watch ({exc})")
        src = probe_source()
        for site in sites:
            spec = json.dumps(site.spec(self.interval, self.until), separators=(",", ":"))
            try:
                proc = site.host.popen([self.python, "-c", src, spec])
            except Exception as exc:  # noqa: BLE001 - one host's probe failing leaves the others
                self._problem(f"{site.name}: the telemetry probe did not start ({exc})")
                continue
            self._procs.append((site.name, proc))
            self.sites.append(site.name)
            self._spawn(f"probe-{site.name}", self._probe_loop, site, proc)
        try:
            nodes = self.source.nodes()
        except Exception as exc:  # noqa: BLE001
            nodes = []
            self._problem(f"telemetry: cannot list the nodes ({exc})")
        for node in nodes:
            self._spawn(f"engine-{node.name}", self._engine_loop, node)
        self._spawn("telemetry-writer", self._writer)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        for _, proc in self._procs:
            with contextlib.suppress(Exception):
                if proc.poll() is None:
                    proc.kill()
        for t in self._threads:
            t.join(timeout=10)
        for name, proc in self._procs:
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        stream.close()
            log.debug("telemetry probe on %s stopped", name)

    def __enter__(self) -> Telemetry:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- what others read ---------------------------------------------------------------------

    def latest(self) -> dict[tuple[str, str], float]:
        with self._lock:
            return dict(self._latest)

    def overhead(self) -> dict[str, Any]:
        return {
            "sites": self.sites,
            "controller_cpu_s": round(self.cpu_s, 4),
            "probe_cpu_s": {k: round(v, 4) for k, v in self.probe_cpu_s.items()},
            "points": self.points,
            "problems": self.problems,
        }

    # ---- threads ------------------------------------------------------------------------------

    def _problem(self, line: str) -> None:
        log.warning("%s", line)
        with self._lock:
            self.problems.append(line)

    def _spawn(self, name: str, fn: Callable[..., None], *args: Any) -> None:
        def run() -> None:
            try:
                fn(*args)
            except Exception:  # noqa: BLE001 - a broken reader loses its figures, never the run
                log.exception("telemetry thread %s", name)
            finally:
                with self._lock:
                    self.cpu_s += time.thread_time()

        t = threading.Thread(target=run, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _put(self, wall: float, points: Sequence[Point]) -> None:
        if not points:
            return
        with self._lock:
            for src, metric, value in points:
                self._latest[(src, metric)] = value
        self._queue.put([(wall, s, m, v) for s, m, v in points])

    def _probe_loop(self, site: ProbeSite, proc: Popen) -> None:
        assert proc.stdout is not None
        # a raw pipe (an ssh process's) would be read a byte per system call by readline
        stream: Any = proc.stdout
        if not isinstance(stream, io.BufferedIOBase):
            stream = io.BufferedReader(stream)
        limits = site.limits()
        remote = bool(getattr(site.host, "remote", False))
        hello: Hello | None = None
        prev: dict[str, Any] | None = None
        first_self: float | None = None
        offsets: list[float] = []
        for raw in iter(stream.readline, b""):
            received = self.wall()
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if "hello" in line:
                hello = Hello.from_json(line["hello"])
                continue
            if hello is None or "m" not in line:
                continue
            # a probe on another machine reads that machine's clock: put its times on ours (error:
            # the one-way delay of a line, a few ms); this machine's namespaces share our clock
            if remote and len(offsets) < 5:
                offsets.append(float(line["w"]) - received)
            wall = float(line["w"]) - (statistics.median(offsets) if offsets else 0.0)
            if line.get("self") is not None:
                if first_self is None:
                    first_self = float(line["self"])
                self.probe_cpu_s[site.name] = (float(line["self"]) - first_self) / hello.tck
            if prev is not None:
                self._put(wall, probe_points(site.name, hello, prev, line, limits))
            prev = line
        if hello is None and not self._stop.is_set():
            err = b""
            if proc.stderr is not None:
                with contextlib.suppress(Exception):
                    err = proc.stderr.read() or b""
            why = err.decode(errors="replace").strip().splitlines()
            self._problem(
                f"{site.name}: the telemetry probe exited at once ({why[-1] if why else 'no output'}); "
                f"it needs {self.python} on that host (`clusterbench provision` installs it)"
            )

    def _engine_loop(self, node: DbNode) -> None:
        prev: dict[str, float] | None = None
        prev_m = 0.0
        nxt = time.monotonic()
        try:
            while not self._stop.is_set():
                m0 = time.monotonic()
                got = node.metrics()
                wall = self.wall()
                if got is not None:
                    self._put(wall, engine_points(node.name, prev, got, m0 - prev_m))
                prev, prev_m = got, m0
                nxt += self.interval
                now = time.monotonic()
                if nxt < now:
                    nxt = now + self.interval
                self._stop.wait(nxt - now)
        finally:
            node.close_metrics()

    def _writer(self) -> None:
        try:
            self._write_batches()
        finally:
            if self.sink_done is not None:
                self.sink_done()

    def _write_batches(self) -> None:
        while True:
            stopping = self._stop.wait(0.5)
            batch: list[Row] = []
            while True:
                try:
                    batch += self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                try:
                    self.sink(batch)
                    self.points += len(batch)
                except Exception as exc:  # noqa: BLE001 - keep sampling; say it once
                    if not any("cannot store" in p for p in self.problems):
                        self._problem(f"telemetry: cannot store figures ({exc})")
            others = [t for t in self._threads if t.name != "telemetry-writer"]
            if stopping and all(not t.is_alive() for t in others) and self._queue.empty():
                return
