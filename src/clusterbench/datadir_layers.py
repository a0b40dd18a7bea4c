"""The power-loss layer under node datadirs (topology `cluster.datadir_layer` or a node's own
`datadir_layer = "faultfs"`): cb-faultfs mounted at each such node's datadir at `up`, before the
server's first start, over a directory of its own beside it (on the node's datadir tmpfs when it
has one), and stopped at `down`. The power-loss and disk faults act through it
(faults/disk.py); see docs/faultfs.md for what it models and what it costs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clusterbench.hosts.base import ProcessRef
from clusterbench.providers.faultfs import FaultFS, preflight

LAYER = "faultfs"


def layered(cluster: Any) -> list[int]:
    """The nodes whose datadir sits on the layer."""
    t = cluster.topology
    return [i for i in t.node_indexes() if t.node_datadir_layer(i) == LAYER]


def layer_source(datadir: Path) -> Path:
    """Where a layered datadir's files really are."""
    return datadir.with_name(datadir.name + ".faultfs")


def layer_of(cluster: Any, index: int) -> FaultFS:
    """Node `index`'s layer, with its daemon as the cluster's state recorded it."""
    datadir = cluster.node_dir(index) / "data"
    st = (cluster.state.get("layers") or {}).get(f"n{index}")
    proc = ProcessRef.from_json(st) if st else None
    host = cluster.provider.root_host()
    return FaultFS(host, layer_source(datadir), datadir, proc=proc, clock=cluster.clock)


def start_layers(cluster: Any, report: Callable[[str], None]) -> None:
    """Mount the layer at every layered node's datadir (a datadir tmpfs, if the node has one, holds
    the layer's files); the daemons are recorded in the cluster's state."""
    nodes = layered(cluster)
    if not nodes:
        return
    preflight(cluster.provider.root_host())
    for i in nodes:
        layer = layer_of(cluster, i)
        size = cluster.topology.node_datadir_size(i)
        if size:
            fs = cluster.topology.node_datadir_fs(i)
            cluster.provider.make_datadir_fs(cluster.names.node_role(i), layer.source, size, fs)
        proc = layer.start(owner="mysql")
        cluster.state.setdefault("layers", {})[f"n{i}"] = proc.to_json()
        cluster.save()
        report(f"n{i}: datadir on the power-loss layer (cb-faultfs over {layer.source})")


def make_durable(cluster: Any, report: Callable[[str], None]) -> None:
    """At the end of `up`: everything the bring-up wrote (initialised or copied datadirs, which no
    one fsynced) is made durable, as a data directory that existed before the trial would be. A
    power loss then loses what was written since, not the server's own files."""
    for i in layered(cluster):
        n = layer_of(cluster, i).sync()
        report(f"n{i}: its datadir as brought up made durable on the power-loss layer ({n} file(s))")


def remount(cluster: Any, index: int) -> None:
    """Node `index`'s layer stopped and mounted again, as its machine would come back from a power
    cut: nothing of the dead machine's kernel state outlives it (a write error the kernel recorded
    on a file when the victim's last writes were refused would otherwise fail the next start's
    msync or fsync). Only while the node's server is down."""
    layer = layer_of(cluster, index)
    layer.stop()
    proc = layer.start(owner="mysql")
    cluster.state.setdefault("layers", {})[f"n{index}"] = proc.to_json()
    cluster.save()


def stop_layers(cluster: Any, *, discard: bool = False) -> list[str]:
    """Stop every layer daemon (after the servers that had files open there); `discard`: the
    datadirs are deleted next, so nothing the kernel holds for a layer needs writing."""
    out = []
    for i in layered(cluster):
        what = layer_of(cluster, i).stop(discard=discard)
        if what != "not running":
            out.append(f"n{i}: power-loss layer {what}")
    cluster.state.pop("layers", None)
    return out
