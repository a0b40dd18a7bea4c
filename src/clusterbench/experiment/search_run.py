"""Runs a [search] on a real cluster: each step of the optimizer is an ordinary stored trial.

The trials are TrialSpecs like a plan's (part "search", the configuration as the point, the n-th
measurement of a configuration as its repetition), run by ExperimentRunner's own trial code, so
samples, summaries, histograms, provenance and the report are the same as for a grid. The
cluster is built once for the largest node count a knob can ask for; the node count, limits and
server variables change at runtime as for a grid (nodes that come back rejoin by IST). A knob
whose levels need another cluster (another base topology) gets one: the old one is taken down.

Resuming: the run is found by the plan id (a hash of the search, the workload and the topology);
its completed trials are recorded into a fresh optimizer in order, then the search goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterbench.experiment.planner import (
    CostModel,
    Estimate,
    Plan,
    TrialSpec,
    _build_key,
    _topology_for,
    _trial,
    point_server,
    sized,
)
from clusterbench.experiment.runner import ExperimentOutcome, ExperimentRunner
from clusterbench.experiment.search import (
    Optimizer,
    Phase,
    SearchSetup,
    Step,
    capacity,
    metrics_of,
    setup,
)
from clusterbench.experiment.spec import SERVER_FACTORS, Experiment, Level

PART = "search"


def search_setup(exp: Experiment) -> SearchSetup:
    assert exp.search is not None
    return setup(exp.search, exp.source)


def make_trial(
    exp: Experiment,
    s: SearchSetup,
    config: dict[str, Level],
    rep: int,
    index: int,
    tls_server: dict[str, Any] | None = None,
) -> TrialSpec:
    """The trial of one step: the configuration over the base workload and topology."""
    wl = exp.search_workload
    assert wl is not None
    names = [k.name for k in s.knobs]
    point = tuple((n, config[n]) for n in names)
    any_tls = wl.tls or any(k.name == "tls" and True in k.values for k in s.knobs)
    base = exp.base_topology(config.get("engine"))
    topo = _topology_for(base, config, tls_server if any_tls else None)
    nodes = int(config.get("nodes", base.cluster.nodes))
    used = [k for k in SERVER_FACTORS if k in names]
    server = point_server(topo, config, used, "search", strict=False)
    t = _trial(PART, point, rep, topo, nodes, server, wl, dict(config))
    from dataclasses import replace

    return replace(
        t, topology=sized(t.topology, capacity(s, exp.topology.cluster.nodes)), group=1, index=index
    )


def preview(exp: Experiment) -> list[Step]:
    """The random start of the search (fixed by the seed): what `plan` can show before any result."""
    s = search_setup(exp)
    return [Step(c, "explore", i) for i, c in enumerate(Optimizer(s).random_start(), start=1)]


def estimate(exp: Experiment, done: int = 0, cost: CostModel | None = None) -> Estimate:
    """The wall time of the whole budget: one bring-up, then per trial a node change on average."""
    c = cost or CostModel()
    s = search_setup(exp)
    wl = exp.search_workload
    assert wl is not None
    est = Estimate()
    todo = max(0, s.spec.budget - done)
    if todo == 0:
        return est
    cap = capacity(s, exp.topology.cluster.nodes)
    est.add("bring-up", c.up_base + c.up_per_node * cap)
    dbs = wl.clients if wl.separate_schemas else 1
    est.add("prepare", dbs * (c.prepare_base + wl.tables * wl.table_size / c.prepare_rows_per_s))
    varies_nodes = any(k.name == "nodes" for k in s.knobs)
    for _ in range(todo):
        if varies_nodes:  # on average a third of the range, half of the time growing (IST)
            est.add("node changes", c.balancer_settle + c.node_start * max(1, cap // 3) / 2)
        est.add("trial overhead", c.trial_overhead)
        est.add("warm-up", wl.warmup)
        est.add("measuring", wl.duration, measuring=True)
        est.add("cool-down", wl.cooldown)
    est.add("teardown", c.down_base + c.down_per_node * cap)
    return est


@dataclass
class StoredStep:
    trial_id: int
    config: dict[str, Level]
    values: dict[str, float] | None
    phase: Phase


def stored_steps(store: Any, run_id: int) -> list[StoredStep]:
    """The finished trials of a search run in the order they ran (failed ones too: they used budget)."""
    out = []
    for tr in sorted(store.trials(run_id), key=lambda t: t.seq):
        p = tr.params
        if p.get("part") != PART or tr.status not in ("completed", "failed"):
            continue
        values = metrics_of(store.summary(tr.id)) if tr.status == "completed" else None
        out.append(StoredStep(tr.id, dict(p.get("point") or {}), values, p.get("search_phase", "explore")))
    return out


class SearchRunner(ExperimentRunner):
    """ExperimentRunner whose trials come from the optimizer instead of a plan."""

    def __init__(self, plan: Plan, *args: Any, tls_server: dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(plan, *args, **kw)
        self.setup = search_setup(plan.experiment)
        self.tls_server = tls_server
        self.optimizer: Optimizer | None = None
        self._phase: Phase = "explore"

    def _experiment_provenance(self) -> dict[str, Any]:
        out = super()._experiment_provenance()
        exp = self.plan.experiment
        assert exp.search is not None and exp.search_workload is not None
        out["search"] = {
            **exp.search.model_dump(mode="json"),
            "knob_order": [k.name for k in self.setup.knobs],  # JSON objects in the store are sorted
            "knob_kinds": {k.name: k.kind for k in self.setup.knobs},
            "knob_grid": {k.name: k.grid() for k in self.setup.knobs},
            "workload": exp.search_workload.model_dump(mode="json"),
        }
        return out

    def _run_trials(self, run_id: int, out: ExperimentOutcome, done: dict[str, int], seq: int) -> None:
        opt = self.optimizer = Optimizer(self.setup)
        history = stored_steps(self.store, run_id)
        for h in history:
            opt.record(h.config, h.values, h.phase)
        out.skipped = len(history)
        counts: dict[str, int] = {}
        for h in history:
            lab = self.setup.label(h.config)
            counts[lab] = counts.get(lab, 0) + 1
        if history:
            self.lis.phase(f"search: {len(history)} trial(s) recorded before; {self._incumbent_text()}")
        build: str | None = None
        try:
            while (step := opt.next()) is not None:
                lab = self.setup.label(step.config)
                counts[lab] = counts.get(lab, 0) + 1
                t = make_trial(
                    self.plan.experiment, self.setup, step.config, counts[lab], step.number, self.tls_server
                )
                key = _build_key(t.topology)
                if key != build:
                    self._teardown()
                    self._bring_up(t)
                    build = key
                seq += 1
                self._phase = step.phase
                status = self._trial(run_id, seq, t)
                out.ran += 1
                values = None
                if status == "completed":
                    tid = self._last_trial_id(run_id, t.key)
                    values = metrics_of(self.store.summary(tid)) if tid is not None else None
                else:
                    out.failed.append(t.key)
                rec = opt.record(step, values)
                self.store.add_event(
                    run_id,
                    "search_step",
                    {
                        "number": rec.number,
                        "phase": rec.phase,
                        "config": rec.label,
                        "score": rec.score,
                        "incumbent": rec.incumbent,
                        "incumbent_score": rec.incumbent_score,
                    },
                )
                self.lis.phase(f"search trial {rec.number} ({rec.phase}): {self._incumbent_text()}")
        finally:
            self._teardown()
        w = opt.winner()
        self.store.add_event(
            run_id,
            "search_result",
            {
                "trials": opt.used,
                "stopped_by": opt.stopped_by,
                "winner": None if w is None else {
                    "config": w.config, "label": w.label, "median": w.score.median, "low": w.score.low,
                    "high": w.score.high, "coverage": w.score.coverage, "n": w.n, "found_at": w.found_at,
                    "confirmed": w.confirmed, "runner_up": w.runner_up, "p_vs_runner_up": w.p_vs_runner_up,
                },
            },
        )  # fmt: skip

    def _bring_up(self, t: TrialSpec) -> None:
        wl = self.plan.experiment.search_workload
        if (wl is not None and wl.tls) or any(k.name == "tls" and True in k.values for k in self.setup.knobs):
            from clusterbench.experiment import tls as tlsmod

            with self.ledger.phase("bring-up"):
                self.certs = tlsmod.ensure_certs(self.home / "experiments" / "tls")
        super()._bring_up(t)

    def _extra_params(self, t: TrialSpec) -> dict[str, Any]:
        return {"search_phase": self._phase}

    def _last_trial_id(self, run_id: int, key: str) -> int | None:
        ids = [tr.id for tr in self.store.trials(run_id) if tr.params.get("key") == key]
        return max(ids) if ids else None

    def _incumbent_text(self) -> str:
        opt = self.optimizer
        assert opt is not None
        inc = opt.incumbent()
        if inc is None:
            return "no feasible configuration yet"
        e = inc.estimate(self.setup.objective.metric)
        return f"best so far {inc.label}: {self.setup.objective.metric} {e:,.1f} (median of {inc.n})"
