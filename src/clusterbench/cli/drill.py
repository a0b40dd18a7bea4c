"""`clusterbench fault` and `clusterbench scenario`: fail the cluster on purpose under load, measure
the outage, check that nothing acknowledged was lost. Exit 0 all PASS, 1 some FAIL, 3 UNKNOWN, 2 bad
input or an error, 130 interrupted (docs/faults.md#exit-codes)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from clusterbench.checkers.verdict import Result, Verdict, combine, exit_code
from clusterbench.cli import console, guard
from clusterbench.cli.common import (
    CustomersOpt,
    ItemsOpt,
    JunitOpt,
    MetricsPortOpt,
    MixOpt,
    NotesOpt,
    PrepareOpt,
    ResultsOpt,
    TagOpt,
    TelemetryOpt,
    WarehousesOpt,
    check_tags,
    command_line,
    global_name,
    junit_report,
    open_store,
    parse_mix_option,
    results_path,
    serve_metrics,
    sysbench_runner,
)
from clusterbench.cli.live import LiveView
from clusterbench.cluster import Cluster
from clusterbench.errors import InputError
from clusterbench.faults import leftovers
from clusterbench.faults.spec import KINDS
from clusterbench.paths import home_dir, known_clusters
from clusterbench.runner.bench import BenchInterrupted
from clusterbench.scenario.anomalies import AnomalyRow, anomaly_rows
from clusterbench.scenario.drill import (
    Drill,
    DrillOutcome,
    check_leftovers,
    pick_cluster,
    precheck,
    soak_spec,
)
from clusterbench.scenario.spec import ScenarioSpec, fault_scenario, load_scenario
from clusterbench.spec.topology import load_topology
from clusterbench.trial.spec import fault_labels
from clusterbench.workloads.sysbench import TPCC_CUSTOMERS, TPCC_ITEMS

ScenarioFileArg = Annotated[Path, typer.Argument(help="Scenario TOML file (see examples/scenarios/).")]
ScenarioClusterOpt = Annotated[
    str | None, typer.Option("--name", "-n", help="Cluster to run on (if the file names no topology).")
]
KeepUpOpt = Annotated[bool, typer.Option(help="Keep a cluster this command brought up.")]


class DrillView(LiveView):
    def fault_event(self, t: float, detail: dict[str, Any]) -> None:
        phase = detail.get("phase")
        extra = {k: v for k, v in detail.items() if k not in ("fault", "index", "phase")}
        text = f"[{t:6.1f} s] fault {detail.get('fault')}: {phase}"
        if extra:
            text += " " + "; ".join(f"{k}={v}" for k, v in extra.items())
        self.phase(text)

    def verdict(self, v: Verdict) -> None:
        pass


@contextmanager
def _drill_cluster(
    spec: ScenarioSpec, topo_path: Path | None, name: str | None, keep_up: bool
) -> Iterator[Cluster]:
    """The cluster to run on; one this command brought up goes down at the end (unless keep_up)."""
    cluster, brought_up = _cluster_for(spec, topo_path, name)
    try:
        yield cluster
    finally:
        if brought_up and not keep_up:
            cluster.down(report=console.step)


def _cluster_for(spec: ScenarioSpec, topo_path: Path | None, name: str | None) -> tuple[Cluster, bool]:
    """The cluster to run on, and whether we brought it up (and so take it down)."""
    precheck(spec, topo_path)
    if topo_path is not None:
        topo = load_topology(topo_path)
        guard.claim(topo.name)
        if topo.name in known_clusters(home_dir()):
            return Cluster.load(topo.name), False
        console.out.print(f"bringing up cluster [bold]{topo.name}[/] from {topo_path}")
        c = Cluster(topo)
        c.up(report=console.step)
        return c, True
    picked = pick_cluster(name or global_name())
    cluster = Cluster.load(picked)
    guard.claim(picked)
    return cluster, False


def _print_outcome(out: DrillOutcome) -> None:
    if out.heal_details:
        t = Table(title="faults", title_justify="left")
        for col in ("fault", "start s", "end s", "what happened"):
            t.add_column(col)
        windows = {w[0]: w for w in out.windows}
        for d in out.heal_details:
            w = windows.get(d["fault"])
            what = "; ".join(_what(part) for part in (d["apply"], d["heal"]) if part) + (
                f" [red]{console.escape(str(d['error']))}[/]" if d.get("error") else ""
            )
            t.add_row(d["fault"], f"{w[1]:.1f}" if w else "-", f"{w[2]:.1f}" if w else "-", what)
        console.out.print(t)
    if out.availability:
        t = Table(
            title="availability (per entry point, fresh connection + write every 100 ms)",
            title_justify="left",
        )
        for col in (
            "fault",
            "path",
            "first error after s",
            "unavailable s",
            "errors",
            "by code",
            "max latency s",
            "tps back to 95 % after s",
        ):
            t.add_column(col)
        for f in out.availability:
            for p in f["paths"]:
                t.add_row(
                    f["fault"]["name"],
                    p["process"],
                    _s(p["first_error_after"]),
                    _s(p["unavailable"]),
                    f"{p['errors']}/{p['ops']}",
                    ", ".join(f"{k}:{v}" for k, v in p["errors_by_code"].items()) or "-",
                    _s(p["max_latency"]),
                    _s(f.get("tps_recovered_after")),
                )
        console.out.print(t)
    if out.failover:
        t = Table(
            title="failover (from the monitor's samples every 0.5 s and the prober's writes)",
            title_justify="left",
        )
        for col in ("fault", "victim was primary", "suspected after s", "view without it after s",
                    "new primary after s", "writes ok again after s"):  # fmt: skip
            t.add_column(col)
        for f in out.failover:
            elected = _s(f["new_primary_after"]) + (f" ({f['primary']})" if f.get("primary") else "")
            t.add_row(
                f["fault"],
                "yes" if f["victim_was_primary"] else "no",
                _s(f["suspected_after"]),
                _s(f["view_shrunk_after"]),
                elected if f["victim_was_primary"] else "-",
                _s(f["writes_ok_after"]) + (f" ({f['writes_path']})" if f.get("writes_path") else ""),
            )
        console.out.print(t)
    t = Table(title="verdicts", title_justify="left")
    for col in ("checker", "result", "summary"):
        t.add_column(col)
    colors = {Result.PASS: "green", Result.FAIL: "red", Result.UNKNOWN: "yellow"}
    for v in out.verdicts:
        res = f"[{colors[v.result]}]{v.result}[/]" + (
            " (documented limitation)" if v.documented_limitation else ""
        )
        t.add_row(v.checker, res, console.escape(v.summary))
    console.out.print(t)
    if _has_anomaly_verdicts(out):
        print_anomaly_table(anomaly_rows([[v.to_json() for v in out.verdicts]]), "anomalies in this trial")
    console.out.print(
        f"overall: [{colors[out.result]}]{out.result}[/]   run {out.run_id} "
        f"(`clusterbench report {out.run_id}` for plots)"
    )


def _what(detail: dict[str, Any]) -> str:
    """A fault's apply or heal detail for the faults table: its summary line when it has one."""
    if "summary" in detail:
        return str(detail["summary"])
    return "; ".join(f"{k}: {v}" for k, v in detail.items())


def _has_anomaly_verdicts(out: DrillOutcome) -> bool:
    return any(v.checker.split(":")[0] in ("counter", "stale-read", "list-append") for v in out.verdicts)


def print_anomaly_table(rows: list[AnomalyRow], title: str) -> None:
    """anomaly class | mode | trials | trials where seen | rate | verdict | example."""
    t = Table(title=title, title_justify="left")
    for col in ("anomaly class", "mode", "trials", "trials where seen", "rate", "verdict", "example"):
        t.add_column(col, overflow="fold")
    for r in rows:
        status = {"documented limitation": "[yellow]documented limitation[/]",
                  "promise broken": "[red]promise broken[/]"}.get(r.status, "")  # fmt: skip
        seen = f"[bold]{r.seen}[/]" if r.seen else "0"
        t.add_row(r.anomaly, r.mode, str(r.trials), seen, r.rate, status, console.escape(r.example[:160]))
    console.out.print(t)


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _run_one(
    cluster: Cluster,
    spec: ScenarioSpec,
    results: Path | None,
    tags: list[str] | None,
    notes: str | None,
    prefix: str = "",
    telemetry: bool = True,
) -> DrillOutcome:
    """One drill on a cluster that is up: say what it does, run it with the live view. Ctrl-C goes
    through (the pipeline has healed and stopped everything by then)."""
    view = DrillView(clients=1, per_sample_lines=False)
    drill = Drill(cluster, spec, results_path(results), sysbench_runner(cluster.topology.name), listener=view,
                  tags=tags or [], notes=notes or "", telemetry=telemetry)  # fmt: skip
    faults = drill.faults()
    load = spec.load
    console.out.print(
        f"{prefix}scenario [bold]{spec.name}[/] on cluster {cluster.topology.name}: "
        f"{load.how()}"
        + ("" if load.prepare else " on the tables already there (--no-prepare)")
        + "; " + (fault_labels(faults) or "no faults")
        + (f" (seed {spec.seed})" if spec.random_faults is not None else "")
    )  # fmt: skip
    with view:  # fault events and the per-second line show live
        return drill.run(command_line(), faults)


def _execute(
    spec: ScenarioSpec,
    topo_path: Path | None,
    name: str | None,
    results: Path | None,
    keep_up: bool,
    tags: list[str] | None = None,
    notes: str | None = None,
    telemetry: bool = True,
) -> int:
    store = open_store(results)  # fails early on a bad path
    store.close()
    with _drill_cluster(spec, topo_path, name, keep_up) as cluster:
        check_leftovers(cluster)
        out = _run_one(cluster, spec, results, tags, notes, telemetry=telemetry)
        _print_outcome(out)
        return exit_code(out.result)


DURATION_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(s|m|h)?$")


def parse_duration(text: str, option: str = "--for") -> float:
    """'90', '90s', '30m', '2h' → seconds; anything else is one InputError line."""
    m = DURATION_RE.match(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise InputError(f"{option} {text!r}: give a duration like 600, 600s, 30m or 2h")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2) or "s"]


def _soak_trials(
    cluster: Cluster,
    spec: ScenarioSpec,
    results: Path | None,
    trials: int | None,
    seconds: float | None,
    tags: list[str],
    notes: str | None,
) -> tuple[list[list[dict[str, Any]]], bool]:
    """The soak's trials on the cluster, then the anomaly table so far: each trial's verdicts, and
    whether Ctrl-C stopped them."""
    per_trial: list[list[dict[str, Any]]] = []
    runs: list[tuple[int, str]] = []
    interrupted = False
    deadline = None if seconds is None else time.monotonic() + seconds
    try:
        check_leftovers(cluster)
        i = 0
        while (trials is not None and i < trials) or (deadline is not None and time.monotonic() < deadline):
            s = soak_spec(spec, i)
            total = str(trials) if trials is not None else "?"
            out = _run_one(cluster, s, results, [*tags, "soak"], notes, prefix=f"[soak {i + 1}/{total}] ")
            per_trial.append([v.to_json() for v in out.verdicts])
            runs.append((out.run_id, str(out.result)))
            seen = [r.anomaly for r in anomaly_rows([per_trial[-1]]) if r.seen]
            console.step(
                f"trial {i + 1}: run {out.run_id}, seed {s.seed}, {out.result}"
                + (f"; seen: {', '.join(dict.fromkeys(seen))}" if seen else "; no anomaly seen")
            )
            i += 1
    except (KeyboardInterrupt, BenchInterrupted):
        interrupted = True
        console.step(
            f"trial {len(per_trial) + 1} interrupted: its faults are healed, its load stopped, and what it "
            "recorded stays in the store (run marked interrupted)"
        )
    finally:
        if per_trial:
            title = f"soak: {len(per_trial)} trial(s) of {spec.name}"
            print_anomaly_table(anomaly_rows(per_trial), title)
            console.step(
                "runs: "
                + ", ".join(f"{r} ({res})" for r, res in runs)
                + " (histories in the store: `clusterbench results export RUN --format edn`)"
            )
    return per_trial, interrupted


def _soak(
    spec: ScenarioSpec,
    topo_path: Path | None,
    name: str | None,
    results: Path | None,
    keep_up: bool,
    trials: int | None,
    seconds: float | None,
    tags: list[str],
    notes: str | None,
) -> int:
    store = open_store(results)
    store.close()
    precheck(soak_spec(spec, 0), topo_path)  # the first trial's schedule, before anything starts
    with _drill_cluster(spec, topo_path, name, keep_up) as cluster:
        per_trial, interrupted = _soak_trials(cluster, spec, results, trials, seconds, tags, notes)
    if interrupted:
        return 130
    results_all = [
        Verdict(v["checker"], Result(v["result"]), v["summary"], {}, bool(v["documented_limitation"]))
        for t in per_trial
        for v in t
    ]
    # no trial got as far as a verdict: it could not decide
    return exit_code(combine(results_all)) if results_all else exit_code(Result.UNKNOWN)


def scenario(
    file: ScenarioFileArg,
    name: ScenarioClusterOpt = None,
    results: ResultsOpt = None,
    keep_up: KeepUpOpt = False,
    tag: TagOpt = None,
    notes: NotesOpt = None,
    telemetry: TelemetryOpt = True,
    metrics_port: MetricsPortOpt = None,
    junit: JunitOpt = None,
) -> None:
    """Run a scenario: load + verification workloads + scheduled faults, then heal and check.
    Exit 0 all PASS, 1 some FAIL, 3 UNKNOWN, 2 bad input or an error, 130 interrupted."""
    tags = check_tags(tag)
    spec, topo = load_scenario(file)
    with serve_metrics(metrics_port, results), junit_report(junit, results):
        rc = _execute(spec, topo, name, results, keep_up, tags, notes, telemetry)
    raise typer.Exit(rc)

def soak(
    file: ScenarioFileArg,
    trials: Annotated[
        int | None, typer.Option("--trials", help="Run the scenario this many times.", min=1)
    ] = None,
    soak_for: Annotated[
        str | None, typer.Option("--for", help="Or run it again and again for this long: 600, 30m, 2h.")
    ] = None,
    name: ScenarioClusterOpt = None,
    results: ResultsOpt = None,
    keep_up: KeepUpOpt = False,
    tag: TagOpt = None,
    notes: NotesOpt = None,
    metrics_port: MetricsPortOpt = None,
    junit: JunitOpt = None,
) -> None:
    """Repeat a scenario (a drill) N times or for a duration, each trial a stored run with its
    histories and seed + i, then a table per anomaly class: trials, trials where seen, example.
    Ctrl-C stops the current trial (faults healed, load stopped), keeps what was stored and
    prints the table so far. Exit 0 all PASS, 1 a promise broken, 3 UNKNOWN, 2 bad input or an
    error, 130 interrupted."""
    tags = check_tags(tag)
    if (trials is None) == (soak_for is None):
        raise InputError(
            "soak: give --trials N or --for DURATION (e.g. --trials 10, --for 30m), not both"
        )
    seconds = parse_duration(soak_for) if soak_for is not None else None
    spec, topo = load_scenario(file)
    with serve_metrics(metrics_port, results), junit_report(junit, results):
        rc = _soak(spec, topo, name, results, keep_up, trials, seconds, tags, notes)
    raise typer.Exit(rc)


def heal(
    name: Annotated[str | None, typer.Option("--name", "-n", help="Cluster name.")] = None,
) -> None:
    """Find and heal faults left in place by a run that was killed (link down, shaping, iptables
    partition, paused node, CPU quota, desync)."""
    cluster = guard.load_claimed(name)
    left = leftovers.find(cluster)
    if not left:
        console.out.print(f"cluster [bold]{cluster.topology.name}[/]: no fault left in place")
        return
    for line in leftovers.heal(cluster, left):
        console.step(line)

TargetOpt = Annotated[
    str,
    typer.Option(
        help="node:N, random, one, majority, minority, all, primary (Group Replication's single primary), "
        "balancer, lb:N; on the web tier web:N (kill-, stop-, pause-node), front or fe:N (kill-balancer)."
    ),
]
DelayOpt = Annotated[
    str | None, typer.Option(help="delay-link: added round trip, e.g. 50ms (netem or the delay line).")
]
LossOpt = Annotated[
    float | None, typer.Option(help="loss-link: percent of packets lost each way, e.g. 5.")
]
WindowOpt = Annotated[
    float | None,
    typer.Option(help="coordinated-crash: seconds within which every target is killed (0: at once)."),
]
MaxOutageOpt = Annotated[
    float | None,
    typer.Option("--max-outage", metavar="SECONDS", min=0.001,
                 help="Outage budget: availability FAILs when writes through the balancer stop longer "
                 "than this, naming the window (default: no budget)."),
]  # fmt: skip

LoadRateOpt = Annotated[
    int,
    typer.Option(min=0, help="The load's rate: requests per second of an HTTP test (required there), else a "
                 "tps cap (0 = none)."),  # fmt: skip
]
RateOpt = Annotated[str | None, typer.Option(help="throttle-link: e.g. 1mbit; throttle-disk: e.g. 1MB/s.")]
IopsOpt = Annotated[int | None, typer.Option(help="throttle-disk: operations/s, reads and writes each.")]


def fault(
    kind: Annotated[str, typer.Argument(help=f"One of: {', '.join(KINDS)}.")],
    node: Annotated[
        int | None, typer.Option(help="Target node (same as --target node:N).", min=1, max=9)
    ] = None,
    target: TargetOpt = "random",
    at: Annotated[float, typer.Option(help="Seconds after the load starts.")] = 10.0,
    fault_for: Annotated[float | None, typer.Option("--for", help="Seconds until it is healed.")] = 10.0,
    rate: RateOpt = None,
    iops: IopsOpt = None,
    offset: Annotated[str | None, typer.Option(help="clock-skew: the jump, e.g. +30s or -2m.")] = None,
    drift: Annotated[str | None, typer.Option(help="clock-skew: gained per second, e.g. +10ms/s.")] = None,
    cpu_quota: Annotated[float | None, typer.Option(help="throttle-cpu: CPUs, e.g. 0.1.")] = None,
    groups: Annotated[str | None, typer.Option(help="partition: groups like '1|2,3'.")] = None,
    delay: DelayOpt = None,
    jitter: Annotated[str | None, typer.Option(help="delay-link: jitter, e.g. 5ms.")] = None,
    loss: LossOpt = None,
    window: WindowOpt = None,
    workload: Annotated[
        str,
        typer.Option(
            "--workload", "-w", "--tests",
            help="sysbench test, or tpcc (TPC-C-like), for the load (alias: --tests).",
        ),  # fmt: skip
    ] = "oltp_read_write",
    threads: Annotated[int, typer.Option(help="sysbench threads.", min=1)] = 4,
    duration: Annotated[
        int, typer.Option("--duration", "--time", "-t", help="Seconds of load (alias: --time).", min=1)
    ] = 40,
    warehouses: WarehousesOpt = 1,
    customers: CustomersOpt = TPCC_CUSTOMERS,
    items: ItemsOpt = TPCC_ITEMS,
    mix: MixOpt = None,
    load_rate: LoadRateOpt = 0,
    load_target: Annotated[
        str, typer.Option(help="Where the load goes: balancer, node:N, all-nodes.")
    ] = "balancer",
    ledger_clients: Annotated[int, typer.Option(help="Ledger clients (0: off).", min=0)] = 2,
    bank: Annotated[bool, typer.Option(help="Also run the bank workload.")] = False,
    max_outage: MaxOutageOpt = None,
    prepare: PrepareOpt = True,
    name: Annotated[str | None, typer.Option("--name", "-n", help="Cluster to run on.")] = None,
    results: ResultsOpt = None,
    tag: TagOpt = None,
    notes: NotesOpt = None,
    telemetry: TelemetryOpt = True,
    metrics_port: MetricsPortOpt = None,
    junit: JunitOpt = None,
) -> None:
    """One fault under load, e.g. `clusterbench fault kill-node --node 2 --at 20 --for 15 --time 60`.
    With -w tpcc the twelve TPC-C consistency conditions are a verdict (tpcc-consistency), checked
    once the fault is healed; --no-prepare reuses the tables an earlier run loaded."""
    tags = check_tags(tag)
    weights = parse_mix_option(mix, (workload,))
    # tpcc's scale and mix, as given (a value left at its default is not a setting of the load)
    given = (("warehouses", warehouses, 1), ("customers", customers, TPCC_CUSTOMERS),
             ("items", items, TPCC_ITEMS))  # fmt: skip
    scale: dict[str, Any] = {k: v for k, v, default in given if v != default}
    if weights is not None:
        scale["mix"] = weights
    spec = fault_scenario(
        kind, node=node, target=target, at=at, fault_for=fault_for, groups=groups,
        options={"rate": rate, "cpu_quota": cpu_quota, "delay": delay, "jitter": jitter, "loss": loss,
                 "window": window, "iops": iops, "offset": offset, "drift": drift},
        load={"workload": workload, "threads": threads, "duration": duration, "target": load_target,
              "prepare": prepare, "rate": load_rate},
        scale=scale, ledger_clients=ledger_clients, bank=bank, max_outage=max_outage,
    )  # fmt: skip
    with serve_metrics(metrics_port, results), junit_report(junit, results):
        rc = _execute(spec, None, name, results, False, tags, notes, telemetry)
    raise typer.Exit(rc)
