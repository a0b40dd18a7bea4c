"""`clusterbench results list|show|tag|export`: what is in the store, for people and for scripts.
Thin: parse, read the store, print."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from clusterbench.analysis.report import CLIENT_HEADER, client_tables
from clusterbench.cli import console
from clusterbench.cli.common import (
    JsonOpt,
    NotesOpt,
    ResultsOpt,
    TagOpt,
    check_tags,
    label_run,
    print_json,
    results_path,
    store_at,
    typer_app,
)
from clusterbench.cli.tables import bottlenecks_table, print_clients, summary_table
from clusterbench.errors import InputError
from clusterbench.store import Store
from clusterbench.store.refs import resolve_run

results_app = typer_app(help="List, show, label, delete and export stored runs; mark a baseline.")


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
        list[str] | None,
        typer.Option("--tag", help="Only runs with this label: key=value, or a key at any value (repeat: "
                     "all of them)."),
    ] = None,
    engine: Annotated[
        str | None, typer.Option(help="Only runs on this engine: galera, group_replication or external.")
    ] = None,
    kind: Annotated[
        str | None, typer.Option(help="Only runs of this kind: run, suite, fault, scenario, experiment ...")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Only runs started since: a date or time (2026-11-28) or an age (2h, 3d)."),
    ] = None,
    as_json: JsonOpt = False,
    results: ResultsOpt = None,
) -> None:
    """Every stored run: id, kind, engine, cluster, status, start, its outcome in one line
    ("178.6 tps, p95 31 ms, 5/5 PASS"), tags and notes; the baseline is marked."""
    from clusterbench.analysis.outcome import overview
    from clusterbench.store.labels import baseline, since_cutoff, tag_matches

    cutoff = since_cutoff(since) if since is not None else None
    with store_at(results, must_exist=True) as store:
        base = baseline(store)
        runs = []
        for r in store.list_runs():
            if (kind and r.kind != kind) or (cutoff and r.started_at < cutoff):
                continue
            rec = run_record(store, r)
            if not all(tag_matches(rec["tags"], t) for t in tag or []):
                continue
            ov = overview(store, r.id)
            if engine and engine not in ov.engine.split(","):
                continue
            runs.append({**rec, **ov.to_json(), "baseline": r.id == base})
    if as_json:
        print_json(runs)
        return
    if not runs:
        filtered = tag or engine or kind or since
        none = "no runs yet; start one with `clusterbench run` or `clusterbench suite`"
        console.out.print(f"no run matches in {results_path(results)}" if filtered else none)
        return
    _print_runs(runs, f"runs in {results_path(results)}")


def _print_runs(runs: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("id", "kind", "name", "engine", "cluster", "status", "started", "outcome", "tags / notes"):
        table.add_column(col, justify="right" if col == "id" else "left", overflow="fold",
                         no_wrap=col in ("id", "status", "started"))  # fmt: skip
    for r in runs:
        colour = {"completed": "green", "running": "yellow"}.get(r["status"], "red")
        label = " ".join(f"#{t}" for t in r["tags"]) + (f" {r['notes']}" if r["notes"] else "")
        run_id = f"{r['id']}*" if r["baseline"] else str(r["id"])
        engine = r["engine"].replace("group_replication", "gr")
        table.add_row(run_id, r["kind"], console.escape(r["name"]), engine, console.escape(r["cluster"]),
                      f"[{colour}]{r['status']}[/]",
                      r["started_at"][:16].replace("T", " "), console.escape(r["outcome"]),
                      console.escape(label.strip()))  # fmt: skip
    console.out.print(table)
    if any(r["baseline"] for r in runs):
        console.out.print("* the baseline (`compare baseline RUN`)", markup=False)


def results_delete(
    run_refs: Annotated[list[str], typer.Argument(metavar="RUN...", help="Run id(s), 'last' or 'baseline'.")],
    results: ResultsOpt = None,
) -> None:
    """Delete runs and everything stored with them (trials, samples, verdicts, histories)."""
    from clusterbench.store.labels import delete_run

    with store_at(results, must_exist=True) as store:
        run_ids = list(dict.fromkeys(resolve_run(store, ref) for ref in run_refs))
        for run_id in run_ids:
            r = store.get_run(run_id)
            n = len(store.trials(run_id))
            delete_run(store, run_id)
            console.out.print(f"deleted run {run_id} ({r.kind} {r.name}, {n} trial(s))", markup=False)


def results_baseline(
    run_ref: Annotated[
        str | None, typer.Argument(metavar="RUN", help="Run id or 'last' (none: show the baseline).")
    ] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Unmark the baseline.")] = False,
    results: ResultsOpt = None,
) -> None:
    """Mark a run as the baseline: `compare baseline RUN` and `report RUN --baseline baseline`
    then mean it. Without RUN, say which run it is."""
    from clusterbench.store.labels import baseline, set_baseline

    if clear and run_ref is not None:
        raise InputError("give RUN or --clear, not both")
    with store_at(results, must_exist=True) as store:
        if clear:
            set_baseline(store, None)
            console.out.print("no baseline now", markup=False)
            return
        if run_ref is not None:
            set_baseline(store, resolve_run(store, run_ref))
        marked = baseline(store)
    console.out.print(f"baseline: run {marked}" if marked is not None else "no run is marked as the baseline",
                      markup=False)  # fmt: skip


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
            str(ct.trial.seq): [dict(zip(CLIENT_HEADER, row, strict=True)) for row in ct.rows]
            for ct in client_tables(store, run_id)
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
    """A run's outcome first (engine, cluster, tps, p95, verdicts and the outage per path), then its
    summary table, per-node server variables as run, provenance and events."""
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
    from clusterbench.analysis.outcome import ENGINE_LABELS, durability_line, environment_line, overview

    ov = overview(store, run_id)
    engine = ", ".join(ENGINE_LABELS.get(e, e) for e in ov.engine.split(","))
    console.out.print(f"  {engine}, cluster {ov.cluster or '-'}: {ov.outcome}", markup=False, soft_wrap=True)
    console.out.print(f"  environment: {environment_line(store, run_id)}", markup=False, soft_wrap=True)
    durable = durability_line(store, run_id)
    if durable:
        console.out.print(f"  durability: {durable}", markup=False, soft_wrap=True)
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
    from clusterbench.analysis.report import AVAILABILITY_HEADER, availability_rows

    avail = availability_rows(v.checks)  # the evidence people ask for first: the outage per path
    if avail:
        rows = [[console.escape(c) for c in r] for r in avail]
        console.out.print(console.fitted_table("availability (the prober's writes per entry point)",
                                               AVAILABILITY_HEADER, rows, (0, 1, 5), box=box.SIMPLE_HEAD,
                                               pad_edge=False))  # fmt: skip


def tpcc_lines(store: Store, run_id: int) -> list[str]:
    """TPC-C figures, consistency verdicts and stalls of a run's trials, one line each."""
    from clusterbench.workloads import tpcc

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
    """Export runs in open formats, each with its format version: per-second samples (csv), one row
    per trial (summary), everything with the verdicts (json; its JSON Schema ships in the package),
    a scenario's list-append history for Elle (edn), the servers' figures (telemetry), or
    OpenMetrics for Prometheus (openmetrics). See docs/results.md."""
    from clusterbench.analysis.export import summary_csv

    if fmt not in EXPORT_FORMATS:
        raise InputError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
    if len(run_refs) > 1 and fmt not in ("summary", "openmetrics"):
        raise InputError(f"--format {fmt} exports one run; several runs go into --format summary")
    with store_at(results, must_exist=True) as store:
        run_ids = [resolve_run(store, ref) for ref in run_refs]
        if fmt == "csv":
            from clusterbench.store.export import samples_csv

            text = samples_csv(store, run_ids[0])
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


results_app.command("list")(results_list)
results_app.command("show")(results_show)
results_app.command("tag")(results_tag)
results_app.command("export")(results_export)
results_app.command("delete")(results_delete)
results_app.command("baseline")(results_baseline)
