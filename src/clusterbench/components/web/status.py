"""Pure parsing of a web node's own figures: php-fpm's status page (`?json`) and nginx's
stub_status."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class FpmStatus:
    """The pool as php-fpm's status page reports it."""

    pool: str
    process_manager: str
    accepted: int  # requests accepted since the pool started
    listen_queue: int  # requests waiting for a free child now
    max_listen_queue: int  # the most that ever waited
    idle: int
    active: int
    total: int
    max_active: int
    max_children_reached: int  # times the pool was full and a request had to wait
    slow_requests: int

    @property
    def busy(self) -> int:
        return self.active

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_FPM_KEYS = {
    "accepted": "accepted conn",
    "listen_queue": "listen queue",
    "max_listen_queue": "max listen queue",
    "idle": "idle processes",
    "active": "active processes",
    "total": "total processes",
    "max_active": "max active processes",
    "max_children_reached": "max children reached",
    "slow_requests": "slow requests",
}


def parse_fpm_status(text: str) -> FpmStatus | None:
    """php-fpm's `/fpm-status?json`; None when it is not that page (an error page, nothing)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or any(k not in data for k in _FPM_KEYS.values()):
        return None
    counts = {name: int(data[key]) for name, key in _FPM_KEYS.items()}
    return FpmStatus(pool=str(data.get("pool", "")), process_manager=str(data.get("process manager", "")),
                     **counts)  # fmt: skip


@dataclass(frozen=True)
class NginxStatus:
    """nginx's stub_status: connections now, and requests since it started."""

    active: int
    accepts: int
    handled: int
    requests: int
    reading: int
    writing: int
    waiting: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_STUB = re.compile(
    r"Active connections:\s*(\d+)\s+server accepts handled requests\s+(\d+)\s+(\d+)\s+(\d+)\s+"
    r"Reading:\s*(\d+)\s+Writing:\s*(\d+)\s+Waiting:\s*(\d+)"
)


def parse_stub_status(text: str) -> NginxStatus | None:
    m = _STUB.search(text)
    if m is None:
        return None
    a, acc, han, req, rd, wr, wt = (int(x) for x in m.groups())
    return NginxStatus(active=a, accepts=acc, handled=han, requests=req, reading=rd, writing=wr, waiting=wt)


@dataclass(frozen=True)
class WebNodeStatus:
    """One web node now: its two processes, and what they report (None when not answering)."""

    name: str
    nginx_up: bool
    fpm_up: bool
    fpm: FpmStatus | None
    nginx: NginxStatus | None

    @property
    def up(self) -> bool:
        return self.nginx_up and self.fpm_up and self.fpm is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "up": self.up, "nginx_up": self.nginx_up, "fpm_up": self.fpm_up,
            "fpm": self.fpm.to_json() if self.fpm else None,
            "nginx": self.nginx.to_json() if self.nginx else None,
        }  # fmt: skip
