"""Process identity on this machine, read from /proc.

PID 1 on some machines (this one included) does not reap orphans, so a daemon that died stays a
zombie: a zombie counts as dead here.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def stat_fields(raw: str) -> list[str] | None:
    """The fields of a /proc/PID/stat line after the command name (also used for remote hosts)."""
    if ")" not in raw:
        return None
    # The command name is in parentheses and may contain spaces; fields restart after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()  # [0] is state (field 3), [19] is starttime (field 22)


def _stat_fields(pid: int, proc_root: Path = PROC) -> list[str] | None:
    try:
        raw = (proc_root / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return stat_fields(raw)


def start_ticks(pid: int, proc_root: Path = PROC) -> int | None:
    fields = _stat_fields(pid, proc_root)
    if fields is None or len(fields) < 20:
        return None
    return int(fields[19])


def state(pid: int, proc_root: Path = PROC) -> str | None:
    fields = _stat_fields(pid, proc_root)
    return fields[0] if fields else None


def is_alive(pid: int, ticks: int, proc_root: Path = PROC) -> bool:
    fields = _stat_fields(pid, proc_root)
    if fields is None or len(fields) < 20:
        return False
    if fields[0] in ("Z", "X"):
        return False
    return int(fields[19]) == ticks


def send(pid: int, ticks: int, sig: int, proc_root: Path = PROC) -> bool:
    """Signal the process if it is still the one we started. Returns False if it is gone."""
    if not is_alive(pid, ticks, proc_root):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True
