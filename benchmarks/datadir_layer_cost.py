"""What does a datadir under a fault layer cost the database? Two 3-node Galera clusters side by
side, one plain and one whose datadirs sit on the power-loss layer (cb-faultfs) or on a loop
device of their own, the same sysbench load through each one's balancer in alternating pairs
(plain-layer, layer-plain, ...), one cluster loaded at a time: the geometric mean of tps with the
layer over tps without, with a 95 % CI (benchmarks/paired.py). Needs root and `make setup`.

    python benchmarks/datadir_layer_cost.py [--layer faultfs|loop] [--pairs 5] [--seconds 20]
        [--test oltp_read_write] [--threads 4] [--flush 1]

`--flush` sets innodb_flush_log_at_trx_commit on both (1: an fsync per commit, where the layer's
bookkeeping costs most). Everything lives under /tmp/cblayer-PID and is torn down at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from paired import ratio_ci

from clusterbench.cluster import Cluster
from clusterbench.runner import BenchPlan, BenchRunner, make_options
from clusterbench.runner.provenance import ClusterProbe
from clusterbench.spec.topology import Topology
from clusterbench.store import Store
from clusterbench.workloads import SysbenchRunner, build_shim


def topology(name: str, subnet: str, layer: str | None, flush: int) -> Topology:
    cluster: dict[str, object] = {"name": name, "nodes": 3, "subnet": subnet}
    if layer == "faultfs":
        cluster["datadir_layer"] = "faultfs"
    elif layer == "loop":
        cluster["datadir_fs"] = "loop"
    return Topology.model_validate({"cluster": cluster, "mariadb": {"innodb_flush_log_at_trx_commit": flush}})


def tps(c: Cluster, store: Store, sysbench: SysbenchRunner, args: argparse.Namespace, prepare: bool) -> float:
    opts = make_options(test=args.test, threads=args.threads, time=args.seconds, tables=4, table_size=10000)
    plan = BenchPlan(kind="run", tests=(args.test,), options=opts, endpoint=c.endpoint("balancer"),
                     prepare=prepare)  # fmt: skip
    out = BenchRunner(sysbench, ClusterProbe(c), telemetry=None).execute(plan, store)
    summary = store.summary(store.trials(out.run_id)[0].id)
    if out.status != "completed" or summary is None:
        raise SystemExit(f"a run did not complete ({out.status}); see run {out.run_id} in {store.path}")
    return float(summary["tps"])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layer", choices=("faultfs", "loop"), default="faultfs")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--test", default="oltp_read_write")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--flush", type=int, choices=(0, 1, 2), default=1)
    args = ap.parse_args()
    home = Path(f"/tmp/cblayer-{os.getpid()}")
    home.mkdir(mode=0o755)
    plain = Cluster(topology("cbl1", "198.18.244.0/24", None, args.flush), home=home)
    layered = Cluster(topology("cbl2", "198.18.245.0/24", args.layer, args.flush), home=home)
    sysbench = SysbenchRunner(shim=build_shim(home / "lib"))
    store = Store.open(home / "results.db")
    with_layer: list[float] = []
    without: list[float] = []
    layer_first: list[bool] = []
    try:
        plain.up()
        layered.up()
        for k in range(args.pairs):
            first = k % 2 == 1
            order = (
                [(layered, with_layer), (plain, without)]
                if first
                else [(plain, without), (layered, with_layer)]
            )
            for c, into in order:
                into.append(tps(c, store, sysbench, args, prepare=k == 0))
            layer_first.append(first)
            print(f"pair {k + 1}: with {with_layer[-1]:.1f} tps, without {without[-1]:.1f} tps", flush=True)
        ci = ratio_ci(with_layer, without, layer_first)
        print(
            f"{args.test} x{args.threads}, {args.seconds} s, flush={args.flush}: "
            + ci.line(f"tps with {args.layer} / without")
        )
    finally:
        for c in (layered, plain):
            try:
                c.down()
            except Exception as exc:  # noqa: BLE001 - report and go on tearing down
                print(f"teardown of {c.topology.name}: {exc}", file=sys.stderr)
        store.close()
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
