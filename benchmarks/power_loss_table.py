"""The shape of Jepsen's Galera findings, measured here: what a power loss costs in acknowledged
writes and anomalies, for Galera and Group Replication, at relaxed and at strict durability, alone
and right after a partition. Each row is one drill (examples/scenarios/power-loss.toml's load and
checkers) on a 3-node cluster whose datadirs sit on the power-loss layer; prints a Markdown table
(docs/faults.md keeps the one measured for the docs). Needs root and `make setup`; about 2 minutes
per row.

    python benchmarks/power_loss_table.py [--engines galera,group_replication] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from clusterbench.cluster import Cluster
from clusterbench.scenario.drill import Drill
from clusterbench.scenario.spec import ScenarioSpec
from clusterbench.spec.topology import Topology
from clusterbench.workloads import SysbenchRunner, build_shim

# (label, server settings) per engine: relaxed, then strict (the server's own defaults)
DURABILITY: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "galera": [
        ("flush=0", {"innodb_flush_log_at_trx_commit": 0}),
        ("flush=1", {"innodb_flush_log_at_trx_commit": 1}),
    ],
    "group_replication": [
        ("flush=0, sync_binlog=0", {"innodb_flush_log_at_trx_commit": 0, "sync_binlog": 0}),
        ("flush=1, sync_binlog=1", {"innodb_flush_log_at_trx_commit": 1, "sync_binlog": 1}),
    ],
}
POWER_LOSS = {"kind": "power-loss", "target": "all", "at": 18, "for": 3}
SCHEDULES: list[tuple[str, list[dict[str, Any]]]] = [
    ("power loss of all nodes", [POWER_LOSS]),
    ("partition 1 | 2,3, healed, then power loss",
     [{"kind": "partition", "groups": [[1], [2, 3]], "at": 4, "for": 6}, POWER_LOSS]),
]  # fmt: skip


def scenario(faults: list[dict[str, Any]]) -> ScenarioSpec:
    return ScenarioSpec.model_validate({
        "name": "power loss table",
        "load": {"workload": "oltp_write_only", "threads": 2, "time": 32, "tables": 1, "table_size": 1000},
        "verify": {"ledger_clients": 3, "ledger_rate": 50, "prober": False},
        "anomalies": {"checkers": ["counter", "list-append"], "counter": {"modes": ["increment"], "rate": 50},
                      "list_append": {"rate": 20}},
        "fault": faults,
    })  # fmt: skip


def topology(engine: str, settings: dict[str, Any], k: int) -> Topology:
    section = "mysql" if engine == "group_replication" else "mariadb"
    name = f"cbpt{k}"
    return Topology.model_validate({
        "cluster": {"name": name, "nodes": 3, "subnet": f"198.18.{246 + k}.0/24", "datadir_layer": "faultfs"},
        "engine": {"kind": engine},
        section: settings,
    })  # fmt: skip


def row(engine: str, durability: str, schedule: str, out: Any) -> str:
    v = {x.checker: x for x in out.verdicts}
    ledger = v.get("ledger")
    lost = ledger.evidence["lost"]["count"] if ledger is not None else "?"
    acked = ledger.evidence["ops"]["ok"] if ledger is not None else "?"
    anomalies = "; ".join(
        f"{name}: {x.result.value} ({x.summary})"
        for name, x in sorted(v.items())
        if name.startswith(("counter", "list-append"))
    )
    heals = [d["heal"] for d in out.heal_details if d["fault"].startswith("power-loss")]
    heal: dict[str, Any] = heals[0] if heals else {}
    cold = heal.get("recovery_s", "?")
    return f"| {engine} | {durability} | {schedule} | {lost} of {acked} | {anomalies} | {cold} |"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="galera,group_replication")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    home = Path(f"/tmp/cbpowertable-{os.getpid()}")
    home.mkdir(mode=0o755)
    sysbench = SysbenchRunner(shim=build_shim(home / "lib"))
    head = "| engine | durability | schedule | acknowledged lost | counter, list-append | cold start s |"
    lines = [head, "|---|---|---|---|---|---|"]
    try:
        k = 0
        for engine in args.engines.split(","):
            for label, settings in DURABILITY[engine]:
                c = Cluster(topology(engine, settings, k), home=home)
                k += 1
                c.up()
                try:
                    for what, faults in SCHEDULES:
                        for _ in range(args.repeat):
                            spec = scenario(faults)
                            planned = spec.planned(3, 1, "table")
                            try:
                                out = Drill(c, spec, home / "results.db", sysbench).run("table", planned)
                                lines.append(row(engine, label, what, out))
                            except Exception as exc:  # noqa: BLE001 - the row says why; the next starts afresh
                                lines.append(f"| {engine} | {label} | {what} | failed: {exc} | | |")
                                c.down()
                                c.up()
                            print(lines[-1], flush=True)
                finally:
                    c.down()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
