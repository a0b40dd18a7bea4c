"""Which action applies and heals each fault kind (faults/actions.py, faults/disk.py)."""

from __future__ import annotations

from collections.abc import Callable

from clusterbench.cluster import Cluster
from clusterbench.faults.actions import (
    Action,
    CoordinatedCrash,
    CutVrrp,
    DesyncNodes,
    DiskFull,
    ImpairLink,
    IsolateNodes,
    KillBalancer,
    KillNodes,
    Partition,
    PauseNodes,
    RollingRestart,
    RunSql,
    StopNodes,
    ThrottleCpu,
    ThrottleLink,
)
from clusterbench.faults.clock import ClockSkew
from clusterbench.faults.disk import DiskFaultWindow, PowerLoss
from clusterbench.faults.diskthrottle import ThrottleDisk
from clusterbench.faults.spec import PlannedFault
from clusterbench.faults.web import WEB_ACTIONS, KillFront

ACTIONS: dict[str, Callable[[Cluster, PlannedFault], Action]] = {
    "kill-node": KillNodes,
    "coordinated-crash": CoordinatedCrash,
    "stop-node": StopNodes,
    "pause-node": PauseNodes,
    "isolate-node": IsolateNodes,
    "partition": Partition,
    "throttle-link": ThrottleLink,
    "throttle-cpu": ThrottleCpu,
    "desync-node": DesyncNodes,
    "rolling-restart": RollingRestart,
    "kill-balancer": KillBalancer,
    "cut-vrrp": CutVrrp,
    "disk-full": DiskFull,
    "sql": RunSql,
    "delay-link": ImpairLink,
    "loss-link": ImpairLink,
    "power-loss": PowerLoss,
    "disk-slow": DiskFaultWindow,
    "disk-error": DiskFaultWindow,
    "throttle-disk": ThrottleDisk,
    "clock-skew": ClockSkew,
}


def make_action(cluster: Cluster, fault: PlannedFault) -> Action:
    """The action of a fault; on the web tier (target web:N, front, fe:N) the web tier's own."""
    if fault.web:
        action: Action = WEB_ACTIONS[fault.kind](cluster, fault)
        return action
    if fault.kind == "kill-balancer" and fault.front:
        return KillFront(cluster, fault)
    return ACTIONS[fault.kind](cluster, fault)
