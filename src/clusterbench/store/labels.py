"""What people do to stored runs beside reading them: mark one as the baseline, delete some, pick
them by engine, kind, tag and age. Functions over a Store (the store's schema 5)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from clusterbench.errors import InputError
from clusterbench.store.store import Store

AGE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([mhdw])$")


def baseline(store: Store) -> int | None:
    row = store.conn.execute("SELECT id FROM runs WHERE baseline = 1 ORDER BY id DESC").fetchone()
    return int(row[0]) if row is not None else None


def set_baseline(store: Store, run_id: int | None) -> None:
    """Mark `run_id` as the baseline (the one run `compare baseline RUN` means); None clears it."""
    if run_id is not None:
        store.get_run(run_id)
    store.conn.execute("UPDATE runs SET baseline = 0 WHERE baseline = 1")
    if run_id is not None:
        store.conn.execute("UPDATE runs SET baseline = 1 WHERE id = ?", (run_id,))


def delete_run(store: Store, run_id: int) -> None:
    """The run and everything of it (trials, samples, verdicts, ... cascade). A run still being
    written by a live command is refused."""
    run = store.get_run(run_id)
    if run.status == "running":
        raise InputError(
            f"run {run_id} is still running (its command is alive); stop that command first, then delete it"
        )
    store.conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))


def since_cutoff(text: str, now: datetime | None = None) -> str:
    """--since as the earliest start time to keep, ISO like the store's: a date or time
    ('2026-11-28', '2026-11-28T14:00') or an age ('90m', '2h', '3d', '1w')."""
    now = now or datetime.now(UTC)
    m = AGE_RE.match(text.strip())
    if m:
        unit = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[m.group(2)]
        return (now - timedelta(**{unit: float(m.group(1))})).isoformat(timespec="milliseconds")
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            f"--since {text!r}: give a date or time (2026-11-28, 2026-11-28T14:00) or an age "
            "(90m, 2h, 3d, 1w)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds")


def tag_matches(tags: list[str], want: str) -> bool:
    """`--tag key=value` keeps runs with that label; `--tag key`, runs with the key at any value."""
    if "=" in want:
        return want in tags
    return any(t == want or t.startswith(want + "=") for t in tags)
