"""The SQLite store: one file holds runs, trials, samples, summaries, histograms, events, provenance.

WAL mode; every write commits at once, so a run that is killed keeps every sample it received.
Everything a report needs comes from here alone.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from clusterbench.errors import InputError
from clusterbench.store.rows import TelemetryRows, VerificationRows
from clusterbench.store.schema import MIGRATIONS, SCHEMA_VERSION
from clusterbench.workloads.histogram import LatencyHistogram
from clusterbench.workloads.parse import Sample, Summary

Status = Literal["running", "completed", "interrupted", "failed"]
ALL_CLIENTS = -1

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def process_start_ticks(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), None if gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[19])


def _f(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


@dataclass(frozen=True)
class RunRow:
    id: int
    kind: str
    name: str
    command_line: str
    notes: str
    status: str
    started_at: str
    ended_at: str | None


@dataclass(frozen=True)
class TrialRow:
    id: int
    run_id: int
    seq: int
    workload: str
    params: dict[str, Any]
    status: str
    started_at: str
    ended_at: str | None


class Store(TelemetryRows, VerificationRows):
    """Runs, trials and their measurements; the telemetry and verification rows are in rows.py."""

    def __init__(self, conn: sqlite3.Connection, clock: Clock = _utcnow) -> None:
        self.conn = conn
        self.clock = clock

    # ---- lifecycle ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, clock: Clock = _utcnow) -> Store:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        store = cls(conn, clock)
        store.migrate()
        return store

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> None:
        current = self.version
        if current > SCHEMA_VERSION:
            raise InputError(
                f"store schema version {current} is newer than this clusterbench ({SCHEMA_VERSION}); "
                "upgrade clusterbench"
            )
        for number in range(current + 1, SCHEMA_VERSION + 1):
            try:
                with self._tx():
                    self.conn.executescript(
                        "BEGIN;" + MIGRATIONS[number - 1] + f";PRAGMA user_version={number};"
                    )
            except sqlite3.OperationalError:
                # Another process created the same new store at the same moment (a run and a
                # reader of its results): its migration committed first. Fine if it got here.
                if self.version < number:
                    raise

    @contextmanager
    def _tx(self) -> Iterator[None]:
        try:
            yield
            if self.conn.in_transaction:
                self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def _now(self) -> str:
        return self.clock().isoformat(timespec="milliseconds")

    # ---- runs and trials ------------------------------------------------------------------

    def create_run(
        self,
        kind: str,
        *,
        name: str = "",
        command_line: str = "",
        notes: str = "",
        tags: Sequence[str] = (),
        pid: int | None = None,
    ) -> int:
        """A new run, with its tags and notes from the start: a run killed at any moment keeps them."""
        owner = os.getpid() if pid is None else pid
        cur = self.conn.execute(
            "INSERT INTO runs (kind, name, command_line, notes, status, started_at, owner_pid, owner_start) "
            "VALUES (?, ?, ?, ?, 'running', ?, ?, ?)",
            (kind, name, command_line, notes, self._now(), owner, process_start_ticks(owner)),
        )
        assert cur.lastrowid is not None
        if tags:
            self.add_tags(cur.lastrowid, list(tags))
        return cur.lastrowid

    def set_notes(self, run_id: int, notes: str) -> None:
        self.get_run(run_id)
        self.conn.execute("UPDATE runs SET notes = ? WHERE id = ?", (notes, run_id))

    def tags(self, run_id: int) -> list[str]:
        """The run's tags (`--tag`) as given: 'key=value', or 'key' for a bare word."""
        rows = self.conn.execute(
            "SELECT key, value FROM run_tags WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
        return [f"{r[0]}={r[1]}" if r[1] else r[0] for r in rows]

    def add_tags(self, run_id: int, tags: list[str]) -> list[str]:
        """Add key=value tags to a run (a key given again takes the new value); return all."""
        for tag in tags:
            key, _, value = tag.partition("=")
            self.conn.execute(
                "INSERT INTO run_tags (run_id, key, value, seq) VALUES (?, ?, ?, "
                "(SELECT COALESCE(MAX(seq), -1) + 1 FROM run_tags WHERE run_id = ?)) "
                "ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
                (run_id, key, value, run_id),
            )
        return self.tags(run_id)

    def finish_run(self, run_id: int, status: Status) -> None:
        self.conn.execute(
            "UPDATE runs SET status = ?, ended_at = ? WHERE id = ?", (status, self._now(), run_id)
        )

    def add_trial(self, run_id: int, seq: int, workload: str, params: dict[str, Any]) -> int:
        cur = self.conn.execute(
            "INSERT INTO trials (run_id, seq, workload, params, status, started_at) "
            "VALUES (?, ?, ?, ?, 'running', ?)",
            (run_id, seq, workload, json.dumps(params, sort_keys=True, default=str), self._now()),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def finish_trial(self, trial_id: int, status: Status) -> None:
        self.conn.execute(
            "UPDATE trials SET status = ?, ended_at = ? WHERE id = ?", (status, self._now(), trial_id)
        )

    def mark_interrupted(self, is_alive: Callable[[int, int | None], bool] | None = None) -> list[int]:
        """Runs still 'running' whose owning process is gone become 'interrupted' (their trials too)."""

        def alive(pid: int, start: int | None) -> bool:
            now = process_start_ticks(pid)
            return now is not None and (start is None or now == start)

        check = is_alive or alive
        rows = self.conn.execute(
            "SELECT id, owner_pid, owner_start FROM runs WHERE status = 'running'"
        ).fetchall()
        gone = [
            r["id"] for r in rows if r["owner_pid"] is None or not check(r["owner_pid"], r["owner_start"])
        ]
        now = self._now()
        with self._tx():
            self.conn.execute("BEGIN")
            for run_id in gone:
                self.conn.execute(
                    "UPDATE runs SET status = 'interrupted', ended_at = ? WHERE id = ?", (now, run_id)
                )
                self.conn.execute(
                    "UPDATE trials SET status = 'interrupted', ended_at = ? "
                    "WHERE run_id = ? AND status = 'running'",
                    (now, run_id),
                )
        return gone

    # ---- measurements ---------------------------------------------------------------------

    def add_sample(self, trial_id: int, s: Sample) -> None:
        hist = json.dumps(s.hist.to_json()["buckets"]) if s.hist is not None else None
        self.conn.execute(
            "INSERT INTO samples (trial_id, client, t, interval, threads, events, tps, qps_read, qps_write, "
            "qps_other, lat_min, lat_avg, lat_max, percentile, lat_pct, p50, p95, p99, p999, errors, "
            "reconnects, hist) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                trial_id, s.client, s.t, s.interval, s.threads, s.events, s.tps, s.qps_read, s.qps_write,
                s.qps_other, s.lat_min_ms, s.lat_avg_ms, s.lat_max_ms, s.percentile, s.lat_pct_ms,
                s.pct(50), s.pct(95), s.pct(99), s.pct(99.9), s.errors, s.reconnects, hist,
            ),
        )  # fmt: skip

    def add_summary(
        self, trial_id: int, s: Summary, *, client: int = ALL_CLIENTS, exit_code: int | None = None
    ) -> None:
        with self._tx():
            self.conn.execute("BEGIN")
            self.conn.execute(
                "INSERT OR REPLACE INTO summaries (trial_id, client, duration, threads, events, tps, "
                "qps_read, qps_write, qps_other, lat_min, lat_avg, lat_max, percentile, lat_pct, p50, p95, "
                "p99, p999, errors, reconnects, exit_code) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    trial_id, client, s.duration, s.threads, s.events, s.tps, s.qps_read, s.qps_write,
                    s.qps_other, s.lat_min_ms, s.lat_avg_ms, s.lat_max_ms, s.percentile, s.lat_pct_ms,
                    s.pct(50), s.pct(95), s.pct(99), s.pct(99.9), s.errors, s.reconnects, exit_code,
                ),
            )  # fmt: skip
            if s.hist is not None:
                self._put_histogram(trial_id, client, s.hist)

    def _put_histogram(self, trial_id: int, client: int, h: LatencyHistogram) -> None:
        self.conn.execute("DELETE FROM histograms WHERE trial_id = ? AND client = ?", (trial_id, client))
        sc = h.scheme
        self.conn.executemany(
            "INSERT INTO histograms (trial_id, client, idx, value_ms, le_ms, count) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (trial_id, client, i, sc.value_ms(i), math.exp((i + 0.5) / sc.mult + sc.deduct), c)
                for i, c in sorted(h.counts.items())
            ],
        )

    def add_event(
        self,
        run_id: int,
        kind: str,
        detail: dict[str, Any],
        *,
        trial_id: int | None = None,
        t: float | None = None,
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO events (run_id, trial_id, at, t, kind, detail) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, trial_id, self._now(), t, kind, json.dumps(detail, sort_keys=True, default=str)),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def set_provenance(self, run_id: int, key: str, value: Any, *, trial_id: int | None = None) -> None:
        """Resolved topology, workload options, versions, kernel, CPU, memory; per trial: server
        variables and engine status (use keys like 'engine_status@start')."""
        self.conn.execute(
            "INSERT INTO provenance (run_id, trial_id, key, value) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (run_id, COALESCE(trial_id, -1), key) DO UPDATE SET value = excluded.value",
            (run_id, trial_id, key, json.dumps(value, sort_keys=True, default=str)),
        )

    CLIENT_COLUMNS: tuple[str, ...] = (
        "client", "host", "database", "pid", "started_ns", "start_wall", "rate_asked", "rate_achieved",
        "cpu", "flags",
    )  # fmt: skip

    def add_trial_client(self, trial_id: int, row: dict[str, Any]) -> None:
        """Where one load client ran and what it could do: `cpu` (a dict) and `flags` (a list)
        are stored as JSON."""
        values = {**row, "cpu": json.dumps(row.get("cpu")), "flags": json.dumps(list(row.get("flags") or []))}
        cols = self.CLIENT_COLUMNS
        self.conn.execute(
            f"INSERT OR REPLACE INTO trial_clients (trial_id, {', '.join(cols)}) "
            f"VALUES (?, {', '.join('?' for _ in cols)})",
            (trial_id, *(values.get(c) for c in cols)),
        )

    def trial_clients(self, trial_id: int) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            f"SELECT {', '.join(self.CLIENT_COLUMNS)} FROM trial_clients WHERE trial_id = ? ORDER BY client",
            (trial_id,),
        ).fetchall()
        return [{**dict(r), "cpu": json.loads(r["cpu"]), "flags": json.loads(r["flags"])} for r in rows]

    # ---- queries --------------------------------------------------------------------------

    def list_runs(self) -> list[RunRow]:
        rows = self.conn.execute(
            "SELECT id, kind, name, command_line, notes, status, started_at, ended_at FROM runs ORDER BY id"
        ).fetchall()
        return [RunRow(**dict(r)) for r in rows]

    def get_run(self, run_id: int) -> RunRow:
        r = self.conn.execute(
            "SELECT id, kind, name, command_line, notes, status, started_at, ended_at FROM runs WHERE id = ?",
            (run_id,),
        ).fetchone()
        if r is None:
            raise InputError(f"no run {run_id} in the store; `clusterbench results list` lists the runs")
        return RunRow(**dict(r))

    def trials(self, run_id: int) -> list[TrialRow]:
        rows = self.conn.execute(
            "SELECT id, run_id, seq, workload, params, status, started_at, ended_at FROM trials "
            "WHERE run_id = ? ORDER BY seq",
            (run_id,),
        ).fetchall()
        return [TrialRow(**{**dict(r), "params": json.loads(r["params"])}) for r in rows]

    def samples(self, trial_id: int, client: int | None = None) -> list[dict[str, Any]]:
        q = "SELECT * FROM samples WHERE trial_id = ?"
        args: list[Any] = [trial_id]
        if client is not None:
            q += " AND client = ?"
            args.append(client)
        rows = self.conn.execute(q + " ORDER BY t, client", args).fetchall()
        keys = [d[0] for d in self.conn.execute("SELECT * FROM samples LIMIT 0").description]
        return [{k: r[k] for k in keys if k not in ("id", "hist")} for r in rows]

    def summaries(self, trial_id: int) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT * FROM summaries WHERE trial_id = ? ORDER BY client", (trial_id,))
        return [dict(r) for r in rows.fetchall()]

    def summary(self, trial_id: int) -> dict[str, Any] | None:
        """The all-clients summary, or the only client's."""
        rows = self.summaries(trial_id)
        if not rows:
            return None
        return rows[0] if rows[0]["client"] == ALL_CLIENTS or len(rows) == 1 else None

    def histogram(self, trial_id: int, client: int = ALL_CLIENTS) -> list[tuple[float, float, int]]:
        rows = self.conn.execute(
            "SELECT value_ms, le_ms, count FROM histograms WHERE trial_id = ? AND client = ? ORDER BY idx",
            (trial_id, client),
        ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]

    def events(self, run_id: int) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT * FROM events WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
        return [{**dict(r), "detail": json.loads(r["detail"])} for r in rows]

    def provenance(self, run_id: int, trial_id: int | None = None) -> dict[str, Any]:
        if trial_id is None:
            rows = self.conn.execute(
                "SELECT key, value FROM provenance WHERE run_id = ? AND trial_id IS NULL ORDER BY key",
                (run_id,),
            )
        else:
            rows = self.conn.execute(
                "SELECT key, value FROM provenance WHERE run_id = ? AND trial_id = ? ORDER BY key",
                (run_id, trial_id),
            )
        return {r["key"]: json.loads(r["value"]) for r in rows.fetchall()}

