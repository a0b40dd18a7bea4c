"""Checkers read histories and cluster state after heal and return a Verdict."""

from clusterbench.checkers.availability import (
    FaultFigures,
    FaultWindow,
    PathFigures,
    availability,
    availability_verdict,
)
from clusterbench.checkers.bank import check_bank
from clusterbench.checkers.convergence import ConvergenceSnapshot, NodeState, check_convergence
from clusterbench.checkers.ledger import check_ledger
from clusterbench.checkers.split_brain import MonitorSample, check_split_brain
from clusterbench.checkers.verdict import Result, Verdict, combine

__all__ = [
    "ConvergenceSnapshot",
    "FaultFigures",
    "FaultWindow",
    "MonitorSample",
    "NodeState",
    "PathFigures",
    "Result",
    "Verdict",
    "availability",
    "availability_verdict",
    "check_bank",
    "check_convergence",
    "check_ledger",
    "check_split_brain",
    "combine",
]
