"""What every fault action shares: the cluster and planned fault it acts on, and the rule that a
heal undoes only what an apply did (a heal after a failed or missing apply does nothing), so a
drill can heal every fault it planned, applied or not, on the way out."""

from __future__ import annotations

from typing import Any

from clusterbench.cluster import Cluster
from clusterbench.faults.spec import PlannedFault


class FaultAction:
    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        self.cluster = cluster
        self.fault = fault
        self.active = False

    def apply(self) -> dict[str, Any]:
        self.active = True
        return self._apply()

    def heal(self) -> dict[str, Any]:
        if not self.active:
            return {}
        self.active = False
        return self._heal()

    def _apply(self) -> dict[str, Any]:
        raise NotImplementedError

    def _heal(self) -> dict[str, Any]:
        return {}
