"""Faults: kinds with their heals, schedules (pure), and the nemesis that applies them."""

from clusterbench.faults.spec import KINDS, FaultSpec, PlannedFault, plan

__all__ = ["KINDS", "FaultSpec", "PlannedFault", "plan"]
