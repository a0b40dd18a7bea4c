"""The verification side of a scenario: ledger, bank, prober and split-brain monitor beside the
load, and the checkers that read their histories and the healed cluster."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

from clusterbench.checkers.availability import FaultWindow, availability, availability_verdict
from clusterbench.checkers.convergence import check_convergence
from clusterbench.checkers.failover import FailoverFault, failover_figures
from clusterbench.checkers.split_brain import check_split_brain
from clusterbench.checkers.trial import VerifierRun, in_windows, outside
from clusterbench.checkers.verdict import Verdict, guarded
from clusterbench.checkers.vip import VipSample, check_vip
from clusterbench.cluster import Cluster
from clusterbench.errors import WorkloadError
from clusterbench.history.ops import History, Timebase
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.spec.endpoint import Endpoint
from clusterbench.trial.spec import TrialContext
from clusterbench.verify import bank as bankmod
from clusterbench.verify import ledger as ledgermod
from clusterbench.verify import probe as probemod
from clusterbench.verify.bank import BankWorkload
from clusterbench.verify.convergence import collect_convergence
from clusterbench.verify.ledger import LedgerWorkload
from clusterbench.verify.monitor import SplitBrainMonitor
from clusterbench.verify.probe import AvailabilityProber
from clusterbench.verify.vip import VipMonitor
from clusterbench.workloads.parse import combine_samples

log = logging.getLogger(__name__)


def run_tables(trial_id: int, token: str | None = None) -> dict[str, str]:
    """The verification tables of one trial: names of their own (the trial id, which is unique in
    its store, and a random token, as two stores may share a cluster), so that no run reads or
    drops another run's rows."""
    tag = f"t{trial_id}_{token or secrets.token_hex(3)}"
    return {
        "ledger": f"{ledgermod.TABLE}_{tag}",
        "bank": f"{bankmod.TABLE}_{tag}",
        "probe": f"{probemod.TABLE}_{tag}",
    }


def writer_endpoints(cluster: Cluster) -> list[Endpoint]:
    """One entry point per node for clients that write from every node (bank transfers): each
    node where every node takes writes (Galera, multi-primary); where one node does (a single
    primary), the write endpoint once per node, so the clients are as many and all reach it."""
    indexes = cluster.topology.node_indexes()
    if cluster.engine.every_node_writes or cluster.topology.client_address() is None:
        return [cluster.endpoint(f"node:{i}") for i in indexes]
    return [cluster.endpoint("balancer") for _ in indexes]


@dataclass(eq=False)
class Verification:
    """The verification workloads of a drill (a Verifier of the trial pipeline)."""

    name = "verification"

    cluster: Cluster
    spec: ScenarioSpec
    tb: Timebase = field(init=False, default_factory=Timebase)
    history: History | None = field(init=False, default=None)
    ledger: LedgerWorkload | None = field(init=False, default=None)
    bank: BankWorkload | None = field(init=False, default=None)
    prober: AvailabilityProber | None = field(init=False, default=None)
    monitor: SplitBrainMonitor | None = field(init=False, default=None)
    vip: VipMonitor | None = field(init=False, default=None)
    front_vip: VipMonitor | None = field(init=False, default=None)  # the web tier's front pair
    stop_notes: list[str] = field(init=False, default_factory=list)
    tables: dict[str, str] = field(init=False, default_factory=dict)
    stopped_t: float | None = field(init=False, default=None)

    def start(self, ctx: TrialContext) -> None:
        v = self.spec.verify
        self.tb.t0 = ctx.t0
        record = ctx.record
        self.tables = run_tables(record.trial_id)
        record.event("verification_tables", dict(self.tables))
        self.history = History(record.op_sink())
        self.history.start()
        admin = self.cluster.admin_node()
        if admin is None:
            raise WorkloadError("no node of the cluster is running: start it with `clusterbench start`")
        if v.ledger_clients > 0:
            self.ledger = LedgerWorkload(
                [self.cluster.endpoint(t) for t in v.ledger_targets],
                self.history,
                self.tb,
                clients=v.ledger_clients * len(v.ledger_targets),
                rate=v.ledger_rate,
                table=self.tables["ledger"],
            )
            self.ledger.setup(admin)
        if v.bank:
            self.bank = BankWorkload(
                writer_endpoints(self.cluster),
                self.history,
                self.tb,
                for_update=v.bank_for_update,
                clients=len(self.cluster.topology.node_indexes()),
                client_base=500,
                table=self.tables["bank"],
            )
            self.bank.setup(admin)
        if v.prober:
            self.prober = AvailabilityProber(
                [self.cluster.endpoint(t) for t in v.prober_targets],
                self.history,
                self.tb,
                table=self.tables["probe"],
            )
            self.prober.setup(admin)
        if v.monitor:
            self.monitor = SplitBrainMonitor(self.cluster.nodes(), self.tb, sink=record.monitor_sink())
            self.monitor.start()
            if self.cluster.topology.vip_address() is not None:
                # the balancers' split brain: who holds the VIP, every 0.5 s; changes as events
                self.vip = VipMonitor(self.cluster.vip_holders, self.tb, on_change=self._vip_event(record))
                self.vip.start()
            if self.cluster.topology.front_vip_address() is not None:
                on_change = self._vip_event(record, "front_vip_holders")
                self.front_vip = VipMonitor(self.cluster.front_vip_holders, self.tb, on_change=on_change)
                self.front_vip.start()
        for w in (self.ledger, self.bank, self.prober):
            if w is not None:
                w.start()

    def stop(self) -> None:
        self.stopped_t = self.tb.t()
        for w in (self.ledger, self.bank, self.prober):
            if w is not None:
                self.stop_notes += w.stop()
        if self.monitor is not None:
            self.monitor.stop()
        for mon in (self.vip, self.front_vip):
            if mon is not None:
                mon.stop()
        if self.history is not None:
            self.history.stop()

    @staticmethod
    def _vip_event(record: Any, kind: str = "vip_holders") -> Any:
        def note(s: VipSample) -> None:  # from the monitor's thread: the record writes through its own
            record.event(kind, {"holders": list(s.holders)}, t=round(s.t, 3))

        return note

    def verifier_runs(self, windows: list[tuple[float, float]]) -> list[VerifierRun]:
        end = self.stopped_t if self.stopped_t is not None else self.tb.t()
        quiet = outside(0.0, end, windows)
        out = []
        for w in (self.ledger, self.bank):
            if w is not None:
                recorded = w.recorded(lambda t: not in_windows(t, windows))
                out.append(VerifierRun(w.NAME, round(w.per_second() * quiet, 1), recorded))
        if self.prober is not None:
            p = self.prober
            recorded = sum(1 for o in p.ops() if not in_windows(o.t_start, windows))
            out.append(VerifierRun("probe", round(len(p.targets) / p.interval * quiet, 1), recorded))
        return out

    def check(self, ctx: TrialContext, findings: dict[str, Any]) -> list[Verdict]:
        """The checkers over the histories and the healed, settled cluster."""
        nodes = self.cluster.nodes()
        size = self.cluster.topology.cluster.nodes
        verdicts: list[Verdict] = []
        for w in (self.ledger, self.bank):
            if w is not None:
                verdicts += w.verdicts(nodes)
        if self.spec.verify.convergence:
            verdicts.append(guarded("convergence", lambda: check_convergence(
                collect_convergence(nodes, ("sbtest",)), expected_size=size)))  # fmt: skip
        if self.vip is not None:
            vip = self.vip
            verdicts.append(guarded("vip", lambda: check_vip(vip.samples(), vip.stopped_t)))
        if self.front_vip is not None:
            front = self.front_vip
            verdicts.append(
                guarded("front-vip", lambda: check_vip(front.samples(), front.stopped_t, "front-vip"))
            )
        if self.monitor is not None:
            mon = self.monitor
            verdicts.append(guarded("split-brain", lambda: check_split_brain(mon.samples(), size)))
        if self.prober is not None and ctx.windows():
            windows = [FaultWindow(label, start, end) for label, start, end in ctx.windows()]
            samples = ctx.samples()
            tps = [(s.t, s.tps) for s in combine_samples(samples)] if samples else None
            figures = availability(self.prober.ops(), windows, tps)
            findings["availability"] = [f.to_json() for f in figures]
            budget = self.spec.verify.max_outage_s
            verdicts.append(guarded("availability", lambda: availability_verdict(figures, budget)))
        if self.monitor is not None:
            try:
                findings["failover"] = self._failover(ctx)
            except Exception:  # noqa: BLE001 - figures for people; the verdicts stand without them
                log.exception("failover figures")
        return verdicts

    def _failover(self, ctx: TrialContext) -> list[dict[str, Any]]:
        """Failover figures of the faults that took nodes away (checkers/failover.py), stored as
        `failover` events of the trial."""
        assert self.monitor is not None
        t = self.cluster.topology
        faults = [
            FailoverFault(
                r.fault.label(), r.fault.kind, r.started, r.ended if r.ended is not None else r.started,
                tuple(f"n{i}" for i in r.fault.nodes), tuple(t.node_address(i) for i in r.fault.nodes),
            )
            for r in ctx.fault_records()
            if r.started is not None
        ]  # fmt: skip
        targets = self.spec.verify.prober_targets
        path = targets[0] if self.prober is not None and targets else None
        ops = self.prober.ops() if self.prober else []
        figures = failover_figures(self.monitor.samples(), faults, ops, path)
        for f in figures:
            ctx.record.event("failover", {**f.to_json(), "summary": f.line()})
        return [f.to_json() for f in figures]

    def drop(self) -> None:
        """Drop this trial's own verification tables (never another run's)."""
        admin = self.cluster.admin_node()
        if admin is None:
            return
        for w in (self.ledger, self.bank, self.prober):
            if w is not None:
                try:
                    w.drop(admin)
                except Exception:  # noqa: BLE001 - leftovers are harmless; the verdicts matter
                    log.exception("dropping %s tables", type(w).__name__)
