"""Fidelity: does clusterbench measure what hand-run sysbench measures?

On one cluster of its own (brought up here, taken down at the end), alternate `clusterbench run`
and a hand-written sysbench command with the same options (oltp_read_write through the balancer,
same tables, threads and time), pair by pair, swapping the order in every other pair so that drift
cancels. Prints per-pair tps and the ratio clusterbench / raw, and the median ratio (target >= 0.98).

Usage (root): python benchmarks/fidelity.py [--pairs 4] [--time 10] [--threads 4]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clusterbench.cluster import Cluster
from clusterbench.spec.topology import Topology
from clusterbench.store import Store
from clusterbench.workloads.sysbench import DEFAULT_IGNORE_ERRORS

NAME = "fid"
SUBNET = "198.18.222.0/24"
TEST = "oltp_read_write"


def raw_sysbench(cluster: Cluster, tables: int, size: int, threads: int, seconds: int, command: str) -> str:
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
            "--rand-type=special", "--report-interval=1", f"--time={seconds}",
            "--mysql-ignore-errors=" + ",".join(str(c) for c in DEFAULT_IGNORE_ERRORS), command,
        ]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"raw sysbench {command} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    return proc.stdout


def raw_tps(out: str) -> float:
    m = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", out)
    if m is None:
        raise SystemExit("no 'transactions:' line in sysbench's output")
    return float(m.group(1))


def clusterbench_tps(results: Path, tables: int, size: int, threads: int, seconds: int) -> float:
    argv = [
        "clusterbench", "run", "-n", NAME, "-w", TEST, "--threads", str(threads), "--time", str(seconds),
        "--tables", str(tables), "--table-size", str(size), "--no-prepare", "--results", str(results),
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
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--time", type=int, default=10)
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
            rows = []
            for i in range(a.pairs):
                order = ("cb", "raw") if i % 2 == 0 else ("raw", "cb")
                got: dict[str, float] = {}
                for side in order:
                    if side == "cb":
                        got[side] = clusterbench_tps(results, a.tables, a.table_size, a.threads, a.time)
                    else:
                        got[side] = raw_tps(
                            raw_sysbench(cluster, a.tables, a.table_size, a.threads, a.time, "run")
                        )
                ratio = got["cb"] / got["raw"]
                rows.append(ratio)
                print(
                    f"pair {i + 1} ({order[0]} first): clusterbench {got['cb']:8.2f} tps   "
                    f"raw {got['raw']:8.2f} tps   ratio {ratio:.3f}",
                    flush=True,
                )
            raw_sysbench(cluster, a.tables, a.table_size, a.threads, a.time, "cleanup")
        med = statistics.median(rows)
        print(
            f"median ratio clusterbench/raw over {a.pairs} pairs of {a.time} s, {TEST}, {a.threads} threads, "
            f"via the balancer: {med:.3f} (target >= 0.98; min {min(rows):.3f}, max {max(rows):.3f})"
        )
        return 0 if med >= 0.98 else 1
    finally:
        cluster.down()
        print(f"cluster {NAME} down", flush=True)


if __name__ == "__main__":
    sys.exit(main())
