"""The verification side of a scenario: ledger, bank, prober and split-brain monitor beside the
load, and the checkers that read their histories and the healed cluster."""

from __future__ import annotations

import logging
from typing import Any

from clusterbench.checkers.availability import FaultWindow, availability, availability_verdict
from clusterbench.checkers.bank import check_bank
from clusterbench.checkers.convergence import check_convergence
from clusterbench.checkers.ledger import check_ledger
from clusterbench.checkers.split_brain import check_split_brain
from clusterbench.checkers.verdict import Result, Verdict
from clusterbench.cluster import Cluster
from clusterbench.scenario.engine import Companion, ScenarioEngine, ThreadStores
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.verify.bank import BankWorkload
from clusterbench.verify.convergence import collect_convergence
from clusterbench.verify.history import History, Timebase
from clusterbench.verify.ledger import LedgerWorkload
from clusterbench.verify.monitor import SplitBrainMonitor
from clusterbench.verify.persist import monitor_sink, op_sink, save_verdicts
from clusterbench.verify.probe import AvailabilityProber
from clusterbench.workloads.parse import combine_samples

log = logging.getLogger(__name__)


class Verification(Companion):
    name = "verification"

    def __init__(self, cluster: Cluster, spec: ScenarioSpec, stores: ThreadStores) -> None:
        self.cluster = cluster
        self.spec = spec
        self.stores = stores
        self.tb = Timebase()
        self.history: History | None = None
        self.ledger: LedgerWorkload | None = None
        self.bank: BankWorkload | None = None
        self.prober: AvailabilityProber | None = None
        self.monitor: SplitBrainMonitor | None = None
        self.stop_notes: list[str] = []

    def start(self, trial_id: int, t0: float) -> None:
        v = self.spec.verify
        self.tb.t0 = t0
        store = self.stores.get()
        self.history = History(op_sink(store, trial_id))
        self.history.start()
        admin = next(n for n in self.cluster.nodes() if n.alive())
        if v.ledger_clients > 0:
            self.ledger = LedgerWorkload(
                [self.cluster.endpoint(t) for t in v.ledger_targets],
                self.history,
                self.tb,
                clients=v.ledger_clients * len(v.ledger_targets),
                rate=v.ledger_rate,
            )
            self.ledger.setup(admin)
        if v.bank:
            self.bank = BankWorkload(
                [self.cluster.endpoint(f"node:{i}") for i in self.cluster.topology.node_indexes()],
                self.history,
                self.tb,
                for_update=v.bank_for_update,
                clients=len(self.cluster.topology.node_indexes()),
                client_base=500,
            )
            self.bank.setup(admin)
        if v.prober:
            self.prober = AvailabilityProber(
                [self.cluster.endpoint(t) for t in v.prober_targets], self.history, self.tb
            )
            self.prober.setup(admin)
        if v.monitor:
            self.monitor = SplitBrainMonitor(
                self.cluster.nodes(), self.tb, sink=monitor_sink(store, trial_id)
            )
            self.monitor.start()
        for w in (self.ledger, self.bank, self.prober):
            if w is not None:
                w.start()

    def stop(self) -> None:
        for w in (self.ledger, self.bank, self.prober):
            if w is not None:
                self.stop_notes += w.stop()
        if self.monitor is not None:
            self.monitor.stop()
        if self.history is not None:
            self.history.stop()

    def drop_tables(self) -> None:
        admin = next((n for n in self.cluster.nodes() if n.alive()), None)
        if admin is None:
            return
        for w in (self.ledger, self.bank, self.prober):
            if w is not None:
                try:
                    w.drop(admin)
                except Exception:  # noqa: BLE001 - leftovers are harmless; the verdicts matter
                    log.exception("dropping %s tables", type(w).__name__)


def companions(cluster: Cluster, spec: ScenarioSpec, stores: ThreadStores) -> list[Companion]:
    return [Verification(cluster, spec, stores)]


def _guard(name: str, fn: Any) -> Verdict:
    """A checker that crashes gives UNKNOWN, never PASS."""
    try:
        v = fn()
        assert isinstance(v, Verdict)
        return v
    except Exception as exc:  # noqa: BLE001
        log.exception("checker %s", name)
        return Verdict(name, Result.UNKNOWN, f"checker crashed: {type(exc).__name__}: {exc}")


def run_checkers(engine: ScenarioEngine) -> list[Verdict]:
    ver = next((c for c in engine.companions if isinstance(c, Verification)), None)
    if ver is None:
        return []
    cluster = engine.cluster
    nodes = cluster.nodes()
    size = cluster.topology.cluster.nodes
    verdicts: list[Verdict] = []
    if ver.ledger is not None:
        led = ver.ledger
        verdicts.append(_guard("ledger", lambda: check_ledger(led.ops(), led.read_all(nodes))))
    if ver.bank is not None:
        bank = ver.bank
        verdicts.append(
            _guard(
                "bank",
                lambda: check_bank(
                    bank.ops(),
                    bank.read_all(nodes),
                    accounts=bank.accounts,
                    total=bank.total,
                    for_update=bank.for_update,
                ),
            )
        )
    if engine.spec.verify.convergence:
        verdicts.append(
            _guard(
                "convergence",
                lambda: check_convergence(collect_convergence(nodes, ("sbtest",)), expected_size=size),
            )
        )
    if ver.monitor is not None:
        mon = ver.monitor
        verdicts.append(_guard("split-brain", lambda: check_split_brain(mon.samples(), size)))
    if ver.prober is not None and engine.nemesis.windows():
        windows = [FaultWindow(label, start, end) for label, start, end in engine.nemesis.windows()]
        tps = [(s.t, s.tps) for s in combine_samples(engine.samples)] if engine.samples else None
        prober = ver.prober
        figures = availability(prober.ops(), windows, tps)
        engine.availability = [f.to_json() for f in figures]
        verdicts.append(_guard("availability", lambda: availability_verdict(figures)))
    ver.drop_tables()
    store = engine.stores.get()
    assert engine.run_id is not None
    save_verdicts(store, engine.run_id, verdicts, trial_id=engine.trial_id)
    return verdicts
