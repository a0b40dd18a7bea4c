"""What a trial tells whoever shows it (the live view, an experiment's progress, a test). Nothing
in the pipeline prints: every method is optional; override what you show."""

from __future__ import annotations

from typing import Any

from clusterbench.checkers.verdict import Verdict
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.workloads import RunResult, Sample, SysbenchOptions


class TrialListener:
    def run_created(self, run_id: int) -> None:
        """The run is in the store (from here on, an interrupt leaves it marked interrupted)."""

    def phase(self, message: str) -> None:
        """A step outside the measurement: preparing, settling, taking snapshots."""

    def trial_started(self, seq: int, test: str, options: SysbenchOptions) -> None:
        """A trial's load starts; `options.total_time` seconds of it follow."""

    def sample(self, seq: int, sample: Sample) -> None:
        """One measured sample of one client, as it arrives (already stored)."""

    def telemetry(self, seq: int, line: str) -> None:
        """The servers' latest figures in one line (after a sample, while telemetry runs)."""

    def fault_event(self, t: float, detail: dict[str, Any]) -> None:
        """A fault started, was applied or ended (t: seconds after the load started). Called from
        the nemesis' thread."""

    def bottleneck(self, seq: int, verdict: Bottleneck) -> None:
        """The trial's bottleneck verdict (before trial_finished)."""

    def trial_finished(self, seq: int, test: str, result: RunResult, status: str) -> None:
        """A trial ended (status 'completed' or 'failed'), its checks done."""

    def verdict(self, v: Verdict) -> None:
        """A checker's verdict on the trial (after trial_finished)."""

    def note(self, line: str) -> None:
        """A finding to show: TPC-C figures, its consistency verdict, stalls (after trial_finished)."""
