"""What a run was and how it came out, in one place for every output: the engine and cluster it
ran on, its kind, its verdicts with their evidence, and a one-line outcome ("178.6 tps, p95 31 ms,
5/5 PASS"). `results list`, `results show` (and --json), every export, the report's header and
`compare` read it here, so they cannot disagree."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterbench.durability import durability
from clusterbench.store import Store
from clusterbench.store.export import FORMAT_VERSION as FORMAT_VERSION  # every export's

ENGINE_LABELS = {"galera": "MariaDB Galera", "group_replication": "MySQL Group Replication"}


@dataclass(frozen=True)
class Verdicts:
    """A run's verdicts: every check of every trial, and the run's result (None: no checker ran)."""

    result: str | None
    checks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for c in self.checks if c["result"] == "PASS")

    def counts(self) -> str:
        """'5/5 PASS', or '3/5 PASS, 1 FAIL, 1 UNKNOWN'."""
        if not self.checks:
            return ""
        n = len(self.checks)
        out = f"{self.passed}/{n} PASS"
        for r in ("FAIL", "UNKNOWN"):
            k = sum(1 for c in self.checks if c["result"] == r)
            if k:
                out += f", {k} {r}"
        return out

    def to_json(self) -> dict[str, Any]:
        n = len(self.checks)
        return {"result": self.result, "passed": self.passed, "total": n, "checks": self.checks}


def run_verdicts(store: Store, run_id: int) -> Verdicts:
    """The run's verdicts in order, each with its trial's number; the result combined as a drill's
    is (a documented limitation seen does not fail the run)."""
    from clusterbench.checkers.verdict import Result, Verdict, combine

    seqs = {t.id: t.seq for t in store.trials(run_id)}
    checks = []
    for v in store.verdicts(run_id):
        checks.append({"trial": seqs.get(v["trial_id"]), "checker": v["checker"], "result": v["result"],
                       "summary": v["summary"], "documented_limitation": v["documented_limitation"],
                       "evidence": v["evidence"]})  # fmt: skip
    if not checks:
        return Verdicts(None, [])
    objs = [Verdict(c["checker"], Result(c["result"]), c["summary"], {}, c["documented_limitation"])
            for c in checks]  # fmt: skip
    return Verdicts(str(combine(objs)), checks)


def engine_of(store: Store, run_id: int, prov: dict[str, Any] | None = None) -> str:
    """galera, group_replication (both, comma-separated, for an experiment with engine as a
    factor), or 'external' for load against a server given by --host."""
    prov = prov if prov is not None else store.provenance(run_id)
    topo = prov.get("topology")
    engines = [str(t.params["engine"]) for t in store.trials(run_id) if t.params.get("engine")]
    if engines:
        return ",".join(dict.fromkeys(engines))
    if isinstance(topo, dict):
        return str((topo.get("engine") or {}).get("kind") or "galera")
    return "external"


def cluster_of(prov: dict[str, Any]) -> str:
    topo = prov.get("topology")
    if isinstance(topo, dict):
        return str((topo.get("cluster") or {}).get("name") or "")
    ep = prov.get("endpoint")
    return str(ep.get("name") or "") if isinstance(ep, dict) else ""


def _num(x: float) -> str:
    return f"{x:,.1f}" if x < 1000 else f"{x:,.0f}"


def load_line(rows: Sequence[Any]) -> str:
    """'178.6 tps, p95 31 ms' for one trial; 'N trials, 12.3-178.6 tps' for several."""
    measured = [r for r in rows if r.tps is not None]
    if not measured:
        return ""
    if len(measured) == 1:
        r = measured[0]
        return f"{_num(r.tps)} tps" + (f", p95 {r.p95:.3g} ms" if r.p95 is not None else "")
    lo, hi = min(r.tps for r in measured), max(r.tps for r in measured)
    return f"{len(measured)} trials, {_num(lo)}-{_num(hi)} tps"


@dataclass(frozen=True)
class Overview:
    run_id: int
    kind: str
    engine: str
    cluster: str
    verdicts: Verdicts
    load: str

    @property
    def outcome(self) -> str:
        """The one line: load figures and verdict counts (what is known of them)."""
        parts = [p for p in (self.load, self.verdicts.counts()) if p]
        return ", ".join(parts) or "nothing measured"

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "cluster": self.cluster, "kind": self.kind, "outcome": self.outcome,
                "verdict": self.verdicts.result}  # fmt: skip


def overview(store: Store, run_id: int) -> Overview:
    from clusterbench.analysis.report import summary_rows

    run = store.get_run(run_id)
    prov = store.provenance(run_id)
    return Overview(run_id, run.kind, engine_of(store, run_id, prov), cluster_of(prov),
                    run_verdicts(store, run_id), load_line(summary_rows(store, run_id)))  # fmt: skip


def label_facts(store: Store, run: Any) -> list[tuple[str, str]]:
    """A report header's labels: tags, notes and the command line, where the run has them."""
    facts = []
    tags = store.tags(run.id)
    if tags:
        facts.append(("tags", ", ".join(tags)))
    if run.notes:
        facts.append(("notes", run.notes))
    if run.command_line:
        facts.append(("command", run.command_line))
    return facts


def durability_line(store: Store, run_id: int) -> str:
    """The durability settings the servers ran with, beside the server's shipped default where
    they differ (durability.py), from each trial's variables at its start: one line, or one per
    distinct setting with the trials that ran it ('' when no server answered)."""
    seen: dict[str, list[int]] = {}
    for t in store.trials(run_id):
        line = durability(store.provenance(run_id, t.id).get("server_variables@start")).line()
        if line:
            seen.setdefault(line.removeprefix("durability: "), []).append(t.seq)
    if len(seen) <= 1:
        return next(iter(seen), "")
    return "; ".join(f"trials {', '.join(map(str, seqs))}: {line}" for line, seqs in seen.items())


def environment_line(store: Store, run_id: int) -> str:
    """Where the run ran and whether the machine itself was the limit: on the local provider every
    node, balancer and client shares this machine's CPUs, and a trial whose bottleneck was them
    measured the machine, not the cluster."""
    prov = store.provenance(run_id)
    topo: dict[str, Any] = prov["topology"] if isinstance(prov.get("topology"), dict) else {}
    remote = (topo.get("provider") or {}).get("kind") == "ssh"
    where = (f"{len(topo.get('hosts') or [])} machines over ssh" if remote
             else "one machine (network namespaces)" if topo else "a server given by --host")  # fmt: skip
    cpu = prov.get("cpu")
    where += f", {cpu}" if cpu else ""
    trials = store.trials(run_id)
    necks = [store.bottleneck(t.id) for t in trials]
    shared = sum(1 for n in necks if n and n.get("resource") == "host_cpu" and "this machine" in n["summary"])
    if shared:
        limited = "every trial was" if shared == len(trials) else f"{shared} of {len(trials)} trials were"
        return f"{where}; {limited} limited by this machine's shared CPUs, not by the cluster"
    if any(necks):
        return f"{where}; no trial was limited by the machine itself"
    return where
