"""The experiment report: Markdown and one self-contained HTML page rendered from one description
(analysis/document.py's Report, by the same templates as run reports), and CSV files.

* an overview of the parts (design, factors and levels, points, trials);
* per part: tps and p95 against each factor (medians with their CIs, one line per combination of
  the other factors, a panel per level of one of them when there are many), the median tps change
  against a baseline point (experiment.baseline, else the first level of the part's first
  factor), and a table per point: n, median tps with its CI and real coverage, CV (flagged when
  high), p95 from the pooled histograms of the repetitions, errors, rate, change;
* designed parts and searches: their own sections (doe_report.py, search_report.py);
* faults inside trials, saturated load clients, the per-second series of every trial as small
  multiples (one panel per point, its repetitions overlaid, fault windows shaded), the wall time,
  provenance.

The plots are inline SVG (analysis/plots.py): no script, no external file.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clusterbench.analysis import design_plots, plots
from clusterbench.analysis.document import render_html_report, render_markdown_report
from clusterbench.analysis.sections import Figure, Report, Section, Table
from clusterbench.experiment.planner import label
from clusterbench.experiment.report_sections import (
    FAULT_HEADER as FAULT_HEADER,
)
from clusterbench.experiment.report_sections import (
    _short as _short,
)
from clusterbench.experiment.report_sections import (
    _where as _where,
)
from clusterbench.experiment.report_sections import (
    client_findings as client_findings,
)
from clusterbench.experiment.report_sections import (
    client_section as client_section,
)
from clusterbench.experiment.report_sections import (
    client_warning as client_warning,
)
from clusterbench.experiment.report_sections import (  # re-exported: the report's parts
    fault_effects as fault_effects,
)
from clusterbench.experiment.report_sections import (
    fault_section as fault_section,
)
from clusterbench.experiment.report_sections import (
    fault_table_rows as fault_table_rows,
)
from clusterbench.experiment.report_sections import (
    provenance_section as provenance_section,
)
from clusterbench.experiment.report_sections import (
    series_section as series_section,
)
from clusterbench.experiment.report_sections import (
    wall_section as wall_section,
)
from clusterbench.experiment.report_text import converged_text as converged_text  # re-exported
from clusterbench.experiment.report_text import level_text as level_text
from clusterbench.experiment.report_text import num_text as _f
from clusterbench.experiment.report_text import varying as varying
from clusterbench.experiment.results import (
    POINT_CSV,
    PointStats,
    experiment_info,
    point_csv_rows,
    point_stats,
)
from clusterbench.experiment.runner import trial_rows
from clusterbench.experiment.workload_sections import (
    INTERCONNECT_NOTE as INTERCONNECT_NOTE,
)
from clusterbench.experiment.workload_sections import (  # re-exported
    access_section as access_section,
)
from clusterbench.experiment.workload_sections import (
    interconnect_tables as interconnect_tables,
)
from clusterbench.experiment.workload_sections import (
    slap_section as slap_section,
)
from clusterbench.experiment.workload_sections import (
    tpcc_section as tpcc_section,
)
from clusterbench.store import Store
from clusterbench.telemetry.report import point_bottleneck, point_tier
from clusterbench.workloads.sysbench import HTTP_TESTS

CI_NOTE = (
    "tps: the median over a point's repetitions with its order-statistic confidence interval (95 %; "
    "with fewer than 6 repetitions no such interval exists and the table shows [min, max] with its real "
    "coverage: 50 % for 2, 75 % for 3). p95: read from the repetitions' latency histograms added "
    "together, never from averaged percentiles; its interval spans the repetitions' own p95. Latencies "
    "in milliseconds per transaction, tps in transactions per second of measured time (warm-up "
    "excluded), all clients added up."
)
MAX_LINES = 6  # more lines than this in one panel: a panel per level of one of the other factors
MAX_PANELS = 9
MAX_FACTOR_COLUMNS = 7  # a points table shows each factor in a column, up to this many


def baseline_of(points: Sequence[PointStats], baseline: dict[str, Any]) -> dict[str, Any]:
    """The levels that define a point's baseline: experiment.baseline's for the factors that vary
    here, else the first point's level of the first factor that varies."""
    vary = varying(points)
    base = {k: v for k, v in baseline.items() if k in vary}
    if not base and vary:
        base = {vary[0]: points[0].point[vary[0]]}
    return base


def baseline_changes(
    points: Sequence[PointStats], baseline: dict[str, Any]
) -> list[tuple[str, float | None]]:
    """(point label, % change of median tps against its baseline point: the point with the
    baseline's levels and the other factors equal)."""
    base = baseline_of(points, baseline)
    by_point = {json.dumps(p.point, sort_keys=True): p for p in points}
    out: list[tuple[str, float | None]] = []
    for p in points:
        ref = by_point.get(json.dumps({**p.point, **base}, sort_keys=True))
        if ref is None or ref.tps_ci is None or p.tps_ci is None or ref.tps_ci.median == 0:
            out.append((p.label, None))
        else:
            out.append((p.label, 100.0 * (p.tps_ci.median - ref.tps_ci.median) / ref.tps_ci.median))
    return out


def rate_text(rate: int) -> str:
    return f"{rate} tps" if rate else "max (unthrottled)"


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def levels_of(info: dict[str, Any], part: str, factor: str, points: Sequence[PointStats]) -> list[Any]:
    """The levels of a factor that the part's points have: numbers in ascending order, others in
    the file's order (levels the file does not list, such as a design's centre, after them)."""
    stored = (((info.get("parts") or {}).get(part) or {}).get("factors") or {}).get(factor) or []
    seen: dict[str, Any] = {}
    for p in points:
        if factor in p.point:
            seen.setdefault(_key(p.point[factor]), p.point[factor])
    if all(_is_number(v) for v in seen.values()):
        return sorted(seen.values(), key=float)
    known = [v for v in stored if _key(v) in seen]
    rest = [v for k, v in seen.items() if k not in {_key(x) for x in known}]
    return known + sorted(rest, key=str)


# ---- per part ------------------------------------------------------------------------------------


def _factor_figures(info: dict[str, Any], part: str, pts: Sequence[PointStats], factor: str) -> list[Figure]:
    """tps and p95 against one factor: lines per combination of the other factors; with more than
    MAX_LINES of them, a panel per level of the other factor with the fewest levels."""
    levels = levels_of(info, part, factor, pts)
    index = {_key(v): i for i, v in enumerate(levels)}
    others = [k for k in varying(pts) if k != factor]
    facet = None
    if len(others) >= 2 and len({tuple(_key(p.point.get(k)) for k in others) for p in pts}) > MAX_LINES:
        counts = {k: len({_key(p.point.get(k)) for p in pts}) for k in others}
        facet = min(others, key=lambda k: (counts[k], others.index(k)))
        if counts[facet] > MAX_PANELS:
            facet = None
    lines = [k for k in others if k != facet]
    panel_levels = levels_of(info, part, facet, pts) if facet else [None]
    grouped: dict[str, dict[str, list[PointStats]]] = {_key(v): {} for v in panel_levels}
    for p in pts:
        where = grouped[_key(p.point.get(facet)) if facet else _key(None)]
        where.setdefault(label((k, p.point[k]) for k in lines if k in p.point) or "median", []).append(p)
    # lines only where they join points: on average at least two per line (a grid), else markers
    # (a design or a search, whose other factors all differ from point to point)
    connect = 2 * sum(len(g) for g in grouped.values()) <= len(pts)

    def estimates(ps: list[PointStats], what: str) -> list[plots.Estimate]:
        out = []
        for p in ps:
            i = index[_key(p.point.get(factor))]
            if what == "tps":
                t = p.tps_ci
                out.append(
                    plots.Estimate(i, t.median if t else None, t.low if t else None, t.high if t else None)
                )
            else:
                q = p.p95_ci
                out.append(plots.Estimate(i, p.p95_pooled, q.low if q else None, q.high if q else None))
        return out

    def panels(what: str) -> list[plots.Panel]:
        if not connect:  # a design's points: every other factor varies, so no line joins two of them
            return [plots.Panel("", [plots.Curve(p.label, estimates([p], what)) for p in pts])]
        return [
            plots.Panel(f"{facet}={level_text(v)}" if facet else "",
                        [plots.Curve(name, estimates(ps, what)) for name, ps in grouped[_key(v)].items()])
            for v in panel_levels
        ]  # fmt: skip

    xs = [level_text(v) for v in levels]
    how = "" if connect else " (one marker per point)"
    tps = plots.curves_svg(plots.CurveChart(
        xs, panels("tps"), xlabel=factor, ylabel="tps", connect=connect,
        title=f"tps: median and CI over the repetitions{how}",
    ))  # fmt: skip
    lin, log = plots.curves_latency_svgs(plots.CurveChart(
        xs, panels("p95"), xlabel=factor, ylabel="p95 ms", connect=connect,
        title=f"p95 latency, ms: pooled, with the repetitions' range{how}",
    ))  # fmt: skip
    return [Figure(f"{part}: tps and p95 against {factor}", tps), Figure("", lin, log, "latency")]


def _points_table(
    pts: Sequence[PointStats], changes: Sequence[float | None], cv_warn: float, store: Store | None = None
) -> Table:
    vary = varying(pts)
    by_factor = 0 < len(vary) <= MAX_FACTOR_COLUMNS
    changed = any(c not in (None, 0.0) for c in changes)
    keys = vary if by_factor else ["point"]
    rates = len({p.rate for p in pts}) > 1  # a constant rate is said once, in the part's intro
    # one coverage for every point (the same number of repetitions everywhere): said in the header
    covers = {f"{p.tps_ci.coverage:.0%}" for p in pts if p.tps_ci is not None and p.n > 1}
    one_cover = covers.pop() if len(covers) == 1 else None
    ci_head = f"tps CI ({one_cover} coverage)" if one_cover else "tps CI (coverage)"
    # the HTTP tests: the tail users see (p99), and which tier limited each point
    http = any(t in HTTP_TESTS for p in pts for t in p.tests)
    head = [*keys, "n", "tps median", ci_head, "tps CV", "p95 ms (pooled)", "p95 ms range"]
    head += (["p99 ms (pooled)"] if http else []) + ["errors/s"]
    head += (["--rate per client"] if rates else []) + (["tps vs baseline"] if changed else [])
    # each point's bottleneck: the most common verdict of its repetitions (telemetry)
    necks = [point_bottleneck(store, p.trial_ids) for p in pts] if store is not None else []
    if not any(n != "—" for n in necks):
        necks = []
    tiers = [point_tier(store, p.trial_ids) for p in pts] if store is not None and http and necks else []
    head += (["bottleneck"] if necks else []) + (["tier"] if tiers else [])
    auto = any(p.convergence is not None for p in pts)
    head += ["converged"] if auto else []
    rows: list[list[str]] = []
    marks: set[tuple[int, int]] = set()
    cv_col = len(keys) + 3
    for i, (p, ch) in enumerate(zip(pts, changes, strict=True)):
        t, q = p.tps_ci, p.p95_ci
        cv = "—" if p.cv is None else f"{p.cv:.1%}"
        if p.cv_high:
            marks.add((i, cv_col))
        first = [level_text(p.point.get(k)) for k in vary] if by_factor else [p.label]
        err = statistics.median(p.errors_per_s) if p.errors_per_s else 0.0
        ci = "—"  # one repetition has no interval
        if t and p.n > 1:
            ci = f"{t.low:,.1f} – {t.high:,.1f}" + ("" if one_cover else f" ({t.coverage:.0%})")
        spread = f"{q.low:.2f} – {q.high:.2f}" if q and len(p.p95s) > 1 else "—"
        cells = [*first, str(p.n), _f(t.median if t else None), ci, cv, _f(p.p95_pooled, ".2f"), spread]
        cells += [_f(p.p99_pooled, ".2f")] if http else []
        rows.append(
            [*cells, f"{err:.2f}"]
            + ([rate_text(p.rate)] if rates else [])
            + (["—" if ch is None else f"{ch:+.1f}%"] if changed else [])
            + ([necks[i]] if necks else [])
            + ([tiers[i]] if tiers else [])
            + ([converged_text(p)] if auto else [])
        )
    # levels that are numbers are right-aligned like every other number
    numeric = [by_factor and all(_is_number(p.point.get(k)) for p in pts) for k in keys]
    words = (1 if necks else 0) + (1 if tiers else 0)
    align = ["r" if x else "l" for x in numeric] + ["r"] * (len(head) - len(keys) - words)
    align += ["l"] * words
    align += ["l"] if auto else []
    return Table(head, rows, align, marks, caption=f"Points (CV flagged (!) above {cv_warn:.0%})")


def repetitions_fact(settings: dict[str, Any], points: Sequence[PointStats]) -> str:
    order = f", {settings['repetition_order']}" if settings.get("repetition_order") else ""
    if settings.get("repetitions") != "auto":
        return f"{settings.get('repetitions', '?')} per point{order}"
    tol = float(settings.get("ci_tolerance", 0.05))
    done = [p for p in points if p.convergence is not None]
    ok = sum(1 for p in done if p.convergence is not None and p.convergence.converged)
    return (
        f"auto: {settings.get('min_repetitions', '?')}-{settings.get('max_repetitions', '?')} per point, "
        f"until the 95 % CI of the {settings.get('ci_statistic', 'median')} (of µs/access for access tests, "
        f"else tps) is within {tol:.0%} of it; {ok} of {len(done)} point(s) converged{order}"
    )


def part_sections(
    store: Store, run_id: int, info: dict[str, Any], points: Sequence[PointStats]
) -> list[Section]:
    settings = info.get("settings") or {}
    cv_warn = float(settings.get("cv_warn") or 0.10)
    out = []
    parts = list(dict.fromkeys(p.part for p in points))
    for part in parts:
        pts = [p for p in points if p.part == part]
        vary = varying(pts)
        sec = Section(f"part-{part}", f"Part {part}")
        fixed = [f"{k}={level_text(v)}" for k, v in pts[0].point.items() if k not in vary]
        sec.intro.append(
            f"{len(pts)} point(s), {sum(p.n for p in pts)} trial(s) with results"
            + (f"; factors varied: {', '.join(vary)}" if vary else "")
            + (f"; the same in every point: {', '.join(fixed)}" if fixed else "")
            + (f"; --rate per client: {rate_text(pts[0].rate)}" if len({p.rate for p in pts}) == 1 else "")
            + "."
        )
        for factor in vary:
            sec.figures += _factor_figures(info, part, pts, factor)
        base = baseline_of(pts, settings.get("baseline") or {})
        changes = [c for _, c in baseline_changes(pts, settings.get("baseline") or {})]
        if any(c not in (None, 0.0) for c in changes):
            sec.figures.append(
                Figure(f"{part}: median tps change against the baseline",
                       design_plots.change_svg([p.label for p in pts], changes,
                                        title="median tps, % change against the baseline point"))
            )  # fmt: skip
        sec.tables.append(_points_table(pts, changes, cv_warn, store))
        if base and any(c not in (None, 0.0) for c in changes):
            sec.paragraphs.append(
                f"tps vs baseline: the change of the median tps against the point with {label(base.items())} "
                "and the other factors equal (— where that point has no result)."
            )
        out.append(sec)
    return out


# ---- the whole report ------------------------------------------------------------------------------


def _overview(info: dict[str, Any], points: Sequence[PointStats]) -> Section:
    settings = info.get("settings") or {}
    sec = Section("experiment", "Experiment")
    if settings.get("description"):
        sec.intro.append(str(settings["description"]))
    sec.paragraphs.append(CI_NOTE)
    stored = info.get("parts") or {}
    head = ["part", "design", "factors and levels", "points", "trials with results"]
    rows = []
    for part in dict.fromkeys([*stored, *(p.part for p in points)]):
        meta = stored.get(part) or {}
        design = (meta.get("design") or {}).get("kind") or ("search" if part == "search" else "full-grid")
        factors = meta.get("factors") or {}
        if not factors:
            pts = [p for p in points if p.part == part]
            factors = {k: levels_of(info, part, k, pts) for k in varying(pts)}
        pts = [p for p in points if p.part == part]
        levels = "; ".join(f"{k} {', '.join(map(level_text, v))}" for k, v in factors.items())
        rows.append([part, design, levels, str(len(pts)), str(sum(p.n for p in pts))])
    sec.tables.append(
        Table(head, rows, ["l", "l", "l", "r", "r"], styles={(i, 2): "wrap" for i in range(len(rows))})
    )
    return sec


def build_experiment_report(store: Store, run_id: int, *, log_latency: bool = False) -> Report:
    from clusterbench.experiment.doe_report import design_sections
    from clusterbench.experiment.failover_report import failover_section
    from clusterbench.experiment.search_report import search_sections

    run = store.get_run(run_id)
    info = experiment_info(store, run_id)
    settings = info.get("settings") or {}
    points = point_stats(store, run_id)
    trials = store.trials(run_id)
    done = sum(p.n for p in points)
    source = f" ({info['source']})" if info.get("source") else ""
    facts: list[tuple[str, str]] = [
        ("run", f"{run.id} ({run.kind}{', ' + run.name if run.name else ''})"),
        ("experiment", f"{info.get('name') or run.name}{source}"),
        ("profile", str(info.get("profile") or "none")),
        ("status", run.status),
        ("started", run.started_at),
        ("ended", run.ended_at or "—"),
        ("repetitions", repetitions_fact(settings, points)),
        ("trials", f"{len(trials)} run, {done} with results"),
    ]  # fmt: skip
    wall, wall_summary = wall_section(store, run_id)
    if wall_summary:
        facts.append(("wall time", wall_summary + " (last invocation)"))
    from clusterbench.analysis.outcome import durability_line, label_facts

    facts.append(("durability", durability_line(store, run_id) or "not known (no server answered)"))
    facts += label_facts(store, run)  # tags are labels of their own since store schema 5
    warnings: list[str] = []
    failed = [t for t in trials if t.status != "completed"]
    if failed:
        counts: dict[str, int] = {}
        for t in failed:
            counts[t.status] = counts.get(t.status, 0) + 1
        kinds = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        warnings.append(
            f"{len(failed)} trial(s) did not complete ({kinds}); the statistics use completed trials only."
        )
    clients = client_findings(store, run_id)
    if clients:
        warnings.append(client_warning(clients))
    sections: list[Section] = [_overview(info, points)]
    sections += part_sections(store, run_id, info, points)
    sections += design_sections(store, run_id)
    sections += search_sections(store, run_id)
    several = len({p.part for p in points}) > 1
    for extra in (
        access_section(store, run_id, points),
        slap_section(store, run_id, points),
        tpcc_section(store, run_id, points),
        fault_section(fault_effects(store, run_id), several),
        failover_section(store, run_id),
        client_section(clients, several),
        series_section(store, run_id, points),
        wall,
        provenance_section(store, run_id),
    ):
        if extra is not None:
            sections.append(extra)
    title = f"Experiment {info.get('name') or run.name} (run {run.id})"
    return Report(run.id, title, facts, {"command"}, warnings, sections, log_latency)


def render_markdown(store: Store, run_id: int, **kw: Any) -> str:
    return render_markdown_report(build_experiment_report(store, run_id, **kw))


def render_html(store: Store, run_id: int, **kw: Any) -> str:
    return render_html_report(build_experiment_report(store, run_id, **kw))


# ---- CSV -------------------------------------------------------------------------------------------


def points_csv(store: Store, run_id: int) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(POINT_CSV)
    w.writerows(point_csv_rows(point_stats(store, run_id)))
    return out.getvalue()


TRIAL_CSV = ("trial_id", "index", "part", "point", "rep", "nodes", "test", "threads", "clients", "rate",
             "tps", "p95_ms", "errors", "duration", "bottleneck", "bottleneck_source",
             "bottleneck_utilization", "tpmC", "tpm", "stalls", "longest_stall")  # fmt: skip


def trials_csv(store: Store, run_id: int) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(TRIAL_CSV)
    for r in trial_rows(store, run_id):
        s = r.get("summary") or {}
        b = store.bottleneck(r["trial_id"]) or {}
        util = b.get("utilization")
        prov = store.provenance(run_id, r["trial_id"])
        f, st = prov.get("tpcc") or {}, prov.get("stalls") or {}
        w.writerow([r["trial_id"], r["index"], r["part"], r["point_label"], r["rep"], r["nodes"], r["test"],
                    r["threads"], r["clients"], r.get("effective_rate", 0), s.get("tps", ""),
                    s.get("p95", ""), s.get("errors", ""), s.get("duration", ""), b.get("resource", ""),
                    b.get("source", ""), "" if util is None else round(float(util), 4),
                    f.get("tpmC", ""), f.get("tpm", ""), st.get("count", ""),
                    st.get("longest", "")])  # fmt: skip
    return out.getvalue()


def write_experiment_report(
    store: Store, run_id: int, out_dir: Path, *, log_latency: bool = False
) -> list[Path]:
    """experiment-RUN.html and .md (one description, two renderings), -points.csv, -trials.csv and,
    with designed parts, -effects.csv; returns their paths, the HTML first."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rep = build_experiment_report(store, run_id, log_latency=log_latency)
    page = out_dir / f"experiment-{run_id}.html"
    md = out_dir / f"experiment-{run_id}.md"
    pts = out_dir / f"experiment-{run_id}-points.csv"
    trs = out_dir / f"experiment-{run_id}-trials.csv"
    page.write_text(render_html_report(rep))
    md.write_text(render_markdown_report(rep))
    pts.write_text(points_csv(store, run_id))
    trs.write_text(trials_csv(store, run_id))
    return [page, md, pts, trs, *_extra_files(store, run_id, out_dir)]


def _extra_files(store: Store, run_id: int, out_dir: Path) -> list[Path]:
    """The effects of designed parts as CSV (their own module)."""
    from clusterbench.experiment.doe_report import effects_csv

    text = effects_csv(store, run_id)
    if text is None:
        return []
    path = out_dir / f"experiment-{run_id}-effects.csv"
    path.write_text(text)
    return [path]
