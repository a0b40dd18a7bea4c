"""The live OpenMetrics endpoint (`--metrics-port PORT`): while a command runs, GET /metrics on
127.0.0.1:PORT renders the runs this process is writing, straight from the results store (the
same families as `results export --format openmetrics`), so Prometheus can scrape tps, latency
quantiles, the servers' telemetry and the verdicts as they come.

Each scrape opens its own connection to the store (SQLite in WAL mode lets it read while the run
writes), so the endpoint needs nothing from the pipeline but the store's path."""

from __future__ import annotations

import logging
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

from clusterbench.errors import InputError
from clusterbench.store import Store, process_start_ticks

log = logging.getLogger(__name__)
HOST = "127.0.0.1"  # never beyond this machine


def mark(store: Store) -> tuple[int, str]:
    """Where the store stands now: its newest run, and the time (to tell the runs made or resumed
    from now on)."""
    row = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
    return int(row[0]), store._now()


def own_runs(store: Store, since: tuple[int, str], pid: int) -> list[int]:
    """The runs this process created, or resumed (an experiment run again), since `since`."""
    rows = store.conn.execute(
        "SELECT id FROM runs WHERE owner_pid = ? AND owner_start IS ? AND (id > ? OR id IN "
        "(SELECT run_id FROM events WHERE kind = 'resume' AND at >= ?)) ORDER BY id",
        (pid, process_start_ticks(pid), since[0], since[1]),
    )
    return [int(r[0]) for r in rows.fetchall()]


class MetricsEndpoint:
    def __init__(self, store_path: Path, port: int, *, pid: int | None = None) -> None:
        self.store_path = store_path
        self.port = port
        self.pid = pid if pid is not None else os.getpid()
        with Store.open(store_path) as st:
            self.since = mark(st)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def render(self) -> str:
        from clusterbench.analysis.openmetrics import render

        with Store.open(self.store_path) as st:
            return render(st, own_runs(st, self.since, self.pid))

    def start(self) -> MetricsEndpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404, "only /metrics is served here")
                    return
                try:
                    body = endpoint.render().encode()
                except Exception as exc:  # noqa: BLE001 - a scrape never takes the run down
                    log.exception("metrics endpoint")
                    self.send_error(500, f"{type(exc).__name__}: {exc}")
                    return
                from clusterbench.analysis.openmetrics import CONTENT_TYPE

                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
                log.debug("metrics endpoint: " + format, *args)

        try:
            self._server = ThreadingHTTPServer((HOST, self.port), Handler)
        except OSError as exc:
            raise InputError(
                f"--metrics-port {self.port}: cannot listen on {HOST}:{self.port} ({exc.strerror}); "
                "choose another port"
            ) from None
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> MetricsEndpoint:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
