"""Faults on the web tier: kill, stop or pause web nodes (target web:N), and kill the front HAProxy
(target front: the one holding the front VIP; fe:N a given one). Each heal is idempotent, like
every action's (faults/actions.py), and brings the tier back to what clients had before: the web
node serving again and seen UP by every front, the front HAProxy running again as a ready backup.

Killing a balancer of a keepalived pair also measures how long its VIP took to move to the other
one (polled every 50 ms from the kill): the figure the study quotes for its master balancer."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from clusterbench.cluster import Cluster
from clusterbench.errors import ComponentError
from clusterbench.faults.base import FaultAction
from clusterbench.faults.spec import PlannedFault

# How long a VIP may take to move before the fault says it did not: keepalived gives a killed
# HAProxy's VIP up within its check's interval; a silent master is replaced after 3 adverts.
VIP_MOVE_SLACK_S = 5.0


def vip_move(wait: Callable[..., str], killed: str, advert_int: float, t0: float) -> dict[str, Any]:
    """After the balancer holding a VIP was killed at `t0` (time.monotonic()): where the VIP went
    and how long after the kill it was there alone ({"vip_moved_to", "vip_move_s"}), or why not."""
    try:
        holder = wait(timeout=3 * advert_int + VIP_MOVE_SLACK_S, not_on=killed, poll=0.05)
    except ComponentError as exc:
        return {"vip_moved_to": None, "vip_move_s": None, "vip_error": str(exc)}
    return {"vip_moved_to": holder, "vip_move_s": round(time.monotonic() - t0, 3)}


class KillWeb(FaultAction):
    """SIGKILL to the web nodes' nginx and php-fpm, masters and workers; the front balancers take
    them out after their failed checks. Heal: started again and seen UP by every front."""

    def _apply(self) -> dict[str, Any]:
        return {"killed": [self.cluster.web_kill(i) for i in self.fault.web]}

    def _heal(self) -> dict[str, Any]:
        return {"restarted": [self.cluster.web_start(i) for i in self.fault.web]}


class StopWeb(FaultAction):
    """A graceful stop (SIGTERM: nginx and php-fpm finish what they can and exit)."""

    def _apply(self) -> dict[str, Any]:
        return {"stopped": [self.cluster.web_stop(i) for i in self.fault.web]}

    def _heal(self) -> dict[str, Any]:
        return {"restarted": [self.cluster.web_start(i) for i in self.fault.web]}


class PauseWeb(FaultAction):
    """SIGSTOP to every process of the web nodes: connections are accepted and nothing answers (a
    hung application server); the front's checks time out. Heal: SIGCONT, then seen UP again."""

    def _apply(self) -> dict[str, Any]:
        return {"paused": [self.cluster.web_pause(i) for i in self.fault.web]}

    def _heal(self) -> dict[str, Any]:
        out = [self.cluster.web_resume(i) for i in self.fault.web]
        t0 = time.monotonic()
        for h in self.cluster.fronts():
            if h.alive():
                h.wait_all_up([f"w{i}" for i in self.fault.web], timeout=30.0)
        return {"resumed": out, "seen_up_after_s": round(time.monotonic() - t0, 2)}


class KillFront(FaultAction):
    """kill -9 of a front HAProxy: `front` means the one holding the front VIP when the fault
    starts (the study's "master balancer turned off"), fe:N a given one. With a pair, how long
    the VIP took to move is part of the fault's record."""

    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        self.index = fault.balancer or 1

    def _apply(self) -> dict[str, Any]:
        c = self.cluster
        paired = c.topology.front_vip_address() is not None
        if self.fault.params.get("target") == "front" and paired:
            holder = c.front_vip_holder()
            if holder is not None:
                self.index = int(holder[2:])
        role = f"fe{self.index}"
        held = paired and role in c.front_vip_holders()
        out: dict[str, Any] = {"killed": c.front_kill(self.index)}
        t0 = time.monotonic()  # the kill is front_kill's last step
        if held:
            out.update(vip_move(c.wait_front_vip, role, c.topology.web.front.advert_int, t0))
        return out

    def _heal(self) -> dict[str, Any]:
        return {"restarted": self.cluster.front_start(self.index)}


WEB_ACTIONS: dict[str, Callable[[Cluster, PlannedFault], Any]] = {
    "kill-node": KillWeb,
    "stop-node": StopWeb,
    "pause-node": PauseWeb,
}
