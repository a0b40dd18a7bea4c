"""Every difference between two stored runs, before their numbers are put side by side: engine,
topology, server settings, load options, faults, versions, machine. Some differences change what
was measured (4 threads against 2, a clean suite against a kill-node drill): those "define the
workload", and `compare` refuses such runs unless told --force. The rest (an engine, a setting, a
node count) are what people compare on purpose; they are listed so that nobody misses them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from clusterbench.store import Store

# load options whose change makes the numbers another workload's (sysbench's --time and
# --warmup only make the measurement longer or shorter)
DEFINING_OPTIONS = frozenset({
    "threads", "rate", "tables", "table_size", "rand_type", "batch", "row_size", "mix", "warehouses",
    "customers", "items", "slap_load", "slap_queries", "slap_query", "slap_engine", "ignore_errors",
})  # fmt: skip
DEFINING = frozenset({"load.clients", "load.separate_schemas", "load.target", "faults", "load.tests"})


@dataclass(frozen=True)
class Difference:
    field: str
    a: Any
    b: Any
    defining: bool

    def line(self) -> str:
        mark = " (defines the workload)" if self.defining else ""
        return f"{self.field}: {_text(self.a)} → {_text(self.b)}{mark}"

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "a": self.a, "b": self.b, "defines_workload": self.defining}


def _text(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) or "none"
    return str(v)


def _flat(prefix: str, d: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(d, dict):
        for k in sorted(d):
            yield from _flat(f"{prefix}.{k}" if prefix else str(k), d[k])
    else:
        yield prefix, d


def facts(store: Store, run_id: int) -> dict[str, Any]:
    """What a run ran, flattened to 'section.key' -> value, for comparing."""
    from clusterbench.analysis.outcome import engine_of

    prov = store.provenance(run_id)
    run = store.get_run(run_id)
    out: dict[str, Any] = {"engine": engine_of(store, run_id, prov)}
    topo: dict[str, Any] = prov["topology"] if isinstance(prov.get("topology"), dict) else {}
    out["topology.nodes"] = (topo.get("cluster") or {}).get("nodes")
    out["topology.balancer"] = (topo.get("balancer") or {}).get("kind")
    for section in ("resources", "mariadb", "mysql"):
        for k, v in _flat("", topo.get(section) or {}):
            out[f"{'server' if section != 'resources' else 'resources'}.{k}"] = v
    wl = prov.get("workload") or {}
    out["load.tests"] = sorted(wl.get("tests") or [t.workload for t in store.trials(run_id)])
    for k, v in (wl.get("options") or {}).items():
        out[f"load.{k}"] = v
    if wl.get("options"):  # runs stored before warmup_until existed had the fixed warm-up
        out.setdefault("load.warmup_until", "time")
    for k in ("clients", "separate_schemas"):
        out[f"load.{k}"] = wl.get(k)
    out["load.target"] = (prov.get("endpoint") or {}).get("name")
    sched = prov.get("fault_schedule") or {}
    out["faults"] = [f"{f.get('kind', '?')} at {f.get('at', '?')} s" for f in sched.get("faults") or []]
    out["run.kind"] = "drill" if run.kind in ("fault", "scenario", "soak") else "benchmark"
    for k, v in (prov.get("versions") or {}).items():
        out[f"version.{k}"] = v
    for k in ("cpu", "memory", "kernel"):
        out[f"machine.{k}"] = prov.get(k)
    return out


def differences(store: Store, run_a: int, run_b: int) -> list[Difference]:
    fa, fb = facts(store, run_a), facts(store, run_b)
    out = []
    for key in list(dict.fromkeys([*fa, *fb])):
        a, b = fa.get(key), fb.get(key)
        if a == b:
            continue
        defining = key in DEFINING or key == "run.kind" or (
            key.startswith("load.") and key[5:] in DEFINING_OPTIONS
        )
        out.append(Difference(key, a, b, defining))
    return out
