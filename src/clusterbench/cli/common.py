"""What the command modules share: option types, choosing the cluster, opening the results store,
the sysbench runner, the command line of this invocation.

The command modules (operate, bench, results, check, drill, experiment, rootfs) import from here,
from console and from tables, never from each other, so there is no import cycle among them:
main.py loads them by name when their command runs. This module stays light (the heavy ones are
imported where used): every command imports it at start-up.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer

from clusterbench.cli import console
from clusterbench.errors import InputError
from clusterbench.paths import home_dir, known_clusters
from clusterbench.store import Store
from clusterbench.workloads.limits import TPCC, TPCC_CUSTOMERS, TPCC_ITEMS

if TYPE_CHECKING:  # imported where used: the command line starts without them
    from clusterbench.cluster import Cluster
    from clusterbench.workloads import SysbenchRunner


def typer_app(**kw: object) -> typer.Typer:
    """A command group: its help when given no command; click's own "Did you mean" only (typer's
    suggestion would repeat it)."""
    kw.setdefault("no_args_is_help", True)
    return typer.Typer(suggest_commands=False, **kw)  # type: ignore[arg-type]


NameOpt = Annotated[
    str | None,
    typer.Option("--name", "-n", help="Cluster name (default: the only cluster that is up, else 'lab')."),
]
ResultsOpt = Annotated[
    Path | None, typer.Option("--results", help="Results store (default: <home>/results.db).")
]
# report (bench report, experiment report)
ReportOutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Directory (default <home>/reports).")]
LogLatencyOpt = Annotated[
    bool, typer.Option(help="Open with the latency plots on a log scale (the page has a switch).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (for scripts) instead of tables.")]
TagOpt = Annotated[
    list[str] | None,
    typer.Option("--tag", help="A label for the run, shown by `results list` (repeat for several)."),
]
# tpcc (run, suite, fault)
WarehousesOpt = Annotated[
    int,
    typer.Option(
        min=1, help="tpcc: warehouses to load, the TPC-C scale (about 100 MB each); other tests ignore it."
    ),
]
CustomersOpt = Annotated[
    int,
    typer.Option(
        min=10, max=TPCC_CUSTOMERS,
        help="tpcc: customers per district to load (TPC-C: 3000); fewer makes a quick, smaller load "
        "(run and suite: other tests ignore it).",
    ),  # fmt: skip
]
ItemsOpt = Annotated[
    int,
    typer.Option(
        min=100, max=TPCC_ITEMS,
        help="tpcc: rows in ITEM, and in STOCK per warehouse, to load (TPC-C: 100000); fewer loads faster.",
    ),  # fmt: skip
]
MixOpt = Annotated[
    str | None,
    typer.Option(
        help="tpcc: the transaction mix as whole-percent weights summing to 100, e.g. "
        "new_order=45,payment=43,order_status=4,delivery=4,stock_level=4 (the default, the standard "
        "mix); a transaction left out weighs 0."
    ),
]


def parse_mix_option(mix: str | None, tests: Sequence[str]) -> tuple[int, ...] | None:
    """--mix as weights in tpcc.TYPES order (None: the standard mix); one InputError line otherwise."""
    if mix is None:
        return None
    if TPCC not in tests:
        raise InputError("--mix is the tpcc transaction mix; leave it out, or run -w tpcc")
    from clusterbench.workloads import tpcc

    try:
        return tpcc.parse_mix(mix)
    except ValueError as exc:
        raise InputError(f"--mix: {exc}") from None


PrepareOpt = Annotated[bool, typer.Option(help="Create fresh tables first (--no-prepare reuses them).")]
NotesOpt = Annotated[str | None, typer.Option(help="A note kept with the run, shown by `results list`.")]
TelemetryOpt = Annotated[
    bool,
    typer.Option(
        help="Sample every server's CPU, memory, disk, link, engine and balancer figures each second "
        "beside the load, and name each trial's bottleneck (docs/telemetry.md)."
    ),
]


MetricsPortOpt = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        min=0,
        max=65535,
        help="Serve the run live as OpenMetrics on http://127.0.0.1:PORT/metrics for Prometheus "
        "(tps, latency quantiles, telemetry, verdicts; docs/results.md).",
    ),
]


@contextmanager
def serve_metrics(port: int | None, results: Path | None) -> Iterator[None]:
    """--metrics-port: the live endpoint for as long as the command runs."""
    if port is None:
        yield
        return
    from clusterbench.telemetry.endpoint import MetricsEndpoint

    path = results_path(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    with MetricsEndpoint(path, port) as ep:
        console.step(f"metrics: http://127.0.0.1:{ep.port}/metrics (OpenMetrics, while this command runs)")
        yield


JunitOpt = Annotated[
    Path | None,
    typer.Option(
        "--junit", metavar="FILE", help="Also write the verdicts as JUnit XML to FILE, for CI systems."
    ),
]


@contextmanager
def junit_report(path: Path | None, results: Path | None) -> Iterator[None]:
    """--junit FILE: the verdicts of the runs this command made, written however it ends."""
    if path is None:
        yield
        return
    if not path.parent.is_dir():
        raise InputError(f"--junit {path}: no directory {path.parent}; give a file in one that exists")
    store_file = results_path(results)
    from clusterbench.telemetry.endpoint import mark, own_runs

    with store_at(results) as st:
        since = mark(st)
    try:
        yield
    finally:
        import os

        from clusterbench.analysis.junit import junit_xml

        with Store.open(store_file) as st:
            text = junit_xml(st, own_runs(st, since, os.getpid()))
        try:
            path.write_text(text)
        except OSError as exc:
            raise InputError(f"--junit {path}: cannot write it ({exc.strerror}); give another file") from None
        console.step(f"JUnit XML: {path}")


def print_json(data: object) -> None:
    """JSON on stdout and nothing else, for `| jq` and scripts (messages go to stderr)."""
    sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")


def check_tags(tags: list[str] | None) -> list[str]:
    """--tag values, checked before anything starts."""
    import re

    out = []
    for t in tags or []:
        t = t.strip()
        key, eq, value = t.partition("=")
        if not re.fullmatch(r"[\w.:-]+", key) or (eq and not re.fullmatch(r"[^\s,]+", value)):
            raise InputError(
                f"--tag {t!r}: a tag is key=value (or a key alone), without spaces or commas, "
                "e.g. --tag env=lab --tag nightly"
            )
        out.append(t)
    return out


def label_run(store: Store, run_id: int, tags: list[str], notes: str | None) -> None:
    """Put --tag and --notes on a stored run."""
    if tags:
        store.add_tags(run_id, tags)
    if notes is not None:
        store.set_notes(run_id, notes)


# ---- which cluster -------------------------------------------------------------------------------


def global_name() -> str | None:
    """`clusterbench -n NAME <command>`: the name given before the command, if any."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    value = ctx.find_root().params.get("name")
    return str(value) if value else None


def resolve_name(name: str | None) -> str:
    """The cluster a command is about: --name (after or before the command), else the only one
    that is up, else the default name."""
    name = name or global_name()
    if name:
        return name
    known = known_clusters(home_dir())
    if len(known) == 1:
        return known[0]
    if len(known) > 1:
        raise InputError(f"several clusters are up ({', '.join(known)}); choose one with --name")
    from clusterbench.spec.topology import Topology

    return Topology().name


def load_cluster(name: str | None) -> Cluster:
    from clusterbench.cluster import Cluster

    return Cluster.load(resolve_name(name))


# ---- the results store ---------------------------------------------------------------------------


def results_path(results: Path | None) -> Path:
    return results if results is not None else home_dir() / "results.db"


def open_store(results: Path | None, *, must_exist: bool = False) -> Store:
    """Open the results store; a path that cannot be written is one InputError, before anything starts."""
    path = results_path(results)
    if must_exist and not path.exists():
        raise InputError(
            f"no results store at {path}; run `clusterbench run` or `suite` first, or give --results"
        )
    try:
        store = Store.open(path)
        # Store.open on an existing file may not write anything: prove that we can.
        store.conn.execute("BEGIN IMMEDIATE")
        store.conn.execute("ROLLBACK")
    except (OSError, sqlite3.Error) as exc:
        if isinstance(exc, FileExistsError):
            exc = NotADirectoryError(f"{exc.filename} is not a directory")
        raise InputError(
            f"cannot write the results store {path} ({exc}); choose a writable path with --results"
        ) from None
    store.mark_interrupted()
    return store


@contextmanager
def store_at(results: Path | None, *, must_exist: bool = False) -> Iterator[Store]:
    """open_store as a context manager: the store is closed however the block ends."""
    store = open_store(results, must_exist=must_exist)
    try:
        yield store
    finally:
        store.close()


def store_path_of(store: Store) -> str:
    row = store.conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row is not None else "?"


# ---- running sysbench ----------------------------------------------------------------------------


def sysbench_runner(cluster: str | None = None) -> SysbenchRunner:
    """`cluster`: record the load clients with that cluster, so that a killed run's sysbench is
    found and stopped by the next command (clusterbench.loadclients)."""
    from clusterbench.loadclients import LoadClients
    from clusterbench.workloads import SysbenchRunner, build_shim

    # `make setup` builds the shim into <home>/lib; build_shim only recompiles when it is stale.
    tracker = LoadClients(home_dir(), cluster) if cluster else None
    return SysbenchRunner(shim=build_shim(home_dir() / "lib"), tracker=tracker, secrets_dir=secrets_dir())


def secrets_dir() -> Path:
    """Where sysbench's option files (the password, mode 0600) live while it runs: root's only."""
    d = home_dir() / "secrets"
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    return d


def command_line() -> str:
    """This invocation as a shell command, `clusterbench ...` (never the Python path it ran from)."""
    from clusterbench.cli.invocation import command_line as invoked

    return invoked()
