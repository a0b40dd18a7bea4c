"""Calibrate the shipped drills on this machine: write stall, client error window and rejoin time,
with Galera's default evs timeouts and with shortened ones, measured side by side in one run.

For each timing profile a 3-node cluster is brought up, each drill runs once (load 40 s, fault at
15 s for 10 s) and a Markdown table is printed; then the cluster is taken down.

Usage (root): python benchmarks/calibrate_faults.py [--drills kill-node,isolate-node,...] [--time 40]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from clusterbench.cluster import Cluster
from clusterbench.scenario.drill import Drill, DrillOutcome
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.spec.topology import Topology
from clusterbench.workloads import SysbenchRunner, build_shim

PROFILES: dict[str, dict[str, float]] = {
    "default evs (suspect 5 s, inactive 15 s)": {},
    "short evs (suspect 1.5 s, inactive 3 s)": {
        "evs_suspect_timeout": 1.5,
        "evs_inactive_timeout": 3.0,
        "evs_keepalive_period": 0.4,
    },
}

DRILLS: dict[str, dict[str, Any]] = {
    "kill-node": {"kind": "kill-node", "target": "node:2"},
    "isolate-node": {"kind": "isolate-node", "target": "node:3"},
    "throttle-link": {"kind": "throttle-link", "target": "node:3", "rate": "1mbit"},
    "kill-majority": {"kind": "kill-node", "target": "node:2,3"},
    "kill-balancer": {"kind": "kill-balancer", "target": "balancer"},
    "kill-all": {"kind": "kill-node", "target": "all"},
    "rolling-restart": {"kind": "rolling-restart"},
}


def stall(out: DrillOutcome, start: float) -> int:
    """Longest run of seconds with zero tps from the fault start on."""
    longest = run = 0
    for s in sorted(out.samples, key=lambda s: s.t):
        if s.t < start:
            continue
        run = run + 1 if s.tps == 0 else 0
        longest = max(longest, run)
    return longest


def rejoin(out: DrillOutcome) -> str:
    text = " ".join(str(d["heal"]) for d in out.heal_details)
    m = re.findall(r"rejoined by (IST|SST)[^']*? in ([0-9.]+) s", text)
    if m:
        return ", ".join(f"{k} {s} s" for k, s in m)
    m2 = re.search(r"re-formed by itself with \d+ nodes in ([0-9.]+) s", text)
    if m2:
        return f"Primary re-formed {m2.group(1)} s"
    m3 = re.search(r"UP in ([0-9.]+) s", text)
    return f"HAProxy UP {m3.group(1)} s" if m3 else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drills", default=",".join(DRILLS))
    ap.add_argument("--time", type=int, default=40)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("error: needs root (network namespaces); run as root", file=sys.stderr)
        return 2
    drills = [d for d in args.drills.split(",") if d]
    unknown = [d for d in drills if d not in DRILLS]
    if unknown:
        print(f"error: unknown drill(s) {', '.join(unknown)}; known: {', '.join(DRILLS)}", file=sys.stderr)
        return 2
    home = Path(f"/tmp/cbcal-{os.getpid()}")
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    sysbench = SysbenchRunner(shim=build_shim(home / "lib"))
    print(
        "| timing | drill | write stall s (0 tps) | first error s | balancer error window s | errors | "
        "tps back to 95 % s | rejoin | verdicts |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    try:
        for profile, evs in PROFILES.items():
            topo = Topology.model_validate(
                {"cluster": {"name": "cal", "subnet": "198.18.240.0/24"}, "mariadb": evs}
            )
            cluster = Cluster(topo, home=home)
            cluster.up()
            try:
                for d in drills:
                    fault = {**DRILLS[d], "at": 15}
                    if fault["kind"] != "rolling-restart":
                        fault["for"] = 10
                    spec = ScenarioSpec.model_validate(
                        {
                            "name": d,
                            "load": {
                                "workload": "oltp_read_write",
                                "threads": 4,
                                "time": args.time,
                                "tables": 4,
                                "table_size": 10000,
                            },
                            "verify": {"ledger_clients": 1},
                            "fault": [fault],
                        }
                    )
                    faults = spec.planned(3, 1, d)
                    drill = Drill(cluster, spec, home / "results.db", sysbench)
                    out = drill.run(f"calibrate {d}", faults)
                    start = out.windows[0][1] if out.windows else 15.0
                    paths = [p for f in out.availability for p in f["paths"] if p["process"] == "balancer"]
                    p = paths[0] if paths else {}
                    back = out.availability[0].get("tps_recovered_after") if out.availability else None

                    def fmt(x: Any) -> str:
                        return "-" if x is None else f"{float(x):.1f}"

                    verdicts = ", ".join(
                        f"{v.checker} {v.result}" for v in out.verdicts if v.checker != "availability"
                    )
                    print(
                        f"| {profile} | {d} | {stall(out, start)} | {fmt(p.get('first_error_after'))} | "
                        f"{fmt(p.get('unavailable'))} | {p.get('errors', '-')}/{p.get('ops', '-')} | "
                        f"{fmt(back)} | "
                        f"{rejoin(out)} | {verdicts} |",
                        flush=True,
                    )
            finally:
                cluster.down()
    finally:
        with contextlib.suppress(Exception):  # already down
            Cluster.load("cal", home=home).down()
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
