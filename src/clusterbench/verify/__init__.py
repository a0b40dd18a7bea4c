"""Verification workloads: clients that keep a history of every operation with a three-valued
outcome (ledger, bank, availability prober), the split-brain monitor, and the collection of
cluster state for the convergence checker. The checkers themselves are pure (clusterbench.checkers).

Its names are imported when first used (clusterbench.lazy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterbench.lazy import lazy_names

if TYPE_CHECKING:
    from clusterbench.history.ops import BatchWriter, History, Op, Outcome, Phase, Timebase, classify
    from clusterbench.verify.bank import BankWorkload
    from clusterbench.verify.convergence import collect_convergence
    from clusterbench.verify.ledger import LedgerWorkload
    from clusterbench.verify.monitor import SplitBrainMonitor
    from clusterbench.verify.persist import load_monitor_samples, load_ops
    from clusterbench.verify.probe import AvailabilityProber

_WHERE = {
    "AvailabilityProber": "clusterbench.verify.probe",
    "BankWorkload": "clusterbench.verify.bank",
    "BatchWriter": "clusterbench.history.ops",
    "History": "clusterbench.history.ops",
    "LedgerWorkload": "clusterbench.verify.ledger",
    "Op": "clusterbench.history.ops",
    "Outcome": "clusterbench.history.ops",
    "Phase": "clusterbench.history.ops",
    "SplitBrainMonitor": "clusterbench.verify.monitor",
    "Timebase": "clusterbench.history.ops",
    "classify": "clusterbench.history.ops",
    "collect_convergence": "clusterbench.verify.convergence",
    "load_monitor_samples": "clusterbench.verify.persist",
    "load_ops": "clusterbench.verify.persist",
}

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

__getattr__ = lazy_names(__name__, _WHERE, globals())
