"""throttle-disk against a fake host whose blkio files behave as the kernel's do (a limit of 0
removes the device's line): the refusals, the limits written, the heal, and the leftover check."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clusterbench.errors import PreflightError
from clusterbench.faults.diskthrottle import (
    BLKIO,
    LIMIT_FILES,
    ThrottleDisk,
    leftover,
    limits_on,
    parse_limits,
)
from clusterbench.faults.spec import FaultSpec, plan
from clusterbench.hosts.base import CommandResult
from clusterbench.spec.topology import Topology

from ..fakes import FakeHost


class BlkioHost(FakeHost):
    def __init__(self, dev: str = "7:3", blkio: bool = True) -> None:
        super().__init__()
        self.dev = dev
        self.blkio = blkio

    def exists(self, path: Path) -> bool:
        return self.blkio and str(path).startswith(str(BLKIO))

    def run(self, argv: list[str], *, input: str | None = None, timeout: float = 60.0,
            check: bool = True) -> CommandResult:  # fmt: skip
        self.runs.append(list(argv))
        out = ""
        if argv[:2] == ["stat", "-c"]:
            out = self.dev + "\n"
        elif argv[:2] == ["sh", "-c"]:  # printf "<dev> <value>" > <file>
            dev, value = argv[4].split()
            path = Path(argv[5])
            rows = parse_limits(self.files.get(path, ""))
            rows.pop(dev, None)
            if int(value):
                rows[dev] = int(value)
            self.files[path] = "".join(f"{d} {v}\n" for d, v in rows.items())
        return CommandResult(tuple(argv), 0, out, "")


def cluster(host: BlkioHost, topology: dict[str, Any]) -> Any:
    node = SimpleNamespace(datadir=Path("/c/n2/data"), alive=lambda: True)
    return SimpleNamespace(
        topology=Topology.model_validate(topology),
        names=SimpleNamespace(node_role=lambda i: f"n{i}"),
        provider=SimpleNamespace(machine_of=lambda role: host),
        node=lambda i: node,
        state={},
        recover=lambda nodes: [],
    )


def fault(**kw: Any) -> Any:
    data = {"kind": "throttle-disk", "target": "node:2", "at": 1, "for": 2, **kw}
    [f] = plan([FaultSpec.model_validate(data)], 3, 1, 10)
    return f


LOOP = {"cluster": {"datadir_fs": "loop"}}


def test_refused_without_a_disk_of_the_nodes_own_or_without_blkio() -> None:
    with pytest.raises(PreflightError) as info:
        ThrottleDisk(cluster(BlkioHost(), {}), fault(rate="1MB/s"))
    assert str(info.value) == (
        "throttle-disk slows a block device of the node's own, and n2's datadir has none: set "
        'cluster.datadir_fs = "loop" (or [[node]] index = 2 with datadir_fs = "loop") in the topology and '
        "bring the cluster up again"
    )
    with pytest.raises(PreflightError, match="needs the cgroup v1 blkio controller"):
        ThrottleDisk(cluster(BlkioHost(blkio=False), LOOP), fault(rate="1MB/s"))


def test_apply_limits_reads_and_writes_of_that_device_and_heal_removes_them() -> None:
    host = BlkioHost()
    c = cluster(host, LOOP)
    host.files[BLKIO / LIMIT_FILES[1]] = "7:9 5\n"  # another device's limit stays
    action = ThrottleDisk(c, fault(rate="2MB/s", iops=40))
    applied = action.apply()
    assert applied["devices"] == {"n2": "7:3"}
    assert (
        applied["summary"] == "datadir disk of n2 held to 2 MB/s and 40 operations/s (reads and writes each)"
    )
    assert limits_on(host, "7:3") == {
        "blkio.throttle.read_bps_device": 2_000_000,
        "blkio.throttle.write_bps_device": 2_000_000,
        "blkio.throttle.read_iops_device": 40,
        "blkio.throttle.write_iops_device": 40,
    }
    assert leftover(c, 2)
    healed = action.heal()
    assert healed == {"restored": {"n2": "no limit"}}
    assert limits_on(host, "7:3") == {} and not leftover(c, 2)
    assert parse_limits(host.files[BLKIO / LIMIT_FILES[1]]) == {"7:9": 5}
    assert action.heal() == {}  # idempotent


def test_a_rate_alone_leaves_operations_unlimited() -> None:
    host = BlkioHost()
    ThrottleDisk(cluster(host, LOOP), fault(rate="512KiB/s")).apply()
    assert limits_on(host, "7:3") == {
        "blkio.throttle.read_bps_device": 524288,
        "blkio.throttle.write_bps_device": 524288,
    }
