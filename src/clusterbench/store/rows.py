"""The store's rows of server telemetry and bottleneck verdicts, and of verification (operation
histories, monitor samples, checker verdicts): Store's methods, kept apart from runs and trials."""

from __future__ import annotations

import json
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

OP_COLUMNS: tuple[str, ...] = (
    "workload", "client", "process", "address", "kind", "key", "value", "wall_start", "wall_end",
    "t_start", "t_end", "outcome", "error_code", "error",
)  # fmt: skip
MONITOR_COLUMNS: tuple[str, ...] = (
    "t", "wall", "node", "answered", "cluster_status", "size", "conf_id", "state_uuid", "local_state",
    "ready", "last_committed", "members",
)  # fmt: skip


class _Rows(Protocol):
    """What these methods need of the Store they are part of."""

    conn: sqlite3.Connection

    def _now(self) -> str: ...

    def _tx(self) -> AbstractContextManager[None]: ...


class TelemetryRows:
    # ---- server telemetry and bottleneck verdicts (docs/telemetry.md) ----------------------

    def add_telemetry(self: _Rows, trial_id: int, rows: list[tuple[float, float, str, str, float]]) -> None:
        """Append (t, wall, source, metric, value) rows in one transaction."""
        with self._tx():
            self.conn.execute("BEGIN")
            self.conn.executemany(
                "INSERT INTO telemetry (trial_id, t, wall, source, metric, value) VALUES (?, ?, ?, ?, ?, ?)",
                [(trial_id, *r) for r in rows],
            )

    def shift_telemetry(self: _Rows, trial_id: int, origin: float) -> None:
        """Put a trial's telemetry on its samples' time axis: t = wall - origin (the wall clock
        when its clients started measuring)."""
        self.conn.execute("UPDATE telemetry SET t = wall - ? WHERE trial_id = ?", (origin, trial_id))

    def telemetry(self: _Rows, trial_id: int, metric: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT t, wall, source, metric, value FROM telemetry WHERE trial_id = ?"
        args: tuple[Any, ...] = (trial_id,)
        if metric is not None:
            sql += " AND metric = ?"
            args += (metric,)
        rows = self.conn.execute(sql + " ORDER BY t, source, metric", args).fetchall()
        return [dict(r) for r in rows]

    def set_bottleneck(self: _Rows, trial_id: int, verdict: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO bottlenecks (trial_id, resource, source, utilization, summary, detail) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (trial_id, verdict["resource"], verdict.get("source") or "", verdict.get("utilization"),
             verdict["summary"], json.dumps(verdict)),  # fmt: skip
        )

    def bottleneck(self: _Rows, trial_id: int) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT detail FROM bottlenecks WHERE trial_id = ?", (trial_id,)).fetchone()
        return json.loads(row["detail"]) if row is not None else None


class VerificationRows:
    # ---- verification: operation histories, monitor samples, verdicts ----------------------

    OP_COLUMNS = OP_COLUMNS
    MONITOR_COLUMNS = MONITOR_COLUMNS

    @property
    def path(self: _Rows) -> Path | None:
        """The database file, so another thread can open its own connection (None: in memory)."""
        for row in self.conn.execute("PRAGMA database_list").fetchall():
            if row[1] == "main" and row[2]:
                return Path(row[2])
        return None

    def add_ops(self: _Rows, trial_id: int, ops: list[dict[str, Any]]) -> None:
        """Append operations (history.ops.Op.to_row() dicts) in one transaction."""
        cols = OP_COLUMNS
        with self._tx():
            self.conn.execute("BEGIN")
            self.conn.executemany(
                f"INSERT INTO ops (trial_id, {', '.join(cols)}) VALUES (?, {', '.join('?' for _ in cols)})",
                [(trial_id, *(o.get(c) for c in cols)) for o in ops],
            )

    def ops(self: _Rows, trial_id: int, workload: str | None = None) -> list[dict[str, Any]]:
        q = f"SELECT {', '.join(OP_COLUMNS)} FROM ops WHERE trial_id = ?"
        args: list[Any] = [trial_id]
        if workload is not None:
            q += " AND workload = ?"
            args.append(workload)
        return [dict(r) for r in self.conn.execute(q + " ORDER BY id", args).fetchall()]

    def add_monitor_samples(self: _Rows, trial_id: int, samples: list[dict[str, Any]]) -> None:
        cols = MONITOR_COLUMNS
        with self._tx():
            self.conn.execute("BEGIN")
            self.conn.executemany(
                f"INSERT INTO monitor_samples (trial_id, {', '.join(cols)}) "
                f"VALUES (?, {', '.join('?' for _ in cols)})",
                [(trial_id, *(s.get(c) for c in cols)) for s in samples],
            )

    def monitor_samples(self: _Rows, trial_id: int) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            f"SELECT {', '.join(MONITOR_COLUMNS)} FROM monitor_samples WHERE trial_id = ? ORDER BY id",
            (trial_id,),
        ).fetchall()
        return [dict(r) for r in rows]

    def add_verdict(self: _Rows, run_id: int, verdict: dict[str, Any], *, trial_id: int | None = None) -> int:
        """Store a checkers.verdict.Verdict.to_json() dict."""
        cur = self.conn.execute(
            "INSERT INTO verdicts (run_id, trial_id, at, checker, result, summary, evidence, "
            "documented_limitation) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                trial_id,
                self._now(),
                verdict["checker"],
                verdict["result"],
                verdict["summary"],
                json.dumps(verdict.get("evidence", {}), sort_keys=True, default=str),
                int(bool(verdict.get("documented_limitation", False))),
            ),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def verdicts(self: _Rows, run_id: int, trial_id: int | None = None) -> list[dict[str, Any]]:
        q = (
            "SELECT trial_id, at, checker, result, summary, evidence, documented_limitation FROM verdicts "
            "WHERE run_id = ?"
        )
        args: list[Any] = [run_id]
        if trial_id is not None:
            q += " AND trial_id = ?"
            args.append(trial_id)
        return [
            {
                **dict(r),
                "evidence": json.loads(r["evidence"]),
                "documented_limitation": bool(r["documented_limitation"]),
            }
            for r in self.conn.execute(q + " ORDER BY id", args).fetchall()
        ]
