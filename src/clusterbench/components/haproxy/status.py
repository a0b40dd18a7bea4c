"""Pure parsing of HAProxy's `show stat` CSV."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass


@dataclass(frozen=True)
class BackendServer:
    proxy: str
    name: str
    status: str  # UP, DOWN, "UP 1/2", "DOWN 1/2", MAINT, no check
    current_sessions: int
    total_sessions: int
    check_status: str
    last_change_s: int

    @property
    def up(self) -> bool:
        return self.status == "UP"


def parse_show_stat(text: str) -> list[BackendServer]:
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        return []
    header = lines[0][2:]
    reader = csv.DictReader(io.StringIO("\n".join([header, *lines[1:]])))
    out: list[BackendServer] = []
    for row in reader:
        name = row.get("svname") or ""
        if name in ("FRONTEND", "BACKEND", ""):
            continue
        out.append(
            BackendServer(
                proxy=row.get("pxname") or "",
                name=name,
                status=row.get("status") or "",
                current_sessions=int(row.get("scur") or 0),
                total_sessions=int(row.get("stot") or 0),
                check_status=row.get("check_status") or "",
                last_change_s=int(row.get("lastchg") or 0),
            )
        )
    return out
