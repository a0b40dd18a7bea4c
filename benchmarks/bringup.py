"""Bring-up, teardown and memory of local clusters, measured for real.

Prints, for a 3-node cluster + HAProxy, the time from `up` to all nodes ready and HAProxy UP, and
the time of `down`, over several rounds (median, min, max) with the ratio to the targets (6 s,
5 s), for Galera and for Group Replication side by side (rounds alternate between the engines;
Group Replication only where its MySQL rootfs exists), with where `up`'s time went; then brings up
9 Galera nodes with the default settings against 15 s and prints their total RSS against 3 GiB.
The first Galera bring-up in a fresh home also makes the datadir template the later ones copy
(its round says so).

The web-tier layout of the study is measured beside them: 3 database nodes + HAProxy + 3 web nodes
(nginx + php-fpm) + the front HAProxy pair with its keepalived VIP, from `up` to every front seeing
every web node UP and one holding the VIP, against 25 s.

Usage (root): python benchmarks/bringup.py [--rounds 3] [--engine both|galera|group_replication] [--skip-nine]
              [--only all|database|web] [--web-name web3] [--web-subnet 198.18.234.0/24]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from clusterbench.cluster import Cluster
from clusterbench.engines.group_replication import rootfs
from clusterbench.spec.topology import Topology

UP_TARGET_S = 6.0
NINE_UP_TARGET_S = 15.0
WEB_UP_TARGET_S = 25.0
DOWN_TARGET_S = 5.0
RSS_TARGET_GIB = 3.0


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def topo(name: str, nodes: int, subnet: str, engine: str = "galera") -> Topology:
    return Topology.model_validate(
        {"cluster": {"name": name, "nodes": nodes, "subnet": subnet}, "engine": {"kind": engine}}
    )


def web_topology(name: str, subnet: str, engine: str) -> Topology:
    """3 database nodes + HAProxy + 3 web nodes + the front HAProxy pair (the study's layout)."""
    return Topology.model_validate({
        "cluster": {"name": name, "nodes": 3, "subnet": subnet}, "engine": {"kind": engine},
        "web": {"nodes": 3, "front": {"count": 2}},
    })  # fmt: skip


def web_layout(home: Path, engines: list[str], rounds: int, name: str, subnet: str) -> None:
    """Up and down of the web-tier layout per engine, with where `up`'s time went."""
    for engine in engines:
        ups, downs, webs = [], [], []
        for r in range(rounds):
            c = Cluster(web_topology(name, subnet, engine), home=home)
            t0 = time.monotonic()
            timings = c.up()
            ups.append(time.monotonic() - t0)
            webs.append(timings["total"] - timings["balancers"])
            time.sleep(2)
            t0 = time.monotonic()
            c.down()
            downs.append(time.monotonic() - t0)
            steps = (f"nodes ready {timings['nodes_synced']:.1f} s, balancer {timings['balancers']:.1f} s, "
                     f"web tier {webs[-1]:.1f} s more")  # fmt: skip
            line = f"round {r + 1} {engine} web tier: up {ups[-1]:.2f} s ({steps}), down {downs[-1]:.2f} s"
            print(line, flush=True)
        med, web, down = statistics.median(ups), statistics.median(webs), statistics.median(downs)
        print(
            f"{engine}: 3 nodes + HAProxy + 3 web nodes + front pair with VIP, up: median {med:.2f} s (min "
            f"{min(ups):.2f}, max {max(ups):.2f}; the web tier {web:.1f} s of it); ratio to the "
            f"{WEB_UP_TARGET_S:g} s target: {med / WEB_UP_TARGET_S:.2f}; down: median {down:.2f} s"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engine", choices=["both", "galera", "group_replication"], default="both")
    ap.add_argument("--skip-nine", action="store_true")
    ap.add_argument("--only", choices=["all", "database", "web"], default="all")
    ap.add_argument("--web-name", default="web3")
    ap.add_argument("--web-subnet", default="198.18.234.0/24")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("error: needs root (network namespaces); run as root", file=sys.stderr)
        return 2
    home = Path(f"/tmp/cbbench-{os.getpid()}")
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    engines = ["galera", "group_replication"] if args.engine == "both" else [args.engine]
    if "group_replication" in engines and rootfs.problem(rootfs.rootfs_dir()) is not None:
        print(f"Group Replication not measured: {rootfs.problem(rootfs.rootfs_dir())}", flush=True)
        engines.remove("group_replication")
    ups: dict[str, list[float]] = {e: [] for e in engines}
    downs: dict[str, list[float]] = {e: [] for e in engines}
    try:
        if args.only in ("all", "web"):
            web_layout(home, engines, args.rounds, args.web_name, args.web_subnet)
        for r in range(args.rounds if args.only != "web" else 0):
            for engine in engines:  # alternating, so both see the same machine
                c = Cluster(topo("bench", 3, "198.18.230.0/24", engine), home=home)
                templated = any((home / "templates").glob(f"{engine}-*"))
                t0 = time.monotonic()
                timings = c.up()
                ups[engine].append(time.monotonic() - t0)
                time.sleep(2)
                t0 = time.monotonic()
                c.down()
                downs[engine].append(time.monotonic() - t0)
                steps = ", ".join(f"{k} {v:.1f}" for k, v in timings.items() if k != "total")
                made = "" if templated or engine != "galera" else " (made the datadir template)"
                print(
                    f"round {r + 1} {engine}: up {ups[engine][-1]:.2f} s{made} ({steps}), "
                    f"down {downs[engine][-1]:.2f} s",
                    flush=True,
                )
        for engine in engines if args.only != "web" else []:
            up_med, down_med = statistics.median(ups[engine]), statistics.median(downs[engine])
            print(
                f"{engine}: 3 nodes + HAProxy, up to ready + UP: median {up_med:.2f} s "
                f"(min {min(ups[engine]):.2f}, max {max(ups[engine]):.2f});"
                f" ratio to the {UP_TARGET_S:g} s target: {up_med / UP_TARGET_S:.2f}"
            )
            print(
                f"{engine}: down: median {down_med:.2f} s (min {min(downs[engine]):.2f}, "
                f"max {max(downs[engine]):.2f}); ratio to the {DOWN_TARGET_S:g} s target: "
                f"{down_med / DOWN_TARGET_S:.2f}"
            )
        if len(engines) == 2 and args.only != "web":
            ratio = statistics.median(ups["group_replication"]) / statistics.median(ups["galera"])
            print(f"up, Group Replication / Galera: {ratio:.2f}")
        if not args.skip_nine and args.only != "web":
            c = Cluster(topo("nine", 9, "198.18.231.0/24"), home=home)
            t0 = time.monotonic()
            c.up()
            up9 = time.monotonic() - t0
            time.sleep(2)
            per_node = [rss_bytes(n.proc.pid) for n in c.nodes() if n.proc is not None]
            h = c.haproxy()
            extra = rss_bytes(h.proc.pid) if h is not None and h.proc is not None else 0
            total = sum(per_node) + extra
            c.down()
            gib = total / 2**30
            print(
                f"9 nodes: up {up9:.1f} s, ratio to the {NINE_UP_TARGET_S:g} s target: "
                f"{up9 / NINE_UP_TARGET_S:.2f}; RSS per mariadbd "
                f"{min(per_node) / 2**20:.0f}-{max(per_node) / 2**20:.0f} MiB;"
                f" total with HAProxy {gib:.2f} GiB; ratio to the {RSS_TARGET_GIB:g} GiB target: "
                f"{gib / RSS_TARGET_GIB:.2f}"
            )
    finally:
        for name in ("bench", "nine", args.web_name):
            try:
                Cluster.load(name, home=home).down()
            except Exception:  # noqa: BLE001 - best effort cleanup; nothing may be left
                Cluster(topo(name, 1, "198.18.232.0/24"), home=home).down()
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
