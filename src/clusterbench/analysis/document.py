"""A run's report as data, rendered by two jinja2 templates (templates/report.md.j2 and
report.html.j2) that walk the same sections, so the Markdown and the HTML report cannot drift:
every heading, table, note and value is built once here. Only the plots are HTML-only (inline SVG);
the Markdown has the same section with the per-trial figures as a table.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

from clusterbench.analysis import plots
from clusterbench.analysis.compare import CAVEAT, compare_runs
from clusterbench.analysis.histograms import histogram_section
from clusterbench.analysis.report import (
    AVAILABILITY_HEADER,
    CLIENT_HEADER,
    SATURATION_WARNING,
    VERIFY_LATENCY_HEADER,
    SummaryRow,
    availability_rows,
    client_tables,
    fault_rows,
    fault_windows,
    saturation_lines,
    summary_rows,
    summary_tables,
    trial_clients_of,
    trial_series,
    verdict_rows,
    verification_latency_rows,
)
from clusterbench.analysis.sections import Figure, Report, Section, Table, provenance_section
from clusterbench.analysis.variables import cell as variable_cell
from clusterbench.analysis.variables import variable_report
from clusterbench.analysis.workload_tables import (
    ACCESS_HEADER,
    ACCESS_NOTE,
    SLAP_HEADER,
    SLAP_NOTE,
    access_table,
    slap_table,
)
from clusterbench.store import Store
from clusterbench.telemetry.report import bottleneck_section, telemetry_figures, telemetry_section

# What sysbench's --mysql-ignore-errors codes mean (MariaDB server codes, client library codes).
ERROR_CODES: dict[int, str] = {
    1020: "record changed since it was read",
    1047: "node not ready for queries (Galera: not in a Primary component)",
    1053: "server shutting down",
    1180: "error during COMMIT (through Galera: the commit lost a certification conflict)",
    1205: "lock wait timeout",
    1213: "deadlock (through Galera mostly a certification conflict with another node's write)",
    1927: "connection killed",
    1290: "write refused by a read-only server (Group Replication: a member on its way out, or no "
    "longer the primary)",
    2006: "server has gone away",
    2011: "TCP connection error (client)",
    2013: "lost connection during a query",
    2055: "lost connection (client, with the system error)",
    3101: "COMMIT rolled back by the replication plugin (Group Replication multi-primary: the write set "
    "lost certification against another member's)",
    4031: "disconnected by the server (MySQL: idle timeout)",
}

UNITS_NOTE = (
    "Units: tps = transactions per second and reads/s, writes/s, other/s = queries per second, per "
    "second of measured time (warm-up excluded), all clients added up; latencies in milliseconds per "
    "transaction; p95 and p99 from the latency histogram of all clients added together (sysbench's "
    "buckets, 1.8 % apart), never from averaged percentiles; errors = statements that failed with an "
    "error sysbench was told to ignore; reconnects = connections sysbench opened again after losing one."
)


def _r(n: int) -> list[str]:
    return ["r"] * n


def _align(header: Sequence[str], left: Sequence[int]) -> list[str]:
    return ["l" if i in left else "r" for i in range(len(header))]


def _fmt(v: float | None, spec: str = ",.2f") -> str:
    return "—" if v is None else format(v, spec)


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:+.1%}"


def _summary_section(
    store: Store, run_id: int, rows: list[SummaryRow], trials: list[Any], problems: list[str]
) -> Section:
    sec = Section("summary", "Summary")
    for part in summary_tables(rows):
        caption = part.caption[0].upper() + part.caption[1:]
        sec.tables.append(Table(part.header, part.rows, part.align, caption=caption))
    sec.paragraphs.append(UNITS_NOTE)
    codes: set[str] = set()
    for tr in trials:
        ig = tr.params.get("ignore_errors")
        if ig is not None:
            codes.add("all" if ig == "all" else ",".join(str(c) for c in ig))
    if codes:
        if codes == {"all"}:
            sec.paragraphs.append(
                "Errors: sysbench ignored every error (--mysql-ignore-errors=all) and retried; it counts "
                "them without their codes."
            )
        else:
            listed = sorted({int(c) for cs in codes if cs != "all" for c in cs.split(",") if c})
            meaning = "; ".join(f"{c} {ERROR_CODES[c]}" if c in ERROR_CODES else str(c) for c in listed)
            sec.paragraphs.append(
                "Errors: statements that failed with one of the codes sysbench was told to ignore "
                "(--mysql-ignore-errors), after which it retried the transaction; they cost time, not "
                f"correctness, and sysbench counts them without their codes. The codes: {meaning}. "
                "Any other error stops the test (its row is then marked failed)."
            )
    if any(r.workload == "bulk_insert" for r in rows):
        sec.paragraphs.append(
            "bulk_insert: one event is one row added to a multi-row INSERT that sysbench sends when its "
            "buffer is full, so its tps is rows per second and writes/s counts the INSERT statements. "
            "Adding a row to the buffer takes well under a microsecond, below the 0.001 ms floor of "
            "sysbench's latency histogram, so its latencies read as 0.00 ms or — and say nothing about "
            "the server: judge bulk_insert by rows per second."
        )
    failures = {e["trial_id"]: e["detail"].get("reason") for e in store.events(run_id)
                if e["kind"] == "trial_failed"}  # fmt: skip
    seq_of = {t.id: t.seq for t in trials}
    for tr in trials:
        if tr.status == "completed":
            continue
        row = next((r for r in rows if r.trial == tr.seq), None)
        measured = (
            f"its row adds up the {row.seconds} second(s) measured before it stopped"
            if row is not None and row.from_samples
            else "it stored no measurement"
            if row is None or row.tps is None
            else "its row is sysbench's own summary"
        )
        reason = failures.get(tr.id)
        problems.append(
            f"trial {seq_of[tr.id]} ({tr.workload}) {tr.status}"
            + (f": {reason}" if reason else "")
            + f"; {measured}."
        )
    return sec


def _series(store: Store, trial_id: int) -> plots.Series:
    pts = [p for p in trial_series(store, trial_id) if p.complete]
    return plots.Series([p.t for p in pts], [p.tps for p in pts], [p.lat_avg for p in pts],
                        [p.p95 for p in pts], [p.p99 for p in pts])  # fmt: skip


def _series_section(
    store: Store, run_id: int, trials: list[Any], baseline: tuple[int, dict[str, Any]] | None
) -> Section:
    sec = Section("series", "Per-second series")
    sec.intro.append(
        "Every measured second of each trial, all clients added up; an interval that not every client "
        "reported is left out (it would show a drop that did not happen)."
        + (f" Dashed grey: the same test in run {baseline[0]}." if baseline else "")
        + " Fault windows and stalls (intervals under 10 % of the trial's median tps) are shaded."
    )
    head = ["trial", "test", "seconds", "tps min", "tps median", "tps max", "p95 median ms", "p95 max ms",
            "worst p95 at s"]  # fmt: skip
    rows = []
    for tr in trials:
        s = _series(store, tr.id)
        p95 = [(v, t) for v, t in zip(s.p95, s.t, strict=True) if v is not None]
        worst = max(p95) if p95 else None
        rows.append([
            str(tr.seq), tr.workload, str(len(s.t)), _fmt(min(s.tps, default=None)),
            _fmt(statistics.median(s.tps) if s.tps else None), _fmt(max(s.tps, default=None)),
            _fmt(statistics.median([v for v, _ in p95]) if p95 else None), _fmt(worst[0] if worst else None),
            f"{worst[1]:g}" if worst else "—",
        ])  # fmt: skip
        title = f"trial {tr.seq}: {tr.workload}" + ("" if tr.status == "completed" else f" ({tr.status})")
        if not s.t:
            sec.paragraphs.append(f"{title}: no measured second to plot.")
            continue
        windows = [plots.Window(lbl, a, b) for lbl, a, b in fault_windows(store, run_id, tr.id)]
        # stalls (intervals under 10 % of the median tps), centred on their points
        stalls = (store.provenance(run_id, tr.id).get("stalls") or {}).get("runs") or []
        windows += [plots.Window("stall", t0 - 0.5, t0 + n - 0.5) for t0, n in stalls]
        clients = trial_clients_of(store, tr.id)
        per_client = []
        if len(clients) > 1:
            for c in clients:
                own = store.samples(tr.id, client=c)
                per_client.append(
                    (f"client {c}", [float(round(r["t"])) for r in own], [r["tps"] for r in own])
                )
        base = None
        if baseline is not None and tr.workload in baseline[1]:
            base = _series(store, baseline[1][tr.workload])
        label = f"run {baseline[0]}" if baseline else "baseline"
        tps = plots.tps_svg(s, windows=windows, clients=per_client, baseline=base, baseline_label=label)
        lin, lg = plots.latency_svgs(s, windows=windows, baseline=base, baseline_label=label)
        sec.figures.append(Figure(title, tps))
        sec.figures.append(Figure("", lin, lg, "latency"))
        sec.figures += telemetry_figures(store, tr.id, s.t, windows)
    sec.tables.append(Table(head, rows, _align(head, [1])))
    return sec


def _overview_section(
    rows: list[SummaryRow], baseline_rows: list[SummaryRow] | None, base_id: int | None
) -> Section:
    bars = [plots.Bar(r.workload, r.tps, r.p95) for r in rows]
    base = [plots.Bar(r.workload, r.tps, r.p95) for r in baseline_rows or []]
    sec = Section("overview", "Overview")
    sec.intro.append(
        "tps and p95 latency of every test of the run at a glance"
        + (f", beside run {base_id}'s (grey)." if base_id is not None else ".")
        + " The numbers are those of the summary table."
    )
    sec.figures.append(Figure("tps and p95 per test", plots.overview_svg(bars, base, f"run {base_id}")))
    return sec


def _comparison_section(store: Store, run_id: int, base_id: int) -> Section:
    cmp = compare_runs(store, base_id, run_id)
    head = ["test", f"tps run {base_id}", f"tps run {run_id}", "tps change", f"p95 ms run {base_id}",
            f"p95 ms run {run_id}", "p95 change", f"p99 ms run {base_id}", f"p99 ms run {run_id}",
            "p (Welch)", "p (MWU)", "verdict"]  # fmt: skip
    rows = [
        [d.test, _fmt(d.tps_a), _fmt(d.tps_b), _pct(d.tps_change), _fmt(d.p95_a), _fmt(d.p95_b),
         _pct(d.p95_change), _fmt(d.p99_a), _fmt(d.p99_b), _fmt(d.p_welch, ".3g"), _fmt(d.p_mwu, ".3g"),
         d.verdict]
        for d in cmp.rows
    ]  # fmt: skip
    sec = Section("comparison", f"Compared with run {base_id}")
    sec.intro.append(
        f"Run {run_id} against run {base_id}, test by test: change = (this − baseline) / baseline; the "
        f"verdict says whether the per-second tps differ at alpha {cmp.alpha:g} (Welch's t). {CAVEAT}."
    )
    sec.tables.append(Table(head, rows, _align(head, [0, 11])))
    if cmp.only_a or cmp.only_b:
        sec.paragraphs.append(
            f"Only in run {base_id}: {', '.join(cmp.only_a) or 'none'}; only in run {run_id}: "
            f"{', '.join(cmp.only_b) or 'none'}."
        )
    return sec


def _variables_section(store: Store, run_id: int, problems: list[str]) -> Section | None:
    rep = variable_report(store, run_id)
    if not rep.nodes:
        return None
    sec = Section("variables", "Server variables as run")
    sec.intro.append(
        "What each server reported (SHOW GLOBAL VARIABLES at the start and the end of every trial), "
        "beside what the topology asked for: the key variables, every variable the topology sets, and "
        "every variable that differs between nodes or changed during the run. A value that changed "
        "shows as 'old → new (where first seen)'. Flagged (!): differs from the topology, from the "
        "other nodes, or changed."
    )
    head = ["variable", "topology", *rep.nodes]
    rows, marks = [], set()
    for i, row in enumerate(rep.rows):
        cells = [row.name, row.expected_text or row.expected or "—"]
        for j, node in enumerate(rep.nodes):
            cells.append(variable_cell(row, node))
            if node in row.differs_from_topology or node in row.changed or node in row.odd_nodes:
                marks.add((i, 2 + j))
        rows.append(cells)
    sec.tables.append(Table(head, rows, ["l"] * len(head), marks))
    for row in rep.findings:
        what = []
        if row.differs_from_topology:
            nodes = ", ".join(sorted(row.differs_from_topology))
            what.append(f"{nodes} not as the topology's {row.expected_text or row.expected}")
        if row.differs_between_nodes:
            what.append("differs between nodes")
        if row.changed:
            what.append(f"changed during the run on {', '.join(sorted(row.changed))}")
        sec.warnings.append(f"{row.name}: {'; '.join(what)}")
    if rep.findings:
        problems.append(
            "the servers did not all run as the topology says: "
            + ", ".join(r.name for r in rep.findings)
            + " (see 'Server variables as run')"
        )
    for node, where in rep.unanswered.items():
        sec.paragraphs.append(f"{node} did not answer at {where} (e.g. it was stopped or killed then).")
    return sec


def build_report(
    store: Store, run_id: int, *, baseline: int | None = None, log_latency: bool = False
) -> Report:
    """The report of a run: what it ran on and how it came out first (the outcome, the verdicts
    with the outage each path saw), then the numbers, then the record (settings, provenance, events)."""
    run = store.get_run(run_id)
    trials = store.trials(run_id)
    rows = summary_rows(store, run_id)
    warnings = _saturation_warnings(store, run_id)
    sections: list[Section] = []
    base_rows = None
    base_trials: dict[str, int] = {}
    if baseline is not None:
        store.get_run(baseline)
        base_rows = summary_rows(store, baseline)
        for t in store.trials(baseline):
            base_trials.setdefault(t.workload, t.id)
    if len(rows) > 1 or baseline is not None:
        sections.append(_overview_section(rows, base_rows, baseline))
    sections += _outcome_sections(store, run_id)
    sections.append(_summary_section(store, run_id, rows, trials, warnings))
    neck = bottleneck_section(store, run_id)
    if neck is not None:
        sections.append(neck)
    if baseline is not None:
        sections.append(_comparison_section(store, run_id, baseline))
    if trials:
        base = (baseline, base_trials) if baseline is not None else None
        sections.append(_series_section(store, run_id, trials, base))
        tele = telemetry_section(store, run_id, trials)
        if tele is not None:
            sections.append(tele)
        hist = histogram_section(store, trials)
        if hist is not None:
            sections.append(hist)
    sections += _tpcc_and_stall_sections(store, run_id, trials)
    sections += _load_sections(store, run_id)
    sections += _record_sections(store, run_id, trials, warnings)
    title = f"Run {run.id}: {run.name or run.kind}"
    return Report(run.id, title, _facts(store, run), {"command"}, warnings, sections, log_latency)


def _facts(store: Store, run: Any) -> list[tuple[str, str]]:
    """The header: what the run was, its outcome in one line, where it ran and whether the machine
    itself was the limit; then when, with what labels, from which command."""
    from clusterbench.analysis.outcome import (
        ENGINE_LABELS,
        durability_line,
        environment_line,
        label_facts,
        overview,
    )

    ov = overview(store, run.id)
    prov = store.provenance(run.id)
    engine = ", ".join(ENGINE_LABELS.get(e, e) for e in ov.engine.split(","))
    facts: list[tuple[str, str]] = [
        ("run", f"{run.id} ({run.kind}{', ' + run.name if run.name else ''})"),
        ("engine", engine + (f", cluster {ov.cluster}" if ov.cluster else "")),
        ("outcome", ov.outcome + (f": {ov.verdicts.result}" if ov.verdicts.result else "")),
        ("environment", environment_line(store, run.id)),
        ("durability", durability_line(store, run.id) or "not known (no server answered)"),
        ("status", run.status),
        ("started", run.started_at),
        ("ended", run.ended_at or "—"),
    ]
    ep = prov.get("endpoint")
    if isinstance(ep, dict):
        facts.append(("endpoint", f"{ep.get('name')} ({', '.join(ep.get('addresses') or [])})"))
    return facts + label_facts(store, run)


def _saturation_warnings(store: Store, run_id: int) -> list[str]:
    sat = saturation_lines(store, run_id)
    if not sat:
        return []
    return [f"{SATURATION_WARNING}: " + "; ".join(f"trial {where}: {w}" for where, w in sat)]


def _outcome_sections(store: Store, run_id: int) -> list[Section]:
    """The verdicts and the outage each entry point saw: first, before any telemetry."""
    out = []
    verdicts = verdict_rows(store, run_id)
    if verdicts:
        seqs = {t.id: t.seq for t in store.trials(run_id)}
        head = ["trial", "checker", "result", "summary"]
        vr = [[str(seqs.get(v["trial_id"], "-")), v["checker"],
               v["result"] + (" (documented limitation)" if v["documented_limitation"] else ""),
               v["summary"]] for v in verdicts]  # fmt: skip
        styles = {(i, 2): v["result"].lower() for i, v in enumerate(verdicts)}
        table = Table(head, vr, ["r", "l", "l", "l"], styles=styles)
        out.append(Section("verdicts", "Verdicts", tables=[table]))
    avail = availability_rows(verdicts)
    if avail:
        out.append(Section(
            "availability", "Availability",
            intro=["Per entry point: a fresh connection and a small write every 100 ms."],
            tables=[Table(AVAILABILITY_HEADER, avail, _align(AVAILABILITY_HEADER, [0, 1, 5]))],
        ))  # fmt: skip
    return out


def _load_sections(store: Store, run_id: int) -> list[Section]:
    """Access methods, mysqlslap, per-client tables, verification latency and the faults."""
    out = []
    access = access_table(store, run_id)
    if access:
        out.append(Section("access-methods", "Access methods", tables=[
            Table(ACCESS_HEADER, access, _align(ACCESS_HEADER, [1]))], paragraphs=[ACCESS_NOTE]))  # fmt: skip
    slap = slap_table(store, run_id)
    if slap:
        out.append(Section("mysqlslap", "mysqlslap", tables=[
            Table(SLAP_HEADER, slap, _align(SLAP_HEADER, []))], paragraphs=[SLAP_NOTE]))  # fmt: skip
    for ct in client_tables(store, run_id):
        out.append(Section(
            f"clients-{ct.trial.seq}", f"Clients of trial {ct.trial.seq} ({ct.trial.workload})",
            tables=[Table(CLIENT_HEADER, ct.rows, _align(CLIENT_HEADER, [1, 2, 3, 12]))], paragraphs=ct.notes,
        ))  # fmt: skip
    vlat = verification_latency_rows(store, run_id)
    if vlat:
        out.append(Section(
            "verification-latency", "Verification latency",
            intro=["Successful operations; percentiles from the sum of the clients' HDR histograms."],
            tables=[Table(VERIFY_LATENCY_HEADER, vlat, _align(VERIFY_LATENCY_HEADER, [1, 9]))],
        ))  # fmt: skip
    faults = fault_rows(store, run_id)
    if faults:
        head = ["t s", "fault", "phase", "detail"]
        out.append(Section("faults", "Faults", tables=[Table(head, faults, ["r", "l", "l", "l"])]))
    return out


def _record_sections(store: Store, run_id: int, trials: list[Any], warnings: list[str]) -> list[Section]:
    """What the run ran with: server variables as run, provenance, events."""
    out = []
    var = _variables_section(store, run_id, warnings)
    if var is not None:
        out.append(var)
    prov = provenance_section(store.provenance(run_id), "What the run ran on and with, as stored with it.")
    if prov is not None:
        out.append(prov)
    events = store.events(run_id)
    if events:
        seqs = {t.id: t.seq for t in trials}
        head = ["at", "t s", "trial", "event", "detail"]
        er = [[e["at"], _fmt(e["t"], ".1f"), str(seqs.get(e["trial_id"], "")) if e["trial_id"] else "",
               e["kind"], json.dumps(e["detail"], sort_keys=True)] for e in events]  # fmt: skip
        out.append(Section("events", "Events", tables=[Table(head, er, ["l", "r", "r", "l", "l"])]))
    return out


# ---- rendering ---------------------------------------------------------------------------------------


def _breakable(text: Any) -> markupsafe.Markup:
    """HTML that may break a long name after its underscores (wsrep_slave_threads in a header)."""
    return markupsafe.escape(str(text)).replace("_", markupsafe.Markup("_<wbr>"))


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("clusterbench.analysis", "templates"),
        autoescape=autoescape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md"] = _md_cell
    env.filters["breakable"] = _breakable
    return env


def render_markdown_report(report: Report) -> str:
    return _environment(False).get_template("report.md.j2").render(r=report)


def render_html_report(report: Report) -> str:
    return _environment(True).get_template("report.html.j2").render(r=report)


def render_markdown(store: Store, run_id: int, **kw: Any) -> str:
    return render_markdown_report(build_report(store, run_id, **kw))


def render_html(store: Store, run_id: int, **kw: Any) -> str:
    return render_html_report(build_report(store, run_id, **kw))


def write_report(
    store: Store, run_id: int, out_dir: Path, *, baseline: int | None = None, log_latency: bool = False
) -> tuple[Path, Path]:
    """Write report-<run>.md and report-<run>.html (report-<run>-vs-<baseline>.* with a baseline)
    into out_dir; return both paths."""
    rep = build_report(store, run_id, baseline=baseline, log_latency=log_latency)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"report-{run_id}" + (f"-vs-{baseline}" if baseline is not None else "")
    md, page = out_dir / f"{stem}.md", out_dir / f"{stem}.html"
    md.write_text(render_markdown_report(rep))
    page.write_text(render_html_report(rep))
    return md, page


TPCC_HEADER = [
    "trial", "transaction", "count", "share %", "mix %", "rolled back", "retries", "mean ms", "p95 ms",
    "p99 ms",
]  # fmt: skip
STALL_HEADER = [
    "trial", "workload", "median tps", "stall below tps", "stalled intervals", "longest run", "at s",
]  # fmt: skip


def _tpcc_and_stall_sections(store: Store, run_id: int, trials: Sequence[Any]) -> list[Section]:
    """TPC-C figures (tpmC, per-type counts, the consistency verdicts, the load) and the stalls."""
    from clusterbench.workloads.tpcc import MIX, TYPES, load_line

    out: list[Section] = []
    run_prov = store.provenance(run_id)
    tpcc_rows: list[list[str]] = []
    intro: list[str] = []
    if run_prov.get("tpcc_load"):
        intro.append(load_line(run_prov["tpcc_load"]) + ".")
    for key, rep in sorted(run_prov.items()):
        if key.startswith("tpcc_consistency@load"):
            intro.append(f"Consistency right after loading ({key.split(':', 1)[-1]}): {rep['verdict']}.")
    stall_rows: list[list[str]] = []
    for tr in trials:
        prov = store.provenance(run_id, tr.id)
        f = prov.get("tpcc")
        if f:
            intro.append(
                f"Trial {tr.seq}: tpmC {f['tpmC']:,.0f} (New-Order per minute, rolled-back ones included), "
                f"tpm {f['tpm']:,.0f} (all five types), {f['retries']} retries after deadlocks or "
                "certification conflicts."
            )
            asked = tr.params.get("mix")  # the trial's --mix, else the standard mix
            want = dict(zip(TYPES, asked, strict=True)) if asked else MIX
            for t in TYPES:
                x = f["types"][t]
                tpcc_rows.append([str(tr.seq), t, str(x["count"]), _fmt(x["share_pct"], ".1f"),
                                  f"{want[t]:.0f}", str(x["rollbacks"]), str(x["retries"]),
                                  _fmt(x["mean_ms"]), _fmt(x.get("p95_ms")),
                                  _fmt(x.get("p99_ms"))])  # fmt: skip
        for key, rep in sorted(prov.items()):
            if key.startswith("tpcc_consistency:"):
                bad = [c for c in rep["conditions"] if c["status"] != "PASS"]
                what = "; ".join(f"condition {c['condition']} ({c['title']}): {c['status']}" for c in bad)
                intro.append(f"Trial {tr.seq} consistency ({key.split(':', 1)[1]}): {rep['verdict']}"
                             + (f" — {what}" if what else "") + ".")  # fmt: skip
        st = prov.get("stalls")
        if st:
            at = ", ".join(f"{r[0]:g}" + (f"+{r[1] - 1:g}" if r[1] > 1 else "") for r in st["runs"][:12])
            stall_rows.append([str(tr.seq), tr.workload, _fmt(st["median_tps"]), _fmt(st["threshold_tps"]),
                               str(st["count"]), f"{st['longest']:g}", at or "—"])  # fmt: skip
    if tpcc_rows or intro:
        tables = [Table(TPCC_HEADER, tpcc_rows, _align(TPCC_HEADER, [1]))] if tpcc_rows else []
        out.append(Section("tpcc", "TPC-C", intro=intro, tables=tables))
    if any(r[4] != "0" for r in stall_rows):
        note = ("A stall is a report interval whose tps (all clients) is under 10 % of the trial's median; "
                "'at s' lists each run of stalls as its start (+ further intervals).")  # fmt: skip
        table = Table(STALL_HEADER, stall_rows, _align(STALL_HEADER, [1, 6]))
        out.append(Section("stalls", "Stalls", intro=[note], tables=[table]))
    return out
