"""`clusterbench check FILE`: validate a topology, scenario or experiment file without starting
anything. The kind is told from the file's tables; every problem is one line naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clusterbench.cli import console
from clusterbench.errors import InputError
from clusterbench.spec.describe import web_banner
from clusterbench.spec.files import file_kind, read_toml_text
from clusterbench.spec.topology import Topology, load_topology, parse_toml


def _node_lines(topo: Topology) -> list[str]:
    """What single nodes have of their own: server settings over the cluster's, the datadir layer."""
    out = []
    for i in topo.node_indexes():
        own = topo.node_overrides(i)
        settings = ", ".join(f"{k} = {v}" for k, v in own.items())
        parts = [f"{topo.server_section()}: {settings}"] if own else []
        if topo.node_datadir_layer(i) != "none":
            parts.append(f"datadir on {topo.node_datadir_layer(i)}")
        if parts:
            out.append(f"  n{i}: " + "; ".join(parts))
    return out


def _topology_line(t: Topology) -> str:
    parts = [f"cluster {t.name}", f"{t.cluster.nodes} node(s)"]
    if t.balancer.kind == "haproxy":
        parts.append("2 HAProxy + keepalived VIP" if t.balancer.count == 2 else "HAProxy")
    if t.web.nodes:
        parts.append(web_banner(t).removeprefix(" + ").replace(" + ", ", "))
    parts.append(f"{len(t.hosts)} machine(s) over ssh" if t.remote else f"subnet {t.network}")
    return ", ".join(parts)


def check_file(path: Path) -> list[str]:
    """What the file is and what it would do, as lines; InputError with every problem otherwise."""
    text = read_toml_text(path, "topology, scenario or experiment", "check the path")
    data = parse_toml(text, str(path))
    kind = file_kind(data)
    if kind == "topology":
        topo = load_topology(path)
        return [f"{path}: a valid topology: {_topology_line(topo)}", *_node_lines(topo)] + [
            f"  warning: {w}" for w in topo.warnings()
        ]
    if kind == "scenario":
        from clusterbench.scenario.spec import load_scenario

        spec, topo_path = load_scenario(path)
        topo = load_topology(topo_path) if topo_path is not None else Topology()
        balancers = 1 if topo.balancer.kind == "haproxy" else 0
        # target primary: member 1 is the primary after `up` (checked against the real one at run time)
        primary = 1 if topo_path is None or topo.engine.has_primary else None
        # web targets: against the file's web tier, or any (the cluster that is up is checked at run time)
        web = (topo.web.nodes, len(topo.web.front_indexes())) if topo_path is not None else (9, 2)
        faults = spec.planned(topo.cluster.nodes, balancers, str(path), primary=primary, web_nodes=web[0],
                              fronts=web[1])  # fmt: skip
        where = f"on {topo_path} ({_topology_line(topo)})" if topo_path else "on the cluster that is up"
        sched = "; ".join(
            f"{f.label()} at {f.at:g} s" + (f" for {f.until - f.at:g} s" if f.until else "") for f in faults
        )
        load = spec.load
        access = f" (batch {load.batch}, rows of about {load.row_size} bytes)" if load.access else ""
        lines = [
            f"{path}: a valid scenario '{spec.name}' {where}",
            f"  load: {load.how().replace(load.workload, load.workload + access, 1)}"
            + ("" if load.prepare else " on the tables already there (prepare = false)")
            + f"; faults: {sched or 'none'}",
        ]
        if spec.random_faults is not None:
            lines.append(f"  random faults drawn with seed {spec.random_seed} (same seed, same schedule)")
        if spec.anomalies is not None:
            lines.append(f"  anomaly checkers: {', '.join(spec.anomalies.checkers)}")
        return lines
    from clusterbench.experiment import tls as tlsmod
    from clusterbench.experiment.load import load_experiment
    from clusterbench.experiment.planner import expand
    from clusterbench.experiment.search_run import estimate as search_estimate
    from clusterbench.paths import home_dir

    tls = tlsmod.server_settings(home_dir() / "experiments" / "tls")  # as `plan` does; writes nothing
    profiles = data.get("profiles") if isinstance(data.get("profiles"), dict) else {}
    lines = [f"{path}: a valid experiment"]
    # one line per problem: a problem of the base is every profile's too (a profile only overrides),
    # and one that several profiles share names them together
    errors: dict[str, tuple[str, list[str]]] = {}
    for profile in [None, *sorted(profiles or {})]:
        try:
            plan = expand(load_experiment(path, profile), tls)
        except InputError as exc:
            said = str(exc)
            key = said.replace(f" (profile {profile})", "", 1) if profile else said
            errors.setdefault(key, (said, []))[1].append(profile or "")
            continue
        if plan.experiment.search is None:
            est = plan.estimate()
            what = f"{len(plan.trials)} trial(s)"
            st = plan.experiment.settings
            if st.auto:  # the planned minimum; up to max_repetitions per point as the CI asks
                most = len(plan.trials) * st.max_repetitions // st.min_repetitions
                what += f" (repetitions auto: up to {most})"
        else:  # a search has no trials planned ahead: the whole budget, as `plan` estimates it
            est = search_estimate(plan.experiment)
            what = f"a search of {plan.experiment.search.budget} trial(s)"
        lines.append(
            f"  {'profile ' + profile if profile else 'base'}: {what}, estimated {est.total / 60:.0f} min"
        )
    if errors:
        raise InputError(
            "\n".join(
                said + (f" (also profile {', '.join(where[1:])})" if where[0] and len(where) > 1 else "")
                for said, where in errors.values()
            )
        )
    return lines


def check(
    file: Annotated[
        Path, typer.Argument(metavar="FILE", help="A topology, scenario or experiment file (TOML).")
    ],
) -> None:
    """Validate a topology, scenario or experiment file (every profile of it) without starting
    anything; exit 0 when it is valid, 2 with one line per problem otherwise."""
    for line in check_file(file):
        console.out.print(line, markup=False, soft_wrap=True)
