"""Size and render time of a run's report, against the 1.5 MB target for one offline HTML file.

Builds a store with a synthetic suite (the eleven sysbench tests, one client, --duration seconds
each, tps and latency varying per second, one 6 s latency spike; the same shape `clusterbench suite`
stores) and writes its report with `clusterbench.analysis.write_report`. Prints the HTML and
Markdown sizes with the ratio to the target, the time to render, and, for comparison, the size of
the plotly.js bundle the reports used to embed (plotly's full bundle, shipped in its pip package).

Or measures the report of a real stored run: --results PATH --run ID.

Usage: python benchmarks/report_size.py [--duration 60] [--results PATH --run ID] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

from clusterbench.analysis import write_report
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=int, default=60, help="seconds per synthetic trial")
    ap.add_argument("--results", type=Path, help="a real results store instead of the synthetic suite")
    ap.add_argument("--run", type=int, help="the run of --results to report")
    ap.add_argument("--keep", type=Path, help="write the report here (default: a temporary directory)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.results is not None:
            if args.run is None:
                ap.error("--results needs --run")
            path, run = args.results, args.run
            what = f"run {run} of {path}"
        else:
            path = Path(tmp) / "r.sqlite"
            run = synthetic_suite(path, args.duration)
            what = f"synthetic suite: {len(KNOWN_TESTS)} tests x {args.duration} s"
        out = args.keep or Path(tmp) / "out"
        st = Store.open(path)
        t0 = time.monotonic()
        md, page = write_report(st, run, out)
        took = time.monotonic() - t0
        st.close()
        size, md_size = page.stat().st_size, md.stat().st_size
        print(f"{what}")
        print(f"  html {size / 1e6:.3f} MB ({size / TARGET_BYTES:.2f} of the 1.5 MB target), "
              f"markdown {md_size / 1e3:.1f} kB, rendered in {took:.1f} s")  # fmt: skip
        try:
            from plotly.offline import get_plotlyjs  # type: ignore[import-untyped, unused-ignore]

            bundle = len(get_plotlyjs().encode())
            print(f"  for comparison: plotly.js alone, as earlier reports embedded it: {bundle / 1e6:.2f} MB "
                  f"({bundle / size:.1f}x this whole report)")  # fmt: skip
        except ImportError:
            pass
        if args.keep:
            print(f"  {page}")
    return 0 if size <= TARGET_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
