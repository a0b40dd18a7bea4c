"""Fidelity: does clusterbench measure what hand-run sysbench measures?

On one cluster of its own (brought up here, taken down at the end), alternate `clusterbench run`
and a hand-written sysbench command with the same options (oltp_read_write through the balancer,
same tables, threads and time), pair by pair, swapping the order in every other pair (cb-raw,
raw-cb, ...) so that drift and a "first of a pair" effect cancel. Both discard the same warm-up:
clusterbench with --warmup, the raw command with sysbench's own --report-checkpoints at the end of
the warm-up (its final report then covers only the measured seconds, which is what clusterbench
does underneath). Prints per-pair tps and the ratio clusterbench / raw, and their geometric mean
with a 95 % CI (benchmarks/paired.py; target >= 0.98), and the order effect. Run it under the
cluster lock.

Usage (root): python benchmarks/fidelity.py [--pairs 10] [--time 10] [--warmup 3] [--threads 4]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paired import ratio_ci

from clusterbench.cluster import Cluster
from clusterbench.spec.topology import Topology
from clusterbench.store import Store
from clusterbench.workloads.sysbench import DEFAULT_IGNORE_ERRORS

NAME = "fid"
SUBNET = "198.18.222.0/24"
TEST = "oltp_read_write"


def raw_sysbench(
    cluster: Cluster, tables: int, size: int, threads: int, seconds: int, command: str, warmup: int = 0
) -> str:
    ep = cluster.endpoint("balancer")
    addr = ep.addresses[0]
    # the password in an option file of mode 0600, never on the command line (ps shows argv to all)
    with tempfile.NamedTemporaryFile("w", prefix="cb-fidelity-", suffix=".cnf") as cnf:
        cnf.write(f"mysql-password={ep.password}\n")
        cnf.flush()
        argv = [
            "sysbench", f"--config-file={cnf.name}", TEST, "--db-driver=mysql", f"--mysql-host={addr.host}",
            f"--mysql-port={addr.port}", f"--mysql-user={ep.user}", "--mysql-db=sbtest",
            f"--tables={tables}", f"--table-size={size}", f"--threads={threads}", "--auto_inc=off",
            "--rand-type=special", "--report-interval=1", f"--time={seconds + warmup}",
            *([f"--report-checkpoints={warmup}"] if warmup else []),
            "--mysql-ignore-errors=" + ",".join(str(c) for c in DEFAULT_IGNORE_ERRORS), command,
        ]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"raw sysbench {command} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    return proc.stdout


def raw_tps(out: str) -> float:
    """tps of sysbench's final report (with a checkpoint, the last one: the measured part only)."""
    found = re.findall(r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", out)
    if not found:
        raise SystemExit("no 'transactions:' line in sysbench's output")
    return float(found[-1])


def clusterbench_tps(
    results: Path, tables: int, size: int, threads: int, seconds: int, warmup: int = 0
) -> float:
    argv = [
        "clusterbench", "run", "-n", NAME, "-w", TEST, "--threads", str(threads), "--time", str(seconds),
        "--warmup", str(warmup), "--tables", str(tables), "--table-size", str(size), "--no-prepare",
        "--results", str(results),
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"clusterbench run failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    with Store.open(results) as store:
        run = store.list_runs()[-1]
        trial = store.trials(run.id)[0]
        summary = store.summary(trial.id)
        assert summary is not None
        return float(summary["tps"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=10000)
    a = ap.parse_args()

    topo = Topology.model_validate({"cluster": {"name": NAME, "subnet": SUBNET}})
    cluster = Cluster(topo)
    t0 = time.monotonic()
    cluster.up()
    print(f"cluster {NAME} up in {time.monotonic() - t0:.1f} s", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="cb-fidelity-") as tmp:
            results = Path(tmp) / "results.db"
            raw_sysbench(cluster, a.tables, a.table_size, a.threads, a.time, "prepare")
            # one unmeasured round each, so both sides meet warm caches
            raw_sysbench(cluster, a.tables, a.table_size, a.threads, 5, "run")
            clusterbench_tps(results, a.tables, a.table_size, a.threads, 5)
            cbs: list[float] = []
            raws: list[float] = []
            cb_first: list[bool] = []
            for i in range(a.pairs):
                order = ("cb", "raw") if i % 2 == 0 else ("raw", "cb")
                got: dict[str, float] = {}
                for side in order:
                    if side == "cb":
                        got[side] = clusterbench_tps(
                            results, a.tables, a.table_size, a.threads, a.time, a.warmup
                        )
                    else:
                        got[side] = raw_tps(
                            raw_sysbench(cluster, a.tables, a.table_size, a.threads, a.time, "run", a.warmup)
                        )
                cbs.append(got["cb"])
                raws.append(got["raw"])
                cb_first.append(order[0] == "cb")
                print(
                    f"pair {i + 1} ({order[0]} first): clusterbench {got['cb']:8.2f} tps   "
                    f"raw {got['raw']:8.2f} tps   ratio {got['cb'] / got['raw']:.3f}",
                    flush=True,
                )
            raw_sysbench(cluster, a.tables, a.table_size, a.threads, a.time, "cleanup")
        ci = ratio_ci(cbs, raws, cb_first)
        print(
            ci.line("clusterbench / raw sysbench")
            + f"; {a.time} s measured after {a.warmup} s warm-up, {TEST}, {a.threads} threads, "
            "via the balancer (target >= 0.98)"
        )
        return 0 if ci.ratio >= 0.98 else 1
    finally:
        cluster.down()
        print(f"cluster {NAME} down", flush=True)


if __name__ == "__main__":
    sys.exit(main())
