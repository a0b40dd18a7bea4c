"""throttle-disk: a slow disk under a node's datadir, through the block I/O controller.

The node's datadir must be on a block device of its own (topology `datadir_fs = "loop"`: ext4 on
a loop device, providers/datadirfs.py). The fault writes a per-device limit of bytes per second
(`rate`) and, when given, of operations per second (`iops`), reads and writes alike, into the
root group of the cgroup v1 blkio hierarchy. There it applies to every process and to the
kernel's own writeback alike, so no write to that device escapes it, and nothing but that node
uses the device. Measured here: a limit of 1 MB/s held O_DIRECT and fsync'd writes at 0.92-0.95
MB/s against 307 MB/s without. The heal writes a limit of 0, which removes it.

Telemetry reads the same limits each second (telemetry/probe.py), so the disk's utilization is its
throughput against its limit, and the bottleneck verdict names the disk of a throttled node.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from clusterbench.cluster import Cluster
from clusterbench.datadir_layers import layer_source, layered
from clusterbench.errors import PreflightError
from clusterbench.faults.actions import recovered
from clusterbench.faults.base import FaultAction
from clusterbench.faults.spec import PlannedFault
from clusterbench.hosts.base import Machine

BLKIO = Path("/sys/fs/cgroup/blkio")
LIMIT_FILES = (
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device",
    "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
)
def parse_limits(text: str) -> dict[str, int]:
    """'7:0 1048576' lines of a blkio.throttle.*_device file -> device -> limit (pure)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and ":" in parts[0] and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def device_of(host: Machine, path: Path) -> str | None:
    """The major:minor of the block device the file system at `path` is on."""
    res = host.run(["stat", "-c", "%Hd:%Ld", str(path)], check=False)
    dev = res.stdout.strip()
    return dev if res.ok and re.match(r"^[0-9]+:[0-9]+$", dev) and not dev.startswith("0:") else None


def limits_on(host: Machine, dev: str) -> dict[str, int]:
    """The limits set on `dev` now, by file (only those set)."""
    out = {}
    for name in LIMIT_FILES:
        value = parse_limits(host.read_file(BLKIO / name) or "").get(dev)
        if value:
            out[name] = value
    return out


def set_limits(host: Machine, dev: str, bps: int, iops: int) -> None:
    """Write the limits (0 removes one) for `dev` into the root blkio group."""
    for name in LIMIT_FILES:
        value = iops if "iops" in name else bps
        host.run(["sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", f"{dev} {value}", str(BLKIO / name)])


def machine(cluster: Cluster, i: int) -> Machine:
    """Node i's machine in its root namespaces, where the blkio tree is."""
    return cluster.provider.machine_of(cluster.names.node_role(i))


def datadir_device(cluster: Cluster, i: int) -> str | None:
    """Node i's datadir device (the layer's source when the power-loss layer sits on it)."""
    path = cluster.node(i).datadir
    if i in layered(cluster):
        path = layer_source(path)
    return device_of(machine(cluster, i), path)


def leftover(cluster: Cluster, i: int) -> bool:
    """A limit left on node i's datadir device (by a run that was killed)."""
    if cluster.topology.node_datadir_fs(i) != "loop":
        return False
    dev = datadir_device(cluster, i)
    return dev is not None and bool(limits_on(machine(cluster, i), dev))


def clear(cluster: Cluster, i: int) -> None:
    dev = datadir_device(cluster, i)
    if dev is not None:
        set_limits(machine(cluster, i), dev, 0, 0)


class ThrottleDisk(FaultAction):
    def __init__(self, cluster: Cluster, fault: PlannedFault) -> None:
        super().__init__(cluster, fault)
        missing = [i for i in fault.nodes if cluster.topology.node_datadir_fs(i) != "loop"]
        if missing:
            i = missing[0]
            raise PreflightError(
                f"throttle-disk slows a block device of the node's own, and n{i}'s datadir has none: set "
                f'cluster.datadir_fs = "loop" (or [[node]] index = {i} with datadir_fs = "loop") in the '
                "topology and bring the cluster up again"
            )
        host = machine(cluster, fault.nodes[0])
        if not host.exists(BLKIO / LIMIT_FILES[1]):
            raise PreflightError(
                f"throttle-disk needs the cgroup v1 blkio controller ({BLKIO / LIMIT_FILES[1]} is missing "
                "on this machine); use disk-slow on the power-loss layer instead"
            )
        self.bps = int(fault.params.get("bytes_per_s", 0))
        self.iops = int(fault.params.get("iops", 0))
        self.devices: dict[int, str] = {}

    def _apply(self) -> dict[str, Any]:
        for i in self.fault.nodes:
            dev = datadir_device(self.cluster, i)
            if dev is None:
                raise PreflightError(
                    f"n{i}: its datadir is not on a block device; was the cluster brought up with "
                    'datadir_fs = "loop"?'
                )
            set_limits(machine(self.cluster, i), dev, self.bps, self.iops)
            self.devices[i] = dev
        what = " and ".join(
            x
            for x in (
                f"{self.bps / 1e6:g} MB/s" if self.bps else "",
                f"{self.iops} operations/s" if self.iops else "",
            )
            if x
        )
        nodes = ", ".join(f"n{i}" for i in self.devices)
        return {
            "devices": {f"n{i}": d for i, d in self.devices.items()},
            "summary": f"datadir disk of {nodes} held to {what} (reads and writes each)",
        }

    def _heal(self) -> dict[str, Any]:
        for i, dev in self.devices.items():
            set_limits(machine(self.cluster, i), dev, 0, 0)
        restored = {f"n{i}": "no limit" for i in self.devices}
        return {"restored": restored, **recovered(self.cluster, self.fault.nodes)}
