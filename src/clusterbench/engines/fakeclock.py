"""A server's wall clock, shiftable while it runs: the clock-skew fault's mechanism.

With topology `cluster.clock = "faketime"` every server starts under libfaketime (Debian's
`faketime` package): LD_PRELOAD of libfaketimeMT, which answers the process's wall-clock calls
(time, gettimeofday, clock_gettime on CLOCK_REALTIME) with the real time plus the offset written in
a file of the node's own (`clock` in its directory), read again at most once a second. Monotonic
clocks are left alone (FAKETIME_DONT_FAKE_MONOTONIC), as a real clock step leaves them: timeouts,
failure detection and flow control keep their pace, while NOW(), timestamps and anything that
reads the wall clock move. The file holds "+0" until a fault writes another offset; the heal
writes "+0" again (a bump back). Without the setting nothing is preloaded and nothing costs.
"""

from __future__ import annotations

from pathlib import Path

# Debian's faketime package (also the path a GR root file system gets it at).
LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
CLOCK_FILE = "clock"
# libfaketime reads the file again at most this often (seconds)
REREAD_S = 1


def clock_env(clock_file: Path, lib: Path = LIBFAKETIME) -> list[str]:
    """The `env` prefix that starts a server under libfaketime, reading its offset from
    `clock_file` (the path as the server sees it)."""
    return [
        "env",
        f"LD_PRELOAD={lib}",
        f"FAKETIME_TIMESTAMP_FILE={clock_file}",
        f"FAKETIME_CACHE_DURATION={REREAD_S}",
        "FAKETIME_DONT_FAKE_MONOTONIC=1",
    ]


def offset_text(seconds: float) -> str:
    """libfaketime's relative offset: '+30.000000', '-0.250000'."""
    return f"{seconds:+.6f}\n"


def parse_offset(text: str) -> float | None:
    """'+30s', '-2m', '+1.5h', '250ms', '-90' (seconds) -> seconds; None when not understood."""
    t = text.strip()
    scale = 1.0
    for unit, k in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if t.endswith(unit):
            t, scale = t[: -len(unit)], k
            break
    try:
        return float(t) * scale
    except ValueError:
        return None


def parse_drift(text: str) -> float | None:
    """'+10ms/s' (the clock gains 10 ms each second), '-1s/m' -> seconds gained per second."""
    if "/" not in text:
        return None
    amount, per = text.split("/", 1)
    a = parse_offset(amount)
    p = {"s": 1.0, "m": 60.0, "h": 3600.0}.get(per.strip())
    return None if a is None or p is None else a / p
