"""Faults of a node's disk, through the power-loss layer under its datadir (topology
`datadir_layer = "faultfs"`, datadir_layers.py):

- power-loss: the targets lose power at one instant: their layers freeze (nothing more reaches
  the disk), the servers are killed, and every write not fsynced since it was written is gone; a
  kill alone keeps what reached the page cache, this does not. Several targets (or `all`) lose it
  together, as a rack or a site would. The heal is a kill's: the engine's rejoin, or its cold start
  when none survived.
- disk-slow: each read, write or fsync (as asked) takes `delay` (± `jitter`) longer for the window.
- disk-error: each such operation fails with EIO (or ENOSPC) with `probability` for the window.
"""

from __future__ import annotations

import time
from typing import Any

from clusterbench.cluster import Cluster
from clusterbench.datadir_layers import layer_of, layered, remount
from clusterbench.errors import PreflightError
from clusterbench.faults.base import FaultAction
from clusterbench.faults.spec import PlannedFault
from clusterbench.providers.faultfs import FaultFS
from clusterbench.providers.faultfs_proto import DiskFaults, Dropped


def _ms(text: str | None) -> float:
    """'20ms', '1.5s', '500us' -> milliseconds."""
    if not text:
        return 0.0
    for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    return float(text)


class _OnLayer(FaultAction):
    """A fault that needs every target's datadir on the layer: refused in one line otherwise."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        missing = [f"n{i}" for i in fault.nodes if i not in layered(cluster)]
        if missing:
            raise PreflightError(
                f"{fault.kind} acts through the power-loss layer under the datadir, which "
                f"{', '.join(missing)} does not have; set cluster.datadir_layer = \"faultfs\" in the "
                "topology (or datadir_layer on those [[node]]s) and bring the cluster up again"
            )
        self.layers: dict[int, FaultFS] = {i: layer_of(cluster, i) for i in fault.nodes}


class PowerLoss(_OnLayer):
    def _apply(self) -> dict[str, Any]:
        t0 = time.monotonic()
        dropped: dict[int, Dropped] = {}
        nodes = {i: self.cluster.node(i) for i in self.layers}
        try:
            for layer in self.layers.values():
                layer.freeze()
            for n in nodes.values():  # signals only: a victim held in its layer ends at the thaw
                n.kill(wait=False)
            for i, layer in self.layers.items():
                dropped[i] = layer.drop()
        finally:
            refused = {i: layer.thaw() for i, layer in self.layers.items()}
        for n in nodes.values():
            n.wait_dead(30)
            self.cluster.recorded(n)
        lost = {f"n{i}": d.text() for i, d in dropped.items()}
        return {
            "lost": lost,
            "unsynced_bytes": {f"n{i}": d.unsynced_bytes for i, d in dropped.items()},
            "refused_ops": {f"n{i}": r for i, r in refused.items()},
            "seconds": round(time.monotonic() - t0, 3),
            "summary": "power lost on " + "; ".join(f"{k}: {v}" for k, v in lost.items()),
        }

    def _heal(self) -> dict[str, Any]:
        t0 = time.monotonic()
        for i in self.layers:  # the machines come back: their layers mounted anew
            remount(self.cluster, i)
        out = self.cluster.restart_nodes(self.fault.nodes)
        return {"restarted": out, "recovery_s": round(time.monotonic() - t0, 1)}


class DiskFaultWindow(_OnLayer):
    """disk-slow and disk-error: the layer's faults for the window (the layer also ends them by
    itself a little after the planned end, so a controller that died cannot leave them on)."""

    def faults(self) -> DiskFaults:
        p = self.fault.params
        ops = tuple(str(o) for o in p.get("ops") or ("fsync",))
        seconds = None if self.fault.until is None else (self.fault.until - self.fault.at) + 30
        if self.fault.kind == "disk-slow":
            return DiskFaults(delay_ms=_ms(p.get("delay")), jitter_ms=_ms(p.get("jitter")), delay_ops=ops,
                              seconds=seconds)  # fmt: skip
        error_ops = tuple(o for o in ops if o in ("write", "fsync")) or ("fsync",)
        return DiskFaults(error=str(p.get("error") or "EIO"), error_ops=error_ops,
                          probability=float(p.get("probability") or 1.0), seconds=seconds)  # fmt: skip

    def _apply(self) -> dict[str, Any]:
        f = self.faults()
        for layer in self.layers.values():
            layer.set_faults(f)
        if self.fault.kind == "disk-slow":
            jitter = f" ± {f.jitter_ms:g} ms" if f.jitter_ms else ""
            what = f"{f.delay_ms:g} ms{jitter} on {', '.join(f.delay_ops)}"
        else:
            what = f"{f.error} on {', '.join(f.error_ops)} with probability {f.probability:g}"
        return {"summary": f"{self.fault.kind} {what} on {', '.join(f'n{i}' for i in self.layers)}"}

    def _heal(self) -> dict[str, Any]:
        served = {}
        for i, layer in self.layers.items():
            layer.clear_faults()
            st = layer.status()
            served[f"n{i}"] = {"injected_delays": st.delayed, "injected_errors": st.errors_injected}
        return {"layer": served}
