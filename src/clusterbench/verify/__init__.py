"""Verification workloads: clients that keep a history of every operation with a three-valued
outcome (ledger, bank, availability prober), the split-brain monitor, and the collection of
cluster state for the convergence checker. The checkers themselves are pure (clusterbench.checkers)."""

from clusterbench.history.ops import BatchWriter, History, Op, Outcome, Phase, Timebase, classify
from clusterbench.verify.bank import BankWorkload
from clusterbench.verify.convergence import collect_convergence
from clusterbench.verify.ledger import LedgerWorkload
from clusterbench.verify.monitor import SplitBrainMonitor
from clusterbench.verify.persist import (
    load_monitor_samples,
    load_ops,
)
from clusterbench.verify.probe import AvailabilityProber

__all__ = [
    "AvailabilityProber",
    "BankWorkload",
    "BatchWriter",
    "History",
    "LedgerWorkload",
    "Op",
    "Outcome",
    "Phase",
    "SplitBrainMonitor",
    "Timebase",
    "classify",
    "collect_convergence",
    "load_monitor_samples",
    "load_ops",
]
