"""Size and render time of a run's report, against the 1.5 MB target for one offline HTML file.

Builds a store with a synthetic suite (the eleven sysbench tests, one client, --duration seconds
each, tps and latency varying per second, one 6 s latency spike; the same shape `clusterbench suite`
stores) and writes its report with `clusterbench.analysis.write_report`; and a synthetic experiment
with the shape of examples/experiments/grid-nodes-threads-appliers.toml (nodes 1-5 x threads 2-64 x
applier threads 1/4/16, 2 repetitions, --exp-duration seconds per trial: 90 points, 180 trials) and
writes its report with `clusterbench.experiment.report.write_experiment_report`. Prints the HTML and
Markdown sizes with the ratio to the target, the time to render, and, for comparison, the size of
the plotly.js bundle the reports used to embed (when plotly is installed: it is no longer a
dependency).

Or measures the report of a real stored run (a run report, or the experiment report of an
experiment run): --results PATH --run ID.

Usage: python benchmarks/report_size.py [--duration 60] [--exp-duration 6] [--results PATH --run ID]
       [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

from clusterbench.analysis.document import write_report
from clusterbench.experiment.planner import label
from clusterbench.experiment.report import write_experiment_report
from clusterbench.store import Store
from clusterbench.workloads import KNOWN_TESTS
from clusterbench.workloads.histogram import DEFAULT_SCHEME, LatencyHistogram
from clusterbench.workloads.parse import Sample, Summary

TARGET_BYTES = 1.5e6


def _hist(rng: random.Random, events: int, center_ms: float) -> LatencyHistogram:
    counts: dict[int, int] = {}
    for _ in range(min(events, 400)):  # the shape matters, not the count
        v = max(0.002, rng.lognormvariate(math.log(center_ms), 0.35))
        i = round((math.log(v) - DEFAULT_SCHEME.deduct) * DEFAULT_SCHEME.mult)
        counts[i] = counts.get(i, 0) + 1
    return LatencyHistogram(DEFAULT_SCHEME, counts)


def synthetic_suite(path: Path, duration: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    st = Store.open(path)
    run = st.create_run("suite", name="suite", command_line=f"clusterbench suite --duration {duration}")
    st.set_provenance(run, "versions", {"sysbench": "sysbench 1.0.20", "mariadb": "mariadbd 10.11"})
    for seq, test in enumerate(KNOWN_TESTS, 1):
        tid = st.add_trial(run, seq, test, {"threads": 4, "time": duration})
        base = rng.uniform(300, 6000)
        total = LatencyHistogram(DEFAULT_SCHEME, {})
        events = 0
        for t in range(1, duration + 1):
            spike = 40.0 if seq == 5 and 20 <= t < 26 else 1.0
            n = int(base * rng.uniform(0.9, 1.1) / spike)
            h = _hist(rng, n, 4000.0 / base * spike)
            total = total.merge(h)
            events += n
            st.add_sample(tid, Sample(t=float(t), interval=1.0, threads=4, events=n, reads=n * 10,
                                      writes=n * 4, other=n * 2, errors=rng.randint(0, 3), reconnects=0,
                                      percentile=95.0, lat_pct_ms=h.percentile(95), hist=h))  # fmt: skip
        st.add_summary(tid, Summary(duration=float(duration), threads=4, events=events, reads=events * 10,
                                    writes=events * 4, other=events * 2, errors=0, reconnects=0,
                                    lat_min_ms=total.min_ms() or 0.0, lat_avg_ms=total.mean_ms() or 0.0,
                                    lat_max_ms=total.max_ms() or 0.0, percentile=95.0,
                                    lat_pct_ms=total.percentile(95), hist=total))  # fmt: skip
        st.finish_trial(tid, "completed")
    st.finish_run(run, "completed")
    st.close()
    return run


def _load(
    st: Store, tid: int, rng: random.Random, seconds: int, base: float, center: float, threads: int
) -> None:
    """Per-second samples of about `base` tps around `center` ms, then the summary: one trial."""
    total = LatencyHistogram(DEFAULT_SCHEME, {})
    events = 0
    for t in range(2, seconds + 2):
        n = int(base * rng.uniform(0.9, 1.1))
        h = _hist(rng, n, center)
        total = total.merge(h)
        events += n
        st.add_sample(tid, Sample(t=float(t), interval=1.0, threads=threads, events=n, reads=n * 10,
                                  writes=n * 4, other=n * 2, errors=0, reconnects=0, percentile=95.0,
                                  lat_pct_ms=h.percentile(95), hist=h))  # fmt: skip
    st.add_summary(tid, Summary(duration=float(seconds), threads=threads, events=events, reads=events * 10,
                                writes=events * 4, other=events * 2, errors=0, reconnects=0,
                                lat_min_ms=total.min_ms() or 0.0, lat_avg_ms=total.mean_ms() or 0.0,
                                lat_max_ms=total.max_ms() or 0.0, percentile=95.0,
                                lat_pct_ms=total.percentile(95), hist=total))  # fmt: skip
    st.finish_trial(tid, "completed")


SATURATED = "client 0 on local: sysbench used 0.2 and waited for 2.5 more of the 2 CPU(s) it can use (133%)"


def synthetic_experiment(path: Path, duration: int, seed: int = 2) -> int:
    """The grid of grid-nodes-threads-appliers.toml as the experiment runner stores it, with tps
    and latency that change with the factors, and a saturated client in every trial above 16
    threads."""
    rng = random.Random(seed)
    levels = {"nodes": [1, 2, 3, 4, 5], "threads": [2, 4, 8, 16, 32, 64], "wsrep_slave_threads": [1, 4, 16]}
    st = Store.open(path)
    run = st.create_run("experiment", name="grid", command_line="clusterbench experiment run grid.toml")
    keys: list[str] = []
    points = [{"nodes": n, "threads": t, "wsrep_slave_threads": a} for n in reversed(levels["nodes"])
              for a in levels["wsrep_slave_threads"] for t in levels["threads"]]  # fmt: skip
    for point in points:  # in the runner's order: descending node count
        lab = label(point.items())
        for rep in (1, 2):
            keys.append(f"main|{lab}|rep{rep}")
            seq = len(keys)
            tid = st.add_trial(run, seq, "oltp_read_write", {
                "key": keys[-1], "index": seq, "part": "main", "point_label": lab, "point_key": f"main|{lab}",
                "point": point, "rep": rep, "nodes": point["nodes"], "test": "oltp_read_write",
                "threads": point["threads"], "clients": 1, "effective_rate": 0,
            })  # fmt: skip
            base = 600.0 / (1 + 0.3 * (point["nodes"] - 1)) * rng.uniform(0.85, 1.15)
            if point["threads"] > 16:
                st.add_event(run, "client_saturated", {"client": 0, "host": "local", "flags": ["cpu"],
                                                       "warnings": [SATURATED]}, trial_id=tid)  # fmt: skip
            _load(st, tid, rng, duration, base, 1000.0 * point["threads"] / base, point["threads"])
    st.set_provenance(run, "experiment", {
        "name": "grid", "profile": None, "source": "grid.toml", "trials": keys,
        "settings": {"repetitions": 2, "repetition_order": "blocked", "cv_warn": 0.1,
                     "baseline": {"nodes": 1, "threads": 2, "wsrep_slave_threads": 1}},
        "parts": {"main": {"factors": levels, "design": {"kind": "full-grid"}}},
    })  # fmt: skip
    phases = {"measuring": 1080.0, "warm-up": 180.0, "bring-up": 14.0}
    st.add_event(run, "wall_time", {"wall": 1350.0, "not_measuring_share": 0.2, "phases": phases})
    st.finish_run(run, "completed")
    st.close()
    return run


def _measure(what: str, path: Path, run: int, out: Path, keep: bool) -> int:
    """Write the run's report (the experiment report for an experiment run) and print its sizes;
    returns the HTML's size."""
    st = Store.open(path)
    experiment = st.get_run(run).kind == "experiment"
    t0 = time.monotonic()
    if experiment:
        paths = write_experiment_report(st, run, out)
        page, md = paths[0], paths[1]
    else:
        md, page = write_report(st, run, out)
    took = time.monotonic() - t0
    st.close()
    size, md_size = page.stat().st_size, md.stat().st_size
    print(what)
    print(f"  {'experiment report' if experiment else 'report'}: html {size / 1e6:.3f} MB "
          f"({size / TARGET_BYTES:.2f} of the 1.5 MB target), markdown {md_size / 1e3:.1f} kB, "
          f"rendered in {took:.1f} s")  # fmt: skip
    if keep:
        print(f"  {page}")
    return size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=60, help="seconds per trial of the synthetic suite")
    ap.add_argument(
        "--exp-duration", type=int, default=6, help="seconds per trial of the synthetic experiment"
    )
    ap.add_argument("--results", type=Path, help="a real results store instead of the synthetic runs")
    ap.add_argument("--run", type=int, help="the run of --results to report")
    ap.add_argument("--keep", type=Path, help="write the reports here (default: a temporary directory)")
    args = ap.parse_args()
    sizes = []
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp) / "out"
        if args.results is not None:
            if args.run is None:
                ap.error("--results needs --run")
            sizes.append(
                _measure(f"run {args.run} of {args.results}", args.results, args.run, out, bool(args.keep))
            )
        else:
            path = Path(tmp) / "suite.sqlite"
            run = synthetic_suite(path, args.duration)
            what = f"synthetic suite: {len(KNOWN_TESTS)} tests x {args.duration} s"
            sizes.append(_measure(what, path, run, out / "suite", bool(args.keep)))
            path = Path(tmp) / "experiment.sqlite"
            run = synthetic_experiment(path, args.exp_duration)
            what = f"synthetic experiment: 90 points x 2 repetitions x {args.exp_duration} s"
            sizes.append(_measure(what, path, run, out / "experiment", bool(args.keep)))
        try:
            from plotly.offline import get_plotlyjs  # type: ignore[import-untyped, unused-ignore]

            bundle = len(get_plotlyjs().encode())
            print(f"for comparison: plotly.js alone, as earlier reports embedded it: {bundle / 1e6:.2f} MB "
                  f"({bundle / max(sizes):.1f}x the largest report here)")  # fmt: skip
        except ImportError:
            pass
    return 0 if max(sizes) <= TARGET_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
