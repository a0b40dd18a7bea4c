"""Experiments: plan, experiment run / report, compare. Thin: parse, call, print."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from clusterbench.analysis.stats import compare as compare_samples
from clusterbench.cli import console, guard
from clusterbench.cli.common import (
    JsonOpt,
    MetricsPortOpt,
    NotesOpt,
    ResultsOpt,
    TagOpt,
    TelemetryOpt,
    check_tags,
    command_line,
    print_json,
    results_path,
    serve_metrics,
    store_at,
    sysbench_runner,
    typer_app,
)
from clusterbench.cli.live import sample_line
from clusterbench.cluster import home_dir
from clusterbench.errors import InputError
from clusterbench.experiment import tls as tlsmod
from clusterbench.experiment.load import load_experiment
from clusterbench.experiment.planner import Plan, TrialSpec, expand
from clusterbench.experiment.results import point_stats
from clusterbench.experiment.runner import KIND, ExperimentListener, ExperimentRunner, done_trials, find_run
from clusterbench.runner import resolve_run
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.workloads import RunResult, Sample, SysbenchOptions
from clusterbench.workloads.parse import combine_samples
from clusterbench.workloads.sysbench import ACCESS_TESTS

FileArg = Annotated[Path, typer.Argument(metavar="FILE", help="Experiment file (TOML).")]
ProfileOpt = Annotated[
    str | None, typer.Option("--profile", "-p", help="A profile of the file, e.g. quick or full.")
]


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_cmd)
    app.command("compare")(compare_cmd)
    exp_app = typer_app(help="Run experiments and report them.")
    exp_app.command("plan")(plan_cmd)  # the same command as `clusterbench plan`
    exp_app.command("run")(run_cmd)
    exp_app.command("report")(report_cmd)
    app.add_typer(exp_app, name="experiment")


def make_plan(path: Path, profile: str | None) -> Plan:
    exp = load_experiment(path, profile)
    return expand(exp, tlsmod.server_settings(home_dir() / "experiments" / "tls"))


def _dur(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def plan_cmd(
    file: FileArg,
    profile: ProfileOpt = None,
    as_json: JsonOpt = False,
    results: ResultsOpt = None,
) -> None:
    """Print the trials of an experiment in run order and the estimated wall time; touches nothing."""
    plan = make_plan(file, profile)
    exp = plan.experiment
    if exp.search is not None:
        if as_json:
            print_json(_search_plan_record(plan, results))
            return
        _plan_search(plan, results)
        return
    done: set[str] = set()
    path = results_path(results)
    if path.exists():
        with store_at(results, must_exist=True) as store:
            rid = find_run(store, plan)
            if rid is not None:
                done = set(done_trials(store, rid))
    if as_json:
        print_json(plan_record(plan, done))
        return
    table = Table(
        title=f"{exp.name} ({exp.profile or 'base'}): {len(plan.trials)} trials",
        box=box.SIMPLE_HEAD,
        title_justify="left",
        pad_edge=False,
    )
    for col in ("#", "grp", "cluster", "nodes", "part", "point", "rep", "test", "thr", "cli", "rate", "s"):
        table.add_column(
            col, justify="right" if col in ("#", "grp", "nodes", "rep", "thr", "cli", "s") else "left"
        )
    for t in plan.trials:
        r = t.topology.resources
        # GR for a Group Replication cluster (Galera's stays as it was: "3n")
        gr = " GR" if t.topology.engine.kind == "group_replication" else ""
        cl = f"{t.topology.cluster.nodes}n{gr}" + "".join(
            f" {k}={v}" for k, v in (("cpu", r.cpu_quota), ("cpuset", r.cpuset), ("bw", r.bandwidth)) if v
        )
        mark = " (done)" if t.key in done else ""
        table.add_row(
            str(t.index),
            str(t.group),
            cl,
            str(t.nodes),
            t.part,
            t.point_label + mark,
            str(t.rep),
            t.test,
            str(t.threads),
            str(t.clients),
            t.rate_text(),
            f"{t.warmup}+{t.duration}",
        )
    console.out.print(table)
    shown: set[str] = set()
    for t in plan.trials:
        if t.faults and t.part not in shown:
            shown.add(t.part)
            sched = "; ".join(
                f"{f.kind} {f.target} at {f.at:g} s" + (f" for {f.duration:g} s" if f.duration else "")
                for f in t.faults
            )
            console.out.print(f"faults in every trial of part {t.part}: {sched}", markup=False)
    for line in settings_lines(plan):
        console.out.print(line, markup=False)
    _print_designs(plan)
    est = plan.estimate(skip=done)
    phases = ", ".join(f"{k} {_dur(v)}" for k, v in sorted(est.phases.items(), key=lambda kv: -kv[1]))
    console.out.print(
        f"{len(plan.groups())} cluster build(s), {len(plan.points())} points x "
        f"{_repetitions_text(exp.settings)} repetition(s); {len(done)} trial(s) already done"
    )
    if exp.settings.auto:
        console.out.print(
            f"repetitions auto: {exp.settings.min_repetitions} planned per point, then more until the "
            f"95 % CI of the {exp.settings.ci_statistic} is within {exp.settings.ci_tolerance:.0%} of it, "
            f"at most {exp.settings.max_repetitions}; the estimate counts the planned ones"
        )
    console.out.print(
        f"estimated wall time {_dur(est.total)} ({phases}); not measuring {est.not_measuring_share:.0%}"
    )


def _setting_text(v: Any) -> str:
    if v is None:
        return "standard"  # tpcc's mix
    return repr(v) if isinstance(v, str) else str(v)


def settings_lines(plan: Plan) -> list[str]:
    """What the trials' own kinds of test run with beyond the table's columns (access_*: batch,
    row_size; mysqlslap: slap_*; tpcc: warehouses, mix), once per part and distinct value set;
    factors are in the point already."""
    lines: list[str] = []
    for t in plan.trials:
        point = dict(t.point)
        own = {k: v for k, v in t.test_settings().items() if k not in point}
        if not own:
            continue
        kind = "access_*" if t.test in ACCESS_TESTS else t.test
        text = ", ".join(f"{k}={_setting_text(v)}" for k, v in own.items())
        line = f"part {t.part}, {kind}: {text}"
        if line not in lines:
            lines.append(line)
    return lines


def plan_record(plan: Plan, done: set[str]) -> dict[str, Any]:
    """`plan --json`: every trial in run order, what is done, and the estimate."""
    exp = plan.experiment
    est = plan.estimate(skip=done)
    trials = []
    for t in plan.trials:
        r = t.topology.resources
        trials.append(
            {
                "index": t.index,
                "group": t.group,
                "part": t.part,
                "point": t.point_label,
                "factors": {k: v for k, v in t.point},
                "rep": t.rep,
                "nodes": t.nodes,
                "cluster_nodes": t.topology.cluster.nodes,
                "cpu_quota": r.cpu_quota,
                "cpuset": r.cpuset,
                "bandwidth": r.bandwidth,
                "server": dict(t.server),
                "test": t.test,
                "threads": t.threads,
                "clients": t.clients,
                "settings": t.test_settings(),
                "rate": t.rate_text(),
                "warmup_s": t.warmup,
                "duration_s": t.duration,
                "faults": [f.model_dump(mode="json", by_alias=True) for f in t.faults],
                "done": t.key in done,
            }
        )
    return {
        "experiment": exp.name,
        "profile": exp.profile,
        "trials": trials,
        "cluster_builds": len(plan.groups()),
        "points": len(plan.points()),
        "repetitions": exp.settings.repetitions,
        "max_repetitions": exp.settings.max_repetitions if exp.settings.auto else exp.settings.repetitions,
        "done": len(done),
        "estimate": {
            "total_s": round(est.total, 1),
            "not_measuring_share": round(est.not_measuring_share, 4),
            "phases_s": {k: round(v, 1) for k, v in est.phases.items()},
        },
    }


def _search_plan_record(plan: Plan, results: Path | None) -> dict[str, Any]:
    """`plan --json` of a search: the knobs, the budget, the random start and the estimate."""
    from clusterbench.experiment.search_run import estimate, preview, search_setup

    exp = plan.experiment
    s = search_setup(exp)
    done = 0
    if results_path(results).exists():
        with store_at(results, must_exist=True) as store:
            rid = find_run(store, plan)
            if rid is not None:
                done = len(done_trials(store, rid))
    est = estimate(exp, done)
    return {
        "experiment": exp.name,
        "profile": exp.profile,
        "search": True,
        "knobs": [{"name": k.name, "kind": k.kind, "space": k.describe()} for k in s.knobs],
        "objective": s.objective.text,
        "budget": s.spec.budget,
        "seed": s.spec.seed,
        "random_start": [s.label(st.config) for st in preview(exp)],
        "done": done,
        "estimate": {
            "total_s": round(est.total, 1),
            "phases_s": {k: round(v, 1) for k, v in est.phases.items()},
        },
    }


def _plan_search(plan: Plan, results: Path | None) -> None:
    """A search's plan: the knobs, the objective, the budget and stopping rule, the random start."""
    from clusterbench.experiment.search_run import estimate, preview, search_setup

    exp = plan.experiment
    s = search_setup(exp)
    spec = s.spec
    done = 0
    path = results_path(results)
    if path.exists():
        with store_at(results, must_exist=True) as store:
            rid = find_run(store, plan)
            if rid is not None:
                done = len(done_trials(store, rid))
    table = Table(title=f"{exp.name} ({exp.profile or 'base'}): search", box=box.SIMPLE_HEAD,
                  title_justify="left", pad_edge=False)  # fmt: skip
    table.add_column("knob")
    table.add_column("kind")
    table.add_column("space")
    for k in s.knobs:
        table.add_row(k.name, k.kind, k.describe())
    console.out.print(table)
    cons = "; subject to " + ", ".join(c.text for c in s.constraints) if s.constraints else ""
    wl = exp.search_workload
    assert wl is not None
    console.out.print(
        f"objective: {s.objective.text}{cons}; budget {spec.budget} trial(s) of {wl.warmup}+{wl.duration} s "
        f"({wl.tests[0]}), Optuna TPE seed {spec.seed}, random start {s.startup}",
        markup=False,
    )
    stop = f"after {spec.patience} trial(s) without a better incumbent" if spec.patience else "at the budget"
    console.out.print(
        f"stopping: exploring ends {stop} (or when only the confirmation trials are left); then the "
        f"incumbent and up to {spec.contenders} contender(s) within {spec.close:.0%} are measured "
        f"{spec.confirm} times each; a new incumbent is measured {spec.recheck} times before exploring on",
        markup=False,
    )
    console.out.print("the random start (fixed by the seed; largest node count first):", markup=False)
    for st in preview(exp):
        console.out.print(f"  {st.number:>3}  {s.label(st.config)}", markup=False)
    est = estimate(exp, done)
    phases = ", ".join(f"{k} {_dur(v)}" for k, v in sorted(est.phases.items(), key=lambda kv: -kv[1]))
    console.out.print(f"{done} trial(s) already done; estimated wall time for the rest of the budget "
                      f"{_dur(est.total)} ({phases})")  # fmt: skip


def _print_designs(plan: Plan) -> None:
    """Per part with a designed experiment: the design, its notes and what is aliased."""
    for part, res in plan.designs.items():
        d = plan.experiment.design(part)
        runs = sum(res.copies.values())
        console.out.print(
            f"part {part}: {d.describe()}: {runs} design run(s) on {len(res.points)} distinct point(s)",
            markup=False,
        )
        for note in res.notes:
            console.out.print(f"  note: {note}", markup=False)
        if res.aliases:
            console.out.print("  aliased (up to two-factor interactions):", markup=False)
            for a in res.aliases:
                console.out.print(f"    {a}", markup=False)


class ExperimentView(ExperimentListener):
    """An overall bar (trials done / to do) with an ETA, and the current trial's last second."""

    def __init__(self) -> None:
        self.tty = console.is_tty()
        self.progress: Progress | None = None
        self.task: Any = None
        self.plan: Plan | None = None
        self.todo: list[str] = []
        self.finished: set[str] = set()
        self.t0 = time.monotonic()
        self.est0 = 0.0
        self.clients = 1
        self.pending: dict[int, list[Sample]] = {}
        self.run_id: int | None = None
        self.servers = ""
        self.neck: Bottleneck | None = None

    def __enter__(self) -> ExperimentView:
        if self.tty:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=30),
                MofNCompleteColumn(),
                TextColumn("ETA {task.fields[eta]}"),
                TextColumn("{task.fields[live]}"),
                console=console.out,
                refresh_per_second=4,
            )
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def _eta(self) -> str:
        assert self.plan is not None
        if self.plan.experiment.search is not None:  # at most the budget; per trial as measured so far
            left = max(0, len(self.todo) - len(self.finished))
            per = (time.monotonic() - self.t0) / len(self.finished) if self.finished else 0.0
            return "≤ " + _dur(left * per if per else self.est0)
        skip = self.done | self.finished
        remaining = self.plan.estimate(skip=skip).total
        spent_est = self.est0 - remaining
        elapsed = time.monotonic() - self.t0
        scale = min(3.0, max(0.5, elapsed / spent_est)) if spent_est > 30 else 1.0
        return _dur(remaining * scale)

    def started(self, run_id: int, plan: Plan, done: set[str], resumed: bool) -> None:
        self.plan, self.done, self.run_id = plan, done, run_id
        self.todo = [t.key for t in plan.trials if t.key not in done]
        self.est0 = plan.estimate(skip=done).total
        if plan.experiment.search is not None:
            from clusterbench.experiment.search_run import estimate

            left = max(0, plan.experiment.search.budget - len(done))
            self.todo = [f"search trial {i}" for i in range(len(done) + 1, len(done) + left + 1)]
            self.est0 = estimate(plan.experiment, len(done)).total
        what = f"resuming run {run_id}: {len(done)} trial(s) done, " if resumed else f"run {run_id}: "
        console.out.print(f"{what}{len(self.todo)} to run, estimated {_dur(self.est0)}")
        if self.progress is not None:
            self.task = self.progress.add_task(
                plan.experiment.name, total=len(self.todo), eta=self._eta(), live=""
            )

    def phase(self, message: str) -> None:
        if self.progress is not None:
            self.progress.console.print(f"  {message}", soft_wrap=True, markup=False)
        else:
            console.step(message)

    def trial_started(self, t: TrialSpec, opts: SysbenchOptions) -> None:
        self.clients = t.clients
        self.pending = {}
        self.servers = ""
        self.neck = None
        self.current = f"#{t.index} {t.part}: {t.point_label} rep {t.rep} ({opts.rate or 'max'} tps target)"
        if t.key not in self.todo and t.key not in self.done:  # a repetition added by repetitions = "auto"
            self.todo.append(t.key)
            if self.progress is not None:
                self.progress.update(self.task, total=len(self.todo))
        if self.progress is not None:
            self.progress.update(self.task, live=self.current)

    def sample(self, t: TrialSpec, sample: Sample) -> None:
        k = round(sample.t)
        group = self.pending.setdefault(k, [])
        group.append(sample)
        if len(group) < self.clients:
            return
        del self.pending[k]
        s = combine_samples(group)[0] if self.clients > 1 else sample
        if self.progress is not None:
            servers = f"  | {self.servers}" if self.servers else ""
            self.progress.update(self.task, live=f"#{t.index} [{k:>3} s] {sample_line(s)}{servers}")

    def telemetry(self, t: TrialSpec, line: str) -> None:
        self.servers = line

    def bottleneck(self, t: TrialSpec, verdict: Bottleneck) -> None:
        self.neck = verdict

    def note(self, t: TrialSpec | None, line: str) -> None:
        text = f"      {line}"
        if self.progress is not None:
            self.progress.console.print(text, markup=False, soft_wrap=True)
        else:
            console.out.print(text, markup=False, soft_wrap=True)

    def trial_finished(self, t: TrialSpec, result: RunResult, status: str, wall: float) -> None:
        self.finished.add(t.key)
        s = result.summary
        stats = f"tps {s.tps:,.1f}  p95 {s.pct(95) or 0:.2f} ms" if s is not None else ""
        if status != "completed":
            stats = f"{status}: {result.failure() or ''}"
        line = f"#{t.index:>3} {t.part}: {t.point_label} rep {t.rep}: {stats} ({wall:.0f} s)"
        if self.neck is not None:
            line += f"; bottleneck: {self.neck.short}"
        saturated = [
            f"client {c.client} on {c.host}: {'; '.join(c.warnings())}" for c in result.clients if c.flags
        ]
        if saturated:
            # The cluster's limit was not measured in this trial: say so where the number appears.
            line += "\n      warning: a load client was the bottleneck: " + " | ".join(saturated)
        if self.progress is not None:
            self.progress.console.print(line, markup=False, soft_wrap=True)
            self.progress.update(self.task, advance=1, eta=self._eta(), live="")
        else:
            console.out.print(
                f"  {line}  [{len(self.finished)}/{len(self.todo)}, ETA {self._eta()}]",
                markup=False,
                soft_wrap=True,
            )


def run_cmd(
    file: FileArg,
    profile: ProfileOpt = None,
    results: ResultsOpt = None,
    fresh: Annotated[
        bool, typer.Option(help="Start a new run even if one of this plan can be resumed.")
    ] = False,
    tag: TagOpt = None,
    notes: NotesOpt = None,
    telemetry: TelemetryOpt = True,
    metrics_port: MetricsPortOpt = None,
) -> None:
    """Run an experiment (resumable: the same command again skips the finished trials)."""
    tags = check_tags(tag)
    plan = make_plan(file, profile)
    clusters = sorted({plan.experiment.topology.name} | {t.topology.name for t in plan.trials})
    for name in clusters:
        guard.claim(name)
    with serve_metrics(metrics_port, results), store_at(results) as store:
        view = ExperimentView()
        one = clusters[0] if len(clusters) == 1 else None
        runner = _runner(plan, store, view, one, tags, notes, telemetry)
        with view:
            out = runner.run(fresh=fresh)
        led = out.ledger
        if out.ran == 0:
            console.out.print(f"run [bold]{out.run_id}[/]: all {out.skipped} trial(s) were already done")
            console.out.print(f"report: clusterbench experiment report {out.run_id}")
            return
        phases = ", ".join(f"{k} {v:.0f} s" for k, v in led.summary().items() if v >= 0.5)
        colour = "green" if out.status == "completed" else "red"
        console.out.print(
            f"run [bold]{out.run_id}[/] [{colour}]{out.status}[/]: {out.ran} trial(s) run, "
            f"{out.skipped} skipped (already done); wall {_dur(led.wall)}, measuring {_dur(led.measuring)}"
        )
        console.out.print(
            f"not measuring: [bold]{led.not_measuring_share():.1%}[/] of the wall time ({phases})",
            soft_wrap=True,
        )
        if plan.experiment.search is not None:
            _print_winner(store, out.run_id)
        console.out.print(f"report: clusterbench experiment report {out.run_id}")
    if out.failed:
        from clusterbench.runner import TrialsFailed

        raise TrialsFailed(
            f"run {out.run_id}: {len(out.failed)} trial(s) failed: {', '.join(out.failed[:5])}"
        )


def _runner(
    plan: Plan,
    store: Any,
    view: ExperimentView,
    cluster: str | None = None,
    tags: list[str] | None = None,
    notes: str | None = None,
    telemetry: bool = True,
) -> ExperimentRunner:
    """`cluster`: the one cluster the experiment builds, whose load clients are recorded. The tags
    and notes go into the run when it is created or resumed. `telemetry`: sample its servers beside
    the load."""
    kw: dict[str, Any] = {"home": home_dir(), "listener": view, "command_line": command_line(),
                          "tags": tags or [], "notes": notes, "telemetry": telemetry}  # fmt: skip
    if plan.experiment.search is None:
        return ExperimentRunner(plan, store, sysbench_runner(cluster), **kw)
    from clusterbench.experiment.search_run import SearchRunner

    tls = tlsmod.server_settings(home_dir() / "experiments" / "tls")
    return SearchRunner(plan, store, sysbench_runner(cluster), tls_server=tls, **kw)


def _print_winner(store: Any, run_id: int) -> None:
    ev = next((e["detail"] for e in reversed(store.events(run_id)) if e["kind"] == "search_result"), None)
    if ev is None:
        return
    w = ev.get("winner")
    if w is None:
        console.out.print(
            f"search: no configuration met the objective's constraints in {ev['trials']} trial(s)"
        )
        return
    state = "confirmed" if w["confirmed"] else "[yellow]not confirmed[/] (the budget ran out)"
    vs = ""
    if w.get("runner_up"):
        p = w.get("p_vs_runner_up")
        vs = f"; runner-up {w['runner_up']}" + (f" (Welch p {p:.3g})" if p is not None else "")
    console.out.print(
        f"best: [bold]{w['label']}[/]: median {w['median']:,.1f}, CI {w['low']:,.1f}–{w['high']:,.1f} "
        f"({w['coverage']:.0%}), n={w['n']}, first measured at trial {w['found_at']} of {ev['trials']}; "
        f"{state}; exploring stopped by {ev['stopped_by']}{vs}",
        soft_wrap=True,
    )


def _experiment_run(store: Any, ref: str) -> int:
    run_id = resolve_run(store, ref) if ref != "last" else _last_experiment(store)
    if store.get_run(run_id).kind != KIND:
        raise InputError(
            f"run {run_id} is not an experiment run; `clusterbench results list` shows the kinds"
        )
    return run_id


def _last_experiment(store: Any) -> int:
    """The experiment run worked on most recently: a resumed older run counts from its resume,
    so `report last` after `experiment run` reports the run that just ran."""
    runs = [r for r in store.list_runs() if r.kind == KIND]
    if not runs:
        raise InputError("no experiment runs in the store; start one with `clusterbench experiment run FILE`")
    return int(max(runs, key=lambda r: (max(r.started_at, r.ended_at or ""), r.id)).id)


def report_cmd(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Experiment run id, or 'last'.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Directory (default <home>/reports).")
    ] = None,
    log_latency: Annotated[
        bool, typer.Option(help="Open with the latency plots on a log scale (the page has a switch).")
    ] = False,
    results: ResultsOpt = None,
) -> None:
    """Write the experiment's Markdown and single-file HTML report (SVG plots, per-point statistics)
    and CSV files; print a table."""
    from clusterbench.experiment.report import write_experiment_report

    with store_at(results, must_exist=True) as store:
        run_id = _experiment_run(store, run_ref)
        points = point_stats(store, run_id)
        out_dir = out if out is not None else home_dir() / "reports"
        try:
            paths = write_experiment_report(store, run_id, out_dir, log_latency=log_latency)
        except OSError as exc:
            raise InputError(f"cannot write the report to {out_dir} ({exc}); choose another --out") from None
        _print_winner(store, run_id)
        _print_effects(store, run_id)
    table = Table(title=f"experiment run {run_id}", box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    for col in ("part", "point", "n", "tps median", "95 % CI", "cover", "CV", "p95 ms"):
        table.add_column(col, justify="left" if col in ("part", "point") else "right")
    for p in points:
        t = p.tps_ci
        cv = "—" if p.cv is None else f"{p.cv:.1%}" + (" [red]high[/]" if p.cv_high else "")
        table.add_row(
            p.part,
            p.label,
            str(p.n),
            f"{t.median:,.1f}" if t else "—",
            f"{t.low:,.1f}–{t.high:,.1f}" if t else "—",
            f"{t.coverage:.0%}" if t else "—",
            cv,
            f"{p.p95_pooled:.2f}" if p.p95_pooled is not None else "—",
        )
    console.out.print(table)
    for path in paths:
        console.out.print(f"wrote {path}")


def _print_effects(store: Any, run_id: int) -> None:
    """The significant effects of each designed part, largest first (the rest is in the HTML)."""
    from clusterbench.experiment.doe_report import designed_parts

    for pa in designed_parts(store, run_id):
        if pa.tps is None:
            continue
        sig = sorted((e for e in pa.tps.effects if e.significant), key=lambda e: -abs(e.effect))
        text = ", ".join(f"{e.term} {e.effect:+,.1f} [{e.low:,.1f}, {e.high:,.1f}]" for e in sig[:6])
        console.out.print(
            f"part {pa.part} ({pa.design.describe()}): tps effects low -> high with 95 % CI: "
            + (text or "none significant at 95 %"),
            markup=False,
            soft_wrap=True,
        )


def compare_cmd(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="Run id or 'last': the reference.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="Run id or 'last': compared against RUN_A.")],
    test: Annotated[str, typer.Option(help="welch (Welch's t) or mwu (Mann-Whitney U).")] = "welch",
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="Significance level.")] = 0.05,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Compare runs that differ in what defines the workload (threads, rate, tables, "
            "faults ...), which is refused without it.",
        ),
    ] = False,
    fail_on_regression: Annotated[
        float | None,
        typer.Option(
            "--fail-on-regression",
            metavar="PCT",
            min=0.0,
            help="Exit 1 when B is significantly slower than A by more than PCT % in a test or "
            "point (for CI).",
        ),
    ] = None,
    as_json: JsonOpt = False,
    results: ResultsOpt = None,
) -> None:
    """B against A. First every difference between the two runs (engine, topology, server
    settings, load options, faults, versions, machine); runs that differ in what defines the
    workload are refused without --force. Then, two experiments: per design point, median tps
    over repetitions and a p-value; two other runs (suites, runs, drills): per test, tps, p95 and
    p99, the change and a p-value over the measured seconds. Exit 1 with --fail-on-regression PCT
    when B is significantly slower by more than PCT %."""
    from clusterbench.analysis.differences import differences

    if test not in ("welch", "mwu"):
        raise InputError(f"--test must be welch or mwu, got {test!r}")
    with store_at(results, must_exist=True) as store:
        a, b = _resolve_pair(store, run_a, run_b)
        diffs = differences(store, a, b)
        _refuse_incomparable(a, b, diffs, force=force, quiet=as_json)
        if store.get_run(a).kind != KIND:
            changes = _compare_runs(store, a, b, test, alpha, as_json, diffs)
        else:
            changes = _compare_experiments(store, a, b, test, alpha, as_json, diffs)
    _gate(changes, fail_on_regression)


def _refuse_incomparable(a: int, b: int, diffs: list[Any], *, force: bool, quiet: bool) -> None:
    """Say every difference first; refuse what changes the workload unless --force."""
    if not quiet:
        said = "differences" if diffs else "no difference in what they ran"
        head = f"run {b} against run {a}: {said}"
        console.out.print(head, markup=False)
        for d in diffs:
            console.out.print(f"  {d.line()}", markup=False, soft_wrap=True)
    defining = [d for d in diffs if d.defining]
    if defining and not force:
        what = "; ".join(d.line().removesuffix(" (defines the workload)") for d in defining)
        raise InputError(
            f"runs {a} and {b} differ in what defines the workload ({what}), so their numbers are not "
            "comparable; give --force to compare them anyway"
        )


def _gate(changes: list[tuple[str, str, float | None]], pct: float | None) -> None:
    """--fail-on-regression: exit 1 naming the tests or points significantly slower beyond pct %."""
    if pct is None:
        return
    worse = [f"{what} {c:+.1%}" for what, verdict, c in changes
             if verdict == "slower" and c is not None and -c * 100 > pct]  # fmt: skip
    if worse:
        from clusterbench.runner import TrialsFailed

        raise TrialsFailed(f"significant regression beyond {pct:g} %: {', '.join(worse)}")


def _compare_experiments(
    store: Any, a: int, b: int, test: str, alpha: float, as_json: bool, diffs: list[Any]
) -> list[tuple[str, str, float | None]]:
    pa = {p.key: p for p in point_stats(store, a)}
    pb = {p.key: p for p in point_stats(store, b)}
    common = [k for k in pa if k in pb]
    if not common:
        raise InputError(
            f"runs {a} and {b} have no design point in common; compare runs of the same experiment"
        )
    rows: list[dict[str, Any]] = []
    for k in common:
        x, y = pa[k], pb[k]
        c = compare_samples(x.tps, y.tps, test=test, alpha=alpha)  # type: ignore[arg-type]
        rows.append({
            "point": k, "n_a": x.n, "n_b": y.n, "tps_median_a": c.median_a, "tps_median_b": c.median_b,
            "tps_change": c.change, "p95_ms_a": x.p95_pooled, "p95_ms_b": y.p95_pooled,
            "p_welch": c.p_welch, "p_mwu": c.p_mwu, "verdict": c.verdict(),
        })  # fmt: skip
    only = (len(pa) - len(common), len(pb) - len(common))
    if as_json:
        print_json({"run_a": a, "run_b": b, "kind": "experiment", "test": test, "alpha": alpha,
                    "differences": [d.to_json() for d in diffs], "points": rows,
                    "only_in_a": only[0], "only_in_b": only[1]})  # fmt: skip
    else:
        _print_points(a, b, test, alpha, rows, only)
    return [(r["point"], r["verdict"], r["tps_change"]) for r in rows]


def _print_points(
    a: int, b: int, test: str, alpha: float, rows: list[dict[str, Any]], only: tuple[int, int]
) -> None:
    name = "Welch t" if test == "welch" else "Mann-Whitney U"
    header = ("point", "n A", "n B", "tps A", "tps B", "diff", "p95 ms A", "p95 ms B", "p (Welch)",
              "p (MWU)", "verdict")  # fmt: skip
    counts: dict[str, int] = {}
    cells = []
    for r in rows:
        v = r["verdict"]
        counts[v] = counts.get(v, 0) + 1
        colour = {"faster": "green", "slower": "red"}.get(v, "white")
        cells.append([
            console.escape(r["point"]), str(r["n_a"]), str(r["n_b"]), f"{r['tps_median_a']:,.1f}",
            f"{r['tps_median_b']:,.1f}", "—" if r["tps_change"] is None else f"{r['tps_change']:+.1%}",
            f"{r['p95_ms_a']:.2f}" if r["p95_ms_a"] else "—",
            f"{r['p95_ms_b']:.2f}" if r["p95_ms_b"] else "—",
            "—" if r["p_welch"] is None else f"{r['p_welch']:.3g}",
            "—" if r["p_mwu"] is None else f"{r['p_mwu']:.3g}", f"[{colour}]{v}[/]",
        ])  # fmt: skip
    table = console.fitted_table(f"run {b} against run {a} ({name}, alpha {alpha:g})", header, cells,
                                 (0, 10), box=box.SIMPLE_HEAD, pad_edge=False)  # fmt: skip
    console.out.print(table)
    console.out.print(
        ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        + (f"; {only[0]} point(s) only in run {a}, {only[1]} only in run {b}" if any(only) else "")
    )


def _resolve_pair(store: Any, ref_a: str, ref_b: str) -> tuple[int, int]:
    """Both runs; 'last' means the last experiment when the other run is one. Two runs of
    different kinds (an experiment and a suite) are refused."""
    known = [resolve_run(store, r) for r in (ref_a, ref_b) if r != "last"]
    other_is_experiment = any(store.get_run(r).kind == KIND for r in known)

    def one(ref: str) -> int:
        if ref == "last" and other_is_experiment:
            return _last_experiment(store)
        return resolve_run(store, ref)

    a, b = one(ref_a), one(ref_b)
    if a == b:
        raise InputError(f"RUN_A and RUN_B are both run {a}; give two different runs")
    ka, kb = store.get_run(a).kind, store.get_run(b).kind
    if (ka == KIND) != (kb == KIND):
        exp, other = (a, b) if ka == KIND else (b, a)
        raise InputError(
            f"run {exp} is an experiment and run {other} is not; compare two experiments, or two runs of "
            "the same tests (`clusterbench results list` shows the kinds)"
        )
    return a, b


def _compare_runs(
    store: Any, a: int, b: int, test: str, alpha: float, as_json: bool, diffs: list[Any]
) -> list[tuple[str, str, float | None]]:
    from clusterbench.analysis.compare import compare_runs

    cmp = compare_runs(store, a, b, test=test, alpha=alpha)  # type: ignore[arg-type]
    if as_json:
        print_json({**cmp.to_json(), "differences": [d.to_json() for d in diffs]})
    else:
        _print_tests(cmp, a, b, test, alpha)
    return [(d.test, d.verdict, d.tps_change) for d in cmp.rows]


def _print_tests(cmp: Any, a: int, b: int, test: str, alpha: float) -> None:
    from clusterbench.analysis.compare import CAVEAT
    name = "Welch t" if test == "welch" else "Mann-Whitney U"
    title = f"run {b} against run {a}, per test ({name} over the measured seconds, alpha {alpha:g})"
    header = ("test", "tps A", "tps B", "diff", "p95 ms A", "p95 ms B", "diff p95", "p (Welch)", "p (MWU)",
              "verdict")  # fmt: skip

    def f(x: float | None, spec: str = ",.2f") -> str:
        return "—" if x is None else format(x, spec)

    counts: dict[str, int] = {}
    cells = []
    for d in cmp.rows:
        counts[d.verdict] = counts.get(d.verdict, 0) + 1
        colour = {"faster": "green", "slower": "red"}.get(d.verdict, "white")
        short = "n.s." if d.verdict == "no significant difference" else d.verdict
        cells.append([d.test, f(d.tps_a), f(d.tps_b), f(d.tps_change, "+.1%"), f(d.p95_a), f(d.p95_b),
                      f(d.p95_change, "+.1%"), f(d.p_welch, ".3g"), f(d.p_mwu, ".3g"),
                      f"[{colour}]{short}[/]"])  # fmt: skip
    table = console.fitted_table(title, header, cells, (0, 9), box=box.SIMPLE_HEAD, pad_edge=False)
    console.out.print(table)
    only = ""
    if cmp.only_a or cmp.only_b:
        only = f"; only in run {a}: {', '.join(cmp.only_a) or '—'}"
        only += f"; only in run {b}: {', '.join(cmp.only_b) or '—'}"
    console.out.print(", ".join(f"{n} {v}" for v, n in sorted(counts.items())) + only, soft_wrap=True)
    console.out.print(
        f"n.s. = no significant difference; p99 too with --json or in the report. Note: {CAVEAT}",
        soft_wrap=True,
        markup=False,
    )
    console.out.print(f"plots: clusterbench report {b} --baseline {a}", markup=False)


def _repetitions_text(settings: Any) -> str:
    if settings.auto:
        return f"{settings.min_repetitions}-{settings.max_repetitions} (auto)"
    return str(settings.repetitions)
