"""`clusterbench experiment run|report` (and `experiment plan`, from cli/plan.py). Thin: parse, call,
print."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from rich import box
from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn
from rich.table import Table

from clusterbench.cli import console, guard
from clusterbench.cli.common import (
    JunitOpt,
    LogLatencyOpt,
    MetricsPortOpt,
    NotesOpt,
    ReportOutOpt,
    ResultsOpt,
    TagOpt,
    TelemetryOpt,
    check_tags,
    command_line,
    junit_report,
    serve_metrics,
    store_at,
    sysbench_runner,
    typer_app,
)
from clusterbench.cli.live import ProgressView, sample_line
from clusterbench.cli.plan import FileArg, ProfileOpt, hms, make_plan, plan_cmd
from clusterbench.errors import InputError
from clusterbench.experiment import tls as tlsmod
from clusterbench.experiment.planner import Plan, TrialSpec
from clusterbench.experiment.results import point_stats
from clusterbench.experiment.runner import KIND, ExperimentListener, ExperimentRunner
from clusterbench.experiment.stored import last_experiment
from clusterbench.paths import home_dir
from clusterbench.store.refs import resolve_run
from clusterbench.telemetry.verdict import Bottleneck
from clusterbench.workloads import RunResult, Sample, SysbenchOptions

exp_app = typer_app(help="Run experiments and report them.")


class ExperimentView(ProgressView, ExperimentListener):
    """An overall bar (trials done / to do) with an ETA, and the current trial's last second."""

    def __init__(self) -> None:
        super().__init__(clients=1)
        self.plan: Plan | None = None
        self.todo: list[str] = []
        self.finished: set[str] = set()
        self.t0 = time.monotonic()
        self.est0 = 0.0

    def columns(self) -> list[ProgressColumn]:
        return [
            TextColumn("{task.description}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            TextColumn("{task.fields[live]}"),
        ]

    def _eta(self) -> str:
        assert self.plan is not None
        if self.plan.experiment.search is not None:  # at most the budget; per trial as measured so far
            left = max(0, len(self.todo) - len(self.finished))
            per = (time.monotonic() - self.t0) / len(self.finished) if self.finished else 0.0
            return "≤ " + hms(left * per if per else self.est0)
        skip = self.done | self.finished
        remaining = self.plan.estimate(skip=skip).total
        spent_est = self.est0 - remaining
        elapsed = time.monotonic() - self.t0
        scale = min(3.0, max(0.5, elapsed / spent_est)) if spent_est > 30 else 1.0
        return hms(remaining * scale)

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
        console.out.print(f"{what}{len(self.todo)} to run, estimated {hms(self.est0)}")
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
        s = self.second(t.index, sample)
        if s is None:
            return
        k = round(sample.t)
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
    junit: JunitOpt = None,
) -> None:
    """Run an experiment (resumable: the same command again skips the finished trials)."""
    tags = check_tags(tag)
    plan = make_plan(file, profile)
    clusters = sorted({plan.experiment.topology.name} | {t.topology.name for t in plan.trials})
    for name in clusters:
        guard.claim(name)
    with serve_metrics(metrics_port, results), junit_report(junit, results), store_at(results) as store:
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
            f"{out.skipped} skipped (already done); wall {hms(led.wall)}, measuring {hms(led.measuring)}"
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
    run_id = resolve_run(store, ref) if ref != "last" else last_experiment(store)
    if store.get_run(run_id).kind != KIND:
        raise InputError(
            f"run {run_id} is not an experiment run; `clusterbench results list` shows the kinds"
        )
    return run_id


def report_cmd(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Experiment run id, or 'last'.")],
    out: ReportOutOpt = None,
    log_latency: LogLatencyOpt = False,
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


exp_app.command("plan")(plan_cmd)  # the same command as `clusterbench plan`
exp_app.command("run")(run_cmd)
exp_app.command("report")(report_cmd)
