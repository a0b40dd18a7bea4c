"""`clusterbench compare A B`: every difference between two runs first, then B against A per test
(or per design point of two experiments), and a gate for CI (--fail-on-regression)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich import box

from clusterbench.analysis.stats import compare as compare_samples
from clusterbench.cli import console
from clusterbench.cli.common import (
    JsonOpt,
    ResultsOpt,
    print_json,
    store_at,
)
from clusterbench.errors import InputError
from clusterbench.experiment.results import point_stats
from clusterbench.experiment.stored import KIND, last_experiment
from clusterbench.store.refs import resolve_run


def compare_cmd(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="Run id or 'last': the reference.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="Run id or 'last': compared against RUN_A.")],
    test: Annotated[str, typer.Option(help="welch (Welch's t) or mwu (Mann-Whitney U).")] = "welch",
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="Significance level.")] = 0.05,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Compare runs that differ in what defines the workload (threads, rate, tables, "
            "faults ...), which is refused without it.",
        ),
    ] = False,
    fail_on_regression: Annotated[
        float | None,
        typer.Option(
            "--fail-on-regression",
            metavar="PCT",
            min=0.0,
            help="Exit 1 when B is significantly slower than A by more than PCT % in a test or "
            "point (for CI).",
        ),
    ] = None,
    as_json: JsonOpt = False,
    results: ResultsOpt = None,
) -> None:
    """B against A. First every difference between the two runs (engine, topology, server
    settings, load options, faults, versions, machine); runs that differ in what defines the
    workload are refused without --force. Then, two experiments: per design point, median tps
    over repetitions and a p-value; two other runs (suites, runs, drills): per test, tps, p95 and
    p99, the change and a p-value over the measured seconds. Exit 1 with --fail-on-regression PCT
    when B is significantly slower by more than PCT %."""
    from clusterbench.analysis.differences import differences

    if test not in ("welch", "mwu"):
        raise InputError(f"--test must be welch or mwu, got {test!r}")
    with store_at(results, must_exist=True) as store:
        a, b = _resolve_pair(store, run_a, run_b)
        diffs = differences(store, a, b)
        _refuse_incomparable(store, a, b, diffs, force=force, quiet=as_json)
        if store.get_run(a).kind != KIND:
            changes = _compare_runs(store, a, b, test, alpha, as_json, diffs)
        else:
            changes = _compare_experiments(store, a, b, test, alpha, as_json, diffs)
    _gate(changes, fail_on_regression)


def _what(store: Any, run_id: int) -> str:
    """'fault, galera, cluster lab': what a run was, for the comparison's first line."""
    from clusterbench.analysis.outcome import cluster_of, engine_of

    prov = store.provenance(run_id)
    cluster = cluster_of(prov)
    kind = store.get_run(run_id).kind
    return f"{kind}, {engine_of(store, run_id, prov)}" + (f", cluster {cluster}" if cluster else "")


def _refuse_incomparable(
    store: Any, a: int, b: int, diffs: list[Any], *, force: bool, quiet: bool
) -> None:
    """Say every difference first; refuse what changes the workload unless --force."""
    if not quiet:
        said = "differences" if diffs else "no difference in what they ran"
        head = f"run {b} ({_what(store, b)}) against run {a} ({_what(store, a)}): {said}"
        console.out.print(head, markup=False)
        for d in diffs:
            console.out.print(f"  {d.line()}", markup=False, soft_wrap=True)
    defining = [d for d in diffs if d.defining]
    if defining and not force:
        what = "; ".join(d.line().removesuffix(" (defines the workload)") for d in defining)
        raise InputError(
            f"runs {a} and {b} differ in what defines the workload ({what}), so their numbers are not "
            "comparable; give --force to compare them anyway"
        )


def _gate(changes: list[tuple[str, str, float | None]], pct: float | None) -> None:
    """--fail-on-regression: exit 1 naming the tests or points significantly slower beyond pct %."""
    if pct is None:
        return
    worse = [f"{what} {c:+.1%}" for what, verdict, c in changes
             if verdict == "slower" and c is not None and -c * 100 > pct]  # fmt: skip
    if worse:
        from clusterbench.runner import TrialsFailed

        raise TrialsFailed(f"significant regression beyond {pct:g} %: {', '.join(worse)}")


def _compare_experiments(
    store: Any, a: int, b: int, test: str, alpha: float, as_json: bool, diffs: list[Any]
) -> list[tuple[str, str, float | None]]:
    pa = {p.key: p for p in point_stats(store, a)}
    pb = {p.key: p for p in point_stats(store, b)}
    common = [k for k in pa if k in pb]
    if not common:
        raise InputError(
            f"runs {a} and {b} have no design point in common; compare runs of the same experiment"
        )
    rows: list[dict[str, Any]] = []
    for k in common:
        x, y = pa[k], pb[k]
        c = compare_samples(x.tps, y.tps, test=test, alpha=alpha)  # type: ignore[arg-type]
        rows.append({
            "point": k, "n_a": x.n, "n_b": y.n, "tps_median_a": c.median_a, "tps_median_b": c.median_b,
            "tps_change": c.change, "p95_ms_a": x.p95_pooled, "p95_ms_b": y.p95_pooled,
            "p_welch": c.p_welch, "p_mwu": c.p_mwu, "verdict": c.verdict(),
        })  # fmt: skip
    only = (len(pa) - len(common), len(pb) - len(common))
    if as_json:
        print_json({"run_a": a, "run_b": b, "kind": "experiment", "test": test, "alpha": alpha,
                    "differences": [d.to_json() for d in diffs], "points": rows,
                    "only_in_a": only[0], "only_in_b": only[1]})  # fmt: skip
    else:
        _print_points(a, b, test, alpha, rows, only)
    return [(r["point"], r["verdict"], r["tps_change"]) for r in rows]


def _print_points(
    a: int, b: int, test: str, alpha: float, rows: list[dict[str, Any]], only: tuple[int, int]
) -> None:
    name = "Welch t" if test == "welch" else "Mann-Whitney U"
    header = ("point", "n A", "n B", "tps A", "tps B", "diff", "p95 ms A", "p95 ms B", "p (Welch)",
              "p (MWU)", "verdict")  # fmt: skip
    counts: dict[str, int] = {}
    cells = []
    for r in rows:
        v = r["verdict"]
        counts[v] = counts.get(v, 0) + 1
        colour = {"faster": "green", "slower": "red"}.get(v, "white")
        cells.append([
            console.escape(r["point"]), str(r["n_a"]), str(r["n_b"]), f"{r['tps_median_a']:,.1f}",
            f"{r['tps_median_b']:,.1f}", "—" if r["tps_change"] is None else f"{r['tps_change']:+.1%}",
            f"{r['p95_ms_a']:.2f}" if r["p95_ms_a"] else "—",
            f"{r['p95_ms_b']:.2f}" if r["p95_ms_b"] else "—",
            "—" if r["p_welch"] is None else f"{r['p_welch']:.3g}",
            "—" if r["p_mwu"] is None else f"{r['p_mwu']:.3g}", f"[{colour}]{v}[/]",
        ])  # fmt: skip
    table = console.fitted_table(f"run {b} against run {a} ({name}, alpha {alpha:g})", header, cells,
                                 (0, 10), box=box.SIMPLE_HEAD, pad_edge=False)  # fmt: skip
    console.out.print(table)
    console.out.print(
        ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        + (f"; {only[0]} point(s) only in run {a}, {only[1]} only in run {b}" if any(only) else "")
    )


def _resolve_pair(store: Any, ref_a: str, ref_b: str) -> tuple[int, int]:
    """Both runs; 'last' means the last experiment when the other run is one. Two runs of
    different kinds (an experiment and a suite) are refused."""
    known = [resolve_run(store, r) for r in (ref_a, ref_b) if r != "last"]
    other_is_experiment = any(store.get_run(r).kind == KIND for r in known)

    def one(ref: str) -> int:
        if ref == "last" and other_is_experiment:
            return last_experiment(store)
        return resolve_run(store, ref)

    a, b = one(ref_a), one(ref_b)
    if a == b:
        raise InputError(f"RUN_A and RUN_B are both run {a}; give two different runs")
    ka, kb = store.get_run(a).kind, store.get_run(b).kind
    if (ka == KIND) != (kb == KIND):
        exp, other = (a, b) if ka == KIND else (b, a)
        raise InputError(
            f"run {exp} is an experiment and run {other} is not; compare two experiments, or two runs of "
            "the same tests (`clusterbench results list` shows the kinds)"
        )
    return a, b


def _compare_runs(
    store: Any, a: int, b: int, test: str, alpha: float, as_json: bool, diffs: list[Any]
) -> list[tuple[str, str, float | None]]:
    from clusterbench.analysis.compare import compare_runs

    cmp = compare_runs(store, a, b, test=test, alpha=alpha)  # type: ignore[arg-type]
    if as_json:
        print_json({**cmp.to_json(), "differences": [d.to_json() for d in diffs]})
    else:
        _print_tests(cmp, a, b, test, alpha)
    return [(d.test, d.verdict, d.tps_change) for d in cmp.rows]


def _print_tests(cmp: Any, a: int, b: int, test: str, alpha: float) -> None:
    from clusterbench.analysis.compare import CAVEAT
    name = "Welch t" if test == "welch" else "Mann-Whitney U"
    title = f"run {b} against run {a}, per test ({name} over the measured seconds, alpha {alpha:g})"
    header = ("test", "tps A", "tps B", "diff", "p95 ms A", "p95 ms B", "diff p95", "p (Welch)", "p (MWU)",
              "verdict")  # fmt: skip

    def f(x: float | None, spec: str = ",.2f") -> str:
        return "—" if x is None else format(x, spec)

    counts: dict[str, int] = {}
    cells = []
    for d in cmp.rows:
        counts[d.verdict] = counts.get(d.verdict, 0) + 1
        colour = {"faster": "green", "slower": "red"}.get(d.verdict, "white")
        short = "n.s." if d.verdict == "no significant difference" else d.verdict
        cells.append([d.test, f(d.tps_a), f(d.tps_b), f(d.tps_change, "+.1%"), f(d.p95_a), f(d.p95_b),
                      f(d.p95_change, "+.1%"), f(d.p_welch, ".3g"), f(d.p_mwu, ".3g"),
                      f"[{colour}]{short}[/]"])  # fmt: skip
    table = console.fitted_table(title, header, cells, (0, 9), box=box.SIMPLE_HEAD, pad_edge=False)
    console.out.print(table)
    only = ""
    if cmp.only_a or cmp.only_b:
        only = f"; only in run {a}: {', '.join(cmp.only_a) or '—'}"
        only += f"; only in run {b}: {', '.join(cmp.only_b) or '—'}"
    console.out.print(", ".join(f"{n} {v}" for v, n in sorted(counts.items())) + only, soft_wrap=True)
    console.out.print(
        f"n.s. = no significant difference; p99 too with --json or in the report. Note: {CAVEAT}",
        soft_wrap=True,
        markup=False,
    )
    console.out.print(f"plots: clusterbench report {b} --baseline {a}", markup=False)
