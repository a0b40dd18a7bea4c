"""What does telemetry cost? Two measurements, each on a cluster of its own (brought up here and
taken down at the end), run with `clusterbench` itself. Needs root; run it under the cluster lock.

* sampler: a 9-node cluster under load for --seconds with telemetry on; the CPU the sampling used,
  as a share of one core: the probe process (its own CPU ticks) plus this side's telemetry threads
  (reading the probe, the engine figures of every node, storing). Bar: <= 2 % of one core.
* ratio: a 3-node cluster, oltp_read_write through the balancer; pairs of runs with telemetry on
  and off, the order alternating (on-off, off-on, ...), warm-up discarded; the geometric mean of
  on/off with a 95 % CI (benchmarks/paired.py). Bar: >= 0.98.

    python benchmarks/telemetry_overhead.py [--part sampler|ratio|both] [--pairs 8] [--duration 10]
                                            [--name tebench] [--subnet 198.18.61.0/24]

The two clusters are up one after the other, so one subnet serves both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from paired import ratio_ci

from clusterbench.store import Store

NAME = "tebench"
SUBNET = "198.18.61.0/24"


def cb(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLUSTERBENCH_HOME": str(home), "COLUMNS": "160"}
    argv = [sys.executable, "-m", "clusterbench", *args]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if check and proc.returncode != 0:
        raise SystemExit(
            f"clusterbench {' '.join(args[:3])} failed ({proc.returncode}): {proc.stderr[-500:]}"
        )
    return proc


def up(home: Path, nodes: int) -> None:
    topo = home / f"{NAME}.toml"
    topo.write_text(f'[cluster]\nname = "{NAME}"\nnodes = {nodes}\nsubnet = "{SUBNET}"\n')
    print(f"up: {nodes} nodes ...", flush=True)
    print("  " + cb(home, "up", "-f", str(topo)).stdout.strip().splitlines()[-1], flush=True)


def last_trial(results: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    with Store.open(results) as store:
        run = store.list_runs()[-1]
        trial = store.trials(run.id)[-1]
        summary = store.summary(trial.id)
        assert summary is not None, f"run {run.id} has no summary"
        return summary, store.provenance(run.id, trial.id)


def sampler(home: Path, seconds: int) -> None:
    up(home, 9)
    try:
        results = home / "sampler.db"
        cb(home, "run", "-n", NAME, "-w", "oltp_read_only", "--threads", "2", "--duration", str(seconds),
           "--tables", "2", "--table-size", "5000", "--results", str(results))  # fmt: skip
        summary, prov = last_trial(results)
        tel = prov["telemetry"]
        wall = tel["seconds"]
        probe = sum(tel["probe_cpu_s"].values())
        mine = tel["controller_cpu_s"]
        print(
            f"sampler, 9 nodes + HAProxy at 1 s, {wall:.0f} s of load ({summary['tps']:.0f} tps): "
            f"probe {probe / wall:.2%} of one core, our telemetry threads {mine / wall:.2%}, "
            f"together {(probe + mine) / wall:.2%} (bar <= 2 %); {tel['points']} figures stored"
        )
    finally:
        cb(home, "down", "-n", NAME, check=False)


def ratio(home: Path, pairs: int, duration: int, warmup: int, threads: int) -> None:
    up(home, 3)
    try:
        results = home / "ratio.db"
        common = ["run", "-n", NAME, "-w", "oltp_read_write", "--threads", str(threads), "--tables", "4",
                  "--table-size", "10000", "--results", str(results)]  # fmt: skip
        # prepares the tables and warms the caches; not counted
        cb(home, *common, "--duration", "5")
        on: list[float] = []
        off: list[float] = []
        on_first: list[bool] = []
        for i in range(pairs):
            order = (True, False) if i % 2 == 0 else (False, True)
            got: dict[bool, float] = {}
            for telemetry in order:
                flag = "--telemetry" if telemetry else "--no-telemetry"
                cb(home, *common, "--no-prepare", "--warmup", str(warmup), "--duration", str(duration), flag)
                got[telemetry] = float(last_trial(results)[0]["tps"])
            on.append(got[True])
            off.append(got[False])
            on_first.append(order[0])
            print(f"pair {i + 1} ({'on' if order[0] else 'off'} first): on {got[True]:8.2f} tps  "
                  f"off {got[False]:8.2f} tps  ratio {got[True] / got[False]:.3f}", flush=True)  # fmt: skip
        ci = ratio_ci(on, off, on_first)
        print(ci.line("tps with telemetry on / off") + f"; {duration} s measured after {warmup} s warm-up, "
              f"oltp_read_write, {threads} threads, via the balancer (bar >= 0.98)")  # fmt: skip
    finally:
        cb(home, "down", "-n", NAME, check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("sampler", "ratio", "both"), default="both")
    ap.add_argument("--seconds", type=int, default=30, help="load of the sampler measurement")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--name", default="tebench", help="the clusters' name")
    ap.add_argument("--subnet", default="198.18.61.0/24", help="the clusters' subnet (one at a time)")
    a = ap.parse_args()
    global NAME, SUBNET
    NAME, SUBNET = a.name, a.subnet
    home = Path(tempfile.mkdtemp(prefix="cb-telemetry-bench-", dir="/tmp"))
    os.chmod(home, 0o755)
    try:
        if a.part in ("sampler", "both"):
            sampler(home, a.seconds)
        if a.part in ("ratio", "both"):
            ratio(home, a.pairs, a.duration, a.warmup, a.threads)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
