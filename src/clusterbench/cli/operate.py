"""Commands that operate a cluster: up, down, status, start, stop, node, sql, logs, provision.
Thin: parse, call, print (cli/main.py loads this module when one of them runs)."""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from clusterbench import lock
from clusterbench.cli import console, guard
from clusterbench.cli.common import (
    JsonOpt,
    NameOpt,
    global_name,
    load_cluster,
    print_json,
    resolve_name,
    typer_app,
)
from clusterbench.cluster import BalancerView, Cluster, ClusterStatus
from clusterbench.errors import ClusterStateError, InputError, PreflightError
from clusterbench.paths import home_dir, known_clusters
from clusterbench.providers import preflight
from clusterbench.spec.describe import web_banner, web_endpoints
from clusterbench.spec.topology import Topology, load_topology
from clusterbench.webtier import WebTierStatus

node_app = typer_app(help="Operate on one node: stop, start, kill, restart, rebuild.")
NodeArg = Annotated[int, typer.Argument(help="Node number, 1-9.", min=1, max=9)]


def up(
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Topology TOML file (default: 3 nodes + HAProxy).")
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", "-n", help="The cluster's name, instead of the file's [cluster] name."),
    ] = None,
) -> None:
    """Bring up a MariaDB Galera cluster (or MySQL Group Replication with [engine] kind =
    "group_replication") behind HAProxy, in local namespaces or on the [[hosts]] machines with
    provider.kind = "ssh"; returns when every node is a ready member and HAProxy sees it."""
    topo = named(load_topology(file), name or global_name())
    for w in topo.warnings():
        console.warn(w)
    if not topo.remote:
        preflight.require_root()
    guard.claim(topo.name)
    cluster = Cluster(topo)
    banner = (
        f"Bringing up cluster [bold]{topo.name}[/]: {topo.cluster.nodes} {cluster.engine.label} node(s)"
        + (
            (" + 2 HAProxy with keepalived (VIP)" if topo.balancer.count == 2 else " + HAProxy")
            if topo.balancer.kind == "haproxy"
            else ""
        )
        + web_banner(topo)
        + (f" on {len(topo.hosts)} machines over ssh" if topo.remote else f" on {topo.network}")
    )
    timings = cluster.up(report=console.step, checked=lambda: console.out.print(banner))
    _print_endpoints(cluster)
    console.out.print(
        f"[green]up[/] in {timings['total']:.1f} s (nodes ready at {timings['nodes_synced']:.1f} s)"
    )


def named(topo: Topology, name: str | None) -> Topology:
    """The topology under another cluster name (-n), checked as the file's would be."""
    if name is None or name == topo.name:
        return topo
    from clusterbench.spec.topology import topology_from_data

    data = topo.model_dump(mode="json", by_alias=True, exclude_unset=True)
    data.setdefault("cluster", {})["name"] = name
    return topology_from_data(data, "--name")


def _print_endpoints(cluster: Cluster) -> None:
    t = cluster.topology
    c = cluster.credentials()
    table = Table(title=f"cluster {t.name} endpoints", title_justify="left")
    table.add_column("target")
    table.add_column("address")
    table.add_column("via")
    port = t.balancer.port
    vip = t.vip_address()
    if vip is not None:
        holder = cluster.vip_holder()
        via = f"keepalived VIP, now on {holder}" if holder else "keepalived VIP, [red]on no balancer[/]"
        table.add_row("balancer", f"{vip}:{port}", via)
        table.add_row("vip", f"{vip}:{port}", via)
        for k in t.balancer_indexes():
            table.add_row("", f"{t.balancer_address(k)}:{port}", f"lb{k} itself")
    elif t.balancer.kind == "haproxy":
        table.add_row("balancer", f"{t.balancer_address()}:{port}", "HAProxy lb1")
    read = [r for r in cluster.engine.routes() if r.name == "read"]
    if read and t.balancer.kind == "haproxy":
        client = t.client_address()
        via = "HAProxy, over the secondaries"
        table.add_row("balancer-read", f"{client}:{port + read[0].port_offset}", via)
    for i in t.node_indexes():
        table.add_row(f"node:{i}", f"{t.node_address(i)}:3306", f"n{i} directly")
    holder = cluster.front_vip_holder() if t.front_vip_address() else None
    for row in web_endpoints(t, holder):
        table.add_row(*row)
    console.out.print(table)
    masked = c.app_password[:2] + "*" * (len(c.app_password) - 2)
    console.out.print(
        f"user [bold]{c.app_user}[/], password {masked} (full credentials: {cluster.secrets_path}, root only)"
    )


def down(
    name: NameOpt = None,
    all_clusters: Annotated[bool, typer.Option("--all", help="Take down every known cluster.")] = False,
    keep_files: Annotated[
        bool,
        typer.Option(help="Keep data directories and logs (over ssh: also copy the logs back here)."),
    ] = False,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", "-f", help="Topology file: finds an ssh cluster's machines when its state is lost."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Take it down even while another command (a run, a scenario) is using it."
        ),
    ] = False,
) -> None:
    """Stop everything a cluster runs and remove its namespaces, links and cgroups, or over ssh only
    our processes and files on the machines (idempotent). Refuses while another command is using
    the cluster, unless --force."""
    preflight.require_root()
    from_file = load_topology(file) if file is not None else None
    if from_file is not None:
        names = [from_file.name]
    else:
        names = known_clusters(home_dir()) if all_clusters else [resolve_name(name)]
    busy: list[str] = []
    for n in names:
        try:
            guard.claim(n, force=force, hint=f"`clusterbench down -n {n} --force` takes it down anyway")
        except lock.ClusterBusy as exc:
            busy.append(str(exc))
            continue
        guard.stop_load_clients(n, everything=True)
        t0 = time.monotonic()
        try:
            cluster = Cluster.load(n)
        except ClusterStateError:
            # No usable state: still remove leftovers found by the name prefix (local) or by our
            # role directories on the file's machines (ssh).
            cluster = Cluster(from_file or Topology.model_validate({"cluster": {"name": n}}))
        done = cluster.down(report=console.step, keep_files=keep_files)
        verb = "down" if done else "nothing to do"
        console.out.print(f"cluster [bold]{n}[/]: {verb} ({time.monotonic() - t0:.1f} s)")
    if busy:
        raise lock.ClusterBusy("\n".join(busy))


def status(name: NameOpt = None, as_json: JsonOpt = False) -> None:
    """Per node: process, state, role, view size, Primary, ready, flow control, position; HAProxy's view.
    Exit 1 while both balancers of a keepalived pair hold the VIP (a split brain)."""
    cluster = load_cluster(name)
    st = cluster.status()
    from clusterbench.faults import leftovers  # here: faults depend on cluster, not the other way

    left = leftovers.find(cluster)
    if as_json:
        print_json(status_record(st, [lo.describe() for lo in left]))
    else:
        _print_status(st)
        busy = lock.holder(home_dir(), cluster.topology.name) is not None
        for lo in left:
            if busy:  # a running drill's fault, which that drill heals
                console.warn(f"fault in place: {lo.describe()} (the command using the cluster heals it)")
            else:
                console.warn(f"fault left in place: {lo.describe()}; `clusterbench heal` removes it")
        _print_users(cluster.topology.name)
    front = st.web.vip_holders if st.web is not None else []
    if len(st.vip_holders) > 1 or len(front) > 1:
        # A split brain of the balancers: a check that fails, exit 1 for as long as it lasts.
        if not as_json:
            holders = st.vip_holders if len(st.vip_holders) > 1 else front
            console.warn(
                f"the VIP is held by {' and '.join(holders)} at once: their keepalived instances "
                "cannot hear each other (VRRP cut?); clients may reach either"
            )
        raise typer.Exit(1)


def _print_users(name: str) -> None:
    """Who is using the cluster now (the lock's holder) and the load clients on record."""
    from clusterbench.loadclients import LOCAL, LoadClients

    h = lock.holder(home_dir(), name)
    if h is not None:
        console.out.print(f"in use by {console.escape(h.describe())}", soft_wrap=True)
    lc = LoadClients(home_dir(), name)
    for r in lc.records():
        if lc.owner_alive(r):
            console.out.print(f"load client: {console.escape(r.describe())}", soft_wrap=True)
        elif r.remote or LOCAL.alive(r.ref):
            console.warn(
                f"{r.describe()} was left running by a clusterbench that no longer runs; "
                "`clusterbench heal` (or the next run) stops it"
            )


def status_record(st: ClusterStatus, leftovers: list[str]) -> dict[str, object]:
    """`status --json`: the status as data, with the verdicts the table shows in colour."""
    data = dataclasses.asdict(st)
    for view, node in zip(st.nodes, data["nodes"], strict=True):
        h = view.health
        node["primary"] = h.in_quorum if h is not None else None
        node["ready"] = h.ready if h is not None else None
    for lb, rec in zip(st.balancers, data["balancers"], strict=True):
        for b, brec in zip(lb.backends, rec["backends"], strict=True):
            brec["up"] = b.up
    data["faults_left_in_place"] = leftovers
    return data


def _print_status(st: ClusterStatus) -> None:
    table = Table(title=f"cluster {st.name}", title_justify="left")
    for col in (
        "node",
        "address",
        "process",
        "state",
        "role",
        "size",
        "primary",
        "ready",
        "fc paused",
        "position",
        "datadir free",
    ):
        table.add_column(col, justify="right" if col in ("size", "fc paused", "position") else "left")
    for v in st.nodes:
        h = v.health
        free = "-" if v.disk is None else v.disk.text()
        if v.disk is not None and v.disk.nearly_full:
            free = f"[red]{free}[/]"
        if h is None:
            process = "alive" if v.alive else "[red]down[/]"
            table.add_row(f"n{v.index}", v.address, process, *["-"] * 7, free)
            continue
        table.add_row(
            f"n{v.index}",
            v.address,
            "alive",
            h.state if h.ready else f"[yellow]{h.state}[/]",
            h.role or "-",
            str(h.size),
            "yes" if h.in_quorum else "[red]no[/]",
            "yes" if h.ready else "[red]no[/]",
            f"{h.flow_control:.3f}",
            h.position,
            free,
        )
    console.out.print(table)
    for v in st.nodes:
        if v.disk is not None and v.disk.nearly_full:
            console.warn(
                f"n{v.index}: its datadir file system ({v.disk.mount}) is nearly full: {v.disk.text()} free; "
                "when it fills, writes there fail (1114) and replicated DDL may be skipped there silently"
            )
    if st.vip is not None:
        if len(st.vip_holders) == 1:
            console.out.print(f"VIP {st.vip} held by [bold]{st.vip_holders[0]}[/]")
        elif st.vip_holders:
            console.out.print(f"[red]VIP {st.vip} held by {' and '.join(st.vip_holders)} at once[/]")
        else:
            console.out.print(f"[red]VIP {st.vip} held by no balancer[/]")
    lbs = st.balancers
    if not lbs and st.balancer_address is not None:  # a status built by hand with lb1 only
        lbs = [BalancerView(1, "lb1", st.balancer_address, st.balancer_alive, st.backends)]
    for lb in lbs:
        _print_balancer(lb, "haproxy", "VIP", "backend", listeners=True)
    if st.web is not None:
        _print_web(st.web)


def _print_balancer(lb: BalancerView, what: str, vip: str, server: str, listeners: bool = False) -> None:
    """One HAProxy: a line (alive, its keepalived, whether it holds `vip`), then a table of what it
    sees of its servers (`server`: their column's title; `listeners`: a column for the listener
    each is behind where there is more than one)."""
    parts = ["alive" if lb.alive else "[red]DOWN[/]"]
    if lb.keepalived_alive is not None:
        parts.append("keepalived " + ("alive" if lb.keepalived_alive else "[red]DOWN[/]"))
        parts.append(f"[bold]holds the {vip}[/]" if lb.holds_vip else "backup")
    # A line of its own: a table title wraps at the (narrow) table width.
    console.out.print(f"{what} {lb.role} {lb.address} ({', '.join(parts)})", soft_wrap=True)
    bt = Table()
    # Engines with more than one route (Group Replication: write, read) list each one's servers.
    routes = listeners and len({b.proxy for b in lb.backends}) > 1
    for col in (("listener",) if routes else ()) + (server, "status", "sessions", "total", "check"):
        bt.add_column(col)
    for b in lb.backends:
        # A GR secondary is DOWN on the write listener by design: not red there.
        expected_down = routes and b.proxy == "write"
        status = b.status if b.up or expected_down else f"[red]{b.status}[/]"
        cells = [b.name, status, str(b.current_sessions), str(b.total_sessions), b.check_status]
        bt.add_row(*(([b.proxy] if routes else []) + cells))
    console.out.print(bt)


def _print_web(web: WebTierStatus) -> None:
    """The web tier: each web node's processes, /health and pool; each front HAProxy's view."""
    table = Table(title="web nodes", title_justify="left")
    for col in ("web node", "url", "nginx", "php-fpm", "/health", "busy", "idle", "queue"):
        table.add_column(col, justify="right" if col in ("busy", "idle", "queue") else "left")
    for w in web.nodes:
        up = {True: "alive", False: "[red]down[/]"}
        health = "-" if w.health is None else (str(w.health) if w.health == 200 else f"[red]{w.health}[/]")
        pool = [str(w.pool.active), str(w.pool.idle), str(w.pool.listen_queue)] if w.pool else ["-"] * 3
        name = w.role if w.host == w.role else f"{w.role} (on {w.host})"
        table.add_row(name, w.url, up[w.nginx_alive], up[w.fpm_alive], health, *pool)
    console.out.print(table)
    if web.vip is not None:
        held = " and ".join(web.vip_holders) or "no front balancer"
        colour = "" if len(web.vip_holders) == 1 else "[red]"
        console.out.print(f"{colour}front VIP {web.vip} held by {held}" + ("[/]" if colour else ""))
    for f in web.fronts:
        _print_balancer(f, "front haproxy", "front VIP", "web node")


def start(name: NameOpt = None) -> None:
    """Cold start of a stopped cluster: bootstrap from the safe node, then rejoin the others."""
    preflight.require_root()
    cluster = guard.load_claimed(name)
    cluster.start_all(report=console.step)
    console.out.print("[green]all nodes ready[/]")


def stop(name: NameOpt = None) -> None:
    """Graceful stop of every node (last one first); namespaces stay. `start` brings it back."""
    preflight.require_root()
    for line in guard.load_claimed(name).stop_all():
        console.step(line)


# `node VERB`: what it does to the cluster (returning the line to print), and its help
NODE_COMMANDS: tuple[tuple[str, Callable[[Cluster, int], str], str], ...] = (
    ("stop", lambda c, i: c.node_stop(i), "Graceful stop (SIGTERM, SIGKILL after 60 s)."),
    ("kill", lambda c, i: c.node_kill(i), "kill -9: a process crash."),
    ("start", lambda c, i: c.node_start(i),
     "Start a node; after a crash it recovers its position first so it rejoins by IST."),
    ("restart", lambda c, i: c.node_restart(i), "Graceful stop, then start (rejoins by IST)."),
    ("rebuild", lambda c, i: c.node_rebuild(i),
     "Wipe the node's data and let it rejoin by a full state transfer (Galera: SST; Group Replication: "
     "clone), as after a disk loss; prints how and how long."),
)  # fmt: skip


def _node_command(action: Callable[[Cluster, int], str], doc: str) -> Callable[[int, str | None], None]:
    def command(index: NodeArg, name: NameOpt = None) -> None:
        preflight.require_root()
        console.step(action(guard.load_claimed(name), index))

    command.__doc__ = doc
    return command


for _verb, _action, _doc in NODE_COMMANDS:
    node_app.command(_verb)(_node_command(_action, _doc))


def sql(
    index: NodeArg,
    execute: Annotated[str | None, typer.Option("--execute", "-e", help="Statement(s) to run.")] = None,
    name: NameOpt = None,
) -> None:
    """Run SQL on a node as the cluster's admin (no -e: an interactive mariadb shell)."""
    cluster = load_cluster(name)
    n = cluster.node(index)
    if not n.alive():
        raise ClusterStateError(
            f"node {index} is not running; start it with `clusterbench node start {index}`"
        )
    cnf = n.admin_cnf
    if cluster.remote:
        # The node's own admin.cnf is on its machine: connect over TCP with a local copy.
        c = cluster.credentials()
        cnf = cluster.dir / f"admin-n{index}.cnf"
        cluster.local.put_file(
            cnf,
            f'[client]\nhost={n.address}\nport=3306\nuser={c.admin_user}\npassword="{c.admin_password}"\n',
            mode=0o600,
        )
    argv = ["mariadb", f"--defaults-extra-file={cnf}"]
    if execute is not None:
        argv += ["-e", execute]
    rc = subprocess.call(argv)
    if rc != 0:
        raise typer.Exit(1)


def logs(
    index: NodeArg,
    lines: Annotated[int, typer.Option("--lines", "-l", help="How many lines from the end.")] = 40,
    name: NameOpt = None,
) -> None:
    """Print the end of a node's error log."""
    n = load_cluster(name).node(index)
    text = n.host.read_file(n.error_log) or ""
    console.out.print(f"[dim]{n.error_log}[/]")
    for ln in text.splitlines()[-lines:]:
        console.out.print(ln, markup=False, soft_wrap=True)


def provision(
    file: Annotated[
        Path, typer.Option("--file", "-f", help="Topology TOML file with provider.kind = 'ssh'.")
    ],
) -> None:
    """Install the Debian packages each [[hosts]] machine needs for its roles (apt-get, ssh
    provider only); packages are kept from starting services. For Group Replication, each db host
    then runs its own mysqld when it has one with Group Replication, else gets the MySQL root file
    system (copied from this machine, or debootstrapped there); a host that has it keeps it."""
    from clusterbench.providers.provision import provision as run_provision
    from clusterbench.providers.ssh import SshProvider

    topo = load_topology(file)
    if not topo.remote:
        raise InputError(
            f"{file}: provision is for provider.kind = 'ssh'; on this machine run `make setup` instead"
        )
    ssh = SshProvider(topo, home_dir())
    try:
        outcomes = run_provision(topo, {h.name: ssh.host_of(h) for h in topo.hosts})
    finally:
        ssh.close()
    errors = [o.line() for o in outcomes if o.error]
    for o in outcomes:
        if not o.error:
            for line in o.lines():
                console.step(line)
    if errors:
        raise PreflightError("\n".join(errors))
