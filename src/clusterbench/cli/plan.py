"""`clusterbench plan FILE` (also `experiment plan`): an experiment's trials, their order and wall
time, from the file alone; starts nothing and loads none of the machinery that runs trials."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from clusterbench.cli import console
from clusterbench.cli.common import (
    JsonOpt,
    ResultsOpt,
    print_json,
    results_path,
    store_at,
)
from clusterbench.experiment import tls as tlsmod
from clusterbench.experiment.load import load_experiment
from clusterbench.experiment.planner import Plan, expand
from clusterbench.experiment.stored import done_trials, find_run
from clusterbench.paths import home_dir
from clusterbench.workloads.sysbench import ACCESS_TESTS

FileArg = Annotated[Path, typer.Argument(metavar="FILE", help="Experiment file (TOML).")]
ProfileOpt = Annotated[
    str | None, typer.Option("--profile", "-p", help="A profile of the file, e.g. quick or full.")
]


def done_keys(plan: Plan, results: Path | None) -> set[str]:
    """The trials of this plan a stored run has finished already (a resumed run skips them)."""
    if not results_path(results).exists():
        return set()
    with store_at(results, must_exist=True) as store:
        rid = find_run(store, plan)
        return set(done_trials(store, rid)) if rid is not None else set()


def make_plan(path: Path, profile: str | None) -> Plan:
    exp = load_experiment(path, profile)
    return expand(exp, tlsmod.server_settings(home_dir() / "experiments" / "tls"))


def hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _trials_table(plan: Plan, done: set[str]) -> Table:
    exp = plan.experiment
    table = Table(title=f"{exp.name} ({exp.profile or 'base'}): {len(plan.trials)} trials",
                  box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)  # fmt: skip
    for col in ("#", "grp", "cluster", "nodes", "part", "point", "rep", "test", "thr", "cli", "rate", "s"):
        table.add_column(
            col, justify="right" if col in ("#", "grp", "nodes", "rep", "thr", "cli", "s") else "left"
        )
    for t in plan.trials:
        r = t.topology.resources
        # GR for a Group Replication cluster (Galera's stays as it was: "3n")
        gr = " GR" if t.topology.engine.kind == "group_replication" else ""
        w = t.topology.web
        web = f" {w.nodes}w" + (" colocated" if w.layout == "colocated" else "") if w.nodes else ""
        cl = f"{t.topology.cluster.nodes}n{gr}{web}" + "".join(
            f" {k}={v}" for k, v in (("cpu", r.cpu_quota), ("cpuset", r.cpuset), ("bw", r.bandwidth)) if v
        )
        mark = " (done)" if t.key in done else ""
        table.add_row(str(t.index), str(t.group), cl, str(t.nodes), t.part, t.point_label + mark,
                      str(t.rep), t.test, str(t.threads), str(t.clients), t.rate_text(),
                      ("≤" if t.warmup_until == "steady" else "") + f"{t.warmup}+{t.duration}")  # fmt: skip
    return table


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
    done = done_keys(plan, results)
    if as_json:
        print_json(plan_record(plan, done))
        return
    console.out.print(_trials_table(plan, done))
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
    phases = ", ".join(f"{k} {hms(v)}" for k, v in sorted(est.phases.items(), key=lambda kv: -kv[1]))
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
        f"estimated wall time {hms(est.total)} ({phases}); not measuring {est.not_measuring_share:.0%}"
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
    done = len(done_keys(plan, results))
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
    phases = ", ".join(f"{k} {hms(v)}" for k, v in sorted(est.phases.items(), key=lambda kv: -kv[1]))
    console.out.print(f"{done} trial(s) already done; estimated wall time for the rest of the budget "
                      f"{hms(est.total)} ({phases})")  # fmt: skip


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


def _repetitions_text(settings: Any) -> str:
    if settings.auto:
        return f"{settings.min_repetitions}-{settings.max_repetitions} (auto)"
    return str(settings.repetitions)
