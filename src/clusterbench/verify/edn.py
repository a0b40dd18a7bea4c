"""Histories in EDN, the format Jepsen's Elle reads (e.g. with elle-cli: `--model list-append`),
so users can cross-check our verdicts with an independent checker.

One operation map per line: an `:invoke` when a transaction started and its completion (`:ok`,
`:fail`, or `:info` for an unknown outcome) when it ended, ordered by time, with `:index`, `:time`
in nanoseconds since the trial started, `:process`, `:f` and `:value`. As in Jepsen, a process
whose operation ended `:info` is never used again (the client continues as a new process)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from clusterbench.errors import InputError
from clusterbench.history.ops import Op, Outcome
from clusterbench.history.txn import WORKLOAD, MicroOp, Txn, txns_from_ops
from clusterbench.store import Store

_TYPE = {Outcome.OK: ":ok", Outcome.FAIL: ":fail", Outcome.UNKNOWN: ":info"}


def edn(value: Any) -> str:
    """A small EDN printer for what histories hold: None, bools, ints, floats, strings, keywords
    (strings starting with ':'), lists/tuples (vectors) and dicts (maps)."""
    if value is None:
        return "nil"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        if value.startswith(":") and " " not in value:
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + " ".join(edn(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{edn(k)} {edn(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no EDN form for {type(value).__name__}")


def _mop(m: MicroOp, with_reads: bool) -> list[Any]:
    if m.f == "append":
        return [":append", m.key, m.value]
    value = list(m.value) if with_reads and isinstance(m.value, tuple) else None
    return [":r", m.key, value]


class _Processes:
    """Jepsen's process numbers: a client gets a fresh one after an operation with unknown outcome."""

    def __init__(self, clients: Iterable[int]) -> None:
        self.index = {c: i for i, c in enumerate(sorted(set(clients)))}
        self.stride = max(1, len(self.index))
        self.generation = dict.fromkeys(self.index, 0)

    def of(self, client: int) -> int:
        return self.generation[client] * self.stride + self.index[client]

    def crashed(self, client: int) -> None:
        self.generation[client] += 1


def _lines(events: list[tuple[float, int, dict[str, Any]]]) -> str:
    events.sort(key=lambda e: (e[0], e[1]))
    out = []
    for i, (_, _, m) in enumerate(events):
        m[":index"] = i
        out.append(edn(m))
    return "\n".join(out) + ("\n" if out else "")


def list_append_edn(txns: Sequence[Txn]) -> str:
    """A list-append history for Elle: `:f :txn`, values `[[:append k v] [:r k [..]]]`. Each
    completion also names the entry point that ran it (`:node "node:1"`) and marks the final
    reads after heal (`:final? true`); Elle ignores both, and with them the export reads back
    into the same history for our own checker."""
    procs = _Processes(t.client for t in txns)
    events: list[tuple[float, int, dict[str, Any]]] = []
    ended: dict[int, float] = {}  # process -> when its last operation completed
    for t in sorted(txns, key=lambda t: (t.t_start, t.id)):
        p = procs.of(t.client)
        # A process has one operation at a time: an invocation that does not begin strictly after
        # the process's previous completion (equal clock readings) is placed right after it.
        # Across processes an equal time orders nothing (our checker needs end < start).
        begin = (t.t_start, 0) if t.t_start > ended.get(p, float("-inf")) else (ended[p], 2)
        invoke = {":type": ":invoke", ":f": ":txn", ":value": [_mop(m, False) for m in t.mops],
                  ":process": p, ":time": int(t.t_start * 1e9)}  # fmt: skip
        done = {":type": _TYPE[t.outcome], ":f": ":txn", ":value": [_mop(m, t.ok) for m in t.mops],
                ":process": p, ":time": int(t.t_end * 1e9), ":node": t.process}  # fmt: skip
        if t.final:
            done[":final?"] = True
        if t.error and not t.ok:
            done[":error"] = t.error
        events += [(*begin, invoke), (t.t_end, 1, done)]
        ended[p] = t.t_end
        if t.outcome is Outcome.UNKNOWN:
            procs.crashed(t.client)
    return _lines(events)


def counter_edn(ops: Sequence[Op], key: str, workload: str = "counter") -> str:
    """One counter's history for Jepsen's counter checker: `:f :add` with `:value 1` per increment
    and `:f :read` for every read of its value (`op.kind == 'read'`, the value in `op.value`)."""
    chosen = sorted(
        (o for o in ops if o.workload == workload and o.key == key), key=lambda o: (o.t_start, o.client)
    )
    procs = _Processes(o.client for o in chosen)
    events: list[tuple[float, int, dict[str, Any]]] = []
    for o in chosen:
        p = procs.of(o.client)
        f = ":read" if o.kind == "read" else ":add"
        value: Any = 1 if f == ":add" else None
        events.append((o.t_start, 0, {":type": ":invoke", ":f": f, ":value": value, ":process": p,
                                      ":time": int(o.t_start * 1e9)}))  # fmt: skip
        done_value = int(o.value) if f == ":read" and o.value is not None else value
        events.append((o.t_end, 1, {":type": _TYPE[o.outcome], ":f": f, ":value": done_value, ":process": p,
                                    ":time": int(o.t_end * 1e9)}))  # fmt: skip
        if o.outcome is Outcome.UNKNOWN:
            procs.crashed(o.client)
    return _lines(events)


def run_list_append_edn(store: Store, run_id: int) -> str:
    """The list-append history of a stored run (its last trial that has one), in EDN."""
    from clusterbench.verify.persist import load_ops

    for trial in reversed(store.trials(run_id)):
        ops = load_ops(store, trial.id, WORKLOAD)
        if ops:
            return list_append_edn(txns_from_ops(ops))
    raise InputError(
        f'run {run_id} has no list-append history; run a scenario with [anomalies] checkers = ["list-append"]'
    )
