"""Commands that apply load and read results: run, suite, report, results. Thin: parse, call, print.

The orchestration (prepare groups, trials, provenance) lives in clusterbench.runner; this module
builds a plan from the flags, shows samples live and prints tables from the store.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Annotated, Any

import pymysql  # type: ignore[import-untyped, unused-ignore]
import typer
from rich import box
from rich.table import Table

from clusterbench.analysis.document import write_report
from clusterbench.analysis.workload_tables import ACCESS_HEADER, SLAP_HEADER, access_table, slap_table
from clusterbench.cli import console, guard
from clusterbench.cli.common import (
    CustomersOpt,
    ItemsOpt,
    LogLatencyOpt,
    MetricsPortOpt,
    MixOpt,
    NameOpt,
    NotesOpt,
    PrepareOpt,
    ReportOutOpt,
    ResultsOpt,
    TagOpt,
    TelemetryOpt,
    WarehousesOpt,
    check_tags,
    command_line,
    load_cluster,
    parse_mix_option,
    serve_metrics,
    store_at,
    store_path_of,
    sysbench_runner,
)
from clusterbench.cli.live import LiveView
from clusterbench.cli.tables import bottlenecks_table, print_clients, summary_table
from clusterbench.cluster import Cluster
from clusterbench.errors import InputError, WorkloadError
from clusterbench.paths import home_dir
from clusterbench.runner import (
    BenchInterrupted,
    BenchOutcome,
    BenchPlan,
    BenchRunner,
    ClusterProbe,
    EndpointProbe,
    ServerProbe,
    TrialsFailed,
    check_steady_tests,
    make_options,
    parse_tests,
    resolve_run,
)
from clusterbench.runner.bench import choose_client_hosts, default_clients
from clusterbench.spec.endpoint import Address, Endpoint
from clusterbench.store import Store
from clusterbench.trial.data import check_tpcc
from clusterbench.workloads import KNOWN_TESTS
from clusterbench.workloads.placement import ClientHost
from clusterbench.workloads.sysbench import (
    HTTP_TESTS,
    SYSBENCH_TESTS,
    TPCC_CUSTOMERS,
    TPCC_ITEMS,
)

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
WarmupUntilOpt = Annotated[
    str,
    typer.Option(
        help="time: the warm-up is --warmup seconds; steady: at most that, ended where the load is steady "
        "(MSER on the per-second series), the seconds after it measured (sysbench tests only)."
    ),
]
RateOpt = Annotated[
    int,
    typer.Option(
        min=0,
        help="Target transactions per second (0 = unlimited); the HTTP tests' requests per second, all "
        "clients together (required there).",
    ),
]
HttpTimeoutOpt = Annotated[float, typer.Option(help="HTTP tests: seconds before a request is an error.")]
HttpWorkersOpt = Annotated[
    int, typer.Option(min=0, help="HTTP tests: cap on vegeta's workers per client (0 = none: open loop).")
]
HttpKeepaliveOpt = Annotated[bool, typer.Option(help="HTTP tests: reuse connections (off: one per request).")]
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
            auto_inc_off=galera,
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
    http = plan.web_urls and all(t in HTTP_TESTS for t in plan.tests)
    console.out.print(
        f"{plan.kind} {', '.join(plan.tests) if len(plan.tests) <= 3 else f'{len(plan.tests)} tests'} on "
        + (f"{plan.web_urls[0]} (the web front): {plan.options.rate} requests/s" if http else
           f"{target.label}: {plan.options.threads} threads")  # fmt: skip
        + f" x {plan.clients} client(s), {plan.options.time} s"
        + (f" + {plan.options.warmup_words()}" if plan.options.warmup else "")
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
            "access_range, access_scan, access_noop), mysqlslap, or an HTTP test on the web tier (http_read, "
            "http_write, http_mixed; http = http_mixed; needs --rate) (alias: --tests).",
        ),  # fmt: skip
    ],
    threads: Annotated[int, typer.Option(min=1, help="Threads per client process.")] = 4,
    duration: Annotated[
        int, typer.Option("--duration", "--time", "-t", min=1, help="Measured seconds (alias: --time).")
    ] = 60,
    warmup: WarmupOpt = 0,
    warmup_until: WarmupUntilOpt = "time",
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
    http_timeout: HttpTimeoutOpt = 10.0,
    http_max_workers: HttpWorkersOpt = 0,
    http_keepalive: HttpKeepaliveOpt = True,
) -> None:
    """Run one workload (a sysbench test, an access_* method, mysqlslap, or an HTTP test through the
    web tier) against the cluster (or --host) and store every sample."""
    tags = check_tags(tag)
    opts = make_options(
        test=workload, threads=threads, time=duration, warmup=warmup, warmup_until=warmup_until,
        tables=tables, table_size=table_size, rate=rate, rand_type=rand_type, report_interval=report_interval,
        tls=tls, compression=compression, warehouses=warehouses, customers=customers, items=items,
        mix=parse_mix_option(mix, (workload,)), batch=batch, row_size=row_size, slap_load_type=slap_load_type,
        slap_queries=slap_queries, slap_query=slap_query, slap_engine=slap_engine, http_timeout=http_timeout,
        http_max_workers=http_max_workers, http_keepalive=http_keepalive,
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
            help="Comma-separated workloads, each as `run -w` takes them: sysbench tests, tpcc, access_* "
            "or mysqlslap (default: the eleven sysbench tests; alias: --tests).",
        ),  # fmt: skip
    ] = None,
    threads: Annotated[int, typer.Option(min=1, help="Threads per client process.")] = 4,
    duration: Annotated[
        int,
        typer.Option("--duration", "--time", "-t", min=1, help="Measured seconds per test (alias: --time)."),
    ] = 5,
    warmup: WarmupOpt = 0,
    warmup_until: WarmupUntilOpt = "time",
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
    http_timeout: HttpTimeoutOpt = 10.0,
    http_max_workers: HttpWorkersOpt = 0,
    http_keepalive: HttpKeepaliveOpt = True,
) -> None:
    """Run workloads one after another as the trials of one run (default: the eleven sysbench tests);
    print the summary table."""
    chosen = parse_tests(workload, SYSBENCH_TESTS) if workload is None else parse_tests(workload, KNOWN_TESTS)
    tags = check_tags(tag)
    opts = make_options(
        test=chosen[0], threads=threads, time=duration, warmup=warmup, warmup_until=warmup_until,
        tables=tables, table_size=table_size, rate=rate, rand_type=rand_type, report_interval=report_interval,
        tls=tls, compression=compression, warehouses=warehouses, customers=customers, items=items,
        mix=parse_mix_option(mix, chosen), batch=batch, row_size=row_size, slap_load_type=slap_load_type,
        slap_queries=slap_queries, slap_query=slap_query, slap_engine=slap_engine, http_timeout=http_timeout,
        http_max_workers=http_max_workers, http_keepalive=http_keepalive,
    )  # fmt: skip
    check_steady_tests(chosen, opts)  # the options above checked the first test only
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
    out: ReportOutOpt = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="Another run (id or 'last') to compare with: its numbers beside these, its tps and p95 "
            "drawn dashed in every plot of the same test."
        ),
    ] = None,
    log_latency: LogLatencyOpt = False,
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

