"""Commands that apply load and read results: run, suite, report, results. Thin: parse, call, print.

The orchestration (prepare groups, trials, provenance) lives in clusterbench.runner; this module
builds a plan from the flags, shows samples live and prints tables from the store.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from clusterbench.analysis import summary_rows, table_cells, write_report
from clusterbench.analysis.report import (
    CLIENT_HEADER,
    SATURATION_WARNING,
    client_notes,
    client_rows,
    multi_client,
    saturation_lines,
    table_align,
)
from clusterbench.cli import console
from clusterbench.cli.common import (
    NameOpt,
    ResultsOpt,
    command_line,
    load_cluster,
    results_path,
    store_at,
    store_path_of,
    sysbench_runner,
    typer_app,
)
from clusterbench.cli.live import LiveView
from clusterbench.cluster import home_dir
from clusterbench.errors import InputError
from clusterbench.runner import (
    BenchInterrupted,
    BenchOutcome,
    BenchPlan,
    BenchRunner,
    ClusterProbe,
    EndpointProbe,
    ServerProbe,
    TrialsFailed,
    make_options,
    parse_tests,
    resolve_run,
)
from clusterbench.runner.bench import choose_client_hosts, default_clients
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.store import Store
from clusterbench.workloads import KNOWN_TESTS
from clusterbench.workloads.placement import ClientHost

# ---- options shared by run and suite ------------------------------------------------------------

TargetOpt = Annotated[
    str | None,
    typer.Option(
        help="Where the load goes: balancer, node:N, all-nodes (sysbench's own round-robin) or "
        "each-node (client i loads node i mod N) (default: balancer)."
    ),
]
TablesOpt = Annotated[int, typer.Option(min=1, help="Number of tables (sbtest1..N).")]
TableSizeOpt = Annotated[int, typer.Option(min=1, help="Rows per table.")]
WarmupOpt = Annotated[int, typer.Option(min=0, help="Seconds of load before --duration, not in the results.")]
RateOpt = Annotated[int, typer.Option(min=0, help="Target transactions per second (0 = unlimited).")]
RandTypeOpt = Annotated[str, typer.Option(help="uniform, gaussian, special or pareto.")]
IntervalOpt = Annotated[int, typer.Option(min=1, help="Seconds per sample.")]
ClientsOpt = Annotated[
    int | None,
    typer.Option(min=1, help="sysbench processes running at once (default: one per client host, else 1)."),
]
ClientHostsOpt = Annotated[
    str,
    typer.Option(
        help="Where the clients run, round-robin: auto (the cluster's client hosts if it has any, "
        "else here), local (here) or N (its first N client hosts)."
    ),
]
SeparateOpt = Annotated[bool, typer.Option(help="Give each client process its own schema (sbtest1..N).")]
TlsOpt = Annotated[
    bool | None, typer.Option("--tls/--no-tls", help="TLS on or off (default: the endpoint's).")
]
CompressionOpt = Annotated[bool, typer.Option(help="Use the zlib protocol compression.")]
HostOpt = Annotated[
    str | None, typer.Option(help="Any MySQL server or proxy instead of a clusterbench cluster.")
]
PortOpt = Annotated[int, typer.Option(min=1, max=65535, help="Port for --host.")]
UserOpt = Annotated[str, typer.Option(help="User for --host.")]
PasswordEnvOpt = Annotated[
    str | None, typer.Option(help="Name of the environment variable that holds the password for --host.")
]
DatabaseOpt = Annotated[str, typer.Option(help="Schema the tables go to.")]
GaleraOpt = Annotated[bool, typer.Option(help="--host is a Galera node or balancer (sets --auto_inc=off).")]
PrepareOpt = Annotated[bool, typer.Option(help="Create fresh tables first (--no-prepare reuses them).")]


def register(app: typer.Typer) -> None:
    """Add run, suite, report and results to the main app."""
    app.command("run")(run)
    app.command("suite")(suite)
    app.command("report")(report)
    results_app = typer_app(help="List, show and export stored runs.")
    results_app.command("list")(results_list)
    results_app.command("show")(results_show)
    results_app.command("export")(results_export)
    app.add_typer(results_app, name="results")


# ---- endpoint and plan ---------------------------------------------------------------------------


@dataclass
class Target:
    endpoint: Endpoint
    probe: ServerProbe
    topology: dict[str, Any] | None
    label: str
    client_hosts: tuple[ClientHost, ...] = ()
    client_endpoints: tuple[Endpoint, ...] = ()


def _resolve_target(
    *,
    name: str | None,
    target: str | None,
    host: str | None,
    port: int,
    user: str,
    password_env: str | None,
    database: str,
    galera: bool,
    client_hosts: str = "auto",
) -> Target:
    if host is not None:
        choose_client_hosts(client_hosts, [], external=True)
        if target is not None or name is not None:
            raise InputError("--host runs against any server: leave out --target and --name")
        password = ""
        if password_env is not None:
            if password_env not in os.environ:
                raise InputError(f"environment variable {password_env} (from --password-env) is not set")
            password = os.environ[password_env]
        ep = Endpoint(
            name=f"{host}:{port}",
            addresses=(Address(host=host, port=port),),
            user=user,
            password=password,
            database=database,
            tls_dir=None,
            galera=galera,
        )
        return Target(ep, EndpointProbe(ep), None, f"{user}@{host}:{port}")
    cluster = load_cluster(name)
    tgt = target or "balancer"
    hosts = tuple(choose_client_hosts(client_hosts, cluster.client_hosts()))
    per_client: tuple[Endpoint, ...] = ()
    if tgt == EACH_NODE:
        # each client on one node: prepare and the schema checks go to node 1
        per_client = tuple(cluster.endpoint(f"node:{i}", database=database)
                           for i in cluster.topology.node_indexes())  # fmt: skip
        ep = per_client[0]
    else:
        ep = cluster.endpoint(tgt, database=database)
    addrs = ",".join(f"{a.host}:{a.port}" for e in (per_client or (ep,)) for a in e.addresses)
    return Target(ep, ClusterProbe(cluster), cluster.topology.model_dump(mode="json"),
                  f"cluster {cluster.topology.name} {tgt} ({addrs})", hosts, per_client)  # fmt: skip


EACH_NODE = "each-node"


# ---- printing results ---------------------------------------------------------------------------


def summary_table(store: Store, run_id: int, title: str) -> Table:
    """sysbench's layout: per test tps, qps read/write/other, latency min/avg/max/p95, errors, reconnects."""
    header, cells = table_cells(summary_rows(store, run_id))
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False
    )
    for h, align in zip(header, table_align(), strict=True):
        # two-line headers (the unit under the name) keep the table within 120 columns
        title_text = h.replace(" ", "\n", 1).replace("/s", "\n/s") if h != "trial" else h
        table.add_column(title_text, justify="left" if align == "l" else "right", no_wrap=True)
    for row in cells:
        table.add_row(*row)
    return table


def clients_table(store: Store, trial_id: int, title: str) -> Table:
    """Per client: host, schema, its own tps and p95, --rate asked and reached, CPU, flags."""
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False
    )
    for i, h in enumerate(CLIENT_HEADER):
        table.add_column(h, justify="left" if i in (1, 2, 3, 12) else "right", no_wrap=True)
    for row in client_rows(store, trial_id):
        table.add_row(*row)
    return table


def print_clients(store: Store, run_id: int) -> None:
    """Per-client tables and fairness of trials with several clients, then the saturation warning."""
    for tr in store.trials(run_id):
        if multi_client(store, tr.id):
            console.out.print(clients_table(store, tr.id, f"clients of trial {tr.seq} ({tr.workload})"))
            for note in client_notes(store, run_id, tr.id):
                console.out.print(f"  {note}", markup=False, soft_wrap=True)
    sat = saturation_lines(store, run_id)
    if sat:
        seqs = {t.id: t.seq for t in store.trials(run_id)}
        console.out.print(f"[bold yellow]warning:[/] {SATURATION_WARNING}", soft_wrap=True)
        for trial_id, line in sat:
            where = seqs.get(trial_id or -1, "?")
            console.out.print(f"  trial {where}: {line}", markup=False, soft_wrap=True)


def _print_outcome(store: Store, outcome: BenchOutcome, title: str) -> None:
    console.out.print(summary_table(store, outcome.run_id, title))
    print_clients(store, outcome.run_id)
    colour = "green" if outcome.status == "completed" else "red"
    console.out.print(
        f"run [bold]{outcome.run_id}[/] [{colour}]{outcome.status}[/] "
        f"(`clusterbench report {outcome.run_id}`, `clusterbench results show {outcome.run_id}`)"
    )


def _execute(plan: BenchPlan, target: Target, store: Store, *, per_sample_lines: bool, title: str) -> None:
    bench = BenchRunner(sysbench_runner(), target.probe)
    bench.check(plan)  # fail fast: unreachable, wrong password, no schema
    console.out.print(
        f"{plan.kind} {', '.join(plan.tests) if len(plan.tests) <= 3 else f'{len(plan.tests)} tests'} on "
        f"{target.label}: {plan.options.threads} threads x {plan.clients} client(s), {plan.options.time} s"
        + (f" + {plan.options.warmup} s warm-up" if plan.options.warmup else "")
        + (f", clients on {', '.join(h.name for h in plan.client_hosts)}" if plan.client_hosts else "")
        + f"; results in {store_path_of(store)}"
    )
    view = LiveView(clients=plan.clients, per_sample_lines=per_sample_lines)
    try:
        with view:
            outcome = bench.execute(plan, store, view)
    except KeyboardInterrupt:
        rid = view.run_id
        if rid is None:
            raise BenchInterrupted("interrupted before the run started; nothing was stored") from None
        n = sum(len(store.samples(t.id)) for t in store.trials(rid))
        raise BenchInterrupted(
            f"interrupted: sysbench stopped; run {rid} is marked interrupted and keeps its {n} samples"
        ) from None
    _print_outcome(store, outcome, title)
    if outcome.status != "completed":
        raise TrialsFailed(f"run {outcome.run_id} finished with failed trials: {'; '.join(outcome.failures)}")


# ---- commands -----------------------------------------------------------------------------------


def run(
    workload: Annotated[str, typer.Option("--workload", "-w", help="sysbench test, e.g. oltp_read_write.")],
    threads: Annotated[int, typer.Option(min=1, help="Threads per client process.")] = 4,
    duration: Annotated[
        int, typer.Option("--duration", "--time", "-t", min=1, help="Measured seconds (alias: --time).")
    ] = 60,
    warmup: WarmupOpt = 0,
    target: TargetOpt = None,
    tables: TablesOpt = 4,
    table_size: TableSizeOpt = 10000,
    rate: RateOpt = 0,
    rand_type: RandTypeOpt = "special",
    report_interval: IntervalOpt = 1,
    clients: ClientsOpt = None,
    client_hosts: ClientHostsOpt = "auto",
    separate_schemas: SeparateOpt = False,
    tls: TlsOpt = None,
    compression: CompressionOpt = False,
    host: HostOpt = None,
    port: PortOpt = 3306,
    user: UserOpt = "sbtest",
    password_env: PasswordEnvOpt = None,
    database: DatabaseOpt = "sbtest",
    galera: GaleraOpt = True,
    results: ResultsOpt = None,
    name: NameOpt = None,
    prepare: PrepareOpt = True,
    cleanup: Annotated[bool, typer.Option(help="Drop the tables at the end.")] = False,
) -> None:
    """Run one sysbench test against the cluster (or --host) and store every sample."""
    opts = make_options(
        test=workload, threads=threads, time=duration, warmup=warmup, tables=tables, table_size=table_size,
        rate=rate, rand_type=rand_type, report_interval=report_interval, tls=tls, compression=compression,
    )  # fmt: skip
    with store_at(results) as store:
        tgt = _resolve_target(name=name, target=target, host=host, port=port, user=user,
                              password_env=password_env, database=database, galera=galera,
                              client_hosts=client_hosts)  # fmt: skip
        plan = BenchPlan(
            kind="run", tests=(workload,), options=opts, endpoint=tgt.endpoint,
            clients=default_clients(clients, tgt.client_hosts, tgt.client_endpoints),
            separate_schemas=separate_schemas, client_endpoints=tgt.client_endpoints,
            prepare=prepare, cleanup=cleanup, name=workload, command_line=command_line(),
            topology=tgt.topology, client_hosts=tgt.client_hosts,
        )  # fmt: skip
        _execute(plan, tgt, store, per_sample_lines=True, title=f"{workload} on {tgt.label}")


def suite(
    tests: Annotated[
        str | None, typer.Option(help="Comma-separated sysbench tests (default: all eleven).")
    ] = None,
    threads: Annotated[int, typer.Option(min=1, help="Threads per client process.")] = 4,
    duration: Annotated[
        int,
        typer.Option("--duration", "--time", "-t", min=1, help="Measured seconds per test (alias: --time)."),
    ] = 5,
    warmup: WarmupOpt = 0,
    target: TargetOpt = None,
    tables: TablesOpt = 4,
    table_size: TableSizeOpt = 10000,
    rate: RateOpt = 0,
    rand_type: RandTypeOpt = "special",
    report_interval: IntervalOpt = 1,
    clients: ClientsOpt = None,
    client_hosts: ClientHostsOpt = "auto",
    separate_schemas: SeparateOpt = False,
    tls: TlsOpt = None,
    compression: CompressionOpt = False,
    host: HostOpt = None,
    port: PortOpt = 3306,
    user: UserOpt = "sbtest",
    password_env: PasswordEnvOpt = None,
    database: DatabaseOpt = "sbtest",
    galera: GaleraOpt = True,
    results: ResultsOpt = None,
    name: NameOpt = None,
    cleanup: Annotated[bool, typer.Option(help="Drop the tables after each prepare group.")] = True,
) -> None:
    """Run sysbench tests one after another as the trials of one run; print the sysbench summary table."""
    chosen = parse_tests(tests, KNOWN_TESTS)
    opts = make_options(
        test=chosen[0], threads=threads, time=duration, warmup=warmup, tables=tables, table_size=table_size,
        rate=rate, rand_type=rand_type, report_interval=report_interval, tls=tls, compression=compression,
    )  # fmt: skip
    with store_at(results) as store:
        tgt = _resolve_target(name=name, target=target, host=host, port=port, user=user,
                              password_env=password_env, database=database, galera=galera,
                              client_hosts=client_hosts)  # fmt: skip
        plan = BenchPlan(
            kind="suite", tests=chosen, options=opts, endpoint=tgt.endpoint,
            clients=default_clients(clients, tgt.client_hosts, tgt.client_endpoints),
            separate_schemas=separate_schemas, client_endpoints=tgt.client_endpoints,
            prepare=True, cleanup=cleanup, name="suite", command_line=command_line(),
            topology=tgt.topology, client_hosts=tgt.client_hosts,
        )  # fmt: skip
        _execute(plan, tgt, store, per_sample_lines=False, title=f"sysbench suite on {tgt.label}")


def report(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, or 'last'.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Directory (default <home>/reports).")
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="Another run (id or 'last') to compare with: its numbers beside these, its tps and p95 "
            "drawn dashed in every plot of the same test."
        ),
    ] = None,
    log_latency: Annotated[
        bool, typer.Option(help="Open with the latency plots on a log scale (the page has a switch).")
    ] = False,
    results: ResultsOpt = None,
) -> None:
    """Write a Markdown and a single-file HTML report of a run (offline, plots as SVG); print both paths."""
    with store_at(results, must_exist=True) as store:
        run_id = resolve_run(store, run_ref)
        base = resolve_run(store, baseline) if baseline is not None else None
        if base == run_id:
            raise InputError(f"--baseline {baseline} is run {run_id} itself; give another run")
        out_dir = out if out is not None else home_dir() / "reports"
        try:
            md, page = write_report(store, run_id, out_dir, baseline=base, log_latency=log_latency)
        except OSError as exc:
            raise InputError(f"cannot write the report to {out_dir} ({exc}); choose another --out") from None
    console.out.print(f"markdown: {md}")
    console.out.print(f"html:     {page}")


def results_list(results: ResultsOpt = None) -> None:
    """Every stored run: id, kind, status, start, trials, command line."""
    with store_at(results, must_exist=True) as store:
        runs = store.list_runs()
        table = Table(title=f"runs in {results_path(results)}", title_justify="left")
        for col in ("id", "kind", "name", "status", "started", "trials", "command"):
            table.add_column(col, justify="right" if col in ("id", "trials") else "left")
        for r in runs:
            colour = {"completed": "green", "running": "yellow"}.get(r.status, "red")
            table.add_row(str(r.id), r.kind, r.name, f"[{colour}]{r.status}[/]", r.started_at[:19],
                          str(len(store.trials(r.id))), r.command_line)  # fmt: skip
    console.out.print(table)
    if not runs:
        console.out.print("no runs yet; start one with `clusterbench run` or `clusterbench suite`")


def results_show(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, or 'last'.")],
    results: ResultsOpt = None,
) -> None:
    """A run's summary table, provenance (versions, machine) and events."""
    with store_at(results, must_exist=True) as store:
        run_id = resolve_run(store, run_ref)
        r = store.get_run(run_id)
        console.out.print(
            f"run [bold]{r.id}[/] {r.kind} {r.name}: {r.status}, {r.started_at} → {r.ended_at or '—'}"
        )
        if r.command_line:
            console.out.print(f"  command: {r.command_line}", markup=False)
        console.out.print(summary_table(store, run_id, "summary"))
        print_clients(store, run_id)
        prov = store.provenance(run_id)
        for key in ("versions", "kernel", "cpu", "memory", "endpoint", "workload"):
            if key in prov:
                line = f"  {key}: {json.dumps(prov[key], sort_keys=True)}"
                console.out.print(line, markup=False, soft_wrap=True)
        for e in store.events(run_id):
            console.out.print(f"  {e['at']} {e['kind']} {json.dumps(e['detail'], sort_keys=True)}",
                              markup=False, soft_wrap=True)  # fmt: skip


def results_export(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, or 'last'.")],
    fmt: Annotated[str, typer.Option("--format", help="csv (a row per sample) or json (everything).")],
    out: Annotated[
        Path | None, typer.Option("--out", "--output", "-o", help="File (default: stdout).")
    ] = None,
    results: ResultsOpt = None,
) -> None:
    """Export a run: every sample as CSV, or the whole run (samples, summaries, provenance) as JSON."""
    if fmt not in ("csv", "json"):
        raise InputError(f"--format must be csv or json, got {fmt!r}")
    with store_at(results, must_exist=True) as store:
        run_id = resolve_run(store, run_ref)
        if fmt == "csv":
            text = store.export_csv(run_id)
        else:
            text = json.dumps(store.export_json(run_id), indent=1) + "\n"
    if out is None:
        sys.stdout.write(text)
        return
    try:
        out.write_text(text)
    except OSError as exc:
        raise InputError(f"cannot write {out} ({exc}); choose another --out") from None
    console.out.print(f"wrote {out}")
