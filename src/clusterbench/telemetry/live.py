"""The live view's telemetry line (pure): per kind of resource, the source nearest its limit now."""

from __future__ import annotations

from collections.abc import Mapping


def _busiest(latest: Mapping[tuple[str, str], float], metric: str) -> tuple[str, float] | None:
    found = [(src, v) for (src, m), v in latest.items() if m == metric]
    return max(found, key=lambda x: x[1]) if found else None


def live_line(latest: Mapping[tuple[str, str], float]) -> str:
    """'cpu n2 98% · link n3 96% · fc n1 12% · host cpu 100%' from the latest figures; '' when
    there are none yet. Percentages are of each resource's limit (see telemetry/verdict.py)."""
    parts = []
    for metric, label in (("cpu_util", "cpu"), ("net_util", "link"), ("flow_control_paused", "fc"),
                          ("disk_util", "disk"), ("host_cpu_busy", "host cpu")):  # fmt: skip
        top = _busiest(latest, metric)
        if top is None:
            continue
        src, v = top
        if metric == "flow_control_paused":
            v = min(v, 1.0)  # summed over sessions (GR) it can pass all of the time
        where = "" if metric == "host_cpu_busy" and src == "host" else f" {src}"
        parts.append(f"{label}{where} {v:.0%}")
    return " · ".join(parts)
