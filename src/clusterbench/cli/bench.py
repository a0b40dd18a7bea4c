"""Commands that apply load and read results: run, suite, report, results. Thin: parse, call, print.

The orchestration (prepare groups, trials, provenance) lives in clusterbench.runner; this module
builds a plan from the flags, shows samples live and prints tables from the store.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pymysql  # type: ignore[import-untyped, unused-ignore]
import typer
from rich import box
from rich.console import Group
from rich.table import Table

from clusterbench.analysis.document import write_report
from clusterbench.analysis.report import (
    CLIENT_HEADER,
    SATURATION_WARNING,
    client_notes,
    client_rows,
    multi_client,
    saturation_lines,
    summary_parts,
    summary_rows,
    table_align,
    table_cells,
)
from clusterbench.analysis.workload_tables import ACCESS_HEADER, SLAP_HEADER, access_table, slap_table
from clusterbench.cli import console, guard
from clusterbench.cli.common import (
    CustomersOpt,
    ItemsOpt,
    JsonOpt,
    MetricsPortOpt,
    MixOpt,
    NameOpt,
    NotesOpt,
    PrepareOpt,
    ResultsOpt,
    TagOpt,
    TelemetryOpt,
    WarehousesOpt,
    check_tags,
    command_line,
    label_run,
    load_cluster,
    parse_mix_option,
    print_json,
    results_path,
    serve_metrics,
    store_at,
    store_path_of,
    sysbench_runner,
    typer_app,
)
from clusterbench.cli.live import LiveView
from clusterbench.cluster import Cluster, home_dir
from clusterbench.errors import InputError, WorkloadError
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
from clusterbench.trial.data import check_tpcc
from clusterbench.workloads import KNOWN_TESTS, tpcc
from clusterbench.workloads.placement import ClientHost
from clusterbench.workloads.sysbench import SYSBENCH_TESTS, TPCC_CUSTOMERS, TPCC_ITEMS

# ---- options shared by run and suite ------------------------------------------------------------

TargetOpt = Annotated[
    str | None,
    typer.Option(
        help="Where the load goes: balancer, balancer-read (Group Replication's secondaries), node:N, "
        "all-nodes (sysbench's own round-robin), each-node (client i loads node i mod N) or socket:N "
        "(node N's Unix socket, the clients on its host) (default: balancer)."
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
BatchOpt = Annotated[
    int, typer.Option(help="access_* tests: rows per batched, eq-bound or range access (at least 1).")
]
RowSizeOpt = Annotated[int, typer.Option(help="access_* tests: approximate bytes per row (16-16384).")]
SlapLoadOpt = Annotated[
    str, typer.Option(help="mysqlslap: auto-generated load type: mixed, read, write, key or update.")
]
SlapQueriesOpt = Annotated[int, typer.Option(help="mysqlslap: queries per client per run (at least 1).")]
SlapQueryOpt = Annotated[
    str | None, typer.Option(help="mysqlslap: SQL to run instead of the auto-generated load.")
]
SlapEngineOpt = Annotated[str, typer.Option(help="mysqlslap: storage engine of the auto-generated table.")]


def register(app: typer.Typer) -> None:
    """Add run, suite, report and results to the main app."""
    app.command("run")(run)
    app.command("suite")(suite)
    app.command("report")(report)
    app.command("tpcc-check")(tpcc_check)
    results_app = typer_app(help="List, show, label and export stored runs.")
    results_app.command("list")(results_list)
    results_app.command("show")(results_show)
    results_app.command("tag")(results_tag)
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
    cluster: str | None = None  # the clusterbench cluster it loads (None: --host)
    servers: Cluster | None = None  # that cluster: its servers are sampled beside the load


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
    guard.claim(cluster.topology.name)
    tgt = target or "balancer"
    hosts = tuple(choose_client_hosts(client_hosts, cluster.client_hosts()))
    per_client: tuple[Endpoint, ...] = ()
    if tgt.startswith(SOCKET_PREFIX):
        return _socket_target(cluster, tgt, database, client_hosts)
    if tgt == EACH_NODE:
        # each client on one node: prepare and the schema checks go to node 1
        per_client = tuple(cluster.endpoint(f"node:{i}", database=database)
                           for i in cluster.topology.node_indexes())  # fmt: skip
        ep = per_client[0]
    else:
        ep = cluster.endpoint(tgt, database=database)
    addrs = ",".join(f"{a.host}:{a.port}" for e in (per_client or (ep,)) for a in e.addresses)
    return Target(ep, ClusterProbe(cluster), cluster.topology.model_dump(mode="json"),
                  f"cluster {cluster.topology.name} {tgt} ({addrs})", hosts, per_client,
                  cluster.topology.name, cluster)  # fmt: skip


EACH_NODE = "each-node"
SOCKET_PREFIX = "socket:"


def _socket_target(cluster: Cluster, tgt: str, database: str, client_hosts: str) -> Target:
    """socket:N: node N's Unix socket, the clients on node N's own host (the access-method study's
    'socket' interconnect; prepare and the checks use the same socket from this machine)."""
    i = tgt[len(SOCKET_PREFIX) :]
    if not i.isdigit() or int(i) not in cluster.topology.node_indexes():
        nodes = cluster.topology.cluster.nodes
        raise InputError(f"--target {tgt}: no such node; use socket:N with N in 1-{nodes}")
    node = cluster.node(int(i))
    if client_hosts != "auto":
        raise InputError(f"--target {tgt} runs the clients on node {i}'s own host; leave out --client-hosts")
    if node.host.remote:
        raise InputError(
            f"--target {tgt}: node {i} is on a machine of its own, whose socket this machine cannot reach; "
            f"use --target node:{i}"
        )
    ep = cluster.endpoint(f"node:{i}", database=database)
    ep = ep.model_copy(update={"name": tgt, "socket": node.socket})
    return Target(ep, ClusterProbe(cluster), cluster.topology.model_dump(mode="json"),
                  f"cluster {cluster.topology.name} {tgt} ({node.socket})", (node.host,), (),
                  cluster.topology.name, cluster)  # fmt: skip


# ---- printing results ---------------------------------------------------------------------------


def summary_table(store: Store, run_id: int, title: str) -> Group:
    """sysbench's layout, as the report has it: per test tps, queries per second, errors and
    reconnects; then latency min / avg / p95 / p99 / max."""
    header, cells = table_cells(summary_rows(store, run_id))
    align = table_align()
    tables = []
    for caption, cols in summary_parts():
        table = Table(title=f"{title}: {caption}", title_justify="left", box=box.SIMPLE_HEAD,
                      collapse_padding=True, pad_edge=False)  # fmt: skip
        for i in cols:
            # never cut a number (`171,80…` in an 80-column terminal): as wide as its widest cell
            widest = max([len(header[i]), *(len(row[i]) for row in cells)])
            text = align[i] == "l"
            table.add_column(header[i], justify="left" if text else "right", no_wrap=not text,
                             overflow="fold", min_width=None if text else widest)  # fmt: skip
        for row in cells:
            table.add_row(*(row[i] for i in cols))
        tables.append(table)
    return Group(*tables)


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


def bottlenecks_table(store: Store, run_id: int) -> Table | None:
    """Per trial the bottleneck verdict (None when no trial has one)."""
    from clusterbench.telemetry.report import BOTTLENECK_HEADER, bottleneck_rows

    rows = bottleneck_rows(store, run_id)
    if not rows:
        return None
    table = Table(title="bottlenecks (docs/telemetry.md)", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)  # fmt: skip
    for i, h in enumerate(BOTTLENECK_HEADER):
        table.add_column(h, justify="right" if i == 0 else "left", overflow="fold")
    for row in rows:
        table.add_row(*(console.escape(c) for c in row))
    return table


def _print_outcome(store: Store, outcome: BenchOutcome, title: str) -> None:
    console.out.print(summary_table(store, outcome.run_id, title))
    print_clients(store, outcome.run_id)
    for header, rows, title_ in (
        (ACCESS_HEADER, access_table(store, outcome.run_id), "access methods (µs per row read)"),
        (SLAP_HEADER, slap_table(store, outcome.run_id), "mysqlslap (seconds per run of all queries)"),
    ):
        if rows:
            t = Table(*header, title=title_, box=box.SIMPLE_HEAD)
            for row in rows:
                t.add_row(*row)
            console.out.print(t)
    necks = bottlenecks_table(store, outcome.run_id) if len(outcome.trials) > 1 else None
    if necks is not None:
        console.out.print(necks)
    colour = "green" if outcome.status == "completed" else "red"
    console.out.print(
        f"run [bold]{outcome.run_id}[/] [{colour}]{outcome.status}[/] "
        f"(`clusterbench report {outcome.run_id}`, `clusterbench results show {outcome.run_id}`)"
    )


def _execute(
    plan: BenchPlan,
    target: Target,
    store: Store,
    *,
    per_sample_lines: bool,
    title: str,
    tags: list[str] | None = None,
    notes: str | None = None,
    telemetry: bool = True,
) -> None:
    # the labels go into the run when it is created: a run killed at any moment has them
    plan = dataclasses.replace(plan, tags=tuple(tags or []), notes=notes or "")
    bench = BenchRunner(sysbench_runner(target.cluster), target.probe, telemetry=target.servers,
                        telemetry_on=telemetry)  # fmt: skip
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
    workload: Annotated[
        str,
        typer.Option(
            "--workload", "-w", "--tests",
            help="A sysbench test (e.g. oltp_read_write), tpcc (TPC-C-like, scale: --warehouses), an "
            "access-method test (access_pk, access_pk_batch, access_uk, access_uk_batch, access_eq, "
            "access_range, access_scan, access_noop) or mysqlslap (alias: --tests).",
        ),  # fmt: skip
    ],
    threads: Annotated[int, typer.Option(min=1, help="Threads per client process.")] = 4,
    duration: Annotated[
        int, typer.Option("--duration", "--time", "-t", min=1, help="Measured seconds (alias: --time).")
    ] = 60,
    warmup: WarmupOpt = 0,
    target: TargetOpt = None,
    tables: TablesOpt = 4,
    table_size: TableSizeOpt = 10000,
    warehouses: WarehousesOpt = 1,
    customers: CustomersOpt = TPCC_CUSTOMERS,
    items: ItemsOpt = TPCC_ITEMS,
    mix: MixOpt = None,
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
    metrics_port: MetricsPortOpt = None,
    name: NameOpt = None,
    prepare: PrepareOpt = True,
    cleanup: Annotated[bool, typer.Option(help="Drop the tables at the end.")] = False,
    tag: TagOpt = None,
    notes: NotesOpt = None,
    telemetry: TelemetryOpt = True,
    batch: BatchOpt = 32,
    row_size: RowSizeOpt = 20,
    slap_load_type: SlapLoadOpt = "mixed",
    slap_queries: SlapQueriesOpt = 100,
    slap_query: SlapQueryOpt = None,
    slap_engine: SlapEngineOpt = "InnoDB",
) -> None:
    """Run one workload (a sysbench test, an access_* method or mysqlslap) against the cluster (or
    --host) and store every sample."""
    tags = check_tags(tag)
    weights = parse_mix_option(mix, (workload,))
    opts = make_options(
        test=workload, threads=threads, time=duration, warmup=warmup, tables=tables, table_size=table_size,
        rate=rate, rand_type=rand_type, report_interval=report_interval, tls=tls, compression=compression,
        warehouses=warehouses, customers=customers, items=items, mix=weights,
        batch=batch, row_size=row_size, slap_load_type=slap_load_type, slap_queries=slap_queries,
        slap_query=slap_query, slap_engine=slap_engine,
    )  # fmt: skip
    with serve_metrics(metrics_port, results), store_at(results) as store:
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
        _execute(plan, tgt, store, per_sample_lines=True, title=f"{workload} on {tgt.label}", tags=tags,
                 notes=notes, telemetry=telemetry)  # fmt: skip


def suite(
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload", "-w", "--tests",
            help="Comma-separated sysbench tests (default: all eleven; alias: --tests).",
        ),  # fmt: skip
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
    warehouses: WarehousesOpt = 1,
    customers: CustomersOpt = TPCC_CUSTOMERS,
    items: ItemsOpt = TPCC_ITEMS,
    mix: MixOpt = None,
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
    metrics_port: MetricsPortOpt = None,
    name: NameOpt = None,
    cleanup: Annotated[bool, typer.Option(help="Drop the tables after each prepare group.")] = True,
    tag: TagOpt = None,
    notes: NotesOpt = None,
    telemetry: TelemetryOpt = True,
    batch: BatchOpt = 32,
    row_size: RowSizeOpt = 20,
    slap_load_type: SlapLoadOpt = "mixed",
    slap_queries: SlapQueriesOpt = 100,
    slap_query: SlapQueryOpt = None,
    slap_engine: SlapEngineOpt = "InnoDB",
) -> None:
    """Run sysbench tests one after another as the trials of one run; print the sysbench summary table."""
    chosen = parse_tests(workload, SYSBENCH_TESTS) if workload is None else parse_tests(workload, KNOWN_TESTS)
    tags = check_tags(tag)
    weights = parse_mix_option(mix, chosen)
    opts = make_options(
        test=chosen[0], threads=threads, time=duration, warmup=warmup, tables=tables, table_size=table_size,
        rate=rate, rand_type=rand_type, report_interval=report_interval, tls=tls, compression=compression,
        warehouses=warehouses, customers=customers, items=items, mix=weights,
        batch=batch, row_size=row_size, slap_load_type=slap_load_type, slap_queries=slap_queries,
        slap_query=slap_query, slap_engine=slap_engine,
    )  # fmt: skip
    with serve_metrics(metrics_port, results), store_at(results) as store:
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
        _execute(plan, tgt, store, per_sample_lines=False, title=f"sysbench suite on {tgt.label}", tags=tags,
                 notes=notes, telemetry=telemetry)  # fmt: skip


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


def shown_command(command_line: str) -> str:
    """A stored command line as the user would type it: runs stored by older versions of drills
    kept the Python path (`/usr/bin/python3 -m clusterbench ...`, `.../bin/clusterbench ...`)."""
    try:
        argv = shlex.split(command_line)
    except ValueError:
        return command_line
    if not argv:
        return command_line
    if "-m" in argv[:3] and "clusterbench" in argv and Path(argv[0]).name.startswith("python"):
        argv = ["clusterbench", *argv[argv.index("clusterbench") + 1 :]]
    elif Path(argv[0]).name == "clusterbench":
        argv = ["clusterbench", *argv[1:]]
    return shlex.join(argv)


def run_record(store: Store, r: Any) -> dict[str, Any]:
    return {
        "id": r.id, "kind": r.kind, "name": r.name, "status": r.status, "started_at": r.started_at,
        "ended_at": r.ended_at, "trials": len(store.trials(r.id)), "tags": store.tags(r.id), "notes": r.notes,
        "command_line": shown_command(r.command_line),
    }  # fmt: skip


def results_list(
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Only runs with this tag (repeat: with all of them).")
    ] = None,
    as_json: JsonOpt = False,
    results: ResultsOpt = None,
) -> None:
    """Every stored run: id, kind, name, status, start, trials, tags and notes, command line."""
    want = set(tag or [])
    with store_at(results, must_exist=True) as store:
        runs = [run_record(store, r) for r in store.list_runs()]
    runs = [r for r in runs if want <= set(r["tags"])]
    if as_json:
        print_json(runs)
        return
    if not runs:
        console.out.print(
            f"no runs with tag(s) {', '.join(sorted(want))} in {results_path(results)}"
            if want
            else "no runs yet; start one with `clusterbench run` or `clusterbench suite`"
        )
        return
    table = Table(title=f"runs in {results_path(results)}", title_justify="left")
    for col in ("id", "kind", "name", "status", "started", "trials", "tags / notes", "command"):
        table.add_column(col, justify="right" if col in ("id", "trials") else "left")
    for r in runs:
        colour = {"completed": "green", "running": "yellow"}.get(r["status"], "red")
        label = " ".join(f"#{t}" for t in r["tags"]) + (f" {r['notes']}" if r["notes"] else "")
        status = f"[{colour}]{r['status']}[/]"
        table.add_row(str(r["id"]), r["kind"], r["name"], status, r["started_at"][:19], str(r["trials"]),
                      console.escape(label.strip()), console.escape(r["command_line"]))  # fmt: skip
    console.out.print(table)


def results_tag(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, or 'last'.")],
    tag: TagOpt = None,
    notes: NotesOpt = None,
    results: ResultsOpt = None,
) -> None:
    """Add tags or set the notes of a stored run (they show in `results list` and the report)."""
    tags = check_tags(tag)
    if not tags and notes is None:
        raise InputError("give --tag and/or --notes")
    with store_at(results, must_exist=True) as store:
        run_id = resolve_run(store, run_ref)
        label_run(store, run_id, tags, notes)
        rec = run_record(store, store.get_run(run_id))
    console.out.print(
        f"run {run_id}: tags {', '.join(rec['tags']) or '—'}; notes {rec['notes'] or '—'}", markup=False
    )


def show_record(store: Store, run_id: int) -> dict[str, Any]:
    """`results show --json`: the run, its summary rows, per-client rows, server variables and their
    findings, provenance and events."""
    from clusterbench.analysis.export import summary_records
    from clusterbench.analysis.outcome import FORMAT_VERSION, overview
    from clusterbench.analysis.variables import variable_report

    rep = variable_report(store, run_id)
    ov = overview(store, run_id)
    return {
        "format": "clusterbench-show",
        "format_version": FORMAT_VERSION,
        "run": {**run_record(store, store.get_run(run_id)), **ov.to_json()},
        "verdicts": ov.verdicts.to_json(),
        "summary": summary_records(store, run_id),
        "clients": {
            str(t.seq): [dict(zip(CLIENT_HEADER, row, strict=True)) for row in client_rows(store, t.id)]
            for t in store.trials(run_id)
            if multi_client(store, t.id)
        },
        "server_variables": {
            "nodes": rep.nodes,
            "rows": [
                {
                    "variable": r.name,
                    "topology": r.expected_text,
                    "values": {n: [v for v, _ in vs] for n, vs in r.values.items()},
                    "differs_from_topology": sorted(r.differs_from_topology),
                    "differs_between_nodes": r.differs_between_nodes,
                    "changed": sorted(r.changed),
                }
                for r in rep.rows
            ],  # fmt: skip
            "unanswered": rep.unanswered,
        },
        "bottlenecks": {str(t.seq): store.bottleneck(t.id) for t in store.trials(run_id)},
        "provenance": store.provenance(run_id),
        "events": store.events(run_id),
    }


def variables_table(store: Store, run_id: int) -> Table | None:
    from clusterbench.analysis.variables import cell, variable_report

    rep = variable_report(store, run_id)
    if not rep.nodes:
        return None
    title = "server variables as run ((!): differs from the topology, from most nodes, or changed)"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("variable", "topology", *rep.nodes):
        table.add_column(col, overflow="fold")
    for r in rep.rows:
        cells = []
        for n in rep.nodes:
            text = console.escape(cell(r, n))
            odd = n in r.differs_from_topology or n in r.changed or n in r.odd_nodes
            cells.append(f"[bold yellow]{text} (!)[/]" if odd else text)
        table.add_row(r.name, console.escape(r.expected_text or r.expected or "—"), *cells)
    return table


def results_show(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, or 'last'.")],
    as_json: JsonOpt = False,
    results: ResultsOpt = None,
) -> None:
    """A run's summary table, per-node server variables as run, provenance and events."""
    with store_at(results, must_exist=True) as store:
        run_id = resolve_run(store, run_ref)
        if as_json:
            print_json(show_record(store, run_id))
            return
        r = store.get_run(run_id)
        console.out.print(
            f"run [bold]{r.id}[/] {r.kind} {r.name}: {r.status}, {r.started_at} → {r.ended_at or '—'}"
        )
        tags = store.tags(run_id)
        if tags or r.notes:
            console.out.print(f"  tags: {', '.join(tags) or '—'}; notes: {r.notes or '—'}", markup=False)
        if r.command_line:
            console.out.print(f"  command: {shown_command(r.command_line)}", markup=False)
        print_outcome(store, run_id)
        console.out.print(summary_table(store, run_id, "summary"))
        for line in tpcc_lines(store, run_id):
            console.out.print(line, markup=False, soft_wrap=True)
        print_clients(store, run_id)
        necks = bottlenecks_table(store, run_id)
        if necks is not None:
            console.out.print(necks)
        vt = variables_table(store, run_id)
        if vt is not None:
            console.out.print(vt)
        prov = store.provenance(run_id)
        for key in ("versions", "kernel", "cpu", "memory", "endpoint", "workload"):
            if key in prov:
                line = f"  {key}: {json.dumps(prov[key], sort_keys=True)}"
                console.out.print(line, markup=False, soft_wrap=True)
        for e in store.events(run_id):
            console.out.print(f"  {e['at']} {e['kind']} {json.dumps(e['detail'], sort_keys=True)}",
                              markup=False, soft_wrap=True)  # fmt: skip


def print_outcome(store: Store, run_id: int) -> None:
    """What it ran on and how it came out, first; then each verdict with its summary."""
    from clusterbench.analysis.outcome import ENGINE_LABELS, overview

    ov = overview(store, run_id)
    engine = ", ".join(ENGINE_LABELS.get(e, e) for e in ov.engine.split(","))
    console.out.print(f"  {engine}, cluster {ov.cluster or '-'}: {ov.outcome}", markup=False, soft_wrap=True)
    v = ov.verdicts
    if v.result is None:
        return
    colour = {"PASS": "green", "FAIL": "red"}.get(v.result, "yellow")
    table = Table(title=f"verdicts: [{colour}]{v.result}[/] ({v.counts()})", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)  # fmt: skip
    for col in ("trial", "checker", "result", "summary"):
        table.add_column(col, overflow="fold", justify="right" if col == "trial" else "left")
    for c in v.checks:
        res = c["result"] + (" (documented limitation)" if c["documented_limitation"] else "")
        table.add_row(str(c["trial"] or "-"), console.escape(c["checker"]), res, console.escape(c["summary"]))
    console.out.print(table)


def tpcc_lines(store: Store, run_id: int) -> list[str]:
    """TPC-C figures, consistency verdicts and stalls of a run's trials, one line each."""
    prov = store.provenance(run_id)
    out = [f"  {tpcc.load_line(prov['tpcc_load'])}"] if prov.get("tpcc_load") else []
    for tr in store.trials(run_id):
        tp = store.provenance(run_id, tr.id)
        if tp.get("tpcc"):
            out += [f"  trial {tr.seq}: {line}" for line in tpcc.figure_lines(tp["tpcc"])]
        for key, rep in sorted(tp.items()):
            if key.startswith("tpcc_consistency:"):
                bad = [f"condition {c['condition']} {c['status']}" for c in rep["conditions"]
                       if c["status"] != "PASS"]  # fmt: skip
                note = f" ({', '.join(bad)})" if bad else ""
                out.append(f"  trial {tr.seq}: TPC-C consistency {rep['verdict']}{note}")
        st = tp.get("stalls") or {}
        if st.get("count"):
            longest = f"{st['longest']:g}"
            out.append(f"  trial {tr.seq}: {st['count']} stalled interval(s), longest {longest} in a row")
    return out


EXPORT_FORMATS = ("csv", "summary", "json", "edn", "telemetry", "openmetrics")


def results_export(
    run_refs: Annotated[
        list[str], typer.Argument(metavar="RUN...", help="Run id(s), or 'last' (summary: several runs).")
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="csv: a row per second and client (and per second for all clients); summary: a row per "
            "trial and test, as CSV; json: the whole run; edn: the run's list-append history for Elle; "
            "telemetry: a row per server figure per second, as CSV (docs/telemetry.md); openmetrics: "
            "tps, latency quantiles, verdicts and the servers' latest figures for Prometheus (several runs).",
        ),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", "--output", "-o", help="File (default: stdout).")
    ] = None,
    results: ResultsOpt = None,
) -> None:
    """Export runs: per-second samples (csv), one row per trial and test (summary), everything (json),
    or a scenario's list-append history in Elle's EDN (edn). The columns are listed in docs/workloads.md."""
    from clusterbench.analysis.export import summary_csv

    if fmt not in EXPORT_FORMATS:
        raise InputError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
    if len(run_refs) > 1 and fmt not in ("summary", "openmetrics"):
        raise InputError(f"--format {fmt} exports one run; several runs go into --format summary")
    with store_at(results, must_exist=True) as store:
        run_ids = [resolve_run(store, ref) for ref in run_refs]
        if fmt == "csv":
            text = store.export_csv(run_ids[0])
        elif fmt == "summary":
            text = summary_csv(store, run_ids)
        elif fmt == "edn":
            from clusterbench.verify.edn import run_list_append_edn

            text = run_list_append_edn(store, run_ids[0])
        elif fmt == "openmetrics":
            from clusterbench.analysis.openmetrics import render

            text = render(store, run_ids)
        elif fmt == "telemetry":
            from clusterbench.telemetry.export import telemetry_csv

            text = telemetry_csv(store, run_ids[0])
        else:
            from clusterbench.analysis.export import run_json

            text = json.dumps(run_json(store, run_ids[0]), indent=1, default=str) + "\n"
    if out is None:
        sys.stdout.write(text)
        return
    try:
        out.write_text(text)
    except OSError as exc:
        raise InputError(f"cannot write {out} ({exc}); choose another --out") from None
    console.out.print(f"wrote {out}")


def tpcc_check(
    name: NameOpt = None,
    target: TargetOpt = None,
    host: HostOpt = None,
    port: PortOpt = 3306,
    user: UserOpt = "sbtest",
    password_env: PasswordEnvOpt = None,
    database: DatabaseOpt = "sbtest",
    galera: GaleraOpt = True,
    after_load: Annotated[
        bool,
        typer.Option(help="The tables were just loaded: condition 11 must hold too (else it is load-only)."),
    ] = False,
) -> None:
    """Check the twelve TPC-C consistency conditions (clause 3.3.2) on the tpcc tables; one line
    per condition; exit 1 when one fails, naming it."""
    tgt = _resolve_target(name=name, target=target, host=host, port=port, user=user,
                          password_env=password_env, database=database, galera=galera)  # fmt: skip
    ep = tgt.endpoint
    addr = ep.addresses[0]
    try:
        conn = pymysql.connect(host=addr.host, port=addr.port, user=ep.user, password=ep.password,
                               connect_timeout=5, read_timeout=600, autocommit=True)  # fmt: skip
    except pymysql.err.MySQLError as e:
        raise WorkloadError(f"cannot connect to {tgt.label}: {e.args[-1] if e.args else e}") from None
    report = check_tpcc(conn, ep, database, "load" if after_load else "run")
    for r in report.results:
        console.out.print(r.line(), markup=False, soft_wrap=True)
    console.out.print(report.summary_line(), markup=False, soft_wrap=True)
    if report.failed:
        raise TrialsFailed(report.summary_line())
