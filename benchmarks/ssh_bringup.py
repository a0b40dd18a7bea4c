"""Bring-up of a 3-node cluster + HAProxy through the ssh provider vs the local provider, measured
side by side on this machine, alternating rounds.

The ssh "machines" are the test lab's network namespaces running sshd (tests/integration/sshlab.py),
so the difference to local is the cost of SSH (a channel per command, no shared filesystem), not
of a real network. Two ways of giving joiners their first datadir are compared: `copy` (node 1's
seeded datadir streamed through this machine, joiners then need an IST) and `sst` (each joiner
takes a full rsync SST from a donor).

Usage (root): python benchmarks/ssh_bringup.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.sshlab import SshLab  # noqa: E402

from clusterbench.cluster import Cluster  # noqa: E402
from clusterbench.spec.topology import Topology  # noqa: E402

FAST_EVS = {"evs_suspect_timeout": 2.0, "evs_inactive_timeout": 4.0, "evs_keepalive_period": 0.5}


def ssh_topology(lab: SshLab, home: Path, seed: str) -> Topology:
    hosts: list[dict[str, Any]] = [
        {"name": f"h{i}", "address": lab.address(i), "key": str(lab.key), "roles": ["db"]} for i in (1, 2, 3)
    ]
    hosts.append({"name": "h4", "address": lab.address(4), "key": str(lab.key), "roles": ["balancer"]})
    return Topology.model_validate(
        {
            "cluster": {"name": "cbssh8"},
            "provider": {"kind": "ssh", "base_dir": str(home / "remote"), "seed": seed},
            "hosts": hosts,
            "mariadb": FAST_EVS,
        }
    )


def local_topology() -> Topology:
    return Topology.model_validate(
        {"cluster": {"name": "cbssh9", "subnet": "198.18.215.0/24"}, "mariadb": FAST_EVS}
    )


def one(topo: Topology, home: Path) -> tuple[float, float]:
    c = Cluster(topo, home=home)
    t0 = time.monotonic()
    try:
        c.up()
        up = time.monotonic() - t0
    finally:
        t1 = time.monotonic()
        c.down()
        down = time.monotonic() - t1
    return up, down


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    home = Path(f"/tmp/cbssh-bench-{os.getpid()}")
    home.mkdir(mode=0o755)
    lab = SshLab(count=4)
    results: dict[str, list[tuple[float, float]]] = {"local": [], "ssh copy": [], "ssh sst": []}
    try:
        lab.start()
        for r in range(args.rounds):
            for label, topo in (
                ("local", local_topology()),
                ("ssh copy", ssh_topology(lab, home, "copy")),
                ("ssh sst", ssh_topology(lab, home, "sst")),
            ):
                up, down = one(topo, home)
                results[label].append((up, down))
                print(f"round {r + 1} {label:9s} up {up:5.1f} s  down {down:4.1f} s", flush=True)
    finally:
        lab.stop()
        shutil.rmtree(home, ignore_errors=True)
    base = statistics.median(u for u, _ in results["local"])
    print("\nmedian up / down (ratio of up to local):")
    for label, rs in results.items():
        up = statistics.median(u for u, _ in rs)
        down = statistics.median(d for _, d in rs)
        print(f"  {label:9s} up {up:5.1f} s  down {down:4.1f} s  x{up / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
