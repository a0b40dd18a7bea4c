"""Anomaly workloads in a scenario: the lost-update counter, the stale-read probe and list-append
transactions run beside the load (one client per node each, or more), and after heal their
checkers give one verdict per mode. `anomaly_rows` turns the verdicts of one or many trials into
the table people read: anomaly class | mode | trials | trials where seen | example."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.checkers.list_append import ANOMALIES
from clusterbench.checkers.trial import VerifierRun, in_windows, outside
from clusterbench.checkers.verdict import Verdict
from clusterbench.cluster import Cluster
from clusterbench.engines.base import DbNode, SessionSql
from clusterbench.errors import WorkloadError
from clusterbench.history.ops import History, Timebase
from clusterbench.scenario.anomaly_spec import AnomalySpec
from clusterbench.spec.endpoint import Endpoint
from clusterbench.trial.spec import TrialContext
from clusterbench.verify import counter as countermod
from clusterbench.verify import list_append as appendmod
from clusterbench.verify import stale_read as stalemod
from clusterbench.verify.counter import CounterWorkload
from clusterbench.verify.list_append import ListAppendWorkload
from clusterbench.verify.stale_read import StaleReadProbe, ring_pairs
from clusterbench.verify.workload import Workload

log = logging.getLogger(__name__)


def trial_table(base: str, trial_id: int, token: str | None = None) -> str:
    """A verification table of one trial (the trial id, unique in its store, and a random token,
    as two stores may share a cluster): no run reads or drops another run's rows."""
    return f"{base}_t{trial_id}_{token or secrets.token_hex(3)}"


@dataclass(eq=False)
class AnomalyVerification:
    """The anomaly workloads of a drill (a Verifier of the trial pipeline)."""

    name = "anomalies"

    cluster: Cluster
    spec: AnomalySpec
    seed: int | None = None
    tb: Timebase = field(init=False, default_factory=Timebase)
    history: History | None = field(init=False, default=None)
    counter: CounterWorkload | None = field(init=False, default=None)
    stale: StaleReadProbe | None = field(init=False, default=None)
    append: ListAppendWorkload | None = field(init=False, default=None)
    tables: dict[str, str] = field(init=False, default_factory=dict)
    stop_notes: list[str] = field(init=False, default_factory=list)
    stopped_t: float | None = field(init=False, default=None)
    writers: list[str] = field(init=False, default_factory=list)

    @property
    def session(self) -> SessionSql:
        return self.cluster.nodes()[0].session

    def workloads(self) -> list[Workload[Any]]:
        return [w for w in (self.counter, self.stale, self.append) if w is not None]

    def start(self, ctx: TrialContext) -> None:
        self.tb.t0 = ctx.t0
        record = ctx.record
        trial_id = record.trial_id
        self.history = History(record.op_sink())
        self.history.start()
        token = secrets.token_hex(3)
        all_eps = [self.cluster.endpoint(f"node:{i}") for i in self.cluster.topology.node_indexes()]
        # Writers are the nodes that take writes now (every Galera node; a single-primary group's
        # primary); the stale-read probe reads on the others too.
        writer_eps = writers(self.cluster.nodes(), all_eps)
        self.writers = [e.name for e in writer_eps]
        # As many clients as one per node, spread over the writers (a single primary gets them all:
        # the concurrency of the workload does not depend on where writes are taken).
        eps = [writer_eps[i % len(writer_eps)] for i in range(len(all_eps))]
        admin = self.cluster.admin_node()
        if admin is None:
            raise WorkloadError("no node of the cluster is running: start it with `clusterbench start`")
        s = self.spec
        if "counter" in s.checkers:
            self.tables["counter"] = trial_table(countermod.TABLE, trial_id, token)
            self.counter = CounterWorkload(
                eps,
                self.history,
                self.tb,
                modes=s.counter.modes,
                keys=s.counter.keys,
                clients_per_endpoint=s.counter.clients_per_node,
                rate=s.counter.rate,
                session=self.session,
                session_kind=s.counter.session,
                table=self.tables["counter"],
                seed=self.seed,
            )
        if "stale-read" in s.checkers and len(all_eps) >= 2:
            self.tables["stale-read"] = trial_table(stalemod.TABLE, trial_id, token)
            self.stale = StaleReadProbe(
                probe_pairs(writer_eps, all_eps),
                self.history,
                self.tb,
                session=self.session,
                sessions=s.stale_read.sessions,
                rate=s.stale_read.rate,
                table=self.tables["stale-read"],
            )
        if "list-append" in s.checkers:
            la = s.list_append
            self.tables["list-append"] = trial_table(appendmod.TABLE, trial_id, token)
            self.append = ListAppendWorkload(
                eps,
                self.history,
                self.tb,
                keys=la.keys,
                clients_per_endpoint=la.clients_per_node,
                rate=la.rate,
                max_ops=la.max_ops,
                appends_per_key=la.appends_per_key,
                reads=la.reads,
                session=self.session,
                session_kind=la.session,
                table=self.tables["list-append"],
                seed=self.seed,
            )
        record.event("anomaly_tables", {**self.tables, "writers": self.writers})
        for w in self.workloads():
            w.setup(admin)
        for w in self.workloads():
            w.start()

    def stop(self) -> None:
        self.stopped_t = self.tb.t()
        for w in self.workloads():
            self.stop_notes += w.stop()
        if self.history is not None:
            self.history.stop()

    def verifier_runs(self, windows: list[tuple[float, float]]) -> list[VerifierRun]:
        """Per anomaly workload, for the trial checker: operations expected outside the fault
        windows at its rate (a workload running back to back is expected to manage at least one
        per second per client), and those it recorded."""
        end = self.stopped_t if self.stopped_t is not None else self.tb.t()
        quiet = outside(0.0, end, windows)
        out = []
        for w in self.workloads():
            recorded = w.recorded(lambda t: not in_windows(t, windows))
            out.append(VerifierRun(w.NAME, round(w.per_second() * quiet, 1), recorded))
        return out

    def check(self, ctx: TrialContext, findings: dict[str, Any]) -> list[Verdict]:
        """The verdicts, from the histories and every node's final state (read now, after heal)."""
        nodes = self.cluster.nodes()
        out: list[Verdict] = []
        for w in self.workloads():
            out += w.verdicts(nodes)
        if self.history is not None:
            self.history.stop()  # list-append's final reads go to the store too
        return out

    def drop(self) -> None:
        admin = self.cluster.admin_node()
        if admin is None:
            return
        for w in self.workloads():
            try:
                w.drop(admin)
            except Exception:  # noqa: BLE001 - leftovers are harmless; the verdicts matter
                log.exception("dropping %s tables", type(w).__name__)


def writers(nodes: Sequence[DbNode], endpoints: Sequence[Endpoint]) -> list[Endpoint]:
    """The endpoints of the nodes that are writable now (all of them when none says so)."""
    ok = []
    for n, e in zip(nodes, endpoints, strict=True):
        try:
            h = n.health()
        except Exception:  # noqa: BLE001 - a node that does not answer takes no writes
            h = None
        if h is not None and h.writable:
            ok.append(e)
    return ok or list(endpoints)


def probe_pairs(
    writer_eps: Sequence[Endpoint], all_eps: Sequence[Endpoint]
) -> list[tuple[Endpoint, Endpoint]]:
    """Where the stale-read probe writes and reads: a ring when every node writes (1 → 2 → 3 → 1),
    else each writer to each other node (a single primary to every secondary)."""
    if len(writer_eps) == len(all_eps):
        return ring_pairs(list(all_eps))
    return [(w, r) for w in writer_eps for r in all_eps if r.name != w.name]


# ---- the table: anomaly class | mode | trials | trials where seen | example ------------------


@dataclass
class AnomalyRow:
    anomaly: str
    mode: str
    trials: int = 0
    seen: int = 0
    documented: int = 0  # trials where it was seen as a documented limitation
    example: str = ""
    rate: str = ""  # e.g. "235/2000 reads" summed over the trials

    @property
    def status(self) -> str:
        if not self.seen:
            return ""
        if self.documented == self.seen:
            return "documented limitation"
        return "promise broken"


LIST_APPEND_ROWS = (
    "G0",
    "G1a",
    "G1b",
    "G1c",
    "G-single",
    "G2-item",
    "lost-update",
    "stale-read",
    "lost-append",
)


Observation = tuple[str, str, bool, bool, str, tuple[int, int] | None]


def _observations(v: dict[str, Any]) -> list[Observation]:
    """(class, mode, seen, documented, example, (hits, out of)) for one stored verdict."""
    checker = str(v.get("checker", ""))
    ev = v.get("evidence") or {}
    doc = bool(v.get("documented_limitation"))
    out: list[Observation] = []
    if checker.startswith("counter:"):
        mode = checker.split(":", 1)[1]
        lost = int(ev.get("lost", 0) or 0)
        inc = ev.get("increments") or {}
        example = ""
        for k, e in (ev.get("keys") or {}).items():
            if e.get("lost"):
                finals = sorted({x for x in (e.get("final") or {}).values() if x is not None})
                example = f"{k}: {e['ok']} acknowledged increments, value {finals[0] if finals else '?'}"
                break
        out = [
            (
                "lost increments (counter)",
                f"counter {mode}",
                lost > 0,
                doc,
                example,
                (lost, int(inc.get("ok", 0) or 0)),
            )
        ]
        excess = int(ev.get("excess", 0) or 0)
        if excess:
            out.append(
                (
                    "increment never made (counter)",
                    f"counter {mode}",
                    True,
                    False,
                    v.get("summary", ""),
                    None,
                )
            )
        return out
    if checker.startswith("stale-read:"):
        session = checker.split(":", 1)[1]
        stmts = "; ".join(ev.get("statements") or [])
        mode = f"probe {session}" + (f": {stmts}" if stmts else "")
        stale = int(ev.get("stale", 0) or 0)
        example = ""
        if ev.get("examples"):
            e = ev["examples"][0]
            after = e.get("ms_since_missed_ack")
            example = f"{e['pair']}: saw version {e['seen']} after {e['expected']} was acknowledged" + (
                f" ({after} ms before)" if after is not None else ""
            )
        return [("stale-read", mode, stale > 0, doc, example, (stale, int(ev.get("reads", 0) or 0)))]
    if checker.startswith("list-append"):
        label = checker.split(":", 1)[1] if ":" in checker else ""
        session, _, reads = label.partition("/")
        mode = f"list-append {session or 'default'}/{reads or 'plain'}"
        anomalies = ev.get("anomalies") or {}
        seen_doc = set(ev.get("documented_seen") or [])
        for cls in [
            *LIST_APPEND_ROWS,
            *[a for a in ANOMALIES if a in anomalies and a not in LIST_APPEND_ROWS],
        ]:
            a = anomalies.get(cls)
            example = ""
            if a and a.get("examples"):
                e = a["examples"][0]
                example = " ".join(e["cycle"]) if "cycle" in e else str(e.get("why") or "")
            out.append((cls, mode, bool(a), cls in seen_doc, example, None))
        return out
    if checker == "ledger":
        lost = int(((ev.get("lost") or {}).get("count")) or 0)
        example = ""
        if lost:
            ex = (ev["lost"].get("examples") or [{}])[0]
            example = f"key {ex.get('key')} missing on {', '.join(ex.get('nodes') or [])}"
        oks = int(((ev.get("ops") or {}).get("ok")) or 0)
        return [("lost acknowledged write", "ledger", lost > 0, False, example, (lost, oks))]
    return []


def anomaly_rows(trials: Sequence[Sequence[dict[str, Any]]]) -> list[AnomalyRow]:
    """One row per (class, mode) over the verdicts of each trial (verdicts as stored: JSON dicts)."""
    rows: dict[tuple[str, str], AnomalyRow] = {}
    hits: dict[tuple[str, str], list[int]] = {}
    checked: dict[str, int] = {}  # trials per list-append mode
    for verdicts in trials:
        for v in verdicts:
            if v.get("result") == "UNKNOWN" and not v.get("evidence"):
                continue
            obs = _observations(v)
            if str(v.get("checker", "")).startswith("list-append") and obs:
                checked[obs[0][1]] = checked.get(obs[0][1], 0) + 1
            for cls, mode, seen, doc, example, rate in obs:
                row = rows.setdefault((cls, mode), AnomalyRow(cls, mode))
                row.trials += 1
                if seen:
                    row.seen += 1
                    row.documented += int(doc)
                    if not row.example and example:
                        row.example = example
                if rate is not None:
                    h = hits.setdefault((cls, mode), [0, 0])
                    h[0] += rate[0]
                    h[1] += rate[1]
    # A list-append class outside the fixed rows (internal, ...) is observed only where it was
    # seen; it was looked for in every trial of its mode.
    for (cls, mode), row in rows.items():
        if mode in checked and cls not in LIST_APPEND_ROWS:
            row.trials = checked[mode]
    for key, (n, of) in hits.items():
        what = "reads" if key[0] == "stale-read" else "acknowledged"
        rows[key].rate = f"{n}/{of} {what}" + (f" ({100 * n / of:.1f} %)" if of else "")
    return list(rows.values())
