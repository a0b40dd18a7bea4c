"""`clusterbench fault` and `clusterbench scenario`: fail the cluster on purpose under load, measure
the outage, check that nothing acknowledged was lost. Exit 0 all PASS, 1 some FAIL, 2 UNKNOWN/error."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from clusterbench.checkers.verdict import Result, Verdict, exit_code
from clusterbench.cli import console, guard
from clusterbench.cli.common import (
    NotesOpt,
    TagOpt,
    check_tags,
    command_line,
    global_name,
    label_run,
    open_store,
    results_path,
    store_at,
    sysbench_runner,
)
from clusterbench.cli.live import LiveView
from clusterbench.cluster import Cluster, home_dir, known_clusters
from clusterbench.errors import ClusterStateError, InputError
from clusterbench.faults import leftovers
from clusterbench.faults.spec import KINDS, FaultSpec
from clusterbench.scenario.engine import ScenarioEngine, ScenarioListener, ScenarioOutcome
from clusterbench.scenario.spec import LoadSpec, ScenarioSpec, VerifySpec, load_scenario
from clusterbench.scenario.verification import companions, run_checkers
from clusterbench.spec.topology import load_topology


class DrillView(LiveView, ScenarioListener):
    def fault_event(self, t: float, detail: dict[str, Any]) -> None:
        phase = detail.get("phase")
        extra = {k: v for k, v in detail.items() if k not in ("fault", "index", "phase")}
        text = f"[{t:6.1f} s] fault {detail.get('fault')}: {phase}"
        if extra:
            text += " " + "; ".join(f"{k}={v}" for k, v in extra.items())
        self.phase(text)

    def verdict(self, v: Verdict) -> None:
        pass


def _cluster_for(spec: ScenarioSpec, topo_path: Path | None, name: str | None) -> tuple[Cluster, bool]:
    """The cluster to run on, and whether we brought it up (and so take it down)."""
    if topo_path is not None:
        topo = load_topology(topo_path)
        guard.claim(topo.name)
        if topo.name in known_clusters(home_dir()):
            return Cluster.load(topo.name), False
        console.out.print(f"bringing up cluster [bold]{topo.name}[/] from {topo_path}")
        c = Cluster(topo)
        c.up(report=console.step)
        return c, True
    name = name or global_name()
    if name is None:
        known = known_clusters(home_dir())
        if len(known) != 1:
            raise ClusterStateError(
                "no cluster is up; start one with `clusterbench up`"
                if not known
                else f"several clusters are up ({', '.join(known)}); choose one with --name"
            )
        name = known[0]
    cluster = Cluster.load(name)
    guard.claim(name)
    return cluster, False


def _print_outcome(out: ScenarioOutcome) -> None:
    if out.heal_details:
        t = Table(title="faults", title_justify="left")
        for col in ("fault", "start s", "end s", "what happened"):
            t.add_column(col)
        windows = {w[0]: w for w in out.windows}
        for d in out.heal_details:
            w = windows.get(d["fault"])
            what = "; ".join(f"{k}: {v}" for part in (d["apply"], d["heal"]) for k, v in part.items()) + (
                f" [red]{d['error']}[/]" if d.get("error") else ""
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
    for note in out.notes:
        console.step(note)
    console.out.print(
        f"overall: [{colors[out.result]}]{out.result}[/]   run {out.run_id} "
        f"(`clusterbench report {out.run_id}` for plots)"
    )


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _execute(
    spec: ScenarioSpec,
    topo_path: Path | None,
    name: str | None,
    results: Path | None,
    keep_up: bool,
    tags: list[str] | None = None,
    notes: str | None = None,
) -> int:
    store = open_store(results)  # fails early on a bad path
    store.close()
    cluster, brought_up = _cluster_for(spec, topo_path, name)
    try:
        left = leftovers.find(cluster)
        if left:
            raise ClusterStateError(
                f"faults left by an earlier run on cluster '{cluster.topology.name}': "
                + "; ".join(lo.describe() for lo in left)
                + f"; heal them with `clusterbench heal -n {cluster.topology.name}`"
            )
        faults = spec.planned(
            cluster.topology.cluster.nodes,
            1 if cluster.topology.balancer.kind == "haproxy" else 0,
            "scenario",
        )
        console.out.print(
            f"scenario [bold]{spec.name}[/] on cluster {cluster.topology.name}: "
            f"{spec.load.workload} x{spec.load.threads} for {spec.load.duration} s via {spec.load.target}; "
            + (
                "; ".join(
                    f"{f.label()} at {f.at:g} s" + (f" for {f.until - f.at:g} s" if f.until else "")
                    for f in faults
                )
                or "no faults"
            )
        )
        view = DrillView(clients=1, per_sample_lines=False)
        with view:
            # The view is the engine's listener: fault events and the per-second line show live.
            engine = ScenarioEngine(
                cluster,
                spec,
                faults,
                results_path(results),
                sysbench_runner(cluster.topology.name),
                companions=companions,
                listener=view,
            )
            out = engine.run(command_line(), checkers=run_checkers)
        if tags or notes is not None:
            with store_at(results) as st:
                label_run(st, out.run_id, tags or [], notes)
        _print_outcome(out)
        return exit_code(out.result)
    finally:
        if brought_up and not keep_up:
            cluster.down(report=console.step)


def register(app: typer.Typer) -> None:
    @app.command()
    def scenario(
        file: Annotated[Path, typer.Argument(help="Scenario TOML file (see examples/scenarios/).")],
        name: Annotated[
            str | None,
            typer.Option("--name", "-n", help="Cluster to run on (if the file names no topology)."),
        ] = None,
        results: Annotated[
            Path | None, typer.Option(help="Results store (default <home>/results.db).")
        ] = None,
        keep_up: Annotated[bool, typer.Option(help="Keep a cluster this command brought up.")] = False,
        tag: TagOpt = None,
        notes: NotesOpt = None,
    ) -> None:
        """Run a scenario: load + verification workloads + scheduled faults, then heal and check.
        Exit 0 all PASS, 1 some FAIL, 2 UNKNOWN or error."""
        tags = check_tags(tag)
        spec, topo = load_scenario(file)
        raise typer.Exit(_execute(spec, topo, name, results, keep_up, tags, notes))

    @app.command()
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

    @app.command()
    def fault(
        kind: Annotated[str, typer.Argument(help=f"One of: {', '.join(KINDS)}.")],
        node: Annotated[
            int | None, typer.Option(help="Target node (same as --target node:N).", min=1, max=9)
        ] = None,
        target: Annotated[
            str, typer.Option(help="node:N, random, one, majority, minority, all, balancer.")
        ] = "random",
        at: Annotated[float, typer.Option(help="Seconds after the load starts.")] = 10.0,
        fault_for: Annotated[float | None, typer.Option("--for", help="Seconds until it is healed.")] = 10.0,
        rate: Annotated[str | None, typer.Option(help="throttle-link: rate, e.g. 1mbit.")] = None,
        cpu_quota: Annotated[float | None, typer.Option(help="throttle-cpu: CPUs, e.g. 0.1.")] = None,
        groups: Annotated[str | None, typer.Option(help="partition: groups like '1|2,3'.")] = None,
        delay: Annotated[
            str | None, typer.Option(help="delay-link (netem, where the kernel has it): e.g. 50ms.")
        ] = None,
        jitter: Annotated[str | None, typer.Option(help="delay-link: jitter, e.g. 5ms.")] = None,
        loss: Annotated[
            float | None, typer.Option(help="loss-link (netem, where the kernel has it): percent, e.g. 5.")
        ] = None,
        workload: Annotated[
            str, typer.Option("--workload", "-w", help="sysbench test for the load.")
        ] = "oltp_read_write",
        threads: Annotated[int, typer.Option(help="sysbench threads.", min=1)] = 4,
        duration: Annotated[
            int, typer.Option("--duration", "--time", help="Seconds of load (alias: --time).", min=1)
        ] = 40,
        load_target: Annotated[
            str, typer.Option(help="Where the load goes: balancer, node:N, all-nodes.")
        ] = "balancer",
        ledger_clients: Annotated[int, typer.Option(help="Ledger clients (0: off).", min=0)] = 2,
        bank: Annotated[bool, typer.Option(help="Also run the bank workload.")] = False,
        name: Annotated[str | None, typer.Option("--name", "-n", help="Cluster to run on.")] = None,
        results: Annotated[
            Path | None, typer.Option(help="Results store (default <home>/results.db).")
        ] = None,
        tag: TagOpt = None,
        notes: NotesOpt = None,
    ) -> None:
        """One fault under load, e.g. `clusterbench fault kill-node --node 2 --at 20 --for 15 --time 60`."""
        tags = check_tags(tag)
        if kind not in KINDS:
            raise InputError(f"unknown fault '{kind}'; known: {', '.join(KINDS)}")
        fields: dict[str, Any] = {"kind": kind, "target": f"node:{node}" if node else target, "at": at}
        if kind == "kill-balancer" and node is None and target == "random":
            fields["target"] = "balancer"
        if kind != "rolling-restart":
            fields["for"] = fault_for
        if rate:
            fields["rate"] = rate
        if cpu_quota:
            fields["cpu_quota"] = cpu_quota
        for key, value in (("delay", delay), ("jitter", jitter), ("loss", loss)):
            if value is not None:
                fields[key] = value
        if groups:
            try:
                fields["groups"] = [[int(x) for x in g.split(",")] for g in groups.split("|")]
            except ValueError:
                raise InputError(f"--groups '{groups}' must look like '1|2,3'") from None
        try:
            spec = ScenarioSpec(
                name=f"fault {kind}",
                load=LoadSpec(workload=workload, threads=threads, duration=duration, target=load_target),
                verify=VerifySpec(ledger_clients=ledger_clients, bank=bank),
                fault=[FaultSpec.model_validate(fields)],
            )
        except Exception as exc:  # pydantic ValidationError → one line per problem
            from pydantic import ValidationError

            from clusterbench.spec.topology import validation_messages

            if isinstance(exc, ValidationError):
                raise InputError("\n".join(validation_messages(exc, ScenarioSpec, "fault"))) from None
            raise
        raise typer.Exit(_execute(spec, None, name, results, False, tags, notes))
